//! `bailing_moe_v3` (Python: `mlx_lm.models.bailing_moe_v3`, what mlx_lm builds for a
//! `bailing_hybrid` config whose `architectures` say `BailingMoeV3ForCausalLM`; transformers
//! 5.23's `bailing_hybrid`, inclusionAI's Ling 3.0): in each group of `layer_group_size`
//! layers the last is multi-latent attention with a head-wise sigmoid output gate
//! ([`Mla::load_gated`]), the others Kimi delta attention ([`KimiDeltaAttention`]: q, k and
//! v each through a masked short convolution, the gated delta rule with a decay gate per key
//! channel bounded below by `kda_lower_bound`, [`DecayGate::LowerBound`]); the first
//! `first_k_dense_replace` layers have a dense MLP, the others the sparse block (float32
//! router, sigmoid scores plus the expert bias, the dropped groups masked to `-inf`,
//! renormalized by `sum + 1e-20`, shared experts). Parameter paths are mlx_lm's (the
//! checkpoint's own): `model.word_embeddings`, `model.layers.{i}.{attention, mlp,
//! input_layernorm, post_attention_layernorm}`, `model.norm`, `lm_head`.
//!
//! A KDA layer's state (three convolution states and the float32 recurrent state, Python's
//! `ArraysCache(size=4)`) and an MLA layer's latent cache are leaves of one cache tree, which
//! goes through `compile_mut` like any other state.
//!
//! Where mlx_lm 0.32.2 and transformers 5.23 read a config differently this follows
//! transformers (each is a silent difference in mlx_lm, none is in the golden configs):
//! - the layer mix is `layer_types` when given, else every `layer_group_size`-th layer is MLA;
//!   mlx_lm also makes the layers after the last whole group MLA (the same model whenever
//!   the group size divides the layer count);
//! - the KDA head size is `linear_head_dim` when given (transformers writes `head_dim` as the
//!   rotary size beside it), else `head_dim`;
//! - without `q_lora_rank` the query is one `q_proj` (transformers has no other; mlx_lm
//!   defaults to a rank of 256);
//! - the shared experts are `moe_intermediate_size * num_shared_experts` wide (mlx_lm reads
//!   `moe_shared_expert_intermediate_size`, which must then agree);
//! - transformers' names of the router settings (`num_expert_group`, `num_experts_per_token`,
//!   `moe_renormalize`) are read beside mlx_lm's, and `moe_renormalize: false` is honoured
//!   (mlx_lm always renormalizes);
//! - `A_log`, `dt_bias` and `expert_bias` stay float32 when the model is cast (transformers'
//!   `_keep_in_fp32_modules_strict`).

use mlx_nn::Frozen;
use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::ops;
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::bailing::{BailingLayer, BailingStack, DenseLayers, ATTENTION};
use crate::blocks::decoder::{load_lm_head, StackConfig, TokenMixer};
use crate::blocks::group_router::{group_expert_select, GroupLimit, GroupRouting, GroupScoring};
use crate::blocks::kda::{KdaConfig, KdaInputs, KimiDeltaAttention, Rank};
use crate::blocks::mla::{split_kv_b_proj, Mla, MlaConfig};
use crate::blocks::switch::SwitchGlu;
use crate::blocks::{LayerContext, Mlp};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::gated_delta::DecayGate;
use crate::models::bailing_hybrid::mla_config;
use crate::models::base::stack_language_model;
use crate::models::sparse::{stack_experts, SAME_NAMES};

/// Python: bailing_moe_v3's `ModelArgs`, as the model reads it.
#[derive(Debug, Clone)]
pub struct BailingMoeV3Args {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: i32,
    pub rms_norm_eps: f32,
    pub attention: MlaConfig,
    /// Python: `BailingKDA` (transformers: `BailingHybridDeltaAttention`): separate q, k, v
    /// through bare convolutions, full-rank decay and output gate projections, the decay
    /// bounded below by `kda_lower_bound`, the gates' sigmoids in float32; its heads
    /// `num_attention_heads`.
    pub kda: KdaConfig,
    /// Per layer: KDA (Python: `DecoderLayer.is_linear`), else MLA.
    pub is_linear: Vec<bool>,
    /// The dense MLP of the first `first_k_dense_replace` layers (no biases).
    pub dense: DenseLayers,
    pub num_experts: i32,
    pub expert_size: i32,
    /// The shared experts' width, when there are any.
    pub shared_size: Option<i32>,
    pub routing: GroupRouting,
    pub tie_word_embeddings: bool,
}

/// The one of two names of a setting the config uses (mlx_lm's `ours`, transformers'
/// `theirs`); both present and different is an error naming them.
fn either<'k>(c: &ModelConfig, ours: &'k str, theirs: &'k str) -> crate::Result<&'k str> {
    match (c.get(ours), c.get(theirs)) {
        (Some(a), Some(b)) if a != b => Err(invalid(
            c.path(),
            &c.key(theirs),
            &format!("{b} disagrees with {ours} = {a}"),
        )),
        (None, Some(_)) => Ok(theirs),
        _ => Ok(ours),
    }
}

impl BailingMoeV3Args {
    pub fn from_config(c: &ModelConfig) -> crate::Result<BailingMoeV3Args> {
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Python raises for these; the released models use the bounded gate without LoRA.
        c.require_value("kda_safe_gate", true)?;
        c.require_value("no_kda_lora", true)?;
        if c.bool("rope_interleave")? == Some(false) {
            return Err(invalid(
                c.path(),
                &c.key("rope_interleave"),
                "must be true (mlx_lm requires it; transformers always interleaves)",
            ));
        }
        c.require_value("attention_bias", false)?;
        // Every KDA head has its own keys and values and MLA one latent (the key/value head
        // count enters nothing); dropout and initialization are training settings; the
        // multi-token-prediction layers are dropped at load (as mlx_lm drops them); the
        // context length sizes a scaled rope, which reads it itself; transformers'
        // `mlp_layer_types` and `qk_head_dim` are checked against what they derive from.
        c.declare_neutral(&[
            "num_key_value_heads",
            "max_position_embeddings",
            "model_max_length",
            "attention_dropout",
            "initializer_range",
            "router_aux_loss_coef",
            "output_router_logits",
            "num_nextn_predict_layers",
            "mtp_loss_scaling_factor",
            "pretraining_tp",
        ]);
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let layers = c.dim("num_hidden_layers")?;
        let group = c.dim("layer_group_size")?;
        let eps = c.float_or("rms_norm_eps", 1e-6)? as f32;
        let theta = crate::blocks::rope_theta(c, Some(6_000_000.0))?;
        let kda_head_dim = match c.get("linear_head_dim") {
            Some(_) => c.dim("linear_head_dim")?,
            None => c.dim_or("head_dim", Some(128))?,
        };
        if c.get("linear_head_dim").is_some() {
            // transformers writes the rotary size here; the KDA size is linear_head_dim.
            c.declare_neutral(&["head_dim"]);
        }
        let conv_kernel = c.dim_or("short_conv_kernel_size", Some(4))?;
        if c.get("linear_num_heads").is_some() {
            c.require_value("linear_num_heads", heads)?;
        }
        if c.get("linear_conv_kernel_dim").is_some() {
            c.require_value("linear_conv_kernel_dim", conv_kernel)?;
        }
        let is_linear: Vec<bool> = match c.get("layer_types") {
            None | Some(Value::Null) => (0..layers).map(|i| (i + 1) % group != 0).collect(),
            Some(Value::Array(kinds)) if kinds.len() == layers as usize => kinds
                .iter()
                .map(|k| match k.as_str() {
                    Some("linear_attention") => Ok(true),
                    Some("full_attention") => Ok(false),
                    _ => Err(invalid(
                        c.path(),
                        &c.key("layer_types"),
                        &format!("{k} (linear_attention or full_attention)"),
                    )),
                })
                .collect::<crate::Result<_>>()?,
            Some(v) => {
                return Err(invalid(
                    c.path(),
                    &c.key("layer_types"),
                    &format!("{v} is not a list of {layers} layer kinds"),
                ))
            }
        };
        let first_k_dense_replace =
            i32::try_from(c.usize("first_k_dense_replace")?.ok_or_else(|| {
                invalid(
                    c.path(),
                    &c.key("first_k_dense_replace"),
                    "missing (mlx_lm's default is 1, transformers' 2)",
                )
            })?)
            .map_err(|_| invalid(c.path(), &c.key("first_k_dense_replace"), "too large"))?;
        if c.get("mlp_layer_types").is_some() {
            let kinds: Vec<&str> = (0..layers)
                .map(|i| {
                    if i < first_k_dense_replace {
                        "dense"
                    } else {
                        "sparse"
                    }
                })
                .collect();
            c.require_value("mlp_layer_types", kinds)?;
        }

        let attention = mla_config(c, hidden, heads, theta, false)?;
        if c.get("qk_head_dim").is_some() {
            c.require_value(
                "qk_head_dim",
                attention.qk_nope_head_dim + attention.qk_rope_head_dim,
            )?;
        }

        let num_experts = c.dim("num_experts")?;
        let expert_size = c.dim("moe_intermediate_size")?;
        let n_group_key = either(c, "n_group", "num_expert_group")?;
        let n_group = c.dim_or(n_group_key, Some(8))?;
        let topk_group = c.dim_or("topk_group", Some(4))?;
        let top_k_key = either(c, "num_experts_per_tok", "num_experts_per_token")?;
        let top_k = c.dim_or(top_k_key, Some(8))?;
        let renormalize_key = either(c, "norm_topk_prob", "moe_renormalize")?;
        let renormalize = c.bool_or(renormalize_key, true)?;
        if num_experts % n_group != 0 || num_experts / n_group < 2 || topk_group > n_group {
            return Err(invalid(
                c.path(),
                &c.key(n_group_key),
                &format!("{n_group} groups of {num_experts} experts, {topk_group} kept"),
            ));
        }
        if top_k > topk_group * (num_experts / n_group) {
            return Err(invalid(
                c.path(),
                &c.key(top_k_key),
                &format!(
                    "{top_k} experts of {}",
                    topk_group * (num_experts / n_group)
                ),
            ));
        }
        if top_k == 1 && renormalize {
            // Python divides a single weight by itself plus 1e-20 (exactly 1 in float32);
            // the shared router only renormalizes two or more.
            return Err(invalid(
                c.path(),
                &c.key(top_k_key),
                "one expert per token with renormalized weights is not supported",
            ));
        }
        let shared_key = either(c, "num_shared_experts", "n_shared_experts")?;
        // Zero is a count here (no shared experts), where `dim` wants a size.
        let shared = i32::try_from(c.usize(shared_key)?.unwrap_or(1))
            .map_err(|_| invalid(c.path(), &c.key(shared_key), "too large"))?;
        if c.get("moe_shared_expert_intermediate_size").is_some() {
            c.require_value("moe_shared_expert_intermediate_size", expert_size)?;
        }
        Ok(BailingMoeV3Args {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            num_hidden_layers: layers,
            rms_norm_eps: eps,
            attention,
            kda: KdaConfig {
                hidden_size: hidden,
                num_heads: heads,
                head_dim: kda_head_dim,
                conv_kernel,
                rms_norm_eps: eps,
                inputs: KdaInputs::Conv1ds,
                decay_proj: Rank::Full,
                output_gate: Rank::Full,
                decay_gate: DecayGate::LowerBound(c.float_or("kda_lower_bound", -5.0)?),
                a_log_expanded: false,
                float32_gates: true,
            },
            is_linear,
            dense: DenseLayers {
                first_k_dense_replace,
                intermediate_size: c.dim("intermediate_size")?,
                use_bias: false,
            },
            num_experts,
            expert_size,
            shared_size: (shared > 0).then_some(expert_size * shared),
            routing: GroupRouting {
                top_k,
                n_group,
                topk_group,
                routed_scaling_factor: c.float_or("routed_scaling_factor", 2.5)? as f32,
                norm_topk_prob: renormalize,
                group_limit: GroupLimit::SomeGroupsMasked,
                denominator_eps: Some(1e-20),
                scoring: GroupScoring::Sigmoid,
            },
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
        })
    }
}

/// Python: `BailingGate`: the router's weight `[E, hidden]` (a plain array: never
/// quantized) and `expert_bias` `[E]`; the logits in float32 (`x.astype(float32) @
/// weight.astype(float32).T`, as transformers' `F.linear(x.float(), weight.float())`).
#[derive(Debug, Clone, TreeNode)]
pub struct BailingV3Gate {
    pub weight: Array,
    pub expert_bias: Array,
    #[tree(static)]
    pub routing: GroupRouting,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

/// Python: `BailingSparseMoE`: the routed experts weighted by the float32 weights, summed and
/// cast to the activations' dtype, plus the shared experts.
#[derive(Debug, Clone, TreeNode)]
pub struct BailingV3SparseMoe {
    pub gate: BailingV3Gate,
    pub switch_mlp: SwitchGlu,
    pub shared_experts: Option<Mlp>,
}

/// mlx_lm's bailing_moe_v3 has no `shard`: these experts cannot be split (an `Err`).
impl crate::blocks::ChannelMixer for BailingV3SparseMoe {}

impl Forward for BailingV3SparseMoe {
    fn forward(&self, x: &Array) -> Result<Array> {
        let g = &self.gate;
        let logits = ops::matmul(
            &x.astype(Dtype::Float32)?,
            &g.weight.astype(Dtype::Float32)?.swapaxes(-1, -2)?,
        )?;
        let (inds, scores) = group_expert_select(&logits, Some(&g.expert_bias), &g.routing)?;
        let y = self.switch_mlp.forward(x, &inds)?;
        let y = ops::multiply(&y, &ops::expand_dims(&scores, -1)?)?
            .sum(-2, false)?
            .astype(x.dtype())?;
        match &self.shared_experts {
            Some(shared) => ops::add(&y, &shared.forward(x)?),
            None => Ok(y),
        }
    }
}

/// A layer's `attention`: KDA or gated MLA.
// One per layer, built once at load.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, TreeNode)]
#[tree(transparent)]
pub enum BailingV3Mixer {
    Kda(KimiDeltaAttention),
    #[tree(other)]
    Mla(Mla),
}

impl TokenMixer for BailingV3Mixer {
    const KEY: &'static str = ATTENTION;

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        match self {
            BailingV3Mixer::Kda(kda) => {
                kda.forward(x, ctx.rows, ctx.kernels.fused_gated_delta, cache)
            }
            BailingV3Mixer::Mla(mla) => mla.forward(x, ctx.rows, cache),
        }
    }

    /// A KDA layer's four arrays, an MLA layer's latent cache (Python: `ArraysCache(size=4)`
    /// / `KVCache()`).
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match self {
            BailingV3Mixer::Kda(kda) => kda.make_cache(batch, dtype),
            BailingV3Mixer::Mla(mla) => TokenMixer::make_cache(mla, batch, capacity, dtype),
        }
    }
}

/// Python: `BailingModel`.
pub type BailingMoeV3Model = BailingStack<BailingLayer<BailingV3Mixer, BailingV3SparseMoe>>;

/// Python: `mlx_lm.models.bailing_moe_v3.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct BailingMoeV3 {
    pub model: BailingMoeV3Model,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

/// Python's `quant_predicate`, for the layers every layer kind keeps in float: the
/// embedding and head, MLA's low-rank and absorbed projections, KDA's `b_proj`.
fn kept_float(path: &str) -> bool {
    path == "model.word_embeddings"
        || path == "lm_head"
        || [
            "attention.q_a_proj",
            "attention.q_b_proj",
            "attention.kv_a_proj_with_mqa",
            "attention.embed_q",
            "attention.unembed_out",
            "attention.b_proj",
        ]
        .iter()
        .any(|s| path.ends_with(s))
}

/// Python's `quant_predicate` in an MLA layer: also `q_proj` and `g_proj` (quantized only in
/// KDA layers).
fn kept_float_mla(path: &str) -> bool {
    kept_float(path) || path.ends_with("attention.q_proj") || path.ends_with("attention.g_proj")
}

impl BailingMoeV3 {
    /// Python: `Model.sanitize`: drops a tied `lm_head` and the multi-token-prediction
    /// layers after the base ones; stacks each sparse layer's per-expert tensors into
    /// `mlp.switch_mlp`; splits each MLA layer's `kv_b_proj` into `embed_q` / `unembed_out`;
    /// the short convolutions' `[C, 1, K]` weights become MLX's `[C, K, 1]`.
    pub fn sanitize(ck: &mut Checkpoint, a: &BailingMoeV3Args) -> crate::Result<()> {
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
        stack_experts(ck, "model", n, "mlp", &SAME_NAMES, a.num_experts)?;
        for l in 0..n {
            split_kv_b_proj(ck, &format!("model.layers.{l}.attention"), &a.attention)?;
        }
        ck.weights_mut().map(|k, v| {
            let s = v.shape();
            if k.contains("_conv1d.weight") && s.len() == 3 && s[2] != 1 {
                return ops::moveaxis(v, 2, 1).map(Some);
            }
            Ok(None)
        })
    }

    /// Reads the config, sanitizes and casts the tensors (all but `A_log`, `dt_bias` and
    /// `expert_bias`), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<BailingMoeV3> {
        let a = BailingMoeV3Args::from_config(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |k| {
            k.ends_with("expert_bias") || k.ends_with("A_log") || k.ends_with("dt_bias")
        })?;
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let s = StackConfig {
            vocab_size: a.vocab_size,
            hidden_size: d,
            num_hidden_layers: a.num_hidden_layers,
            rms_norm_eps: eps,
        };
        ck.set_float_predicate(kept_float);
        let attention = |ck: &mut Checkpoint, path: &str, i: i32| -> crate::Result<_> {
            Ok(if a.is_linear[i as usize] {
                BailingV3Mixer::Kda(KimiDeltaAttention::load(ck, path, &a.kda)?)
            } else {
                ck.set_float_predicate(kept_float_mla);
                let mla = Mla::load_gated(ck, path, &a.attention, eps)?;
                ck.set_float_predicate(kept_float);
                BailingV3Mixer::Mla(mla)
            })
        };
        let experts = |ck: &mut Checkpoint, path: &str| -> crate::Result<_> {
            let (p, e) = (|name: &str| format!("{path}.{name}"), a.num_experts);
            Ok(BailingV3SparseMoe {
                gate: BailingV3Gate {
                    frozen: Frozen::default(),
                    weight: ck.array(&p("gate.weight"), &[e, d])?,
                    expert_bias: ck.array(&p("gate.expert_bias"), &[e])?,
                    routing: a.routing,
                },
                switch_mlp: SwitchGlu::load(ck, &p("switch_mlp"), d, a.expert_size, e, false)?,
                shared_experts: a
                    .shared_size
                    .map(|s| Mlp::load(ck, &p("shared_experts"), d, s, false))
                    .transpose()?,
            })
        };
        Ok(BailingMoeV3 {
            model: BailingStack::load(ck, s, options.kernels, attention, a.dense, experts)?,
            lm_head: load_lm_head(ck, "lm_head", s, a.tie_word_embeddings)?,
        })
    }
}

stack_language_model!(BailingMoeV3, model, "bailing_moe_v3");

#[cfg(test)]
mod tests {
    use super::*;

    /// The quantization choices of Python's `quant_predicate`: MLA's query and gate stay
    /// float, KDA's are quantized; the absorbed and low-rank projections and `b_proj` float
    /// in both.
    #[test]
    fn mla_query_and_gate_stay_float_where_kda_ones_quantize() {
        assert!(kept_float_mla("model.layers.3.attention.q_proj"));
        assert!(kept_float_mla("model.layers.3.attention.g_proj"));
        assert!(!kept_float("model.layers.0.attention.q_proj"));
        assert!(!kept_float("model.layers.0.attention.g_proj"));
        assert!(kept_float("model.layers.0.attention.b_proj"));
        assert!(kept_float("model.layers.3.attention.embed_q"));
        assert!(kept_float("lm_head"));
        assert!(!kept_float("model.layers.1.mlp.shared_experts.up_proj"));
    }
}
