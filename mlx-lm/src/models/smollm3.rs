//! `smollm3` (Python: `mlx_lm.models.smollm3`): llama with no positional embedding in some
//! layers (NoPE: `no_rope_layers[i] == 0`, by default every fourth).

use mlx_nn::MaybeQuantizedLinear;
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::{Attention, DecoderModel, Mlp};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::model::LanguageModel;
use crate::models::base::DecoderArgs;
use crate::models::Llama;

/// Python: `mlx_lm.models.smollm3.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct SmolLM3 {
    pub model: DecoderModel<Attention, Mlp>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl SmolLM3 {
    /// Python: smollm3's `ModelArgs`: llama's, plus `no_rope_layers` (1: the layer uses
    /// rope), by default `(i + 1) % no_rope_layer_interval != 0`.
    pub fn args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
        let args = Llama::args(c)?;
        let layers = args.num_hidden_layers as usize;
        let key = c.key("no_rope_layers");
        let no_rope = match c.get("no_rope_layers") {
            None | Some(Value::Null) => {
                let interval = c.dim_or("no_rope_layer_interval", Some(4))? as usize;
                (0..layers).map(|i| (i + 1) % interval == 0).collect()
            }
            Some(Value::Array(flags)) if flags.len() == layers => flags
                .iter()
                .map(|f| match f.as_i64() {
                    Some(use_rope) => Ok(use_rope == 0),
                    None => Err(invalid(c.path(), &key, &format!("not an integer: {f}"))),
                })
                .collect::<crate::Result<Vec<bool>>>()?,
            Some(v) => {
                return Err(invalid(
                    c.path(),
                    &key,
                    &format!("expected a list of {layers} integers, got {v}"),
                ))
            }
        };
        Ok(DecoderArgs { no_rope, ..args })
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<SmolLM3> {
        let args = Self::args(config)?;
        args.sanitize(ck);
        ck.cast(options.dtype, |_| false)?;
        let (model, lm_head) = args.load(ck, options.kernels)?;
        Ok(SmolLM3 { model, lm_head })
    }
}

impl LanguageModel for SmolLM3 {
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
        "smollm3"
    }
}
