//! `qwen3_moe` (Python: `mlx_lm.models.qwen3_moe`): qwen3's attention (per-head q/k norms)
//! with sparse mixture-of-experts blocks (Qwen3-30B-A3B, Qwen3-235B-A22B): softmax router,
//! top-k, optionally renormalized (`norm_topk_prob`).

use crate::blocks::{rope_theta, FeedForward, Mlp, MoeConfig, RotaryEmbedding, Router, SparseMoe};
use crate::checkpoint::Checkpoint;
use crate::config::{invalid, ModelConfig};
use crate::models::base::DecoderArgs;
use crate::models::sparse::{expert_counts, moe_decoder, MoeArgs, SAME_NAMES};
use crate::quantization::QuantParams;

moe_decoder!(
    /// Python: `mlx_lm.models.qwen3_moe.Model`.
    Qwen3Moe,
    "qwen3_moe",
    FeedForward
);

impl Qwen3Moe {
    /// Python: qwen3_moe's `ModelArgs`, over every key of transformers' `Qwen3MoeConfig`.
    /// After transformers: `head_dim` defaults to hidden/heads (mlx_lm requires it), the
    /// expert count is also read as transformers 5 writes it (`num_local_experts`; mlx_lm
    /// reads `num_experts` only), `attention_bias` gives q/k/v/o biases, and `rope_scaling`
    /// applies (mlx_lm builds a plain RoPE whatever it says); the sliding window must be off.
    pub fn args(c: &ModelConfig) -> crate::Result<MoeArgs> {
        DecoderArgs::no_sliding_window(c)?;
        // Training-only: the router's auxiliary loss and whether the forward returns its
        // logits.
        c.declare_neutral(&["router_aux_loss_coef", "output_router_logits"]);
        let attention_bias = c.bool_or("attention_bias", false)?;
        let decoder = DecoderArgs::common(
            c,
            |hidden, heads| c.dim_or("head_dim", Some(hidden / heads)),
            |head_dim| RotaryEmbedding::from_config(c, head_dim, rope_theta(c, None)?, false),
            |_| c.dim("num_key_value_heads"),
        )?;
        let decoder = DecoderArgs {
            qk_norm: true,
            qkv_bias: attention_bias,
            o_bias: attention_bias,
            tie_word_embeddings: c
                .bool("tie_word_embeddings")?
                .ok_or_else(|| invalid(c.path(), &c.key("tie_word_embeddings"), "missing"))?,
            ..decoder
        };
        let experts_key = if c.values().contains_key("num_experts") {
            "num_experts"
        } else {
            "num_local_experts"
        };
        let (top_k, experts) = expert_counts(c, experts_key)?;
        let step = c.dim_or("decoder_sparse_step", Some(1))?;
        let mlp_only = mlp_only_layers(c)?;
        let sparse = (0..decoder.num_hidden_layers)
            .map(|i| !mlp_only.contains(&i) && (i + 1) % step == 0)
            .collect();
        Ok(MoeArgs {
            moe: MoeConfig {
                hidden_size: decoder.hidden_size,
                expert_size: c.dim("moe_intermediate_size")?,
                num_experts: experts,
                top_k,
                router: Router::SoftmaxTopK {
                    norm_topk_prob: c.bool_or("norm_topk_prob", false)?,
                },
                expert_bias: false,
                shared_expert_size: None,
            },
            decoder,
            sparse,
            experts_at: "mlp",
            expert_names: SAME_NAMES,
            quant_predicate: Some(router_at_8_bits),
        })
    }

    /// A layer's block: the sparse one, or the dense MLP of `intermediate_size` in the
    /// layers `mlp_only_layers` and `decoder_sparse_step` leave dense.
    fn channel(
        ck: &mut Checkpoint,
        path: &str,
        sparse: bool,
        args: &MoeArgs,
    ) -> crate::Result<FeedForward> {
        let d = &args.decoder;
        Ok(if sparse {
            FeedForward::Sparse(SparseMoe::load(ck, path, &args.moe)?)
        } else {
            FeedForward::Dense(Mlp::load(
                ck,
                path,
                d.hidden_size,
                d.intermediate_size,
                false,
            )?)
        })
    }
}

/// Python: qwen3_moe's `quant_predicate`: the routers (`mlp.gate`) at 8 bits in groups of 64,
/// whatever the rest is quantized to.
pub(crate) fn router_at_8_bits(path: &str) -> Option<QuantParams> {
    path.ends_with("mlp.gate")
        .then_some(QuantParams::affine(64, 8))
}

/// `mlp_only_layers`: the layers kept dense (none when absent).
pub(crate) fn mlp_only_layers(c: &ModelConfig) -> crate::Result<Vec<i32>> {
    let error = |m: &str| invalid(c.path(), &c.key("mlp_only_layers"), m);
    match c.get("mlp_only_layers") {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(serde_json::Value::Array(v)) => v
            .iter()
            .map(|x| {
                x.as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| error(&format!("not a layer index: {x}")))
            })
            .collect(),
        Some(v) => Err(error(&format!("not a list: {v}"))),
    }
}
