//! Prefill and decode tokens/s of `mlx::lm` (the Rust side of `bench/lm/run.sh`, which runs
//! it next to Python's mlx_lm, `bench/lm/mlx_lm_bench.py`, on the same model, prompt and
//! libmlx):
//!
//! ```text
//! cargo run --release --example lm_bench -- --model DIR --prompt FILE \
//!     [--max-tokens N] [--reps R] [--warmup W] [--warmup-tokens N]
//! ```
//!
//! `FILE` holds the prompt's token ids as a JSON list (`mlx_lm_bench.py --write-prompt`).
//! Each run is `mlx::lm::generate_step` with its defaults (greedy, prefill chunks of 2048),
//! timed as the Python side times `mlx_lm.generate.generate_step`:
//!
//! - prefill tok/s = P / (time from calling `generate_step` to the first token): the prompt
//!   prefilled and the first decode step, as mlx_lm's `prompt_tps` counts it;
//! - decode tok/s = (N - 1) / (time from the first token to the N-th).
//!
//! W warm-up runs (of `--warmup-tokens` tokens, default N) are not measured, then R runs are,
//! and the medians are printed as JSON with every run, the library's own `stats()` and the
//! decode step's trace count, which must be 1 per generation (the program fails otherwise).

use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use mlx::lm::{generate_step, load, GenerateOptions, LoadOptions, Model};
use serde_json::{json, Value};

#[derive(Parser)]
struct Args {
    /// The model directory.
    #[arg(long)]
    model: PathBuf,
    /// A JSON list of prompt token ids.
    #[arg(long)]
    prompt: PathBuf,
    /// Tokens to generate per run.
    #[arg(long, default_value_t = 64)]
    max_tokens: usize,
    /// Measured runs.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Unmeasured runs first.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Tokens per warm-up run (default: --max-tokens).
    #[arg(long)]
    warmup_tokens: Option<usize>,
}

struct Run {
    prefill_s: f64,
    decode_s: f64,
    prompt_tokens: usize,
    generation_tokens: usize,
    traces: u64,
    stats: mlx::lm::GenerationStats,
    tokens: Vec<u32>,
}

impl Run {
    fn prefill_tps(&self) -> f64 {
        self.prompt_tokens as f64 / self.prefill_s
    }

    fn decode_tps(&self) -> f64 {
        (self.generation_tokens - 1) as f64 / self.decode_s
    }

    fn to_json(&self) -> Value {
        json!({
            "prefill_s": self.prefill_s,
            "decode_s": self.decode_s,
            "prefill_tps": self.prefill_tps(),
            "decode_tps": self.decode_tps(),
            "traces": self.traces,
            "stats": {
                "prompt_tokens": self.stats.prompt_tokens,
                "prompt_tps": self.stats.prompt_tps,
                "generation_tokens": self.stats.generation_tokens,
                "generation_tps": self.stats.generation_tps,
                "peak_memory": self.stats.peak_memory,
            },
        })
    }
}

fn run_once(model: &Model, prompt: &[u32], max_tokens: usize) -> Result<Run, Box<dyn Error>> {
    let options = GenerateOptions {
        max_tokens,
        ..Default::default()
    };
    let start = Instant::now();
    let mut generator = generate_step(model, prompt, &options)?;
    let mut stamps = Vec::with_capacity(max_tokens);
    let mut tokens = Vec::with_capacity(max_tokens);
    for item in generator.by_ref() {
        let (token, _logprobs) = item?;
        stamps.push(Instant::now());
        tokens.push(token);
    }
    mlx::core::synchronize()?;
    let traces = generator.traces();
    if traces != 1 {
        return Err(format!(
            "the decode step was traced {traces} times in one generation, not once"
        )
        .into());
    }
    if tokens.len() != max_tokens || max_tokens < 2 {
        return Err(format!(
            "{} tokens generated, {max_tokens} asked (at least 2)",
            tokens.len()
        )
        .into());
    }
    Ok(Run {
        prefill_s: (stamps[0] - start).as_secs_f64(),
        decode_s: (stamps[max_tokens - 1] - stamps[0]).as_secs_f64(),
        prompt_tokens: prompt.len(),
        generation_tokens: max_tokens,
        traces,
        stats: generator.stats(),
        tokens,
    })
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = Args::parse();
    if args.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    let prompt: Vec<u32> = serde_json::from_str(&std::fs::read_to_string(&args.prompt)?)?;
    let t = Instant::now();
    let (model, _tokenizer, _config) = load(&args.model, LoadOptions::default())?;
    let load_s = t.elapsed().as_secs_f64();

    let mut traces = Vec::new();
    for _ in 0..args.warmup {
        let run = run_once(
            &model,
            &prompt,
            args.warmup_tokens.unwrap_or(args.max_tokens),
        )?;
        traces.push(run.traces);
    }
    let mut runs = Vec::with_capacity(args.reps);
    for _ in 0..args.reps {
        runs.push(run_once(&model, &prompt, args.max_tokens)?);
    }
    traces.extend(runs.iter().map(|r| r.traces));
    if let Some(r) = runs.iter().find(|r| r.tokens != runs[0].tokens) {
        return Err(format!(
            "greedy tokens differ between runs: {:?} vs {:?}",
            &runs[0].tokens, &r.tokens
        )
        .into());
    }
    let out = json!({
        "impl": "rust",
        "mlx_version": mlx::core::version()?,
        "device": mlx::core::Device::default_device()?.to_string(),
        "load_s": load_s,
        "prompt_tokens": prompt.len(),
        "generation_tokens": args.max_tokens,
        "warmup": args.warmup,
        "warmup_tokens": args.warmup_tokens.unwrap_or(args.max_tokens),
        "median_prefill_tps": median(runs.iter().map(Run::prefill_tps).collect()),
        "median_decode_tps": median(runs.iter().map(Run::decode_tps).collect()),
        "traces_per_generation": traces,
        "peak_memory": mlx::core::memory::get_peak_memory()?,
        "first_tokens": &runs[0].tokens[..runs[0].tokens.len().min(8)],
        "runs": runs.iter().map(Run::to_json).collect::<Vec<_>>(),
    });
    println!("{out}");
    Ok(())
}
