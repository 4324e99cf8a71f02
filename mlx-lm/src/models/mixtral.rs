//! `mixtral` (Python: `mlx_lm.models.mixtral`): llama's attention with a sparse block in every
//! layer, under `block_sparse_moe` (Mixtral-8x7B, 8x22B): the top-k router logits, then a
//! softmax over those k.

use crate::blocks::moe::BlockSparseMoe;
use crate::blocks::{rope_theta, MoeConfig, RotaryEmbedding, Router, SparseMoe};
use crate::checkpoint::Checkpoint;
use crate::config::ModelConfig;
use crate::models::base::DecoderArgs;
use crate::models::sparse::{expert_counts, moe_decoder, MoeArgs};

moe_decoder!(
    /// Python: `mlx_lm.models.mixtral.Model`.
    Mixtral,
    "mixtral",
    BlockSparseMoe
);

impl Mixtral {
    /// Python: mixtral's `ModelArgs`, over every key of transformers' `MixtralConfig`. After
    /// transformers: `head_dim` is read when given (mlx_lm: hidden/heads always),
    /// `rope_scaling` applies (mlx_lm builds a plain RoPE), and the router's training-time
    /// jitter must be off or is ignored at inference as transformers does. The sliding
    /// window must be off (`sliding_window` null: mlx_lm never slides).
    pub fn args(c: &ModelConfig) -> crate::Result<MoeArgs> {
        c.require_value("sliding_window", serde_json::Value::Null)?;
        // Training-only: the auxiliary loss, the router logits output, and the jitter
        // transformers' router adds only while training.
        c.declare_neutral(&[
            "router_aux_loss_coef",
            "output_router_logits",
            "router_jitter_noise",
        ]);
        let decoder = DecoderArgs::common(
            c,
            |hidden, heads| c.dim_or("head_dim", Some(hidden / heads)),
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
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            ..decoder
        };
        let (top_k, experts) = expert_counts(c, "num_local_experts")?;
        Ok(MoeArgs {
            moe: MoeConfig {
                hidden_size: decoder.hidden_size,
                expert_size: decoder.intermediate_size,
                num_experts: experts,
                top_k,
                router: Router::TopKSoftmax,
                expert_bias: false,
                shared_expert_size: None,
            },
            sparse: vec![true; decoder.num_hidden_layers as usize],
            decoder,
            experts_at: "block_sparse_moe",
            quant_predicate: None,
            expert_names: [("w1", "gate_proj"), ("w2", "down_proj"), ("w3", "up_proj")],
        })
    }

    fn channel(
        ck: &mut Checkpoint,
        path: &str,
        _sparse: bool,
        args: &MoeArgs,
    ) -> crate::Result<BlockSparseMoe> {
        SparseMoe::load(ck, path, &args.moe).map(BlockSparseMoe)
    }
}
