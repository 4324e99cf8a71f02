//! How far a bfloat16 model's compiled decode step and mlx_lm's eager one each are from a
//! float32 run of the same weights (bench/lm/bf16_study.sh runs it; docs/language-models.md
//! reports it).
//!
//! Four ways to run one bfloat16 checkpoint: as float32 (its weights cast up, eager: the
//! reference), in bfloat16 eager with the caches attending over their written prefix (the
//! ops of mlx_lm's `generate_step`, bit for bit: `tests/lm_models.rs`), in bfloat16 compiled
//! (our default), and in between, the compiled step's graph run op by op (attention over the
//! whole cache buffer with a mask, nothing fused), which tells the two causes apart. Two
//! measurements per prompt:
//!
//! - teacher-forced: the prompt, then `--steps` given tokens, one decode step each; at every
//!   step the bfloat16 log-probabilities against float32's: whether the best token agrees,
//!   the KL divergence from float32's distribution, the largest log-probability difference
//!   among float32's 10 most likely tokens;
//! - free-running: greedy generation of `--steps` tokens each way; the step at which each
//!   bfloat16 text first departs from float32's.
//!
//! Prompts and teacher-forced tokens are random token ids (seeded): the study is about
//! rounding, and random weights have no text of their own.
//!
//!     lm_bf16_study --model DIR [--prompts N] [--prompt-len P] [--steps S] [--seed S]
//!                   [--json FILE]

use std::error::Error;
use std::time::Instant;

use mlx::core::{ops, random, Array, Dtype};
use mlx::lm::cache::{reserve, set_prefix_attention, write_in_place};
use mlx::lm::{generate_step, load_model, Cache, GenerateOptions, LoadOptions, Model};
use mlx::utils::{compile_mut, eval};
use serde_json::json;

struct Args {
    model: String,
    prompts: usize,
    prompt_len: usize,
    steps: usize,
    seed: u64,
    json: Option<String>,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut args = Args {
        model: String::new(),
        prompts: 16,
        prompt_len: 64,
        steps: 64,
        seed: 0,
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--model" => args.model = value()?,
            "--prompts" => args.prompts = value()?.parse()?,
            "--prompt-len" => args.prompt_len = value()?.parse()?,
            "--steps" => args.steps = value()?.parse()?,
            "--seed" => args.seed = value()?.parse()?,
            "--json" => args.json = Some(value()?),
            _ => return Err(format!("unknown argument {flag}").into()),
        }
    }
    if args.model.is_empty() {
        return Err("--model DIR is required".into());
    }
    if args.prompt_len < 2 || args.steps < 1 || args.prompts < 1 {
        return Err("--prompt-len must be at least 2, --steps and --prompts at least 1".into());
    }
    Ok(args)
}

/// `n` random token ids below `vocab`.
fn random_ids(n: usize, vocab: i32, key: &Array) -> Result<Vec<u32>, Box<dyn Error>> {
    let ids = random::randint(0, vocab, &[n as i32], Dtype::Int32, key)?;
    Ok(ids.to_vec::<i32>()?.into_iter().map(|t| t as u32).collect())
}

/// How a decode step runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Op by op over the written prefix: mlx_lm's ops.
    Eager,
    /// Op by op over the whole buffer with a mask: the compiled step's graph, not fused.
    EagerWholeBuffer,
    /// Compiled, as generation runs it.
    Compiled,
}

/// Log-probabilities of the next token after `prompt`, then after each of `forced` but the
/// last, one decode step each, as generation prepares its cache: compiled (in-place cache
/// writes, whole-buffer attention) or eager (see [`Mode`]).
fn teacher_forced(
    model: &Model,
    prompt: &[u32],
    forced: &[u32],
    mode: Mode,
) -> Result<Vec<Vec<f32>>, Box<dyn Error>> {
    let compiled = mode == Mode::Compiled;
    let capacity = mlx::lm::cache::cache_slots(prompt.len() + forced.len())?;
    let mut cache: Cache = model.make_cache(1, capacity)?;
    reserve(&mut cache, capacity)?;
    set_prefix_attention(&mut cache, mode == Mode::Eager);
    let head = &prompt[..prompt.len() - 1];
    model.forward(
        &Array::from_slice(head, &[1, head.len() as i32])?,
        Some(&mut cache),
    )?;
    eval(&cache)?;
    if compiled {
        write_in_place(&mut cache)?;
    }
    // Generation's step (`generate.rs`'s `decode_step`) up to its log-probabilities.
    let step = |cache: &mut Cache, token: &Array| -> mlx::core::Result<Array> {
        let logits = model.forward(&ops::expand_dims(token, 0)?, Some(cache))?;
        let logits = logits.index((.., -1, ..))?;
        let logprobs = ops::subtract(&logits, &ops::logsumexp(&logits, None, true)?)?;
        ops::squeeze(&logprobs, 0)
    };
    let compiled_step = compile_mut(step, None);
    let inputs =
        std::iter::once(prompt[prompt.len() - 1]).chain(forced[..forced.len() - 1].iter().copied());
    let mut out = Vec::with_capacity(forced.len());
    for token in inputs {
        let token = Array::from_slice(&[token], &[1])?;
        let logprobs = if compiled {
            compiled_step.call(&mut cache, &token)?
        } else {
            step(&mut cache, &token)?
        };
        out.push(logprobs.astype(Dtype::Float32)?.to_vec::<f32>()?);
    }
    if compiled && compiled_step.stats().traces != 1 {
        return Err(format!("the step traced {} times", compiled_step.stats().traces).into());
    }
    Ok(out)
}

/// Greedy tokens from `prompt`.
fn greedy(
    model: &Model,
    prompt: &[u32],
    steps: usize,
    compile: bool,
) -> Result<Vec<u32>, Box<dyn Error>> {
    let options = GenerateOptions {
        max_tokens: steps,
        compile,
        ..Default::default()
    };
    let tokens = generate_step(model, prompt, &options)?
        .map(|s| s.map(|(t, _)| t))
        .collect::<Result<Vec<u32>, _>>()?;
    Ok(tokens)
}

fn argmax(x: &[f32]) -> usize {
    x.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |(bi, bx), (i, &v)| {
            if v > bx {
                (i, v)
            } else {
                (bi, bx)
            }
        })
        .0
}

/// KL(p || q) of two log-probability vectors, in f64.
fn kl(p: &[f32], q: &[f32]) -> f64 {
    p.iter()
        .zip(q)
        .map(|(&a, &b)| {
            let pa = (a as f64).exp();
            if pa == 0.0 {
                0.0
            } else {
                pa * (a as f64 - b as f64)
            }
        })
        .sum::<f64>()
        .max(0.0)
}

/// The largest difference of `q` from `p` among `p`'s `k` most likely tokens.
fn top_k_diff(p: &[f32], q: &[f32], k: usize) -> f64 {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&a, &b| p[b].total_cmp(&p[a]));
    order[..k.min(p.len())]
        .iter()
        .map(|&i| (p[i] as f64 - q[i] as f64).abs())
        .fold(0.0, f64::max)
}

/// Where `a` first differs from `b` (`None`: not within their length).
fn departure(a: &[u32], b: &[u32]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

#[derive(Default)]
struct Side {
    agree: usize,
    kl: Vec<f64>,
    top_diff: Vec<f64>,
    departures: Vec<Option<usize>>,
}

fn percentile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn summary(side: &Side, steps: usize) -> serde_json::Value {
    let departed: Vec<usize> = side.departures.iter().flatten().copied().collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    json!({
        "top1_agreement": side.agree as f64 / steps as f64,
        "kl_mean": mean(&side.kl),
        "kl_p50": percentile(&side.kl, 0.5),
        "kl_p99": percentile(&side.kl, 0.99),
        "kl_max": percentile(&side.kl, 1.0),
        "top10_logprob_diff_mean": mean(&side.top_diff),
        "top10_logprob_diff_max": percentile(&side.top_diff, 1.0),
        // The whole-buffer eager step is no way users generate: no greedy runs.
        "greedy_prompts_departed": (!side.departures.is_empty()).then_some(departed.len()),
        "greedy_departure_steps": (!side.departures.is_empty()).then_some(&side.departures),
    })
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let started = Instant::now();
    let (bf16, _) = load_model(&args.model, LoadOptions::default())?;
    let f32_options = LoadOptions {
        dtype: Some(Dtype::Float32),
        ..Default::default()
    };
    let (f32_model, _) = load_model(&args.model, f32_options)?;
    let vocab = bf16.vocab_size();
    let mut key = random::key(args.seed)?;
    let (mut eager, mut whole, mut compiled) = (Side::default(), Side::default(), Side::default());
    let mut eager_vs_compiled_agree = 0;
    let mut total = 0;
    for p in 0..args.prompts {
        let (k1, rest) = random::split_pair(&key)?;
        let (k2, rest) = random::split_pair(&rest)?;
        key = rest;
        let prompt = random_ids(args.prompt_len, vocab, &k1)?;
        let forced = random_ids(args.steps, vocab, &k2)?;
        let reference = teacher_forced(&f32_model, &prompt, &forced, Mode::Eager)?;
        let mlx_lm = teacher_forced(&bf16, &prompt, &forced, Mode::Eager)?;
        let unfused = teacher_forced(&bf16, &prompt, &forced, Mode::EagerWholeBuffer)?;
        let ours = teacher_forced(&bf16, &prompt, &forced, Mode::Compiled)?;
        for (((r, e), w), c) in reference.iter().zip(&mlx_lm).zip(&unfused).zip(&ours) {
            let best = argmax(r);
            for (side, x) in [(&mut eager, e), (&mut whole, w), (&mut compiled, c)] {
                side.agree += (argmax(x) == best) as usize;
                side.kl.push(kl(r, x));
                side.top_diff.push(top_k_diff(r, x, 10));
            }
            eager_vs_compiled_agree += (argmax(e) == argmax(c)) as usize;
            total += 1;
        }
        let text32 = greedy(&f32_model, &prompt, args.steps, false)?;
        eager.departures.push(departure(
            &greedy(&bf16, &prompt, args.steps, false)?,
            &text32,
        ));
        compiled.departures.push(departure(
            &greedy(&bf16, &prompt, args.steps, true)?,
            &text32,
        ));
        eprintln!(
            "prompt {}/{}: greedy departs from float32 at eager {:?}, compiled {:?} ({:.0} s)",
            p + 1,
            args.prompts,
            eager.departures[p],
            compiled.departures[p],
            started.elapsed().as_secs_f64()
        );
    }
    let result = json!({
        "model": args.model,
        "device": mlx::core::Device::default_device()?.to_string(),
        "prompts": args.prompts,
        "prompt_len": args.prompt_len,
        "steps": args.steps,
        "seed": args.seed,
        "teacher_forced_steps": total,
        "bf16_eager_as_mlx_lm": summary(&eager, total),
        "bf16_eager_whole_buffer": summary(&whole, total),
        "bf16_compiled": summary(&compiled, total),
        "eager_compiled_top1_agreement": eager_vs_compiled_agree as f64 / total as f64,
    });
    println!("{}", serde_json::to_string_pretty(&result)?);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&result)? + "\n")?;
    }
    Ok(())
}
