//! `bailing_hybrid` (Python: `mlx_lm.models.bailing_hybrid`; inclusionAI's Ling-2.5-shaped
//! hybrids): bailing_moe_linear's layer mix with multi-latent attention in place of its
//! softmax attention. In each group of `layer_group_size` layers the last is MLA
//! ([`Mla::load_dense`], a key/value cache of latents), the others bailing's linear attention
//! in its chunked float32 form ([`LinearAttention`] with [`GlaForm::Chunked`], an
//! `ArraysCache(1)`); the layers from `num_hidden_layers // layer_group_size *
//! layer_group_size` on are all MLA. The first `first_k_dense_replace` layers have a dense
//! MLP, the others bailing's sparse block ([`BailingMoe`]: sigmoid or softmax scores, the
//! expert bias, the dropped groups masked to `-inf`, renormalized by `sum + 1e-20`, shared
//! experts). Parameter paths are mlx_lm's: `model.word_embeddings`,
//! `model.layers.{i}.{attention, mlp, input_layernorm, post_attention_layernorm}`,
//! `model.norm`, `lm_head`.
//!
//! The linear layers rotate their queries and keys at the model's position (Python: the
//! first MLA layer's cache offset); their padding mask is the recurrent caches' own, which
//! mlx_lm's chunked recurrence honours, so a right-padded batch keeps padding out of the
//! state as mlx_lm does.
//!
//! A config with `architectures: ["BailingMoeV3ForCausalLM"]` is mlx_lm's `bailing_moe_v3`
//! (its `MODEL_ARCHITECTURE_REMAPPING`, applied when the config is read), which
//! [`crate::models::bailing_moe_v3`] builds.

use mlx_nn::MaybeQuantizedLinear;
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::bailing::{BailingLayer, BailingStack, DenseLayers, ATTENTION};
use crate::blocks::decoder::{load_lm_head, StackConfig, TokenMixer};
use crate::blocks::mla::{mla_scale, split_kv_b_proj, Mla, MlaConfig};
use crate::blocks::{
    BailingMoe, BailingMoeConfig, GlaForm, GroupLimit, GroupRouting, GroupScoring, LayerContext,
    LinearAttention, LinearAttentionConfig, RotaryEmbedding,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::bailing_moe_linear::router_at_8_bits;
use crate::models::base::stack_language_model;
use crate::models::sparse::{stack_experts, SAME_NAMES};

/// Python: bailing_hybrid's `ModelArgs`, as the model reads it.
#[derive(Debug, Clone)]
pub struct BailingHybridArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: i32,
    pub rms_norm_eps: f32,
    pub attention: MlaConfig,
    pub linear: LinearAttentionConfig,
    /// Per layer: MLA (Python: `DecoderLayer.is_global`).
    pub is_global: Vec<bool>,
    /// The dense MLP of the first `first_k_dense_replace` layers.
    pub dense: DenseLayers,
    pub moe: BailingMoeConfig,
    pub tie_word_embeddings: bool,
}

/// A required key mlx_lm's `ModelArgs` has no default for.
fn required<T>(c: &ModelConfig, key: &str, v: Option<T>) -> crate::Result<T> {
    v.ok_or_else(|| invalid(c.path(), &c.key(key), "missing (mlx_lm requires it)"))
}

impl BailingHybridArgs {
    /// The stack's sizes.
    pub fn stack(&self) -> StackConfig {
        StackConfig {
            vocab_size: self.vocab_size,
            hidden_size: self.hidden_size,
            num_hidden_layers: self.num_hidden_layers,
            rms_norm_eps: self.rms_norm_eps,
        }
    }

    pub fn from_config(c: &ModelConfig) -> crate::Result<BailingHybridArgs> {
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // mlx_lm requires num_key_value_heads but reads it nowhere (the linear layers use as
        // many key/value heads as heads, MLA has one latent); dropout is off at inference;
        // initializer_range only draws weights a checkpoint replaces; the router's auxiliary
        // loss is a training setting; the multi-token-prediction layers are not loaded (as
        // in mlx_lm); max_position_embeddings sizes a scaled rope, which reads it itself.
        c.declare_neutral(&[
            "num_key_value_heads",
            "max_position_embeddings",
            "attention_dropout",
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
        if group > layers {
            return Err(invalid(
                c.path(),
                &c.key("layer_group_size"),
                &format!("{group} is more than the {layers} layers"),
            ));
        }
        let eps = required(c, "rms_norm_eps", c.float("rms_norm_eps")?)? as f32;
        let theta = required(c, "rope_theta", c.float("rope_theta")?)?;
        // Python: `head_dim or hidden_size // num_attention_heads`.
        let head_dim = match c.usize("head_dim")? {
            None | Some(0) => hidden / heads,
            Some(_) => c.dim("head_dim")?,
        };
        let partial = c.float_or("partial_rotary_factor", 0.5)?;
        // Python's `__post_init__`: the rotary part a positive even count within the head.
        let rotary = (head_dim as f64 * partial) as i32;
        if rotary <= 0 || rotary > head_dim || rotary % 2 != 0 {
            return Err(invalid(
                c.path(),
                &c.key("partial_rotary_factor"),
                &format!("{rotary} rotary features of a head of {head_dim}"),
            ));
        }
        let group_norm_size = c.dim("group_norm_size")?;
        if (heads * head_dim) % group_norm_size != 0 {
            return Err(invalid(
                c.path(),
                &c.key("group_norm_size"),
                &format!("{group_norm_size} groups of {} features", heads * head_dim),
            ));
        }
        let use_bias = c.bool_or("use_bias", false)?;
        let qkv_bias = c.bool_or("use_qkv_bias", false)?;
        let is_global: Vec<bool> = (0..layers)
            .map(|i| (i + 1) % group == 0 || i >= layers / group * group)
            .collect();
        Ok(BailingHybridArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            num_hidden_layers: layers,
            rms_norm_eps: eps,
            attention: mla_config(c, hidden, heads, theta, qkv_bias)?,
            linear: LinearAttentionConfig {
                hidden_size: hidden,
                num_heads: heads,
                head_dim,
                num_hidden_layers: layers,
                qkv_bias,
                o_bias: use_bias,
                qk_norm: c.bool_or("use_qk_norm", true)?.then_some(eps),
                rms_norm_eps: eps,
                group_norm_size,
                rope: RotaryEmbedding::from_config(c, rotary, theta, false)?,
                form: GlaForm::Chunked,
            },
            is_global,
            dense: DenseLayers {
                first_k_dense_replace: required(
                    c,
                    "first_k_dense_replace",
                    c.usize("first_k_dense_replace")?,
                )? as i32,
                intermediate_size: c.dim("intermediate_size")?,
                use_bias,
            },
            moe: moe_config(c, hidden, use_bias)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
        })
    }
}

/// Python: `MultiLatentAttention.__init__`'s reading of the config: `rope_interleave`
/// (default true) for a traditional rope of `qk_rope_head_dim` features, the scale
/// `(qk_nope + qk_rope)**-0.5` with yarn's `mscale_all_dim` folded in
/// (`apply_yarn_mscale`), `use_qkv_bias` for `q_a_proj`, `kv_a_proj_with_mqa` and `dense`.
pub(crate) fn mla_config(
    c: &ModelConfig,
    hidden: i32,
    heads: i32,
    theta: f64,
    bias: bool,
) -> crate::Result<MlaConfig> {
    let q_lora_rank = match c.get("q_lora_rank") {
        None | Some(serde_json::Value::Null) => {
            c.declare_neutral(&["q_lora_rank"]);
            None
        }
        Some(_) => Some(c.dim("q_lora_rank")?),
    };
    let qk_nope_head_dim = c.dim("qk_nope_head_dim")?;
    let qk_rope_head_dim = c.dim("qk_rope_head_dim")?;
    let traditional = c.bool_or("rope_interleave", true)?;
    let rope = RotaryEmbedding::from_config(c, qk_rope_head_dim, theta, traditional)?;
    let (mscale_all_dim, factor) = match c.section("rope_scaling") {
        Some(s) => {
            let kind = match s.string("type")? {
                Some(t) => t.to_string(),
                None => s.string("rope_type")?.unwrap_or("default").to_string(),
            };
            if kind == "default" {
                (0.0, 1.0)
            } else {
                (
                    s.float("mscale_all_dim")?.unwrap_or(0.0),
                    s.float("factor")?.unwrap_or(1.0),
                )
            }
        }
        None => (0.0, 1.0),
    };
    Ok(MlaConfig {
        hidden_size: hidden,
        num_heads: heads,
        q_lora_rank,
        kv_lora_rank: c.dim("kv_lora_rank")?,
        qk_nope_head_dim,
        qk_rope_head_dim,
        v_head_dim: c.dim("v_head_dim")?,
        attention_bias: bias,
        rope,
        scale: mla_scale(qk_nope_head_dim + qk_rope_head_dim, mscale_all_dim, factor),
    })
}

/// Python: bailing_hybrid's `SparseMoeBlock` / `Gate` arguments: `n_group`, `topk_group`,
/// `num_shared_experts` and `routed_scaling_factor` required; sigmoid scores, the expert bias
/// and renormalizing by default; the shared experts `moe_shared_expert_intermediate_size`
/// wide, or `moe_intermediate_size * num_shared_experts` without it.
fn moe_config(c: &ModelConfig, hidden: i32, use_bias: bool) -> crate::Result<BailingMoeConfig> {
    let num_experts = c.dim("num_experts")?;
    let expert_size = c.dim("moe_intermediate_size")?;
    let scoring = match c.string("score_function")?.unwrap_or("sigmoid") {
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
    let n_group = c.dim("n_group")?;
    let topk_group = c.dim("topk_group")?;
    let top_k = c.dim("num_experts_per_tok")?;
    if num_experts % n_group != 0 || (n_group > topk_group && num_experts / n_group < 2) {
        return Err(invalid(
            c.path(),
            &c.key("n_group"),
            &format!("{n_group} groups of {num_experts} experts"),
        ));
    }
    let kept = topk_group.min(n_group) * (num_experts / n_group);
    if top_k > kept {
        return Err(invalid(
            c.path(),
            &c.key("num_experts_per_tok"),
            &format!("{top_k} experts of {kept}"),
        ));
    }
    // Zero is a count here (no shared experts), where `dim` wants a size.
    let shared = required(c, "num_shared_experts", c.usize("num_shared_experts")?)? as i32;
    let shared_size = match c.get("moe_shared_expert_intermediate_size") {
        None | Some(serde_json::Value::Null) => {
            c.declare_neutral(&["moe_shared_expert_intermediate_size"]);
            expert_size * shared
        }
        Some(_) => c.dim("moe_shared_expert_intermediate_size")?,
    };
    Ok(BailingMoeConfig {
        hidden_size: hidden,
        expert_size,
        num_experts,
        bias: use_bias,
        expert_bias: c.bool_or("moe_router_enable_expert_bias", true)?,
        shared_size: (shared > 0).then_some(shared_size),
        routing: GroupRouting {
            top_k,
            n_group,
            topk_group,
            routed_scaling_factor: required(
                c,
                "routed_scaling_factor",
                c.float("routed_scaling_factor")?,
            )? as f32,
            norm_topk_prob: c.bool_or("norm_topk_prob", true)?,
            group_limit: GroupLimit::SomeGroupsMasked,
            denominator_eps: Some(1e-20),
            scoring,
        },
    })
}

/// A layer's `attention`: multi-latent attention or linear attention.
// One per layer, built once at load: the variants' sizes cost nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, TreeNode)]
#[tree(transparent)]
pub enum HybridMixer {
    #[tree(other)]
    Mla(Mla),
    Linear(LinearAttention),
}

impl TokenMixer for HybridMixer {
    const KEY: &'static str = ATTENTION;

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        match self {
            HybridMixer::Mla(a) => a.forward(x, ctx.rows, cache),
            HybridMixer::Linear(l) => l.forward(x, ctx.rows, ctx.rope_offset, cache),
        }
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match self {
            HybridMixer::Mla(a) => TokenMixer::make_cache(a, batch, capacity, dtype),
            HybridMixer::Linear(l) => l.make_cache(batch, dtype),
        }
    }
}

/// Python: bailing_hybrid's `LanguageModel`.
pub type BailingHybridModel = BailingStack<BailingLayer<HybridMixer, BailingMoe>>;

/// Python: `mlx_lm.models.bailing_hybrid.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct BailingHybrid {
    pub model: BailingHybridModel,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl BailingHybrid {
    /// Python: `Model.sanitize`: drops a tied `lm_head`; stacks each layer's per-expert
    /// tensors into `mlp.switch_mlp`, moves `mlp.gate.weight` to `mlp.gate.gate_proj`, splits
    /// each MLA layer's `kv_b_proj` into `embed_q` / `unembed_out`, and drops the
    /// multi-token-prediction layers the checkpoint appends after the base ones.
    pub fn sanitize(ck: &mut Checkpoint, a: &BailingHybridArgs) -> crate::Result<()> {
        let n = a.num_hidden_layers;
        if a.tie_word_embeddings {
            ck.weights_mut().take("lm_head.weight");
        }
        ck.weights_mut().retain(|k, _| {
            let layer = k
                .strip_prefix("model.layers.")
                .and_then(|rest| rest.split('.').next())
                .and_then(|i| i.parse::<i64>().ok());
            !layer.is_some_and(|i| i >= n as i64)
        });
        stack_experts(ck, "model", n, "mlp", &SAME_NAMES, a.moe.num_experts)?;
        for l in 0..n {
            let from = format!("model.layers.{l}.mlp.gate.weight");
            if ck.weights_mut().get(&from).is_some() {
                ck.weights_mut()
                    .rename(&from, format!("model.layers.{l}.mlp.gate.gate_proj.weight"));
            }
            split_kv_b_proj(ck, &format!("model.layers.{l}.attention"), &a.attention)?;
        }
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors (all but `expert_bias`, mlx_lm's
    /// `cast_predicate`), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<BailingHybrid> {
        let a = BailingHybridArgs::from_config(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |k| k.contains("expert_bias"))?;
        ck.set_quant_predicate(router_at_8_bits);
        ck.set_float_predicate(absorbed_mla);
        let s = a.stack();
        let model = BailingStack::load(
            ck,
            s,
            options.kernels,
            |ck, path, i| {
                Ok(if a.is_global[i as usize] {
                    HybridMixer::Mla(Mla::load_dense(ck, path, &a.attention, a.rms_norm_eps)?)
                } else {
                    HybridMixer::Linear(LinearAttention::load(ck, path, i, &a.linear)?)
                })
            },
            a.dense,
            |ck, path| BailingMoe::load(ck, path, &a.moe),
        )?;
        Ok(BailingHybrid {
            model,
            lm_head: load_lm_head(ck, "lm_head", s, a.tie_word_embeddings)?,
        })
    }
}

/// Python: bailing_hybrid's `quant_predicate`: "The absorbed MLA matrices stay unquantized".
fn absorbed_mla(path: &str) -> bool {
    path.ends_with("attention.embed_q") || path.ends_with("attention.unembed_out")
}

stack_language_model!(BailingHybrid, model, "bailing_hybrid");
