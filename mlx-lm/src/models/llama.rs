//! `llama` (Python: `mlx_lm.models.llama`), which also serves `mistral`-style configs.

use serde_json::Value;

use crate::blocks::{rope_theta, RotaryEmbedding};
use crate::config::{invalid, ModelConfig};
use crate::models::base::{dense_decoder, DecoderArgs};

dense_decoder!(
    /// Python: `mlx_lm.models.llama.Model`.
    Llama,
    "llama"
);

impl Llama {
    /// Python: llama's `ModelArgs` (`head_dim` defaults to hidden/heads,
    /// `num_key_value_heads` to the head count, `layer_types` to all full attention), over
    /// every key of transformers' `LlamaConfig` and `MistralConfig`.
    ///
    /// One difference from mlx_lm, after transformers: a `mistral` config's `sliding_window`
    /// without `layer_types` slides every layer (transformers' `MistralModel`; mlx_lm ignores
    /// it, which changes the logits past the window).
    pub fn args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
        // transformers 4 split the projections into this many slices and summed them: the
        // same product. transformers 5 no longer reads it.
        c.declare_neutral(&["pretraining_tp"]);
        let args = DecoderArgs::common(
            c,
            |hidden, heads| c.dim_or("head_dim", Some(hidden / heads)),
            |head_dim| {
                RotaryEmbedding::from_config(
                    c,
                    head_dim,
                    rope_theta(c, Some(10000.0))?,
                    c.bool_or("rope_traditional", false)?,
                )
            },
            |heads| c.dim_or("num_key_value_heads", Some(heads)),
        )?;
        let attention_bias = c.bool_or("attention_bias", false)?;
        let sliding_window = c
            .usize("sliding_window")?
            .map(|_| c.dim("sliding_window"))
            .transpose()?;
        let mistral = c.get("model_type").and_then(Value::as_str) == Some("mistral");
        let sliding = DecoderArgs::sliding_layers(
            c,
            args.num_hidden_layers,
            mistral && sliding_window.is_some(),
        )?;
        if sliding.iter().any(|s| *s) && sliding_window.is_none() {
            return Err(invalid(
                c.path(),
                &c.key("sliding_window"),
                "missing, but layer_types has sliding_attention layers",
            ));
        }
        Ok(DecoderArgs {
            qkv_bias: attention_bias,
            o_bias: attention_bias,
            mlp_bias: c.bool_or("mlp_bias", false)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
            sliding,
            sliding_window,
            ..args
        })
    }
}
