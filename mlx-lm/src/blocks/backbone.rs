//! The stacks of the models whose layers are their own (the [`Layer`] trait), generic over the
//! layer: [`Backbone`], as the state-space models name it (Python: mamba's, mamba2's and
//! nemotron_h's `...Model`: `embeddings`, `layers`, `norm_f`), and [`LayerStack`], as the
//! hybrids and the dense families that name it `model` (`embed_tokens`, `layers`, `norm`),
//! generic over the final norm and with what a family does at the stack's two ends
//! ([`StackEnds`]). A family whose stack has other names (GPT-2's `wte`/`h`/`ln_f`) keeps
//! its own struct and computes through [`stack_logits`].

use mlx_nn::{Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::blocks::layer::{embedding_dtype, embedding_vocab_size};
use crate::blocks::{forward_layers, make_layer_caches, Layer, Rows};
use crate::cache::LayerCache;
use crate::kernels::KernelOptions;

/// Embedding, layers, final RMSNorm; the output head (tied to the embedding or not) is the
/// model's, beside it, as mlx_lm's `lm_head`.
#[derive(Debug, Clone, TreeNode)]
#[tree(bound = "L: Layer")]
pub struct Backbone<L> {
    pub embeddings: MaybeQuantizedEmbedding,
    pub layers: Vec<L>,
    pub norm_f: RMSNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

impl<L: Layer> Backbone<L> {
    /// Logits of `inputs` `[B, L]` through `lm_head`, or the embedding as a linear layer when
    /// the head is tied.
    pub fn logits(
        &self,
        inputs: &Array,
        cache: Option<&mut [LayerCache]>,
        lm_head: Option<&MaybeQuantizedLinear>,
    ) -> Result<Array> {
        stack_logits(
            StackParts {
                embedding: &self.embeddings,
                layers: &self.layers,
                norm: &self.norm_f,
                kernels: self.kernels,
                ends: StackEnds::default(),
                positions: None,
            },
            inputs,
            cache,
            lm_head,
        )
    }

    /// One cache entry per layer that keeps one.
    pub fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        make_layer_caches(&self.layers, batch, capacity, self.dtype())
    }

    /// The dtype the model computes in: the embedding's (its scales' when quantized).
    pub fn dtype(&self) -> Dtype {
        embedding_dtype(&self.embeddings, self)
    }

    pub fn vocab_size(&self) -> i32 {
        embedding_vocab_size(&self.embeddings)
    }
}

/// Embedding, layers, final norm (RMSNorm unless the family's is another) under mlx_lm's
/// decoder names; the output head is the model's, beside it.
#[derive(Debug, Clone, TreeNode)]
#[tree(bound = "L: Layer, N: Forward + TreeNode")]
pub struct LayerStack<L, N = RMSNorm> {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<L>,
    pub norm: N,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
    /// The family's scale of the embeddings and map of the logits.
    #[tree(static)]
    pub ends: StackEnds,
}

impl<L: Layer, N: Forward + TreeNode> LayerStack<L, N> {
    /// Logits of `inputs` `[B, L]` through `lm_head`, or the embedding as a linear layer when
    /// the head is tied.
    pub fn logits(
        &self,
        inputs: &Array,
        cache: Option<&mut [LayerCache]>,
        lm_head: Option<&MaybeQuantizedLinear>,
    ) -> Result<Array> {
        stack_logits(
            StackParts {
                embedding: &self.embed_tokens,
                layers: &self.layers,
                norm: &self.norm,
                kernels: self.kernels,
                ends: self.ends,
                positions: None,
            },
            inputs,
            cache,
            lm_head,
        )
    }

    /// One cache entry per layer that keeps one.
    pub fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        make_layer_caches(&self.layers, batch, capacity, self.dtype())
    }

    /// The dtype the model computes in: the embedding's (its scales' when quantized).
    pub fn dtype(&self) -> Dtype {
        embedding_dtype(&self.embed_tokens, self)
    }

    pub fn vocab_size(&self) -> i32 {
        embedding_vocab_size(&self.embed_tokens)
    }
}

/// What a family does at the stack's ends beyond embedding, layers, norm and head, in
/// Python floats (weakly typed: the products keep the activations' dtype, as in mlx_lm).
#[derive(Debug, Clone, Copy, Default, PartialEq, StaticData)]
pub struct StackEnds {
    /// `h = embed_tokens(x) * embed_scale`: Gemma's `hidden_size ** 0.5`, Granite's
    /// `embedding_multiplier`.
    pub embed_scale: Option<f64>,
    /// What the logits go through last.
    pub logits: Option<LogitsMap>,
}

/// The last map of the logits.
#[derive(Debug, Clone, Copy, PartialEq, StaticData)]
pub enum LogitsMap {
    /// `logits / d`: Granite's `logits_scaling` (a division in mlx_lm and transformers, whose
    /// last bits differ from a product with the reciprocal).
    Divide(f64),
    /// `logits * s`: Cohere's `logit_scale`.
    Multiply(f64),
    /// `tanh(logits / cap) * cap`: Gemma 2's `final_logit_softcapping`.
    SoftCap(f64),
}

impl LogitsMap {
    pub fn apply(self, logits: &Array) -> Result<Array> {
        match self {
            LogitsMap::Divide(d) => ops::divide(logits, d),
            LogitsMap::Multiply(s) => ops::multiply(logits, s),
            LogitsMap::SoftCap(cap) => ops::multiply(&ops::tanh(&ops::divide(logits, cap)?)?, cap),
        }
    }
}

/// A stack's parts, borrowed, for [`stack_logits`].
pub struct StackParts<'a, L, N> {
    pub embedding: &'a MaybeQuantizedEmbedding,
    pub layers: &'a [L],
    pub norm: &'a N,
    pub kernels: KernelOptions,
    pub ends: StackEnds,
    /// Learned absolute position embeddings added to the token embeddings (GPT-2's `wpe`).
    pub positions: Option<&'a MaybeQuantizedEmbedding>,
}

/// Embedding (scaled), layers, final norm, then the head (or the tied embedding) and the
/// logits' map, over rows: the forward of every stack whatever its parts are named.
pub fn stack_logits<L: Layer, N: Forward>(
    parts: StackParts<'_, L, N>,
    inputs: &Array,
    cache: Option<&mut [LayerCache]>,
    lm_head: Option<&MaybeQuantizedLinear>,
) -> Result<Array> {
    let rows = Rows::of(inputs)?;
    let mut h = parts.embedding.forward(&rows.fold(inputs)?)?;
    if let Some(scale) = parts.ends.embed_scale {
        h = ops::multiply(&h, scale)?;
    }
    if let Some(wpe) = parts.positions {
        h = ops::add(&h, &learned_positions(wpe, rows, cache.as_deref())?)?;
    }
    let h = forward_layers(parts.layers, h, rows, parts.kernels, cache)?;
    let h = parts.norm.forward(&h)?;
    let mut logits = match lm_head {
        Some(head) => head.forward(&h)?,
        None => parts.embedding.as_linear(&h)?,
    };
    if let Some(map) = parts.ends.logits {
        logits = map.apply(&logits)?;
    }
    rows.unfold(&logits)
}

/// The position embeddings of the call's rows (Python: gpt2's `wpe(mx.arange(L) +
/// offset[..., None])`, `offset` the first cache's: one per sequence in a batch, negative
/// over left padding, which indexes from the table's end as in MLX).
fn learned_positions(
    wpe: &MaybeQuantizedEmbedding,
    rows: Rows,
    cache: Option<&[LayerCache]>,
) -> Result<Array> {
    let offset = match cache.and_then(|c| c.first()) {
        Some(LayerCache::Kv(c)) => c.rope_offset()?,
        Some(c) => c
            .offset()
            .cloned()
            .unwrap_or_else(|| Array::from_scalar(0i32)),
        None => Array::from_scalar(0i32),
    };
    let positions = ops::add(
        &ops::arange(0, rows.len, 1, Dtype::Int32)?,
        &ops::expand_dims(&offset, -1)?,
    )?;
    let positions = ops::broadcast_to(&positions, &[rows.batch, rows.len])?;
    wpe.forward(&rows.fold(&positions)?)
}
