//! [`Array`]: an owned handle to an MLX array.

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;

use mlx_sys as sys;

use crate::dtype::{ArrayElement, Dtype};
use crate::encode;
use crate::error::{check, check_handler, Error, Result};
use crate::handles::{MlxString, VectorArray};
use crate::item::ItemType;

/// An n-dimensional MLX array (Python: `mx.array`).
///
/// `Array` owns one reference to MLX's array: `Clone` shares the same (immutable) array and
/// `Drop` releases the reference. Arrays are lazy: ops build a graph, and [`Array::eval`] (or
/// reading data) computes it.
///
/// # Threads: `Send`, not `Sync`
///
/// An `Array` is a reference-counted pointer to a C++ `mlx::core::array`, whose descriptor
/// (status, completion event, primitive, graph inputs, data) is shared by every clone and by
/// every graph node that uses the array. MLX synchronizes the reference count (atomic) and the
/// data of a computed array (immutable once computed), but nothing else: evaluation writes the
/// status, resets the event and detaches the graph without locks. The safety argument:
///
/// - **Settled arrays are shared read-only.** After [`Array::eval`] (or [`crate::eval`], or
///   any read such as [`Array::to_vec`]) returns, the array is computed, waited for and
///   detached: every MLX operation that reaches its descriptor, from any thread, through any
///   clone, only reads it. Arrays made from data (`from_slice`, `from_scalar`, ...) are
///   settled from the start. Sending such an array, or a clone of it, is sound; this is the
///   documented way to hand results to another thread ("evaluate, then send").
/// - **Not `Sync`.** `&Array` cannot be shared, so the only way to reach one descriptor from
///   two threads is a clone (or a graph node) moved across, which the rule above covers; it
///   also keeps lazy evaluation (which writes) from being triggered through shared references.
/// - **Unsettled arrays belong to the thread that built them.** MLX 0.32 streams are
///   thread-affine: evaluating another thread's unevaluated graph returns MLX's error
///   (`There is no Stream(cpu, N) in current thread`) and the graph is left for its owner.
///   But MLX walks the graph before it reaches that check, so the walk must not overlap with
///   the owning thread evaluating (or building on) the same unevaluated nodes. The types
///   cannot see evaluation state, so this one rule is the caller's: do not keep using an
///   unevaluated graph on two threads at once; evaluate before sending.
/// - [`crate::async_eval`] leaves arrays computing: settle them (`eval`) before sending.
///
/// `mlx-rs/tests/compile_fail/` proves the negative claims (`Array: !Sync`, ...);
/// `mlx-rs/tests/streams.rs` runs the positive ones under concurrency.
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
    // Owned until the first clone, then shared through one Rust-side reference count: ops
    // make owned arrays without allocating anything beyond what mlx-c allocates, and `clone`
    // is an atomic increment after the first one, instead of mlx-c's copy (a C++ `new` of a
    // `mlx::core::array` plus MLX's atomic increment each time; clone and drop of 1,000 arrays
    // went from 34 to 7 µs, the tree round trips of benches/tree_flatten.rs).
    //
    // One tagged pointer, so an `Array` stays one word: an even address is the mlx-c handle's
    // `ctx` itself (owned; null while empty), an odd one is `Arc::into_raw(Arc<Handle>)` plus
    // one (shared). Both real pointers are at least 8-aligned (C++ `new`, `Arc`), so the low
    // bit is free. The `Cell` is what makes `Array` `!Sync` (see the type docs): the first
    // clone writes through `&self`.
    ptr: Cell<*mut u8>,
}

/// The tag of a shared (`Arc`) pointer in [`Array::ptr`].
const SHARED: usize = 1;

/// An owned mlx-c array handle, freed once when its last owner drops.
struct Handle(sys::mlx_array);

// SAFETY: the handle is a pointer to a C++ `mlx::core::array` (itself a reference-counted
// pointer to the shared descriptor, atomic refcount in MLX). A `Handle` is only ever read —
// its pointer is copied into mlx-c calls, which take the array by const reference — and freed
// once, by its last owner; mlx-c writes into it only as an `OutArray`, before it is shared.
// Sharing it between threads therefore shares nothing beyond what clones of one MLX array
// always shared; the rules for that are in the `Array` type docs.
unsafe impl Send for Handle {}
// SAFETY: see `Send` above: nothing writes through a shared `&Handle`.
unsafe impl Sync for Handle {}

/// An mlx-c out-parameter that becomes an [`Array`] once filled. Not shared until then, so
/// mlx-c may write into it; dropped unfilled (an op failed), it frees whatever mlx-c wrote.
pub(crate) struct OutArray(Handle);

impl OutArray {
    #[inline]
    pub(crate) fn new() -> OutArray {
        OutArray(Handle(Array::new_raw()))
    }

    #[inline]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut sys::mlx_array {
        &mut self.0 .0
    }

    #[inline]
    pub(crate) fn into_array(self) -> Array {
        Array::from_handle(self.0)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the last owner releases the handle once (a null `ctx` is a no-op).
        unsafe { sys::mlx_array_free(self.0) };
    }
}

impl Array {
    /// Wraps a raw handle, taking ownership of it. The one `unsafe` raw-handle function: every
    /// other handle type follows the same rule (`from_raw` unsafe, `as_raw` safe).
    ///
    /// # Safety
    /// `raw` must be a valid `mlx_array` handle that nothing else will free: the returned
    /// `Array` frees it on drop.
    pub unsafe fn from_raw(raw: sys::mlx_array) -> Array {
        Array::from_handle(Handle(raw))
    }

    #[inline]
    fn from_handle(handle: Handle) -> Array {
        let ctx = handle.0.ctx.cast::<u8>();
        debug_assert_eq!(ctx as usize & SHARED, 0, "mlx-c handles are aligned");
        // The `Array` owns the handle from here (freed in its `Drop`).
        std::mem::forget(handle);
        Array {
            ptr: Cell::new(ctx),
        }
    }

    /// The shared handle of a tagged pointer.
    #[inline]
    fn shared(ptr: *mut u8) -> *const Handle {
        ptr.wrapping_sub(SHARED).cast::<Handle>().cast_const()
    }

    /// The raw handle, still owned by `self`, for calling `mlx_sys` directly. Safe to get:
    /// using it needs `unsafe` mlx-sys calls, whose contract is that the handle is not freed
    /// and not used after `self` is dropped.
    #[inline]
    pub fn as_raw(&self) -> sys::mlx_array {
        let ptr = self.ptr.get();
        if ptr as usize & SHARED == 0 {
            sys::mlx_array { ctx: ptr.cast() }
        } else {
            // SAFETY: an odd pointer is a live `Arc<Handle>` this array holds one count of.
            unsafe { (*Array::shared(ptr)).0 }
        }
    }

    /// A new empty mlx-c handle (no allocation in mlx-c: its `ctx` is null until filled).
    #[inline]
    fn new_raw() -> sys::mlx_array {
        crate::error::init();
        // SAFETY: mlx_array_new has no preconditions and allocates nothing.
        unsafe { sys::mlx_array_new() }
    }

    /// Runs an mlx-c call that writes its result into `*mut mlx_array`.
    #[inline]
    pub(crate) fn try_from_op(op: impl FnOnce(*mut sys::mlx_array) -> i32) -> Result<Array> {
        let out = Array::try_from_view_op(op)?;
        crate::memory::check_fits(&out)?;
        Ok(out)
    }

    /// [`Array::try_from_op`] for an op whose result allocates nothing of its size (a
    /// broadcast view), so its size is not checked against the machine's memory.
    pub(crate) fn try_from_view_op(op: impl FnOnce(*mut sys::mlx_array) -> i32) -> Result<Array> {
        let mut out = OutArray::new();
        check(|| op(out.as_mut_ptr()))?;
        Ok(out.into_array())
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
            let ndim = sys::mlx_array_ndim(self.as_raw());
            if ndim == 0 {
                return &[];
            }
            std::slice::from_raw_parts(sys::mlx_array_shape(self.as_raw()), ndim)
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
        unsafe { sys::mlx_array_ndim(self.as_raw()) }
    }

    /// Number of elements (Python: `a.size`).
    pub fn size(&self) -> usize {
        // SAFETY: valid handle.
        unsafe { sys::mlx_array_size(self.as_raw()) }
    }

    /// Bytes the elements occupy (Python: `a.nbytes`).
    pub fn nbytes(&self) -> usize {
        // SAFETY: valid handle.
        unsafe { sys::mlx_array_nbytes(self.as_raw()) }
    }

    /// Bytes per element (Python: `a.itemsize`).
    pub fn itemsize(&self) -> usize {
        // SAFETY: valid handle.
        unsafe { sys::mlx_array_itemsize(self.as_raw()) }
    }

    /// The element type (Python: `a.dtype`).
    pub fn dtype(&self) -> Dtype {
        // SAFETY: valid handle.
        Dtype::from_raw(unsafe { sys::mlx_array_dtype(self.as_raw()) })
    }

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

    /// Computes the array (Python: `mx.eval(a)`); see also [`crate::eval`] for several at once.
    ///
    /// On return the array is *settled*: computed, waited for and detached from its graph, so
    /// later reads of it from any thread only read MLX's shared state (see the type docs).
    pub fn eval(&self) -> Result<()> {
        crate::distributed::lost::refuse_pending(&[self])?;
        crate::io::failed_reads::guard_eval(&[self], || {
            encode::evaluate(
                || {
                    let vec = VectorArray::from_arrays([self]);
                    // SAFETY: valid vector handle.
                    check(|| unsafe { sys::mlx_async_eval(vec.0) })
                },
                // SAFETY: valid handle.
                || check(|| unsafe { sys::mlx_array_eval(self.as_raw()) }),
            )?;
            self.settle()
        })
    }

    /// Moves an evaluated array from MLX's "evaluated" to its "available" state. MLX does that
    /// lazily, writing the array's status and event on the first query; doing it here, on the
    /// thread that owns the graph, keeps those writes off every other thread.
    fn settle(&self) -> Result<()> {
        // SAFETY: valid handle of an evaluated array; waiting returns at once when it is ready.
        check(|| unsafe { sys::_mlx_array_wait(self.as_raw()) })
    }

    /// The array's identity (MLX's `array::id()`): every clone of an array has the same id,
    /// and no two arrays alive at once share one. An array that derives from another (`a.t()`,
    /// `a.astype(..)`, even `a.reshape(a.shape())`) is a new array with a new id.
    ///
    /// ```
    /// use mlx_rs::Array;
    /// let a = Array::from_slice(&[1.0f32, 2.0], &[2])?;
    /// assert_eq!(a.id()?, a.clone().id()?);
    /// assert_ne!(a.id()?, a.t()?.id()?);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn id(&self) -> Result<usize> {
        let mut id = 0usize;
        // SAFETY: valid handle; writes one integer.
        check(|| unsafe { sys::_mlx_array_id(&mut id, self.as_raw()) })?;
        Ok(id)
    }

    /// Whether MLX has not scheduled the array for evaluation yet (it is part of a graph that
    /// no eval has reached).
    pub(crate) fn is_unscheduled(&self) -> Result<bool> {
        let mut status = 0;
        // SAFETY: valid handle; writes one integer.
        check(|| unsafe { sys::_mlx_array_status(&mut status, self.as_raw()) })?;
        Ok(status == 0)
    }

    /// The arrays this one is computed from and its sibling outputs (empty once it is
    /// evaluated and detached from its graph).
    pub(crate) fn graph_neighbours(&self) -> Result<Vec<Array>> {
        let mut inputs = VectorArray::new();
        // SAFETY: valid handles; mlx-c fills the vector we own.
        check(|| unsafe { sys::_mlx_array_inputs(&mut inputs.0, self.as_raw()) })?;
        let mut siblings = VectorArray::new();
        // SAFETY: as above.
        check(|| unsafe { sys::_mlx_array_siblings(&mut siblings.0, self.as_raw()) })?;
        let mut out = inputs.to_vec()?;
        out.extend(siblings.to_vec()?);
        Ok(out)
    }

    /// The name of the primitive that computes the array (MLX's `primitive().name()`, e.g.
    /// `"Sum AllReduce"`); empty once it is evaluated and detached, or for data.
    pub(crate) fn primitive_name(&self) -> Result<String> {
        // SAFETY: valid handle; mlx-c fills the string MlxString owns.
        MlxString::fill(|out| unsafe { sys::_mlx_array_primitive_name(out, self.as_raw()) })
    }

    /// Drops the array's primitive, inputs and siblings (MLX's `array::detach()`). Only for an
    /// unscheduled array of this thread's graph: no evaluation is using it.
    pub(crate) fn detach_unscheduled(&self) -> Result<()> {
        // SAFETY: valid handle; MLX only resets the array's own graph links.
        check(|| unsafe { sys::_mlx_array_detach(self.as_raw()) })
    }

    /// Whether the data is computed and ready to read without waiting.
    pub fn is_evaluated(&self) -> bool {
        let mut ready = false;
        // SAFETY: valid handle; writes one bool.
        check(|| unsafe { sys::_mlx_array_is_available(&mut ready, self.as_raw()) }).is_ok()
            && ready
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

    /// A copy converted to `dtype` (Python: `a.astype(dtype)`).
    pub fn astype(&self, dtype: Dtype) -> Result<Array> {
        // SAFETY: valid handles; mlx-c writes a new array into `res`.
        Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_astype(res, self.as_raw(), dtype.to_raw(), s)
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
        let ptr = check_handler(|| unsafe { sys::mlx_array_data_uint8(self.as_raw()) })?;
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

impl Clone for Array {
    #[inline]
    fn clone(&self) -> Array {
        let ptr = self.ptr.get();
        let shared = if ptr as usize & SHARED == 0 {
            // First clone: the handle moves behind a reference count, shared from now on.
            let handle = Handle(sys::mlx_array { ctx: ptr.cast() });
            let shared = Arc::into_raw(Arc::new(handle));
            self.ptr
                .set(shared.cast::<u8>().cast_mut().wrapping_add(SHARED));
            shared
        } else {
            Array::shared(ptr)
        };
        // SAFETY: `shared` is a live `Arc<Handle>` (this array holds one count); the new
        // `Array` owns the count added here and gives it back in its `Drop`.
        unsafe { Arc::increment_strong_count(shared) };
        Array {
            ptr: Cell::new(shared.cast::<u8>().cast_mut().wrapping_add(SHARED)),
        }
    }
}

impl Drop for Array {
    #[inline]
    fn drop(&mut self) {
        let ptr = self.ptr.get();
        if ptr as usize & SHARED == 0 {
            // SAFETY: an owned handle, released once (a null `ctx` is a no-op).
            unsafe { sys::mlx_array_free(sys::mlx_array { ctx: ptr.cast() }) };
        } else {
            // SAFETY: gives back the one count of the `Arc<Handle>` this array holds; the last
            // one frees the handle (`Handle`'s `Drop`).
            drop(unsafe { Arc::from_raw(Array::shared(ptr)) });
        }
    }
}

// SAFETY: an owned handle is a pointer to a C++ `mlx::core::array` that only this `Array`
// refers to, and a shared one an `Arc<Handle>` (`Send + Sync`, see `Handle`): moving either
// to another thread moves nothing that stays reachable here except through MLX's own
// reference counting, as before; the type docs give the rules for MLX's shared state.
unsafe impl Send for Array {}

impl fmt::Display for Array {
    /// Prints like Python MLX (`array([1, 2], dtype=int32)`). Evaluates the array.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Evaluated first, so a CUDA build encodes it under the lock (`encode`).
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
    let arrays: Vec<&Array> = arrays.into_iter().collect();
    crate::distributed::lost::refuse_pending(&arrays)?;
    crate::io::failed_reads::guard_eval(&arrays, || {
        let vec = VectorArray::from_arrays(arrays.iter().copied());
        encode::evaluate(
            // SAFETY: valid vector handle.
            || check(|| unsafe { sys::mlx_async_eval(vec.0) }),
            // SAFETY: valid vector handle; of arrays already scheduled, `mlx_eval` only waits.
            || check(|| unsafe { sys::mlx_eval(vec.0) }),
        )?;
        // Settled like `Array::eval`, so the results can be sent to other threads.
        arrays.iter().try_for_each(|a| a.settle())
    })
}

/// Starts computing arrays and returns at once (Python: `mx.async_eval`). Reading them later
/// (or [`eval`]) waits for the result.
pub fn async_eval<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Result<()> {
    let arrays: Vec<&Array> = arrays.into_iter().collect();
    crate::distributed::lost::refuse_pending(&arrays)?;
    crate::io::failed_reads::guard_async_eval(&arrays, || raw_async_eval(arrays.iter().copied()))
}

fn raw_async_eval<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Result<()> {
    let vec = VectorArray::from_arrays(arrays);
    // SAFETY: valid vector handle.
    encode::encoding(|| check(|| unsafe { sys::mlx_async_eval(vec.0) }))
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
