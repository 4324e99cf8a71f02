//! Property tests: flatten/unflatten is the identity and tree_map preserves structure, for
//! random nested structures (dynamic `Value`s and typed containers).

mod common;

use std::collections::{BTreeMap, HashSet};

use common::{leaf, values};
use mlx_tree::{
    tree_flatten, tree_flatten_with_path, tree_map, tree_structure, tree_unflatten, Array,
    TreeNode, Value,
};
use proptest::prelude::*;

/// The shape of a random dynamic tree; leaves are numbered when it is built.
#[derive(Clone, Debug)]
enum Shape {
    Leaf,
    None,
    List(Vec<Shape>),
    Tuple(Vec<Shape>),
    Dict(Vec<(String, Shape)>),
}

fn shape() -> impl Strategy<Value = Shape> {
    let leafish = prop_oneof![4 => Just(Shape::Leaf), 1 => Just(Shape::None)];
    leafish.prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Shape::List),
            prop::collection::vec(inner.clone(), 0..4).prop_map(Shape::Tuple),
            prop::collection::vec(("[a-z_][a-z0-9]{0,3}", inner), 0..5).prop_map(|entries| {
                let mut seen = HashSet::new();
                Shape::Dict(
                    entries
                        .into_iter()
                        .filter(|(k, _)| seen.insert(k.clone()))
                        .collect(),
                )
            }),
        ]
    })
}

fn build(shape: &Shape, next: &mut f32) -> Value {
    match shape {
        Shape::Leaf => {
            *next += 1.0;
            Value::Array(leaf(*next))
        }
        Shape::None => Value::None,
        Shape::List(items) => Value::List(items.iter().map(|s| build(s, next)).collect()),
        Shape::Tuple(items) => Value::Tuple(items.iter().map(|s| build(s, next)).collect()),
        Shape::Dict(entries) => {
            Value::dict(entries.iter().map(|(k, s)| (k.clone(), build(s, next))))
        }
    }
}

/// A typed tree with random container lengths.
#[derive(TreeNode, Debug)]
struct Layer {
    w: Array,
    b: Option<Array>,
    extra: BTreeMap<String, Vec<Array>>,
    #[tree(static)]
    width: u16,
}

#[derive(TreeNode, Debug)]
struct Model {
    layers: Vec<Layer>,
    pair: (Array, [Array; 2]),
    head: Option<Box<Layer>>,
}

#[derive(Clone, Debug)]
struct LayerSpec {
    bias: bool,
    extra: Vec<(String, usize)>,
    width: u16,
}

fn layer_spec() -> impl Strategy<Value = LayerSpec> {
    (
        any::<bool>(),
        prop::collection::btree_map("[a-z]{1,3}", 0usize..3, 0..3),
        any::<u16>(),
    )
        .prop_map(|(bias, extra, width)| LayerSpec {
            bias,
            extra: extra.into_iter().collect(),
            width,
        })
}

fn build_layer(spec: &LayerSpec, next: &mut f32) -> Layer {
    let mut take = || {
        *next += 1.0;
        leaf(*next)
    };
    Layer {
        w: take(),
        b: spec.bias.then(&mut take),
        extra: spec
            .extra
            .iter()
            .map(|(k, n)| (k.clone(), (0..*n).map(|_| take()).collect()))
            .collect(),
        width: spec.width,
    }
}

fn build_model(layers: &[LayerSpec], head: &Option<LayerSpec>) -> Model {
    let mut next = 0.0;
    let layers = layers.iter().map(|s| build_layer(s, &mut next)).collect();
    let pair = (leaf(-1.0), [leaf(-2.0), leaf(-3.0)]);
    let head = head.as_ref().map(|s| Box::new(build_layer(s, &mut next)));
    Model { layers, pair, head }
}

fn assert_identity<T: TreeNode>(tree: &T) -> Result<(), TestCaseError> {
    let (leaves, def) = tree_flatten(tree).unwrap();
    prop_assert_eq!(leaves.len(), def.num_leaves());
    let back: T = tree_unflatten(&def, leaves.into_iter().cloned().collect()).unwrap();
    prop_assert_eq!(tree_structure(&back).unwrap(), def.clone());
    prop_assert_eq!(values(&back), values(tree));
    // Paths: one per leaf, all distinct.
    let paths: Vec<String> = tree_flatten_with_path(tree)
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    prop_assert_eq!(paths.len(), def.num_leaves());
    prop_assert_eq!(paths.iter().collect::<HashSet<_>>().len(), paths.len());
    // The TreeDef survives serde.
    let json = serde_json::to_string(&def).unwrap();
    prop_assert_eq!(
        serde_json::from_str::<mlx_tree::TreeDef>(&json).unwrap(),
        def
    );
    Ok(())
}

fn assert_map_preserves_structure<T: TreeNode>(tree: &T) -> Result<(), TestCaseError> {
    let mapped = tree_map(|x| Ok(x * 2.0), tree).unwrap();
    prop_assert_eq!(
        tree_structure(&mapped).unwrap(),
        tree_structure(tree).unwrap()
    );
    let doubled: Vec<f32> = values(tree).into_iter().map(|v| v * 2.0).collect();
    prop_assert_eq!(values(&mapped), doubled);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn value_flatten_unflatten_is_identity(s in shape()) {
        let tree = build(&s, &mut 0.0);
        assert_identity(&tree)?;
        // Untyped data unflattens from its own structure into a Value again, as the same tree.
        let (leaves, def) = tree_flatten(&tree).unwrap();
        let v: Value = tree_unflatten(&def, leaves.into_iter().cloned().collect()).unwrap();
        prop_assert_eq!(tree_structure(&v).unwrap(), def);
    }

    #[test]
    fn value_tree_map_preserves_structure(s in shape()) {
        assert_map_preserves_structure(&build(&s, &mut 0.0))?;
    }

    #[test]
    fn typed_flatten_unflatten_is_identity(
        layers in prop::collection::vec(layer_spec(), 0..5),
        head in prop::option::of(layer_spec()),
    ) {
        let model = build_model(&layers, &head);
        assert_identity(&model)?;
        assert_map_preserves_structure(&model)?;
    }
}
