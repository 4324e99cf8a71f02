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
use mlx_rs::Dtype;

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
    let (model, config) = build_model(dir.as_ref(), options, false)?;
    mlx_tree::eval(&model)?;
    Ok((model, config))
}

/// [`load_model`]'s model before it is evaluated; with `lazy`, one that reads nothing until
/// then ([`Checkpoint::lazy`]).
pub(crate) fn build_model(
    dir: &Path,
    options: LoadOptions,
    lazy: bool,
) -> Result<(Model, ModelConfig)> {
    let (config, weights, quantization) = read(dir, options)?;
    let constructor = registry::constructor(&config)?;
    let mut ck = Checkpoint::new(weights, dir, quantization, options.quantize);
    if lazy {
        ck = ck.lazy();
    }
    ck.set_quant_recipe(options.quant_recipe);
    ck.set_kernels(options.kernels);
    let model = constructor(&mut ck, &config, &options)?;
    report_unread(&config, options.unread_keys)?;
    ck.finish()?;
    Ok((model, config))
}

/// The architecture of `dir`'s config.json with random weights, the model unevaluated
/// (Python: the model class built from its `ModelArgs`, before `load_weights`): for
/// benchmarks and tests of a shape no checkpoint is at hand for. Nothing is drawn until the
/// model is evaluated, so a process of a group can split it first
/// ([`LanguageModel::shard`](crate::LanguageModel::shard),
/// [`pipeline`](crate::LanguageModel::pipeline)) and hold its share alone: a model larger
/// than one device's memory, made where it runs, with no files.
///
/// Every tensor is drawn from `seed` and its name ([`Checkpoint::random`]: norms' scales
/// ones, other vectors zeros, matrices as `nn.Linear` initializes), in `options.dtype`
/// (float32 by default; parameters an architecture keeps in float32 are drawn in it too), and
/// quantized as `options.quantize` (or else the config's `quantization`) says. A config whose
/// `quantization` names layers apart is an error: pass `options.quant_recipe` instead.
pub fn random_model(
    dir: impl AsRef<Path>,
    options: LoadOptions,
    seed: u64,
) -> Result<(Model, ModelConfig)> {
    let dir = dir.as_ref();
    let config = load_config(dir)?;
    let stored = Quantization::from_config(&config)?;
    if let Some(q) = stored.as_ref().filter(|q| !q.layers.is_empty()) {
        return Err(Error::InvalidArgument(format!(
            "{}: a random model takes one quantization for every layer; `quantization` names \
             {} layer(s) apart (LoadOptions::quant_recipe sets mixed bits)",
            config.path().display(),
            q.layers.len()
        )));
    }
    let quantize = options.quantize.or(stored.map(|q| q.defaults));
    let constructor = registry::constructor(&config)?;
    let dtype = options.dtype.unwrap_or(Dtype::Float32);
    let mut ck = Checkpoint::random(dir, seed, dtype, quantize);
    ck.set_quant_recipe(options.quant_recipe);
    ck.set_kernels(options.kernels);
    let model = constructor(&mut ck, &config, &options)?;
    report_unread(&config, options.unread_keys)?;
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
    let tokenizer = load_tokenizer(dir.as_ref(), &config)?;
    Ok((model, tokenizer, config))
}

/// The tokenizer of `dir` (or of its GGUF file), its stop tokens with the config's
/// `eos_token_id`s.
pub(crate) fn load_tokenizer(dir: &Path, config: &ModelConfig) -> Result<Tokenizer> {
    let mut tokenizer = match gguf::gguf_path(dir)? {
        Some(file) => gguf::load_tokenizer(&gguf::GgufFile::open(file)?)?,
        None => Tokenizer::load(dir)?,
    };
    tokenizer.add_eos_token_ids(config.eos_token_ids()?);
    Ok(tokenizer)
}
