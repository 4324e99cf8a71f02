//! `lfm2` (Python: `mlx_lm.models.lfm2`): Liquid AI's LFM2, gated short-convolution layers
//! ([`ShortConv`]) with attention layers (per-head q/k RMSNorm) where `layer_types` (or
//! `full_attn_idxs`) puts them, a SwiGLU `feed_forward` in every layer, the final norm named
//! `embedding_norm`, and the output head always tied to the embeddings.

use mlx_nn::{Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::layer::{embedding_dtype, embedding_vocab_size};
use crate::blocks::mlp::swiglu;
use crate::blocks::rows::wrong_input;
use crate::blocks::{
    forward_layers, make_layer_caches, AttentionParts, Layer, LayerContext, RotaryEmbedding, Rows,
    ShortConv, TokenMixer,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;
use crate::model::LanguageModel;

/// Python: lfm2's `ModelArgs`, as the layers use it.
#[derive(Debug, Clone)]
pub struct Lfm2Args {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    /// The width of an attention head: `head_dim`, else hidden size / heads.
    pub head_dim: i32,
    pub norm_eps: f32,
    /// Biases of the short convolutions and their projections.
    pub conv_bias: bool,
    /// The short convolution's taps.
    pub conv_l_cache: i32,
    /// The MLP's hidden width, after `block_auto_adjust_ff_dim`.
    pub ff_dim: i32,
    /// The attention layers; the others are short-convolution layers.
    pub full_attn_idxs: Vec<i32>,
    pub rope: RotaryEmbedding,
}

impl Lfm2Args {
    /// Reads the config (Python: `ModelArgs.from_dict` and its `__post_init__`), over every
    /// key of transformers 5.23's `Lfm2Config` and of the configs Liquid AI publishes: the MLP
    /// width from `block_ff_dim`, else `intermediate_size`; `rope_theta` nested (see below),
    /// else at the top level, else 1e6. The output head is the embeddings: a config that
    /// unties it (`tie_word_embeddings` or transformers 4's `tie_embedding` false) is an error.
    ///
    /// Where transformers and mlx_lm differ, this follows transformers:
    /// - `layer_types`, where given, places the attention layers, `full_attn_idxs` only
    ///   where it is not (mlx_lm takes `full_attn_idxs` first);
    /// - `block_dim` may be absent, as transformers writes a config (mlx_lm requires it);
    /// - `head_dim`, where given, is the heads' width (mlx_lm: hidden size / heads);
    /// - with `block_ffn_dim_multiplier` null, the auto-adjusted MLP width is not rounded up to
    ///   `block_multiple_of` (mlx_lm rounds it either way);
    /// - a RoPE scaling in `rope_scaling` / `rope_parameters` applies (mlx_lm's lfm2 runs plain
    ///   RoPE whatever the config says), and the nested `rope_theta` is `rope_scaling`'s where
    ///   there is one (mlx_lm: `rope_parameters`' only).
    ///
    /// Liquid AI's configs also carry their training code's copies of some settings
    /// (`block_dim`, `conv_dim`, `num_heads`, `block_norm_eps`, `block_use_swiglu`,
    /// `use_pos_enc`, ...): each must say what the model is built from, else it is an error.
    pub fn from_config(c: &ModelConfig) -> crate::Result<Lfm2Args> {
        let required_float = |key: &str| -> crate::Result<f64> {
            c.float(key)?
                .ok_or_else(|| invalid(c.path(), &c.key(key), "missing"))
        };
        let required_bool = |key: &str| -> crate::Result<bool> {
            c.bool(key)?
                .ok_or_else(|| invalid(c.path(), &c.key(key), "missing"))
        };
        // transformers' Lfm2MLP and mlx_lm's MLP compute SiLU whatever the config says (and
        // ACT2FN's "swish" is SiLU); another activation describes a model neither computes.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Initialisation settings (transformers' and Liquid's training code's) only draw
        // weights a checkpoint replaces; max_position_embeddings sizes transformers' rope cache,
        // and a llama3 or yarn rope that needs it reads it itself.
        c.declare_neutral(&[
            "initializer_range",
            "block_mlp_init_scale",
            "block_out_init_scale",
            "block_use_xavier_init",
            "conv_use_xavier_init",
            "max_position_embeddings",
        ]);
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let layers = c.dim("num_hidden_layers")?;
        let norm_eps = required_float("norm_eps")?;
        // Liquid's training code's names for settings both transformers and mlx_lm take
        // elsewhere: every width is hidden_size (mlx_lm's MLP takes block_dim, which must be
        // it for the residual sum to exist), the heads num_attention_heads, every norm's
        // epsilon norm_eps, the MLP SwiGLU, RoPE in every attention layer. A copy that says
        // otherwise describes a model neither computes.
        let same = |key: &str, name: &str, value: f64| {
            c.require(key, &format!("{value}, as {name}"), |v| {
                v.as_f64() == Some(value)
            })
        };
        for key in ["block_dim", "conv_dim", "conv_dim_out"] {
            same(key, "hidden_size", f64::from(hidden))?;
        }
        same("num_heads", "num_attention_heads", f64::from(heads))?;
        same("block_norm_eps", "norm_eps", norm_eps)?;
        c.require_value("block_use_swiglu", true)?;
        c.require_value("use_pos_enc", true)?;
        // transformers unties the output head where tie_word_embeddings (or transformers 4's
        // tie_embedding, which wins) is false; mlx_lm's lfm2 has no output head, and no
        // released LFM2 checkpoint has one.
        c.require_value("tie_embedding", true)?;
        c.require_value("tie_word_embeddings", true)?;
        let ff_key = if c.usize("block_ff_dim")?.is_some() {
            // Both take block_ff_dim over it (transformers moves it into intermediate_size).
            c.declare_neutral(&["intermediate_size"]);
            "block_ff_dim"
        } else if c.usize("intermediate_size")?.is_some() {
            "intermediate_size"
        } else {
            return Err(invalid(
                c.path(),
                &c.key("block_ff_dim"),
                "missing, and so is intermediate_size",
            ));
        };
        let ff_dim = feed_forward_dim(
            c.dim(ff_key)?,
            c.dim("block_multiple_of")?,
            required_bool("block_auto_adjust_ff_dim")?,
            c.float("block_ffn_dim_multiplier")?,
        );
        let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
        Ok(Lfm2Args {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
            head_dim,
            norm_eps: norm_eps as f32,
            conv_bias: required_bool("conv_bias")?,
            conv_l_cache: c.dim("conv_L_cache")?,
            ff_dim,
            full_attn_idxs: full_attn_idxs(c, layers)?,
            rope: RotaryEmbedding::from_config(c, head_dim, lfm2_rope_theta(c)?, false)?,
        })
    }
}

/// The RoPE base as transformers reads it for LFM2 and LFM2-MoE: the settings are
/// `rope_scaling or rope_parameters` (the same object `RotaryEmbedding::from_config` reads
/// the scaling from), their rope_theta defaulting to the top level's, then to the configs'
/// `default_theta`, 1e6.
pub(crate) fn lfm2_rope_theta(c: &ModelConfig) -> crate::Result<f64> {
    let nested = ["rope_scaling", "rope_parameters"]
        .into_iter()
        .find(|key| matches!(c.values().get(*key), Some(Value::Object(m)) if !m.is_empty()));
    let nested_theta = match nested.and_then(|key| c.section(key)) {
        Some(s) => s.float("rope_theta")?,
        None => None,
    };
    Ok(nested_theta
        .or(c.float("rope_theta")?)
        .unwrap_or(1_000_000.0))
}

/// The MLP's width (transformers' `Lfm2MLP.__init__`): with `auto_adjust`, two thirds of
/// `ff_dim`, and with a multiplier, that times the multiplier rounded up to a multiple of
/// `multiple_of` (Python's float arithmetic and `int` truncation, in f64 as Python computes
/// them). mlx_lm rounds without a multiplier too.
fn feed_forward_dim(
    ff_dim: i32,
    multiple_of: i32,
    auto_adjust: bool,
    multiplier: Option<f64>,
) -> i32 {
    if !auto_adjust {
        return ff_dim;
    }
    let ff = (2.0 * f64::from(ff_dim) / 3.0) as i64;
    let Some(m) = multiplier else {
        return ff as i32;
    };
    let ff = (m * ff as f64) as i64;
    let multiple = i64::from(multiple_of);
    (multiple * ((ff + multiple - 1) / multiple)) as i32
}

/// The attention layers: those `layer_types` calls `"full_attention"` (the others are
/// `"conv"`), else `full_attn_idxs`. transformers builds the layers from `layer_types` and
/// derives it from `full_attn_idxs` only where it is absent; mlx_lm takes `full_attn_idxs`
/// first. With neither, an error (mlx_lm fails too; transformers makes every layer attention).
pub(crate) fn full_attn_idxs(c: &ModelConfig, layers: i32) -> crate::Result<Vec<i32>> {
    let error = |key: &str, message: String| invalid(c.path(), &c.key(key), &message);
    match c.get("layer_types") {
        Some(Value::Array(types)) => {
            // transformers' Lfm2Config derives it from layer_types or leaves it unused.
            c.declare_neutral(&["full_attn_idxs"]);
            if types.len() != layers as usize {
                return Err(error(
                    "layer_types",
                    format!("{} entries for {layers} layers", types.len()),
                ));
            }
            let mut idxs = Vec::new();
            for (i, t) in types.iter().enumerate() {
                match t.as_str() {
                    Some("full_attention") => idxs.push(i as i32),
                    Some("conv") => {}
                    _ => {
                        return Err(error(
                            "layer_types",
                            format!("unknown layer type {t} (expected conv or full_attention)"),
                        ))
                    }
                }
            }
            Ok(idxs)
        }
        None | Some(Value::Null) => match c.get("full_attn_idxs") {
            Some(Value::Array(idxs)) => idxs
                .iter()
                .map(|v| match v.as_i64() {
                    Some(i) if (0..i64::from(layers)).contains(&i) => Ok(i as i32),
                    _ => Err(error(
                        "full_attn_idxs",
                        format!("{v} is not a layer of {layers}"),
                    )),
                })
                .collect(),
            None | Some(Value::Null) => Err(error(
                "layer_types",
                "missing, and so is full_attn_idxs".into(),
            )),
            Some(v) => Err(error("full_attn_idxs", format!("not a list: {v}"))),
        },
        Some(v) => Err(error("layer_types", format!("not a list: {v}"))),
    }
}

/// Python: lfm2's `Attention`: grouped-query attention with per-head RMSNorm of queries and
/// keys (`q_layernorm`, `k_layernorm`), RoPE, no biases, the output projection `out_proj`.
#[derive(Debug, Clone, TreeNode)]
pub struct Lfm2Attention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub out_proj: MaybeQuantizedLinear,
    pub q_layernorm: RMSNorm,
    pub k_layernorm: RMSNorm,
    pub rope: RotaryEmbedding,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
}

impl Lfm2Attention {
    /// Takes the layer's tensors under `path`.
    pub fn load(ck: &mut Checkpoint, path: &str, a: &Lfm2Args) -> crate::Result<Lfm2Attention> {
        let (d, h, kv) = (a.hidden_size, a.num_attention_heads, a.num_key_value_heads);
        let hd = a.head_dim;
        let p = |name: &str| format!("{path}.{name}");
        Ok(Lfm2Attention {
            q_proj: ck.linear(&p("q_proj"), d, h * hd, false)?,
            k_proj: ck.linear(&p("k_proj"), d, kv * hd, false)?,
            v_proj: ck.linear(&p("v_proj"), d, kv * hd, false)?,
            out_proj: ck.linear(&p("out_proj"), h * hd, d, false)?,
            q_layernorm: ck.rms_norm(&p("q_layernorm"), hd, a.norm_eps)?,
            k_layernorm: ck.rms_norm(&p("k_layernorm"), hd, a.norm_eps)?,
            rope: a.rope.clone(),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
            scale: (hd as f64).powf(-0.5) as f32,
        })
    }

    fn parts(&self) -> AttentionParts<'_> {
        AttentionParts {
            q_proj: &self.q_proj,
            k_proj: &self.k_proj,
            v_proj: &self.v_proj,
            o_proj: &self.out_proj,
            q_norm: Some(&self.q_layernorm),
            k_norm: Some(&self.k_layernorm),
            rope: Some(&self.rope),
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
            scale: self.scale,
            window: None,
            output_gate: false,
            sinks: None,
        }
    }
}

impl TokenMixer for Lfm2Attention {
    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let mask = ctx.masks.for_window(None);
        let fused = ctx.kernels.fused_decode_attention;
        self.parts().forward(x, ctx.rows, mask, fused, cache)
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        let (kv, hd) = (self.n_kv_heads, self.head_dim);
        LayerCache::attention(batch, kv, hd, None, capacity, dtype)
    }
}

/// Python: lfm2's `MLP`: `w2(swiglu(w1(x), w3(x)))`.
#[derive(Debug, Clone, TreeNode)]
pub struct Lfm2Mlp {
    pub w1: MaybeQuantizedLinear,
    pub w3: MaybeQuantizedLinear,
    pub w2: MaybeQuantizedLinear,
}

impl Lfm2Mlp {
    /// Takes the layer's tensors under `path`.
    pub fn load(ck: &mut Checkpoint, path: &str, a: &Lfm2Args) -> crate::Result<Lfm2Mlp> {
        let (d, ff) = (a.hidden_size, a.ff_dim);
        Ok(Lfm2Mlp {
            w1: ck.linear(&format!("{path}.w1"), d, ff, false)?,
            w3: ck.linear(&format!("{path}.w3"), d, ff, false)?,
            w2: ck.linear(&format!("{path}.w2"), ff, d, false)?,
        })
    }
}

impl Forward for Lfm2Mlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.w2
            .forward(&swiglu(&self.w1.forward(x)?, &self.w3.forward(x)?)?)
    }
}

/// Python: `Lfm2DecoderLayer`: `h = x + operator(operator_norm(x))`, then `h +
/// feed_forward(ffn_norm(h))`, where the operator is `self_attn` in a layer of
/// `full_attn_idxs` and `conv` in the others. As in mlx_lm's module, a layer has exactly one
/// of the two fields (the other is `None`, so the parameter paths are mlx_lm's). The
/// feed-forward block is lfm2's [`Lfm2Mlp`], or lfm2_moe's dense or sparse block.
#[derive(Debug, Clone, TreeNode)]
pub struct Lfm2DecoderLayer<F = Lfm2Mlp> {
    pub self_attn: Option<Lfm2Attention>,
    pub conv: Option<ShortConv>,
    pub feed_forward: F,
    pub operator_norm: RMSNorm,
    pub ffn_norm: RMSNorm,
}

/// A layer's operator, whichever field holds it.
enum Operator<'a> {
    Attention(&'a Lfm2Attention),
    Conv(&'a ShortConv),
}

impl Lfm2DecoderLayer {
    /// Takes layer `i`'s tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        i: i32,
        a: &Lfm2Args,
    ) -> crate::Result<Lfm2DecoderLayer> {
        Self::load_with(ck, path, i, a, |ck, path| Lfm2Mlp::load(ck, path, a))
    }
}

impl<F> Lfm2DecoderLayer<F> {
    /// Takes layer `i`'s tensors under `path`, its feed-forward block built by
    /// `feed_forward` from its path (`{path}.feed_forward`).
    pub fn load_with(
        ck: &mut Checkpoint,
        path: &str,
        i: i32,
        a: &Lfm2Args,
        feed_forward: impl FnOnce(&mut Checkpoint, &str) -> crate::Result<F>,
    ) -> crate::Result<Lfm2DecoderLayer<F>> {
        let (d, eps) = (a.hidden_size, a.norm_eps);
        let attention = a.full_attn_idxs.contains(&i);
        Ok(Lfm2DecoderLayer {
            self_attn: attention
                .then(|| Lfm2Attention::load(ck, &format!("{path}.self_attn"), a))
                .transpose()?,
            conv: (!attention)
                .then(|| {
                    ShortConv::load(ck, &format!("{path}.conv"), d, a.conv_l_cache, a.conv_bias)
                })
                .transpose()?,
            feed_forward: feed_forward(ck, &format!("{path}.feed_forward"))?,
            operator_norm: ck.rms_norm(&format!("{path}.operator_norm"), d, eps)?,
            ffn_norm: ck.rms_norm(&format!("{path}.ffn_norm"), d, eps)?,
        })
    }

    fn operator(&self) -> Result<Operator<'_>> {
        match (&self.self_attn, &self.conv) {
            (Some(attention), None) => Ok(Operator::Attention(attention)),
            (None, Some(conv)) => Ok(Operator::Conv(conv)),
            _ => Err(wrong_input(
                "an lfm2 layer has either self_attn or conv, never both or neither",
            )),
        }
    }
}

impl<F: Forward + TreeNode + 'static> Layer for Lfm2DecoderLayer<F> {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let normed = self.operator_norm.forward(x)?;
        let r = match self.operator()? {
            Operator::Attention(attention) => attention.forward(&normed, ctx, cache)?,
            Operator::Conv(conv) => TokenMixer::forward(conv, &normed, ctx, cache)?,
        };
        let h = ops::add(x, &r)?;
        let r = self.feed_forward.forward(&self.ffn_norm.forward(&h)?)?;
        ops::add(&h, &r)
    }

    /// A key/value cache for an attention layer, the convolution's state for the others
    /// (Python: `KVCache()` / `ArraysCache(size=1)`).
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match self.operator()? {
            Operator::Attention(attention) => attention.make_cache(batch, capacity, dtype),
            Operator::Conv(conv) => conv.make_cache(batch, capacity, dtype),
        }
    }
}

/// Python: `Lfm2Model` (lfm2's and lfm2_moe's).
#[derive(Debug, Clone, TreeNode)]
pub struct Lfm2Model<F = Lfm2Mlp> {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<Lfm2DecoderLayer<F>>,
    /// The final norm (mlx_lm's name).
    pub embedding_norm: RMSNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

impl<F: Forward + TreeNode + 'static> Lfm2Model<F> {
    /// Takes the embedding, the layers (each built by `layer` from its path and index) and
    /// the final norm.
    pub fn load(
        ck: &mut Checkpoint,
        a: &Lfm2Args,
        kernels: KernelOptions,
        mut layer: impl FnMut(&mut Checkpoint, &str, i32) -> crate::Result<Lfm2DecoderLayer<F>>,
    ) -> crate::Result<Lfm2Model<F>> {
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            layers.push(layer(ck, &format!("model.layers.{i}"), i)?);
        }
        Ok(Lfm2Model {
            embed_tokens: ck.embedding("model.embed_tokens", a.vocab_size, a.hidden_size)?,
            layers,
            embedding_norm: ck.rms_norm("model.embedding_norm", a.hidden_size, a.norm_eps)?,
            kernels,
        })
    }

    /// The logits of `inputs` through the tied output head (Python: `Model.__call__`).
    pub fn logits(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        let rows = Rows::of(inputs)?;
        let h = self.embed_tokens.forward(&rows.fold(inputs)?)?;
        let h = forward_layers(&self.layers, h, rows, self.kernels, cache)?;
        let h = self.embedding_norm.forward(&h)?;
        rows.unfold(&self.embed_tokens.as_linear(&h)?)
    }

    /// A key/value cache per attention layer, a convolution state per other layer.
    pub fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        make_layer_caches(&self.layers, batch, capacity, self.dtype())
    }

    pub fn dtype(&self) -> Dtype {
        embedding_dtype(&self.embed_tokens, self)
    }

    pub fn vocab_size(&self) -> i32 {
        embedding_vocab_size(&self.embed_tokens)
    }
}

/// Python: `mlx_lm.models.lfm2.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Lfm2 {
    pub model: Lfm2Model,
}

impl Lfm2 {
    /// Python: `Model.sanitize`: a Hugging Face checkpoint's convolution weights `[C, 1, K]`
    /// become `[C, K, 1]`.
    pub fn sanitize(ck: &mut Checkpoint) -> crate::Result<()> {
        ck.weights_mut().map(|k, v| {
            let s = v.shape();
            if k.contains("conv.weight") && s.len() == 3 && s[2] > s[1] {
                return ops::swapaxes(v, 1, 2).map(Some);
            }
            Ok(None)
        })
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Lfm2> {
        let a = Lfm2Args::from_config(config)?;
        Self::sanitize(ck)?;
        ck.cast(options.dtype, |_| false)?;
        Ok(Lfm2 {
            model: Lfm2Model::load(ck, &a, options.kernels, |ck, path, i| {
                Lfm2DecoderLayer::load(ck, path, i, &a)
            })?,
        })
    }
}

impl LanguageModel for Lfm2 {
    fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        self.model.logits(inputs, cache)
    }

    fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        self.model.make_cache(batch, capacity)
    }

    fn dtype(&self) -> Dtype {
        self.model.dtype()
    }

    fn vocab_size(&self) -> i32 {
        self.model.vocab_size()
    }

    fn model_type(&self) -> &str {
        "lfm2"
    }
}
