//! `dots1` (Python: `mlx_lm.models.dots1`): qwen3's attention (per-head q/k norms, the
//! config's rope scaling) with sparse blocks behind DeepSeek-V3's grouped sigmoid router in
//! dots1's copy (groups dropped when `n_group != topk_group`), the experts under `experts`,
//! always one shared MLP; the first `first_k_dense_replace` layers dense (rednote's
//! dots.llm1).

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{Array, Result};
use mlx_tree::TreeNode;

use crate::blocks::group_router::{grouped_moe_forward, GroupLimit, GroupRouting, MoeGate};
use crate::blocks::{
    load_lm_head, rope_theta, Attention, DecoderModel, FeedForward, Mlp, RotaryEmbedding, SwitchGlu,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::base::DecoderArgs;
use crate::models::sparse::{expert_counts, stack_experts, SAME_NAMES};

/// Python: `Dots1MoE`: the router (`gate`), the routed experts (`experts`) and the shared
/// MLP every token goes through (`shared_experts`, with the config's `mlp_bias`).
#[derive(Debug, Clone, TreeNode)]
pub struct Dots1Moe {
    pub gate: MoeGate,
    pub experts: SwitchGlu,
    pub shared_experts: Mlp,
}

impl Forward for Dots1Moe {
    fn forward(&self, x: &Array) -> Result<Array> {
        grouped_moe_forward(&self.gate, &self.experts, Some(&self.shared_experts), x)
    }
}

/// mlx_lm's dots1 has no `shard`: its sparse layers cannot be split (an `Err`).
impl crate::blocks::ChannelMixer for Dots1Moe {}

/// What a dots1 config describes.
#[derive(Debug, Clone)]
pub struct Dots1Args {
    pub decoder: DecoderArgs,
    pub expert_size: i32,
    pub num_experts: i32,
    pub shared_expert_size: i32,
    pub routing: GroupRouting,
    /// Per layer: sparse (else the dense MLP of `intermediate_size`).
    pub sparse: Vec<bool>,
}

/// Python: `mlx_lm.models.dots1.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Dots1 {
    pub model: DecoderModel<Attention, FeedForward<Dots1Moe>>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Dots1 {
    /// Python: dots1's `ModelArgs`, over every key of transformers' `Dots1Config`. After
    /// transformers where mlx_lm requires a key: `norm_topk_prob` defaults to false,
    /// `first_k_dense_replace` to 0. mlx_lm's attention has no biases and never slides:
    /// `attention_bias` and sliding layers (`layer_types`, or transformers' rule from
    /// `sliding_window` and `max_window_layers`) are errors naming the key.
    pub fn args(c: &ModelConfig) -> crate::Result<Dots1Args> {
        c.require_value("attention_bias", false)?;
        c.require(
            "scoring_func",
            r#""noaux_tc" or "sigmoid" (dots1 routes by sigmoid scores)"#,
            |v| v == "noaux_tc" || v == "sigmoid",
        )?;
        c.declare_neutral(&["output_router_logits", "router_aux_loss_coef"]);
        let decoder = DecoderArgs::common(
            c,
            |hidden, heads| c.dim_or("head_dim", Some(hidden / heads)),
            |head_dim| RotaryEmbedding::from_config(c, head_dim, rope_theta(c, None)?, false),
            |heads| c.dim_or("num_key_value_heads", Some(heads)),
        )?;
        no_sliding_layers(c, decoder.num_hidden_layers)?;
        let decoder = DecoderArgs {
            qk_norm: true,
            mlp_bias: c.bool_or("mlp_bias", false)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            ..decoder
        };
        let num_experts = expert_counts(c, "n_routed_experts")?.1;
        let routing =
            GroupRouting::from_config(c, num_experts, GroupLimit::SomeGroupsDropped, false)?;
        let expert_size = c.dim("moe_intermediate_size")?;
        let first_dense = c.usize("first_k_dense_replace")?.unwrap_or(0);
        let first_dense = i32::try_from(first_dense).unwrap_or(i32::MAX);
        Ok(Dots1Args {
            expert_size,
            num_experts,
            shared_expert_size: expert_size * c.dim("n_shared_experts")?,
            routing,
            sparse: (0..decoder.num_hidden_layers)
                .map(|i| i >= first_dense)
                .collect(),
            decoder,
        })
    }

    /// Reads the config, sanitizes and casts the tensors (the correction biases too: dots1
    /// has no `cast_predicate`), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Dots1> {
        let args = Self::args(config)?;
        Self::sanitize(ck, &args)?;
        ck.cast(options.dtype, |_| false)?;
        let a = &args;
        let d = &a.decoder;
        let model = DecoderModel::load(
            ck,
            "model",
            d.stack(),
            options.kernels,
            |ck, path, i| Attention::load(ck, &format!("{path}.self_attn"), &d.attention(i)),
            |ck, path, i| {
                let h = d.hidden_size;
                let p = |name: &str| format!("{path}.{name}");
                Ok(if a.sparse[i as usize] {
                    FeedForward::Sparse(Dots1Moe {
                        gate: MoeGate::load(ck, &p("gate"), a.num_experts, h, a.routing)?,
                        experts: SwitchGlu::load(
                            ck,
                            &p("experts"),
                            h,
                            a.expert_size,
                            a.num_experts,
                            false,
                        )?,
                        shared_experts: Mlp::load(
                            ck,
                            &p("shared_experts"),
                            h,
                            a.shared_expert_size,
                            d.mlp_bias,
                        )?,
                    })
                } else {
                    FeedForward::Dense(Mlp::load(ck, path, h, d.intermediate_size, d.mlp_bias)?)
                })
            },
        )?;
        let lm_head = load_lm_head(ck, "lm_head", d.stack(), d.tie_word_embeddings)?;
        Ok(Dots1 { model, lm_head })
    }

    /// Python: dots1's `sanitize`: a tied `lm_head` and precomputed rotary frequencies
    /// dropped, each sparse layer's per-expert tensors `mlp.experts.{e}.{proj}` stacked into
    /// `mlp.experts.{proj}`.
    pub fn sanitize(ck: &mut Checkpoint, args: &Dots1Args) -> crate::Result<()> {
        args.decoder.sanitize(ck);
        let layers = args.decoder.num_hidden_layers;
        stack_experts_in_place(ck, layers, &SAME_NAMES, args.num_experts)
    }
}

/// [`stack_experts`] into the `experts` module itself (dots1's layout) rather than
/// `switch_mlp`: stacked under a scratch name, then moved.
fn stack_experts_in_place(
    ck: &mut Checkpoint,
    layers: i32,
    names: &[(&str, &str)],
    experts: i32,
) -> crate::Result<()> {
    stack_experts(ck, "model", layers, "mlp", names, experts)?;
    let stacked: Vec<String> = ck
        .weights_mut()
        .keys()
        .into_iter()
        .filter(|k| k.contains(".mlp.switch_mlp."))
        .map(str::to_string)
        .collect();
    for key in stacked {
        let file = ck.weights_mut().file_of(&key).map(|p| p.to_path_buf());
        if let Some(a) = ck.weights_mut().take(&key) {
            let to = key.replace(".mlp.switch_mlp.", ".mlp.experts.");
            let file = file.unwrap_or_else(|| ck.dir().to_path_buf());
            ck.weights_mut().insert(to, a, file);
        }
    }
    Ok(())
}

/// transformers' Dots1Config slides the attention of the layers `layer_types` marks, or
/// (without it) of those from `max_window_layers` on when `sliding_window` is set; mlx_lm
/// never does. Supported: no sliding layer.
fn no_sliding_layers(c: &ModelConfig, layers: i32) -> crate::Result<()> {
    if c.get("layer_types").is_some_and(|v| !v.is_null()) {
        c.require("layer_types", r#"every layer "full_attention""#, |v| {
            v.as_array()
                .is_some_and(|types| types.iter().all(|t| t == "full_attention"))
        })?;
        c.declare_neutral(&["sliding_window", "max_window_layers"]);
        return Ok(());
    }
    // Absent, transformers' default window (4096); null, none.
    let window = match c.get("sliding_window") {
        None => Some(4096),
        Some(serde_json::Value::Null) => None,
        Some(_) => c.usize("sliding_window")?,
    };
    // transformers' default: 62, dots.llm1's depth.
    let from = c.usize("max_window_layers")?.unwrap_or(62);
    if window.is_some() && from < layers as usize {
        return Err(invalid(
            c.path(),
            &c.key("max_window_layers"),
            &format!(
                "layers from {from} on slide over {} positions, which dots1 does not support \
                 (supported: max_window_layers >= num_hidden_layers or no sliding_window)",
                window.unwrap_or_default()
            ),
        ));
    }
    Ok(())
}

crate::models::base::stack_language_model!(Dots1, model, "dots1");
