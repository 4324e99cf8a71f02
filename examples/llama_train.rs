//! The flagship: a small Llama-style language model, defined with `mlx::nn`, trained from
//! scratch on text this program generates, then sampled through a compiled decode step with a
//! KV cache. No downloads.
//!
//! ```sh
//! cargo run --release --example llama_train
//! # data-parallel over 4 processes on this machine (MLX's ring backend):
//! cargo run --release --example launch -- -n 4 -- target/release/examples/llama_train
//! ```
//!
//! What it shows:
//! - a model is a plain `#[derive(TreeNode)]` struct; its parameter paths are Python's
//!   (`layers.0.attention.wq.weight`), so Python-written weights would load by name;
//! - the whole training step (forward, `value_and_grad`, gradient clipping, AdamW with a
//!   warmup + cosine schedule) is ONE compiled function, with the model and the optimizer
//!   passed as `&mut` state: one trace, then cache hits;
//! - the KV cache is a type registered at runtime (`mlx::utils::register`, the way in for
//!   types you do not own), passed as `&mut` state to a compiled decode step that never
//!   retraces while it fills;
//! - started by a launcher as N processes, it trains data-parallel: every process builds the
//!   same batch and takes its own N-th of the rows, and `nn::average_gradients` inside the
//!   compiled step gives each the whole batch's gradient, so the loss curve is the
//!   single-process one (`tests/data_parallel.rs` checks that).
//!
//! `LLAMA_TRAIN_STEPS` sets the number of training steps; `LLAMA_TRAIN_PRINT_LOSSES=1`
//! prints each step's loss (the whole batch's mean, on rank 0).

use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use mlx::core::distributed::{self, Group};
use mlx::core::fast::{self, AttentionMask};
use mlx::core::{ops, random, Array, Dtype, Error, Result};
use mlx::nn::losses::{CrossEntropyOptions, Reduction};
use mlx::nn::{self, AverageGradientsOptions, Embedding, Forward, Linear, Module, RMSNorm, RoPE};
use mlx::optimizers::{self as optim, AdamW, Optimizer};
use mlx::utils::{compile_mut, register, Registered, TreeNode};

// ---------------------------------------------------------------------------------------------
// Configuration

const DIM: i32 = 128;
const N_LAYERS: usize = 2;
const N_HEADS: i32 = 4;
const N_KV_HEADS: i32 = 2; // grouped-query attention: 2 query heads share each key/value head
const HIDDEN: i32 = 256;
const SEQ_LEN: i32 = 128;
const BATCH: i32 = 8;
/// Training steps; `LLAMA_TRAIN_STEPS` overrides it.
const STEPS: u64 = 120;
/// Decoding stays within the positions seen in training (RoPE does not extrapolate far).
const MAX_CACHE: i32 = SEQ_LEN;
const GENERATE: usize = 110;

// ---------------------------------------------------------------------------------------------
// The model (derive: its parameter paths are Python mlx-examples' llama names)

#[derive(Clone, TreeNode)]
struct Attention {
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    rope: RoPE,
    #[tree(static)]
    n_heads: i32,
    #[tree(static)]
    n_kv_heads: i32,
}

#[derive(Clone, TreeNode)]
struct FeedForward {
    w1: Linear,
    w2: Linear,
    w3: Linear,
}

#[derive(Clone, TreeNode)]
struct Block {
    attention: Attention,
    feed_forward: FeedForward,
    attention_norm: RMSNorm,
    ffn_norm: RMSNorm,
}

#[derive(Clone, TreeNode)]
struct Llama {
    tok_embeddings: Embedding,
    layers: Vec<Block>,
    norm: RMSNorm,
    output: Linear,
}

/// Where the keys and values of one layer come from: the current tokens (training), or the
/// cache slot of layer `i` (decoding one token at position `offset`).
enum Kv<'a> {
    Causal,
    Cache(&'a mut KvCache, usize),
}

impl Attention {
    fn new() -> Result<Attention> {
        let hd = DIM / N_HEADS;
        Ok(Attention {
            wq: Linear::new(DIM, N_HEADS * hd, false)?,
            wk: Linear::new(DIM, N_KV_HEADS * hd, false)?,
            wv: Linear::new(DIM, N_KV_HEADS * hd, false)?,
            wo: Linear::new(N_HEADS * hd, DIM, false)?,
            rope: RoPE::new(hd).traditional(true),
            n_heads: N_HEADS,
            n_kv_heads: N_KV_HEADS,
        })
    }

    fn forward(&self, x: &Array, kv: Kv<'_>) -> Result<Array> {
        let (b, l) = (x.shape()[0], x.shape()[1]);
        let split = |p: &Linear, h: i32| -> Result<Array> {
            p.forward(x)?
                .reshape(&[b, l, h, -1])?
                .transpose([0, 2, 1, 3])
        };
        let (q, k, v) = (
            split(&self.wq, self.n_heads)?,
            split(&self.wk, self.n_kv_heads)?,
            split(&self.wv, self.n_kv_heads)?,
        );
        let scale = 1.0 / (q.shape()[3] as f32).sqrt();
        let out = match kv {
            Kv::Causal => {
                let (q, k) = (self.rope.forward(&q, 0)?, self.rope.forward(&k, 0)?);
                fast::scaled_dot_product_attention(&q, &k, &v, scale, AttentionMask::Causal, None)?
            }
            Kv::Cache(cache, i) => {
                let offset = cache.offset.clone();
                let (q, k) = (
                    self.rope.forward(&q, &offset)?,
                    self.rope.forward(&k, &offset)?,
                );
                // Write this position of the fixed-size cache (shapes never change, so the
                // compiled step never retraces), then attend to positions <= offset.
                let slots = ops::arange_to(MAX_CACHE)?;
                let here = ops::equal(&slots, &offset)?.reshape(&[1, 1, MAX_CACHE, 1])?;
                cache.keys[i] = ops::where_(&here, &k, &cache.keys[i])?;
                cache.values[i] = ops::where_(&here, &v, &cache.values[i])?;
                let visible = ops::less_equal(&slots, &offset)?.reshape(&[1, 1, 1, MAX_CACHE])?;
                fast::scaled_dot_product_attention(
                    &q,
                    &cache.keys[i],
                    &cache.values[i],
                    scale,
                    &visible,
                    None,
                )?
            }
        };
        self.wo
            .forward(&out.transpose([0, 2, 1, 3])?.reshape(&[b, l, -1])?)
    }
}

impl Llama {
    fn new(vocab: i32) -> Result<Llama> {
        let block = || -> Result<Block> {
            Ok(Block {
                attention: Attention::new()?,
                feed_forward: FeedForward {
                    w1: Linear::new(DIM, HIDDEN, false)?,
                    w2: Linear::new(HIDDEN, DIM, false)?,
                    w3: Linear::new(DIM, HIDDEN, false)?,
                },
                attention_norm: RMSNorm::new(DIM, None)?,
                ffn_norm: RMSNorm::new(DIM, None)?,
            })
        };
        Ok(Llama {
            tok_embeddings: Embedding::new(vocab, DIM)?,
            layers: (0..N_LAYERS).map(|_| block()).collect::<Result<_>>()?,
            norm: RMSNorm::new(DIM, None)?,
            output: Linear::new(DIM, vocab, false)?,
        })
    }

    /// Logits `[B, L, vocab]`; with a cache, `tokens` is one position per sequence.
    fn forward(&self, tokens: &Array, mut cache: Option<&mut KvCache>) -> Result<Array> {
        let mut h = self.tok_embeddings.forward(tokens)?;
        for (i, layer) in self.layers.iter().enumerate() {
            let kv = match cache.as_deref_mut() {
                Some(c) => Kv::Cache(c, i),
                None => Kv::Causal,
            };
            h = &h
                + &layer
                    .attention
                    .forward(&layer.attention_norm.forward(&h)?, kv)?;
            let ff = &layer.feed_forward;
            let x = layer.ffn_norm.forward(&h)?;
            let gated = nn::silu(&ff.w1.forward(&x)?)? * ff.w3.forward(&x)?;
            h = &h + &ff.w2.forward(&gated)?;
        }
        self.output.forward(&self.norm.forward(&h)?)
    }
}

/// The mean of each rank's loss and gradients over the group (the identity alone).
fn average(group: &Group, loss: Array, grads: Llama) -> Result<(Array, Llama)> {
    if group.size() == 1 {
        return Ok((loss, grads));
    }
    let options = AverageGradientsOptions::default().group(group);
    let loss = ops::divide(&distributed::all_sum(&loss, Some(group))?, group.size())?;
    Ok((loss, nn::average_gradients(&grads, options)?))
}

fn loss_fn(model: &Llama, (x, y): &(Array, Array)) -> Result<Array> {
    let logits = model.forward(x, None)?;
    let mean = CrossEntropyOptions::default().reduction(Reduction::Mean);
    nn::losses::cross_entropy(&logits, y, mean)
}

// ---------------------------------------------------------------------------------------------
// The KV cache: a type we treat as foreign, made a tree node through the runtime registry

/// Per-layer keys and values of a fixed capacity, and the next position to write.
#[derive(Clone)]
struct KvCache {
    keys: Vec<Array>,
    values: Vec<Array>,
    offset: Array,
}

fn register_kv_cache() -> Result<()> {
    register::<KvCache>(
        "llama_train.KvCache",
        |c, f| {
            f.field_list("keys", &c.keys);
            f.field_list("values", &c.values);
            f.field("offset", &c.offset);
        },
        |u| {
            Ok(KvCache {
                keys: u.field("keys")?,
                values: u.field("values")?,
                offset: u.field("offset")?,
            })
        },
    )
}

fn empty_cache() -> Result<Registered<KvCache>> {
    let shape = [1, N_KV_HEADS, MAX_CACHE, DIM / N_HEADS];
    let zeros = || ops::zeros(&shape, None);
    Registered::new(KvCache {
        keys: (0..N_LAYERS).map(|_| zeros()).collect::<Result<_>>()?,
        values: (0..N_LAYERS).map(|_| zeros()).collect::<Result<_>>()?,
        offset: Array::from(0i32),
    })
}

// ---------------------------------------------------------------------------------------------
// Data: sentences from a small grammar, generated deterministically (character level)

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

fn corpus() -> String {
    let subjects = [
        "the cat",
        "the dog",
        "a little bird",
        "the old man",
        "my sister",
        "the robot",
        "a small fox",
        "the teacher",
    ];
    let verbs = [
        "sees", "likes", "chases", "finds", "follows", "paints", "helps", "carries",
    ];
    let objects = [
        "the ball",
        "a red apple",
        "the moon",
        "the river",
        "a blue box",
        "the garden",
        "an old book",
        "the green door",
    ];
    let endings = [".", " today.", " at night.", " again.", " in the rain."];
    let mut rng = Lcg(7);
    let mut text = String::new();
    for _ in 0..3000 {
        let s = format!(
            "{} {} {}{}\n",
            rng.pick(&subjects),
            rng.pick(&verbs),
            rng.pick(&objects),
            rng.pick(&endings)
        );
        text.push_str(&s);
    }
    text
}

fn main() -> Result<()> {
    let total = Instant::now();
    let steps: u64 = std::env::var("LLAMA_TRAIN_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(STEPS);
    // Alone, a group of one; under a launcher, this process's rank among N.
    let group = distributed::init(false, None)?;
    let (rank, ranks) = (group.rank(), group.size());
    if BATCH % ranks != 0 {
        return Err(Error::InvalidArgument(format!(
            "the batch of {BATCH} rows does not split over {ranks} processes"
        )));
    }
    let print_losses = std::env::var("LLAMA_TRAIN_PRINT_LOSSES").is_ok_and(|v| v == "1");
    // Every rank initializes the same model from the same seed.
    random::seed(0)?;
    let text = corpus();
    let mut chars: Vec<char> = text.chars().collect();
    chars.sort_unstable();
    chars.dedup();
    let vocab = chars.len() as i32;
    let encode = |c: char| chars.binary_search(&c).map(|i| i as i32).unwrap_or(0);
    let data: Vec<i32> = text.chars().map(encode).collect();

    let model = Llama::new(vocab)?;
    if ranks > 1 {
        println!(
            "data-parallel: rank {rank} of {ranks}, rows {}..{} of each batch of {BATCH}",
            rank * BATCH / ranks,
            (rank + 1) * BATCH / ranks
        );
    }
    println!(
        "Llama-style LM: {N_LAYERS} layers, dim {DIM}, {N_HEADS} heads / {N_KV_HEADS} kv heads, \
         {} parameters, vocab {vocab} chars, corpus {} chars",
        model.num_parameters()?,
        data.len()
    );
    let names = model.named_parameters()?;
    println!(
        "parameter paths (as Python's tree_flatten): {}, {}, ... {}",
        names[0].0,
        names[1].0,
        names[names.len() - 1].0
    );

    // ---- training: one compiled step, model + optimizer passed mutably ----
    let schedule = optim::join_schedules(
        vec![
            optim::linear_schedule(1e-4, 3e-3, 10)?,
            optim::cosine_decay(3e-3, steps.saturating_sub(10).max(1), 3e-4)?,
        ],
        vec![10],
    )?;
    let mut opt = AdamW::new(schedule).betas(0.9, 0.95).weight_decay(0.01);
    opt.init(&model)?;
    // Each rank's loss is its rows' mean; averaged over the ranks, the gradients and the loss
    // are the whole batch's (the shards are equal), and clipping sees the whole batch's norm.
    let train_step = compile_mut(
        |(model, opt): &mut (Llama, AdamW), batch: &(Array, Array)| {
            let (loss, grads) = nn::value_and_grad(loss_fn)(model, batch)?;
            let (loss, grads) = average(&group, loss, grads)?;
            let (grads, _) = optim::clip_grad_norm(&grads, 1.0)?;
            opt.update(model, &grads)?;
            Ok(loss)
        },
        None,
    );

    let mut rng = Lcg(42);
    let mut batch = || -> Result<(Array, Array)> {
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for _ in 0..BATCH {
            let start = (rng.next() % (data.len() - SEQ_LEN as usize - 1) as u64) as usize;
            xs.extend_from_slice(&data[start..start + SEQ_LEN as usize]);
            ys.extend_from_slice(&data[start + 1..start + 1 + SEQ_LEN as usize]);
        }
        // Every rank draws the whole batch (the generator stays in step everywhere) and
        // keeps its own rows.
        let rows = (rank * BATCH / ranks)..((rank + 1) * BATCH / ranks);
        Ok((
            Array::from_slice(&xs, &[BATCH, SEQ_LEN])?.index(rows.clone())?,
            Array::from_slice(&ys, &[BATCH, SEQ_LEN])?.index(rows)?,
        ))
    };

    let bar = if rank == 0 && !print_losses {
        ProgressBar::new(steps)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("train {bar:30} {pos}/{len} [{elapsed}] {msg}")
            .expect("valid template"),
    );
    let mut state = (model, opt);
    let tokens_per_step = (BATCH * SEQ_LEN) as u64;
    // The first step traces and compiles the step, and MLX builds each fused kernel on first
    // use (once per machine: it caches them on disk). The second step builds them again: the
    // optimizer's fresh zero state is a broadcast scalar, its updated state a dense array,
    // and MLX builds a fused kernel per input layout (on a fresh GPU: 34 s, then 60 s of
    // NVRTC, against 4 ms per step after). Those two steps are timed apart, so the tokens/s
    // below is the steady state a longer run would see.
    const WARMUP_STEPS: u64 = 2;
    let warmup_steps = WARMUP_STEPS.min(steps);
    let train_start = Instant::now();
    let mut warmup_secs = 0.0;
    let mut steady_start = train_start;
    let (mut first_loss, mut last_loss) = (f32::NAN, f32::NAN);
    let mut recent = Vec::new();
    for step in 0..steps {
        let (x, y) = batch()?;
        let loss = train_step.call(&mut state, &(x, y))?.item::<f32>()?;
        if print_losses && rank == 0 {
            println!("step {step} loss {loss:.9}");
        }
        if step == 0 {
            first_loss = loss;
        }
        if step + 1 == warmup_steps {
            warmup_secs = train_start.elapsed().as_secs_f64();
            steady_start = Instant::now();
        }
        recent.push(loss);
        if recent.len() > 10 {
            recent.remove(0);
        }
        last_loss = recent.iter().sum::<f32>() / recent.len() as f32;
        if step >= warmup_steps {
            let tps = ((step + 1 - warmup_steps) * tokens_per_step) as f64
                / steady_start.elapsed().as_secs_f64();
            bar.set_message(format!("loss {last_loss:.3}  {tps:.0} tok/s"));
        }
        bar.inc(1);
    }
    bar.finish();
    // The last step's update is still lazy, and under a launcher it waits on the other
    // ranks' gradients: every rank computes it before any rank may leave.
    mlx::core::eval(&state)?;
    let steady_secs = steady_start.elapsed().as_secs_f64();
    let (model, opt) = state;
    println!(
        "loss: start {first_loss:.3} -> end {last_loss:.3} (mean of last 10 steps); lr now {:.2e}",
        opt.learning_rate().item::<f32>()?
    );
    println!(
        "training: warm-up (first {warmup_steps} steps: trace, compile, first-use kernel builds) \
         {warmup_secs:.2} s; steady state {:.0} tokens/s over the other {} steps",
        ((steps - warmup_steps) * tokens_per_step) as f64 / steady_secs.max(f64::EPSILON),
        steps - warmup_steps
    );
    let stats = train_step.stats();
    println!(
        "train step compile stats: {} trace(s), {} calls, {} cache hits",
        stats.traces, stats.calls, stats.cache_hits
    );
    if ranks > 1 {
        println!("({ranks} processes: tokens/s above is the whole group's)");
    }
    if rank != 0 {
        return Ok(());
    }

    // ---- generation: a compiled decode step with a registered KV cache as &mut state ----
    register_kv_cache()?;
    let decode = compile_mut(
        |s: &mut (Llama, Registered<KvCache>), (token, key): &(Array, Array)| {
            let (model, cache) = (&s.0, &mut *s.1);
            let logits = model.forward(token, Some(cache))?;
            cache.offset = &cache.offset + 1;
            let next = random::categorical(&(logits * (1.0 / 0.7)), -1, key)?;
            next.astype(Dtype::Int32)
        },
        None,
    );
    let mut dstate = (model, empty_cache()?);
    let prompt = "the robot ";
    let mut key = random::key(1)?;
    let mut out = String::from(prompt);
    let mut next = Array::from(0i32);
    let gen_start = Instant::now();
    let prompt_ids: Vec<i32> = prompt.chars().map(encode).collect();
    for (i, id) in prompt_ids.iter().enumerate() {
        let (k, sub) = random::split_pair(&key)?;
        key = k;
        let tok = Array::from_slice(&[*id], &[1, 1])?;
        let o = decode.call(&mut dstate, &(tok, sub))?;
        if i + 1 == prompt_ids.len() {
            next = o;
        }
    }
    // The prompt's steps include the decode step's trace, compile and first kernel builds;
    // evaluating here keeps that warm-up out of the generation rate.
    mlx::core::eval((&next, &dstate))?;
    let prompt_secs = gen_start.elapsed().as_secs_f64();
    let decode_start = Instant::now();
    for _ in 0..GENERATE {
        let id = next.reshape(&[-1])?.item::<i32>()?;
        out.push(chars[id as usize]);
        let (k, sub) = random::split_pair(&key)?;
        key = k;
        next = decode.call(&mut dstate, &(next.reshape(&[1, 1])?, sub))?;
    }
    let decode_secs = decode_start.elapsed().as_secs_f64();
    println!("\n--- generated (prompt \"{prompt}\") ---\n{out}\n---");
    println!(
        "generation: warm-up ({} prompt tokens, with the first call's trace and compile) \
         {prompt_secs:.2} s; steady state {GENERATE} tokens at {:.0} tokens/s; cache position {}",
        prompt_ids.len(),
        GENERATE as f64 / decode_secs,
        dstate.1.offset.item::<i32>()?
    );
    let stats = decode.stats();
    println!(
        "decode step compile stats: {} trace(s), {} calls, {} cache hits",
        stats.traces, stats.calls, stats.cache_hits
    );
    println!("total {:.1} s", total.elapsed().as_secs_f64());
    Ok(())
}
