//! The causal depthwise convolution over time with a carried state, which mlx_lm's recurrent
//! mixers share (the gated delta net's `conv1d`, lfm2's `ShortConv`, mamba2's, ...): each
//! channel convolved with its own kernel of `K` taps over the last `K` positions, the last
//! `K - 1` inputs kept in a slot of the layer's [`ArraysCache`] for the next call.
//!
//! Python writes the idiom out in every mixer:
//!
//! ```text
//! x = where(mask[..., None], x, 0)                   # a right-padded batch's padding
//! padded = concatenate([cache[j] or zeros(B, K-1, C), x], axis=1)
//! cache[j] = take_along_axis(padded, clip(lengths, 0, T)[:, None] + arange(K-1))  # lengths
//!            padded[:, -(K-1):]                                                   # else
//! y = conv1d(padded)      # weight [C, K, 1], groups=C (+ bias); then silu or nothing
//! ```
//!
//! With a right-padded batch each sequence keeps its own last real inputs, so the padding
//! never reaches the state. The layer advances the cache's lengths once, after all its
//! slots ([`ArraysCache::advance`]).

use mlx_nn::{Conv1d, Forward};
use mlx_rs::{ops, Array, Dtype, Result};

use crate::blocks::mlp::silu;
use crate::cache::ArraysCache;
use crate::checkpoint::Checkpoint;

/// What follows the convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvActivation {
    /// Nothing (lfm2, recurrent_gemma).
    None,
    /// `silu` (the gated delta net, mamba2 and its family).
    Silu,
}

/// A depthwise `nn.Conv1d(channels, channels, kernel, groups=channels, bias=bias)` at `path`
/// (weight `[channels, kernel, 1]`, mlx_lm's layout after its sanitize).
pub fn load_depthwise_conv1d(
    ck: &mut Checkpoint,
    path: &str,
    channels: i32,
    kernel: i32,
    bias: bool,
) -> crate::Result<Conv1d> {
    Ok(Conv1d {
        weight: ck.array(&format!("{path}.weight"), &[channels, kernel, 1])?,
        bias: if bias {
            Some(ck.array(&format!("{path}.bias"), &[channels])?)
        } else {
            None
        },
        stride: 1,
        padding: 0,
        dilation: 1,
        groups: channels,
        frozen: Default::default(),
    })
}

/// Python (the `sanitize` of mamba, mamba2, nemotron_h, granitemoehybrid, recurrent_gemma): a
/// Hugging Face checkpoint's depthwise convolution weights `[C, 1, K]`, those whose name
/// contains `name`, become MLX's `[C, K, 1]`; weights already `[C, K, 1]` stay.
pub fn sanitize_conv_weights(ck: &mut Checkpoint, name: &str) -> crate::Result<()> {
    ck.weights_mut().map(|k, v| {
        let s = v.shape();
        if k.contains(name) && s.len() == 3 && s[2] != 1 {
            return ops::swapaxes(v, 1, 2).map(Some);
        }
        Ok(None)
    })
}

/// The zeros a convolution's state starts as (Python: the `None` slot a layer fills with
/// zeros on its first call): `[batch, kernel - 1, channels]`.
pub fn conv_state(conv: &Conv1d, batch: i32, dtype: Dtype) -> Result<Array> {
    ops::zeros(&[batch, kernel_size(conv) - 1, channels(conv)], dtype)
}

fn kernel_size(conv: &Conv1d) -> i32 {
    conv.weight.shape().get(1).copied().unwrap_or(1)
}

fn channels(conv: &Conv1d) -> i32 {
    conv.weight.shape().first().copied().unwrap_or(0)
}

/// The depthwise causal convolution of `x` `[B, T, C]` (positions after what the state
/// holds), then `activation`: `[B, T, C]`. `mask` (`bool [B, T]`, from
/// [`ArraysCache::make_mask`]) zeroes a right-padded batch's padding first. With a cache,
/// the convolution continues the state in `cache[slot]` and leaves each sequence's last
/// `K - 1` real inputs there; without one it starts from zeros.
pub fn causal_conv1d(
    conv: &Conv1d,
    x: &Array,
    mask: Option<&Array>,
    cache: Option<&mut ArraysCache>,
    slot: usize,
    activation: ConvActivation,
) -> Result<Array> {
    let x = match mask {
        Some(m) => ops::where_(&ops::expand_dims(m, -1)?, x, &ops::zeros(&[], x.dtype())?)?,
        None => x.clone(),
    };
    let n_keep = kernel_size(conv) - 1;
    let t = x.shape().get(1).copied().unwrap_or(0);
    let padded = match cache {
        Some(c) => {
            let padded = ops::concatenate(&[c[slot].clone(), x], 1)?;
            c[slot] = keep_last(&padded, c.lengths.as_ref(), t, n_keep)?;
            padded
        }
        None => {
            let batch = x.shape().first().copied().unwrap_or(0);
            let zeros = conv_state(conv, batch, x.dtype())?;
            ops::concatenate(&[zeros, x], 1)?
        }
    };
    let y = conv.forward(&padded)?;
    match activation {
        ConvActivation::None => Ok(y),
        ConvActivation::Silu => silu(&y),
    }
}

/// The state a causal mixer keeps of `padded` `[B, n_keep + t, C]` (its state, then `t` new
/// inputs): the last `n_keep` positions, or, while a right-padded batch is prefilled
/// (`lengths`, each sequence's inputs still to come), each sequence's last `n_keep` real
/// ones (Python: `take_along_axis(padded, clip(lengths, 0, t)[:, None] + arange(n_keep))`).
/// Shared by the convolutions and rwkv7's token shifts (`n_keep` 1).
pub fn keep_last(padded: &Array, lengths: Option<&Array>, t: i32, n_keep: i32) -> Result<Array> {
    match lengths {
        Some(lengths) => {
            let ends = ops::clip(lengths, 0, t)?;
            let positions = ops::add(
                &ops::expand_dims(&ends, 1)?,
                &ops::arange(0, n_keep, 1, Dtype::Int32)?,
            )?;
            ops::take_along_axis(padded, &ops::expand_dims(&positions, -1)?, 1)
        }
        // Its own buffer, so the state does not keep the whole input alive: `* 1` (exact, and
        // an integer one keeps the n-gram embedding's int64 ids integers) writes a new one
        // while the slice shares `padded`'s, and, unlike `contiguous`, MLX 0.32.2 can export
        // it (`export`).
        None => {
            let len = padded.shape()[1];
            ops::multiply(&padded.index((.., len - n_keep..))?, 1)
        }
    }
}
