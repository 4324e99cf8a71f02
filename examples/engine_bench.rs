//! Where a one-request decode step of the serving [`Engine`] goes, against `generate_step` on
//! the same model and prompt (greedy, batch of one):
//!
//! ```text
//! cargo run --release --example engine_bench -- --model DIR [--prompt-tokens 24]
//!     [--max-tokens 64] [--slots 32] [--capacity 512] [--reps 3]
//! ```
//!
//! Each line is the median per token (or step) over the run's decode, the best of `--reps`
//! runs (the machine is shared: the best run is the least disturbed one):
//!
//! - `generate_step`: the library's generation (compiled, the next step queued with
//!   `async_eval` before the current token is read);
//! - `forward_sync`: the same compiled step (model, log-softmax, argmax) over a cache of
//!   the request's own size, evaluated and read back each step before the next is built;
//! - `forward_pipelined`: that step queued one ahead, as `generate_step` runs it;
//! - `rows_sync` / `rows_pipelined`: the step over a cache laid out as the engine's slot
//!   (capacity `--capacity`, an offset per row, the attention reading a view of 256
//!   positions);
//! - `engine_lean` / `engine_full`: [`Engine::step`] with the request alone in it, greedy,
//!   wall time per call; `full` gives the request a logit bias of 0 on token 0, which changes
//!   no logit but makes the step compute the bias, the penalties and the sampler as a
//!   sampling row's does; the engine's own split of a step ([`StepTimes`]) beside it.

use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use mlx::core::{ops, Array};
use mlx::lm::{
    generate_step, load_model, Cache, Engine, EngineOptions, GenerateOptions, LayerCache,
    LoadOptions, Model, RequestOptions, StepTimes,
};
use mlx::utils::{async_eval, compile_mut, eval};
use serde_json::{json, Value};

#[derive(Parser)]
struct Args {
    #[arg(long)]
    model: PathBuf,
    /// Prompt tokens (deterministic ids below the vocabulary size).
    #[arg(long, default_value_t = 24)]
    prompt_tokens: usize,
    #[arg(long, default_value_t = 64)]
    max_tokens: usize,
    /// The engine's slots (`max_batch`; one request decodes one row of them).
    #[arg(long, default_value_t = 32)]
    slots: usize,
    /// Positions per slot (the server's `--context-length`).
    #[arg(long, default_value_t = 512)]
    capacity: usize,
    #[arg(long, default_value_t = 3)]
    reps: usize,
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = Args::parse();
    let (model, _) = load_model(&args.model, LoadOptions::default())?;
    let vocab = model.vocab_size() as u32;
    let prompt: Vec<u32> = (0..args.prompt_tokens as u32)
        .map(|i| (i * 37 + 11) % vocab)
        .collect();
    let n = args.max_tokens;
    let own = (prompt.len() + n + 1).div_ceil(256) * 256;
    let names = [
        "generate_step",
        "forward_sync",
        "forward_pipelined",
        "rows_sync",
        "rows_pipelined",
        "engine_lean",
        "engine_full",
    ];
    // Round-robin over the variants, so a change of the machine's load touches them all.
    let mut runs: Vec<Vec<Value>> = names.iter().map(|_| Vec::new()).collect();
    for _ in 0..args.reps.max(1) {
        for (i, name) in names.iter().enumerate() {
            let run = match *name {
                "generate_step" => {
                    let options = GenerateOptions {
                        max_tokens: n,
                        ..Default::default()
                    };
                    let mut stamps = Vec::with_capacity(n);
                    let mut cpu = Vec::with_capacity(n);
                    for s in generate_step(&model, &prompt, &options)? {
                        s?;
                        stamps.push(Instant::now());
                        cpu.push(cpu_ms());
                    }
                    json!({"ms": median_gap(&stamps), "cpu_ms": cpu_per_token(&cpu)})
                }
                "forward_sync" => forward_loop(&model, &prompt, n, own, false, false)?,
                "forward_pipelined" => forward_loop(&model, &prompt, n, own, false, true)?,
                "rows_sync" => forward_loop(&model, &prompt, n, args.capacity, true, false)?,
                "rows_pipelined" => forward_loop(&model, &prompt, n, args.capacity, true, true)?,
                "engine_lean" => engine_loop(&model, &prompt, &args, vec![])?,
                _ => engine_loop(&model, &prompt, &args, vec![(0, 0.0)])?,
            };
            runs[i].push(run);
        }
    }
    let mut report = serde_json::Map::new();
    for (name, runs) in names.iter().zip(runs) {
        let ms: Vec<f64> = runs.iter().filter_map(|r| r["ms"].as_f64()).collect();
        let best = runs
            .iter()
            .min_by(|a, b| {
                let ms = |v: &Value| v["ms"].as_f64().unwrap_or(f64::INFINITY);
                ms(a).total_cmp(&ms(b))
            })
            .cloned()
            .unwrap_or(Value::Null);
        let cpu: Vec<f64> = runs.iter().filter_map(|r| r["cpu_ms"].as_f64()).collect();
        let line = json!({"best": best, "median_ms": median(ms), "median_cpu_ms": median(cpu)});
        eprintln!("{name}: {line}");
        report.insert(name.to_string(), line);
    }
    println!("{}", serde_json::to_string_pretty(&Value::Object(report))?);
    Ok(())
}

/// One greedy request through an engine of `--slots` slots (warmed up by a request before),
/// with `bias` as its logit bias; ms per step call that gave a token (median) and the
/// engine's split of a step.
fn engine_loop(
    model: &Model,
    prompt: &[u32],
    args: &Args,
    bias: Vec<(u32, f64)>,
) -> Result<Value, Box<dyn Error>> {
    let options = EngineOptions {
        max_batch: args.slots,
        capacity: args.capacity,
        ..Default::default()
    };
    let mut engine = Engine::new(model, options)?;
    let warm = RequestOptions {
        max_tokens: 2,
        logit_bias: bias.clone(),
        ..Default::default()
    };
    engine.insert(&[0], warm)?;
    while !engine.is_idle() {
        engine.step()?;
    }
    let request = RequestOptions {
        max_tokens: args.max_tokens,
        logit_bias: bias,
        ..Default::default()
    };
    engine.insert(prompt, request)?;
    let mut stamps = Vec::with_capacity(args.max_tokens);
    let mut times: Vec<StepTimes> = Vec::with_capacity(args.max_tokens);
    let mut cpu = Vec::with_capacity(args.max_tokens);
    while !engine.is_idle() {
        let events = engine.step()?;
        if !events.is_empty() {
            stamps.push(Instant::now());
            cpu.push(cpu_ms());
            times.push(engine.last_step_times());
        }
    }
    let part = |f: &dyn Fn(&StepTimes) -> Option<std::time::Duration>| {
        median(
            times[1..]
                .iter()
                .filter_map(f)
                .map(|d| d.as_secs_f64() * 1e3)
                .collect(),
        )
    };
    Ok(json!({
        "ms": median_gap(&stamps),
        "cpu_ms": cpu_per_token(&cpu),
        "decode_ms": part(&|t| t.decode),
        "inputs_ms": part(&|t| t.decode_inputs),
        "call_ms": part(&|t| t.decode_call),
        "wait_ms": part(&|t| t.decode_wait),
        "traces": engine.traces(),
    }))
}

/// The greedy decode step of `generate_step` (model, log-softmax, argmax) on a batch of one.
fn greedy_step(model: &Model, cache: &mut Cache, token: &Array) -> mlx::core::Result<Array> {
    let logits = model.forward(&ops::expand_dims(token, 0)?, Some(cache))?;
    let logits = logits.index((.., -1, ..))?;
    let logprobs = ops::subtract(&logits, &ops::logsumexp(&logits, None, true)?)?;
    ops::argmax(&logprobs, -1, false)
}

/// `n` greedy steps after the prompt's prefill; ms per step (median).
fn forward_loop(
    model: &Model,
    prompt: &[u32],
    n: usize,
    capacity: usize,
    rows: bool,
    pipelined: bool,
) -> Result<Value, Box<dyn Error>> {
    let head = &prompt[..prompt.len() - 1];
    let mut cache = model.make_cache(1, capacity as i32)?;
    model.forward(
        &Array::from_slice(head, &[1, head.len() as i32])?,
        Some(&mut cache),
    )?;
    if rows {
        // The engine's slot: an offset per row, attention over a view of 256 positions.
        for layer in cache.iter_mut() {
            if let LayerCache::Kv(kv) = layer {
                kv.offset = Array::from_slice(&[head.len() as i32], &[1])?;
                kv.set_view(Some(256));
            }
        }
    }
    eval(&cache)?;
    let step = compile_mut(
        |cache: &mut Cache, token: &Array| greedy_step(model, cache, token),
        None,
    );
    let mut token = Array::from_slice(&prompt[prompt.len() - 1..], &[1])?;
    let mut stamps = Vec::with_capacity(n);
    let mut cpu = Vec::with_capacity(n);
    if pipelined {
        let mut pending = step.call(&mut cache, &token)?;
        async_eval(&pending)?;
        for _ in 0..n {
            let next = step.call(&mut cache, &pending)?;
            async_eval(&next)?;
            pending.item::<u32>()?;
            stamps.push(Instant::now());
            cpu.push(cpu_ms());
            pending = next;
        }
        mlx::core::synchronize()?;
    } else {
        for _ in 0..n {
            let next = step.call(&mut cache, &token)?;
            eval(&(next.clone(), cache.clone()))?;
            let t = next.item::<u32>()?;
            stamps.push(Instant::now());
            cpu.push(cpu_ms());
            token = Array::from_slice(&[t], &[1])?;
        }
    }
    Ok(json!({
        "ms": median_gap(&stamps),
        "cpu_ms": cpu_per_token(&cpu),
        "traces": step.stats().traces,
    }))
}

/// The CPU time this process has used, all threads, in ms (`/proc/self/stat`'s utime and
/// stime, in clock ticks of 10 ms): the work a step does, which a shared machine's load
/// does not stretch as it stretches wall time.
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces), from the third on.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) * 10.0
}

/// CPU ms per token between the first and the last token.
fn cpu_per_token(cpu: &[f64]) -> f64 {
    match (cpu.first(), cpu.last()) {
        (Some(a), Some(b)) if cpu.len() > 1 => (b - a) / (cpu.len() - 1) as f64,
        _ => f64::NAN,
    }
}

fn median_gap(stamps: &[Instant]) -> f64 {
    median(
        stamps
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64() * 1e3)
            .collect(),
    )
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}
