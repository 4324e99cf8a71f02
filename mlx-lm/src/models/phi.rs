//! `phi` (Python: `mlx_lm.models.phi`): Phi-1, Phi-1.5 and Phi-2, parallel layers that feed
//! one LayerNorm's output to both the attention and the MLP (`(attn(h) + mlp(h)) + x`),
//! biases everywhere (`q_proj`, `k_proj`, `v_proj`, `dense`, `fc1`, `fc2` and the output
//! head, never tied), rope over the first `partial_rotary_factor` of each head, and the
//! attention product with float32 queries. The stack names its final norm
//! `final_layernorm`.
//!
//! mlx_lm computes the MLP's tanh GELU whatever the config says; this port reads
//! `hidden_act` (transformers' default and the Phi configs' value, `gelu_new`, is that
//! GELU; `gelu` is the exact one, as transformers computes it).

use mlx_nn::{Forward, LayerNorm, MaybeQuantizedLinear};
use mlx_rs::{Array, Result};
use mlx_tree::TreeNode;

use crate::blocks::backbone::StackNames;
use crate::blocks::{
    partial_rotary_factor, plain_mlp, rope_theta, Activation, AttentionConfig, AttentionNames,
    ChannelMixer, LayerNorm2D, LnDecoderLayer, NamedAttention, Residual, RotaryEmbedding, Stack,
    Upcast,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;

/// Python: phi's `ModelArgs`, over every key of transformers' `PhiConfig`.
#[derive(Debug, Clone)]
pub struct PhiArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub layer_norm_eps: f32,
    pub activation: Activation,
    pub rope: RotaryEmbedding,
}

impl PhiArgs {
    /// Reads the config with mlx_lm's defaults (Phi-2's sizes, `partial_rotary_factor` 0.4).
    pub fn from_config(c: &ModelConfig) -> crate::Result<PhiArgs> {
        // mlx_lm has neither q/k LayerNorms nor a tied head.
        c.require_value("qk_layernorm", false)?;
        c.require_value("tie_word_embeddings", false)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (a scaled rope
        // that needs it reads it in `RotaryEmbedding::from_config`).
        c.declare_neutral(&[
            "attention_dropout",
            "resid_pdrop",
            "embd_pdrop",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let activation = Activation::gelu_from_config(c, "gelu_new", "phi")?;
        let hidden = c.dim_or("hidden_size", Some(2560))?;
        let heads = c.dim_or("num_attention_heads", Some(32))?;
        let head_dim = c.head_dim_of(hidden, heads)?;
        let partial = partial_rotary_factor(c, Some(0.4))?;
        // Python: int(partial_rotary_factor * head_dim).
        let rope_dims = (partial * f64::from(head_dim)) as i32;
        Ok(PhiArgs {
            vocab_size: c.dim_or("vocab_size", Some(51200))?,
            hidden_size: hidden,
            intermediate_size: c.dim_or("intermediate_size", Some(10240))?,
            num_hidden_layers: c.dim_or("num_hidden_layers", Some(32))?,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
            layer_norm_eps: c.float_or("layer_norm_eps", 1e-5)? as f32,
            activation,
            rope: RotaryEmbedding::from_config(c, rope_dims, rope_theta(c, Some(10000.0))?, false)?,
        })
    }

    /// The attention's shape: biases everywhere, no q/k norms.
    pub fn attention(&self) -> AttentionConfig {
        AttentionConfig {
            hidden_size: self.hidden_size,
            num_heads: self.num_attention_heads,
            num_kv_heads: self.num_key_value_heads,
            head_dim: self.hidden_size / self.num_attention_heads,
            qkv_bias: true,
            o_bias: true,
            qk_norm: None,
            output_gate: false,
            rope: Some(self.rope.clone()),
            sliding_window: None,
        }
    }
}

/// phi's names of the attention's parts: the output projection `dense` (mlx_lm's phi has no
/// q/k norms).
#[derive(Debug, Clone, Copy)]
pub enum PhiNames {}

impl AttentionNames for PhiNames {
    const NAME: &'static str = "PhiAttention";
    const O_PROJ: &'static str = "dense";
    const Q_NORM: &'static str = "q_layernorm";
    const K_NORM: &'static str = "k_layernorm";
}

/// Python: `PhiAttention` (the norm type is moot: phi has none).
pub type PhiAttention = NamedAttention<LayerNorm2D, PhiNames>;

/// Python: `PhiMLP`: `fc2(act(fc1(x)))`.
#[derive(Debug, Clone, TreeNode)]
pub struct PhiMlp {
    pub fc1: MaybeQuantizedLinear,
    pub fc2: MaybeQuantizedLinear,
    #[tree(static)]
    pub activation: Activation,
}

impl Forward for PhiMlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        plain_mlp(&self.fc1, &self.fc2, self.activation, x)
    }
}

impl ChannelMixer for PhiMlp {}

/// Python: `PhiDecoderLayer`: one LayerNorm feeding both, `(attn(h) + mlp(h)) + x`.
pub type PhiLayer = LnDecoderLayer<PhiAttention, PhiMlp>;

/// phi's names of the stack's parts: `embed_tokens`, `layers`, `final_layernorm`.
#[derive(Debug, Clone, Copy)]
pub enum PhiModelNames {}

impl StackNames for PhiModelNames {
    const NAME: &'static str = "PhiModel";
    const EMBEDDING: &'static str = "embed_tokens";
    const NORM: &'static str = "final_layernorm";
}

/// Python: `PhiModel`.
pub type PhiModel = Stack<PhiLayer, LayerNorm, PhiModelNames>;

/// Python: `mlx_lm.models.phi.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Phi {
    pub model: PhiModel,
    /// The output head, with a bias.
    pub lm_head: MaybeQuantizedLinear,
}

impl Phi {
    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Phi> {
        let a = PhiArgs::from_config(config)?;
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.hidden_size, a.layer_norm_eps);
        let attention = a.attention();
        // Python: math.sqrt(1 / head_dim), a Python float, rounded once to float32.
        let scale = (1.0 / f64::from(attention.head_dim)).sqrt() as f32;
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            layers.push(PhiLayer {
                mixer: NamedAttention::load(
                    ck,
                    &p("self_attn"),
                    &attention,
                    scale,
                    Upcast::Queries,
                )?,
                input_layernorm: ck.layer_norm(&p("input_layernorm"), d, eps, true)?,
                post_attention_layernorm: None,
                mlp: PhiMlp {
                    fc1: ck.linear(&p("mlp.fc1"), d, a.intermediate_size, true)?,
                    fc2: ck.linear(&p("mlp.fc2"), a.intermediate_size, d, true)?,
                    activation: a.activation,
                },
                residual: Residual::Parallel,
            });
        }
        Ok(Phi {
            model: Stack::load_around(
                ck,
                "model",
                (a.vocab_size, d),
                layers,
                |ck, path| ck.layer_norm(path, d, eps, true),
                options.kernels,
            )?,
            lm_head: ck.linear("lm_head", d, a.vocab_size, true)?,
        })
    }
}

crate::models::base::stack_language_model!(Phi, model, "phi", |m| Some(&m.lm_head));
