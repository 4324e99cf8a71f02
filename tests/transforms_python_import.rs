//! Rust -> file -> Python: exports a function from Rust and has Python MLX 0.32.2 import and
//! run it. Needs a Python with MLX 0.32.2: `MLX_PYTHON=/path/to/python cargo test --release
//! --test transforms_python_import -- --ignored`.

use mlx::core::export::export_function;
use mlx::core::{ops, Array, Result};

fn fun(x: &[Array]) -> Result<Vec<Array>> {
    Ok(vec![
        ops::exp(&(&x[0] * &x[1]))? - 1.0,
        ops::matmul(&x[0], &x[1].t()?)?,
    ])
}

#[test]
#[ignore = "needs Python MLX 0.32.2; set MLX_PYTHON and run with --ignored"]
fn rust_exported_function_runs_in_python() {
    let python = std::env::var("MLX_PYTHON").expect("set MLX_PYTHON to a python with mlx 0.32.2");
    let dir = std::env::temp_dir().join(format!("mlx-rust-to-python-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("rust_fun.mlxfn");
    let a = (ops::arange_to(6.0f32).unwrap() * 0.25)
        .reshape(&[2, 3])
        .unwrap();
    let b = (ops::arange_to(6.0f32).unwrap() - 2.0)
        .reshape(&[2, 3])
        .unwrap();
    export_function(&file, fun, &[a.clone(), b.clone()], None).unwrap();
    let want = fun(&[a, b]).unwrap();
    let script = r#"
import sys, json, mlx.core as mx
f = mx.import_function(sys.argv[1])
a = (mx.arange(6.0) * 0.25).reshape(2, 3)
b = (mx.arange(6.0) - 2.0).reshape(2, 3)
print(json.dumps([o.tolist() for o in f(a, b)]))
"#;
    let out = std::process::Command::new(python)
        .args(["-c", script])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        let flat: Vec<f32> = g
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|row| {
                row.as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap() as f32)
            })
            .collect();
        assert_eq!(flat, w.to_vec::<f32>().unwrap());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
