//! Reading an array's data: [`Array::item`], [`Array::to_vec`], [`Array::as_slice`],
//! [`Array::strides`] and printing. Each evaluates the array first, through the evaluation
//! pipeline.

use std::fmt;

use half::{bf16, f16};
use num_complex::Complex32;

use mlx_sys as sys;

use crate::array::Array;
use crate::dtype::{ArrayElement, Dtype};
use crate::error::{check_handler, Error, Result};
use crate::handles::MlxString;
use crate::item::{ItemType, Scalar};

impl Array {
    /// Element strides of the evaluated data, in elements (Python's `a.strides` is not public;
    /// this is MLX's own layout). Negative for reversed views such as `a[::-1]`. Evaluates the
    /// array first, because an unevaluated array has no memory layout yet.
    pub fn strides(&self) -> Result<&[i64]> {
        self.eval()?;
        Ok(self.raw_strides())
    }

    fn raw_strides(&self) -> &[i64] {
        let ndim = self.ndim();
        if ndim == 0 {
            return &[];
        }
        // mlx-c hands out MLX's `Strides` (a vector of int64_t) cast to `size_t*`; reading them
        // back as i64 keeps the sign of reversed views.
        // SAFETY: valid, evaluated handle; the strides vector holds `ndim` int64_t values
        // (same size and alignment as i64) that do not change while the array lives, and the
        // returned slice borrows `self`.
        unsafe {
            std::slice::from_raw_parts(sys::mlx_array_strides(self.as_raw()).cast::<i64>(), ndim)
        }
    }

    /// The single element of a size-1 array (Python: `a.item()`). Evaluates.
    ///
    /// Like Python's `.item()`, which returns a Python `int`, `float` or `bool` whatever the
    /// array's exact dtype, the element converts to `T` when the conversion keeps its value:
    ///
    /// - integer `T` (`i32`, `u64`, `usize`, ...): from any integer or bool dtype when the
    ///   value fits (`argmax`'s `uint32` result reads as `i32`, `i64` or `usize`);
    /// - float `T`: from any float, integer or bool dtype when `T` holds the value exactly
    ///   (every dtype but complex reads as `f64`; a `float64` reads as `f32` only if the
    ///   value survives the round trip);
    /// - `bool` only from `bool`, `Complex32` from `complex64` or an exact real.
    ///
    /// Anything else — a float read as an integer, a negative value as unsigned, a value out
    /// of range — is an `Err` naming the value; use [`Array::astype`] to convert with
    /// rounding or wrapping.
    ///
    /// ```
    /// use mlx_rs::{ops, Array};
    /// let i = ops::argmax(&Array::from_slice(&[1.0f32, 5.0, 2.0], &[3])?, None, false)?;
    /// assert_eq!(i.item::<usize>()?, 1); // a uint32 array
    /// assert_eq!(i.item::<i64>()?, 1);
    /// assert_eq!(Array::from(0.5f32).item::<f64>()?, 0.5);
    /// assert!(Array::from(-1i32).item::<u32>().is_err());
    /// assert!(Array::from(0.5f32).item::<i32>().is_err());
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn item<T: ItemType>(&self) -> Result<T> {
        let s = self.scalar()?;
        T::from_scalar(s).ok_or_else(|| {
            let v = match s {
                Scalar::Bool(b) => b.to_string(),
                Scalar::Int(i) => i.to_string(),
                Scalar::Float(f) => f.to_string(),
                Scalar::Complex(c) => c.to_string(),
            };
            Error::invalid(format!(
                "[item] the {} value {v} is not exactly representable as {}; use `astype` to \
                 convert with rounding or wrapping",
                self.dtype(),
                std::any::type_name::<T>()
            ))
        })
    }

    /// The single element as read in its own dtype, before conversion.
    fn scalar(&self) -> Result<Scalar> {
        Ok(match self.dtype() {
            Dtype::Bool => Scalar::Bool(self.item_exact::<bool>()?),
            Dtype::Uint8 => Scalar::Int(self.item_exact::<u8>()?.into()),
            Dtype::Uint16 => Scalar::Int(self.item_exact::<u16>()?.into()),
            Dtype::Uint32 => Scalar::Int(self.item_exact::<u32>()?.into()),
            Dtype::Uint64 => Scalar::Int(self.item_exact::<u64>()?.into()),
            Dtype::Int8 => Scalar::Int(self.item_exact::<i8>()?.into()),
            Dtype::Int16 => Scalar::Int(self.item_exact::<i16>()?.into()),
            Dtype::Int32 => Scalar::Int(self.item_exact::<i32>()?.into()),
            Dtype::Int64 => Scalar::Int(self.item_exact::<i64>()?.into()),
            Dtype::Float16 => Scalar::Float(self.item_exact::<f16>()?.into()),
            Dtype::Bfloat16 => Scalar::Float(self.item_exact::<bf16>()?.into()),
            Dtype::Float32 => Scalar::Float(self.item_exact::<f32>()?.into()),
            Dtype::Float64 => Scalar::Float(self.item_exact::<f64>()?),
            Dtype::Complex64 => Scalar::Complex(self.item_exact::<Complex32>()?),
        })
    }

    /// The single element, of exactly `T`'s dtype.
    pub(crate) fn item_exact<T: ArrayElement>(&self) -> Result<T> {
        self.expect_dtype::<T>()?;
        if self.size() != 1 {
            return Err(Error::invalid(format!(
                "[item] item can only be called on arrays of size 1 (this one has shape {:?})",
                self.shape()
            )));
        }
        self.eval()?;
        let ptr = self.data_ptr::<T>()?;
        // SAFETY: evaluated array of dtype T with one element at `ptr`.
        Ok(unsafe { *ptr })
    }

    /// All elements in row-major order (Python: `a.tolist()`, flattened). Evaluates, and
    /// follows the strides, so transposed, sliced and broadcast arrays read correctly.
    pub fn to_vec<T: ArrayElement>(&self) -> Result<Vec<T>> {
        self.expect_dtype::<T>()?;
        self.eval()?;
        if self.size() == 0 {
            return Ok(Vec::new());
        }
        let ptr = self.data_ptr::<T>()?;
        let shape = self.shape();
        let strides = self.raw_strides();
        if is_row_major(shape, strides) {
            // SAFETY: evaluated, row-major data of `size` elements of T starts at `ptr`.
            return Ok(unsafe { std::slice::from_raw_parts(ptr, self.size()) }.to_vec());
        }
        // SAFETY: `ptr` is the first element of this evaluated view (offset included) and
        // `shape`/`strides` are the view's own layout, so every index inside `shape` lands on
        // an element of the buffer `self` keeps alive.
        unsafe { read_strided(ptr, shape, strides) }
    }

    /// Borrows the data without copying. Only for arrays that are already evaluated and
    /// row-contiguous; anything else is an `Err` (use [`Array::to_vec`] or [`Array::eval`]).
    pub fn as_slice<T: ArrayElement>(&self) -> Result<&[T]> {
        self.expect_dtype::<T>()?;
        if !self.is_evaluated() {
            return Err(Error::NotEvaluated);
        }
        if self.size() == 0 {
            return Ok(&[]);
        }
        let shape = self.shape();
        let strides = self.raw_strides();
        if !is_row_major(shape, strides) {
            return Err(Error::NotContiguous {
                shape: shape.to_vec(),
                strides: strides.to_vec(),
            });
        }
        let ptr = self.data_ptr::<T>()?;
        // SAFETY: evaluated, row-major, `size` elements of T; the buffer is immutable and kept
        // alive by `self` for the borrow.
        Ok(unsafe { std::slice::from_raw_parts(ptr, self.size()) })
    }
    fn expect_dtype<T: ArrayElement>(&self) -> Result<()> {
        let actual = self.dtype();
        if actual != T::DTYPE {
            return Err(Error::DtypeMismatch {
                actual,
                requested: T::DTYPE,
            });
        }
        Ok(())
    }

    /// Pointer to the first element (offset included) of an evaluated array.
    fn data_ptr<T: ArrayElement>(&self) -> Result<*const T> {
        // SAFETY: valid handle; any typed accessor returns the same untyped data pointer.
        let ptr = check_handler(|| unsafe { sys::mlx_array_data_uint8(self.as_raw()) })?;
        if ptr.is_null() {
            return Err(Error::NotEvaluated);
        }
        Ok(ptr.cast())
    }
}

/// Row-major (C) layout, ignoring strides of dimensions of size 1.
fn is_row_major(shape: &[i32], strides: &[i64]) -> bool {
    let mut expected = 1i64;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d != 1 && s != expected {
            return false;
        }
        expected = expected.saturating_mul(i64::from(d));
    }
    true
}

/// Gathers a strided view into a row-major vector. Strides may be negative (reversed views)
/// or zero (broadcasts); offsets are signed and relative to `base`, which for a reversed view
/// points at the highest address the view reads.
///
/// An offset that does not fit `isize` cannot belong to a real buffer: it is an `Err`, never
/// a wrapped pointer.
///
/// # Safety
/// For every index `i` inside `shape`, `base` offset by `sum(i[k] * strides[k])` elements must
/// point at a readable, initialized `T` that stays alive during the call.
unsafe fn read_strided<T: Copy>(base: *const T, shape: &[i32], strides: &[i64]) -> Result<Vec<T>> {
    let overflow = || {
        Error::invalid(format!(
            "[to_vec] strides {strides:?} overflow for shape {shape:?}"
        ))
    };
    let dims: Vec<i64> = shape.iter().map(|&d| i64::from(d)).collect();
    let total = dims.iter().try_fold(1usize, |acc, &d| {
        usize::try_from(d).ok().and_then(|d| acc.checked_mul(d))
    });
    let total = total.ok_or_else(overflow)?;
    // The walk below moves back by `stride * (dim - 1)` on each carry: check those products
    // and their sum `span` (the largest offset magnitude) once, so the loop needs no checks.
    let mut span = 0i64;
    for (&d, &s) in dims.iter().zip(strides) {
        let extent = s
            .checked_abs()
            .and_then(|a| a.checked_mul(d.saturating_sub(1).max(0)))
            .ok_or_else(overflow)?;
        span = span.checked_add(extent).ok_or_else(overflow)?;
    }
    isize::try_from(span).map_err(|_| overflow())?;

    let mut out = Vec::with_capacity(total);
    let mut index = vec![0i64; dims.len()];
    let mut offset = 0i64;
    for _ in 0..total {
        // `|offset| <= span`, which fits isize (checked above), so the cast is lossless.
        let element = offset as isize;
        // SAFETY: `offset` is the dot product of an in-bounds index with the view's strides,
        // so by the caller's contract it addresses an element of the live buffer; `offset`
        // (not `add`) because it may be negative.
        out.push(unsafe { *base.offset(element) });
        // Odometer step: `offset` stays the dot product of `index` and `strides`, so it never
        // leaves [-span, span].
        for axis in (0..dims.len()).rev() {
            if index[axis] + 1 < dims[axis] {
                index[axis] += 1;
                offset += strides[axis];
                break;
            }
            offset -= strides[axis] * (dims[axis] - 1);
            index[axis] = 0;
        }
    }
    Ok(out)
}

impl fmt::Display for Array {
    /// Prints like Python MLX (`array([1, 2], dtype=int32)`). Evaluates the array.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Evaluated first, so a CUDA build encodes it under the lock (`evaluation/encode.rs`).
        if let Err(e) = self.eval() {
            return write!(f, "array(<error: {e}>)");
        }
        // SAFETY: valid handle; mlx-c writes into a string we own.
        match MlxString::fill(|s| unsafe { sys::mlx_array_tostring(s, self.as_raw()) }) {
            Ok(text) => f.write_str(&text),
            Err(e) => write!(f, "array(<error: {e}>)"),
        }
    }
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_detection_ignores_unit_dims() {
        assert!(is_row_major(&[2, 3], &[3, 1]));
        assert!(is_row_major(&[2, 1, 3], &[3, 99, 1]));
        assert!(!is_row_major(&[2, 3], &[1, 2]));
        assert!(!is_row_major(&[2, 3], &[0, 1]));
    }

    #[test]
    fn strided_read_walks_a_transpose() {
        let data = [0, 1, 2, 3, 4, 5];
        // The transpose of a 2x3 row-major matrix: shape 3x2, strides (1, 3).
        // SAFETY: every index of the 3x2 shape maps into `data`.
        let t = unsafe { read_strided(data.as_ptr(), &[3, 2], &[1, 3]) };
        assert_eq!(t.unwrap(), vec![0, 3, 1, 4, 2, 5]);
        // Broadcast of a row: stride 0.
        // SAFETY: every index of the 2x3 shape maps into the first row of `data`.
        let b = unsafe { read_strided(data.as_ptr(), &[2, 3], &[0, 1]) };
        assert_eq!(b.unwrap(), vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn strided_read_walks_negative_strides_from_the_last_element() {
        let data = [0, 1, 2, 3, 4, 5];
        // `data.reshape(2, 3)[::-1, ::-1]`: base at the last element, strides (-3, -1).
        // SAFETY: offsets go back at most 5 elements from the last one.
        let both = unsafe { read_strided(data.as_ptr().wrapping_add(5), &[2, 3], &[-3, -1]) };
        assert_eq!(both.unwrap(), vec![5, 4, 3, 2, 1, 0]);
        // `data.reshape(2, 3)[::-1]`: rows reversed, columns forward; base at element 3.
        // SAFETY: offsets from element 3 stay within -3..=2, inside `data`.
        let rows = unsafe { read_strided(data.as_ptr().wrapping_add(3), &[2, 3], &[-3, 1]) };
        assert_eq!(rows.unwrap(), vec![3, 4, 5, 0, 1, 2]);
    }

    #[test]
    fn strided_read_rejects_offsets_beyond_isize() {
        let data = [0u8];
        // 3 steps of i64::MAX / 2 overflow i64.
        // SAFETY: the layout is rejected before any pointer is formed or read.
        let r = unsafe { read_strided(data.as_ptr(), &[4], &[i64::MAX / 2]) };
        assert!(r.is_err());
        // SAFETY: as above.
        let r = unsafe { read_strided(data.as_ptr(), &[2], &[i64::MIN]) };
        assert!(r.is_err());
    }
}
