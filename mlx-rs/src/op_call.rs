//! How an mlx-c op's output becomes an [`Array`]: checked against the machine's memory, and
//! run on the current stream.

use mlx_sys as sys;

use crate::array::{Array, OutArray};
use crate::error::{check, Result};

impl Array {
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
}
