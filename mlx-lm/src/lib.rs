//! Language models on MLX: what Python's `mlx_lm` does, in Rust (re-exported as `mlx::lm`).
//!
//! A model directory in the Hugging Face layout (`config.json`, `model.safetensors` or shards
//! with `model.safetensors.index.json`, `generation_config.json`) is read by [`load_config`]
//! and [`load_weights`], its `tokenizer.json` by [`Tokenizer`]; every failure names the file,
//! and the key where there is one.

mod config;
mod error;
mod tokenizer;
mod weights;

pub use config::{load_config, ModelConfig};
pub use error::{Error, Result};
pub use tokenizer::Tokenizer;
pub use weights::{load_weights, WeightFiles};
