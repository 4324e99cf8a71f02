//! `mlx-lm cache_prompt` (Python: `mlx_lm.cache_prompt`): a prompt's cache in a file, for
//! `generate --prompt-cache-file` here or in mlx_lm (the file is mlx_lm's
//! [`save_prompt_cache`](crate::save_prompt_cache) format).
//!
//! As mlx_lm: with a chat template the prompt is a user message the template leaves open
//! (`continue_final_message`), so that a later query continues it; without one, the prompt's
//! tokens. The file's metadata names the model and the tokenizer settings, as mlx_lm's.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use serde_json::json;

use super::generate::load;
use super::{max_kv_size, read_prompt, Error};
use crate::{ChatOptions, GenerateOptions};

/// Caches the state of a prompt to be reused with `generate --prompt-cache-file`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The model directory (config.json, *.safetensors, tokenizer.json).
    #[arg(long, default_value = "mlx_model")]
    pub model: PathBuf,
    /// A directory of fine-tuned adapters (adapter_config.json, adapters.safetensors).
    #[arg(long)]
    pub adapter_path: Option<PathBuf>,
    /// An end-of-sequence token (recorded in the file for `generate`).
    #[arg(long)]
    pub eos_token: Option<String>,
    /// The most positions each key/value layer holds: mlx_lm's rotating cache that keeps the
    /// first 4 (for the models mlx_lm bounds).
    #[arg(long, allow_negative_numbers = true)]
    pub max_kv_size: Option<i64>,
    /// The file to save the prompt cache in (`.safetensors`).
    #[arg(long)]
    pub prompt_cache_file: PathBuf,
    /// The prompt; `-` reads it from stdin.
    #[arg(long, allow_hyphen_values = true)]
    pub prompt: String,
    /// Accepted as mlx_lm's (and recorded in the file as mlx_lm records it): no code from the
    /// model directory is ever run here.
    #[arg(long)]
    pub trust_remote_code: bool,
    /// Bits per element of a quantized key/value cache (not supported by this command).
    #[arg(long)]
    pub kv_bits: Option<i32>,
    /// Group size of the key/value cache quantization.
    #[arg(long, default_value_t = 64)]
    pub kv_group_size: i32,
    /// With --kv-bits: quantize the cache once it holds this many positions.
    #[arg(long, default_value_t = crate::DEFAULT_QUANTIZED_KV_START)]
    pub quantized_kv_start: usize,
}

/// Runs the command: processes the prompt, prints mlx_lm's lines to `out`, writes the file.
pub fn run(
    args: &Args,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> Result<(), Error> {
    if args.kv_bits.is_some() {
        return Err(super::unsupported(
            "--kv-bits",
            "cache_prompt writes the full-precision cache (generate --kv-bits quantizes as it \
             generates)",
        )
        .into());
    }
    let (model, mut tokenizer) = load(&args.model, args.adapter_path.as_deref())?;
    // Python's `json.dumps(tokenizer_config)`, its separators included.
    let mut tokenizer_config = format!(
        "{{\"trust_remote_code\": {}",
        if args.trust_remote_code {
            "true"
        } else {
            "false"
        }
    );
    if let Some(eos) = &args.eos_token {
        super::generate::add_eos_tokens(&mut tokenizer, std::slice::from_ref(eos))?;
        tokenizer_config.push_str(&format!(", \"eos_token\": {}", json!(eos)));
    }
    tokenizer_config.push('}');
    let prompt = read_prompt(&args.prompt, input)?;
    let ids = if tokenizer.chat_template().is_some() {
        let messages = [json!({"role": "user", "content": prompt})];
        let options = ChatOptions {
            add_generation_prompt: false,
            continue_final_message: true,
            ..Default::default()
        };
        let text = tokenizer.apply_chat_template(&messages, &options)?;
        tokenizer.encode(&text, false)?
    } else {
        tokenizer.encode(&prompt, true)?
    };
    let max_kv_size = max_kv_size(args.max_kv_size)?;

    // mlx_lm runs `generate_step(max_tokens=0)`: the prefill and the step of the last prompt
    // token, whose sample it drops. Op by op (`compile: false`), as mlx_lm computes it.
    let options = GenerateOptions {
        max_tokens: 0,
        compile: false,
        // mlx_lm's `make_prompt_cache(model, max_kv_size)`.
        max_kv_size,
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let generator = crate::generate_step(&model, &ids, &options)?;
    let cache = generator.into_cache();
    mlx_tree::eval(&cache)?;
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    // mlx_lm's progress callback, called once the prompt is processed.
    writeln!(
        out,
        "\rProcessed {:6} tokens ({:6.2} tok/s)",
        ids.len(),
        ids.len() as f64 / secs
    )?;
    let peak = mlx_rs::memory::get_peak_memory()? as f64 / 1e9;
    writeln!(out, "Peak memory: {peak:.3} GB")?;
    writeln!(out, "Saving...")?;
    let metadata = BTreeMap::from([
        ("model".to_string(), args.model.display().to_string()),
        ("tokenizer_config".to_string(), tokenizer_config),
    ]);
    crate::save_prompt_cache(&args.prompt_cache_file, &cache, &metadata)?;
    Ok(())
}
