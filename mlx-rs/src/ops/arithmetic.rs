//! Element-wise arithmetic, `matmul`, and the operator impls (`+ - * / %`, unary `-`); `%` is
//! [`remainder`], guarded for integer zero divisors.

use mlx_sys as sys;

use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

use crate::ops::{array_methods, binary_ops, remainder, unary_ops};
use crate::{Array, Result};

binary_ops! {
    /// Element-wise `a + b` with broadcasting (Python: `mx.add`).
    add => sys::mlx_add;
    /// Element-wise `a - b` with broadcasting (Python: `mx.subtract`).
    subtract => sys::mlx_subtract;
    /// Element-wise `a * b` with broadcasting (Python: `mx.multiply`).
    multiply => sys::mlx_multiply;
    /// Element-wise true division with broadcasting (Python: `mx.divide`).
    divide => sys::mlx_divide;
    /// Matrix product with NumPy broadcasting of batch dimensions (Python: `mx.matmul`).
    matmul => sys::mlx_matmul;
}

unary_ops! {
    /// Element-wise `-a` (Python: `mx.negative`).
    negative => sys::mlx_negative;
}

array_methods! {
    /// Matrix product (Python: `a @ b`).
    fn matmul(other: &Array);
}

/// The `std::ops` operators mirror Python's `a + b`: either side may be an array (owned or
/// borrowed) or a scalar. Like Python, an invalid combination (shapes that do not broadcast)
/// is an exception, here a panic carrying MLX's message; call the named function
/// ([`add`], ...) to get a `Result` instead.
macro_rules! operator_impls {
    ($($trait:ident $method:ident => $func:ident;)*) => {$(
        impl<'a, R: crate::ops::IntoOperand<'a>> $trait<R> for &'a Array {
            type Output = Array;
            fn $method(self, rhs: R) -> Array {
                expect_op($func(self, rhs), stringify!($method))
            }
        }
        impl<'a, R: crate::ops::IntoOperand<'a>> $trait<R> for Array {
            type Output = Array;
            fn $method(self, rhs: R) -> Array {
                expect_op($func(self, rhs), stringify!($method))
            }
        }
        // One float and one integer type, so a bare literal (`1.0 - &a`) infers.
        operator_impls!(@scalars $trait $method $func: f32 i32);
    )*};
    (@scalars $trait:ident $method:ident $func:ident: $($scalar:ty)*) => {$(
        impl $trait<&Array> for $scalar {
            type Output = Array;
            fn $method(self, rhs: &Array) -> Array {
                expect_op($func(self, rhs), stringify!($method))
            }
        }
        impl $trait<Array> for $scalar {
            type Output = Array;
            fn $method(self, rhs: Array) -> Array {
                expect_op($func(self, rhs), stringify!($method))
            }
        }
    )*};
}

operator_impls! {
    Add add => add;
    Sub sub => subtract;
    Mul mul => multiply;
    Div div => divide;
    Rem rem => remainder;
}

impl Neg for &Array {
    type Output = Array;
    fn neg(self) -> Array {
        expect_op(negative(self), "neg")
    }
}

impl Neg for Array {
    type Output = Array;
    fn neg(self) -> Array {
        expect_op(negative(&self), "neg")
    }
}

#[track_caller]
fn expect_op(result: Result<Array>, op: &str) -> Array {
    match result {
        Ok(a) => a,
        Err(e) => panic!("operator `{op}` failed: {e}"),
    }
}
