//! The stack of inclusionAI's bailing families (bailing_moe_linear, bailing_hybrid,
//! bailing_moe_v3; Python: their `LanguageModel` / `BailingModel`): `word_embeddings`, the
//! layers, `norm`. Each layer is a pre-norm [`DecoderLayer`] whose token mixer sits under
//! `attention` (softmax, linear, latent or Kimi delta attention, chosen per layer: the
//! family's mixer enum, a [`TokenMixer`](crate::blocks::TokenMixer) keyed `attention`) and
//! whose feed-forward block is a dense MLP or the family's experts ([`FeedForward`]).

use mlx_nn::RMSNorm;

use crate::blocks::backbone::{Stack, StackNames};
use crate::blocks::decoder::{load_decoder_layers, DecoderLayer, StackConfig};
use crate::blocks::{ChannelMixer, FeedForward};
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
