//! The stack of inclusionAI's bailing families (bailing_moe_linear, bailing_hybrid,
//! bailing_moe_v3; Python: their `LanguageModel` / `BailingModel`): `word_embeddings`, the
//! layers, `norm`. Each layer is a pre-norm [`DecoderLayer`] whose token mixer sits under
//! `attention` (softmax, linear, latent or Kimi delta attention, chosen per layer: the
//! family's mixer enum, a [`TokenMixer`](crate::blocks::TokenMixer) keyed `attention`) and
//! whose feed-forward block is a dense MLP or the family's experts ([`FeedForward`]).

use mlx_nn::RMSNorm;

use crate::blocks::backbone::{Stack, StackNames};
use crate::blocks::decoder::{load_decoder_layers, DecoderLayer, StackConfig};
use crate::blocks::{ChannelMixer, FeedForward, Mlp};
use crate::checkpoint::Checkpoint;
use crate::kernels::KernelOptions;

/// A bailing layer: `attention` (`M`, a [`TokenMixer`](crate::blocks::TokenMixer) keyed
/// `attention`), then `mlp`, the dense MLP or the experts `E`.
pub type BailingLayer<M, E> = DecoderLayer<M, FeedForward<E>>;

/// The layer's field that holds a bailing token mixer.
pub const ATTENTION: &str = "attention";

/// The bailing stack's names: `word_embeddings`, `norm`.
#[derive(Debug, Clone, Copy)]
pub enum BailingNames {}

impl StackNames for BailingNames {
    const NAME: &'static str = "BailingStack";
    const EMBEDDING: &'static str = "word_embeddings";
    const NORM: &'static str = "norm";
}

/// Python: `LanguageModel` (bailing_moe_linear, bailing_hybrid) / `BailingModel`
/// (bailing_moe_v3).
pub type BailingStack<L> = Stack<L, RMSNorm, BailingNames>;

/// The dense MLP of a bailing stack's first layers (Python: `first_k_dense_replace` of them,
/// the experts from there on).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DenseLayers {
    pub first_k_dense_replace: i32,
    pub intermediate_size: i32,
    pub use_bias: bool,
}

impl<M, E> BailingStack<BailingLayer<M, E>>
where
    M: crate::blocks::TokenMixer,
    E: ChannelMixer + Clone,
{
    /// Takes the stack's tensors under `model`: the embedding, each layer's `attention` as
    /// `attention` takes it from the layer's path and index, its `mlp` (the dense MLP of
    /// `dense`, or the experts `experts` takes from the path), its norms, and the final norm.
    pub fn load(
        ck: &mut Checkpoint,
        s: StackConfig,
        kernels: KernelOptions,
        mut attention: impl FnMut(&mut Checkpoint, &str, i32) -> crate::Result<M>,
        dense: DenseLayers,
        mut experts: impl FnMut(&mut Checkpoint, &str) -> crate::Result<E>,
    ) -> crate::Result<Self> {
        let layers = load_decoder_layers(
            ck,
            "model",
            s,
            |ck, path, i| attention(ck, &format!("{path}.{ATTENTION}"), i),
            |ck, path, i| {
                Ok(if i >= dense.first_k_dense_replace {
                    FeedForward::Sparse(experts(ck, path)?)
                } else {
                    let (d, width) = (s.hidden_size, dense.intermediate_size);
                    FeedForward::Dense(Mlp::load(ck, path, d, width, dense.use_bias)?)
                })
            },
        )?;
        Stack::load_around(
            ck,
            "model",
            (s.vocab_size, s.hidden_size),
            layers,
            |ck, path| ck.rms_norm(path, s.hidden_size, s.rms_norm_eps),
            kernels,
        )
    }
}
