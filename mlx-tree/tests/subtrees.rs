//! Parts of a structure: `TreeDef::node_at`, `NodeRef::subtree` / `leaf_range` and
//! `TreeDef::replace_subtree`, the pieces `mlx_nn` builds module access from.

#![forbid(unsafe_code)]

mod common;

use std::collections::BTreeMap;

use common::{err, leaf, paths, values};
use mlx_tree::{tree_flatten, tree_structure, tree_unflatten, Array, NodeKind, TreeNode};

#[derive(Debug, Clone, TreeNode)]
struct Inner {
    w: Array,
    b: Option<Array>,
    #[tree(static)]
    scale: i32,
}

#[derive(Debug, Clone, TreeNode)]
struct Outer {
    first: Array,
    layers: Vec<Inner>,
    table: BTreeMap<String, Array>,
    #[tree(static)]
    name: String,
    last: Inner,
}

fn inner(v: f32, scale: i32) -> Inner {
    Inner {
        w: leaf(v),
        b: Some(leaf(v + 0.5)),
        scale,
    }
}

fn outer() -> Outer {
    Outer {
        first: leaf(0.0),
        layers: vec![inner(1.0, 1), inner(2.0, 2)],
        table: BTreeMap::from([("k.x".to_string(), leaf(3.0))]),
        name: "outer".into(),
        last: inner(4.0, 4),
    }
}

fn owned(leaves: Vec<&Array>) -> Vec<Array> {
    leaves.into_iter().cloned().collect()
}

#[test]
fn node_at_follows_leaf_paths() {
    let tree = outer();
    let (_, def) = tree_flatten(&tree).unwrap();
    // Every leaf path names a leaf.
    for path in def.leaf_paths() {
        let node = def.node_at(&path).unwrap_or_else(|| panic!("{path}"));
        assert_eq!(node.kind(), NodeKind::Leaf, "{path}");
        assert_eq!(node.path(), path);
    }
    assert_eq!(def.node_at("").unwrap().kind(), NodeKind::Struct("Outer"));
    assert_eq!(
        def.node_at("layers.1").unwrap().kind(),
        NodeKind::Struct("Inner")
    );
    // A dict key with a dot in it, and `Some` seen through.
    assert_eq!(def.node_at("table.k.x").unwrap().kind(), NodeKind::Leaf);
    assert_eq!(def.node_at("last.b").unwrap().kind(), NodeKind::Leaf);
    // Static fields are not in paths; neither are missing or partial segments.
    for missing in [
        "name",
        "layers.2",
        "layers.0.w.x",
        "lay",
        "layers.",
        "table.k",
    ] {
        assert!(def.node_at(missing).is_none(), "{missing}");
    }
}

#[test]
fn a_subtree_and_its_leaves_rebuild_that_part() {
    let tree = outer();
    let (leaves, def) = tree_flatten(&tree).unwrap();
    let leaves = owned(leaves);
    let node = def.node_at("layers.1").unwrap();
    assert_eq!(node.leaf_range(), 3..5);
    let part: Inner = tree_unflatten(&node.subtree(), leaves[node.leaf_range()].to_vec()).unwrap();
    assert_eq!(values(&part), [2.0, 2.5]);
    assert_eq!(part.scale, 2);
    assert_eq!(node.subtree(), tree_structure(&inner(9.0, 2)).unwrap());
    // The static value is part of the subtree: another scale is another structure.
    assert_ne!(node.subtree(), tree_structure(&inner(9.0, 3)).unwrap());
    // The whole tree is its root's subtree.
    let root = def.root();
    assert_eq!(root.subtree(), def);
    assert_eq!(root.leaf_range(), 0..def.num_leaves());
}

#[test]
fn replacing_a_subtree_with_itself_changes_nothing() {
    let tree = outer();
    let (_, def) = tree_flatten(&tree).unwrap();
    for node in def.nodes() {
        let same = def.replace_subtree(node.index(), &node.subtree()).unwrap();
        assert_eq!(same, def, "at node {} ({})", node.index(), node.path());
        assert_eq!(same.to_string(), def.to_string());
    }
}

#[test]
fn replaced_subtrees_rebuild_with_spliced_leaves() {
    let tree = outer();
    let (leaves, def) = tree_flatten(&tree).unwrap();
    let mut leaves = owned(leaves);
    // `layers.0` becomes an Inner without a bias and another static value.
    let new = Inner {
        w: leaf(10.0),
        b: None,
        scale: 7,
    };
    let (new_leaves, new_def) = tree_flatten(&new).unwrap();
    let node = def.node_at("layers.0").unwrap();
    let range = node.leaf_range();
    let def2 = def.replace_subtree(node.index(), &new_def).unwrap();
    leaves.splice(range, owned(new_leaves));
    assert_eq!(def2.num_leaves(), def.num_leaves() - 1);
    let back: Outer = tree_unflatten(&def2, leaves).unwrap();
    assert_eq!(values(&back), [0.0, 10.0, 2.0, 2.5, 3.0, 4.0, 4.5]);
    assert_eq!(back.layers[0].scale, 7);
    assert!(back.layers[0].b.is_none());
    assert_eq!(back.name, "outer");
    assert_eq!(
        paths(&back),
        [
            "first",
            "layers.0.w",
            "layers.1.w",
            "layers.1.b",
            "table.k.x",
            "last.w",
            "last.b"
        ]
    );
    // The nodes after the replaced part keep their keys and statics.
    assert_eq!(back.last.scale, 4);
}

#[test]
fn a_replacement_of_another_type_is_a_named_error_on_rebuild() {
    let tree = outer();
    let (leaves, def) = tree_flatten(&tree).unwrap();
    let node = def.node_at("last").unwrap();
    let range = node.leaf_range();
    let list = vec![leaf(1.0), leaf(2.0)];
    let (list_leaves, list_def) = tree_flatten(&list).unwrap();
    let def2 = def.replace_subtree(node.index(), &list_def).unwrap();
    let mut leaves = owned(leaves);
    leaves.splice(range, owned(list_leaves));
    let message = err(tree_unflatten::<Outer>(&def2, leaves));
    assert!(message.contains("`last`"), "{message}");
}

#[test]
fn bad_replacements_are_errors() {
    let def = tree_structure(&outer()).unwrap();
    let leaf_def = tree_structure(&leaf(1.0)).unwrap();
    assert!(def.replace_subtree(def.num_nodes(), &leaf_def).is_err());
    // An empty list is a node of its own: a valid replacement.
    let empty = tree_structure(&Vec::<Array>::new()).unwrap();
    let first = def.node_at("first").unwrap().index();
    let def2 = def.replace_subtree(first, &empty).unwrap();
    assert_eq!(def2.num_leaves(), def.num_leaves() - 1);
    assert_eq!(def2.num_nodes(), def.num_nodes());
}
