//! The modules inside a model (Python: `children`, `modules`, `named_modules`,
//! `leaf_modules`, `apply_to_modules`, `update_modules`, `filter_and_map`, `apply`, `state`).
//!
//! A *module* is a struct node of the model's tree: a layer, or any `#[derive(TreeNode)]`
//! struct of yours. Lists, tuples, maps, `Option`s and enums between modules are containers,
//! as Python's lists and dicts of modules are. Because a Rust model is typed, a module is
//! handed out as an [`AnyModule`] (its structure and its arrays, typed on demand with
//! [`AnyModule::downcast`]) and changed in place through [`Module::apply_to_modules`] for
//! one type at a time; [`Module::update_modules`] can put a module of another type only where
//! the model's field can hold it (an enum such as [`MaybeQuantized`](crate::MaybeQuantized)).

use std::sync::{LazyLock, RwLock};

use mlx_rs::{Array, Error, Result};
use mlx_tree::{tree_flatten, tree_unflatten, NodeKind, NodeRef, StaticValue, TreeDef, TreeNode};

/// One module of a model, detached from its type: its structure (with its static data) and
/// its arrays, which it shares with the model. What Python hands out as the module object.
///
/// ```
/// use mlx_nn::{AnyModule, Linear};
/// let m = AnyModule::new(&Linear::new(4, 2, true)?)?;
/// assert_eq!(m.type_name(), "Linear");
/// let names: Vec<String> = m.named_parameters().into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names, ["weight", "bias"]);
/// let linear: Linear = m.downcast()?;
/// assert_eq!(linear.weight.shape(), &[2, 4]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct AnyModule {
    def: TreeDef,
    leaves: Vec<Array>,
}

impl AnyModule {
    /// Detaches `module`, which must be a struct (a module, not a container of modules).
    pub fn new<T: TreeNode>(module: &T) -> Result<AnyModule> {
        let (leaves, def) = tree_flatten(module)?;
        if !matches!(def.root().kind(), NodeKind::Struct(_)) {
            return Err(Error::InvalidArgument(format!(
                "[AnyModule] a module is a struct; got {}",
                std::any::type_name::<T>()
            )));
        }
        Ok(AnyModule {
            def,
            leaves: leaves.into_iter().cloned().collect(),
        })
    }

    fn at(node: NodeRef<'_>, leaves: &[Array]) -> AnyModule {
        AnyModule {
            def: node.subtree(),
            leaves: leaves[node.leaf_range()].to_vec(),
        }
    }

    /// The struct's name (`"Linear"`; Python: `type(module).__name__`).
    pub fn type_name(&self) -> &str {
        match self.def.root().kind() {
            NodeKind::Struct(name) => name,
            _ => unreachable!("an AnyModule is made from a struct node"),
        }
    }

    /// The module as its own type (Python: `isinstance` and then the object); errors if it
    /// is not a `T`. The arrays are shared, not copied.
    pub fn downcast<T: TreeNode>(&self) -> Result<T> {
        tree_unflatten(&self.def, self.leaves.clone())
    }

    /// Whether the module is a `T`.
    pub fn is<T: TreeNode>(&self) -> bool {
        self.downcast::<T>().is_ok()
    }

    /// Its parameters as `(path, array)`, paths relative to the module, in flatten order.
    pub fn named_parameters(&self) -> Vec<(String, Array)> {
        self.def
            .leaf_paths()
            .into_iter()
            .zip(self.leaves.iter().cloned())
            .collect()
    }

    /// Its static data (configuration, flags) as `(path, value)`, in flatten order: with
    /// [`named_parameters`](Self::named_parameters), everything the module holds (Python:
    /// `module.state`).
    pub fn named_statics(&self) -> Vec<(String, StaticValue)> {
        self.def
            .nodes()
            .filter_map(|n| match n.kind() {
                NodeKind::Static(v) => Some((n.path(), v.clone())),
                _ => None,
            })
            .collect()
    }

    /// Its structure.
    pub fn structure(&self) -> &TreeDef {
        &self.def
    }
}

/// The struct nodes directly below `node` (through containers, not through other modules),
/// in flatten order.
fn child_modules<'d>(node: NodeRef<'d>) -> Vec<NodeRef<'d>> {
    let mut out = Vec::new();
    let mut stack: Vec<NodeRef<'d>> = node.children().collect();
    stack.reverse();
    while let Some(n) = stack.pop() {
        match n.kind() {
            NodeKind::Struct(_) => out.push(n),
            NodeKind::Leaf | NodeKind::Static(_) | NodeKind::None => {}
            _ => {
                let start = stack.len();
                stack.extend(n.children());
                stack[start..].reverse();
            }
        }
    }
    out
}

/// The modules at the top of a tree: the root if it is a struct, else the first struct
/// nodes below it.
fn top_modules(def: &TreeDef) -> Vec<NodeRef<'_>> {
    if def.num_nodes() == 0 {
        return Vec::new();
    }
    let root = def.root();
    match root.kind() {
        NodeKind::Struct(_) => vec![root],
        _ => child_modules(root),
    }
}

/// Node indices of every module in Python's `named_modules` order: a module, then its
/// children's subtrees, the last child first.
fn module_order(def: &TreeDef) -> Vec<usize> {
    let mut out = Vec::new();
    let mut stack: Vec<NodeRef<'_>> = top_modules(def);
    while let Some(n) = stack.pop() {
        out.push(n.index());
        stack.extend(child_modules(n));
    }
    out
}

fn flat<T: TreeNode>(tree: &T) -> Result<(Vec<Array>, TreeDef)> {
    let (leaves, def) = tree_flatten(tree)?;
    Ok((leaves.into_iter().cloned().collect(), def))
}

pub(crate) fn children<T: TreeNode>(tree: &T) -> Result<Vec<(String, AnyModule)>> {
    let (leaves, def) = flat(tree)?;
    let root = def.root();
    let below = match root.kind() {
        NodeKind::Struct(_) => child_modules(root),
        _ => top_modules(&def),
    };
    Ok(below
        .into_iter()
        .map(|n| (n.path(), AnyModule::at(n, &leaves)))
        .collect())
}

pub(crate) fn named_modules<T: TreeNode>(tree: &T) -> Result<Vec<(String, AnyModule)>> {
    let (leaves, def) = flat(tree)?;
    Ok(module_order(&def)
        .into_iter()
        .map(|i| {
            let n = def.node(i).expect("a node of this structure");
            (n.path(), AnyModule::at(n, &leaves))
        })
        .collect())
}

pub(crate) fn leaf_modules<T: TreeNode>(tree: &T) -> Result<Vec<(String, AnyModule)>> {
    let (leaves, def) = flat(tree)?;
    // Flatten order, as Python's nested dict of leaf modules flattens.
    Ok(def
        .nodes()
        .filter(|n| matches!(n.kind(), NodeKind::Struct(_)) && child_modules(*n).is_empty())
        .map(|n| (n.path(), AnyModule::at(n, &leaves)))
        .collect())
}

/// A tree being edited module by module: its structure and leaves, rebuilt at the end.
struct Editing {
    def: TreeDef,
    leaves: Vec<Array>,
}

impl Editing {
    fn new<T: TreeNode>(tree: &T) -> Result<Editing> {
        let (leaves, def) = flat(tree)?;
        Ok(Editing { def, leaves })
    }

    /// Puts `module` (structure and leaves) in place of the node at `index`.
    fn replace(&mut self, index: usize, def: &TreeDef, leaves: Vec<Array>) -> Result<()> {
        let node = self.def.node(index).expect("a node of this structure");
        let range = node.leaf_range();
        self.def = self.def.replace_subtree(index, def)?;
        self.leaves.splice(range, leaves);
        Ok(())
    }

    /// Calls `f` on every module that is a `T`, in `named_modules` order; a module `f`
    /// changes is visited with its new children.
    fn apply<T: TreeNode>(&mut self, f: &mut dyn FnMut(&str, &mut T) -> Result<()>) -> Result<()> {
        let mut stack: Vec<String> = top_modules(&self.def).iter().map(|n| n.path()).collect();
        while let Some(path) = stack.pop() {
            let Some(node) = self.def.node_at(&path) else {
                continue;
            };
            let (index, range) = (node.index(), node.leaf_range());
            if let Ok(mut module) =
                tree_unflatten::<T>(&node.subtree(), self.leaves[range].to_vec())
            {
                f(&path, &mut module)?;
                let (leaves, def) = flat(&module)?;
                self.replace(index, &def, leaves)?;
            }
            let node = self.def.node(index).expect("the node just visited");
            stack.extend(child_modules(node).iter().map(|n| n.path()));
        }
        Ok(())
    }

    fn finish<T: TreeNode>(self, op: &str) -> Result<T> {
        tree_unflatten(&self.def, self.leaves).map_err(|e| {
            Error::InvalidArgument(format!(
                "[{op}] the model's type cannot hold the changed modules: {e}"
            ))
        })
    }
}

pub(crate) fn apply_to_modules<M: TreeNode, T: TreeNode>(
    model: &mut M,
    f: &mut dyn FnMut(&str, &mut T) -> Result<()>,
) -> Result<()> {
    let mut editing = Editing::new(model)?;
    editing.apply(f)?;
    *model = editing.finish("apply_to_modules")?;
    Ok(())
}

pub(crate) fn update_modules<M: TreeNode>(
    model: &mut M,
    modules: Vec<(String, AnyModule)>,
) -> Result<()> {
    let mut editing = Editing::new(model)?;
    for (path, module) in modules {
        let index = match editing.def.node_at(&path) {
            Some(n) if matches!(n.kind(), NodeKind::Struct(_)) => n.index(),
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "[update_modules] the model has no module at `{path}`"
                )))
            }
        };
        editing.replace(index, &module.def, module.leaves)?;
    }
    *model = editing.finish("update_modules")?;
    Ok(())
}

/// One parameter as a [`Module::filter_and_map`](crate::Module::filter_and_map) filter
/// sees it.
#[derive(Debug, Clone, Copy)]
pub struct ParameterEntry<'a> {
    /// The full path (`layers.0.attention.wq.weight`).
    pub path: &'a str,
    /// The type of the innermost module holding it (`"Linear"`; `None` outside any struct).
    pub module_type: Option<&'a str>,
    /// The path relative to that module (`weight`; Python's `key`).
    pub key: &'a str,
    /// The array.
    pub value: &'a Array,
    /// Whether it is trainable (not frozen).
    pub trainable: bool,
}

pub(crate) fn filter_and_map<T: crate::Module>(
    tree: &T,
    filter: &mut dyn FnMut(&ParameterEntry<'_>) -> bool,
    map: &mut dyn FnMut(&Array) -> Result<Array>,
) -> Result<Vec<(String, Array)>> {
    let (leaves, def) = flat(tree)?;
    let mask = tree.trainable_mask()?;
    let owners = leaf_owners(&def);
    let paths = def.leaf_paths();
    let mut out = Vec::new();
    for (((path, value), trainable), owner) in paths.iter().zip(&leaves).zip(mask).zip(owners) {
        let (module_type, key) = match owner {
            Some((name, module_path)) if !module_path.is_empty() => {
                (Some(name), &path[module_path.len() + 1..])
            }
            Some((name, _)) => (Some(name), path.as_str()),
            None => (None, path.as_str()),
        };
        let entry = ParameterEntry {
            path,
            module_type,
            key,
            value,
            trainable,
        };
        if filter(&entry) {
            out.push((path.clone(), map(value)?));
        }
    }
    Ok(out)
}

/// For each leaf in flatten order, its innermost enclosing struct: type name and path.
fn leaf_owners(def: &TreeDef) -> Vec<Option<(&str, String)>> {
    let mut out = Vec::with_capacity(def.num_leaves());
    // Open structs: (type name, path, end of its subtree).
    let mut open: Vec<(&str, String, usize)> = Vec::new();
    for n in def.nodes() {
        let i = n.index();
        while open.last().is_some_and(|(_, _, end)| *end <= i) {
            open.pop();
        }
        let end = i + n.num_nodes();
        match n.kind() {
            NodeKind::Struct(name) => open.push((name, n.path(), end)),
            NodeKind::Leaf => out.push(open.last().map(|(name, path, _)| (*name, path.clone()))),
            _ => {}
        }
    }
    out
}

pub(crate) fn state<T: TreeNode>(tree: &T) -> Result<AnyModule> {
    let (leaves, def) = flat(tree)?;
    Ok(AnyModule { def, leaves })
}

// ---------------------------------------------------------------------------------------------
// Training-mode hooks

/// A training hook: what it runs on a model being edited, and the struct name it acts on
/// when known (then models without such a node skip it without a walk).
struct Hook {
    type_name: Option<&'static str>,
    run: HookFn,
}

/// A hook's work on a model being edited, given the new mode.
type HookFn = Box<dyn Fn(&mut Editing, bool) -> Result<()> + Send + Sync>;

/// The registered hooks, QQLinear's built in.
static HOOKS: LazyLock<RwLock<Vec<Hook>>> = LazyLock::new(|| {
    RwLock::new(vec![Hook {
        type_name: Some(crate::QQLinear::NAME),
        run: Box::new(|editing, mode| {
            editing.apply::<crate::QQLinear>(&mut |_, layer| layer.set_training_mode(mode))
        }),
    }])
});

/// Registers what a module of type `T` does when [`Module::train`](crate::Module::train)
/// sets its mode (Python: overriding `_set_training_mode`): after the `training` flags are
/// set, `hook(module, mode)` runs on every `T` in the model. [`QQLinear`](crate::QQLinear)'s
/// hook (quantize for evaluation, dequantize for training) is built in.
pub fn register_training_hook<T: TreeNode + 'static>(hook: fn(&mut T, bool) -> Result<()>) {
    let hook = Hook {
        type_name: None,
        run: Box::new(move |editing, mode| editing.apply::<T>(&mut |_, module| hook(module, mode))),
    };
    HOOKS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(hook);
}

pub(crate) fn run_training_hooks<M: TreeNode>(model: &mut M, mode: bool) -> Result<()> {
    let hooks = HOOKS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut editing = Editing::new(model)?;
    let present = |name: &str| {
        editing
            .def
            .nodes()
            .any(|n| n.kind() == NodeKind::Struct(name))
    };
    let due: Vec<&Hook> = hooks
        .iter()
        .filter(|h| h.type_name.map_or(true, present))
        .collect();
    if due.is_empty() {
        return Ok(());
    }
    for hook in due {
        (hook.run)(&mut editing, mode)?;
    }
    *model = editing.finish("train")?;
    Ok(())
}
