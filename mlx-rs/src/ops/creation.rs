//! Arrays made from a shape or another array: `zeros`, `ones`, `full`, `arange`, `eye`,
//! `linspace`, `*_like`, windows, `meshgrid`.

use mlx_sys as sys;

use crate::ops::IntoOperand;
use crate::{Array, Dtype, Error, Result};

/// `fn name(shape, dtype=float32)` over `f(res, shape, len, dtype, s)`.
macro_rules! constant_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:path;)*) => {$(
        $(#[$doc])*
        pub fn $name(shape: &[i32], dtype: impl Into<Option<Dtype>>) -> Result<Array> {
            let dtype = dtype.into().unwrap_or(Dtype::Float32);
            // SAFETY: `shape` outlives the call; mlx-c writes a new array into res.
            Array::try_from_stream_op(|res, s| unsafe {
                $ffi(res, shape.as_ptr(), shape.len(), dtype.to_raw(), s)
            })
        }
    )*};
}

constant_ops! {
    /// An array of zeros; dtype defaults to float32 (Python: `mx.zeros(shape, dtype)`).
    zeros => sys::mlx_zeros;
    /// An array of ones; dtype defaults to float32 (Python: `mx.ones(shape, dtype)`).
    ones => sys::mlx_ones;
}

/// An array of `shape` filled with `vals` (broadcast); the dtype defaults to that of `vals`
/// (Python: `mx.full(shape, vals, dtype)`).
pub fn full<'a>(
    shape: &[i32],
    vals: impl IntoOperand<'a>,
    dtype: impl Into<Option<Dtype>>,
) -> Result<Array> {
    let dtype = dtype.into();
    let vals = vals.into_operand().resolve(dtype, None);
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

/// `[0, stop)` in steps of 1 (Python's one-argument overload `mx.arange(stop)`); the dtype
/// follows `stop` as in [`arange`].
///
/// ```
/// let a = mlx_rs::ops::arange_to(4)?;
/// assert_eq!(a.to_vec::<i32>()?, vec![0, 1, 2, 3]);
/// assert_eq!(mlx_rs::ops::arange_to(2.0f32)?.to_vec::<f32>()?, vec![0.0, 1.0]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn arange_to<T: ArangeBound + Default>(stop: T) -> Result<Array> {
    arange(T::default(), stop, None, None)
}

/// `fn name(a, dtype=None)` over `f(res, a, s)` / `f_dtype(res, a, dtype, s)`.
macro_rules! like_ops {
    ($($(#[$doc:meta])* $name:ident => $plain:path, $typed:path;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, dtype: impl Into<Option<Dtype>>) -> Result<Array> {
            match dtype.into() {
                // SAFETY: valid handle; plain values.
                Some(d) => Array::try_from_stream_op(|res, s| unsafe {
                    $typed(res, a.as_raw(), d.to_raw(), s)
                }),
                // SAFETY: valid handle.
                None => Array::try_from_stream_op(|res, s| unsafe { $plain(res, a.as_raw(), s) }),
            }
        }
    )*};
}

like_ops! {
    /// Zeros with the shape of `a`; dtype defaults to `a`'s (Python: `mx.zeros_like(a, dtype=None)`).
    zeros_like => sys::mlx_zeros_like, sys::mlx_zeros_like_dtype;
    /// Ones with the shape of `a`; dtype defaults to `a`'s (Python: `mx.ones_like(a, dtype=None)`).
    ones_like => sys::mlx_ones_like, sys::mlx_ones_like_dtype;
}

/// `vals` broadcast to the shape of `a`; the dtype defaults to `a`'s when `vals` is a scalar
/// and to `vals`' when it is an array (Python: `mx.full_like(a, vals, dtype=None)`).
pub fn full_like<'a>(
    a: &Array,
    vals: impl IntoOperand<'a>,
    dtype: impl Into<Option<Dtype>>,
) -> Result<Array> {
    let dtype = dtype.into();
    let vals = vals.into_operand().resolve(dtype, Some(a.dtype()));
    let dtype = dtype.unwrap_or_else(|| a.dtype());
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_full_like(res, a.as_raw(), vals.as_raw(), dtype.to_raw(), s)
    })
}

crate::options! {
    /// The keyword arguments of [`eye`] and [`tri`] (one Python signature: `m=None, k=0,
    /// dtype=float32`), with Python's defaults.
    ///
    /// ```
    /// use mlx_rs::ops::{self, EyeOptions};
    /// let e = ops::eye(2, EyeOptions::default().m(3).k(1))?;
    /// assert_eq!(e.to_vec::<f32>()?, vec![0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct EyeOptions {
        /// Columns; `None` is `n`.
        m: opt i32 = None,
        /// The diagonal: 0 the main one, positive above it.
        k: plain i32 = 0,
        /// The element type.
        dtype: plain Dtype = Dtype::Float32,
    }
}

/// [`tri`] has [`eye`]'s signature and so its options.
pub type TriOptions = EyeOptions;

/// `fn name(n, options)` over `f(res, n, m, k, dtype, s)`.
macro_rules! diagonal_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:path;)*) => {$(
        $(#[$doc])*
        pub fn $name(n: i32, options: EyeOptions) -> Result<Array> {
            let EyeOptions { m, k, dtype } = options;
            let m = m.unwrap_or(n);
            // SAFETY: plain values.
            Array::try_from_stream_op(|res, s| unsafe { $ffi(res, n, m, k, dtype.to_raw(), s) })
        }
    )*};
}

diagonal_ops! {
    /// An `n x m` matrix with ones on diagonal `k` (Python: `mx.eye(n, m=None, k=0,
    /// dtype=float32)`).
    eye => sys::mlx_eye;
    /// An `n x m` matrix with ones at and below diagonal `k` (Python: `mx.tri(n, m=None, k=0,
    /// dtype=float32)`).
    tri => sys::mlx_tri;
}

/// The `n x n` identity (Python: `mx.identity(n, dtype=float32)`).
pub fn identity(n: i32, dtype: impl Into<Option<Dtype>>) -> Result<Array> {
    let dtype = dtype.into().unwrap_or(Dtype::Float32);
    // SAFETY: plain values.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_identity(res, n, dtype.to_raw(), s) })
}

crate::options! {
    /// The keyword arguments of [`linspace`], with Python's defaults (`num=50`,
    /// `endpoint=True`, `dtype=float32`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct LinspaceOptions {
        /// How many values.
        num: plain i32 = 50,
        /// Whether `stop` is the last value (`true`) or excluded.
        endpoint: plain bool = true,
        /// The element type.
        dtype: plain Dtype = Dtype::Float32,
    }
}

/// `num` evenly spaced values from `start` to `stop` (Python: `mx.linspace(start, stop,
/// num=50, endpoint=True, dtype=float32)`).
///
/// ```
/// use mlx_rs::ops::{self, LinspaceOptions};
/// let x = ops::linspace(0.0, 1.0, LinspaceOptions::default().num(5))?;
/// assert_eq!(x.to_vec::<f32>()?, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn linspace(start: f64, stop: f64, options: LinspaceOptions) -> Result<Array> {
    let LinspaceOptions {
        num,
        endpoint,
        dtype,
    } = options;
    if endpoint {
        // SAFETY: plain values.
        Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_linspace(res, start, stop, num, dtype.to_raw(), s)
        })
    } else {
        // SAFETY: plain values.
        Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_linspace_endpoint(res, start, stop, num, endpoint, dtype.to_raw(), s)
        })
    }
}

/// Window functions `fn name(M)`.
macro_rules! windows {
    ($($(#[$doc:meta])* $name:ident => $ffi:path;)*) => {$(
        $(#[$doc])*
        #[allow(non_snake_case)]
        pub fn $name(M: i32) -> Result<Array> {
            // SAFETY: plain values.
            Array::try_from_stream_op(|res, s| unsafe { $ffi(res, M, s) })
        }
    )*};
}

windows! {
    /// The Bartlett (triangular) window of `M` points (Python: `mx.bartlett(M)`).
    bartlett => sys::mlx_bartlett;
    /// The Blackman window of `M` points (Python: `mx.blackman(M)`).
    blackman => sys::mlx_blackman;
    /// The Hamming window of `M` points (Python: `mx.hamming(M)`).
    hamming => sys::mlx_hamming;
    /// The Hann window of `M` points (Python: `mx.hanning(M)`).
    hanning => sys::mlx_hanning;
}

/// Coordinate grids from 1-D arrays (Python: `mx.meshgrid(*arrays, sparse=False,
/// indexing="xy")`). `sparse` `None` is `false`; `indexing` `None` is `"xy"`, the other
/// choice is `"ij"`.
pub fn meshgrid<'a>(
    arrays: impl IntoIterator<Item = &'a Array>,
    sparse: impl Into<Option<bool>>,
    indexing: impl Into<Option<&'a str>>,
) -> Result<Vec<Array>> {
    let sparse = sparse.into().unwrap_or(false);
    let indexing = crate::handles::c_string(indexing.into().unwrap_or("xy"), "[meshgrid]")?;
    let v = crate::handles::VectorArray::from_arrays(arrays);
    // SAFETY: valid vector handle; `indexing` outlives the call.
    crate::stream::vector_op(|res, s| unsafe {
        sys::mlx_meshgrid(res, v.0, sparse, indexing.as_ptr(), s)
    })
}
