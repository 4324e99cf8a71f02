//! Elementwise ops of one input: math functions, rounding, sign, complex parts and casts.

use super::fold::{self, Known};
use super::helpers::{dtype_in, enum_in, n_inputs, n_outputs, no_uses, out_is, unary_same};
use super::range::{self, Bounds};
use super::values::{int_bounds, to_dtype};
use super::{Call, Dt, Field, Prim, Range, Uses};

pub(super) const PRIMS: &[Prim] = &[
    Prim::new("Abs", &[], any).with_fold(|k| k.map(|v| to_dtype(v.abs(), k.dtype()))),
    Prim::new("Ceil", &[], any),
    Prim::new("Copy", &[], any)
        .moves()
        .with_range(range::same)
        .with_fold(fold::same),
    Prim::new("Floor", &[], any),
    Prim::new("LogicalNot", &[], any).with_fold(|k| k.map(|v| i128::from(v == 0))),
    Prim::new("Negative", &[], any).with_fold(|k| k.map(|v| to_dtype(-v, k.dtype()))),
    Prim::new("Round", &[], any),
    Prim::new("Sign", &[], any),
    Prim::new("Square", &[], any),
    Prim::new("StopGradient", &[], any)
        .moves()
        .with_range(range::same)
        .with_fold(fold::same),
    Prim::new("ArcCos", &[], inexact),
    Prim::new("ArcCosh", &[], inexact),
    Prim::new("ArcSin", &[], inexact),
    Prim::new("ArcSinh", &[], inexact),
    Prim::new("ArcTan", &[], inexact),
    Prim::new("ArcTanh", &[], inexact),
    Prim::new("Cos", &[], inexact),
    Prim::new("Cosh", &[], inexact),
    Prim::new("Exp", &[], inexact),
    Prim::new("Expm1", &[], inexact),
    Prim::new("Log1p", &[], inexact),
    Prim::new("Sigmoid", &[], inexact),
    Prim::new("Sin", &[], inexact),
    Prim::new("Sinh", &[], inexact),
    Prim::new("Tan", &[], inexact),
    Prim::new("Tanh", &[], inexact),
    // The state is the base (e, 2 or 10).
    Prim::new("Log", &[Field::I32], |c| {
        enum_in(c.st.int(0), 3, "logarithm base")?;
        inexact(c)
    }),
    // The state says whether it is `rsqrt`.
    Prim::new("Sqrt", &[Field::Bool], inexact),
    Prim::new("Erf", &[], real),
    Prim::new("ErfInv", &[], real),
    Prim::new("Conjugate", &[], conjugate),
    Prim::new("Real", &[], complex_part),
    Prim::new("Imag", &[], complex_part),
    Prim::new("AsType", &[Field::Dtype], as_type)
        .casts()
        .with_range(as_type_range)
        .with_fold(|k: &Known| k.map(|v| to_dtype(v, k.dtype()))),
];

/// Any dtype: the output is the input's shape and dtype.
fn any(c: &Call) -> Uses {
    unary_same(c.ins, c.outs)?;
    no_uses()
}

fn inexact(c: &Call) -> Uses {
    unary_same(c.ins, c.outs)?;
    let d = c.ins[0].dtype;
    dtype_in(d, d.is_inexact(), "the input", "a float or complex type")?;
    no_uses()
}

fn real(c: &Call) -> Uses {
    unary_same(c.ins, c.outs)?;
    let d = c.ins[0].dtype;
    dtype_in(d, d.is_float(), "the input", "a real floating type")?;
    no_uses()
}

fn conjugate(c: &Call) -> Uses {
    let ins = c.ins;
    unary_same(ins, c.outs)?;
    dtype_in(
        ins[0].dtype,
        ins[0].dtype == Dt::C64,
        "the input",
        "complex64",
    )?;
    no_uses()
}

fn complex_part(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    dtype_in(
        ins[0].dtype,
        ins[0].dtype == Dt::C64,
        "the input",
        "complex64",
    )?;
    out_is(&outs[0], &ins[0].shape, Dt::F32)?;
    no_uses()
}

fn as_type(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    out_is(&outs[0], &ins[0].shape, c.st.dtype(0))?;
    no_uses()
}

/// A cast keeps the bounds of an integer input that fit the new type.
fn as_type_range(b: &Bounds) -> Vec<Option<Range>> {
    let fits = b.first().filter(|r| {
        int_bounds(b.ins[0].dtype).is_some()
            && int_bounds(b.outs[0].dtype).is_some_and(|(lo, hi)| lo <= r.lo && r.hi <= hi)
    });
    b.one(fits)
}
