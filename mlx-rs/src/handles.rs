//! Owned wrappers for the mlx-c plumbing handles (strings, vectors of arrays) that never
//! appear in the public API: Rust types replace them there.

use mlx_sys as sys;

use crate::error::{check, Result};
use crate::Array;

/// An owned `mlx_string`.
pub(crate) struct MlxString(pub(crate) sys::mlx_string);

impl MlxString {
    pub(crate) fn new() -> Self {
        // SAFETY: creates an empty handle; freed in Drop.
        MlxString(unsafe { sys::mlx_string_new() })
    }

    /// Fills a new string with `fill` (an mlx-c call writing into `*mut mlx_string`).
    pub(crate) fn fill(fill: impl FnOnce(*mut sys::mlx_string) -> i32) -> Result<String> {
        let mut s = MlxString::new();
        check(|| fill(&mut s.0))?;
        Ok(s.to_string_lossy())
    }

    pub(crate) fn to_string_lossy(&self) -> String {
        // SAFETY: the handle is valid; mlx_string_data returns a NUL-terminated buffer owned by
        // the handle (or null for an empty handle), valid until the handle changes.
        let ptr = unsafe { sys::mlx_string_data(self.0) };
        if ptr.is_null() {
            return String::new();
        }
        // SAFETY: non-null, NUL-terminated, alive while `self` is borrowed.
        unsafe { std::ffi::CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned()
    }
}

impl Drop for MlxString {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_string_free(self.0) };
    }
}

/// An owned `mlx_vector_array`.
pub(crate) struct VectorArray(pub(crate) sys::mlx_vector_array);

impl VectorArray {
    /// Copies the handles (refcount bumps, no data) of `arrays` into a new vector.
    pub(crate) fn from_arrays<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Self {
        let raw: Vec<sys::mlx_array> = arrays.into_iter().map(|a| a.as_raw()).collect();
        // SAFETY: `raw` holds valid handles for the duration of the call; mlx-c copies them.
        VectorArray(unsafe { sys::mlx_vector_array_new_data(raw.as_ptr(), raw.len()) })
    }
}

impl Drop for VectorArray {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_vector_array_free(self.0) };
    }
}

// Reading results back out of a vector (ops that return several arrays).
impl VectorArray {
    /// An empty vector for mlx-c to fill.
    pub(crate) fn new() -> Self {
        // SAFETY: creates an empty handle; freed in Drop.
        VectorArray(unsafe { sys::mlx_vector_array_new() })
    }

    /// The arrays it holds, each as a new owned handle.
    pub(crate) fn to_arrays(&self) -> Result<Vec<Array>> {
        // SAFETY: valid vector handle.
        let n = unsafe { sys::mlx_vector_array_size(self.0) };
        (0..n)
            .map(|i| {
                // SAFETY: `i < n`; mlx-c writes a new reference into the result handle.
                Array::try_from_op(|res| unsafe { sys::mlx_vector_array_get(res, self.0, i) })
            })
            .collect()
    }
}
