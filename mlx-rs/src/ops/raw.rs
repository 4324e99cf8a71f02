//! Small conversions between Rust argument types and mlx-c's plumbing types, shared by the
//! op families (optional values, "may be null" arrays, C strings, vector results).

use std::ffi::CString;

use mlx_sys as sys;

use crate::error::check;
use crate::handles::VectorArray;
use crate::{Array, Dtype, Error, Result};

/// The null handle mlx-c reads as "no array" for parameters documented `/* may be null */`.
pub(crate) fn null_array() -> sys::mlx_array {
    sys::mlx_array {
        ctx: std::ptr::null_mut(),
    }
}

/// `Some(a)` as its handle, `None` as the null handle.
pub(crate) fn opt_array(a: Option<&Array>) -> sys::mlx_array {
    a.map_or_else(null_array, Array::as_raw)
}

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

/// A string argument as a C string; an interior NUL is an argument error, not a panic.
pub(crate) fn c_string(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid(format!("[{what}] string contains a NUL byte")))
}

/// Runs an mlx-c op that writes a vector of arrays, on the current stream.
pub(crate) fn vector_op(
    op: impl FnOnce(*mut sys::mlx_vector_array, sys::mlx_stream) -> i32,
) -> Result<Vec<Array>> {
    crate::stream::with_current_raw(|s| {
        let mut out = VectorArray::new();
        check(|| op(&mut out.0, s))?;
        out.to_arrays()
    })?
}
