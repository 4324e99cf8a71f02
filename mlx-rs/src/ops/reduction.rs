//! Reductions over axes.

use crate::ops::{array_methods, reduction_ops, Axes};

reduction_ops! {
    /// Sum over `axes` (Python: `mx.sum(a, axis=None, keepdims=False)`).
    sum => mlx_sum, mlx_sum_axes;
    /// Arithmetic mean over `axes` (Python: `mx.mean`).
    mean => mlx_mean, mlx_mean_axes;
    /// Maximum over `axes` (Python: `mx.max`).
    max => mlx_max, mlx_max_axes;
}

array_methods! {
    /// Sum over `axes` (Python: `a.sum(axis, keepdims)`).
    fn sum(axes: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Mean over `axes` (Python: `a.mean(axis, keepdims)`).
    fn mean(axes: impl Into<Axes<'x>>, keepdims: bool) <'x>;
    /// Maximum over `axes` (Python: `a.max(axis, keepdims)`).
    fn max(axes: impl Into<Axes<'x>>, keepdims: bool) <'x>;
}
