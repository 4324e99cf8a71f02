//! `olmoe` (Python: `mlx_lm.models.olmoe`): attention whose queries and keys are
//! RMS-normalized over their whole projection (not per head) before the heads split, and a
//! sparse block in every layer (OLMoE-1B-7B): softmax router, top-k, optionally renormalized.

use mlx_nn::MaybeQuantizedLinear;
use mlx_tree::TreeNode;

use crate::blocks::whole_qk_norm::WholeQkNormAttention;
use crate::blocks::{
    rope_theta, AttentionConfig, DecoderModel, MoeConfig, RotaryEmbedding, Router, SparseMoe,
};
use crate::config::{invalid, ModelConfig};
use crate::models::base::DecoderArgs;
use crate::models::sparse::{expert_counts, MoeArgs, SAME_NAMES};

/// Python: olmoe's `Attention`: `q_norm` / `k_norm` over `heads * head_dim` features, as
/// OLMo 2's.
pub type OlmoeAttention = WholeQkNormAttention;

/// Python: `mlx_lm.models.olmoe.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Olmoe {
    pub model: DecoderModel<OlmoeAttention, SparseMoe>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Olmoe {
    /// Python: olmoe's `ModelArgs`, over every key of transformers' `OlmoeConfig`. After
    /// transformers: `tie_word_embeddings` defaults to false (mlx_lm: true) and `head_dim`
    /// is hidden/heads unless given (mlx_lm reads one); `clip_qkv` (transformers clamps the
    /// projections; mlx_lm ignores it) must be off. mlx_lm's own `mlp_bias` (biases on the
    /// experts) and `attention_bias` (on all four projections) are read.
    pub fn args(c: &ModelConfig) -> crate::Result<MoeArgs> {
        c.require_value("clip_qkv", serde_json::Value::Null)?;
        c.declare_neutral(&["router_aux_loss_coef", "output_router_logits"]);
        let decoder = DecoderArgs::common(
            c,
            |hidden, heads| c.dim_or("head_dim", Some(hidden / heads)),
            |head_dim| {
                RotaryEmbedding::from_config(
                    c,
                    head_dim,
                    rope_theta(c, Some(10000.0))?,
                    c.bool_or("rope_traditional", false)?,
                )
            },
            |heads| c.dim_or("num_key_value_heads", Some(heads)),
        )?;
        let attention_bias = c.bool_or("attention_bias", false)?;
        let decoder = DecoderArgs {
            qkv_bias: attention_bias,
            o_bias: attention_bias,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            ..decoder
        };
        let (top_k, experts) = expert_counts(c, "num_experts")?;
        Ok(MoeArgs {
            moe: MoeConfig {
                hidden_size: decoder.hidden_size,
                expert_size: decoder.intermediate_size,
                num_experts: experts,
                top_k,
                router: Router::SoftmaxTopKNegated {
                    norm_topk_prob: c.bool_or("norm_topk_prob", false)?,
                },
                expert_bias: c.bool_or("mlp_bias", false)?,
                shared_expert_size: None,
            },
            sparse: vec![true; decoder.num_hidden_layers as usize],
            decoder,
            experts_at: "mlp",
            expert_names: SAME_NAMES,
            quant_predicate: None,
        })
    }

    /// Reads the config, sanitizes (stacking per-expert tensors) and casts the tensors,
    /// builds the model.
    pub fn from_checkpoint(
        ck: &mut crate::Checkpoint,
        config: &ModelConfig,
        options: &crate::LoadOptions,
    ) -> crate::Result<Olmoe> {
        let args = Self::args(config)?;
        if args.decoder.num_attention_heads % args.decoder.num_key_value_heads != 0 {
            return Err(invalid(
                config.path(),
                &config.key("num_key_value_heads"),
                "must divide num_attention_heads",
            ));
        }
        args.sanitize(ck)?;
        ck.cast(options.dtype, |_| false)?;
        let (model, lm_head) = args.load_with(
            ck,
            options.kernels,
            |ck, path, i| {
                let d = &args.decoder;
                // Its q/k norms are over the whole projection, never per head.
                let attention = AttentionConfig {
                    qk_norm: None,
                    ..d.attention(i)
                };
                WholeQkNormAttention::load(
                    ck,
                    &format!("{path}.self_attn"),
                    &attention,
                    d.rms_norm_eps,
                )
            },
            |ck, path, _| SparseMoe::load(ck, path, &args.moe),
        )?;
        Ok(Olmoe { model, lm_head })
    }
}

crate::models::base::stack_language_model!(Olmoe, model, "olmoe");
