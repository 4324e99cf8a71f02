//! Ops that read or write at positions an index array gives: gathers, scatters, masked
//! scatter and `SearchSorted`. Their indices are what the value checks are for: MLX's kernels
//! do not bound-check them.

use super::helpers::{
    axis, dtype_in, enum_in, n_inputs, n_outputs, no_uses, out_is, prod, same_dtype, same_shape,
    unique_axes,
};
use super::range;
use super::{Call, Check, Dt, Field, Meta, Prim, Uses, ValueUse};

use Field::*;

pub(super) const PRIMS: &[Prim] = &[
    // Axes and slice sizes.
    Prim::new("Gather", &[VecI32, VecI32], gather).with_range(range::part),
    Prim::new("GatherAxis", &[I32], gather_axis).with_range(range::part),
    // The reduction and the axes.
    Prim::new("Scatter", &[I32, VecI32], scatter),
    // The reduction and the axis.
    Prim::new("ScatterAxis", &[I32, I32], scatter_axis),
    Prim::new("MaskedScatter", &[], masked_scatter),
    // The state says whether the right side is taken.
    Prim::new("SearchSorted", &[Bool], search_sorted),
];

fn gather(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    let (axes, sizes) = (c.st.ints(0), c.st.ints(1));
    n_inputs(ins, 1 + axes.len(), 1 + axes.len())?;
    n_outputs(outs, 1)?;
    let a = ins[0];
    unique_axes(axes, a.ndim(), "axes")?;
    let idx = check_index_arrays(&ins[1..])?;
    if sizes.len() != a.ndim() {
        bail!("{} slice sizes for {} dimensions", sizes.len(), a.ndim());
    }
    if a.size() == 0 {
        let idx_size = idx.map_or(1, |i| i.size());
        if idx_size != 0 && prod(sizes) != 0 {
            bail!("gathers from an empty array");
        }
    } else if sizes.iter().zip(&a.shape).any(|(&s, &d)| s < 0 || s > d) {
        bail!("slice sizes {sizes:?} do not fit {:?}", a.shape);
    }
    let mut shape = idx.map_or(Vec::new(), |i| i.shape.clone());
    shape.extend_from_slice(sizes);
    out_is(&outs[0], &shape, a.dtype)?;
    Ok(axes
        .iter()
        .enumerate()
        .map(|(k, &ax)| {
            ValueUse::axis(
                1 + k,
                ins[1 + k].dtype,
                i64::from(a.shape[ax as usize]),
                i64::from(sizes[ax as usize]),
            )
        })
        .collect())
}

fn gather_axis(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 2, 2)?;
    n_outputs(outs, 1)?;
    let (a, idx) = (ins[0], ins[1]);
    let ax = axis(c.st.int(0), a.ndim(), "axis")?;
    check_index_arrays(&ins[1..])?;
    same_off_axis(a, idx, ax)?;
    out_is(&outs[0], &idx.shape, a.dtype)?;
    Ok(vec![ValueUse::axis(
        1,
        idx.dtype,
        i64::from(a.shape[ax]),
        1,
    )])
}

fn scatter(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    enum_in(c.st.int(0), 5, "reduction")?;
    let axes = c.st.ints(1);
    n_inputs(ins, 2 + axes.len(), 2 + axes.len())?;
    n_outputs(outs, 1)?;
    let a = ins[0];
    let upd = ins[ins.len() - 1];
    unique_axes(axes, a.ndim(), "axes")?;
    let idx = check_index_arrays(&ins[1..ins.len() - 1])?;
    let idx_shape = idx.map_or(&[][..], |i| &i.shape[..]);
    same_dtype(a, upd, "the array and the updates")?;
    let ok = upd.ndim() == a.ndim() + idx_shape.len()
        && upd.shape[..idx_shape.len()] == *idx_shape
        && upd.shape[idx_shape.len()..]
            .iter()
            .zip(&a.shape)
            .all(|(&u, &d)| u <= d);
    if !ok {
        bail!(
            "updates {:?} do not fit indices {idx_shape:?} into {:?}",
            upd.shape,
            a.shape
        );
    }
    out_is(&outs[0], &a.shape, a.dtype)?;
    Ok(axes
        .iter()
        .enumerate()
        .map(|(k, &ax)| {
            ValueUse::axis(
                1 + k,
                ins[1 + k].dtype,
                i64::from(a.shape[ax as usize]),
                i64::from(upd.shape[idx_shape.len() + ax as usize]),
            )
        })
        .collect())
}

fn scatter_axis(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    enum_in(c.st.int(0), 2, "reduction")?;
    n_inputs(ins, 3, 3)?;
    n_outputs(outs, 1)?;
    let (a, idx, upd) = (ins[0], ins[1], ins[2]);
    let ax = axis(c.st.int(1), a.ndim(), "axis")?;
    check_index_arrays(&ins[1..2])?;
    same_shape(idx, upd, "the indices and updates")?;
    same_dtype(a, upd, "the array and the updates")?;
    same_off_axis(a, idx, ax)?;
    out_is(&outs[0], &a.shape, a.dtype)?;
    Ok(vec![ValueUse::axis(
        1,
        idx.dtype,
        i64::from(a.shape[ax]),
        1,
    )])
}

fn masked_scatter(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 3, 3)?;
    n_outputs(outs, 1)?;
    let (a, mask, src) = (ins[0], ins[1], ins[2]);
    out_is(&outs[0], &a.shape, a.dtype)?;
    dtype_in(mask.dtype, mask.dtype == Dt::Bool, "the mask", "bool")?;
    same_shape(a, mask, "the array and the mask")?;
    same_dtype(a, src, "the array and the source")?;
    if a.ndim() == 0 || src.ndim() == 0 || src.shape[0] != mask.shape[0] {
        bail!(
            "source {:?} and mask {:?} differ in batch",
            src.shape,
            mask.shape
        );
    }
    no_uses()
}

fn search_sorted(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 2, 2)?;
    n_outputs(outs, 1)?;
    let (a, v) = (ins[0], ins[1]);
    if a.ndim() != 1 || a.size() > i64::from(u32::MAX) {
        bail!("the sorted sequence is {:?}", a.shape);
    }
    same_dtype(a, v, "the sequence and the values")?;
    out_is(&outs[0], &v.shape, Dt::U32)?;
    no_uses()
}

/// Index arrays of a gather or scatter: one integer dtype and one shape (MLX broadcasts and
/// casts them together, and its kernels read them all as the first one's type).
fn check_index_arrays<'a>(idx: &[&'a Meta]) -> std::result::Result<Option<&'a Meta>, String> {
    let Some(first) = idx.first() else {
        return Ok(None);
    };
    for i in idx {
        dtype_in(i.dtype, i.dtype.is_int(), "the indices", "an integer type")?;
        same_dtype(first, i, "the index arrays")?;
        same_shape(first, i, "the index arrays")?;
    }
    Ok(Some(first))
}

fn same_off_axis(a: &Meta, b: &Meta, ax: usize) -> Check {
    let ok = a.ndim() == b.ndim()
        && a.shape
            .iter()
            .zip(&b.shape)
            .enumerate()
            .all(|(i, (x, y))| i == ax || x == y);
    if !ok {
        bail!("{:?} and {:?} differ off axis {ax}", a.shape, b.shape);
    }
    Ok(())
}
