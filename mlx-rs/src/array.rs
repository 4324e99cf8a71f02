//! [`Array`]: an owned handle to an MLX array.

use std::fmt;
use std::marker::PhantomData;

use mlx_sys as sys;

use crate::dtype::{ArrayElement, Dtype};
use crate::error::{check, check_handler, Error, Result};
use crate::handles::{MlxString, VectorArray};
use crate::item::ItemType;

/// An n-dimensional MLX array (Python: `mx.array`).
///
/// `Array` owns one reference to MLX's array: `Clone` shares the same (immutable) array and
/// `Drop` releases the reference. Arrays are lazy: ops build a graph, and [`Array::eval`] (or
/// reading data) computes it.
///
/// `Array` is `Send` but not `Sync`: it may move to another thread, but two threads must not
/// evaluate through the same handle at once. An array whose graph is still unevaluated can
/// only be evaluated on the thread whose stream built it (MLX 0.32 streams are
/// thread-affine); elsewhere `eval` returns MLX's error. Evaluate before sending when the other
/// thread needs the values.
///
/// ```
/// use mlx_rs::{Array, Dtype};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// assert_eq!(a.shape(), &[2, 2]);
/// assert_eq!(a.dtype(), Dtype::Float32);
/// let b = (&a + 1.0).sum(None, false)?;
/// assert_eq!(b.item::<f32>()?, 14.0);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub struct Array {
    raw: sys::mlx_array,
    // Opts out of Sync (see the type docs) while keeping Send below.
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

// SAFETY: the handle is a reference-counted pointer (atomic refcount in MLX); moving it to
// another thread is sound. Evaluation on a thread that does not own the graph's stream is
// refused by MLX with an error, not undefined behaviour.
unsafe impl Send for Array {}

impl Array {
    /// Wraps a raw handle, taking ownership of it.
    ///
    /// # Safety
    /// `raw` must be a valid, non-shared `mlx_array` that nothing else will free.
    pub unsafe fn from_raw(raw: sys::mlx_array) -> Array {
        Array {
            raw,
            _not_sync: PhantomData,
        }
    }

    /// The raw handle, still owned by `self`.
    ///
    /// # Safety
    /// The caller must not free the handle nor use it after `self` is dropped.
    pub unsafe fn as_raw_handle(&self) -> sys::mlx_array {
        self.raw
    }

    #[inline]
    pub(crate) fn as_raw(&self) -> sys::mlx_array {
        self.raw
    }

    #[inline]
    pub(crate) fn raw_mut(&mut self) -> *mut sys::mlx_array {
        &mut self.raw
    }

    /// An empty handle for mlx-c to fill.
    #[inline]
    pub(crate) fn empty() -> Array {
        crate::error::init();
        // SAFETY: mlx_array_new makes an empty handle, owned by the returned value.
        unsafe { Array::from_raw(sys::mlx_array_new()) }
    }

    /// Runs an mlx-c call that writes its result into `*mut mlx_array`.
    #[inline]
    pub(crate) fn try_from_op(op: impl FnOnce(*mut sys::mlx_array) -> i32) -> Result<Array> {
        let mut out = Array::empty();
        check(|| op(&mut out.raw))?;
        Ok(out)
    }

    /// Like [`Array::try_from_op`], for ops that also take the current stream.
    #[inline]
    pub(crate) fn try_from_stream_op(
        op: impl FnOnce(*mut sys::mlx_array, sys::mlx_stream) -> i32,
    ) -> Result<Array> {
        crate::stream::with_current_raw(|s| Array::try_from_op(|res| op(res, s)))?
    }

    /// Copies `data` into a new array of the given shape (Python: `mx.array(data).reshape(shape)`).
    ///
    /// Fails if the shape has a negative dimension or its size differs from `data.len()`.
    pub fn from_slice<T: ArrayElement>(data: &[T], shape: &[i32]) -> Result<Array> {
        let ndim = checked_data_shape(shape, data.len())?;
        // SAFETY: `data` holds exactly the elements `shape` needs (checked above), of T, whose
        // layout matches T::DTYPE; mlx-c copies the buffer before returning. `shape` outlives
        // the call.
        let raw = check_handler(|| unsafe {
            sys::mlx_array_new_data(
                data.as_ptr().cast(),
                shape.as_ptr(),
                ndim,
                T::DTYPE.to_raw(),
            )
        })?;
        // SAFETY: a fresh handle we now own.
        Ok(unsafe { Array::from_raw(raw) })
    }

    /// Moves `data` into a new array. Where the backend's allocator can adopt foreign memory
    /// (Metal's unified memory), MLX uses the vector's buffer in place and drops the vector with
    /// the last array; otherwise (the CPU allocator) MLX copies it once and drops the vector at
    /// once. [`Array::from_slice`] always copies and leaves the caller's buffer alone.
    ///
    /// ```
    /// let a = mlx_rs::Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(a.sum(None, false)?.item::<f32>()?, 10.0);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn from_vec<T: ArrayElement>(data: Vec<T>, shape: &[i32]) -> Result<Array> {
        let ndim = checked_data_shape(shape, data.len())?;
        let mut boxed = Box::new(data);
        let ptr = boxed.as_mut_ptr();
        let payload = Box::into_raw(boxed);
        extern "C" fn drop_payload<T>(payload: *mut std::ffi::c_void) {
            // SAFETY: `payload` is the Box<Vec<T>> leaked below; MLX calls this exactly once,
            // when the array's buffer is released.
            drop(unsafe { Box::from_raw(payload.cast::<Vec<T>>()) });
        }
        // SAFETY: `ptr` points to exactly the initialised elements `shape` needs (checked above),
        // of T (layout matching T::DTYPE), owned by `payload`, which stays alive until MLX
        // calls `drop_payload`.
        // The shape was validated above, so construction cannot fail on it; should it fail
        // anyway, the payload leaks rather than risk a double free.
        let raw = check_handler(|| unsafe {
            sys::mlx_array_new_data_managed_payload(
                ptr.cast(),
                shape.as_ptr(),
                ndim,
                T::DTYPE.to_raw(),
                payload.cast(),
                Some(drop_payload::<T>),
            )
        })?;
        // SAFETY: a fresh handle we now own.
        Ok(unsafe { Array::from_raw(raw) })
    }

    /// A 0-dimensional array holding `value` (Python: `mx.array(value)`).
    pub fn from_scalar<T: ArrayElement>(value: T) -> Array {
        Array::from_slice(std::slice::from_ref(&value), &[])
            .expect("a scalar always fits a 0-dimensional shape")
    }

    /// The dimensions (Python: `a.shape`).
    pub fn shape(&self) -> &[i32] {
        // SAFETY: the handle is valid; shape and ndim are fixed for the life of the array and
        // the returned pointer points into it, so borrowing it for `&self` is sound.
        unsafe {
            let ndim = sys::mlx_array_ndim(self.raw);
            if ndim == 0 {
                return &[];
            }
            std::slice::from_raw_parts(sys::mlx_array_shape(self.raw), ndim)
        }
    }

    /// Size of one dimension; negative `axis` counts from the end (Python: `a.shape[axis]`).
    pub fn dim(&self, axis: i32) -> Result<i32> {
        let ndim = self.ndim() as i32;
        let idx = if axis < 0 { axis + ndim } else { axis };
        if idx < 0 || idx >= ndim {
            return Err(Error::invalid(format!(
                "[dim] axis {axis} is out of bounds for an array with {ndim} dimensions"
            )));
        }
        Ok(self.shape()[idx as usize])
    }

    /// Number of dimensions (Python: `a.ndim`).
    pub fn ndim(&self) -> usize {
        // SAFETY: valid handle.
        unsafe { sys::mlx_array_ndim(self.raw) }
    }

    /// Number of elements (Python: `a.size`).
    pub fn size(&self) -> usize {
        // SAFETY: valid handle.
        unsafe { sys::mlx_array_size(self.raw) }
    }

    /// Bytes the elements occupy (Python: `a.nbytes`).
    pub fn nbytes(&self) -> usize {
        // SAFETY: valid handle.
        unsafe { sys::mlx_array_nbytes(self.raw) }
    }

    /// Bytes per element (Python: `a.itemsize`).
    pub fn itemsize(&self) -> usize {
        // SAFETY: valid handle.
        unsafe { sys::mlx_array_itemsize(self.raw) }
    }

    /// The element type (Python: `a.dtype`).
    pub fn dtype(&self) -> Dtype {
        // SAFETY: valid handle.
        Dtype::from_raw(unsafe { sys::mlx_array_dtype(self.raw) })
    }

    /// Element strides of the evaluated data. Evaluates the array first, because an
    /// unevaluated array has no memory layout yet.
    pub fn strides(&self) -> Result<&[usize]> {
        self.eval()?;
        Ok(self.raw_strides())
    }

    fn raw_strides(&self) -> &[usize] {
        let ndim = self.ndim();
        if ndim == 0 {
            return &[];
        }
        // SAFETY: valid, evaluated handle; the strides vector has `ndim` entries and does not
        // change while the array lives.
        unsafe { std::slice::from_raw_parts(sys::mlx_array_strides(self.raw), ndim) }
    }

    /// Computes the array (Python: `mx.eval(a)`); see also [`crate::eval`] for several at once.
    pub fn eval(&self) -> Result<()> {
        // SAFETY: valid handle.
        check(|| unsafe { sys::mlx_array_eval(self.raw) })
    }

    /// Whether the data is computed and ready to read without waiting.
    pub fn is_evaluated(&self) -> bool {
        let mut ready = false;
        // SAFETY: valid handle; writes one bool.
        check(|| unsafe { sys::_mlx_array_is_available(&mut ready, self.raw) }).is_ok() && ready
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
        crate::item::convert(self)
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
        Ok(read_strided(ptr, shape, strides))
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

    /// A copy converted to `dtype` (Python: `a.astype(dtype)`).
    pub fn astype(&self, dtype: Dtype) -> Result<Array> {
        // SAFETY: valid handles; mlx-c writes a new array into `res`.
        Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_astype(res, self.raw, dtype.to_raw(), s)
        })
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
        let ptr = check_handler(|| unsafe { sys::mlx_array_data_uint8(self.raw) })?;
        if ptr.is_null() {
            return Err(Error::NotEvaluated);
        }
        Ok(ptr.cast())
    }
}

/// Checks that `shape` is a valid shape holding exactly `len` elements; returns its rank as
/// mlx-c takes it.
fn checked_data_shape(shape: &[i32], len: usize) -> Result<i32> {
    let size = shape.iter().try_fold(1usize, |acc, &d| {
        if d < 0 {
            return Err(Error::invalid(format!(
                "[array] negative dimension in shape {shape:?}"
            )));
        }
        acc.checked_mul(d as usize)
            .ok_or_else(|| Error::invalid(format!("[array] shape {shape:?} is too large")))
    })?;
    if size != len {
        return Err(Error::invalid(format!(
            "[array] shape {shape:?} holds {size} elements but {len} were given"
        )));
    }
    i32::try_from(shape.len()).map_err(|_| Error::invalid("[array] too many dimensions"))
}

/// Row-major (C) layout, ignoring strides of dimensions of size 1.
fn is_row_major(shape: &[i32], strides: &[usize]) -> bool {
    let mut expected = 1usize;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d != 1 && s != expected {
            return false;
        }
        expected *= d as usize;
    }
    true
}

/// Gathers a strided view into a row-major vector.
fn read_strided<T: Copy>(base: *const T, shape: &[i32], strides: &[usize]) -> Vec<T> {
    let total: usize = shape.iter().map(|&d| d as usize).product();
    let mut out = Vec::with_capacity(total);
    let mut index = vec![0usize; shape.len()];
    let mut offset = 0usize;
    for _ in 0..total {
        // SAFETY: `offset` is a valid element offset of the evaluated view: it is the dot
        // product of an in-bounds index with the array's own strides.
        out.push(unsafe { *base.add(offset) });
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            offset += strides[axis];
            if index[axis] < shape[axis] as usize {
                break;
            }
            offset -= strides[axis] * index[axis];
            index[axis] = 0;
        }
    }
    out
}

impl Clone for Array {
    fn clone(&self) -> Array {
        let mut out = Array::empty();
        // SAFETY: both handles valid; mlx_array_set makes `out` share `self`'s array.
        check(|| unsafe { sys::mlx_array_set(&mut out.raw, self.raw) })
            .expect("sharing an array handle cannot fail");
        out
    }
}

impl Drop for Array {
    fn drop(&mut self) {
        // SAFETY: we own this reference and release it once.
        unsafe { sys::mlx_array_free(self.raw) };
    }
}

impl fmt::Display for Array {
    /// Prints like Python MLX (`array([1, 2], dtype=int32)`). Evaluates the array.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: valid handle; mlx-c writes into a string we own.
        match MlxString::fill(|s| unsafe { sys::mlx_array_tostring(s, self.raw) }) {
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

impl<T: ArrayElement> From<T> for Array {
    fn from(value: T) -> Array {
        Array::from_scalar(value)
    }
}

impl From<&Array> for Array {
    fn from(a: &Array) -> Array {
        a.clone()
    }
}

/// Computes several arrays in one graph dispatch (Python: `mx.eval(a, b, ...)`).
pub fn eval<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Result<()> {
    let vec = VectorArray::from_arrays(arrays);
    // SAFETY: valid vector handle.
    check(|| unsafe { sys::mlx_eval(vec.0) })
}

/// Starts computing arrays and returns at once (Python: `mx.async_eval`). Reading them later
/// (or [`eval`]) waits for the result.
pub fn async_eval<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Result<()> {
    let vec = VectorArray::from_arrays(arrays);
    // SAFETY: valid vector handle.
    check(|| unsafe { sys::mlx_async_eval(vec.0) })
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
        assert_eq!(
            read_strided(data.as_ptr(), &[3, 2], &[1, 3]),
            vec![0, 3, 1, 4, 2, 5]
        );
        // Broadcast of a row: stride 0.
        assert_eq!(
            read_strided(data.as_ptr(), &[2, 3], &[0, 1]),
            vec![0, 1, 2, 0, 1, 2]
        );
    }
}
