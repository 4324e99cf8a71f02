//! The tree utilities, named as in Python's `mlx.utils` and `jax.tree_util`.
//!
//! Argument order mirrors Python: the function comes first (`tree_map(f, &tree)` is
//! `tree_map(fn, tree)`), so a port stays mechanical.

use crate::def::{describe, describe_path, Kind, NodeKind, NodeRef, TreeDef};
use crate::error::{self, Result};
use crate::flatten::Builder;
use crate::{Array, Flattener, TreeNode, Unflattener};

/// The leaves of `tree` (borrowed, in flatten order) and its structure — JAX's
/// `tree_flatten`. For Python MLX's `tree_flatten` (path/leaf pairs) use
/// [`tree_flatten_with_path`].
///
/// Errors only if a static field cannot be serialized.
pub fn tree_flatten<T: TreeNode>(tree: &T) -> Result<(Vec<&Array>, TreeDef)> {
    let mut f = Flattener::new(true);
    tree.flatten(&mut f);
    f.finish()
}

/// Rebuilds a `T` from a structure and leaves in flatten order — JAX's
/// `tree_unflatten(treedef, leaves)`. Python MLX's `tree_unflatten(pairs)`, which rebuilds
/// from paths, is [`Value::from_flat`](crate::Value::from_flat).
///
/// Errors, naming the path, if `treedef` is not a structure of `T` or the leaf count differs.
pub fn tree_unflatten<T: TreeNode>(treedef: &TreeDef, leaves: Vec<Array>) -> Result<T> {
    let mut u = Unflattener::new(treedef, leaves)?;
    let out = T::unflatten(&mut u)?;
    u.finish()?;
    Ok(out)
}

/// The leaves of `tree`, borrowed, in flatten order.
pub fn tree_leaves<T: TreeNode>(tree: &T) -> Vec<&Array> {
    let mut f = Flattener::new(false);
    tree.flatten(&mut f);
    f.into_leaves()
}

/// The structure of `tree`.
pub fn tree_structure<T: TreeNode>(tree: &T) -> Result<TreeDef> {
    tree_flatten(tree).map(|(_, def)| def)
}

/// `(path, leaf)` pairs in flatten order, with Python MLX's dotted paths
/// (`layers.0.attn.wq.weight`) — what `mlx.utils.tree_flatten(tree)` returns.
pub fn tree_flatten_with_path<T: TreeNode>(tree: &T) -> Result<Vec<(String, &Array)>> {
    let (leaves, def) = tree_flatten(tree)?;
    let mut out = Vec::with_capacity(leaves.len());
    let mut it = leaves.into_iter();
    def.for_each_leaf_path(|p| {
        if let Some(leaf) = it.next() {
            out.push((p.to_string(), leaf));
        }
    });
    Ok(out)
}

/// A tree of the same type and structure with `f` applied to every leaf.
///
/// ```
/// use mlx_tree::{tree_map, Array};
/// let params = vec![Array::from_scalar(2.0f32), Array::from_scalar(3.0f32)];
/// let squared = tree_map(|x| Ok(x * x), &params)?;
/// assert_eq!(squared[1].item::<f32>()?, 9.0);
/// # Ok::<(), mlx_tree::Error>(())
/// ```
pub fn tree_map<T, F>(mut f: F, tree: &T) -> Result<T>
where
    T: TreeNode,
    F: FnMut(&Array) -> Result<Array>,
{
    let (leaves, def) = tree_flatten(tree)?;
    let mapped = leaves.into_iter().map(&mut f).collect::<Result<Vec<_>>>()?;
    tree_unflatten(&def, mapped)
}

/// `tree_map` over several trees: `f(x, xs)` for every leaf `x` of `tree`, where `xs` holds
/// the leaves at the same place in each tree of `rest` (Python: `tree_map(fn, tree, *rest)`;
/// JAX: `jax.tree.map`).
///
/// As in JAX, each tree of `rest` must have the structure of `tree`, or have `tree` as a
/// *prefix*: where `tree` has a leaf, a tree of `rest` may hold a whole subtree, and `xs` then
/// holds all of that subtree's leaves (in flatten order; for several trees in `rest`, the
/// first one's leaves, then the second's, ...). Dict entries pair by key, not by position:
/// `{a: 1, b: 2}` maps with `{b: 20, a: 10}` as `a` with `a`. The result has `tree`'s type
/// and structure.
///
/// ```
/// use mlx_tree::{tree_map_n, Array, Value};
/// let x = |v: f32| Value::Array(Array::from_scalar(v));
/// // The first tree is a prefix: its leaf at "a" meets the list [y, z].
/// let scale = Value::dict([("a", x(2.0))]);
/// let params = Value::dict([("a", Value::list([x(3.0), x(4.0)]))]);
/// let out = tree_map_n(
///     |s, xs| Ok(xs.iter().fold(Array::from_scalar(0.0f32), |acc, x| &acc + &(s * *x))),
///     &scale,
///     &[&params],
/// )?;
/// assert_eq!(out.get_path("a").unwrap().as_array().unwrap().item::<f32>()?, 14.0);
/// # Ok::<(), mlx_tree::Error>(())
/// ```
///
/// Errors if a tree in `rest` does not have `tree` as a prefix; the message names the path
/// and how the trees differ (type, length, keys or static data).
pub fn tree_map_n<T, R, F>(mut f: F, tree: &T, rest: &[&R]) -> Result<T>
where
    T: TreeNode,
    R: TreeNode,
    F: FnMut(&Array, &[&Array]) -> Result<Array>,
{
    let (leaves, def) = tree_flatten(tree)?;
    // Per tree of `rest`: its leaves, and for each leaf of `tree` the range of them it meets.
    let mut others = Vec::with_capacity(rest.len());
    for (i, other) in rest.iter().enumerate() {
        let (other_leaves, other_def) = tree_flatten(*other)?;
        let ranges = crate::prefix::match_prefix(&def, &other_def).map_err(|diff| {
            error::invalid(format!(
                "tree_map: tree {} does not match the first tree: {diff}",
                i + 1
            ))
        })?;
        others.push((other_leaves, ranges));
    }
    let mut row = Vec::with_capacity(rest.len());
    let mut mapped = Vec::with_capacity(leaves.len());
    for (i, leaf) in leaves.into_iter().enumerate() {
        row.clear();
        for (other_leaves, ranges) in &others {
            row.extend_from_slice(&other_leaves[ranges[i].clone()]);
        }
        mapped.push(f(leaf, &row)?);
    }
    tree_unflatten(&def, mapped)
}

/// `tree_map` where `f` also gets each leaf's dotted path.
pub fn tree_map_with_path<T, F>(mut f: F, tree: &T) -> Result<T>
where
    T: TreeNode,
    F: FnMut(&str, &Array) -> Result<Array>,
{
    let (leaves, def) = tree_flatten(tree)?;
    let mut mapped = Vec::with_capacity(leaves.len());
    let mut it = leaves.into_iter();
    let mut failure = None;
    def.for_each_leaf_path(|p| {
        if failure.is_some() {
            return;
        }
        if let Some(leaf) = it.next() {
            match f(p, leaf) {
                Ok(a) => mapped.push(a),
                Err(e) => failure = Some(e),
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    tree_unflatten(&def, mapped)
}

/// Folds the leaves in flatten order: `f(f(f(initializer, l0), l1), ...)`.
///
/// Python's `initializer` is optional (the first leaf is used); in Rust the accumulator may
/// have another type than the leaves, so it is required.
pub fn tree_reduce<T, A, F>(mut f: F, tree: &T, initializer: A) -> Result<A>
where
    T: TreeNode,
    F: FnMut(A, &Array) -> Result<A>,
{
    tree_leaves(tree).into_iter().try_fold(initializer, &mut f)
}

/// Replaces every leaf of `tree` in place with `f(leaf)`, in flatten order.
///
/// If `f` fails, the leaves before the failing one are already replaced.
pub fn tree_map_in_place<T, F>(mut f: F, tree: &mut T) -> Result<()>
where
    T: TreeNode,
    F: FnMut(&Array) -> Result<Array>,
{
    let mut failure = None;
    tree.leaves_mut(&mut |leaf: &mut Array| {
        if failure.is_none() {
            match f(leaf) {
                Ok(a) => *leaf = a,
                Err(e) => failure = Some(e),
            }
        }
    })?;
    failure.map_or(Ok(()), Err)
}

/// Overwrites the leaves of `tree` in place with `leaves`, in flatten order: how compiled
/// state is written back. Errors (changing nothing) if the count differs.
pub fn tree_assign_leaves<T: TreeNode>(tree: &mut T, leaves: Vec<Array>) -> Result<()> {
    let expected = tree_leaves(tree).len();
    if expected != leaves.len() {
        return Err(error::leaf_count(expected, leaves.len()));
    }
    let mut it = leaves.into_iter();
    tree.leaves_mut(&mut |leaf: &mut Array| {
        if let Some(new) = it.next() {
            *leaf = new;
        }
    })
}

/// The merge function of [`tree_merge`].
pub type MergeFn<'f> = &'f mut dyn FnMut(&Array, &Array) -> Result<Array>;

/// Merges two trees into one holding the contents of both, like a deep `dict.update`
/// (Python: `tree_merge(tree_a, tree_b, merge_fn=None)`).
///
/// `None` and empty lists/tuples/dicts count as missing subtrees; lists merge position-wise
/// (the longer one's tail is kept); dicts and structs merge key-wise; where both trees hold a
/// leaf, `merge_fn` combines them (without one that is an error). Static data must agree.
/// Errors name the path where the trees cannot be merged.
pub fn tree_merge<T: TreeNode>(tree_a: &T, tree_b: &T, merge_fn: Option<MergeFn<'_>>) -> Result<T> {
    let (la, da) = tree_flatten(tree_a)?;
    let (lb, db) = tree_flatten(tree_b)?;
    if da.nodes.is_empty() || db.nodes.is_empty() {
        return Err(error::invalid("tree_merge: empty tree definition"));
    }
    let mut m = Merger {
        a: Side::new(&da, la),
        b: Side::new(&db, lb),
        out: Builder::default(),
        merge_fn,
    };
    m.merge(Some(0), Some(0), None)?;
    let (leaves, def) = m.out.finish();
    tree_unflatten(&def, leaves)
}

struct Side<'d, 'l> {
    def: &'d TreeDef,
    leaves: Vec<&'l Array>,
    /// Leaves before each node in pre-order.
    leaf_start: Vec<usize>,
}

impl<'d, 'l> Side<'d, 'l> {
    fn new(def: &'d TreeDef, leaves: Vec<&'l Array>) -> Self {
        let mut leaf_start = Vec::with_capacity(def.nodes.len());
        let mut n = 0;
        for node in &def.nodes {
            leaf_start.push(n);
            if node.kind == Kind::Leaf {
                n += 1;
            }
        }
        Side {
            def,
            leaves,
            leaf_start,
        }
    }

    fn node(&self, index: usize) -> NodeRef<'d> {
        NodeRef::at(self.def, index)
    }

    fn children(&self, index: usize) -> Vec<usize> {
        self.node(index).children().map(|c| c.index()).collect()
    }

    fn is_empty(&self, index: usize) -> bool {
        let n = &self.def.nodes[index];
        match n.kind {
            Kind::None => true,
            Kind::List | Kind::Tuple | Kind::Dict => n.arity == 0,
            _ => false,
        }
    }
}

struct Merger<'d, 'l, 'f> {
    a: Side<'d, 'l>,
    b: Side<'d, 'l>,
    out: Builder,
    merge_fn: Option<MergeFn<'f>>,
}

impl<'d> Merger<'d, '_, '_> {
    fn fail(&self, a: usize, msg: impl std::fmt::Display) -> crate::Error {
        let path = describe_path(&self.a.def.path_of(a));
        error::invalid(format!("tree_merge: cannot merge at {path}: {msg}"))
    }

    fn merge(&mut self, a: Option<usize>, b: Option<usize>, key: Option<&'d str>) -> Result<()> {
        let (a, b) = match (a, b) {
            (Some(a), Some(b)) => (a, b),
            (Some(a), None) => return self.copy(true, a, key),
            (None, Some(b)) => return self.copy(false, b, key),
            (None, None) => return Ok(()),
        };
        let (ea, eb) = (self.a.is_empty(a), self.b.is_empty(b));
        if ea && eb {
            if self.a.node(a).kind() != self.b.node(b).kind() {
                return Err(self.fail(a, "an empty container and None or another container"));
            }
            return self.copy(true, a, key);
        }
        if ea {
            return self.copy(false, b, key);
        }
        if eb {
            return self.copy(true, a, key);
        }
        let (na, nb) = (self.a.node(a), self.b.node(b));
        match (na.kind(), nb.kind()) {
            (NodeKind::Leaf, NodeKind::Leaf) => {
                let (x, y) = (
                    self.a.leaves[self.a.leaf_start[a]],
                    self.b.leaves[self.b.leaf_start[b]],
                );
                let merged = match self.merge_fn.as_mut() {
                    Some(f) => f(x, y)?,
                    None => {
                        return Err(self.fail(
                            a,
                            "both trees hold a leaf here and no merge function was given",
                        ))
                    }
                };
                self.out.leaf(key, merged);
                Ok(())
            }
            (NodeKind::List | NodeKind::Tuple, NodeKind::List | NodeKind::Tuple)
            | (NodeKind::Some, NodeKind::Some) => {
                let (ca, cb) = (self.a.children(a), self.b.children(b));
                let open = self.out.open(na.kind(), key);
                for i in 0..ca.len().max(cb.len()) {
                    self.merge(ca.get(i).copied(), cb.get(i).copied(), None)?;
                }
                self.out.close(open);
                Ok(())
            }
            (NodeKind::Dict, NodeKind::Dict) => self.merge_keyed(a, b, key),
            (ka @ (NodeKind::Struct(_) | NodeKind::Variant(_) | NodeKind::Registered(_)), kb)
                if ka == kb =>
            {
                self.merge_keyed(a, b, key)
            }
            _ => Err(self.fail(a, format!("{} vs {}", describe(na), describe(nb)))),
        }
    }

    /// Key-wise merge: the first tree's keys in order, then keys only the second has.
    fn merge_keyed(&mut self, a: usize, b: usize, key: Option<&'d str>) -> Result<()> {
        let (ca, cb) = (self.a.children(a), self.b.children(b));
        let open = self.out.open(self.a.node(a).kind(), key);
        let mut used_b = vec![false; cb.len()];
        for &x in &ca {
            let k = self.a.node(x).key();
            let partner = (0..cb.len()).find(|&p| !used_b[p] && self.b.node(cb[p]).key() == k);
            if let Some(p) = partner {
                used_b[p] = true;
            }
            let y = partner.map(|p| cb[p]);
            if let NodeKind::Static(va) = self.a.node(x).kind() {
                if let Some(y) = y {
                    if self.b.node(y).kind() != NodeKind::Static(va) {
                        return Err(self.fail(x, "static data differs between the trees"));
                    }
                }
                self.out.push(NodeKind::Static(va), k, 0, 1, true);
                continue;
            }
            self.merge(Some(x), y, k)?;
        }
        for (p, &y) in cb.iter().enumerate() {
            if !used_b[p] {
                let k = self.b.node(y).key();
                self.merge(None, Some(y), k)?;
            }
        }
        self.out.close(open);
        Ok(())
    }

    /// Copies a whole subtree of one side (with its leaves) into the output.
    fn copy(&mut self, from_a: bool, index: usize, key: Option<&'d str>) -> Result<()> {
        let side = if from_a { &self.a } else { &self.b };
        let end = index + side.def.nodes[index].size as usize;
        let mut leaf = side.leaf_start[index];
        for i in index..end {
            let node = side.node(i);
            let raw = side.def.nodes[i];
            let k = if i == index { key } else { node.key() };
            self.out
                .push(node.kind(), k, raw.arity, raw.size, i == index);
            if raw.kind == Kind::Leaf {
                self.out.leaves.push(side.leaves[leaf].clone());
                leaf += 1;
            }
        }
        Ok(())
    }
}
