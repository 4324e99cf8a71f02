//! Index arrays that cannot reach outside an array: reads clamp, writes drop.
//!
//! MLX's gather, scatter and dynamic-slice kernels trust their index arrays: an index past
//! the end reads or writes outside the buffer (Python MLX calls the result unspecified; in
//! practice the process dies, or another array's memory changes). Whether an index array is
//! in range is known only from its data, so the checked ops give every index a defined
//! meaning, on every device, the way JAX does:
//!
//! - **Reads clamp** (JAX `mode="clip"`): in [`take`](crate::ops::take),
//!   [`take_along_axis`](crate::ops::take_along_axis), [`gather`](crate::ops::gather),
//!   `gather_mm`/`gather_qmm` and array indexing, a negative index counts from the end as in
//!   Python (`-1` is the last element), and an index still outside the axis reads the nearest
//!   end (a slice of `k` elements starts at most at `n - k`).
//! - **Writes drop** (JAX `mode="drop"`): in the `scatter*` family,
//!   [`put_along_axis`](crate::ops::put_along_axis),
//!   [`scatter_add_axis`](crate::ops::scatter_add_axis) and `a.at(..)`, an update whose index
//!   is outside (after counting negatives from the end) changes nothing.
//! - **Dynamic slice starts clamp** so the slice fits (JAX `lax.dynamic_slice`): in
//!   [`slice`](crate::ops::slice) and [`slice_update`](crate::ops::slice_update) a start is
//!   moved into `0..=n - k`; negatives are not counted from the end (MLX's kernel does not
//!   either).
//!
//! The cost is a few element-wise ops on the *index* arrays (fused when compiled), and for a
//! reducing scatter one `where` over the updates; a scatter that sets values (or any complex
//! scatter) pads the array by one slice along the first indexed axis and slices it off
//! again, which copies the array. `benches/index_bounds.rs` measures both against the
//! `*_unchecked` functions, which skip the guard for callers that know their indices.

use crate::ops::{self, where_};
use crate::{Array, Dtype, Error, Result};

/// The largest value `dtype` holds, for the integer dtypes (`i64::MAX` for the 64-bit ones:
/// an axis length never exceeds it).
fn int_max(dtype: Dtype) -> i64 {
    match dtype {
        Dtype::Int8 => i8::MAX.into(),
        Dtype::Int16 => i16::MAX.into(),
        Dtype::Int32 => i32::MAX.into(),
        Dtype::Uint8 => u8::MAX.into(),
        Dtype::Uint16 => u16::MAX.into(),
        Dtype::Uint32 => u32::MAX.into(),
        _ => i64::MAX,
    }
}

fn is_unsigned(dtype: Dtype) -> bool {
    matches!(
        dtype,
        Dtype::Uint8 | Dtype::Uint16 | Dtype::Uint32 | Dtype::Uint64
    )
}

/// `v` as a scalar of the integer `dtype`. Callers pick a dtype that holds `v`.
pub(crate) fn int_scalar(v: i64, dtype: Dtype) -> Result<Array> {
    let overflow = || Error::invalid(format!("[index bounds] {v} does not fit {dtype}"));
    Ok(match dtype {
        Dtype::Int8 => Array::from_scalar(i8::try_from(v).map_err(|_| overflow())?),
        Dtype::Int16 => Array::from_scalar(i16::try_from(v).map_err(|_| overflow())?),
        Dtype::Int32 => Array::from_scalar(i32::try_from(v).map_err(|_| overflow())?),
        Dtype::Int64 => Array::from_scalar(v),
        Dtype::Uint8 => Array::from_scalar(u8::try_from(v).map_err(|_| overflow())?),
        Dtype::Uint16 => Array::from_scalar(u16::try_from(v).map_err(|_| overflow())?),
        Dtype::Uint32 => Array::from_scalar(u32::try_from(v).map_err(|_| overflow())?),
        Dtype::Uint64 => Array::from_scalar(u64::try_from(v).map_err(|_| overflow())?),
        _ => {
            return Err(Error::invalid(format!(
                "[index bounds] {dtype} is not an integer dtype"
            )))
        }
    })
}

/// The valid starts along one axis: `0..=len - size` (a slice of `size` elements along an
/// axis of `len`). Built only where `size <= len`; MLX rejects the op otherwise.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Extent {
    pub len: i64,
    pub size: i64,
}

impl Extent {
    /// One element of an axis of `len` (take, take_along_axis, put_along_axis).
    pub fn element(len: i64) -> Extent {
        Extent { len, size: 1 }
    }

    fn hi(self) -> i64 {
        self.len - self.size
    }

    /// `idx` in a dtype that holds `len` (its own unless too narrow), so the arithmetic
    /// below cannot wrap. MLX promotes the index arrays of one op to a common type itself.
    fn widen(self, idx: &Array) -> Result<Array> {
        let dtype = idx.dtype();
        if self.len <= int_max(dtype) {
            Ok(idx.clone())
        } else if self.len <= i64::from(i32::MAX) {
            idx.astype(Dtype::Int32)
        } else {
            idx.astype(Dtype::Int64)
        }
    }

    /// Negative entries counted from the end, as MLX's gather kernels do: `idx + len` where
    /// `idx < 0` (added only there, so nothing overflows).
    fn counted_from_end(self, idx: &Array) -> Result<Array> {
        let idx = self.widen(idx)?;
        let dtype = idx.dtype();
        if is_unsigned(dtype) {
            return Ok(idx);
        }
        let zero = int_scalar(0, dtype)?;
        let negative = ops::less(&idx, &zero)?;
        ops::add(
            &idx,
            &where_(&negative, &int_scalar(self.len, dtype)?, &zero)?,
        )
    }

    /// `idx` moved into `0..=len - size` (after counting negatives from the end when
    /// `from_end`).
    pub fn clamp(self, idx: &Array, from_end: bool) -> Result<Array> {
        let idx = if from_end {
            self.counted_from_end(idx)?
        } else {
            self.widen(idx)?
        };
        let dtype = idx.dtype();
        let hi = self.hi();
        let idx = if hi < int_max(dtype) {
            ops::minimum(&idx, &int_scalar(hi, dtype)?)?
        } else {
            idx
        };
        if is_unsigned(dtype) {
            Ok(idx)
        } else {
            ops::maximum(&idx, &int_scalar(0, dtype)?)
        }
    }

    /// Where `idx` (negatives counted from the end) is a valid start.
    pub fn contains(self, idx: &Array) -> Result<Array> {
        let idx = self.counted_from_end(idx)?;
        let dtype = idx.dtype();
        let below_hi = ops::less_equal(&idx, &int_scalar(self.hi(), dtype)?)?;
        if is_unsigned(dtype) {
            Ok(below_hi)
        } else {
            ops::logical_and(
                &below_hi,
                &ops::greater_equal(&idx, &int_scalar(0, dtype)?)?,
            )
        }
    }

    /// `idx` clamped where valid, and `len` (the first slot of a one-slice pad appended to the
    /// axis) where not: where a dropped write of a set goes.
    pub fn valid_or_pad(self, idx: &Array, valid: &Array) -> Result<Array> {
        let clamped = self.clamp(idx, true)?;
        let dtype = clamped.dtype();
        where_(valid, &clamped, &int_scalar(self.len, dtype)?)
    }
}

/// Dynamic slice starts (`start[i]` along an axis of `lens[i]`) moved into `0..=his[i]`;
/// negatives are not counted from the end.
pub(crate) fn clamp_starts(start: &Array, his: &[i64], lens: &[i64]) -> Result<Array> {
    let widest = lens.iter().copied().max().unwrap_or(0);
    let start = Extent::element(widest).widen(start)?;
    let dtype = start.dtype();
    let his = Array::from_slice(his, &[his.len() as i32])?
        .astype(dtype)?
        .reshape(start.shape())?;
    let start = ops::minimum(&start, &his)?;
    if is_unsigned(dtype) {
        Ok(start)
    } else {
        ops::maximum(&start, &int_scalar(0, dtype)?)
    }
}

/// The batch indices of `gather_mm`/`gather_qmm` into `x` (whose batch is every axis but
/// the last two), clamped like [`take`](crate::ops::take)'s. MLX casts them to `uint32` and
/// reads outside `x` for any index past its batch (a negative one included).
pub(crate) fn batch_indices(indices: Option<&Array>, x: &Array, op: &str) -> Result<Option<Array>> {
    let Some(idx) = indices else {
        return Ok(None);
    };
    if !idx.dtype().is_integer() || x.ndim() < 2 {
        return Ok(Some(idx.clone()));
    }
    let batch: i64 = x.shape()[..x.ndim() - 2]
        .iter()
        .map(|&d| i64::from(d))
        .product();
    if batch == 0 {
        if idx.size() > 0 {
            return Err(Error::invalid(format!(
                "[{op}] cannot pick from an empty batch (operand shape {:?})",
                x.shape()
            )));
        }
        return Ok(Some(idx.clone()));
    }
    Extent::element(batch).clamp(idx, true).map(Some)
}

/// `segmented_mm`'s segment bounds moved into `0..=k` (MLX casts them to `uint32` and reads
/// outside the operands for a bound past `k`; a segment whose end is not after its start is
/// empty).
pub(crate) fn segment_bounds(segments: &Array, k: i32) -> Result<Array> {
    if !segments.dtype().is_integer() {
        return Ok(segments.clone());
    }
    Extent {
        len: k.into(),
        size: 0,
    }
    .clamp(segments, false)
}

/// `axis` counted from the end when negative; `None` where it is not an axis of an
/// `ndim`-dimensional array (the op itself then reports it).
pub(crate) fn normalize_axis(axis: i32, ndim: usize) -> Option<usize> {
    let ndim = i64::try_from(ndim).ok()?;
    let a = if axis < 0 {
        i64::from(axis) + ndim
    } else {
        i64::from(axis)
    };
    usize::try_from(a).ok().filter(|_| a < ndim)
}

/// An update that leaves its target unchanged, for the reducing scatters: `x + -0.0 == x`
/// (also for `x == -0.0`), `x * 1 == x`, `max(x, -inf) == x`, `min(x, inf) == x`.
pub(crate) fn identity(reduce: Reduce, dtype: Dtype) -> Result<Option<Array>> {
    let float = |v: f32| Array::from_scalar(v).astype(dtype);
    let v = match (reduce, dtype) {
        (Reduce::Set, _) | (_, Dtype::Complex64) => return Ok(None),
        (Reduce::Add, Dtype::Bool) | (Reduce::Max, Dtype::Bool) => Array::from_scalar(false),
        (Reduce::Prod, Dtype::Bool) | (Reduce::Min, Dtype::Bool) => Array::from_scalar(true),
        (Reduce::Add, d) if d.is_floating() => float(-0.0)?,
        (Reduce::Max, d) if d.is_floating() => float(f32::NEG_INFINITY)?,
        (Reduce::Min, d) if d.is_floating() => float(f32::INFINITY)?,
        (Reduce::Prod, d) if d.is_floating() => float(1.0)?,
        (Reduce::Add, d) => int_scalar(0, d)?,
        (Reduce::Prod, d) => int_scalar(1, d)?,
        (Reduce::Max, d) => int_limit(d, false),
        (Reduce::Min, d) => int_limit(d, true),
    };
    Ok(Some(v))
}

/// The largest (`max`) or smallest value of an integer dtype, as a scalar of it.
fn int_limit(dtype: Dtype, max: bool) -> Array {
    macro_rules! limit {
        ($t:ty) => {
            Array::from_scalar(if max { <$t>::MAX } else { <$t>::MIN })
        };
    }
    match dtype {
        Dtype::Int8 => limit!(i8),
        Dtype::Int16 => limit!(i16),
        Dtype::Int32 => limit!(i32),
        Dtype::Uint8 => limit!(u8),
        Dtype::Uint16 => limit!(u16),
        Dtype::Uint32 => limit!(u32),
        Dtype::Uint64 => limit!(u64),
        _ => limit!(i64),
    }
}

/// How a scatter combines an update with its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reduce {
    Set,
    Add,
    Prod,
    Max,
    Min,
}
