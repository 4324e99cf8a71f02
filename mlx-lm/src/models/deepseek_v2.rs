//! `deepseek_v2` (Python: `mlx_lm.models.deepseek_v2`): DeepSeek-V2's latent attention with
//! the latent expanded per head before an ordinary key/value cache ([`ExpandedMla`]), and
//! sparse blocks behind the softmax router, greedy or group-limited greedy
//! ([`GreedyMoe`]), with shared experts; the first `first_k_dense_replace` layers (and those
//! `moe_layer_freq` skips) dense (DeepSeek-V2, V2-Lite, V2.5, DeepSeek-Coder-V2).

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{Array, Result};
use mlx_tree::TreeNode;

use crate::blocks::group_router::{GreedyMoe, GreedyRouting};
use crate::blocks::mla::MlaConfig;
use crate::blocks::mla_expanded::ExpandedMla;
use crate::blocks::{load_lm_head, DecoderModel, Mlp, StackConfig};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;
use crate::models::deepseek_v3::{mla_config, sparse_layers};
use crate::models::sparse::{expert_counts, stack_experts, SAME_NAMES};

/// A deepseek_v2 layer's feed-forward block, under `mlp`: the dense MLP or the sparse block.
// One per layer, built once at load: the variants' sizes cost nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum GreedyFeedForward {
    Dense(Mlp),
    Sparse(GreedyMoe),
}

impl TreeNode for GreedyFeedForward {
    fn flatten<'a>(&'a self, f: &mut mlx_tree::Flattener<'a>) {
        match self {
            GreedyFeedForward::Dense(m) => m.flatten(f),
            GreedyFeedForward::Sparse(m) => m.flatten(f),
        }
    }

    fn unflatten(u: &mut mlx_tree::Unflattener<'_>) -> mlx_tree::Result<Self> {
        match u.peek_kind()? {
            mlx_tree::NodeKind::Struct("GreedyMoe") => {
                GreedyMoe::unflatten(u).map(GreedyFeedForward::Sparse)
            }
            _ => Mlp::unflatten(u).map(GreedyFeedForward::Dense),
        }
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        match self {
            GreedyFeedForward::Dense(m) => m.leaves_mut(f),
            GreedyFeedForward::Sparse(m) => m.leaves_mut(f),
        }
    }
}

impl Forward for GreedyFeedForward {
    fn forward(&self, x: &Array) -> Result<Array> {
        match self {
            GreedyFeedForward::Dense(m) => m.forward(x),
            GreedyFeedForward::Sparse(m) => m.forward(x),
        }
    }
}

impl crate::blocks::decoder::ChannelMixer for GreedyFeedForward {}

/// What a deepseek_v2 config describes.
#[derive(Debug, Clone)]
pub struct DeepseekV2Args {
    pub stack: StackConfig,
    pub intermediate_size: i32,
    pub attention: MlaConfig,
    pub expert_size: i32,
    /// `None`: no routed experts (`n_routed_experts` null), every layer dense.
    pub num_experts: Option<i32>,
    pub shared_expert_size: Option<i32>,
    pub routing: Option<GreedyRouting>,
    /// Per layer: sparse (else the dense MLP of `intermediate_size`).
    pub sparse: Vec<bool>,
}

/// Python: `mlx_lm.models.deepseek_v2.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct DeepseekV2 {
    pub model: DecoderModel<ExpandedMla, GreedyFeedForward>,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl DeepseekV2 {
    /// Python: deepseek_v2's `ModelArgs`, over every key of transformers'
    /// `DeepseekV2Config`. mlx_lm never renormalizes the top k and always builds an untied
    /// head and an unbiased MLP: `norm_topk_prob`, tied embeddings and `mlp_bias` are errors
    /// naming the key. Where mlx_lm requires `rope_scaling` (it reads its `factor`), a
    /// config without one gets transformers' plain interleaved rope.
    pub fn args(c: &ModelConfig) -> crate::Result<DeepseekV2Args> {
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        c.require_value("tie_word_embeddings", false)?;
        c.require_value("norm_topk_prob", false)?;
        c.require_value("mlp_bias", false)?;
        c.require(
            "topk_method",
            r#""greedy" or "group_limited_greedy""#,
            |v| v == "greedy" || v == "group_limited_greedy" || v == "gready",
        )?;
        c.require_value("scoring_func", "softmax")?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; the auxiliary losses, the router-logits output and the key-value head
        // count (every head reads the one latent) do not enter the forward;
        // `pretraining_tp` only splits transformers' matmuls, `ep_size` places experts.
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
            "aux_loss_alpha",
            "seq_aux",
            "output_router_logits",
            "router_aux_loss_coef",
            "num_key_value_heads",
            "pretraining_tp",
            "ep_size",
        ]);
        let stack = StackConfig {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: c.dim("hidden_size")?,
            num_hidden_layers: c.dim("num_hidden_layers")?,
            rms_norm_eps: c.float_or("rms_norm_eps", 1e-6)? as f32,
        };
        let attention = mla_config(c, stack.hidden_size)?;
        let num_experts = match c.get("n_routed_experts") {
            None | Some(serde_json::Value::Null) => {
                c.declare_neutral(&["n_routed_experts"]);
                None
            }
            Some(_) => Some(expert_counts(c, "n_routed_experts")?.1),
        };
        let routing = match num_experts {
            Some(e) => Some(GreedyRouting::from_config(c, e)?),
            None => {
                // No routed experts: the router's keys describe nothing that runs.
                c.declare_neutral(&[
                    "n_group",
                    "topk_group",
                    "num_experts_per_tok",
                    "routed_scaling_factor",
                ]);
                None
            }
        };
        let expert_size = c.dim("moe_intermediate_size")?;
        let shared_expert_size = match c.get("n_shared_experts") {
            None | Some(serde_json::Value::Null) => {
                c.declare_neutral(&["n_shared_experts"]);
                None
            }
            Some(_) => Some(expert_size * c.dim("n_shared_experts")?),
        };
        Ok(DeepseekV2Args {
            intermediate_size: c.dim("intermediate_size")?,
            attention,
            expert_size,
            num_experts,
            shared_expert_size,
            routing,
            sparse: sparse_layers(c, stack.num_hidden_layers, num_experts.is_some())?,
            stack,
        })
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<DeepseekV2> {
        let args = Self::args(config)?;
        Self::sanitize(ck, &args)?;
        ck.cast(options.dtype, |_| false)?;
        let a = &args;
        let model = DecoderModel::load(
            ck,
            "model",
            a.stack,
            options.kernels,
            |ck, path, _| ExpandedMla::load(ck, &format!("{path}.self_attn"), &a.attention),
            |ck, path, i| {
                let d = a.stack.hidden_size;
                Ok(match (a.num_experts, a.routing) {
                    (Some(e), Some(routing)) if a.sparse[i as usize] => {
                        GreedyFeedForward::Sparse(GreedyMoe::load(
                            ck,
                            path,
                            d,
                            a.expert_size,
                            e,
                            a.shared_expert_size,
                            routing,
                        )?)
                    }
                    _ => GreedyFeedForward::Dense(Mlp::load(
                        ck,
                        path,
                        d,
                        a.intermediate_size,
                        false,
                    )?),
                })
            },
        )?;
        let lm_head = load_lm_head(ck, "lm_head", a.stack, false)?;
        Ok(DeepseekV2 { model, lm_head })
    }

    /// Python: deepseek_v2's `sanitize`: each layer's per-expert tensors stacked into
    /// `mlp.switch_mlp` (`kv_b_proj` stays whole); also precomputed rotary frequencies, which
    /// mlx_lm's would leave to fail the load.
    pub fn sanitize(ck: &mut Checkpoint, args: &DeepseekV2Args) -> crate::Result<()> {
        ck.weights_mut()
            .retain(|k, _| !k.contains("rotary_emb.inv_freq"));
        if let Some(e) = args.num_experts {
            stack_experts(
                ck,
                "model",
                args.stack.num_hidden_layers,
                "mlp",
                &SAME_NAMES,
                e,
            )?;
        }
        Ok(())
    }
}

crate::models::base::stack_language_model!(DeepseekV2, model, "deepseek_v2");
