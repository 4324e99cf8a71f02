//! The stack of the state-space models that name it `backbone` (Python: mamba's, mamba2's and
//! nemotron_h's `...Model`): `embeddings`, `layers`, `norm_f`, generic over the layer.

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
        let rows = Rows::of(inputs)?;
        let h = self.embeddings.forward(&rows.fold(inputs)?)?;
        let h = forward_layers(&self.layers, h, rows, self.kernels, cache)?;
        let h = self.norm_f.forward(&h)?;
        let logits = match lm_head {
            Some(head) => head.forward(&h)?,
            None => self.embeddings.as_linear(&h)?,
        };
        rows.unfold(&logits)
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
