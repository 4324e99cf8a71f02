//! Export/import of a tree function. MLX 0.32.2 binds an imported graph to the process's first
//! stream of the device, which belongs to the thread that first used MLX (see
//! `mlx_rs::export`), so everything here is one test: its thread is the first and only one to
//! touch MLX in this binary.

use mlx_rs::ops;
use mlx_tree::{export_function, import_function, tree_signature_path, Array, Result, TreeNode};

#[derive(TreeNode, Clone)]
struct Linear {
    weight: Array,
    bias: Option<Array>,
    #[tree(static)]
    activation: String,
}

#[derive(TreeNode, Debug)]
struct Out {
    y: Array,
    norms: Vec<Array>,
}

fn forward((l, x): &(Linear, Array)) -> Result<Out> {
    let mut y = ops::matmul(x, &l.weight)?;
    if let Some(b) = &l.bias {
        y = y + b;
    }
    if l.activation == "tanh" {
        y = ops::tanh(&y)?;
    }
    let norms = vec![(&y * &y).sum(None, false)?, l.weight.sum(None, false)?];
    Ok(Out { y, norms })
}

fn arange(n: i32, scale: f32, shape: &[i32]) -> Array {
    (ops::arange_to(n as f32).unwrap() * scale)
        .reshape(shape)
        .unwrap()
}

fn same(a: &Out, b: &Out) {
    assert_eq!(a.y.shape(), b.y.shape());
    assert_eq!(a.y.to_vec::<f32>().unwrap(), b.y.to_vec::<f32>().unwrap());
    assert_eq!(a.norms.len(), b.norms.len());
    for (x, y) in a.norms.iter().zip(&b.norms) {
        assert_eq!(x.item::<f32>().unwrap(), y.item::<f32>().unwrap());
    }
}

#[test]
fn exported_tree_function_imports_with_the_same_types() {
    let dir = std::env::temp_dir().join(format!("mlx-tree-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("linear.mlxfn");
    let input = (
        Linear {
            weight: arange(6, 0.1, &[3, 2]),
            bias: Some(Array::from_slice(&[0.5f32, -0.5], &[2]).unwrap()),
            activation: "tanh".into(),
        },
        arange(6, 0.2, &[2, 3]),
    );
    export_function(&file, forward, &input, None).unwrap();
    assert!(tree_signature_path(&file).exists());

    let imported = import_function::<(Linear, Array), Out>(&file).unwrap();
    same(&imported.call(&input).unwrap(), &forward(&input).unwrap());
    // New leaves, same structure.
    let mut other = input.clone();
    other.0.weight = &other.0.weight * -3.0;
    other.1 = &other.1 + 1.0;
    same(&imported.call(&other).unwrap(), &forward(&other).unwrap());
    assert!(imported
        .output_structure()
        .to_string()
        .contains("Out { y: *, norms: [*, *] }"));

    // Another structure or static data is a clear error, not a wrong result.
    let mut no_bias = input.clone();
    no_bias.0.bias = None;
    let e = imported.call(&no_bias).unwrap_err().to_string();
    assert!(e.contains("`0.bias`") && e.contains("Some vs None"), "{e}");
    let mut relu = input.clone();
    relu.0.activation = "relu".into();
    let e = imported.call(&relu).unwrap_err().to_string();
    assert!(e.contains("static data differs"), "{e}");

    // Importing as the wrong types fails at import.
    let e = import_function::<(Linear, Array), Array>(&file)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("output structure does not fit"), "{e}");
    let e = import_function::<Vec<Array>, Out>(&file)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("input structure does not fit"), "{e}");

    // Shapeless export: other batch sizes.
    let file = dir.join("linear_shapeless.mlxfn");
    export_function(&file, forward, &input, true).unwrap();
    let imported = import_function::<(Linear, Array), Out>(&file).unwrap();
    assert!(imported.shapeless());
    let mut wide = input.clone();
    wide.1 = arange(15, 0.1, &[5, 3]);
    same(&imported.call(&wide).unwrap(), &forward(&wide).unwrap());

    // A missing or corrupt signature is an Io error whose source says which (the OS error,
    // or InvalidData holding the JSON parser's error).
    let sig = tree_signature_path(&file);
    std::fs::write(&sig, "{ not json").unwrap();
    let e = import_function::<(Linear, Array), Out>(&file)
        .err()
        .unwrap();
    let source = io_source(&e);
    assert_eq!(source.kind(), std::io::ErrorKind::InvalidData, "{e}");
    assert!(source.get_ref().unwrap().is::<serde_json::Error>(), "{e:?}");
    assert!(e.to_string().contains("is not a tree signature"), "{e}");
    std::fs::remove_file(&sig).unwrap();
    let e = import_function::<(Linear, Array), Out>(&file)
        .err()
        .unwrap();
    assert_eq!(io_source(&e).kind(), std::io::ErrorKind::NotFound, "{e}");

    std::fs::remove_dir_all(&dir).ok();
}

fn io_source(e: &mlx_tree::Error) -> &std::io::Error {
    assert!(matches!(e, mlx_tree::Error::Io { .. }), "{e:?}");
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .unwrap_or_else(|| panic!("no io::Error source: {e:?}"))
}
