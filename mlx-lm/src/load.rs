//! `load`: a model directory to a model and its tokenizer (Python: `mlx_lm.load`).

use std::path::Path;

use crate::checkpoint::{Checkpoint, LoadOptions, UnreadKeys};
use crate::config::{load_config, ModelConfig};
use crate::error::{Error, Result};
use crate::gguf;
use crate::model::Model;
use crate::quantization::Quantization;
use crate::registry;
use crate::tokenizer::Tokenizer;
use crate::weights::load_weights;

/// Loads the model of `dir` (Python: `mlx_lm.utils.load_model`): reads the config, picks the
/// [registered](crate::register_model) architecture of its `model_type` (an error listing the
/// registered ones when there is none), which sanitizes the tensors and builds itself from
/// the checkpoint, float or quantized layer by layer as the checkpoint holds them. Every
/// tensor must be used and have the shape the config implies; the errors name file and key.
/// Config keys that the architecture neither reads nor declares harmless are reported as
/// `options.unread_keys` says (by default a warning on stderr).
///
/// `dir` may also be a `.gguf` file, or a directory holding one and no `config.json`
/// ([`gguf`](crate::gguf)): config, names and layout are then those of the Hugging Face
/// checkpoint llama.cpp converted.
pub fn load_model(dir: impl AsRef<Path>, options: LoadOptions) -> Result<(Model, ModelConfig)> {
    let dir = dir.as_ref();
    let (config, weights, quantization) = read(dir, options)?;
    let constructor = registry::constructor(&config)?;
    let mut ck = Checkpoint::new(weights, dir, quantization, options.quantize);
    ck.set_quant_recipe(options.quant_recipe);
    let model = constructor(&mut ck, &config, &options)?;
    report_unread(&config, options.unread_keys)?;
    ck.finish()?;
    mlx_tree::eval(&model)?;
    Ok((model, config))
}

/// The parameter paths of the model `dir` builds, in flatten order, its tensors left unread
/// (MLX reads a file's tensors when they are evaluated): what a mixed-bits recipe needs to
/// know of the model's structure before the model is quantized as it loads.
pub(crate) fn parameter_paths(dir: &Path, options: LoadOptions) -> Result<Vec<String>> {
    let (config, weights, quantization) = read(dir, options)?;
    let constructor = registry::constructor(&config)?;
    let mut ck = Checkpoint::new(weights, dir, quantization, None);
    let options = LoadOptions {
        quantize: None,
        quant_recipe: None,
        ..options
    };
    let model = constructor(&mut ck, &config, &options)?;
    Ok(mlx_tree::tree_flatten_with_path(&model)?
        .into_iter()
        .map(|(path, _)| path)
        .collect())
}

type Read = (ModelConfig, crate::weights::Weights, Option<Quantization>);

/// A model directory's (or GGUF file's) config, tensors and stored quantization.
fn read(dir: &Path, options: LoadOptions) -> Result<Read> {
    Ok(match gguf::gguf_path(dir)? {
        Some(file) => {
            let ck = gguf::read_checkpoint(&file, options.dtype)?;
            (ck.config, ck.weights, ck.quantization)
        }
        None => {
            let config = load_config(dir)?;
            let quantization = Quantization::from_config(&config)?;
            (config, load_weights(dir, None)?, quantization)
        }
    })
}

fn report_unread(config: &ModelConfig, policy: UnreadKeys) -> Result<()> {
    let keys = config.unread_keys();
    if keys.is_empty() || policy == UnreadKeys::Allow {
        return Ok(());
    }
    let error = Error::UnreadConfigKeys {
        path: config.path().to_path_buf(),
        model_type: config.model_type().to_string(),
        keys,
    };
    if policy == UnreadKeys::Error {
        return Err(error);
    }
    eprintln!("warning: {error} (LoadOptions::unread_keys sets what happens)");
    Ok(())
}

/// Loads the model and the tokenizer of `dir` (Python: `mlx_lm.load(path)`); the
/// tokenizer's stop tokens include the config's `eos_token_id`s.
pub fn load(
    dir: impl AsRef<Path>,
    options: LoadOptions,
) -> Result<(Model, Tokenizer, ModelConfig)> {
    let (model, config) = load_model(dir.as_ref(), options)?;
    let mut tokenizer = match gguf::gguf_path(dir.as_ref())? {
        Some(file) => gguf::load_tokenizer(&gguf::GgufFile::open(file)?)?,
        None => Tokenizer::load(dir.as_ref())?,
    };
    tokenizer.add_eos_token_ids(config.eos_token_ids()?);
    Ok((model, tokenizer, config))
}
