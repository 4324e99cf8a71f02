//! `kimi_linear` (Python: `mlx_lm.models.kimi_linear`): Kimi Linear, Kimi Delta Attention
//! (KDA: the gated delta rule with a decay gate per key channel, its q, k and v each through
//! a short convolution) in most layers and multi-head latent attention without rotary
//! embedding ([`Mla`], `mla_use_nope`) in the others, every layer's feed-forward block dense
//! or a mixture of experts behind a grouped router with shared experts.
//!
//! A KDA layer's state (three convolution states and the float32 recurrent state, Python's
//! `ArraysCache(size=4)`) and an MLA layer's compressed key/value cache are leaves of one
//! cache tree, which goes through `compile_mut` like any other state.

use mlx_nn::{Conv1d, Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::ops::{self, Ellipsis};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};
use serde_json::Value;

use crate::blocks::conv::{causal_conv1d, conv_state, load_depthwise_conv1d, ConvActivation};
use crate::blocks::decoder::TokenMixer;
use crate::blocks::gated_delta_net::normalize_qk;
use crate::blocks::mla::{mla_scale, split_kv_b_proj, Mla, MlaConfig};
use crate::blocks::moe::FeedForward;
use crate::blocks::rows::arrays_entry;
use crate::blocks::switch::SwitchGlu;
use crate::blocks::{Layer, LayerContext, LayerStack, Mlp, RotaryEmbedding, Rows};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::gated_delta::gated_delta_update;
use crate::models::base::stack_language_model;
use crate::models::sparse::stack_experts;
use crate::quantization::QuantParams;

/// The slots of a KDA layer's [`ArraysCache`] (Python: `ArraysCache(size=4)`): the q, k and
/// v convolutions' last inputs `[batch, kernel - 1, heads * head_dim]` in the model's dtype,
/// then the recurrent state `[batch, heads, head_dim, head_dim]` in float32.
const Q_CONV: usize = 0;
const K_CONV: usize = 1;
const V_CONV: usize = 2;
const STATE: usize = 3;

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
}

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
    /// KDA heads and their size (`linear_attn_config`'s `num_heads`, `head_dim`).
    pub kda_heads: i32,
    pub kda_head_dim: i32,
    pub conv_kernel: i32,
    /// Per layer: KDA (`kda_layers`, 1-based in the config), else MLA.
    pub linear: Vec<bool>,
    pub num_experts: i32,
    pub expert_size: i32,
    pub shared_expert_size: Option<i32>,
    pub routing: KimiRouting,
    /// Per layer: the experts, else the dense MLP.
    pub sparse: Vec<bool>,
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
        let kda_heads = linear_config.dim("num_heads")?;
        let kda_head_dim = linear_config.dim("head_dim")?;
        let conv_kernel = linear_config.dim_or("short_conv_kernel_size", Some(4))?;
        let kda_layers = one_based_layers(&linear_config, "kda_layers", layers)?
            .ok_or_else(|| invalid(c.path(), &linear_config.key("kda_layers"), "missing"))?;
        let linear: Vec<bool> = (1..=layers).map(|i| kda_layers.contains(&i)).collect();
        if let Some(full) = one_based_layers(&linear_config, "full_attn_layers", layers)? {
            let agrees = (1..=layers).all(|i| full.contains(&i) != linear[i as usize - 1]);
            if !agrees {
                return Err(invalid(
                    c.path(),
                    &linear_config.key("full_attn_layers"),
                    "must name exactly the layers kda_layers does not",
                ));
            }
        }
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
        c.require_value("linear_num_heads", kda_heads)?;
        c.require_value("linear_head_dim", kda_head_dim)?;
        c.require_value("linear_conv_kernel_dim", conv_kernel)?;
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

        let num_experts = c.usize("num_experts")?.unwrap_or(0);
        let num_experts = i32::try_from(num_experts)
            .map_err(|_| invalid(c.path(), &c.key("num_experts"), "too large"))?;
        let top_k = c.dim_or("num_experts_per_token", Some(1))?;
        let n_group = c.dim_or("num_expert_group", Some(1))?;
        let topk_group = c.dim_or("topk_group", Some(1))?;
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
        check_routing(c, num_experts, n_group, topk_group, top_k)?;
        let first_dense =
            i32::try_from(c.usize("first_k_dense_replace")?.unwrap_or(0)).unwrap_or(i32::MAX);
        let freq = c.dim_or("moe_layer_freq", Some(1))?;
        let sparse = (0..layers)
            .map(|i| num_experts > 0 && i >= first_dense && i % freq == 0)
            .collect::<Vec<bool>>();
        let kinds: Vec<&str> = sparse
            .iter()
            .map(|s| if *s { "sparse" } else { "dense" })
            .collect();
        c.require_value("mlp_layer_types", kinds)?;
        let expert_size = c.dim("moe_intermediate_size")?;
        let shared = c.usize("num_shared_experts")?.unwrap_or(0);
        let shared_expert_size = (shared > 0)
            .then(|| {
                i32::try_from(shared)
                    .ok()
                    .and_then(|s| s.checked_mul(expert_size))
                    .ok_or_else(|| invalid(c.path(), &c.key("num_shared_experts"), "too large"))
            })
            .transpose()?;
        Ok(KimiLinearArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            num_hidden_layers: layers,
            intermediate_size: c.dim("intermediate_size")?,
            rms_norm_eps,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            attention,
            kda_heads,
            kda_head_dim,
            conv_kernel,
            linear,
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

    fn projection_dim(&self) -> i32 {
        self.kda_heads * self.kda_head_dim
    }
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

/// Python: `ShortConv1d`: a depthwise convolution without bias, then SiLU, under `conv`.
#[derive(Debug, Clone, TreeNode)]
pub struct ShortConv1d {
    pub conv: Conv1d,
}

/// Python: `KimiDeltaAttention`.
#[derive(Debug, Clone, TreeNode)]
pub struct KimiDeltaAttention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub q_conv: ShortConv1d,
    pub k_conv: ShortConv1d,
    pub v_conv: ShortConv1d,
    pub f_a_proj: MaybeQuantizedLinear,
    pub f_b_proj: MaybeQuantizedLinear,
    pub b_proj: MaybeQuantizedLinear,
    pub g_a_proj: MaybeQuantizedLinear,
    pub g_b_proj: MaybeQuantizedLinear,
    /// `[1, 1, heads, 1]` (Python's shape; the recurrence reads it as `[heads, 1]`).
    #[tree(rename = "A_log")]
    pub a_log: Array,
    /// `[heads * head_dim]` (read as `[heads, head_dim]`).
    pub dt_bias: Array,
    pub o_norm: RMSNorm,
    pub o_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub num_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
}

impl KimiDeltaAttention {
    /// Takes the layer's tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        a: &KimiLinearArgs,
    ) -> crate::Result<KimiDeltaAttention> {
        let (d, h, dk, pd) = (
            a.hidden_size,
            a.kda_heads,
            a.kda_head_dim,
            a.projection_dim(),
        );
        let p = |name: &str| format!("{path}.{name}");
        let mut conv = |name: &str| -> crate::Result<ShortConv1d> {
            Ok(ShortConv1d {
                conv: load_depthwise_conv1d(
                    ck,
                    &p(&format!("{name}.conv")),
                    pd,
                    a.conv_kernel,
                    false,
                )?,
            })
        };
        let (q_conv, k_conv, v_conv) = (conv("q_conv")?, conv("k_conv")?, conv("v_conv")?);
        Ok(KimiDeltaAttention {
            q_proj: ck.linear(&p("q_proj"), d, pd, false)?,
            k_proj: ck.linear(&p("k_proj"), d, pd, false)?,
            v_proj: ck.linear(&p("v_proj"), d, pd, false)?,
            q_conv,
            k_conv,
            v_conv,
            f_a_proj: ck.linear(&p("f_a_proj"), d, dk, false)?,
            f_b_proj: ck.linear(&p("f_b_proj"), dk, pd, false)?,
            b_proj: ck.linear(&p("b_proj"), d, h, false)?,
            g_a_proj: ck.linear(&p("g_a_proj"), d, dk, false)?,
            g_b_proj: ck.linear(&p("g_b_proj"), dk, pd, false)?,
            a_log: ck.array(&p("A_log"), &[1, 1, h, 1])?,
            dt_bias: ck.array(&p("dt_bias"), &[pd])?,
            o_norm: ck.rms_norm(&p("o_norm"), dk, a.rms_norm_eps)?,
            o_proj: ck.linear(&p("o_proj"), pd, d, false)?,
            num_heads: h,
            head_dim: dk,
        })
    }

    /// The layer over rows `x` `[B * L, hidden]`, continuing `cache`'s state; `use_kernel`
    /// allows the one-kernel recurrence where it applies (it does not take a gate per
    /// channel: the ops run, as mlx_lm runs them off Metal).
    fn forward(
        &self,
        x: &Array,
        rows: Rows,
        use_kernel: bool,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let (b, t, h, dk) = (rows.batch, rows.len, self.num_heads, self.head_dim);
        let mut cache = arrays_entry(cache, "a kimi_linear KDA layer")?;
        let mask = match &cache {
            Some(c) => c.make_mask(t)?,
            None => None,
        };
        let mut conv = |proj: &MaybeQuantizedLinear, conv: &ShortConv1d, slot: usize| {
            causal_conv1d(
                &conv.conv,
                &rows.unfold(&proj.forward(x)?)?,
                mask.as_ref(),
                cache.as_deref_mut(),
                slot,
                ConvActivation::Silu,
            )
        };
        let q = conv(&self.q_proj, &self.q_conv, Q_CONV)?;
        let k = conv(&self.k_proj, &self.k_conv, K_CONV)?;
        let v = conv(&self.v_proj, &self.v_conv, V_CONV)?;
        let shape = [b, t, h, dk];
        let q = ops::reshape(&q, &shape)?;
        let k = ops::reshape(&k, &shape)?;
        let v = ops::reshape(&v, &shape)?;
        let (q, k) = normalize_qk(&q, &k, (dk as f64).powf(-0.5), 1e-6)?;

        let a = ops::reshape(&self.f_b_proj.forward(&self.f_a_proj.forward(x)?)?, &shape)?;
        let beta_in = ops::reshape(&self.b_proj.forward(x)?, &[b, t, h])?;
        let state = match &cache {
            Some(c) => c[STATE].clone(),
            None => ops::zeros(&[b, h, dk, dk], Dtype::Float32)?,
        };
        let (out, state) = gated_delta_update(
            &q,
            &k,
            &v,
            &a,
            &beta_in,
            &ops::reshape(&self.a_log, &[h, 1])?,
            &ops::reshape(&self.dt_bias, &[h, dk])?,
            state,
            mask.as_ref(),
            use_kernel,
        )?;
        if let Some(c) = cache {
            c[STATE] = state;
            c.advance(t)?;
        }
        let gate = ops::reshape(&self.g_b_proj.forward(&self.g_a_proj.forward(x)?)?, &shape)?;
        let out = ops::multiply(
            &self.o_norm.forward(&ops::reshape(&out, &shape)?)?,
            &ops::sigmoid(&gate)?,
        )?;
        self.o_proj.forward(&ops::reshape(&out, &[b * t, -1])?)
    }

    /// The three convolutions' states and the float32 recurrent state (Python:
    /// `ArraysCache(size=4)`, filled on the first call).
    fn make_cache(&self, batch: i32, dtype: Dtype) -> Result<LayerCache> {
        let dk = self.head_dim;
        Ok(LayerCache::Arrays(ArraysCache::new(vec![
            conv_state(&self.q_conv.conv, batch, dtype)?,
            conv_state(&self.k_conv.conv, batch, dtype)?,
            conv_state(&self.v_conv.conv, batch, dtype)?,
            ops::zeros(&[batch, self.num_heads, dk, dk], Dtype::Float32)?,
        ])))
    }
}

/// A layer's token mixer, both under `self_attn` (Python: one attribute, either class).
// One per layer, built once at load.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, TreeNode)]
#[tree(transparent)]
pub enum KimiMixer {
    Kda(KimiDeltaAttention),
    #[tree(other)]
    Mla(Mla),
}

/// Python: `KimiDecoderLayer`: pre-norm, `self_attn` then `mlp`.
#[derive(Debug, Clone, TreeNode)]
pub struct KimiDecoderLayer {
    pub self_attn: KimiMixer,
    pub mlp: FeedForward<KimiSparseMoe>,
    pub input_layernorm: RMSNorm,
    pub post_attention_layernorm: RMSNorm,
}

impl KimiDecoderLayer {
    /// Takes layer `i`'s tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        i: usize,
        a: &KimiLinearArgs,
    ) -> crate::Result<KimiDecoderLayer> {
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let p = |name: &str| format!("{path}.{name}");
        let self_attn = if a.linear[i] {
            KimiMixer::Kda(KimiDeltaAttention::load(ck, &p("self_attn"), a)?)
        } else {
            KimiMixer::Mla(Mla::load_nope(ck, &p("self_attn"), &a.attention, eps)?)
        };
        let mlp = if a.sparse[i] {
            let e = a.num_experts;
            FeedForward::Sparse(KimiSparseMoe {
                gate: ck.linear(&p("mlp.gate"), d, e, false)?,
                switch_mlp: SwitchGlu::load(ck, &p("mlp.switch_mlp"), d, a.expert_size, e, false)?,
                e_score_correction_bias: ck.array(&p("mlp.e_score_correction_bias"), &[e])?,
                shared_experts: a
                    .shared_expert_size
                    .map(|s| Mlp::load(ck, &p("mlp.shared_experts"), d, s, false))
                    .transpose()?,
                routing: a.routing,
            })
        } else {
            FeedForward::Dense(Mlp::load(ck, &p("mlp"), d, a.intermediate_size, false)?)
        };
        Ok(KimiDecoderLayer {
            self_attn,
            mlp,
            input_layernorm: ck.rms_norm(&p("input_layernorm"), d, eps)?,
            post_attention_layernorm: ck.rms_norm(&p("post_attention_layernorm"), d, eps)?,
        })
    }
}

impl Layer for KimiDecoderLayer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let n = self.input_layernorm.forward(x)?;
        let r = match &self.self_attn {
            KimiMixer::Kda(kda) => {
                kda.forward(&n, ctx.rows, ctx.kernels.fused_gated_delta, cache)?
            }
            KimiMixer::Mla(mla) => mla.forward(&n, ctx.rows, cache)?,
        };
        let h = ops::add(x, &r)?;
        let r = self
            .mlp
            .forward(&self.post_attention_layernorm.forward(&h)?)?;
        ops::add(&h, &r)
    }

    /// A KDA layer's four arrays, an MLA layer's compressed key/value cache (Python:
    /// `ArraysCache(size=4)` / `KVCache()`).
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match &self.self_attn {
            KimiMixer::Kda(kda) => kda.make_cache(batch, dtype),
            KimiMixer::Mla(mla) => TokenMixer::make_cache(mla, batch, capacity, dtype),
        }
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

/// mlx_lm's quant_predicate: the router's gate at 8 bits, groups of 64.
fn router_at_8_bits(path: &str) -> Option<QuantParams> {
    path.ends_with("mlp.gate")
        .then_some(QuantParams::affine(64, 8))
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
        if a.num_experts > 0 {
            stack_experts(
                ck,
                "model",
                layers,
                "block_sparse_moe",
                &[("w1", "gate_proj"), ("w2", "down_proj"), ("w3", "up_proj")],
                a.num_experts,
            )?;
        }
        let w = ck.weights_mut();
        let keys: Vec<String> = w.keys().into_iter().map(str::to_string).collect();
        for key in keys {
            let file = w.file_of(&key).map(|f| f.to_path_buf()).unwrap_or_default();
            let mlx = |source| crate::Error::Mlx {
                path: file.clone(),
                source,
            };
            let Some((layer, rest)) = layer_of(&key) else {
                continue;
            };
            let sparse = a.sparse.get(layer).copied().unwrap_or(false);
            let prefix = format!("model.layers.{layer}");
            if sparse {
                if let Some(tail) = rest.strip_prefix("block_sparse_moe.") {
                    // Python renames only the expert stacks, the shared experts' projections,
                    // the gate's weight and its correction bias; anything else stays (and is
                    // then reported unused).
                    let to = match tail {
                        "gate.e_score_correction_bias" => Some("e_score_correction_bias".into()),
                        "gate.weight" => Some("gate.weight".to_string()),
                        t if t.starts_with("switch_mlp.") => Some(t.to_string()),
                        t if t.starts_with("shared_experts.")
                            && ["gate_proj", "up_proj", "down_proj"]
                                .iter()
                                .any(|n| t == format!("shared_experts.{n}.weight")) =>
                        {
                            Some(t.to_string())
                        }
                        _ => None,
                    };
                    if let Some(to) = to {
                        let v = w.take(&key).expect("listed above");
                        w.insert(format!("{prefix}.mlp.{to}"), v, file.clone());
                    }
                    continue;
                }
            }
            if !a.linear.get(layer).copied().unwrap_or(false) {
                continue;
            }
            for name in ["q", "k", "v"] {
                if rest == format!("self_attn.{name}_conv1d.weight") {
                    let v = w.take(&key).expect("listed above");
                    let v = if v.ndim() == 3 {
                        ops::moveaxis(&v, 2, 1).map_err(mlx)?
                    } else {
                        v
                    };
                    w.insert(
                        format!("{prefix}.self_attn.{name}_conv.conv.weight"),
                        v,
                        file.clone(),
                    );
                }
            }
            if rest == "self_attn.dt_bias" {
                let v = w.take(&key).expect("listed above");
                let v = if v.ndim() > 1 {
                    ops::reshape(&v, &[-1]).map_err(mlx)?
                } else {
                    v
                };
                w.insert(key.clone(), v, file.clone());
            }
        }
        let m = &a.attention;
        for l in 0..layers {
            split_kv_b_proj(
                ck,
                &format!("model.layers.{l}.self_attn"),
                m.num_heads,
                m.qk_nope_head_dim,
                m.v_head_dim,
                m.kv_lora_rank,
            )?;
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
        ck.cast(options.dtype, |k| {
            k.contains("e_score_correction_bias") || k.ends_with("A_log") || k.ends_with("dt_bias")
        })?;
        ck.set_quant_predicate(router_at_8_bits);
        let layers = (0..a.num_hidden_layers as usize)
            .map(|i| KimiDecoderLayer::load(ck, &format!("model.layers.{i}"), i, &a))
            .collect::<crate::Result<Vec<_>>>()?;
        let (d, vocab) = (a.hidden_size, a.vocab_size);
        Ok(KimiLinear {
            model: KimiLinearModel {
                embed_tokens: ck.embedding("model.embed_tokens", vocab, d)?,
                layers,
                norm: ck.rms_norm("model.norm", d, a.rms_norm_eps)?,
                kernels: options.kernels,
                ends: Default::default(),
            },
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
