//! `mamba2` (Python: `mlx_lm.models.mamba2`): Mamba-2, a stack of single-sublayer blocks
//! `h + mixer(norm(h))` whose mixer is the SSD ([`Mamba2Mixer`]), no attention; parameters
//! under `backbone.*` (`embeddings`, `layers.i.{norm, mixer}`, `norm_f`), the head tied to
//! the embeddings or `lm_head`.
//!
//! Two places where mlx_lm 0.32.2 computes another model than transformers' `Mamba2`, and
//! this port follows transformers (both are the same for the released checkpoints' usual
//! settings, so mlx_lm's numbers are kept there):
//! - the gated norm after the SSM normalizes each of the `n_groups` groups on its own
//!   (transformers' `MambaRMSNormGated(group_size = intermediate / n_groups)`, as mlx_lm's
//!   own nemotron_h does); mlx_lm's mamba2 normalizes the whole width, which is the same
//!   only for `n_groups == 1` (Mamba-Codestral has 8);
//! - each block's pre-norm uses `layer_norm_epsilon` (transformers' `Mamba2RMSNorm`); mlx_lm's
//!   uses `nn.RMSNorm`'s default 1e-5, the same for configs at transformers' default.

use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::conv::sanitize_conv_weights;
use crate::blocks::ssd::{GatedNorm, Mamba2Config, Mamba2Mixer};
use crate::blocks::{Backbone, Stack};
use crate::blocks::{Layer, LayerContext};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::base::stack_language_model;

/// Python: mamba2's `ModelArgs`, as the layers use it.
#[derive(Debug, Clone)]
pub struct Mamba2Args {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: i32,
    pub layer_norm_epsilon: f32,
    pub tie_word_embeddings: bool,
    pub mixer: Mamba2Config,
}

impl Mamba2Args {
    /// Reads the config against transformers' `Mamba2Config` (its defaults where a key is
    /// absent, where mlx_lm requires most of them).
    pub fn from_config(c: &ModelConfig) -> crate::Result<Mamba2Args> {
        let hidden = c.dim_or("hidden_size", Some(4096))?;
        let heads = c.dim_or("num_heads", Some(128))?;
        let head_dim = c.dim_or("head_dim", Some(64))?;
        let n_groups = c.dim_or("n_groups", Some(8))?;
        let eps = c.float_or("layer_norm_epsilon", 1e-5)? as f32;
        if heads % n_groups != 0 {
            return Err(invalid(
                c.path(),
                &c.key("num_heads"),
                &format!("{heads} heads do not split into {n_groups} groups (n_groups)"),
            ));
        }
        // transformers checks `hidden_size * expand == num_heads * head_dim`; mlx_lm sizes the
        // mixer by heads and head_dim alone, so an inconsistent config is an error here.
        if let Some(expand) = c.usize("expand")? {
            if hidden as usize * expand != (heads * head_dim) as usize {
                return Err(invalid(
                    c.path(),
                    &c.key("expand"),
                    &format!(
                        "hidden_size * expand = {} but num_heads * head_dim = {}",
                        hidden as usize * expand,
                        heads * head_dim
                    ),
                ));
            }
        }
        // transformers' ACT2FN: "swish" is SiLU too (the convolution's activation).
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Initialization only: how transformers draws dt_bias, the weights and out_proj's
        // scale, which a checkpoint replaces.
        c.declare_neutral(&[
            "initializer_range",
            "time_step_min",
            "time_step_max",
            "time_step_floor",
            "rescale_prenorm_residual",
            "time_step_rank",
        ]);
        // mlx_lm sizes the mixer by num_heads * head_dim and never reads intermediate_size;
        // there is no position embedding to size.
        c.declare_neutral(&["intermediate_size", "max_position_embeddings"]);
        // transformers' chunk of its SSD scan; mlx_lm (and this port) always chunks by 256.
        // The chunks only regroup the same sums (the carried state is exact arithmetic on
        // the same terms), so another size moves the last bits, not the model.
        c.declare_neutral(&["chunk_size"]);
        // transformers keeps the residual stream in float32 (default true); mlx_lm keeps it
        // in the model's dtype, and so does this port: the same numbers for a float32 model;
        // for bfloat16 weights the residual sums round to bfloat16 (documented in
        // docs/language-models.md).
        c.declare_neutral(&["residual_in_fp32"]);
        let time_step_limit = time_step_limit(c)?;
        let state = match c.usize("ssm_state_size")? {
            Some(_) => c.dim("ssm_state_size")?,
            None => c.dim_or("state_size", Some(128))?,
        };
        Ok(Mamba2Args {
            vocab_size: c.dim_or("vocab_size", Some(32768))?,
            hidden_size: hidden,
            num_hidden_layers: c.dim_or("num_hidden_layers", Some(64))?,
            layer_norm_epsilon: eps,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            mixer: Mamba2Config {
                hidden_size: hidden,
                num_heads: heads,
                head_dim,
                n_groups,
                state_size: state,
                conv_kernel: c.dim_or("conv_kernel", Some(4))?,
                use_bias: c.bool_or("use_bias", false)?,
                out_proj_bias: c.bool_or("use_bias", false)?,
                use_conv_bias: c.bool_or("use_conv_bias", true)?,
                time_step_limit,
                norm_eps: eps,
                // Grouped as transformers computes it; the same as mlx_lm's full-width norm
                // (kept, for its exact numbers) when there is one group.
                grouped_norm: n_groups > 1,
                gated_norm: GatedNorm::GateThenNorm,
                cast_d: false,
            },
        })
    }
}

/// `time_step_limit` `[lo, hi]` (transformers' default `(0.0, inf)`), each as float32.
pub(crate) fn time_step_limit(c: &ModelConfig) -> crate::Result<(f32, f32)> {
    let error = |message: String| invalid(c.path(), &c.key("time_step_limit"), &message);
    match c.get("time_step_limit") {
        None | Some(Value::Null) => Ok((0.0, f32::INFINITY)),
        Some(Value::Array(v)) if v.len() == 2 => {
            let bound = |v: &Value| -> crate::Result<f32> {
                crate::config::as_float(v)
                    .map(|x| x as f32)
                    .ok_or_else(|| error(format!("{v} is not a number")))
            };
            Ok((bound(&v[0])?, bound(&v[1])?))
        }
        Some(v) => Err(error(format!("expected [min, max], found {v}"))),
    }
}

/// Python: mamba2's `ResidualBlock`: `mixer(norm(x)) + x`.
#[derive(Debug, Clone, TreeNode)]
pub struct ResidualBlock {
    pub mixer: Mamba2Mixer,
    pub norm: RMSNorm,
}

impl ResidualBlock {
    /// Takes the block's tensors under `path`.
    pub fn load(ck: &mut Checkpoint, path: &str, a: &Mamba2Args) -> crate::Result<ResidualBlock> {
        Ok(ResidualBlock {
            mixer: Mamba2Mixer::load(ck, &format!("{path}.mixer"), &a.mixer)?,
            norm: ck.rms_norm(&format!("{path}.norm"), a.hidden_size, a.layer_norm_epsilon)?,
        })
    }
}

impl Layer for ResidualBlock {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let out = self.mixer.forward(
            &self.norm.forward(x)?,
            ctx.rows,
            ctx.kernels.fused_ssm_update,
            cache,
        )?;
        ops::add(&out, x)
    }

    /// Python: `ArraysCache(size=2)`: the convolution's state, the SSM state.
    fn make_cache(&self, batch: i32, _capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        self.mixer.make_cache(batch, dtype)
    }
}

/// Python: `mamba2`'s `backbone` ([`Backbone`]).
pub type Mamba2Backbone = Backbone<ResidualBlock>;

/// Python: `mlx_lm.models.mamba2.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Mamba2 {
    pub backbone: Mamba2Backbone,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Mamba2 {
    /// Reads the config ([`Mamba2Args::from_config`]).
    pub fn args(config: &ModelConfig) -> crate::Result<Mamba2Args> {
        Mamba2Args::from_config(config)
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
    ) -> crate::Result<Mamba2> {
        let a = Mamba2Args::from_config(config)?;
        Self::sanitize(ck)?;
        // mlx_lm's mamba2 has no cast predicate: A_log, D and dt_bias take the dtype too.
        ck.cast(options.dtype, |_| false)?;
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            layers.push(ResidualBlock::load(
                ck,
                &format!("backbone.layers.{i}"),
                &a,
            )?);
        }
        Ok(Mamba2 {
            backbone: Stack::load_around(
                ck,
                "backbone",
                (a.vocab_size, a.hidden_size),
                layers,
                |ck, path| ck.rms_norm(path, a.hidden_size, a.layer_norm_epsilon),
                options.kernels,
            )?,
            lm_head: (!a.tie_word_embeddings)
                .then(|| ck.linear("lm_head", a.hidden_size, a.vocab_size, false))
                .transpose()?,
        })
    }
}

stack_language_model!(Mamba2, backbone, "mamba2");
