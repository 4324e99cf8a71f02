//! mlx_rs::random against Python MLX 0.32.2 (`scripts/golden/random.py` ->
//! `tests/data/random.json`). Same key, same library: every draw must match bit for bit.

mod support;

use mlx::core::random::{self, LaplaceOptions, NormalOptions, Permute, UniformOptions};
use mlx::core::{ops, with_device, Array, Device, Dtype};
use support::golden::{assert_exact, load};

fn exact(actual: mlx::core::Result<Array>, g: &serde_json::Value, what: &str) {
    let actual = actual.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_exact(&actual, &g[what], what);
}

#[test]
fn samplers_match_python_bit_for_bit() {
    let g = load("random");
    let k = random::key(7).unwrap();
    let k = &k;
    exact(random::split(k, None), &g, "split_default");
    exact(random::split(k, 5), &g, "split_5");
    exact(random::bernoulli(0.5, None, k), &g, "bernoulli_default");
    exact(
        random::bernoulli(0.3, Some(&[4, 5]), k),
        &g,
        "bernoulli_p_shape",
    );
    let p = Array::from_slice(&[0.1f32, 0.5, 0.9], &[3]).unwrap();
    exact(random::bernoulli(&p, None, k), &g, "bernoulli_p_array");
    exact(
        random::bernoulli(&p, Some(&[2, 3]), k),
        &g,
        "bernoulli_p_array_shape",
    );
    let logits =
        ops::log(&Array::from_slice(&[0.1f32, 0.2, 0.7, 0.5, 0.25, 0.25], &[2, 3]).unwrap())
            .unwrap();
    exact(random::categorical(&logits, None, k), &g, "categorical");
    exact(random::categorical(&logits, 0, k), &g, "categorical_axis0");
    exact(
        random::categorical_shape(&logits, None, &[4, 2], k),
        &g,
        "categorical_shape",
    );
    exact(
        random::categorical_num_samples(&logits, None, 6, k),
        &g,
        "categorical_num_samples",
    );
    exact(random::gumbel(&[3, 4], None, k), &g, "gumbel");
    exact(random::gumbel(&[5], Dtype::Float16, k), &g, "gumbel_f16");
    exact(
        random::laplace(&[3, 4], Default::default(), k),
        &g,
        "laplace",
    );
    exact(
        random::laplace(&[6], LaplaceOptions::default().loc(1.5).scale(0.25), k),
        &g,
        "laplace_loc_scale",
    );
    exact(
        random::laplace(&[6], LaplaceOptions::default().dtype(Dtype::Bfloat16), k),
        &g,
        "laplace_bf16",
    );
}

#[test]
fn array_argument_samplers_match_python_bit_for_bit() {
    let g = load("random");
    let k = random::key(7).unwrap();
    let k = &k;
    let mean = Array::from_slice(&[1.0f32, -1.0], &[2]).unwrap();
    let cov = Array::from_slice(&[1.0f32, 0.5, 0.5, 2.0], &[2, 2]).unwrap();
    // Python: multivariate_normal(..., stream=mx.cpu): it factors cov with an SVD.
    let mvn = with_device(&Device::cpu(), || {
        random::multivariate_normal(&mean, &cov, &[3], None, k)
    })
    .unwrap()
    .unwrap();
    // The SVD runs in LAPACK, which differs between this build (system OpenBLAS) and the
    // Python wheel, so the last float32 bit may differ; the random draws themselves are exact.
    support::golden::assert_close_tol(&mvn, &g["multivariate_normal"], 1e-5, 1e-6, "mvn");
    exact(random::permutation(10, None, k), &g, "permutation_int");
    let x = ops::arange_to(12).unwrap().reshape(&[3, 4]).unwrap();
    exact(random::permutation(&x, None, k), &g, "permutation_array");
    exact(
        random::permutation(Permute::Array(&x), 1, k),
        &g,
        "permutation_array_axis1",
    );
    exact(random::randint(0, 10, &[3, 4], None, k), &g, "randint");
    exact(
        random::randint(-5, 5, &[6], Dtype::Int16, k),
        &g,
        "randint_neg_int16",
    );
    let lo = Array::from_slice(&[0i32, 10], &[2]).unwrap();
    let hi = Array::from_slice(&[5i32, 100], &[2]).unwrap();
    exact(
        random::randint(&lo, &hi, &[3, 2], None, k),
        &g,
        "randint_array_bounds",
    );
    exact(
        random::truncated_normal(-1.0, 1.0, Some(&[3, 4]), None, k),
        &g,
        "truncated_normal",
    );
    let lower = Array::from_slice(&[-1.0f32, 0.0], &[2]).unwrap();
    let upper = Array::from_slice(&[1.0f32, 2.0], &[2, 1]).unwrap();
    exact(
        random::truncated_normal(&lower, &upper, None, None, k),
        &g,
        "truncated_normal_bounds_shape",
    );
    exact(
        random::truncated_normal(-2.0, 0.5, Some(&[5]), Dtype::Float16, k),
        &g,
        "truncated_normal_f16",
    );
    let loc = Array::from_slice(&[0.0f32, 10.0, 100.0], &[3]).unwrap();
    let scale = Array::from_slice(&[1.0f32, 0.1, 0.01], &[3]).unwrap();
    exact(
        random::normal(&[2, 3], NormalOptions::default().loc(&loc).scale(&scale), k),
        &g,
        "normal_array_loc_scale",
    );
    let loc = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    exact(
        random::normal(&[3], NormalOptions::default().loc(&loc).scale(2.0), k),
        &g,
        "normal_array_loc_scalar_scale",
    );
    exact(
        random::normal(&[3], NormalOptions::default().dtype(Dtype::Complex64), k),
        &g,
        "normal_complex",
    );
    exact(
        random::uniform(&[4], UniformOptions::default().dtype(Dtype::Float16), k),
        &g,
        "uniform_f16",
    );
    let lo = Array::from_slice(&[0.0f32, 5.0], &[2]).unwrap();
    let hi = Array::from_slice(&[1.0f32, 6.0], &[2]).unwrap();
    exact(
        random::uniform(&[3, 2], UniformOptions::default().low(&lo).high(&hi), k),
        &g,
        "uniform_array_bounds",
    );
}

#[test]
fn bits_and_split_pair_agree_with_split() {
    let g = load("random");
    let k = random::key(7).unwrap();
    // C++ defines split(key, n) as bits({n, 2}, 4, key): Python's split is the golden value.
    exact(random::bits(&[5, 2], None, &k), &g, "split_5");
    let (a, b) = random::split_pair(&k).unwrap();
    let both = random::split(&k, 2).unwrap().to_vec::<u32>().unwrap();
    assert_eq!(a.to_vec::<u32>().unwrap(), both[..2]);
    assert_eq!(b.to_vec::<u32>().unwrap(), both[2..]);
    assert_eq!(random::bits(&[3], 1, &k).unwrap().dtype(), Dtype::Uint8);
    assert_eq!(random::bits(&[3], 2, &k).unwrap().dtype(), Dtype::Uint16);
}

#[test]
fn bad_random_calls_are_errors() {
    let k = random::key(0).unwrap();
    let err = random::bits(&[2], 3, &k).unwrap_err().to_string();
    assert!(err.contains("Bit width must be in {1, 2, 4}"), "{err}");
    let bad_key = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let err = random::gumbel(&[2], None, &bad_key)
        .unwrap_err()
        .to_string();
    assert!(err.contains("uint32"), "{err}");
    let logits = Array::from_slice(&[0.0f32, 0.0], &[2]).unwrap();
    // A shape that does not broadcast with the batch shape of the logits.
    let batch = Array::from_slice(&[0.0f32; 6], &[3, 2]).unwrap();
    assert!(random::categorical_shape(&batch, None, &[2], &k).is_err());
    assert!(random::categorical(&logits, 3, &k).is_err());
    let lo = Array::from_slice(&[0.0f32, 0.0, 0.0], &[3]).unwrap();
    let hi = Array::from_slice(&[1.0f32, 1.0], &[2]).unwrap();
    assert!(random::truncated_normal(&lo, &hi, None, None, &k).is_err());
    assert!(random::normal(&[-1], Default::default(), &k).is_err());
    assert!(random::permutation(&Array::from_scalar(1.0f32), 3, &k).is_err());
}
