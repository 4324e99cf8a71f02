//! `starcoder2` (Python: `mlx_lm.models.starcoder2`): StarCoder2, a pre-norm decoder with
//! LayerNorms (weight and bias) for the two block norms and the final norm, biases on every
//! attention projection, and a one-hidden-layer MLP `c_proj(act(c_fc(x)))` (biased).
//!
//! Two places where mlx_lm 0.32.2 departs from transformers' `Starcoder2Model`, and this
//! port follows transformers (the model the checkpoints were trained as):
//!
//! - The MLP's activation: mlx_lm always computes the exact erf GELU (`nn.gelu`); the
//!   StarCoder2 configs say `hidden_act: "gelu_pytorch_tanh"` (transformers' default too),
//!   the tanh approximation, which this port computes (mlx_lm's `nn.gelu_approx`). A config
//!   that says `"gelu"` gets mlx_lm's numerics exactly.
//! - The sliding window: transformers slides every layer's attention over the last
//!   `sliding_window` positions (4096 in the StarCoder2 configs); mlx_lm ignores the key and
//!   attends to the whole past, which changes the logits past the window. As llama's reader
//!   does for a `mistral` config, this port slides (a rotating cache of the window per
//!   layer); up to the window both agree.

use mlx_nn::{LayerNorm, MaybeQuantizedLinear};
use mlx_tree::TreeNode;

use crate::blocks::{
    rope_theta, Activation, Attention, AttentionConfig, DecoderLayer, LayerStack, PlainMlp,
    RotaryEmbedding, Stack,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;

/// Python: starcoder2's `ModelArgs`, over every key of transformers' `Starcoder2Config`.
#[derive(Debug, Clone)]
pub struct Starcoder2Args {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub norm_epsilon: f32,
    pub rope: RotaryEmbedding,
    pub activation: Activation,
    pub sliding_window: Option<i32>,
    pub tie_word_embeddings: bool,
}

impl Starcoder2Args {
    /// Reads the config: mlx_lm's defaults (`norm_epsilon` 1e-5, `rope_theta` 100000, tied),
    /// transformers' for what mlx_lm does not read (`hidden_act` `gelu_pytorch_tanh`).
    pub fn from_config(c: &ModelConfig) -> crate::Result<Starcoder2Args> {
        // mlx_lm builds every projection with a bias; transformers' `use_bias: false` has
        // none.
        c.require_value("use_bias", true)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (a scaled rope
        // that needs it reads it in `RotaryEmbedding::from_config`).
        c.declare_neutral(&[
            "attention_dropout",
            "residual_dropout",
            "embedding_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let activation = Activation::gelu_from_config(c, "gelu_pytorch_tanh", "starcoder2")?;
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let head_dim = c.head_dim_of(hidden, heads)?;
        let sliding_window = match c.usize("sliding_window")? {
            None => None,
            Some(_) => Some(c.dim("sliding_window")?),
        };
        Ok(Starcoder2Args {
            vocab_size: c.dim_or("vocab_size", Some(49152))?,
            hidden_size: hidden,
            intermediate_size: c.dim("intermediate_size")?,
            num_hidden_layers: c.dim("num_hidden_layers")?,
            num_attention_heads: heads,
            num_key_value_heads: c.dim("num_key_value_heads")?,
            norm_epsilon: c.float_or("norm_epsilon", 1e-5)? as f32,
            rope: RotaryEmbedding::from_config(c, head_dim, rope_theta(c, Some(100000.0))?, false)?,
            activation,
            sliding_window,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
        })
    }

    /// Every layer's attention: biased projections, rope over the whole head.
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
            sliding_window: self.sliding_window,
        }
    }
}

/// Python: starcoder2's `TransformerBlock`: `h = x + attn(ln(x))`, `h + mlp(ln(h))`.
pub type Starcoder2Layer = DecoderLayer<Attention, PlainMlp, LayerNorm>;

/// Python: `Starcoder2Model`.
pub type Starcoder2Model = LayerStack<Starcoder2Layer, LayerNorm>;

/// Python: `mlx_lm.models.starcoder2.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Starcoder2 {
    pub model: Starcoder2Model,
    /// The output projection (no bias); `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Starcoder2 {
    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Starcoder2> {
        let a = Starcoder2Args::from_config(config)?;
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.hidden_size, a.norm_epsilon);
        let attention = a.attention();
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            layers.push(Starcoder2Layer {
                mixer: Attention::load(ck, &p("self_attn"), &attention)?,
                mlp: PlainMlp::load(ck, &p("mlp"), d, a.intermediate_size, a.activation)?,
                input_layernorm: ck.layer_norm(&p("input_layernorm"), d, eps, true)?,
                post_attention_layernorm: ck.layer_norm(
                    &p("post_attention_layernorm"),
                    d,
                    eps,
                    true,
                )?,
            });
        }
        let lm_head = if a.tie_word_embeddings {
            None
        } else {
            Some(ck.linear("lm_head", d, a.vocab_size, false)?)
        };
        Ok(Starcoder2 {
            model: Stack::load_around(
                ck,
                "model",
                (a.vocab_size, d),
                layers,
                |ck, path| ck.layer_norm(path, d, eps, true),
                options.kernels,
            )?,
            lm_head,
        })
    }
}

crate::models::base::stack_language_model!(Starcoder2, model, "starcoder2");
