//! Gathering and scattering: `take`, `take_along_axis`, `put_along_axis`, `where`, the
//! `scatter*` family, `gather`, and the slice ops that Python indexing is built from.
//!
//! Index arrays are not bounds-checked by MLX (checking would force evaluation); an
//! out-of-range *array* index reads or writes an unspecified element. Integer indices given
//! as Rust integers are checked by [`crate::Array::index`].

use std::borrow::Cow;

use mlx_sys as sys;

use crate::handles::c_string;
use crate::handles::VectorArray;
use crate::ops::args::operand_array;
use crate::ops::IntoOperand;
use crate::{Array, Result};

/// Index argument of [`take`]: a Rust integer or an index array (Python: `int | array`).
pub trait IntoTakeIndices {
    fn into_indices(self) -> Array;
}
impl IntoTakeIndices for &Array {
    fn into_indices(self) -> Array {
        self.clone()
    }
}
impl IntoTakeIndices for Array {
    fn into_indices(self) -> Array {
        self
    }
}
impl IntoTakeIndices for i32 {
    fn into_indices(self) -> Array {
        Array::from_scalar(self)
    }
}

/// Elements at `indices` along `axis`; `None` indexes the flattened array
/// (Python: `mx.take(a, indices, axis=None)`).
pub fn take(
    a: &Array,
    indices: impl IntoTakeIndices,
    axis: impl Into<Option<i32>>,
) -> Result<Array> {
    let indices = indices.into_indices();
    match axis.into() {
        // SAFETY: valid handles; plain values.
        Some(axis) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_take_axis(res, a.as_raw(), indices.as_raw(), axis, s)
        }),
        // SAFETY: valid handles.
        None => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_take(res, a.as_raw(), indices.as_raw(), s)
        }),
    }
}

/// Picks along `axis` with indices broadcast against `a`; `None` uses the flattened array
/// (Python: `mx.take_along_axis(a, indices, axis=None)`).
pub fn take_along_axis(a: &Array, indices: &Array, axis: impl Into<Option<i32>>) -> Result<Array> {
    let (a, axis) = match axis.into() {
        Some(axis) => (a.clone(), axis),
        None => (a.reshape(&[-1])?, 0),
    };
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_take_along_axis(res, a.as_raw(), indices.as_raw(), axis, s)
    })
}

/// Writes `values` at `indices` along `axis`; `None` uses the flattened array and restores
/// the shape (Python: `mx.put_along_axis(a, indices, values, axis=None)`).
pub fn put_along_axis<'v>(
    a: &Array,
    indices: &Array,
    values: impl IntoOperand<'v>,
    axis: impl Into<Option<i32>>,
) -> Result<Array> {
    let values = operand_array(values, Some(a.dtype()));
    let Some(axis) = axis.into() else {
        let flat = put_along_axis(&a.reshape(&[-1])?, indices, &values, 0)?;
        return flat.reshape(a.shape());
    };
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_put_along_axis(res, a.as_raw(), indices.as_raw(), values.as_raw(), axis, s)
    })
}

/// Adds `values` at `indices` along `axis`, accumulating duplicates (C++ `scatter_add_axis`;
/// Python reaches it through `a.at[...]`).
pub fn scatter_add_axis<'v>(
    a: &Array,
    indices: &Array,
    values: impl IntoOperand<'v>,
    axis: i32,
) -> Result<Array> {
    let values = operand_array(values, Some(a.dtype()));
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_scatter_add_axis(res, a.as_raw(), indices.as_raw(), values.as_raw(), axis, s)
    })
}

/// `x` where `condition` is true, else `y`, broadcasting all three
/// (Python: `mx.where(condition, x, y)`; `where` is a Rust keyword).
pub fn where_<'c, 'x, 'y>(
    condition: impl IntoOperand<'c>,
    x: impl IntoOperand<'x>,
    y: impl IntoOperand<'y>,
) -> Result<Array> {
    let condition = operand_array(condition, None);
    let (x, y) = crate::ops::args::resolve_pair(x.into_operand(), y.into_operand());
    // SAFETY: valid handles.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_where(res, condition.as_raw(), x.as_raw(), y.as_raw(), s)
    })
}

/// Replaces the elements where `mask` is true, in row-major order, with consecutive
/// elements of `src` (C++ `masked_scatter`; Python's `a[mask] = src`).
pub fn masked_scatter(a: &Array, mask: &Array, src: &Array) -> Result<Array> {
    // SAFETY: valid handles.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_masked_scatter(res, a.as_raw(), mask.as_raw(), src.as_raw(), s)
    })
}

/// Which insertion point [`searchsorted`] returns for equal values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Side {
    /// `"left"`: the first suitable position.
    #[default]
    Left,
    /// `"right"`: the last suitable position.
    Right,
}

/// Insertion points of `values` into the 1-D `sorted_sequence`
/// (Python: `mx.searchsorted(sorted_sequence, values, side="left")`; `None` is `Left`).
pub fn searchsorted(
    sorted_sequence: &Array,
    values: &Array,
    side: impl Into<Option<Side>>,
) -> Result<Array> {
    let side = match side.into().unwrap_or_default() {
        Side::Left => "left",
        Side::Right => "right",
    };
    let side = c_string(side, "[searchsorted]")?;
    // SAFETY: valid handles; `side` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_searchsorted(
            res,
            sorted_sequence.as_raw(),
            values.as_raw(),
            side.as_ptr(),
            s,
        )
    })
}

/// Gathers slices of `slice_sizes` starting at the positions the `indices` arrays (one per
/// entry of `axes`, broadcast together) give (C++ `gather`; the op Python indexing uses).
pub fn gather<'a>(
    a: &Array,
    indices: impl IntoIterator<Item = &'a Array>,
    axes: &[i32],
    slice_sizes: &[i32],
) -> Result<Array> {
    let indices: Vec<&Array> = indices.into_iter().collect();
    if let ([single], [axis]) = (indices.as_slice(), axes) {
        // SAFETY: valid handles; `slice_sizes` outlives the call.
        return Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_gather_single(
                res,
                a.as_raw(),
                single.as_raw(),
                *axis,
                slice_sizes.as_ptr(),
                slice_sizes.len(),
                s,
            )
        });
    }
    let v = VectorArray::from_arrays(indices);
    // SAFETY: valid handles; the slices outlive the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_gather(
            res,
            a.as_raw(),
            v.0,
            axes.as_ptr(),
            axes.len(),
            slice_sizes.as_ptr(),
            slice_sizes.len(),
            s,
        )
    })
}

/// `fn name(a, indices, updates, axes)` for the scatter family, dispatching to the
/// single-index mlx-c entry point when there is one index array.
macro_rules! scatter_ops {
    ($($(#[$doc:meta])* $name:ident => $multi:path, $single:path;)*) => {$(
        $(#[$doc])*
        pub fn $name<'a>(
            a: &Array,
            indices: impl IntoIterator<Item = &'a Array>,
            updates: &Array,
            axes: &[i32],
        ) -> Result<Array> {
            let indices: Vec<&Array> = indices.into_iter().collect();
            if let ([single], [axis]) = (indices.as_slice(), axes) {
                // SAFETY: valid handles; plain values.
                return Array::try_from_stream_op(|res, s| unsafe {
                    $single(res, a.as_raw(), single.as_raw(), updates.as_raw(), *axis, s)
                });
            }
            let v = VectorArray::from_arrays(indices);
            // SAFETY: valid handles; `axes` outlives the call.
            Array::try_from_stream_op(|res, s| unsafe {
                $multi(res, a.as_raw(), v.0, updates.as_raw(), axes.as_ptr(), axes.len(), s)
            })
        }
    )*};
}

scatter_ops! {
    /// Writes `updates` at the positions the `indices` arrays give along `axes` (C++
    /// `scatter`; Python's `a[idx] = v`). `updates` has shape
    /// `broadcast(indices).shape + [slice sizes per axis of a]`.
    scatter => sys::mlx_scatter, sys::mlx_scatter_single;
    /// Like [`scatter`], adding into `a` and accumulating duplicates (Python `a.at[idx].add(v)`).
    scatter_add => sys::mlx_scatter_add, sys::mlx_scatter_add_single;
    /// Like [`scatter`], keeping the maximum (Python `a.at[idx].maximum(v)`).
    scatter_max => sys::mlx_scatter_max, sys::mlx_scatter_max_single;
    /// Like [`scatter`], keeping the minimum (Python `a.at[idx].minimum(v)`).
    scatter_min => sys::mlx_scatter_min, sys::mlx_scatter_min_single;
    /// Like [`scatter`], multiplying (Python `a.at[idx].multiply(v)`).
    scatter_prod => sys::mlx_scatter_prod, sys::mlx_scatter_prod_single;
}

/// A slice of `slice_size` starting at the positions in the array `start_indices` along
/// `axes` (Python: `mx.slice(a, start_indices, axes, slice_size)`; the start may be computed).
pub fn slice(a: &Array, start_indices: &Array, axes: &[i32], slice_size: &[i32]) -> Result<Array> {
    // SAFETY: valid handles; the slices outlive the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_slice_dynamic(
            res,
            a.as_raw(),
            start_indices.as_raw(),
            axes.as_ptr(),
            axes.len(),
            slice_size.as_ptr(),
            slice_size.len(),
            s,
        )
    })
}

/// The given strides, or stride 1 on each of `n` axes (Python's default).
fn strides_or_ones(strides: Option<&[i32]>, n: usize) -> Cow<'_, [i32]> {
    strides.map_or_else(|| Cow::Owned(vec![1; n]), Cow::Borrowed)
}

/// The strided slice `a[start[0]:stop[0]:strides[0], ...]` with one entry per axis (C++
/// `slice(a, start, stop, strides)`; `None` strides are 1). Bounds are clamped like Python's.
pub fn slice_strided<'x>(
    a: &Array,
    start: &[i32],
    stop: &[i32],
    strides: impl Into<Option<&'x [i32]>>,
) -> Result<Array> {
    let strides = strides_or_ones(strides.into(), start.len());
    // SAFETY: valid handle; the slices outlive the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_slice(
            res,
            a.as_raw(),
            start.as_ptr(),
            start.len(),
            stop.as_ptr(),
            stop.len(),
            strides.as_ptr(),
            strides.len(),
            s,
        )
    })
}

/// `a` with `update` written at the positions in `start_indices` along `axes`
/// (Python: `mx.slice_update(a, update, start_indices, axes)`).
pub fn slice_update(
    a: &Array,
    update: &Array,
    start_indices: &Array,
    axes: &[i32],
) -> Result<Array> {
    // SAFETY: valid handles; `axes` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_slice_update_dynamic(
            res,
            a.as_raw(),
            update.as_raw(),
            start_indices.as_raw(),
            axes.as_ptr(),
            axes.len(),
            s,
        )
    })
}

/// `fn name(src, update, start, stop, strides)` for the static slice-update family.
macro_rules! slice_update_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:path;)*) => {$(
        $(#[$doc])*
        pub fn $name<'x>(
            src: &Array,
            update: &Array,
            start: &[i32],
            stop: &[i32],
            strides: impl Into<Option<&'x [i32]>>,
        ) -> Result<Array> {
            let strides = strides_or_ones(strides.into(), start.len());
            // SAFETY: valid handles; the slices outlive the call.
            Array::try_from_stream_op(|res, s| unsafe {
                $ffi(
                    res,
                    src.as_raw(),
                    update.as_raw(),
                    start.as_ptr(),
                    start.len(),
                    stop.as_ptr(),
                    stop.len(),
                    strides.as_ptr(),
                    strides.len(),
                    s,
                )
            })
        }
    )*};
}

slice_update_ops! {
    /// `src` with the strided slice `start:stop:strides` replaced by `update` (C++
    /// `slice_update(src, update, start, stop, strides)`; Python's `a[1:3] = v`).
    slice_update_strided => sys::mlx_slice_update;
    /// Adds `update` into the strided slice (Python's `a.at[1:3].add(v)`).
    slice_update_add => sys::mlx_slice_update_add;
    /// Keeps the maximum within the strided slice (Python's `a.at[1:3].maximum(v)`).
    slice_update_max => sys::mlx_slice_update_max;
    /// Keeps the minimum within the strided slice (Python's `a.at[1:3].minimum(v)`).
    slice_update_min => sys::mlx_slice_update_min;
    /// Multiplies the strided slice by `update` (Python's `a.at[1:3].multiply(v)`).
    slice_update_prod => sys::mlx_slice_update_prod;
}
