//! Ops along axes: reductions, arg-reductions, scans, sorts and partitions, softmax,
//! logsumexp and `NumberOfElements`.

use super::helpers::{
    axis, dtype_in, enum_in, n_inputs, n_outputs, no_uses, out_is, sorted_axes, unary_same,
};
use super::range;
use super::{Call, Dt, Field, Prim, Uses};

use Field::*;

pub(super) const PRIMS: &[Prim] = &[
    // The reduction (and, or, sum, prod, min, max) and the axes.
    Prim::new("Reduce", &[I32, VecI32], reduce),
    // The reduction (argmin, argmax) and the axis.
    Prim::new("ArgReduce", &[I32, I32], arg_reduce).with_range(|b| b.one(b.axis_len(b.st.int(1)))),
    // The scan, the axis, reverse, inclusive.
    Prim::new("Scan", &[I32, I32, Bool, Bool], scan),
    // The axis.
    Prim::new("Sort", &[I32], |c| sort(c, 0, false)).with_range(range::same),
    Prim::new("ArgSort", &[I32], |c| sort(c, 0, true))
        .with_range(|b| b.one(b.axis_len(b.st.int(0)))),
    // kth and the axis.
    Prim::new("Partition", &[I32, I32], |c| sort(c, 1, false)).with_range(range::same),
    Prim::new("ArgPartition", &[I32, I32], |c| sort(c, 1, true))
        .with_range(|b| b.one(b.axis_len(b.st.int(1)))),
    // The state says whether it computes in high precision.
    Prim::new("Softmax", &[Bool], softmax),
    Prim::new("LogSumExp", &[], log_sum_exp),
    // Axes, inverted, the output dtype.
    Prim::new(
        "NumberOfElements",
        &[VecI32, Bool, Dtype],
        number_of_elements,
    ),
];

fn reduce(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    let ty = c.st.int(0);
    enum_in(ty, 6, "reduction")?;
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let a = ins[0];
    let axes = c.st.ints(1);
    sorted_axes(axes, a.ndim(), "axes")?;
    let mut shape = a.shape.clone();
    for &ax in axes {
        if ty >= 4 && shape[ax as usize] == 0 {
            bail!("min or max over axis {ax} of size 0");
        }
        shape[ax as usize] = 1;
    }
    let dtype = match ty {
        0 | 1 => Dt::Bool,
        2 | 3 => match a.dtype {
            Dt::Bool | Dt::I8 | Dt::I16 | Dt::I32 => Dt::I32,
            Dt::U8 | Dt::U16 | Dt::U32 => Dt::U32,
            d => d,
        },
        _ => a.dtype,
    };
    out_is(&outs[0], &shape, dtype)?;
    no_uses()
}

fn arg_reduce(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    enum_in(c.st.int(0), 2, "reduction")?;
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let ax = axis(c.st.int(1), ins[0].ndim(), "axis")?;
    if ins[0].size() == 0 {
        bail!("the input is empty");
    }
    let mut shape = ins[0].shape.clone();
    shape[ax] = 1;
    out_is(&outs[0], &shape, Dt::U32)?;
    no_uses()
}

fn scan(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    let ty = c.st.int(0);
    enum_in(ty, 5, "scan")?;
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let a = ins[0];
    let ax = axis(c.st.int(1), a.ndim(), "axis")?;
    // MLX 0.32.2's CPU scan divides by the axis size.
    if a.shape[ax] == 0 {
        bail!("scans an axis of size 0");
    }
    let dtype = if a.dtype == Dt::Bool && ty == 2 && outs[0].dtype == Dt::I32 {
        Dt::I32
    } else {
        a.dtype
    };
    out_is(&outs[0], &a.shape, dtype)?;
    no_uses()
}

/// A sort or partition along the axis in state field `ax_field` (a partition's kth is field
/// 0); `arg` gives the indices (`uint32`) rather than the values.
fn sort(c: &Call, ax_field: usize, arg: bool) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let a = ins[0];
    let dtype = if arg { Dt::U32 } else { a.dtype };
    let ax = axis(c.st.int(ax_field), a.ndim(), "axis")?;
    if ax_field == 1 {
        let kth = c.st.int(0);
        if kth < 0 || kth >= a.shape[ax] {
            bail!(
                "kth {kth} is out of range for an axis of size {}",
                a.shape[ax]
            );
        }
    }
    out_is(&outs[0], &a.shape, dtype)?;
    no_uses()
}

fn softmax(c: &Call) -> Uses {
    let ins = c.ins;
    unary_same(ins, c.outs)?;
    let d = ins[0].dtype;
    dtype_in(d, d.is_float(), "the input", "a real floating type")?;
    if ins[0].ndim() == 0 || ins[0].size() == 0 {
        bail!("the input {:?} is a scalar or empty", ins[0].shape);
    }
    no_uses()
}

fn log_sum_exp(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let a = ins[0];
    dtype_in(
        a.dtype,
        a.dtype.is_float(),
        "the input",
        "a real floating type",
    )?;
    if a.ndim() == 0 || a.size() == 0 {
        bail!("the input {:?} is a scalar or empty", a.shape);
    }
    let mut shape = a.shape.clone();
    *shape.last_mut().expect("ndim > 0") = 1;
    out_is(&outs[0], &shape, a.dtype)?;
    no_uses()
}

fn number_of_elements(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    for &a in c.st.ints(0) {
        axis(a, ins[0].ndim(), "axis")?;
    }
    out_is(&outs[0], &[], c.st.dtype(2))?;
    no_uses()
}
