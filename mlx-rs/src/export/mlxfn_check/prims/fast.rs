//! The fast primitives of `mlx.core.fast`. MLX records the norms, RoPE and attention as
//! primitives only on the GPU (on the CPU they are traced as their fallback ops), so here they
//! are checked against their input lists and output shapes as `mlx/fast.cpp` builds them.
//! `CustomKernel` is refused: its source code is arbitrary and cannot be checked.

use super::helpers::{dtype_in, n_inputs, n_outputs, no_uses, out_is, same_dtype, same_shape};
use super::{Call, Check, Dt, Field, Meta, Prim, Uses};

use Field::*;

pub(super) const PRIMS: &[Prim] = &[
    // The fallback, then eps.
    Prim::new("RMSNorm", &[Null, F32], |c| norm(c, 2)),
    Prim::new("RMSNormVJP", &[Null, F32], |c| norm_vjp(c, 3)),
    Prim::new("LayerNorm", &[Null, F32], |c| norm(c, 3)),
    Prim::new("LayerNormVJP", &[Null, F32], |c| norm_vjp(c, 4)),
    // The fallback, dims, traditional, base, scale, forward.
    Prim::new("RoPE", &[Null, I32, Bool, F32, F32, Bool], rope),
    // The fallback, scale, do_causal, has_sinks, output_logsumexp, force_fused.
    Prim::new(
        "ScaledDotProductAttention",
        &[Null, F32, Bool, Bool, Bool, Bool],
        attention,
    ),
    // Name, source, grid, thread group, shape infos, ensure_row_contiguous, init value, scalar
    // arguments, is_precompiled, shared memory, compile options: read only to find where the
    // entry ends.
    Prim::new(
        "CustomKernel",
        &[
            Str, Str, I32x3, I32x3, VecBool3, Bool, OptF32, VecScalar, Bool, I32, I32,
        ],
        |_| Err("holds custom kernel source, which cannot be checked".into()),
    ),
];

/// The first input of a fast primitive, which must be on the GPU.
fn first_input<'a>(c: &Call<'a>) -> std::result::Result<&'a Meta, String> {
    if !c.gpu {
        bail!("is on a CPU stream; MLX records it only for the GPU");
    }
    let x = *c.ins.first().ok_or("has no inputs")?;
    dtype_in(
        x.dtype,
        x.dtype.is_float(),
        "the input",
        "a real floating type",
    )?;
    if x.ndim() == 0 {
        bail!("the input is a scalar");
    }
    Ok(x)
}

/// A norm's weight or bias: the scalar 1 or 0 when the caller gave none.
fn param(x: &Meta, p: &Meta) -> Check {
    let last = x.shape[x.ndim() - 1];
    same_dtype(x, p, "the input and its parameters")?;
    if !(p.ndim() == 0 || p.shape == [last]) {
        bail!("parameter {:?} for an input {:?}", p.shape, x.shape);
    }
    Ok(())
}

/// `RMSNorm` (x, weight) or `LayerNorm` (x, weight, bias): `n` inputs.
fn norm(c: &Call, n: usize) -> Uses {
    let x = first_input(c)?;
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, n, n)?;
    n_outputs(outs, 1)?;
    for p in &ins[1..] {
        param(x, p)?;
    }
    out_is(&outs[0], &x.shape, x.dtype)?;
    no_uses()
}

/// The norms' gradients: the input, its parameters and the cotangent (`n` inputs); one
/// output per input but the cotangent, each of its input's shape.
fn norm_vjp(c: &Call, n: usize) -> Uses {
    let x = first_input(c)?;
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, n, n)?;
    n_outputs(outs, n - 1)?;
    for p in &ins[1..n - 1] {
        param(x, p)?;
    }
    same_shape(x, ins[n - 1], "the input and its cotangent")?;
    for (o, i) in outs.iter().zip(ins) {
        out_is(o, &i.shape, i.dtype)?;
    }
    no_uses()
}

fn rope(c: &Call) -> Uses {
    let x = first_input(c)?;
    let (ins, outs) = (c.ins, c.outs);
    let last = x.shape[x.ndim() - 1];
    n_inputs(ins, 2, 3)?;
    n_outputs(outs, 1)?;
    let dims = c.st.int(1);
    let off = ins[1];
    if x.ndim() < 3 || dims <= 0 || dims % 2 != 0 || dims > last {
        bail!("{dims} rotated dimensions of an input {:?}", x.shape);
    }
    let ok = off.dtype.is_int()
        && off.dtype.size() == 4
        && off.ndim() <= 1
        && (off.size() == 1 || off.size() == i64::from(x.shape[0]));
    if !ok {
        bail!(
            "offset {:?} {} for an input {:?}",
            off.shape,
            off.dtype,
            x.shape
        );
    }
    if let Some(f) = ins.get(2) {
        if f.dtype != Dt::F32 || f.shape != [dims / 2] {
            bail!(
                "frequencies {:?} {} for {dims} dimensions",
                f.shape,
                f.dtype
            );
        }
    }
    out_is(&outs[0], &x.shape, x.dtype)?;
    no_uses()
}

fn attention(c: &Call) -> Uses {
    first_input(c)?;
    let (ins, outs) = (c.ins, c.outs);
    let (has_sinks, lse) = (c.st.flag(3), c.st.flag(4));
    n_inputs(ins, 3, 5)?;
    let (q, k, v) = (ins[0], ins[1], ins[2]);
    for t in [k, v] {
        same_dtype(q, t, "the queries, keys and values")?;
    }
    let ok = [q, k, v].iter().all(|t| t.ndim() == 4)
        && q.shape[0] == k.shape[0]
        && q.shape[0] == v.shape[0]
        && q.shape[3] == k.shape[3]
        && k.shape[1] == v.shape[1]
        && k.shape[2] == v.shape[2]
        && k.shape[1] >= 1
        && q.shape[1] % k.shape[1] == 0;
    if !ok {
        bail!(
            "queries {:?}, keys {:?} and values {:?}",
            q.shape,
            k.shape,
            v.shape
        );
    }
    let extra = ins.len() - 3;
    if extra < usize::from(has_sinks) {
        bail!("the sinks are missing");
    }
    if has_sinks {
        let s = ins[ins.len() - 1];
        if s.dtype != q.dtype || s.shape != [q.shape[1]] {
            bail!("sinks {:?} {}", s.shape, s.dtype);
        }
    }
    if extra - usize::from(has_sinks) == 1 {
        let m = ins[3];
        let want = [q.shape[0], q.shape[1], q.shape[2], k.shape[2]];
        if m.shape != want || !(m.dtype == Dt::Bool || m.dtype == q.dtype) {
            bail!("mask {:?} {} for scores {want:?}", m.shape, m.dtype);
        }
    }
    let out = [q.shape[0], q.shape[1], q.shape[2], v.shape[3]];
    n_outputs(outs, if lse { 2 } else { 1 })?;
    out_is(&outs[0], &out, q.dtype)?;
    if lse {
        out_is(&outs[1], &[q.shape[0], q.shape[1], q.shape[2], 1], Dt::F32)?;
    }
    no_uses()
}
