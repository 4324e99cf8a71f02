//! Shape manipulation.

use mlx_sys as sys;

use crate::ops::array_methods;
use crate::{Array, Result};

/// The same data with a new shape; one dimension may be `-1` (Python: `mx.reshape`).
pub fn reshape(a: &Array, shape: &[i32]) -> Result<Array> {
    // SAFETY: valid handle; `shape` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_reshape(res, a.as_raw(), shape.as_ptr(), shape.len(), s)
    })
}

/// Permutes the axes; `None` reverses them (Python: `mx.transpose(a, axes=None)`).
pub fn transpose<'x>(a: &Array, axes: impl Into<Option<&'x [i32]>>) -> Result<Array> {
    match axes.into() {
        // SAFETY: valid handle; mlx-c writes a new array into res.
        None => {
            Array::try_from_stream_op(|res, s| unsafe { sys::mlx_transpose(res, a.as_raw(), s) })
        }
        // SAFETY: valid handle; `axes` outlives the call.
        Some(axes) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_transpose_axes(res, a.as_raw(), axes.as_ptr(), axes.len(), s)
        }),
    }
}

array_methods! {
    /// The same data with a new shape (Python: `a.reshape(shape)`).
    fn reshape(shape: &[i32]);
    /// Permuted axes (Python: `a.transpose(axes)`).
    fn transpose(axes: impl Into<Option<&'x [i32]>>) <'x>;
}

impl Array {
    /// The transpose with all axes reversed (Python: `a.T`).
    pub fn t(&self) -> Result<Array> {
        transpose(self, None)
    }
}
