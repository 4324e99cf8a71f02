//! Two trees flattened as one: the transforms pass `(state, args)` or `(params, args)` to MLX
//! as one flat list of leaves, described by one `TreeDef` (a 2-tuple), without asking the
//! caller to move the two values into a tuple.

use crate::def::TreeDef;
use crate::error::Result;
use crate::{Array, Flattener, TreeNode, Unflattener};

/// The leaves of `a` then `b` (borrowed), the structure of the tuple `(a, b)`, and how many
/// leaves `a` has.
pub(crate) fn flatten_pair<'x, A: TreeNode, B: TreeNode>(
    a: &'x A,
    b: &'x B,
) -> Result<(Vec<&'x Array>, TreeDef, usize)> {
    let mut f = Flattener::new(true);
    let mut split = 0;
    f.tuple(|f| {
        a.flatten(f);
        split = f.num_leaves();
        b.flatten(f);
    });
    let (leaves, def) = f.finish()?;
    Ok((leaves, def, split))
}

/// Emits the tuple `(a, b)` into `f` (the structure [`flatten_pair`] builds).
pub(crate) fn flatten_pair_into<'x, A: TreeNode, B: TreeNode>(
    f: &mut Flattener<'x>,
    a: &'x A,
    b: &'x B,
) {
    f.tuple(|f| {
        a.flatten(f);
        b.flatten(f);
    });
}

/// The node index of element `i` (0 or 1) of a pair structure.
fn element(def: &TreeDef, i: usize) -> usize {
    match i {
        0 => 1,
        _ => 1 + def.nodes.get(1).map_or(0, |n| n.size as usize),
    }
}

/// Rebuilds `(A, B)` from a pair structure and all its leaves.
pub(crate) fn unflatten_pair<A: TreeNode, B: TreeNode>(
    def: &TreeDef,
    leaves: Vec<Array>,
) -> Result<(A, B)> {
    let mut u = Unflattener::new(def, leaves)?;
    let out = u.tuple(2, |u| Ok((u.child::<A>()?, u.child::<B>()?)))?;
    u.finish()?;
    Ok(out)
}

/// Rebuilds element `i` of a pair structure from that element's leaves only (e.g. the
/// gradients of the parameters).
pub(crate) fn unflatten_element<T: TreeNode>(
    def: &TreeDef,
    i: usize,
    leaves: std::vec::IntoIter<Array>,
) -> Result<T> {
    let mut u = Unflattener::subtree(def, element(def, i), leaves)?;
    let out = T::unflatten(&mut u)?;
    u.finish_subtree()?;
    Ok(out)
}

/// Rebuilds a `T` from a structure and the rest of an iterator of leaves.
pub(crate) fn unflatten_rest<T: TreeNode>(
    def: &TreeDef,
    leaves: std::vec::IntoIter<Array>,
) -> Result<T> {
    let mut u = Unflattener::subtree(def, 0, leaves)?;
    let out = T::unflatten(&mut u)?;
    u.finish_subtree()?;
    Ok(out)
}
