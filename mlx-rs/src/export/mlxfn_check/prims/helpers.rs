//! The small checks every family shares: input and output counts, output metadata, dtypes,
//! enums, axes and shapes.

use super::{Check, Dt, Meta, ValueUse};

/// A check that found nothing wrong and no integer input whose values matter.
pub(super) fn no_uses() -> std::result::Result<Vec<ValueUse>, String> {
    Ok(Vec::new())
}

pub(super) fn n_inputs(ins: &[&Meta], lo: usize, hi: usize) -> Check {
    if ins.len() < lo || ins.len() > hi {
        if lo == hi {
            bail!("has {} inputs ({lo} expected)", ins.len());
        }
        bail!("has {} inputs ({lo} to {hi} expected)", ins.len());
    }
    Ok(())
}

pub(super) fn n_outputs(outs: &[Meta], n: usize) -> Check {
    if outs.len() != n {
        bail!("has {} outputs ({n} expected)", outs.len());
    }
    Ok(())
}

pub(super) fn out_is(out: &Meta, shape: &[i32], dtype: Dt) -> Check {
    if out.shape != shape || out.dtype != dtype {
        bail!(
            "output is {:?} {}, but its inputs and state make {shape:?} {dtype}",
            out.shape,
            out.dtype
        );
    }
    Ok(())
}

pub(super) fn same_shape(a: &Meta, b: &Meta, what: &str) -> Check {
    if a.shape != b.shape {
        bail!(
            "{what} have different shapes {:?} and {:?}",
            a.shape,
            b.shape
        );
    }
    Ok(())
}

pub(super) fn same_dtype(a: &Meta, b: &Meta, what: &str) -> Check {
    if a.dtype != b.dtype {
        bail!("{what} have different dtypes {} and {}", a.dtype, b.dtype);
    }
    Ok(())
}

pub(super) fn dtype_in(d: Dt, ok: bool, what: &str, allowed: &str) -> Check {
    if !ok {
        bail!("{what} is {d}, but only {allowed} is supported");
    }
    Ok(())
}

pub(super) fn enum_in(v: i32, count: i32, what: &str) -> Check {
    if !(0..count).contains(&v) {
        bail!("unknown {what} {v}");
    }
    Ok(())
}

/// An axis MLX stored already normalized.
pub(super) fn axis(a: i32, ndim: usize, what: &str) -> std::result::Result<usize, String> {
    if a < 0 || a as usize >= ndim {
        bail!("{what} {a} is out of range for {ndim} dimensions");
    }
    Ok(a as usize)
}

/// Normalized axes that MLX keeps sorted and unique.
pub(super) fn sorted_axes(axes: &[i32], ndim: usize, what: &str) -> Check {
    for &a in axes {
        axis(a, ndim, "axis")?;
    }
    if axes.windows(2).any(|w| w[0] >= w[1]) {
        bail!("{what} {axes:?} are not sorted and unique");
    }
    Ok(())
}

pub(super) fn unique_axes(axes: &[i32], ndim: usize, what: &str) -> Check {
    for (i, &a) in axes.iter().enumerate() {
        axis(a, ndim, "axis")?;
        if axes[..i].contains(&a) {
            bail!("{what} {axes:?} repeat axis {a}");
        }
    }
    Ok(())
}

pub(super) fn to_dim(v: i64, what: &str) -> std::result::Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("{what} has a dimension of {v}"))
}

/// The element count of a shape; saturating, since state fields are not checked shapes.
pub(super) fn prod(shape: &[i32]) -> i64 {
    shape
        .iter()
        .fold(1i64, |n, &d| n.saturating_mul(i64::from(d)))
}

/// `broadcast_shapes` of MLX's `utils.cpp`.
pub(super) fn broadcast_shapes(a: &[i32], b: &[i32]) -> std::result::Result<Vec<i32>, String> {
    let (big, small) = if a.len() > b.len() { (a, b) } else { (b, a) };
    let diff = big.len() - small.len();
    let mut out = big.to_vec();
    for i in diff..big.len() {
        let (x, y) = (big[i], small[i - diff]);
        out[i] = if x == y {
            x
        } else if x == 1 || y == 1 {
            x * y
        } else {
            bail!("shapes {a:?} and {b:?} do not broadcast");
        };
    }
    Ok(out)
}

/// Whether the broadcast kernel can view `from` as `to` (stride 0 on size-1 dimensions).
pub(super) fn broadcasts_to(from: &[i32], to: &[i32]) -> bool {
    from.len() <= to.len()
        && from
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(&f, &t)| f == t || f == 1)
}

/// A unary elementwise op: one input, and one output of its shape and dtype.
pub(super) fn unary_same(ins: &[&Meta], outs: &[Meta]) -> Check {
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    out_is(&outs[0], &ins[0].shape, ins[0].dtype)
}

/// A binary elementwise op: two inputs of one shape and dtype (MLX's ops broadcast and cast
/// them first), and one output of that shape and `out_dtype` (by default the inputs').
pub(super) fn binary_same(ins: &[&Meta], outs: &[Meta], out_dtype: Option<Dt>) -> Check {
    n_inputs(ins, 2, 2)?;
    n_outputs(outs, 1)?;
    same_shape(ins[0], ins[1], "the inputs")?;
    same_dtype(ins[0], ins[1], "the inputs")?;
    out_is(&outs[0], &ins[0].shape, out_dtype.unwrap_or(ins[0].dtype))
}
