//! [`Module`]: what every tree of parameters can do (Python: `mlx.nn.Module`'s methods).
//!
//! A module is any [`TreeNode`]: a layer, your own `#[derive(TreeNode)]` model, a `Vec` of
//! layers. There is no second registration mechanism: the parameters are the tree's leaves,
//! named by their key paths (`layers.0.attention.wq.weight`), exactly the names Python's
//! `tree_flatten(model.parameters())` gives for the same structure.
//!
//! Two kinds of per-module state are *static data* in the tree, so they are part of its
//! structure (a compiled function retraces when they change) and survive every transform:
//!
//! - `training` (a `#[tree(static)] training: bool` field, e.g. in [`Dropout`](crate::Dropout)):
//!   [`Module::train`] sets every one of them.
//! - `frozen` (a `#[tree(static)] frozen: Frozen` field, in every layer of this crate): the
//!   parameters of that module that are frozen. [`Module::freeze`] records a parameter in the
//!   innermost enclosing module that has such a field; add one to your own structs to make
//!   their direct array fields freezable.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use mlx_rs::{ops, Array, Error, Result};
pub use mlx_tree::LoadOptions;
use mlx_tree::{tree_assign_leaves, tree_flatten, tree_unflatten, TreeDef, TreeNode, Value};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// The frozen parameters of one module, by their path relative to it (static data).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Frozen(pub BTreeSet<String>);

/// The static key that holds a module's [`Frozen`] set.
const FROZEN: &str = "frozen";
/// The static key that holds a module's training flag.
const TRAINING: &str = "training";

/// One leaf as seen by the structure walk.
struct LeafInfo {
    path: String,
    frozen: bool,
}

/// Walks the serialized structure (the nested form `TreeDef` serializes to), calling `visit`
/// for every struct node that holds a static field, and collecting every leaf with its path.
///
/// Paths follow `TreeDef::leaf_paths`: a child's segment is its key, or its position among the
/// non-static children; `Some` nodes are transparent.
struct Walker<'v> {
    leaves: Vec<LeafInfo>,
    /// Frozen sets of the enclosing modules: (module path, entries).
    scopes: Vec<(String, BTreeSet<String>)>,
    visit: &'v mut dyn FnMut(&str, &mut Json, &[usize]),
}

fn kind_name(node: &Json) -> (&str, Option<&Json>) {
    match &node["kind"] {
        Json::String(s) => (s.as_str(), None),
        Json::Object(m) => m
            .iter()
            .next()
            .map_or(("", None), |(k, v)| (k.as_str(), Some(v))),
        _ => ("", None),
    }
}

fn join(path: &str, seg: &str) -> String {
    if path.is_empty() {
        seg.to_string()
    } else {
        format!("{path}.{seg}")
    }
}

fn is_frozen_in(scopes: &[(String, BTreeSet<String>)], path: &str) -> bool {
    scopes.iter().any(|(base, set)| {
        let rel = if base.is_empty() {
            path
        } else {
            match path
                .strip_prefix(base.as_str())
                .and_then(|r| r.strip_prefix('.'))
            {
                Some(r) => r,
                None => return false,
            }
        };
        set.contains(rel)
    })
}

impl Walker<'_> {
    fn walk(&mut self, node: &mut Json, path: &str) {
        let (kind, _) = kind_name(node);
        match kind {
            "leaf" => {
                let frozen = is_frozen_in(&self.scopes, path);
                self.leaves.push(LeafInfo {
                    path: path.to_string(),
                    frozen,
                });
            }
            "static" | "none" => {}
            _ => {
                let transparent = kind == "some";
                let is_struct = kind == "struct";
                let first_leaf = self.leaves.len();
                let mut pushed = false;
                if is_struct {
                    // Frozen entries of this module apply to its whole subtree.
                    if let Some(children) = node.get("children").and_then(Json::as_array) {
                        for c in children {
                            if kind_name(c).0 == "static" && c["key"] == FROZEN {
                                let set: BTreeSet<String> =
                                    serde_json::from_value(c["kind"]["static"].clone())
                                        .unwrap_or_default();
                                self.scopes.push((path.to_string(), set));
                                pushed = true;
                            }
                        }
                    }
                }
                let mut position = 0usize;
                let mut has_static = false;
                if let Some(children) = node.get_mut("children").and_then(Json::as_array_mut) {
                    for c in children.iter_mut() {
                        if kind_name(c).0 == "static" {
                            has_static = true;
                            continue;
                        }
                        let child_path = if transparent {
                            path.to_string()
                        } else {
                            let seg = c
                                .get("key")
                                .and_then(Json::as_str)
                                .map(str::to_string)
                                .unwrap_or_else(|| position.to_string());
                            join(path, &seg)
                        };
                        self.walk(c, &child_path);
                        position += 1;
                    }
                }
                if pushed {
                    self.scopes.pop();
                }
                if is_struct && has_static {
                    let leaves: Vec<usize> = (first_leaf..self.leaves.len()).collect();
                    (self.visit)(path, node, &leaves);
                }
            }
        }
    }
}

/// The structure as JSON plus per-leaf info; `visit` may rewrite struct nodes' static data.
fn walk(
    def: &TreeDef,
    visit: &mut dyn FnMut(&str, &mut Json, &[usize]),
) -> Result<(Json, Vec<LeafInfo>)> {
    let mut json = serde_json::to_value(def)
        .map_err(|e| Error::InvalidArgument(format!("cannot serialize the structure: {e}")))?;
    let mut w = Walker {
        leaves: Vec::new(),
        scopes: Vec::new(),
        visit,
    };
    if !json.is_null() {
        w.walk(&mut json, "");
    }
    Ok((json, w.leaves))
}

/// The static child `key` of a serialized struct node, mutably.
fn static_child<'j>(node: &'j mut Json, key: &str) -> Option<&'j mut Json> {
    node.get_mut("children")?
        .as_array_mut()?
        .iter_mut()
        .find(|c| kind_name(c).0 == "static" && c["key"] == key)
        .map(|c| &mut c["kind"]["static"])
}

/// Rebuilds `tree` with a rewritten structure and its own leaves.
fn rebuild<T: TreeNode>(tree: &mut T, json: Json) -> Result<()> {
    let def: TreeDef = serde_json::from_value(json)
        .map_err(|e| Error::InvalidArgument(format!("cannot rebuild the structure: {e}")))?;
    let leaves: Vec<Array> = tree_flatten(tree)?.0.into_iter().cloned().collect();
    *tree = tree_unflatten(&def, leaves)?;
    Ok(())
}

/// Which parameters a `freeze`/`unfreeze` call addresses: all of them, or those whose path
/// equals one of the keys or lies below one (`"layers.0"` addresses the whole first layer).
fn selected(path: &str, keys: Option<&[&str]>) -> bool {
    match keys {
        None => true,
        Some(keys) => keys.iter().any(|k| {
            k.is_empty()
                || path == *k
                || path
                    .strip_prefix(k)
                    .is_some_and(|rest| rest.starts_with('.'))
        }),
    }
}

/// What every tree of parameters can do. Implemented for every [`TreeNode`]; see the module
/// docs for the data model.
pub trait Module: TreeNode {
    /// Every parameter as `(path, array)`, in flatten order (Python:
    /// `tree_flatten(model.parameters())`).
    fn named_parameters(&self) -> Result<Vec<(String, Array)>> {
        Ok(mlx_tree::tree_flatten_with_path(self)?
            .into_iter()
            .map(|(p, a)| (p, a.clone()))
            .collect())
    }

    /// The parameters as a nested dict/list tree (Python: `model.parameters()`).
    fn parameters(&self) -> Result<Value> {
        Ok(Value::from_flat(self.named_parameters()?))
    }

    /// For each leaf in flatten order: whether it is trainable (not frozen).
    fn trainable_mask(&self) -> Result<Vec<bool>> {
        let (_, def) = tree_flatten(self)?;
        let (_, leaves) = walk(&def, &mut |_, _, _| {})?;
        Ok(leaves.iter().map(|l| !l.frozen).collect())
    }

    /// The trainable parameters as `(path, array)` (Python:
    /// `tree_flatten(model.trainable_parameters())`).
    fn named_trainable_parameters(&self) -> Result<Vec<(String, Array)>> {
        let mask = self.trainable_mask()?;
        Ok(self
            .named_parameters()?
            .into_iter()
            .zip(mask)
            .filter_map(|(p, t)| t.then_some(p))
            .collect())
    }

    /// The trainable parameters as a nested tree (Python: `model.trainable_parameters()`).
    fn trainable_parameters(&self) -> Result<Value> {
        Ok(Value::from_flat(self.named_trainable_parameters()?))
    }

    /// Freezes the parameters at or below each path in `keys` (all with `None`) (Python:
    /// `model.freeze(keys=...)`, with full paths). Errors, changing nothing, if a key matches
    /// no parameter or a parameter has no enclosing module with a `frozen` field.
    fn freeze(&mut self, keys: Option<&[&str]>) -> Result<()> {
        set_frozen(self, keys, true)
    }

    /// Unfreezes the parameters at or below each path in `keys` (all with `None`).
    fn unfreeze(&mut self, keys: Option<&[&str]>) -> Result<()> {
        set_frozen(self, keys, false)
    }

    /// Sets training mode (`true`) or evaluation mode (`false`) in every module that has a
    /// `training` flag (Python: `model.train(mode)`).
    fn train(&mut self, mode: bool) -> Result<()> {
        let (_, def) = tree_flatten(self)?;
        let mut changed = false;
        let (json, _) = walk(&def, &mut |_, node, _| {
            if let Some(v) = static_child(node, TRAINING) {
                if *v != Json::Bool(mode) {
                    *v = Json::Bool(mode);
                    changed = true;
                }
            }
        })?;
        if changed {
            rebuild(self, json)?;
        }
        Ok(())
    }

    /// Evaluation mode (Python: `model.eval()`).
    fn eval(&mut self) -> Result<()> {
        self.train(false)
    }

    /// Whether any module is in training mode (Python: `model.training`; modules without a
    /// flag count as training, as a fresh Python module does).
    fn training(&self) -> Result<bool> {
        let (_, def) = tree_flatten(self)?;
        let mut any_flag = false;
        let mut training = false;
        walk(&def, &mut |_, node, _| {
            if let Some(v) = static_child(node, TRAINING) {
                any_flag = true;
                training |= *v == Json::Bool(true);
            }
        })?;
        Ok(training || !any_flag)
    }

    /// Replaces parameters by path (Python: `model.update(parameters)` with
    /// `tree_unflatten(pairs)`): every path must name a parameter of the model; parameters
    /// not named keep their values. Shapes may change (as in Python); use
    /// [`Module::load_weights`] for checked loading.
    ///
    /// Named `update_*`, not `update`, because `update` is the optimizer step
    /// (`optimizer.update(&mut model, &grads)`), the one a training loop writes; a model is a
    /// tree and an optimizer is a tree, so both traits apply to both and one name for two
    /// methods would need UFCS.
    fn update_named_parameters(&mut self, parameters: Vec<(String, Array)>) -> Result<()> {
        let names = self.named_parameters()?;
        let index: HashMap<&str, usize> = names
            .iter()
            .enumerate()
            .map(|(i, (p, _))| (p.as_str(), i))
            .collect();
        let mut leaves: Vec<Array> = names.iter().map(|(_, a)| a.clone()).collect();
        for (path, a) in parameters {
            let i = *index.get(path.as_str()).ok_or_else(|| {
                Error::InvalidArgument(format!("[update] the model has no parameter `{path}`"))
            })?;
            leaves[i] = a;
        }
        tree_assign_leaves(self, leaves)
    }

    /// Replaces parameters from a nested tree such as [`Module::parameters`] returns (Python:
    /// `model.update(parameters)`); see [`Module::update_named_parameters`].
    fn update_parameters(&mut self, parameters: &Value) -> Result<()> {
        let pairs = mlx_tree::tree_flatten_with_path(parameters)?
            .into_iter()
            .map(|(p, a)| (p, a.clone()))
            .collect();
        self.update_named_parameters(pairs)
    }

    /// Loads weights by name from `(name, array)` pairs, checking names and shapes (Python:
    /// `model.load_weights(list(weights.items()), strict=True)`): missing parameters,
    /// unexpected tensors and wrong shapes are one error naming every key, and the model is
    /// left unchanged. Built on [`mlx_tree::assign_weights`].
    fn load_weights_from(
        &mut self,
        weights: HashMap<String, Array>,
        options: LoadOptions,
    ) -> Result<()> {
        mlx_tree::assign_weights(self, weights, options)
    }

    /// Loads a `.safetensors` file whose tensor names are the parameter paths (Python:
    /// `model.load_weights("model.safetensors")`); the error names the file and the keys.
    fn load_weights(&mut self, path: impl AsRef<Path>, options: LoadOptions) -> Result<()> {
        let path = path.as_ref();
        mlx_tree::load_weights(self, path, options)
            .map(|_| ())
            .map_err(|e| match e {
                Error::InvalidArgument(m) => {
                    Error::InvalidArgument(format!("{}: {m}", path.display()))
                }
                other => other,
            })
    }

    /// Saves the parameters to `.safetensors` under their paths (Python:
    /// `model.save_weights("model.safetensors")`).
    fn save_weights(&self, path: impl AsRef<Path>) -> Result<()> {
        mlx_tree::save_weights(path, self, None)
    }

    /// The total number of parameter elements.
    fn num_parameters(&self) -> Result<usize> {
        Ok(tree_flatten(self)?.0.iter().map(|a| a.size()).sum())
    }
}

impl<T: TreeNode> Module for T {}

fn set_frozen<T: TreeNode>(tree: &mut T, keys: Option<&[&str]>, freeze: bool) -> Result<()> {
    let (_, def) = tree_flatten(tree)?;
    // First pass: the leaves and which modules can hold their flags.
    let mut owners: Vec<Option<String>> = Vec::new();
    let (_, leaves) = walk(&def, &mut |module_path, node, leaf_ids| {
        if static_child(node, FROZEN).is_some() {
            for &i in leaf_ids {
                if owners.len() <= i {
                    owners.resize(i + 1, None);
                }
                // Innermost module first: visits happen bottom-up.
                if owners[i].is_none() {
                    owners[i] = Some(module_path.to_string());
                }
            }
        }
    })?;
    owners.resize(leaves.len(), None);
    if let Some(keys) = keys {
        for k in keys {
            if !leaves.iter().any(|l| selected(&l.path, Some(&[k]))) {
                return Err(Error::InvalidArgument(format!(
                    "[{}] the model has no parameter at or below `{k}`",
                    if freeze { "freeze" } else { "unfreeze" }
                )));
            }
        }
    }
    let mut edits: HashMap<String, Vec<(String, bool)>> = HashMap::new();
    for (leaf, owner) in leaves.iter().zip(&owners) {
        if !selected(&leaf.path, keys) {
            continue;
        }
        let Some(owner) = owner else {
            if freeze {
                return Err(Error::InvalidArgument(format!(
                    "[freeze] cannot freeze `{}`: no enclosing module has a `frozen` field \
                     (add `#[tree(static)] frozen: mlx_nn::Frozen` to its struct)",
                    leaf.path
                )));
            }
            continue;
        };
        let rel = if owner.is_empty() {
            leaf.path.clone()
        } else {
            leaf.path[owner.len() + 1..].to_string()
        };
        edits.entry(owner.clone()).or_default().push((rel, freeze));
    }
    // Unfreezing also clears entries that outer modules hold for the same leaves.
    let selected_paths: BTreeSet<&str> = leaves
        .iter()
        .filter(|l| selected(&l.path, keys))
        .map(|l| l.path.as_str())
        .collect();
    let (json, _) = walk(&def, &mut |module_path, node, _| {
        let Some(v) = static_child(node, FROZEN) else {
            return;
        };
        let mut set: BTreeSet<String> = serde_json::from_value(v.clone()).unwrap_or_default();
        if let Some(list) = edits.get(module_path) {
            for (rel, f) in list {
                if *f {
                    set.insert(rel.clone());
                } else {
                    set.remove(rel);
                }
            }
        }
        if !freeze {
            set.retain(|rel| !selected_paths.contains(join(module_path, rel).as_str()));
        }
        *v = serde_json::to_value(&set).unwrap_or(Json::Array(vec![]));
    })?;
    rebuild(tree, json)
}

/// `value_and_grad` with respect to the *trainable* parameters of a model (Python:
/// `nn.value_and_grad(model, fn)`): [`mlx_tree::value_and_grad`] — same call, same result —
/// except that frozen parameters are held constant and get zero gradients (optimizers skip
/// them anyway).
///
/// `fun(&model, &args)` returns a tree whose first leaf is the scalar loss (`Array`, or
/// `(loss, aux)`); the returned function gives `(fun(model, args), grads)` with `grads` of the
/// model's own type. See the crate docs for which `value_and_grad` to use when.
///
/// ```
/// use mlx_nn::{value_and_grad, Forward, Linear, Module};
/// use mlx_rs::{ops, Array};
/// let mut model = Linear::new(3, 2, true)?;
/// model.freeze(Some(&["bias"]))?;
/// let x = ops::ones(&[4, 3], None)?;
/// let loss_fn = |m: &Linear, x: &Array| m.forward(x)?.square()?.mean(None, false);
/// let (loss, grads) = value_and_grad(loss_fn)(&model, &x)?;
/// assert_eq!(grads.weight.shape(), &[2, 3]);
/// assert_eq!(grads.bias.unwrap().abs()?.sum(None, false)?.item::<f32>()?, 0.0); // frozen
/// assert!(loss.item::<f32>()? >= 0.0);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn value_and_grad<'f, M, A, O, F>(fun: F) -> impl Fn(&M, &A) -> Result<(O, M)> + 'f
where
    M: Module,
    A: TreeNode,
    O: TreeNode,
    F: Fn(&M, &A) -> Result<O> + 'f,
{
    move |model: &M, args: &A| {
        let mask = model.trainable_mask()?;
        if mask.iter().all(|t| *t) {
            return mlx_tree::value_and_grad(&fun)(model, args);
        }
        let (leaves, def) = tree_flatten(model)?;
        let leaves: Vec<Array> = leaves.into_iter().cloned().collect();
        let trainable: Vec<Array> = leaves
            .iter()
            .zip(&mask)
            .filter(|(_, t)| **t)
            .map(|(a, _)| a.clone())
            .collect();
        // Every leaf of the model, taking the trainable ones from `values` in order.
        let merge = |values: Vec<Array>, frozen: &dyn Fn(&Array) -> Result<Array>| {
            let mut it = values.into_iter();
            leaves
                .iter()
                .zip(&mask)
                .map(|(a, t)| match t {
                    true => it
                        .next()
                        .ok_or_else(|| Error::InvalidArgument("missing gradient".into())),
                    false => frozen(a),
                })
                .collect::<Result<Vec<Array>>>()
        };
        let zeros = |a: &Array| ops::zeros_like(a, None);
        if trainable.is_empty() {
            let out = fun(model, args)?;
            return Ok((out, tree_unflatten(&def, merge(Vec::new(), &zeros)?)?));
        }
        let (out, grads) = mlx_tree::value_and_grad(|t: &Vec<Array>, a: &A| {
            let m: M = tree_unflatten(&def, merge(t.clone(), &|a| Ok(a.clone()))?)?;
            fun(&m, a)
        })(&trainable, args)?;
        Ok((out, tree_unflatten(&def, merge(grads, &zeros)?)?))
    }
}
