//! [`LanguageModel`], what generation, batching and prompt caches need of an architecture,
//! and [`Model`], a loaded model of an architecture chosen at run time.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::{OnceLock, RwLock};

use mlx_rs::distributed::Group;
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::{tree_structure, Flattener, NodeKind, TreeNode, Unflattener};

use crate::cache::LayerCache;

/// A causal language model: token ids in, logits out, with a cache of the positions seen.
///
/// Every architecture implements it (the crate's own in [`models`](crate::models), and a
/// user's, [registered](crate::register_model) under its `model_type`); generation, batching
/// and prompt caches take any `M: LanguageModel + ?Sized`, a [`Model`] included. A type that
/// derives `TreeNode` and `Clone` gets the tree methods ([`ModelTree`]) for free.
pub trait LanguageModel: ModelTree + fmt::Debug + Send {
    /// Logits `[B, L, vocab]` for token ids `[B, L]`; with a cache, the tokens continue what
    /// the cache holds and are written into it (Python: `model(inputs, cache=cache)`).
    fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array>;

    /// A cache for `batch` sequences of up to `capacity` positions, one entry per layer
    /// (Python: `make_prompt_cache(model)`; sliding-window layers keep only their window).
    fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>>;

    /// The dtype the model computes in.
    fn dtype(&self) -> Dtype;

    /// The vocabulary size (the logits' last dimension).
    fn vocab_size(&self) -> i32;

    /// The architecture's `model_type` (after mlx_lm's remapping: `llama` for a mistral).
    fn model_type(&self) -> &str;

    /// Splits the model over `group` for tensor parallelism (Python: `model.shard(group)`):
    /// each process keeps a slice of every layer's heads and hidden features, and the layers'
    /// output projections sum the slices over the group. An `Err` naming the `model_type`
    /// for an architecture that cannot be split so (the default).
    fn shard(&mut self, group: &Group) -> Result<()> {
        let _ = group;
        Err(crate::distributed::unsupported(
            "tensor",
            self.model_type(),
            None,
        ))
    }

    /// Splits the model's layers over `group` for pipeline parallelism (Python:
    /// `model.model.pipeline(group, split)`): each process keeps a run of layers
    /// ([`PipelineStage`](crate::blocks::PipelineStage)). An `Err` naming the `model_type`
    /// for an architecture that cannot be split so (the default).
    fn pipeline(&mut self, group: &Group, split: Option<&[usize]>) -> Result<()> {
        let _ = (group, split);
        Err(crate::distributed::unsupported(
            "pipeline",
            self.model_type(),
            None,
        ))
    }
}

/// The tree side of a [`LanguageModel`] in a form a boxed model can call: flattening (for
/// `eval`, `tree_leaves`, the parameter count), writing leaves in place, cloning and
/// downcasting. Implemented for every `TreeNode + Clone` language model.
pub trait ModelTree: Any {
    /// [`TreeNode::flatten`].
    fn flatten_model<'a>(&'a self, f: &mut Flattener<'a>);
    /// [`TreeNode::leaves_mut`].
    fn model_leaves_mut(&mut self, f: &mut dyn FnMut(&mut Array)) -> mlx_tree::Result<()>;
    /// A clone, boxed.
    fn clone_model(&self) -> Model;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: LanguageModel + TreeNode + Clone> ModelTree for T {
    fn flatten_model<'a>(&'a self, f: &mut Flattener<'a>) {
        self.flatten(f)
    }

    fn model_leaves_mut(&mut self, f: &mut dyn FnMut(&mut Array)) -> mlx_tree::Result<()> {
        self.leaves_mut(&mut |a: &mut Array| f(a))
    }

    fn clone_model(&self) -> Model {
        Model(Box::new(self.clone()))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A loaded language model of any architecture (what [`load`](crate::load) returns).
/// Transparent in the tree: its parameters are the architecture's, with mlx_lm's paths
/// (`model.layers.0...`). [`downcast_ref`](Self::downcast_ref) gives the architecture's type.
pub struct Model(Box<dyn LanguageModel>);

type Rebuild = fn(&mut Unflattener<'_>) -> mlx_tree::Result<Model>;

/// How to rebuild each architecture from a tree, by the name of its root struct: filled as
/// models are made, so a `Model` unflattens (`tree_map`, `Module::freeze`) as its
/// architecture does.
fn rebuilders() -> &'static RwLock<HashMap<String, Rebuild>> {
    static REBUILD: OnceLock<RwLock<HashMap<String, Rebuild>>> = OnceLock::new();
    REBUILD.get_or_init(Default::default)
}

fn rebuild<T: LanguageModel + TreeNode + Clone>(
    u: &mut Unflattener<'_>,
) -> mlx_tree::Result<Model> {
    T::unflatten(u).map(|m| Model(Box::new(m)))
}

impl Model {
    /// Wraps an architecture's model.
    pub fn new<T: LanguageModel + TreeNode + Clone>(model: T) -> Model {
        if let Ok(def) = tree_structure(&model) {
            if let NodeKind::Struct(name) = def.root().kind() {
                let known = rebuilders().read().is_ok_and(|r| r.contains_key(name));
                if !known {
                    if let Ok(mut r) = rebuilders().write() {
                        r.insert(name.to_string(), rebuild::<T>);
                    }
                }
            }
        }
        Model(Box::new(model))
    }

    /// The architecture's model, if it is a `T`.
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }

    /// The architecture's model, mutably, if it is a `T`.
    pub fn downcast_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.0.as_any_mut().downcast_mut()
    }

    /// The model as a trait object.
    pub fn as_dyn(&self) -> &dyn LanguageModel {
        &*self.0
    }

    /// See [`LanguageModel::forward`].
    pub fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        self.0.forward(inputs, cache)
    }

    /// See [`LanguageModel::make_cache`].
    pub fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        self.0.make_cache(batch, capacity)
    }

    /// See [`LanguageModel::dtype`].
    pub fn dtype(&self) -> Dtype {
        self.0.dtype()
    }

    /// See [`LanguageModel::vocab_size`].
    pub fn vocab_size(&self) -> i32 {
        self.0.vocab_size()
    }

    /// See [`LanguageModel::model_type`].
    pub fn model_type(&self) -> &str {
        self.0.model_type()
    }
}

impl Clone for Model {
    fn clone(&self) -> Model {
        self.0.clone_model()
    }
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl LanguageModel for Model {
    fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        self.0.forward(inputs, cache)
    }

    fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        self.0.make_cache(batch, capacity)
    }

    fn dtype(&self) -> Dtype {
        self.0.dtype()
    }

    fn vocab_size(&self) -> i32 {
        self.0.vocab_size()
    }

    fn model_type(&self) -> &str {
        self.0.model_type()
    }

    fn shard(&mut self, group: &Group) -> Result<()> {
        self.0.shard(group)
    }

    fn pipeline(&mut self, group: &Group, split: Option<&[usize]>) -> Result<()> {
        self.0.pipeline(group, split)
    }
}

impl TreeNode for Model {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        self.0.flatten_model(f)
    }

    /// Rebuilds the architecture whose root struct the tree names (one made into a `Model`
    /// before in this process).
    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        let rebuild = match u.peek_kind()? {
            NodeKind::Struct(name) => rebuilders().read().ok().and_then(|r| r.get(name).copied()),
            _ => None,
        };
        match rebuild {
            Some(rebuild) => rebuild(u),
            None => Err(u.mismatch("the root struct of an architecture made into a Model")),
        }
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        self.0.model_leaves_mut(f)
    }
}
