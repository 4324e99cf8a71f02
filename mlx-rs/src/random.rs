//! Random numbers with explicit keys (Python: `mlx.core.random`).
//!
//! Passing a key makes results reproducible and identical to Python MLX for the same key.
//! `None` uses MLX's global key (seeded by [`seed`]).

use mlx_sys as sys;

use crate::ops::{IntoOperand, Operand};
use crate::{Array, Dtype, Result};

/// A PRNG key from a seed (Python: `mx.random.key(seed)`).
pub fn key(seed: u64) -> Result<Array> {
    // SAFETY: mlx-c writes a new array into res.
    Array::try_from_op(|res| unsafe { sys::mlx_random_key(res, seed) })
}

/// Seeds the global PRNG (Python: `mx.random.seed`).
pub fn seed(seed: u64) -> Result<()> {
    // SAFETY: plain value.
    crate::error::check(|| unsafe { sys::mlx_random_seed(seed) })
}

/// Splits a key into `num` new keys, stacked on axis 0 (Python: `mx.random.split(key, num)`).
pub fn split(key: &Array, num: i32) -> Result<Array> {
    // SAFETY: valid handle; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_random_split_num(res, key.as_raw(), num, s)
    })
}

fn key_raw(key: Option<&Array>) -> sys::mlx_array {
    // mlx-c reads a handle with a null ctx as "no key".
    key.map_or(
        sys::mlx_array {
            ctx: std::ptr::null_mut(),
        },
        Array::as_raw,
    )
}

/// Normally distributed samples (Python:
/// `mx.random.normal(shape, dtype=float32, loc=0.0, scale=1.0, key=None)`).
///
/// ```
/// use mlx_rs::random;
/// let k = random::key(0)?;
/// let x = random::normal(&[2, 3], None, 0.0, 1.0, &k)?;
/// assert_eq!(x.shape(), &[2, 3]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn normal<'k>(
    shape: &[i32],
    dtype: impl Into<Option<Dtype>>,
    loc: f32,
    scale: f32,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let dtype = dtype.into().unwrap_or(Dtype::Float32);
    let key = key_raw(key.into());
    // SAFETY: `shape` outlives the call; `key` is valid or null; mlx-c writes into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_random_normal(
            res,
            shape.as_ptr(),
            shape.len(),
            dtype.to_raw(),
            loc,
            scale,
            key,
            s,
        )
    })
}

/// Uniform samples in `[low, high)` (Python:
/// `mx.random.uniform(low=0, high=1, shape=[], dtype=float32, key=None)`).
pub fn uniform<'a, 'k>(
    low: impl IntoOperand<'a>,
    high: impl IntoOperand<'a>,
    shape: &[i32],
    dtype: impl Into<Option<Dtype>>,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let dtype = dtype.into().unwrap_or(Dtype::Float32);
    let bound = |op: Operand<'a>| match op {
        Operand::Array(a) => a.into_owned(),
        Operand::Scalar(s) => s.to_array(dtype),
    };
    let (low, high) = (bound(low.into_operand()), bound(high.into_operand()));
    let key = key_raw(key.into());
    // SAFETY: all handles valid (key may be null); `shape` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_random_uniform(
            res,
            low.as_raw(),
            high.as_raw(),
            shape.as_ptr(),
            shape.len(),
            dtype.to_raw(),
            key,
            s,
        )
    })
}
