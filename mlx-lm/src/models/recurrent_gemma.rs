//! `recurrent_gemma` (Python: `mlx_lm.models.recurrent_gemma`): Griffin, a repeating pattern
//! of recurrent layers (linear projections, a causal convolution and the RG-LRU,
//! [`rglru`](crate::blocks::rglru)) and local attention layers (one key/value head, RoPE on
//! half of each head, a sliding window over a rotating cache), a GeGLU MLP in every layer,
//! norms that scale by `1 + weight`, embeddings scaled by `sqrt(hidden_size)` and
//! soft-capped logits.
//!
//! Where mlx_lm departs from transformers this follows transformers: the layers' two
//! pre-norms take `rms_norm_eps` (mlx_lm: 1e-5; RecurrentGemma's configs say 1e-6), the
//! local attention's RoPE takes `rope_theta` and `partial_rotary_factor` (mlx_lm: always
//! 10000 and half; the released models' values), `attention_bias` gives the q/k/v
//! projections biases (mlx_lm never has them), and `lru_width` sizes the recurrent block
//! (mlx_lm: the hidden size, the released models' value). Two other differences are left
//! as mlx_lm has them: transformers scales the embeddings by `sqrt(hidden_size)` rounded to
//! bfloat16 (mlx_lm and this: unrounded; the same for a square width such as the golden
//! models'), and accumulates the RG-LRU in float32 (the same for a float32 model).

use mlx_nn::{Conv1d, Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::conv::sanitize_conv_weights;
use crate::blocks::rglru::{load_recurrent_block, RecurrentParts, RgLru};
use crate::blocks::rope::rope_theta;
use crate::blocks::{
    forward_layers, Activation, AttentionParts, GemmaRmsNorm, Layer, LayerContext, Mlp,
    RotaryEmbedding, Rows,
};
use crate::cache::{LayerCache, RotatingKvCache};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;
use crate::models::base::own_stack_language_model;

/// Python: recurrent_gemma's `ModelArgs`, as the layers use it.
#[derive(Debug, Clone)]
pub struct RecurrentGemmaArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub lru_width: i32,
    pub conv1d_width: i32,
    pub attention_window_size: i32,
    pub attention_bias: bool,
    pub rms_norm_eps: f32,
    pub logits_soft_cap: Option<f32>,
    pub embeddings_scale_by_sqrt_dim: bool,
    /// Per layer: an attention layer (else a recurrent one).
    pub attention: Vec<bool>,
    pub rope: RotaryEmbedding,
}

impl RecurrentGemmaArgs {
    /// Reads the config (Python: `ModelArgs.from_dict`; the pattern `block_types`, or
    /// `_block_types` as some checkpoints name it, repeats over the layers). Audited against
    /// transformers 5.23's `RecurrentGemmaConfig`.
    pub fn from_config(c: &ModelConfig) -> crate::Result<RecurrentGemmaArgs> {
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let layers = c.dim("num_hidden_layers")?;
        let key = if c.get("block_types").is_some_and(|v| !v.is_null()) {
            "block_types"
        } else {
            "_block_types"
        };
        c.declare_neutral(&["block_types", "_block_types"]);
        let types: Vec<String> = match c.get(key) {
            Some(Value::Array(t)) if !t.is_empty() => t
                .iter()
                .map(|v| match v.as_str() {
                    Some(s @ ("recurrent" | "attention")) => Ok(s.to_string()),
                    _ => Err(invalid(
                        c.path(),
                        &c.key(key),
                        &format!("unknown block type {v} (expected recurrent or attention)"),
                    )),
                })
                .collect::<crate::Result<_>>()?,
            _ => return Err(invalid(c.path(), &c.key(key), "missing or not a list")),
        };
        if !types.iter().any(|t| t == "attention") {
            // mlx_lm takes the mask and the position from the first attention layer's cache.
            return Err(invalid(
                c.path(),
                &c.key(key),
                "no attention block (mlx_lm's Griffin needs one)",
            ));
        }
        let attention = (0..layers as usize)
            .map(|i| types[i % types.len()] == "attention")
            .collect();
        // mlx_lm's local attention has one key/value head, as every RecurrentGemma.
        c.require_value("num_key_value_heads", 1)?;
        // transformers' "gelu_pytorch_tanh": the tanh approximation (mlx's `gelu_approx`).
        c.require_value("hidden_activation", "gelu_pytorch_tanh")?;
        // transformers writes `hidden_size // num_attention_heads` here, as mlx_lm computes it.
        let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
        if head_dim != hidden / heads {
            return Err(invalid(
                c.path(),
                &c.key("head_dim"),
                &format!(
                    "{head_dim}, not hidden_size / num_attention_heads = {}",
                    hidden / heads
                ),
            ));
        }
        let params = c.section("rope_parameters");
        let partial = match params.as_ref().map(|p| p.float("partial_rotary_factor")) {
            Some(Ok(Some(f))) => f,
            Some(Err(e)) => return Err(e),
            _ => c.float_or("partial_rotary_factor", 0.5)?,
        };
        if let Some(p) = &params {
            p.declare_neutral(&["rope_type"]);
        }
        let theta = rope_theta(c, Some(10_000.0))?;
        let rope =
            RotaryEmbedding::from_config(c, (head_dim as f64 * partial) as i32, theta, false)?;
        // Weight initialization and dropout: not a loaded model's business.
        c.declare_neutral(&[
            "w_init_variance_scale",
            "final_w_init_variance_scale",
            "attention_dropout",
            "initializer_range",
        ]);
        // Tied or not is the checkpoint's (`lm_head.weight` present or not), as in mlx_lm.
        c.bool("tie_word_embeddings")?;
        let cap = c.float_or("logits_soft_cap", 0.0)?;
        Ok(RecurrentGemmaArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            intermediate_size: c.dim("intermediate_size")?,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            lru_width: c.dim_or("lru_width", Some(hidden))?,
            conv1d_width: c.dim_or("conv1d_width", Some(4))?,
            attention_window_size: c.dim("attention_window_size")?,
            attention_bias: c.bool_or("attention_bias", false)?,
            rms_norm_eps: c.float_or("rms_norm_eps", 1e-6)? as f32,
            logits_soft_cap: (cap != 0.0).then_some(cap as f32),
            embeddings_scale_by_sqrt_dim: c.bool_or("embeddings_scale_by_sqrt_dim", true)?,
            attention,
            rope,
        })
    }
}

/// Python: `ResidualBlock.temporal_block`: a `RecurrentBlock` or a `LocalAttentionBlock`,
/// their parameters straight under `temporal_block` as in mlx_lm.
#[derive(Debug, Clone, TreeNode)]
pub enum TemporalBlock {
    Recurrent {
        linear_y: MaybeQuantizedLinear,
        linear_x: MaybeQuantizedLinear,
        linear_out: MaybeQuantizedLinear,
        conv_1d: Conv1d,
        rg_lru: RgLru,
    },
    Attention {
        q_proj: MaybeQuantizedLinear,
        k_proj: MaybeQuantizedLinear,
        v_proj: MaybeQuantizedLinear,
        o_proj: MaybeQuantizedLinear,
        rope: RotaryEmbedding,
        #[tree(static)]
        n_heads: i32,
        #[tree(static)]
        head_dim: i32,
        #[tree(static)]
        scale: f32,
        #[tree(static)]
        window: i32,
    },
}

/// Python: `ResidualBlock`.
#[derive(Debug, Clone, TreeNode)]
pub struct GriffinLayer {
    pub temporal_pre_norm: GemmaRmsNorm,
    pub temporal_block: TemporalBlock,
    pub channel_pre_norm: GemmaRmsNorm,
    /// Python: `MLPBlock`: `down_proj(gelu_approx(gate_proj(x)) * up_proj(x))`, with biases.
    pub mlp_block: Mlp,
}

impl GriffinLayer {
    fn load(
        ck: &mut Checkpoint,
        path: &str,
        attention: bool,
        a: &RecurrentGemmaArgs,
    ) -> crate::Result<GriffinLayer> {
        let (d, h) = (a.hidden_size, a.num_attention_heads);
        let p = |name: &str| format!("{path}.{name}");
        let t = p("temporal_block");
        let temporal_block = if attention {
            let hd = d / h;
            let bias = a.attention_bias;
            TemporalBlock::Attention {
                q_proj: ck.linear(&format!("{t}.q_proj"), d, d, bias)?,
                k_proj: ck.linear(&format!("{t}.k_proj"), d, hd, bias)?,
                v_proj: ck.linear(&format!("{t}.v_proj"), d, hd, bias)?,
                o_proj: ck.linear(&format!("{t}.o_proj"), d, d, true)?,
                rope: a.rope.clone(),
                n_heads: h,
                head_dim: hd,
                // Python: (width // num_heads) ** -0.5, rounded once to float32.
                scale: (hd as f64).powf(-0.5) as f32,
                window: a.attention_window_size,
            }
        } else {
            let (linear_y, linear_x, linear_out, conv_1d, rg_lru) =
                load_recurrent_block(ck, &t, d, a.lru_width, h, a.conv1d_width)?;
            TemporalBlock::Recurrent {
                linear_y,
                linear_x,
                linear_out,
                conv_1d,
                rg_lru,
            }
        };
        let half = a.intermediate_size / 2;
        Ok(GriffinLayer {
            temporal_pre_norm: GemmaRmsNorm::load(ck, &p("temporal_pre_norm"), d, a.rms_norm_eps)?,
            temporal_block,
            channel_pre_norm: GemmaRmsNorm::load(ck, &p("channel_pre_norm"), d, a.rms_norm_eps)?,
            mlp_block: Mlp::load(ck, &p("mlp_block"), d, half, true)?
                .with_activation(Activation::GeluApprox),
        })
    }
}

impl Layer for GriffinLayer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let normed = self.temporal_pre_norm.forward(x)?;
        let y = match &self.temporal_block {
            TemporalBlock::Recurrent {
                linear_y,
                linear_x,
                linear_out,
                conv_1d,
                rg_lru,
            } => RecurrentParts {
                linear_y,
                linear_x,
                linear_out,
                conv_1d,
                rg_lru,
            }
            .forward(&normed, ctx.rows, ctx.offset, cache)?,
            TemporalBlock::Attention {
                q_proj,
                k_proj,
                v_proj,
                o_proj,
                rope,
                n_heads,
                scale,
                window,
                ..
            } => AttentionParts::<RMSNorm> {
                q_proj,
                k_proj,
                v_proj,
                o_proj,
                q_norm: None,
                k_norm: None,
                rope: Some(rope),
                n_heads: *n_heads,
                n_kv_heads: 1,
                scale: *scale,
                window: Some(*window),
                output_gate: false,
                sinks: None,
            }
            .forward(
                &normed,
                ctx.rows,
                ctx.masks.for_window(Some(*window)),
                ctx.kernels.fused_decode_attention,
                cache,
            )?,
        };
        let residual = ops::add(&y, x)?;
        let out = self
            .mlp_block
            .forward(&self.channel_pre_norm.forward(&residual)?)?;
        ops::add(&out, &residual)
    }

    /// A rotating cache of the window for an attention layer, the convolution's and the
    /// RG-LRU's state for a recurrent one (Python: `RotatingKVCache(max_size=window)` /
    /// `ArraysCache(size=2)`).
    fn make_cache(&self, batch: i32, _capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match &self.temporal_block {
            TemporalBlock::Recurrent {
                linear_y,
                linear_x,
                linear_out,
                conv_1d,
                rg_lru,
            } => RecurrentParts {
                linear_y,
                linear_x,
                linear_out,
                conv_1d,
                rg_lru,
            }
            .make_cache(batch, dtype),
            TemporalBlock::Attention {
                head_dim, window, ..
            } => Ok(LayerCache::Rotating(RotatingKvCache::new(
                batch,
                1,
                *window,
                (*head_dim, *head_dim),
                dtype,
            )?)),
        }
    }

    fn window(&self) -> Option<i32> {
        match &self.temporal_block {
            TemporalBlock::Attention { window, .. } => Some(*window),
            TemporalBlock::Recurrent { .. } => None,
        }
    }
}

/// Python: `Griffin`, the model's `model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Griffin {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<GriffinLayer>,
    pub final_norm: GemmaRmsNorm,
    #[tree(static)]
    pub scale_by_sqrt_dim: bool,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

/// Python: `mlx_lm.models.recurrent_gemma.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct RecurrentGemma {
    pub model: Griffin,
    /// The output head, when the checkpoint has one (else tied to the embeddings).
    pub lm_head: Option<MaybeQuantizedLinear>,
    #[tree(static)]
    pub logits_soft_cap: Option<f32>,
}

impl RecurrentGemma {
    /// The config as this architecture reads it.
    pub fn args(c: &ModelConfig) -> crate::Result<RecurrentGemmaArgs> {
        RecurrentGemmaArgs::from_config(c)
    }

    /// Python: `Model.sanitize`: a Hugging Face checkpoint's convolution weights `[C, 1, K]`
    /// become `[C, K, 1]`.
    pub fn sanitize(ck: &mut Checkpoint) -> crate::Result<()> {
        sanitize_conv_weights(ck, "conv_1d.weight")
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<RecurrentGemma> {
        let a = RecurrentGemmaArgs::from_config(config)?;
        Self::sanitize(ck)?;
        ck.cast(options.dtype, |_| false)?;
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for (i, attention) in a.attention.iter().enumerate() {
            layers.push(GriffinLayer::load(
                ck,
                &format!("model.layers.{i}"),
                *attention,
                &a,
            )?);
        }
        let d = a.hidden_size;
        let untied = ck.weights_mut().contains("lm_head.weight");
        Ok(RecurrentGemma {
            model: Griffin {
                embed_tokens: ck.embedding("model.embed_tokens", a.vocab_size, d)?,
                layers,
                final_norm: GemmaRmsNorm::load(ck, "model.final_norm", d, a.rms_norm_eps)?,
                scale_by_sqrt_dim: a.embeddings_scale_by_sqrt_dim,
                kernels: options.kernels,
            },
            lm_head: untied
                .then(|| ck.linear("lm_head", d, a.vocab_size, false))
                .transpose()?,
            logits_soft_cap: a.logits_soft_cap,
        })
    }
}

own_stack_language_model!(
    RecurrentGemma,
    "recurrent_gemma",
    layers: |m| &m.model.layers,
    embedding: |m| &m.model.embed_tokens,
    fn forward(&self, inputs, cache) {
        let m = &self.model;
        let rows = Rows::of(inputs)?;
        let mut h = m.embed_tokens.forward(&rows.fold(inputs)?)?;
        if m.scale_by_sqrt_dim {
            let width = h.shape().last().copied().unwrap_or(1);
            // Python: math.sqrt(width), a weak float.
            h = ops::multiply(&h, (width as f64).sqrt() as f32)?;
        }
        let h = forward_layers(&m.layers, h, rows, m.kernels, cache)?;
        let h = m.final_norm.forward(&h)?;
        let mut logits = match &self.lm_head {
            Some(head) => head.forward(&h)?,
            None => m.embed_tokens.as_linear(&h)?,
        };
        if let Some(c) = self.logits_soft_cap {
            logits = ops::multiply(&ops::tanh(&ops::divide(&logits, c)?)?, c)?;
        }
        rows.unfold(&logits)
    }
);
