//! `qwen2_moe` (Python: `mlx_lm.models.qwen2_moe`): qwen2's attention (q/k/v biases) with a
//! sparse block in every layer plus a shared expert behind a sigmoid gate (Qwen1.5-MoE-A2.7B,
//! Qwen2-57B-A14B).

use crate::blocks::{rope_theta, MoeConfig, RotaryEmbedding, Router, SparseMoe};
use crate::checkpoint::Checkpoint;
use crate::config::ModelConfig;
use crate::models::base::DecoderArgs;
use crate::models::sparse::{expert_counts, moe_decoder, MoeArgs, SAME_NAMES};

moe_decoder!(
    /// Python: `mlx_lm.models.qwen2_moe.Model`.
    Qwen2Moe,
    "qwen2_moe",
    SparseMoe
);

impl Qwen2Moe {
    /// Python: qwen2_moe's `ModelArgs`, over every key of transformers' `Qwen2MoeConfig`.
    /// mlx_lm makes every layer sparse and never renormalizes the top-k weights: transformers'
    /// `decoder_sparse_step`, `mlp_only_layers` and `norm_topk_prob` must say the same (their
    /// defaults, as every Qwen2-MoE checkpoint has them). After transformers, `qkv_bias` is
    /// read (false drops the q/k/v biases; mlx_lm always has them) and `rope_scaling` of
    /// any type applies (mlx_lm accepts `linear` and then ignores it); the sliding window
    /// must be off.
    pub fn args(c: &ModelConfig) -> crate::Result<MoeArgs> {
        DecoderArgs::no_sliding_window(c)?;
        c.declare_neutral(&["router_aux_loss_coef", "output_router_logits"]);
        c.require_value("decoder_sparse_step", 1)?;
        c.require("mlp_only_layers", "[] (every layer sparse)", |v| {
            v.as_array().is_some_and(Vec::is_empty)
        })?;
        c.require_value("norm_topk_prob", false)?;
        let decoder = DecoderArgs::common(
            c,
            |hidden, heads| Ok(hidden / heads),
            |head_dim| {
                RotaryEmbedding::from_config(
                    c,
                    head_dim,
                    rope_theta(c, Some(1_000_000.0))?,
                    c.bool_or("rope_traditional", false)?,
                )
            },
            |heads| c.dim_or("num_key_value_heads", Some(heads)),
        )?;
        let decoder = DecoderArgs {
            qkv_bias: c.bool_or("qkv_bias", true)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            ..decoder
        };
        let (top_k, experts) = expert_counts(c, "num_experts")?;
        Ok(MoeArgs {
            moe: MoeConfig {
                hidden_size: decoder.hidden_size,
                expert_size: c.dim("moe_intermediate_size")?,
                num_experts: experts,
                top_k,
                router: Router::SoftmaxTopKNegated {
                    norm_topk_prob: false,
                },
                expert_bias: false,
                shared_expert_size: Some(c.dim("shared_expert_intermediate_size")?),
            },
            sparse: vec![true; decoder.num_hidden_layers as usize],
            decoder,
            experts_at: "mlp",
            quant_predicate: None,
            expert_names: SAME_NAMES,
        })
    }

    fn channel(
        ck: &mut Checkpoint,
        path: &str,
        _sparse: bool,
        args: &MoeArgs,
    ) -> crate::Result<SparseMoe> {
        SparseMoe::load(ck, path, &args.moe)
    }
}
