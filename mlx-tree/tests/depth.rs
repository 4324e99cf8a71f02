//! Trees 100,000 levels deep: every walk, the transforms and `Drop` handle them without
//! overflowing the stack (a deep `Value` killed the process in each of these before).

mod common;

use common::leaf;
use mlx_tree::{
    compile, tree_flatten, tree_flatten_with_path, tree_map, tree_structure, tree_unflatten, Array,
    TreeDef, Value,
};

const DEPTH: usize = 100_000;

/// `[[[...[leaf]...]]]`, `DEPTH` lists deep, built without recursion.
fn deep() -> Value {
    let mut v = Value::Array(leaf(1.0));
    for _ in 0..DEPTH {
        v = Value::List(vec![v]);
    }
    v
}

#[test]
fn a_deep_value_is_walked_mapped_and_dropped() -> mlx_tree::Result<()> {
    let v = deep();
    let paths = tree_flatten_with_path(&v)?;
    assert_eq!(paths.len(), 1);
    assert_eq!(paths[0].0.matches('.').count(), DEPTH - 1);
    let def = tree_structure(&v)?;
    assert_eq!(def.leaf_paths().len(), 1);
    let doubled: Value = tree_map(|a| Ok(a * 2.0), &v)?;
    let (leaves, _) = tree_flatten(&doubled)?;
    assert_eq!(leaves[0].item::<f32>()?, 2.0);
    let rebuilt: Value = tree_unflatten(&def, vec![leaf(3.0)])?;
    drop(rebuilt);
    drop(doubled);
    drop(v);
    Ok(())
}

#[test]
fn a_deep_value_serializes_and_its_structure_round_trips() -> mlx_tree::Result<()> {
    let v = deep();
    let def = tree_structure(&v)?;
    let json = serde_json::to_string(&def).expect("a TreeDef serializes");
    let back: TreeDef = serde_json::from_str(&json).expect("and reads back");
    assert_eq!(back, def);
    Ok(())
}

#[test]
fn a_deep_value_goes_through_compile() -> mlx_tree::Result<()> {
    let v = deep();
    let f = compile(|t: &Value| tree_map(|a| Ok(a + 1.0), t), None);
    // Traced once, then a cache hit.
    let _ = f.call(&v)?;
    let out = f.call(&v)?;
    let (leaves, _) = tree_flatten(&out)?;
    assert_eq!(leaves[0].item::<f32>()?, 2.0);
    let _ = Array::from_scalar(0.0f32);
    Ok(())
}
