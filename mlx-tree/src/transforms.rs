//! `value_and_grad`, `grad` and `vmap` over trees.

use std::cell::RefCell;

use mlx_rs::transforms as core;

use crate::def::{NodeKind, NodeRef, TreeDef};
use crate::error::{self, Result};
use crate::pair::{flatten_pair, unflatten_element, unflatten_pair, unflatten_rest};
use crate::{tree_flatten, tree_unflatten, Array, TreeNode};

/// A function returning `fun`'s value and its gradient with respect to the parameters, as the
/// same type as the parameters (Python: `mlx.nn.value_and_grad(model, fn)`, or
/// `mx.value_and_grad(fn)` with a pytree as argument 0).
///
/// `fun(&params, &args)` returns any tree `O` whose **first leaf** (in flatten order) is the
/// scalar loss: `Array` for the loss alone, `(Array, Aux)` to return auxiliary values
/// (Python's `return loss, aux`), which come back as computed and are not differentiated.
/// `args` (a batch, targets, ...) is any tree and is not differentiated. The result is
/// `(fun(params, args), gradients)`, with `gradients: P`: a `Linear` for a `Linear`, a
/// registered cache for a registered cache. Static data of `params` is copied into the
/// gradient unchanged; it is never traced.
///
/// ```
/// use mlx_tree::{value_and_grad, Array, TreeNode};
///
/// #[derive(TreeNode)]
/// struct Affine { w: Array, b: Array }
///
/// let loss = |p: &Affine, x: &Array| {
///     let y = x * &p.w + &p.b;
///     Ok(((&y * &y).sum(None, false)?, y)) // (loss, aux)
/// };
/// let p = Affine { w: Array::from_scalar(2.0f32), b: Array::from_scalar(1.0f32) };
/// let ((value, y), grads) = value_and_grad(loss)(&p, &Array::from_scalar(3.0f32))?;
/// assert_eq!(value.item::<f32>()?, 49.0); // (2*3 + 1)^2
/// assert_eq!(y.item::<f32>()?, 7.0);
/// assert_eq!(grads.w.item::<f32>()?, 42.0); // 2 * 7 * 3
/// assert_eq!(grads.b.item::<f32>()?, 14.0);
/// # Ok::<(), mlx_tree::Error>(())
/// ```
pub fn value_and_grad<'f, P, A, O, F>(fun: F) -> impl Fn(&P, &A) -> Result<(O, P)> + 'f
where
    P: TreeNode,
    A: TreeNode,
    O: TreeNode,
    F: Fn(&P, &A) -> Result<O> + 'f,
{
    move |params: &P, args: &A| {
        let (leaves, def, num_params) = flatten_pair(params, args)?;
        if num_params == 0 {
            return Err(error::invalid(
                "value_and_grad: the parameters have no array leaves to differentiate",
            ));
        }
        let out_def = RefCell::new(None);
        let traced = |xs: &[Array]| -> Result<Vec<Array>> {
            let (p, a): (P, A) = unflatten_pair(&def, xs.to_vec())?;
            let out = fun(&p, &a)?;
            let (out_leaves, od) = tree_flatten(&out)?;
            if out_leaves.is_empty() {
                return Err(error::invalid(
                    "value_and_grad: the function's result has no array leaves (its first \
                     leaf must be the scalar loss)",
                ));
            }
            if out_leaves[0].size() != 1 {
                return Err(error::invalid(format!(
                    "value_and_grad: the first leaf of the function's result must be a scalar \
                     loss, found shape {:?}",
                    out_leaves[0].shape()
                )));
            }
            let out_leaves = out_leaves.into_iter().cloned().collect();
            *out_def.borrow_mut() = Some(od);
            Ok(out_leaves)
        };
        let inputs: Vec<Array> = leaves.iter().map(|a| (*a).clone()).collect();
        let argnums: Vec<i32> = (0..num_params as i32).collect();
        let (values, grads) = core::value_and_grad(traced, argnums)(&inputs)?;
        let od = out_def
            .into_inner()
            .ok_or_else(|| error::invalid("value_and_grad: the function was not traced"))?;
        let out = tree_unflatten(&od, values)?;
        let grads = unflatten_element(&def, 0, grads.into_iter())?;
        Ok((out, grads))
    }
}

/// The gradient of `fun`'s first leaf with respect to the parameters, as the same type as
/// the parameters (Python: `mx.grad`); see [`value_and_grad`].
pub fn grad<'f, P, A, O, F>(fun: F) -> impl Fn(&P, &A) -> Result<P> + 'f
where
    P: TreeNode,
    A: TreeNode,
    O: TreeNode,
    F: Fn(&P, &A) -> Result<O> + 'f,
{
    let vg = value_and_grad(fun);
    move |params: &P, args: &A| Ok(vg(params, args)?.1)
}

/// Vectorization axes for the leaves of a tree (Python: `in_axes` / `out_axes` of
/// `mx.vmap`): one axis for all leaves, or a tree *prefix* that gives a subtree one axis.
///
/// - [`TreeAxes::All`]: every leaf below uses this axis; `None` means "not vectorized": an
///   input passed whole to every call, an output returned once, unbatched (JAX's `None`).
/// - [`TreeAxes::Seq`]: one entry per positional child (tuple element, list item).
/// - [`TreeAxes::Map`]: one entry per keyed child (struct field, dict entry, registered
///   part), by key; every key must be given. Static fields have no leaves and no entry.
///
/// `Option::Some` is transparent, as in key paths. `From<i32>` and `From<Option<i32>>` give
/// `All`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeAxes {
    /// One axis for the whole subtree.
    All(Option<i32>),
    /// Per positional child.
    Seq(Vec<TreeAxes>),
    /// Per keyed child.
    Map(Vec<(String, TreeAxes)>),
}

impl TreeAxes {
    /// Per positional child: `TreeAxes::seq([0.into(), None.into()])`.
    pub fn seq(items: impl IntoIterator<Item = TreeAxes>) -> Self {
        TreeAxes::Seq(items.into_iter().collect())
    }

    /// Per keyed child: `TreeAxes::map([("keys", 1.into()), ("values", 1.into())])`.
    pub fn map<K: Into<String>>(entries: impl IntoIterator<Item = (K, TreeAxes)>) -> Self {
        TreeAxes::Map(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// The axis of each leaf of a tree of structure `def`, in flatten order.
    pub fn resolve(&self, def: &TreeDef) -> Result<Vec<Option<i32>>> {
        let mut out = Vec::with_capacity(def.num_leaves());
        if def.num_nodes() > 0 {
            resolve(def.root(), self, &mut out)?;
        }
        Ok(out)
    }
}

impl From<i32> for TreeAxes {
    fn from(axis: i32) -> Self {
        TreeAxes::All(Some(axis))
    }
}

impl From<Option<i32>> for TreeAxes {
    fn from(axis: Option<i32>) -> Self {
        TreeAxes::All(axis)
    }
}

impl From<Vec<TreeAxes>> for TreeAxes {
    fn from(items: Vec<TreeAxes>) -> Self {
        TreeAxes::Seq(items)
    }
}

fn axes_error(node: NodeRef<'_>, msg: impl std::fmt::Display) -> crate::Error {
    let path = node.path();
    let at = if path.is_empty() {
        "the root".to_string()
    } else {
        format!("`{path}`")
    };
    error::invalid(format!("vmap axes do not match the tree at {at}: {msg}"))
}

fn resolve(node: NodeRef<'_>, spec: &TreeAxes, out: &mut Vec<Option<i32>>) -> Result<()> {
    if let TreeAxes::All(axis) = spec {
        out.extend(std::iter::repeat(*axis).take(node.num_leaves()));
        return Ok(());
    }
    let children: Vec<NodeRef<'_>> = node.children().filter(|c| !c.is_static()).collect();
    match (node.kind(), spec) {
        (NodeKind::Some, _) => resolve(children[0], spec, out),
        (NodeKind::Tuple | NodeKind::List, TreeAxes::Seq(items)) => {
            if items.len() != children.len() {
                return Err(axes_error(
                    node,
                    format!(
                        "{} axes entries for {} children",
                        items.len(),
                        children.len()
                    ),
                ));
            }
            children
                .into_iter()
                .zip(items)
                .try_for_each(|(c, s)| resolve(c, s, out))
        }
        (
            NodeKind::Dict | NodeKind::Struct(_) | NodeKind::Variant(_) | NodeKind::Registered(_),
            TreeAxes::Map(entries),
        ) => {
            for (k, _) in entries {
                if !children.iter().any(|c| c.key() == Some(k.as_str())) {
                    return Err(axes_error(node, format!("the tree has no key `{k}`")));
                }
            }
            for c in children {
                let key = c.key().unwrap_or_default();
                let s = entries
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, s)| s)
                    .ok_or_else(|| axes_error(node, format!("no axes given for key `{key}`")))?;
                resolve(c, s, out)?;
            }
            Ok(())
        }
        (_, TreeAxes::Seq(_)) => Err(axes_error(
            node,
            format!("positional axes given for {}", crate::def::describe(node)),
        )),
        (_, _) => Err(axes_error(
            node,
            format!("keyed axes given for {}", crate::def::describe(node)),
        )),
    }
}

/// A vectorized version of `fun` over trees (Python: `mx.vmap(fun, in_axes, out_axes)` with
/// pytree arguments): `in_axes` says, per leaf of the argument, which axis is mapped over
/// (`None`: passed whole), and `out_axes`, per leaf of the result, where the mapped axis goes.
/// Both are one axis for all leaves (`0`) or a tree prefix ([`TreeAxes`]). An output axis of
/// `None` returns that output unbatched, as in JAX: it must not depend on the mapped inputs
/// (MLX broadcasts such an output over the batch; the first entry is returned). Several
/// arguments go in a tuple, with [`TreeAxes::Seq`] giving each its axes. Static data is
/// passed through unchanged: every per-example call sees the same static fields.
///
/// ```
/// use mlx_tree::{vmap, Array, TreeAxes, TreeNode};
///
/// #[derive(TreeNode)]
/// struct Pair { a: Array, b: Array }
///
/// // Row-wise dot product of a batch with one shared vector.
/// let dot = vmap(
///     |p: &Pair| Ok((&p.a * &p.b).sum(None, false)?),
///     TreeAxes::map([("a", 0.into()), ("b", None.into())]),
///     0,
/// );
/// let p = Pair {
///     a: Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?,
///     b: Array::from_slice(&[1.0f32, 10.0], &[2])?,
/// };
/// assert_eq!(dot(&p)?.to_vec::<f32>()?, vec![21.0, 43.0]);
/// # Ok::<(), mlx_tree::Error>(())
/// ```
pub fn vmap<'f, I, O, F>(
    fun: F,
    in_axes: impl Into<TreeAxes>,
    out_axes: impl Into<TreeAxes>,
) -> impl Fn(&I) -> Result<O> + 'f
where
    I: TreeNode,
    O: TreeNode,
    F: Fn(&I) -> Result<O> + 'f,
{
    let in_axes = in_axes.into();
    let out_axes = out_axes.into();
    move |input: &I| {
        let (leaves, def) = tree_flatten(input)?;
        let axes = in_axes.resolve(&def)?;
        let out_def = RefCell::new(None);
        let traced = |xs: &[Array]| -> Result<Vec<Array>> {
            let x: I = tree_unflatten(&def, xs.to_vec())?;
            let out = fun(&x)?;
            let (out_leaves, od) = tree_flatten(&out)?;
            let out_leaves = out_leaves.into_iter().cloned().collect();
            *out_def.borrow_mut() = Some(od);
            Ok(out_leaves)
        };
        let inputs: Vec<Array> = leaves.iter().map(|a| (*a).clone()).collect();
        // Outputs whose axis is `None`: MLX has no unbatched outputs, so they come back
        // broadcast along a leading batch axis and the first entry is the value.
        let unbatched = RefCell::new(Vec::new());
        let mut outs = core::vmap_with(traced, &inputs, &axes, |_| {
            let od = out_def.borrow();
            let od = od
                .as_ref()
                .ok_or_else(|| error::invalid("vmap: the function was not traced"))?;
            let mut unbatched = unbatched.borrow_mut();
            Ok(out_axes
                .resolve(od)?
                .into_iter()
                .enumerate()
                .map(|(i, a)| {
                    a.unwrap_or_else(|| {
                        unbatched.push(i);
                        0
                    })
                })
                .collect())
        })?;
        for i in unbatched.into_inner() {
            outs[i] = outs[i].index(0)?;
        }
        let od = out_def
            .into_inner()
            .ok_or_else(|| error::invalid("vmap: the function was not traced"))?;
        unflatten_rest(&od, outs.into_iter())
    }
}
