//! `gemma3_text` and `gemma3` (Python: `mlx_lm.models.gemma3_text`, `mlx_lm.models.gemma3`):
//! Gemma 3's decoder, and the text model of its multimodal checkpoints.
//!
//! Gemma 2's layer (four Gemma norms, "sandwich": each sublayer's output normalized before its
//! residual sum; the tanh-GELU GeGLU) with per-head Gemma norms of queries and keys before
//! rope, queries scaled by `query_pre_attn_scalar ** -0.5` in the fused attention (no soft
//! caps), and layers of two kinds: layer `i` slides over the last `sliding_window` positions
//! unless `(i + 1) % sliding_window_pattern == 0`, the sliding ones with a rope of base
//! `rope_local_base_freq` and no scaling, the global ones with `rope_theta` and
//! `rope_scaling`. A sliding layer's cache is mlx_lm's `RotatingKVCache` of the window
//! ([`RotatingKvCache`](crate::cache::RotatingKvCache): the same slots, so the same sums), a global one's a `KVCache`.
//! Residual sums go through `clip_residual`: in float16 added in float32 and clipped to
//! float16's range; plain sums otherwise. The embeddings are scaled by `√hidden_size`
//! rounded to bfloat16 whatever the model's dtype (mlx_lm's `mx.array(√H, bfloat16)`; Gemma
//! 1 and 2 scale by the unrounded value). Whether the head is tied is the checkpoint's say,
//! as mlx_lm's sanitize decides it: tied when it has no `lm_head.weight`.
//!
//! Where mlx_lm 0.32.2 and transformers 5.23 differ:
//! - the norm's `1 + weight` is computed in the weight's dtype (as Gemma 1 and 2; see
//!   [`gemma`](crate::models::gemma)), where transformers adds in float32;
//! - transformers 5 writes the layer kinds as `layer_types` and the ropes under
//!   `rope_parameters` per layer kind (`sliding_attention`, `full_attention`), keys mlx_lm
//!   does not read (it then runs its defaults: bases 10⁴ / 10⁶, no scaling). Here they are
//!   read, and must agree with mlx_lm's keys where both are given;
//! - mlx_lm fails (an `IndexError`) for fewer layers than `sliding_window_pattern`; here such
//!   a model runs, every layer sliding, as in transformers;
//! - the `gemma3` wrapper: mlx_lm gives the text model the top-level `vocab_size` (default
//!   262208) over `text_config`'s; here a `vocab_size` given at one level counts, and two
//!   that disagree are an error.

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::attention::attend;
use crate::blocks::rows::merge_heads;
use crate::blocks::{
    attend_soft_capped, heads_normed, rope_theta, Activation, GemmaRmsNorm, Layer, LayerContext,
    LayerStack, Mlp, RotaryEmbedding, Stack, StackEnds,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};

/// Python: gemma3_text's `ModelArgs`.
#[derive(Debug, Clone)]
pub struct Gemma3TextArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub rms_norm_eps: f32,
    pub query_pre_attn_scalar: f64,
    pub sliding_window: i32,
    pub sliding_window_pattern: i32,
    /// The sliding layers' rope (`rope_local_base_freq`, no scaling).
    pub local_rope: RotaryEmbedding,
    /// The global layers' rope (`rope_theta`, `rope_scaling`).
    pub global_rope: RotaryEmbedding,
}

/// The defaults the two readers differ in: gemma3's wrapper gives the text model 8 query
/// and 4 key-value heads when its `text_config` names none.
struct Defaults {
    heads: i32,
    kv_heads: i32,
}

impl Gemma3TextArgs {
    /// Python: gemma3_text's `ModelArgs`, with its defaults, over every key of
    /// transformers' `Gemma3TextConfig` (see the module's doc for its `layer_types` and
    /// per-kind `rope_parameters`).
    pub fn from_config(c: &ModelConfig) -> crate::Result<Gemma3TextArgs> {
        let vocab_size = c.dim_or("vocab_size", Some(262144))?;
        Self::read(
            c,
            vocab_size,
            Defaults {
                heads: 4,
                kv_heads: 1,
            },
        )
    }

    fn read(c: &ModelConfig, vocab_size: i32, d: Defaults) -> crate::Result<Gemma3TextArgs> {
        for key in ["hidden_act", "hidden_activation"] {
            c.require_value(key, "gelu_pytorch_tanh")?;
        }
        // mlx_lm runs the fused attention: no soft caps.
        c.require_value("attn_logit_softcapping", Value::Null)?;
        c.require_value("final_logit_softcapping", Value::Null)?;
        c.require_value("attention_bias", false)?;
        c.require_value("use_bidirectional_attention", false)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; transformers 4's choice of its cache class; max_position_embeddings
        // sizes transformers' rope cache (a rope type that needs it reads it itself).
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "cache_implementation",
            "max_position_embeddings",
        ]);
        // Whether the head is tied is the checkpoint's say (Python's sanitize; checked
        // against this key at load, `check_tie`).
        c.declare_neutral(&["tie_word_embeddings"]);
        let head_dim = c.dim_or("head_dim", Some(256))?;
        let layers = c.dim_or("num_hidden_layers", Some(26))?;
        let pattern = pattern(c, layers)?;
        let (local_rope, global_rope) = ropes(c, head_dim)?;
        let query_pre_attn_scalar = c.float_or("query_pre_attn_scalar", 256.0)?;
        if query_pre_attn_scalar <= 0.0 {
            return Err(invalid(
                c.path(),
                &c.key("query_pre_attn_scalar"),
                &format!("{query_pre_attn_scalar} is not positive"),
            ));
        }
        Ok(Gemma3TextArgs {
            vocab_size,
            hidden_size: c.dim_or("hidden_size", Some(1152))?,
            intermediate_size: c.dim_or("intermediate_size", Some(6912))?,
            num_hidden_layers: layers,
            num_attention_heads: c.dim_or("num_attention_heads", Some(d.heads))?,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(d.kv_heads))?,
            head_dim,
            rms_norm_eps: c.float_or("rms_norm_eps", 1e-6)? as f32,
            query_pre_attn_scalar,
            sliding_window: c.dim_or("sliding_window", Some(512))?,
            sliding_window_pattern: pattern,
            local_rope,
            global_rope,
        })
    }

    /// Whether layer `i` slides (Python: `(layer_idx + 1) % sliding_window_pattern != 0`).
    pub fn is_sliding(&self, i: i32) -> bool {
        (i + 1) % self.sliding_window_pattern != 0
    }
}

/// `sliding_window_pattern` (transformers 5: `_sliding_window_pattern`; default 6), checked
/// against `layer_types` where given.
fn pattern(c: &ModelConfig, layers: i32) -> crate::Result<i32> {
    let mlx = c.usize("sliding_window_pattern")?;
    let transformers = c.usize("_sliding_window_pattern")?;
    let pattern = match (mlx, transformers) {
        (Some(a), Some(b)) if a != b => {
            return Err(invalid(
                c.path(),
                &c.key("sliding_window_pattern"),
                &format!("{a}, but _sliding_window_pattern is {b}"),
            ))
        }
        (Some(p), _) | (None, Some(p)) => p,
        (None, None) => 6,
    };
    let pattern = i32::try_from(pattern)
        .ok()
        .filter(|p| *p >= 1)
        .ok_or_else(|| {
            invalid(
                c.path(),
                &c.key("sliding_window_pattern"),
                &format!("{pattern} is not a positive layer count"),
            )
        })?;
    let error = |message: String| invalid(c.path(), &c.key("layer_types"), &message);
    match c.get("layer_types") {
        None | Some(Value::Null) => {}
        Some(Value::Array(types)) => {
            if types.len() != layers as usize {
                return Err(error(format!(
                    "{} entries for {layers} layers",
                    types.len()
                )));
            }
            for (i, t) in types.iter().enumerate() {
                let sliding = (i as i32 + 1) % pattern != 0;
                let expected = if sliding {
                    "sliding_attention"
                } else {
                    "full_attention"
                };
                if t.as_str() != Some(expected) {
                    return Err(error(format!(
                        "layer {i} is {t}, but sliding_window_pattern {pattern} makes it \
                         {expected}"
                    )));
                }
            }
        }
        Some(v) => return Err(error(format!("not a list: {v}"))),
    }
    Ok(pattern)
}

/// The sliding and the global layers' ropes: mlx_lm's keys (`rope_local_base_freq`,
/// `rope_theta`, `rope_scaling`), or transformers 5's `rope_parameters` per layer kind; both
/// must agree where both are given.
fn ropes(c: &ModelConfig, dims: i32) -> crate::Result<(RotaryEmbedding, RotaryEmbedding)> {
    let per_kind = matches!(
        c.get("rope_parameters"),
        Some(Value::Object(m)) if m.contains_key("sliding_attention") || m.contains_key("full_attention")
    );
    if !per_kind {
        let local = c.float_or("rope_local_base_freq", 10000.0)?;
        let theta = rope_theta(c, Some(1_000_000.0))?;
        return Ok((
            RotaryEmbedding::plain(dims, false, local as f32),
            RotaryEmbedding::from_config(c, dims, theta, false)?,
        ));
    }
    let Some(params) = c.section("rope_parameters") else {
        return Err(invalid(
            c.path(),
            &c.key("rope_parameters"),
            "not an object",
        ));
    };
    // A kind's rope: its base (agreeing with mlx_lm's top-level key) and, for the global
    // kind, a linear factor (agreeing with `rope_scaling`); other types are not what mlx_lm
    // builds for Gemma 3.
    let kind =
        |name: &str, top: &str, default: f64, scaled: bool| -> crate::Result<RotaryEmbedding> {
            let s = params.section(name);
            let base = match (&s, c.float(top)?) {
                (Some(s), top_value) => {
                    let base = s.float("rope_theta")?.or(top_value).unwrap_or(default);
                    if let Some(t) = top_value.filter(|t| *t != base) {
                        return Err(invalid(
                            c.path(),
                            &c.key(top),
                            &format!("{t}, but {} is {base}", s.key("rope_theta")),
                        ));
                    }
                    base
                }
                (None, top_value) => top_value.unwrap_or(default),
            };
            let plain = RotaryEmbedding::plain(dims, false, base as f32);
            let Some(s) = s else { return Ok(plain) };
            let rope_type = s.string("rope_type")?.unwrap_or("default").to_string();
            let factor = match rope_type.as_str() {
                "default" => None,
                "linear" if scaled => Some(s.float("factor")?.ok_or_else(|| {
                    invalid(
                        c.path(),
                        &s.key("factor"),
                        "missing (a linear rope needs it)",
                    )
                })?),
                other => {
                    return Err(invalid(
                        c.path(),
                        &s.key("rope_type"),
                        &format!(
                            "{other:?} is not supported for {name} layers (default{})",
                            if scaled { ", linear" } else { "" }
                        ),
                    ))
                }
            };
            Ok(match factor {
                Some(f) => RotaryEmbedding {
                    scale: (1.0 / f) as f32,
                    ..plain
                },
                None => plain,
            })
        };
    let local = kind("sliding_attention", "rope_local_base_freq", 10000.0, false)?;
    let global = kind("full_attention", "rope_theta", 1_000_000.0, true)?;
    if c.get("rope_scaling").is_some_and(|v| !v.is_null()) {
        let base = f64::from(global.base.unwrap_or_default());
        if RotaryEmbedding::from_config(c, dims, base, false)? != global {
            return Err(invalid(
                c.path(),
                &c.key("rope_scaling"),
                "disagrees with rope_parameters.full_attention",
            ));
        }
    } else {
        c.declare_neutral(&["rope_scaling"]);
    }
    Ok((local, global))
}

/// Python: gemma3_text's `clip_residual`: in float16, the sum in float32 clipped to
/// float16's range; otherwise the plain sum.
fn clip_residual(x: &Array, y: &Array) -> Result<Array> {
    if x.dtype() != Dtype::Float16 {
        return ops::add(x, y);
    }
    // float16's largest finite value.
    let bound = 65504.0f32;
    let sum = ops::add(&x.astype(Dtype::Float32)?, &y.astype(Dtype::Float32)?)?;
    ops::clip(&sum, -bound, bound)?.astype(Dtype::Float16)
}

/// Python: gemma3_text's `Attention`.
#[derive(Debug, Clone, TreeNode)]
pub struct Gemma3Attention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_norm: GemmaRmsNorm,
    pub k_norm: GemmaRmsNorm,
    pub rope: RotaryEmbedding,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    /// `query_pre_attn_scalar ** -0.5`, a Python float rounded once to float32.
    #[tree(static)]
    pub scale: f32,
    /// The sliding window of this layer, if it slides.
    #[tree(static)]
    pub window: Option<i32>,
    /// The scores soft-capped at this value before the softmax (gear's
    /// `attn_logit_softcapping`); `None` for Gemma 3.
    #[tree(static)]
    pub soft_cap: Option<f32>,
}

/// What a [`Gemma3Attention`] is built from besides its tensors: Gemma 3's, or a model that
/// reuses its attention (gear).
pub(crate) struct Gemma3AttentionSpec<'a> {
    pub hidden_size: i32,
    pub n_heads: i32,
    pub n_kv_heads: i32,
    pub head_dim: i32,
    pub bias: bool,
    pub rms_norm_eps: f32,
    pub rope: &'a RotaryEmbedding,
    /// `query_pre_attn_scalar`, a Python float.
    pub query_pre_attn_scalar: f64,
    pub window: Option<i32>,
    pub soft_cap: Option<f32>,
}

impl Gemma3Attention {
    fn load(
        ck: &mut Checkpoint,
        path: &str,
        i: i32,
        a: &Gemma3TextArgs,
    ) -> crate::Result<Gemma3Attention> {
        let sliding = a.is_sliding(i);
        let spec = Gemma3AttentionSpec {
            hidden_size: a.hidden_size,
            n_heads: a.num_attention_heads,
            n_kv_heads: a.num_key_value_heads,
            head_dim: a.head_dim,
            bias: false,
            rms_norm_eps: a.rms_norm_eps,
            rope: if sliding {
                &a.local_rope
            } else {
                &a.global_rope
            },
            query_pre_attn_scalar: a.query_pre_attn_scalar,
            window: sliding.then_some(a.sliding_window),
            soft_cap: None,
        };
        Gemma3Attention::load_spec(ck, path, &spec)
    }

    /// The layer under `path` as `spec` describes it.
    pub(crate) fn load_spec(
        ck: &mut Checkpoint,
        path: &str,
        spec: &Gemma3AttentionSpec<'_>,
    ) -> crate::Result<Gemma3Attention> {
        let (d, h, kv, hd, bias) = (
            spec.hidden_size,
            spec.n_heads,
            spec.n_kv_heads,
            spec.head_dim,
            spec.bias,
        );
        let p = |name: &str| format!("{path}.{name}");
        Ok(Gemma3Attention {
            q_proj: ck.linear(&p("q_proj"), d, h * hd, bias)?,
            k_proj: ck.linear(&p("k_proj"), d, kv * hd, bias)?,
            v_proj: ck.linear(&p("v_proj"), d, kv * hd, bias)?,
            o_proj: ck.linear(&p("o_proj"), h * hd, d, bias)?,
            q_norm: GemmaRmsNorm::load(ck, &p("q_norm"), hd, spec.rms_norm_eps)?,
            k_norm: GemmaRmsNorm::load(ck, &p("k_norm"), hd, spec.rms_norm_eps)?,
            rope: spec.rope.clone(),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            scale: spec.query_pre_attn_scalar.powf(-0.5) as f32,
            window: spec.window,
            soft_cap: spec.soft_cap,
        })
    }

    pub(crate) fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let rows = ctx.rows;
        let q = heads_normed(
            &self.q_proj.forward(x)?,
            rows,
            self.n_heads,
            Some(&self.q_norm),
        )?;
        let k = heads_normed(
            &self.k_proj.forward(x)?,
            rows,
            self.n_kv_heads,
            Some(&self.k_norm),
        )?;
        let v =
            heads_normed::<GemmaRmsNorm>(&self.v_proj.forward(x)?, rows, self.n_kv_heads, None)?;
        let out = match self.soft_cap {
            Some(cap) => {
                attend_soft_capped(q, k, v, &self.rope, self.scale, cap, self.window, cache)?
            }
            None => attend(
                q,
                k,
                v,
                Some(&self.rope),
                self.scale,
                ctx.masks.for_window(self.window),
                self.window,
                ctx.kernels.fused_decode_attention,
                cache,
            )?,
        };
        self.o_proj.forward(&merge_heads(&out)?)
    }
}

/// Python: gemma3_text's `TransformerBlock`.
#[derive(Debug, Clone, TreeNode)]
pub struct Gemma3Layer {
    pub self_attn: Gemma3Attention,
    pub mlp: Mlp,
    pub input_layernorm: GemmaRmsNorm,
    pub post_attention_layernorm: GemmaRmsNorm,
    pub pre_feedforward_layernorm: GemmaRmsNorm,
    pub post_feedforward_layernorm: GemmaRmsNorm,
}

impl Layer for Gemma3Layer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let r = self
            .self_attn
            .forward(&self.input_layernorm.forward(x)?, ctx, cache)?;
        let h = clip_residual(x, &self.post_attention_layernorm.forward(&r)?)?;
        let r = self
            .mlp
            .forward(&self.pre_feedforward_layernorm.forward(&h)?)?;
        clip_residual(&h, &self.post_feedforward_layernorm.forward(&r)?)
    }

    /// Python: `make_cache`: a `RotatingKVCache(max_size=sliding_window)` for a sliding
    /// layer, a `KVCache` for a global one.
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        let a = &self.self_attn;
        LayerCache::attention(batch, a.n_kv_heads, a.head_dim, a.window, capacity, dtype)
    }

    fn window(&self) -> Option<i32> {
        self.self_attn.window
    }
}

/// Python: gemma3_text's `Gemma3Model`.
pub type Gemma3Model = LayerStack<Gemma3Layer, GemmaRmsNorm>;

/// Python: `mlx_lm.models.gemma3_text.Model`: the stack and its head (the embedding when the
/// checkpoint has no `lm_head.weight`).
#[derive(Debug, Clone, TreeNode)]
pub struct Gemma3Text {
    pub model: Gemma3Model,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

/// `√hidden_size` rounded to bfloat16 (Python: `mx.array(hidden_size**0.5, mx.bfloat16)`),
/// exact in every float dtype the product is taken in.
fn embed_scale(hidden_size: i32) -> Result<f64> {
    let scale = Array::from_scalar(f64::from(hidden_size).sqrt() as f32)
        .astype(Dtype::Bfloat16)?
        .astype(Dtype::Float32)?;
    Ok(f64::from(scale.item::<f32>()?))
}

/// A config that says the head is tied while the checkpoint has one of its own: mlx_lm
/// would use the checkpoint's head, transformers the embedding.
fn check_tie(c: &ModelConfig, has_head: bool) -> crate::Result<()> {
    if has_head && c.bool("tie_word_embeddings")? == Some(true) {
        return Err(invalid(
            c.path(),
            &c.key("tie_word_embeddings"),
            "true, but the checkpoint has an lm_head.weight of its own (mlx_lm would use it, \
             transformers the embedding)",
        ));
    }
    Ok(())
}

impl Gemma3Text {
    /// The config reader ([`Gemma3TextArgs::from_config`]).
    pub fn args(c: &ModelConfig) -> crate::Result<Gemma3TextArgs> {
        Gemma3TextArgs::from_config(c)
    }

    /// Reads the config, casts the tensors, builds the model; tied when the checkpoint has
    /// no `lm_head.weight` (Python's sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Gemma3Text> {
        let a = Gemma3TextArgs::from_config(config)?;
        Self::load(ck, config, options, &a, "")
    }

    fn load(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
        a: &Gemma3TextArgs,
        prefix: &str,
    ) -> crate::Result<Gemma3Text> {
        ck.cast(options.dtype, |_| false)?;
        let has_head = ck
            .weights_mut()
            .contains(&format!("{prefix}lm_head.weight"));
        check_tie(config, has_head)?;
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let p = |name: &str| format!("{prefix}model.layers.{i}.{name}");
            let mut norm = |name: &str| GemmaRmsNorm::load(ck, &p(name), d, eps);
            let (input, post_attention, pre_feedforward, post_feedforward) = (
                norm("input_layernorm")?,
                norm("post_attention_layernorm")?,
                norm("pre_feedforward_layernorm")?,
                norm("post_feedforward_layernorm")?,
            );
            layers.push(Gemma3Layer {
                self_attn: Gemma3Attention::load(ck, &p("self_attn"), i, a)?,
                mlp: Mlp::load(ck, &p("mlp"), d, a.intermediate_size, false)?
                    .with_activation(Activation::GeluApprox),
                input_layernorm: input,
                post_attention_layernorm: post_attention,
                pre_feedforward_layernorm: pre_feedforward,
                post_feedforward_layernorm: post_feedforward,
            });
        }
        let scale = embed_scale(d).map_err(|source| crate::Error::Mlx {
            path: config.path().to_path_buf(),
            source,
        })?;
        Ok(Gemma3Text {
            model: Stack::load_around(
                ck,
                &format!("{prefix}model"),
                (a.vocab_size, d),
                layers,
                |ck, path| GemmaRmsNorm::load(ck, path, d, eps),
                options.kernels,
            )?
            .with_ends(StackEnds {
                embed_scale: Some(scale),
                logits: None,
            }),
            lm_head: if has_head {
                Some(ck.linear(&format!("{prefix}lm_head"), d, a.vocab_size, false)?)
            } else {
                None
            },
        })
    }
}

crate::models::base::stack_language_model!(Gemma3Text, model, "gemma3_text");

/// Python: `mlx_lm.models.gemma3.Model`: the text model of a Gemma 3 checkpoint, under
/// `language_model` (the vision tower and its projector are dropped at load).
#[derive(Debug, Clone, TreeNode)]
pub struct Gemma3 {
    pub language_model: Gemma3Text,
}

impl Gemma3 {
    /// Python: gemma3's `ModelArgs`: `text_config` read as gemma3_text's (8 query and 4
    /// key-value heads by default), its vocabulary the top level's `vocab_size` (default
    /// 262208) or `text_config`'s (see the module's doc), over every key of transformers'
    /// `Gemma3Config`.
    pub fn args(config: &ModelConfig) -> crate::Result<Gemma3TextArgs> {
        // The vision tower and its tokens: a text prompt does not reach them, and sanitize
        // drops the tower's tensors.
        config.declare_neutral(&[
            "vision_config",
            "mm_tokens_per_image",
            "boi_token_index",
            "eoi_token_index",
            "image_token_index",
            "initializer_range",
        ]);
        config.declare_neutral(&["tie_word_embeddings"]);
        let Some(text) = config.section("text_config") else {
            return Err(invalid(
                config.path(),
                &config.key("text_config"),
                "missing",
            ));
        };
        let vocab = match (config.usize("vocab_size")?, text.usize("vocab_size")?) {
            (Some(top), Some(t)) if t != top => {
                return Err(invalid(
                    config.path(),
                    &config.key("vocab_size"),
                    &format!("{top}, but {} is {t}", text.key("vocab_size")),
                ))
            }
            (Some(_), _) => config.dim("vocab_size")?,
            (None, Some(_)) => text.dim("vocab_size")?,
            (None, None) => 262208,
        };
        Gemma3TextArgs::read(
            &text,
            vocab,
            Defaults {
                heads: 8,
                kv_heads: 4,
            },
        )
    }

    /// Python: `Model.sanitize` (drops `vision_tower` and `multi_modal_projector`; the text
    /// model tied when there is no `language_model.lm_head.weight`), then the text model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Gemma3> {
        let a = Self::args(config)?;
        ck.weights_mut().retain(|k, _| {
            !k.starts_with("vision_tower.") && !k.starts_with("multi_modal_projector.")
        });
        let text = config
            .section("text_config")
            .unwrap_or_else(|| config.clone());
        Ok(Gemma3 {
            language_model: Gemma3Text::load(ck, &text, options, &a, "language_model.")?,
        })
    }
}

impl crate::LanguageModel for Gemma3 {
    fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        let lm = &self.language_model;
        lm.model.logits(inputs, cache, lm.lm_head.as_ref())
    }

    fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        self.language_model.model.make_cache(batch, capacity)
    }

    fn dtype(&self) -> Dtype {
        self.language_model.model.dtype()
    }

    fn vocab_size(&self) -> i32 {
        self.language_model.model.vocab_size()
    }

    fn model_type(&self) -> &str {
        "gemma3"
    }
}
