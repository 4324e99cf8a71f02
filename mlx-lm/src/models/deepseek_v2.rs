//! `deepseek_v2` (Python: `mlx_lm.models.deepseek_v2`): DeepSeek-V2's latent attention with
//! the latent expanded per head before an ordinary key/value cache ([`ExpandedMla`]), and
//! sparse blocks behind the softmax router, greedy or group-limited greedy
//! ([`GreedyMoe`]), with shared experts; the first `first_k_dense_replace` layers (and those
//! `moe_layer_freq` skips) dense (DeepSeek-V2, V2-Lite, V2.5, DeepSeek-Coder-V2).

use mlx_nn::MaybeQuantizedLinear;
use mlx_tree::TreeNode;

use crate::blocks::group_router::{GreedyMoe, GreedyRouting};
use crate::blocks::mla_expanded::ExpandedMla;
use crate::blocks::{load_lm_head, DecoderModel, FeedForward};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;
use crate::models::deepseek_v3::DeepseekArgs;
use crate::models::sparse::{stack_experts, SAME_NAMES};

/// What a deepseek_v2 config describes.
pub type DeepseekV2Args = DeepseekArgs<GreedyRouting>;

/// Python: `mlx_lm.models.deepseek_v2.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct DeepseekV2 {
    pub model: DecoderModel<ExpandedMla, FeedForward<GreedyMoe>>,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl DeepseekV2 {
    /// Python: deepseek_v2's `ModelArgs`, over every key of transformers'
    /// `DeepseekV2Config`. mlx_lm never renormalizes the top k and always builds an untied
    /// head and an unbiased MLP: `norm_topk_prob`, tied embeddings and `mlp_bias` are errors
    /// naming the key. Where mlx_lm requires `rope_scaling` (it reads its `factor`), a
    /// config without one gets transformers' plain interleaved rope.
    pub fn args(c: &ModelConfig) -> crate::Result<DeepseekV2Args> {
        c.require_value("norm_topk_prob", false)?;
        c.require_value("mlp_bias", false)?;
        c.require(
            "topk_method",
            r#""greedy" or "group_limited_greedy""#,
            |v| v == "greedy" || v == "group_limited_greedy" || v == "gready",
        )?;
        c.require_value("scoring_func", "softmax")?;
        DeepseekArgs::read(c, |e| GreedyRouting::from_config(c, e))
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
                a.feed_forward(ck, path, i, |ck, e, routing| {
                    GreedyMoe::load(
                        ck,
                        path,
                        a.stack.hidden_size,
                        a.expert_size,
                        e,
                        a.shared_expert_size,
                        routing,
                    )
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
