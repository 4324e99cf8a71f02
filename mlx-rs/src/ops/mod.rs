//! Array operations, named as in Python's `mlx.core`.
//!
//! Every Python parameter becomes a Rust parameter in the same order. Python defaults become
//! `Option`s (`None` means "Python's default"), axes take [`Axes`] (`None`, an `i32`, or a
//! slice), and where Python accepts a scalar in place of an array the Rust function takes
//! `impl IntoOperand` with Python's weak scalar typing. Ops run on the current stream
//! (see [`crate::with_stream`]).
//!
//! Most wrappers are generated from tables by the macros in this module, so each shape of
//! signature is written once.

mod args;
mod arithmetic;
mod creation;
mod logical;
mod math;
mod reduction;
mod shape;

pub use args::{Axes, IntoOperand, Operand, Scalar};
pub use arithmetic::*;
pub use creation::*;
pub use logical::*;
pub use math::*;
pub use reduction::*;
pub use shape::*;

/// `fn name(a) -> Result<Array>` for mlx-c functions `f(res, a, stream)`.
macro_rules! unary_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &$crate::Array) -> $crate::Result<$crate::Array> {
            // SAFETY: `a` is a valid handle for the call; mlx-c writes a new array into res.
            $crate::Array::try_from_stream_op(|res, s| unsafe {
                mlx_sys::$ffi(res, a.as_raw(), s)
            })
        }
    )*};
}

/// `fn name(a, b) -> Result<Array>` for mlx-c functions `f(res, a, b, stream)`; either side
/// may be a scalar, weakly typed as in Python.
macro_rules! binary_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name<'a>(
            a: impl $crate::ops::IntoOperand<'a>,
            b: impl $crate::ops::IntoOperand<'a>,
        ) -> $crate::Result<$crate::Array> {
            let (a, b) = $crate::ops::args::resolve_pair(a.into_operand(), b.into_operand());
            // SAFETY: both handles are valid for the call; mlx-c writes a new array into res.
            $crate::Array::try_from_stream_op(|res, s| unsafe {
                mlx_sys::$ffi(res, a.as_raw(), b.as_raw(), s)
            })
        }
    )*};
}

/// Reductions with Python's `(a, axis=None, keepdims=False)`, from the mlx-c trio
/// `f_axes(res, a, axes, n, keepdims, s)` and `f(res, a, keepdims, s)`.
macro_rules! reduction_ops {
    ($($(#[$doc:meta])* $name:ident => $all:ident, $axes:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name<'x>(
            a: &$crate::Array,
            axes: impl Into<$crate::ops::Axes<'x>>,
            keepdims: bool,
        ) -> $crate::Result<$crate::Array> {
            match axes.into() {
                // SAFETY: valid handle; mlx-c writes a new array into res.
                $crate::ops::Axes::All => $crate::Array::try_from_stream_op(|res, s| unsafe {
                    mlx_sys::$all(res, a.as_raw(), keepdims, s)
                }),
                // SAFETY: valid handle; `axes` outlives the call.
                $crate::ops::Axes::Some(axes) => $crate::Array::try_from_stream_op(|res, s| unsafe {
                    mlx_sys::$axes(res, a.as_raw(), axes.as_ptr(), axes.len(), keepdims, s)
                }),
            }
        }
    )*};
}

/// Methods on [`crate::Array`] that forward to the free functions above, for the ops Python
/// also has as methods (`a.sum(...)`, `a.reshape(...)`).
macro_rules! array_methods {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $(<$lt:lifetime>)?;)*) => {
        impl $crate::Array {$(
            $(#[$doc])*
            pub fn $name$(<$lt>)?(&self $(, $arg: $ty)*) -> $crate::Result<$crate::Array> {
                $crate::ops::$name(self $(, $arg)*)
            }
        )*}
    };
}

pub(crate) use {array_methods, binary_ops, reduction_ops, unary_ops};
