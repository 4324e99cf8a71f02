//! Matching one structure against another that has it as a prefix (JAX's rule for
//! `tree_map` over several trees): where the prefix has a leaf, the full tree may hold any
//! subtree. Dict entries pair by key.

use std::collections::HashMap;
use std::ops::Range;

use crate::def::{describe, describe_path, key_list, Kind, NodeKind, NodeRef, TreeDef};
use crate::stack::grow;

/// For each leaf of `prefix` (in flatten order), the range of `full`'s leaves (in `full`'s
/// flatten order) under the matching node. `Err` says where and how the two differ.
pub(crate) fn match_prefix(
    prefix: &TreeDef,
    full: &TreeDef,
) -> std::result::Result<Vec<Range<usize>>, String> {
    // The common case (the same structure, dicts in the same order): leaf i meets leaf i.
    if prefix.exact_eq(full) {
        return Ok((0..full.num_leaves()).map(|i| i..i + 1).collect());
    }
    let mut out = Vec::with_capacity(prefix.num_leaves());
    if prefix.num_nodes() == 0 || full.num_nodes() == 0 {
        return if prefix.num_nodes() == full.num_nodes() {
            Ok(out)
        } else {
            Err("one of the trees is empty".into())
        };
    }
    // Leaves before each node of `full`, in pre-order (one extra entry for the end).
    let mut leaf_start = Vec::with_capacity(full.nodes.len() + 1);
    let mut n = 0;
    for node in &full.nodes {
        leaf_start.push(n);
        n += usize::from(node.kind == Kind::Leaf);
    }
    leaf_start.push(n);
    let m = Matcher {
        full,
        leaf_start: &leaf_start,
    };
    m.walk(prefix.root(), full.root(), &mut out)?;
    Ok(out)
}

struct Matcher<'d> {
    full: &'d TreeDef,
    leaf_start: &'d [usize],
}

impl Matcher<'_> {
    fn walk(
        &self,
        a: NodeRef<'_>,
        b: NodeRef<'_>,
        out: &mut Vec<Range<usize>>,
    ) -> std::result::Result<(), String> {
        let at = || describe_path(&a.path());
        match (a.kind(), b.kind()) {
            (NodeKind::Leaf, _) => {
                let start = self.leaf_start[b.index()];
                let end = self.leaf_start[b.index() + self.full.nodes[b.index()].size as usize];
                out.push(start..end);
                return Ok(());
            }
            (NodeKind::Static(va), NodeKind::Static(vb)) => {
                if va.same_as(vb) {
                    return Ok(());
                }
                return Err(format!("static data differs at {}: {va} vs {vb}", at()));
            }
            (ka, kb) if ka != kb => {
                return Err(format!(
                    "tree structures differ at {}: {} vs {}",
                    at(),
                    describe(a),
                    describe(b)
                ));
            }
            _ => {}
        }
        let differ = |what: &str| {
            format!(
                "tree structures differ at {}: {what} {} vs {}",
                at(),
                key_list(a),
                key_list(b)
            )
        };
        if a.kind() == NodeKind::Dict {
            let b_children: HashMap<Option<&str>, NodeRef<'_>> =
                b.children().map(|c| (c.key(), c)).collect();
            if b_children.len() != b.children().count() || a.children().count() != b_children.len()
            {
                return Err(differ("keys"));
            }
            for x in a.children() {
                let y = b_children.get(&x.key()).ok_or_else(|| differ("keys"))?;
                grow(|| self.walk(x, *y, out))?;
            }
            return Ok(());
        }
        if a.children().count() != b.children().count() {
            let keyed = a.children().chain(b.children()).any(|c| c.key().is_some());
            return Err(if keyed {
                differ("keys")
            } else {
                format!(
                    "tree structures differ at {}: length {} vs {}",
                    at(),
                    a.children().count(),
                    b.children().count()
                )
            });
        }
        for (x, y) in a.children().zip(b.children()) {
            if x.key() != y.key() {
                return Err(differ("keys"));
            }
            grow(|| self.walk(x, y, out))?;
        }
        Ok(())
    }
}
