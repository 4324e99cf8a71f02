//! `mistral3` (Python: `mlx_lm.models.mistral3`): the text model of a multimodal Mistral 3
//! checkpoint (Mistral-Small-3.1/3.2, Ministral 3), under `language_model`: a
//! [`Ministral3`] when `text_config.model_type` is `ministral3`, else llama's decoder
//! ([`Llama`]: Mistral-Small's `mistral` text config). The vision tower's and projector's
//! tensors are dropped at load, and the text model's are found under any of the layouts
//! mlx_lm's sanitize maps: transformers 5's `model.language_model.*` (beside a top-level
//! `lm_head`), transformers 4's and mlx_lm's `language_model.model.*`.
//!
//! As in mlx_lm, the head's tying is `text_config`'s `tie_word_embeddings`, untied when it
//! does not say; the top-level key (transformers' `Mistral3Config`, which ties only where
//! the checkpoint has no separate head) is not read. A `mistral4` text model (Mistral
//! Medium 3's mixture of experts with latent attention) is an error naming it: this crate
//! has no `mistral4`.

use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::model::Model;
use crate::models::base::DecoderArgs;
use crate::models::ministral3::{Ministral3, Ministral3Args};
use crate::models::Llama;
use crate::LanguageModel;

/// Python: `mlx_lm.models.mistral3.Model` over a `ministral3` text model.
#[derive(Debug, Clone, TreeNode)]
pub struct Mistral3 {
    pub language_model: Ministral3,
}

/// Python: `mlx_lm.models.mistral3.Model` over llama's decoder (any other text model type).
#[derive(Debug, Clone, TreeNode)]
pub struct Mistral3Llama {
    pub language_model: Llama,
}

/// The text model a mistral3 config describes.
#[derive(Debug, Clone)]
pub enum Mistral3Text {
    Ministral3(Ministral3Args),
    Llama(DecoderArgs),
}

impl Mistral3 {
    /// Python: mistral3's `ModelArgs`: `text_config` read as ministral3's or llama's (its
    /// `tie_word_embeddings` false when absent), over every key of transformers'
    /// `Mistral3Config`.
    pub fn args(config: &ModelConfig) -> crate::Result<Mistral3Text> {
        // The vision tower, its projector and the image token: a text prompt reaches none
        // of them, and their tensors are dropped at load. The top-level tying is not what
        // mlx_lm reads (see the module's doc).
        config.declare_neutral(&[
            "vision_config",
            "image_token_index",
            "projector_hidden_act",
            "vision_feature_layer",
            "multimodal_projector_bias",
            "spatial_merge_size",
            "tie_word_embeddings",
        ]);
        let Some(text) = config.section("text_config") else {
            return Err(invalid(
                config.path(),
                &config.key("text_config"),
                "missing",
            ));
        };
        match text.string("model_type")? {
            Some("ministral3") => Ok(Mistral3Text::Ministral3(Ministral3::args_tied_by_default(
                &text, false,
            )?)),
            Some("mistral4") => Err(invalid(
                config.path(),
                &text.key("model_type"),
                "\"mistral4\" (a mixture of experts with latent attention) is not supported \
                 (supported: \"ministral3\", or a llama-like text model such as \"mistral\")",
            )),
            _ => {
                let tied = text.bool_or("tie_word_embeddings", false)?;
                Ok(Mistral3Text::Llama(DecoderArgs {
                    tie_word_embeddings: tied,
                    ..Llama::args(&text)?
                }))
            }
        }
    }

    /// Python: mistral3's `sanitize`, then the text model's, then its tensors.
    pub fn build(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Model> {
        let text = Self::args(config)?;
        remap(ck);
        Ok(match text {
            Mistral3Text::Ministral3(a) => Model::new(Mistral3 {
                language_model: Ministral3::load(ck, &a, options, "language_model.")?,
            }),
            Mistral3Text::Llama(a) => {
                a.sanitize_under(ck, "language_model.");
                ck.cast(options.dtype, |_| false)?;
                let (model, lm_head) = a.load_under(ck, options.kernels, "language_model.")?;
                Model::new(Mistral3Llama {
                    language_model: Llama { model, lm_head },
                })
            }
        })
    }
}

/// Python: mistral3's `sanitize` before the text model's: the vision tower's and projector's
/// tensors dropped, `model.language_model.` as `model.`, then every tensor under
/// `language_model.`.
fn remap(ck: &mut Checkpoint) {
    let weights = ck.weights_mut();
    weights.retain(|k, _| !(k.contains("vision_tower") || k.contains("multi_modal_projector")));
    let keys: Vec<String> = weights.keys().into_iter().map(str::to_string).collect();
    for key in keys {
        let text_key = match key.strip_prefix("model.language_model.") {
            Some(rest) => format!("model.{rest}"),
            None => key
                .strip_prefix("language_model.")
                .unwrap_or(&key)
                .to_string(),
        };
        let new = format!("language_model.{text_key}");
        if new != key {
            weights.rename(&key, new);
        }
    }
}

macro_rules! wrapper_language_model {
    ($name:ident) => {
        impl LanguageModel for $name {
            fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
                self.language_model.forward(inputs, cache)
            }

            fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
                self.language_model.make_cache(batch, capacity)
            }

            fn dtype(&self) -> Dtype {
                self.language_model.dtype()
            }

            fn vocab_size(&self) -> i32 {
                self.language_model.vocab_size()
            }

            fn model_type(&self) -> &str {
                "mistral3"
            }
        }
    };
}

wrapper_language_model!(Mistral3);
wrapper_language_model!(Mistral3Llama);
