//! Hidden states as rows, and the reshapes between rows and attention heads.
//!
//! Between layers a model's hidden states are rows `[B * L, hidden]`, not `[B, L, hidden]`:
//! MLX's matmul folds a 3-D input into rows and back, one `Flatten` and one `Unflatten`
//! around every projection. Those are views, but each is a primitive that MLX dispatches on
//! every call: in a Qwen3-0.6B decode step they were 394 of 1,329. Rows keep the
//! projections plain 2-D matmuls; only attention, which needs heads, reshapes.

use mlx_nn::{Forward, RMSNorm};
use mlx_rs::{ops, Array, Result};

/// The error for a call whose arguments do not fit the model (a cache of the wrong kind).
pub(crate) fn wrong_input(message: &str) -> mlx_rs::Error {
    mlx_rs::Error::InvalidArgument(message.to_string())
}

/// A recurrent layer's cache entry as the `ArraysCache` it keeps; any other kind is an error
/// naming the `layer`.
pub(crate) fn arrays_entry<'a>(
    cache: Option<&'a mut crate::cache::LayerCache>,
    layer: &str,
) -> mlx_rs::Result<Option<&'a mut crate::cache::ArraysCache>> {
    match cache {
        None => Ok(None),
        Some(crate::cache::LayerCache::Arrays(c)) => Ok(Some(c)),
        Some(other) => Err(wrong_input(&format!(
            "{layer} got a {}",
            other.class_name()
        ))),
    }
}

/// The batch and sequence sizes of hidden states that travel as rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows {
    pub batch: i32,
    pub len: i32,
}

impl Rows {
    /// The rows of token ids `[B, L]`.
    pub fn of(inputs: &Array) -> Result<Rows> {
        match *inputs.shape() {
            [batch, len] => Ok(Rows { batch, len }),
            ref s => Err(wrong_input(&format!(
                "token ids must be [batch, length], got shape {s:?}"
            ))),
        }
    }

    /// `[B * L, ...]` as `[B, L, ...]`.
    pub fn unfold(self, x: &Array) -> Result<Array> {
        let mut shape = vec![self.batch, self.len];
        shape.extend_from_slice(&x.shape()[1..]);
        ops::reshape(x, &shape)
    }

    /// `[B, L, ...]` as `[B * L, ...]`.
    pub fn fold(self, x: &Array) -> Result<Array> {
        let mut shape = vec![self.batch * self.len];
        shape.extend_from_slice(&x.shape()[2..]);
        ops::reshape(x, &shape)
    }
}

/// `[B, L, heads, dim]` as `[B, heads, L, dim]`. One token (a decode step) has both layouts
/// in the same order in memory, so a reshape does it without a transpose primitive.
pub fn heads_first(x: &Array) -> Result<Array> {
    match *x.shape() {
        [b, 1, h, d] => ops::reshape(x, &[b, h, 1, d]),
        _ => ops::transpose(x, [0, 2, 1, 3]),
    }
}

/// Splits projected rows `[B * L, heads * dim]` into heads `[B, heads, L, dim]`, normalizing
/// each head first when a norm is given (qwen3).
pub fn heads(x: &Array, rows: Rows, n: i32, norm: Option<&RMSNorm>) -> Result<Array> {
    // One token: straight to `[B, heads, 1, dim]`, one reshape; the norm is over the last
    // axis either way.
    let x = if rows.len == 1 {
        ops::reshape(x, &[rows.batch, n, 1, -1])?
    } else {
        ops::reshape(x, &[rows.batch, rows.len, n, -1])?
    };
    let x = match norm {
        Some(norm) => norm.forward(&x)?,
        None => x,
    };
    if rows.len == 1 {
        Ok(x)
    } else {
        ops::transpose(&x, [0, 2, 1, 3])
    }
}

/// `[B, heads, L, dim]` back to rows `[B * L, heads * dim]`.
pub fn merge_heads(x: &Array) -> Result<Array> {
    let &[b, h, l, d] = x.shape() else {
        return Err(wrong_input(
            "attention output must be [batch, heads, length, dim]",
        ));
    };
    let x = if l == 1 {
        x.clone()
    } else {
        ops::transpose(x, [0, 2, 1, 3])?
    };
    ops::reshape(&x, &[b * l, h * d])
}
