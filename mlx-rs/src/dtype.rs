//! Element types: [`Dtype`] and the Rust types that map onto it.

use std::fmt;

use half::{bf16, f16};
use num_complex::Complex32;

use mlx_sys as sys;

use crate::item::{sealed, ItemType};

/// The 14 element types of MLX, named as in Python (`mx.float32` is `Dtype::Float32`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    Bool,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Int8,
    Int16,
    Int32,
    Int64,
    Float16,
    Float32,
    Float64,
    Bfloat16,
    Complex64,
}

/// One table drives the conversions both ways and the Python names.
macro_rules! dtype_table {
    ($($variant:ident => $raw:ident, $name:literal, $size:literal;)*) => {
        impl Dtype {
            /// Every dtype, in MLX's enumeration order.
            pub const ALL: [Dtype; 14] = [$(Dtype::$variant),*];

            pub(crate) fn to_raw(self) -> sys::mlx_dtype {
                match self { $(Dtype::$variant => sys::$raw),* }
            }

            pub(crate) fn from_raw(raw: sys::mlx_dtype) -> Dtype {
                match raw {
                    $(sys::$raw => Dtype::$variant,)*
                    other => panic!("mlx-c returned unknown dtype {other}"),
                }
            }

            /// The name Python MLX prints (`float32`, `bfloat16`, ...).
            pub fn name(self) -> &'static str {
                match self { $(Dtype::$variant => $name),* }
            }

            /// Bytes per element.
            pub fn size(self) -> usize {
                match self { $(Dtype::$variant => $size),* }
            }
        }
    };
}

dtype_table! {
    Bool => MLX_BOOL, "bool", 1;
    Uint8 => MLX_UINT8, "uint8", 1;
    Uint16 => MLX_UINT16, "uint16", 2;
    Uint32 => MLX_UINT32, "uint32", 4;
    Uint64 => MLX_UINT64, "uint64", 8;
    Int8 => MLX_INT8, "int8", 1;
    Int16 => MLX_INT16, "int16", 2;
    Int32 => MLX_INT32, "int32", 4;
    Int64 => MLX_INT64, "int64", 8;
    Float16 => MLX_FLOAT16, "float16", 2;
    Float32 => MLX_FLOAT32, "float32", 4;
    Float64 => MLX_FLOAT64, "float64", 8;
    Bfloat16 => MLX_BFLOAT16, "bfloat16", 2;
    Complex64 => MLX_COMPLEX64, "complex64", 8;
}

impl Dtype {
    /// Floating point or complex (Python: `mx.issubdtype(d, mx.inexact)`).
    pub fn is_inexact(self) -> bool {
        self.is_floating() || self == Dtype::Complex64
    }

    /// Real floating point (Python: `mx.issubdtype(d, mx.floating)`).
    pub fn is_floating(self) -> bool {
        matches!(
            self,
            Dtype::Float16 | Dtype::Float32 | Dtype::Float64 | Dtype::Bfloat16
        )
    }

    /// Signed or unsigned integer (Python: `mx.issubdtype(d, mx.integer)`).
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            Dtype::Uint8
                | Dtype::Uint16
                | Dtype::Uint32
                | Dtype::Uint64
                | Dtype::Int8
                | Dtype::Int16
                | Dtype::Int32
                | Dtype::Int64
        )
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type whose values are stored in an MLX array without conversion.
///
/// Implemented for `bool`, the fixed-width integers, `f32`, `f64`, [`half::f16`],
/// [`half::bf16`] and [`num_complex::Complex32`]; sealed, because the layout must match MLX's.
pub trait ArrayElement: Copy + Send + Sync + sealed::Sealed + ItemType + 'static {
    /// The dtype of an array holding this type.
    const DTYPE: Dtype;
}

macro_rules! array_elements {
    ($($ty:ty => $dtype:ident),* $(,)?) => {$(
        impl sealed::Sealed for $ty {}
        impl ArrayElement for $ty {
            const DTYPE: Dtype = Dtype::$dtype;
        }
    )*};
}

array_elements! {
    bool => Bool, u8 => Uint8, u16 => Uint16, u32 => Uint32, u64 => Uint64,
    i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64,
    f16 => Float16, f32 => Float32, f64 => Float64, bf16 => Bfloat16, Complex32 => Complex64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_round_trip_and_sizes_match_mlx() {
        for d in Dtype::ALL {
            assert_eq!(Dtype::from_raw(d.to_raw()), d);
            // SAFETY: mlx_dtype_size is a pure lookup on a valid enum value.
            let size = unsafe { sys::mlx_dtype_size(d.to_raw()) };
            assert_eq!(size, d.size(), "{d}");
        }
    }

    #[test]
    fn rust_type_sizes_match_dtype_sizes() {
        fn check<T: ArrayElement>() {
            assert_eq!(std::mem::size_of::<T>(), T::DTYPE.size(), "{}", T::DTYPE);
        }
        check::<bool>();
        check::<u8>();
        check::<u16>();
        check::<u32>();
        check::<u64>();
        check::<i8>();
        check::<i16>();
        check::<i32>();
        check::<i64>();
        check::<f16>();
        check::<f32>();
        check::<f64>();
        check::<bf16>();
        check::<Complex32>();
    }
}
