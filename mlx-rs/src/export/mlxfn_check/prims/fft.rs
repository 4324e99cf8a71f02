//! Transforms along axes: `FFT` (complex and real, forward and inverse) and `Hadamard`.

use super::helpers::{dtype_in, n_inputs, n_outputs, no_uses, out_is, unary_same};
use super::{Call, Dt, Field, Prim, Uses};

use Field::*;

pub(super) const PRIMS: &[Prim] = &[
    // Axes, inverse, real.
    Prim::new("FFT", &[VecU64, Bool, Bool], fft),
    // The scale.
    Prim::new("Hadamard", &[F32], hadamard),
];

fn fft(c: &Call) -> Uses {
    let (st, ins, outs) = (c.st, c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let (a, out) = (ins[0], &outs[0]);
    let (axes, inverse, real) = (st.uints(0), st.flag(1), st.flag(2));
    let n = a.ndim();
    if axes.is_empty() {
        bail!("transforms no axes");
    }
    for (i, &ax) in axes.iter().enumerate() {
        if ax >= n as u64 || axes[..i].contains(&ax) {
            bail!("axes {axes:?} for {n} dimensions");
        }
    }
    let (din, dout) = match (real, inverse) {
        (true, false) => (Dt::F32, Dt::C64),
        (true, true) => (Dt::C64, Dt::F32),
        _ => (Dt::C64, Dt::C64),
    };
    dtype_in(a.dtype, a.dtype == din, "the input", din.name())?;
    let mut shape = a.shape.clone();
    if real {
        let last = *axes.last().expect("non-empty") as usize;
        if inverse {
            let m = out.shape.get(last).copied().unwrap_or(0);
            if out.ndim() != n || m / 2 + 1 != a.shape[last] {
                bail!(
                    "output {:?} is not an inverse real transform of {:?}",
                    out.shape,
                    a.shape
                );
            }
            shape[last] = m;
        } else {
            shape[last] = a.shape[last] / 2 + 1;
        }
    }
    out_is(out, &shape, dout)?;
    for &ax in axes {
        let ax = ax as usize;
        if a.shape[ax] == 0 || out.shape[ax] == 0 {
            bail!("transforms an axis of size 0");
        }
    }
    no_uses()
}

fn hadamard(c: &Call) -> Uses {
    let ins = c.ins;
    unary_same(ins, c.outs)?;
    let d = ins[0].dtype;
    dtype_in(d, d.is_float(), "the input", "a real floating type")?;
    if ins[0].size() == 0 {
        bail!("the input is empty");
    }
    let n = ins[0].shape.last().copied().unwrap_or(1);
    let m = [1, 12, 20, 28]
        .into_iter()
        .find(|&m| n % m == 0 && (n / m).count_ones() == 1 && n / m <= 1 << 26);
    if m.is_none() {
        bail!("the last dimension {n} is not m*2^k with m in (1, 12, 20, 28), k <= 26");
    }
    no_uses()
}
