//! Quantized weights: `QuantizedMatmul`, `GatherQMM`, and `Quantize` (which also
//! dequantizes).

use super::helpers::{
    dtype_in, enum_in, n_inputs, n_outputs, no_uses, out_is, prod, same_dtype, same_shape, to_dim,
};
use super::{Call, Check, Dt, Field, Meta, Prim, Uses, ValueUse};

use Field::*;

pub(super) const PRIMS: &[Prim] = &[
    // Group size, bits, mode, transpose.
    Prim::new("QuantizedMatmul", &[I32, I32, I32, Bool], |c| {
        quantized_matmul(c, false)
    }),
    // Group size, bits, mode, transpose, and whether the left and right indices are sorted.
    Prim::new("GatherQMM", &[I32, I32, I32, Bool, Bool, Bool], |c| {
        quantized_matmul(c, true)
    }),
    // The fallback, group size, bits, mode, dequantize.
    Prim::new("Quantize", &[Null, I32, I32, I32, Bool], quantize),
];

/// `(group_size, bits)` each quantization mode accepts (`QuantizationMode` order: affine,
/// mxfp4, mxfp8, nvfp4).
fn check_quant_params(group: i32, bits: i32, mode: i32) -> Check {
    enum_in(mode, 4, "quantization mode")?;
    let ok = match mode {
        0 => matches!(group, 32 | 64 | 128) && matches!(bits, 2..=6 | 8),
        1 => (group, bits) == (32, 4),
        2 => (group, bits) == (32, 8),
        _ => (group, bits) == (16, 4),
    };
    if !ok {
        bail!("group size {group} and {bits} bits for quantization mode {mode}");
    }
    Ok(())
}

/// Packed weights and their scales; returns the unpacked length of the weights' last axis.
fn check_quant_weights(
    w: &Meta,
    scales: &Meta,
    group: i32,
    bits: i32,
    affine: bool,
) -> std::result::Result<i32, String> {
    dtype_in(w.dtype, w.dtype == Dt::U32, "the weights", "uint32")?;
    if affine {
        dtype_in(
            scales.dtype,
            scales.dtype.is_float(),
            "the scales",
            "a real floating type",
        )?;
    } else {
        dtype_in(scales.dtype, scales.dtype == Dt::U8, "the scales", "uint8")?;
    }
    let n = w.ndim();
    if n < 2 || scales.ndim() != n || w.shape[..n - 1] != scales.shape[..n - 1] {
        bail!(
            "weights {:?} and scales {:?} do not match",
            w.shape,
            scales.shape
        );
    }
    let unpacked = i64::from(w.shape[n - 1]) * 32 / i64::from(bits);
    if unpacked != i64::from(scales.shape[n - 1]) * i64::from(group) {
        bail!(
            "weights {:?} and scales {:?} do not match {bits} bits in groups of {group}",
            w.shape,
            scales.shape
        );
    }
    to_dim(unpacked, "the unpacked weights")
}

/// `x @ dequantize(w)` (transposed with the state's flag), over a batch of index pairs with
/// `gather`.
fn quantized_matmul(c: &Call, gather: bool) -> Uses {
    let (st, ins, outs) = (c.st, c.ins, c.outs);
    let (group, bits, mode, transpose) = (st.int(0), st.int(1), st.int(2), st.flag(3));
    check_quant_params(group, bits, mode)?;
    let affine = mode == 0;
    let n = usize::from(affine) + 3 + if gather { 2 } else { 0 };
    n_inputs(ins, n, n)?;
    n_outputs(outs, 1)?;
    let (x, w, scales) = (ins[0], ins[1], ins[2]);
    let outer = check_quant_weights(w, scales, group, bits, affine)?;
    let d = x.dtype;
    dtype_in(
        d,
        matches!(d, Dt::F16 | Dt::Bf16 | Dt::F32),
        "x",
        "float16, bfloat16 or float32",
    )?;
    if affine {
        same_dtype(x, scales, "x and the scales")?;
        same_dtype(scales, ins[3], "the scales and biases")?;
        same_shape(scales, ins[3], "the scales and biases")?;
    }
    let nw = w.ndim();
    let (inner, outer) = if transpose {
        (outer, w.shape[nw - 2])
    } else {
        (w.shape[nw - 2], outer)
    };
    // MLX 0.32.2's CPU kernel divides by the rows and columns of x.
    if x.ndim() < if gather { 2 } else { 1 } || x.size() == 0 {
        bail!("x {:?} has too few dimensions or no elements", x.shape);
    }
    if x.shape[x.ndim() - 1] != inner {
        bail!(
            "x {:?} does not match the expanded weights ({inner}, {outer})",
            x.shape
        );
    }
    if gather {
        let (li, ri) = (ins[n - 2], ins[n - 1]);
        for i in [li, ri] {
            dtype_in(i.dtype, i.dtype == Dt::U32, "the indices", "uint32")?;
        }
        same_shape(li, ri, "the indices")?;
        if w.ndim() < 2 {
            bail!("the weights have {} dimensions", w.ndim());
        }
        let mut shape = li.shape.clone();
        shape.extend([x.shape[x.ndim() - 2], outer]);
        out_is(&outs[0], &shape, d)?;
        Ok([(n - 2, x), (n - 1, w)]
            .into_iter()
            .map(|(input, m)| ValueUse::batch(input, prod(&m.shape[..m.ndim() - 2])))
            .collect())
    } else {
        if x.ndim() > 2 && w.ndim() > 2 && x.shape[..x.ndim() - 2] != w.shape[..nw - 2] {
            bail!(
                "x {:?} and weights {:?} differ in batch shape",
                x.shape,
                w.shape
            );
        }
        let mut shape = x.shape.clone();
        *shape.last_mut().expect("ndim > 0") = outer;
        out_is(&outs[0], &shape, d)?;
        no_uses()
    }
}

fn quantize(c: &Call) -> Uses {
    let (st, ins, outs) = (c.st, c.ins, c.outs);
    let (group, bits, mode, dequantize) = (st.int(1), st.int(2), st.int(3), st.flag(4));
    check_quant_params(group, bits, mode)?;
    // MLX 0.32.2's CPU kernel always does an affine quantization into three outputs.
    if !c.gpu && (mode != 0 || dequantize) {
        bail!("only affine quantization runs on the CPU");
    }
    let affine = mode == 0;
    if dequantize {
        // An fp dequantization may carry a global scale.
        n_inputs(ins, if affine { 3 } else { 2 }, 3)?;
        n_outputs(outs, 1)?;
        let (w, scales) = (ins[0], ins[1]);
        let unpacked = check_quant_weights(w, scales, group, bits, affine)?;
        if affine {
            same_dtype(scales, ins[2], "the scales and biases")?;
            same_shape(scales, ins[2], "the scales and biases")?;
        }
        let mut shape = w.shape.clone();
        *shape.last_mut().expect("ndim >= 2") = unpacked;
        let d = outs[0].dtype;
        dtype_in(d, d.is_float(), "the output", "a real floating type")?;
        if affine && d != scales.dtype {
            bail!("the output is {d}, the scales {}", scales.dtype);
        }
        out_is(&outs[0], &shape, d)?;
        return no_uses();
    }
    n_inputs(ins, 1, if affine { 1 } else { 2 })?;
    let w = ins[0];
    dtype_in(
        w.dtype,
        matches!(w.dtype, Dt::F16 | Dt::Bf16 | Dt::F32),
        "the input",
        "float16, bfloat16 or float32",
    )?;
    let n = w.ndim();
    if n < 2 || w.shape[n - 1] % group != 0 {
        bail!("cannot quantize {:?} in groups of {group}", w.shape);
    }
    let mut packed = w.shape.clone();
    packed[n - 1] = (i64::from(w.shape[n - 1]) * i64::from(bits) / 32) as i32;
    let mut scales = w.shape.clone();
    scales[n - 1] = w.shape[n - 1] / group;
    if affine {
        n_outputs(outs, 3)?;
        out_is(&outs[0], &packed, Dt::U32)?;
        out_is(&outs[1], &scales, w.dtype)?;
        out_is(&outs[2], &scales, w.dtype)?;
    } else {
        n_outputs(outs, 2)?;
        out_is(&outs[0], &packed, Dt::U32)?;
        out_is(&outs[1], &scales, Dt::U8)?;
    }
    no_uses()
}
