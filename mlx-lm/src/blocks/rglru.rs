//! Griffin's recurrent block, the token mixer of recurrent_gemma's recurrent layers (Python:
//! `mlx_lm.models.recurrent_gemma.RecurrentBlock` with its `Conv1d` and `RGLRU`):
//!
//! ```text
//! y = gelu_approx(linear_y(h))
//! x = conv_1d(linear_x(h))                      # causal depthwise + bias, state in cache[0]
//! gate_x = σ(x W_x + b_x), gate_a = σ(x W_a + b_a)   # block-diagonal, per head
//! log_a = -8 gate_a softplus(recurrent_param); a = exp(log_a)
//! x̃ = x gate_x sqrt(1 - a²)                     # the multiplier is 1 at position 0
//! h_t = a_t h_{t-1} + x̃_t                       # state in cache[1]
//! linear_out(h * y)
//! ```
//!
//! mlx_lm resets at position 0 by `multiplier[:, 0] = 1` when the RG-LRU's state is still
//! `None` (the sequence's first call); here the state is allocated up front, so the reset is
//! `where(position == 0, 1, multiplier)` with the position from the model's cache
//! ([`LayerContext::offset`](crate::blocks::LayerContext::offset)): the same values. The scan
//! over a prefill is mlx_lm's loop, one position at a time (a kernel, the notes' K5, would
//! do it in one); the state stays in the model's dtype, as mlx_lm keeps it (transformers
//! accumulates in float32: the same numbers for a float32 model).

use mlx_nn::Frozen;
use mlx_nn::{Conv1d, Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::conv::{causal_conv1d, conv_state, load_depthwise_conv1d, ConvActivation};
use crate::blocks::rows::{wrong_input, Rows};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::Checkpoint;

/// The slot of the convolution's last inputs (Python: `cache[0]`), `[batch, conv1d_width -
/// 1, lru_width]`, model dtype.
const CONV: usize = 0;
/// The slot of the RG-LRU state (Python: `cache[1]`), `[batch, lru_width]`, model dtype.
const STATE: usize = 1;

/// Python: `RGLRU`: the gates are block-diagonal, one `[head_dim, head_dim]` block per head.
#[derive(Debug, Clone, TreeNode)]
pub struct RgLru {
    /// `[width]`.
    pub recurrent_param: Array,
    /// `[heads, head_dim, head_dim]`.
    pub input_gate_weight: Array,
    /// `[heads, head_dim]`.
    pub input_gate_bias: Array,
    pub recurrent_gate_weight: Array,
    pub recurrent_gate_bias: Array,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl RgLru {
    /// Takes the tensors under `path`: `width` channels in `heads` blocks.
    pub fn load(ck: &mut Checkpoint, path: &str, width: i32, heads: i32) -> crate::Result<RgLru> {
        let hd = width / heads;
        let p = |name: &str| format!("{path}.{name}");
        Ok(RgLru {
            frozen: Frozen::default(),
            recurrent_param: ck.array(&p("recurrent_param"), &[width])?,
            input_gate_weight: ck.array(&p("input_gate_weight"), &[heads, hd, hd])?,
            input_gate_bias: ck.array(&p("input_gate_bias"), &[heads, hd])?,
            recurrent_gate_weight: ck.array(&p("recurrent_gate_weight"), &[heads, hd, hd])?,
            recurrent_gate_bias: ck.array(&p("recurrent_gate_bias"), &[heads, hd])?,
        })
    }

    fn heads(&self) -> i32 {
        self.input_gate_bias.shape().first().copied().unwrap_or(1)
    }

    /// Python: `apply_block_linear`: `sigmoid(x W + b)` per head block, `x` `[B, L, W]`.
    fn gate(&self, x: &Array, w: &Array, b: &Array) -> Result<Array> {
        let (batch, len) = (x.shape()[0], x.shape()[1]);
        let h = ops::reshape(x, &[batch, len, self.heads(), -1])?;
        let h = ops::swapaxes(&ops::matmul(&ops::swapaxes(&h, 1, 2)?, w)?, 1, 2)?;
        let h = ops::add(&h, b)?;
        ops::sigmoid(&ops::reshape(&h, &[batch, len, -1])?)
    }

    /// The RG-LRU over `x` `[B, L, W]` at positions `positions` (`int32 [L]`, or `[B, L]`
    /// with a row's own per sequence) from `state` `[B, W]` (`None`: no earlier positions,
    /// Python's `cache=None`): `y` `[B, L, W]` and the state after the last position.
    pub fn forward(
        &self,
        x: &Array,
        positions: &Array,
        state: Option<&Array>,
    ) -> Result<(Array, Array)> {
        let gate_x = self.gate(x, &self.input_gate_weight, &self.input_gate_bias)?;
        let gate_a = self.gate(x, &self.recurrent_gate_weight, &self.recurrent_gate_bias)?;
        let log_a = ops::multiply(
            &ops::multiply(&gate_a, -8.0f32)?,
            &mlx_nn::softplus(&self.recurrent_param)?,
        )?;
        let a = ops::exp(&log_a)?;
        let a_square = ops::exp(&ops::multiply(&log_a, 2.0f32)?)?;
        let gated_x = ops::multiply(x, &gate_x)?;
        // A weak 1, as Python's: the result keeps `a_square`'s dtype.
        let multiplier = ops::sqrt(&ops::subtract(1.0f32, &a_square)?)?;
        let first = ops::equal(positions, 0)?;
        let first = if first.ndim() == 1 {
            ops::reshape(&first, &[1, -1, 1])?
        } else {
            ops::expand_dims(&first, -1)?
        };
        let multiplier = ops::where_(&first, &ops::ones(&[], multiplier.dtype())?, &multiplier)?;
        let normalized_x = ops::multiply(&gated_x, &multiplier.astype(x.dtype())?)?;
        rnn_scan(&normalized_x, &a, state)
    }
}

/// Python: `rnn_scan`: `h_t = a_t h_{t-1} + x_t` over `x` `[B, L, W]`; all of `y` and the
/// last `h`.
fn rnn_scan(x: &Array, a: &Array, h0: Option<&Array>) -> Result<(Array, Array)> {
    let len = x.shape()[1];
    if len == 1 {
        return match h0 {
            None => Ok((x.clone(), x.index((.., 0))?)),
            Some(h0) => {
                let y = ops::add(&ops::multiply(a, &ops::expand_dims(h0, 1)?)?, x)?;
                let last = y.index((.., -1))?;
                Ok((y, last))
            }
        };
    }
    let mut h = match h0 {
        Some(h) => h.clone(),
        None => ops::zeros(&[x.shape()[0], x.shape()[2]], x.dtype())?,
    };
    let mut ys = Vec::with_capacity(len as usize);
    for t in 0..len {
        h = ops::add(&ops::multiply(&a.index((.., t))?, &h)?, &x.index((.., t))?)?;
        ys.push(h.clone());
    }
    Ok((ops::stack(&ys, 1)?, h))
}

/// Python: `RecurrentBlock`'s parameters, borrowed from the layer that holds them.
#[derive(Debug, Clone, Copy)]
pub struct RecurrentParts<'a> {
    pub linear_y: &'a MaybeQuantizedLinear,
    pub linear_x: &'a MaybeQuantizedLinear,
    pub linear_out: &'a MaybeQuantizedLinear,
    pub conv_1d: &'a Conv1d,
    pub rg_lru: &'a RgLru,
}

/// The tensors of a recurrent block under `path`: `width` in and out, `lru_width` inside,
/// `heads` gate blocks, a convolution of `conv_width` taps.
pub fn load_recurrent_block(
    ck: &mut Checkpoint,
    path: &str,
    width: i32,
    lru_width: i32,
    heads: i32,
    conv_width: i32,
) -> crate::Result<(
    MaybeQuantizedLinear,
    MaybeQuantizedLinear,
    MaybeQuantizedLinear,
    Conv1d,
    RgLru,
)> {
    let p = |name: &str| format!("{path}.{name}");
    Ok((
        ck.linear(&p("linear_y"), width, lru_width, true)?,
        ck.linear(&p("linear_x"), width, lru_width, true)?,
        ck.linear(&p("linear_out"), lru_width, width, true)?,
        load_depthwise_conv1d(ck, &p("conv_1d"), lru_width, conv_width, true)?,
        RgLru::load(ck, &p("rg_lru"), lru_width, heads)?,
    ))
}

impl RecurrentParts<'_> {
    /// The block over rows `h` `[B * L, width]`, at the positions after `offset` (the
    /// model's; `None`: the sequence starts here), continuing `cache`'s state.
    pub fn forward(
        &self,
        h: &Array,
        rows: Rows,
        offset: Option<&Array>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let mut cache = match cache {
            None => None,
            Some(LayerCache::Arrays(c)) if c.cache.len() == 2 => Some(c),
            Some(other) => {
                return Err(wrong_input(&format!(
                    "a recurrent_gemma recurrent layer needs an ArraysCache of 2 arrays, got a {}",
                    other.class_name()
                )))
            }
        };
        let y = mlx_nn::gelu_approx(&self.linear_y.forward(h)?)?;
        let x = rows.unfold(&self.linear_x.forward(h)?)?;
        // mlx_lm keeps no padding out of this state (its batch refuses nothing; ours refuses
        // prompts of different lengths for this model's rotating caches), so no mask.
        let x = causal_conv1d(
            self.conv_1d,
            &x,
            None,
            cache.as_deref_mut(),
            CONV,
            ConvActivation::None,
        )?;
        let positions = ops::arange(0, rows.len, 1, Dtype::Int32)?;
        let positions = match offset {
            // Per-row offsets (a continuous-batching slot batch): `[B, L]`.
            Some(o) if o.ndim() == 1 => {
                ops::add(&ops::expand_dims(&positions, 0)?, &ops::expand_dims(o, 1)?)?
            }
            Some(o) => ops::add(&positions, o)?,
            None => positions,
        };
        let state = cache.as_ref().map(|c| c[STATE].clone());
        let (x, state) = self.rg_lru.forward(&x, &positions, state.as_ref())?;
        if let Some(c) = cache {
            c[STATE] = state;
            c.advance(rows.len)?;
        }
        let x = ops::multiply(&rows.fold(&x)?, &y)?;
        self.linear_out.forward(&x)
    }

    /// The convolution's state and the RG-LRU state, zeros in the model's dtype (Python:
    /// `ArraysCache(size=2)`).
    pub fn make_cache(&self, batch: i32, dtype: Dtype) -> Result<LayerCache> {
        let width = self.rg_lru.recurrent_param.shape()[0];
        Ok(LayerCache::Arrays(ArraysCache::new(vec![
            conv_state(self.conv_1d, batch, dtype)?,
            ops::zeros(&[batch, width], dtype)?,
        ])))
    }
}
