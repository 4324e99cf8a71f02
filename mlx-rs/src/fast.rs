//! Fused kernels for common layers (Python: `mlx.core.fast`).
//!
//! ```
//! use mlx_rs::{fast, ops, Array};
//! let x = ops::ones(&[2, 4], None)?;
//! let w = ops::ones(&[4], None)?;
//! // Python: mx.fast.rms_norm(x, w, 1e-5)
//! let y = fast::rms_norm(&x, Some(&w), 1e-5)?;
//! assert_eq!(y.shape(), &[2, 4]);
//! # Ok::<(), mlx_rs::Error>(())
//! ```
//!
//! Custom CUDA kernels: [`CudaKernel`] (Python: `mx.fast.cuda_kernel`). Metal's
//! (`mx.fast.metal_kernel`) is not wrapped: no Metal machine checks it here.

use mlx_sys as sys;

mod cuda_kernel;
pub use cuda_kernel::{CudaKernel, KernelLaunch, TemplateArg};

use crate::handles::{opt_array, opt_float};
use crate::{Array, Result};

/// Layer normalization over the last axis, with optional affine `weight` and `bias`
/// (Python: `mx.fast.layer_norm(x, weight, bias, eps)`).
pub fn layer_norm(
    x: &Array,
    weight: Option<&Array>,
    bias: Option<&Array>,
    eps: f32,
) -> Result<Array> {
    let (w, b) = (opt_array(weight), opt_array(bias));
    // SAFETY: valid (or null = absent) handles; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_fast_layer_norm(res, x.as_raw(), w, b, eps, s)
    })
}

/// Root-mean-square normalization over the last axis, with optional `weight`
/// (Python: `mx.fast.rms_norm(x, weight, eps)`).
pub fn rms_norm(x: &Array, weight: Option<&Array>, eps: f32) -> Result<Array> {
    let w = opt_array(weight);
    // SAFETY: valid (or null = absent) handles; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_fast_rms_norm(res, x.as_raw(), w, eps, s)
    })
}

/// The position offset of [`rope`]: a fixed integer, or an array (a scalar, or one offset per
/// batch entry) that may change between calls without recompiling (Python: `offset: int | array`).
#[derive(Debug, Clone, Copy)]
pub enum RopeOffset<'a> {
    /// A fixed offset.
    Int(i32),
    /// An offset held in an array (`mlx_fast_rope_dynamic`).
    Array(&'a Array),
}

impl From<i32> for RopeOffset<'_> {
    fn from(offset: i32) -> Self {
        RopeOffset::Int(offset)
    }
}

impl<'a> From<&'a Array> for RopeOffset<'a> {
    fn from(offset: &'a Array) -> Self {
        RopeOffset::Array(offset)
    }
}

/// Rotary positional encoding over the first `dims` features of the last axis (Python:
/// `mx.fast.rope(a, dims, *, traditional, base, scale, offset, freqs=None)`).
///
/// Exactly one of `base` and `freqs` is given, as in Python.
pub fn rope<'o>(
    a: &Array,
    dims: i32,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: impl Into<RopeOffset<'o>>,
    freqs: Option<&Array>,
) -> Result<Array> {
    let base = opt_float(base);
    let freqs = opt_array(freqs);
    match offset.into() {
        // SAFETY: valid (or null = absent) handles; mlx-c writes a new array into res.
        RopeOffset::Int(offset) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_fast_rope(
                res,
                a.as_raw(),
                dims,
                traditional,
                base,
                scale,
                offset,
                freqs,
                s,
            )
        }),
        // SAFETY: as above.
        RopeOffset::Array(offset) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_fast_rope_dynamic(
                res,
                a.as_raw(),
                dims,
                traditional,
                base,
                scale,
                offset.as_raw(),
                freqs,
                s,
            )
        }),
    }
}

/// The mask of [`scaled_dot_product_attention`] (Python: `mask=None | "causal" | array`).
#[derive(Debug, Clone, Copy, Default)]
pub enum AttentionMask<'a> {
    /// No mask (Python: `None`).
    #[default]
    None,
    /// Lower-triangular causal mask, aligned to the end of the keys (Python: `"causal"`).
    Causal,
    /// A boolean mask (true = attend) or an additive mask, broadcastable to the scores.
    Array(&'a Array),
}

impl<'a> From<&'a Array> for AttentionMask<'a> {
    fn from(mask: &'a Array) -> Self {
        AttentionMask::Array(mask)
    }
}

impl<'a> From<Option<&'a Array>> for AttentionMask<'a> {
    fn from(mask: Option<&'a Array>) -> Self {
        mask.map_or(AttentionMask::None, AttentionMask::Array)
    }
}

/// `softmax(q @ k.T * scale + mask) @ v` in one fused op, with grouped-query attention when
/// `k`/`v` have fewer heads than `q` (Python: `mx.fast.scaled_dot_product_attention(q, k, v,
/// *, scale, mask=None, sinks=None)`). Shapes are `[batch, heads, length, head_dim]`.
///
/// `sinks` holds one logit per head that joins every softmax (attention sinks). Python's
/// testing flag `force_fused` is not exposed (always false: MLX picks the kernel).
pub fn scaled_dot_product_attention<'m>(
    queries: &Array,
    keys: &Array,
    values: &Array,
    scale: f32,
    mask: impl Into<AttentionMask<'m>>,
    sinks: Option<&Array>,
) -> Result<Array> {
    let (mode, mask) = match mask.into() {
        AttentionMask::None => (c"", None),
        AttentionMask::Causal => (c"causal", None),
        AttentionMask::Array(m) => (c"array", Some(m)),
    };
    let (mask, sinks) = (opt_array(mask), opt_array(sinks));
    // SAFETY: valid (or null = absent) handles; `mode` is a static C string; mlx-c writes a
    // new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_fast_scaled_dot_product_attention(
            res,
            queries.as_raw(),
            keys.as_raw(),
            values.as_raw(),
            scale,
            mode.as_ptr(),
            mask,
            sinks,
            false,
            s,
        )
    })
}

/// Fused cross-entropy of `logits` against integer class `targets`, per row
/// (Python: `mx.fast.cross_entropy(logits, targets)`).
pub fn cross_entropy(logits: &Array, targets: &Array) -> Result<Array> {
    // SAFETY: valid handles; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_fast_cross_entropy(res, logits.as_raw(), targets.as_raw(), s)
    })
}
