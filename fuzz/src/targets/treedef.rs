//! `TreeDef` from JSON (its serde form: a flat pre-order list of nodes). A definition that
//! reads must behave: walking, printing, re-serializing to an equal definition, unflattening
//! placeholder leaves into a `Value`, and, as an exported function's `.tree.json` signature,
//! importing and calling the function.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use mlx_rs::Array;
use mlx_tree::{tree_structure, tree_unflatten, TreeDef, TreeNode, Value};

use super::{err, Ctx, Outcome, Seeds};

pub const TOKENS: &[&[u8]] = &[
    b"{\"kind\":\"leaf\"}",
    b"{\"kind\":\"none\"}",
    b"{\"kind\":\"list\",\"children\":1}",
    b"{\"kind\":\"dict\",\"children\":2}",
    b"{\"kind\":\"some\",\"children\":1}",
    b"{\"kind\":\"static\",\"key\":\"s\",\"value\":null}",
    b"{\"kind\":\"struct\",\"name\":\"S\",\"children\":1}",
    b"\"kind\"",
    b"\"key\"",
    b"\"name\"",
    b"\"children\"",
    b"\"value\"",
    b"\"tuple\"",
    b"\"variant\"",
    b"\"registered\"",
    b"\"\"",
    b"\".\"",
    b"[]",
    b"{}",
    b",",
];

/// Walks that cost O(nodes) per node stop here, so a long input stays fast.
const WALK_NODES: usize = 2000;
/// Unflattening makes one placeholder per leaf; more than this is skipped.
const MAX_LEAVES: usize = 4096;

fn hash_of(def: &TreeDef) -> u64 {
    let mut h = DefaultHasher::new();
    def.hash(&mut h);
    h.finish()
}

fn walk(def: &TreeDef) {
    let shown = def.to_string();
    assert!(!shown.is_empty());
    let paths = def.leaf_paths();
    assert_eq!(paths.len(), def.num_leaves(), "one path per leaf");
    if def.num_nodes() == 0 {
        return;
    }
    let root = def.root();
    assert_eq!(
        root.num_nodes(),
        def.num_nodes(),
        "the root spans every node"
    );
    for node in def.nodes().take(WALK_NODES) {
        let _ = (node.kind(), node.key(), node.path());
        let range = node.leaf_range();
        assert_eq!(range.len(), node.num_leaves());
        let children: usize = node.children().map(|c| c.num_nodes()).sum();
        assert_eq!(children + 1, node.num_nodes(), "children tile the subtree");
        if node.index() < 64 {
            let sub = node.subtree();
            assert_eq!(sub.num_leaves(), node.num_leaves());
        }
    }
    for path in paths.iter().take(WALK_NODES) {
        let _ = def.node_at(path);
    }
}

pub fn run(ctx: &mut Ctx, data: &[u8]) -> Outcome {
    let text = std::str::from_utf8(data).map_err(err)?;
    let def: TreeDef = serde_json::from_str(text).map_err(err)?;
    walk(&def);
    let json = serde_json::to_string(&def)
        .unwrap_or_else(|e| panic!("a TreeDef read from JSON does not serialize: {e}"));
    let back: TreeDef = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("a serialized TreeDef does not read back: {e}\n{json}"));
    assert!(
        back == def,
        "the TreeDef changed in a round trip:\n{text}\n{json}"
    );
    assert_eq!(hash_of(&back), hash_of(&def), "equal TreeDefs hash alike");
    assert_eq!(back.to_string(), def.to_string());

    if def.num_leaves() <= MAX_LEAVES {
        let leaves = vec![Array::from_scalar(0.0f32); def.num_leaves()];
        if let Ok(value) = tree_unflatten::<Value>(&def, leaves) {
            let again = tree_structure(&value).map_err(err)?;
            assert_eq!(again.num_leaves(), def.num_leaves());
        }
        as_signature(ctx, text, &def)?;
    }
    Ok(())
}

/// Uses the input as both structures of an exported function's signature, imports the
/// function (a reference graph of one array) and calls it when the structure can be built.
fn as_signature(ctx: &mut Ctx, text: &str, def: &TreeDef) -> Outcome {
    let graph = reference_graph(ctx)?;
    let file = ctx.write("mlxfn", &graph)?;
    let sig = format!(
        r#"{{"format":"mlx-tree.export","version":1,"shapeless":false,"input":{text},"output":{text}}}"#
    );
    let sig_file = super::TempFile(mlx_tree::tree_signature_path(&file.0));
    std::fs::write(&sig_file.0, sig).map_err(err)?;
    let Ok(f) = mlx_tree::import_function::<Value, Value>(&file.0) else {
        return Ok(());
    };
    let x = Array::from_slice(&[1.0f32, 2.0], &[2]).map_err(err)?;
    let leaves = vec![x; def.num_leaves()];
    if let Ok(input) = tree_unflatten::<Value>(def, leaves) {
        if let Ok(out) = f.call(&input) {
            for leaf in mlx_tree::tree_leaves(&out) {
                super::touch(leaf)?;
            }
        }
    }
    Ok(())
}

/// The bytes of `.mlxfn` of `x -> 2 * x` on a float32 `[2]`, exported once per process.
fn reference_graph(ctx: &mut Ctx) -> Result<Vec<u8>, String> {
    if ctx.reference_fn.is_none() {
        let path = ctx.dir().join("reference.mlxfn");
        let x = Array::from_slice(&[1.0f32, 2.0], &[2]).map_err(err)?;
        mlx_rs::export::export_function(&path, |a: &[Array]| Ok(vec![&a[0] * 2.0]), &[x], None)
            .map_err(err)?;
        ctx.reference_fn = Some(path);
    }
    let path = ctx.reference_fn.as_ref().expect("set just above");
    super::read_back(path)
}

/// Struct, variant and static nodes, for a seed.
#[derive(TreeNode)]
struct Layer {
    w: Array,
    #[tree(static)]
    dims: i32,
    #[tree(static)]
    label: String,
    #[tree(static)]
    scale: f32,
    cache: Vec<Cache>,
}

#[derive(TreeNode)]
enum Cache {
    Kv {
        keys: Array,
        #[tree(static)]
        offset: usize,
    },
    Empty,
}

pub fn seeds(_ctx: &mut Ctx) -> Result<Seeds, String> {
    use mlx_tree::tree_flatten;
    let a = || Array::from_scalar(1.0f32);
    let mut out = Vec::new();
    let mut add = |name: &str, def: TreeDef| -> Result<(), String> {
        let json = serde_json::to_vec(&def).map_err(err)?;
        out.push((format!("rust-{name}.json"), json));
        Ok(())
    };
    add("leaf", tree_flatten(&a()).map_err(err)?.1)?;
    add(
        "nested",
        tree_flatten(&Value::dict([
            ("w", Value::Array(a())),
            (
                "layers",
                Value::List(vec![
                    Value::Tuple(vec![Value::Array(a()), Value::None]),
                    Value::dict([("b.c", Value::Array(a()))]),
                ]),
            ),
            ("empty", Value::List(vec![])),
        ]))
        .map_err(err)?
        .1,
    )?;
    add(
        "option-vec",
        tree_flatten(&(Some(a()), None::<Array>, vec![a(), a()]))
            .map_err(err)?
            .1,
    )?;
    add("unit", tree_flatten(&()).map_err(err)?.1)?;
    // A deep chain: readers of the flat form must not recurse.
    let mut deep = Value::Array(a());
    for _ in 0..300 {
        deep = Value::List(vec![deep]);
    }
    add("deep", tree_flatten(&deep).map_err(err)?.1)?;
    // Struct, variant and static nodes come from derived types.
    add(
        "struct-static",
        tree_flatten(&Layer {
            w: a(),
            dims: 8,
            label: "attn".into(),
            scale: -0.0,
            cache: vec![
                Cache::Kv {
                    keys: a(),
                    offset: 3,
                },
                Cache::Empty,
            ],
        })
        .map_err(err)?
        .1,
    )?;
    Ok(out)
}
