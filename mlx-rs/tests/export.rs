//! Export/import round trips. MLX 0.32.2 binds an imported graph to the process's first
//! stream of the device, which belongs to the thread that first used MLX (see the module
//! docs of `mlx_rs::export`), so everything here runs in one test: its thread is the first
//! and only one to touch MLX in this binary.

use mlx_rs::export::{export_function, exporter, import_function};
use mlx_rs::{ops, Array, Result};

fn fun(x: &[Array]) -> Result<Vec<Array>> {
    Ok(vec![
        ops::tanh(&ops::matmul(&x[0], &x[1])?)? + 1.0,
        x[0].sum(0, false)?,
    ])
}

fn arange(shape: &[i32]) -> Array {
    let n: i32 = shape.iter().product();
    (ops::arange_to(n as f32).unwrap() * 0.1)
        .reshape(shape)
        .unwrap()
}

fn assert_same(a: &[Array], b: &[Array]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.shape(), y.shape());
        assert_eq!(x.to_vec::<f32>().unwrap(), y.to_vec::<f32>().unwrap());
    }
}

#[test]
fn export_and_import_round_trips() {
    let dir = std::env::temp_dir().join(format!("mlx-rs-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (arange(&[2, 3]), arange(&[3, 4]));

    // Rust -> file -> Rust.
    let file = dir.join("fun.mlxfn");
    export_function(&file, fun, &[a.clone(), b.clone()], None).unwrap();
    let imported = import_function(&file).unwrap();
    assert_same(
        &imported.call(&[a.clone(), b.clone()]).unwrap(),
        &fun(&[a.clone(), b.clone()]).unwrap(),
    );
    // Other inputs of the same signature.
    let (a2, b2) = (&a * -2.0, &b + 3.0);
    assert_same(
        &imported.call(&[a2.clone(), b2.clone()]).unwrap(),
        &fun(&[a2, b2]).unwrap(),
    );
    // Not shapeless: another shape is an error, not a crash.
    let e = imported.call(&[arange(&[5, 3]), b.clone()]).unwrap_err();
    assert!(e.to_string().contains("import"), "{e}");

    // Shapeless export accepts other shapes of the same rank.
    let file = dir.join("fun_shapeless.mlxfn");
    export_function(&file, fun, &[a.clone(), b.clone()], true).unwrap();
    let imported = import_function(&file).unwrap();
    let (a5, b7) = (arange(&[5, 3]), arange(&[3, 7]));
    assert_same(
        &imported.call(&[a5.clone(), b7.clone()]).unwrap(),
        &fun(&[a5, b7]).unwrap(),
    );

    // The multi-trace exporter: one file, two signatures.
    let file = dir.join("fun_multi.mlxfn");
    let ex = exporter(&file, fun, None).unwrap();
    ex.call(&[a.clone(), b.clone()]).unwrap();
    let (a4, b4) = (arange(&[4, 2]), arange(&[2, 2]));
    ex.call(&[a4.clone(), b4.clone()]).unwrap();
    let dup = ex.call(&[a.clone(), b.clone()]).unwrap_err();
    assert!(dup.to_string().contains("twice"), "{dup}");
    ex.close();
    let imported = import_function(&file).unwrap();
    assert_same(
        &imported.call(&[a.clone(), b.clone()]).unwrap(),
        &fun(&[a.clone(), b.clone()]).unwrap(),
    );
    assert_same(
        &imported.call(&[a4.clone(), b4.clone()]).unwrap(),
        &fun(&[a4, b4]).unwrap(),
    );

    // Bad files are errors.
    assert!(import_function(dir.join("missing.mlxfn")).is_err());
    std::fs::write(dir.join("junk.mlxfn"), b"not a function").unwrap();
    assert!(import_function(dir.join("junk.mlxfn")).is_err());

    // The documented MLX 0.32.2 limitation: another thread cannot evaluate imported results.
    let file = dir.join("fun.mlxfn");
    let (a3, b3) = (a.clone(), b.clone());
    a3.eval().unwrap();
    b3.eval().unwrap();
    let on_other_thread = std::thread::spawn(move || {
        let f = import_function(&file)?;
        let out = f.call(&[a3, b3])?;
        out[0].eval()
    })
    .join()
    .unwrap();
    let e = on_other_thread.unwrap_err();
    assert!(e.to_string().contains("Stream"), "{e}");

    std::fs::remove_dir_all(&dir).unwrap();
}
