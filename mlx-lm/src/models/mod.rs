//! The architectures, one file each (as mlx_lm's `mlx_lm/models/`), written on the shared
//! [`blocks`](crate::blocks). Adding one: a file here with its config reader, its model
//! struct and its [`LanguageModel`](crate::LanguageModel) impl, plus its line in
//! [`builtins`]; outside this crate, [`register_model`](crate::register_model) instead.

pub mod base;
pub mod llama;
pub mod qwen2;
pub mod qwen3;
pub mod qwen3_5;

pub use llama::Llama;
pub use qwen2::Qwen2;
pub use qwen3::Qwen3;
pub use qwen3_5::Qwen3_5;

use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;
use crate::model::Model;

/// Builds a model from a checkpoint (see [`ModelConstructor`](crate::ModelConstructor)).
pub(crate) type Builtin = fn(&mut Checkpoint, &ModelConfig, &LoadOptions) -> crate::Result<Model>;

/// This crate's architectures by `model_type`: what the registry starts with.
pub(crate) fn builtins() -> [(&'static str, Builtin); 4] {
    [
        ("llama", |ck, c, o| {
            Ok(Model::new(Llama::from_checkpoint(ck, c, o)?))
        }),
        ("qwen2", |ck, c, o| {
            Ok(Model::new(Qwen2::from_checkpoint(ck, c, o)?))
        }),
        ("qwen3", |ck, c, o| {
            Ok(Model::new(Qwen3::from_checkpoint(ck, c, o)?))
        }),
        ("qwen3_5", |ck, c, o| {
            Ok(Model::new(Qwen3_5::from_checkpoint(ck, c, o)?))
        }),
    ]
}
