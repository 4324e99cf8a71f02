//! `mlx-lm generate` (Python: `mlx_lm.generate`): a prompt's completion.
//!
//! As mlx_lm: the prompt goes through the tokenizer's chat template as a user message when
//! the tokenizer has one (`--ignore-chat-template`: as it is), and the output is mlx_lm's:
//! `==========`, the text as it streams, `==========` and the statistics, or with `--verbose
//! False` only the text. `--prompt-cache-file` continues from a file `cache_prompt` (ours or
//! mlx_lm's) wrote, the prompt then being the part of the template after the cached prefix.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::{max_kv_size, max_tokens, read_prompt, str2bool, xtc, Error};
use crate::{ChatOptions, GenerateOptions, LoadOptions, SamplerOptions};
use crate::{LanguageModel, Model, Tokenizer};

/// Generates text with a language model from a Hugging Face / MLX model directory.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The model directory (config.json, *.safetensors, tokenizer.json); with
    /// --prompt-cache-file, the one the cache was made with by default.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A directory of fine-tuned adapters (adapter_config.json, adapters.safetensors).
    #[arg(long)]
    pub adapter_path: Option<PathBuf>,
    /// Tokens (text or ids) that also end the generation.
    #[arg(long, num_args = 1..)]
    pub extra_eos_token: Vec<String>,
    /// A system message before the prompt in the chat template.
    #[arg(long)]
    pub system_prompt: Option<String>,
    /// The prompt; `-` reads it from stdin. `\n` and `\t` stand for a newline and a tab.
    #[arg(long, short = 'p', default_value = "hello", allow_hyphen_values = true)]
    pub prompt: String,
    /// The start of the answer: the template continues this assistant message.
    #[arg(long)]
    pub prefill_response: Option<String>,
    /// The most tokens to generate.
    #[arg(
        long,
        short = 'm',
        default_value_t = 100,
        allow_negative_numbers = true
    )]
    pub max_tokens: i64,
    /// Sampling temperature; 0 picks the most likely token (greedy).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub temp: f64,
    /// Nucleus sampling: keep the most likely tokens up to this probability mass (1: off).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub top_p: f64,
    /// Drop tokens less likely than this times the most likely one (0: off).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub min_p: f64,
    /// Keep only the k most likely tokens (0: off).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub top_k: i32,
    /// The probability of XTC sampling (excluding the top choices) at each token (0: off).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub xtc_probability: f64,
    /// The probability a token needs for XTC to count it as a top choice.
    #[arg(long, default_value_t = crate::DEFAULT_XTC_THRESHOLD, allow_negative_numbers = true)]
    pub xtc_threshold: f64,
    /// Tokens min-p sampling keeps at least.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub min_tokens_to_keep: i32,
    /// The seed of the sampling key (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Use the prompt as it is, without the tokenizer's chat template.
    #[arg(long)]
    pub ignore_chat_template: bool,
    /// Extra chat-template variables as a JSON object, e.g. '{"enable_thinking": false}'.
    #[arg(long)]
    pub chat_template_config: Option<String>,
    /// `True`: print the framing and statistics; `False` (or `F`): only the text.
    #[arg(long, default_value = "true", value_parser = str2bool, action = clap::ArgAction::Set)]
    pub verbose: bool,
    /// The most positions each key/value layer holds: mlx_lm's rotating cache that keeps the
    /// first 4 (for the models mlx_lm bounds).
    #[arg(long, allow_negative_numbers = true)]
    pub max_kv_size: Option<i64>,
    /// Prompt tokens processed at a time.
    #[arg(long, default_value_t = 2048)]
    pub prefill_step_size: usize,
    /// A prompt-cache file (`cache_prompt`'s) to continue from.
    #[arg(long)]
    pub prompt_cache_file: Option<PathBuf>,
    /// A draft model directory for speculative decoding, with the model's tokenizer.
    #[arg(long)]
    pub draft_model: Option<PathBuf>,
    /// With --draft-model: the tokens it proposes per step.
    #[arg(long, default_value_t = 3)]
    pub num_draft_tokens: usize,
    /// Bits per element of a quantized key/value cache (2, 3, 4, 5, 6 or 8; default: none).
    #[arg(long)]
    pub kv_bits: Option<i32>,
    /// Group size of the key/value cache quantization.
    #[arg(long, default_value_t = 64)]
    pub kv_group_size: i32,
    /// With --kv-bits: quantize the key/value cache once it holds this many positions.
    #[arg(long, default_value_t = crate::DEFAULT_QUANTIZED_KV_START)]
    pub quantized_kv_start: usize,
    /// Accepted as mlx_lm's: no code from the model directory is ever run here.
    #[arg(long)]
    pub trust_remote_code: bool,
    /// Accepted as mlx_lm 0.32.2 accepts it, which does nothing with it either.
    #[arg(long)]
    pub use_default_chat_template: bool,
    /// Image files for the prompt's image placeholders (not supported: text models only).
    #[arg(long, num_args = 1..)]
    pub image: Vec<PathBuf>,
    /// Quantize activations too, `-qa` (not supported here).
    #[arg(long)]
    pub quantize_activations: bool,
    /// Started as a group of several processes (`launch -n N -- mlx-lm generate ...`): split
    /// the model's layers over them (pipeline parallelism) instead of each layer's heads
    /// (tensor parallelism, the default; Python: `mlx_lm.chat --pipeline`).
    #[arg(long)]
    pub pipeline: bool,
}

/// Runs the command: loads the model, builds the prompt (reading `input` for `--prompt -`),
/// and prints what mlx_lm prints to `out`.
pub fn run(
    args: &Args,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> Result<(), Error> {
    if !args.image.is_empty() {
        return Err(super::unsupported(
            "--image",
            "images need a vision model's processor; the models here are text models",
        )
        .into());
    }
    if args.quantize_activations {
        return Err(super::unsupported(
            "--quantize-activations",
            "activation quantization (nvfp4 and mxfp8 models' QQLinear) is not ported",
        )
        .into());
    }
    let max_tokens = max_tokens(args.max_tokens)?;
    let max_kv_size = max_kv_size(args.max_kv_size)?;
    let template_config = template_config(args.chat_template_config.as_deref())?;
    let cached = match &args.prompt_cache_file {
        Some(file) => Some(crate::load_prompt_cache(file)?),
        None => None,
    };
    let model_dir = model_dir(args.model.as_deref(), cached.as_ref().map(|c| &c.1))?;
    let (mut model, mut tokenizer) = load(&model_dir, args.adapter_path.as_deref())?;
    // Under a launcher, every rank computes the same tokens; rank 0 alone prints them.
    let group = mlx_rs::distributed::init(false, None)?;
    let mut silent = std::io::sink();
    let out: &mut dyn Write = if group.rank() == 0 { out } else { &mut silent };
    if group.size() > 1 {
        if args.pipeline {
            model.pipeline(&group, None)?;
        } else {
            model.shard(&group)?;
        }
        mlx_tree::eval(&model)?;
    }
    if let Some((_, metadata)) = &cached {
        add_cached_eos_token(&mut tokenizer, metadata)?;
    }
    add_eos_tokens(&mut tokenizer, &args.extra_eos_token)?;

    let prompt = read_prompt(
        &args.prompt.replace("\\n", "\n").replace("\\t", "\t"),
        input,
    )?;
    let use_chat_template = !args.ignore_chat_template && tokenizer.chat_template().is_some();
    let prompt = if use_chat_template {
        let mut messages = Vec::new();
        if let Some(system) = &args.system_prompt {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": prompt}));
        let prefill = args.prefill_response.is_some();
        if let Some(response) = &args.prefill_response {
            messages.push(json!({"role": "assistant", "content": response}));
        }
        let options = ChatOptions {
            add_generation_prompt: !prefill,
            continue_final_message: prefill,
            extra: template_config,
            ..Default::default()
        };
        let text = tokenizer.apply_chat_template(&messages, &options)?;
        if cached.is_some() {
            // As mlx_lm: the cache holds the template up to the user's message, so the prompt
            // is what follows it (the template rendered without the extra variables).
            let last = messages.len() - 1;
            messages[last]["content"] = json!("<query>");
            let options = ChatOptions {
                extra: Map::new(),
                ..options
            };
            let test = tokenizer.apply_chat_template(&messages, &options)?;
            let at = test
                .find("<query>")
                .ok_or("the chat template drops the user's message")?;
            text.get(at..)
                .ok_or("the chat template renders the prompt unlike its prefix")?
                .to_string()
        } else {
            text
        }
    } else {
        prompt
    };
    let ids = tokenizer.encode(&prompt, !use_chat_template)?;

    let cache = cached.map(|c| c.0);
    let options = GenerateOptions {
        max_tokens,
        sampler: SamplerOptions {
            temperature: args.temp,
            top_p: args.top_p,
            min_p: args.min_p,
            min_tokens_to_keep: args.min_tokens_to_keep,
            top_k: args.top_k,
        },
        seed: args.seed,
        prefill_step_size: args.prefill_step_size,
        stop_tokens: tokenizer.eos_token_ids(),
        kv_bits: args.kv_bits,
        kv_group_size: args.kv_group_size,
        quantized_kv_start: args.quantized_kv_start,
        max_kv_size,
        xtc: xtc(args.xtc_probability, args.xtc_threshold, &tokenizer)?,
        ..Default::default()
    };
    let draft = match &args.draft_model {
        None => None,
        Some(dir) => {
            let (draft, draft_tokenizer, _) = crate::load(dir, LoadOptions::default())?;
            if draft_tokenizer.vocab_size() != tokenizer.vocab_size() {
                return Err("Draft model tokenizer does not match model tokenizer.".into());
            }
            Some(draft)
        }
    };
    type Stream<'a> = Box<dyn Iterator<Item = crate::Result<crate::GenerationResponse>> + 'a>;
    let stream: Stream<'_> = match (cache, &draft) {
        (None, None) => Box::new(crate::stream_generate(&model, &tokenizer, &ids, &options)?),
        (Some(cache), None) => Box::new(crate::stream_generate_with_cache(
            &model, &tokenizer, &ids, cache, &options,
        )?),
        (None, Some(draft)) => Box::new(crate::stream_generate_speculative(
            &model,
            draft,
            &tokenizer,
            &ids,
            args.num_draft_tokens,
            &options,
        )?),
        (Some(_), Some(_)) => {
            return Err("--prompt-cache-file with --draft-model is not supported".into())
        }
    };

    // mlx_lm's `generate(..., verbose)`.
    if args.verbose {
        writeln!(out, "==========")?;
    }
    let mut text = String::new();
    let mut last = None;
    for response in stream {
        let response = response?;
        if args.verbose {
            out.write_all(response.text.as_bytes())?;
            out.flush()?;
        }
        text.push_str(&response.text);
        last = Some(response.stats);
    }
    if !args.verbose {
        writeln!(out, "{text}")?;
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "==========")?;
    match last {
        Some(stats) if !text.is_empty() => {
            writeln!(
                out,
                "Prompt: {} tokens, {:.3} tokens-per-sec",
                stats.prompt_tokens, stats.prompt_tps
            )?;
            writeln!(
                out,
                "Generation: {} tokens, {:.3} tokens-per-sec",
                stats.generation_tokens, stats.generation_tps
            )?;
            writeln!(out, "Peak memory: {:.3} GB", stats.peak_memory as f64 / 1e9)?;
        }
        _ => writeln!(out, "No text generated for this prompt")?,
    }
    Ok(())
}

/// The program of `generate` alone (the `generate` example): parses the process's arguments
/// as this command's, runs it, and on failure prints the error and exits with status 1.
pub fn main() {
    #[derive(clap::Parser)]
    #[command(name = "generate")]
    struct Generate {
        #[command(flatten)]
        args: Args,
    }
    let args = <Generate as clap::Parser>::parse().args;
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    if let Err(e) = run(&args, &mut std::io::stdin().lock(), &mut out, &mut err) {
        let _ = out.flush();
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// `--chat-template-config`: a JSON object (mlx_lm passes it as keyword arguments).
pub(crate) fn template_config(json: Option<&str>) -> Result<Map<String, Value>, Error> {
    match json {
        None => Ok(Map::new()),
        Some(json) => match serde_json::from_str(json) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err("--chat-template-config must be a JSON object".into()),
            Err(e) => Err(format!("--chat-template-config is not JSON: {e}").into()),
        },
    }
}

/// The model directory: `--model`, else the one the prompt cache names; both, they must
/// agree (as mlx_lm).
fn model_dir(
    model: Option<&Path>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<PathBuf, Error> {
    let cached = metadata.and_then(|m| m.get("model")).map(PathBuf::from);
    match (model, cached) {
        (Some(model), Some(cached)) => {
            let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
                (Ok(a), Ok(b)) => a == b,
                _ => a == b,
            };
            if !same(model, &cached) {
                return Err(format!(
                    "Providing a different model ({}) than that used to create the prompt \
                     cache ({}) is an error.",
                    model.display(),
                    cached.display()
                )
                .into());
            }
            Ok(model.to_path_buf())
        }
        (Some(model), None) => Ok(model.to_path_buf()),
        (None, Some(cached)) => Ok(cached),
        (None, None) => Err("--model is required (a model directory)".into()),
    }
}

/// Loads the model and tokenizer, with the adapters if given.
pub(crate) fn load(dir: &Path, adapters: Option<&Path>) -> Result<(Model, Tokenizer), Error> {
    super::local_model(dir)?;
    let (mut model, tokenizer, _) = crate::load(dir, LoadOptions::default())?;
    if let Some(adapters) = adapters {
        crate::tuner::load_adapters(&mut model, adapters)?;
    }
    Ok((model, tokenizer))
}

/// mlx_lm's `TokenizerWrapper.add_eos_token`: an id, else a token of the vocabulary.
pub(crate) fn add_eos_tokens(tokenizer: &mut Tokenizer, tokens: &[String]) -> Result<(), Error> {
    let mut ids = Vec::new();
    for token in tokens {
        let id = match token.parse::<u32>() {
            Ok(id) => id,
            Err(_) => tokenizer
                .token_to_id(token)
                .ok_or_else(|| format!("'{token}' is not a token for this tokenizer"))?,
        };
        ids.push(id);
    }
    tokenizer.add_eos_token_ids(ids);
    Ok(())
}

/// The end-of-sequence token `cache_prompt --eos-token` recorded in the file's
/// `tokenizer_config`.
fn add_cached_eos_token(
    tokenizer: &mut Tokenizer,
    metadata: &BTreeMap<String, String>,
) -> Result<(), Error> {
    let Some(config) = metadata.get("tokenizer_config") else {
        return Ok(());
    };
    let config: Value = serde_json::from_str(config)
        .map_err(|e| format!("the prompt cache's tokenizer_config is not JSON: {e}"))?;
    if let Some(token) = config.get("eos_token").and_then(Value::as_str) {
        add_eos_tokens(tokenizer, &[token.to_string()])?;
    }
    Ok(())
}
