//! `glm4_moe` (Python: `mlx_lm.models.glm4_moe`): GQA attention with biased q/k/v, optional
//! per-head q/k norms and a rope over part of each head (`partial_rotary_factor`), and sparse
//! blocks behind DeepSeek-V3's grouped sigmoid router ([`GroupedMoe`]) with shared experts,
//! the first `first_k_dense_replace` layers dense (GLM-4.5, GLM-4.5-Air, GLM-4.6).

use mlx_nn::MaybeQuantizedLinear;
use mlx_tree::TreeNode;

use crate::blocks::group_router::{GroupLimit, GroupRouting, GroupScoring, GroupedMoe};
use crate::blocks::{
    partial_rotary_factor, plain_rope, rope_theta, Attention, DecoderModel, FeedForward, Mlp,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;
use crate::models::base::DecoderArgs;
use crate::models::sparse::{expert_counts, stack_experts, SAME_NAMES};

/// What a glm4_moe config describes.
#[derive(Debug, Clone)]
pub struct Glm4MoeArgs {
    pub decoder: DecoderArgs,
    pub expert_size: i32,
    /// `None`: no routed experts (`n_routed_experts` null), every layer dense.
    pub num_experts: Option<i32>,
    pub shared_expert_size: Option<i32>,
    pub routing: GroupRouting,
    /// Per layer: sparse (else the dense MLP of `intermediate_size`).
    pub sparse: Vec<bool>,
}

/// Python: `mlx_lm.models.glm4_moe.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Glm4Moe {
    pub model: DecoderModel<Attention, FeedForward<GroupedMoe>>,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Glm4Moe {
    /// Python: glm4_moe's `ModelArgs`, over every key of transformers' `Glm4MoeConfig`.
    /// After transformers where mlx_lm requires a key: `head_dim` defaults to hidden/heads,
    /// `partial_rotary_factor` to 0.5, `n_group` / `topk_group` to 1. mlx_lm reads
    /// `rope_scaling` and never applies it, and always builds an untied head: a scaled rope
    /// or tied embeddings are errors naming the key.
    pub fn args(c: &ModelConfig) -> crate::Result<Glm4MoeArgs> {
        c.require_value("topk_method", "noaux_tc")?;
        c.require_value("scoring_func", "sigmoid")?;
        c.require_value("tie_word_embeddings", false)?;
        // Training-only: the router's auxiliary loss and whether the forward returns its
        // logits; the multi-token prediction layers (`num_nextn_predict_layers`, transformers
        // 5: `num_mtp_layers`) are dropped at load as mlx_lm drops them.
        c.declare_neutral(&[
            "output_router_logits",
            "router_aux_loss_coef",
            "num_nextn_predict_layers",
            "num_mtp_layers",
        ]);
        let decoder = DecoderArgs::common(
            c,
            |hidden, heads| c.dim_or("head_dim", Some(hidden / heads)),
            |head_dim| {
                let factor = partial_rotary_factor(c, Some(0.5))?;
                let dims = (head_dim as f64 * factor) as i32;
                plain_rope(c, dims, rope_theta(c, Some(10000.0))?, false)
            },
            |_| c.dim("num_key_value_heads"),
        )?;
        let attention_bias = c.bool_or("attention_bias", false)?;
        let decoder = DecoderArgs {
            qk_norm: c.bool_or("use_qk_norm", false)?,
            qkv_bias: attention_bias,
            o_bias: false,
            tie_word_embeddings: false,
            ..decoder
        };
        let num_experts = match c.get("n_routed_experts") {
            None | Some(serde_json::Value::Null) => None,
            Some(_) => Some(expert_counts(c, "n_routed_experts")?.1),
        };
        let routing = match num_experts {
            Some(e) => GroupRouting::from_config(c, e, GroupLimit::SeveralGroups, true)?,
            None => {
                // No routed experts: the router's keys describe nothing that runs.
                c.declare_neutral(&[
                    "n_group",
                    "topk_group",
                    "num_experts_per_tok",
                    "routed_scaling_factor",
                    "norm_topk_prob",
                ]);
                GroupRouting {
                    top_k: 1,
                    n_group: 1,
                    topk_group: 1,
                    routed_scaling_factor: 1.0,
                    norm_topk_prob: true,
                    group_limit: GroupLimit::SeveralGroups,
                    denominator_eps: None,
                    scoring: GroupScoring::Sigmoid,
                }
            }
        };
        let expert_size = c.dim("moe_intermediate_size")?;
        let shared_expert_size = match c.get("n_shared_experts") {
            None | Some(serde_json::Value::Null) => None,
            Some(_) => Some(expert_size * c.dim("n_shared_experts")?),
        };
        // Zero is a valid count here (every layer sparse), where `dim` wants a size.
        let first_dense = c.usize("first_k_dense_replace")?.unwrap_or(1);
        let first_dense = i32::try_from(first_dense).unwrap_or(i32::MAX);
        let sparse = (0..decoder.num_hidden_layers)
            .map(|i| num_experts.is_some() && i >= first_dense)
            .collect();
        Ok(Glm4MoeArgs {
            decoder,
            expert_size,
            num_experts,
            shared_expert_size,
            routing,
            sparse,
        })
    }

    /// Reads the config, sanitizes and casts the tensors (the correction biases stay
    /// float32, mlx_lm's `cast_predicate`), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Glm4Moe> {
        let args = Self::args(config)?;
        Self::sanitize(ck, &args)?;
        ck.cast(options.dtype, |k| k.contains("e_score_correction_bias"))?;
        let a = &args;
        let d = &a.decoder;
        let model = DecoderModel::load(
            ck,
            "model",
            d.stack(),
            options.kernels,
            |ck, path, i| Attention::load(ck, &format!("{path}.self_attn"), &d.attention(i)),
            |ck, path, i| {
                Ok(match a.num_experts {
                    Some(e) if a.sparse[i as usize] => FeedForward::Sparse(GroupedMoe::load(
                        ck,
                        path,
                        d.hidden_size,
                        a.expert_size,
                        e,
                        a.shared_expert_size,
                        a.routing,
                    )?),
                    _ => FeedForward::Dense(Mlp::load(
                        ck,
                        path,
                        d.hidden_size,
                        d.intermediate_size,
                        false,
                    )?),
                })
            },
        )?;
        let lm_head = crate::blocks::load_lm_head(ck, "lm_head", d.stack(), false)?;
        Ok(Glm4Moe { model, lm_head })
    }

    /// Python: glm4_moe's `sanitize`: each layer's per-expert tensors stacked into
    /// `mlp.switch_mlp`, the multi-token prediction layer (`model.layers.{num_hidden_layers}`)
    /// dropped; also precomputed rotary frequencies, which mlx_lm's would leave to fail the
    /// load.
    pub fn sanitize(ck: &mut Checkpoint, args: &Glm4MoeArgs) -> crate::Result<()> {
        let layers = args.decoder.num_hidden_layers;
        args.decoder.sanitize(ck);
        drop_layers_from(ck, layers);
        if let Some(e) = args.num_experts {
            stack_experts(ck, "model", layers, "mlp", &SAME_NAMES, e)?;
        }
        Ok(())
    }
}

/// Drops the tensors of the layers `model.layers.{n}` and past (the multi-token prediction
/// layers DeepSeek-V3 and GLM-4.5 checkpoints append to the stack).
pub(crate) fn drop_layers_from(ck: &mut Checkpoint, layers: i32) {
    ck.weights_mut().retain(|k, _| {
        !k.strip_prefix("model.layers.")
            .and_then(|rest| rest.split('.').next())
            .and_then(|n| n.parse::<i32>().ok())
            .is_some_and(|n| n >= layers)
    });
}

crate::models::base::stack_language_model!(Glm4Moe, model, "glm4_moe");
