//! mlx_rs::linalg against Python MLX 0.32.2 (`scripts/golden/linalg.py` ->
//! `tests/data/linalg.json`), run on the CPU stream as Python's `stream=mx.cpu`.
//!
//! The factorizations run in LAPACK, which differs between this build (system OpenBLAS) and
//! the Python wheel, so values are compared with a float32 tolerance of a few ulps of the
//! matrix scale rather than bit for bit.

mod support;

use mlx::core::linalg::{self, NormOrd, Uplo};
use mlx::core::{ops, with_device, Array, Device, Result};
use serde_json::Value;
use support::golden::{array, assert_close_tol, load};

fn cpu<T>(f: impl FnOnce() -> Result<T>) -> T {
    with_device(&Device::cpu(), f).unwrap().unwrap()
}

fn close(actual: &Array, expected: &Value, what: &str) {
    assert_close_tol(actual, expected, 1e-4, 1e-4, what);
}

#[test]
fn norms_match_python() {
    let g = load("linalg");
    let (i, n) = (&g["inputs"], &g["norms"]);
    let a = array(&i["a"]);
    close(
        &linalg::norm(&a, None, None, false).unwrap(),
        &n["norm"],
        "norm",
    );
    close(
        &linalg::norm(&a, None, 1, true).unwrap(),
        &n["norm_axis1_keep"],
        "norm axis",
    );
    let inf = f64::INFINITY;
    for (name, ord) in [
        ("2", 2.0),
        ("1", 1.0),
        ("0", 0.0),
        ("3", 3.0),
        ("half", 0.5),
        ("inf", inf),
        ("neginf", -inf),
    ] {
        let got = linalg::norm(&a, NormOrd::P(ord), 0, false).unwrap();
        close(&got, &n[format!("vec_ord_{name}")], name);
    }
    for (name, ord) in [
        ("1", NormOrd::from(1)),
        ("neg1", NormOrd::from(-1)),
        ("inf", NormOrd::from(inf)),
        ("neginf", NormOrd::from(-inf)),
        ("fro", NormOrd::Fro),
        ("nuc", NormOrd::Nuc),
        ("2", NormOrd::from(2)),
        ("neg2", NormOrd::from(-2)),
    ] {
        let got = cpu(|| linalg::norm(&a, ord, None, false));
        close(&got, &n[format!("mat_ord_{name}")], name);
    }
    let batch = array(&i["batch"]);
    close(
        &linalg::norm(&batch, NormOrd::Fro, [1, 2], false).unwrap(),
        &n["mat_fro_batch_axes"],
        "fro batch",
    );
    let f16 = a.astype(mlx::core::Dtype::Float16).unwrap();
    let got = linalg::norm(&f16, None, 1, false).unwrap();
    assert_close_tol(&got, &n["norm_f16"], 2e-3, 2e-3, "norm f16");
    let bf16 = a.astype(mlx::core::Dtype::Bfloat16).unwrap();
    let got = linalg::norm(&bf16, None, None, false).unwrap();
    assert_close_tol(&got, &n["norm_bf16"], 1e-2, 1e-2, "norm bf16");
    let c = ops::add(
        &a,
        ops::multiply(&a, mlx::core::num_complex::Complex32::new(0.0, 1.0)).unwrap(),
    )
    .unwrap();
    close(
        &linalg::norm(&c, None, 0, false).unwrap(),
        &n["norm_c64"],
        "norm c64",
    );
}

#[test]
fn factorizations_match_python() {
    let g = load("linalg");
    let (i, f) = (&g["inputs"], &g["factor"]);
    let [a, spd, b, batch, rect, v3a, v3b, upper, lower] = [
        "a", "spd", "b", "batch", "rect", "v3a", "v3b", "upper", "lower",
    ]
    .map(|k| array(&i[k]));
    let (q, r) = cpu(|| linalg::qr(&a));
    close(&q, &f["qr_q"], "qr q");
    close(&r, &f["qr_r"], "qr r");
    let usv = cpu(|| linalg::svd(&rect, None));
    assert_eq!(usv.len(), 3);
    close(&usv[1], &f["svd_s"], "svd s");
    close(&usv[0], &f["svd_u"], "svd u");
    close(&usv[2], &f["svd_vt"], "svd vt");
    let s = cpu(|| linalg::svd(&rect, false));
    assert_eq!(s.len(), 1);
    close(&s[0], &f["svd_values"], "svd values");
    close(&cpu(|| linalg::inv(&a)), &f["inv"], "inv");
    close(&cpu(|| linalg::inv(&batch)), &f["inv_batch"], "inv batch");
    close(
        &cpu(|| linalg::tri_inv(&lower, None)),
        &f["tri_inv_lower"],
        "tri_inv",
    );
    close(
        &cpu(|| linalg::tri_inv(&upper, true)),
        &f["tri_inv_upper"],
        "tri_inv upper",
    );
    let l = cpu(|| linalg::cholesky(&spd, None));
    close(&l, &f["cholesky"], "cholesky");
    close(
        &cpu(|| linalg::cholesky(&spd, true)),
        &f["cholesky_upper"],
        "cholesky upper",
    );
    close(
        &cpu(|| linalg::cholesky_inv(&l, None)),
        &f["cholesky_inv"],
        "cholesky_inv",
    );
    close(&cpu(|| linalg::pinv(&rect)), &f["pinv"], "pinv");
    close(
        &linalg::cross(&v3a, &v3b, None).unwrap(),
        &f["cross"],
        "cross",
    );
    let (ta, tb) = (v3a.t().unwrap(), v3b.t().unwrap());
    close(
        &linalg::cross(&ta, &tb, 0).unwrap(),
        &f["cross_axis0"],
        "cross axis 0",
    );
    let (w, v) = cpu(|| linalg::eigh(&spd, None));
    close(&w, &f["eigh_w"], "eigh w");
    close(&v, &f["eigh_v"], "eigh v");
    close(
        &cpu(|| linalg::eigh(&spd, Uplo::U)).0,
        &f["eigh_upper_w"],
        "eigh U",
    );
    close(
        &cpu(|| linalg::eigvalsh(&spd, None)),
        &f["eigvalsh"],
        "eigvalsh",
    );
    close(
        &cpu(|| linalg::eigvalsh(&upper, Uplo::U)),
        &f["eigvalsh_upper"],
        "eigvalsh U",
    );
    let (ew, ev) = cpu(|| linalg::eig(&spd));
    close(&ew, &f["eig_w"], "eig w");
    close(&ev, &f["eig_v"], "eig v");
    close(&cpu(|| linalg::eigvals(&spd)), &f["eigvals"], "eigvals");
    let (p, l, u) = cpu(|| linalg::lu(&a));
    close(&p, &f["lu_p"], "lu p");
    close(&l, &f["lu_l"], "lu l");
    close(&u, &f["lu_u"], "lu u");
    let (lu, piv) = cpu(|| linalg::lu_factor(&a));
    close(&lu, &f["lu_factor_lu"], "lu_factor lu");
    close(&piv, &f["lu_factor_piv"], "lu_factor pivots");
    close(&cpu(|| linalg::solve(&a, &b)), &f["solve"], "solve");
    close(
        &cpu(|| linalg::solve_triangular(&lower, &b, None)),
        &f["solve_triangular"],
        "solve_tri",
    );
    close(
        &cpu(|| linalg::solve_triangular(&upper, &b, true)),
        &f["solve_triangular_upper"],
        "solve_tri upper",
    );
    close(&cpu(|| linalg::det(&a)), &f["det"], "det");
    close(&cpu(|| linalg::det(&batch)), &f["det_batch"], "det batch");
    let (sign, logdet) = cpu(|| linalg::slogdet(&a));
    close(&sign, &f["slogdet_sign"], "slogdet sign");
    close(&logdet, &f["slogdet_log"], "slogdet log");
}

#[test]
fn bad_linalg_calls_are_errors() {
    let v = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let err = with_device(&Device::cpu(), || linalg::inv(&v))
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("inv"), "{err}");
    let nonsquare = ops::ones(&[2, 3], None).unwrap();
    assert!(
        with_device(&Device::cpu(), || linalg::cholesky(&nonsquare, None))
            .unwrap()
            .is_err()
    );
    let ints = Array::from_slice(&[1i32, 0, 0, 1], &[2, 2]).unwrap();
    let err = with_device(&Device::cpu(), || linalg::qr(&ints))
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("float"), "{err}");
    let err = linalg::norm(&v, NormOrd::Fro, None, false).unwrap_err();
    assert!(err.to_string().contains("norm"), "{err}");
    let four = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let err = linalg::cross(&four, &four, None).unwrap_err();
    assert!(err.to_string().contains("size 2 or 3"), "{err}");
}
