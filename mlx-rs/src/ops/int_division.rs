//! Integer division that cannot kill the process: `floor_divide`, `remainder`, `divmod`.
//!
//! MLX's CPU kernels divide integers with the machine's division, which traps (SIGFPE, the
//! process dies; Python MLX dies too) on a zero divisor and on `MIN / -1`. Whether a divisor
//! array holds a zero is known only from its data, so these functions make the result
//! defined instead, on every device, as NumPy defines it:
//!
//! - `x // 0 == 0` and `x % 0 == 0`;
//! - `MIN // -1 == MIN` (wrapping) and `MIN % -1 == 0`.
//!
//! That costs, for integer operands only, a comparison or two and two `where`s around the
//! division (three to five more element-wise ops, fused where compiled). Floating-point
//! operands go straight to MLX (IEEE results: `inf`, `nan`). The `*_unchecked` functions skip
//! the guard for callers that know their divisors.

use mlx_sys as sys;

use crate::ops::args::resolve_pair;
use crate::ops::{equal, logical_and, logical_or, where_, IntoOperand};
use crate::stream::vector_op;
use crate::{Array, Dtype, Error, Result};

fn raw_floor_divide(a: &Array, b: &Array) -> Result<Array> {
    // SAFETY: both handles are valid for the call; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_floor_divide(res, a.as_raw(), b.as_raw(), s)
    })
}

fn raw_remainder(a: &Array, b: &Array) -> Result<Array> {
    // SAFETY: as above.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_remainder(res, a.as_raw(), b.as_raw(), s)
    })
}

fn raw_divmod(a: &Array, b: &Array) -> Result<(Array, Array)> {
    // SAFETY: valid handles; mlx-c writes a new vector into res.
    let mut out =
        vector_op(|res, s| unsafe { sys::mlx_divmod(res, a.as_raw(), b.as_raw(), s) })?.into_iter();
    match (out.next(), out.next()) {
        (Some(q), Some(r)) => Ok((q, r)),
        _ => Err(Error::invalid(
            "[divmod] MLX returned fewer than two arrays",
        )),
    }
}

/// The smallest value of a signed integer dtype, as a scalar of that dtype.
fn signed_min(dtype: Dtype) -> Option<Array> {
    match dtype {
        Dtype::Int8 => Some(Array::from_scalar(i8::MIN)),
        Dtype::Int16 => Some(Array::from_scalar(i16::MIN)),
        Dtype::Int32 => Some(Array::from_scalar(i32::MIN)),
        Dtype::Int64 => Some(Array::from_scalar(i64::MIN)),
        _ => None,
    }
}

/// The guard of an integer division in `dtype`: where the divisor is zero, and a divisor in
/// which every element that would trap is replaced by 1.
fn guard(a: &Array, b: &Array, dtype: Dtype) -> Result<(Array, Array)> {
    let a = a.astype(dtype)?;
    let b = b.astype(dtype)?;
    let zero = equal(&b, 0)?;
    let traps = match signed_min(dtype) {
        Some(min) => logical_or(&zero, &logical_and(&equal(&a, &min)?, &equal(&b, -1)?)?)?,
        None => zero.clone(),
    };
    let safe = where_(&traps, 1, &b)?;
    Ok((zero, safe))
}

/// `op(a, b)`, guarded where it divides integers. The op is built once, unguarded: MLX's own
/// type promotion (its result's dtype) says whether this is an integer division, and a
/// floating-point one is returned as it is. Operands MLX rejects give the op's own message.
fn guarded<'a>(
    a: impl IntoOperand<'a>,
    b: impl IntoOperand<'a>,
    op: impl Fn(&Array, &Array) -> Result<Vec<Array>>,
) -> Result<Vec<Array>> {
    let (a, b) = resolve_pair(a.into_operand(), b.into_operand());
    let out = op(&a, &b)?;
    let dtype = out[0].dtype();
    if !dtype.is_integer() {
        return Ok(out);
    }
    let (zero, safe) = guard(&a, &b, dtype)?;
    op(&a, &safe)?.iter().map(|o| where_(&zero, 0, o)).collect()
}

/// The one array of a single-output op.
fn single(mut out: Vec<Array>) -> Array {
    out.pop().expect("a single-output op returns one array")
}

/// Element-wise floor division (Python: `mx.floor_divide`, `a // b`). Integer division by
/// zero gives 0 and `MIN // -1` gives `MIN`, where MLX's CPU kernel would kill the process;
/// [`floor_divide_unchecked`] skips that guard. As in Python MLX, an integer quotient truncates toward zero
/// (`-7 // 2 == -3`; [`divmod`]'s floors).
///
/// ```
/// use mlx_rs::{ops, Array};
/// let a = Array::from_slice(&[7i32, -7, 5, i32::MIN], &[4])?;
/// let b = Array::from_slice(&[2i32, 2, 0, -1], &[4])?;
/// assert_eq!(ops::floor_divide(&a, &b)?.to_vec::<i32>()?, [3, -3, 0, i32::MIN]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn floor_divide<'a>(a: impl IntoOperand<'a>, b: impl IntoOperand<'a>) -> Result<Array> {
    guarded(a, b, |a, b| Ok(vec![raw_floor_divide(a, b)?])).map(single)
}

/// Element-wise remainder with Python's sign rules (Python: `mx.remainder`, `a % b`). An
/// integer remainder by zero is 0 (and `MIN % -1` is 0), where MLX's CPU kernel would kill the
/// process; [`remainder_unchecked`] skips that guard.
pub fn remainder<'a>(a: impl IntoOperand<'a>, b: impl IntoOperand<'a>) -> Result<Array> {
    guarded(a, b, |a, b| Ok(vec![raw_remainder(a, b)?])).map(single)
}

/// Element-wise `(a // b, a % b)` (Python: `mx.divmod(a, b)`), with [`floor_divide`]'s and
/// [`remainder`]'s results for integer zero divisors.
pub fn divmod<'a>(a: impl IntoOperand<'a>, b: impl IntoOperand<'a>) -> Result<(Array, Array)> {
    let mut out = guarded(a, b, |a, b| {
        let (q, r) = raw_divmod(a, b)?;
        Ok(vec![q, r])
    })?;
    let r = out.pop().expect("divmod returns two arrays");
    Ok((single(out), r))
}

/// [`floor_divide`] without the guard: MLX's kernel as it is.
///
/// # Safety
/// For integer operands evaluated on the CPU, no divisor may be 0 and no `MIN` may be
/// divided by -1: MLX's kernel would raise SIGFPE and the process would die.
pub unsafe fn floor_divide_unchecked<'a>(
    a: impl IntoOperand<'a>,
    b: impl IntoOperand<'a>,
) -> Result<Array> {
    let (a, b) = resolve_pair(a.into_operand(), b.into_operand());
    raw_floor_divide(&a, &b)
}

/// [`remainder`] without the guard: MLX's kernel as it is.
///
/// # Safety
/// As for [`floor_divide_unchecked`].
pub unsafe fn remainder_unchecked<'a>(
    a: impl IntoOperand<'a>,
    b: impl IntoOperand<'a>,
) -> Result<Array> {
    let (a, b) = resolve_pair(a.into_operand(), b.into_operand());
    raw_remainder(&a, &b)
}
