//! The stack of inclusionAI's bailing families (bailing_moe_linear, bailing_hybrid,
//! bailing_moe_v3; Python: their `LanguageModel` / `BailingModel`): `word_embeddings`, the
//! layers, `norm`. Each layer is a pre-norm [`DecoderLayer`] whose token mixer sits under
//! `attention` (softmax, linear, latent or Kimi delta attention, chosen per layer: the
//! family's mixer enum, a [`TokenMixer`](crate::blocks::TokenMixer) keyed `attention`) and
//! whose feed-forward block is a dense MLP or the family's experts ([`FeedForward`]).

use mlx_nn::{MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::decoder::{load_decoder_layers, DecoderLayer, StackConfig};
use crate::blocks::layer::{embedding_dtype, embedding_vocab_size};
use crate::blocks::{
    make_layer_caches, stack_logits, ChannelMixer, FeedForward, Layer, StackEnds, StackParts,
};
use crate::cache::LayerCache;
use crate::checkpoint::Checkpoint;
use crate::distributed::ParallelStack;
use crate::kernels::KernelOptions;

/// A bailing layer: `attention` (`M`, a [`TokenMixer`](crate::blocks::TokenMixer) keyed
/// `attention`), then `mlp`, the dense MLP or the experts `E`.
pub type BailingLayer<M, E> = DecoderLayer<M, FeedForward<E>>;

/// The layer's field that holds a bailing token mixer.
pub const ATTENTION: &str = "attention";

/// Python: `LanguageModel` (bailing_moe_linear, bailing_hybrid) / `BailingModel`
/// (bailing_moe_v3).
#[derive(Debug, Clone, TreeNode)]
#[tree(bound = "L: Layer")]
pub struct BailingStack<L> {
    pub word_embeddings: MaybeQuantizedEmbedding,
    pub layers: Vec<L>,
    pub norm: RMSNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

// Neither mlx_lm's bailing models nor these split over processes.
impl<L> ParallelStack for BailingStack<L> {}

impl<L: Layer> BailingStack<L> {
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
                embedding: &self.word_embeddings,
                layers: &self.layers,
                norm: &self.norm,
                kernels: self.kernels,
                ends: StackEnds::default(),
                positions: None,
            },
            inputs,
            cache,
            lm_head,
        )
    }

    /// One cache entry per layer.
    pub fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        make_layer_caches(&self.layers, batch, capacity, self.dtype())
    }

    /// The dtype the model computes in: the embedding's (its scales' when quantized).
    pub fn dtype(&self) -> Dtype {
        embedding_dtype(&self.word_embeddings, self)
    }

    pub fn vocab_size(&self) -> i32 {
        embedding_vocab_size(&self.word_embeddings)
    }
}

impl<M, E> BailingStack<BailingLayer<M, E>>
where
    M: crate::blocks::TokenMixer,
    E: ChannelMixer + Clone,
{
    /// Takes the stack's tensors under `model`: the embedding, each layer's `attention` and
    /// `mlp` as `attention` and `mlp` take them from the layer's path and index, its norms,
    /// and the final norm.
    pub fn load(
        ck: &mut Checkpoint,
        s: StackConfig,
        kernels: KernelOptions,
        attention: impl FnMut(&mut Checkpoint, &str, i32) -> crate::Result<M>,
        mlp: impl FnMut(&mut Checkpoint, &str, i32) -> crate::Result<FeedForward<E>>,
    ) -> crate::Result<Self> {
        let mut attention = attention;
        let layers = load_decoder_layers(
            ck,
            "model",
            s,
            |ck, path, i| attention(ck, &format!("{path}.{ATTENTION}"), i),
            mlp,
        )?;
        Ok(BailingStack {
            word_embeddings: ck.embedding("model.word_embeddings", s.vocab_size, s.hidden_size)?,
            layers,
            norm: ck.rms_norm("model.norm", s.hidden_size, s.rms_norm_eps)?,
            kernels,
        })
    }
}
