//! `gemma` (Python: `mlx_lm.models.gemma`): Gemma 1, a llama-shaped decoder with the Gemma
//! RMSNorm (`rms_norm(x, 1 + weight)`, [`GemmaRmsNorm`]), embeddings scaled by `√hidden_size`,
//! a GeGLU MLP with the **exact** (erf) GELU and the output head always tied to the embedding.
//!
//! Where mlx_lm 0.32.2 and transformers 5.23 differ, this follows mlx_lm (the reference of
//! these bindings, bit for bit):
//! - the activation: transformers' `GemmaConfig` turns a legacy `hidden_act: "gelu"` into
//!   `gelu_pytorch_tanh` and its MLP computes the tanh approximation; mlx_lm computes the
//!   exact GELU (`nn.gelu`) whatever the config says. Both names are accepted and mean the
//!   exact GELU here; the logits differ from transformers' in the last bits of the
//!   activation.
//! - the norm's `1 + weight` is computed in the weight's dtype (rounded to bfloat16 in a
//!   bfloat16 model), where transformers adds in float32.

use mlx_nn::MaybeQuantizedLinear;
use mlx_tree::TreeNode;

use crate::blocks::{
    plain_rope, rope_theta, Activation, Attention, AttentionConfig, DecoderLayer, GemmaRmsNorm,
    LayerStack, Mlp, RotaryEmbedding, Stack, StackEnds,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};

/// What the Gemma configs share (Python: the fields of gemma's, gemma2's and gemma3_text's
/// `ModelArgs` that mean the same in each).
#[derive(Debug, Clone)]
pub struct GemmaArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub rms_norm_eps: f32,
    /// The rotary embedding (`rope_theta`, `rope_traditional`; no scaling).
    pub rope: RotaryEmbedding,
}

impl GemmaArgs {
    /// Python: gemma's `ModelArgs`, over every key of transformers' `GemmaConfig`:
    /// `head_dim` and `num_key_value_heads` required (mlx_lm has no default), `rope_theta`
    /// 10000, the head tied and without biases (mlx_lm builds neither an `lm_head` nor a
    /// bias), `hidden_act` / `hidden_activation` either GELU (computed exactly: see the
    /// module's doc).
    pub fn from_config(c: &ModelConfig) -> crate::Result<GemmaArgs> {
        for key in ["hidden_act", "hidden_activation"] {
            c.require(key, r#""gelu" or "gelu_pytorch_tanh""#, |v| {
                v == "gelu" || v == "gelu_pytorch_tanh"
            })?;
        }
        Self::common(c)
    }

    /// What every Gemma reader reads: sizes, eps, rope, and the keys that must say what
    /// mlx_lm computes (tied head, no biases, causal attention).
    pub fn common(c: &ModelConfig) -> crate::Result<GemmaArgs> {
        c.require_value("tie_word_embeddings", true)?;
        c.require_value("attention_bias", false)?;
        c.require_value("use_bidirectional_attention", false)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (plain rope here).
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let head_dim = c.dim("head_dim")?;
        let theta = rope_theta(c, Some(10000.0))?;
        let traditional = c.bool_or("rope_traditional", false)?;
        // mlx_lm's Gemma builds `nn.RoPE(head_dim, base=rope_theta)` and never reads a
        // scaling: it would silently run another model.
        let rope = plain_rope(c, head_dim, theta, traditional)?;
        Ok(GemmaArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: c.dim("hidden_size")?,
            intermediate_size: c.dim("intermediate_size")?,
            num_hidden_layers: c.dim("num_hidden_layers")?,
            num_attention_heads: c.dim("num_attention_heads")?,
            num_key_value_heads: c.dim("num_key_value_heads")?,
            head_dim,
            rms_norm_eps: c
                .float("rms_norm_eps")?
                .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?
                as f32,
            rope,
        })
    }

    /// The attention of every layer: no biases, no q/k norms, full attention.
    pub fn attention(&self) -> AttentionConfig {
        AttentionConfig {
            hidden_size: self.hidden_size,
            num_heads: self.num_attention_heads,
            num_kv_heads: self.num_key_value_heads,
            head_dim: self.head_dim,
            qkv_bias: false,
            o_bias: false,
            qk_norm: None,
            output_gate: false,
            rope: Some(self.rope.clone()),
            sliding_window: None,
        }
    }

    /// Python: `h * (hidden_size**0.5)`, a Python float (weak: the product keeps the
    /// embeddings' dtype).
    pub fn embed_scale(&self) -> f64 {
        f64::from(self.hidden_size).sqrt()
    }
}

/// Python: gemma's `TransformerBlock`.
pub type GemmaLayer = DecoderLayer<Attention, Mlp, GemmaRmsNorm>;

/// Python: `GemmaModel`: embedding (scaled by `√hidden_size`), layers, final Gemma norm.
pub type GemmaModel = LayerStack<GemmaLayer, GemmaRmsNorm>;

/// Python: `mlx_lm.models.gemma.Model`: the stack, its head the embedding (always tied).
#[derive(Debug, Clone, TreeNode)]
pub struct Gemma {
    pub model: GemmaModel,
    /// Always `None`: Gemma ties its head to the embedding.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Gemma {
    /// The config reader ([`GemmaArgs::from_config`]).
    pub fn args(c: &ModelConfig) -> crate::Result<GemmaArgs> {
        GemmaArgs::from_config(c)
    }

    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize for
    /// gemma: a checkpoint's `lm_head.weight` is a tensor this model does not take).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Gemma> {
        let a = GemmaArgs::from_config(config)?;
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let attention = a.attention();
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            layers.push(GemmaLayer {
                mixer: Attention::load(ck, &p("self_attn"), &attention)?,
                mlp: Mlp::load(ck, &p("mlp"), d, a.intermediate_size, false)?
                    .with_activation(Activation::Gelu),
                input_layernorm: GemmaRmsNorm::load(ck, &p("input_layernorm"), d, eps)?,
                post_attention_layernorm: GemmaRmsNorm::load(
                    ck,
                    &p("post_attention_layernorm"),
                    d,
                    eps,
                )?,
            });
        }
        Ok(Gemma {
            model: Stack::load_around(
                ck,
                "model",
                (a.vocab_size, d),
                layers,
                |ck, path| GemmaRmsNorm::load(ck, path, d, eps),
                options.kernels,
            )?
            .with_ends(StackEnds {
                embed_scale: Some(a.embed_scale()),
                logits: None,
            }),
            lm_head: None,
        })
    }
}

crate::models::base::stack_language_model!(Gemma, model, "gemma");
