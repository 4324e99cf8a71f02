//! Arrays made from a shape: `zeros`, `ones`, `full`, `arange`.

use mlx_sys as sys;

use crate::ops::{IntoOperand, Operand};
use crate::{Array, Dtype, Error, Result};

/// An array of zeros; dtype defaults to float32 (Python: `mx.zeros(shape, dtype)`).
pub fn zeros(shape: &[i32], dtype: impl Into<Option<Dtype>>) -> Result<Array> {
    let dtype = dtype.into().unwrap_or(Dtype::Float32);
    // SAFETY: `shape` outlives the call; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_zeros(res, shape.as_ptr(), shape.len(), dtype.to_raw(), s)
    })
}

/// An array of ones; dtype defaults to float32 (Python: `mx.ones(shape, dtype)`).
pub fn ones(shape: &[i32], dtype: impl Into<Option<Dtype>>) -> Result<Array> {
    let dtype = dtype.into().unwrap_or(Dtype::Float32);
    // SAFETY: `shape` outlives the call; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_ones(res, shape.as_ptr(), shape.len(), dtype.to_raw(), s)
    })
}

/// An array of `shape` filled with `vals` (broadcast); the dtype defaults to that of `vals`
/// (Python: `mx.full(shape, vals, dtype)`).
pub fn full<'a>(
    shape: &[i32],
    vals: impl IntoOperand<'a>,
    dtype: impl Into<Option<Dtype>>,
) -> Result<Array> {
    let dtype = dtype.into();
    let vals = match vals.into_operand() {
        Operand::Array(a) => a.into_owned(),
        Operand::Scalar(s) => s.to_array(dtype.unwrap_or_else(|| s.dtype_next_to(None))),
    };
    let dtype = dtype.unwrap_or_else(|| vals.dtype());
    // SAFETY: `shape` and `vals` outlive the call; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_full(
            res,
            shape.as_ptr(),
            shape.len(),
            vals.as_raw(),
            dtype.to_raw(),
            s,
        )
    })
}

/// Numbers that can bound an [`arange`]: Rust integers give integer arrays, Rust floats give
/// float32 (as Python floats do).
pub trait ArangeBound: Copy {
    /// The dtype `arange` produces when none is given.
    const DEFAULT_DTYPE: Dtype;
    fn to_f64(self) -> f64;
}

macro_rules! arange_bounds {
    ($($ty:ty => $dtype:ident),*) => {$(
        impl ArangeBound for $ty {
            const DEFAULT_DTYPE: Dtype = Dtype::$dtype;
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}

arange_bounds!(i32 => Int32, i64 => Int64, u32 => Uint32, f32 => Float32, f64 => Float32);

/// Evenly spaced values in `[start, stop)` (Python: `mx.arange(start, stop, step, dtype)`).
/// `step` defaults to 1; `dtype` defaults to int32 for `i32` bounds and float32 for floats.
///
/// ```
/// let a = mlx_rs::ops::arange(0, 6, 2, None)?;
/// assert_eq!(a.to_vec::<i32>()?, vec![0, 2, 4]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn arange<T: ArangeBound>(
    start: T,
    stop: T,
    step: impl Into<Option<T>>,
    dtype: impl Into<Option<Dtype>>,
) -> Result<Array> {
    let step = step.into().map_or(1.0, T::to_f64);
    if step == 0.0 {
        return Err(Error::invalid("[arange] step cannot be 0"));
    }
    let dtype = dtype.into().unwrap_or(T::DEFAULT_DTYPE);
    // SAFETY: plain values; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_arange(res, start.to_f64(), stop.to_f64(), step, dtype.to_raw(), s)
    })
}
