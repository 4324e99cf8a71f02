//! `kimi_linear` (Python: `mlx_lm.models.kimi_linear`): Kimi Linear, Kimi Delta Attention
//! ([`KimiDeltaAttention`]: the gated delta rule with a decay gate per key channel, its q, k
//! and v each through a short convolution) in most layers and multi-head latent attention
//! without rotary embedding ([`Mla`], `mla_use_nope`) in the others, every layer's
//! feed-forward block dense or a mixture of experts behind a grouped router with shared
//! experts.
//!
//! A KDA layer's state (three convolution states and the float32 recurrent state, Python's
//! `ArraysCache(size=4)`) and an MLA layer's compressed key/value cache are leaves of one
//! cache tree, which goes through `compile_mut` like any other state.

use mlx_nn::Frozen;
use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::ops::{self, Ellipsis};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};
use serde_json::Value;

use crate::blocks::decoder::{load_decoder_layers, DecoderLayer, StackConfig};
use crate::blocks::kda::{
    sanitize_short_convs, KdaConfig, KdaInputs, KimiDeltaAttention, KimiMixer, Rank,
};
use crate::blocks::mla::{mla_scale, split_kv_b_proj, Mla, MlaConfig};
use crate::blocks::moe::FeedForward;
use crate::blocks::switch::SwitchGlu;
use crate::blocks::{LayerStack, Mlp, RotaryEmbedding, Stack};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::gated_delta::DecayGate;
use crate::models::base::stack_language_model;
use crate::models::qwen3_moe::router_at_8_bits;
use crate::models::sparse::stack_experts;

/// How the router turns the gate's logits into scores (Python:
/// `moe_router_activation_func`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, StaticData)]
pub enum ScoreFunction {
    Sigmoid,
    Softmax,
    /// kimi_k3's `_group_expert_select`: the sigmoid of the logits upcast to float32, the
    /// weights cast back to the gate's dtype at the end.
    SigmoidFloat32,
}

/// What kimi_linear's `_group_expert_select` is given besides the logits.
#[derive(Debug, Clone, Copy, PartialEq, StaticData)]
pub struct KimiRouting {
    pub top_k: i32,
    pub n_group: i32,
    pub topk_group: i32,
    pub routed_scaling_factor: f32,
    pub renormalize: bool,
    pub score_function: ScoreFunction,
}

/// Python: kimi_linear's `_group_expert_select`, op for op: the scores in the gate's dtype
/// (sigmoid, or a precise softmax), the correction bias added for choosing only; with
/// `n_group > 1` all but the best `topk_group` groups (each scored by its two best) zeroed;
/// the top k by argpartition, weighted by their uncorrected scores, renormalized by `sum +
/// 1e-20` when asked (and `top_k > 1`), times `routed_scaling_factor`. mlx_lm compiles it
/// (not shapeless); as the grouped router of deepseek_v3 ([`crate::blocks::group_router`])
/// the compiled function gives the eager ops' bits, so it runs eagerly and a compiled decode
/// step compiles it with the rest.
pub fn kimi_expert_select(gates: &Array, bias: &Array, r: &KimiRouting) -> Result<(Array, Array)> {
    let scores = match r.score_function {
        ScoreFunction::Sigmoid => ops::sigmoid(gates)?,
        ScoreFunction::Softmax => ops::softmax(gates, &[-1][..], true)?,
        ScoreFunction::SigmoidFloat32 => ops::sigmoid(&gates.astype(Dtype::Float32)?)?,
    };
    let orig_scores = scores.clone();
    let mut scores = ops::add(&scores, &bias.astype(scores.dtype())?)?;
    let drop = r.n_group - r.topk_group;
    // With every group kept there is nothing to drop (Python would ask argpartition for the
    // -1st element; the config reader allows it only as "keep all").
    if r.n_group > 1 && drop > 0 {
        scores = ops::unflatten(&scores, -1, &[r.n_group, -1])?;
        let group_scores = ops::topk(&scores, 2, -1)?.sum(-1, true)?;
        let group_idx =
            ops::argpartition(&group_scores, drop - 1, -2)?.index((Ellipsis, ..drop, ..))?;
        let group_idx = ops::stop_gradient(&group_idx)?;
        let zero = Array::from_scalar(0.0f32).astype(scores.dtype())?;
        scores = ops::put_along_axis(&scores, &group_idx, &zero, -2)?;
        scores = ops::flatten(&scores, -2, -1)?;
    }
    let k = r.top_k;
    let inds = ops::argpartition(&ops::negative(&scores)?, k - 1, -1)?.index((Ellipsis, ..k))?;
    let inds = ops::stop_gradient(&inds)?;
    let mut scores = ops::take_along_axis(&orig_scores, &inds, -1)?;
    if k > 1 && r.renormalize {
        let denominator = ops::add(&scores.sum(-1, true)?, 1e-20f32)?;
        scores = ops::divide(&scores, &denominator)?;
    }
    let weights = ops::multiply(&scores, r.routed_scaling_factor)?;
    let weights = match r.score_function {
        ScoreFunction::SigmoidFloat32 => weights.astype(gates.dtype())?,
        _ => weights,
    };
    Ok((inds, weights))
}

/// Python: `KimiSparseMoE`: the router's gate (a linear layer, quantizable: mlx_lm's
/// quant_predicate puts it at 8 bits), the correction bias beside it (`e_score_correction_bias`,
/// float32), the routed experts and, with `num_shared_experts`, a dense MLP every token goes
/// through.
#[derive(Debug, Clone, TreeNode)]
pub struct KimiSparseMoe {
    pub gate: MaybeQuantizedLinear,
    pub switch_mlp: SwitchGlu,
    pub e_score_correction_bias: Array,
    pub shared_experts: Option<Mlp>,
    #[tree(static)]
    pub routing: KimiRouting,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

/// mlx_lm's kimi_linear has no `shard`: these experts cannot be split (an `Err`).
impl crate::blocks::ChannelMixer for KimiSparseMoe {}

impl Forward for KimiSparseMoe {
    /// `sum_k weight_k * expert_k(x)` (in the promoted dtype of the two, as Python), plus
    /// the shared experts.
    fn forward(&self, x: &Array) -> Result<Array> {
        let gates = self.gate.forward(x)?;
        let (inds, weights) =
            kimi_expert_select(&gates, &self.e_score_correction_bias, &self.routing)?;
        let y = self.switch_mlp.forward(x, &inds)?;
        let y = ops::multiply(&y, &ops::expand_dims(&weights, -1)?)?.sum(-2, false)?;
        match &self.shared_experts {
            Some(shared) => ops::add(&y, &shared.forward(x)?),
            None => Ok(y),
        }
    }
}

/// Python: kimi_linear's `ModelArgs`, as the layers use it.
#[derive(Debug, Clone)]
pub struct KimiLinearArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: i32,
    pub intermediate_size: i32,
    pub rms_norm_eps: f32,
    pub tie_word_embeddings: bool,
    pub attention: MlaConfig,
    /// Python: `KimiDeltaAttention`: separate q, k, v through `ShortConv1d`s, low-rank decay
    /// and output gate projections, the softplus decay gate.
    pub kda: KdaConfig,
    /// Per layer: KDA (`kda_layers`, 1-based in the config), else MLA.
    pub linear: Vec<bool>,
    pub experts: KimiExperts,
}

impl KimiLinearArgs {
    /// Reads the config as the released checkpoints write it (Moonshot's `KimiLinearConfig`,
    /// the keys mlx_lm reads: `linear_attn_config` and the MoE keys under their names there).
    ///
    /// Supported as mlx_lm runs it: MLA without rotary embedding (`mla_use_nope`; mlx_lm
    /// never rotates, so a config with rope would silently differ from the reference), one
    /// query projection (no `q_lora_rank`), SiLU.
    pub fn from_config(c: &ModelConfig) -> crate::Result<KimiLinearArgs> {
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        c.require_value("q_lora_rank", Value::Null)?;
        // mlx_lm's router groups experts whenever num_expert_group > 1, as the reference
        // does with use_grouped_topk (its default).
        c.require_value("use_grouped_topk", true)?;
        if c.get("mla_use_nope").and_then(Value::as_bool) != Some(true) {
            return Err(invalid(
                c.path(),
                &c.key("mla_use_nope"),
                "must be true: kimi_linear's attention has no rotary embedding here, as in mlx_lm",
            ));
        }
        // The released config names Moonshot's remote code (`auto_map`), which this file
        // replaces.
        c.declare_neutral(&["auto_map"]);
        // No rotary embedding (mla_use_nope), so its base and scaling enter nothing; the
        // context length only sizes the reference's buffers; initialization, dropout, the
        // key-value head count (every MLA head reads the one latent) and the multi-token
        // prediction layers (dropped at load, as mlx_lm drops them) do not enter the forward.
        c.declare_neutral(&[
            "rope_theta",
            "rope_scaling",
            "model_max_length",
            "max_position_embeddings",
            "initializer_range",
            "attention_dropout",
            "num_key_value_heads",
            "num_nextn_predict_layers",
            "pretraining_tp",
            "output_router_logits",
        ]);
        let hidden = c.dim("hidden_size")?;
        let layers = c.dim("num_hidden_layers")?;
        let heads = c.dim("num_attention_heads")?;
        let head_dim = c.dim("head_dim")?;
        let dim_or_head = |key: &str| -> crate::Result<i32> {
            match c.get(key) {
                None | Some(Value::Null) => {
                    c.declare_neutral(&[key]);
                    Ok(head_dim)
                }
                Some(_) => c.dim(key),
            }
        };
        let qk_nope_head_dim = dim_or_head("qk_nope_head_dim")?;
        let v_head_dim = dim_or_head("v_head_dim")?;
        // Python: `qk_rope_head_dim or 0`.
        let qk_rope_head_dim = i32::try_from(c.usize("qk_rope_head_dim")?.unwrap_or(0))
            .map_err(|_| invalid(c.path(), &c.key("qk_rope_head_dim"), "too large"))?;
        let rms_norm_eps = c.float_or("rms_norm_eps", 1e-5)? as f32;
        let attention = MlaConfig {
            hidden_size: hidden,
            num_heads: heads,
            q_lora_rank: None,
            kv_lora_rank: c.dim("kv_lora_rank")?,
            qk_nope_head_dim,
            qk_rope_head_dim,
            v_head_dim,
            attention_bias: c.bool_or("attention_bias", false)?,
            // Never applied (mla_use_nope): the layer is loaded with `Mla::load_nope`.
            rope: RotaryEmbedding::plain(qk_rope_head_dim, true, 10000.0),
            scale: mla_scale(qk_nope_head_dim + qk_rope_head_dim, 0.0, 1.0),
        };
        if attention.attention_bias {
            return Err(invalid(
                c.path(),
                &c.key("attention_bias"),
                "kimi_linear's attention has no biases (mlx_lm builds none)",
            ));
        }

        let linear_config = c
            .section("linear_attn_config")
            .ok_or_else(|| invalid(c.path(), &c.key("linear_attn_config"), "missing"))?;
        let kda = KdaConfig {
            hidden_size: hidden,
            num_heads: linear_config.dim("num_heads")?,
            head_dim: linear_config.dim("head_dim")?,
            conv_kernel: linear_config.dim_or("short_conv_kernel_size", Some(4))?,
            rms_norm_eps,
            inputs: KdaInputs::ShortConvs,
            decay_proj: Rank::Low,
            output_gate: Rank::Low,
            decay_gate: DecayGate::Softplus,
            a_log_expanded: true,
            float32_gates: false,
        };
        let linear = kda_layers(c, &linear_config, layers)?;
        if !linear.contains(&true) || !linear.contains(&false) {
            // Python: the model takes its masks from the first KDA and the first MLA layer.
            return Err(invalid(
                c.path(),
                &linear_config.key("kda_layers"),
                "mlx_lm's kimi_linear needs at least one KDA and one attention layer",
            ));
        }

        // transformers 5.23's KimiLinearConfig writes what it derives from the keys above
        // beside them: they must agree (a config that says otherwise describes another model).
        c.require_value("linear_num_heads", kda.num_heads)?;
        c.require_value("linear_head_dim", kda.head_dim)?;
        c.require_value("linear_conv_kernel_dim", kda.conv_kernel)?;
        c.require_value("qk_head_dim", qk_nope_head_dim + qk_rope_head_dim)?;
        let kinds: Vec<&str> = linear
            .iter()
            .map(|l| {
                if *l {
                    "linear_attention"
                } else {
                    "full_attention"
                }
            })
            .collect();
        c.require_value("layer_types", kinds)?;

        let score_function = match c.string("moe_router_activation_func")? {
            None | Some("sigmoid") => ScoreFunction::Sigmoid,
            Some("softmax") => ScoreFunction::Softmax,
            Some(other) => {
                return Err(invalid(
                    c.path(),
                    &c.key("moe_router_activation_func"),
                    &format!("{other:?} is not supported (sigmoid, softmax)"),
                ))
            }
        };
        let experts = KimiExperts::from_config(c, layers, 1, score_function)?;
        let kinds: Vec<&str> = experts
            .sparse
            .iter()
            .map(|s| if *s { "sparse" } else { "dense" })
            .collect();
        c.require_value("mlp_layer_types", kinds)?;
        Ok(KimiLinearArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            num_hidden_layers: layers,
            intermediate_size: c.dim("intermediate_size")?,
            rms_norm_eps,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            attention,
            kda,
            linear,
            experts,
        })
    }
}

/// The experts as kimi_linear and kimi_k3 read them: `num_experts` (none: dense layers only)
/// of `moe_intermediate_size` (read only with experts), `num_shared_experts` of that size
/// beside them, the router's keys, and which layers have them (from `first_k_dense_replace`
/// on, every `moe_layer_freq`-th).
#[derive(Debug, Clone, PartialEq)]
pub struct KimiExperts {
    pub num_experts: i32,
    pub expert_size: i32,
    pub shared_expert_size: Option<i32>,
    pub routing: KimiRouting,
    /// Per layer: the experts, else the dense MLP.
    pub sparse: Vec<bool>,
}

impl KimiExperts {
    /// The experts of a stack of `layers`; `top_k` where `num_experts_per_token` is absent
    /// (mlx_lm's defaults differ between the two), the router's `score_function`.
    pub(crate) fn from_config(
        c: &ModelConfig,
        layers: i32,
        top_k: i32,
        score_function: ScoreFunction,
    ) -> crate::Result<KimiExperts> {
        let num_experts = i32::try_from(c.usize("num_experts")?.unwrap_or(0))
            .map_err(|_| invalid(c.path(), &c.key("num_experts"), "too large"))?;
        let top_k = c.dim_or("num_experts_per_token", Some(top_k))?;
        let n_group = c.dim_or("num_expert_group", Some(1))?;
        let topk_group = c.dim_or("topk_group", Some(1))?;
        check_routing(c, num_experts, n_group, topk_group, top_k)?;
        let first_dense =
            i32::try_from(c.usize("first_k_dense_replace")?.unwrap_or(0)).unwrap_or(i32::MAX);
        let freq = c.dim_or("moe_layer_freq", Some(1))?;
        let sparse = (0..layers)
            .map(|i| num_experts > 0 && i >= first_dense && i % freq == 0)
            .collect();
        let expert_size = if num_experts > 0 {
            c.dim("moe_intermediate_size")?
        } else {
            c.declare_neutral(&["moe_intermediate_size"]);
            0
        };
        let shared = c.usize("num_shared_experts")?.unwrap_or(0);
        let shared_expert_size = (shared > 0)
            .then(|| {
                i32::try_from(shared)
                    .ok()
                    .and_then(|s| s.checked_mul(expert_size))
                    .ok_or_else(|| invalid(c.path(), &c.key("num_shared_experts"), "too large"))
            })
            .transpose()?;
        Ok(KimiExperts {
            num_experts,
            expert_size,
            shared_expert_size,
            routing: KimiRouting {
                top_k,
                n_group,
                topk_group,
                routed_scaling_factor: c.float_or("routed_scaling_factor", 1.0)? as f32,
                renormalize: c.bool_or("moe_renormalize", true)?,
                score_function,
            },
            sparse,
        })
    }
}

/// Which layers are KDA: `kda_layers` of the `linear_attn_config` section `lc` (1-based,
/// required), and `full_attn_layers` there, where given, exactly the others.
pub(crate) fn kda_layers(
    c: &ModelConfig,
    lc: &ModelConfig,
    layers: i32,
) -> crate::Result<Vec<bool>> {
    let kda = one_based_layers(lc, "kda_layers", layers)?
        .ok_or_else(|| invalid(c.path(), &lc.key("kda_layers"), "missing"))?;
    let linear: Vec<bool> = (1..=layers).map(|i| kda.contains(&i)).collect();
    if let Some(full) = one_based_layers(lc, "full_attn_layers", layers)? {
        if !(1..=layers).all(|i| full.contains(&i) != linear[i as usize - 1]) {
            return Err(invalid(
                c.path(),
                &lc.key("full_attn_layers"),
                "must name exactly the layers kda_layers does not",
            ));
        }
    }
    Ok(linear)
}

/// The router's sizes as mlx_lm can run them: the experts split evenly into `n_group` groups
/// of two or more (Python takes each group's two best), `topk_group` of them kept, `top_k`
/// experts to be found in the kept groups.
pub(crate) fn check_routing(
    c: &ModelConfig,
    num_experts: i32,
    n_group: i32,
    topk_group: i32,
    top_k: i32,
) -> crate::Result<()> {
    if num_experts > 0 {
        if num_experts % n_group != 0 || (n_group > 1 && num_experts / n_group < 2) {
            return Err(invalid(
                c.path(),
                &c.key("num_expert_group"),
                &format!("{n_group} groups of {num_experts} experts"),
            ));
        }
        if topk_group > n_group {
            return Err(invalid(
                c.path(),
                &c.key("topk_group"),
                &format!("{topk_group} of {n_group} groups"),
            ));
        }
        if top_k > topk_group * (num_experts / n_group) {
            return Err(invalid(
                c.path(),
                &c.key("num_experts_per_token"),
                &format!(
                    "{top_k} experts from {topk_group} groups of {}",
                    num_experts / n_group
                ),
            ));
        }
    }
    Ok(())
}

/// A list of 1-based layer numbers under `key` (`None` when absent), each in `1..=layers`.
pub(crate) fn one_based_layers(
    c: &ModelConfig,
    key: &str,
    layers: i32,
) -> crate::Result<Option<Vec<i32>>> {
    let error = |message: String| invalid(c.path(), &c.key(key), &message);
    match c.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_i64()
                    .filter(|n| (1..=i64::from(layers)).contains(n))
                    .map(|n| n as i32)
                    .ok_or_else(|| error(format!("{v} is not a layer number in 1..={layers}")))
            })
            .collect::<crate::Result<Vec<i32>>>()
            .map(Some),
        Some(v) => Err(error(format!("not a list: {v}"))),
    }
}

/// Python: `KimiDecoderLayer`: pre-norm, `self_attn` then `mlp`.
pub type KimiDecoderLayer = DecoderLayer<KimiMixer, FeedForward<KimiSparseMoe>>;

impl KimiLinearArgs {
    /// Layer `i`'s `self_attn`, under `path`.
    fn mixer(&self, ck: &mut Checkpoint, path: &str, i: i32) -> crate::Result<KimiMixer> {
        Ok(if self.linear[i as usize] {
            KimiMixer::Kda(KimiDeltaAttention::load(ck, path, &self.kda)?)
        } else {
            KimiMixer::Mla(Mla::load_nope(
                ck,
                path,
                &self.attention,
                self.rms_norm_eps,
            )?)
        })
    }

    /// Layer `i`'s `mlp`, under `path`.
    fn mlp(
        &self,
        ck: &mut Checkpoint,
        path: &str,
        i: i32,
    ) -> crate::Result<FeedForward<KimiSparseMoe>> {
        let d = self.hidden_size;
        let p = |name: &str| format!("{path}.{name}");
        let x = &self.experts;
        if !x.sparse[i as usize] {
            return Ok(FeedForward::Dense(Mlp::load(
                ck,
                path,
                d,
                self.intermediate_size,
                false,
            )?));
        }
        let e = x.num_experts;
        Ok(FeedForward::Sparse(KimiSparseMoe {
            frozen: Frozen::default(),
            gate: ck.linear(&p("gate"), d, e, false)?,
            switch_mlp: SwitchGlu::load(ck, &p("switch_mlp"), d, x.expert_size, e, false)?,
            e_score_correction_bias: ck.array(&p("e_score_correction_bias"), &[e])?,
            shared_experts: x
                .shared_expert_size
                .map(|s| Mlp::load(ck, &p("shared_experts"), d, s, false))
                .transpose()?,
            routing: x.routing,
        }))
    }
}

/// Python: `KimiLinearModel`.
pub type KimiLinearModel = LayerStack<KimiDecoderLayer>;

/// Python: `mlx_lm.models.kimi_linear.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct KimiLinear {
    pub model: KimiLinearModel,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

/// mlx_lm's cast_predicate: the tensors that stay float32 (the routers' correction biases,
/// KDA's `A_log` and `dt_bias`).
pub(crate) fn kept_float32(k: &str) -> bool {
    k.contains("e_score_correction_bias") || k.ends_with("A_log") || k.ends_with("dt_bias")
}

impl KimiLinear {
    /// Python: `Model.sanitize`: drops the multi-token-prediction tensors (`model.mtp.`) and
    /// a tied `lm_head`; a sparse layer's `block_sparse_moe` becomes `mlp` (each expert's
    /// `w1`/`w2`/`w3` stacked into `switch_mlp.gate_proj`/`down_proj`/`up_proj`, the gate's
    /// correction bias moved beside the gate); the short convolutions `q_conv1d` (`[C, 1,
    /// K]`) become `q_conv.conv` (`[C, K, 1]`); `dt_bias` is flattened; `kv_b_proj` is split
    /// into `embed_q` and `unembed_out` (dequantized and requantized when quantized).
    pub fn sanitize(ck: &mut Checkpoint, a: &KimiLinearArgs) -> crate::Result<()> {
        let tied = a.tie_word_embeddings;
        ck.weights_mut()
            .retain(|k, _| !(k.starts_with("model.mtp") || tied && k == "lm_head.weight"));
        let layers = a.num_hidden_layers;
        if a.experts.num_experts > 0 {
            stack_experts(
                ck,
                "model",
                layers,
                "block_sparse_moe",
                &[("w1", "gate_proj"), ("w2", "down_proj"), ("w3", "up_proj")],
                a.experts.num_experts,
            )?;
        }
        let w = ck.weights_mut();
        let keys: Vec<String> = w.keys().into_iter().map(str::to_string).collect();
        for key in keys {
            let Some((layer, rest)) = layer_of(&key) else {
                continue;
            };
            let Some(tail) = rest.strip_prefix("block_sparse_moe.") else {
                continue;
            };
            if !a.experts.sparse.get(layer).copied().unwrap_or(false) {
                continue;
            }
            // Python renames only the expert stacks, the shared experts' projections, the
            // gate's weight and its correction bias; anything else stays (and is then
            // reported unused).
            let to = match tail {
                "gate.e_score_correction_bias" => "e_score_correction_bias",
                "gate.weight" => "gate.weight",
                t if t.starts_with("switch_mlp.") => t,
                t if ["gate_proj", "up_proj", "down_proj"]
                    .iter()
                    .any(|n| t == format!("shared_experts.{n}.weight")) =>
                {
                    t
                }
                _ => continue,
            };
            let to = format!("model.layers.{layer}.mlp.{to}");
            let file = w.file_of(&key).map(|f| f.to_path_buf()).unwrap_or_default();
            let v = w.take(&key).expect("listed above");
            w.insert(to, v, file);
        }
        for l in (0..a.linear.len()).filter(|l| a.linear[*l]) {
            sanitize_short_convs(w, &format!("model.layers.{l}.self_attn"))?;
        }
        for l in 0..layers {
            split_kv_b_proj(ck, &format!("model.layers.{l}.self_attn"), &a.attention)?;
        }
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors (`A_log`, `dt_bias` and the
    /// correction biases stay float32, mlx_lm's cast_predicate), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<KimiLinear> {
        let a = KimiLinearArgs::from_config(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, kept_float32)?;
        ck.set_quant_predicate(router_at_8_bits);
        let (d, vocab) = (a.hidden_size, a.vocab_size);
        let stack = StackConfig {
            vocab_size: vocab,
            hidden_size: d,
            num_hidden_layers: a.num_hidden_layers,
            rms_norm_eps: a.rms_norm_eps,
        };
        let layers = load_decoder_layers(
            ck,
            "model",
            stack,
            |ck, path, i| a.mixer(ck, &format!("{path}.self_attn"), i),
            |ck, path, i| a.mlp(ck, path, i),
        )?;
        Ok(KimiLinear {
            model: Stack::load_around(
                ck,
                "model",
                (vocab, d),
                layers,
                |ck, path| ck.rms_norm(path, d, a.rms_norm_eps),
                options.kernels,
            )?,
            lm_head: (!a.tie_word_embeddings)
                .then(|| ck.linear("lm_head", d, vocab, false))
                .transpose()?,
        })
    }
}

/// `model.layers.{l}.{rest}` as `(l, rest)`.
fn layer_of(key: &str) -> Option<(usize, &str)> {
    let rest = key.strip_prefix("model.layers.")?;
    let (n, rest) = rest.split_once('.')?;
    Some((n.parse().ok()?, rest))
}

stack_language_model!(KimiLinear, model, "kimi_linear");

#[cfg(test)]
mod tests {
    use super::*;

    fn routing(n_group: i32, topk_group: i32) -> KimiRouting {
        KimiRouting {
            top_k: 2,
            n_group,
            topk_group,
            routed_scaling_factor: 2.0,
            renormalize: true,
            score_function: ScoreFunction::Sigmoid,
        }
    }

    /// With groups, the best pair's group wins over the best single expert's; the weights
    /// are the uncorrected scores renormalized and scaled.
    #[test]
    fn groups_are_ranked_by_their_two_best() {
        let logit = |p: f32| (p / (1.0 - p)).ln();
        let probs = [0.8f32, 0.79, 0.1, 0.1, 0.9, 0.1, 0.1, 0.1];
        let gates: Vec<f32> = probs.iter().map(|p| logit(*p)).collect();
        let gates = Array::from_slice(&gates, &[1, 8]).unwrap();
        let bias = ops::zeros(&[8], Dtype::Float32).unwrap();
        let (inds, w) = kimi_expert_select(&gates, &bias, &routing(2, 1)).unwrap();
        let mut inds = inds.to_vec::<u32>().unwrap();
        inds.sort();
        assert_eq!(inds, [0, 1]);
        let total: f32 = w.to_vec::<f32>().unwrap().iter().sum();
        assert!((total - 2.0).abs() < 1e-6, "{total}");
        let (inds, _) = kimi_expert_select(&gates, &bias, &routing(1, 1)).unwrap();
        let mut inds = inds.to_vec::<u32>().unwrap();
        inds.sort();
        assert_eq!(inds, [0, 4]);
    }

    /// The scores keep the gate's dtype (no float32 upcast, unlike deepseek_v3's router).
    #[test]
    fn scores_keep_the_gate_dtype() {
        let gates = Array::from_slice(&[2.0f32, 1.0, 0.0, -1.0], &[1, 4])
            .unwrap()
            .astype(Dtype::Bfloat16)
            .unwrap();
        let bias = ops::zeros(&[4], Dtype::Float32).unwrap();
        let r = KimiRouting {
            score_function: ScoreFunction::Softmax,
            ..routing(1, 1)
        };
        let (_, w) = kimi_expert_select(&gates, &bias, &r).unwrap();
        assert_eq!(w.dtype(), Dtype::Bfloat16);
    }
}
