//! `Array::item` converts as Python's `.item()` does where the value is kept, and errors
//! where it would not be.

use half::{bf16, f16};
use mlx_rs::{ops, Array, Dtype};

#[test]
fn argmax_reads_as_any_integer_that_holds_it() {
    let x = Array::from_slice(&[0.5f32, 3.0, -1.0, 2.0], &[4]).unwrap();
    let i = ops::argmax(&x, None, false).unwrap();
    assert_eq!(i.dtype(), Dtype::Uint32);
    assert_eq!(i.item::<u32>().unwrap(), 1);
    assert_eq!(i.item::<i32>().unwrap(), 1);
    assert_eq!(i.item::<i64>().unwrap(), 1);
    assert_eq!(i.item::<usize>().unwrap(), 1);
    assert_eq!(i.item::<u8>().unwrap(), 1);
    assert_eq!(i.item::<f64>().unwrap(), 1.0);
}

#[test]
fn integers_out_of_range_are_errors_naming_the_value() {
    let big = Array::from(u32::MAX);
    assert_eq!(big.item::<i64>().unwrap(), i64::from(u32::MAX));
    let e = big.item::<i32>().unwrap_err().to_string();
    assert!(e.contains("4294967295") && e.contains("i32"), "{e}");
    assert!(Array::from(-1i32).item::<u32>().is_err());
    assert!(Array::from(-1i32).item::<usize>().is_err());
    assert_eq!(Array::from(-1i64).item::<isize>().unwrap(), -1);
    assert!(Array::from(300i32).item::<u8>().is_err());
    assert_eq!(Array::from(true).item::<i32>().unwrap(), 1);
}

#[test]
fn floats_widen_and_narrow_only_exactly() {
    assert_eq!(
        Array::from(0.1f32).item::<f64>().unwrap(),
        f64::from(0.1f32)
    );
    assert_eq!(Array::from(f16::from_f32(1.5)).item::<f64>().unwrap(), 1.5);
    assert_eq!(
        Array::from(bf16::from_f32(-2.0)).item::<f32>().unwrap(),
        -2.0
    );
    // 0.1 as a float64 has no exact float32. float64 is computed on the CPU only (MLX's GPU
    // backends have no float64), as Python does with `stream=mx.cpu`.
    let cpu = mlx_rs::Device::cpu();
    let d = mlx_rs::with_device(&cpu, || {
        Array::from(0.1f32).astype(Dtype::Float64).unwrap() * 1.0
    })
    .unwrap();
    assert_eq!(d.item::<f32>().unwrap(), 0.1f32);
    let third = mlx_rs::with_device(&cpu, || {
        ops::divide(Array::from(1.0f32), 3.0f32)
            .unwrap()
            .astype(Dtype::Float64)
            .unwrap()
    })
    .unwrap();
    assert!(third.item::<f64>().is_ok());
    assert!(Array::from(0.5f32).item::<f16>().is_ok());
    assert!(Array::from(0.1f32).item::<f16>().is_err());
    assert!(Array::from(f32::NAN).item::<f64>().unwrap().is_nan());
    // Integers beyond 2^24 have no exact float32.
    assert!(Array::from(16_777_217i32).item::<f32>().is_err());
    assert_eq!(
        Array::from(16_777_217i32).item::<f64>().unwrap(),
        16_777_217.0
    );
}

#[test]
fn floats_are_not_integers_and_bools_only_bools() {
    assert!(Array::from(2.0f32).item::<i32>().is_err());
    assert!(Array::from(1i32).item::<bool>().is_err());
    assert!(Array::from(true).item::<bool>().unwrap());
    assert!(ops::zeros(&[2], None).unwrap().item::<f32>().is_err());
}
