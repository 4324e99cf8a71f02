//! The stacks of the models whose layers are their own (the [`Layer`] trait), generic over the
//! layer: [`Backbone`], as the state-space models name it (Python: mamba's, mamba2's and
//! nemotron_h's `...Model`: `embeddings`, `layers`, `norm_f`), and [`LayerStack`], as the
//! hybrids that name it `model` (`embed_tokens`, `layers`, `norm`).

use mlx_nn::{Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

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
            (&self.embeddings, &self.layers, &self.norm_f, self.kernels),
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
        embedding_dtype(&self.embeddings)
    }

    pub fn vocab_size(&self) -> i32 {
        embedding_vocab_size(&self.embeddings)
    }
}

/// Embedding, layers, final RMSNorm under mlx_lm's decoder names; the output head is the
/// model's, beside it.
#[derive(Debug, Clone, TreeNode)]
#[tree(bound = "L: Layer")]
pub struct LayerStack<L> {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<L>,
    pub norm: RMSNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

impl<L: Layer> LayerStack<L> {
    /// Logits of `inputs` `[B, L]` through `lm_head`, or the embedding as a linear layer when
    /// the head is tied.
    pub fn logits(
        &self,
        inputs: &Array,
        cache: Option<&mut [LayerCache]>,
        lm_head: Option<&MaybeQuantizedLinear>,
    ) -> Result<Array> {
        stack_logits(
            (&self.embed_tokens, &self.layers, &self.norm, self.kernels),
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
        embedding_dtype(&self.embed_tokens)
    }

    pub fn vocab_size(&self) -> i32 {
        embedding_vocab_size(&self.embed_tokens)
    }
}

/// Embedding, layers, final norm, then the head (or the tied embedding), over rows.
fn stack_logits<L: Layer>(
    (embedding, layers, norm, kernels): (&MaybeQuantizedEmbedding, &[L], &RMSNorm, KernelOptions),
    inputs: &Array,
    cache: Option<&mut [LayerCache]>,
    lm_head: Option<&MaybeQuantizedLinear>,
) -> Result<Array> {
    let rows = Rows::of(inputs)?;
    let h = embedding.forward(&rows.fold(inputs)?)?;
    let h = forward_layers(layers, h, rows, kernels, cache)?;
    let h = norm.forward(&h)?;
    let logits = match lm_head {
        Some(head) => head.forward(&h)?,
        None => embedding.as_linear(&h)?,
    };
    rows.unfold(&logits)
}
