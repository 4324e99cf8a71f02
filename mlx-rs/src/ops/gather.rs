//! Gathering and scattering: `take`, `take_along_axis`, `put_along_axis`, `where`, the
//! `scatter*` family, `gather`, and the slice ops that Python indexing is built from.
//!
//! MLX does not bounds-check index arrays (that would force evaluation), and its kernels
//! read and write outside the array for an out-of-range index. The ops here give every
//! index a defined meaning instead: reads clamp, writes drop, dynamic slice starts clamp
//! (see [`ops::bounds`](crate::ops::bounds) for the rules and their cost). The `*_unchecked`
//! functions are MLX's ops as they are, for callers that know their indices are in range.
//! Integer indices given as Rust integers are checked eagerly, as [`crate::Array::index`]
//! does.

use std::borrow::Cow;

use mlx_sys as sys;

use crate::handles::c_string;
use crate::handles::VectorArray;
use crate::ops::args::operand_array;
use crate::ops::bounds::{clamp_starts, identity, normalize_axis, Extent, Reduce};
use crate::ops::{self, IntoOperand};
use crate::{Array, Dtype, Error, Result};

/// Index argument of [`take`]: a Rust integer or an index array (Python: `int | array`).
pub trait IntoTakeIndices {
    fn into_take_indices(self) -> TakeIndices;
}

/// What [`take`] picks with: a Rust integer (checked against the axis before MLX sees it) or
/// an index array (clamped; see [`ops::bounds`](crate::ops::bounds)).
#[derive(Debug, Clone)]
pub enum TakeIndices {
    Int(i32),
    Array(Array),
}

impl IntoTakeIndices for &Array {
    fn into_take_indices(self) -> TakeIndices {
        TakeIndices::Array(self.clone())
    }
}
impl IntoTakeIndices for Array {
    fn into_take_indices(self) -> TakeIndices {
        TakeIndices::Array(self)
    }
}
impl IntoTakeIndices for i32 {
    fn into_take_indices(self) -> TakeIndices {
        TakeIndices::Int(self)
    }
}

impl TakeIndices {
    fn into_array(self) -> Array {
        match self {
            TakeIndices::Int(i) => Array::from_scalar(i),
            TakeIndices::Array(a) => a,
        }
    }
}

fn raw_take(a: &Array, indices: &Array, axis: Option<i32>) -> Result<Array> {
    match axis {
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

/// The length of the axis `take` picks along (the flattened length for `None`); `None`
/// where MLX rejects the axis.
fn take_extent(a: &Array, axis: Option<i32>) -> Option<i64> {
    match axis {
        None => i64::try_from(a.size()).ok(),
        Some(axis) => normalize_axis(axis, a.ndim()).map(|ax| i64::from(a.shape()[ax])),
    }
}

/// Elements at `indices` along `axis`; `None` indexes the flattened array
/// (Python: `mx.take(a, indices, axis=None)`).
///
/// A Rust integer outside `-n..n` is an `Err`; an index array's entries clamp (negatives
/// count from the end, then an index past either end picks that end; see the
/// [`ops::bounds`](crate::ops::bounds)).
///
/// ```
/// use mlx_rs::{ops, Array};
/// let a = Array::from_slice(&[10i32, 11, 12], &[3])?;
/// let i = Array::from_slice(&[-1i32, 1, 7, -9], &[4])?;
/// assert_eq!(ops::take(&a, &i, 0)?.to_vec::<i32>()?, [12, 11, 12, 10]);
/// assert!(ops::take(&a, 3, 0).is_err());
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn take(
    a: &Array,
    indices: impl IntoTakeIndices,
    axis: impl Into<Option<i32>>,
) -> Result<Array> {
    let axis = axis.into();
    let Some(len) = take_extent(a, axis) else {
        return raw_take(a, &indices.into_take_indices().into_array(), axis);
    };
    match indices.into_take_indices() {
        TakeIndices::Int(i) => {
            if !(-len..len).contains(&i64::from(i)) {
                return Err(Error::invalid(format!(
                    "[take] index {i} is out of bounds for an axis of length {len}"
                )));
            }
            raw_take(a, &Array::from_scalar(i), axis)
        }
        TakeIndices::Array(idx) if len > 0 && idx.dtype().is_integer() => {
            raw_take(a, &Extent::element(len).clamp(&idx, true)?, axis)
        }
        TakeIndices::Array(idx) => raw_take(a, &idx, axis),
    }
}

/// [`take`] without the bounds guard: MLX's op as it is.
///
/// # Safety
/// Every entry of an index array must lie in `-n..n` for the axis length `n`; MLX reads
/// outside the array otherwise.
pub unsafe fn take_unchecked(
    a: &Array,
    indices: impl IntoTakeIndices,
    axis: impl Into<Option<i32>>,
) -> Result<Array> {
    raw_take(a, &indices.into_take_indices().into_array(), axis.into())
}

fn raw_take_along_axis(a: &Array, indices: &Array, axis: Option<i32>) -> Result<Array> {
    let (a, axis) = match axis {
        Some(axis) => (a.clone(), axis),
        None => (a.reshape(&[-1])?, 0),
    };
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_take_along_axis(res, a.as_raw(), indices.as_raw(), axis, s)
    })
}

/// Picks along `axis` with indices broadcast against `a`; `None` uses the flattened array
/// (Python: `mx.take_along_axis(a, indices, axis=None)`). Index entries clamp as in
/// [`take`]; picking from an empty axis is an `Err`.
pub fn take_along_axis(a: &Array, indices: &Array, axis: impl Into<Option<i32>>) -> Result<Array> {
    let axis = axis.into();
    let Some(len) = take_extent(a, axis) else {
        return raw_take_along_axis(a, indices, axis);
    };
    if !indices.dtype().is_integer() {
        return raw_take_along_axis(a, indices, axis);
    }
    if len == 0 {
        // MLX builds this op and then reads from the empty axis.
        let out = raw_take_along_axis(a, indices, axis)?;
        if out.size() > 0 {
            return Err(Error::invalid(
                "[take_along_axis] cannot take from an empty axis",
            ));
        }
        return Ok(out);
    }
    let indices = Extent::element(len).clamp(indices, true)?;
    raw_take_along_axis(a, &indices, axis)
}

/// [`take_along_axis`] without the bounds guard.
///
/// # Safety
/// As for [`take_unchecked`].
pub unsafe fn take_along_axis_unchecked(
    a: &Array,
    indices: &Array,
    axis: impl Into<Option<i32>>,
) -> Result<Array> {
    raw_take_along_axis(a, indices, axis.into())
}

fn raw_scatter_axis(
    a: &Array,
    indices: &Array,
    values: &Array,
    axis: i32,
    reduce: Reduce,
) -> Result<Array> {
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        match reduce {
            Reduce::Add => sys::mlx_scatter_add_axis(
                res,
                a.as_raw(),
                indices.as_raw(),
                values.as_raw(),
                axis,
                s,
            ),
            _ => {
                sys::mlx_put_along_axis(res, a.as_raw(), indices.as_raw(), values.as_raw(), axis, s)
            }
        }
    })
}

/// `a` with one more slice of `size` zeros at the end of `axis`: where dropped writes go.
fn pad_axis(a: &Array, axis: usize, size: i32) -> Result<Array> {
    let mut shape = a.shape().to_vec();
    shape[axis] = size;
    ops::concatenate(&[a.clone(), ops::zeros(&shape, a.dtype())?], axis as i32)
}

/// `padded` without what [`pad_axis`] added: the first `shape` elements of every axis.
fn unpad(padded: &Array, shape: &[i32]) -> Result<Array> {
    slice_strided(padded, &vec![0; shape.len()], shape, None)
}

/// Element-wise scatter along `axis` with out-of-range entries dropped.
fn scatter_axis(
    a: &Array,
    indices: &Array,
    values: &Array,
    axis: i32,
    reduce: Reduce,
) -> Result<Array> {
    let checkable = indices.dtype().is_integer() && indices.ndim() == a.ndim() && a.size() > 0;
    let Some(ax) = normalize_axis(axis, a.ndim()).filter(|_| checkable) else {
        return raw_scatter_axis(a, indices, values, axis, reduce);
    };
    let extent = Extent::element(i64::from(a.shape()[ax]));
    let valid = extent.contains(indices)?;
    if let Some(identity) = identity(reduce, a.dtype())? {
        let values = where_(&valid, &values.astype(a.dtype())?, &identity)?;
        return raw_scatter_axis(a, &extent.clamp(indices, true)?, &values, axis, reduce);
    }
    let out = raw_scatter_axis(
        &pad_axis(a, ax, 1)?,
        &extent.valid_or_pad(indices, &valid)?,
        values,
        axis,
        reduce,
    )?;
    unpad(&out, a.shape())
}

/// Writes `values` at `indices` along `axis`; `None` uses the flattened array and restores
/// the shape (Python: `mx.put_along_axis(a, indices, values, axis=None)`). Entries whose
/// index is out of range write nothing (see [`ops::bounds`](crate::ops::bounds)).
///
/// ```
/// use mlx_rs::{ops, Array};
/// let a = Array::from_slice(&[0i32, 0, 0], &[3])?;
/// let i = Array::from_slice(&[-1i32, 5], &[2])?;
/// let v = Array::from_slice(&[7i32, 9], &[2])?;
/// assert_eq!(ops::put_along_axis(&a, &i, &v, 0)?.to_vec::<i32>()?, [0, 0, 7]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
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
    scatter_axis(a, indices, &values, axis, Reduce::Set)
}

/// [`put_along_axis`] without the bounds guard.
///
/// # Safety
/// As for [`take_unchecked`]: MLX writes outside the array otherwise.
pub unsafe fn put_along_axis_unchecked<'v>(
    a: &Array,
    indices: &Array,
    values: impl IntoOperand<'v>,
    axis: impl Into<Option<i32>>,
) -> Result<Array> {
    let values = operand_array(values, Some(a.dtype()));
    let Some(axis) = axis.into() else {
        // SAFETY: the caller's promise covers the flattened array.
        let flat = unsafe { put_along_axis_unchecked(&a.reshape(&[-1])?, indices, &values, 0)? };
        return flat.reshape(a.shape());
    };
    raw_scatter_axis(a, indices, &values, axis, Reduce::Set)
}

/// Adds `values` at `indices` along `axis`, accumulating duplicates (C++ `scatter_add_axis`;
/// Python reaches it through `a.at[...]`). Out-of-range entries add nothing.
pub fn scatter_add_axis<'v>(
    a: &Array,
    indices: &Array,
    values: impl IntoOperand<'v>,
    axis: i32,
) -> Result<Array> {
    let values = operand_array(values, Some(a.dtype()));
    scatter_axis(a, indices, &values, axis, Reduce::Add)
}

/// [`scatter_add_axis`] without the bounds guard.
///
/// # Safety
/// As for [`put_along_axis_unchecked`].
pub unsafe fn scatter_add_axis_unchecked<'v>(
    a: &Array,
    indices: &Array,
    values: impl IntoOperand<'v>,
    axis: i32,
) -> Result<Array> {
    let values = operand_array(values, Some(a.dtype()));
    raw_scatter_axis(a, indices, &values, axis, Reduce::Add)
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

fn raw_gather(a: &Array, indices: &[&Array], axes: &[i32], slice_sizes: &[i32]) -> Result<Array> {
    if let ([single], [axis]) = (indices, axes) {
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
    let v = VectorArray::from_arrays(indices.iter().copied());
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

/// The extent of each indexed axis (its length, and the size of the slice at each index),
/// where the op is one MLX accepts: integer index arrays, one per axis, axes in range, and
/// slices that fit. `None` leaves the call to MLX, which reports what is wrong.
fn indexed_extents(
    a: &Array,
    indices: &[&Array],
    axes: &[i32],
    slice_size: impl Fn(usize) -> Option<i32>,
) -> Option<Vec<(usize, Extent)>> {
    if indices.len() != axes.len() || indices.iter().any(|i| !i.dtype().is_integer()) {
        return None;
    }
    axes.iter()
        .map(|&axis| {
            let ax = usize::try_from(axis).ok().filter(|&ax| ax < a.ndim())?;
            let len = a.shape()[ax];
            let size = slice_size(ax).filter(|&k| (0..=len).contains(&k))?;
            Some((
                ax,
                Extent {
                    len: len.into(),
                    size: size.into(),
                },
            ))
        })
        .collect()
}

/// Gathers slices of `slice_sizes` starting at the positions the `indices` arrays (one per
/// entry of `axes`, broadcast together) give (C++ `gather`; the op Python indexing uses).
/// Starts clamp so each slice lies inside `a` (negatives count from the end; see the
/// [`ops::bounds`](crate::ops::bounds)).
pub fn gather<'a>(
    a: &Array,
    indices: impl IntoIterator<Item = &'a Array>,
    axes: &[i32],
    slice_sizes: &[i32],
) -> Result<Array> {
    let indices: Vec<&Array> = indices.into_iter().collect();
    let extents = (a.size() > 0 && slice_sizes.len() == a.ndim())
        .then(|| indexed_extents(a, &indices, axes, |ax| Some(slice_sizes[ax])))
        .flatten();
    let Some(extents) = extents else {
        return raw_gather(a, &indices, axes, slice_sizes);
    };
    let clamped = indices
        .iter()
        .zip(&extents)
        .map(|(idx, (_, extent))| extent.clamp(idx, true))
        .collect::<Result<Vec<_>>>()?;
    raw_gather(a, &clamped.iter().collect::<Vec<_>>(), axes, slice_sizes)
}

/// [`gather`] without the bounds guard.
///
/// # Safety
/// Every start, counted from the end where negative, must leave its slice inside `a`; MLX
/// reads outside the array otherwise.
pub unsafe fn gather_unchecked<'a>(
    a: &Array,
    indices: impl IntoIterator<Item = &'a Array>,
    axes: &[i32],
    slice_sizes: &[i32],
) -> Result<Array> {
    let indices: Vec<&Array> = indices.into_iter().collect();
    raw_gather(a, &indices, axes, slice_sizes)
}

fn raw_scatter(
    a: &Array,
    indices: &[&Array],
    updates: &Array,
    axes: &[i32],
    reduce: Reduce,
) -> Result<Array> {
    // MLX 0.32.2 rejects boolean indices with `throw("...")`, a bare C string rather than a
    // `std::exception`; mlx-c catches only the latter, so the throw would abort the process.
    if indices.iter().any(|i| i.dtype() == Dtype::Bool) {
        return Err(Error::invalid("[scatter] Boolean indices not supported."));
    }
    macro_rules! call {
        ($multi:path, $single:path) => {{
            if let ([single], [axis]) = (indices, axes) {
                // SAFETY: valid handles; plain values.
                Array::try_from_stream_op(|res, s| unsafe {
                    $single(res, a.as_raw(), single.as_raw(), updates.as_raw(), *axis, s)
                })
            } else {
                let v = VectorArray::from_arrays(indices.iter().copied());
                // SAFETY: valid handles; `axes` outlives the call.
                Array::try_from_stream_op(|res, s| unsafe {
                    $multi(
                        res,
                        a.as_raw(),
                        v.0,
                        updates.as_raw(),
                        axes.as_ptr(),
                        axes.len(),
                        s,
                    )
                })
            }
        }};
    }
    let out = match reduce {
        Reduce::Set => call!(sys::mlx_scatter, sys::mlx_scatter_single),
        Reduce::Add => call!(sys::mlx_scatter_add, sys::mlx_scatter_add_single),
        Reduce::Prod => call!(sys::mlx_scatter_prod, sys::mlx_scatter_prod_single),
        Reduce::Max => call!(sys::mlx_scatter_max, sys::mlx_scatter_max_single),
        Reduce::Min => call!(sys::mlx_scatter_min, sys::mlx_scatter_min_single),
    }?;
    // MLX's CPU kernel divides by the updates' extents when it starts, so updates with a 0
    // extent (nothing to write) stop the process with SIGFPE when evaluated. The op was
    // built for its argument checks; with nothing to write, `a` is the result.
    if updates.size() == 0 {
        return Ok(a.clone());
    }
    Ok(out)
}

/// A scatter whose out-of-range updates are dropped: a reducing scatter replaces them by
/// an update that changes nothing; a set (or a complex scatter) sends them to a pad slice.
fn checked_scatter(
    a: &Array,
    indices: &[&Array],
    updates: &Array,
    axes: &[i32],
    reduce: Reduce,
) -> Result<Array> {
    // `updates` is `broadcast(indices).shape + [a slice per axis of a]`.
    let index_ndim = updates.ndim().checked_sub(a.ndim());
    let extents = index_ndim
        .filter(|_| !indices.is_empty())
        .and_then(|k| indexed_extents(a, indices, axes, |ax| updates.shape().get(k + ax).copied()));
    let (Some(index_ndim), Some(extents)) = (index_ndim, extents) else {
        return raw_scatter(a, indices, updates, axes, reduce);
    };
    let mut valid = extents[0].1.contains(indices[0])?;
    for (idx, (_, extent)) in indices.iter().zip(&extents).skip(1) {
        valid = ops::logical_and(&valid, &extent.contains(idx)?)?;
    }
    if valid.ndim() != index_ndim {
        return raw_scatter(a, indices, updates, axes, reduce);
    }
    let clamped = |skip_first: bool| -> Result<Vec<Array>> {
        let mut out = Vec::with_capacity(indices.len());
        for (i, (idx, (_, extent))) in indices.iter().zip(&extents).enumerate() {
            out.push(if i == 0 && skip_first {
                extent.valid_or_pad(idx, &valid)?
            } else {
                extent.clamp(idx, true)?
            });
        }
        Ok(out)
    };
    if let Some(identity) = identity(reduce, a.dtype())? {
        let mut mask_shape = valid.shape().to_vec();
        mask_shape.resize(index_ndim + a.ndim(), 1);
        let updates = where_(
            &valid.reshape(&mask_shape)?,
            &updates.astype(a.dtype())?,
            &identity,
        )?;
        let idx = clamped(false)?;
        return raw_scatter(a, &idx.iter().collect::<Vec<_>>(), &updates, axes, reduce);
    }
    let (ax, extent) = extents[0];
    let size = i32::try_from(extent.size).expect("a slice size is an i32");
    if size == 0 {
        // Nothing is written along this axis: nothing to drop.
        let idx = clamped(false)?;
        return raw_scatter(a, &idx.iter().collect::<Vec<_>>(), updates, axes, reduce);
    }
    let idx = clamped(true)?;
    let out = raw_scatter(
        &pad_axis(a, ax, size)?,
        &idx.iter().collect::<Vec<_>>(),
        updates,
        axes,
        reduce,
    )?;
    unpad(&out, a.shape())
}

/// `fn name(a, indices, updates, axes)` and `fn name_unchecked(..)` for the scatter family.
macro_rules! scatter_ops {
    ($($(#[$doc:meta])* $name:ident, $unchecked:ident => $reduce:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// Updates whose index is out of range (after counting negatives from the end) are
        /// dropped; see [`ops::bounds`](crate::ops::bounds).
        pub fn $name<'a>(
            a: &Array,
            indices: impl IntoIterator<Item = &'a Array>,
            updates: &Array,
            axes: &[i32],
        ) -> Result<Array> {
            let indices: Vec<&Array> = indices.into_iter().collect();
            checked_scatter(a, &indices, updates, axes, Reduce::$reduce)
        }

        #[doc = concat!("[`", stringify!($name), "`] without the bounds guard.")]
        ///
        /// # Safety
        /// Every index, counted from the end where negative, must leave its update inside
        /// `a`; MLX writes outside the array otherwise.
        pub unsafe fn $unchecked<'a>(
            a: &Array,
            indices: impl IntoIterator<Item = &'a Array>,
            updates: &Array,
            axes: &[i32],
        ) -> Result<Array> {
            let indices: Vec<&Array> = indices.into_iter().collect();
            raw_scatter(a, &indices, updates, axes, Reduce::$reduce)
        }
    )*};
}

scatter_ops! {
    /// Writes `updates` at the positions the `indices` arrays give along `axes` (C++
    /// `scatter`; Python's `a[idx] = v`). `updates` has shape
    /// `broadcast(indices).shape + [slice sizes per axis of a]`.
    scatter, scatter_unchecked => Set;
    /// Like [`scatter`], adding into `a` and accumulating duplicates (Python `a.at[idx].add(v)`).
    scatter_add, scatter_add_unchecked => Add;
    /// Like [`scatter`], keeping the maximum (Python `a.at[idx].maximum(v)`).
    scatter_max, scatter_max_unchecked => Max;
    /// Like [`scatter`], keeping the minimum (Python `a.at[idx].minimum(v)`).
    scatter_min, scatter_min_unchecked => Min;
    /// Like [`scatter`], multiplying (Python `a.at[idx].multiply(v)`).
    scatter_prod, scatter_prod_unchecked => Prod;
}

/// The axes of a dynamic slice, counted from the end where negative; `None` where MLX
/// rejects the call (it then reports why).
fn dynamic_slice_axes(a: &Array, start: &Array, axes: &[i32]) -> Option<Vec<usize>> {
    let usable = start.dtype().is_integer() && start.ndim() <= 1 && start.size() == axes.len();
    let axes: Vec<usize> = axes
        .iter()
        .map(|&ax| normalize_axis(ax, a.ndim()))
        .collect::<Option<_>>()?;
    let mut seen = axes.clone();
    seen.sort_unstable();
    seen.dedup();
    (usable && seen.len() == axes.len()).then_some(axes)
}

fn raw_slice(a: &Array, start_indices: &Array, axes: &[i32], slice_size: &[i32]) -> Result<Array> {
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

/// A slice of `slice_size` starting at the positions in the array `start_indices` along
/// `axes` (Python: `mx.slice(a, start_indices, axes, slice_size)`; the start may be computed).
/// Each start clamps into `0..=n - k` so the slice lies inside `a` (see the
/// [`ops::bounds`](crate::ops::bounds)); a negative slice size is an `Err`.
pub fn slice(a: &Array, start_indices: &Array, axes: &[i32], slice_size: &[i32]) -> Result<Array> {
    if let Some(k) = slice_size.iter().find(|&&k| k < 0) {
        return Err(Error::invalid(format!(
            "[slice] slice sizes must not be negative, got {k} in {slice_size:?}"
        )));
    }
    let fits =
        slice_size.len() == a.ndim() && slice_size.iter().zip(a.shape()).all(|(k, n)| k <= n);
    let Some(ax) = dynamic_slice_axes(a, start_indices, axes).filter(|_| fits) else {
        return raw_slice(a, start_indices, axes, slice_size);
    };
    let lens: Vec<i64> = ax.iter().map(|&d| i64::from(a.shape()[d])).collect();
    let his: Vec<i64> = ax
        .iter()
        .zip(&lens)
        .map(|(&d, n)| n - i64::from(slice_size[d]))
        .collect();
    raw_slice(
        a,
        &clamp_starts(start_indices, &his, &lens)?,
        axes,
        slice_size,
    )
}

/// [`slice()`] without the bounds guard.
///
/// # Safety
/// Every start must lie in `0..=n - k`; MLX reads outside the array otherwise.
pub unsafe fn slice_unchecked(
    a: &Array,
    start_indices: &Array,
    axes: &[i32],
    slice_size: &[i32],
) -> Result<Array> {
    raw_slice(a, start_indices, axes, slice_size)
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

fn raw_slice_update(
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

/// `a` with `update` written at the positions in `start_indices` along `axes`
/// (Python: `mx.slice_update(a, update, start_indices, axes)`). Each start clamps so the
/// update lies inside `a` (see [`ops::bounds`](crate::ops::bounds)); an `update` with more dimensions
/// than `a` is an `Err`.
pub fn slice_update(
    a: &Array,
    update: &Array,
    start_indices: &Array,
    axes: &[i32],
) -> Result<Array> {
    // MLX computes `a.ndim() - update.ndim()` in unsigned arithmetic and indexes with it.
    if update.ndim() > a.ndim() {
        return Err(Error::invalid(format!(
            "[slice_update] the update has {} dimensions, more than the array's {}",
            update.ndim(),
            a.ndim()
        )));
    }
    let Some(ax) = dynamic_slice_axes(a, start_indices, axes) else {
        return raw_slice_update(a, update, start_indices, axes);
    };
    // The update's extent along each axis, as MLX broadcasts it: missing leading axes are 1
    // where sliced, and no extent exceeds the array's.
    let missing = a.ndim() - update.ndim();
    let lens: Vec<i64> = ax.iter().map(|&d| i64::from(a.shape()[d])).collect();
    let his: Vec<i64> = ax
        .iter()
        .zip(&lens)
        .map(|(&d, &n)| {
            let k = if d < missing {
                1
            } else {
                i64::from(update.shape()[d - missing]).min(n)
            };
            n - k
        })
        .collect();
    raw_slice_update(a, update, &clamp_starts(start_indices, &his, &lens)?, axes)
}

/// [`slice_update`] without the bounds guard.
///
/// # Safety
/// Every start must leave the update inside `a`; MLX writes outside the array otherwise.
pub unsafe fn slice_update_unchecked(
    a: &Array,
    update: &Array,
    start_indices: &Array,
    axes: &[i32],
) -> Result<Array> {
    raw_slice_update(a, update, start_indices, axes)
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
