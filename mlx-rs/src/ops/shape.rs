//! Shape manipulation: reshape, transpose, squeeze, concatenate, split, pad, tile, ...

use mlx_sys as sys;

use crate::handles::c_string;
use crate::handles::VectorArray;
use crate::ops::args::operand_array;
use crate::ops::{array_methods, unary_ops, Axes, AxesArg, IntoOperand};
use crate::stream::{vector_op, vector_view_op};
use crate::{Array, Dtype, Error, Result};

/// Checks a target shape before MLX sees it: no negative dimension (but one `-1` to infer,
/// where `infer`), and an element count and byte size that fit an `i64`. MLX accepts
/// `[-2, -2]` and sizes whose product wraps (`[65536; 4]` of an empty array has size 0), and
/// the arrays they make read and write outside their buffers.
pub(crate) fn check_shape(shape: &[i32], dtype: Dtype, infer: bool, op: &str) -> Result<()> {
    let inferred = shape.iter().filter(|&&d| d == -1).count();
    if shape.iter().any(|&d| d < -1) || inferred > usize::from(infer) {
        return Err(Error::invalid(format!(
            "[{op}] dimensions must be non-negative{}, got {shape:?}",
            if infer { " (one may be -1)" } else { "" }
        )));
    }
    let elements = shape
        .iter()
        .filter(|&&d| d >= 0)
        .try_fold(1i64, |n, &d| n.checked_mul(i64::from(d)));
    if elements
        .and_then(|n| n.checked_mul(dtype.size() as i64))
        .is_none()
    {
        return Err(Error::invalid(format!(
            "[{op}] {shape:?} has more elements than an array can hold"
        )));
    }
    Ok(())
}

/// The same data with a new shape; one dimension may be `-1` (Python: `mx.reshape`).
pub fn reshape(a: &Array, shape: &[i32]) -> Result<Array> {
    check_shape(shape, a.dtype(), true, "reshape")?;
    // SAFETY: valid handle; `shape` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_reshape(res, a.as_raw(), shape.as_ptr(), shape.len(), s)
    })
}

/// Permutes the axes; `None` reverses them (Python: `mx.transpose(a, axes=None)`). `axes`
/// takes what every axes argument takes ([`Axes`]): `[0, 2, 1, 3]`, `&v`, `None`.
///
/// ```
/// use mlx_rs::ops;
/// let a = ops::zeros(&[2, 3, 4], None)?;
/// assert_eq!(a.transpose([0, 2, 1])?.shape(), &[2, 4, 3]);
/// assert_eq!(a.transpose(None)?.shape(), &[4, 3, 2]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn transpose<'x>(a: &Array, axes: impl Into<Axes<'x>>) -> Result<Array> {
    match axes.into().as_slice() {
        None => {
            // SAFETY: valid handle; mlx-c writes a new array into res.
            Array::try_from_stream_op(|res, s| unsafe { sys::mlx_transpose(res, a.as_raw(), s) })
        }
        // SAFETY: valid handle; `axes` outlives the call.
        Some(axes) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_transpose_axes(res, a.as_raw(), axes.as_ptr(), axes.len(), s)
        }),
    }
}

/// Python's `mx.permute_dims`, an alias of [`transpose`].
pub fn permute_dims<'x>(a: &Array, axes: impl Into<Axes<'x>>) -> Result<Array> {
    transpose(a, axes)
}

/// `fn name(a, axis=None)` over mlx-c's trio `f(res, a, s)` (every axis),
/// `f_axis(res, a, axis, s)` and `f_axes(res, a, axes, n, s)`.
macro_rules! axes_ops {
    ($($(#[$doc:meta])* $name:ident => $all:path, $axis:path, $axes:path;)*) => {$(
        $(#[$doc])*
        pub fn $name<'x>(a: &Array, axis: impl Into<Axes<'x>>) -> Result<Array> {
            match axis.into().arg() {
                // SAFETY: valid handle.
                AxesArg::All => Array::try_from_stream_op(|res, s| unsafe { $all(res, a.as_raw(), s) }),
                // SAFETY: valid handle; plain values.
                AxesArg::One(ax) => Array::try_from_stream_op(|res, s| unsafe {
                    $axis(res, a.as_raw(), ax, s)
                }),
                // SAFETY: valid handle; `ax` outlives the call.
                AxesArg::Many(ax) => Array::try_from_stream_op(|res, s| unsafe {
                    $axes(res, a.as_raw(), ax.as_ptr(), ax.len(), s)
                }),
            }
        }
    )*};
}

axes_ops! {
    /// Removes size-1 axes: all of them for `None`, else the given ones
    /// (Python: `mx.squeeze(a, axis=None)`).
    squeeze => sys::mlx_squeeze, sys::mlx_squeeze_axis, sys::mlx_squeeze_axes;
    /// Reverses the order of elements along axes; `None` reverses every axis
    /// (Python: `mx.flip(a, axis=None)`).
    flip => sys::mlx_flip, sys::mlx_flip_axis, sys::mlx_flip_axes;
}

/// Inserts size-1 axes at the given positions (Python: `mx.expand_dims(a, axis)`; `axis` is
/// required, so [`Axes::All`] is an error).
pub fn expand_dims<'x>(a: &Array, axis: impl Into<Axes<'x>>) -> Result<Array> {
    match axis.into().arg() {
        AxesArg::All => Err(Error::invalid(
            "[expand_dims] an axis is required (None is not allowed)",
        )),
        // SAFETY: valid handle; plain values.
        AxesArg::One(ax) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_expand_dims(res, a.as_raw(), ax, s)
        }),
        // SAFETY: valid handle; `ax` outlives the call.
        AxesArg::Many(ax) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_expand_dims_axes(res, a.as_raw(), ax.as_ptr(), ax.len(), s)
        }),
    }
}

/// Flattens axes `start_axis..=end_axis` into one; defaults 0 and -1
/// (Python: `mx.flatten(a, start_axis=0, end_axis=-1)`).
pub fn flatten(
    a: &Array,
    start_axis: impl Into<Option<i32>>,
    end_axis: impl Into<Option<i32>>,
) -> Result<Array> {
    let (start, end) = (
        start_axis.into().unwrap_or(0),
        end_axis.into().unwrap_or(-1),
    );
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_flatten(res, a.as_raw(), start, end, s) })
}

/// Splits one axis into `shape` (Python: `mx.unflatten(a, axis, shape)`); one entry may be
/// `-1`, inferred.
pub fn unflatten(a: &Array, axis: i32, shape: &[i32]) -> Result<Array> {
    // MLX multiplies the entries unchecked (so `[-2, -2]` unflattens 4 elements into an
    // array of negative shape) and divides by their product to infer `-1` (SIGFPE when it
    // is 0).
    check_shape(shape, a.dtype(), true, "unflatten")?;
    if shape.contains(&-1) && shape.contains(&0) {
        return Err(Error::invalid(format!(
            "[unflatten] cannot infer the -1 in {shape:?}: another dimension is 0"
        )));
    }
    // SAFETY: valid handle; `shape` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_unflatten(res, a.as_raw(), axis, shape.as_ptr(), shape.len(), s)
    })
}

/// Swaps two axes (Python: `mx.swapaxes(a, axis1, axis2)`).
pub fn swapaxes(a: &Array, axis1: i32, axis2: i32) -> Result<Array> {
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_swapaxes(res, a.as_raw(), axis1, axis2, s)
    })
}

/// Moves one axis to a new position (Python: `mx.moveaxis(a, source, destination)`).
pub fn moveaxis(a: &Array, source: i32, destination: i32) -> Result<Array> {
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_moveaxis(res, a.as_raw(), source, destination, s)
    })
}

/// Broadcasts to `shape` (Python: `mx.broadcast_to(a, shape)`); `a` may be a scalar.
pub fn broadcast_to<'a>(a: impl IntoOperand<'a>, shape: &[i32]) -> Result<Array> {
    let a = operand_array(a, None);
    check_shape(shape, a.dtype(), false, "broadcast_to")?;
    // A view: nothing of the result's size is allocated.
    crate::stream::with_current_raw(|s| {
        // SAFETY: valid handle; `shape` outlives the call.
        Array::try_from_view_op(|res| unsafe {
            sys::mlx_broadcast_to(res, a.as_raw(), shape.as_ptr(), shape.len(), s)
        })
    })?
}

/// Broadcasts arrays against each other (Python: `mx.broadcast_arrays(*arrays)`).
pub fn broadcast_arrays<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Result<Vec<Array>> {
    let v = VectorArray::from_arrays(arrays);
    // SAFETY: valid vector handle; mlx-c writes a new vector into res.
    vector_view_op(|res, s| unsafe { sys::mlx_broadcast_arrays(res, v.0, s) })
}

unary_ops! {
    /// At least one dimension (Python: `mx.atleast_1d`, one array at a time).
    atleast_1d => sys::mlx_atleast_1d;
    /// At least two dimensions (Python: `mx.atleast_2d`, one array at a time).
    atleast_2d => sys::mlx_atleast_2d;
    /// At least three dimensions (Python: `mx.atleast_3d`, one array at a time).
    atleast_3d => sys::mlx_atleast_3d;
}

/// Joins arrays along an axis; `None` flattens them first
/// (Python: `mx.concatenate(arrays, axis=0)`; pass `0` for Python's default).
pub fn concatenate<'a>(
    arrays: impl IntoIterator<Item = &'a Array>,
    axis: impl Into<Option<i32>>,
) -> Result<Array> {
    let v = VectorArray::from_arrays(arrays);
    match axis.into() {
        // SAFETY: valid vector handle; plain values.
        Some(axis) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_concatenate_axis(res, v.0, axis, s)
        }),
        // SAFETY: valid vector handle.
        None => Array::try_from_stream_op(|res, s| unsafe { sys::mlx_concatenate(res, v.0, s) }),
    }
}

/// Python's `mx.concat`, an alias of [`concatenate`].
pub fn concat<'a>(
    arrays: impl IntoIterator<Item = &'a Array>,
    axis: impl Into<Option<i32>>,
) -> Result<Array> {
    concatenate(arrays, axis)
}

/// Stacks arrays along a new axis; defaults to 0 (Python: `mx.stack(arrays, axis=0)`).
pub fn stack<'a>(
    arrays: impl IntoIterator<Item = &'a Array>,
    axis: impl Into<Option<i32>>,
) -> Result<Array> {
    let v = VectorArray::from_arrays(arrays);
    match axis.into() {
        Some(axis) => {
            // SAFETY: valid vector handle; plain values.
            Array::try_from_stream_op(|res, s| unsafe { sys::mlx_stack_axis(res, v.0, axis, s) })
        }
        // SAFETY: valid vector handle.
        None => Array::try_from_stream_op(|res, s| unsafe { sys::mlx_stack(res, v.0, s) }),
    }
}

/// The length of `axis` of `a`, negatives counting from the end; `None` where MLX rejects it.
fn axis_len(a: &Array, axis: i32) -> Option<i32> {
    let ndim = i64::try_from(a.ndim()).ok()?;
    let ax = if axis < 0 {
        i64::from(axis) + ndim
    } else {
        i64::from(axis)
    };
    usize::try_from(ax)
        .ok()
        .and_then(|ax| a.shape().get(ax).copied())
}

/// Splits into arrays along `axis`; default 0 (Python: `mx.unstack(x, axis=0)`).
pub fn unstack(a: &Array, axis: impl Into<Option<i32>>) -> Result<Vec<Array>> {
    let axis = axis.into();
    if let Some(len) = axis_len(a, axis.unwrap_or(0)) {
        crate::memory::check_array_count(len as u64, "unstack")?;
    }
    match axis {
        Some(axis) => {
            // SAFETY: valid handle; plain values.
            vector_op(|res, s| unsafe { sys::mlx_unstack_axis(res, a.as_raw(), axis, s) })
        }
        // SAFETY: valid handle.
        None => vector_op(|res, s| unsafe { sys::mlx_unstack(res, a.as_raw(), s) }),
    }
}

/// Python's `indices_or_sections` of [`split`]: a number of equal parts, or split points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndicesOrSections {
    /// Split into this many equal parts.
    Sections(i32),
    /// Split before each of these indices.
    Indices(Vec<i32>),
}

impl From<i32> for IndicesOrSections {
    fn from(n: i32) -> Self {
        IndicesOrSections::Sections(n)
    }
}
impl From<&[i32]> for IndicesOrSections {
    fn from(v: &[i32]) -> Self {
        IndicesOrSections::Indices(v.to_vec())
    }
}
impl<const N: usize> From<[i32; N]> for IndicesOrSections {
    fn from(v: [i32; N]) -> Self {
        IndicesOrSections::Indices(v.to_vec())
    }
}
impl<const N: usize> From<&[i32; N]> for IndicesOrSections {
    fn from(v: &[i32; N]) -> Self {
        IndicesOrSections::Indices(v.to_vec())
    }
}
impl From<Vec<i32>> for IndicesOrSections {
    fn from(v: Vec<i32>) -> Self {
        IndicesOrSections::Indices(v)
    }
}

/// How many sections an empty axis may be split into: each is an array of its own, and
/// nothing bounds the count otherwise (a non-empty axis bounds it by its length).
const MAX_EMPTY_SECTIONS: i32 = 1 << 16;

/// Splits along `axis` (default 0) into equal sections or at indices
/// (Python: `mx.split(a, indices_or_sections, axis=0)`).
///
/// The result must fit the machine's memory (about 1 KiB per part besides the data), and an
/// empty axis splits into at most 65,536 (empty) sections: `split(x, 926_168_376)` of an empty
/// `x` would otherwise build that many arrays, for minutes, until memory runs out.
pub fn split(
    a: &Array,
    indices_or_sections: impl Into<IndicesOrSections>,
    axis: impl Into<Option<i32>>,
) -> Result<Vec<Array>> {
    let axis = axis.into().unwrap_or(0);
    match indices_or_sections.into() {
        IndicesOrSections::Sections(n) => {
            if n > 0 {
                if axis_len(a, axis) == Some(0) && n > MAX_EMPTY_SECTIONS {
                    return Err(Error::invalid(format!(
                        "[split] an empty axis splits into at most {MAX_EMPTY_SECTIONS} \
                         sections, got {n}"
                    )));
                }
                crate::memory::check_array_count(n as u64, "split")?;
            }
            // SAFETY: valid handle; plain values.
            vector_op(|res, s| unsafe { sys::mlx_split(res, a.as_raw(), n, axis, s) })
        }
        IndicesOrSections::Indices(idx) => {
            crate::memory::check_array_count(idx.len() as u64 + 1, "split")?;
            // SAFETY: valid handle; `idx` outlives the call.
            vector_op(|res, s| unsafe {
                sys::mlx_split_sections(res, a.as_raw(), idx.as_ptr(), idx.len(), axis, s)
            })
        }
    }
}

/// Repeats the whole array `reps` times per axis (Python: `mx.tile(a, reps)`).
pub fn tile(a: &Array, reps: &[i32]) -> Result<Array> {
    // MLX would report this from an internal broadcast, which names the wrong op.
    if let Some(r) = reps.iter().find(|&&r| r < 0) {
        return Err(Error::invalid(format!(
            "[tile] repetitions must be non-negative, got {r} in {reps:?}"
        )));
    }
    // SAFETY: valid handle; `reps` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_tile(res, a.as_raw(), reps.as_ptr(), reps.len(), s)
    })
}

/// Repeats each element `repeats` times along `axis`; `None` flattens first
/// (Python: `mx.repeat(array, repeats, axis=None)`).
pub fn repeat(array: &Array, repeats: i32, axis: impl Into<Option<i32>>) -> Result<Array> {
    match axis.into() {
        // SAFETY: valid handle; plain values.
        Some(axis) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_repeat_axis(res, array.as_raw(), repeats, axis, s)
        }),
        // SAFETY: valid handle; plain values.
        None => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_repeat(res, array.as_raw(), repeats, s)
        }),
    }
}

/// How [`pad`] fills the new elements (Python's `mode` strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PadMode {
    /// `"constant"`: the `constant_values` value.
    #[default]
    Constant,
    /// `"edge"`: repeats the edge value.
    Edge,
    /// `"reflect"`: mirrors without repeating the edge.
    Reflect,
    /// `"symmetric"`: mirrors, repeating the edge.
    Symmetric,
}

impl PadMode {
    /// The string Python and mlx-c use.
    pub fn as_str(self) -> &'static str {
        match self {
            PadMode::Constant => "constant",
            PadMode::Edge => "edge",
            PadMode::Reflect => "reflect",
            PadMode::Symmetric => "symmetric",
        }
    }
}

/// Python's `pad_width`: one width for every side of every axis, one `(before, after)` pair for
/// every axis, or one pair per axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PadWidth {
    /// `int`: the same width before and after every axis.
    All(i32),
    /// `(before, after)` for every axis.
    Pair(i32, i32),
    /// One `(before, after)` per axis.
    PerAxis(Vec<(i32, i32)>),
}

impl From<i32> for PadWidth {
    fn from(w: i32) -> Self {
        PadWidth::All(w)
    }
}
impl From<(i32, i32)> for PadWidth {
    fn from((lo, hi): (i32, i32)) -> Self {
        PadWidth::Pair(lo, hi)
    }
}
impl From<&[(i32, i32)]> for PadWidth {
    fn from(v: &[(i32, i32)]) -> Self {
        PadWidth::PerAxis(v.to_vec())
    }
}
impl<const N: usize> From<[(i32, i32); N]> for PadWidth {
    fn from(v: [(i32, i32); N]) -> Self {
        PadWidth::PerAxis(v.to_vec())
    }
}
impl From<Vec<(i32, i32)>> for PadWidth {
    fn from(v: Vec<(i32, i32)>) -> Self {
        PadWidth::PerAxis(v)
    }
}

/// Pads every axis (Python: `mx.pad(a, pad_width, mode="constant", constant_values=0)`).
/// `mode` `None` is `"constant"`; `constant_values` may be a scalar or an array.
pub fn pad<'a>(
    a: &Array,
    pad_width: impl Into<PadWidth>,
    mode: impl Into<Option<PadMode>>,
    constant_values: impl IntoOperand<'a>,
) -> Result<Array> {
    let mode = c_string(mode.into().unwrap_or_default().as_str(), "[pad]")?;
    let value = operand_array(constant_values, Some(a.dtype()));
    let ndim = a.ndim();
    let pairs: Vec<(i32, i32)> = match pad_width.into() {
        PadWidth::All(w) => {
            // SAFETY: valid handles; `mode` outlives the call.
            return Array::try_from_stream_op(|res, s| unsafe {
                sys::mlx_pad_symmetric(res, a.as_raw(), w, value.as_raw(), mode.as_ptr(), s)
            });
        }
        PadWidth::Pair(lo, hi) => vec![(lo, hi); ndim],
        PadWidth::PerAxis(v) if v.len() == 1 => vec![v[0]; ndim],
        PadWidth::PerAxis(v) if v.len() == ndim => v,
        PadWidth::PerAxis(v) => {
            return Err(Error::invalid(format!(
                "[pad] pad_width has {} (before, after) pairs but the array has {ndim} dimensions",
                v.len()
            )))
        }
    };
    let axes: Vec<i32> = (0..pairs.len() as i32).collect();
    let lo: Vec<i32> = pairs.iter().map(|p| p.0).collect();
    let hi: Vec<i32> = pairs.iter().map(|p| p.1).collect();
    // SAFETY: valid handles; the vectors and `mode` outlive the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_pad(
            res,
            a.as_raw(),
            axes.as_ptr(),
            axes.len(),
            lo.as_ptr(),
            lo.len(),
            hi.as_ptr(),
            hi.len(),
            value.as_raw(),
            mode.as_ptr(),
            s,
        )
    })
}

/// Rolls elements along axes; `None` rolls the flattened array
/// (Python: `mx.roll(a, shift, axis=None)`). `shift` is one value or one per axis.
pub fn roll<'x, 'y>(
    a: &Array,
    shift: impl Into<Axes<'y>>,
    axis: impl Into<Axes<'x>>,
) -> Result<Array> {
    let shift = shift.into();
    let Some(shift) = shift.as_slice() else {
        return Err(Error::invalid("[roll] shift is required"));
    };
    match axis.into().arg() {
        // SAFETY: valid handle; `shift` outlives the call.
        AxesArg::All => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_roll(res, a.as_raw(), shift.as_ptr(), shift.len(), s)
        }),
        // SAFETY: valid handle; `shift` outlives the call.
        AxesArg::One(ax) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_roll_axis(res, a.as_raw(), shift.as_ptr(), shift.len(), ax, s)
        }),
        // SAFETY: valid handle; `shift` and `ax` outlive the call.
        AxesArg::Many(ax) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_roll_axes(
                res,
                a.as_raw(),
                shift.as_ptr(),
                shift.len(),
                ax.as_ptr(),
                ax.len(),
                s,
            )
        }),
    }
}

crate::options! {
    /// The keyword arguments of [`as_strided`], with Python's defaults (`shape=None`,
    /// `strides=None`, `offset=0`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct AsStridedOptions<'a> {
        /// The view's shape; `None` keeps `a`'s shape.
        shape: opt &'a [i32] = ::core::default::Default::default(),
        /// Element strides; `None` means row-contiguous strides for the shape.
        strides: opt &'a [i64] = ::core::default::Default::default(),
        /// The element offset of the first element.
        offset: plain usize = ::core::default::Default::default(),
    }
}

/// A view with explicit shape, element strides and offset
/// (Python: `mx.as_strided(a, shape=None, strides=None, offset=0)`).
///
/// Every element of the view must lie inside `a`'s `a.size()` elements: a view reaching
/// outside is an `Err` here, where Python MLX reads (or crashes on) whatever memory is
/// there.
///
/// ```
/// use mlx_rs::ops::{self, AsStridedOptions};
/// let a = ops::arange_to(6)?;
/// let w = ops::as_strided(&a, AsStridedOptions::default().shape(&[2, 3]).strides(&[1, 1]))?;
/// assert_eq!(w.to_vec::<i32>()?, vec![0, 1, 2, 1, 2, 3]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn as_strided(a: &Array, options: AsStridedOptions<'_>) -> Result<Array> {
    let AsStridedOptions {
        shape,
        strides,
        offset,
    } = options;
    let shape: Vec<i32> = shape.map_or_else(|| a.shape().to_vec(), <[i32]>::to_vec);
    check_shape(&shape, a.dtype(), false, "as_strided")?;
    let strides: Vec<i64> = match strides {
        Some(st) => st.to_vec(),
        None => {
            // Checked above to fit an i64 unless a dimension is 0; the view is then empty and
            // its strides matter to nothing, so they may saturate.
            let mut st = vec![1i64; shape.len()];
            for i in (0..shape.len().saturating_sub(1)).rev() {
                st[i] = st[i + 1].saturating_mul(i64::from(shape[i + 1]));
            }
            st
        }
    };
    check_strided_view(&shape, &strides, offset, a.size())?;
    // SAFETY: valid handle; the vectors outlive the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_as_strided(
            res,
            a.as_raw(),
            shape.as_ptr(),
            shape.len(),
            strides.as_ptr(),
            strides.len(),
            offset,
            s,
        )
    })
}

/// Checks that a strided view of a buffer of `len` elements stays inside it: its lowest and
/// highest element offsets, in exact (i128) arithmetic.
fn check_strided_view(shape: &[i32], strides: &[i64], offset: usize, len: usize) -> Result<()> {
    if strides.len() != shape.len() {
        return Err(Error::invalid(format!(
            "[as_strided] {} strides for a shape of {} dimensions",
            strides.len(),
            shape.len()
        )));
    }
    if shape.contains(&0) {
        return Ok(()); // an empty view reads nothing
    }
    let (mut low, mut high) = (offset as i128, offset as i128);
    for (&d, &st) in shape.iter().zip(strides) {
        let reach = i128::from(d - 1) * i128::from(st);
        if reach < 0 {
            low += reach;
        } else {
            high += reach;
        }
    }
    if low < 0 || high >= len as i128 {
        return Err(Error::invalid(format!(
            "[as_strided] shape {shape:?}, strides {strides:?} and offset {offset} reach \
             elements {low}..={high}, outside the array's {len}"
        )));
    }
    Ok(())
}

/// A row-contiguous copy when needed (column-major accepted when `allow_col_major`; `None`
/// is `false`) (Python: `mx.contiguous(a, allow_col_major=False)`).
pub fn contiguous(a: &Array, allow_col_major: impl Into<Option<bool>>) -> Result<Array> {
    let allow_col_major = allow_col_major.into().unwrap_or(false);
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_contiguous(res, a.as_raw(), allow_col_major, s)
    })
}

/// Converts to `dtype` (Python: `mx.astype(a, dtype)`, `a.astype(dtype)`).
pub fn astype(a: &Array, dtype: Dtype) -> Result<Array> {
    // SAFETY: valid handle; mlx-c writes a new array into `res`.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_astype(res, a.as_raw(), dtype.to_raw(), s)
    })
}

/// Reinterprets the bytes as `dtype` (Python: `mx.view(a, dtype)`); `a` may be a scalar.
pub fn view<'a>(a: impl IntoOperand<'a>, dtype: Dtype) -> Result<Array> {
    let a = operand_array(a, None);
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_view(res, a.as_raw(), dtype.to_raw(), s) })
}

array_methods! {
    /// The same data with a new shape (Python: `a.reshape(shape)`).
    fn reshape(shape: &[i32]);
    /// Permuted axes (Python: `a.transpose(axes)`).
    fn transpose(axes: impl Into<Axes<'x>>) <'x>;
    /// Removes size-1 axes (Python: `a.squeeze(axis=None)`).
    fn squeeze(axis: impl Into<Axes<'x>>) <'x>;
    /// Flattens axes `start_axis..=end_axis` (Python: `a.flatten(start_axis=0, end_axis=-1)`).
    fn flatten(start_axis: impl Into<Option<i32>>, end_axis: impl Into<Option<i32>>);
    /// Swaps two axes (Python: `a.swapaxes(axis1, axis2)`).
    fn swapaxes(axis1: i32, axis2: i32);
    /// Moves an axis (Python: `a.moveaxis(source, destination)`).
    fn moveaxis(source: i32, destination: i32);
    /// Splits along an axis (Python: `a.split(indices_or_sections, axis=0)`).
    fn split(indices_or_sections: impl Into<IndicesOrSections>, axis: impl Into<Option<i32>>) -> Result<Vec<Array>>;
    /// Reinterprets the bytes as `dtype` (Python: `a.view(dtype)`).
    fn view(dtype: Dtype);
    /// A copy converted to `dtype` (Python: `a.astype(dtype)`).
    fn astype(dtype: Dtype);
}

impl Array {
    /// The transpose with all axes reversed (Python: `a.T`).
    pub fn t(&self) -> Result<Array> {
        transpose(self, None)
    }
}
