//! `exaone4` (Python: `mlx_lm.models.exaone4`): EXAONE 4.0, OLMo 2's post-norm layers
//! ([`PostNormLayer`]: each sublayer's output normalized before its residual sum) over
//! llama's attention with qwen3's per-head q/k RMSNorms and a SwiGLU MLP. Its
//! `sliding_window_pattern` (`"LLLG"`: three local layers to one global) makes the local
//! layers slide over `sliding_window` positions with rope (a rotating cache of the window)
//! and the global ones attend everywhere without positional embedding (NoPE); without a
//! pattern every layer is global and rotates (EXAONE-4.0-1.2B).
//!
//! mlx_lm 0.32.2 reads the pattern as a string only; transformers 5's `Exaone4Config` also
//! writes it as the period `n` (every `n`-th layer global), which is read here as
//! transformers reads it, the same layers as the string of `n - 1` `L`s and a `G`. Its
//! `layer_types`, when given, must name the same layers. mlx_lm requires `rope_theta`,
//! `head_dim`, `tie_word_embeddings` and the `rope_scaling` key; here `rope_theta` may come
//! from transformers 5's `rope_parameters`, `head_dim` defaults to hidden / heads and the
//! head is untied without the key (transformers' defaults).

use mlx_nn::MaybeQuantizedLinear;
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::{
    load_lm_head, rope_theta, Attention, AttentionConfig, LayerStack, Mlp, PostNormLayer,
    RotaryEmbedding, Stack, StackConfig,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::base::DecoderArgs;

/// exaone4's reading of a config.
#[derive(Debug, Clone)]
pub struct Exaone4Args {
    pub stack: StackConfig,
    pub intermediate_size: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub tie_word_embeddings: bool,
    pub rope: RotaryEmbedding,
    /// Per layer: a local layer (sliding, with rope); the others are global (NoPE when the
    /// config has a pattern).
    pub local: Vec<bool>,
    /// Whether the config has a pattern (without one every layer rotates).
    pub pattern: bool,
    pub sliding_window: Option<i32>,
}

/// Python: `mlx_lm.models.exaone4.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Exaone4 {
    pub model: LayerStack<PostNormLayer<Attention>>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Exaone4 {
    /// Python: exaone4's `ModelArgs`, over every key of transformers' `Exaone4Config`.
    pub fn args(c: &ModelConfig) -> crate::Result<Exaone4Args> {
        c.require("hidden_act", r#""silu" (or "swish")"#, |v| {
            v == "silu" || v == "swish"
        })?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings is read where a scaled rope needs it.
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let layers = c.dim("num_hidden_layers")?;
        let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
        let rms_norm_eps = c
            .float("rms_norm_eps")?
            .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?
            as f32;
        let pattern_error =
            |message: String| invalid(c.path(), &c.key("sliding_window_pattern"), &message);
        let local: Option<Vec<bool>> = match c.get("sliding_window_pattern") {
            None | Some(Value::Null) => None,
            Some(Value::String(p)) if !p.is_empty() && p.chars().all(|k| k == 'L' || k == 'G') => {
                let p: Vec<char> = p.chars().collect();
                Some(
                    (0..layers as usize)
                        .map(|i| p[i % p.len()] == 'L')
                        .collect(),
                )
            }
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => {
                let n = c.dim("sliding_window_pattern")? as usize;
                Some((0..layers as usize).map(|i| (i + 1) % n != 0).collect())
            }
            Some(v) => {
                return Err(pattern_error(format!(
                    "{v} is not a pattern (supported: a string of \"L\" and \"G\", or the \
                     period of the global layers)"
                )))
            }
        };
        let types = DecoderArgs::sliding_layers(c, layers, false)?;
        let kinds = local
            .clone()
            .unwrap_or_else(|| vec![false; layers as usize]);
        if c.get("layer_types").is_some_and(|v| !v.is_null()) && types != kinds {
            return Err(invalid(
                c.path(),
                &c.key("layer_types"),
                "does not name the layers sliding_window_pattern makes local as \
                 sliding_attention (mlx_lm reads the pattern)",
            ));
        }
        let sliding_window = match c.usize("sliding_window")? {
            Some(_) => Some(c.dim("sliding_window")?),
            None if kinds.iter().any(|l| *l) => {
                return Err(invalid(
                    c.path(),
                    &c.key("sliding_window"),
                    "missing, but sliding_window_pattern has local layers",
                ))
            }
            None => None,
        };
        let rope = RotaryEmbedding::from_config(c, head_dim, rope_theta(c, None)?, false)?;
        Ok(Exaone4Args {
            stack: StackConfig {
                vocab_size: c.dim("vocab_size")?,
                hidden_size: hidden,
                num_hidden_layers: layers,
                rms_norm_eps,
            },
            intermediate_size: c.dim("intermediate_size")?,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
            head_dim,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            rope,
            pattern: local.is_some(),
            local: kinds,
            sliding_window,
        })
    }

    /// Layer `i`'s attention: sliding with rope when local, else global (with rope only when
    /// the config has no pattern).
    pub fn attention(a: &Exaone4Args, i: usize) -> AttentionConfig {
        let local = a.local[i];
        AttentionConfig {
            hidden_size: a.stack.hidden_size,
            num_heads: a.num_attention_heads,
            num_kv_heads: a.num_key_value_heads,
            head_dim: a.head_dim,
            qkv_bias: false,
            o_bias: false,
            qk_norm: Some(a.stack.rms_norm_eps),
            output_gate: false,
            rope: (local || !a.pattern).then(|| a.rope.clone()),
            sliding_window: if local { a.sliding_window } else { None },
        }
    }

    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Exaone4> {
        let a = Self::args(config)?;
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.stack.hidden_size, a.stack.rms_norm_eps);
        let layers = (0..a.stack.num_hidden_layers as usize)
            .map(|i| {
                let p = |name: &str| format!("model.layers.{i}.{name}");
                Ok(PostNormLayer {
                    self_attn: Attention::load(ck, &p("self_attn"), &Self::attention(&a, i))?,
                    mlp: Mlp::load(ck, &p("mlp"), d, a.intermediate_size, false)?,
                    post_attention_layernorm: ck.rms_norm(
                        &p("post_attention_layernorm"),
                        d,
                        eps,
                    )?,
                    post_feedforward_layernorm: ck.rms_norm(
                        &p("post_feedforward_layernorm"),
                        d,
                        eps,
                    )?,
                })
            })
            .collect::<crate::Result<Vec<_>>>()?;
        let model = Stack::load_around(
            ck,
            "model",
            (a.stack.vocab_size, d),
            layers,
            |ck, path| ck.rms_norm(path, d, eps),
            options.kernels,
        )?;
        let lm_head = load_lm_head(ck, "lm_head", a.stack, a.tie_word_embeddings)?;
        Ok(Exaone4 { model, lm_head })
    }
}

crate::models::base::stack_language_model!(Exaone4, model, "exaone4");
