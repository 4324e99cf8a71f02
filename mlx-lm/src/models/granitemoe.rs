//! `granitemoe` (Python: `mlx_lm.models.granitemoe`): granite's µP-style scalars
//! (embeddings times `embedding_multiplier`, sublayer outputs times `residual_multiplier`,
//! attention scaled by `attention_multiplier`, logits divided by `logits_scaling`) with every
//! layer's MLP a sparse block under `block_sparse_moe`: the router's top-k logits
//! (`argpartition(kth=-k)[..., -k:]`), a softmax over those k in float32, the experts' outputs
//! summed by them and cast back to the experts' dtype (IBM Granite 3.0/3.1 MoE: 1B-A400M,
//! 3B-A800M).

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::decoder::ChannelMixer;
use crate::blocks::moe::top_k_last;
use crate::blocks::{LayerStack, SwitchGlu};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;
use crate::models::granite::{GraniteArgs, GraniteLayer};
use crate::models::sparse::expert_counts;
use crate::quantization::QuantParams;

/// What a granitemoe config describes: granite's and the experts'.
#[derive(Debug, Clone)]
pub struct GraniteMoeArgs {
    pub granite: GraniteArgs,
    pub num_experts: i32,
    pub top_k: i32,
}

/// Python: `GraniteMoeTopKGating`: the router's logits (`layer`), their top k and a softmax
/// over those k in float32.
#[derive(Debug, Clone, TreeNode)]
pub struct GraniteMoeTopKGating {
    pub layer: MaybeQuantizedLinear,
    #[tree(static)]
    pub top_k: i32,
}

impl GraniteMoeTopKGating {
    /// The experts `[..., k]` and their float32 weights `[..., k]` of rows `x`.
    pub fn route(&self, x: &Array) -> Result<(Array, Array)> {
        let logits = self.layer.forward(x)?;
        let idx = ops::stop_gradient(&top_k_last(&logits, self.top_k)?)?;
        let top = ops::take_along_axis(&logits, &idx, -1)?;
        Ok((idx, ops::softmax(&top.astype(Dtype::Float32)?, -1, false)?))
    }
}

/// Python: `GraniteMoeMoE`: the experts (`switch_mlp`) and the router.
#[derive(Debug, Clone, TreeNode)]
pub struct GraniteMoeMoe {
    pub switch_mlp: SwitchGlu,
    pub router: GraniteMoeTopKGating,
}

impl Forward for GraniteMoeMoe {
    fn forward(&self, x: &Array) -> Result<Array> {
        let (idx, gates) = self.router.route(x)?;
        let y = self.switch_mlp.forward(x, &idx)?;
        ops::multiply(&y, &ops::expand_dims(&gates, -1)?)?
            .sum(-2, false)?
            .astype(y.dtype())
    }
}

impl ChannelMixer for GraniteMoeMoe {
    const KEY: &'static str = "block_sparse_moe";
}

/// Python: `GraniteMoeDecoderLayer`: granite's layer with the sparse block for the MLP.
pub type GraniteMoeLayer = GraniteLayer<GraniteMoeMoe>;

/// Python: `GraniteMoEModel`.
pub type GraniteMoeModel = LayerStack<GraniteMoeLayer>;

/// Python: `mlx_lm.models.granitemoe.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct GraniteMoe {
    pub model: GraniteMoeModel,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl GraniteMoe {
    /// Python: granitemoe's `ModelArgs`, over every key of transformers' `GraniteMoeConfig`
    /// (granite's, read as granite reads them, plus `num_local_experts` and
    /// `num_experts_per_tok`; the router's auxiliary loss and logits output train only).
    pub fn args(c: &ModelConfig) -> crate::Result<GraniteMoeArgs> {
        c.declare_neutral(&["output_router_logits", "router_aux_loss_coef"]);
        let granite = GraniteArgs::from_config(c)?;
        let (top_k, num_experts) = expert_counts(c, "num_local_experts")?;
        Ok(GraniteMoeArgs {
            granite,
            num_experts,
            top_k,
        })
    }

    /// Python: granitemoe's `sanitize`: each layer's `block_sparse_moe.input_linear`
    /// `[E, 2 I, D]` split into `switch_mlp.gate_proj` and `switch_mlp.up_proj`,
    /// `output_linear` renamed `switch_mlp.down_proj` (a quantized checkpoint's `scales` /
    /// `biases` split by the same rows), a tied model's `lm_head.weight` dropped.
    pub fn sanitize(ck: &mut Checkpoint, args: &GraniteMoeArgs) -> crate::Result<()> {
        let d = &args.granite.decoder;
        d.sanitize(ck);
        let w = ck.weights_mut();
        for l in 0..d.num_hidden_layers {
            let prefix = format!("model.layers.{l}.block_sparse_moe");
            for k in ["weight", "scales", "biases"] {
                let input = format!("{prefix}.input_linear.{k}");
                let file = w
                    .file_of(&input)
                    .map(std::path::Path::to_path_buf)
                    .unwrap_or_default();
                let Some(weight) = w.take(&input) else {
                    continue;
                };
                let halves = ops::split(&weight, 2, 1).map_err(|source| crate::Error::Mlx {
                    path: file.clone(),
                    source,
                })?;
                let switch = format!("{prefix}.switch_mlp");
                w.insert(format!("{switch}.gate_proj.{k}"), halves[0].clone(), &file);
                w.insert(format!("{switch}.up_proj.{k}"), halves[1].clone(), &file);
                w.rename(
                    &format!("{prefix}.output_linear.{k}"),
                    format!("{switch}.down_proj.{k}"),
                );
            }
        }
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<GraniteMoe> {
        let args = Self::args(config)?;
        Self::sanitize(ck, &args)?;
        ck.cast(options.dtype, |_| false)?;
        ck.set_quant_predicate(quant_predicate);
        let a = &args.granite;
        let (h, intermediate) = (a.decoder.hidden_size, a.decoder.intermediate_size);
        let (model, lm_head) = a.load_stack(ck, options, |ck, moe| {
            Ok(GraniteMoeMoe {
                switch_mlp: SwitchGlu::load(
                    ck,
                    &format!("{moe}.switch_mlp"),
                    h,
                    intermediate,
                    args.num_experts,
                    false,
                )?,
                router: GraniteMoeTopKGating {
                    layer: ck.linear(&format!("{moe}.router.layer"), h, args.num_experts, false)?,
                    top_k: args.top_k,
                },
            })
        })?;
        Ok(GraniteMoe { model, lm_head })
    }
}

/// Python: granitemoe's `quant_predicate`: the routers, `self_attn.o_proj`, the experts'
/// down projections (`switch_mlp.down_proj`, which its `mlp.down_proj` suffix matches) and
/// `lm_head` at 8 bits in groups of 64.
fn quant_predicate(path: &str) -> Option<QuantParams> {
    (path.ends_with("block_sparse_moe.router.layer")
        || path.ends_with("self_attn.o_proj")
        || path.ends_with("mlp.down_proj")
        || path == "lm_head")
        .then_some(QuantParams::affine(64, 8))
}

crate::models::base::stack_language_model!(GraniteMoe, model, "granitemoe");
