//! Ops that take, replace or join parts of arrays: slices (static and dynamic), their
//! updates, `Concatenate`, `Pad` and `Split`.

use super::helpers::{
    axis, dtype_in, enum_in, n_inputs, n_outputs, no_uses, out_is, same_dtype, to_dim, unique_axes,
};
use super::range::{self, Bounds};
use super::{Call, Check, Field, Meta, Prim, Range, Uses, ValueUse};

use Field::*;

pub(super) const PRIMS: &[Prim] = &[
    // Start, stop and strides per axis.
    Prim::new("Slice", &[VecI32, VecI32, VecI32], slice).with_range(range::part),
    // The reduction, then start, stop and strides per axis.
    Prim::new("SliceUpdate", &[I32, VecI32, VecI32, VecI32], slice_update),
    // Axes and slice sizes.
    Prim::new("DynamicSlice", &[VecI32, VecI32], dynamic_slice).with_range(range::part),
    Prim::new("DynamicSliceUpdate", &[VecI32], dynamic_slice_update),
    Prim::new("Concatenate", &[I32], concatenate).with_range(concatenate_range),
    // Axes, low and high padding sizes.
    Prim::new("Pad", &[VecI32, VecI32, VecI32], pad),
    // Split indices and the axis.
    Prim::new("Split", &[VecI32, I32], split).with_range(|b| vec![b.part(); b.outs.len()]),
];

fn slice(c: &Call) -> Uses {
    let (st, ins, outs) = (c.st, c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    if outs[0].dtype != ins[0].dtype || outs[0].ndim() != ins[0].ndim() {
        bail!(
            "output {:?} {} does not match the input {:?} {}",
            outs[0].shape,
            outs[0].dtype,
            ins[0].shape,
            ins[0].dtype
        );
    }
    check_slice(
        &ins[0].shape,
        &outs[0].shape,
        st.ints(0),
        st.ints(1),
        st.ints(2),
    )?;
    no_uses()
}

fn slice_update(c: &Call) -> Uses {
    let (st, ins, outs) = (c.st, c.ins, c.outs);
    enum_in(st.int(0), 5, "reduction")?;
    n_inputs(ins, 2, 2)?;
    n_outputs(outs, 1)?;
    out_is(&outs[0], &ins[0].shape, ins[0].dtype)?;
    same_dtype(ins[0], ins[1], "the array and its update")?;
    if ins[1].ndim() != ins[0].ndim() {
        bail!(
            "the update has {} dimensions, the array {}",
            ins[1].ndim(),
            ins[0].ndim()
        );
    }
    check_slice(
        &ins[0].shape,
        &ins[1].shape,
        st.ints(1),
        st.ints(2),
        st.ints(3),
    )?;
    no_uses()
}

fn dynamic_slice(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 2, 2)?;
    n_outputs(outs, 1)?;
    let (axes, sizes) = (c.st.ints(0), c.st.ints(1));
    let a = ins[0];
    unique_axes(axes, a.ndim(), "axes")?;
    if sizes.len() != a.ndim() || sizes.iter().zip(&a.shape).any(|(&s, &d)| s < 0 || s > d) {
        bail!("slice size {sizes:?} does not fit the array {:?}", a.shape);
    }
    out_is(&outs[0], sizes, a.dtype)?;
    check_starts(ins[1], axes.len())?;
    let max = axes
        .iter()
        .map(|&ax| i64::from(a.shape[ax as usize] - sizes[ax as usize]))
        .collect();
    Ok(vec![ValueUse::start(1, ins[1].dtype, max)])
}

fn dynamic_slice_update(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 3, 3)?;
    n_outputs(outs, 1)?;
    let (a, upd) = (ins[0], ins[1]);
    out_is(&outs[0], &a.shape, a.dtype)?;
    same_dtype(a, upd, "the array and its update")?;
    let axes = c.st.ints(0);
    unique_axes(axes, a.ndim(), "axes")?;
    if upd.ndim() != a.ndim() || upd.shape.iter().zip(&a.shape).any(|(&u, &d)| u > d) {
        bail!(
            "the update {:?} does not fit the array {:?}",
            upd.shape,
            a.shape
        );
    }
    check_starts(ins[2], axes.len())?;
    let max = axes
        .iter()
        .map(|&ax| i64::from(a.shape[ax as usize] - upd.shape[ax as usize]))
        .collect();
    Ok(vec![ValueUse::start(2, ins[2].dtype, max)])
}

fn concatenate(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, usize::MAX)?;
    n_outputs(outs, 1)?;
    let ax = axis(c.st.int(0), ins[0].ndim(), "axis")?;
    let mut total = 0i64;
    for i in ins {
        same_dtype(ins[0], i, "the inputs")?;
        let mut a = i.shape.clone();
        let mut b = ins[0].shape.clone();
        if a.len() != b.len() {
            bail!("inputs {:?} and {:?} differ in rank", ins[0].shape, i.shape);
        }
        total += i64::from(a[ax]);
        a[ax] = 0;
        b[ax] = 0;
        if a != b {
            bail!(
                "inputs {:?} and {:?} differ off axis {ax}",
                ins[0].shape,
                i.shape
            );
        }
    }
    let mut shape = ins[0].shape.clone();
    shape[ax] = to_dim(total, "the result")?;
    out_is(&outs[0], &shape, ins[0].dtype)?;
    no_uses()
}

/// The joined bounds of all inputs, where every input has some.
fn concatenate_range(b: &Bounds) -> Vec<Option<Range>> {
    let all: Option<Vec<Range>> = b.ranges.iter().copied().collect();
    b.one(all.and_then(|rs| {
        rs.iter().copied().reduce(|a, b| Range {
            lo: a.lo.min(b.lo),
            hi: a.hi.max(b.hi),
            free: a.free && b.free,
        })
    }))
}

fn pad(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 2, 2)?;
    n_outputs(outs, 1)?;
    let (axes, lo, hi) = (c.st.ints(0), c.st.ints(1), c.st.ints(2));
    let a = ins[0];
    same_dtype(a, ins[1], "the array and the padding value")?;
    if ins[1].size() != 1 {
        bail!("the padding value has {} elements", ins[1].size());
    }
    if lo.len() != axes.len() || hi.len() != axes.len() {
        bail!(
            "{} axes with {} and {} padding sizes",
            axes.len(),
            lo.len(),
            hi.len()
        );
    }
    let n = a.ndim() as i64;
    let mut shape: Vec<i64> = a.shape.iter().map(|&d| i64::from(d)).collect();
    for ((&ax, &l), &h) in axes.iter().zip(lo).zip(hi) {
        let ax = i64::from(ax);
        if ax < -n || ax >= n || l < 0 || h < 0 {
            bail!("axis {ax} padded by ({l}, {h}) for {n} dimensions");
        }
        let ax = if ax < 0 { ax + n } else { ax } as usize;
        shape[ax] += i64::from(l) + i64::from(h);
    }
    let shape = shape
        .into_iter()
        .map(|d| to_dim(d, "the result"))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    out_is(&outs[0], &shape, a.dtype)?;
    no_uses()
}

fn split(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    let a = ins[0];
    let ax = axis(c.st.int(1), a.ndim(), "axis")?;
    let idx = c.st.ints(0);
    let n = a.shape[ax];
    let ok = !idx.is_empty()
        && idx.windows(2).all(|w| w[0] <= w[1])
        && idx[0] > 0
        && idx[idx.len() - 1] < n;
    if !ok {
        bail!("split indices {idx:?} do not split an axis of size {n}");
    }
    n_outputs(outs, idx.len() + 1)?;
    let mut bounds = vec![0];
    bounds.extend_from_slice(idx);
    bounds.push(n);
    for (o, w) in outs.iter().zip(bounds.windows(2)) {
        let mut shape = a.shape.clone();
        shape[ax] = w[1] - w[0];
        out_is(o, &shape, a.dtype)?;
    }
    no_uses()
}

/// A strided window of `input` with the shape `window`, as `normalize_slice` in MLX's `ops.cpp`
/// makes it: the window must be the one `start`, `stop` and `strides` select, and every
/// element it touches must be inside the input (the kernels read from `start` with `strides`
/// for the window's shape, ignoring `stop`).
fn check_slice(
    input: &[i32],
    window: &[i32],
    start: &[i32],
    stop: &[i32],
    strides: &[i32],
) -> Check {
    let n = input.len();
    if start.len() != n || stop.len() != n || strides.len() != n || window.len() != n {
        bail!(
            "{} starts, {} stops and {} strides for a window of {} dimensions into {n}",
            start.len(),
            stop.len(),
            strides.len(),
            window.len()
        );
    }
    for i in 0..n {
        let (len, w, s) = (
            i64::from(input[i]),
            i64::from(window[i]),
            i64::from(strides[i]),
        );
        let (st, sp) = (i64::from(start[i]), i64::from(stop[i]));
        if s == 0 {
            bail!("stride 0 on axis {i}");
        }
        if w > 0 {
            let last = st + (w - 1) * s;
            if st < 0 || st >= len || last < 0 || last >= len {
                bail!("axis {i} of size {len} is read from {st} to {last}");
            }
        }
        // MLX stores a stride of 1 wherever the window is one element long, so such an axis
        // no longer tells how many elements its original stride selected.
        if w == 1 && s == 1 {
            continue;
        }
        let e = if sp < 0 { sp + len } else { sp };
        let count = if s < 0 {
            let ed = e.max(-1).min(st);
            (st - ed + (-s) - 1) / (-s)
        } else {
            let ed = e.clamp(0, len).max(st);
            (ed - st + s - 1) / s
        };
        if w != count {
            bail!("axis {i} takes {w} elements, but ({st}, {sp}, {s}) selects {count}");
        }
    }
    Ok(())
}

/// A dynamic slice's start indices: integers, one per axis.
fn check_starts(start: &Meta, axes: usize) -> Check {
    dtype_in(
        start.dtype,
        start.dtype.is_int(),
        "the start indices",
        "an integer type",
    )?;
    if start.ndim() > 1 || start.size() != axes as i64 {
        bail!("start indices {:?} for {axes} axes", start.shape);
    }
    Ok(())
}
