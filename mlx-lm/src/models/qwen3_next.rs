//! `qwen3_next` (Python: `mlx_lm.models.qwen3_next`, Qwen3-Next-80B-A3B): gated-delta-net
//! linear-attention layers whose input projections are fused and interleaved per key head,
//! with gated full attention every `full_attention_interval` layers, and sparse
//! mixture-of-experts blocks with a shared expert behind a sigmoid gate (or, with
//! `num_experts: 0`, the dense MLP in every layer).

use mlx_nn::MaybeQuantizedLinear;
use mlx_rs::ops;
use mlx_tree::TreeNode;

use crate::blocks::{
    load_lm_head, Attention, AttentionConfig, DecoderModel, FeedForward, GatedDeltaNet,
    GatedDeltaNetConfig, GdnProjections, Hybrid, Mlp, MoeConfig, RotaryEmbedding, Router,
    SparseMoe, StackConfig,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::qwen3_5::full_attention_layers;
use crate::models::qwen3_moe::mlp_only_layers;
use crate::models::sparse::{expert_counts, stack_experts, SAME_NAMES};
use crate::quantization::QuantParams;
use crate::weights::Weights;

/// Python: qwen3_next's `ModelArgs`.
#[derive(Debug, Clone)]
pub struct Qwen3NextArgs {
    pub stack: StackConfig,
    pub intermediate_size: i32,
    pub attention: AttentionConfig,
    pub linear: GatedDeltaNetConfig,
    pub tie_word_embeddings: bool,
    /// Per layer: full attention, else linear attention.
    pub full_attention: Vec<bool>,
    /// The sparse block; `None` without experts.
    pub moe: Option<MoeConfig>,
    /// Per layer: the sparse block (else the dense MLP of `intermediate_size`).
    pub sparse: Vec<bool>,
}

/// A layer's token mixer: linear attention, or full attention every
/// `full_attention_interval`-th layer.
pub type Qwen3NextMixer = Hybrid<GatedDeltaNet, Attention>;

/// Python: `mlx_lm.models.qwen3_next.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen3Next {
    pub model: DecoderModel<Qwen3NextMixer, FeedForward>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Qwen3Next {
    /// Python: `ModelArgs`, over every key of transformers' `Qwen3NextConfig`.
    ///
    /// After transformers: the RoPE settings (`rope_theta`, `partial_rotary_factor`) are read
    /// under `rope_parameters` where transformers 5 writes them, else at the top level as
    /// Qwen3-Next's own checkpoints and mlx_lm have them; `layer_types`, where given, says
    /// which layers are full attention (mlx_lm: `full_attention_interval` only).
    pub fn args(c: &ModelConfig) -> crate::Result<Qwen3NextArgs> {
        // transformers' ACT2FN: "swish" is SiLU too.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (a yarn or llama3
        // rope reads it itself); the router's auxiliary loss and whether the forward returns
        // its logits are training settings.
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
            "router_aux_loss_coef",
            "output_router_logits",
        ]);
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
        let params = c.section("rope_parameters");
        let rope_setting = |key: &str, default: f64| -> crate::Result<f64> {
            let nested = match &params {
                Some(p) => p.float(key)?,
                None => None,
            };
            Ok(nested.or(c.float(key)?).unwrap_or(default))
        };
        // transformers' defaults (mlx_lm requires both keys).
        let theta = rope_setting("rope_theta", 10_000.0)?;
        let partial = rope_setting("partial_rotary_factor", 0.25)?;
        let rope_dims = (head_dim as f64 * partial) as i32;
        let rms_norm_eps = c.float_or("rms_norm_eps", 1e-6)? as f32;
        let attention_bias = c.bool_or("attention_bias", false)?;
        let layers = c.dim("num_hidden_layers")?;
        let linear = GatedDeltaNetConfig {
            hidden_size: hidden,
            linear_num_value_heads: c.dim("linear_num_value_heads")?,
            linear_num_key_heads: c.dim("linear_num_key_heads")?,
            linear_key_head_dim: c.dim("linear_key_head_dim")?,
            linear_value_head_dim: c.dim("linear_value_head_dim")?,
            linear_conv_kernel_dim: c.dim("linear_conv_kernel_dim")?,
            rms_norm_eps,
            projections: GdnProjections::Fused,
        };
        if linear.linear_num_value_heads % linear.linear_num_key_heads != 0 {
            return Err(invalid(
                c.path(),
                &c.key("linear_num_value_heads"),
                "must be a multiple of linear_num_key_heads",
            ));
        }
        let experts = c.usize("num_experts")?.unwrap_or(0);
        let moe = if experts > 0 {
            let (top_k, num_experts) = expert_counts(c, "num_experts")?;
            Some(MoeConfig {
                hidden_size: hidden,
                expert_size: c.dim("moe_intermediate_size")?,
                num_experts,
                top_k,
                router: Router::SoftmaxTopK {
                    norm_topk_prob: c.bool_or("norm_topk_prob", false)?,
                },
                expert_bias: false,
                shared_expert_size: Some(c.dim("shared_expert_intermediate_size")?),
            })
        } else {
            // Without experts the sparse block's settings say nothing.
            c.declare_neutral(&[
                "num_experts_per_tok",
                "moe_intermediate_size",
                "shared_expert_intermediate_size",
                "norm_topk_prob",
            ]);
            None
        };
        let step = c.dim_or("decoder_sparse_step", Some(1))?;
        let mlp_only = mlp_only_layers(c)?;
        let sparse = (0..layers)
            .map(|i| moe.is_some() && !mlp_only.contains(&i) && (i + 1) % step == 0)
            .collect();
        Ok(Qwen3NextArgs {
            stack: StackConfig {
                vocab_size: c.dim("vocab_size")?,
                hidden_size: hidden,
                num_hidden_layers: layers,
                rms_norm_eps,
            },
            intermediate_size: c.dim("intermediate_size")?,
            attention: AttentionConfig {
                hidden_size: hidden,
                num_heads: heads,
                num_kv_heads: c.dim("num_key_value_heads")?,
                head_dim,
                qkv_bias: attention_bias,
                o_bias: attention_bias,
                qk_norm: Some(rms_norm_eps),
                output_gate: true,
                rope: Some(RotaryEmbedding::from_config(c, rope_dims, theta, false)?),
                sliding_window: None,
            },
            linear,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            full_attention: full_attention_layers(c, layers)?,
            moe,
            sparse,
        })
    }

    /// Python: `Model.sanitize`: drops the multi-token-prediction head's `mtp.` tensors and a
    /// tied `lm_head`, stacks each layer's per-expert tensors into `mlp.switch_mlp`, and for
    /// a Hugging Face checkpoint (conv1d weights `[C, 1, K]`) reorders them to `[C, K, 1]` and
    /// adds one to the norm weights (stored there as offsets from one).
    ///
    /// mlx_lm does all of it only when it finds per-expert tensors, so it loads a dense
    /// (`num_experts: 0`) Hugging Face checkpoint with its norms off by one and its
    /// convolution weights in the wrong axis order; here the convolution weights' layout
    /// decides, as transformers' model is the same either way.
    pub fn sanitize(ck: &mut Checkpoint, args: &Qwen3NextArgs) -> crate::Result<()> {
        {
            let w = ck.weights_mut();
            w.retain(|k, _| !k.contains("mtp."));
            if args.tie_word_embeddings {
                w.retain(|k, _| k != "lm_head.weight");
            }
        }
        if let Some(moe) = &args.moe {
            stack_experts(
                ck,
                "model",
                args.stack.num_hidden_layers,
                "mlp",
                &SAME_NAMES,
                moe.num_experts,
            )?;
        }
        let w = ck.weights_mut();
        hf_convs_and_norms(w)
    }

    /// Reads the config, sanitizes and casts the tensors (all of them: mlx_lm's qwen3_next
    /// has no `cast_predicate`), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Qwen3Next> {
        let a = Self::args(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |_| false)?;
        ck.set_quant_predicate(gates_at_8_bits);
        let model = DecoderModel::load(
            ck,
            "model",
            a.stack,
            options.kernels,
            |ck, path, i| {
                Ok(if a.full_attention[i as usize] {
                    Hybrid::Second(Attention::load(
                        ck,
                        &format!("{path}.self_attn"),
                        &a.attention,
                    )?)
                } else {
                    Hybrid::First(GatedDeltaNet::load(
                        ck,
                        &format!("{path}.linear_attn"),
                        &a.linear,
                    )?)
                })
            },
            |ck, path, i| {
                Ok(match (&a.moe, a.sparse[i as usize]) {
                    (Some(moe), true) => FeedForward::Sparse(SparseMoe::load(ck, path, moe)?),
                    _ => FeedForward::Dense(Mlp::load(
                        ck,
                        path,
                        a.stack.hidden_size,
                        a.intermediate_size,
                        false,
                    )?),
                })
            },
        )?;
        let lm_head = load_lm_head(ck, "lm_head", a.stack, a.tie_word_embeddings)?;
        Ok(Qwen3Next { model, lm_head })
    }
}

/// The end of qwen3_next's and qwen3_5's `sanitize` for a Hugging Face checkpoint (one with
/// a `conv1d.weight` not yet `[C, K, 1]`): the convolution weights `[C, 1, K]` reordered to
/// `[C, K, 1]`, and one added to the norms' weights (stored there as offsets from one).
pub(crate) fn hf_convs_and_norms(w: &mut Weights) -> crate::Result<()> {
    let unsanitized = w.keys().iter().any(|k| {
        k.contains("conv1d.weight") && w.get(k).and_then(|a| a.shape().last()) != Some(&1)
    });
    const NORMS: [&str; 5] = [
        ".input_layernorm.weight",
        ".post_attention_layernorm.weight",
        "model.norm.weight",
        ".q_norm.weight",
        ".k_norm.weight",
    ];
    w.map(|k, v| {
        if k.contains("conv1d.weight") && v.shape().last() != Some(&1) {
            return ops::moveaxis(v, 2, 1).map(Some);
        }
        if unsanitized && v.ndim() == 1 && NORMS.iter().any(|s| k.ends_with(s)) {
            return ops::add(v, 1.0f32).map(Some);
        }
        Ok(None)
    })
}

/// Python: qwen3_next's `quant_predicate`: the routers (`mlp.gate`) and the shared experts'
/// gates at 8 bits in groups of 64, whatever the rest is quantized to.
pub(crate) fn gates_at_8_bits(path: &str) -> Option<QuantParams> {
    (path.ends_with("mlp.gate") || path.ends_with("shared_expert_gate"))
        .then_some(QuantParams::affine(64, 8))
}

crate::models::base::stack_language_model!(Qwen3Next, model, "qwen3_next");
