//! What [`Array::item`](crate::Array::item) may return, and the value-preserving conversions
//! from an element, as read in its array's dtype, to the requested Rust type. Knows nothing of
//! arrays: `data.rs` reads the element.

use half::{bf16, f16};
use num_complex::Complex32;

/// Implemented by the element types only (`ArrayElement` requires it), so neither
/// [`ItemType`] nor `ArrayElement` can be implemented outside this crate.
pub(crate) mod sealed {
    pub trait Sealed {}
}

/// One element as read from the array in its own dtype, before conversion. Public only inside
/// this private module, so [`ItemType`] stays sealed.
#[derive(Debug, Clone, Copy)]
pub enum Scalar {
    Bool(bool),
    Int(i128),
    Float(f64),
    Complex(Complex32),
}

/// A Rust type [`Array::item`](crate::Array::item) can return: every
/// [`ArrayElement`](crate::ArrayElement) type plus `usize` and `isize`. See `item` for the
/// conversion rule.
pub trait ItemType: Copy + sealed::Sealed + FromScalar + 'static {}

/// The conversion behind [`ItemType`]; private, so no type outside this crate implements it.
pub trait FromScalar: Sized {
    /// The value as `Self`, or `None` when the conversion would change it.
    fn from_scalar(s: Scalar) -> Option<Self>;
}

impl<T: Copy + sealed::Sealed + FromScalar + 'static> ItemType for T {}

macro_rules! int_items {
    ($($ty:ty),*) => {$(
        impl FromScalar for $ty {
            fn from_scalar(s: Scalar) -> Option<Self> {
                match s {
                    Scalar::Bool(b) => Some(<$ty>::from(b)),
                    Scalar::Int(i) => <$ty>::try_from(i).ok(),
                    Scalar::Float(_) | Scalar::Complex(_) => None,
                }
            }
        }
    )*};
}

int_items!(u8, u16, u32, u64, i8, i16, i32, i64, usize, isize);

impl sealed::Sealed for usize {}
impl sealed::Sealed for isize {}

impl FromScalar for bool {
    fn from_scalar(s: Scalar) -> Option<Self> {
        match s {
            Scalar::Bool(b) => Some(b),
            _ => None,
        }
    }
}

/// A real value as f64 when that is exact (integers beyond 2^53 are not).
fn real_f64(s: Scalar) -> Option<f64> {
    match s {
        Scalar::Bool(b) => Some(f64::from(u8::from(b))),
        Scalar::Int(i) => {
            let f = i as f64;
            (f as i128 == i).then_some(f)
        }
        Scalar::Float(f) => Some(f),
        Scalar::Complex(_) => None,
    }
}

/// `f` as a narrower float type when the round trip gives `f` back (NaN stays NaN).
fn narrow<T: Copy>(f: f64, to: impl Fn(f64) -> T, back: impl Fn(T) -> f64) -> Option<T> {
    let t = to(f);
    let b = back(t);
    (b == f || (b.is_nan() && f.is_nan())).then_some(t)
}

impl FromScalar for f64 {
    fn from_scalar(s: Scalar) -> Option<Self> {
        real_f64(s)
    }
}

impl FromScalar for f32 {
    fn from_scalar(s: Scalar) -> Option<Self> {
        narrow(real_f64(s)?, |f| f as f32, f64::from)
    }
}

impl FromScalar for f16 {
    fn from_scalar(s: Scalar) -> Option<Self> {
        narrow(real_f64(s)?, f16::from_f64, f64::from)
    }
}

impl FromScalar for bf16 {
    fn from_scalar(s: Scalar) -> Option<Self> {
        narrow(real_f64(s)?, bf16::from_f64, f64::from)
    }
}

impl FromScalar for Complex32 {
    fn from_scalar(s: Scalar) -> Option<Self> {
        match s {
            Scalar::Complex(c) => Some(c),
            real => {
                let re = narrow(real_f64(real)?, |f| f as f32, f64::from)?;
                Some(Complex32::new(re, 0.0))
            }
        }
    }
}
