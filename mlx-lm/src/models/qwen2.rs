//! `qwen2` (Python: `mlx_lm.models.qwen2`): llama's decoder with q/k/v biases.

use crate::blocks::{rope_theta, RotaryEmbedding};
use crate::config::ModelConfig;
use crate::models::base::{dense_decoder, DecoderArgs};

dense_decoder!(
    /// Python: `mlx_lm.models.qwen2.Model`.
    Qwen2,
    "qwen2"
);

impl Qwen2 {
    /// Python: qwen2's `ModelArgs` (q/k/v biases, `head_dim` = hidden/heads), over every key
    /// of transformers' `Qwen2Config`. After transformers, a `head_dim` key is read (its
    /// attention takes `getattr(config, "head_dim", hidden // heads)`; mlx_lm ignores it); the
    /// sliding window must be off ([`DecoderArgs::no_sliding_window`]).
    pub fn args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
        DecoderArgs::no_sliding_window(c)?;
        let args = DecoderArgs::common(
            c,
            |hidden, heads| c.dim_or("head_dim", Some(hidden / heads)),
            |head_dim| {
                RotaryEmbedding::from_config(
                    c,
                    head_dim,
                    rope_theta(c, Some(1_000_000.0))?,
                    c.bool_or("rope_traditional", false)?,
                )
            },
            |_| c.dim("num_key_value_heads"),
        )?;
        Ok(DecoderArgs {
            qkv_bias: true,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
            ..args
        })
    }
}
