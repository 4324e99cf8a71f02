//! `llama4_text` (Python: `mlx_lm.models.llama4_text`): mlx_lm's dense Llama 4 text decoder
//! (the shape of MobileLLM-R1): llama's layers with a traditional (interleaved) rope that
//! some layers skip (`no_rope_layers[i] == 0`: NoPE), queries and keys RMS-normalized per
//! head without a weight (`use_qk_norm`: Llama 4's L2 norm), the MLP under `feed_forward`
//! of width `intermediate_size_mlp`, and the head under `output`.
//!
//! mlx_lm 0.32.2's file is the reference, and it computes less than transformers'
//! `Llama4TextModel`; each difference is accounted for here, not dropped silently:
//! - experts: transformers makes the layers in `moe_layers` mixtures of experts; mlx_lm has
//!   none, so `moe_layers` must be `[]` (every layer dense) and the expert keys are unused;
//! - `attention_chunk_size` (transformers' chunked layers) and `attn_temperature_tuning`
//!   (its query scaling in NoPE layers): mlx_lm attends over the whole cache and does not
//!   scale, which is transformers' result for positions below the chunk size and below
//!   `floor_scale - 1`, and mlx_lm's beyond;
//! - mlx_lm normalizes the queries and keys of every layer before rope; transformers only
//!   in rope layers, after rope (the same up to rounding there, rope being a rotation);
//! - the rope is plain: a scaled one (`rope_type` other than `"default"`, which mlx_lm
//!   would ignore) is an error.

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{fast, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::decoder::{ChannelMixer, TokenMixer};
use crate::blocks::layer::LayerContext;
use crate::blocks::{
    load_lm_head, rope_theta, AttentionParts, DecoderModel, HeadNorm, Mlp, RotaryEmbedding,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::base::DecoderArgs;

/// llama4_text's reading of a config: llama's [`DecoderArgs`] (its `intermediate_size` the
/// config's `intermediate_size_mlp`, `qk_norm` the weightless norm).
#[derive(Debug, Clone)]
pub struct Llama4TextArgs {
    pub decoder: DecoderArgs,
}

/// Python: `mx.fast.rms_norm(x, None, eps)`: RMS normalization without a weight.
#[derive(Debug, Clone, Copy)]
pub struct UnitRmsNorm {
    pub eps: f32,
}

impl Forward for UnitRmsNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        fast::rms_norm(x, None, self.eps)
    }
}

// mlx_lm normalizes `[B, L, heads, head_dim]` before moving the heads in front: the default.
impl HeadNorm for UnitRmsNorm {}

/// Python: llama4_text's `Attention`.
#[derive(Debug, Clone, TreeNode)]
pub struct Llama4TextAttention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    /// `None` in a NoPE layer.
    pub rope: Option<RotaryEmbedding>,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    /// The weightless norm of queries and keys (`use_qk_norm`), of this eps.
    #[tree(static)]
    pub qk_norm: Option<f32>,
}

impl Llama4TextAttention {
    /// Takes the layer's projections under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        d: &DecoderArgs,
        rope: Option<RotaryEmbedding>,
    ) -> crate::Result<Llama4TextAttention> {
        let (h, kv, hd) = (d.num_attention_heads, d.num_key_value_heads, d.head_dim);
        let p = |name: &str| format!("{path}.{name}");
        Ok(Llama4TextAttention {
            q_proj: ck.linear(&p("q_proj"), d.hidden_size, h * hd, false)?,
            k_proj: ck.linear(&p("k_proj"), d.hidden_size, kv * hd, false)?,
            v_proj: ck.linear(&p("v_proj"), d.hidden_size, kv * hd, false)?,
            o_proj: ck.linear(&p("o_proj"), h * hd, d.hidden_size, false)?,
            rope,
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            qk_norm: d.qk_norm.then_some(d.rms_norm_eps),
        })
    }
}

impl TokenMixer for Llama4TextAttention {
    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let norm = self.qk_norm.map(|eps| UnitRmsNorm { eps });
        let parts = AttentionParts::<UnitRmsNorm> {
            q_proj: &self.q_proj,
            k_proj: &self.k_proj,
            v_proj: &self.v_proj,
            o_proj: &self.o_proj,
            q_norm: norm.as_ref(),
            k_norm: norm.as_ref(),
            rope: self.rope.as_ref(),
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
            scale: (self.head_dim as f32).powf(-0.5),
            window: None,
            output_gate: false,
            sinks: None,
        };
        parts.forward(
            x,
            ctx.rows,
            ctx.masks.for_window(None),
            ctx.kernels.fused_decode_attention,
            cache,
        )
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        LayerCache::attention(batch, self.n_kv_heads, self.head_dim, None, capacity, dtype)
    }
}

/// The MLP under the layer's `feed_forward` (transparent in paths).
#[derive(Debug, Clone, TreeNode)]
#[tree(transparent)]
pub struct Llama4TextMlp(pub Mlp);

impl Forward for Llama4TextMlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.0.forward(x)
    }
}

impl ChannelMixer for Llama4TextMlp {
    const KEY: &'static str = "feed_forward";
}

/// Python: `mlx_lm.models.llama4_text.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Llama4Text {
    pub model: DecoderModel<Llama4TextAttention, Llama4TextMlp>,
    /// The output projection (Python: `output`); `None` with tied embeddings.
    pub output: Option<MaybeQuantizedLinear>,
}

impl Llama4Text {
    /// Python: llama4_text's `ModelArgs` (every field required, as there), over every key
    /// of transformers' `Llama4TextConfig` (see the module's doc for those mlx_lm does not
    /// compute with).
    pub fn args(c: &ModelConfig) -> crate::Result<Llama4TextArgs> {
        let missing = |key: &str| invalid(c.path(), &c.key(key), "missing (mlx_lm requires it)");
        for key in [
            "intermediate_size_mlp",
            "num_key_value_heads",
            "head_dim",
            "tie_word_embeddings",
            "use_qk_norm",
            "no_rope_layers",
        ] {
            if matches!(c.get(key), None | Some(Value::Null)) {
                return Err(missing(key));
            }
        }
        match c.get("moe_layers") {
            Some(Value::Array(layers)) if layers.is_empty() => {}
            other => {
                return Err(invalid(
                    c.path(),
                    &c.key("moe_layers"),
                    &format!(
                        "{} is not supported by llama4_text (supported: [], every layer \
                         dense: mlx_lm's llama4_text has no experts)",
                        other.map_or(
                            "missing (transformers: experts in every layer)".into(),
                            |v| v.to_string()
                        )
                    ),
                ))
            }
        }
        c.require_value("attention_bias", false)?;
        c.require("rope_scaling", "null", |_| false)?;
        if let Some(p) = c.section("rope_parameters") {
            p.require("rope_type", r#""default""#, |v| v == "default")?;
        }
        // Unused with no expert layer; the chunking and temperature tuning: the module's doc.
        c.declare_neutral(&[
            "num_local_experts",
            "num_experts_per_tok",
            "interleave_moe_layer_step",
            "router_aux_loss_coef",
            "router_jitter_noise",
            "output_router_logits",
            "attention_chunk_size",
            "layer_types",
            "attn_temperature_tuning",
            "floor_scale",
            "attn_scale",
            "no_rope_layer_interval",
        ]);
        let args = DecoderArgs::common(
            c,
            |_, _| c.dim("head_dim"),
            |head_dim| {
                Ok(RotaryEmbedding::plain(
                    head_dim,
                    true,
                    rope_theta(c, None)? as f32,
                ))
            },
            |_| c.dim("num_key_value_heads"),
        )?;
        let layers = args.num_hidden_layers as usize;
        let key = c.key("no_rope_layers");
        let no_rope = match c.get("no_rope_layers") {
            Some(Value::Array(flags)) if flags.len() == layers => flags
                .iter()
                .map(|f| match f.as_i64() {
                    Some(use_rope) => Ok(use_rope == 0),
                    None => Err(invalid(c.path(), &key, &format!("not an integer: {f}"))),
                })
                .collect::<crate::Result<Vec<bool>>>()?,
            v => {
                return Err(invalid(
                    c.path(),
                    &key,
                    &format!("expected a list of {layers} integers, got {v:?}"),
                ))
            }
        };
        Ok(Llama4TextArgs {
            decoder: DecoderArgs {
                intermediate_size: c.dim("intermediate_size_mlp")?,
                qk_norm: c.bool_or("use_qk_norm", true)?,
                tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
                no_rope,
                ..args
            },
        })
    }

    /// Reads the config, casts the tensors (mlx_lm's llama4_text has no sanitize), builds
    /// the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Llama4Text> {
        let a = Self::args(config)?;
        ck.cast(options.dtype, |_| false)?;
        let d = &a.decoder;
        let model = DecoderModel::load(
            ck,
            "model",
            d.stack(),
            options.kernels,
            |ck, path, i| {
                let rope = d.attention(i).rope;
                Llama4TextAttention::load(ck, &format!("{path}.self_attn"), d, rope)
            },
            |ck, path, _| {
                Mlp::load(ck, path, d.hidden_size, d.intermediate_size, false).map(Llama4TextMlp)
            },
        )?;
        let output = load_lm_head(ck, "output", d.stack(), d.tie_word_embeddings)?;
        Ok(Llama4Text { model, output })
    }
}

crate::models::base::stack_language_model!(Llama4Text, model, "llama4_text", |m| m.output.as_ref());
