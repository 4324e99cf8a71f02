//! `internlm3` (Python: `mlx_lm.models.internlm3`): llama with heads `hidden_size /
//! num_attention_heads` wide, `qkv_bias` on all four attention projections (`o_proj` too),
//! `bias` on the MLP's, and a `linear` or `dynamic` (NTK) rope scaling: InternLM3-8B ships
//! `{"rope_type": "dynamic", "factor": 6.0}`, whose base grows with the sequence past
//! `max_position_embeddings` ([`DynamicNtk`](crate::blocks::rope::DynamicNtk)).
//!
//! InternLM3's published checkpoints run remote code, whose config names the biases
//! `qkv_bias` and `bias` (what mlx_lm reads); transformers 5's `InternLM3Config` writes them
//! as `attention_bias` and `mlp_bias` (and refuses the two to differ): either name is read.

use serde_json::Value;

use crate::blocks::{rope_theta, RotaryEmbedding};
use crate::config::{invalid, ModelConfig};
use crate::models::base::{dense_decoder, DecoderArgs};

dense_decoder!(
    /// Python: `mlx_lm.models.internlm3.Model`.
    InternLM3,
    "internlm3"
);

impl InternLM3 {
    /// Python: internlm3's `ModelArgs` (`max_position_embeddings` 32768, untied by default;
    /// `rope_scaling`, when given, must name its `factor` and a `rope_type` of `linear` or
    /// `dynamic`, as its `__post_init__` checks).
    pub fn args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
        // The remote code's class mapping (`AutoConfig` → `configuration_internlm3...`).
        c.declare_neutral(&["auto_map"]);
        if let Some(Value::Object(s)) = c.get("rope_scaling").filter(|s| s != &&Value::Null) {
            let rope_type = s.get("rope_type").and_then(Value::as_str);
            let known = matches!(rope_type, Some("linear" | "dynamic"));
            if !s.is_empty() && (!known || !s.contains_key("factor")) {
                return Err(invalid(
                    c.path(),
                    &c.key("rope_scaling"),
                    "internlm3 supports a rope_scaling with a factor and rope_type \"linear\" or \"dynamic\"",
                ));
            }
        }
        let args = DecoderArgs::common(
            c,
            |hidden, heads| DecoderArgs::head_dim_of_hidden(c, hidden, heads),
            |head_dim| {
                RotaryEmbedding::from_config_or(
                    c,
                    head_dim,
                    rope_theta(c, Some(10000.0))?,
                    c.bool_or("rope_traditional", false)?,
                    Some(32768.0),
                )
            },
            |heads| c.dim_or("num_key_value_heads", Some(heads)),
        )?;
        let qkv_bias = aliased_flag(c, "qkv_bias", "attention_bias")?;
        Ok(DecoderArgs {
            qkv_bias,
            o_bias: qkv_bias,
            mlp_bias: aliased_flag(c, "bias", "mlp_bias")?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            ..args
        })
    }
}

/// A flag under the remote code's name (`qkv_bias`, `bias`: what mlx_lm reads) or
/// transformers' (`attention_bias`, `mlp_bias`: what `InternLM3Config` writes, its
/// `attribute_map`), false when neither is given; both must agree where both are.
fn aliased_flag(c: &ModelConfig, remote: &str, transformers: &str) -> crate::Result<bool> {
    match (c.bool(remote)?, c.bool(transformers)?) {
        (Some(a), Some(b)) if a != b => Err(invalid(
            c.path(),
            &c.key(remote),
            &format!("{a}, but {transformers} is {b}: which one applies is ambiguous"),
        )),
        (Some(v), _) | (None, Some(v)) => Ok(v),
        (None, None) => Ok(false),
    }
}
