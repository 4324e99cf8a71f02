//! Empty results without MLX's kernels.
//!
//! Some of MLX's CPU kernels divide by the length of an axis and kill the process with SIGFPE
//! when it is 0: `sort`/`argsort` and the scans along an empty axis, `linalg.inv`, `tri_inv`,
//! `lu` and `solve` of empty matrices (Python MLX 0.32.2 dies the same way). An op whose
//! result has no elements has one possible value, so the ops below return an empty array of
//! the shape and dtype MLX gives the result, without evaluating MLX's op.

use crate::{Array, Result};

/// `out`, or when it has no elements, an empty array of its shape and dtype (`out`, a lazy
/// result, is then never evaluated). For graphs built of several ops whose empty evaluation
/// MLX gets wrong (mlx-nn's upsampling on CUDA).
///
/// ```
/// use mlx_rs::ops;
/// let x = ops::zeros(&[3, 0], None)?;
/// let y = ops::unless_empty(ops::sort(&x, -1)?)?;
/// assert_eq!(y.shape(), &[3, 0]);
/// y.eval()?;
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn unless_empty(out: Array) -> Result<Array> {
    if out.size() == 0 {
        crate::ops::zeros(out.shape(), out.dtype())
    } else {
        Ok(out)
    }
}
