//! Argument types that let Rust calls read like Python's (`axis=None`, `axis=1`,
//! `axis=(0, 2)`, a scalar where an array is expected).

use std::borrow::Cow;

use num_complex::Complex32;

use crate::{Array, Dtype};

/// Which axes a reduction runs over (Python: `axis=None | int | tuple`).
///
/// Anything below converts: `None` (all axes), `1`, `-1`, `&[0, 2]`, `[0, 2]`, `vec![0, 2]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Axes<'a> {
    /// Every axis (Python: `axis=None`).
    All,
    /// One axis (Python: `axis=1`); negative values count from the end. Kept apart from
    /// `Some` so the common single-axis call allocates nothing.
    One(i32),
    /// Exactly these axes; negative values count from the end.
    Some(Cow<'a, [i32]>),
}

/// How an op hands [`Axes`] to mlx-c, which has separate entry points for all axes, one axis
/// and several axes.
pub(crate) enum AxesArg<'s> {
    All,
    One(i32),
    Many(&'s [i32]),
}

impl Axes<'_> {
    /// The axes as a slice; `None` for all axes.
    pub fn as_slice(&self) -> Option<&[i32]> {
        match self {
            Axes::All => None,
            Axes::One(axis) => Some(std::slice::from_ref(axis)),
            Axes::Some(axes) => Some(axes),
        }
    }

    pub(crate) fn arg(&self) -> AxesArg<'_> {
        match self {
            Axes::All => AxesArg::All,
            Axes::One(axis) => AxesArg::One(*axis),
            Axes::Some(axes) if axes.len() == 1 => AxesArg::One(axes[0]),
            Axes::Some(axes) => AxesArg::Many(axes),
        }
    }

    /// Python's `axis=None`.
    pub const ALL: Axes<'static> = Axes::All;
}

impl From<i32> for Axes<'_> {
    fn from(axis: i32) -> Self {
        Axes::One(axis)
    }
}

impl From<Option<i32>> for Axes<'_> {
    fn from(axis: Option<i32>) -> Self {
        axis.map_or(Axes::All, Axes::from)
    }
}

impl<'a> From<&'a [i32]> for Axes<'a> {
    fn from(axes: &'a [i32]) -> Self {
        Axes::Some(Cow::Borrowed(axes))
    }
}

impl<'a, const N: usize> From<&'a [i32; N]> for Axes<'a> {
    fn from(axes: &'a [i32; N]) -> Self {
        Axes::Some(Cow::Borrowed(axes))
    }
}

impl<const N: usize> From<[i32; N]> for Axes<'_> {
    fn from(axes: [i32; N]) -> Self {
        Axes::Some(Cow::Owned(axes.to_vec()))
    }
}

impl From<Vec<i32>> for Axes<'_> {
    fn from(axes: Vec<i32>) -> Self {
        Axes::Some(Cow::Owned(axes))
    }
}

impl<'a> From<&'a Vec<i32>> for Axes<'a> {
    fn from(axes: &'a Vec<i32>) -> Self {
        Axes::Some(Cow::Borrowed(axes.as_slice()))
    }
}

/// A Python scalar before it meets an array: it has a kind but no fixed dtype yet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
    Complex(Complex32),
}

impl Scalar {
    /// The dtype Python MLX gives this scalar next to an array of dtype `other`
    /// (scalars are "weakly typed": `float16_array * 2.0` stays float16, `int_array * 2.0`
    /// becomes float32, `uint8_array + 1` stays uint8).
    pub fn dtype_next_to(self, other: Option<Dtype>) -> Dtype {
        match (self, other) {
            (Scalar::Bool(_), _) => Dtype::Bool,
            (Scalar::Int(_), Some(d)) if d != Dtype::Bool => d,
            (Scalar::Int(_), _) => Dtype::Int32,
            (Scalar::Float(_), Some(d)) if d.is_inexact() => d,
            (Scalar::Float(_), _) => Dtype::Float32,
            (Scalar::Complex(_), _) => Dtype::Complex64,
        }
    }

    /// A 0-dimensional array of exactly `dtype` holding this value.
    pub fn to_array(self, dtype: Dtype) -> Array {
        use half::{bf16, f16};
        let (re, im) = match self {
            Scalar::Bool(b) => (b as u8 as f64, 0.0),
            Scalar::Int(i) => (i as f64, 0.0),
            Scalar::Float(f) => (f, 0.0),
            Scalar::Complex(c) => (c.re as f64, c.im as f64),
        };
        // Integers convert from the exact i64 so large values keep every bit.
        let int = match self {
            Scalar::Int(i) => i,
            _ => re as i64,
        };
        match dtype {
            Dtype::Bool => Array::from_scalar(re != 0.0 || im != 0.0),
            Dtype::Uint8 => Array::from_scalar(int as u8),
            Dtype::Uint16 => Array::from_scalar(int as u16),
            Dtype::Uint32 => Array::from_scalar(int as u32),
            Dtype::Uint64 => Array::from_scalar(int as u64),
            Dtype::Int8 => Array::from_scalar(int as i8),
            Dtype::Int16 => Array::from_scalar(int as i16),
            Dtype::Int32 => Array::from_scalar(int as i32),
            Dtype::Int64 => Array::from_scalar(int),
            Dtype::Float16 => Array::from_scalar(f16::from_f64(re)),
            Dtype::Float32 => Array::from_scalar(re as f32),
            Dtype::Float64 => Array::from_scalar(re),
            Dtype::Bfloat16 => Array::from_scalar(bf16::from_f64(re)),
            Dtype::Complex64 => Array::from_scalar(Complex32::new(re as f32, im as f32)),
        }
    }
}

macro_rules! scalar_from {
    ($($ty:ty => $variant:ident as $conv:ty),* $(,)?) => {$(
        impl From<$ty> for Scalar {
            fn from(v: $ty) -> Scalar {
                Scalar::$variant(v as $conv)
            }
        }
    )*};
}

scalar_from! {
    bool => Bool as bool,
    i8 => Int as i64, i16 => Int as i64, i32 => Int as i64, i64 => Int as i64,
    u8 => Int as i64, u16 => Int as i64, u32 => Int as i64,
    f32 => Float as f64, f64 => Float as f64,
}

impl From<Complex32> for Scalar {
    fn from(v: Complex32) -> Scalar {
        Scalar::Complex(v)
    }
}

/// An operand of an element-wise op: an array (borrowed or owned) or a weakly typed scalar.
#[derive(Debug, Clone)]
pub enum Operand<'a> {
    Array(Cow<'a, Array>),
    Scalar(Scalar),
}

/// Converts into an [`Operand`]: `&Array`, `Array`, and Rust scalars.
pub trait IntoOperand<'a> {
    fn into_operand(self) -> Operand<'a>;
}

impl<'a> IntoOperand<'a> for &'a Array {
    fn into_operand(self) -> Operand<'a> {
        Operand::Array(Cow::Borrowed(self))
    }
}

impl<'a> IntoOperand<'a> for Array {
    fn into_operand(self) -> Operand<'a> {
        Operand::Array(Cow::Owned(self))
    }
}

impl<'a> IntoOperand<'a> for Operand<'a> {
    fn into_operand(self) -> Operand<'a> {
        self
    }
}

impl<'a, T: Into<Scalar>> IntoOperand<'a> for T {
    fn into_operand(self) -> Operand<'a> {
        Operand::Scalar(self.into())
    }
}

impl<'a> Operand<'a> {
    fn dtype(&self) -> Option<Dtype> {
        match self {
            Operand::Array(a) => Some(a.dtype()),
            Operand::Scalar(_) => None,
        }
    }

    /// The operand as an array: arrays pass through; a scalar becomes `dtype` when given, else
    /// the dtype Python's weak typing gives it next to an array of dtype `like`.
    pub(crate) fn resolve(self, dtype: Option<Dtype>, like: Option<Dtype>) -> Cow<'a, Array> {
        match self {
            Operand::Array(a) => a,
            Operand::Scalar(s) => {
                Cow::Owned(s.to_array(dtype.unwrap_or_else(|| s.dtype_next_to(like))))
            }
        }
    }
}

/// Resolves two operands to arrays, giving scalars the dtype Python would.
pub(crate) fn resolve_pair<'a>(a: Operand<'a>, b: Operand<'a>) -> (Cow<'a, Array>, Cow<'a, Array>) {
    let (da, db) = (a.dtype(), b.dtype());
    (a.resolve(None, db), b.resolve(None, da))
}

/// Resolves an operand to an array; scalars take `like`'s dtype when they are weakly typed
/// against it (Python's `to_array(v, dtype)`).
pub(crate) fn operand_array<'a>(v: impl IntoOperand<'a>, like: Option<Dtype>) -> Array {
    v.into_operand().resolve(None, like).into_owned()
}

/// The axis of [`crate::ops::sort`] and its relatives, whose Python default is `-1` while
/// Python's `axis=None` means "flatten first". Converts from `None` (Python's default), an
/// `i32`, or `Axis::Flatten`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Axis {
    /// Python's default for the function (`-1`).
    #[default]
    Default,
    /// Python's `axis=None`: work on the flattened array.
    Flatten,
    /// This axis; negative values count from the end.
    Index(i32),
}

impl Axis {
    /// The axis to pass down, `None` for flatten.
    pub(crate) fn resolve(self, default: i32) -> Option<i32> {
        match self {
            Axis::Default => Some(default),
            Axis::Flatten => None,
            Axis::Index(i) => Some(i),
        }
    }
}

impl From<i32> for Axis {
    fn from(axis: i32) -> Self {
        Axis::Index(axis)
    }
}

impl From<Option<i32>> for Axis {
    fn from(axis: Option<i32>) -> Self {
        axis.map_or(Axis::Default, Axis::Index)
    }
}

/// An optional operand (Python: `scalar | array | None`): anything [`IntoOperand`], or
/// `None`.
pub trait IntoOptionalOperand<'a> {
    fn into_optional_operand(self) -> Option<Operand<'a>>;
}

impl<'a, T: IntoOperand<'a>> IntoOptionalOperand<'a> for T {
    fn into_optional_operand(self) -> Option<Operand<'a>> {
        Some(self.into_operand())
    }
}

impl<'a> IntoOptionalOperand<'a> for Option<&'a Array> {
    fn into_optional_operand(self) -> Option<Operand<'a>> {
        self.map(IntoOperand::into_operand)
    }
}
