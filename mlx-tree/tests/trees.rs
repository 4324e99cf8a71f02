//! mlx-tree: built-in impls, derive, registry, Value, utilities, errors and serde.

// The derive's output must compile where unsafe code is forbidden.
#![forbid(unsafe_code)]

mod common;

use std::collections::{BTreeMap, HashMap};

use common::{err, leaf, paths, register_foreign, values};
use foreign_cache::{KvCache, SsmState};
use mlx_tree::{
    register, tree_assign_leaves, tree_flatten, tree_flatten_with_path, tree_leaves, tree_map,
    tree_map_in_place, tree_map_n, tree_map_with_path, tree_merge, tree_reduce, tree_structure,
    tree_unflatten, Array, NodeKind, Registered, TreeDef, TreeNode, Value,
};
use mlx_tree::{StaticData, StaticValue};

/// Flatten, then unflatten into the same type: same structure, same leaves.
fn roundtrip<T: TreeNode>(tree: &T) -> T {
    let (leaves, def) = tree_flatten(tree).unwrap();
    let back: T = tree_unflatten(&def, leaves.into_iter().cloned().collect()).unwrap();
    assert_eq!(tree_structure(&back).unwrap(), def);
    assert_eq!(values(&back), values(tree));
    back
}

// ---------------------------------------------------------------- built-in impls

#[test]
fn builtin_containers_flatten_in_documented_order() {
    let tree = (
        vec![leaf(1.0), leaf(2.0)],
        [leaf(3.0), leaf(4.0)],
        Some(Box::new(leaf(5.0))),
        None::<Array>,
        (),
        BTreeMap::from([("b".to_string(), leaf(7.0)), ("a".to_string(), leaf(6.0))]),
    );
    assert_eq!(values(&tree), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    assert_eq!(
        paths(&tree),
        ["0.0", "0.1", "1.0", "1.1", "2", "5.a", "5.b"]
    );
    roundtrip(&tree);
    let def = tree_structure(&tree).unwrap();
    assert_eq!(def.num_leaves(), 7);
    assert_eq!(
        def.to_string(),
        r#"TreeDef(([*, *], [*, *], Some(*), None, (), {"a": *, "b": *}))"#
    );
}

#[test]
fn hashmap_flattens_in_sorted_key_order_like_btreemap() {
    let keys = ["zeta", "alpha", "mid", "a10", "a2", "B"];
    let hash: HashMap<String, Array> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.to_string(), leaf(i as f32)))
        .collect();
    let btree: BTreeMap<String, Array> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.to_string(), leaf(i as f32)))
        .collect();
    assert_eq!(paths(&hash), paths(&btree));
    assert_eq!(values(&hash), values(&btree));
    let mut sorted = keys.map(str::to_string).to_vec();
    sorted.sort();
    assert_eq!(paths(&hash), sorted);
    // Same structure, so a HashMap's leaves unflatten into a BTreeMap.
    let (leaves, def) = tree_flatten(&hash).unwrap();
    let as_btree: BTreeMap<String, Array> =
        tree_unflatten(&def, leaves.into_iter().cloned().collect()).unwrap();
    assert_eq!(values(&as_btree), values(&btree));
    // leaves_mut visits in the same sorted order.
    let mut hash = hash;
    let mut seen = Vec::new();
    hash.leaves_mut(&mut |a: &mut Array| seen.push(a.item::<f32>().unwrap()))
        .unwrap();
    assert_eq!(seen, values(&btree));
}

#[test]
fn tuples_up_to_twelve() {
    let t12 = (
        leaf(0.0),
        leaf(1.0),
        leaf(2.0),
        leaf(3.0),
        leaf(4.0),
        leaf(5.0),
        leaf(6.0),
        leaf(7.0),
        leaf(8.0),
        leaf(9.0),
        leaf(10.0),
        vec![leaf(11.0)],
    );
    assert_eq!(
        values(&roundtrip(&t12)),
        (0..12).map(|i| i as f32).collect::<Vec<_>>()
    );
    assert_eq!(paths(&t12)[11], "11.0");
    assert_eq!(
        tree_structure(&(leaf(0.0),)).unwrap().to_string(),
        "TreeDef((*,))"
    );
}

#[test]
fn option_is_transparent_in_paths_but_part_of_the_structure() {
    let some = vec![Some(leaf(1.0)), None];
    let none = vec![None, Some(leaf(1.0))];
    assert_eq!(paths(&some), ["0"]);
    assert_eq!(paths(&none), ["1"]);
    assert_ne!(
        tree_structure(&some).unwrap(),
        tree_structure(&none).unwrap()
    );
    roundtrip(&some);
    let nested: Option<Option<Array>> = Some(None);
    let back = roundtrip(&nested);
    assert!(matches!(back, Some(None)));
}

#[test]
fn fixed_array_checks_its_length() {
    let three = vec![leaf(1.0), leaf(2.0), leaf(3.0)];
    let (leaves, def) = tree_flatten(&three).unwrap();
    let msg = err(tree_unflatten::<[Array; 2]>(
        &def,
        leaves.into_iter().cloned().collect(),
    ));
    assert!(
        msg.contains("expected a list of 2, found a list of 3"),
        "{msg}"
    );
}

// ---------------------------------------------------------------- derive

#[derive(TreeNode, Debug)]
struct Linear {
    weight: Array,
    bias: Option<Array>,
}

#[derive(TreeNode)]
struct Attention {
    #[tree(rename = "q_proj")]
    wq: Linear,
    wk: Linear,
    #[tree(static)]
    n_heads: usize,
    #[tree(static)]
    rope_theta: f32,
    #[tree(skip)]
    scratch: Vec<u8>,
}

#[derive(TreeNode)]
struct Pair(Array, #[tree(static)] u8, Array);

#[derive(TreeNode, Debug, PartialEq)]
struct Marker;

#[derive(TreeNode)]
struct Generic<T, S> {
    items: Vec<T>,
    #[tree(static)]
    tag: S,
}

#[derive(StaticData, Debug, Clone, PartialEq)]
enum Mode {
    Train,
    Eval { dropout: f32 },
}

#[derive(TreeNode)]
enum Cache {
    Kv {
        keys: Array,
        values: Array,
        #[tree(static)]
        offset: usize,
    },
    Ssm(Array, #[tree(skip)] u32),
    #[tree(rename = "Nothing")]
    Empty,
}

fn linear(w: f32, b: Option<f32>) -> Linear {
    Linear {
        weight: leaf(w),
        bias: b.map(leaf),
    }
}

fn attention(n_heads: usize) -> Attention {
    Attention {
        wq: linear(1.0, Some(2.0)),
        wk: linear(3.0, None),
        n_heads,
        rope_theta: 10000.0,
        scratch: vec![1, 2, 3],
    }
}

#[test]
fn derive_named_struct_with_static_skip_rename() {
    let a = attention(8);
    assert_eq!(paths(&a), ["q_proj.weight", "q_proj.bias", "wk.weight"]);
    assert_eq!(values(&a), [1.0, 2.0, 3.0]);
    let def = tree_structure(&a).unwrap();
    assert_eq!(
        def.to_string(),
        "TreeDef(Attention { q_proj: Linear { weight: *, bias: Some(*) }, \
         wk: Linear { weight: *, bias: None }, n_heads=8, rope_theta=10000.0 })"
    );
    let back = roundtrip(&a);
    assert_eq!(back.n_heads, 8);
    assert_eq!(back.rope_theta, 10000.0);
    assert!(
        back.scratch.is_empty(),
        "skipped fields are rebuilt with Default"
    );
    // Static data is part of the structure.
    assert_ne!(def, tree_structure(&attention(4)).unwrap());
    assert_eq!(def, tree_structure(&attention(8)).unwrap());
}

#[test]
fn derive_tuple_unit_and_generic_structs() {
    let p = Pair(leaf(1.0), 7, leaf(2.0));
    assert_eq!(paths(&p), ["0", "2"]);
    let back = roundtrip(&p);
    assert_eq!(back.1, 7);

    let m = roundtrip(&Marker);
    assert_eq!(m, Marker);
    assert_eq!(
        tree_structure(&Marker).unwrap().to_string(),
        "TreeDef(Marker)"
    );
    assert_eq!(tree_structure(&Marker).unwrap().num_leaves(), 0);

    let g = Generic {
        items: vec![linear(1.0, None), linear(2.0, Some(3.0))],
        tag: Mode::Eval { dropout: 0.5 },
    };
    assert_eq!(
        paths(&g),
        ["items.0.weight", "items.1.weight", "items.1.bias"]
    );
    let back = roundtrip(&g);
    assert_eq!(back.tag, Mode::Eval { dropout: 0.5 });
    let g2 = Generic {
        items: vec![leaf(1.0)],
        tag: Mode::Train,
    };
    assert_eq!(roundtrip(&g2).tag, Mode::Train);
    assert!(tree_structure(&g2)
        .unwrap()
        .to_string()
        .contains("tag=Train"));
}

#[test]
fn derive_enums_record_the_variant() {
    let kv = Cache::Kv {
        keys: leaf(1.0),
        values: leaf(2.0),
        offset: 5,
    };
    let ssm = Cache::Ssm(leaf(3.0), 9);
    assert_eq!(paths(&kv), ["keys", "values"]);
    assert_eq!(paths(&ssm), ["0"]);
    let def_kv = tree_structure(&kv).unwrap();
    assert_eq!(
        def_kv.to_string(),
        "TreeDef(Cache::Kv { keys: *, values: *, offset=5 })"
    );
    assert_eq!(
        tree_structure(&Cache::Empty).unwrap().to_string(),
        "TreeDef(Cache::Nothing)"
    );
    match roundtrip(&kv) {
        Cache::Kv { offset, .. } => assert_eq!(offset, 5),
        _ => panic!("wrong variant"),
    }
    match roundtrip(&ssm) {
        Cache::Ssm(_, skipped) => assert_eq!(skipped, 0),
        _ => panic!("wrong variant"),
    }
    assert!(matches!(roundtrip(&Cache::Empty), Cache::Empty));
    // Another variant is another structure.
    assert_ne!(def_kv, tree_structure(&ssm).unwrap());
}

/// A layer's mixer: attention or a state-space block, under the layer's key either way.
#[derive(TreeNode)]
#[tree(transparent)]
enum Mixer {
    Attention(Box<Attention>),
    Ssm(SsmBlock),
}

#[derive(TreeNode)]
struct SsmBlock {
    a_log: Array,
}

/// A generic variant has no name known to the derive: `other` reads it.
#[derive(TreeNode)]
#[tree(transparent)]
enum FeedForward<S> {
    Dense(Linear),
    #[tree(other)]
    Sparse(S),
}

#[derive(TreeNode)]
#[tree(transparent)]
struct Wrapped(Linear);

/// A leaf or a struct.
#[derive(TreeNode)]
#[tree(transparent)]
enum Scale {
    Scalar(Array),
    PerChannel(Linear),
}

#[derive(TreeNode)]
struct MixerLayer {
    mixer: Mixer,
    mlp: FeedForward<SsmBlock>,
    norm: Wrapped,
}

#[test]
fn derive_transparent_types_are_their_value() {
    let attn = MixerLayer {
        mixer: Mixer::Attention(Box::new(attention(4))),
        mlp: FeedForward::Dense(linear(4.0, None)),
        norm: Wrapped(linear(5.0, Some(6.0))),
    };
    assert_eq!(
        paths(&attn),
        [
            "mixer.q_proj.weight",
            "mixer.q_proj.bias",
            "mixer.wk.weight",
            "mlp.weight",
            "norm.weight",
            "norm.bias"
        ]
    );
    // No node of their own: the structure is the held value's.
    assert_eq!(
        tree_structure(&Wrapped(linear(1.0, None))).unwrap(),
        tree_structure(&linear(1.0, None)).unwrap()
    );
    let back = roundtrip(&attn);
    assert!(matches!(back.mixer, Mixer::Attention(ref a) if a.n_heads == 4));
    assert!(matches!(back.mlp, FeedForward::Dense(_)));

    let ssm = MixerLayer {
        mixer: Mixer::Ssm(SsmBlock { a_log: leaf(7.0) }),
        mlp: FeedForward::Sparse(SsmBlock { a_log: leaf(8.0) }),
        norm: Wrapped(linear(9.0, None)),
    };
    assert_eq!(paths(&ssm), ["mixer.a_log", "mlp.a_log", "norm.weight"]);
    let mut back = roundtrip(&ssm);
    assert!(matches!(back.mixer, Mixer::Ssm(_)));
    assert!(matches!(back.mlp, FeedForward::Sparse(_)));
    tree_map_in_place(|x| Ok(x * 2.0), &mut back).unwrap();
    assert_eq!(values(&back), [14.0, 16.0, 18.0]);

    let scales = (
        Scale::Scalar(leaf(1.0)),
        Scale::PerChannel(linear(2.0, None)),
    );
    let back = roundtrip(&scales);
    assert!(matches!(back, (Scale::Scalar(_), Scale::PerChannel(_))));

    // A node that is none of the variants' is an error naming them, with its path.
    let other = (linear(1.0, None),);
    let (leaves, def) = tree_flatten(&other).unwrap();
    let msg = err(tree_unflatten::<(Mixer,)>(
        &def,
        leaves.into_iter().cloned().collect(),
    ));
    assert!(
        msg.contains("expected a Mixer (one of Attention, SsmBlock), found struct `Linear`"),
        "{msg}"
    );
}

#[test]
fn derive_leaves_mut_follows_flatten_order() {
    let mut a = attention(2);
    let mut next = 10.0;
    a.leaves_mut(&mut |x: &mut Array| {
        *x = leaf(next);
        next += 1.0;
    })
    .unwrap();
    assert_eq!(values(&a), [10.0, 11.0, 12.0]);
    let mut kv = Cache::Kv {
        keys: leaf(1.0),
        values: leaf(2.0),
        offset: 0,
    };
    tree_map_in_place(|x| Ok(x * 3.0), &mut kv).unwrap();
    assert_eq!(values(&kv), [3.0, 6.0]);
}

#[test]
fn derive_unflatten_checks_type_and_fields() {
    let lin = linear(1.0, None);
    let (leaves, def) = tree_flatten(&lin).unwrap();
    let leaves: Vec<Array> = leaves.into_iter().cloned().collect();
    let msg = err(tree_unflatten::<Attention>(&def, leaves.clone()));
    assert!(
        msg.contains("at the root: expected struct `Attention`, found struct `Linear`"),
        "{msg}"
    );
    // Same type name, different fields.
    #[derive(TreeNode)]
    #[tree(rename = "Linear")]
    struct Other {
        w: Array,
        bias: Option<Array>,
    }
    let msg = err(tree_unflatten::<Other>(&def, leaves));
    assert!(msg.contains("expected field `w`, found `weight`"), "{msg}");
}

// ---------------------------------------------------------------- registry

#[derive(TreeNode)]
struct Decoder {
    layers: Vec<Linear>,
    caches: Vec<Registered<KvCache>>,
    state: Option<Registered<SsmState>>,
}

fn kv(k: f32, v: f32, offset: usize) -> Registered<KvCache> {
    Registered::new(KvCache::from_parts(vec![leaf(k)], vec![leaf(v)], offset)).unwrap()
}

fn decoder() -> Decoder {
    register_foreign();
    Decoder {
        layers: vec![linear(1.0, None)],
        caches: vec![kv(2.0, 3.0, 4), kv(5.0, 6.0, 4)],
        state: Some(
            Registered::new(SsmState {
                conv: leaf(7.0),
                ssm: leaf(8.0),
            })
            .unwrap(),
        ),
    }
}

#[test]
fn registered_foreign_type_is_an_interior_node() {
    let d = decoder();
    assert_eq!(
        paths(&d),
        [
            "layers.0.weight",
            "caches.0.keys.0",
            "caches.0.values.0",
            "caches.1.keys.0",
            "caches.1.values.0",
            "state.conv",
            "state.ssm"
        ]
    );
    let def = tree_structure(&d).unwrap();
    assert!(
        def.to_string()
            .contains("caches: [@foreign_cache.KvCache { keys: [*], values: [*], offset=4 }, "),
        "{def}"
    );
    let back = roundtrip(&d);
    assert_eq!(back.caches[1].offset(), 4);
    assert_eq!(back.caches[0].name(), "foreign_cache.KvCache");

    // tree_map gives the same type back, foreign values included.
    let doubled: Decoder = tree_map(|x| Ok(x * 2.0), &d).unwrap();
    assert_eq!(values(&doubled), [2.0, 4.0, 6.0, 10.0, 12.0, 14.0, 16.0]);
    assert_eq!(doubled.caches[0].keys()[0].item::<f32>().unwrap(), 4.0);

    // Static data of a registered type is part of the structure.
    let mut other = decoder();
    other.caches[1] = kv(5.0, 6.0, 5);
    let msg = err(tree_map_n(|x, _| Ok(x.clone()), &d, &[&other]));
    assert!(
        msg.contains("static data differs at `caches.1.offset`: 4 vs 5"),
        "{msg}"
    );
}

#[test]
fn registered_leaves_mut_rebuilds_the_foreign_value() {
    let mut d = decoder();
    tree_map_in_place(|x| Ok(x + 100.0), &mut d).unwrap();
    assert_eq!(
        values(&d),
        [101.0, 102.0, 103.0, 105.0, 106.0, 107.0, 108.0]
    );
    assert_eq!(d.state.as_ref().unwrap().ssm.item::<f32>().unwrap(), 108.0);
    let leaves: Vec<Array> = (0..7).map(|i| leaf(i as f32)).collect();
    tree_assign_leaves(&mut d, leaves).unwrap();
    assert_eq!(values(&d), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(d.caches[1].offset(), 4, "static data survives the rebuild");
}

#[test]
fn registering_twice_is_an_error() {
    struct Once1(#[allow(dead_code)] Array);
    struct Once2;
    register::<Once1>(
        "tests.Once1",
        |v, f| f.field("0", &v.0),
        |u| Ok(Once1(u.field("0")?)),
    )
    .unwrap();
    let msg = err(register::<Once1>(
        "tests.Once1.again",
        |v, f| f.field("0", &v.0),
        |u| Ok(Once1(u.field("0")?)),
    ));
    assert!(
        msg.contains("is already registered as a tree node"),
        "{msg}"
    );
    let msg = err(register::<Once2>("tests.Once1", |_, _| {}, |_| Ok(Once2)));
    assert!(
        msg.contains("name `tests.Once1` is already registered"),
        "{msg}"
    );
    assert!(mlx_tree::is_registered::<Once1>());
    assert!(!mlx_tree::is_registered::<Once2>());
    assert_eq!(mlx_tree::registered_name::<Once1>(), Some("tests.Once1"));
    let msg = err(register::<Once2>("", |_, _| {}, |_| Ok(Once2)));
    assert!(msg.contains("non-empty name"), "{msg}");
}

#[test]
fn unregistered_type_is_an_error_not_a_panic() {
    struct Unknown;
    let msg = err(Registered::new(Unknown));
    assert!(msg.contains("is not registered as a tree node"), "{msg}");
    assert!(Value::registered(Unknown).is_err());
}

// ---------------------------------------------------------------- Value

#[test]
fn value_dict_keeps_insertion_order() {
    let v = Value::dict([
        (
            "zeta",
            Value::list([leaf(1.0).into(), Value::Tuple(vec![leaf(2.0).into()])]),
        ),
        (
            "alpha",
            Value::dict([("y", leaf(3.0).into()), ("x", leaf(4.0).into())]),
        ),
        ("none", Value::None),
    ]);
    assert_eq!(paths(&v), ["zeta.0", "zeta.1.0", "alpha.y", "alpha.x"]);
    assert_eq!(
        tree_structure(&v).unwrap().to_string(),
        r#"TreeDef({"zeta": [*, (*,)], "alpha": {"y": *, "x": *}, "none": None})"#
    );
    roundtrip(&v);
    assert_eq!(
        v.get_path("alpha.x")
            .unwrap()
            .as_array()
            .unwrap()
            .item::<f32>()
            .unwrap(),
        4.0
    );
    let copy = v.try_clone().unwrap();
    assert_eq!(values(&copy), values(&v));
}

#[test]
fn value_holds_registered_nodes() {
    register_foreign();
    let v = Value::dict([
        (
            "cache",
            Value::registered(KvCache::from_parts(vec![leaf(1.0)], vec![leaf(2.0)], 3)).unwrap(),
        ),
        ("w", leaf(4.0).into()),
    ]);
    assert_eq!(paths(&v), ["cache.keys.0", "cache.values.0", "w"]);
    let back = roundtrip(&v);
    match back.get("cache") {
        Some(Value::Registered(r)) => {
            assert_eq!(r.name(), "foreign_cache.KvCache");
            assert_eq!(r.downcast_ref::<KvCache>().unwrap().offset(), 3);
        }
        other => panic!("expected a registered node, got {other:?}"),
    }
    let mut v = v;
    tree_map_in_place(|x| Ok(x * 10.0), &mut v).unwrap();
    assert_eq!(values(&v), [10.0, 20.0, 40.0]);
    let copy = v.try_clone().unwrap();
    assert_eq!(values(&copy), [10.0, 20.0, 40.0]);
}

#[test]
fn value_unflattens_from_a_typed_structure() {
    let d = decoder();
    let (leaves, def) = tree_flatten(&d).unwrap();
    let v: Value = tree_unflatten(&def, leaves.into_iter().cloned().collect()).unwrap();
    // Structs become dicts (static data dropped), Some(x) becomes x, registered nodes stay.
    assert_eq!(paths(&v), paths(&d));
    assert!(matches!(v.get_path("caches.0"), Some(Value::Registered(_))));
    assert!(matches!(v.get_path("layers.0.bias"), Some(Value::None)));
}

// ---------------------------------------------------------------- utilities

#[test]
fn tree_map_n_and_structure_mismatch_errors_name_the_path() {
    let a = Decoder {
        layers: vec![linear(1.0, None), linear(2.0, Some(3.0))],
        caches: vec![],
        state: None,
    };
    let b = Decoder {
        layers: vec![linear(10.0, None), linear(20.0, Some(30.0))],
        caches: vec![],
        state: None,
    };
    let sum = tree_map_n(|x, rest| Ok(x + rest[0]), &a, &[&b]).unwrap();
    assert_eq!(values(&sum), [11.0, 22.0, 33.0]);

    // Type differs.
    let c = Decoder {
        layers: vec![linear(1.0, None), linear(2.0, None)],
        caches: vec![],
        state: None,
    };
    let msg = err(tree_map_n(|x, _| Ok(x.clone()), &a, &[&c]));
    assert!(
        msg.contains("tree 1 does not match the first tree: tree structures differ at `layers.1.bias`: Some vs None"),
        "{msg}"
    );
    // Length differs.
    let d = Decoder {
        layers: vec![linear(1.0, None)],
        caches: vec![],
        state: None,
    };
    let msg = err(tree_map_n(|x, _| Ok(x.clone()), &a, &[&d]));
    assert!(msg.contains("at `layers`: length 2 vs 1"), "{msg}");
    // Keys differ.
    let m1 = BTreeMap::from([("a".to_string(), leaf(1.0)), ("b".to_string(), leaf(2.0))]);
    let m2 = BTreeMap::from([("a".to_string(), leaf(1.0)), ("c".to_string(), leaf(2.0))]);
    let msg = err(tree_map_n(|x, _| Ok(x.clone()), &m1, &[&m2]));
    assert!(msg.contains("at the root: keys [a, b] vs [a, c]"), "{msg}");
    // Static data differs.
    let msg = err(tree_map_n(
        |x, _| Ok(x.clone()),
        &attention(8),
        &[&attention(4)],
    ));
    assert!(
        msg.contains("static data differs at `n_heads`: 8 vs 4"),
        "{msg}"
    );
}

#[test]
fn wrong_leaf_count_and_wrong_structure_are_errors() {
    let def = tree_structure(&attention(1)).unwrap();
    let msg = err(tree_unflatten::<Attention>(&def, vec![leaf(1.0)]));
    assert!(
        msg.contains("wrong number of leaves: the structure has 3 leaves, 1 were given"),
        "{msg}"
    );
    let def = tree_structure(&vec![vec![leaf(1.0)], vec![leaf(2.0)]]).unwrap();
    let msg = err(tree_unflatten::<Vec<(Array,)>>(
        &def,
        vec![leaf(1.0), leaf(2.0)],
    ));
    assert!(
        msg.contains("at `0`: expected a tuple of 1, found a list of 1"),
        "{msg}"
    );
    let msg = err(tree_assign_leaves(&mut vec![leaf(1.0)], vec![]));
    assert!(
        msg.contains("the structure has 1 leaves, 0 were given"),
        "{msg}"
    );
}

#[test]
fn tree_map_with_path_reduce_and_leaves() {
    let a = attention(2);
    let mut seen = Vec::new();
    let out = tree_map_with_path(
        |p, x| {
            seen.push(p.to_string());
            Ok(x * 2.0)
        },
        &a,
    )
    .unwrap();
    assert_eq!(seen, paths(&a));
    assert_eq!(values(&out), [2.0, 4.0, 6.0]);
    let total = tree_reduce(|acc, x| Ok(acc + x.item::<f32>()?), &a, 0.0f32).unwrap();
    assert_eq!(total, 6.0);
    assert_eq!(tree_leaves(&a).len(), 3);
    let flat = tree_flatten_with_path(&a).unwrap();
    assert_eq!(flat[2].0, "wk.weight");
    assert_eq!(flat[2].1.item::<f32>().unwrap(), 3.0);
    // An error from `f` stops the map.
    let msg = err(tree_map(
        |_| Err(mlx_tree::Error::InvalidArgument("boom".into())),
        &a,
    ));
    assert_eq!(msg, "boom");
}

#[test]
fn tree_merge_is_a_deep_update() {
    // Dicts merge key-wise, lists position-wise, None/empty count as missing.
    let a = Value::dict([
        ("w", leaf(1.0).into()),
        ("layers", Value::list([leaf(2.0).into()])),
        ("empty", Value::List(vec![])),
    ]);
    let b = Value::dict([
        ("b", leaf(3.0).into()),
        ("layers", Value::list([Value::None, leaf(4.0).into()])),
        ("empty", Value::list([leaf(5.0).into()])),
    ]);
    let m = tree_merge(&a, &b, None).unwrap();
    assert_eq!(paths(&m), ["w", "layers.0", "layers.1", "empty.0", "b"]);
    assert_eq!(values(&m), [1.0, 2.0, 4.0, 5.0, 3.0]);

    // Typed: Option fields fill in.
    let x = Linear {
        weight: leaf(1.0),
        bias: None,
    };
    let y = Linear {
        weight: leaf(10.0),
        bias: Some(leaf(2.0)),
    };
    let msg = err(tree_merge(&x, &y, None));
    assert!(
        msg.contains("cannot merge at `weight`: both trees hold a leaf here"),
        "{msg}"
    );
    let merged = tree_merge(&x, &y, Some(&mut |p: &Array, q: &Array| Ok(p + q))).unwrap();
    assert_eq!(values(&merged), [11.0, 2.0]);

    // Different static data cannot merge.
    let msg = err(tree_merge(
        &attention(1),
        &attention(2),
        Some(&mut |p: &Array, _: &Array| Ok(p.clone())),
    ));
    assert!(msg.contains("at `n_heads`: static data differs"), "{msg}");
    // Mismatched kinds name the path.
    let p = Value::dict([("k", leaf(1.0).into())]);
    let q = Value::dict([("k", Value::list([leaf(1.0).into()]))]);
    let msg = err(tree_merge(&p, &q, None));
    assert!(
        msg.contains("cannot merge at `k`: an array leaf vs a list of 1"),
        "{msg}"
    );
}

// ---------------------------------------------------------------- TreeDef

#[test]
fn treedef_serde_round_trip() {
    register_foreign();
    let d = decoder();
    let tree = (
        d,
        attention(3),
        Cache::Ssm(leaf(1.0), 0),
        Value::dict([("x", leaf(2.0).into())]),
    );
    let def = tree_structure(&tree).unwrap();
    let json = serde_json::to_string(&def).unwrap();
    let back: TreeDef = serde_json::from_str(&json).unwrap();
    assert_eq!(back, def);
    assert_eq!(back.to_string(), def.to_string());
    assert_eq!(back.num_leaves(), def.num_leaves());
    // The deserialized structure rebuilds the typed tree.
    let (leaves, _) = tree_flatten(&tree).unwrap();
    let rebuilt: (Decoder, Attention, Cache, Value) =
        tree_unflatten(&back, leaves.into_iter().cloned().collect()).unwrap();
    assert_eq!(rebuilt.1.n_heads, 3);
    assert_eq!(rebuilt.0.caches[0].offset(), 4);

    // Hash agrees with Eq.
    use std::hash::{BuildHasher, RandomState};
    let s = RandomState::new();
    assert_eq!(s.hash_one(&back), s.hash_one(&def));

    // Malformed input is an error, not a panic.
    let bad = r#"{"kind":"some","children":[]}"#;
    assert!(serde_json::from_str::<TreeDef>(bad).is_err());
    let bad = r#"{"kind":"leaf","children":[{"kind":"leaf"}]}"#;
    assert!(serde_json::from_str::<TreeDef>(bad).is_err());
}

#[test]
fn treedef_walk_exposes_kinds_keys_and_statics() {
    let def = tree_structure(&attention(8)).unwrap();
    let root = def.root();
    assert_eq!(root.kind(), NodeKind::Struct("Attention"));
    let children: Vec<_> = root.children().collect();
    assert_eq!(children.len(), 4);
    assert_eq!(children[0].key(), Some("q_proj"));
    assert_eq!(children[0].num_leaves(), 2);
    assert_eq!(
        children[2].kind(),
        NodeKind::Static(&StaticValue::new(&8usize))
    );
    assert_eq!(children[1].children().nth(1).unwrap().path(), "wk.bias");
    assert_eq!(def.leaf_paths(), paths(&attention(8)));
}

// ---------------------------------------------------------------- cache layouts

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
fn two_cache_layouts_flatten_to_their_documented_paths() {
    let per_layer: Vec<LayerCache> = (0..2)
        .map(|i| LayerCache {
            keys: leaf(i as f32),
            values: leaf(10.0 + i as f32),
        })
        .collect();
    let per_field = FieldCache {
        keys: (0..2).map(|i| leaf(i as f32)).collect(),
        values: (0..2).map(|i| leaf(10.0 + i as f32)).collect(),
    };
    assert_eq!(
        paths(&per_layer),
        ["0.keys", "0.values", "1.keys", "1.values"]
    );
    assert_eq!(
        paths(&per_field),
        ["keys.0", "keys.1", "values.0", "values.1"]
    );
    // The same arrays, reachable by matching paths in the other layout.
    let by_path: HashMap<String, f32> = tree_flatten_with_path(&per_layer)
        .unwrap()
        .into_iter()
        .map(|(p, a)| (p, a.item::<f32>().unwrap()))
        .collect();
    for (p, a) in tree_flatten_with_path(&per_field).unwrap() {
        let mut parts = p.split('.');
        let (field, layer) = (parts.next().unwrap(), parts.next().unwrap());
        assert_eq!(
            by_path[&format!("{layer}.{field}")],
            a.item::<f32>().unwrap()
        );
    }
}

// ---------------------------------------------------------------- threads

#[test]
fn send_sync_claims_hold_under_concurrency() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send_sync::<TreeDef>();
    send::<Value>();
    send::<Registered<KvCache>>();
    send::<Decoder>();

    // Many threads race to register the same type: exactly one wins, the rest get Err.
    struct Raced(Array);
    let wins: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    register::<Raced>(
                        "tests.Raced",
                        |r, f| f.field("a", &r.0),
                        |u| Ok(Raced(u.field("a")?)),
                    )
                    .is_ok() as usize
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(wins, 1);

    // Trees built and flattened on several threads at once, through the shared registry;
    // a TreeDef made on one thread is used on another.
    register_foreign();
    let def = tree_structure(&decoder()).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let def = &def;
            s.spawn(move || {
                for _ in 0..50 {
                    let d = decoder();
                    assert_eq!(&tree_structure(&d).unwrap(), def);
                    let r = Registered::new(Raced(leaf(t as f32))).unwrap();
                    let back: Registered<Raced> = roundtrip(&r);
                    assert_eq!(back.0.item::<f32>().unwrap(), t as f32);
                }
            });
        }
    });
}

#[test]
fn unknown_variant_and_registered_value_accessors() {
    // A structure naming a variant the enum does not have (e.g. from an older export).
    let kv = Cache::Kv {
        keys: leaf(1.0),
        values: leaf(2.0),
        offset: 1,
    };
    let (leaves, def) = tree_flatten(&kv).unwrap();
    let json = serde_json::to_string(&def)
        .unwrap()
        .replace("Cache::Kv", "Cache::Gone");
    let renamed: TreeDef = serde_json::from_str(&json).unwrap();
    assert_eq!(def.num_nodes(), renamed.num_nodes());
    let msg = err(tree_unflatten::<Cache>(
        &renamed,
        leaves.into_iter().cloned().collect(),
    ));
    assert!(
        msg.contains("enum `Cache` has no variant like enum variant `Cache::Gone` (variants: Kv, Ssm, Nothing)"),
        "{msg}"
    );

    register_foreign();
    let state = SsmState {
        conv: leaf(1.0),
        ssm: leaf(2.0),
    };
    let mut r = Value::registered(state)
        .unwrap()
        .into_registered()
        .expect("a registered value");
    assert!(r.is::<SsmState>() && !r.is::<KvCache>());
    assert_eq!(r.type_name(), std::any::type_name::<SsmState>());
    r.downcast_mut::<SsmState>().unwrap().ssm = leaf(5.0);
    let r = r.downcast::<KvCache>().unwrap_err();
    let back: SsmState = r.downcast().unwrap();
    assert_eq!(back.ssm.item::<f32>().unwrap(), 5.0);
    let def = tree_structure(&decoder()).unwrap();
    let second = def.root().children().nth(1).unwrap();
    // Pre-order: root, then `layers` = list, Linear, weight, None (bias).
    assert_eq!(second.index(), 5);
    assert_eq!(second.key(), Some("caches"));
}

// ---------------------------------------------------------------- peek_node

/// Two variants that flatten to the same struct node and differ in a static field only:
/// `unflatten` must look below the node's kind to choose (what `mlx_nn::MaybeFullySharded`
/// does).
enum Tagged {
    Plain(Array),
    Marked(Array),
}

impl TreeNode for Tagged {
    fn flatten<'a>(&'a self, f: &mut mlx_tree::Flattener<'a>) {
        let (w, marked) = match self {
            Tagged::Plain(w) => (w, false),
            Tagged::Marked(w) => (w, true),
        };
        f.struct_node("Tagged", |f| {
            f.field("w", w);
            f.static_field("marked", &marked);
        });
    }

    fn unflatten(u: &mut mlx_tree::Unflattener<'_>) -> mlx_tree::Result<Self> {
        let node = u.peek_node()?;
        let marked = node.children().any(|c| {
            c.key() == Some("marked")
                && matches!(c.kind(), NodeKind::Static(v) if v.get::<bool>().ok().flatten() == Some(true))
        });
        // Peeking reads nothing: the node is still there to read.
        u.struct_node("Tagged", |u| {
            let w = u.field("w")?;
            let _: bool = u.static_field("marked")?;
            Ok(if marked {
                Tagged::Marked(w)
            } else {
                Tagged::Plain(w)
            })
        })
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        match self {
            Tagged::Plain(w) | Tagged::Marked(w) => f(w),
        }
        Ok(())
    }
}

#[test]
fn peek_node_sees_the_static_data_of_the_next_node() {
    let trees = vec![Tagged::Plain(leaf(1.0)), Tagged::Marked(leaf(2.0))];
    let back = roundtrip(&trees);
    assert!(matches!(back[..], [Tagged::Plain(_), Tagged::Marked(_)]));
    // Another structure is an error from the read that follows the peek.
    let (_, def) = tree_flatten(&()).unwrap();
    assert!(tree_unflatten::<Tagged>(&def, vec![]).is_err());
}
