//! mlx_rs::fft against Python MLX 0.32.2 (`scripts/golden/fft.py` -> `tests/data/fft.json`).

mod support;

use mlx::core::fft::{self, FftNorm};
use mlx::core::{Array, Dtype};
use serde_json::Value;
use support::golden::{array, assert_close, assert_close_tol, load};

fn check(actual: mlx::core::Result<Array>, expected: &Value, what: &str) {
    let actual = actual.unwrap_or_else(|e| panic!("{what}: {e}"));
    // FFTs accumulate rounding over log2(n) butterflies; a few float32 ulps of the magnitude.
    assert_close_tol(&actual, expected, 1e-4, 1e-5, what);
}

#[test]
fn fft_matches_python() {
    let g = load("fft");
    let (x, z, v) = (array(&g["x"]), array(&g["z"]), array(&g["v"]));
    for (name, norm) in [
        ("backward", FftNorm::Backward),
        ("ortho", FftNorm::Ortho),
        ("forward", FftNorm::Forward),
    ] {
        check(
            fft::fft(&v, None, None, norm),
            &g[format!("fft_v_{name}")],
            name,
        );
        check(
            fft::ifft(&z, None, None, norm),
            &g[format!("ifft_z_{name}")],
            name,
        );
        check(
            fft::rfft(&x, None, None, norm),
            &g[format!("rfft_x_{name}")],
            name,
        );
        check(
            fft::fftn(&z, None, None, norm),
            &g[format!("fftn_z_{name}")],
            name,
        );
        let r = fft::rfftn(&x, None, None, None).unwrap();
        check(
            fft::irfftn(&r, None, None, norm),
            &g[format!("irfftn_x_{name}")],
            name,
        );
    }
    check(fft::fft(&v, 5, None, None), &g["fft_v_n5"], "fft n=5");
    check(fft::fft(&v, 12, None, None), &g["fft_v_n12"], "fft n=12");
    check(fft::fft(&x, None, 0, None), &g["fft_x_axis0"], "fft axis=0");
    check(
        fft::ifft(&x, 3, 0, None),
        &g["ifft_x_n3_axis0"],
        "ifft n=3 axis=0",
    );
    check(
        fft::rfft(&x, 7, 0, None),
        &g["rfft_x_n7_axis0"],
        "rfft n=7 axis=0",
    );
    let rx = fft::rfft(&x, None, None, None).unwrap();
    check(fft::irfft(&rx, None, None, None), &g["irfft_rx"], "irfft");
    check(
        fft::irfft(&rx, 6, None, None),
        &g["irfft_rx_n6"],
        "irfft n=6",
    );
}

#[test]
fn multi_dimensional_ffts_match_python() {
    let g = load("fft");
    let (x, z) = (array(&g["x"]), array(&g["z"]));
    check(fft::fft2(&z, None, None, None), &g["fft2_z"], "fft2");
    check(
        fft::fft2(&z, None, [0, 2], None),
        &g["fft2_z_axes02"],
        "fft2 axes",
    );
    check(
        fft::fft2(&z, Some(&[3, 6]), [-2, -1], None),
        &g["fft2_z_s"],
        "fft2 s",
    );
    check(fft::ifft2(&z, None, None, None), &g["ifft2_z"], "ifft2");
    check(fft::rfft2(&x, None, None, None), &g["rfft2_x"], "rfft2");
    let r2 = fft::rfft2(&x, None, None, None).unwrap();
    check(
        fft::irfft2(&r2, None, None, None),
        &g["irfft2_rx"],
        "irfft2",
    );
    check(
        fft::fftn(&z, None, [1], None),
        &g["fftn_z_axes1"],
        "fftn axes",
    );
    check(
        fft::fftn(&z, Some(&[2, 8]), [0, 2], None),
        &g["fftn_z_s_axes"],
        "fftn s",
    );
    check(fft::ifftn(&z, None, None, None), &g["ifftn_z"], "ifftn");
    check(fft::rfftn(&x, None, None, None), &g["rfftn_x"], "rfftn");
    check(
        fft::rfftn(&x, Some(&[5, 4]), [0, 1], None),
        &g["rfftn_x_s"],
        "rfftn s",
    );
    let rn = fft::rfftn(&x, None, None, None).unwrap();
    check(
        fft::irfftn(&rn, Some(&[4, 6]), [0, 1], None),
        &g["irfftn_rx_s"],
        "irfftn s",
    );
}

#[test]
fn shifts_frequencies_and_dtypes_match_python() {
    let g = load("fft");
    let (x, z) = (array(&g["x"]), array(&g["z"]));
    let exact = |a: mlx::core::Result<Array>, k: &str| assert_close(&a.unwrap(), &g[k], k);
    exact(fft::fftshift(&x, None), "fftshift_x");
    exact(fft::fftshift(&x, [1]), "fftshift_x_axis1");
    exact(fft::ifftshift(&z, None), "ifftshift_z");
    exact(fft::ifftshift(&z, [0, -1]), "ifftshift_z_axes");
    exact(fft::fftfreq(8, None), "fftfreq_8");
    exact(fft::fftfreq(7, 0.5), "fftfreq_7_d");
    exact(fft::rfftfreq(8, None), "rfftfreq_8");
    exact(fft::rfftfreq(9, 2.0), "rfftfreq_9_d");
    // float16/bfloat16/int inputs: same dtype promotion and values as Python.
    let f16 = array(&g["x_f16"]);
    assert_eq!(f16.dtype(), Dtype::Float16);
    check(fft::fft(&f16, None, None, None), &g["fft_x_f16"], "fft f16");
    let bf16 = array(&g["x_bf16"]);
    check(
        fft::rfft(&bf16, None, None, None),
        &g["rfft_x_bf16"],
        "rfft bf16",
    );
    check(
        fft::fft(&array(&g["xi"]), None, None, None),
        &g["fft_int"],
        "fft int",
    );
}

#[test]
fn bad_fft_calls_are_errors() {
    let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let err = fft::fft(&x, None, 5, None).unwrap_err().to_string();
    assert!(err.contains("Invalid axis"), "{err}");
    let err = fft::fftn(&x, None, [0, 0], None).unwrap_err().to_string();
    assert!(err.contains("Duplicated axis"), "{err}");
    let err = fft::fftn(&x, Some(&[2, 2, 2]), [0, 1], None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("different sizes"), "{err}");
    let scalar = Array::from_scalar(1.0f32);
    assert!(fft::fft(&scalar, None, None, None).is_err());
    assert!(fft::fft(&x, 0, None, None).is_err());
}
