//! Owned wrappers for the mlx-c plumbing handles (strings, vectors of arrays) that never
//! appear in the public API: Rust types replace them there.

use std::collections::HashMap;

use mlx_sys as sys;

use crate::array::OutArray;
use crate::error::{check, Result};
use crate::{Array, Dtype};

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
    /// An empty vector for mlx-c to fill.
    pub(crate) fn new() -> Self {
        crate::error::init();
        // SAFETY: creates an empty handle; freed in Drop.
        VectorArray(unsafe { sys::mlx_vector_array_new() })
    }

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

impl VectorArray {
    /// The arrays in order, each an owned (refcounted) handle.
    pub(crate) fn to_vec(&self) -> Result<Vec<Array>> {
        arrays_from_raw(self.0)
    }
}

/// Copies the arrays of a vector handle mlx-c owns (refcount bumps, no data).
pub(crate) fn arrays_from_raw(vec: sys::mlx_vector_array) -> Result<Vec<Array>> {
    // SAFETY: `vec` is a valid vector handle for the duration of this call.
    let n = unsafe { sys::mlx_vector_array_size(vec) };
    // Filled by a loop, not `collect::<Result<Vec<_>>>()`: that collect cannot see the length
    // and regrows the vector, a measurable part of a compiled call with many outputs.
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: `i < n`; mlx-c makes `res` share the i-th array.
        out.push(Array::try_from_op(|res| unsafe {
            sys::mlx_vector_array_get(res, vec, i)
        })?);
    }
    Ok(out)
}

/// A null `mlx_array` handle: mlx-c reads it as "argument not given" where a parameter is
/// documented as "may be null".
pub(crate) fn null_array() -> sys::mlx_array {
    sys::mlx_array {
        ctx: std::ptr::null_mut(),
    }
}

/// The raw handle of an optional array, null when absent.
pub(crate) fn opt_array(a: Option<&Array>) -> sys::mlx_array {
    a.map_or_else(null_array, Array::as_raw)
}

/// mlx-c's optional scalars, from Rust `Option`s.
pub(crate) fn opt_int(v: Option<i32>) -> sys::mlx_optional_int {
    sys::mlx_optional_int {
        value: v.unwrap_or(0),
        has_value: v.is_some(),
    }
}

pub(crate) fn opt_float(v: Option<f32>) -> sys::mlx_optional_float {
    sys::mlx_optional_float {
        value: v.unwrap_or(0.0),
        has_value: v.is_some(),
    }
}

pub(crate) fn opt_dtype(v: Option<Dtype>) -> sys::mlx_optional_dtype {
    sys::mlx_optional_dtype {
        value: v.unwrap_or(Dtype::Float32).to_raw(),
        has_value: v.is_some(),
    }
}

/// A `&str` as a C string; interior NUL bytes are an `Err` instead of a silent truncation.
pub(crate) fn c_string(s: &str, what: &str) -> Result<std::ffi::CString> {
    std::ffi::CString::new(s)
        .map_err(|_| crate::Error::invalid(format!("{what} {s:?} contains a NUL byte")))
}

/// An owned `mlx_vector_string`.
pub(crate) struct VectorString(pub(crate) sys::mlx_vector_string);

impl VectorString {
    pub(crate) fn new() -> Self {
        crate::error::init();
        // SAFETY: creates an empty handle; freed in Drop.
        VectorString(unsafe { sys::mlx_vector_string_new() })
    }

    pub(crate) fn from_strs<S: AsRef<str>>(strings: &[S], what: &str) -> Result<Self> {
        let v = VectorString::new();
        for s in strings {
            let c = c_string(s.as_ref(), what)?;
            // SAFETY: valid handle; mlx-c copies the NUL-terminated string.
            check(|| unsafe { sys::mlx_vector_string_append_value(v.0, c.as_ptr()) })?;
        }
        Ok(v)
    }

    pub(crate) fn to_vec(&self) -> Result<Vec<String>> {
        // SAFETY: valid handle.
        let n = unsafe { sys::mlx_vector_string_size(self.0) };
        (0..n)
            .map(|i| {
                let mut ptr: *mut std::ffi::c_char = std::ptr::null_mut();
                // SAFETY: `i` is in bounds; mlx-c points `ptr` at a NUL-terminated string owned
                // by the vector, which we copy before the vector changes.
                check(|| unsafe { sys::mlx_vector_string_get(&mut ptr, self.0, i) })?;
                // SAFETY: non-null, NUL-terminated, alive while `self` is borrowed.
                Ok(unsafe { std::ffi::CStr::from_ptr(ptr) }
                    .to_string_lossy()
                    .into_owned())
            })
            .collect()
    }
}

impl Drop for VectorString {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_vector_string_free(self.0) };
    }
}

/// An owned `mlx_map_string_to_array`.
pub(crate) struct MapStringToArray(pub(crate) sys::mlx_map_string_to_array);

impl MapStringToArray {
    pub(crate) fn new() -> Self {
        crate::error::init();
        // SAFETY: creates an empty handle; freed in Drop.
        MapStringToArray(unsafe { sys::mlx_map_string_to_array_new() })
    }

    pub(crate) fn from_pairs<'a, K: AsRef<str> + 'a>(
        pairs: impl IntoIterator<Item = (&'a K, &'a Array)>,
    ) -> Result<Self> {
        let map = MapStringToArray::new();
        for (k, v) in pairs {
            let key = c_string(k.as_ref(), "array name")?;
            // SAFETY: valid handles; mlx-c copies the key and shares the array.
            check(|| unsafe {
                sys::mlx_map_string_to_array_insert(map.0, key.as_ptr(), v.as_raw())
            })?;
        }
        Ok(map)
    }

    pub(crate) fn to_hash_map(&self) -> Result<HashMap<String, Array>> {
        // SAFETY: valid map handle; the iterator is freed below, before the map.
        let it = unsafe { sys::mlx_map_string_to_array_iterator_new(self.0) };
        let mut out = HashMap::new();
        let result = loop {
            let mut key: *const std::ffi::c_char = std::ptr::null();
            let mut value = OutArray::new();
            // SAFETY: valid iterator; on success mlx-c points `key` into the map and writes a
            // new reference into `value`.
            let status = unsafe {
                sys::mlx_map_string_to_array_iterator_next(&mut key, value.as_mut_ptr(), it)
            };
            match status {
                0 => {
                    // SAFETY: non-null NUL-terminated key owned by the live map.
                    let k = unsafe { std::ffi::CStr::from_ptr(key) }
                        .to_string_lossy()
                        .into_owned();
                    out.insert(k, value.into_array());
                }
                2 => break Ok(out),
                _ => break Err(crate::error::last_error_or("iterating a map of arrays")),
            }
        };
        // SAFETY: we own the iterator and free it once.
        unsafe { sys::mlx_map_string_to_array_iterator_free(it) };
        result
    }
}

impl Drop for MapStringToArray {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_map_string_to_array_free(self.0) };
    }
}

/// An owned `mlx_map_string_to_string`.
pub(crate) struct MapStringToString(pub(crate) sys::mlx_map_string_to_string);

impl MapStringToString {
    pub(crate) fn new() -> Self {
        crate::error::init();
        // SAFETY: creates an empty handle; freed in Drop.
        MapStringToString(unsafe { sys::mlx_map_string_to_string_new() })
    }

    pub(crate) fn from_pairs<'a, K: AsRef<str> + 'a, V: AsRef<str> + 'a>(
        pairs: impl IntoIterator<Item = (&'a K, &'a V)>,
    ) -> Result<Self> {
        let map = MapStringToString::new();
        for (k, v) in pairs {
            let key = c_string(k.as_ref(), "metadata key")?;
            let value = c_string(v.as_ref(), "metadata value")?;
            // SAFETY: valid handle; mlx-c copies both strings.
            check(|| unsafe {
                sys::mlx_map_string_to_string_insert(map.0, key.as_ptr(), value.as_ptr())
            })?;
        }
        Ok(map)
    }

    pub(crate) fn to_hash_map(&self) -> Result<HashMap<String, String>> {
        // SAFETY: valid map handle; the iterator is freed below, before the map.
        let it = unsafe { sys::mlx_map_string_to_string_iterator_new(self.0) };
        let mut out = HashMap::new();
        let result = loop {
            let mut key: *const std::ffi::c_char = std::ptr::null();
            let mut value: *const std::ffi::c_char = std::ptr::null();
            crate::error::init();
            // SAFETY: valid iterator; on success mlx-c points both at strings in the map.
            let status =
                unsafe { sys::mlx_map_string_to_string_iterator_next(&mut key, &mut value, it) };
            match status {
                0 => {
                    // SAFETY: both non-null, NUL-terminated, owned by the live map.
                    let (k, v) = unsafe {
                        (
                            std::ffi::CStr::from_ptr(key).to_string_lossy().into_owned(),
                            std::ffi::CStr::from_ptr(value)
                                .to_string_lossy()
                                .into_owned(),
                        )
                    };
                    out.insert(k, v);
                }
                2 => break Ok(out),
                _ => break Err(crate::error::last_error_or("iterating a map of strings")),
            }
        };
        // SAFETY: we own the iterator and free it once.
        unsafe { sys::mlx_map_string_to_string_iterator_free(it) };
        result
    }
}

impl Drop for MapStringToString {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_map_string_to_string_free(self.0) };
    }
}

/// An owned `mlx_vector_stream`.
pub(crate) struct VectorStream(pub(crate) sys::mlx_vector_stream);

impl VectorStream {
    pub(crate) fn new() -> Self {
        crate::error::init();
        // SAFETY: creates an empty handle; freed in Drop.
        VectorStream(unsafe { sys::mlx_vector_stream_new() })
    }

    pub(crate) fn len(&self) -> usize {
        // SAFETY: valid handle.
        unsafe { sys::mlx_vector_stream_size(self.0) }
    }
}

impl Drop for VectorStream {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_vector_stream_free(self.0) };
    }
}
