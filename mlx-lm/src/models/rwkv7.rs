//! `rwkv7` (Python: `mlx_lm.models.rwkv7`): RWKV-7 "Goose", a stack of time-mix (WKV7) and
//! channel-mix layers ([`blocks::rwkv7`](crate::blocks::rwkv7)) without attention, under
//! `model.*` (`embeddings`, `layers`, a LayerNorm `norm`), the first layer's values handed
//! on to every later one.
//!
//! One reading of the config follows flash-linear-attention (whose `RWKV7Config` the
//! released checkpoints carry; transformers has no RWKV-7) where mlx_lm departs from it: the
//! per-head output norm's eps is `head_dim * norm_eps` (mlx_lm: 64e-5 whatever the head
//! size; the same for the released models, all of heads of 64 with norm_eps 1e-5).

use mlx_nn::{Forward, LayerNorm, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::rows::arrays_entry;
use crate::blocks::rwkv7::{make_cache, ChannelMix, Rwkv7Config, TimeMix};
use crate::blocks::{Layer, LayerContext, Stack, StackNames};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::quantization::QuantParams;

/// Python: rwkv7's `ModelArgs`.
#[derive(Debug, Clone)]
pub struct Rwkv7Args {
    pub vocab_size: i32,
    pub num_hidden_layers: i32,
    pub norm_eps: f32,
    pub tie_word_embeddings: bool,
    pub layer: Rwkv7Config,
}

impl Rwkv7Args {
    /// Reads the config (Python: `ModelArgs.from_dict`). Audited against
    /// flash-linear-attention's `RWKV7Config`, the class the released checkpoints name.
    pub fn from_config(c: &ModelConfig) -> crate::Result<Rwkv7Args> {
        let hidden = c.dim("hidden_size")?;
        let head_dim = c.dim("head_dim")?;
        if head_dim <= 0 || hidden % head_dim != 0 {
            return Err(invalid(
                c.path(),
                &c.key("head_dim"),
                &format!("{head_dim} does not divide hidden_size {hidden}"),
            ));
        }
        // The head count follows from the two (a stated one must agree).
        c.require("num_heads", &format!("{}", hidden / head_dim), |v| {
            v.as_i64() == Some(i64::from(hidden / head_dim))
        })?;
        let norm_eps = c.float_or("norm_eps", 1e-5)?;
        // The channel mix is `relu(x)²` (flash-linear-attention's "sqrelu").
        c.require("hidden_act", r#""sqrelu""#, |v| v == "sqrelu")?;
        // The first layer's extra input LayerNorm (`pre_norm`), and LayerNorms with biases:
        // what mlx_lm builds, whatever the config says.
        c.require("norm_first", "true", |v| v == &Value::Bool(true))?;
        c.require("norm_bias", "true", |v| v == &Value::Bool(true))?;
        // Hybrid attention layers among the RWKV ones: not in mlx_lm.
        c.require("attn", "null (no attention layers)", |_| false)?;
        // mlx_lm takes intermediate_size as written (flash-linear-attention derives it from
        // hidden_ratio when it is missing; the released configs write both).
        c.declare_neutral(&["hidden_ratio"]);
        // Which of flash-linear-attention's kernels and fused losses train it, the
        // initialization, the context it was trained for: none changes the logits.
        c.declare_neutral(&[
            "attn_mode",
            "fuse_norm",
            "fuse_cross_entropy",
            "initializer_range",
            "max_position_embeddings",
        ]);
        Ok(Rwkv7Args {
            vocab_size: c.dim("vocab_size")?,
            num_hidden_layers: c.dim("num_hidden_layers")?,
            norm_eps: norm_eps as f32,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            layer: Rwkv7Config {
                hidden_size: hidden,
                intermediate_size: c.dim("intermediate_size")?,
                head_dim,
                a_low_rank_dim: c.dim("a_low_rank_dim")?,
                v_low_rank_dim: c.dim("v_low_rank_dim")?,
                gate_low_rank_dim: c.dim("gate_low_rank_dim")?,
                decay_low_rank_dim: c.dim("decay_low_rank_dim")?,
                g_norm_eps: (f64::from(head_dim) * norm_eps) as f32,
            },
        })
    }
}

/// Python: `Rwkv7Layer`: `h = x + attn(attn_norm(x)); h + ffn(ffn_norm(h))`, the first
/// layer's input normalized first (`pre_norm`).
#[derive(Debug, Clone, TreeNode)]
pub struct Rwkv7Layer {
    pub pre_norm: Option<LayerNorm>,
    pub attn: TimeMix,
    pub ffn: ChannelMix,
    pub attn_norm: LayerNorm,
    pub ffn_norm: LayerNorm,
}

impl Layer for Rwkv7Layer {
    /// `v_first`: the first layer's values.
    type Carry = Option<Array>;

    fn forward(
        &self,
        x: &Array,
        v_first: &mut Option<Array>,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let mut cache = arrays_entry(cache, "an RWKV-7 layer")?;
        let x = ctx.rows.unfold(x)?;
        let x = match &self.pre_norm {
            Some(norm) => norm.forward(&x)?,
            None => x,
        };
        let mask = match cache.as_deref() {
            Some(c) => c.make_mask(ctx.rows.len)?,
            None => None,
        };
        let h = self.attn.forward(
            &self.attn_norm.forward(&x)?,
            v_first,
            mask.as_ref(),
            cache.as_deref_mut(),
        )?;
        let h = ops::add(&x, &h)?;
        let out = ops::add(
            &h,
            &self
                .ffn
                .forward(&self.ffn_norm.forward(&h)?, cache.as_deref_mut())?,
        )?;
        if let Some(c) = cache {
            c.advance(ctx.rows.len)?;
        }
        ctx.rows.fold(&out)
    }

    /// Python: `ArraysCache(size=3)`.
    fn make_cache(&self, batch: i32, _capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Arrays(make_cache(&self.attn, batch, dtype)?))
    }
}

/// The names of rwkv7's stack: `embeddings`, `norm`.
#[derive(Debug, Clone, Copy)]
pub enum Rwkv7Names {}

impl StackNames for Rwkv7Names {
    const NAME: &'static str = "Rwkv7Model";
    const EMBEDDING: &'static str = "embeddings";
    const NORM: &'static str = "norm";
}

/// Python: `Rwkv7Model`: `embeddings`, `layers`, `norm` (a LayerNorm).
pub type Rwkv7Model = Stack<Rwkv7Layer, LayerNorm, Rwkv7Names>;

/// Python: `mlx_lm.models.rwkv7.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Rwkv7 {
    pub model: Rwkv7Model,
    /// The output head when not tied to the embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Rwkv7 {
    /// The config as this architecture reads it.
    pub fn args(c: &ModelConfig) -> crate::Result<Rwkv7Args> {
        Rwkv7Args::from_config(c)
    }

    /// Python: `Model.sanitize`: `k_k`, `k_a` and the per-head norm's weight and bias, flat
    /// `[hidden]` in flash-linear-attention's checkpoints, become `[heads, head_dim]`.
    pub fn sanitize(ck: &mut Checkpoint, a: &Rwkv7Args) -> crate::Result<()> {
        let (d, p) = (a.layer.hidden_size, a.layer.head_dim);
        ck.weights_mut().map(|k, v| {
            let per_head = k.contains("k_k") || k.contains("k_a") || k.contains("g_norm");
            if per_head && v.shape() != [d / p, p].as_slice() && v.size() == d as usize {
                return ops::reshape(v, &[d / p, p]).map(Some);
            }
            Ok(None)
        })
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Rwkv7> {
        let a = Rwkv7Args::from_config(config)?;
        Self::sanitize(ck, &a)?;
        ck.set_quant_predicate(lora_up_and_embedding_at_8_bits);
        ck.cast(options.dtype, |_| false)?;
        let (hidden, eps) = (a.layer.hidden_size, a.norm_eps);
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let path = format!("model.layers.{i}");
            let norm = |ck: &mut Checkpoint, name: &str| {
                ck.layer_norm(&format!("{path}.{name}"), hidden, eps, true)
            };
            layers.push(Rwkv7Layer {
                pre_norm: (i == 0).then(|| norm(ck, "pre_norm")).transpose()?,
                attn: TimeMix::load(ck, &format!("{path}.attn"), i, &a.layer)?,
                ffn: ChannelMix::load(ck, &format!("{path}.ffn"), &a.layer)?,
                attn_norm: norm(ck, "attn_norm")?,
                ffn_norm: norm(ck, "ffn_norm")?,
            });
        }
        Ok(Rwkv7 {
            model: Stack::load_around(
                ck,
                "model",
                (a.vocab_size, hidden),
                layers,
                |ck, path| ck.layer_norm(path, hidden, eps, true),
                options.kernels,
            )?,
            lm_head: (!a.tie_word_embeddings)
                .then(|| ck.linear("lm_head", hidden, a.vocab_size, false))
                .transpose()?,
        })
    }
}

/// Python: rwkv7's `quant_predicate`: the LoRAs' up-projections (`lora.2`) and the embedding
/// at 8 bits (its `{"bits": 8}`: the group size `to_quantized` defaults to, 64).
fn lora_up_and_embedding_at_8_bits(path: &str) -> Option<QuantParams> {
    (path.contains("lora.2") || path.contains("embeddings")).then_some(QuantParams::affine(64, 8))
}

crate::models::base::stack_language_model!(Rwkv7, model, "rwkv7");
