//! `gemma2` (Python: `mlx_lm.models.gemma2`): Gemma 2, Gemma's decoder with four norms per
//! layer (each sublayer's output normalized before its residual sum: "sandwich" norms),
//! attention scores soft-capped (`tanh(s / cap) * cap`, [`attend_soft_capped`]: written out
//! op by op in mlx_lm's order, never the fused kernels), queries scaled by
//! `query_pre_attn_scalar ** -0.5`, a tanh-GELU GeGLU and soft-capped logits.
//!
//! One difference from mlx_lm 0.32.2, after transformers 5.23: mlx_lm attends over every
//! position in every layer, where Gemma 2 (transformers' `Gemma2Model`, and how the models
//! were trained) slides the attention of alternate layers over the last `sliding_window`
//! positions (`layer_types`, by default the even layers). Here those layers slide too, with
//! mlx_lm's caches (a `KVCache` in every layer, the window a mask over it, so prompt caches
//! are interchangeable with mlx_lm's): the same numbers as mlx_lm's, bit for bit, up to
//! `sliding_window` positions (4096 in the released models), transformers' model past it.
//!
//! Also as in Gemma 1 (see [`gemma`](crate::models::gemma)), the norm's `1 + weight` rounds
//! in the weight's dtype; mlx_lm's order of the query scale (before the product with the
//! keys, where transformers scales the product) is kept, which moves bfloat16 scores in
//! their last bits against transformers.

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::rows::{heads, merge_heads};
use crate::blocks::soft_cap::attend_soft_capped;
use crate::blocks::{
    Activation, GemmaRmsNorm, Layer, LayerContext, LayerStack, LogitsMap, Mlp, RotaryEmbedding,
    Stack, StackEnds,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::gemma::GemmaArgs;

/// Python: gemma2's `ModelArgs`.
#[derive(Debug, Clone)]
pub struct Gemma2Args {
    pub base: GemmaArgs,
    pub attn_logit_softcapping: f64,
    pub final_logit_softcapping: f64,
    pub query_pre_attn_scalar: f64,
    /// Per layer: whether its attention slides over the last `sliding_window` positions.
    pub sliding: Vec<bool>,
    pub sliding_window: Option<i32>,
}

/// A soft cap of the config (mlx_lm's default when absent); `null`, which transformers reads
/// as no cap, is an error: mlx_lm always caps.
fn soft_cap(c: &ModelConfig, key: &str, default: f64) -> crate::Result<f64> {
    if c.get(key) == Some(&Value::Null) {
        return Err(invalid(
            c.path(),
            &c.key(key),
            &format!("null (no cap) is not supported by {}", c.model_type()),
        ));
    }
    let cap = c.float_or(key, default)?;
    if cap <= 0.0 {
        return Err(invalid(
            c.path(),
            &c.key(key),
            &format!("{cap} is not positive"),
        ));
    }
    Ok(cap)
}

impl Gemma2Args {
    /// Python: gemma2's `ModelArgs` (`attn_logit_softcapping` 50, `final_logit_softcapping`
    /// 30, `query_pre_attn_scalar` 144 by default), over every key of transformers'
    /// `Gemma2Config`: the activation must be the tanh GELU mlx_lm computes, the sliding
    /// layers are `layer_types`' (without it, the even layers when `sliding_window` is
    /// given, as transformers 4 had them).
    pub fn from_config(c: &ModelConfig) -> crate::Result<Gemma2Args> {
        for key in ["hidden_act", "hidden_activation"] {
            c.require_value(key, "gelu_pytorch_tanh")?;
        }
        // transformers 4's choice of its cache class for this model.
        c.declare_neutral(&["cache_implementation"]);
        let base = GemmaArgs::common(c)?;
        let layers = base.num_hidden_layers as usize;
        let sliding_window = c
            .usize("sliding_window")?
            .map(|_| c.dim("sliding_window"))
            .transpose()?;
        if let Some(w) = sliding_window {
            // Older configs repeat the window under this name.
            c.require_value("sliding_window_size", w)?;
        }
        let layer_types_error =
            |message: String| invalid(c.path(), &c.key("layer_types"), &message);
        let sliding = match c.get("layer_types") {
            None | Some(Value::Null) => (0..layers)
                .map(|i| sliding_window.is_some() && i % 2 == 0)
                .collect(),
            Some(Value::Array(types)) => {
                let sliding = types
                    .iter()
                    .map(|t| match t.as_str() {
                        Some("full_attention") => Ok(false),
                        Some("sliding_attention") => Ok(true),
                        _ => Err(layer_types_error(format!("unknown layer type {t}"))),
                    })
                    .collect::<crate::Result<Vec<bool>>>()?;
                if sliding.len() != layers {
                    return Err(layer_types_error(format!(
                        "{} entries for {layers} layers",
                        sliding.len()
                    )));
                }
                sliding
            }
            Some(v) => return Err(layer_types_error(format!("not a list: {v}"))),
        };
        if sliding.iter().any(|s| *s) && sliding_window.is_none() {
            return Err(invalid(
                c.path(),
                &c.key("sliding_window"),
                "missing, but layer_types has sliding_attention layers",
            ));
        }
        let query_pre_attn_scalar = c.float_or("query_pre_attn_scalar", 144.0)?;
        if query_pre_attn_scalar <= 0.0 {
            return Err(invalid(
                c.path(),
                &c.key("query_pre_attn_scalar"),
                &format!("{query_pre_attn_scalar} is not positive"),
            ));
        }
        Ok(Gemma2Args {
            attn_logit_softcapping: soft_cap(c, "attn_logit_softcapping", 50.0)?,
            final_logit_softcapping: soft_cap(c, "final_logit_softcapping", 30.0)?,
            query_pre_attn_scalar,
            sliding,
            sliding_window,
            base,
        })
    }
}

/// Python: gemma2's `Attention`.
#[derive(Debug, Clone, TreeNode)]
pub struct Gemma2Attention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub rope: RotaryEmbedding,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    /// `1 / query_pre_attn_scalar ** 0.5`, a Python float rounded once to float32.
    #[tree(static)]
    pub scale: f32,
    /// `attn_logit_softcapping`.
    #[tree(static)]
    pub cap: f32,
    /// The sliding window of this layer, if it slides.
    #[tree(static)]
    pub window: Option<i32>,
}

impl Gemma2Attention {
    fn load(ck: &mut Checkpoint, path: &str, i: usize, a: &Gemma2Args) -> crate::Result<Self> {
        let b = &a.base;
        let (d, h, kv, hd) = (
            b.hidden_size,
            b.num_attention_heads,
            b.num_key_value_heads,
            b.head_dim,
        );
        let p = |name: &str| format!("{path}.{name}");
        Ok(Gemma2Attention {
            q_proj: ck.linear(&p("q_proj"), d, h * hd, false)?,
            k_proj: ck.linear(&p("k_proj"), d, kv * hd, false)?,
            v_proj: ck.linear(&p("v_proj"), d, kv * hd, false)?,
            o_proj: ck.linear(&p("o_proj"), h * hd, d, false)?,
            rope: b.rope.clone(),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            scale: (1.0 / a.query_pre_attn_scalar.sqrt()) as f32,
            cap: a.attn_logit_softcapping as f32,
            window: if a.sliding[i] { a.sliding_window } else { None },
        })
    }

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let rows = ctx.rows;
        let q = heads(&self.q_proj.forward(x)?, rows, self.n_heads, None)?;
        let k = heads(&self.k_proj.forward(x)?, rows, self.n_kv_heads, None)?;
        let v = heads(&self.v_proj.forward(x)?, rows, self.n_kv_heads, None)?;
        let out = attend_soft_capped(
            q,
            k,
            v,
            &self.rope,
            self.scale,
            self.cap,
            self.window,
            cache,
        )?;
        self.o_proj.forward(&merge_heads(&out)?)
    }
}

/// Python: gemma2's `TransformerBlock`.
#[derive(Debug, Clone, TreeNode)]
pub struct Gemma2Layer {
    pub self_attn: Gemma2Attention,
    pub mlp: Mlp,
    pub input_layernorm: GemmaRmsNorm,
    pub post_attention_layernorm: GemmaRmsNorm,
    pub pre_feedforward_layernorm: GemmaRmsNorm,
    pub post_feedforward_layernorm: GemmaRmsNorm,
}

impl Layer for Gemma2Layer {
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
        let h = ops::add(x, &self.post_attention_layernorm.forward(&r)?)?;
        let r = self
            .mlp
            .forward(&self.pre_feedforward_layernorm.forward(&h)?)?;
        ops::add(&h, &self.post_feedforward_layernorm.forward(&r)?)
    }

    /// Python: the default `KVCache`, in the sliding layers too (their window is a mask).
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        let a = &self.self_attn;
        let hd = a.head_dim;
        LayerCache::attention(batch, a.n_kv_heads, hd, None, capacity, dtype)
    }
}

/// Python: gemma2's `GemmaModel`.
pub type Gemma2Model = LayerStack<Gemma2Layer, GemmaRmsNorm>;

/// Python: `mlx_lm.models.gemma2.Model`: the stack, the tied head, the logits soft-capped.
#[derive(Debug, Clone, TreeNode)]
pub struct Gemma2 {
    pub model: Gemma2Model,
    /// Always `None`: Gemma 2 ties its head to the embedding.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Gemma2 {
    /// The config reader ([`Gemma2Args::from_config`]).
    pub fn args(c: &ModelConfig) -> crate::Result<Gemma2Args> {
        Gemma2Args::from_config(c)
    }

    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize for
    /// gemma2).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Gemma2> {
        let a = Gemma2Args::from_config(config)?;
        ck.cast(options.dtype, |_| false)?;
        let b = &a.base;
        let (d, eps) = (b.hidden_size, b.rms_norm_eps);
        let mut layers = Vec::with_capacity(b.num_hidden_layers as usize);
        for i in 0..b.num_hidden_layers as usize {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            let mut norm = |name: &str| GemmaRmsNorm::load(ck, &p(name), d, eps);
            let (input, post_attention, pre_feedforward, post_feedforward) = (
                norm("input_layernorm")?,
                norm("post_attention_layernorm")?,
                norm("pre_feedforward_layernorm")?,
                norm("post_feedforward_layernorm")?,
            );
            layers.push(Gemma2Layer {
                self_attn: Gemma2Attention::load(ck, &p("self_attn"), i, &a)?,
                mlp: Mlp::load(ck, &p("mlp"), d, b.intermediate_size, false)?
                    .with_activation(Activation::GeluApprox),
                input_layernorm: input,
                post_attention_layernorm: post_attention,
                pre_feedforward_layernorm: pre_feedforward,
                post_feedforward_layernorm: post_feedforward,
            });
        }
        Ok(Gemma2 {
            model: Stack::load_around(
                ck,
                "model",
                (b.vocab_size, d),
                layers,
                |ck, path| GemmaRmsNorm::load(ck, path, d, eps),
                options.kernels,
            )?
            .with_ends(StackEnds {
                embed_scale: Some(b.embed_scale()),
                logits: Some(LogitsMap::SoftCap(a.final_logit_softcapping)),
            }),
            lm_head: None,
        })
    }
}

crate::models::base::stack_language_model!(Gemma2, model, "gemma2");
