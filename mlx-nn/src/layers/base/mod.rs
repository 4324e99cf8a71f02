//! [`Module`]: what every tree of parameters can do (Python: `mlx.nn.Module`'s methods, in
//! `mlx/nn/layers/base.py`).
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

pub(crate) mod any_module;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use mlx_rs::{Array, Dtype, Error, Result};
pub use mlx_tree::LoadWeightsOptions;
use mlx_tree::{
    tree_assign_leaves, tree_flatten, tree_unflatten, NodeKind, NodeRef, StaticData, StaticValue,
    TreeDef, TreeNode, Value,
};

use any_module::{AnyModule, ParameterEntry};

/// The frozen parameters of one module, by their path relative to it (static data).
#[derive(Debug, Clone, Default, PartialEq, Eq, StaticData)]
pub struct Frozen(pub BTreeSet<String>);

/// The static key that holds a module's [`Frozen`] set.
const FROZEN: &str = "frozen";
/// The static key that holds a module's training flag.
const TRAINING: &str = "training";

/// One leaf as seen by the structure walk.
struct LeafInfo {
    path: String,
    frozen: bool,
    /// The innermost enclosing module with a `frozen` field: its path and the node index of
    /// that static field.
    owner: Option<(String, usize)>,
}

/// A module's `frozen` field found by the walk.
struct FrozenField {
    /// The module's path.
    path: String,
    /// The static node's index in the `TreeDef`.
    node: usize,
    set: BTreeSet<String>,
}

/// What the walk over a structure finds: every leaf with its path, and every `frozen` field.
struct Walk {
    leaves: Vec<LeafInfo>,
    frozen: Vec<FrozenField>,
}

fn join(path: &str, seg: &str) -> String {
    if path.is_empty() {
        seg.to_string()
    } else {
        format!("{path}.{seg}")
    }
}

/// The static child `key` of a struct node.
fn static_child<'d>(node: NodeRef<'d>, key: &str) -> Option<(NodeRef<'d>, &'d StaticValue)> {
    node.children().find_map(|c| match c.kind() {
        NodeKind::Static(v) if c.key() == Some(key) => Some((c, v)),
        _ => None,
    })
}

/// The value of a static flag, typed. A flag of another type than the one this crate uses
/// is not ours to interpret: it is ignored.
fn static_value<T: StaticData>(v: &StaticValue) -> Option<T> {
    v.get::<T>().ok().flatten()
}

/// Walks a structure without recursion (so any depth is safe): paths follow
/// `TreeDef::leaf_paths` (a child's segment is its key or its position among the non-static
/// children; `Some` is transparent), and each struct's `frozen` set applies to its subtree.
fn walk(def: &TreeDef) -> Walk {
    enum Step<'d> {
        Enter(NodeRef<'d>, String),
        /// Leaves a module whose `frozen` scope was pushed.
        Exit,
    }
    let mut out = Walk {
        leaves: Vec::new(),
        frozen: Vec::new(),
    };
    if def.num_nodes() == 0 {
        return out;
    }
    // Open `frozen` scopes: indices into `out.frozen`.
    let mut scopes: Vec<usize> = Vec::new();
    let mut stack = vec![Step::Enter(def.root(), String::new())];
    while let Some(step) = stack.pop() {
        let (node, path) = match step {
            Step::Exit => {
                scopes.pop();
                continue;
            }
            Step::Enter(node, path) => (node, path),
        };
        match node.kind() {
            NodeKind::Leaf => {
                let frozen = scopes.iter().any(|&s| {
                    let f = &out.frozen[s];
                    let rel = if f.path.is_empty() {
                        Some(path.as_str())
                    } else {
                        path.strip_prefix(f.path.as_str())
                            .and_then(|r| r.strip_prefix('.'))
                    };
                    rel.is_some_and(|r| f.set.contains(r))
                });
                let owner = scopes
                    .last()
                    .map(|&s| (out.frozen[s].path.clone(), out.frozen[s].node));
                out.leaves.push(LeafInfo {
                    path,
                    frozen,
                    owner,
                });
            }
            NodeKind::Static(_) | NodeKind::None => {}
            kind => {
                if matches!(kind, NodeKind::Struct(_)) {
                    if let Some((field, v)) = static_child(node, FROZEN) {
                        if let Some(Frozen(set)) = static_value::<Frozen>(v) {
                            out.frozen.push(FrozenField {
                                path: path.clone(),
                                node: field.index(),
                                set,
                            });
                            scopes.push(out.frozen.len() - 1);
                            stack.push(Step::Exit);
                        }
                    }
                }
                let transparent = kind == NodeKind::Some;
                let children: Vec<(NodeRef<'_>, String)> = node
                    .children()
                    .filter(|c| !matches!(c.kind(), NodeKind::Static(_)))
                    .enumerate()
                    .map(|(position, c)| {
                        let child_path = if transparent {
                            path.clone()
                        } else {
                            let seg = c.key().map_or_else(|| position.to_string(), str::to_string);
                            join(&path, &seg)
                        };
                        (c, child_path)
                    })
                    .collect();
                stack.extend(children.into_iter().rev().map(|(c, p)| Step::Enter(c, p)));
            }
        }
    }
    out
}

/// Rebuilds `tree` with a rewritten structure and its own leaves.
fn rebuild<T: TreeNode>(tree: &mut T, def: &TreeDef) -> Result<()> {
    let leaves: Vec<Array> = tree_flatten(tree)?.0.into_iter().cloned().collect();
    *tree = tree_unflatten(def, leaves)?;
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
        Value::from_flat(self.named_parameters()?)
    }

    /// For each leaf in flatten order: whether it is trainable (not frozen).
    fn trainable_mask(&self) -> Result<Vec<bool>> {
        let (_, def) = tree_flatten(self)?;
        Ok(walk(&def).leaves.iter().map(|l| !l.frozen).collect())
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
        Value::from_flat(self.named_trainable_parameters()?)
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
    /// `training` flag (Python: `model.train(mode)`), then runs the modules' training hooks
    /// ([`register_training_hook`](crate::register_training_hook)).
    fn train(&mut self, mode: bool) -> Result<()> {
        let (_, def) = tree_flatten(self)?;
        let mut changed = false;
        let new = def.map_statics(|node, v| {
            let flag = (node.key() == Some(TRAINING)).then(|| static_value::<bool>(v))??;
            changed |= flag != mode;
            (flag != mode).then(|| StaticValue::new(&mode))
        });
        if changed {
            rebuild(self, &new)?;
        }
        // What modules do on a change of mode beyond their flag (QQLinear quantizes).
        any_module::run_training_hooks(self, mode)
    }

    /// Sets evaluation mode, `train(false)` (Python: `model.eval()`).
    ///
    /// Not named `eval`: in Rust `eval` is what computes arrays
    /// ([`Array::eval`](mlx_rs::Array::eval), `mlx::core::eval(&tree)`), and this trait is
    /// implemented for every tree, so with an `eval` here `outputs.eval()` on a `Vec<Array>`
    /// would compile, compute nothing and set a mode.
    ///
    /// ```
    /// use mlx_nn::{Dropout, Module};
    /// let mut dropout = Dropout::new(0.5)?;
    /// dropout.eval_mode()?; // Python: dropout.eval()
    /// assert!(!dropout.training()?);
    /// dropout.train(true)?;
    /// assert!(dropout.training()?);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    #[doc(alias = "eval")]
    fn eval_mode(&mut self) -> Result<()> {
        self.train(false)
    }

    /// Whether any module is in training mode (Python: `model.training`; modules without a
    /// flag count as training, as a fresh Python module does).
    fn training(&self) -> Result<bool> {
        let (_, def) = tree_flatten(self)?;
        let flags: Vec<bool> = def
            .nodes()
            .filter(|n| n.key() == Some(TRAINING))
            .filter_map(|n| match n.kind() {
                NodeKind::Static(v) => static_value::<bool>(v),
                _ => None,
            })
            .collect();
        Ok(flags.is_empty() || flags.contains(&true))
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
        options: LoadWeightsOptions,
    ) -> Result<()> {
        mlx_tree::assign_weights(self, weights, options)
    }

    /// Loads a `.safetensors` file whose tensor names are the parameter paths (Python:
    /// `model.load_weights("model.safetensors")`); the error names the file and the keys.
    fn load_weights(&mut self, path: impl AsRef<Path>, options: LoadWeightsOptions) -> Result<()> {
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

    /// Casts every parameter whose dtype `predicate` accepts to `dtype`; with `None`, every
    /// real floating-point one (Python: `model.set_dtype(dtype, predicate=lambda x:
    /// mx.issubdtype(x, mx.floating))`). Frozen parameters too, as in Python. On an error the
    /// model is left as it was.
    ///
    /// ```
    /// use mlx_nn::{Linear, Module};
    /// use mlx_rs::Dtype;
    /// let mut layer = Linear::new(4, 2, None)?;
    /// layer.set_dtype(Dtype::Bfloat16, None)?;
    /// assert_eq!(layer.weight.dtype(), Dtype::Bfloat16);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    fn set_dtype(&mut self, dtype: Dtype, predicate: Option<&dyn Fn(Dtype) -> bool>) -> Result<()> {
        let (leaves, _) = tree_flatten(self)?;
        let cast = |d: Dtype| predicate.map_or(d.is_floating(), |p| p(d));
        let new = leaves
            .iter()
            .map(|a| {
                if cast(a.dtype()) {
                    a.astype(dtype)
                } else {
                    Ok((*a).clone())
                }
            })
            .collect::<Result<Vec<_>>>()?;
        tree_assign_leaves(self, new)
    }

    /// The total number of parameter elements.
    fn num_parameters(&self) -> Result<usize> {
        Ok(tree_flatten(self)?.0.iter().map(|a| a.size()).sum())
    }

    /// The modules directly below this one, through lists, maps and options but not through
    /// other modules, with their paths, in flatten order (Python:
    /// `tree_flatten(model.children(), is_leaf=nn.Module.is_module)`). See
    /// [`AnyModule`] for what a module is.
    fn children(&self) -> Result<Vec<(String, AnyModule)>> {
        any_module::children(self)
    }

    /// Every module with its path, this one (`""`) included, in Python's order: a module,
    /// then its children's subtrees, the last child first (Python: `model.named_modules()`).
    ///
    /// ```
    /// use mlx_nn::{Linear, Module};
    /// let layers = vec![Linear::new(2, 2, true)?, Linear::new(2, 2, true)?];
    /// let paths: Vec<String> = layers.named_modules()?.into_iter().map(|(p, _)| p).collect();
    /// assert_eq!(paths, ["1", "0"]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    fn named_modules(&self) -> Result<Vec<(String, AnyModule)>> {
        any_module::named_modules(self)
    }

    /// Every module, in [`named_modules`](Self::named_modules)' order (Python:
    /// `model.modules()`).
    fn modules(&self) -> Result<Vec<AnyModule>> {
        Ok(self.named_modules()?.into_iter().map(|(_, m)| m).collect())
    }

    /// The modules that hold no other module, with their paths, in flatten order (Python:
    /// `tree_flatten(model.leaf_modules(), is_leaf=nn.Module.is_module)`).
    fn leaf_modules(&self) -> Result<Vec<(String, AnyModule)>> {
        any_module::leaf_modules(self)
    }

    /// Calls `f` with the path of every module of type `T` (this one included), in
    /// [`named_modules`](Self::named_modules)' order, and keeps what it changes (Python:
    /// `model.apply_to_modules(fn)`, for one type). A module `f` changes is visited with its
    /// new children. On an error the model is left as it was.
    ///
    /// ```
    /// use mlx_nn::{Linear, Module};
    /// use mlx_rs::ops;
    /// let mut layers = vec![Linear::new(2, 2, true)?, Linear::new(2, 2, false)?];
    /// // Zero every bias that exists.
    /// layers.apply_to_modules(|_path, l: &mut Linear| {
    ///     if let Some(b) = &l.bias {
    ///         l.bias = Some(ops::zeros_like(b, None)?);
    ///     }
    ///     Ok(())
    /// })?;
    /// assert_eq!(layers[0].bias.as_ref().unwrap().to_vec::<f32>()?, [0.0, 0.0]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    fn apply_to_modules<T: TreeNode>(
        &mut self,
        mut f: impl FnMut(&str, &mut T) -> Result<()>,
    ) -> Result<()> {
        any_module::apply_to_modules(self, &mut f)
    }

    /// Replaces modules by path (Python: `model.update_modules(tree_unflatten(pairs))`).
    /// Every path must name a module of the model, and the model's type must be able to hold
    /// the new one there: a module of the same type, or of another type where the field is
    /// an enum over both (such as [`MaybeQuantized`](crate::MaybeQuantized)). On an error
    /// the model is left as it was.
    fn update_modules(&mut self, modules: Vec<(String, AnyModule)>) -> Result<()> {
        any_module::update_modules(self, modules)
    }

    /// The parameters `filter` accepts, each mapped by `map`, as a nested tree (Python:
    /// `model.filter_and_map(filter_fn, map_fn)`). Python's filter also sees the containers
    /// and modules on the way down; this one sees each parameter with its module's type and
    /// its key in that module ([`ParameterEntry`]).
    fn filter_and_map(
        &self,
        mut filter: impl FnMut(&ParameterEntry<'_>) -> bool,
        mut map: impl FnMut(&Array) -> Result<Array>,
    ) -> Result<Value> {
        Value::from_flat(any_module::filter_and_map(self, &mut filter, &mut map)?)
    }

    /// Maps the parameters `filter` accepts (all with `None`) through `map` and keeps the
    /// results (Python: `model.apply(map_fn, filter_fn)`; not named `apply`, which is
    /// [`Apply::apply`](crate::Apply::apply), `x.apply(&layer)`).
    ///
    /// ```
    /// use mlx_nn::{Linear, Module};
    /// use mlx_rs::Dtype;
    /// let mut layer = Linear::new(4, 2, true)?;
    /// // model.apply(lambda x: x.astype(mx.float16), lambda m, k, v: k == "weight")
    /// layer.map_parameters(|x| x.astype(Dtype::Float16), Some(&|p| p.key == "weight"))?;
    /// assert_eq!(layer.weight.dtype(), Dtype::Float16);
    /// assert_eq!(layer.bias.unwrap().dtype(), Dtype::Float32);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    fn map_parameters(
        &mut self,
        mut map: impl FnMut(&Array) -> Result<Array>,
        filter: Option<&dyn Fn(&ParameterEntry<'_>) -> bool>,
    ) -> Result<()> {
        let mut filter = |p: &ParameterEntry<'_>| filter.map_or(true, |f| f(p));
        let mapped = any_module::filter_and_map(self, &mut filter, &mut map)?;
        self.update_named_parameters(mapped)
    }

    /// Everything the module holds: its arrays and its static data (configuration, flags),
    /// detached from its type (Python: `model.state`). Not named `state`, which is the
    /// optimizer's ([`Optimizer::state`](../mlx_optimizers/trait.Optimizer.html)): an
    /// optimizer is a tree too, so both traits apply to it.
    #[doc(alias = "state")]
    fn module_state(&self) -> Result<AnyModule> {
        any_module::state(self)
    }
}

impl<T: TreeNode> Module for T {}

fn set_frozen<T: TreeNode>(tree: &mut T, keys: Option<&[&str]>, freeze: bool) -> Result<()> {
    let (_, def) = tree_flatten(tree)?;
    let Walk { leaves, frozen } = walk(&def);
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
    // The new set of each `frozen` field, by its static node.
    let mut sets: HashMap<usize, BTreeSet<String>> =
        frozen.iter().map(|f| (f.node, f.set.clone())).collect();
    for leaf in leaves.iter().filter(|l| selected(&l.path, keys)) {
        let Some((owner, node)) = &leaf.owner else {
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
        let set = sets.entry(*node).or_default();
        if freeze {
            set.insert(rel);
        } else {
            set.remove(&rel);
        }
    }
    // Unfreezing also clears entries that outer modules hold for the same leaves.
    if !freeze {
        let selected_paths: BTreeSet<&str> = leaves
            .iter()
            .filter(|l| selected(&l.path, keys))
            .map(|l| l.path.as_str())
            .collect();
        for f in &frozen {
            if let Some(set) = sets.get_mut(&f.node) {
                set.retain(|rel| !selected_paths.contains(join(&f.path, rel).as_str()));
            }
        }
    }
    let new = def.map_statics(|node, _| {
        sets.remove(&node.index())
            .map(|set| StaticValue::new(&Frozen(set)))
    });
    rebuild(tree, &new)
}
