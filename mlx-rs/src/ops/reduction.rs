//! Reductions over axes.

use mlx_sys as sys;

use crate::ops::{array_methods, reduction_ops, Axes, AxesArg};
use crate::{Array, Result};

reduction_ops! {
    /// Sum over `axes` (Python: `mx.sum(a, axis=None, keepdims=False)`).
    sum => sys::mlx_sum, sys::mlx_sum_axis, sys::mlx_sum_axes;
    /// Arithmetic mean over `axes` (Python: `mx.mean`).
    mean => sys::mlx_mean, sys::mlx_mean_axis, sys::mlx_mean_axes;
    /// Maximum over `axes` (Python: `mx.max`).
    max => sys::mlx_max, sys::mlx_max_axis, sys::mlx_max_axes;
    /// Minimum over `axes` (Python: `mx.min`).
    min => sys::mlx_min, sys::mlx_min_axis, sys::mlx_min_axes;
    /// Product over `axes` (Python: `mx.prod`).
    prod => sys::mlx_prod, sys::mlx_prod_axis, sys::mlx_prod_axes;
    /// Whether all elements are true over `axes` (Python: `mx.all`).
    all => sys::mlx_all, sys::mlx_all_axis, sys::mlx_all_axes;
    /// Whether any element is true over `axes` (Python: `mx.any`).
    any => sys::mlx_any, sys::mlx_any_axis, sys::mlx_any_axes;
    /// `log(sum(exp(a)))` over `axes`, computed stably (Python: `mx.logsumexp`).
    logsumexp => sys::mlx_logsumexp, sys::mlx_logsumexp_axis, sys::mlx_logsumexp_axes;
    /// Median over `axes` (Python: `mx.median`).
    median => sys::mlx_median, sys::mlx_median_axis, sys::mlx_median_axes;
    /// Number of non-zero elements over `axes` (Python: `mx.count_nonzero`).
    count_nonzero => sys::mlx_count_nonzero, sys::mlx_count_nonzero_axis, sys::mlx_count_nonzero_axes;
}

array_methods! {
    /// Sum over `axes` (Python: `a.sum(axis, keepdims)`).
    fn sum(axis: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Mean over `axes` (Python: `a.mean(axis, keepdims)`).
    fn mean(axis: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Maximum over `axes` (Python: `a.max(axis, keepdims)`).
    fn max(axis: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Minimum over `axes` (Python: `a.min(axis, keepdims)`).
    fn min(axis: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Product over `axes` (Python: `a.prod(axis, keepdims)`).
    fn prod(axis: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// All true over `axes` (Python: `a.all(axis, keepdims)`).
    fn all(axis: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Any true over `axes` (Python: `a.any(axis, keepdims)`).
    fn any(axis: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Stable log-sum-exp over `axes` (Python: `a.logsumexp(axis, keepdims)`).
    fn logsumexp(axis: impl Into<Axes<'x>>, keepdims: bool) <'x>;
}

/// Reductions with Python's `(a, axis=None, keepdims=False, ddof=0)`.
macro_rules! ddof_reductions {
    ($($(#[$doc:meta])* $name:ident => $all:path, $axis:path, $axes:path;)*) => {$(
        $(#[$doc])*
        pub fn $name<'x>(
            a: &Array,
            axis: impl Into<Axes<'x>>,
            keepdims: bool,
            ddof: impl Into<Option<i32>>,
        ) -> Result<Array> {
            let ddof = ddof.into().unwrap_or(0);
            match axis.into().arg() {
                // SAFETY: valid handle; plain values.
                AxesArg::All => Array::try_from_stream_op(|res, s| unsafe {
                    $all(res, a.as_raw(), keepdims, ddof, s)
                }),
                // SAFETY: valid handle; plain values.
                AxesArg::One(ax) => Array::try_from_stream_op(|res, s| unsafe {
                    $axis(res, a.as_raw(), ax, keepdims, ddof, s)
                }),
                // SAFETY: valid handle; `ax` outlives the call.
                AxesArg::Many(ax) => Array::try_from_stream_op(|res, s| unsafe {
                    $axes(res, a.as_raw(), ax.as_ptr(), ax.len(), keepdims, ddof, s)
                }),
            }
        }
    )*};
}

ddof_reductions! {
    /// Variance over `axis` with `ddof` delta degrees of freedom (Python: `mx.var(a,
    /// axis=None, keepdims=False, ddof=0)`).
    var => sys::mlx_var, sys::mlx_var_axis, sys::mlx_var_axes;
    /// Standard deviation over `axis` (Python: `mx.std(a, axis=None, keepdims=False, ddof=0)`).
    std => sys::mlx_std, sys::mlx_std_axis, sys::mlx_std_axes;
}

array_methods! {
    /// Variance (Python: `a.var(axis=None, keepdims=False, ddof=0)`).
    fn var(axis: impl Into<Axes<'x>>, keepdims: bool, ddof: impl Into<Option<i32>>) <'x>;
    /// Standard deviation (Python: `a.std(axis=None, keepdims=False, ddof=0)`).
    fn std(axis: impl Into<Axes<'x>>, keepdims: bool, ddof: impl Into<Option<i32>>) <'x>;
}
