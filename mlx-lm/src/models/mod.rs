//! The architectures, and [`Model`], which holds any of them.

pub mod decode_attention;
pub mod decoder;
pub mod gated_delta;
pub mod llama;
pub mod qwen3_5;

use mlx_rs::{Array, Dtype, Result};
use mlx_tree::{Flattener, NodeKind, TreeNode, Unflattener};

use crate::cache::LayerCache;
pub use llama::{Llama, Qwen2, Qwen3};
pub use qwen3_5::Qwen3_5;

/// The `model_type`s this crate has an architecture for (after mlx_lm's remapping).
pub const MODEL_TYPES: &[&str] = &["llama", "qwen2", "qwen3", "qwen3_5"];

/// A loaded language model of any supported architecture. Transparent in the tree: its
/// parameters are the architecture's, with mlx_lm's paths (`model.layers.0...`).
#[derive(Debug, Clone)]
pub enum Model {
    Llama(Llama),
    Qwen2(Qwen2),
    Qwen3(Qwen3),
    Qwen3_5(Qwen3_5),
}

macro_rules! each {
    ($self:expr, $m:ident => $e:expr) => {
        match $self {
            Model::Llama($m) => $e,
            Model::Qwen2($m) => $e,
            Model::Qwen3($m) => $e,
            Model::Qwen3_5($m) => $e,
        }
    };
}

impl Model {
    /// Logits `[B, L, vocab]` for token ids `[B, L]`; with a cache, the tokens continue what
    /// the cache holds and are written into it (Python: `model(inputs, cache=cache)`).
    pub fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        each!(self, m => m.forward(inputs, cache))
    }

    /// A cache for `batch` sequences of up to `capacity` positions (sliding-window layers
    /// keep only their window).
    pub fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        each!(self, m => m.make_cache(batch, capacity))
    }

    /// The dtype the model computes in.
    pub fn dtype(&self) -> Dtype {
        each!(self, m => m.dtype())
    }

    /// The vocabulary size (the logits' last dimension).
    pub fn vocab_size(&self) -> i32 {
        let embed = match self {
            Model::Llama(m) => &m.model.embed_tokens,
            Model::Qwen2(m) => &m.model.embed_tokens,
            Model::Qwen3(m) => &m.model.embed_tokens,
            Model::Qwen3_5(m) => &m.language_model.model.embed_tokens,
        };
        match embed {
            mlx_nn::MaybeQuantized::Float(e) => e.weight.shape()[0],
            mlx_nn::MaybeQuantized::Quantized(q) => q.weight.shape()[0],
        }
    }

    /// The architecture's `model_type`.
    pub fn model_type(&self) -> &'static str {
        match self {
            Model::Llama(_) => "llama",
            Model::Qwen2(_) => "qwen2",
            Model::Qwen3(_) => "qwen3",
            Model::Qwen3_5(_) => "qwen3_5",
        }
    }
}

impl TreeNode for Model {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        each!(self, m => m.flatten(f))
    }

    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        match u.peek_kind()? {
            NodeKind::Struct("Qwen2") => Qwen2::unflatten(u).map(Model::Qwen2),
            NodeKind::Struct("Qwen3") => Qwen3::unflatten(u).map(Model::Qwen3),
            NodeKind::Struct("Qwen3_5") => Qwen3_5::unflatten(u).map(Model::Qwen3_5),
            _ => Llama::unflatten(u).map(Model::Llama),
        }
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        each!(self, m => m.leaves_mut(f))
    }
}
