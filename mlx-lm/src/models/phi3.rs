//! `phi3` (Python: `mlx_lm.models.phi3`): Phi-3, Phi-3.5 and Phi-4-mini. A llama-shaped
//! pre-norm decoder whose attention projects queries, keys and values with one `qkv_proj`
//! (`[q | k | v]`, [`split_qkv`]) and whose MLP projects gate and up with one `gate_up_proj`
//! ([`FusedGateUpMlp`]); no biases; rope over `partial_rotary_factor` of each head (Phi-4-mini:
//! 0.75), scaled by `longrope` / `su` (Python: `SuScaledRoPE`) or `linear`.
//!
//! Where mlx_lm 0.32.2 and transformers 5.23 differ:
//! - longrope's factors: mlx_lm rotates with `long_factor` at every length (and scales the
//!   rotated features by `sqrt(1 + ln(max / original) / ln(original))` always);
//!   transformers uses `short_factor` while the sequence fits in
//!   `original_max_position_embeddings` and switches to `long_factor` past it. This follows
//!   mlx_lm, bit for bit: a Phi-3-128k prompt shorter than 4096 tokens gets other logits than
//!   transformers' (the short factors are read and checked, and unused).
//! - `sliding_window`: mlx_lm ignores it; transformers slides every layer's attention over
//!   the last `sliding_window` positions (Phi-3-mini-4k: 2047 of its 4096). As starcoder2's
//!   and llama's (mistral) readers do, this port slides (a rotating cache of the window per
//!   layer); a window of at least `max_position_embeddings` (Phi-3.5's 262144) leaves every
//!   position of the model's context in view, so it is none.
//! - a rope type other than `longrope`, `su`, `linear` or `default`: mlx_lm prints a warning
//!   and runs the plain rope; here it is an error naming it.

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{Array, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::attention::attend;
use crate::blocks::rows::merge_heads;
use crate::blocks::{
    load_lm_head, partial_rotary_factor, rope_theta, split_qkv, DecoderModel, FusedGateUpMlp,
    LayerContext, RopeDefaults, RotaryEmbedding, StackConfig, TokenMixer,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};

/// Python: phi3's `ModelArgs`, over every key of transformers' `Phi3Config`.
#[derive(Debug, Clone)]
pub struct Phi3Args {
    pub stack: StackConfig,
    pub intermediate_size: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub rope: RotaryEmbedding,
    /// The sliding window transformers applies (see the module's doc).
    pub sliding_window: Option<i32>,
    pub tie_word_embeddings: bool,
}

impl Phi3Args {
    /// Reads the config with mlx_lm's defaults: `rope_theta` 10000, `partial_rotary_factor`
    /// 1, `max_position_embeddings` 131072, `original_max_position_embeddings` 4096, untied.
    pub fn from_config(c: &ModelConfig) -> crate::Result<Phi3Args> {
        // mlx_lm's MLP is SwiGLU whatever the config says.
        c.require("hidden_act", r#""silu" (or "swish")"#, |v| {
            v == "silu" || v == "swish"
        })?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces.
        c.declare_neutral(&[
            "resid_pdrop",
            "embd_pdrop",
            "attention_dropout",
            "initializer_range",
        ]);
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let head_dim = c.head_dim_of(hidden, heads)?;
        // Python: int(head_dim * partial_rotary_factor).
        let rope_dims = (f64::from(head_dim) * partial_rotary_factor(c, Some(1.0))?) as i32;
        check_rope_type(c)?;
        let rope = RotaryEmbedding::from_config_with(
            c,
            rope_dims,
            rope_theta(c, Some(10000.0))?,
            c.bool_or("rope_traditional", false)?,
            RopeDefaults {
                max_position_embeddings: Some(131072.0),
                original_max_position_embeddings: Some(4096.0),
            },
        )?;
        // The plain and linear ropes do not read these (longrope does, above).
        c.declare_neutral(&[
            "max_position_embeddings",
            "original_max_position_embeddings",
        ]);
        let max_positions = c.float("max_position_embeddings")?.unwrap_or(131072.0);
        let sliding_window = match c.usize("sliding_window")? {
            Some(w) if (w as f64) < max_positions => Some(c.dim("sliding_window")?),
            _ => None,
        };
        Ok(Phi3Args {
            stack: StackConfig {
                vocab_size: c.dim("vocab_size")?,
                hidden_size: hidden,
                num_hidden_layers: c.dim("num_hidden_layers")?,
                rms_norm_eps: c
                    .float("rms_norm_eps")?
                    .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?
                    as f32,
            },
            intermediate_size: c.dim("intermediate_size")?,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
            rope,
            sliding_window,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
        })
    }
}

/// The rope types phi3 builds (`longrope`, `su`, `linear`; none, `default`): mlx_lm runs any
/// other as the plain rope after a warning, which would be another model.
fn check_rope_type(c: &ModelConfig) -> crate::Result<()> {
    for key in ["rope_scaling", "rope_parameters"] {
        let Some(Value::Object(s)) = c.values().get(key) else {
            continue;
        };
        if s.is_empty() {
            continue;
        }
        let kind = s
            .get("type")
            .or_else(|| s.get("rope_type"))
            .and_then(Value::as_str)
            .unwrap_or("default");
        if !matches!(kind, "default" | "linear" | "longrope" | "su") {
            return Err(invalid(
                c.path(),
                &c.key(key),
                &format!(
                    "rope type {kind:?} is not supported by phi3 (supported: longrope, su, \
                     linear, default)"
                ),
            ));
        }
        // transformers takes rope_scaling over rope_parameters (see `RotaryEmbedding`).
        return Ok(());
    }
    Ok(())
}

/// Python: phi3's `Attention`: one fused `qkv_proj`, `o_proj`, no biases.
#[derive(Debug, Clone, TreeNode)]
pub struct Phi3Attention {
    pub qkv_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub rope: RotaryEmbedding,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
    #[tree(static)]
    pub window: Option<i32>,
}

impl Phi3Attention {
    pub fn load(ck: &mut Checkpoint, path: &str, a: &Phi3Args) -> crate::Result<Phi3Attention> {
        let d = a.stack.hidden_size;
        let (h, kv) = (a.num_attention_heads, a.num_key_value_heads);
        let hd = d / h;
        Ok(Phi3Attention {
            qkv_proj: ck.linear(&format!("{path}.qkv_proj"), d, (h + 2 * kv) * hd, false)?,
            o_proj: ck.linear(&format!("{path}.o_proj"), h * hd, d, false)?,
            rope: a.rope.clone(),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
            scale: f64::from(hd).powf(-0.5) as f32,
            window: a.sliding_window,
        })
    }
}

impl TokenMixer for Phi3Attention {
    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let (q, k, v) = split_qkv(
            &self.qkv_proj.forward(x)?,
            ctx.rows,
            self.n_heads,
            self.n_kv_heads,
            self.head_dim,
        )?;
        let out = attend(
            q,
            k,
            v,
            Some(&self.rope),
            self.scale,
            ctx.masks.for_window(self.window),
            self.window,
            ctx.kernels.fused_decode_attention,
            cache,
        )?;
        self.o_proj.forward(&merge_heads(&out)?)
    }

    crate::blocks::decoder::attention_cache!();
}

/// Python: `mlx_lm.models.phi3.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Phi3 {
    pub model: DecoderModel<Phi3Attention, FusedGateUpMlp>,
    /// The output projection; `None` with tied embeddings (Phi-4-mini).
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Phi3 {
    /// The config reader ([`Phi3Args::from_config`]).
    pub fn args(c: &ModelConfig) -> crate::Result<Phi3Args> {
        Phi3Args::from_config(c)
    }

    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Phi3> {
        let a = Phi3Args::from_config(config)?;
        ck.cast(options.dtype, |_| false)?;
        let (d, hidden) = (a.stack.hidden_size, a.intermediate_size);
        let model = DecoderModel::load(
            ck,
            "model",
            a.stack,
            options.kernels,
            |ck, path, _| Phi3Attention::load(ck, &format!("{path}.self_attn"), &a),
            |ck, path, _| FusedGateUpMlp::load(ck, path, d, hidden),
        )?;
        let lm_head = load_lm_head(ck, "lm_head", a.stack, a.tie_word_embeddings)?;
        Ok(Phi3 { model, lm_head })
    }
}

crate::models::base::stack_language_model!(Phi3, model, "phi3");
