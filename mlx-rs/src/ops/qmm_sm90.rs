//! A way around MLX 0.32.2's Hopper quantized matmul kernel, which computes wrong values.
//!
//! On a GPU of compute capability 9 (H100, H200), MLX's CUDA `quantized_matmul` sends affine
//! 4- and 8-bit products whose rows are one quantization group long (`K == group_size`: its
//! `qmm_sm90` kernel takes only `group_size >= K`) to `qmm_sm90` unless the product is one row.
//! That kernel's results are wrong by whole units: on an H100, `x[24, 64] @ W[384, 64].T`
//! with 8-bit groups of 64 was off by 33 from the CPU's result and from `x @ dequantize(W).T`,
//! and mlx_lm's own prompt logits of a model whose tied 8-bit embedding has 64 columns were
//! off by 4.3 (`scripts/golden/lm.py`, `llama3-4bit`); with two or more groups per row, or one
//! row, the same products agree with the CPU to 1e-5.
//!
//! [`pad_single_groups`] appends one group of zeros to those products: to `x` zero columns,
//! to `W` zero codes with scale 0 and bias 0, which dequantize to exact zeros. The product
//! gains only `0 * 0` terms, and with two groups per row MLX runs the kernels it uses for
//! every other layer. (Halving the groups instead keeps `K`, but MLX has no float32 kernel
//! for 8-bit groups of 32 with more than one row.) Everywhere else the product goes to MLX
//! unchanged.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::ops::{self, QuantizationMode};
use crate::{Array, DeviceInfoValue, DeviceType, Result, Stream};

/// The default group size of affine quantization (MLX's, when `group_size` is `None`).
const AFFINE_GROUP_SIZE: i32 = 64;
/// The default bits of affine quantization.
const AFFINE_BITS: i32 = 4;

/// The arrays to give MLX instead of `(x, w, scales, biases)`, when `quantized_matmul` would
/// run on the `qmm_sm90` kernel; `None` when MLX runs it right as it is.
#[allow(clippy::too_many_arguments)] // quantized_matmul's own arguments, passed through
pub(super) fn pad_single_groups(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    transpose: bool,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: QuantizationMode,
) -> Result<Option<[Array; 4]>> {
    let Some(biases) = biases else {
        return Ok(None);
    };
    // i64: a lazy array's last axis, or a group size, may be near i32::MAX; `* bits` of it
    // must not overflow.
    let group_size = i64::from(group_size.unwrap_or(AFFINE_GROUP_SIZE));
    let bits = i64::from(bits.unwrap_or(AFFINE_BITS));
    let k = i64::from(x.shape().last().copied().unwrap_or(0));
    let last = |a: &Array| a.shape().last().map(|&d| i64::from(d));
    // MLX's conditions for qmm_sm90 that the arguments decide, but its memory-layout ones:
    // padding a product MLX would have sent elsewhere changes only which correct kernel runs.
    let single_group = mode == QuantizationMode::Affine
        && transpose
        && matches!(bits, 4 | 8)
        && k > 0
        && k % 64 == 0
        && group_size >= k
        && last(w) == Some(k * bits / 32)
        && last(scales) == Some(1)
        && last(biases) == Some(1);
    if !single_group || one_row_product(x, w) || !on_hopper()? {
        return Ok(None);
    }
    // `group_size == k`, an axis length, so these counts fit an i32.
    let zero_columns = |a: &Array, n: i64| -> Result<Array> {
        let mut shape = a.shape().to_vec();
        *shape.last_mut().expect("checked above: at least one axis") =
            i32::try_from(n).expect("at most the length of x's last axis");
        ops::concatenate([a, &ops::zeros(&shape, a.dtype())?], -1)
    };
    Ok(Some([
        zero_columns(x, group_size)?,
        zero_columns(w, group_size * bits / 32)?,
        zero_columns(scales, 1)?,
        zero_columns(biases, 1)?,
    ]))
}

/// MLX computes a single-row product (one row of one batch, `N` and `K` up to 16384) with its
/// `qmv` kernel, which is right.
fn one_row_product(x: &Array, w: &Array) -> bool {
    let shape = x.shape();
    let rows: i64 = shape[..shape.len().saturating_sub(1)]
        .iter()
        .map(|&d| i64::from(d))
        .product();
    let n = w
        .shape()
        .get(w.ndim().saturating_sub(2))
        .copied()
        .unwrap_or(0);
    let k = shape.last().copied().unwrap_or(0);
    rows == 1 && w.ndim() <= 2 && n <= 16384 && k <= 16384
}

/// Whether the current stream runs on a GPU of compute capability 9 (MLX reports it as
/// `architecture`, `sm_90`). Asked once per device: MLX's device query is not free.
fn on_hopper() -> Result<bool> {
    static KNOWN: Mutex<Option<HashMap<i32, bool>>> = Mutex::new(None);
    let device = Stream::current()?.device();
    if device.device_type() != DeviceType::Gpu {
        return Ok(false);
    }
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    let known = known.get_or_insert_with(HashMap::new);
    if let Some(&hopper) = known.get(&device.index()) {
        return Ok(hopper);
    }
    let hopper = match device.info()?.get("architecture") {
        Some(DeviceInfoValue::String(arch)) => arch.starts_with("sm_9"),
        _ => false,
    };
    known.insert(device.index(), hopper);
    Ok(hopper)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{DequantizeOptions, QuantizeOptions};
    use crate::random;

    /// The padded weights dequantize to the original matrix followed by exact zeros.
    #[test]
    fn the_padding_group_dequantizes_to_zeros() -> Result<()> {
        for (bits, group_size) in [(4, 64), (8, 64), (4, 128), (8, 128)] {
            let w = random::normal(&[48, group_size], Default::default(), &random::key(7)?)?;
            let q = QuantizeOptions::default().group_size(group_size).bits(bits);
            let (wq, scales, biases) = ops::quantize(&w, q)?;
            let biases = biases.expect("affine quantization has biases");
            let dequantize = |wq: &Array, scales: &Array, biases: &Array| {
                let o = DequantizeOptions::default()
                    .biases(biases)
                    .group_size(group_size)
                    .bits(bits);
                ops::dequantize(wq, scales, o)
            };
            let want = ops::concatenate(
                [
                    &dequantize(&wq, &scales, &biases)?,
                    &ops::zeros(&[48, group_size], None)?,
                ],
                -1,
            )?;
            let pad = |a: &Array, n: i32| {
                let z = ops::zeros(&[48, n], a.dtype())?;
                ops::concatenate([a, &z], -1)
            };
            let got = dequantize(
                &pad(&wq, group_size * bits / 32)?,
                &pad(&scales, 1)?,
                &pad(&biases, 1)?,
            )?;
            assert!(
                ops::array_equal(&got, &want, false)?.item::<bool>()?,
                "{bits} bits, groups of {group_size}"
            );
        }
        Ok(())
    }

    #[test]
    fn single_row_products_stay_on_mlx_qmv() -> Result<()> {
        let w = ops::zeros(&[384, 8], Some(crate::Dtype::Uint32))?;
        assert!(one_row_product(&ops::zeros(&[1, 1, 64], None)?, &w));
        assert!(one_row_product(&ops::zeros(&[64], None)?, &w));
        assert!(!one_row_product(&ops::zeros(&[1, 24, 64], None)?, &w));
        assert!(!one_row_product(&ops::zeros(&[24, 64], None)?, &w));
        assert!(!one_row_product(&ops::zeros(&[2, 1, 64], None)?, &w));
        Ok(())
    }
}
