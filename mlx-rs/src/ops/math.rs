//! Element-wise math: one table of unary ops, one of binary ops.

use mlx_sys as sys;

use crate::handles::VectorArray;
use crate::handles::{opt_array, opt_float};
use crate::ops::args::operand_array;
use crate::ops::args::resolve_pair;
use crate::ops::{binary_ops, unary_ops, Axes, AxesArg, IntoOperand, IntoOptionalOperand};
use crate::{Array, Dtype, Result};

unary_ops! {
    /// Element-wise absolute value (Python: `mx.abs`).
    abs => sys::mlx_abs;
    /// Element-wise inverse cosine (Python: `mx.arccos`).
    arccos => sys::mlx_arccos;
    /// Element-wise inverse hyperbolic cosine (Python: `mx.arccosh`).
    arccosh => sys::mlx_arccosh;
    /// Element-wise inverse sine (Python: `mx.arcsin`).
    arcsin => sys::mlx_arcsin;
    /// Element-wise inverse hyperbolic sine (Python: `mx.arcsinh`).
    arcsinh => sys::mlx_arcsinh;
    /// Element-wise inverse tangent (Python: `mx.arctan`).
    arctan => sys::mlx_arctan;
    /// Element-wise inverse hyperbolic tangent (Python: `mx.arctanh`).
    arctanh => sys::mlx_arctanh;
    /// Element-wise bitwise NOT of integers (Python: `mx.bitwise_invert`, `~a`).
    bitwise_invert => sys::mlx_bitwise_invert;
    /// Element-wise ceiling (Python: `mx.ceil`).
    ceil => sys::mlx_ceil;
    /// Element-wise complex conjugate (Python: `mx.conjugate`, `mx.conj`).
    conjugate => sys::mlx_conjugate;
    /// Element-wise cosine (Python: `mx.cos`).
    cos => sys::mlx_cos;
    /// Element-wise hyperbolic cosine (Python: `mx.cosh`).
    cosh => sys::mlx_cosh;
    /// Radians to degrees (Python: `mx.degrees`).
    degrees => sys::mlx_degrees;
    /// Element-wise error function (Python: `mx.erf`).
    erf => sys::mlx_erf;
    /// Element-wise inverse error function (Python: `mx.erfinv`).
    erfinv => sys::mlx_erfinv;
    /// Element-wise exponential (Python: `mx.exp`).
    exp => sys::mlx_exp;
    /// Element-wise `exp(a) - 1`, accurate near zero (Python: `mx.expm1`).
    expm1 => sys::mlx_expm1;
    /// Element-wise floor (Python: `mx.floor`).
    floor => sys::mlx_floor;
    /// Imaginary part of a complex array (Python: `mx.imag`).
    imag => sys::mlx_imag;
    /// Element-wise test for finite values (Python: `mx.isfinite`).
    isfinite => sys::mlx_isfinite;
    /// Element-wise test for infinities (Python: `mx.isinf`).
    isinf => sys::mlx_isinf;
    /// Element-wise test for NaN (Python: `mx.isnan`).
    isnan => sys::mlx_isnan;
    /// Element-wise test for negative infinity (Python: `mx.isneginf`).
    isneginf => sys::mlx_isneginf;
    /// Element-wise test for positive infinity (Python: `mx.isposinf`).
    isposinf => sys::mlx_isposinf;
    /// Element-wise natural logarithm (Python: `mx.log`).
    log => sys::mlx_log;
    /// Element-wise base-10 logarithm (Python: `mx.log10`).
    log10 => sys::mlx_log10;
    /// Element-wise `log(1 + a)`, accurate near zero (Python: `mx.log1p`).
    log1p => sys::mlx_log1p;
    /// Element-wise base-2 logarithm (Python: `mx.log2`).
    log2 => sys::mlx_log2;
    /// Element-wise logical NOT (Python: `mx.logical_not`).
    logical_not => sys::mlx_logical_not;
    /// Element-wise `+a`, a copy (Python: `mx.positive`).
    positive => sys::mlx_positive;
    /// Degrees to radians (Python: `mx.radians`).
    radians => sys::mlx_radians;
    /// Real part of a complex array (Python: `mx.real`).
    real => sys::mlx_real;
    /// Element-wise `1 / a` (Python: `mx.reciprocal`).
    reciprocal => sys::mlx_reciprocal;
    /// Element-wise `1 / sqrt(a)` (Python: `mx.rsqrt`).
    rsqrt => sys::mlx_rsqrt;
    /// Element-wise logistic sigmoid (Python: `mx.sigmoid`).
    sigmoid => sys::mlx_sigmoid;
    /// Element-wise sign (Python: `mx.sign`).
    sign => sys::mlx_sign;
    /// Element-wise sine (Python: `mx.sin`).
    sin => sys::mlx_sin;
    /// Element-wise hyperbolic sine (Python: `mx.sinh`).
    sinh => sys::mlx_sinh;
    /// Element-wise square root (Python: `mx.sqrt`).
    sqrt => sys::mlx_sqrt;
    /// Element-wise `a * a` (Python: `mx.square`).
    square => sys::mlx_square;
    /// The same values, with gradients blocked (Python: `mx.stop_gradient`).
    stop_gradient => sys::mlx_stop_gradient;
    /// Element-wise tangent (Python: `mx.tan`).
    tan => sys::mlx_tan;
    /// Element-wise hyperbolic tangent (Python: `mx.tanh`).
    tanh => sys::mlx_tanh;
    /// Element-wise truncation toward zero (Python: `mx.trunc`).
    trunc => sys::mlx_trunc;
    /// The same values in a buffer of its own (MLX's `copy`; Python has no name for it). MLX
    /// moves the buffer instead of copying when nothing else holds the input.
    copy => sys::mlx_copy;
}

binary_ops! {
    /// Element-wise `atan2(a, b)` (Python: `mx.arctan2`).
    arctan2 => sys::mlx_arctan2;
    /// Element-wise bitwise AND (Python: `mx.bitwise_and`, `a & b`).
    bitwise_and => sys::mlx_bitwise_and;
    /// Element-wise bitwise OR (Python: `mx.bitwise_or`, `a | b`).
    bitwise_or => sys::mlx_bitwise_or;
    /// Element-wise bitwise XOR (Python: `mx.bitwise_xor`, `a ^ b`).
    bitwise_xor => sys::mlx_bitwise_xor;
    /// Inner product over the last axes (Python: `mx.inner`).
    inner => sys::mlx_inner;
    /// Kronecker product (Python: `mx.kron`).
    kron => sys::mlx_kron;
    /// Element-wise `a << b` (Python: `mx.left_shift`).
    left_shift => sys::mlx_left_shift;
    /// Element-wise `log(exp(a) + exp(b))`, stable (Python: `mx.logaddexp`).
    logaddexp => sys::mlx_logaddexp;
    /// Element-wise maximum (Python: `mx.maximum`).
    maximum => sys::mlx_maximum;
    /// Element-wise minimum (Python: `mx.minimum`).
    minimum => sys::mlx_minimum;
    /// Outer product of flattened inputs (Python: `mx.outer`).
    outer => sys::mlx_outer;
    /// Element-wise `a ** b` (Python: `mx.power`).
    power => sys::mlx_power;
    /// Element-wise `a >> b` (Python: `mx.right_shift`).
    right_shift => sys::mlx_right_shift;
}

crate::ops::array_methods! {
    /// Element-wise absolute value (Python: `a.abs()`).
    fn abs();
    /// Complex conjugate (Python: `a.conj()`).
    fn conjugate();
    /// Element-wise cosine (Python: `a.cos()`).
    fn cos();
    /// Element-wise exponential (Python: `a.exp()`).
    fn exp();
    /// Element-wise natural logarithm (Python: `a.log()`).
    fn log();
    /// Element-wise base-10 logarithm (Python: `a.log10()`).
    fn log10();
    /// Element-wise `log(1 + a)` (Python: `a.log1p()`).
    fn log1p();
    /// Element-wise base-2 logarithm (Python: `a.log2()`).
    fn log2();
    /// Element-wise `1 / a` (Python: `a.reciprocal()`).
    fn reciprocal();
    /// Element-wise `1 / sqrt(a)` (Python: `a.rsqrt()`).
    fn rsqrt();
    /// Element-wise sine (Python: `a.sin()`).
    fn sin();
    /// Element-wise square root (Python: `a.sqrt()`).
    fn sqrt();
    /// Element-wise square (Python: `a.square()`).
    fn square();
}

/// Rounds to `decimals` places, halves to even (Python: `mx.round(a, decimals=0)`).
pub fn round(a: &Array, decimals: impl Into<Option<i32>>) -> Result<Array> {
    let decimals = decimals.into().unwrap_or(0);
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_round(res, a.as_raw(), decimals, s) })
}

/// Limits values to `[a_min, a_max]`; either bound may be `None` (not both), a scalar or an
/// array (Python: `mx.clip(a, a_min, a_max)`).
///
/// ```
/// use mlx_rs::{ops, Array};
/// let a = Array::from_slice(&[-2.0f32, 0.5, 3.0], &[3])?;
/// assert_eq!(ops::clip(&a, None, 1.0)?.to_vec::<f32>()?, vec![-2.0, 0.5, 1.0]);
/// assert_eq!(ops::clip(&a, 0.0, 1.0)?.to_vec::<f32>()?, vec![0.0, 0.5, 1.0]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn clip<'l, 'h>(
    a: &Array,
    a_min: impl IntoOptionalOperand<'l>,
    a_max: impl IntoOptionalOperand<'h>,
) -> Result<Array> {
    let lo = a_min
        .into_optional_operand()
        .map(|v| operand_array(v, Some(a.dtype())));
    let hi = a_max
        .into_optional_operand()
        .map(|v| operand_array(v, Some(a.dtype())));
    // SAFETY: valid or null handles.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_clip(
            res,
            a.as_raw(),
            opt_array(lo.as_ref()),
            opt_array(hi.as_ref()),
            s,
        )
    })
}

crate::options! {
    /// The keyword arguments of [`nan_to_num`], with Python's defaults (`nan=0`,
    /// `posinf=None`, `neginf=None`: the dtype's largest/lowest finite value).
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct NanToNumOptions {
        /// The value for NaN.
        nan: plain f32 = ::core::default::Default::default(),
        /// The value for +inf; `None` is the dtype's largest finite value.
        posinf: opt f32 = ::core::default::Default::default(),
        /// The value for -inf; `None` is the dtype's lowest finite value.
        neginf: opt f32 = ::core::default::Default::default(),
    }
}

/// Replaces NaN and infinities with finite values (Python: `mx.nan_to_num(a, nan=0,
/// posinf=None, neginf=None)`).
///
/// ```
/// use mlx_rs::{ops::{self, NanToNumOptions}, Array};
/// let a = Array::from_slice(&[f32::NAN, f32::INFINITY, 1.0], &[3])?;
/// let b = ops::nan_to_num(&a, NanToNumOptions::default().nan(-1.0).posinf(9.0))?;
/// assert_eq!(b.to_vec::<f32>()?, vec![-1.0, 9.0, 1.0]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn nan_to_num<'a>(a: impl IntoOperand<'a>, options: NanToNumOptions) -> Result<Array> {
    let a = operand_array(a, None);
    let NanToNumOptions {
        nan,
        posinf,
        neginf,
    } = options;
    let (posinf, neginf) = (opt_float(posinf), opt_float(neginf));
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_nan_to_num(res, a.as_raw(), nan, posinf, neginf, s)
    })
}

/// `exp(a) / sum(exp(a))` over `axis`; `None` uses every axis; `precise` (`None`: `false`)
/// computes in float32 for lower-precision inputs (Python: `mx.softmax(a, axis=None, *,
/// precise=False)`).
pub fn softmax<'x>(
    a: &Array,
    axis: impl Into<Axes<'x>>,
    precise: impl Into<Option<bool>>,
) -> Result<Array> {
    let precise = precise.into().unwrap_or(false);
    match axis.into().arg() {
        // SAFETY: valid handle; plain values.
        AxesArg::All => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_softmax(res, a.as_raw(), precise, s)
        }),
        // SAFETY: valid handle; plain values.
        AxesArg::One(ax) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_softmax_axis(res, a.as_raw(), ax, precise, s)
        }),
        // SAFETY: valid handle; `ax` outlives the call.
        AxesArg::Many(ax) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_softmax_axes(res, a.as_raw(), ax.as_ptr(), ax.len(), precise, s)
        }),
    }
}

crate::options! {
    /// The keyword arguments of [`isclose`] and [`allclose`] (also named [`AllcloseOptions`]),
    /// with Python's defaults (`rtol=1e-05`, `atol=1e-08`, `equal_nan=False`).
    ///
    /// ```
    /// use mlx_rs::ops::{self, AllcloseOptions};
    /// let (a, b) = (ops::zeros(&[3], None)?, ops::full(&[3], 1e-6, None)?);
    /// // mx.allclose(a, b, atol=1e-5)
    /// assert!(ops::allclose(&a, &b, AllcloseOptions::default().atol(1e-5))?.item::<bool>()?);
    /// assert!(!ops::allclose(&a, &b, Default::default())?.item::<bool>()?);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct IscloseOptions {
        /// The relative tolerance.
        rtol: plain f64 = 1e-5,
        /// The absolute tolerance.
        atol: plain f64 = 1e-8,
        /// Whether NaNs at the same position count as equal.
        equal_nan: plain bool = false,
    }
}

/// The options of [`allclose`]: the same keywords as [`isclose`].
pub type AllcloseOptions = IscloseOptions;

/// `fn name(a, b, IscloseOptions)` over `f(res, a, b, rtol, atol, equal_nan, s)`.
macro_rules! closeness_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:path;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, b: &Array, options: IscloseOptions) -> Result<Array> {
            let IscloseOptions { rtol, atol, equal_nan } = options;
            // SAFETY: valid handles; plain values.
            Array::try_from_stream_op(|res, s| unsafe {
                $ffi(res, a.as_raw(), b.as_raw(), rtol, atol, equal_nan, s)
            })
        }
    )*};
}

closeness_ops! {
    /// Element-wise `|a - b| <= atol + rtol * |b|` (Python: `mx.isclose(a, b, rtol=1e-05,
    /// atol=1e-08, *, equal_nan=False)`).
    isclose => sys::mlx_isclose;
    /// Whether every element is close, as a boolean scalar array (Python: `mx.allclose(a, b,
    /// rtol=1e-05, atol=1e-08, *, equal_nan=False)`).
    allclose => sys::mlx_allclose;
}

/// Same shape and equal values, as a boolean scalar array; dtypes may differ
/// (Python: `mx.array_equal(a, b, equal_nan=False)`); `equal_nan` `None` is `false`.
pub fn array_equal<'a>(
    a: impl IntoOperand<'a>,
    b: impl IntoOperand<'a>,
    equal_nan: impl Into<Option<bool>>,
) -> Result<Array> {
    let equal_nan = equal_nan.into().unwrap_or(false);
    let (a, b) = resolve_pair(a.into_operand(), b.into_operand());
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_array_equal(res, a.as_raw(), b.as_raw(), equal_nan, s)
    })
}

/// The `n`-th discrete difference along `axis` (Python: `mx.diff(a, n=1, axis=-1)`).
pub fn diff(a: &Array, n: impl Into<Option<i32>>, axis: impl Into<Option<i32>>) -> Result<Array> {
    let (n, axis) = (n.into().unwrap_or(1), axis.into().unwrap_or(-1));
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_diff(res, a.as_raw(), n, axis, s) })
}

/// The number of elements over `axes` (or over the other axes when `inverted`) as a scalar of
/// `dtype`, computed lazily so it works under shapeless compile (C++ `number_of_elements`).
pub fn number_of_elements(a: &Array, axes: &[i32], inverted: bool, dtype: Dtype) -> Result<Array> {
    // SAFETY: valid handle; `axes` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_number_of_elements(
            res,
            a.as_raw(),
            axes.as_ptr(),
            axes.len(),
            inverted,
            dtype.to_raw(),
            s,
        )
    })
}

/// `inputs` unchanged, but evaluated only after `dependencies` (Python: `mx.depends(inputs,
/// dependencies)`).
pub fn depends<'a, 'b>(
    inputs: impl IntoIterator<Item = &'a Array>,
    dependencies: impl IntoIterator<Item = &'b Array>,
) -> Result<Vec<Array>> {
    let (i, d) = (
        VectorArray::from_arrays(inputs),
        VectorArray::from_arrays(dependencies),
    );
    let mut out = VectorArray::new();
    // SAFETY: valid vector handles; mlx-c writes a new vector into `out`.
    crate::error::check(|| unsafe { sys::mlx_depends(&mut out.0, i.0, d.0) })?;
    out.to_vec()
}

crate::ops::array_methods! {
    /// Rounds to `decimals` places (Python: `a.round(decimals=0)`).
    fn round(decimals: impl Into<Option<i32>>);
}
