//! Products: `addmm`, `block_masked_mm`, `gather_mm`, `segmented_mm`, `tensordot`, `vecdot`,
//! `einsum`, `hadamard_transform`, plus the diagonal helpers `diag`, `diagonal`, `trace`,
//! `tril`, `triu`.

use mlx_sys as sys;

use crate::handles::VectorArray;
use crate::handles::{c_string, opt_array, opt_float};
use crate::ops::array_methods;
use crate::ops::bounds::{batch_indices, segment_bounds};
use crate::{Array, Dtype, Result};

/// `alpha * (a @ b) + beta * c` (Python: `mx.addmm(c, a, b, alpha=1.0, beta=1.0)`).
pub fn addmm(
    c: &Array,
    a: &Array,
    b: &Array,
    alpha: impl Into<Option<f32>>,
    beta: impl Into<Option<f32>>,
) -> Result<Array> {
    let (alpha, beta) = (alpha.into().unwrap_or(1.0), beta.into().unwrap_or(1.0));
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_addmm(res, c.as_raw(), a.as_raw(), b.as_raw(), alpha, beta, s)
    })
}

crate::options! {
    /// The keyword arguments of [`block_masked_mm`], with Python's defaults (`block_size=64`,
    /// `mask_out=None`, `mask_lhs=None`, `mask_rhs=None`).
    #[derive(Debug, Clone, Copy)]
    pub struct BlockMaskedMmOptions<'a> {
        /// The side of the square blocks the masks address.
        block_size: plain i32 = 64,
        /// Block mask of the output.
        mask_out: array = None,
        /// Block mask of `a`.
        mask_lhs: array = None,
        /// Block mask of `b`.
        mask_rhs: array = None,
    }
}

/// Matmul with block masks on the output and operands (Python: `mx.block_masked_mm(a, b,
/// block_size=64, mask_out=None, mask_lhs=None, mask_rhs=None)`).
pub fn block_masked_mm(a: &Array, b: &Array, options: BlockMaskedMmOptions<'_>) -> Result<Array> {
    let BlockMaskedMmOptions {
        block_size,
        mask_out,
        mask_lhs,
        mask_rhs,
    } = options;
    // SAFETY: valid or null handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_block_masked_mm(
            res,
            a.as_raw(),
            b.as_raw(),
            block_size,
            opt_array(mask_out),
            opt_array(mask_lhs),
            opt_array(mask_rhs),
            s,
        )
    })
}

crate::options! {
    /// The keyword arguments of [`gather_mm`], with Python's defaults (`lhs_indices=None`,
    /// `rhs_indices=None`, `sorted_indices=False`).
    #[derive(Debug, Clone, Copy)]
    pub struct GatherMmOptions<'a> {
        /// The batch of `a` for each output batch; `None` takes every batch in order.
        lhs_indices: array = ::core::default::Default::default(),
        /// The batch of `b` for each output batch; `None` takes every batch in order.
        rhs_indices: array = ::core::default::Default::default(),
        /// Whether the indices are sorted (a faster kernel).
        sorted_indices: plain bool = ::core::default::Default::default(),
    }
}

/// Matmul of batches picked by index arrays (Python: `mx.gather_mm(a, b, lhs_indices=None,
/// rhs_indices=None, *, sorted_indices=False)`). An index past its operand's batch clamps
/// (negatives count from the end), as in [`take`](crate::ops::take).
pub fn gather_mm(a: &Array, b: &Array, options: GatherMmOptions<'_>) -> Result<Array> {
    let GatherMmOptions {
        lhs_indices,
        rhs_indices,
        sorted_indices,
    } = options;
    let lhs_indices = batch_indices(lhs_indices, a, "gather_mm")?;
    let rhs_indices = batch_indices(rhs_indices, b, "gather_mm")?;
    // SAFETY: valid or null handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_gather_mm(
            res,
            a.as_raw(),
            b.as_raw(),
            opt_array(lhs_indices.as_ref()),
            opt_array(rhs_indices.as_ref()),
            sorted_indices,
            s,
        )
    })
}

/// Matmul over segments of the shared axis (Python: `mx.segmented_mm(a, b, segments)`).
/// Segment bounds clamp into `0..=k` for the shared axis of `k`.
pub fn segmented_mm(a: &Array, b: &Array, segments: &Array) -> Result<Array> {
    let segments = match a.shape().last() {
        Some(&k) => segment_bounds(segments, k)?,
        None => segments.clone(),
    };
    // SAFETY: valid handles.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_segmented_mm(res, a.as_raw(), b.as_raw(), segments.as_raw(), s)
    })
}

/// Python's `axes` of [`tensordot`]: a count of trailing/leading axes, or two axis lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TensordotAxes {
    /// Contract the last `n` axes of `a` with the first `n` of `b`.
    Count(i32),
    /// Contract these axes of `a` with these axes of `b`.
    Pairs(Vec<i32>, Vec<i32>),
}

impl From<Option<i32>> for TensordotAxes {
    /// `None` is Python's default, 2.
    fn from(n: Option<i32>) -> Self {
        TensordotAxes::Count(n.unwrap_or(2))
    }
}
impl From<i32> for TensordotAxes {
    fn from(n: i32) -> Self {
        TensordotAxes::Count(n)
    }
}
impl<const N: usize> From<([i32; N], [i32; N])> for TensordotAxes {
    fn from((a, b): ([i32; N], [i32; N])) -> Self {
        TensordotAxes::Pairs(a.to_vec(), b.to_vec())
    }
}
impl From<(&[i32], &[i32])> for TensordotAxes {
    fn from((a, b): (&[i32], &[i32])) -> Self {
        TensordotAxes::Pairs(a.to_vec(), b.to_vec())
    }
}
impl From<(Vec<i32>, Vec<i32>)> for TensordotAxes {
    fn from((a, b): (Vec<i32>, Vec<i32>)) -> Self {
        TensordotAxes::Pairs(a, b)
    }
}

/// Tensor contraction (Python: `mx.tensordot(a, b, axes=2)`; `None` is 2).
pub fn tensordot(a: &Array, b: &Array, axes: impl Into<TensordotAxes>) -> Result<Array> {
    match axes.into() {
        // SAFETY: valid handles; plain values.
        TensordotAxes::Count(n) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_tensordot_axis(res, a.as_raw(), b.as_raw(), n, s)
        }),
        // SAFETY: valid handles; the vectors outlive the call.
        TensordotAxes::Pairs(xa, xb) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_tensordot(
                res,
                a.as_raw(),
                b.as_raw(),
                xa.as_ptr(),
                xa.len(),
                xb.as_ptr(),
                xb.len(),
                s,
            )
        }),
    }
}

/// Dot product along `axis` with conjugation of `a` (Python: `mx.vecdot(a, b, *, axis=-1)`).
pub fn vecdot(a: &Array, b: &Array, axis: impl Into<Option<i32>>) -> Result<Array> {
    let axis = axis.into().unwrap_or(-1);
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_vecdot(res, a.as_raw(), b.as_raw(), axis, s)
    })
}

/// Einstein summation (Python: `mx.einsum(subscripts, *operands)`).
///
/// ```
/// use mlx_rs::{ops, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let tr = ops::einsum("ii->", [&a])?;
/// assert_eq!(tr.item::<f32>()?, 5.0);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn einsum<'a>(
    subscripts: &str,
    operands: impl IntoIterator<Item = &'a Array>,
) -> Result<Array> {
    let subscripts = c_string(subscripts, "[einsum]")?;
    let v = VectorArray::from_arrays(operands);
    // SAFETY: valid vector handle; `subscripts` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_einsum(res, subscripts.as_ptr(), v.0, s) })
}

/// Fast Walsh-Hadamard transform along the last axis; `None` scale is `1/sqrt(n)`
/// (Python: `mx.hadamard_transform(a, scale=None)`).
pub fn hadamard_transform(a: &Array, scale: impl Into<Option<f32>>) -> Result<Array> {
    let scale = opt_float(scale.into());
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_hadamard_transform(res, a.as_raw(), scale, s)
    })
}

/// A diagonal of a 2-D array, or a 2-D array with a 1-D array on the diagonal `k`
/// (Python: `mx.diag(a, k=0)`).
pub fn diag(a: &Array, k: impl Into<Option<i32>>) -> Result<Array> {
    let k = k.into().unwrap_or(0);
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_diag(res, a.as_raw(), k, s) })
}

/// The diagonal at `offset` of the planes `axis1`/`axis2`
/// (Python: `mx.diagonal(a, offset=0, axis1=0, axis2=1)`).
pub fn diagonal(
    a: &Array,
    offset: impl Into<Option<i32>>,
    axis1: impl Into<Option<i32>>,
    axis2: impl Into<Option<i32>>,
) -> Result<Array> {
    let (o, a1, a2) = (
        offset.into().unwrap_or(0),
        axis1.into().unwrap_or(0),
        axis2.into().unwrap_or(1),
    );
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_diagonal(res, a.as_raw(), o, a1, a2, s) })
}

/// Sum of a diagonal (Python: `mx.trace(a, offset=0, axis1=0, axis2=1, dtype=None)`).
pub fn trace(
    a: &Array,
    offset: impl Into<Option<i32>>,
    axis1: impl Into<Option<i32>>,
    axis2: impl Into<Option<i32>>,
    dtype: impl Into<Option<Dtype>>,
) -> Result<Array> {
    let (offset, axis1, axis2, dtype) = (offset.into(), axis1.into(), axis2.into(), dtype.into());
    if offset.is_none() && axis1.is_none() && axis2.is_none() && dtype.is_none() {
        // SAFETY: valid handle.
        return Array::try_from_stream_op(|res, s| unsafe { sys::mlx_trace(res, a.as_raw(), s) });
    }
    // Python's dtype default is the input's dtype.
    let dtype = dtype.unwrap_or_else(|| a.dtype());
    let (o, a1, a2) = (offset.unwrap_or(0), axis1.unwrap_or(0), axis2.unwrap_or(1));
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_trace_axes(res, a.as_raw(), o, a1, a2, dtype.to_raw(), s)
    })
}

/// Zeros above the diagonal `k` (Python: `mx.tril(x, k=0)`).
pub fn tril(x: &Array, k: impl Into<Option<i32>>) -> Result<Array> {
    let k = k.into().unwrap_or(0);
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_tril(res, x.as_raw(), k, s) })
}

/// Zeros below the diagonal `k` (Python: `mx.triu(x, k=0)`).
pub fn triu(x: &Array, k: impl Into<Option<i32>>) -> Result<Array> {
    let k = k.into().unwrap_or(0);
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_triu(res, x.as_raw(), k, s) })
}

array_methods! {
    /// A diagonal or diagonal matrix (Python: `a.diag(k=0)`).
    fn diag(k: impl Into<Option<i32>>);
    /// A diagonal (Python: `a.diagonal(offset=0, axis1=0, axis2=1)`).
    fn diagonal(offset: impl Into<Option<i32>>, axis1: impl Into<Option<i32>>, axis2: impl Into<Option<i32>>);
}
