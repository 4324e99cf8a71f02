//! Reductions over axes.

use crate::ops::{array_methods, reduction_ops, Axes};

reduction_ops! {
    /// Sum over `axes` (Python: `mx.sum(a, axis=None, keepdims=False)`).
    sum => mlx_sum, mlx_sum_axes;
    /// Arithmetic mean over `axes` (Python: `mx.mean`).
    mean => mlx_mean, mlx_mean_axes;
    /// Maximum over `axes` (Python: `mx.max`).
    max => mlx_max, mlx_max_axes;
    /// Minimum over `axes` (Python: `mx.min`).
    min => mlx_min, mlx_min_axes;
    /// Product over `axes` (Python: `mx.prod`).
    prod => mlx_prod, mlx_prod_axes;
    /// Whether all elements are true over `axes` (Python: `mx.all`).
    all => mlx_all, mlx_all_axes;
    /// Whether any element is true over `axes` (Python: `mx.any`).
    any => mlx_any, mlx_any_axes;
    /// `log(sum(exp(a)))` over `axes`, computed stably (Python: `mx.logsumexp`).
    logsumexp => mlx_logsumexp, mlx_logsumexp_axes;
    /// Median over `axes` (Python: `mx.median`).
    median => mlx_median, mlx_median_axes;
    /// Number of non-zero elements over `axes` (Python: `mx.count_nonzero`).
    count_nonzero => mlx_count_nonzero, mlx_count_nonzero_axes;
}

array_methods! {
    /// Sum over `axes` (Python: `a.sum(axis, keepdims)`).
    fn sum(axes: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Mean over `axes` (Python: `a.mean(axis, keepdims)`).
    fn mean(axes: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Maximum over `axes` (Python: `a.max(axis, keepdims)`).
    fn max(axes: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Minimum over `axes` (Python: `a.min(axis, keepdims)`).
    fn min(axes: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Product over `axes` (Python: `a.prod(axis, keepdims)`).
    fn prod(axes: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// All true over `axes` (Python: `a.all(axis, keepdims)`).
    fn all(axes: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Any true over `axes` (Python: `a.any(axis, keepdims)`).
    fn any(axes: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Stable log-sum-exp over `axes` (Python: `a.logsumexp(axis, keepdims)`).
    fn logsumexp(axes: impl Into<Axes<'x>>, keepdims: bool) <'x>;
}
