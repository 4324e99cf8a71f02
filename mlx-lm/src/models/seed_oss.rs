//! `seed_oss` (Python: `mlx_lm.models.seed_oss`): llama with its own `head_dim`, q/k/v biases
//! (`attention_bias`) apart from the output projection's (`attention_out_bias`).
//!
//! Where mlx_lm and transformers part: mlx_lm's tied head is `h @ embed_tokens.weight.T`,
//! which with a quantized embedding multiplies the packed codes (garbage); here the tied head
//! is the embedding as a linear layer (`as_linear`), as transformers and mlx_lm's other
//! architectures compute it: the same product for a float embedding, the right one for a
//! quantized one.

use crate::blocks::{rope_theta, RotaryEmbedding};
use crate::config::ModelConfig;
use crate::models::base::{dense_decoder, DecoderArgs};

dense_decoder!(
    /// Python: `mlx_lm.models.seed_oss.Model`.
    SeedOss,
    "seed_oss"
);

impl SeedOss {
    /// Python: seed_oss's `ModelArgs` (`head_dim` required, the rope through
    /// `initialize_rope`), over every key of transformers' `SeedOssConfig`.
    pub fn args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
        // Dropout is off at inference. pretraining_tp: transformers 4 split the projections
        // into this many slices and summed them, the same product.
        c.declare_neutral(&["residual_dropout", "pretraining_tp"]);
        let args = DecoderArgs::common(
            c,
            |_, _| c.dim("head_dim"),
            |head_dim| {
                RotaryEmbedding::from_config(
                    c,
                    head_dim,
                    rope_theta(c, Some(10000.0))?,
                    c.bool_or("rope_traditional", false)?,
                )
            },
            |_| c.dim("num_key_value_heads"),
        )?;
        Ok(DecoderArgs {
            qkv_bias: c.bool_or("attention_bias", false)?,
            o_bias: c.bool_or("attention_out_bias", false)?,
            mlp_bias: c.bool_or("mlp_bias", false)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
            ..args
        })
    }
}
