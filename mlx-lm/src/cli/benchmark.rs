//! `mlx-lm benchmark` (Python: `mlx_lm.benchmark`): prompt and generation speed and peak
//! memory over repeated trials, on random prompts with the end-of-sequence tokens off.
//!
//! As mlx_lm: `mx.random.seed(0)`, then the prompts are `randint(0, vocab, (batch, prompt
//! tokens))`, so they are mlx_lm's; a warm-up run, then each trial's line and the averages,
//! in mlx_lm's words (`tests/lm_cli.rs` parses both). A batch above 1 runs
//! [`batch_generate`](crate::batch_generate).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;

use super::generate::load;
use super::Error;
use crate::GenerateOptions;

/// Measures a model's prompt and generation speed and its peak memory.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The model directory (config.json, *.safetensors, tokenizer.json).
    #[arg(long)]
    pub model: PathBuf,
    /// Length of the prompt.
    #[arg(long, short = 'p', default_value_t = 512)]
    pub prompt_tokens: usize,
    /// Length of the completion.
    #[arg(long, short = 'g', default_value_t = 1024)]
    pub generation_tokens: usize,
    /// Prompts generated at once.
    #[arg(long, short = 'b', default_value_t = 1)]
    pub batch_size: usize,
    /// Number of timing trials.
    #[arg(long, short = 'n', default_value_t = 5)]
    pub num_trials: usize,
    /// Prompt tokens processed at a time.
    #[arg(long, default_value_t = 2048)]
    pub prefill_step_size: usize,
    /// Seconds to wait before each trial.
    #[arg(long, default_value_t = 0)]
    pub delay: u64,
    /// Accepted as mlx_lm's: no code from the model directory is ever run here.
    #[arg(long)]
    pub trust_remote_code: bool,
    /// Pipeline parallelism across distributed ranks (not supported by this command).
    #[arg(long)]
    pub pipeline: bool,
    /// Quantize activations too, `-qa` (not supported here).
    #[arg(long)]
    pub quantize_activations: bool,
}

/// One run's numbers, as mlx_lm reports them (peak memory in GB).
#[derive(Debug, Clone, Copy)]
struct Report {
    prompt_tps: f64,
    generation_tps: f64,
    peak_memory: f64,
}

/// Runs the benchmark, printing mlx_lm's lines to `out`.
pub fn run(
    args: &Args,
    _input: &mut dyn BufRead,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> Result<(), Error> {
    if args.prompt_tokens == 0 || args.generation_tokens == 0 || args.batch_size == 0 {
        return Err(
            "--prompt-tokens, --generation-tokens and --batch-size must be positive".into(),
        );
    }
    if args.pipeline {
        return Err(super::unsupported("--pipeline", "this command runs on one process").into());
    }
    if args.quantize_activations {
        return Err(super::unsupported(
            "--quantize-activations",
            "activation quantization (nvfp4 and mxfp8 models' QQLinear) is not ported",
        )
        .into());
    }
    if args.num_trials == 0 {
        return Err("--num-trials must be positive".into());
    }
    mlx_rs::random::seed(0)?;
    let (model, tokenizer) = load(&args.model, None)?;
    let (batch, length) = (
        i32::try_from(args.batch_size)?,
        i32::try_from(args.prompt_tokens)?,
    );
    let prompts = mlx_rs::random::randint(0, model.vocab_size(), &[batch, length], None, None)?;
    let prompts: Vec<Vec<u32>> = prompts
        .to_vec::<i32>()?
        .chunks(args.prompt_tokens)
        .map(|row| row.iter().map(|&t| t as u32).collect())
        .collect();
    // No stop tokens: every run generates all its tokens (mlx_lm empties the eos set).
    let options = GenerateOptions {
        max_tokens: args.generation_tokens,
        prefill_step_size: args.prefill_step_size,
        ..Default::default()
    };
    let bench = || -> Result<Report, Error> {
        if prompts.len() == 1 {
            let mut last = None;
            for response in crate::stream_generate(&model, &tokenizer, &prompts[0], &options)? {
                last = Some(response?.stats);
            }
            let stats = last.ok_or("nothing was generated")?;
            Ok(Report {
                prompt_tps: stats.prompt_tps,
                generation_tps: stats.generation_tps,
                peak_memory: stats.peak_memory as f64 / 1e9,
            })
        } else {
            let stats = crate::batch_generate(&model, &tokenizer, &prompts, &options)?.stats;
            Ok(Report {
                prompt_tps: stats.prompt_tps,
                generation_tps: stats.generation_tps,
                peak_memory: stats.peak_memory as f64 / 1e9,
            })
        }
    };
    writeln!(out, "Running warmup..")?;
    bench()?;
    writeln!(
        out,
        "Timing with prompt_tokens={}, generation_tokens={}, batch_size={}.",
        args.prompt_tokens, args.generation_tokens, args.batch_size
    )?;
    let mut reports = Vec::new();
    for i in 0..args.num_trials {
        if args.delay > 0 {
            std::thread::sleep(std::time::Duration::from_secs(args.delay));
        }
        let tic = Instant::now();
        let r = bench()?;
        let total = tic.elapsed().as_secs_f64();
        writeln!(
            out,
            "Trial {}:  prompt_tps={:.3}, generation_tps={:.3}, peak_memory={:.3}, total_time={:.3}",
            i + 1,
            r.prompt_tps,
            r.generation_tps,
            r.peak_memory,
            total
        )?;
        out.flush()?;
        reports.push(r);
    }
    let n = args.num_trials as f64;
    let avg = |f: fn(&Report) -> f64| reports.iter().map(f).sum::<f64>() / n;
    writeln!(
        out,
        "Averages: prompt_tps={:.3}, generation_tps={:.3}, peak_memory={:.3}",
        avg(|r| r.prompt_tps),
        avg(|r| r.generation_tps),
        avg(|r| r.peak_memory)
    )?;
    Ok(())
}
