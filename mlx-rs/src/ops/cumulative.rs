//! Scans: `cumsum`, `cumprod`, `cummax`, `cummin`, `logcumsumexp`.
//!
//! Python's keyword arguments `reverse=False, inclusive=True` are plain `bool`s here (write
//! Python's defaults out: `false, true`); `axis=None` scans the flattened array.

use mlx_sys as sys;

use crate::handles::opt_dtype;
use crate::ops::array_methods;
use crate::{Array, Dtype, Result};

/// `fn name(a, axis=None, reverse, inclusive)` over `f(res, a, reverse, inclusive, s)` /
/// `f_axis(res, a, axis, reverse, inclusive, s)`. Entries marked `(dtype)` also take an
/// accumulation dtype, passed to mlx-c before the stream.
macro_rules! scans {
    ($($(#[$doc:meta])* $name:ident $(($dtype:ident))? => $flat:path, $axis:path;)*) => {$(
        $(#[$doc])*
        pub fn $name(
            a: &Array,
            axis: impl Into<Option<i32>>,
            reverse: bool,
            inclusive: bool,
            $($dtype: impl Into<Option<Dtype>>,)?
        ) -> Result<Array> {
            $(let $dtype = opt_dtype($dtype.into());)?
            match axis.into() {
                // SAFETY: valid handle; plain values.
                Some(axis) => Array::try_from_stream_op(|res, s| unsafe {
                    $axis(res, a.as_raw(), axis, reverse, inclusive, $($dtype,)? s)
                }),
                // SAFETY: valid handle; plain values.
                None => Array::try_from_stream_op(|res, s| unsafe {
                    $flat(res, a.as_raw(), reverse, inclusive, $($dtype,)? s)
                }),
            }
        }
    )*};
}

scans! {
    /// Cumulative sum (Python: `mx.cumsum(a, axis=None, *, reverse=False, inclusive=True, dtype=None)`).
    cumsum(dtype) => sys::mlx_cumsum, sys::mlx_cumsum_axis;
    /// Cumulative product (Python: `mx.cumprod(a, axis=None, *, reverse=False, inclusive=True, dtype=None)`).
    cumprod(dtype) => sys::mlx_cumprod, sys::mlx_cumprod_axis;
    /// Cumulative maximum (Python: `mx.cummax(a, axis=None, *, reverse=False, inclusive=True)`).
    cummax => sys::mlx_cummax, sys::mlx_cummax_axis;
    /// Cumulative minimum (Python: `mx.cummin(a, axis=None, *, reverse=False, inclusive=True)`).
    cummin => sys::mlx_cummin, sys::mlx_cummin_axis;
    /// Cumulative log-sum-exp (Python: `mx.logcumsumexp(a, axis=None, *, reverse=False, inclusive=True)`).
    logcumsumexp => sys::mlx_logcumsumexp, sys::mlx_logcumsumexp_axis;
}

array_methods! {
    /// Cumulative sum (Python: `a.cumsum(axis=None, *, reverse, inclusive, dtype)`).
    fn cumsum(axis: impl Into<Option<i32>>, reverse: bool, inclusive: bool, dtype: impl Into<Option<Dtype>>);
    /// Cumulative product (Python: `a.cumprod(...)`).
    fn cumprod(axis: impl Into<Option<i32>>, reverse: bool, inclusive: bool, dtype: impl Into<Option<Dtype>>);
    /// Cumulative maximum (Python: `a.cummax(...)`).
    fn cummax(axis: impl Into<Option<i32>>, reverse: bool, inclusive: bool);
    /// Cumulative minimum (Python: `a.cummin(...)`).
    fn cummin(axis: impl Into<Option<i32>>, reverse: bool, inclusive: bool);
    /// Cumulative log-sum-exp (Python: `a.logcumsumexp(...)`).
    fn logcumsumexp(axis: impl Into<Option<i32>>, reverse: bool, inclusive: bool);
}
