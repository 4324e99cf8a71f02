//! `cohere` (Python: `mlx_lm.models.cohere`): Command-R, parallel layers that feed one
//! LayerNorm's output (no bias unless `layer_norm_bias`) to both the attention and the SwiGLU
//! MLP (`(attn(h) + mlp(h)) + x`), traditional (interleaved) rope over the whole head, an
//! optional LayerNorm per query and key head (`use_qk_norm`: `q_norm.weight` `[heads,
//! head_dim]`), and a tied output head whose logits are multiplied by `logit_scale`.

use mlx_nn::LayerNorm;
use mlx_tree::TreeNode;

use crate::blocks::{
    rope_theta, AttentionConfig, AttentionNames, LayerNorm2D, LayerStack, LnDecoderLayer,
    LogitsMap, Mlp, NamedAttention, Residual, RotaryEmbedding, Stack, StackEnds, Upcast,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;

/// Python: cohere's `ModelArgs`, over every key of transformers' `CohereConfig`.
#[derive(Debug, Clone)]
pub struct CohereArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub layer_norm_eps: f32,
    pub logit_scale: f64,
    pub attention_bias: bool,
    pub layer_norm_bias: bool,
    pub use_qk_norm: bool,
    pub rope: RotaryEmbedding,
}

impl CohereArgs {
    /// Reads the config with mlx_lm's defaults (Command-R's sizes, `rope_theta` 8e6,
    /// `logit_scale` 0.0625).
    pub fn from_config(c: &ModelConfig) -> crate::Result<CohereArgs> {
        // mlx_lm's MLP is SwiGLU, and its head always the embedding.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        c.require_value("tie_word_embeddings", true)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (a scaled rope
        // that needs it reads it in `RotaryEmbedding::from_config`).
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let hidden = c.dim_or("hidden_size", Some(8192))?;
        let heads = c.dim_or("num_attention_heads", Some(64))?;
        let head_dim = c.head_dim_of(hidden, heads)?;
        Ok(CohereArgs {
            vocab_size: c.dim_or("vocab_size", Some(256000))?,
            hidden_size: hidden,
            intermediate_size: c.dim_or("intermediate_size", Some(22528))?,
            num_hidden_layers: c.dim_or("num_hidden_layers", Some(40))?,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
            layer_norm_eps: c.float_or("layer_norm_eps", 1e-5)? as f32,
            logit_scale: c.float_or("logit_scale", 0.0625)?,
            attention_bias: c.bool_or("attention_bias", false)?,
            layer_norm_bias: c.bool_or("layer_norm_bias", false)?,
            use_qk_norm: c.bool_or("use_qk_norm", false)?,
            rope: RotaryEmbedding::from_config(c, head_dim, rope_theta(c, Some(8e6))?, true)?,
        })
    }

    /// The attention's shape: all four projections biased with `attention_bias`, per-head
    /// LayerNorms of queries and keys with `use_qk_norm`.
    pub fn attention(&self) -> AttentionConfig {
        AttentionConfig {
            hidden_size: self.hidden_size,
            num_heads: self.num_attention_heads,
            num_kv_heads: self.num_key_value_heads,
            head_dim: self.hidden_size / self.num_attention_heads,
            qkv_bias: self.attention_bias,
            o_bias: self.attention_bias,
            qk_norm: self.use_qk_norm.then_some(self.layer_norm_eps),
            output_gate: false,
            rope: Some(self.rope.clone()),
            sliding_window: None,
        }
    }
}

/// cohere's names of the attention's parts: `o_proj`, `q_norm`, `k_norm`.
#[derive(Debug, Clone, Copy)]
pub enum CohereNames {}

impl AttentionNames for CohereNames {
    const NAME: &'static str = "CohereAttention";
    const O_PROJ: &'static str = "o_proj";
    const Q_NORM: &'static str = "q_norm";
    const K_NORM: &'static str = "k_norm";
}

/// Python: cohere's `Attention`.
pub type CohereAttention = NamedAttention<LayerNorm2D, CohereNames>;

/// Python: cohere's `TransformerBlock`: one LayerNorm feeding both, `(attn(h) + mlp(h)) + x`.
pub type CohereLayer = LnDecoderLayer<CohereAttention, Mlp>;

/// Python: `CohereModel`.
pub type CohereModel = LayerStack<CohereLayer, LayerNorm>;

/// Python: `mlx_lm.models.cohere.Model`: always tied, the logits scaled.
#[derive(Debug, Clone, TreeNode)]
pub struct Cohere {
    pub model: CohereModel,
}

impl Cohere {
    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Cohere> {
        let a = CohereArgs::from_config(config)?;
        ck.cast(options.dtype, |_| false)?;
        let model = a.load_stack(ck, options, |_, attention| Ok(attention))?;
        Ok(Cohere { model })
    }
}

impl CohereArgs {
    /// Cohere's stack (Command R's and R7B's), each layer's attention as loaded under
    /// `model.layers.{i}.self_attn` and then adapted by `attention` (R7B's windows, ropes
    /// and upcast per layer).
    pub(crate) fn load_stack(
        &self,
        ck: &mut Checkpoint,
        options: &LoadOptions,
        mut attention: impl FnMut(usize, CohereAttention) -> crate::Result<CohereAttention>,
    ) -> crate::Result<CohereModel> {
        let (d, eps, bias) = (self.hidden_size, self.layer_norm_eps, self.layer_norm_bias);
        let config = self.attention();
        // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
        let scale = f64::from(config.head_dim).powf(-0.5) as f32;
        let mut layers = Vec::with_capacity(self.num_hidden_layers as usize);
        for i in 0..self.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            let loaded = NamedAttention::load(ck, &p("self_attn"), &config, scale, Upcast::None)?;
            layers.push(CohereLayer {
                mixer: attention(i as usize, loaded)?,
                mlp: Mlp::load(ck, &p("mlp"), d, self.intermediate_size, false)?,
                input_layernorm: ck.layer_norm(&p("input_layernorm"), d, eps, bias)?,
                post_attention_layernorm: None,
                residual: Residual::Parallel,
            });
        }
        Ok(Stack::load_around(
            ck,
            "model",
            (self.vocab_size, d),
            layers,
            |ck, path| ck.layer_norm(path, d, eps, bias),
            options.kernels,
        )?
        .with_ends(StackEnds {
            embed_scale: None,
            logits: Some(LogitsMap::Multiply(self.logit_scale)),
        }))
    }
}

crate::models::base::stack_language_model!(Cohere, model, "cohere", |_m| None);
