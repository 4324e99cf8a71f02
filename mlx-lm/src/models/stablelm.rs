//! `stablelm` (Python: `mlx_lm.models.stablelm`): StableLM (3B-4E1T, StableLM 2, Zephyr), a
//! decoder with LayerNorms (weight and bias), rope over the first `partial_rotary_factor` of
//! each head, optional q/k biases, an optional LayerNorm per head of the queries and keys
//! (`qk_layernorm`: `q_layernorm.norms.{i}.weight`), a SwiGLU MLP, and the attention product
//! with queries and keys in float32. A layer is sequential (two norms) or, with
//! `use_parallel_residual`, parallel: `(x + attn(ln(x))) + mlp(ln(x))`, one norm.

use mlx_nn::{LayerNorm, MaybeQuantizedLinear};
use mlx_tree::TreeNode;

use crate::blocks::{
    partial_rotary_factor, rope_theta, AttentionConfig, AttentionNames, LayerStack, LnDecoderLayer,
    Mlp, NamedAttention, PerHeadLayerNorm, Residual, RotaryEmbedding, Stack, Upcast,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;

/// Python: stablelm's `ModelArgs`, over every key of transformers' `StableLmConfig`.
#[derive(Debug, Clone)]
pub struct StableLmArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub layer_norm_eps: f32,
    pub use_qkv_bias: bool,
    pub qk_layernorm: bool,
    pub use_parallel_residual: bool,
    pub rope: RotaryEmbedding,
}

impl StableLmArgs {
    /// Reads the config; what mlx_lm requires and transformers defaults
    /// (`partial_rotary_factor` 0.25, `rope_theta` 10000, `layer_norm_eps` 1e-5,
    /// `use_qkv_bias` false) takes transformers' default.
    pub fn from_config(c: &ModelConfig) -> crate::Result<StableLmArgs> {
        // mlx_lm's MLP is SwiGLU, whatever a config says.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // mlx_lm always has an output head of its own.
        c.require_value("tie_word_embeddings", false)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (a scaled rope
        // that needs it reads it in `RotaryEmbedding::from_config`).
        c.declare_neutral(&[
            "attention_dropout",
            "hidden_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let head_dim = c.head_dim_of(hidden, heads)?;
        let partial = partial_rotary_factor(c, Some(0.25))?;
        // Python: int(partial_rotary_factor * head_dim).
        let rope_dims = (partial * f64::from(head_dim)) as i32;
        Ok(StableLmArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            intermediate_size: c.dim("intermediate_size")?,
            num_hidden_layers: c.dim("num_hidden_layers")?,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
            layer_norm_eps: c.float_or("layer_norm_eps", 1e-5)? as f32,
            use_qkv_bias: c.bool_or("use_qkv_bias", false)?,
            qk_layernorm: c.bool_or("qk_layernorm", false)?,
            use_parallel_residual: c.bool_or("use_parallel_residual", false)?,
            rope: RotaryEmbedding::from_config(c, rope_dims, rope_theta(c, Some(10000.0))?, false)?,
        })
    }

    /// The attention's shape: q/k/v biases with `use_qkv_bias`, none on `o_proj`, per-head
    /// LayerNorms of queries and keys with `qk_layernorm`.
    pub fn attention(&self) -> AttentionConfig {
        AttentionConfig {
            hidden_size: self.hidden_size,
            num_heads: self.num_attention_heads,
            num_kv_heads: self.num_key_value_heads,
            head_dim: self.hidden_size / self.num_attention_heads,
            qkv_bias: self.use_qkv_bias,
            o_bias: false,
            qk_norm: self.qk_layernorm.then_some(self.layer_norm_eps),
            output_gate: false,
            rope: Some(self.rope.clone()),
            sliding_window: None,
        }
    }
}

/// stablelm's names of the attention's parts: `o_proj`, `q_layernorm`, `k_layernorm`.
#[derive(Debug, Clone, Copy)]
pub enum StableLmNames {}

impl AttentionNames for StableLmNames {
    const NAME: &'static str = "StableLmAttention";
    const O_PROJ: &'static str = "o_proj";
    const Q_NORM: &'static str = "q_layernorm";
    const K_NORM: &'static str = "k_layernorm";
}

/// Python: stablelm's `Attention`.
pub type StableLmAttention = NamedAttention<PerHeadLayerNorm, StableLmNames>;

/// Python: stablelm's `DecoderLayer`: sequential (two norms) or, with
/// `use_parallel_residual`, `(x + attn(h)) + mlp(h)`.
pub type StableLmLayer = LnDecoderLayer<StableLmAttention, Mlp>;

/// Python: `StableLM` (the stack).
pub type StableLmModel = LayerStack<StableLmLayer, LayerNorm>;

/// Python: `mlx_lm.models.stablelm.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct StableLm {
    pub model: StableLmModel,
    pub lm_head: MaybeQuantizedLinear,
}

impl StableLm {
    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<StableLm> {
        let a = StableLmArgs::from_config(config)?;
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.hidden_size, a.layer_norm_eps);
        let attention = a.attention();
        // Python: math.sqrt(1 / head_dim), a Python float, rounded once to float32.
        let scale = (1.0 / f64::from(attention.head_dim)).sqrt() as f32;
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            let (post_attention_layernorm, residual) = if a.use_parallel_residual {
                (None, Residual::ParallelResidualFirst)
            } else {
                let norm = ck.layer_norm(&p("post_attention_layernorm"), d, eps, true)?;
                (Some(norm), Residual::Sequential)
            };
            layers.push(StableLmLayer {
                mixer: NamedAttention::load(
                    ck,
                    &p("self_attn"),
                    &attention,
                    scale,
                    Upcast::QueriesKeys,
                )?,
                mlp: Mlp::load(ck, &p("mlp"), d, a.intermediate_size, false)?,
                input_layernorm: ck.layer_norm(&p("input_layernorm"), d, eps, true)?,
                post_attention_layernorm,
                residual,
            });
        }
        Ok(StableLm {
            model: Stack::load_around(
                ck,
                "model",
                (a.vocab_size, d),
                layers,
                |ck, path| ck.layer_norm(path, d, eps, true),
                options.kernels,
            )?,
            lm_head: ck.linear("lm_head", d, a.vocab_size, false)?,
        })
    }
}

crate::models::base::stack_language_model!(StableLm, model, "stablelm", |m| Some(&m.lm_head));
