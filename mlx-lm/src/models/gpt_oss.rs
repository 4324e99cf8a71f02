//! `gpt_oss` (Python: `mlx_lm.models.gpt_oss`): OpenAI's GPT-OSS (gpt-oss-20b, gpt-oss-120b).
//! A pre-norm decoder whose attention has biases on all four projections and a learned
//! attention sink per query head (a logit that joins every softmax, [`Attention::sinks`]),
//! sliding over the last `sliding_window` positions in alternate layers (`layer_types`) with
//! one yarn rope for all; and in every layer a mixture of experts: a biased linear router,
//! the top k of its logits softmaxed among themselves (in float32, `precise=True`), and
//! SwiGLU experts with biases and GPT-OSS's clamped activation ([`swiglu_oai`]).
//!
//! The checkpoints ship their experts in MXFP4 (`quantization_config.quant_method: mxfp4`):
//! each layer's `experts.gate_up_proj_blocks` / `_scales` (gate and up rows interleaved) and
//! `down_proj_blocks` / `_scales`, with float biases beside them; [`GptOss::sanitize`] turns
//! them into mlx_lm's quantized switch layers as mlx_lm's `sanitize` does.
//!
//! Departures from mlx_lm 0.32.2, after transformers 5.23 (`GptOssConfig`, `GptOssModel`):
//! without `layer_types` every layer alternates from a sliding first one, however many
//! layers (mlx_lm's default list covers `2 * (n // 2)` layers and silently runs only those);
//! any mix of layer kinds runs (mlx_lm looks up the first of each kind and raises without
//! one); the yarn rope honours `rope_scaling.truncate: false` (the released configs' value:
//! the correction range unrounded, as transformers and OpenAI's reference compute it; mlx_lm
//! always rounds it); `swiglu_alpha` and `swiglu_limit` are read (mlx_lm: 1.702 and 7
//! always, the released values).

use mlx_nn::{Forward, MaybeQuantizedLinear, ShardGroup};
use mlx_rs::ops;
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::decoder::ChannelMixer;
use crate::blocks::mlp::swiglu_oai;
use crate::blocks::moe::{shard_experts, sharded_input, sharded_output, Router};
use crate::blocks::{
    load_lm_head, rope_theta, Attention, DecoderModel, RotaryEmbedding, SwitchGlu,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::base::DecoderArgs;
use crate::models::sparse::expert_counts;
use crate::quantization::QuantParams;

/// gpt_oss's reading of a config.
#[derive(Debug, Clone)]
pub struct GptOssArgs {
    /// The decoder's sizes, rope, per-layer sliding and window.
    pub decoder: DecoderArgs,
    pub num_local_experts: i32,
    pub num_experts_per_tok: i32,
    /// The experts' activation: `gate * sigmoid(swiglu_alpha * gate)` (1.702), clamped at
    /// `swiglu_limit` (7).
    pub swiglu_alpha: f32,
    pub swiglu_limit: f32,
}

/// Python: gpt_oss's `MLPBlock`: `router` (a biased linear over the experts), `experts` (a
/// `SwitchGLU` with biases and the `SwigluOAI` activation).
#[derive(Debug, Clone, TreeNode)]
pub struct GptOssMlp {
    pub router: MaybeQuantizedLinear,
    pub experts: SwitchGlu,
    #[tree(static)]
    pub top_k: i32,
    #[tree(static)]
    pub swiglu_alpha: f32,
    #[tree(static)]
    pub swiglu_limit: f32,
    /// The group the experts are split over, when they are ([`ChannelMixer::shard`]).
    #[tree(static)]
    pub sharding_group: Option<ShardGroup>,
}

impl GptOssMlp {
    fn load(ck: &mut Checkpoint, path: &str, a: &GptOssArgs) -> crate::Result<Self> {
        let d = &a.decoder;
        let e = a.num_local_experts;
        let p = |name: &str| format!("{path}.{name}");
        Ok(GptOssMlp {
            router: ck.linear(&p("router"), d.hidden_size, e, true)?,
            experts: SwitchGlu::load(
                ck,
                &p("experts"),
                d.hidden_size,
                d.intermediate_size,
                e,
                true,
            )?,
            top_k: a.num_experts_per_tok,
            swiglu_alpha: a.swiglu_alpha,
            swiglu_limit: a.swiglu_limit,
            sharding_group: None,
        })
    }
}

impl Forward for GptOssMlp {
    /// `mlx_topk` of the router's logits (`argpartition(g, kth=-k)[..., -k:]`, their
    /// logits), a precise softmax over those k, the experts, their weighted sum.
    fn forward(&self, x: &Array) -> Result<Array> {
        let group = self.sharding_group.as_ref();
        let x = &sharded_input(group, x)?;
        let g = self.router.forward(x)?;
        let (indices, weights) = Router::TopKLastSoftmax.route(&g, self.top_k)?;
        let (alpha, limit) = (self.swiglu_alpha, self.swiglu_limit);
        let y = self
            .experts
            .forward_with(x, &indices, |up, gate| swiglu_oai(gate, up, alpha, limit))?;
        let y = ops::multiply(&y, &ops::expand_dims(&weights, -1)?)?.sum(-2, false)?;
        sharded_output(group, y)
    }
}

impl ChannelMixer for GptOssMlp {
    /// Python (gpt_oss's `shard`): every expert keeps this process's slice of its hidden
    /// features (the down projection's bias divided by the group size), the router whole,
    /// and the block sums its output over `group`.
    fn shard(&mut self, group: &mlx_rs::distributed::Group) -> Result<()> {
        let (experts, _, sharding_group) = shard_experts(&self.experts, None, group)?;
        self.experts = experts;
        self.sharding_group = Some(sharding_group);
        Ok(())
    }
}

/// Python: `mlx_lm.models.gpt_oss.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct GptOss {
    pub model: DecoderModel<Attention, GptOssMlp>,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

/// Python: gpt_oss's `quant_predicate`: the routers at 8 bits in groups of 64, whatever the
/// rest is quantized to.
fn router_at_8_bits(path: &str) -> Option<QuantParams> {
    path.ends_with("router")
        .then_some(QuantParams::affine(64, 8))
}

impl GptOss {
    /// Python: gpt_oss's `ModelArgs`, over every key of transformers' `GptOssConfig`:
    /// `head_dim` 64, `num_key_value_heads` 8 (dividing the query heads), `sliding_window` 128
    /// and `rope_theta` 150000 by default (mlx_lm's and transformers'),
    /// `attention_bias` true only (mlx_lm's layers always have the biases), an untied head
    /// (mlx_lm always has one), `layer_types` alternating from a sliding layer by default.
    pub fn args(c: &ModelConfig) -> crate::Result<GptOssArgs> {
        // Training-only: the router's auxiliary loss and whether the forward returns its
        // logits.
        c.declare_neutral(&["router_aux_loss_coef", "output_router_logits"]);
        // OpenAI's own names in the released configs: the context the yarn rope was
        // trained at (`rope_scaling.original_max_position_embeddings` says it again) and
        // the experts per token (checked against `num_experts_per_tok` below).
        c.declare_neutral(&["initial_context_length"]);
        c.require_value("attention_bias", true)?;
        c.require_value("tie_word_embeddings", false)?;
        let decoder = DecoderArgs::common(
            c,
            |_, _| c.dim_or("head_dim", Some(64)),
            |head_dim| {
                RotaryEmbedding::from_config(c, head_dim, rope_theta(c, Some(150000.0))?, false)
            },
            |_| c.dim_or("num_key_value_heads", Some(8)),
        )?;
        if decoder.num_attention_heads % decoder.num_key_value_heads != 0 {
            return Err(invalid(
                c.path(),
                &c.key("num_key_value_heads"),
                &format!(
                    "{} key/value heads do not divide {} query heads",
                    decoder.num_key_value_heads, decoder.num_attention_heads
                ),
            ));
        }
        let layers = decoder.num_hidden_layers;
        let sliding = match c.get("layer_types") {
            None | Some(Value::Null) => (0..layers).map(|i| i % 2 == 0).collect(),
            _ => DecoderArgs::sliding_layers(c, layers, false)?,
        };
        let decoder = DecoderArgs {
            qkv_bias: true,
            o_bias: true,
            tie_word_embeddings: false,
            sliding,
            sliding_window: Some(c.dim_or("sliding_window", Some(128))?),
            ..decoder
        };
        let (top_k, experts) = expert_counts(c, "num_local_experts")?;
        if let Some(v) = c.get("experts_per_token") {
            if v.as_i64() != Some(top_k as i64) {
                return Err(invalid(
                    c.path(),
                    &c.key("experts_per_token"),
                    &format!("{v}, but num_experts_per_tok is {top_k}"),
                ));
            }
        }
        c.declare_neutral(&["experts_per_token"]);
        let positive = |key: &str, default: f64| -> crate::Result<f32> {
            let v = c.float_or(key, default)?;
            if v > 0.0 && v.is_finite() {
                Ok(v as f32)
            } else {
                Err(invalid(
                    c.path(),
                    &c.key(key),
                    &format!("{v} is not a positive number"),
                ))
            }
        };
        Ok(GptOssArgs {
            decoder,
            num_local_experts: experts,
            num_experts_per_tok: top_k,
            swiglu_alpha: positive("swiglu_alpha", 1.702)?,
            swiglu_limit: positive("swiglu_limit", 7.0)?,
        })
    }

    /// Python: gpt_oss's `sanitize`. A checkpoint with any `gate_proj.weight` is in
    /// mlx_lm's layout and passes unchanged. Otherwise each layer's experts are Hugging
    /// Face's: `experts.gate_up_proj_blocks` (MXFP4 bytes `[E, 2I, in / 32, 16]`, read as
    /// `uint32` words `[E, 2I, in / 8]`) and `_scales`, whose even rows are the gate's and odd
    /// rows the up projection's, `gate_up_proj_bias` split the same way, and `down_proj_blocks`
    /// / `_scales` / `_bias`. A float `gate_up_proj` (a dequantized checkpoint, stored
    /// `[E, in, 2I]` for transformers' `x @ W`) is an error: mlx_lm maps it to keys its model
    /// does not have.
    pub fn sanitize(ck: &mut Checkpoint) -> crate::Result<()> {
        let keys: Vec<String> = ck
            .weights_mut()
            .keys()
            .iter()
            .map(|k| k.to_string())
            .collect();
        if keys.iter().any(|k| k.contains("gate_proj.weight")) {
            return Ok(());
        }
        for key in keys {
            if !key.contains("gate_up_proj") && !key.contains("down_proj") {
                continue;
            }
            let file = ck
                .weights_mut()
                .file_of(&key)
                .map(|p| p.to_path_buf())
                .unwrap_or_else(|| ck.dir().to_path_buf());
            let mlx = |source| crate::Error::Mlx {
                path: file.clone(),
                source,
            };
            let (name, param) = if let Some(base) = key.strip_suffix("_blocks") {
                (base.to_string(), "weight")
            } else if let Some(base) = key.strip_suffix("_scales") {
                (base.to_string(), "scales")
            } else if let Some(base) = key.strip_suffix("_bias") {
                (base.to_string(), "bias")
            } else if key.ends_with("experts.gate_up_proj") || key.ends_with("experts.down_proj") {
                return Err(invalid(
                    &file,
                    &key,
                    "float experts in Hugging Face's layout are not supported by gpt_oss \
                     (mlx_lm 0.32.2 cannot load them either): the released MXFP4 \
                     `_blocks` / `_scales`, or mlx_lm's layout",
                ));
            } else {
                continue;
            };
            let Some(v) = ck.weights_mut().take(&key) else {
                continue;
            };
            let v = if param == "weight" {
                ops::view(&v, Dtype::Uint32)
                    .and_then(|w| w.flatten(-2, None))
                    .map_err(mlx)?
            } else {
                v
            };
            if let Some(base) = name.strip_suffix("gate_up_proj") {
                // Rows (the bias: entries) alternate gate, up, gate, ...
                // `v[..., start::2, :]` (the bias: `v[..., start::2]`), made contiguous.
                let axis = v.ndim().saturating_sub(if param == "bias" { 1 } else { 2 });
                let half = |start: i32| -> Result<Array> {
                    let mut lo = vec![0; v.ndim()];
                    let mut strides = vec![1; v.ndim()];
                    lo[axis] = start;
                    strides[axis] = 2;
                    let rows = ops::slice_strided(&v, &lo, v.shape(), &strides[..])?;
                    ops::contiguous(&rows, false)
                };
                let (gate, up) = (half(0).map_err(mlx)?, half(1).map_err(mlx)?);
                let w = ck.weights_mut();
                w.insert(format!("{base}gate_proj.{param}"), gate, file.clone());
                w.insert(format!("{base}up_proj.{param}"), up, file.clone());
            } else {
                ck.weights_mut()
                    .insert(format!("{name}.{param}"), v, file.clone());
            }
        }
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors (the MXFP4 words and scales keep
    /// their integer types), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<GptOss> {
        let args = Self::args(config)?;
        args.decoder.sanitize(ck);
        Self::sanitize(ck)?;
        ck.cast(options.dtype, |_| false)?;
        ck.set_quant_predicate(router_at_8_bits);
        let d = &args.decoder;
        let model = DecoderModel::load(
            ck,
            "model",
            d.stack(),
            options.kernels,
            |ck, path, i| load_attention(ck, &format!("{path}.self_attn"), i, d),
            |ck, path, _| GptOssMlp::load(ck, path, &args),
        )?;
        let lm_head = load_lm_head(ck, "lm_head", d.stack(), false)?;
        Ok(GptOss { model, lm_head })
    }
}

/// Python: gpt_oss's `AttentionBlock`: the shared attention with biased q/k/v/o
/// projections, the yarn rope, a window in the sliding layers, and `sinks`, one learned logit
/// per query head.
fn load_attention(
    ck: &mut Checkpoint,
    path: &str,
    i: i32,
    d: &DecoderArgs,
) -> crate::Result<Attention> {
    let mut attention = Attention::load(ck, path, &d.attention(i))?;
    attention.sinks = Some(ck.array(&format!("{path}.sinks"), &[d.num_attention_heads])?);
    // Python: `1 / math.sqrt(head_dim)`, a Python float rounded once to float32 (llama's
    // `head_dim**-0.5` may differ from it in the last bit).
    attention.scale = (1.0 / f64::from(d.head_dim).sqrt()) as f32;
    Ok(attention)
}

crate::models::base::stack_language_model!(GptOss, model, "gpt_oss");
