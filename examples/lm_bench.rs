//! Prefill and decode tokens/s of `mlx::lm` (the Rust side of `bench/lm/run.sh` on a CPU and
//! `bench/lm/suite.py` on a GPU, which run it next to Python's mlx_lm,
//! `bench/lm/mlx_lm_bench.py`, on the same model, prompts and libmlx):
//!
//! ```text
//! cargo run --release --example lm_bench -- --model DIR --prompt FILE \
//!     [--max-tokens N] [--reps R] [--warmup W] [--warmup-tokens N] [--no-fused-attention]
//!     [--no-fused-gated-delta] [--no-fused-ssm-update] [--no-fused-selective-scan]
//!     [--no-padded-quantized-rows]
//!     [--no-in-place-cache] [--no-compile] [--draft-model DIR [--num-draft-tokens K]]
//! cargo run --release --example lm_bench -- --model DIR --prompt FILE --breakdown STEPS
//! launch -n 2 --backend nccl -- lm_bench --model DIR --prompt FILE [--pipeline] \
//!     [--random-weights SEED] [--dtype bfloat16]
//! ```
//!
//! `FILE` holds the prompt's token ids as a JSON list, or a list of B lists for a batch of B
//! (`mlx_lm_bench.py --write-prompt`). Each run is `mlx::lm::generate_step` (a list) or
//! `mlx::lm::batch_generate_step` (a list of lists) with their defaults (greedy, prefill
//! chunks of 2048), timed as the Python side times mlx_lm:
//!
//! - time to first token: from the call to the first token (the prompt prefilled and the
//!   first decode step, as mlx_lm's `prompt_tps` counts it); prefill tok/s = B * P / it;
//! - decode tok/s = B * (N - 1) / (time from the first token to the N-th).
//!
//! With `--draft-model`, each run is `mlx::lm::speculative_generate_step` (a batch of one,
//! compiled), timed the same way, and the JSON adds how many of the generated tokens the draft
//! proposed and the target accepted (`accepted_draft_tokens`), the rounds (one target forward
//! each) and the draft tokens proposed. A round traces at most `2 * K` times per generation
//! (its draft input of one token or two, times the tokens drafted); more fails the program.
//!
//! W warm-up runs (of `--warmup-tokens` tokens, default N) are not measured, then R runs are,
//! and the medians are printed as JSON with every run, the peak memory and the decode step's
//! trace count, which must be 1 per generation (the program fails otherwise).
//!
//! `--breakdown STEPS` instead splits a decode step of a batch of one (the prompt prefilled
//! first) into what it costs, each over STEPS greedy steps:
//!
//! - `eager`: the step's graph built op by op (host time), then evaluated synchronously
//!   (MLX's dispatch of every primitive, the kernels, the wait);
//! - `compiled`: the same step through `compile_mut` with the cache as state: the host time of
//!   a compiled call, then the synchronous evaluation of its (fused) graph;
//! - `pipelined`: the compiled step with the next step queued (`async_eval`) before the
//!   current token is read, as `generate_step` runs it: per-token time;
//! - the primitives in one step's graph, eager and compiled, by kind (MLX's DOT export);
//! - `dispatch_us_per_primitive`: a chain of 2,000 dependent one-element adds, evaluated:
//!   MLX's cost per primitive when the kernels are trivial.
//!
//! `--random-weights SEED` builds the model of `DIR`'s config.json with random weights
//! (`mlx::lm::random_model`; `DIR` needs no weights), in `--dtype`. Started by a launcher in a
//! group of more than one process, the model is split over the group (tensor parallel, or by
//! layers with `--pipeline`) before it is evaluated, so each process draws or reads its own
//! share alone: a model larger than one device. Every rank runs the same generations; rank 0
//! prints the JSON, with the group, the collectives one decode step runs (by MLX primitive)
//! and, tensor parallel, `comm_ms_per_token`: that many dependent `all_sum`s of one step's
//! hidden state (`[batch, 1, hidden_size]` in the model's dtype), timed alone.

use std::collections::BTreeMap;
use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use mlx::core::distributed::{self, Group};
use mlx::core::{graph, ops, Array, Dtype};
use mlx::lm::{
    batch_generate_step, eval_shares, generate_step, load_model, random_model, sharded_load,
    speculative_generate_step, Cache, GenerateOptions, KernelOptions, LanguageModel, LayerCache,
    LoadOptions, Model, ModelConfig,
};
use mlx::utils::{async_eval, compile_mut, eval};
use serde_json::{json, Value};

#[derive(Parser)]
struct Args {
    /// The model directory.
    #[arg(long)]
    model: PathBuf,
    /// A JSON list of prompt token ids, or a list of such lists (a batch).
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
    /// Split a decode step's time over this many steps instead (batch of one).
    #[arg(long)]
    breakdown: Option<usize>,
    /// Decode attention as MLX's masked attention over the whole cache buffer, not the
    /// one-kernel attention over the written slots (`KernelOptions::fused_decode_attention`;
    /// CUDA only).
    #[arg(long)]
    no_fused_attention: bool,
    /// Qwen3.5's linear-attention recurrence as array ops step by step, not one kernel
    /// (`KernelOptions::fused_gated_delta`; CUDA only).
    #[arg(long)]
    no_fused_gated_delta: bool,
    /// Mamba-2's decode step as mlx_lm's chunked SSD ops, not one kernel
    /// (`KernelOptions::fused_ssm_update`; CUDA only).
    #[arg(long)]
    no_fused_ssm_update: bool,
    /// Mamba-1's selective scan as mlx_lm's loop of small ops, not one kernel
    /// (`KernelOptions::fused_selective_scan`; CUDA only).
    #[arg(long)]
    no_fused_selective_scan: bool,
    /// Quantized products of 2 to 7 rows as MLX computes them (not through its 8-row kernel
    /// with zero rows: `KernelOptions::padded_quantized_rows`; CUDA only).
    #[arg(long)]
    no_padded_quantized_rows: bool,
    /// Key/value caches updated functionally each step, not written in place
    /// (`GenerateOptions::cache_writes_in_place`; matters on CUDA only).
    #[arg(long)]
    no_in_place_cache: bool,
    /// The decode step op by op, as mlx_lm runs it (`GenerateOptions::compile` off; a batch
    /// of one only): what mlx_lm's exact tokens cost.
    #[arg(long)]
    no_compile: bool,
    /// A draft model directory: speculative decoding (`speculative_generate_step`), batch of
    /// one.
    #[arg(long)]
    draft_model: Option<PathBuf>,
    /// With --draft-model: the tokens it proposes per round (mlx_lm's default, 3).
    #[arg(long, default_value_t = 3)]
    num_draft_tokens: usize,
    /// Random weights drawn from this seed for the model of the directory's config.json.
    #[arg(long)]
    random_weights: Option<u64>,
    /// The parameters' dtype: float32, bfloat16 or float16 (default: the checkpoint's, or
    /// float32 for random weights).
    #[arg(long)]
    dtype: Option<String>,
    /// In a group of processes: split the model by layers, not tensor parallel.
    #[arg(long)]
    pipeline: bool,
}

struct Run {
    ttft_s: f64,
    decode_s: f64,
    batch: usize,
    prompt_tokens: usize,
    generation_tokens: usize,
    traces: u64,
    peak_memory: usize,
    /// The library's own statistics (`stats()`).
    stats: Value,
    tokens: Vec<Vec<u32>>,
    /// Milliseconds between consecutive tokens: where a mean decode rate hides its outliers.
    intervals_ms: Vec<f64>,
}

impl Run {
    fn prefill_tps(&self) -> f64 {
        (self.batch * self.prompt_tokens) as f64 / self.ttft_s
    }

    fn decode_tps(&self) -> f64 {
        (self.batch * (self.generation_tokens - 1)) as f64 / self.decode_s
    }

    fn to_json(&self) -> Value {
        json!({
            "ttft_s": self.ttft_s,
            "decode_s": self.decode_s,
            "prefill_tps": self.prefill_tps(),
            "decode_tps": self.decode_tps(),
            "traces": self.traces,
            "peak_memory": self.peak_memory,
            "stats": self.stats,
            "token_ms": percentiles(self.intervals_ms.clone()),
        })
    }
}

fn run_once(
    model: &Model,
    prompts: &[Vec<u32>],
    max_tokens: usize,
    in_place: bool,
    compile: bool,
    draft: Option<(&Model, usize)>,
) -> Result<Run, Box<dyn Error>> {
    if max_tokens < 2 {
        return Err("--max-tokens must be at least 2".into());
    }
    if !compile && prompts.len() > 1 {
        return Err("--no-compile runs a batch of one only".into());
    }
    let options = GenerateOptions {
        max_tokens,
        cache_writes_in_place: in_place,
        compile,
        ..Default::default()
    };
    let start = Instant::now();
    let mut stamps = Vec::with_capacity(max_tokens);
    let mut tokens = vec![Vec::with_capacity(max_tokens); prompts.len()];
    let (traces, peak_memory, stats) = if let Some((draft, num_draft)) = draft {
        if prompts.len() > 1 {
            return Err("--draft-model runs a batch of one only".into());
        }
        let mut generator =
            speculative_generate_step(model, draft, &prompts[0], num_draft, &options)?;
        for item in generator.by_ref() {
            let (token, _logprobs, _from_draft) = item?;
            stamps.push(Instant::now());
            tokens[0].push(token);
        }
        mlx::core::synchronize()?;
        let s = generator.stats();
        let (drafted, rounds) = generator.drafted();
        let stats = json!({
            "prompt_tps": s.prompt_tps,
            "generation_tps": s.generation_tps,
            "accepted_draft_tokens": s.accepted_draft_tokens,
            "drafted_tokens": drafted,
            "rounds": rounds,
        });
        (generator.traces(), s.peak_memory, stats)
    } else if prompts.len() == 1 {
        let mut generator = generate_step(model, &prompts[0], &options)?;
        for item in generator.by_ref() {
            let (token, _logprobs) = item?;
            stamps.push(Instant::now());
            tokens[0].push(token);
        }
        mlx::core::synchronize()?;
        let s = generator.stats();
        let stats = json!({"prompt_tps": s.prompt_tps, "generation_tps": s.generation_tps});
        (generator.traces(), s.peak_memory, stats)
    } else {
        let mut generator = batch_generate_step(model, prompts, &options)?;
        for step in generator.by_ref() {
            let step = step?;
            stamps.push(Instant::now());
            for (row, token) in tokens.iter_mut().zip(&step.tokens) {
                row.extend(token);
            }
        }
        mlx::core::synchronize()?;
        let s = generator.stats();
        let stats = json!({"prompt_tps": s.prompt_tps, "generation_tps": s.generation_tps});
        (generator.traces(), s.peak_memory, stats)
    };
    // A speculative round traces once per shape of its input: its draft input of one token
    // or two, times the tokens drafted (fewer in the last rounds).
    let allowed = match draft {
        Some((_, num_draft)) if compile => 1..=2 * num_draft as u64,
        _ => u64::from(compile)..=u64::from(compile),
    };
    if !allowed.contains(&traces) {
        return Err(format!(
            "the decode step was traced {traces} times in one generation, not {allowed:?}"
        )
        .into());
    }
    if stamps.len() != max_tokens {
        return Err(format!("{} steps, {max_tokens} asked", stamps.len()).into());
    }
    Ok(Run {
        ttft_s: (stamps[0] - start).as_secs_f64(),
        decode_s: (stamps[max_tokens - 1] - stamps[0]).as_secs_f64(),
        batch: prompts.len(),
        prompt_tokens: prompts[0].len(),
        generation_tokens: max_tokens,
        traces,
        peak_memory,
        stats,
        tokens,
        intervals_ms: stamps
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64() * 1e3)
            .collect(),
    })
}

/// `{p10, p50, p90, max}` of `xs` (as `mlx_lm_bench.py` reports them).
fn percentiles(mut xs: Vec<f64>) -> Value {
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| {
        xs.get(((xs.len() - 1) as f64 * q).round() as usize)
            .copied()
    };
    json!({"p10": at(0.1), "p50": at(0.5), "p90": at(0.9), "max": xs.last()})
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// The primitives in the graph that computes `outputs`, by kind (from MLX's DOT export,
/// where a primitive is a rectangle).
fn primitives(outputs: &[Array]) -> Result<BTreeMap<String, usize>, Box<dyn Error>> {
    let dot = graph::export_to_dot(outputs, None)?;
    let mut kinds = BTreeMap::new();
    for line in dot.lines().filter(|l| l.contains("shape=rectangle")) {
        let label = line
            .split("label =\"")
            .nth(1)
            .and_then(|l| l.split('"').next())
            .unwrap_or("?");
        *kinds.entry(label.to_string()).or_insert(0) += 1;
    }
    Ok(kinds)
}

/// The greedy decode step of `generate_step` (model, log-softmax, argmax) on a batch of one.
fn greedy_step(model: &Model, cache: &mut Cache, token: &Array) -> mlx::core::Result<Array> {
    let logits = model.forward(&ops::expand_dims(token, 0)?, Some(cache))?;
    let logits = logits.index((.., -1, ..))?;
    let logprobs = ops::subtract(&logits, &ops::logsumexp(&logits, None, true)?)?;
    ops::argmax(&logprobs, -1, false)
}

/// A fresh cache holding the prompt but its last token, with room for `steps` more.
fn prefilled(
    model: &Model,
    prompt: &[u32],
    steps: usize,
    in_place: bool,
) -> Result<Cache, Box<dyn Error>> {
    let capacity = (prompt.len() + steps + 1).div_ceil(256) * 256;
    let mut cache = model.make_cache(1, capacity as i32)?;
    let head = &prompt[..prompt.len() - 1];
    if !head.is_empty() {
        let ids = Array::from_slice(head, &[1, head.len() as i32])?;
        model.forward(&ids, Some(&mut cache))?;
        eval(&cache)?;
    }
    // As generation decodes: each step writes into the buffers in place.
    for layer in cache.iter_mut() {
        if let LayerCache::Kv(kv) = layer {
            kv.set_writes_in_place(in_place)?;
        }
    }
    Ok(cache)
}

fn last_token(prompt: &[u32]) -> Result<Array, Box<dyn Error>> {
    Ok(Array::from_slice(&prompt[prompt.len() - 1..], &[1])?)
}

fn us(from: Instant, to: Instant) -> f64 {
    (to - from).as_secs_f64() * 1e6
}

fn breakdown(
    model: &Model,
    prompt: &[u32],
    steps: usize,
    in_place: bool,
) -> Result<Value, Box<dyn Error>> {
    if steps < 2 {
        return Err("--breakdown needs at least 2 steps".into());
    }
    // Eager: build the graph, then evaluate it, one step at a time.
    let mut cache = prefilled(model, prompt, steps, in_place)?;
    let mut token = last_token(prompt)?;
    let (mut build, mut run) = (Vec::new(), Vec::new());
    let mut eager_primitives = BTreeMap::new();
    for i in 0..steps {
        let t0 = Instant::now();
        let next = greedy_step(model, &mut cache, &token)?;
        let t1 = Instant::now();
        if i == 0 {
            eager_primitives = primitives(std::slice::from_ref(&next))?;
        }
        let t2 = Instant::now();
        eval(&(next.clone(), cache.clone()))?;
        let t3 = Instant::now();
        build.push(us(t0, t1));
        run.push(us(t2, t3));
        token = next;
    }
    let eager = json!({"build_us": median(build), "eval_us": median(run)});

    // Compiled, synchronous.
    let step = compile_mut(
        |cache: &mut Cache, token: &Array| greedy_step(model, cache, token),
        None,
    );
    let mut cache = prefilled(model, prompt, steps, in_place)?;
    let mut token = last_token(prompt)?;
    let (mut build, mut run) = (Vec::new(), Vec::new());
    let mut compiled_primitives = BTreeMap::new();
    for i in 0..steps {
        let t0 = Instant::now();
        let next = step.call(&mut cache, &token)?;
        let t1 = Instant::now();
        if i == 1 {
            // The first call traces; the second shows the graph every later call builds.
            compiled_primitives = primitives(std::slice::from_ref(&next))?;
        }
        let t2 = Instant::now();
        eval(&(next.clone(), cache.clone()))?;
        let t3 = Instant::now();
        if i > 0 {
            build.push(us(t0, t1));
            run.push(us(t2, t3));
        }
        token = next;
    }
    let compiled = json!({"build_us": median(build), "eval_us": median(run)});

    // Compiled, pipelined as generate_step runs it.
    let mut cache = prefilled(model, prompt, steps + 1, in_place)?;
    let mut pending = step.call(&mut cache, &last_token(prompt)?)?;
    async_eval(&pending)?;
    let mut stamps = Vec::with_capacity(steps);
    for _ in 0..steps {
        let next = step.call(&mut cache, &pending)?;
        async_eval(&next)?;
        pending.item::<u32>()?;
        stamps.push(Instant::now());
        pending = next;
    }
    mlx::core::synchronize()?;
    let per_token: Vec<f64> = stamps.windows(2).map(|w| us(w[0], w[1])).collect();
    let traces = step.stats().traces;
    if traces != 1 {
        return Err(format!("the breakdown's compiled step traced {traces} times").into());
    }

    // MLX's cost per primitive with trivial kernels.
    let chain = 2000;
    let mut dispatch = Vec::new();
    for _ in 0..5 {
        let mut x = Array::from_slice(&[0.0f32], &[1])?;
        eval(&x)?;
        let t0 = Instant::now();
        for _ in 0..chain {
            x = ops::add(&x, 1.0f32)?;
        }
        let t1 = Instant::now();
        eval(&x)?;
        let t2 = Instant::now();
        dispatch.push((us(t0, t1), us(t1, t2)));
    }
    let total = |m: &BTreeMap<String, usize>| m.values().sum::<usize>();
    Ok(json!({
        "impl": "rust",
        "mlx_version": mlx::core::version()?,
        "device": mlx::core::Device::default_device()?.to_string(),
        "prompt_tokens": prompt.len(),
        "steps": steps,
        "eager": eager,
        "compiled": compiled,
        "pipelined_us_per_token": median(per_token),
        "primitives": {
            "eager": total(&eager_primitives),
            "compiled": total(&compiled_primitives),
            "eager_kinds": eager_primitives,
            "compiled_kinds": compiled_primitives,
        },
        "chain_build_us_per_op": median(dispatch.iter().map(|d| d.0 / chain as f64).collect()),
        "dispatch_us_per_primitive": median(dispatch.iter().map(|d| d.1 / chain as f64).collect()),
        "traces": traces,
    }))
}

fn read_prompts(path: &PathBuf) -> Result<Vec<Vec<u32>>, Box<dyn Error>> {
    let value: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let prompts: Vec<Vec<u32>> = match value {
        Value::Array(items) if items.iter().all(Value::is_array) => items
            .into_iter()
            .map(serde_json::from_value)
            .collect::<Result<_, _>>()?,
        other => vec![serde_json::from_value(other)?],
    };
    if prompts.is_empty()
        || prompts
            .iter()
            .any(|p| p.len() != prompts[0].len() || p.is_empty())
    {
        return Err(format!(
            "{}: prompts must be non-empty and of one length",
            path.display()
        )
        .into());
    }
    Ok(prompts)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = Args::parse();
    if args.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    let prompts = read_prompts(&args.prompt)?;
    let in_place = !args.no_in_place_cache;
    let options = LoadOptions {
        kernels: KernelOptions {
            fused_decode_attention: !args.no_fused_attention,
            fused_gated_delta: !args.no_fused_gated_delta,
            fused_ssm_update: !args.no_fused_ssm_update,
            fused_selective_scan: !args.no_fused_selective_scan,
            padded_quantized_rows: !args.no_padded_quantized_rows,
        },
        ..Default::default()
    };
    let group = distributed::init(false, None)?;
    let t = Instant::now();
    let (model, config) = load_split(&args, options, &group)?;
    let load_s = t.elapsed().as_secs_f64();
    // Every rank generates (the collectives need them all); rank 0 alone reports.
    let report = |out: Value| {
        if group.rank() == 0 {
            println!("{out}");
        }
    };
    let draft_model = match &args.draft_model {
        Some(dir) => Some(load_model(dir, options)?.0),
        None => None,
    };
    let draft = draft_model.as_ref().map(|d| (d, args.num_draft_tokens));
    let weight_bytes: usize = mlx::utils::tree_leaves(&model)
        .iter()
        .map(|a| a.nbytes())
        .sum();
    if let Some(steps) = args.breakdown {
        let mut out = breakdown(&model, &prompts[0], steps, in_place)?;
        out["weight_bytes"] = json!(weight_bytes);
        out["caches"] = json!(model
            .make_cache(1, 1)?
            .iter()
            .map(LayerCache::class_name)
            .collect::<Vec<_>>());
        report(out);
        return Ok(());
    }

    let mut traces = Vec::new();
    for _ in 0..args.warmup {
        let run = run_once(
            &model,
            &prompts,
            args.warmup_tokens.unwrap_or(args.max_tokens),
            in_place,
            !args.no_compile,
            draft,
        )?;
        traces.push(run.traces);
    }
    let mut runs = Vec::with_capacity(args.reps);
    for _ in 0..args.reps {
        runs.push(run_once(
            &model,
            &prompts,
            args.max_tokens,
            in_place,
            !args.no_compile,
            draft,
        )?);
    }
    traces.extend(runs.iter().map(|r| r.traces));
    // A GPU's reductions need not be deterministic, and a random-weight model has near-ties
    // in its logits: greedy runs may part ways. Reported, not fatal: how many tokens each
    // later run shares with the first, for its worst sequence.
    let agreement: Vec<usize> = runs[1..]
        .iter()
        .map(|r| common_prefix(&runs[0].tokens, &r.tokens))
        .collect();
    let group_json = if group.size() > 1 {
        let (kinds, comm_ms) = collectives(&model, &config, &prompts, &group, args.pipeline)?;
        json!({
            "size": group.size(),
            "split": if args.pipeline { "pipeline" } else { "tensor" },
            "collectives_per_step": kinds,
            "comm_ms_per_token": comm_ms,
        })
    } else {
        Value::Null
    };
    let out = json!({
        "impl": "rust",
        "mlx_version": mlx::core::version()?,
        "device": mlx::core::Device::default_device()?.to_string(),
        "load_s": load_s,
        "weight_bytes": weight_bytes,
        "random_weights": args.random_weights,
        "group": group_json,
        "batch": prompts.len(),
        "prompt_tokens": prompts[0].len(),
        "generation_tokens": args.max_tokens,
        "warmup": args.warmup,
        "warmup_tokens": args.warmup_tokens.unwrap_or(args.max_tokens),
        "median_prefill_tps": median(runs.iter().map(Run::prefill_tps).collect()),
        "median_decode_tps": median(runs.iter().map(Run::decode_tps).collect()),
        "median_ttft_s": median(runs.iter().map(|r| r.ttft_s).collect()),
        "traces_per_generation": traces,
        "draft_model": args.draft_model.as_ref().map(|d| d.display().to_string()),
        "num_draft_tokens": draft.map(|(_, k)| k),
        "median_accepted_draft_tokens": draft.map(|_| median(
            runs.iter()
                .map(|r| r.stats["accepted_draft_tokens"].as_f64().unwrap_or(f64::NAN))
                .collect()
        )),
        "median_rounds": draft.map(|_| median(
            runs.iter()
                .map(|r| r.stats["rounds"].as_f64().unwrap_or(f64::NAN))
                .collect()
        )),
        "runs_agree_tokens": agreement,
        "peak_memory": runs.iter().map(|r| r.peak_memory).max(),
        "first_tokens": runs[0].tokens.iter().map(|t| &t[..t.len().min(8)]).collect::<Vec<_>>(),
        "tokens": &runs[0].tokens,
        "runs": runs.iter().map(Run::to_json).collect::<Vec<_>>(),
    });
    report(out);
    Ok(())
}

/// The model of `--model`, read or drawn, and split over `group` when it has more than one
/// process: split before it is evaluated, so that each process holds its share alone.
fn load_split(
    args: &Args,
    mut options: LoadOptions,
    group: &Group,
) -> Result<(Model, ModelConfig), Box<dyn Error>> {
    options.dtype = match args.dtype.as_deref() {
        None => None,
        Some("float32") => Some(Dtype::Float32),
        Some("bfloat16") => Some(Dtype::Bfloat16),
        Some("float16") => Some(Dtype::Float16),
        Some(other) => return Err(format!("--dtype {other}: float32, bfloat16 or float16").into()),
    };
    let split = group.size() > 1;
    if args.pipeline && !split {
        return Err("--pipeline splits over a group: start lm_bench with a launcher".into());
    }
    let Some(seed) = args.random_weights else {
        if !split {
            return Ok(load_model(&args.model, options)?);
        }
        let (pipeline, tensor) = if args.pipeline {
            (Some(group), None)
        } else {
            (None, Some(group))
        };
        let (model, _tokenizer, config) = sharded_load(&args.model, options, pipeline, tensor)?;
        return Ok((model, config));
    };
    let (mut model, config) = random_model(&args.model, options, seed)?;
    if split && args.pipeline {
        model.pipeline(group, None)?;
    } else if split {
        model.shard(group)?;
    }
    eval_shares(&model)?;
    Ok((model, config))
}

/// Collectives of one decode step by kind, and their time alone (milliseconds).
type Collectives = (BTreeMap<String, usize>, Option<f64>);

/// The collectives of one decode step (batch of the prompts, from the prefilled prompt) by
/// MLX primitive, and, tensor parallel, the milliseconds that many dependent `all_sum`s of
/// the step's hidden state take alone (median of 20 after 3 warm-ups).
fn collectives(
    model: &Model,
    config: &ModelConfig,
    prompts: &[Vec<u32>],
    group: &Group,
    pipeline: bool,
) -> Result<Collectives, Box<dyn Error>> {
    let mut cache = prefilled(model, &prompts[0], 2, true)?;
    let next = greedy_step(model, &mut cache, &last_token(&prompts[0])?)?;
    let kinds: BTreeMap<String, usize> = primitives(std::slice::from_ref(&next))?
        .into_iter()
        .filter(|(kind, _)| {
            ["AllReduce", "AllGather", "Send", "Recv", "ReduceScatter"]
                .iter()
                .any(|c| kind.contains(c))
        })
        .collect();
    eval(&(next, cache))?;
    let sums = kinds.get("Sum AllReduce").copied().unwrap_or(0);
    if pipeline || sums == 0 {
        return Ok((kinds, None));
    }
    let hidden = config.dim("hidden_size")?;
    let batch = prompts.len() as i32;
    let x = ops::zeros(&[batch, 1, hidden], model.dtype())?;
    x.eval()?;
    let mut times = Vec::new();
    for i in 0..23 {
        let start = Instant::now();
        let mut y = x.clone();
        for _ in 0..sums {
            y = distributed::all_sum(&y, Some(group))?;
        }
        y.eval()?;
        if i >= 3 {
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok((kinds, Some(median(times))))
}

/// The tokens every sequence of `b` shares with the same sequence of `a` from the start: the
/// smallest common prefix over the batch.
fn common_prefix(a: &[Vec<u32>], b: &[Vec<u32>]) -> usize {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.iter().zip(y).take_while(|(p, q)| p == q).count())
        .min()
        .unwrap_or(0)
}
