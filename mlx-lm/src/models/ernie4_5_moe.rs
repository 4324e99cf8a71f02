//! `ernie4_5_moe` (Python: `mlx_lm.models.ernie4_5_moe`): llama-shaped layers with an
//! interleaved ("traditional") rope and optional biases everywhere (`use_bias`), the layers
//! from `moe_layer_start_index` to `moe_layer_end_index` every `moe_layer_interval` sparse:
//! a softmax (or sigmoid, `moe_gate_act`) of the gate's logits in float32, the top k by
//! `argpartition(-g, k - 1)[..., :k]`, renormalized by `max(sum, 1e-12)`, plus shared experts
//! (Baidu's ERNIE-4.5-21B-A3B, ERNIE-4.5-300B-A47B).

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::blocks::moe::top_k_first;
use crate::blocks::{
    load_lm_head, plain_rope, rope_theta, Attention, DecoderModel, FeedForward, Mlp, SwitchGlu,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::base::DecoderArgs;
use crate::models::sparse::{stack_experts, SAME_NAMES};

/// `moe_gate_act`: how the gate's logits become scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, StaticData)]
pub enum GateActivation {
    Softmax,
    Sigmoid,
}

/// Python: `Ernie4_5_MoeMLP`: the gate, the experts (`switch_mlp`, biased with `use_bias`)
/// and the optional shared experts.
#[derive(Debug, Clone, TreeNode)]
pub struct Ernie45MoeMlp {
    pub gate: MaybeQuantizedLinear,
    pub switch_mlp: SwitchGlu,
    pub shared_experts: Option<Mlp>,
    #[tree(static)]
    pub k: i32,
    #[tree(static)]
    pub activation: GateActivation,
}

impl Forward for Ernie45MoeMlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        let gates = self.gate.forward(x)?.astype(Dtype::Float32)?;
        let gates = match self.activation {
            GateActivation::Softmax => ops::softmax(&gates, -1, false)?,
            GateActivation::Sigmoid => ops::sigmoid(&gates)?,
        };
        let inds = ops::stop_gradient(&top_k_first(&gates, self.k)?)?;
        let scores = ops::take_along_axis(&gates, &inds, -1)?;
        let denominator = ops::maximum(&scores.sum(-1, true)?, Array::from_scalar(1e-12f32))?;
        let scores = ops::divide(&scores, &denominator)?;
        let y = self.switch_mlp.forward(x, &inds)?;
        let y = ops::multiply(&y, &ops::expand_dims(&scores, -1)?)?
            .sum(-2, false)?
            .astype(y.dtype())?;
        match &self.shared_experts {
            Some(shared) => ops::add(&y, &shared.forward(x)?),
            None => Ok(y),
        }
    }
}

/// mlx_lm's ernie4_5_moe has no `shard`: its sparse layers cannot be split (an `Err`).
impl crate::blocks::ChannelMixer for Ernie45MoeMlp {}

/// What an ernie4_5_moe config describes.
#[derive(Debug, Clone)]
pub struct Ernie45MoeArgs {
    pub decoder: DecoderArgs,
    pub num_experts: i32,
    pub k: i32,
    pub expert_size: i32,
    pub shared_expert_size: Option<i32>,
    pub activation: GateActivation,
    /// Per layer: sparse (else the dense MLP of `intermediate_size`).
    pub sparse: Vec<bool>,
}

/// Python: `mlx_lm.models.ernie4_5_moe.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Ernie45Moe {
    pub model: DecoderModel<Attention, FeedForward<Ernie45MoeMlp>>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

/// A layer index key that may be a list (mlx_lm takes its min or max) or `-1`
/// (transformers: the last layer).
fn layer_index(c: &ModelConfig, key: &str, pick_max: bool) -> crate::Result<Option<i64>> {
    let error =
        |v: &serde_json::Value| invalid(c.path(), &c.key(key), &format!("not a layer index: {v}"));
    match c.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Array(items)) => {
            let ns = items
                .iter()
                .map(|v| v.as_i64().ok_or_else(|| error(v)))
                .collect::<crate::Result<Vec<i64>>>()?;
            let pick = if pick_max {
                ns.iter().max()
            } else {
                ns.iter().min()
            };
            pick.copied()
                .map(Some)
                .ok_or_else(|| error(&serde_json::Value::Null))
        }
        Some(v) => v.as_i64().map(Some).ok_or_else(|| error(v)),
    }
}

impl Ernie45Moe {
    /// Python: ernie4_5_moe's `ModelArgs`, over every key of transformers'
    /// `Ernie4_5_MoeConfig`. `moe_layer_end_index` -1 is the last layer (transformers;
    /// mlx_lm would read it as no sparse layer). `moe_use_aux_free`'s correction bias is
    /// dropped at load as mlx_lm drops it (transformers chooses the experts with it); a
    /// `moe_norm_min` other than mlx_lm's 1e-12 is an error naming the key.
    pub fn args(c: &ModelConfig) -> crate::Result<Ernie45MoeArgs> {
        c.require("moe_norm_min", "1e-12", |v| v.as_f64() == Some(1e-12))?;
        // Training only: the router's auxiliary loss and logits output, expert capacity;
        // the aux-free flag only says whether the dropped bias exists.
        c.declare_neutral(&[
            "output_router_logits",
            "router_aux_loss_coef",
            "moe_capacity",
            "moe_use_aux_free",
        ]);
        let use_bias = c.bool_or("use_bias", false)?;
        let decoder = DecoderArgs::common(
            c,
            |hidden, heads| c.dim_or("head_dim", Some(hidden / heads)),
            |head_dim| plain_rope(c, head_dim, rope_theta(c, None)?, true),
            |_| c.dim("num_key_value_heads"),
        )?;
        let decoder = DecoderArgs {
            qkv_bias: use_bias,
            o_bias: use_bias,
            mlp_bias: use_bias,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
            ..decoder
        };
        let num_experts = c.dim("moe_num_experts")?;
        let k = c.dim_or("moe_k", Some(1))?;
        if k > num_experts {
            return Err(invalid(
                c.path(),
                &c.key("moe_k"),
                &format!("{k} experts per token, but only {num_experts} experts"),
            ));
        }
        let expert_size = match c.usize("moe_intermediate_size")? {
            Some(0) | None => decoder.intermediate_size,
            Some(_) => c.dim("moe_intermediate_size")?,
        };
        let shared = c.usize("moe_num_shared_experts")?.unwrap_or(0) as i32;
        let activation = match c.string("moe_gate_act")? {
            None | Some("softmax") => GateActivation::Softmax,
            Some("sigmoid") => GateActivation::Sigmoid,
            Some(other) => {
                return Err(invalid(
                    c.path(),
                    &c.key("moe_gate_act"),
                    &format!("{other:?} is not supported (supported: softmax, sigmoid)"),
                ))
            }
        };
        let layers = decoder.num_hidden_layers as i64;
        let start = layer_index(c, "moe_layer_start_index", false)?.unwrap_or(0);
        let end = match layer_index(c, "moe_layer_end_index", true)? {
            None | Some(-1) => layers - 1,
            Some(e) => e,
        };
        let interval = c.dim_or("moe_layer_interval", Some(1))? as i64;
        let sparse = (0..layers)
            .map(|i| (i + 1) % interval == 0 && i >= start && i <= end)
            .collect();
        Ok(Ernie45MoeArgs {
            num_experts,
            k,
            expert_size,
            shared_expert_size: (shared > 0).then_some(expert_size * shared),
            activation,
            sparse,
            decoder,
        })
    }

    /// Python: ernie4_5_moe's `sanitize`: the multi-token-prediction tensors (`mtp_*`) and
    /// the correction biases dropped, each layer's per-expert tensors stacked into
    /// `mlp.switch_mlp`; also a tied `lm_head` and precomputed rotary frequencies.
    pub fn sanitize(ck: &mut Checkpoint, args: &Ernie45MoeArgs) -> crate::Result<()> {
        args.decoder.sanitize(ck);
        const DROPPED: [&str; 5] = [
            "mtp_block.",
            "mtp_linear_proj.",
            "mtp_hidden_norm.",
            "mtp_emb_norm.",
            "e_score_correction_bias",
        ];
        ck.weights_mut()
            .retain(|k, _| !DROPPED.iter().any(|p| k.contains(p)));
        stack_experts(
            ck,
            "model",
            args.decoder.num_hidden_layers,
            "mlp",
            &SAME_NAMES,
            args.num_experts,
        )
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Ernie45Moe> {
        let a = Self::args(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |_| false)?;
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
                    FeedForward::Sparse(Ernie45MoeMlp {
                        gate: ck.linear(&p("gate"), h, a.num_experts, false)?,
                        switch_mlp: SwitchGlu::load(
                            ck,
                            &p("switch_mlp"),
                            h,
                            a.expert_size,
                            a.num_experts,
                            d.mlp_bias,
                        )?,
                        shared_experts: a
                            .shared_expert_size
                            .map(|s| Mlp::load(ck, &p("shared_experts"), h, s, d.mlp_bias))
                            .transpose()?,
                        k: a.k,
                        activation: a.activation,
                    })
                } else {
                    FeedForward::Dense(Mlp::load(ck, path, h, d.intermediate_size, d.mlp_bias)?)
                })
            },
        )?;
        let lm_head = load_lm_head(ck, "lm_head", d.stack(), d.tie_word_embeddings)?;
        Ok(Ernie45Moe { model, lm_head })
    }
}

crate::models::base::stack_language_model!(Ernie45Moe, model, "ernie4_5_moe");
