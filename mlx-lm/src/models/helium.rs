//! `helium` (Python: `mlx_lm.models.helium`): llama with a traditional (interleaved) rope,
//! `head_dim` always `hidden_size / num_attention_heads`, q/k/v biases as `attention_bias`
//! says and never one on `o_proj`.
//!
//! Where mlx_lm and transformers part: mlx_lm's `Model` always builds `lm_head`, so it cannot
//! load a tied checkpoint (which has none; strict loading demands it), and with a tied config
//! it ignores an `lm_head.weight` it loaded. Here a tied config is the tied model (the
//! embedding as the output head, transformers' `HeliumForCausalLM`), and an `lm_head.weight`
//! beside it is dropped, which is what mlx_lm computes where it loads at all. mlx_lm reads no
//! rope scaling (`nn.RoPE` at `rope_theta`): a config asking for one is an error, never a
//! silently plain rope.

use crate::blocks::{plain_rope, rope_theta};
use crate::config::ModelConfig;
use crate::models::base::{dense_decoder, DecoderArgs};

dense_decoder!(
    /// Python: `mlx_lm.models.helium.Model`.
    Helium,
    "helium"
);

impl Helium {
    /// Python: helium's `ModelArgs`, over every key of transformers' `HeliumConfig`.
    pub fn args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
        let args = DecoderArgs::common(
            c,
            // mlx_lm requires the `head_dim` key and ignores it.
            |hidden, heads| DecoderArgs::head_dim_of_hidden(c, hidden, heads),
            |head_dim| plain_rope(c, head_dim, rope_theta(c, Some(10000.0))?, true),
            |heads| c.dim_or("num_key_value_heads", Some(heads)),
        )?;
        Ok(DecoderArgs {
            qkv_bias: c.bool_or("attention_bias", false)?,
            o_bias: false,
            mlp_bias: c.bool_or("mlp_bias", false)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            ..args
        })
    }
}
