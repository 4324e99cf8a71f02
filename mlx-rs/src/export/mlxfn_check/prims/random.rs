//! `RandomBits`: the bits behind every sampler of `mlx.core.random`.

use super::helpers::{n_inputs, n_outputs, no_uses, out_is};
use super::{Call, Dt, Field, Prim, Uses};

pub(super) const PRIMS: &[Prim] = &[
    // The output shape and the element width in bytes.
    Prim::new("RandomBits", &[Field::VecI32, Field::I32], random_bits),
];

fn random_bits(c: &Call) -> Uses {
    let (ins, outs) = (c.ins, c.outs);
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    let key = ins[0];
    if key.dtype != Dt::U32 || key.shape.last() != Some(&2) || key.size() < 2 {
        bail!(
            "the key is {:?} {} (uint32 pairs expected)",
            key.shape,
            key.dtype
        );
    }
    let dtype = match c.st.int(1) {
        1 => Dt::U8,
        2 => Dt::U16,
        4 => Dt::U32,
        w => bail!("unsupported width {w}"),
    };
    out_is(&outs[0], c.st.ints(0), dtype)?;
    no_uses()
}
