//! `qwen2` (Python: `mlx_lm.models.qwen2`): llama's decoder with q/k/v biases.

use mlx_nn::MaybeQuantizedLinear;
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::{rope_theta, Attention, DecoderModel, Mlp, RotaryEmbedding};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;
use crate::model::LanguageModel;
use crate::models::base::DecoderArgs;

/// Python: `mlx_lm.models.qwen2.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen2 {
    pub model: DecoderModel<Attention, Mlp>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Qwen2 {
    /// Python: qwen2's `ModelArgs` (q/k/v biases, `head_dim` = hidden/heads).
    pub fn args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
        let args = DecoderArgs::common(
            c,
            |hidden, heads| Ok(hidden / heads),
            |head_dim| {
                RotaryEmbedding::from_config(
                    c,
                    head_dim,
                    rope_theta(c, Some(1_000_000.0))?,
                    c.bool_or("rope_traditional", false)?,
                )
            },
            |_| c.dim("num_key_value_heads"),
        )?;
        Ok(DecoderArgs {
            qkv_bias: true,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
            ..args
        })
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Qwen2> {
        let args = Self::args(config)?;
        args.sanitize(ck);
        ck.cast(options.dtype, |_| false)?;
        let (model, lm_head) = args.load(ck, options.kernels)?;
        Ok(Qwen2 { model, lm_head })
    }
}

impl LanguageModel for Qwen2 {
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
        "qwen2"
    }
}
