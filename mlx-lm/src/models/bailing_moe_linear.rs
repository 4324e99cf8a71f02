//! `bailing_moe_linear` (Python: `mlx_lm.models.bailing_moe_linear`; inclusionAI's
//! Ling/Ring-linear-2.0 models): in each group of `layer_group_size` layers the last is
//! softmax attention (a key/value cache), the others linear attention with a recurrent state
//! ([`LinearAttention`], an `ArraysCache`), and the layers from `num_hidden_layers //
//! layer_group_size * layer_group_size` on are all attention. Both sit under the layer's
//! `attention`, both project with one fused `query_key_value` and write through `dense`.
//! The first `first_k_dense_replace` layers have a dense MLP, the others bailing's sparse
//! block ([`BailingMoe`]: grouped router with sigmoid or softmax scores, optional expert
//! bias, `routed_scaling_factor`, shared experts). Parameter paths are mlx_lm's:
//! `model.word_embeddings`, `model.layers.{i}.{attention, mlp, input_layernorm,
//! post_attention_layernorm}`, `model.norm`, `lm_head`.
//!
//! The linear layers rotate their queries and keys at the model's position, which mlx_lm
//! reads off the first attention layer's cache (`cache[layer_group_size - 1].offset`).

use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::attention::attend;
use crate::blocks::bailing::{BailingLayer, BailingStack, DenseLayers, ATTENTION};
use crate::blocks::decoder::{load_lm_head, StackConfig, TokenMixer};
use crate::blocks::rows::merge_heads;
use crate::blocks::{
    split_qkv, BailingMoe, BailingMoeConfig, GlaForm, GroupLimit, GroupRouting, GroupScoring,
    LayerContext, LinearAttention, LinearAttentionConfig, RotaryEmbedding,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::base::stack_language_model;
use crate::models::sparse::{stack_experts, SAME_NAMES};
use crate::quantization::QuantParams;

/// Python: bailing_moe_linear's `ModelArgs`, as the model reads it.
#[derive(Debug, Clone)]
pub struct BailingMoeLinearArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: i32,
    pub rms_norm_eps: f32,
    pub attention: BailingAttentionConfig,
    pub linear: LinearAttentionConfig,
    /// Per layer: softmax attention (Python: `DecoderLayer.is_global`).
    pub is_global: Vec<bool>,
    /// The dense MLP of the first `first_k_dense_replace` layers.
    pub dense: DenseLayers,
    pub moe: BailingMoeConfig,
    pub tie_word_embeddings: bool,
    pub norm_head: bool,
}

/// What a [`BailingAttention`] layer is.
#[derive(Debug, Clone, PartialEq)]
pub struct BailingAttentionConfig {
    pub hidden_size: i32,
    pub num_heads: i32,
    pub num_kv_heads: i32,
    pub head_dim: i32,
    pub qkv_bias: bool,
    pub o_bias: bool,
    pub qk_norm: Option<f32>,
    pub rope: RotaryEmbedding,
}

/// The parts of the config both bailing hybrids read alike: the MoE block's settings.
pub(crate) fn bailing_moe_config(
    c: &ModelConfig,
    hidden: i32,
    use_bias: bool,
) -> crate::Result<BailingMoeConfig> {
    let num_experts = c.dim("num_experts")?;
    let expert_size = c.dim("moe_intermediate_size")?;
    // mlx_lm reads `moe_router_enable_routed_scaling` and scales by
    // `routed_scaling_factor` whatever it says: only the value it computes is supported.
    c.require_value("moe_router_enable_routed_scaling", true)?;
    let scoring = match c.string("score_function")?.unwrap_or("softmax") {
        "softmax" => GroupScoring::Softmax,
        "sigmoid" => GroupScoring::Sigmoid,
        other => {
            return Err(invalid(
                c.path(),
                &c.key("score_function"),
                &format!("{other:?} (supported: \"softmax\", \"sigmoid\")"),
            ))
        }
    };
    // mlx_lm's defaults: one group, 4 kept (with one group, never read).
    let n_group = c.dim_or("n_group", Some(1))?;
    let topk_group = c.dim_or("topk_group", Some(4))?;
    let top_k = c.dim("num_experts_per_tok")?;
    if num_experts % n_group != 0 || (n_group > 1 && num_experts / n_group < 2) {
        return Err(invalid(
            c.path(),
            &c.key("n_group"),
            &format!("{n_group} groups of {num_experts} experts"),
        ));
    }
    if n_group > 1 && !(1..=n_group).contains(&topk_group) {
        return Err(invalid(
            c.path(),
            &c.key("topk_group"),
            &format!("{topk_group} of {n_group} groups"),
        ));
    }
    let kept = if n_group > 1 {
        topk_group * (num_experts / n_group)
    } else {
        num_experts
    };
    if top_k > kept {
        return Err(invalid(
            c.path(),
            &c.key("num_experts_per_tok"),
            &format!("{top_k} experts of {kept}"),
        ));
    }
    let shared = c.usize("num_shared_experts")?.unwrap_or(0) as i32;
    let shared_width = c.dim_or("moe_shared_expert_intermediate_size", Some(expert_size))?;
    let shared_size = (shared > 0 && c.bool_or("moe_router_enable_shared_expert", true)?)
        .then_some(shared_width * shared);
    Ok(BailingMoeConfig {
        hidden_size: hidden,
        expert_size,
        num_experts,
        bias: use_bias,
        expert_bias: c.bool_or("moe_router_enable_expert_bias", false)?,
        shared_size,
        routing: GroupRouting {
            top_k,
            n_group,
            topk_group,
            routed_scaling_factor: c.float_or("routed_scaling_factor", 1.0)? as f32,
            norm_topk_prob: c.bool("norm_topk_prob")?.ok_or_else(|| {
                invalid(
                    c.path(),
                    &c.key("norm_topk_prob"),
                    "missing (mlx_lm requires it)",
                )
            })?,
            group_limit: GroupLimit::SeveralGroups,
            denominator_eps: None,
            scoring,
        },
    })
}

impl BailingMoeLinearArgs {
    /// The stack's sizes.
    pub fn stack(&self) -> StackConfig {
        StackConfig {
            vocab_size: self.vocab_size,
            hidden_size: self.hidden_size,
            num_hidden_layers: self.num_hidden_layers,
            rms_norm_eps: self.rms_norm_eps,
        }
    }

    pub fn from_config(c: &ModelConfig) -> crate::Result<BailingMoeLinearArgs> {
        // mlx_lm builds RMSNorms whatever `use_rmsnorm` says, and never reads
        // `norm_softmax`: only the values it computes are supported.
        c.require_value("use_rmsnorm", true)?;
        c.require_value("norm_softmax", false)?;
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; the router's auxiliary loss is a training setting; max_window_layers and
        // use_sliding_window are never read by mlx_lm or by the released models' attention
        // (no window); the multi-token-prediction layers are not loaded (as in mlx_lm);
        // max_position_embeddings sizes transformers' rope cache (a scaled rope reads it
        // itself).
        c.declare_neutral(&[
            "max_position_embeddings",
            "attention_dropout",
            "embedding_dropout",
            "output_dropout",
            "initializer_range",
            "router_aux_loss_coef",
            "output_router_logits",
            "num_nextn_predict_layers",
            "mtp_loss_scaling_factor",
        ]);
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let layers = c.dim("num_hidden_layers")?;
        let group = c.dim("layer_group_size")?;
        let eps = c.float("rms_norm_eps")?.ok_or_else(|| {
            invalid(
                c.path(),
                &c.key("rms_norm_eps"),
                "missing (mlx_lm requires it)",
            )
        })? as f32;
        let theta = c.float("rope_theta")?.ok_or_else(|| {
            invalid(
                c.path(),
                &c.key("rope_theta"),
                "missing (mlx_lm requires it)",
            )
        })?;
        let partial = c.float_or("partial_rotary_factor", 1.0)?;
        let traditional = c.bool_or("rope_traditional", false)?;
        let use_bias = c.bool_or("use_bias", false)?;
        let qkv_bias = c.bool_or("use_qkv_bias", false)?;
        let qk_norm = c.bool_or("use_qk_norm", false)?.then_some(eps);
        c.head_dim_of(hidden, heads)?;
        let is_global: Vec<bool> = (0..layers)
            .map(|i| (i + 1) % group == 0 || i >= layers / group * group)
            .collect();
        // Python: the position comes off `cache[layer_group_size - 1]`, an attention layer
        // only when there is one at that index.
        if group > layers {
            return Err(invalid(
                c.path(),
                &c.key("layer_group_size"),
                &format!("{group} is more than the {layers} layers"),
            ));
        }
        let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
        let linear_dim = hidden / heads;
        let group_norm_size = c.dim("group_norm_size")?;
        if (heads * linear_dim) % group_norm_size != 0 {
            return Err(invalid(
                c.path(),
                &c.key("group_norm_size"),
                &format!(
                    "{group_norm_size} groups of {} features",
                    heads * linear_dim
                ),
            ));
        }
        let rope = |dims: i32| RotaryEmbedding::from_config(c, dims, theta, traditional);
        Ok(BailingMoeLinearArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            num_hidden_layers: layers,
            rms_norm_eps: eps,
            attention: BailingAttentionConfig {
                hidden_size: hidden,
                num_heads: heads,
                num_kv_heads: c.dim("num_key_value_heads")?,
                head_dim,
                qkv_bias,
                o_bias: use_bias,
                qk_norm,
                rope: rope((head_dim as f64 * partial) as i32)?,
            },
            linear: LinearAttentionConfig {
                hidden_size: hidden,
                num_heads: heads,
                head_dim: linear_dim,
                num_hidden_layers: layers,
                qkv_bias,
                o_bias: use_bias,
                qk_norm,
                rms_norm_eps: eps,
                group_norm_size,
                rope: rope((linear_dim as f64 * partial) as i32)?,
                form: GlaForm::PerToken,
            },
            is_global,
            dense: DenseLayers {
                first_k_dense_replace: c.usize("first_k_dense_replace")?.ok_or_else(|| {
                    invalid(
                        c.path(),
                        &c.key("first_k_dense_replace"),
                        "missing (mlx_lm requires it)",
                    )
                })? as i32,
                intermediate_size: c.dim("intermediate_size")?,
                use_bias,
            },
            moe: bailing_moe_config(c, hidden, use_bias)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            norm_head: c.bool_or("norm_head", false)?,
        })
    }
}

/// Python: bailing_moe_linear's `Attention`: fused `query_key_value` (`[q | k | v]`),
/// optional per-head RMSNorm of queries and keys, RoPE, attention with a key/value cache,
/// `dense`.
#[derive(Debug, Clone, TreeNode)]
pub struct BailingAttention {
    pub query_key_value: MaybeQuantizedLinear,
    pub dense: MaybeQuantizedLinear,
    pub query_layernorm: Option<RMSNorm>,
    pub key_layernorm: Option<RMSNorm>,
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

impl BailingAttention {
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        a: &BailingAttentionConfig,
    ) -> crate::Result<BailingAttention> {
        let (d, h, kv, hd) = (a.hidden_size, a.num_heads, a.num_kv_heads, a.head_dim);
        let p = |name: &str| format!("{path}.{name}");
        let norm = |ck: &mut Checkpoint, name: &str| -> crate::Result<Option<RMSNorm>> {
            a.qk_norm
                .map(|eps| ck.rms_norm(&p(name), hd, eps))
                .transpose()
        };
        Ok(BailingAttention {
            query_key_value: ck.linear(&p("query_key_value"), d, (h + 2 * kv) * hd, a.qkv_bias)?,
            dense: ck.linear(&p("dense"), h * hd, d, a.o_bias)?,
            query_layernorm: norm(ck, "query_layernorm")?,
            key_layernorm: norm(ck, "key_layernorm")?,
            rope: a.rope.clone(),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
            scale: (hd as f64).powf(-0.5) as f32,
        })
    }

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let (h, kv, hd) = (self.n_heads, self.n_kv_heads, self.head_dim);
        let (mut q, mut k, v) = split_qkv(&self.query_key_value.forward(x)?, ctx.rows, h, kv, hd)?;
        if let (Some(qn), Some(kn)) = (&self.query_layernorm, &self.key_layernorm) {
            q = qn.forward(&q)?;
            k = kn.forward(&k)?;
        }
        let out = attend(
            q,
            k,
            v,
            Some(&self.rope),
            self.scale,
            ctx.masks.for_window(None),
            None,
            ctx.kernels.fused_decode_attention,
            cache,
        )?;
        self.dense.forward(&merge_heads(&out)?)
    }
}

/// A layer's `attention`: softmax attention or linear attention.
// One per layer, built once at load: the variants' sizes cost nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, TreeNode)]
#[tree(transparent)]
pub enum BailingMixer {
    #[tree(other)]
    Attention(BailingAttention),
    Linear(LinearAttention),
}

impl TokenMixer for BailingMixer {
    const KEY: &'static str = ATTENTION;

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        match self {
            BailingMixer::Attention(a) => a.forward(x, ctx, cache),
            BailingMixer::Linear(l) => l.forward(x, ctx.rows, ctx.rope_offset, cache),
        }
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match self {
            BailingMixer::Attention(a) => {
                LayerCache::attention(batch, a.n_kv_heads, a.head_dim, None, capacity, dtype)
            }
            BailingMixer::Linear(l) => l.make_cache(batch, dtype),
        }
    }
}

/// Python: bailing_moe_linear's `LanguageModel`.
pub type BailingMoeLinearModel = BailingStack<BailingLayer<BailingMixer, BailingMoe>>;

/// Python: `mlx_lm.models.bailing_moe_linear.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct BailingMoeLinear {
    pub model: BailingMoeLinearModel,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl BailingMoeLinear {
    /// Python: `Model.sanitize`: drops a tied `lm_head`; with `norm_head`, divides each
    /// column of the head by its float32 2-norm plus 1e-7; stacks each sparse layer's
    /// per-expert tensors into `mlp.switch_mlp`, and moves `mlp.gate.{weight, bias}` to
    /// `mlp.gate.gate_proj`.
    pub fn sanitize(ck: &mut Checkpoint, a: &BailingMoeLinearArgs) -> crate::Result<()> {
        let dir = ck.dir().to_path_buf();
        if a.tie_word_embeddings {
            ck.weights_mut().take("lm_head.weight");
        }
        if a.norm_head {
            let w = ck.weights_mut();
            let file = w
                .file_of("lm_head.weight")
                .map_or_else(|| dir.clone(), |p| p.to_path_buf());
            let head = w.take("lm_head.weight").ok_or_else(|| {
                invalid(
                    &dir,
                    "norm_head",
                    "needs an untied lm_head.weight to normalize",
                )
            })?;
            let normed = (|| -> Result<Array> {
                let norm = mlx_rs::linalg::norm(
                    &head.astype(Dtype::Float32)?,
                    None::<mlx_rs::linalg::NormOrd>,
                    0,
                    true,
                )?;
                ops::divide(&head, &ops::add(&norm, 1e-7f32)?)?.astype(head.dtype())
            })()
            .map_err(|source| crate::Error::Mlx {
                path: file.clone(),
                source,
            })?;
            w.insert("lm_head.weight".to_string(), normed, file);
        }
        stack_experts(
            ck,
            "model",
            a.num_hidden_layers,
            "mlp",
            &SAME_NAMES,
            a.moe.num_experts,
        )?;
        let w = ck.weights_mut();
        for l in a.dense.first_k_dense_replace..a.num_hidden_layers {
            for k in ["weight", "bias"] {
                let from = format!("model.layers.{l}.mlp.gate.{k}");
                if w.get(&from).is_some() {
                    w.rename(&from, format!("model.layers.{l}.mlp.gate.gate_proj.{k}"));
                }
            }
        }
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors (all but `expert_bias`, mlx_lm's
    /// `cast_predicate`), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<BailingMoeLinear> {
        let a = BailingMoeLinearArgs::from_config(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |k| k.contains("expert_bias"))?;
        ck.set_quant_predicate(router_at_8_bits);
        let s = a.stack();
        let model = BailingStack::load(
            ck,
            s,
            options.kernels,
            |ck, path, i| {
                Ok(if a.is_global[i as usize] {
                    BailingMixer::Attention(BailingAttention::load(ck, path, &a.attention)?)
                } else {
                    BailingMixer::Linear(LinearAttention::load(ck, path, i, &a.linear)?)
                })
            },
            a.dense,
            |ck, path| BailingMoe::load(ck, path, &a.moe),
        )?;
        Ok(BailingMoeLinear {
            model,
            lm_head: load_lm_head(ck, "lm_head", s, a.tie_word_embeddings)?,
        })
    }
}

/// Python: the bailing families' `quant_predicate`: the routers (`mlp.gate.gate_proj`) at 8
/// bits in groups of 64.
pub(crate) fn router_at_8_bits(path: &str) -> Option<QuantParams> {
    path.ends_with("mlp.gate.gate_proj")
        .then_some(QuantParams::affine(64, 8))
}

stack_language_model!(BailingMoeLinear, model, "bailing_moe_linear");
