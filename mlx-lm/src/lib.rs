//! Language models on MLX: what Python's `mlx_lm` does, in Rust (re-exported as `mlx::lm`).
//!
//! A model directory in the Hugging Face layout (`config.json`, `model.safetensors` or shards
//! with `model.safetensors.index.json`, `tokenizer.json`, `generation_config.json`) loads with
//! [`load`] into a [`Model`] of one of the [architectures](models) — plain struct trees whose
//! parameter paths are mlx_lm's — float or MLX-quantized; every failure names the file, and
//! the key where there is one. Caches are trees ([`cache`]) whose positions are arrays, so one
//! compiled decode step serves a whole generation.
//!
//! ```no_run
//! use mlx_lm::{load, stream_generate, ChatOptions, GenerateOptions, LoadOptions, SamplerOptions};
//!
//! let (model, tokenizer, _config) = load("path/to/model", LoadOptions::default())?;
//! let messages = serde_json::json!([{"role": "user", "content": "Name three rivers."}]);
//! let chat = ChatOptions { add_generation_prompt: true, ..Default::default() };
//! let prompt = tokenizer.encode(&tokenizer.apply_chat_template(&messages, &chat)?, false)?;
//! let options = GenerateOptions {
//!     max_tokens: 128,
//!     sampler: SamplerOptions { temperature: 0.7, top_p: 0.9, ..Default::default() },
//!     seed: Some(0),
//!     stop_tokens: tokenizer.eos_token_ids(), // config.json's eos_token_id and the tokenizer's
//!     ..Default::default()
//! };
//! for response in stream_generate(&model, &tokenizer, &prompt, &options)? {
//!     print!("{}", response?.text);
//! }
//! # Ok::<(), mlx_lm::Error>(())
//! ```

mod batch;
pub mod blocks;
pub mod cache;
mod cache_rows;
mod chat_template;
mod checkpoint;
pub mod cli;
mod config;
mod detokenizer;
pub mod distributed;
mod engine;
mod error;
pub mod export;
mod generate;
pub mod gguf;
pub mod kernels;
mod load;
mod lru_prompt_cache;
mod model;
pub mod models;
mod prompt_cache;
mod quantization;
mod registry;
mod sample;
mod speculative;
pub mod structured;
mod text_assembler;
mod tokenizer;
pub mod tool_parsers;
pub mod tuner;
mod weights;

pub use batch::{
    batch_generate, batch_generate_step, BatchDecodeState, BatchResponse, BatchStats, BatchStep,
    BatchTokenGenerator,
};
pub use cache::{ArraysCache, Cache, KvCache, LayerCache, QuantizedKvCache, RotatingKvCache};
pub use cache_rows::{read_row, write_row};
pub use chat_template::{ChatOptions, ChatTemplate};
pub use checkpoint::{Checkpoint, LoadOptions, QuantPredicate, UnreadKeys};
pub use config::{load_config, ModelConfig};
pub use detokenizer::StreamingDetokenizer;
pub use distributed::{eval_shares, sharded_load};
pub use engine::{Engine, EngineOptions, RequestId, RequestOptions, StepTimes, TokenEvent};
pub use error::{Error, Result};
pub use generate::{
    generate, generate_step, generate_step_with_cache, stream_generate, stream_generate_with_cache,
    DecodeState, FinishReason, GenerateOptions, GenerationResponse, GenerationStats, TextStream,
    TokenGenerator, DEFAULT_QUANTIZED_KV_START, UNLIMITED,
};
pub use kernels::KernelOptions;
pub use load::{load, load_model, random_model};
pub use lru_prompt_cache::{CachedPrefix, LruPromptCache};
pub use model::{LanguageModel, Model, ModelTree};
pub use prompt_cache::{load_prompt_cache, save_prompt_cache};
pub use quantization::{
    LayerQuantization, MixedQuantRecipe, QuantParams, Quantization, QUANT_RECIPES,
};
pub use registry::{register_model, registered_models, ModelConstructor};
pub use sample::{LogitsProcessors, SamplerOptions, Xtc, DEFAULT_XTC_THRESHOLD};
pub use speculative::{
    speculative_generate_step, stream_generate_speculative, SpeculativeGenerator,
    SpeculativeTextStream,
};
pub use text_assembler::{TextAssembler, TextPiece};
pub use tokenizer::Tokenizer;
pub use weights::{load_weights, WeightFiles, Weights};
