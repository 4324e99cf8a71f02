//! Element-wise math: one table of unary ops, one of binary ops.

use crate::ops::{binary_ops, unary_ops};

unary_ops! {
    /// Element-wise absolute value (Python: `mx.abs`).
    abs => mlx_abs;
    /// Element-wise inverse cosine (Python: `mx.arccos`).
    arccos => mlx_arccos;
    /// Element-wise inverse hyperbolic cosine (Python: `mx.arccosh`).
    arccosh => mlx_arccosh;
    /// Element-wise inverse sine (Python: `mx.arcsin`).
    arcsin => mlx_arcsin;
    /// Element-wise inverse hyperbolic sine (Python: `mx.arcsinh`).
    arcsinh => mlx_arcsinh;
    /// Element-wise inverse tangent (Python: `mx.arctan`).
    arctan => mlx_arctan;
    /// Element-wise inverse hyperbolic tangent (Python: `mx.arctanh`).
    arctanh => mlx_arctanh;
    /// Element-wise bitwise NOT of integers (Python: `mx.bitwise_invert`, `~a`).
    bitwise_invert => mlx_bitwise_invert;
    /// Element-wise ceiling (Python: `mx.ceil`).
    ceil => mlx_ceil;
    /// Element-wise complex conjugate (Python: `mx.conjugate`, `mx.conj`).
    conjugate => mlx_conjugate;
    /// Element-wise cosine (Python: `mx.cos`).
    cos => mlx_cos;
    /// Element-wise hyperbolic cosine (Python: `mx.cosh`).
    cosh => mlx_cosh;
    /// Radians to degrees (Python: `mx.degrees`).
    degrees => mlx_degrees;
    /// Element-wise error function (Python: `mx.erf`).
    erf => mlx_erf;
    /// Element-wise inverse error function (Python: `mx.erfinv`).
    erfinv => mlx_erfinv;
    /// Element-wise exponential (Python: `mx.exp`).
    exp => mlx_exp;
    /// Element-wise `exp(a) - 1`, accurate near zero (Python: `mx.expm1`).
    expm1 => mlx_expm1;
    /// Element-wise floor (Python: `mx.floor`).
    floor => mlx_floor;
    /// Imaginary part of a complex array (Python: `mx.imag`).
    imag => mlx_imag;
    /// Element-wise test for finite values (Python: `mx.isfinite`).
    isfinite => mlx_isfinite;
    /// Element-wise test for infinities (Python: `mx.isinf`).
    isinf => mlx_isinf;
    /// Element-wise test for NaN (Python: `mx.isnan`).
    isnan => mlx_isnan;
    /// Element-wise test for negative infinity (Python: `mx.isneginf`).
    isneginf => mlx_isneginf;
    /// Element-wise test for positive infinity (Python: `mx.isposinf`).
    isposinf => mlx_isposinf;
    /// Element-wise natural logarithm (Python: `mx.log`).
    log => mlx_log;
    /// Element-wise base-10 logarithm (Python: `mx.log10`).
    log10 => mlx_log10;
    /// Element-wise `log(1 + a)`, accurate near zero (Python: `mx.log1p`).
    log1p => mlx_log1p;
    /// Element-wise base-2 logarithm (Python: `mx.log2`).
    log2 => mlx_log2;
    /// Element-wise logical NOT (Python: `mx.logical_not`).
    logical_not => mlx_logical_not;
    /// Element-wise `+a`, a copy (Python: `mx.positive`).
    positive => mlx_positive;
    /// Degrees to radians (Python: `mx.radians`).
    radians => mlx_radians;
    /// Real part of a complex array (Python: `mx.real`).
    real => mlx_real;
    /// Element-wise `1 / a` (Python: `mx.reciprocal`).
    reciprocal => mlx_reciprocal;
    /// Element-wise `1 / sqrt(a)` (Python: `mx.rsqrt`).
    rsqrt => mlx_rsqrt;
    /// Element-wise logistic sigmoid (Python: `mx.sigmoid`).
    sigmoid => mlx_sigmoid;
    /// Element-wise sign (Python: `mx.sign`).
    sign => mlx_sign;
    /// Element-wise sine (Python: `mx.sin`).
    sin => mlx_sin;
    /// Element-wise hyperbolic sine (Python: `mx.sinh`).
    sinh => mlx_sinh;
    /// Element-wise square root (Python: `mx.sqrt`).
    sqrt => mlx_sqrt;
    /// Element-wise `a * a` (Python: `mx.square`).
    square => mlx_square;
    /// The same values, with gradients blocked (Python: `mx.stop_gradient`).
    stop_gradient => mlx_stop_gradient;
    /// Element-wise tangent (Python: `mx.tan`).
    tan => mlx_tan;
    /// Element-wise hyperbolic tangent (Python: `mx.tanh`).
    tanh => mlx_tanh;
    /// Element-wise truncation toward zero (Python: `mx.trunc`).
    trunc => mlx_trunc;
    /// A copy of the array (Python: `mx.copy`).
    copy => mlx_copy;
    /// Zeros with the shape and dtype of `a` (Python: `mx.zeros_like`).
    zeros_like => mlx_zeros_like;
    /// Ones with the shape and dtype of `a` (Python: `mx.ones_like`).
    ones_like => mlx_ones_like;
}

binary_ops! {
    /// Element-wise `atan2(a, b)` (Python: `mx.arctan2`).
    arctan2 => mlx_arctan2;
    /// Element-wise bitwise AND (Python: `mx.bitwise_and`, `a & b`).
    bitwise_and => mlx_bitwise_and;
    /// Element-wise bitwise OR (Python: `mx.bitwise_or`, `a | b`).
    bitwise_or => mlx_bitwise_or;
    /// Element-wise bitwise XOR (Python: `mx.bitwise_xor`, `a ^ b`).
    bitwise_xor => mlx_bitwise_xor;
    /// Element-wise floor division (Python: `mx.floor_divide`, `a // b`).
    floor_divide => mlx_floor_divide;
    /// Inner product over the last axes (Python: `mx.inner`).
    inner => mlx_inner;
    /// Kronecker product (Python: `mx.kron`).
    kron => mlx_kron;
    /// Element-wise `a << b` (Python: `mx.left_shift`).
    left_shift => mlx_left_shift;
    /// Element-wise `log(exp(a) + exp(b))`, stable (Python: `mx.logaddexp`).
    logaddexp => mlx_logaddexp;
    /// Element-wise maximum (Python: `mx.maximum`).
    maximum => mlx_maximum;
    /// Element-wise minimum (Python: `mx.minimum`).
    minimum => mlx_minimum;
    /// Outer product of flattened inputs (Python: `mx.outer`).
    outer => mlx_outer;
    /// Element-wise `a ** b` (Python: `mx.power`).
    power => mlx_power;
    /// Element-wise `a >> b` (Python: `mx.right_shift`).
    right_shift => mlx_right_shift;
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
