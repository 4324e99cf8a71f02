//! `qwen3` (Python: `mlx_lm.models.qwen3`): llama's decoder with per-head q/k norms.

use mlx_nn::MaybeQuantizedLinear;
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::{rope_theta, Attention, DecoderModel, Mlp, RotaryEmbedding};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::model::LanguageModel;
use crate::models::base::DecoderArgs;

/// Python: `mlx_lm.models.qwen3.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen3 {
    pub model: DecoderModel<Attention, Mlp>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Qwen3 {
    /// Python: qwen3's `ModelArgs` (q/k norms, explicit `head_dim`, `rope_theta` required,
    /// also under transformers 5's `rope_parameters`).
    pub fn args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
        let args = DecoderArgs::common(
            c,
            |_, _| c.dim("head_dim"),
            |head_dim| RotaryEmbedding::from_config(c, head_dim, rope_theta(c, None)?, false),
            |_| c.dim("num_key_value_heads"),
        )?;
        Ok(DecoderArgs {
            qk_norm: true,
            tie_word_embeddings: c
                .bool("tie_word_embeddings")?
                .ok_or_else(|| invalid(c.path(), &c.key("tie_word_embeddings"), "missing"))?,
            ..args
        })
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Qwen3> {
        let args = Self::args(config)?;
        args.sanitize(ck);
        ck.cast(options.dtype, |_| false)?;
        let (model, lm_head) = args.load(ck, options.kernels)?;
        Ok(Qwen3 { model, lm_head })
    }
}

impl LanguageModel for Qwen3 {
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
        "qwen3"
    }
}
