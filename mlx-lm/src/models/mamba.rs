//! `mamba` (Python: `mlx_lm.models.mamba`): Mamba-1, a stack of selective-scan layers
//! ([`MambaMixer`]) without attention, under `backbone.*`; also `falcon_mamba`, which mlx_lm
//! serves with the same code (`MODEL_REMAPPING`) and whose mixers normalize Δ, B and C
//! (`use_bcdt_rms`).
//!
//! Two readings of the config follow transformers where mlx_lm departs from it: the block
//! norms and the final norm take `layer_norm_epsilon` (mlx_lm: always 1e-5, transformers'
//! default and every released Mamba's value, so the same model there), and
//! `residual_in_fp32` is accepted but, as in mlx_lm, the residual stays in the model's
//! dtype (transformers adds it in float32: the same numbers for a float32 model; a
//! reduced-precision model's logits move by its roundings).

use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::conv::sanitize_conv_weights;
use crate::blocks::selective_scan::{BcdtNorm, MambaMixer, MambaMixerConfig};
use crate::blocks::{Backbone, Stack};
use crate::blocks::{Layer, LayerContext};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::base::stack_language_model;

/// Python: mamba's `ModelArgs`, as the layers use it.
#[derive(Debug, Clone)]
pub struct MambaArgs {
    pub vocab_size: i32,
    pub num_hidden_layers: i32,
    pub mixer: MambaMixerConfig,
    /// The eps of the block norms and the final norm (`layer_norm_epsilon`).
    pub norm_eps: f32,
    pub tie_word_embeddings: bool,
    /// The config's `model_type` before mlx_lm's remapping (`mamba` or `falcon_mamba`).
    pub model_type: String,
}

impl MambaArgs {
    /// Reads the config (Python: `ModelArgs.from_dict` and its `__post_init__`):
    /// `time_step_rank` `"auto"` is `ceil(hidden_size / 16)`; `falcon_mamba` (or
    /// `use_bcdt_rms`) normalizes Δ, B and C with eps `mixer_rms_eps`. Audited against
    /// transformers 5.23's `MambaConfig` and `FalconMambaConfig`.
    pub fn from_config(c: &ModelConfig) -> crate::Result<MambaArgs> {
        let required_bool = |key: &str| -> crate::Result<bool> {
            c.bool(key)?
                .ok_or_else(|| invalid(c.path(), &c.key(key), "missing"))
        };
        let hidden = c.dim("hidden_size")?;
        let model_type = c
            .string("model_type")?
            .unwrap_or(c.model_type())
            .to_string();
        let time_step_rank = match c.get("time_step_rank") {
            Some(Value::String(s)) if s == "auto" => (hidden + 15) / 16,
            Some(Value::String(s)) => {
                return Err(invalid(
                    c.path(),
                    &c.key("time_step_rank"),
                    &format!("{s:?} is neither \"auto\" nor a size"),
                ))
            }
            _ => c.dim("time_step_rank")?,
        };
        let intermediate = match c.usize("intermediate_size")? {
            Some(_) => c.dim("intermediate_size")?,
            // transformers writes `expand` and derives the width from it.
            None => c.dim("expand")? * hidden,
        };
        c.declare_neutral(&["expand"]);
        let bcdt_rms = model_type == "falcon_mamba" || c.bool_or("use_bcdt_rms", false)?;
        let bcdt_norm = if bcdt_rms {
            BcdtNorm::Weightless {
                eps: c.float_or("mixer_rms_eps", 1e-6)? as f32,
            }
        } else {
            c.declare_neutral(&["mixer_rms_eps"]);
            BcdtNorm::None
        };
        // The mixer's activation (transformers' ACT2FN: "swish" is SiLU too).
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Accepted as mlx_lm accepts it; the module doc says what it changes in transformers.
        c.bool("residual_in_fp32")?;
        // Initialization and training switches, and which of transformers' implementations
        // of the same scan runs: none changes a loaded model's logits.
        c.declare_neutral(&[
            "initializer_range",
            "time_step_scale",
            "time_step_min",
            "time_step_max",
            "time_step_init_scheme",
            "time_step_floor",
            "rescale_prenorm_residual",
            "use_mambapy",
            "use_associative_scan",
        ]);
        Ok(MambaArgs {
            vocab_size: c.dim("vocab_size")?,
            num_hidden_layers: c.dim("num_hidden_layers")?,
            mixer: MambaMixerConfig {
                hidden_size: hidden,
                intermediate_size: intermediate,
                state_size: c.dim("state_size")?,
                conv_kernel: c.dim("conv_kernel")?,
                time_step_rank,
                use_bias: required_bool("use_bias")?,
                use_conv_bias: required_bool("use_conv_bias")?,
                bcdt_norm,
            },
            norm_eps: c.float_or("layer_norm_epsilon", 1e-5)? as f32,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
            model_type,
        })
    }
}

/// Python: mamba's `ResidualBlock`: `x + mixer(norm(x))`.
#[derive(Debug, Clone, TreeNode)]
pub struct MambaResidualBlock {
    pub mixer: MambaMixer,
    pub norm: RMSNorm,
}

impl Layer for MambaResidualBlock {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let y = self.mixer.forward(
            &self.norm.forward(x)?,
            ctx.rows,
            ctx.kernels.fused_selective_scan,
            cache,
        )?;
        ops::add(&y, x)
    }

    /// Python: `ArraysCache(size=2)`.
    fn make_cache(&self, batch: i32, _capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        self.mixer.make_cache(batch, dtype)
    }
}

/// Python: `mamba`'s `backbone` ([`Backbone`]).
pub type MambaBackbone = Backbone<MambaResidualBlock>;

/// Python: `mlx_lm.models.mamba.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Mamba {
    pub backbone: MambaBackbone,
    /// The output head when not tied to the embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Mamba {
    /// The config as this architecture reads it.
    pub fn args(c: &ModelConfig) -> crate::Result<MambaArgs> {
        MambaArgs::from_config(c)
    }

    /// Python: `Model.sanitize`: a Hugging Face checkpoint's convolution weights `[C, 1, K]`
    /// become `[C, K, 1]`.
    pub fn sanitize(ck: &mut Checkpoint) -> crate::Result<()> {
        sanitize_conv_weights(ck, "conv1d.weight")
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Mamba> {
        let a = MambaArgs::from_config(config)?;
        Self::sanitize(ck)?;
        ck.cast(options.dtype, |_| false)?;
        let hidden = a.mixer.hidden_size;
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let path = format!("backbone.layers.{i}");
            layers.push(MambaResidualBlock {
                mixer: MambaMixer::load(ck, &format!("{path}.mixer"), &a.mixer)?,
                norm: ck.rms_norm(&format!("{path}.norm"), hidden, a.norm_eps)?,
            });
        }
        Ok(Mamba {
            backbone: Stack::load_around(
                ck,
                "backbone",
                (a.vocab_size, hidden),
                layers,
                |ck, path| ck.rms_norm(path, hidden, a.norm_eps),
                options.kernels,
            )?,
            lm_head: (!a.tie_word_embeddings)
                .then(|| ck.linear("lm_head", hidden, a.vocab_size, false))
                .transpose()?,
        })
    }
}

stack_language_model!(Mamba, backbone, "mamba");
