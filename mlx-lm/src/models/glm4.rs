//! `glm4` (Python: `mlx_lm.models.glm4`): GLM-4-0414. A decoder whose layers normalize both
//! a sublayer's input and its output (`x + post_self_attn_layernorm(attn(input_layernorm(x)))`,
//! then `post_mlp_layernorm(mlp(post_attention_layernorm(x))) + x`), an MLP whose gate and up
//! projections are one `gate_up_proj` ([`FusedGateUpMlp`]), biased q/k/v projections
//! (`attention_bias`) and an unbiased `o_proj`, and the traditional (interleaved) rope over
//! `partial_rotary_factor` of each head. The head is its own `lm_head`, never tied.

use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::{
    partial_rotary_factor, plain_rope, rope_theta, Attention, AttentionConfig, FusedGateUpMlp,
    Layer, LayerContext, LayerStack, Stack, TokenMixer,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};

/// Python: glm4's `ModelArgs`, over every key of transformers' `Glm4Config`.
#[derive(Debug, Clone)]
pub struct Glm4Args {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub rms_norm_eps: f32,
    pub attention: AttentionConfig,
}

impl Glm4Args {
    /// Reads the config: `attention_bias`, `head_dim`, `num_key_value_heads`,
    /// `partial_rotary_factor` and `rope_theta` required as mlx_lm requires them (the last two
    /// at the top level or under transformers 5's `rope_parameters`), `rope_traditional` true
    /// by default, the head untied, no rope scaling (mlx_lm builds the plain rope).
    pub fn from_config(c: &ModelConfig) -> crate::Result<Glm4Args> {
        c.require("hidden_act", r#""silu" (or "swish")"#, |v| {
            v == "silu" || v == "swish"
        })?;
        // mlx_lm always builds its own lm_head.
        c.require_value("tie_word_embeddings", false)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (the plain rope).
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let head_dim = c.dim("head_dim")?;
        // Python: int(head_dim * partial_rotary_factor).
        let dims = (f64::from(head_dim) * partial_rotary_factor(c, None)?) as i32;
        let rope = plain_rope(
            c,
            dims,
            rope_theta(c, None)?,
            c.bool_or("rope_traditional", true)?,
        )?;
        let qkv_bias = c
            .bool("attention_bias")?
            .ok_or_else(|| invalid(c.path(), &c.key("attention_bias"), "missing"))?;
        let hidden_size = c.dim("hidden_size")?;
        Ok(Glm4Args {
            vocab_size: c.dim("vocab_size")?,
            hidden_size,
            intermediate_size: c.dim("intermediate_size")?,
            num_hidden_layers: c.dim("num_hidden_layers")?,
            rms_norm_eps: c
                .float("rms_norm_eps")?
                .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?
                as f32,
            attention: AttentionConfig {
                hidden_size,
                num_heads: c.dim("num_attention_heads")?,
                num_kv_heads: c.dim("num_key_value_heads")?,
                head_dim,
                qkv_bias,
                o_bias: false,
                qk_norm: None,
                output_gate: false,
                rope: Some(rope),
                sliding_window: None,
            },
        })
    }
}

/// Python: `Glm4DecoderLayer`.
#[derive(Debug, Clone, TreeNode)]
pub struct Glm4Layer {
    pub self_attn: Attention,
    pub mlp: FusedGateUpMlp,
    pub input_layernorm: RMSNorm,
    pub post_attention_layernorm: RMSNorm,
    pub post_self_attn_layernorm: RMSNorm,
    pub post_mlp_layernorm: RMSNorm,
}

impl Layer for Glm4Layer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let r = TokenMixer::forward(
            &self.self_attn,
            &self.input_layernorm.forward(x)?,
            ctx,
            cache,
        )?;
        let x = ops::add(x, &self.post_self_attn_layernorm.forward(&r)?)?;
        let r = self
            .mlp
            .forward(&self.post_attention_layernorm.forward(&x)?)?;
        ops::add(&self.post_mlp_layernorm.forward(&r)?, &x)
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        TokenMixer::make_cache(&self.self_attn, batch, capacity, dtype)
    }
}

/// Python: `mlx_lm.models.glm4.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Glm4 {
    pub model: LayerStack<Glm4Layer>,
    /// Always present: GLM-4 never ties its head.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Glm4 {
    /// The config reader ([`Glm4Args::from_config`]).
    pub fn args(c: &ModelConfig) -> crate::Result<Glm4Args> {
        Glm4Args::from_config(c)
    }

    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Glm4> {
        let a = Glm4Args::from_config(config)?;
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            layers.push(Glm4Layer {
                self_attn: Attention::load(ck, &p("self_attn"), &a.attention)?,
                mlp: FusedGateUpMlp::load(ck, &p("mlp"), d, a.intermediate_size)?,
                input_layernorm: ck.rms_norm(&p("input_layernorm"), d, eps)?,
                post_attention_layernorm: ck.rms_norm(&p("post_attention_layernorm"), d, eps)?,
                post_self_attn_layernorm: ck.rms_norm(&p("post_self_attn_layernorm"), d, eps)?,
                post_mlp_layernorm: ck.rms_norm(&p("post_mlp_layernorm"), d, eps)?,
            });
        }
        Ok(Glm4 {
            model: Stack::load_around(
                ck,
                "model",
                (a.vocab_size, d),
                layers,
                |ck, path| ck.rms_norm(path, d, eps),
                options.kernels,
            )?,
            lm_head: Some(ck.linear("lm_head", d, a.vocab_size, false)?),
        })
    }
}

crate::models::base::stack_language_model!(Glm4, model, "glm4");
