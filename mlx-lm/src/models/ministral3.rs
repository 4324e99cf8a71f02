//! `ministral3` (Python: `mlx_lm.models.ministral3`): Ministral 3, llama's layers whose
//! queries are multiplied after rope by Llama 4's position scaling
//! ([`QueryScaledAttention`]: `1 + β ln(1 + ⌊p / original_max⌋)`, `β` the rope parameters'
//! `llama_4_scaling_beta`), with the rope (yarn in the released models), `rope_theta` and
//! that scaling all read from `rope_parameters`, which mlx_lm requires. `layer_types` may
//! make layers slide (a rotating cache of `sliding_window`); by default none do. Tied unless
//! the config says otherwise (mlx_lm's default; transformers' is untied and writes the key).
//!
//! FP8 checkpoints (`weight_scale_inv` beside a weight, `activation_scale` beside its input)
//! are dequantized at load as mlx_lm's sanitize does: `weight * weight_scale_inv`, the
//! activation scales dropped. One difference, where mlx_lm 0.32.2 is plainly wrong: a weight
//! stored as `F8_E4M3` loads as its raw bytes (`uint8`), which mlx_lm multiplies as integers;
//! here those bytes are decoded as e4m3 first (`from_fp8` to bfloat16, the product in
//! bfloat16: mlx_lm's `mistral4` dequantization). A weight stored in a float dtype is
//! multiplied as it is, bit for bit mlx_lm's.

use mlx_nn::MaybeQuantizedLinear;
use mlx_rs::{ops, Dtype};
use mlx_tree::TreeNode;

use crate::blocks::{
    load_lm_head, rope_theta, Attention, DecoderModel, Llama4Scaling, Mlp, QueryScaledAttention,
    RotaryEmbedding,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::base::DecoderArgs;

/// ministral3's reading of a config: llama's [`DecoderArgs`] and the query scaling.
#[derive(Debug, Clone)]
pub struct Ministral3Args {
    pub decoder: DecoderArgs,
    pub scaling: Llama4Scaling,
}

/// Python: `mlx_lm.models.ministral3.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Ministral3 {
    pub model: DecoderModel<QueryScaledAttention, Mlp>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Ministral3 {
    /// Python: ministral3's `ModelArgs`, over every key of transformers' `Ministral3Config`.
    pub fn args(c: &ModelConfig) -> crate::Result<Ministral3Args> {
        Self::args_tied_by_default(c, true)
    }

    /// [`args`](Self::args) with `tie_default` the head's tying when the config does not
    /// say (mistral3's `text_config`: untied).
    pub fn args_tied_by_default(
        c: &ModelConfig,
        tie_default: bool,
    ) -> crate::Result<Ministral3Args> {
        let missing = |key: &str, message: &str| invalid(c.path(), key, message);
        let Some(p) = c.section("rope_parameters") else {
            return Err(missing(
                &c.key("rope_parameters"),
                "missing (ministral3 reads rope_theta, llama_4_scaling_beta and \
                 original_max_position_embeddings there)",
            ));
        };
        let beta = p.float("llama_4_scaling_beta")?.ok_or_else(|| {
            missing(
                &p.key("llama_4_scaling_beta"),
                "missing (mlx_lm requires it)",
            )
        })?;
        if p.usize("original_max_position_embeddings")?.is_none() {
            return Err(missing(
                &p.key("original_max_position_embeddings"),
                "missing (mlx_lm requires it)",
            ));
        }
        let original = p.dim("original_max_position_embeddings")?;
        if p.float("rope_theta")?.is_none() {
            return Err(missing(
                &p.key("rope_theta"),
                "missing (mlx_lm requires it)",
            ));
        }
        // transformers copies the config's max_position_embeddings here; yarn does not
        // compute with it (nor does mlx_lm's YarnRoPE).
        p.declare_neutral(&["max_position_embeddings"]);
        let args = DecoderArgs::common(
            c,
            |hidden, heads| c.dim_or("head_dim", Some(hidden / heads)),
            |head_dim| RotaryEmbedding::from_config(c, head_dim, rope_theta(c, None)?, false),
            |heads| c.dim_or("num_key_value_heads", Some(heads)),
        )?;
        let sliding_window = c
            .usize("sliding_window")?
            .map(|_| c.dim("sliding_window"))
            .transpose()?;
        let sliding = DecoderArgs::sliding_layers(c, args.num_hidden_layers, false)?;
        if sliding.iter().any(|s| *s) && sliding_window.is_none() {
            return Err(invalid(
                c.path(),
                &c.key("sliding_window"),
                "missing, but layer_types has sliding_attention layers",
            ));
        }
        Ok(Ministral3Args {
            decoder: DecoderArgs {
                tie_word_embeddings: c.bool_or("tie_word_embeddings", tie_default)?,
                sliding,
                sliding_window,
                ..args
            },
            scaling: Llama4Scaling {
                beta,
                original_max_position_embeddings: original,
            },
        })
    }

    /// Python: `Model.sanitize` over the tensors under `prefix`: drops precomputed rotary
    /// frequencies, the head when tied, FP8 activation scales, and multiplies each weight by
    /// its `weight_scale_inv` (see the module's doc for `F8_E4M3` weights).
    pub fn sanitize(ck: &mut Checkpoint, a: &Ministral3Args, prefix: &str) -> crate::Result<()> {
        a.decoder.sanitize_under(ck, prefix);
        let dir = ck.dir().to_path_buf();
        let weights = ck.weights_mut();
        let scaled: Vec<String> = weights
            .keys()
            .into_iter()
            .filter(|k| k.starts_with(prefix) && k.contains("weight_scale_inv"))
            .map(str::to_string)
            .collect();
        for key in scaled {
            let file = weights
                .file_of(&key)
                .map_or_else(|| dir.clone(), |p| p.to_path_buf());
            let Some(scale_inv) = weights.take(&key) else {
                continue;
            };
            let weight_key = key.replace("_scale_inv", "");
            let Some(weight) = weights.take(&weight_key) else {
                return Err(invalid(
                    &file,
                    &key,
                    &format!("a scale without its weight {weight_key}"),
                ));
            };
            let mlx = |source| crate::Error::Mlx {
                path: file.clone(),
                source,
            };
            let dequantized = if weight.dtype() == Dtype::Uint8 {
                let decoded = ops::from_fp8(&weight, Dtype::Bfloat16).map_err(mlx)?;
                ops::multiply(&decoded, &scale_inv)
                    .and_then(|w| w.astype(Dtype::Bfloat16))
                    .map_err(mlx)?
            } else {
                ops::multiply(&weight, &scale_inv).map_err(mlx)?
            };
            weights.insert(weight_key, dequantized, file);
        }
        ck.weights_mut()
            .retain(|k, _| !(k.starts_with(prefix) && k.contains("activation_scale")));
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Ministral3> {
        let a = Self::args(config)?;
        Self::load(ck, &a, options, "")
    }

    /// Sanitizes, casts and takes the tensors under `prefix` (a wrapper's
    /// `language_model.`).
    pub fn load(
        ck: &mut Checkpoint,
        a: &Ministral3Args,
        options: &LoadOptions,
        prefix: &str,
    ) -> crate::Result<Ministral3> {
        Self::sanitize(ck, a, prefix)?;
        ck.cast(options.dtype, |_| false)?;
        let d = &a.decoder;
        let model = DecoderModel::load(
            ck,
            &format!("{prefix}model"),
            d.stack(),
            options.kernels,
            |ck, path, i| {
                let mut config = d.attention(i);
                let rope = config.rope.take().unwrap_or_else(|| d.rope.clone());
                let attention = Attention::load(ck, &format!("{path}.self_attn"), &config)?;
                Ok(QueryScaledAttention::new(attention, rope, a.scaling))
            },
            |ck, path, _| Mlp::load(ck, path, d.hidden_size, d.intermediate_size, false),
        )?;
        let lm_head = load_lm_head(
            ck,
            &format!("{prefix}lm_head"),
            d.stack(),
            d.tie_word_embeddings,
        )?;
        Ok(Ministral3 { model, lm_head })
    }
}

crate::models::base::stack_language_model!(Ministral3, model, "ministral3");
