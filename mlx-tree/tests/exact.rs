//! The tree core is exact: each test here is one way the tree layer used to give a silently
//! wrong result or kill the process (issue "mlx-tree exact"), and fails on that code.

mod common;

use std::collections::BTreeMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use common::{err, leaf, values};
use mlx_tree::{
    compile, tree_flatten, tree_map, tree_map_n, tree_structure, tree_unflatten, value_and_grad,
    vmap, Array, NodeKind, StaticData, StaticValue, TreeAxes, TreeDef, TreeNode, Value,
};

#[derive(TreeNode, Debug)]
struct W {
    w: Array,
    #[tree(static)]
    s: f32,
}

fn hash_of(def: &TreeDef) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(def)
}

// ---------------------------------------------------------------- static data is exact

#[test]
fn signed_zero_statics_get_their_own_trace() {
    let f = compile(|p: &W| Ok(&p.w * p.s.signum()), None);
    let one = || leaf(1.0);
    let pos = f.call(&W { w: one(), s: 0.0 }).unwrap();
    let neg = f.call(&W { w: one(), s: -0.0 }).unwrap();
    // Python's mx.compile gives 1 and -1: the static value is part of the trace key.
    assert_eq!(pos.item::<f32>().unwrap(), 1.0);
    assert_eq!(neg.item::<f32>().unwrap(), -1.0);
    assert_eq!(f.stats().traces, 2);
    let d0 = tree_structure(&W { w: one(), s: 0.0 }).unwrap();
    let d1 = tree_structure(&W { w: one(), s: -0.0 }).unwrap();
    assert_ne!(d0, d1);
}

#[test]
fn nan_static_equals_itself_and_does_not_retrace() {
    let f = compile(|p: &W| Ok(&p.w + 1.0), None);
    for _ in 0..3 {
        f.call(&W {
            w: leaf(1.0),
            s: f32::NAN,
        })
        .unwrap();
    }
    assert_eq!(f.stats().traces, 1);
    let a = tree_structure(&W {
        w: leaf(1.0),
        s: f32::NAN,
    })
    .unwrap();
    let b = tree_structure(&W {
        w: leaf(2.0),
        s: f32::NAN,
    })
    .unwrap();
    assert_eq!(a, b);
    assert_eq!(hash_of(&a), hash_of(&b));
    // A NaN with another payload is another value.
    let other = f32::from_bits(f32::NAN.to_bits() | 1);
    assert_ne!(
        a,
        tree_structure(&W {
            w: leaf(1.0),
            s: other
        })
        .unwrap()
    );
}

#[derive(TreeNode, Debug)]
struct Opt {
    w: Array,
    #[tree(static)]
    limit: Option<f32>,
}

#[test]
fn some_infinity_is_not_none_and_survives_transforms() {
    let some = Opt {
        w: leaf(2.0),
        limit: Some(f32::INFINITY),
    };
    let none = Opt {
        w: leaf(2.0),
        limit: None,
    };
    assert_ne!(
        tree_structure(&some).unwrap(),
        tree_structure(&none).unwrap()
    );
    let mapped = tree_map(|x| Ok(x * 3.0), &some).unwrap();
    assert_eq!(mapped.limit, Some(f32::INFINITY));
    let vg = value_and_grad(|p: &Opt, _: &()| p.w.square()?.sum(None, false));
    let (_, grads) = vg(&some, &()).unwrap();
    assert_eq!(grads.limit, Some(f32::INFINITY));
    assert_eq!(grads.w.item::<f32>().unwrap(), 4.0);
}

#[test]
fn non_finite_statics_flatten_map_and_compile() {
    for s in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let w = W { w: leaf(1.0), s };
        let mapped = tree_map(|x| Ok(x + 1.0), &w).unwrap();
        assert_eq!(mapped.s.to_bits(), s.to_bits());
        let f = compile(|p: &W| Ok(&p.w * 2.0), None);
        assert_eq!(f.call(&w).unwrap().item::<f32>().unwrap(), 2.0);
    }
}

#[derive(Debug, Clone, PartialEq, StaticData)]
enum Act {
    Relu,
    Gelu { approx: bool },
    Scaled(f64, Option<i8>),
}

#[derive(TreeNode, Debug)]
struct Layer {
    w: Array,
    #[tree(static)]
    act: Act,
    #[tree(static)]
    name: String,
    #[tree(static)]
    betas: (f32, f32),
}

#[test]
fn derived_static_data_compares_field_by_field_and_reads_back_typed() {
    let layer = |act: Act| Layer {
        w: leaf(1.0),
        act,
        name: "mlp".into(),
        betas: (0.9, 0.999),
    };
    let acts = [
        Act::Relu,
        Act::Gelu { approx: true },
        Act::Gelu { approx: false },
        Act::Scaled(0.0, None),
        Act::Scaled(-0.0, None),
        Act::Scaled(0.0, Some(-1)),
    ];
    let defs: Vec<TreeDef> = acts
        .iter()
        .map(|a| tree_structure(&layer(a.clone())).unwrap())
        .collect();
    for (i, a) in defs.iter().enumerate() {
        for (j, b) in defs.iter().enumerate() {
            assert_eq!(a == b, i == j, "{a} vs {b}");
        }
    }
    for act in acts {
        let l = layer(act.clone());
        let back = tree_map(|x| Ok(x.clone()), &l).unwrap();
        assert_eq!(back.act, act);
        assert_eq!(back.betas, (0.9, 0.999));
    }
    // Display reads like Debug.
    let shown = defs[2].to_string();
    assert!(
        shown.contains("act=Gelu { approx: false }") && shown.contains("name=\"mlp\""),
        "{shown}"
    );
}

#[test]
fn typed_access_to_static_values() {
    let def = tree_structure(&W {
        w: leaf(1.0),
        s: -0.0,
    })
    .unwrap();
    let NodeKind::Static(v) = def.root().children().nth(1).unwrap().kind() else {
        panic!("expected a static node");
    };
    assert_eq!(
        v.get::<f32>().unwrap().map(f32::to_bits),
        Some((-0.0f32).to_bits())
    );
    assert_eq!(v.get::<f64>().unwrap(), None);
    assert!(v.is::<f32>());
    assert_eq!(v.type_name(), Some("f32"));
    assert_eq!(*v, StaticValue::new(&-0.0f32));
    assert_ne!(*v, StaticValue::new(&0.0f32));
}

#[test]
fn a_static_type_mismatch_names_the_field() {
    #[derive(TreeNode, Debug)]
    #[tree(rename = "W")]
    struct Wide {
        w: Array,
        #[tree(static)]
        s: f64,
    }
    let def = tree_structure(&W {
        w: leaf(1.0),
        s: 1.0,
    })
    .unwrap();
    let msg = err(tree_unflatten::<Wide>(&def, vec![leaf(1.0)]));
    assert!(msg.contains("`s`") && msg.contains("f64"), "{msg}");
}

// ---------------------------------------------------------------- TreeDef serde

#[test]
fn treedef_serde_round_trips_exact_statics() {
    for s in [
        0.0,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e-7,
        f32::MAX,
    ] {
        let def = tree_structure(&W { w: leaf(1.0), s }).unwrap();
        let text = serde_json::to_string(&def).unwrap();
        let back: TreeDef = serde_json::from_str(&text).unwrap();
        assert_eq!(back, def, "{text}");
        assert_eq!(hash_of(&back), hash_of(&def));
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        // Read back typed, bit for bit.
        let w: W = tree_unflatten(&back, vec![leaf(1.0)]).unwrap();
        assert_eq!(w.s.to_bits(), s.to_bits());
    }
    // 0.0 and -0.0 stay apart after a round trip.
    let read = |s: f32| -> TreeDef {
        let def = tree_structure(&W { w: leaf(1.0), s }).unwrap();
        serde_json::from_str(&serde_json::to_string(&def).unwrap()).unwrap()
    };
    assert_ne!(read(0.0), read(-0.0));
    assert_ne!(
        read(0.0),
        tree_structure(&W {
            w: leaf(1.0),
            s: -0.0
        })
        .unwrap()
    );
}

#[test]
fn dtype_statics_compare_and_round_trip_by_name() {
    #[derive(TreeNode, Debug)]
    struct Cast {
        w: Array,
        #[tree(static)]
        dtype: Option<mlx_rs::Dtype>,
    }
    let cast = |dtype| Cast {
        w: leaf(1.0),
        dtype,
    };
    let choices = [
        None,
        Some(mlx_rs::Dtype::Float32),
        Some(mlx_rs::Dtype::Bfloat16),
    ];
    for (i, a) in choices.iter().enumerate() {
        let def = tree_structure(&cast(*a)).unwrap();
        for (j, b) in choices.iter().enumerate() {
            assert_eq!(def == tree_structure(&cast(*b)).unwrap(), i == j);
        }
        let text = serde_json::to_string(&def).unwrap();
        let back: TreeDef = serde_json::from_str(&text).unwrap();
        assert_eq!(back, def, "{text}");
        let typed: Cast = tree_unflatten(&back, vec![leaf(1.0)]).unwrap();
        assert_eq!(typed.dtype, *a);
    }
    assert!(mlx_rs::Dtype::from_json(&serde_json::json!("float33")).is_err());
}

#[test]
fn deep_treedef_serializes_and_reads_back() {
    // serde_json stops at 128 levels of nesting; the serialized form is flat.
    let mut v = Value::Array(leaf(1.0));
    for _ in 0..5_000 {
        v = Value::list([v]);
    }
    let def = tree_structure(&v).unwrap();
    let text = serde_json::to_string(&def).unwrap();
    let back: TreeDef = serde_json::from_str(&text).unwrap();
    assert_eq!(back, def);
    assert_eq!(back.leaf_paths(), def.leaf_paths());
}

#[test]
fn treedef_parser_rejects_malformed_structures() {
    let parse = |s: &str| serde_json::from_str::<TreeDef>(s).map_err(|e| e.to_string());
    let cases = [
        (
            r#"[{"kind":"dict","children":1},{"kind":"leaf"}]"#,
            "has no key",
        ),
        (
            r#"[{"kind":"dict","children":2},{"kind":"leaf","key":"a"},{"kind":"leaf","key":"a"}]"#,
            "duplicate key",
        ),
        (
            r#"[{"kind":"list","children":1},{"kind":"static","key":"s","value":1}]"#,
            "static data can only",
        ),
        (
            r#"[{"kind":"list","children":2},{"kind":"leaf"}]"#,
            "ends before",
        ),
        (r#"[{"kind":"leaf"},{"kind":"leaf"}]"#, "after the end"),
        (r#"[{"kind":"static","value":1}]"#, "root"),
        (r#"[{"kind":"struct","children":0}]"#, "needs a name"),
        (
            r#"[{"kind":"some","children":2},{"kind":"leaf"},{"kind":"leaf"}]"#,
            "exactly one child",
        ),
        (
            r#"[{"kind":"list","children":1},{"kind":"leaf","key":"x"}]"#,
            "positional child has a key",
        ),
        (r#"[{"kind":"leaf","children":3}]"#, "has children"),
        (r#"[{"kind":"leaf","bogus":1}]"#, "unknown field"),
    ];
    for (text, expected) in cases {
        let e = parse(text).expect_err(text);
        assert!(e.contains(expected), "{text}: {e}");
    }
    // `null` is a static value, not an absent one.
    let ok =
        r#"[{"kind":"struct","name":"S","children":1},{"kind":"static","key":"u","value":null}]"#;
    assert!(parse(ok).is_ok());
}

// ---------------------------------------------------------------- hostile input

#[test]
fn from_flat_duplicate_paths_are_errors() {
    let x = leaf(1.0);
    for (pairs, path) in [
        (vec![("a", x.clone()), ("a", x.clone())], "`a`"),
        (vec![("", x.clone()), ("", x.clone())], "the root"),
        (
            vec![
                ("l.0.w", x.clone()),
                ("l.1.w", x.clone()),
                ("l.0.w", x.clone()),
            ],
            "`l.0.w`",
        ),
    ] {
        let pairs: Vec<(String, Array)> =
            pairs.into_iter().map(|(k, a)| (k.to_string(), a)).collect();
        let msg = err(Value::from_flat(pairs));
        assert!(msg.contains(path) && msg.contains("2 times"), "{msg}");
    }
}

#[test]
fn parameters_with_dotted_keys_colliding_are_an_error() {
    use mlx_tree::tree_flatten_with_path;
    let inner = |k: &str| BTreeMap::from([(k.to_string(), leaf(1.0))]);
    let tree = BTreeMap::from([
        ("a".to_string(), inner("b.c")),
        ("a.b".to_string(), inner("c")),
    ]);
    let pairs: Vec<(String, Array)> = tree_flatten_with_path(&tree)
        .unwrap()
        .into_iter()
        .map(|(p, a)| (p, a.clone()))
        .collect();
    assert_eq!(pairs[0].0, pairs[1].0);
    let msg = err(Value::from_flat(pairs));
    assert!(msg.contains("`a.b.c`"), "{msg}");
}

#[test]
fn huge_list_indices_are_errors_not_allocations() {
    for key in [
        "layers.4000000000.w",
        "99999999999999999999999",
        "layers.65537",
    ] {
        let msg = err(Value::from_flat(vec![(key.to_string(), leaf(1.0))]));
        assert!(msg.contains("pad the list"), "{key}: {msg}");
    }
    // Gaps are filled as Python fills them, up to the bound.
    let v = Value::from_flat(vec![("3".to_string(), leaf(1.0))]).unwrap();
    assert!(matches!(&v, Value::List(l) if l.len() == 4));
}

#[test]
fn from_flat_reads_integers_as_python_int_does() {
    let pairs = |keys: &[&str]| -> Vec<(String, Array)> {
        keys.iter().map(|k| (k.to_string(), leaf(1.0))).collect()
    };
    // " 1", "+0", "1_0" are integers to Python; "01" and "1" are the same one, so a dict.
    let v = Value::from_flat(pairs(&[" 1", "+0"])).unwrap();
    assert!(matches!(&v, Value::List(l) if l.len() == 2));
    let v = Value::from_flat(pairs(&["1_0"])).unwrap();
    assert!(matches!(&v, Value::List(l) if l.len() == 11));
    let v = Value::from_flat(pairs(&["01", "1"])).unwrap();
    assert!(matches!(&v, Value::Dict(m) if m.len() == 2));
    for not_int in ["1__0", "_1", "1_", "", "-", "0x1"] {
        let v = Value::from_flat(pairs(&[not_int, "zz"])).unwrap();
        assert!(matches!(&v, Value::Dict(_)), "{not_int:?}");
    }
}

#[test]
fn very_long_paths_unflatten() {
    let path = vec!["k"; 8_000].join(".");
    let v = Value::from_flat(vec![(path.clone(), leaf(1.0))]).unwrap();
    assert!(v.get_path(&path).and_then(Value::as_array).is_some());
    let def = tree_structure(&v).unwrap();
    assert_eq!(def.leaf_paths(), [path]);
    drop_deep(v);
}

/// Takes a deep `Value` apart level by level: dropping it whole recurses once per level in
/// the standard library's drop glue, which is not ours to change.
fn drop_deep(mut v: Value) {
    let mut stack = vec![];
    loop {
        match &mut v {
            Value::List(items) | Value::Tuple(items) => stack.append(items),
            Value::Dict(m) => stack.extend(m.drain(..).map(|(_, x)| x)),
            _ => {}
        }
        match stack.pop() {
            Some(next) => v = next,
            None => break,
        }
    }
}

#[test]
fn deep_values_map_display_and_compare() {
    let mut v = Value::Array(leaf(2.0));
    for i in 0..10_000 {
        v = if i % 2 == 0 {
            Value::list([v])
        } else {
            Value::dict([("k", v)])
        };
    }
    let mapped = tree_map(|x| Ok(x * 2.0), &v).unwrap();
    assert_eq!(values(&mapped), [4.0]);
    let def = tree_structure(&v).unwrap();
    assert_eq!(def, tree_structure(&mapped).unwrap());
    assert!(def.to_string().len() > 20_000);
    let cloned = v.try_clone().unwrap();
    drop_deep(cloned);
    drop_deep(mapped);
    drop_deep(v);
}

/// A derived recursive type.
#[derive(TreeNode)]
struct Chain {
    w: Array,
    next: Option<Box<Chain>>,
}

impl Drop for Chain {
    // Iterative, for the same reason as `drop_deep`.
    fn drop(&mut self) {
        let mut next = self.next.take();
        while let Some(mut c) = next {
            next = c.next.take();
        }
    }
}

fn chain(depth: usize) -> Chain {
    let mut c = Chain {
        w: leaf(0.0),
        next: None,
    };
    for i in 1..depth {
        c = Chain {
            w: leaf(i as f32),
            next: Some(Box::new(c)),
        };
    }
    c
}

#[test]
fn deep_derived_types_flatten_unflatten_and_display() {
    let c = chain(100_000);
    let (leaves, def) = tree_flatten(&c).unwrap();
    assert_eq!(leaves.len(), 100_000);
    let back: Chain = tree_unflatten(&def, leaves.into_iter().cloned().collect()).unwrap();
    assert_eq!(back.w.item::<f32>().unwrap(), 99_999.0);
    let small = tree_structure(&chain(10_000)).unwrap();
    assert!(small
        .to_string()
        .starts_with("TreeDef(Chain { w: *, next: Some(Chain"));
    assert_eq!(small.leaf_paths().last().unwrap().len(), 9_999 * 5 + 1);
}

// ---------------------------------------------------------------- dicts pair by key

fn dict(entries: &[(&str, f32)]) -> Value {
    Value::dict(entries.iter().map(|(k, v)| (*k, Value::Array(leaf(*v)))))
}

#[test]
fn dicts_pair_by_key_in_tree_map_n_and_treedef_equality() {
    let a = dict(&[("a", 1.0), ("b", 2.0)]);
    let b = dict(&[("b", 20.0), ("a", 10.0)]);
    let sum = tree_map_n(|x, r| Ok(x + r[0]), &a, &[&b]).unwrap();
    assert_eq!(values(&sum), [11.0, 22.0]);
    let (da, db) = (tree_structure(&a).unwrap(), tree_structure(&b).unwrap());
    assert_eq!(da, db);
    assert_eq!(hash_of(&da), hash_of(&db));
    // Different keys stay different.
    let c = dict(&[("a", 1.0), ("c", 2.0)]);
    assert_ne!(da, tree_structure(&c).unwrap());
    let msg = err(tree_map_n(|x, _| Ok(x.clone()), &a, &[&c]));
    assert!(msg.contains("keys [a, b] vs [a, c]"), "{msg}");
}

#[test]
fn compile_does_not_confuse_reordered_dicts() {
    // Equal TreeDefs, but the leaves come in another order: the trace binds by position, so
    // the second call must not reuse the first trace with swapped inputs.
    let f = compile(
        |v: &Value| {
            let a = v.get("a").and_then(Value::as_array).unwrap();
            let b = v.get("b").and_then(Value::as_array).unwrap();
            Ok(a - b)
        },
        None,
    );
    let x = f.call(&dict(&[("a", 5.0), ("b", 1.0)])).unwrap();
    let y = f.call(&dict(&[("b", 1.0), ("a", 5.0)])).unwrap();
    assert_eq!(x.item::<f32>().unwrap(), 4.0);
    assert_eq!(y.item::<f32>().unwrap(), 4.0);
}

// ---------------------------------------------------------------- prefix trees

#[test]
fn tree_map_n_accepts_a_prefix_tree() {
    let x = |v: f32| Value::Array(leaf(v));
    let prefix = Value::dict([("a", x(2.0)), ("b", x(10.0))]);
    let full = Value::dict([("b", x(1.0)), ("a", Value::list([x(3.0), x(4.0)]))]);
    let out = tree_map_n(
        |s, xs| {
            let mut acc = Array::from_scalar(0.0f32);
            for x in xs {
                acc = &acc + &(s * *x);
            }
            Ok(acc)
        },
        &prefix,
        &[&full],
    )
    .unwrap();
    // a: 2*3 + 2*4; b: 10*1.
    assert_eq!(values(&out), [14.0, 10.0]);
    // Not a prefix: the first tree has more structure than the other.
    let msg = err(tree_map_n(|x, _| Ok(x.clone()), &full, &[&prefix]));
    assert!(msg.contains("`a`"), "{msg}");
}

// ---------------------------------------------------------------- vmap

#[test]
fn vmap_output_axis_none_is_unbatched() {
    let c = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let f = vmap(
        |x: &Array| Ok((x * 2.0, &c * 3.0)),
        0,
        TreeAxes::seq([0.into(), None.into()]),
    );
    let x = Array::from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]).unwrap();
    let (batched, shared) = f(&x).unwrap();
    assert_eq!(batched.shape(), &[2, 3]);
    assert_eq!(shared.shape(), &[4]);
    assert_eq!(shared.to_vec::<f32>().unwrap(), [3.0, 6.0, 9.0, 12.0]);
}

#[test]
fn deep_derived_types_update_in_place() {
    let mut c = chain(100_000);
    mlx_tree::tree_map_in_place(|x| Ok(x + 1.0), &mut c).unwrap();
    assert_eq!(c.w.item::<f32>().unwrap(), 100_000.0);
}
