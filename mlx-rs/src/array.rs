//! [`Array`]: an owned handle to an MLX array.

use std::cell::Cell;
use std::sync::Arc;

use mlx_sys as sys;

use crate::dtype::{ArrayElement, Dtype};
use crate::error::{check, check_handler, Error, Result};

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

    /// Whether the data is computed and ready to read without waiting.
    pub fn is_evaluated(&self) -> bool {
        let mut ready = false;
        // SAFETY: valid handle; writes one bool.
        check(|| unsafe { sys::_mlx_array_is_available(&mut ready, self.as_raw()) }).is_ok()
            && ready
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
