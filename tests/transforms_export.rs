//! Python -> file -> Rust: `scripts/golden/transforms.py` exported a function with Python MLX
//! 0.32.2 (`tests/data/transforms_python.mlxfn`); Rust imports and runs it.
//! One test per binary: imported graphs run on the thread that first used MLX (MLX 0.32.2).

mod support;

use mlx::core::export::import_function;
use support::golden::{array, assert_close, load};

#[test]
fn python_exported_function_runs_in_rust() {
    let g = load("transforms");
    let file = support::golden::data_file("transforms_python.mlxfn");
    let f = import_function(&file).unwrap();
    let out = f
        .call(&[array(&g["inputs"]["a"]), array(&g["inputs"]["b"])])
        .unwrap();
    let expected = g["export"]["outputs"].as_array().unwrap();
    assert_eq!(out.len(), expected.len());
    for (i, (o, e)) in out.iter().zip(expected).enumerate() {
        assert_close(o, e, &format!("imported output {i}"));
    }
}
