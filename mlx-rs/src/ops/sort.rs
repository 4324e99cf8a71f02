//! Sorting and selection: `sort`, `argsort`, `partition`, `argpartition`, `topk`,
//! `argmax`, `argmin`.

use mlx_sys as sys;

use crate::ops::unless_empty;
use crate::ops::{array_methods, Axis};
use crate::{Array, Result};

/// `fn name(a, axis)` over the mlx-c pair `f(res, a, s)` (flattened) / `f_axis(res, a, axis, s)`.
macro_rules! sort_ops {
    ($($(#[$doc:meta])* $name:ident => $flat:path, $axis:path;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, axis: impl Into<Axis>) -> Result<Array> {
            let out = match axis.into().resolve(-1) {
                // SAFETY: valid handle; plain values.
                Some(axis) => Array::try_from_stream_op(|res, s| unsafe {
                    $axis(res, a.as_raw(), axis, s)
                }),
                // SAFETY: valid handle.
                None => Array::try_from_stream_op(|res, s| unsafe { $flat(res, a.as_raw(), s) }),
            };
            unless_empty(out?)
        }
    )*};
}

sort_ops! {
    /// Sorted copy along `axis` (Python: `mx.sort(a, axis=-1)`; `Axis::Flatten` is `axis=None`).
    sort => sys::mlx_sort, sys::mlx_sort_axis;
    /// Indices that sort `a` along `axis` (Python: `mx.argsort(a, axis=-1)`).
    argsort => sys::mlx_argsort, sys::mlx_argsort_axis;
}

/// `fn name(a, k, axis)` over the mlx-c pair `f(res, a, k, s)` / `f_axis(res, a, k, axis, s)`.
macro_rules! select_ops {
    ($($(#[$doc:meta])* $name:ident($k:ident) => $flat:path, $axis:path;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, $k: i32, axis: impl Into<Axis>) -> Result<Array> {
            match axis.into().resolve(-1) {
                // SAFETY: valid handle; plain values.
                Some(axis) => Array::try_from_stream_op(|res, s| unsafe {
                    $axis(res, a.as_raw(), $k, axis, s)
                }),
                // SAFETY: valid handle; plain values.
                None => Array::try_from_stream_op(|res, s| unsafe { $flat(res, a.as_raw(), $k, s) }),
            }
        }
    )*};
}

select_ops! {
    /// A copy where the `kth` element is in sorted position, smaller ones before it and
    /// larger ones after (Python: `mx.partition(a, kth, axis=-1)`).
    partition(kth) => sys::mlx_partition, sys::mlx_partition_axis;
    /// Indices that partition `a` (Python: `mx.argpartition(a, kth, axis=-1)`).
    argpartition(kth) => sys::mlx_argpartition, sys::mlx_argpartition_axis;
    /// The `k` largest elements along `axis`, unordered (Python: `mx.topk(a, k, axis=-1)`).
    topk(k) => sys::mlx_topk, sys::mlx_topk_axis;
}

/// `fn name(a, axis=None, keepdims)` over `f(res, a, keepdims, s)` / `f_axis(...)`.
macro_rules! arg_reductions {
    ($($(#[$doc:meta])* $name:ident => $flat:path, $axis:path;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, axis: impl Into<Option<i32>>, keepdims: bool) -> Result<Array> {
            match axis.into() {
                // SAFETY: valid handle; plain values.
                Some(axis) => Array::try_from_stream_op(|res, s| unsafe {
                    $axis(res, a.as_raw(), axis, keepdims, s)
                }),
                // SAFETY: valid handle; plain values.
                None => Array::try_from_stream_op(|res, s| unsafe {
                    $flat(res, a.as_raw(), keepdims, s)
                }),
            }
        }
    )*};
}

arg_reductions! {
    /// Index of the maximum along `axis`; `None` uses the flattened array
    /// (Python: `mx.argmax(a, axis=None, keepdims=False)`).
    argmax => sys::mlx_argmax, sys::mlx_argmax_axis;
    /// Index of the minimum along `axis`; `None` uses the flattened array
    /// (Python: `mx.argmin(a, axis=None, keepdims=False)`).
    argmin => sys::mlx_argmin, sys::mlx_argmin_axis;
}

array_methods! {
    /// Index of the maximum (Python: `a.argmax(axis=None, keepdims=False)`).
    fn argmax(axis: impl Into<Option<i32>>, keepdims: bool);
    /// Index of the minimum (Python: `a.argmin(axis=None, keepdims=False)`).
    fn argmin(axis: impl Into<Option<i32>>, keepdims: bool);
}
