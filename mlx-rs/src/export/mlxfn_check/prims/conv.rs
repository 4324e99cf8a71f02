//! `Convolution` (MLX's `conv_general`: 1-3 spatial dimensions, channels last).

use super::helpers::{dtype_in, n_inputs, n_outputs, no_uses, out_is, same_dtype, to_dim};
use super::{Call, Field, Meta, Prim, State, Uses};

use Field::*;

pub(super) const PRIMS: &[Prim] = &[
    // Strides, low and high padding, kernel and input dilation, groups, flip.
    Prim::new(
        "Convolution",
        &[VecI32, VecI32, VecI32, VecI32, VecI32, I32, Bool],
        convolution,
    ),
];

fn convolution(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 2, 2)?;
    n_outputs(outs, 1)?;
    let shape = conv_shape(c.st, ins[0], ins[1])?;
    out_is(&outs[0], &shape, ins[0].dtype)?;
    no_uses()
}

/// `Convolution::conv_out_shape` and the checks of `conv_general`.
fn conv_shape(st: &State, a: &Meta, wt: &Meta) -> std::result::Result<Vec<i32>, String> {
    let (strides, lo, hi, kdil, idil) =
        (st.ints(0), st.ints(1), st.ints(2), st.ints(3), st.ints(4));
    let groups = st.int(5);
    let n = a.ndim();
    if !(3..=5).contains(&n) || wt.ndim() != n {
        bail!(
            "input {:?} and weight {:?} are not a 1-3D convolution",
            a.shape,
            wt.shape
        );
    }
    same_dtype(a, wt, "the input and weight")?;
    dtype_in(
        a.dtype,
        a.dtype.is_float(),
        "the input",
        "a real floating type",
    )?;
    let spatial = n - 2;
    for v in [strides, lo, hi, kdil, idil] {
        if v.len() != spatial {
            bail!(
                "convolution parameters of length {} for {spatial} spatial dimensions",
                v.len()
            );
        }
    }
    let (cin, wcin, cout) = (a.shape[n - 1], wt.shape[n - 1], wt.shape[0]);
    if groups < 1
        || (groups != 1 && n > 4)
        || cin % groups != 0
        || (groups > 1 && cout % groups != 0)
        || i64::from(cin) != i64::from(groups) * i64::from(wcin)
    {
        bail!(
            "{groups} groups for input {:?} and weight {:?}",
            a.shape,
            wt.shape
        );
    }
    let mut shape = vec![a.shape[0]];
    for i in 0..spatial {
        if kdil[i] <= 0 || idil[i] <= 0 || lo[i] < 0 || hi[i] < 0 || strides[i] <= 0 {
            bail!("invalid stride, padding or dilation on spatial axis {i}");
        }
        let kd = 1 + i64::from(kdil[i]) * (i64::from(wt.shape[i + 1]) - 1);
        let id = 1 + i64::from(idil[i]) * (i64::from(a.shape[i + 1]) - 1);
        let size = (id + i64::from(lo[i]) + i64::from(hi[i]) - kd) / i64::from(strides[i]) + 1;
        if size <= 0 {
            bail!("spatial axis {i} is smaller than the kernel");
        }
        shape.push(to_dim(size, "the convolution")?);
    }
    shape.push(cout);
    Ok(shape)
}
