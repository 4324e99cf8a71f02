//! `qwen3` (Python: `mlx_lm.models.qwen3`): llama's decoder with per-head q/k norms.

use crate::blocks::{rope_theta, RotaryEmbedding};
use crate::config::{invalid, ModelConfig};
use crate::models::base::{dense_decoder, DecoderArgs};

dense_decoder!(
    /// Python: `mlx_lm.models.qwen3.Model`.
    Qwen3,
    "qwen3"
);

impl Qwen3 {
    /// Python: qwen3's `ModelArgs` (q/k norms, explicit `head_dim`, `rope_theta` required,
    /// also under transformers 5's `rope_parameters`), over every key of transformers'
    /// `Qwen3Config`. After transformers, `attention_bias` gives q/k/v/o biases (mlx_lm has
    /// none whatever it says); the sliding window must be off
    /// ([`DecoderArgs::no_sliding_window`]).
    pub fn args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
        DecoderArgs::no_sliding_window(c)?;
        let attention_bias = c.bool_or("attention_bias", false)?;
        let args = DecoderArgs::common(
            c,
            |_, _| c.dim("head_dim"),
            |head_dim| RotaryEmbedding::from_config(c, head_dim, rope_theta(c, None)?, false),
            |_| c.dim("num_key_value_heads"),
        )?;
        Ok(DecoderArgs {
            qk_norm: true,
            qkv_bias: attention_bias,
            o_bias: attention_bias,
            tie_word_embeddings: c
                .bool("tie_word_embeddings")?
                .ok_or_else(|| invalid(c.path(), &c.key("tie_word_embeddings"), "missing"))?,
            ..args
        })
    }
}
