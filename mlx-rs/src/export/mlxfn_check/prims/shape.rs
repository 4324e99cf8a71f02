//! Ops that give the same values another shape or layout: broadcasts, reshapes, axis moves,
//! strided views, dtype views, and `Depends`.

use super::fold;
use super::helpers::{
    axis, broadcast_shapes, broadcasts_to, n_inputs, n_outputs, no_uses, out_is, prod, sorted_axes,
    to_dim, unique_axes,
};
use super::range;
use super::{Call, Field, Meta, Prim, Uses};

use Field::*;

pub(super) const PRIMS: &[Prim] = &[
    Prim::new("Broadcast", &[VecI32], broadcast)
        .moves()
        .with_range(range::same)
        .with_fold(fold::broadcast),
    Prim::new("BroadcastAxes", &[VecI32], broadcast_axes)
        .moves()
        .with_range(range::same)
        .with_fold(fold::broadcast),
    Prim::new("Reshape", &[VecI32], reshape)
        .moves()
        .with_range(range::same)
        .with_fold(fold::same),
    Prim::new("Flatten", &[I32, I32], flatten)
        .moves()
        .with_range(range::same)
        .with_fold(fold::same),
    Prim::new("Unflatten", &[I32, VecI32], unflatten)
        .moves()
        .with_range(range::same)
        .with_fold(fold::same),
    Prim::new("ExpandDims", &[VecI32], expand_dims)
        .moves()
        .with_range(range::same)
        .with_fold(fold::same),
    Prim::new("Squeeze", &[VecI32], squeeze)
        .moves()
        .with_range(range::same)
        .with_fold(fold::same),
    Prim::new("Transpose", &[VecI32], transpose)
        .moves()
        .with_range(range::same)
        .with_fold(fold::transpose),
    Prim::new("AsStrided", &[VecI32, VecI64, U64], as_strided),
    Prim::new("View", &[Dtype], view),
    Prim::new("Depends", &[], depends),
];

fn broadcast(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, usize::MAX)?;
    n_outputs(outs, 1)?;
    let shape = c.st.ints(0);
    out_is(&outs[0], shape, ins[0].dtype)?;
    if !broadcasts_to(&ins[0].shape, shape) {
        bail!("cannot broadcast {:?} to {shape:?}", ins[0].shape);
    }
    // In a shapeless trace MLX gives each broadcast the other operands as extra
    // inputs, and recomputes the shape from all of them when the function is called.
    if ins.len() > 1 {
        let mut all = ins[0].shape.clone();
        for i in &ins[1..] {
            all = broadcast_shapes(&all, &i.shape)?;
        }
        if all != shape {
            bail!("its inputs broadcast to {all:?}, not {shape:?}");
        }
    }
    no_uses()
}

fn broadcast_axes(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, usize::MAX)?;
    n_outputs(outs, 1)?;
    let ignore = c.st.ints(0);
    if ignore.iter().any(|&a| a >= 0) || ignore.windows(2).any(|w| w[0] >= w[1]) {
        bail!("ignored axes {ignore:?} are not negative, sorted and unique");
    }
    let mut shape: Vec<i32> = Vec::new();
    for i in ins {
        let mut s = i.shape.clone();
        for &a in ignore.iter().rev() {
            let Ok(p) = usize::try_from(i.ndim() as i64 + i64::from(a)) else {
                bail!(
                    "ignored axis {a} is out of range for {} dimensions",
                    i.ndim()
                );
            };
            s.remove(p);
        }
        shape = broadcast_shapes(&shape, &s)?;
    }
    let dims = ignore.len() + shape.len();
    let n0 = ins[0].ndim() as i64;
    for &a in ignore {
        let at = (dims as i64 + i64::from(a)) as usize;
        shape.insert(at, ins[0].shape[(n0 + i64::from(a)) as usize]);
    }
    out_is(&outs[0], &shape, ins[0].dtype)?;
    if !broadcasts_to(&ins[0].shape, &shape) {
        bail!("cannot broadcast {:?} to {shape:?}", ins[0].shape);
    }
    no_uses()
}

fn reshape(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let shape = reshape_shape(ins[0], c.st.ints(0))?;
    out_is(&outs[0], &shape, ins[0].dtype)?;
    no_uses()
}

/// `Reshape::output_shape`: one `-1` may be inferred; the element count must not change.
fn reshape_shape(a: &Meta, want: &[i32]) -> std::result::Result<Vec<i32>, String> {
    let mut shape = want.to_vec();
    let mut infer = None;
    let mut size: i128 = 1;
    for (i, &d) in want.iter().enumerate() {
        match d {
            -1 if infer.is_none() => infer = Some(i),
            d if d >= 0 => size = size.saturating_mul(i128::from(d)),
            _ => bail!("cannot reshape to {want:?}"),
        }
    }
    let n = i128::from(a.size());
    if let Some(i) = infer {
        if size == 0 {
            bail!("cannot infer a dimension of {want:?} for an empty array");
        }
        let d = i32::try_from(n / size).map_err(|_| format!("cannot reshape to {want:?}"))?;
        shape[i] = d;
        size *= i128::from(d);
    }
    if size != n {
        bail!("cannot reshape {:?} to {want:?}", a.shape);
    }
    Ok(shape)
}

fn flatten(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let (s, e) = (c.st.int(0), c.st.int(1));
    let n = ins[0].ndim();
    if s < 0 || e < s || e as usize >= n {
        bail!("axes {s} to {e} are out of range for {n} dimensions");
    }
    let (s, e) = (s as usize, e as usize);
    let mut shape = ins[0].shape[..s].to_vec();
    shape.push(to_dim(prod(&ins[0].shape[s..=e]), "the flattened array")?);
    shape.extend_from_slice(&ins[0].shape[e + 1..]);
    out_is(&outs[0], &shape, ins[0].dtype)?;
    no_uses()
}

fn unflatten(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let ax = axis(c.st.int(0), ins[0].ndim(), "axis")?;
    let parts = c.st.ints(1);
    if parts.is_empty() || parts.iter().any(|&d| d < 0) {
        bail!("cannot unflatten into {parts:?}");
    }
    if prod(parts) != i64::from(ins[0].shape[ax]) {
        bail!("cannot unflatten {} into {parts:?}", ins[0].shape[ax]);
    }
    let mut shape = ins[0].shape[..ax].to_vec();
    shape.extend_from_slice(parts);
    shape.extend_from_slice(&ins[0].shape[ax + 1..]);
    out_is(&outs[0], &shape, ins[0].dtype)?;
    no_uses()
}

fn expand_dims(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let axes = c.st.ints(0);
    sorted_axes(axes, ins[0].ndim() + axes.len(), "axes")?;
    let mut shape = ins[0].shape.clone();
    for &a in axes {
        shape.insert(a as usize, 1);
    }
    out_is(&outs[0], &shape, ins[0].dtype)?;
    no_uses()
}

fn squeeze(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let axes = c.st.ints(0);
    sorted_axes(axes, ins[0].ndim(), "axes")?;
    if let Some(&a) = axes.iter().find(|&&a| ins[0].shape[a as usize] != 1) {
        bail!(
            "cannot squeeze axis {a} of size {}",
            ins[0].shape[a as usize]
        );
    }
    let shape: Vec<i32> = (0..ins[0].ndim())
        .filter(|i| !axes.contains(&(*i as i32)))
        .map(|i| ins[0].shape[i])
        .collect();
    out_is(&outs[0], &shape, ins[0].dtype)?;
    no_uses()
}

fn transpose(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let axes = c.st.ints(0);
    if axes.len() != ins[0].ndim() {
        bail!("{} axes for {} dimensions", axes.len(), ins[0].ndim());
    }
    unique_axes(axes, ins[0].ndim(), "axes")?;
    let shape: Vec<i32> = axes.iter().map(|&a| ins[0].shape[a as usize]).collect();
    out_is(&outs[0], &shape, ins[0].dtype)?;
    no_uses()
}

fn as_strided(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let (shape, strides, offset) = (c.st.ints(0), c.st.longs(1), c.st.uint(2));
    out_is(&outs[0], shape, ins[0].dtype)?;
    if strides.len() != shape.len() {
        bail!("{} strides for {} dimensions", strides.len(), shape.len());
    }
    if prod(shape) > 0 {
        let (mut low, mut high) = (i128::from(offset), i128::from(offset));
        for (&d, &s) in shape.iter().zip(strides) {
            let delta = i128::from(s) * i128::from(d - 1);
            if s < 0 {
                low += delta;
            } else {
                high += delta;
            }
        }
        if low < 0 || high >= i128::from(ins[0].size()) {
            bail!(
                "the view reaches elements {low} to {high} of an input of {}",
                ins[0].size()
            );
        }
    }
    no_uses()
}

fn view(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let (a, to) = (ins[0], c.st.dtype(0));
    let (ib, ob) = (i64::from(a.dtype.size()), i64::from(to.size()));
    let mut shape = a.shape.clone();
    if a.ndim() == 0 {
        if ib != ob {
            bail!("a scalar cannot change its element size");
        }
    } else {
        let last = shape.last_mut().expect("ndim > 0");
        if ib < ob {
            if i64::from(*last) % (ob / ib) != 0 {
                bail!(
                    "the last dimension {} is not a multiple of {}",
                    *last,
                    ob / ib
                );
            }
            *last /= (ob / ib) as i32;
        } else if ib > ob {
            *last = to_dim(i64::from(*last) * (ib / ob), "the view")?;
        }
    }
    out_is(&outs[0], &shape, to)?;
    no_uses()
}

/// The first outputs are the first inputs, passed through once the rest are computed.
fn depends(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    if outs.is_empty() || outs.len() > ins.len() {
        bail!("has {} outputs for {} inputs", outs.len(), ins.len());
    }
    for (o, i) in outs.iter().zip(ins) {
        out_is(o, &i.shape, i.dtype)?;
    }
    no_uses()
}
