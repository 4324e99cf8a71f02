//! Comparisons and logical ops; results are `bool` arrays.

use mlx_sys as sys;

use crate::ops::binary_ops;

binary_ops! {
    /// Element-wise `a == b` (Python: `mx.equal`).
    equal => sys::mlx_equal;
    /// Element-wise `a != b` (Python: `mx.not_equal`).
    not_equal => sys::mlx_not_equal;
    /// Element-wise `a > b` (Python: `mx.greater`).
    greater => sys::mlx_greater;
    /// Element-wise `a >= b` (Python: `mx.greater_equal`).
    greater_equal => sys::mlx_greater_equal;
    /// Element-wise `a < b` (Python: `mx.less`).
    less => sys::mlx_less;
    /// Element-wise `a <= b` (Python: `mx.less_equal`).
    less_equal => sys::mlx_less_equal;
    /// Element-wise logical AND (Python: `mx.logical_and`).
    logical_and => sys::mlx_logical_and;
    /// Element-wise logical OR (Python: `mx.logical_or`).
    logical_or => sys::mlx_logical_or;
    /// Element-wise logical XOR (Python: `mx.logical_xor`).
    logical_xor => sys::mlx_logical_xor;
}
