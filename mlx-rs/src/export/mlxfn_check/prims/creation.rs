//! Ops that make an array from their state alone (`Arange`) or fill one (`Full`).

use super::fold;
use super::helpers::{dtype_in, n_inputs, n_outputs, no_uses, out_is, unary_same};
use super::range::Bounds;
use super::values::int_bounds;
use super::{Call, Dt, Field, Prim, Range, Uses};

use Field::*;

pub(super) const PRIMS: &[Prim] = &[
    // Start, stop, step.
    Prim::new("Arange", &[F64, F64, F64], arange).with_range(arange_range),
    // The input is the fill value, already broadcast to the output's shape.
    Prim::new("Full", &[], full).with_fold(fold::same),
];

fn arange(c: &Call) -> Uses {
    let (st, ins, outs) = (c.st, c.ins, c.outs);
    n_inputs(ins, 0, 0)?;
    n_outputs(outs, 1)?;
    let (start, stop, step) = (st.float(0), st.float(1), st.float(2));
    if !start.is_finite() || !stop.is_finite() || step.is_nan() || step == 0.0 {
        bail!("cannot compute the length of ({start}, {stop}, {step})");
    }
    let real = ((stop - start) / step).ceil();
    if real > f64::from(i32::MAX) {
        bail!("({start}, {stop}, {step}) is too long");
    }
    let d = outs[0].dtype;
    dtype_in(d, d != Dt::Bool, "the output", "a non-bool type")?;
    out_is(&outs[0], &[(real as i32).max(0)], d)?;
    no_uses()
}

/// The values MLX's CPU `arange` writes for an integer dtype: the start and the step are
/// converted to the dtype first (toward zero), then added up.
fn arange_range(b: &Bounds) -> Vec<Option<Range>> {
    b.one(arange_bounds(b))
}

fn arange_bounds(b: &Bounds) -> Option<Range> {
    let (st, out) = (b.st, b.outs[0]);
    let (lo, hi) = int_bounds(out.dtype)?;
    let n = i128::from(*out.shape.first()?);
    let (start, step) = (st.float(0), st.float(2));
    let convert = |x: f64| {
        let t = x.trunc();
        (t >= lo as f64 && t <= hi as f64).then_some(t as i128)
    };
    let first = convert(start)?;
    let step = convert(start + step)? - first;
    let last = first + (n - 1) * step;
    if n < 1 || last < lo || last > hi {
        return None;
    }
    Some(Range {
        lo: first.min(last),
        hi: first.max(last),
        free: false,
    })
}

fn full(c: &Call) -> Uses {
    unary_same(c.ins, c.outs)?;
    no_uses()
}
