//! Scans: `cumsum`, `cumprod`, `cummax`, `cummin`, `logcumsumexp`.
//!
//! `axis=None` scans the flattened array. Python's keyword arguments follow the keyword rule
//! of `docs/porting.md`: `cumsum` and `cumprod` have three (`reverse=False, inclusive=True,
//! dtype=None`), so they take a [`CumsumOptions`]; the others have two, trailing
//! `impl Into<Option<bool>>` (`None` = Python's default):
//!
//! ```
//! use mlx_rs::{ops::{self, CumsumOptions}, Dtype};
//! let a = ops::arange_to(4)?;
//! // mx.cumsum(a, reverse=True, dtype=mx.float32)
//! let s = ops::cumsum(&a, None, CumsumOptions::default().reverse(true).dtype(Dtype::Float32))?;
//! assert_eq!(s.to_vec::<f32>()?, [6.0, 6.0, 5.0, 3.0]);
//! // mx.cummax(a, inclusive=False)
//! assert_eq!(ops::cummax(&a, 0, None, false)?.shape(), &[4]);
//! # Ok::<(), mlx_rs::Error>(())
//! ```

use mlx_sys as sys;

use crate::ops::unless_empty;

use crate::handles::opt_dtype;
use crate::ops::array_methods;
use crate::{Array, Dtype, Result};

crate::options! {
    /// The keyword arguments of [`cumsum`] and [`cumprod`] (also named [`CumprodOptions`]), with
    /// Python's defaults (`reverse=False`, `inclusive=True`, `dtype=None`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct CumsumOptions {
        /// Whether to scan from the end.
        reverse: plain bool = false,
        /// Whether each output includes its own element.
        inclusive: plain bool = true,
        /// The accumulation and result dtype; `None`: MLX's choice for the input dtype.
        dtype: opt Dtype = None,
    }
}

/// The options of [`cumprod`]: the same keywords as [`cumsum`].
pub type CumprodOptions = CumsumOptions;

/// `fn name(a, axis=None, options: CumsumOptions)` over `f(res, a, reverse, inclusive,
/// dtype, s)` / `f_axis(res, a, axis, reverse, inclusive, dtype, s)`.
macro_rules! dtype_scans {
    ($($(#[$doc:meta])* $name:ident => $flat:path, $axis:path;)*) => {$(
        $(#[$doc])*
        pub fn $name(
            a: &Array,
            axis: impl Into<Option<i32>>,
            options: CumsumOptions,
        ) -> Result<Array> {
            let CumsumOptions { reverse, inclusive, dtype } = options;
            let dtype = opt_dtype(dtype);
            let out = match axis.into() {
                // SAFETY: valid handle; plain values.
                Some(axis) => Array::try_from_stream_op(|res, s| unsafe {
                    $axis(res, a.as_raw(), axis, reverse, inclusive, dtype, s)
                }),
                // SAFETY: valid handle; plain values.
                None => Array::try_from_stream_op(|res, s| unsafe {
                    $flat(res, a.as_raw(), reverse, inclusive, dtype, s)
                }),
            };
            unless_empty(out?)
        }
    )*};
}

/// `fn name(a, axis=None, reverse=None, inclusive=None)` over `f(res, a, reverse, inclusive,
/// s)` / `f_axis(res, a, axis, reverse, inclusive, s)`.
macro_rules! scans {
    ($($(#[$doc:meta])* $name:ident => $flat:path, $axis:path;)*) => {$(
        $(#[$doc])*
        pub fn $name(
            a: &Array,
            axis: impl Into<Option<i32>>,
            reverse: impl Into<Option<bool>>,
            inclusive: impl Into<Option<bool>>,
        ) -> Result<Array> {
            let reverse = reverse.into().unwrap_or(false);
            let inclusive = inclusive.into().unwrap_or(true);
            let out = match axis.into() {
                // SAFETY: valid handle; plain values.
                Some(axis) => Array::try_from_stream_op(|res, s| unsafe {
                    $axis(res, a.as_raw(), axis, reverse, inclusive, s)
                }),
                // SAFETY: valid handle; plain values.
                None => Array::try_from_stream_op(|res, s| unsafe {
                    $flat(res, a.as_raw(), reverse, inclusive, s)
                }),
            };
            unless_empty(out?)
        }
    )*};
}

dtype_scans! {
    /// Cumulative sum (Python: `mx.cumsum(a, axis=None, *, reverse=False, inclusive=True, dtype=None)`).
    cumsum => sys::mlx_cumsum, sys::mlx_cumsum_axis;
    /// Cumulative product (Python: `mx.cumprod(a, axis=None, *, reverse=False, inclusive=True, dtype=None)`).
    cumprod => sys::mlx_cumprod, sys::mlx_cumprod_axis;
}

scans! {
    /// Cumulative maximum (Python: `mx.cummax(a, axis=None, *, reverse=False, inclusive=True)`).
    cummax => sys::mlx_cummax, sys::mlx_cummax_axis;
    /// Cumulative minimum (Python: `mx.cummin(a, axis=None, *, reverse=False, inclusive=True)`).
    cummin => sys::mlx_cummin, sys::mlx_cummin_axis;
    /// Cumulative log-sum-exp (Python: `mx.logcumsumexp(a, axis=None, *, reverse=False, inclusive=True)`).
    logcumsumexp => sys::mlx_logcumsumexp, sys::mlx_logcumsumexp_axis;
}

// The methods take the ops' parameters, so `cumsum`/`cumprod` also offer `dtype`, which
// Python's methods lack.
array_methods! {
    /// Cumulative sum (Python: `a.cumsum(axis=None, *, reverse, inclusive)`).
    fn cumsum(axis: impl Into<Option<i32>>, options: CumsumOptions);
    /// Cumulative product (Python: `a.cumprod(...)`).
    fn cumprod(axis: impl Into<Option<i32>>, options: CumsumOptions);
    /// Cumulative maximum (Python: `a.cummax(...)`).
    fn cummax(axis: impl Into<Option<i32>>, reverse: impl Into<Option<bool>>, inclusive: impl Into<Option<bool>>);
    /// Cumulative minimum (Python: `a.cummin(...)`).
    fn cummin(axis: impl Into<Option<i32>>, reverse: impl Into<Option<bool>>, inclusive: impl Into<Option<bool>>);
    /// Cumulative log-sum-exp (Python: `a.logcumsumexp(...)`).
    fn logcumsumexp(axis: impl Into<Option<i32>>, reverse: impl Into<Option<bool>>, inclusive: impl Into<Option<bool>>);
}
