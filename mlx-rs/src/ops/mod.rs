//! Array operations, named as in Python's `mlx.core`.
//!
//! Every Python parameter becomes a Rust parameter in the same order. Python defaults become
//! `Option`s (`None` means "Python's default"), axes take [`Axes`] (`None`, an `i32`, or a
//! slice), and where Python accepts a scalar in place of an array the Rust function takes
//! `impl IntoOperand` with Python's weak scalar typing. Ops run on the current stream
//! (see [`crate::with_stream`]). `docs/porting.md` has the full name table and mapping rules.
//!
//! Most wrappers are generated from tables by the macros in this module, so each shape of
//! signature is written once. Where mlx-c has several entry points for one Python function
//! (`mlx_sum` / `mlx_sum_axis` / `mlx_sum_axes`), one Rust function dispatches among them.

mod args;
mod arithmetic;
pub mod bounds;
mod conv;
mod creation;
mod cumulative;
mod empty;
mod gather;
mod indexing;
mod int_division;
mod linear;
mod logical;
mod math;
mod options;
mod qmm_sm90;
mod quantize;
mod reduction;
mod shape;
mod sort;

pub(crate) use args::AxesArg;
pub use args::{Axes, Axis, IntoOperand, IntoOptionalOperand, Operand, Scalar};
pub use arithmetic::*;
pub use conv::*;
pub use creation::*;
pub use cumulative::*;
pub use empty::unless_empty;
pub use gather::*;
pub use indexing::*;
pub use int_division::*;
pub use linear::*;
pub use logical::*;
pub use math::*;
pub use quantize::*;
pub use reduction::*;
pub(crate) use shape::check_shape;
pub use shape::*;
pub use sort::*;

/// `fn name(a) -> Result<Array>` for mlx-c functions `f(res, a, stream)`.
macro_rules! unary_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:path;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &$crate::Array) -> $crate::Result<$crate::Array> {
            // SAFETY: `a` is a valid handle for the call; mlx-c writes a new array into res.
            $crate::Array::try_from_stream_op(|res, s| unsafe { $ffi(res, a.as_raw(), s) })
        }
    )*};
}

/// `fn name(a, b) -> Result<Array>` for mlx-c functions `f(res, a, b, stream)`; either side
/// may be a scalar, weakly typed as in Python.
macro_rules! binary_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:path;)*) => {$(
        $(#[$doc])*
        pub fn $name<'a>(
            a: impl $crate::ops::IntoOperand<'a>,
            b: impl $crate::ops::IntoOperand<'a>,
        ) -> $crate::Result<$crate::Array> {
            let (a, b) = $crate::ops::args::resolve_pair(a.into_operand(), b.into_operand());
            // SAFETY: both handles are valid for the call; mlx-c writes a new array into res.
            $crate::Array::try_from_stream_op(|res, s| unsafe {
                $ffi(res, a.as_raw(), b.as_raw(), s)
            })
        }
    )*};
}

/// Reductions with Python's `(a, axis=None, keepdims=False)`, dispatching to the mlx-c trio
/// `f(res, a, keepdims, s)`, `f_axis(res, a, axis, keepdims, s)`, `f_axes(res, a, axes, n, keepdims, s)`.
macro_rules! reduction_ops {
    ($($(#[$doc:meta])* $name:ident => $all:path, $axis:path, $axes:path;)*) => {$(
        $(#[$doc])*
        pub fn $name<'x>(
            a: &$crate::Array,
            axis: impl Into<$crate::ops::Axes<'x>>,
            keepdims: bool,
        ) -> $crate::Result<$crate::Array> {
            match axis.into().arg() {
                // SAFETY: valid handle; mlx-c writes a new array into res.
                $crate::ops::AxesArg::All => $crate::Array::try_from_stream_op(|res, s| unsafe {
                    $all(res, a.as_raw(), keepdims, s)
                }),
                $crate::ops::AxesArg::One(axes) => {
                    // SAFETY: valid handle; plain values.
                    $crate::Array::try_from_stream_op(|res, s| unsafe {
                        $axis(res, a.as_raw(), axes, keepdims, s)
                    })
                }
                // SAFETY: valid handle; `axes` outlives the call.
                $crate::ops::AxesArg::Many(axes) => $crate::Array::try_from_stream_op(|res, s| unsafe {
                    $axes(res, a.as_raw(), axes.as_ptr(), axes.len(), keepdims, s)
                }),
            }
        }
    )*};
}

/// Methods on [`crate::Array`] that forward to the free functions above, for the ops Python
/// also has as methods (`a.sum(...)`, `a.reshape(...)`).
macro_rules! array_methods {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $(<$lt:lifetime>)? $(-> $ret:ty)?;)*) => {
        impl $crate::Array {$(
            $(#[$doc])*
            pub fn $name$(<$lt>)?(&self $(, $arg: $ty)*) -> $crate::ops::array_methods!(@ret $($ret)?) {
                $crate::ops::$name(self $(, $arg)*)
            }
        )*}
    };
    (@ret) => { $crate::Result<$crate::Array> };
    (@ret $ret:ty) => { $ret };
}

pub(crate) use {array_methods, binary_ops, reduction_ops, unary_ops};
