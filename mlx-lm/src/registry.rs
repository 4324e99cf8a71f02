//! The model zoo's registry: from a config's `model_type` (after mlx_lm's remapping, see
//! [`ModelConfig::model_type`](crate::ModelConfig::model_type)) to the function that builds
//! the architecture from a checkpoint. Filled with this crate's architectures on first use;
//! [`register_model`] adds a user's, after which [`load`](crate::load), generation, prompt
//! caches and the command line ([`cli`](crate::cli)) work with it unchanged.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};

use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::model::Model;

/// Builds an architecture from a checkpoint (Python: `Model(ModelArgs.from_dict(config))`,
/// `model.sanitize(weights)`, the cast of the float weights, `model.load_weights`): reads
/// the config, sanitizes and casts the checkpoint's tensors (`options.dtype`, keeping what
/// the architecture holds in float32), and takes every parameter from it. The loader then
/// checks that no tensor is left over.
pub type ModelConstructor =
    Arc<dyn Fn(&mut Checkpoint, &ModelConfig, &LoadOptions) -> Result<Model> + Send + Sync>;

fn registry() -> &'static RwLock<BTreeMap<String, ModelConstructor>> {
    static REGISTRY: OnceLock<RwLock<BTreeMap<String, ModelConstructor>>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let builtins = crate::models::builtins().into_iter();
        RwLock::new(
            builtins
                .map(|(name, build)| (name.to_string(), Arc::new(build) as ModelConstructor))
                .collect(),
        )
    })
}

/// Registers (or replaces) the architecture of `model_type`; returns the constructor it
/// replaced. Thread-safe; affects every later [`load`](crate::load) in the process.
///
/// ```
/// use mlx_lm::{models::Llama, register_model, registered_models, Model};
///
/// // Serve a llama-shaped model_type of one's own with the llama code.
/// register_model("my_llama", |ck, config, options| {
///     Ok(Model::new(Llama::from_checkpoint(ck, config, options)?))
/// });
/// assert!(registered_models().contains(&"my_llama".to_string()));
/// ```
pub fn register_model<F>(model_type: &str, constructor: F) -> Option<ModelConstructor>
where
    F: Fn(&mut Checkpoint, &ModelConfig, &LoadOptions) -> Result<Model> + Send + Sync + 'static,
{
    let mut r = registry()
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    r.insert(model_type.to_string(), Arc::new(constructor))
}

/// The registered `model_type`s, sorted.
pub fn registered_models() -> Vec<String> {
    registry()
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .keys()
        .cloned()
        .collect()
}

/// The constructor of the config's `model_type`, or an error naming every registered one.
pub(crate) fn constructor(config: &ModelConfig) -> Result<ModelConstructor> {
    let r = registry()
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match r.get(config.model_type()) {
        Some(c) => Ok(c.clone()),
        None => Err(Error::UnsupportedModel {
            path: config.path().to_path_buf(),
            model_type: config.model_type().to_string(),
            supported: r.keys().cloned().collect::<Vec<_>>().join(", "),
        }),
    }
}
