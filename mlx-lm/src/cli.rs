//! The `generate` command (Python: `mlx_lm.generate`), as a library: [`main`] is the whole
//! program, [`run`] the command over its arguments and output streams (tests run it
//! in-process). A crate with an architecture of its own registers it
//! ([`register_model`](crate::register_model)) and then calls [`main`] from its binary: the
//! command loads its model directories like any other.
//!
//! ```no_run
//! // In a binary's `main`, after `mlx_lm::register_model("my_arch", ...)`:
//! mlx_lm::cli::main();
//! ```

use std::io::{Read, Write};
use std::path::PathBuf;

use crate::{ChatOptions, GenerateOptions, LoadOptions, SamplerOptions};
use clap::Parser;

/// Generates text with a language model from a Hugging Face / MLX model directory.
///
/// The text streams to stdout; the statistics go to stderr.
#[derive(Debug, Parser)]
#[command(name = "generate")]
pub struct Args {
    /// The model directory (config.json, *.safetensors, tokenizer.json).
    #[arg(long)]
    pub model: PathBuf,
    /// The prompt; `-` reads it from stdin. `\n` and `\t` stand for a newline and a tab.
    #[arg(long)]
    pub prompt: String,
    /// The most tokens to generate.
    #[arg(long, short = 'm', default_value_t = 100)]
    pub max_tokens: usize,
    /// Sampling temperature; 0 picks the most likely token (greedy).
    #[arg(long, default_value_t = 0.0)]
    pub temp: f64,
    /// Nucleus sampling: keep the most likely tokens up to this probability mass (1: off).
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f64,
    /// Drop tokens less likely than this times the most likely one (0: off).
    #[arg(long, default_value_t = 0.0)]
    pub min_p: f64,
    /// Keep only the k most likely tokens (0: off).
    #[arg(long, default_value_t = 0)]
    pub top_k: i32,
    /// The seed of the sampling key (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Wrap the prompt in the model's chat template as a user message.
    #[arg(long)]
    pub chat: bool,
    /// With --chat: a system message before the prompt.
    #[arg(long)]
    pub system_prompt: Option<String>,
    /// With --chat: extra template variables as a JSON object, e.g. '{"enable_thinking": false}'.
    #[arg(long)]
    pub chat_template_config: Option<String>,
    /// A directory of fine-tuned adapters (adapter_config.json, adapters.safetensors), as
    /// mlx_lm's `--adapter-path`.
    #[arg(long)]
    pub adapter_path: Option<PathBuf>,
    /// Bits per element of a quantized key/value cache (2, 3, 4, 5, 6 or 8; default: none).
    #[arg(long)]
    pub kv_bits: Option<i32>,
    /// Group size of the key/value cache quantization.
    #[arg(long, default_value_t = 64)]
    pub kv_group_size: i32,
    /// With --kv-bits: quantize the key/value cache once it holds this many positions.
    #[arg(long, default_value_t = crate::DEFAULT_QUANTIZED_KV_START)]
    pub quantized_kv_start: usize,
}

type Error = Box<dyn std::error::Error>;

/// Runs the command: loads the model, builds the prompt, streams the text to `out` and the
/// statistics to `err`.
pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), Error> {
    let (mut model, tokenizer, _) = crate::load(&args.model, LoadOptions::default())?;
    if let Some(dir) = &args.adapter_path {
        crate::tuner::load_adapters(&mut model, dir)?;
    }
    let prompt = if args.prompt == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        // As mlx_lm: a shell makes typing a newline awkward.
        args.prompt.replace("\\n", "\n").replace("\\t", "\t")
    };
    let ids = if args.chat {
        let mut messages = Vec::new();
        if let Some(system) = &args.system_prompt {
            messages.push(serde_json::json!({"role": "system", "content": system}));
        }
        messages.push(serde_json::json!({"role": "user", "content": prompt}));
        let extra = match &args.chat_template_config {
            None => Default::default(),
            Some(json) => match serde_json::from_str(json)? {
                serde_json::Value::Object(map) => map,
                _ => return Err("--chat-template-config must be a JSON object".into()),
            },
        };
        let options = ChatOptions {
            add_generation_prompt: true,
            extra,
            ..Default::default()
        };
        let text = tokenizer.apply_chat_template(&messages, &options)?;
        tokenizer.encode(&text, false)?
    } else {
        tokenizer.encode(&prompt, true)?
    };

    let options = GenerateOptions {
        max_tokens: args.max_tokens,
        sampler: SamplerOptions {
            temperature: args.temp,
            top_p: args.top_p,
            min_p: args.min_p,
            top_k: args.top_k,
            ..Default::default()
        },
        seed: args.seed,
        stop_tokens: tokenizer.eos_token_ids(),
        kv_bits: args.kv_bits,
        kv_group_size: args.kv_group_size,
        quantized_kv_start: args.quantized_kv_start,
        ..Default::default()
    };
    let mut last = None;
    for response in crate::stream_generate(&model, &tokenizer, &ids, &options)? {
        let response = response?;
        out.write_all(response.text.as_bytes())?;
        out.flush()?;
        last = Some(response.stats);
    }
    writeln!(out)?;
    if let Some(stats) = last {
        writeln!(
            err,
            "Prompt: {} tokens, {:.3} tokens-per-sec",
            stats.prompt_tokens, stats.prompt_tps
        )?;
        writeln!(
            err,
            "Generation: {} tokens, {:.3} tokens-per-sec",
            stats.generation_tokens, stats.generation_tps
        )?;
        writeln!(err, "Peak memory: {:.3} GB", stats.peak_memory as f64 / 1e9)?;
    }
    Ok(())
}

/// The program (Python: `mlx_lm.generate.main`): parses the process's arguments, runs the
/// command, and on failure prints the error and exits with status 1.
pub fn main() {
    let args = Args::parse();
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    if let Err(e) = run(&args, &mut out, &mut err) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
