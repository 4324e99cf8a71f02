//! `load`: a model directory to a model and its tokenizer (Python: `mlx_lm.load`).

use std::path::Path;

use mlx_rs::Dtype;

use crate::checkpoint::Checkpoint;
use crate::config::{load_config, ModelConfig};
use crate::error::{Error, Result};
use crate::models::{Llama, Model, Qwen2, Qwen3, Qwen3_5, MODEL_TYPES};
use crate::quantization::{QuantParams, Quantization};
use crate::tokenizer::Tokenizer;
use crate::weights::load_weights;

/// How to load a model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadOptions {
    /// Cast floating-point parameters to this dtype (Python: `mlx_lm.convert --dtype`).
    /// Parameters an architecture keeps in float32 (qwen3_5's `A_log`) stay so.
    pub dtype: Option<Dtype>,
    /// Quantize a float checkpoint's linear and embedding layers as they load (Python:
    /// `mlx_lm.convert -q --q-group-size G --q-bits B`): every layer whose input size the group
    /// size divides.
    pub quantize: Option<QuantParams>,
}

/// Loads the model of `dir` (Python: `mlx_lm.utils.load_model`): reads the config, picks the
/// architecture by `model_type`, applies its weight sanitization and builds it from the
/// checkpoint, float or quantized layer by layer as the checkpoint holds them. Every tensor
/// must be used and have the shape the config implies; the errors name file and key.
pub fn load_model(dir: impl AsRef<Path>, options: LoadOptions) -> Result<(Model, ModelConfig)> {
    let dir = dir.as_ref();
    let config = load_config(dir)?;
    let quantization = Quantization::from_config(&config)?;
    let mut ck = Checkpoint::new(
        load_weights(dir, None)?,
        dir,
        quantization,
        options.quantize,
    );
    let dtype = options.dtype;
    let model = match config.model_type() {
        "llama" => Model::Llama(Llama::from_checkpoint(&mut ck, &config, dtype)?),
        "qwen2" => Model::Qwen2(Qwen2::from_checkpoint(&mut ck, &config, dtype)?),
        "qwen3" => Model::Qwen3(Qwen3::from_checkpoint(&mut ck, &config, dtype)?),
        "qwen3_5" => Model::Qwen3_5(Qwen3_5::from_checkpoint(&mut ck, &config, dtype)?),
        other => {
            return Err(Error::UnsupportedModel {
                path: config.path().to_path_buf(),
                model_type: other.to_string(),
                supported: MODEL_TYPES.join(", "),
            })
        }
    };
    ck.finish()?;
    mlx_tree::eval(&model)?;
    Ok((model, config))
}

/// Loads the model and the tokenizer of `dir` (Python: `mlx_lm.load(path)`); the
/// tokenizer's stop tokens include the config's `eos_token_id`s.
pub fn load(
    dir: impl AsRef<Path>,
    options: LoadOptions,
) -> Result<(Model, Tokenizer, ModelConfig)> {
    let (model, config) = load_model(dir.as_ref(), options)?;
    let mut tokenizer = Tokenizer::load(dir.as_ref())?;
    tokenizer.add_eos_token_ids(config.eos_token_ids()?);
    Ok((model, tokenizer, config))
}
