//! mlx-tree against Python MLX 0.32.2 (`scripts/golden/tree.py` -> `tests/data/tree.json`):
//! the flatten order and key paths of the documented data model equal what
//! `mlx.utils.tree_flatten` gives for the Python equivalent, and `Value::from_flat` rebuilds
//! what `mlx.utils.tree_unflatten` rebuilds.

mod support;

use std::collections::{BTreeMap, HashMap};

use foreign_cache::KvCache;
use mlx::core::Array;
use mlx::utils::{
    register, tree_flatten, tree_flatten_with_path, tree_unflatten, Registered, TreeNode, Value,
};
use serde_json::{json, Value as Json};
use support::golden::{array, assert_exact, load};

fn zero() -> Array {
    Array::from_scalar(0.0f32)
}

fn golden_paths(case: &Json) -> Vec<String> {
    case.as_array()
        .unwrap()
        .iter()
        .map(|pair| pair[0].as_str().unwrap().to_string())
        .collect()
}

/// Checks `tree` against a golden `[[path, record], ...]` list: the same paths in the same
/// order, and Python's leaves (in Python's order) unflatten into `T` with leaf i at path i.
fn check_against_python<T: TreeNode>(tree: &T, case: &Json, what: &str) {
    let ours: Vec<String> = tree_flatten_with_path(tree)
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        ours,
        golden_paths(case),
        "{what}: paths or their order differ"
    );

    let (_, def) = tree_flatten(tree).unwrap();
    let python_leaves: Vec<Array> = case
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| array(&pair[1]))
        .collect();
    let rebuilt: T = tree_unflatten(&def, python_leaves).unwrap();
    let expected: HashMap<&str, &Json> = case
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| (pair[0].as_str().unwrap(), &pair[1]))
        .collect();
    for (path, leaf) in tree_flatten_with_path(&rebuilt).unwrap() {
        assert_exact(leaf, expected[path.as_str()], &format!("{what}: {path}"));
    }
}

// ---- the nn.Module model of tree.py, as derived structs (attribute order = field order)

#[derive(TreeNode)]
struct Linear {
    weight: Array,
    bias: Option<Array>,
}

// Generated code resolved through the facade, as for a crate that depends on `mlx` only.
#[derive(TreeNode)]
#[tree(crate = "mlx::utils")]
struct RmsNorm {
    weight: Array,
    #[tree(static)]
    eps: f32,
}

#[derive(TreeNode)]
struct Embedding {
    weight: Array,
}

#[derive(TreeNode)]
struct Attention {
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
}

#[derive(TreeNode)]
struct Mlp {
    gate: Linear,
    up: Linear,
    down: Linear,
}

#[derive(TreeNode)]
struct Block {
    attn: Attention,
    mlp: Mlp,
    input_norm: RmsNorm,
    post_norm: RmsNorm,
}

#[derive(TreeNode)]
struct Model {
    embed: Embedding,
    layers: Vec<Block>,
    norm: RmsNorm,
    lm_head: Linear,
}

fn linear(bias: bool) -> Linear {
    Linear {
        weight: zero(),
        bias: bias.then(zero),
    }
}

fn norm() -> RmsNorm {
    RmsNorm {
        weight: zero(),
        eps: 1e-5,
    }
}

#[test]
fn model_parameters_flatten_like_python_modules() {
    let data = load("tree");
    let model = Model {
        embed: Embedding { weight: zero() },
        layers: (0..3)
            .map(|_| Block {
                attn: Attention {
                    wq: linear(false),
                    wk: linear(false),
                    wv: linear(false),
                    wo: linear(true),
                },
                mlp: Mlp {
                    gate: linear(false),
                    up: linear(false),
                    down: linear(false),
                },
                input_norm: norm(),
                post_norm: norm(),
            })
            .collect(),
        norm: norm(),
        lm_head: linear(true),
    };
    check_against_python(&model, &data["model"], "model.parameters()");
}

// ---- plain nested dicts/lists/tuples

#[derive(TreeNode)]
struct Alpha {
    y: Array,
    x: Vec<Array>,
}

#[derive(TreeNode)]
struct Nested {
    zeta: (Array, (Array, Array)),
    alpha: Alpha,
    mid: (Array,),
    empty: Vec<Array>,
    nested: (Vec<Array>, Vec<Array>, [Vec<Array>; 1]),
}

#[test]
fn nested_dicts_lists_tuples_flatten_like_python() {
    let data = load("tree");
    let l = || Value::Array(zero());
    // Insertion order as in tree.py (unsorted): a Value::Dict keeps it.
    let value = Value::dict([
        ("zeta", Value::list([l(), Value::Tuple(vec![l(), l()])])),
        (
            "alpha",
            Value::dict([("y", l()), ("x", Value::list([l()]))]),
        ),
        ("mid", Value::Tuple(vec![l()])),
        ("empty", Value::List(vec![])),
        (
            "nested",
            Value::list([
                Value::list([l(), l()]),
                Value::List(vec![]),
                Value::list([Value::list([l()])]),
            ]),
        ),
    ]);
    check_against_python(&value, &data["nested"], "nested Value");

    let typed = Nested {
        zeta: (zero(), (zero(), zero())),
        alpha: Alpha {
            y: zero(),
            x: vec![zero()],
        },
        mid: (zero(),),
        empty: vec![],
        nested: (vec![zero(), zero()], vec![], [vec![zero()]]),
    };
    check_against_python(&typed, &data["nested"], "nested typed");
}

#[derive(TreeNode)]
struct Maps {
    scales: HashMap<String, Array>,
    pair: (Array, BTreeMap<String, Array>),
}

#[test]
fn maps_flatten_like_python_dicts_with_sorted_keys() {
    let data = load("tree");
    let keys = ["b", "a10", "a2", "_x", "B"];
    let maps = Maps {
        scales: keys.iter().map(|k| (k.to_string(), zero())).collect(),
        pair: (
            zero(),
            keys[..2].iter().map(|k| (k.to_string(), zero())).collect(),
        ),
    };
    check_against_python(&maps, &data["sorted_maps"], "maps");
}

// ---- the two cache layouts

#[derive(TreeNode)]
struct LayerCache {
    keys: Array,
    values: Array,
}

#[derive(TreeNode)]
struct FieldCache {
    keys: Vec<Array>,
    values: Vec<Array>,
}

#[test]
fn cache_layouts_flatten_like_python() {
    let data = load("tree");
    let cache = || Array::from_slice(&[0.0f32, 0.0], &[1, 2]).unwrap();
    let per_layer: Vec<LayerCache> = (0..3)
        .map(|_| LayerCache {
            keys: cache(),
            values: cache(),
        })
        .collect();
    check_against_python(&per_layer, &data["cache_layouts"]["per_layer"], "per-layer");
    let per_field = FieldCache {
        keys: (0..3).map(|_| cache()).collect(),
        values: (0..3).map(|_| cache()).collect(),
    };
    let golden = &data["cache_layouts"]["per_field"];
    check_against_python(&per_field, golden, "per-field");

    // A foreign cache type, registered at runtime, flattens to the same paths.
    register::<KvCache>(
        "golden.KvCache",
        |c, f| {
            f.field_list("keys", c.keys());
            f.field_list("values", c.values());
            f.static_field("offset", &c.offset());
        },
        |u| {
            Ok(KvCache::from_parts(
                u.field("keys")?,
                u.field("values")?,
                u.static_field("offset")?,
            ))
        },
    )
    .unwrap();
    let foreign = Registered::new(KvCache::from_parts(
        (0..3).map(|_| cache()).collect(),
        (0..3).map(|_| cache()).collect(),
        7,
    ))
    .unwrap();
    check_against_python(&foreign, golden, "registered KvCache");
}

// ---- Python's tree_unflatten(pairs)

/// A Value as the order-preserving JSON of tree.py's `structure()`.
fn structure(v: &Value) -> Json {
    match v {
        Value::Array(a) => json!(a.item::<f32>().unwrap() as f64),
        Value::List(items) => json!({ "list": items.iter().map(structure).collect::<Vec<_>>() }),
        Value::Dict(m) => json!({
            "dict": m.iter().map(|(k, v)| json!([k, structure(v)])).collect::<Vec<_>>()
        }),
        other => panic!("tree_unflatten never builds {other:?}"),
    }
}

#[test]
fn from_flat_rebuilds_like_python_tree_unflatten() {
    let data = load("tree");
    for case in data["unflatten"].as_array().unwrap() {
        let pairs: Vec<(String, Array)> = case["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap().to_string(),
                    Array::from_scalar(p[1].as_f64().unwrap() as f32),
                )
            })
            .collect();
        let v = Value::from_flat(pairs).unwrap();
        assert_eq!(structure(&v), case["structure"], "pairs {}", case["pairs"]);
    }
}
