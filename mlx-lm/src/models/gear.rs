//! `gear` (Python: `mlx_lm.models.gear`): a Gemma-3-like decoder whose layers are of three
//! kinds, listed one per layer in `layer_types`: `full_attention` (a `KVCache`),
//! `sliding_attention` (a `RotatingKVCache` of `sliding_window`, its rope of base
//! `rope_local_base_freq` without scaling), and `conv_mixer`, a gated key/value convolution
//! with state ([`ConvKvGatedMixer`], an `ArraysCache(size=2)`).
//!
//! Every layer is Gemma's "sandwich" (four Gemma norms, `1 + weight`; each sublayer's
//! output normalized before its plain residual sum); the attention layers norm queries and
//! keys per head, scale by `query_pre_attn_scalar ** -0.5` and attend through the fused
//! attention, or, with `attn_logit_softcapping`, through the soft-capped scores written out
//! (Gemma 3's attention, [`Gemma3Attention`], with a soft cap and biases: mlx_lm's gear repeats the key-value heads where gemma2 groups
//! the query heads; the same products, measured bit-identical). The MLP is a gated one of
//! `hidden_activation`; the embeddings are scaled by the unrounded `√hidden_size`; the
//! logits soft-capped with `final_logit_softcapping`. The head is tied unless
//! `tie_word_embeddings` is false (mlx_lm's sanitize drops a tied checkpoint's
//! `lm_head.weight`).
//!
//! mlx_lm names no checkpoint and transformers 5.23 has no `gear` config; the keys read are
//! mlx_lm's `ModelArgs`. Where this reader is stricter than mlx_lm: a layer kind other than
//! the three is an error (mlx_lm runs it as a `conv_mixer`); a `hidden_act` (which mlx_lm
//! ignores) must agree with `hidden_activation`.

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::conv::sanitize_conv_weights;
use crate::blocks::conv_kv_gated::{ConvKvGatedConfig, ConvKvGatedMixer};
use crate::blocks::{
    rope_theta, Activation, GemmaRmsNorm, Layer, LayerContext, LayerStack, LogitsMap, Mlp,
    RotaryEmbedding, Stack, StackEnds,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::gemma3_text::{Gemma3Attention, Gemma3AttentionSpec};

/// A layer's kind (Python: an entry of `layer_types`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    FullAttention,
    SlidingAttention,
    ConvMixer,
}

/// Python: gear's `ModelArgs`.
#[derive(Debug, Clone)]
pub struct GearArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub rms_norm_eps: f32,
    pub layer_types: Vec<LayerKind>,
    pub hidden_activation: Activation,
    pub attention_bias: bool,
    pub query_pre_attn_scalar: f64,
    pub sliding_window: i32,
    pub conv_l_cache: i32,
    /// The sliding layers' rope (`rope_local_base_freq`, no scaling).
    pub local_rope: RotaryEmbedding,
    /// The full layers' rope (`rope_theta`, `rope_scaling`, `max_position_embeddings`).
    pub global_rope: RotaryEmbedding,
    pub tie_word_embeddings: bool,
    pub final_logit_softcapping: Option<f64>,
    pub attn_logit_softcapping: Option<f64>,
}

/// A soft cap: absent, `null` or 0 is none (Python: `if self.args.final_logit_softcapping:`).
fn soft_cap(c: &ModelConfig, key: &str) -> crate::Result<Option<f64>> {
    let cap = c.float(key)?.filter(|v| *v != 0.0);
    if let Some(v) = cap.filter(|v| !(v.is_finite() && *v > 0.0)) {
        return Err(invalid(
            c.path(),
            &c.key(key),
            &format!("{v} is not positive"),
        ));
    }
    Ok(cap)
}

impl GearArgs {
    /// Python: gear's `ModelArgs` with its defaults and `__post_init__`'s checks.
    pub fn from_config(c: &ModelConfig) -> crate::Result<GearArgs> {
        let layers = c.dim("num_hidden_layers")?;
        let heads = c.dim("num_attention_heads")?;
        let kv_heads = c.dim_or("num_key_value_heads", Some(heads))?;
        if kv_heads == 0 || heads % kv_heads != 0 {
            return Err(invalid(
                c.path(),
                &c.key("num_key_value_heads"),
                &format!("{kv_heads} does not divide num_attention_heads {heads}"),
            ));
        }
        let head_dim = c.dim("head_dim")?;
        let act_name = c
            .string("hidden_activation")?
            .unwrap_or("gelu_pytorch_tanh")
            .to_string();
        let hidden_activation = Activation::from_hidden_act(&act_name).ok_or_else(|| {
            invalid(
                c.path(),
                &c.key("hidden_activation"),
                &format!("{act_name:?} is not a supported activation"),
            )
        })?;
        // mlx_lm reads hidden_activation only; a hidden_act naming another would be run
        // with hidden_activation's silently.
        if let Some(other) = c.string("hidden_act")? {
            if Activation::from_hidden_act(other) != Some(hidden_activation) {
                return Err(invalid(
                    c.path(),
                    &c.key("hidden_act"),
                    &format!("{other:?}, but hidden_activation is {act_name:?}"),
                ));
            }
        }
        c.require_value("use_bidirectional_attention", false)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes nothing here (a rope type that needs it
        // reads it itself).
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let query_pre_attn_scalar = c.float_or("query_pre_attn_scalar", f64::from(head_dim))?;
        if query_pre_attn_scalar <= 0.0 {
            return Err(invalid(
                c.path(),
                &c.key("query_pre_attn_scalar"),
                &format!("{query_pre_attn_scalar} is not positive"),
            ));
        }
        let conv_l_cache = c.dim_or("conv_L_cache", Some(3))?;
        if conv_l_cache < 1 {
            return Err(invalid(
                c.path(),
                &c.key("conv_L_cache"),
                "a convolution needs at least one tap",
            ));
        }
        let local = c.float_or("rope_local_base_freq", 10000.0)?;
        let theta = rope_theta(c, Some(1_000_000.0))?;
        Ok(GearArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: c.dim("hidden_size")?,
            intermediate_size: c.dim("intermediate_size")?,
            num_attention_heads: heads,
            num_key_value_heads: kv_heads,
            head_dim,
            rms_norm_eps: c
                .float("rms_norm_eps")?
                .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?
                as f32,
            layer_types: layer_types(c, layers)?,
            hidden_activation,
            attention_bias: c.bool_or("attention_bias", false)?,
            query_pre_attn_scalar,
            sliding_window: c.dim_or("sliding_window", Some(512))?,
            conv_l_cache,
            local_rope: RotaryEmbedding::plain(head_dim, false, local as f32),
            global_rope: RotaryEmbedding::from_config(c, head_dim, theta, false)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
            final_logit_softcapping: soft_cap(c, "final_logit_softcapping")?,
            attn_logit_softcapping: soft_cap(c, "attn_logit_softcapping")?,
        })
    }

    fn conv(&self) -> ConvKvGatedConfig {
        ConvKvGatedConfig {
            hidden_size: self.hidden_size,
            num_attention_heads: self.num_attention_heads,
            num_key_value_heads: self.num_key_value_heads,
            head_dim: self.head_dim,
            l_cache: self.conv_l_cache,
            bias: self.attention_bias,
            rms_norm_eps: self.rms_norm_eps,
        }
    }
}

/// `layer_types`, one per layer (`null`: every layer `full_attention`, as mlx_lm's
/// `__post_init__`).
fn layer_types(c: &ModelConfig, layers: i32) -> crate::Result<Vec<LayerKind>> {
    let error = |message: String| invalid(c.path(), &c.key("layer_types"), &message);
    match c.get("layer_types") {
        None => Err(error("missing".into())),
        Some(Value::Null) => Ok(vec![LayerKind::FullAttention; layers as usize]),
        Some(Value::Array(types)) => {
            if types.len() != layers as usize {
                return Err(error(format!(
                    "{} entries for {layers} layers",
                    types.len()
                )));
            }
            types
                .iter()
                .map(|t| match t.as_str() {
                    Some("full_attention") => Ok(LayerKind::FullAttention),
                    Some("sliding_attention") => Ok(LayerKind::SlidingAttention),
                    Some("conv_mixer") => Ok(LayerKind::ConvMixer),
                    _ => Err(error(format!(
                        "{t} is not full_attention, sliding_attention or conv_mixer"
                    ))),
                })
                .collect()
        }
        Some(v) => Err(error(format!("not a list: {v}"))),
    }
}

/// gear's attention layer: Gemma 3's ([`Gemma3Attention`]), with projection biases and an
/// optional soft cap on the scores (mlx_lm's gear repeats the key-value heads where the soft
/// cap groups the query heads: the same products).
fn gear_attention(
    ck: &mut Checkpoint,
    path: &str,
    sliding: bool,
    a: &GearArgs,
) -> crate::Result<Gemma3Attention> {
    let spec = Gemma3AttentionSpec {
        hidden_size: a.hidden_size,
        n_heads: a.num_attention_heads,
        n_kv_heads: a.num_key_value_heads,
        head_dim: a.head_dim,
        bias: a.attention_bias,
        rms_norm_eps: a.rms_norm_eps,
        rope: if sliding {
            &a.local_rope
        } else {
            &a.global_rope
        },
        query_pre_attn_scalar: a.query_pre_attn_scalar,
        window: sliding.then_some(a.sliding_window),
        soft_cap: a.attn_logit_softcapping.map(|c| c as f32),
    };
    Gemma3Attention::load_spec(ck, path, &spec)
}

/// Python: gear's `DecoderLayer`: its token mixer under `self_attn` (an attention layer) or
/// `local_mixer` (a `conv_mixer` layer).
#[derive(Debug, Clone, TreeNode)]
pub struct GearLayer {
    pub self_attn: Option<Gemma3Attention>,
    pub local_mixer: Option<ConvKvGatedMixer>,
    pub mlp: Mlp,
    pub input_layernorm: GemmaRmsNorm,
    pub post_attention_layernorm: GemmaRmsNorm,
    pub pre_feedforward_layernorm: GemmaRmsNorm,
    pub post_feedforward_layernorm: GemmaRmsNorm,
}

impl Layer for GearLayer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let h = self.input_layernorm.forward(x)?;
        let r = match (&self.self_attn, &self.local_mixer) {
            (Some(attn), _) => attn.forward(&h, ctx, cache)?,
            (None, Some(mixer)) => mixer.forward(&h, ctx.rows, cache)?,
            (None, None) => {
                return Err(crate::blocks::rows::wrong_input(
                    "a gear layer with neither self_attn nor local_mixer",
                ))
            }
        };
        let h = ops::add(x, &self.post_attention_layernorm.forward(&r)?)?;
        let r = self
            .mlp
            .forward(&self.pre_feedforward_layernorm.forward(&h)?)?;
        ops::add(&h, &self.post_feedforward_layernorm.forward(&r)?)
    }

    /// Python: `make_cache`: `KVCache`, `RotatingKVCache(max_size=sliding_window)` or
    /// `ArraysCache(size=2)` by the layer's kind.
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match (&self.self_attn, &self.local_mixer) {
            (Some(a), _) => {
                LayerCache::attention(batch, a.n_kv_heads, a.head_dim, a.window, capacity, dtype)
            }
            (None, Some(m)) => m.make_cache(batch, dtype),
            (None, None) => Err(crate::blocks::rows::wrong_input(
                "a gear layer with neither self_attn nor local_mixer",
            )),
        }
    }

    fn window(&self) -> Option<i32> {
        self.self_attn.as_ref().and_then(|a| a.window)
    }
}

/// Python: gear's `GearModel`.
pub type GearModel = LayerStack<GearLayer, GemmaRmsNorm>;

/// Python: `mlx_lm.models.gear.Model`: the stack and its head (the embedding when tied).
#[derive(Debug, Clone, TreeNode)]
pub struct Gear {
    pub model: GearModel,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Gear {
    /// The config reader ([`GearArgs::from_config`]).
    pub fn args(c: &ModelConfig) -> crate::Result<GearArgs> {
        GearArgs::from_config(c)
    }

    /// Python: `Model.sanitize` (drops `rotary_emb.inv_freq`, `embed_scale` and a tied
    /// model's `lm_head.weight`; the convolutions' `[C, 1, K]` weights to MLX's
    /// `[C, K, 1]`), then the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Gear> {
        let a = GearArgs::from_config(config)?;
        let tied = a.tie_word_embeddings;
        ck.weights_mut().retain(|k, _| {
            !(k.contains("rotary_emb.inv_freq")
                || k.ends_with("embed_scale")
                || (tied && k == "lm_head.weight"))
        });
        sanitize_conv_weights(ck, "key_conv.weight")?;
        sanitize_conv_weights(ck, "value_conv.weight")?;
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let mut layers = Vec::with_capacity(a.layer_types.len());
        for (i, kind) in a.layer_types.iter().enumerate() {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            let (self_attn, local_mixer) = match kind {
                LayerKind::ConvMixer => (
                    None,
                    Some(ConvKvGatedMixer::load(ck, &p("local_mixer"), a.conv())?),
                ),
                k => (
                    Some(gear_attention(
                        ck,
                        &p("self_attn"),
                        *k == LayerKind::SlidingAttention,
                        &a,
                    )?),
                    None,
                ),
            };
            let mut norm = |name: &str| GemmaRmsNorm::load(ck, &p(name), d, eps);
            let (input, post_attention, pre_feedforward, post_feedforward) = (
                norm("input_layernorm")?,
                norm("post_attention_layernorm")?,
                norm("pre_feedforward_layernorm")?,
                norm("post_feedforward_layernorm")?,
            );
            layers.push(GearLayer {
                self_attn,
                local_mixer,
                mlp: Mlp::load(ck, &p("mlp"), d, a.intermediate_size, false)?
                    .with_activation(a.hidden_activation),
                input_layernorm: input,
                post_attention_layernorm: post_attention,
                pre_feedforward_layernorm: pre_feedforward,
                post_feedforward_layernorm: post_feedforward,
            });
        }
        Ok(Gear {
            model: Stack::load_around(
                ck,
                "model",
                (a.vocab_size, d),
                layers,
                |ck, path| GemmaRmsNorm::load(ck, path, d, eps),
                options.kernels,
            )?
            .with_ends(StackEnds {
                // Python: `math.sqrt(hidden_size)`, a float multiplied in the model's dtype.
                embed_scale: Some(f64::from(d).sqrt()),
                logits: a.final_logit_softcapping.map(LogitsMap::SoftCap),
            }),
            lm_head: if tied {
                None
            } else {
                Some(ck.linear("lm_head", d, a.vocab_size, false)?)
            },
        })
    }
}

crate::models::base::stack_language_model!(Gear, model, "gear");
