//! MLX CUDA kernels that compute wrong values for valid input, and the binding's way around
//! each (run on a CUDA GPU by `scripts/gpu-suite run`; on the CPU there is nothing to check).

use mlx_rs::ops::{self, QuantizeOptions, QuantizedMatmulOptions};
use mlx_rs::{random, with_device, Device, DeviceType, Result};

fn on_gpu() -> bool {
    Device::default_device().is_ok_and(|d| d.device_type() == DeviceType::Gpu)
}

/// MLX 0.32.2 sends products whose weight rows are one quantization group long to its Hopper
/// kernel `qmm_sm90`, which gets them wrong by whole units (off by 33 for 8-bit groups of 64
/// on an H100); `ops::quantized_matmul` appends a group of zeros so MLX runs its other
/// kernels.
#[test]
fn one_group_rows_multiply_as_on_the_cpu() -> Result<()> {
    if !on_gpu() {
        eprintln!("SKIPPED: the default device is not a GPU");
        return Ok(());
    }
    let key = random::key(3)?;
    let keys = random::split(&key, 2)?;
    for (bits, group_size) in [(8, 64), (4, 64), (8, 128), (4, 128)] {
        let w = random::normal(
            &[384, group_size],
            Default::default(),
            &ops::take(&keys, 0, 0)?,
        )?;
        let q = QuantizeOptions::default().group_size(group_size).bits(bits);
        let (wq, scales, biases) = ops::quantize(&w, q)?;
        let biases = biases.expect("affine quantization has biases");
        for shape in [
            vec![1, 24, group_size],
            vec![24, group_size],
            vec![4, 24, group_size],
        ] {
            let x = random::normal(&shape, Default::default(), &ops::take(&keys, 1, 0)?)?;
            let options = QuantizedMatmulOptions {
                biases: Some(&biases),
                group_size: Some(group_size),
                bits: Some(bits),
                ..Default::default()
            };
            let gpu = ops::quantized_matmul(&x, &wq, &scales, options)?;
            let cpu = with_device(&Device::cpu(), || {
                ops::quantized_matmul(&x, &wq, &scales, options)
            })??;
            let worst =
                ops::max(&ops::abs(&ops::subtract(&gpu, &cpu)?)?, None, false)?.item::<f32>()?;
            // The GPU's correct kernels agree with the CPU to 2e-5 at these sizes (sums of
            // 64-128 products of unit normals, measured on an H100); the wrong one is off by
            // tens.
            assert!(
                worst <= 1e-4,
                "{bits} bits, groups of {group_size}, x {shape:?}: off by {worst}"
            );
        }
    }
    Ok(())
}
