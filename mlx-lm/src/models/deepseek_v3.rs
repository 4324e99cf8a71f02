//! `deepseek_v3` (Python: `mlx_lm.models.deepseek_v3`): multi-head latent attention
//! ([`Mla`]) with a compressed cache, and sparse blocks behind the grouped sigmoid router
//! ([`GroupedMoe`]) with shared experts; the first `first_k_dense_replace` layers (and those
//! `moe_layer_freq` skips) dense (DeepSeek-V3, R1, Kimi-K2 and their shape).

use mlx_nn::MaybeQuantizedLinear;
use mlx_tree::TreeNode;

use crate::blocks::group_router::{GroupLimit, GroupRouting, GroupedMoe};
use crate::blocks::mla::{mla_scale, split_kv_b_proj, Mla, MlaConfig};
use crate::blocks::{
    load_lm_head, rope_theta, DecoderModel, FeedForward, Mlp, RotaryEmbedding, StackConfig,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::sparse::{expert_counts, stack_experts, SAME_NAMES};

/// What a DeepSeek-V2 or V3 config describes; `R` is the family's router.
#[derive(Debug, Clone)]
pub struct DeepseekArgs<R> {
    pub stack: StackConfig,
    pub intermediate_size: i32,
    pub attention: MlaConfig,
    pub expert_size: i32,
    /// `None`: no routed experts (`n_routed_experts` null), every layer dense.
    pub num_experts: Option<i32>,
    pub shared_expert_size: Option<i32>,
    /// The router, with routed experts.
    pub routing: Option<R>,
    /// Per layer: sparse (else the dense MLP of `intermediate_size`).
    pub sparse: Vec<bool>,
}

/// What a deepseek_v3 config describes.
pub type DeepseekV3Args = DeepseekArgs<GroupRouting>;

impl<R> DeepseekArgs<R> {
    /// The keys DeepSeek-V2 and V3 read alike; `routing` reads the family's router from the
    /// routed expert count.
    pub(crate) fn read(
        c: &ModelConfig,
        routing: impl FnOnce(i32) -> crate::Result<R>,
    ) -> crate::Result<DeepseekArgs<R>> {
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        c.require_value("tie_word_embeddings", false)?;
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
            Some(e) => Some(routing(e)?),
            None => {
                // No routed experts: the router's keys describe nothing that runs.
                c.declare_neutral(&[
                    "n_group",
                    "topk_group",
                    "num_experts_per_tok",
                    "routed_scaling_factor",
                    "norm_topk_prob",
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
        Ok(DeepseekArgs {
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

    /// Layer `layer`'s feed-forward block under `path`: where the layer is sparse, `sparse`
    /// loads the family's sparse block from the routed expert count and the router.
    pub(crate) fn feed_forward<S>(
        &self,
        ck: &mut Checkpoint,
        path: &str,
        layer: i32,
        sparse: impl FnOnce(&mut Checkpoint, i32, R) -> crate::Result<S>,
    ) -> crate::Result<FeedForward<S>>
    where
        R: Copy,
    {
        Ok(match (self.num_experts, self.routing) {
            (Some(e), Some(r)) if self.sparse[layer as usize] => {
                FeedForward::Sparse(sparse(ck, e, r)?)
            }
            _ => FeedForward::Dense(Mlp::load(
                ck,
                path,
                self.stack.hidden_size,
                self.intermediate_size,
                false,
            )?),
        })
    }
}

/// Python: `mlx_lm.models.deepseek_v3.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct DeepseekV3 {
    pub model: DecoderModel<Mla, FeedForward<GroupedMoe>>,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl DeepseekV3 {
    /// Python: deepseek_v3's `ModelArgs`, over every key of transformers'
    /// `DeepseekV3Config`. Supported only as mlx_lm runs it: the `noaux_tc` router with
    /// sigmoid scores, interleaved ("traditional") rotary features, an untied head.
    pub fn args(c: &ModelConfig) -> crate::Result<DeepseekV3Args> {
        c.require_value("topk_method", "noaux_tc")?;
        c.require_value("scoring_func", "sigmoid")?;
        // transformers' `rope_interleave` (default true) is mlx_lm's traditional rope, which
        // it always uses.
        c.require_value("rope_interleave", true)?;
        // The multi-token prediction layers are dropped at load as mlx_lm drops them.
        c.declare_neutral(&["num_nextn_predict_layers"]);
        DeepseekArgs::read(c, |e| {
            GroupRouting::from_config(c, e, GroupLimit::SeveralGroups, true)
        })
    }

    /// Reads the config, sanitizes and casts the tensors (the correction biases stay
    /// float32), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<DeepseekV3> {
        let args = Self::args(config)?;
        Self::sanitize(ck, &args)?;
        ck.cast(options.dtype, |k| k.contains("e_score_correction_bias"))?;
        let a = &args;
        let model = DecoderModel::load(
            ck,
            "model",
            a.stack,
            options.kernels,
            |ck, path, _| Mla::load(ck, &format!("{path}.self_attn"), &a.attention),
            |ck, path, i| {
                a.feed_forward(ck, path, i, |ck, e, routing| {
                    GroupedMoe::load(
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
        Ok(DeepseekV3 { model, lm_head })
    }

    /// Python: deepseek_v3's `sanitize`: each layer's per-expert tensors stacked into
    /// `mlp.switch_mlp`, `kv_b_proj` split into `embed_q` / `unembed_out`, the multi-token
    /// prediction layers (those past `num_hidden_layers`; mlx_lm: `model.layers.61`, the
    /// first of DeepSeek-V3's) and precomputed rotary frequencies dropped. FP8 block-scaled
    /// weights (`weight_scale_inv`) and compressed-tensors int4 (`weight_packed`) are not
    /// read: an error names the first such tensor.
    pub fn sanitize(ck: &mut Checkpoint, args: &DeepseekV3Args) -> crate::Result<()> {
        let layers = args.stack.num_hidden_layers;
        ck.weights_mut().retain(|k, _| {
            let mtp = k
                .strip_prefix("model.layers.")
                .and_then(|rest| rest.split('.').next())
                .and_then(|n| n.parse::<i32>().ok())
                .is_some_and(|n| n >= layers);
            !(mtp || k.contains("rotary_emb.inv_freq"))
        });
        let unsupported = ck
            .weights_mut()
            .keys()
            .into_iter()
            .find(|k| k.ends_with("weight_scale_inv") || k.ends_with("weight_packed"))
            .map(str::to_string);
        if let Some(key) = unsupported {
            let file = ck
                .weights_mut()
                .file_of(&key)
                .map(|p| p.to_path_buf())
                .unwrap_or_else(|| ck.dir().to_path_buf());
            return Err(invalid(
                &file,
                &key,
                "FP8 block-scaled and int4 compressed-tensors checkpoints are not supported: \
                 convert the model with mlx_lm.convert first",
            ));
        }
        if let Some(e) = args.num_experts {
            stack_experts(ck, "model", layers, "mlp", &SAME_NAMES, e)?;
        }
        for l in 0..layers {
            split_kv_b_proj(ck, &format!("model.layers.{l}.self_attn"), &args.attention)?;
        }
        Ok(())
    }
}

/// DeepSeek-V2/V3's attention as a config describes it: `q_lora_rank` (null: one `q_proj`),
/// `kv_lora_rank`, the head widths (transformers' derived `qk_head_dim` and `head_dim` must
/// agree), `attention_bias`, and the interleaved rope of `qk_rope_head_dim` features with
/// yarn's `mscale_all_dim` also scaling the attention.
pub(crate) fn mla_config(c: &ModelConfig, hidden_size: i32) -> crate::Result<MlaConfig> {
    let q_lora_rank = match c.get("q_lora_rank") {
        None | Some(serde_json::Value::Null) => {
            c.declare_neutral(&["q_lora_rank"]);
            None
        }
        Some(_) => Some(c.dim("q_lora_rank")?),
    };
    let qk_nope_head_dim = c.dim("qk_nope_head_dim")?;
    let qk_rope_head_dim = c.dim("qk_rope_head_dim")?;
    // transformers derives these two from the others.
    c.require_value("qk_head_dim", qk_nope_head_dim + qk_rope_head_dim)?;
    c.require_value("head_dim", qk_rope_head_dim)?;
    let rope =
        RotaryEmbedding::from_config(c, qk_rope_head_dim, rope_theta(c, Some(10000.0))?, true)?;
    // transformers 5 writes the scaling under `rope_parameters`.
    let scaling = c
        .section("rope_scaling")
        .or_else(|| c.section("rope_parameters"));
    let (mscale_all_dim, factor) = match scaling {
        Some(s) => (
            s.float("mscale_all_dim")?.unwrap_or(0.0),
            s.float("factor")?.unwrap_or(1.0),
        ),
        None => (0.0, 1.0),
    };
    Ok(MlaConfig {
        hidden_size,
        num_heads: c.dim("num_attention_heads")?,
        q_lora_rank,
        kv_lora_rank: c.dim("kv_lora_rank")?,
        qk_nope_head_dim,
        qk_rope_head_dim,
        v_head_dim: c.dim("v_head_dim")?,
        attention_bias: c.bool_or("attention_bias", false)?,
        rope,
        scale: mla_scale(qk_nope_head_dim + qk_rope_head_dim, mscale_all_dim, factor),
    })
}

/// Per layer of `layers`, whether it is sparse: with routed `experts`, the layers from
/// `first_k_dense_replace` on that `moe_layer_freq` divides.
pub(crate) fn sparse_layers(
    c: &ModelConfig,
    layers: i32,
    experts: bool,
) -> crate::Result<Vec<bool>> {
    // Zero is a valid count here (every layer sparse), where `dim` wants a size.
    let first_dense = c.usize("first_k_dense_replace")?.unwrap_or(0);
    let first_dense = i32::try_from(first_dense).unwrap_or(i32::MAX);
    let freq = c.dim_or("moe_layer_freq", Some(1))?;
    if freq <= 0 {
        return Err(invalid(
            c.path(),
            &c.key("moe_layer_freq"),
            "must be positive",
        ));
    }
    Ok((0..layers)
        .map(|i| experts && i >= first_dense && i % freq == 0)
        .collect())
}

crate::models::base::stack_language_model!(DeepseekV3, model, "deepseek_v3");
