//! The quickstart's computations and random draws, compared with Python MLX 0.32.2
//! (`scripts/gen_golden.py` wrote `tests/data/core.json`). The same library code runs on both
//! sides, so float results must match bit for bit.

mod support;

use mlx::core::random::{self, NormalOptions, UniformOptions};
use mlx::core::{ops, Array, Dtype};
use support::golden::{assert_exact, load};

fn golden() -> serde_json::Value {
    load("core")
}

fn assert_matches(actual: &Array, expected: &serde_json::Value, what: &str) {
    assert_exact(actual, expected, what);
}

#[test]
fn golden_data_comes_from_the_wrapped_version() {
    assert_eq!(mlx::core::version().unwrap(), "0.32.2");
}

#[test]
fn quickstart_matches_python() {
    let g = &golden()["quickstart"];
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let b = ops::arange_to(6.0f32).unwrap().reshape(&[3, 2]).unwrap();
    let c = &a * 2.0 + 1.0;
    let m = ops::matmul(&c, &b).unwrap();
    let key = random::key(0).unwrap();
    assert_matches(&c, &g["c"], "c");
    assert_matches(&m, &g["matmul"], "matmul");
    assert_matches(&m.sum(None, false).unwrap(), &g["sum"], "sum");
    assert_matches(&m.mean(0, false).unwrap(), &g["mean_axis0"], "mean_axis0");
    assert_matches(
        &m.max(1, true).unwrap(),
        &g["max_axis1_keepdims"],
        "max_axis1_keepdims",
    );
    let normal = random::normal(&[2, 3], Default::default(), &key).unwrap();
    assert_matches(&normal, &g["normal"], "normal");
    let uniform = random::uniform(&[3], Default::default(), &key).unwrap();
    assert_matches(&uniform, &g["uniform"], "uniform");
}

#[test]
fn random_draws_match_python_for_the_same_key() {
    let g = &golden()["random"];
    for seed in [0u64, 1, 42] {
        let k = random::key(seed).unwrap();
        assert_matches(&k, &g[format!("key_{seed}")], "key");
        let n = random::normal(&[4, 5], Default::default(), &k).unwrap();
        assert_matches(&n, &g[format!("normal_{seed}_4x5")], "normal 4x5");
        let n = random::normal(&[7], NormalOptions::default().loc(2.0).scale(0.5), &k).unwrap();
        assert_matches(
            &n,
            &g[format!("normal_{seed}_loc_scale")],
            "normal loc/scale",
        );
        let u =
            random::uniform(&[3, 3], UniformOptions::default().low(-1.0).high(3.0), &k).unwrap();
        assert_matches(&u, &g[format!("uniform_{seed}_3x3")], "uniform");
    }
    let k3 = random::key(3).unwrap();
    let n = random::normal(&[5], NormalOptions::default().dtype(Dtype::Bfloat16), &k3).unwrap();
    assert_matches(&n, &g["normal_bf16"], "normal bf16");
    let split = random::split(&random::key(0).unwrap(), 3).unwrap();
    assert_matches(&split, &g["split_0"], "split");
}

#[test]
fn same_key_same_draw_different_key_different_draw() {
    let k0 = random::key(0).unwrap();
    let a = random::normal(&[16], Default::default(), &k0).unwrap();
    let b = random::normal(&[16], Default::default(), &random::key(0).unwrap()).unwrap();
    let c = random::normal(&[16], Default::default(), &random::key(1).unwrap()).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    assert_ne!(a.to_vec::<f32>().unwrap(), c.to_vec::<f32>().unwrap());
}
