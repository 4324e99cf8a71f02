//! Elementwise ops of two inputs (arithmetic, comparisons, logic, bitwise) and `Select`.

use super::fold::Known;
use super::helpers::{
    binary_same, dtype_in, enum_in, n_inputs, n_outputs, no_uses, out_is, same_dtype, same_shape,
};
use super::range::Bounds;
use super::{Call, Dt, Field, Prim, Range, Uses, ValueUse};

pub(super) const PRIMS: &[Prim] = &[
    Prim::new("Add", &[], any).with_fold(|k| k.binary(|x, y| Some(x + y))),
    Prim::new("Subtract", &[], any).with_fold(|k| k.binary(|x, y| Some(x - y))),
    Prim::new("Multiply", &[], any).with_fold(|k| k.binary(|x, y| Some(x.wrapping_mul(y)))),
    Prim::new("Maximum", &[], any).with_fold(|k| k.binary(|x, y| Some(x.max(y)))),
    Prim::new("Minimum", &[], any).with_fold(|k| k.binary(|x, y| Some(x.min(y)))),
    Prim::new("Power", &[], any),
    Prim::new("LogicalAnd", &[], any)
        .with_fold(|k| k.binary(|x, y| Some(i128::from(x != 0 && y != 0)))),
    Prim::new("LogicalOr", &[], any)
        .with_fold(|k| k.binary(|x, y| Some(i128::from(x != 0 || y != 0)))),
    Prim::new("Divide", &[], divide).with_fold(|k| floor_div(k, false)),
    Prim::new("Remainder", &[], remainder)
        .with_range(remainder_range)
        .with_fold(|k| floor_div(k, true)),
    Prim::new("LogAddExp", &[], inexact),
    Prim::new("ArcTan2", &[], inexact),
    // The state says whether NaNs compare equal.
    Prim::new("Equal", &[Field::Bool], |c| {
        binary_same(c.ins, c.outs, Some(Dt::Bool))?;
        if c.st.flag(0) {
            let d = c.ins[0].dtype;
            dtype_in(d, d.is_inexact(), "the input", "a float or complex type")?;
        }
        no_uses()
    })
    .with_fold(|k| k.binary(|x, y| Some(i128::from(x == y)))),
    Prim::new("NotEqual", &[], compare).with_fold(|k| k.binary(|x, y| Some(i128::from(x != y)))),
    Prim::new("Greater", &[], compare).with_fold(|k| k.binary(|x, y| Some(i128::from(x > y)))),
    Prim::new("GreaterEqual", &[], compare)
        .with_fold(|k| k.binary(|x, y| Some(i128::from(x >= y)))),
    Prim::new("Less", &[], compare).with_fold(|k| k.binary(|x, y| Some(i128::from(x < y)))),
    Prim::new("LessEqual", &[], compare).with_fold(|k| k.binary(|x, y| Some(i128::from(x <= y)))),
    // The state is the operation: and, or, xor, left shift, right shift.
    Prim::new("BitwiseBinary", &[Field::I32], bitwise),
    Prim::new("DivMod", &[], div_mod),
    Prim::new("Select", &[], select).with_fold(select_fold),
];

fn any(c: &Call) -> Uses {
    binary_same(c.ins, c.outs, None)?;
    no_uses()
}

fn inexact(c: &Call) -> Uses {
    binary_same(c.ins, c.outs, None)?;
    let d = c.ins[0].dtype;
    dtype_in(d, d.is_inexact(), "the input", "a float or complex type")?;
    no_uses()
}

fn compare(c: &Call) -> Uses {
    binary_same(c.ins, c.outs, Some(Dt::Bool))?;
    no_uses()
}

/// An integer division's divisor must not be 0.
fn divisor(d: Dt) -> Vec<ValueUse> {
    if d.is_int() {
        vec![ValueUse::divisor(1, d)]
    } else {
        Vec::new()
    }
}

fn divide(c: &Call) -> Uses {
    binary_same(c.ins, c.outs, None)?;
    Ok(divisor(c.ins[0].dtype))
}

fn remainder(c: &Call) -> Uses {
    binary_same(c.ins, c.outs, None)?;
    let d = c.ins[0].dtype;
    dtype_in(d, d != Dt::C64, "the input", "a non-complex type")?;
    Ok(divisor(d))
}

fn bitwise(c: &Call) -> Uses {
    enum_in(c.st.int(0), 5, "bitwise operation")?;
    binary_same(c.ins, c.outs, None)?;
    let d = c.ins[0].dtype;
    dtype_in(
        d,
        d.is_int() || d == Dt::Bool,
        "the input",
        "an integer or bool type",
    )?;
    no_uses()
}

fn div_mod(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 2, 2)?;
    n_outputs(outs, 2)?;
    same_shape(ins[0], ins[1], "the inputs")?;
    same_dtype(ins[0], ins[1], "the inputs")?;
    let d = ins[0].dtype;
    dtype_in(d, d != Dt::C64, "the input", "a non-complex type")?;
    out_is(&outs[0], &ins[0].shape, d)?;
    out_is(&outs[1], &ins[0].shape, d)?;
    Ok(divisor(d))
}

fn select(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 3, 3)?;
    n_outputs(outs, 1)?;
    same_shape(ins[0], ins[1], "the inputs")?;
    same_shape(ins[0], ins[2], "the inputs")?;
    same_dtype(ins[1], ins[2], "the values")?;
    dtype_in(
        ins[0].dtype,
        ins[0].dtype == Dt::Bool,
        "the condition",
        "bool",
    )?;
    out_is(&outs[0], &ins[0].shape, ins[1].dtype)?;
    no_uses()
}

/// MLX's integer division floors (for signed types): the quotient, or the remainder with
/// `rem`. A zero divisor is reported by the divisor check, so the values are left unknown.
fn floor_div(k: &Known, rem: bool) -> Option<Vec<i128>> {
    let signed = k.signed();
    k.binary(|x, y| {
        if y == 0 {
            return None;
        }
        let (mut q, mut r) = (x / y, x % y);
        if signed && r != 0 && (r < 0) != (y < 0) {
            q -= 1;
            r += y;
        }
        Some(if rem { r } else { q })
    })
}

fn select_fold(k: &Known) -> Option<Vec<i128>> {
    let (c, a, b) = (k.first()?, k.at(1)?, k.at(2)?);
    Some(
        c.iter()
            .zip(a.iter().zip(b))
            .map(|(&c, (&x, &y))| if c != 0 { x } else { y })
            .collect(),
    )
}

/// MLX's integer remainder takes the divisor's sign: a dividend that can be anything (an
/// argument) leaves every value from 0 to the divisor's bound, exclusive.
fn remainder_range(b: &Bounds) -> Vec<Option<Range>> {
    b.one(match b.ranges.get(1).copied().flatten() {
        Some(_) if !b.args[0] => None,
        Some(d) if d.lo >= 1 => Some(Range {
            lo: 0,
            hi: d.hi - 1,
            free: true,
        }),
        Some(d) if d.hi <= -1 && b.ins[0].dtype.is_signed_int() => Some(Range {
            lo: d.lo + 1,
            hi: 0,
            free: true,
        }),
        _ => None,
    })
}
