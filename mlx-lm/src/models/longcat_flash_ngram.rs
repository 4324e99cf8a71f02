//! `longcat_flash_ngram` (Python: `mlx_lm.models.longcat_flash_ngram`): LongCat-Flash-Lite,
//! [`longcat_flash`](super::longcat_flash)'s layers behind an n-gram embedding
//! ([`NgramEmbedding`], under `model.ngram_embeddings`) in place of `embed_tokens`. Its
//! cache is the embedding's [`ArraysCache`](crate::cache::ArraysCache) of the last token ids
//! first, then each layer's `CacheList` of two latent caches (Python:
//! `[ArraysCache(size=1)] + [CacheList(KVCache(), KVCache()) ...]`): the ids pass through
//! the compiled decode step with the rest of the cache, and a right-padded batch's padding
//! never enters them.
//!
//! transformers 5.23 has no such model; the layers follow transformers' `LongcatFlash` where
//! longcat_flash does (see there).

use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::layer::{embedding_dtype, embedding_vocab_size};
use crate::blocks::ngram_embedding::{NgramConfig, NgramEmbedding};
use crate::blocks::rows::wrong_input;
use crate::blocks::{forward_layers, make_layer_caches, Rows};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;
use crate::model::LanguageModel;
use crate::models::longcat_flash::{
    classifier_at_8_bits, shard_layers, LongcatFlashArgs, LongcatFlashDecoderLayer,
};

/// Python: longcat_flash_ngram's `ModelArgs`: longcat_flash's and the n-gram embedding's.
#[derive(Debug, Clone)]
pub struct LongcatFlashNgramArgs {
    pub flash: LongcatFlashArgs,
    pub ngram: NgramConfig,
}

impl LongcatFlashNgramArgs {
    /// Reads the config: longcat_flash's keys and `ngram_vocab_size_ratio` (78),
    /// `emb_neighbor_num` (4), `emb_split_num` (4), mlx_lm's defaults.
    pub fn from_config(c: &ModelConfig) -> crate::Result<LongcatFlashNgramArgs> {
        let flash = LongcatFlashArgs::from_config(c)?;
        let count = |key: &str, default: usize| -> crate::Result<i32> {
            let v = c.usize(key)?.unwrap_or(default);
            i32::try_from(v).map_err(|_| invalid(c.path(), &c.key(key), "does not fit an i32"))
        };
        let ngram = NgramConfig {
            vocab_size: flash.vocab_size,
            hidden_size: flash.hidden_size,
            ratio: count("ngram_vocab_size_ratio", 78)? as i64,
            n: count("emb_neighbor_num", 4)?,
            k: count("emb_split_num", 4)?,
        };
        if ngram.n < 2 || ngram.k < 1 || ngram.ratio < 1 || ngram.emb_dim() < 1 {
            return Err(invalid(
                c.path(),
                &c.key("emb_neighbor_num"),
                &format!(
                    "the n-gram embedding needs emb_neighbor_num >= 2, emb_split_num >= 1, \
                     ngram_vocab_size_ratio >= 1 and hidden_size >= emb_split_num * \
                     (emb_neighbor_num - 1); got {}, {}, {} and {}",
                    ngram.n, ngram.k, ngram.ratio, ngram.hidden_size
                ),
            ));
        }
        Ok(LongcatFlashNgramArgs { flash, ngram })
    }
}

/// Python: `LongcatFlashNgramModel`.
#[derive(Debug, Clone, TreeNode)]
pub struct LongcatFlashNgramModel {
    pub ngram_embeddings: NgramEmbedding,
    pub layers: Vec<LongcatFlashDecoderLayer>,
    pub norm: RMSNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

/// Python: `mlx_lm.models.longcat_flash_ngram.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct LongcatFlashNgram {
    pub model: LongcatFlashNgramModel,
    pub lm_head: MaybeQuantizedLinear,
}

impl LongcatFlashNgram {
    /// Reads the config ([`LongcatFlashNgramArgs::from_config`]).
    pub fn args(config: &ModelConfig) -> crate::Result<LongcatFlashNgramArgs> {
        LongcatFlashNgramArgs::from_config(config)
    }

    /// Python: `sanitize`: longcat_flash's, and a checkpoint's `model.embed_tokens` is the
    /// n-gram embedding's `word_embeddings` (all its tensors; mlx_lm renames the weight only,
    /// which a quantized one would leave behind).
    pub fn sanitize(ck: &mut Checkpoint, a: &LongcatFlashNgramArgs) -> crate::Result<()> {
        a.flash.sanitize(ck)?;
        let w = ck.weights_mut();
        for k in ["weight", "scales", "biases"] {
            let from = format!("model.embed_tokens.{k}");
            let file = w.file_of(&from).map(std::path::Path::to_path_buf);
            if let (Some(v), Some(file)) = (w.take(&from), file) {
                w.insert(
                    format!("model.ngram_embeddings.word_embeddings.{k}"),
                    v,
                    file,
                );
            }
        }
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors (the correction biases stay
    /// float32), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<LongcatFlashNgram> {
        let a = Self::args(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |k| k.contains("e_score_correction_bias"))?;
        ck.set_quant_predicate(classifier_at_8_bits);
        let d = a.flash.hidden_size;
        Ok(LongcatFlashNgram {
            model: LongcatFlashNgramModel {
                ngram_embeddings: NgramEmbedding::load(ck, "model.ngram_embeddings", &a.ngram)?,
                layers: a.flash.load_layers(ck)?,
                norm: ck.rms_norm("model.norm", d, a.flash.rms_norm_eps)?,
                kernels: options.kernels,
            },
            lm_head: ck.linear("lm_head", d, a.flash.vocab_size, false)?,
        })
    }
}

impl LanguageModel for LongcatFlashNgram {
    fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        let m = &self.model;
        let rows = Rows::of(inputs)?;
        let (ngram_cache, layer_caches) = match cache {
            None => (None, None),
            Some([LayerCache::Arrays(first), rest @ ..]) => (Some(first), Some(rest)),
            Some(other) => {
                return Err(wrong_input(&format!(
                    "a longcat_flash_ngram cache starts with the n-gram embedding's \
                     ArraysCache, got {}",
                    other.first().map_or("no cache", |c| c.class_name())
                )))
            }
        };
        let h = rows.fold(&m.ngram_embeddings.forward(inputs, ngram_cache)?)?;
        let h = forward_layers(&m.layers, h, rows, m.kernels, layer_caches)?;
        rows.unfold(&self.lm_head.forward(&m.norm.forward(&h)?)?)
    }

    /// Python: `[ArraysCache(size=1)] + [CacheList(KVCache(), KVCache()) ...]`.
    fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        let mut cache = vec![self.model.ngram_embeddings.make_cache(batch)?];
        cache.extend(make_layer_caches(
            &self.model.layers,
            batch,
            capacity,
            self.dtype(),
        )?);
        Ok(cache)
    }

    fn dtype(&self) -> Dtype {
        embedding_dtype(&self.model.ngram_embeddings.word_embeddings, self)
    }

    fn vocab_size(&self) -> i32 {
        embedding_vocab_size(&self.model.ngram_embeddings.word_embeddings)
    }

    fn model_type(&self) -> &str {
        "longcat_flash_ngram"
    }

    /// Python: longcat_flash's `shard` (the n-gram embeddings stay whole).
    fn shard(&mut self, group: &mlx_rs::distributed::Group) -> Result<()> {
        shard_layers(&mut self.model.layers, group, "longcat_flash_ngram")
    }
}
