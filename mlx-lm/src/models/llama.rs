//! `llama` (Python: `mlx_lm.models.llama`), which also serves `mistral`-style configs.

use mlx_nn::MaybeQuantizedLinear;
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::{rope_theta, Attention, DecoderModel, Mlp, RotaryEmbedding};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::model::LanguageModel;
use crate::models::base::DecoderArgs;

/// Python: `mlx_lm.models.llama.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Llama {
    pub model: DecoderModel<Attention, Mlp>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Llama {
    /// Python: llama's `ModelArgs` (`head_dim` defaults to hidden/heads,
    /// `num_key_value_heads` to the head count, `layer_types` to all full attention).
    pub fn args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
        let args = DecoderArgs::common(
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
        let layers = args.num_hidden_layers;
        let layer_types_error =
            |message: String| invalid(c.path(), &c.key("layer_types"), &message);
        let sliding = match c.get("layer_types") {
            None | Some(Value::Null) => vec![false; layers as usize],
            Some(Value::Array(types)) => {
                let sliding = types
                    .iter()
                    .map(|t| match t.as_str() {
                        Some("full_attention") => Ok(false),
                        Some("sliding_attention") => Ok(true),
                        _ => Err(layer_types_error(format!("unknown layer type {t}"))),
                    })
                    .collect::<crate::Result<Vec<bool>>>()?;
                if sliding.len() != layers as usize {
                    return Err(layer_types_error(format!(
                        "{} entries for {layers} layers",
                        sliding.len(),
                    )));
                }
                sliding
            }
            Some(v) => return Err(layer_types_error(format!("not a list: {v}"))),
        };
        let sliding_window = c
            .usize("sliding_window")?
            .map(|_| c.dim("sliding_window"))
            .transpose()?;
        if sliding.iter().any(|s| *s) && sliding_window.is_none() {
            return Err(invalid(
                c.path(),
                &c.key("sliding_window"),
                "missing, but layer_types has sliding_attention layers",
            ));
        }
        Ok(DecoderArgs {
            qkv_bias: attention_bias,
            o_bias: attention_bias,
            mlp_bias: c.bool_or("mlp_bias", false)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
            sliding,
            sliding_window,
            ..args
        })
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Llama> {
        let args = Self::args(config)?;
        args.sanitize(ck);
        ck.cast(options.dtype, |_| false)?;
        let (model, lm_head) = args.load(ck, options.kernels)?;
        Ok(Llama { model, lm_head })
    }
}

impl LanguageModel for Llama {
    fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        self.model.logits(inputs, cache, self.lm_head.as_ref())
    }

    fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        self.model.make_cache(batch, capacity)
    }

    fn dtype(&self) -> Dtype {
        self.model.dtype()
    }

    fn vocab_size(&self) -> i32 {
        self.model.vocab_size()
    }

    fn model_type(&self) -> &str {
        "llama"
    }
}
