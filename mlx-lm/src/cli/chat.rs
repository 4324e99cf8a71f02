//! `mlx-lm chat` (Python: `mlx_lm.chat`): a chat in the terminal.
//!
//! As mlx_lm: each line read is a user message, sent through the chat template with the
//! system prompt (if any) and appended to the prompt cache, which is kept between turns, so
//! the model sees the whole conversation; `q` quits, `r` resets the cache, `h` prints the
//! commands. After each answer a line of statistics. mlx_lm's screen is drawn with `rich`
//! (a framed header, rules around the input line); this one prints the same lines without
//! the drawing, and the answers are mlx_lm's token for token (`tests/lm_cli.rs` pipes one
//! conversation into both). The end of the input quits as `q` does.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use serde_json::json;

use super::generate::load;
use super::{max_kv_size, max_tokens, xtc, Error};
use crate::{Cache, ChatOptions, GenerateOptions, SamplerOptions};
use mlx_rs::Array;
use mlx_tree::eval;

/// Chats with a language model from a Hugging Face / MLX model directory.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The model directory (config.json, *.safetensors, tokenizer.json).
    #[arg(long)]
    pub model: PathBuf,
    /// A directory of fine-tuned adapters (adapter_config.json, adapters.safetensors).
    #[arg(long)]
    pub adapter_path: Option<PathBuf>,
    /// Sampling temperature; 0 picks the most likely token (greedy).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub temp: f64,
    /// Nucleus sampling: keep the most likely tokens up to this probability mass (1: off).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub top_p: f64,
    /// The probability of XTC sampling (excluding the top choices) at each token (0: off).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub xtc_probability: f64,
    /// The probability a token needs for XTC to count it as a top choice.
    #[arg(long, default_value_t = crate::DEFAULT_XTC_THRESHOLD, allow_negative_numbers = true)]
    pub xtc_threshold: f64,
    /// The seed of the sampling key.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The most positions each key/value layer holds: mlx_lm's rotating cache that keeps the
    /// first 4 (for the models mlx_lm bounds).
    #[arg(long, allow_negative_numbers = true)]
    pub max_kv_size: Option<i64>,
    /// Prompt tokens processed at a time.
    #[arg(long, default_value_t = 2048)]
    pub prefill_step_size: usize,
    /// The most tokens of each answer.
    #[arg(
        long,
        short = 'm',
        default_value_t = 256,
        allow_negative_numbers = true
    )]
    pub max_tokens: i64,
    /// A system message before each user message.
    #[arg(long)]
    pub system_prompt: Option<String>,
    /// Accepted as mlx_lm's: no code from the model directory is ever run here.
    #[arg(long)]
    pub trust_remote_code: bool,
    /// Pipeline parallelism across distributed ranks (not supported by this command).
    #[arg(long)]
    pub pipeline: bool,
}

/// Runs the chat: reads the user's lines from `input`, prints the screen to `out`.
pub fn run(
    args: &Args,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> Result<(), Error> {
    if args.pipeline {
        return Err(super::unsupported("--pipeline", "this command runs on one process").into());
    }
    let max_tokens = max_tokens(args.max_tokens)?;
    let max_kv_size = max_kv_size(args.max_kv_size)?;
    let (model, tokenizer) = load(&args.model, args.adapter_path.as_deref())?;

    // mlx_lm's ChatUI header.
    writeln!(out, "mlx-lm chat")?;
    let mut rows = vec![("model", args.model.display().to_string())];
    if let Some(adapters) = &args.adapter_path {
        rows.push(("adapter", adapters.display().to_string()));
    }
    rows.push(("max tokens", thousands(args.max_tokens)));
    if let Some(system) = &args.system_prompt {
        let shown = if system.chars().count() > 60 {
            format!("{}...", system.chars().take(57).collect::<String>())
        } else {
            system.clone()
        };
        rows.push(("system", shown));
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in &rows {
        writeln!(out, "  {k:width$}   {v}")?;
    }
    print_help(out)?;

    let options = GenerateOptions {
        max_tokens,
        sampler: SamplerOptions {
            temperature: args.temp,
            top_p: args.top_p,
            ..Default::default()
        },
        // mlx_lm seeds once, before the first turn; each turn here starts a key from the
        // seed, which is the same draw for greedy decoding only.
        seed: Some(args.seed),
        prefill_step_size: args.prefill_step_size,
        stop_tokens: tokenizer.eos_token_ids(),
        // As mlx_lm's `make_prompt_cache(model, max_kv_size)` before the first turn (and
        // at a reset): the first turn's fresh cache is bounded, the later turns continue it.
        max_kv_size,
        xtc: xtc(args.xtc_probability, args.xtc_threshold, &tokenizer)?,
        ..Default::default()
    };
    let mut cache: Option<Cache> = None;
    let mut line = String::new();
    loop {
        write!(out, "› ")?;
        out.flush()?;
        line.clear();
        if input.read_line(&mut line)? == 0 {
            writeln!(out)?;
            writeln!(out, "bye")?;
            return Ok(());
        }
        // As mlx_lm: the input line is written after the prompt, the answer below it.
        writeln!(out)?;
        let query = line.strip_suffix('\n').unwrap_or(&line);
        let query = query.strip_suffix('\r').unwrap_or(query);
        match query {
            "q" => {
                writeln!(out, "bye")?;
                return Ok(());
            }
            "r" => {
                cache = None;
                writeln!(out, "  reset context cleared")?;
                continue;
            }
            "h" => {
                print_help(out)?;
                continue;
            }
            _ => {}
        }
        let mut messages = Vec::new();
        if let Some(system) = &args.system_prompt {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": query}));
        let template = ChatOptions {
            add_generation_prompt: true,
            ..Default::default()
        };
        let text = tokenizer.apply_chat_template(&messages, &template)?;
        let ids = tokenizer.encode(&text, false)?;
        let mut stream = match cache.take() {
            None => crate::stream_generate(&model, &tokenizer, &ids, &options)?,
            Some(c) => crate::stream_generate_with_cache(&model, &tokenizer, &ids, c, &options)?,
        };
        let mut last = None;
        let mut produced = 0;
        for response in stream.by_ref() {
            let response = response?;
            out.write_all(response.text.as_bytes())?;
            out.flush()?;
            produced += 1;
            last = Some((response.token, response.stats));
        }
        let mut kept = stream.into_cache();
        // mlx_lm's generation has fed every token it yielded to the model, the last one
        // too; here the last of a generation that ran to `max_tokens` is not (whether it
        // was a stop token or not), so feed it: the next turn's prompt follows it in the
        // cache.
        if let (Some((token, _)), true) = (last, produced == max_tokens) {
            let x = Array::from_slice(&[token], &[1, 1])?;
            let logits = model.forward(&x, Some(&mut kept))?;
            eval(&logits)?;
            eval(&kept)?;
        }
        cache = Some(kept);
        writeln!(out)?;
        if let Some((_, stats)) = last {
            writeln!(
                out,
                "  {} tokens · {:.1} tok/s · prompt {:.1} tok/s · peak {:.2} GB",
                stats.generation_tokens,
                stats.generation_tps,
                stats.prompt_tps,
                stats.peak_memory as f64 / 1e9
            )?;
        }
    }
}

fn print_help(out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "  commands    q exit   r reset   h help")
}

/// Python's `f"{n:,}"`.
fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut s = String::from(if n < 0 { "-" } else { "" });
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            s.push(',');
        }
        s.push(c);
    }
    s
}
