//! The workloads of the side-by-side benchmark against Python MLX (issue 7), shared by the
//! criterion benches (`benches/workloads.rs`) and the comparison worker
//! (`examples/bench_workloads.rs`, driven by `scripts/bench-compare`).
//!
//! `scripts/bench/workloads.py` does the identical work with Python's `mlx.core` (same ops,
//! same shapes, same order); keep the two files in step. Each workload is set up once and then
//! [`Workload::run`] performs one iteration; `inner` iterations make one timed sample on both
//! sides, so fast workloads are timed in batches.
//!
//! The Rust side uses the crate's own tree-aware transforms: `mlx_tree::compile` (W3) and
//! `mlx_tree::compile_mut` with the state passed as `&mut` (W5, W6); W5 is a training step
//! through the library (`mlx_nn` layers, loss and `value_and_grad`, `mlx_optimizers::Adam`),
//! as the Python side uses `mlx.nn` and `mlx.optimizers`.

#![allow(dead_code)] // each including target uses a different subset

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use mlx_nn::losses::{self, CrossEntropyOptions, Reduction};
use mlx_nn::{self as nn, Forward};
use mlx_optimizers::{Adam, Optimizer};
use mlx_rs::random::{self, NormalOptions, UniformOptions};
use mlx_rs::{fast, ops, Array, Result};
use mlx_tree::{eval, tree_flatten, tree_leaves, tree_unflatten, TreeNode};

/// Errors from either crate.
pub type BoxResult<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// One set-up workload.
pub trait Workload {
    /// One iteration (for the decode workload: one whole generation).
    fn run(&mut self) -> BoxResult<()>;

    /// Called after warm-up: fails if a compiled workload is not really compiled (traced more
    /// than once), so a silently uncompiled path cannot produce a flattering number.
    fn check(&self) -> BoxResult<()> {
        Ok(())
    }
}

fn traced_once(what: &str, stats: mlx_tree::CompileStats) -> BoxResult<()> {
    if stats.calls == 0 {
        return Ok(());
    }
    traces_are_one(&format!("{what} ({} calls)", stats.calls), stats.traces)
}

/// A compiled workload traced once, unless compilation is switched off (`MLX_DISABLE_COMPILE`).
fn traces_are_one(what: &str, traces: u64) -> BoxResult<()> {
    if std::env::var_os("MLX_DISABLE_COMPILE").is_none() && traces != 1 {
        return Err(format!("{what}: traced {traces} times").into());
    }
    Ok(())
}

/// A workload's name, batch size and constructor.
pub struct Spec {
    /// Shared with the Python side (`scripts/bench/workloads.py`).
    pub name: &'static str,
    /// Iterations per timed sample.
    pub inner: usize,
    /// What one iteration does (for the results table).
    pub what: &'static str,
    pub make: fn() -> BoxResult<Box<dyn Workload>>,
}

/// Every workload, in table order.
pub const WORKLOADS: &[Spec] = &[
    Spec {
        name: "w1_scalar_adds",
        inner: 1,
        what: "W1: 10,000 scalar adds on a 0-d array, then eval",
        make: || Ok(Box::new(ScalarAdds { eval: true })),
    },
    Spec {
        name: "w1_scalar_adds_graph",
        inner: 1,
        what: "W1: the same 10,000 adds, graph building only (no eval)",
        make: || Ok(Box::new(ScalarAdds { eval: false })),
    },
    Spec {
        name: "w1_chain16",
        inner: 1,
        what: "W1: 10,000-op elementwise chain (mul, add, sin, tanh) on 16 f32, then eval",
        make: || Chain16::new(true).map(|w| Box::new(w) as _),
    },
    Spec {
        name: "w1_chain16_graph",
        inner: 1,
        what: "W1: the same chain, graph building only (no eval)",
        make: || Chain16::new(false).map(|w| Box::new(w) as _),
    },
    Spec {
        name: "w2_tree_roundtrip",
        inner: 20,
        what: "W2: flatten + unflatten of a 1,000-leaf model-shaped tree",
        make: || {
            Ok(Box::new(TreeRoundtrip {
                model: tree_model(),
            }))
        },
    },
    Spec {
        name: "w2_unflatten_100k",
        inner: 1,
        what: "W2: unflatten of a 100,000-leaf model-shaped tree (leaves shared, result dropped)",
        make: || Ok(Box::new(Unflatten100k::new()?)),
    },
    Spec {
        name: "w3_compiled_call",
        inner: 50,
        what: "W3: call a compiled fn on a 100-leaf tree of 4-element arrays with a static field per block (no eval)",
        make: || CompiledCall::new(false).map(|w| Box::new(w) as _),
    },
    Spec {
        name: "w3_compiled_call_flat",
        inner: 50,
        what: "W3 floor: the same compiled fn on the 100 arrays as a flat list (no tree)",
        make: || CompiledFlat::new().map(|w| Box::new(w) as _),
    },
    Spec {
        name: "w3_compiled_call_eval",
        inner: 20,
        what: "W3: the same call, then eval of the 100 outputs",
        make: || CompiledCall::new(true).map(|w| Box::new(w) as _),
    },
    Spec {
        name: "w4_gelu_eager",
        inner: 3,
        what: "W4: GELU (erf form) on 1M f32, eager, eval",
        make: || Gelu::new(false).map(|w| Box::new(w) as _),
    },
    Spec {
        name: "w4_gelu_compiled",
        inner: 3,
        what: "W4: GELU (erf form) on 1M f32, compiled, eval",
        make: || Gelu::new(true).map(|w| Box::new(w) as _),
    },
    Spec {
        name: "w5_train_step",
        inner: 1,
        what: "W5: MLP 784-512-512-10, batch 128: nn layers, loss, value_and_grad, optim.Adam, compiled",
        make: || TrainStep::new().map(|w| Box::new(w) as _),
    },
    Spec {
        name: "w6_decode_128",
        inner: 1,
        what: "W6: Llama 4x256, 8 heads, vocab 1024: 128 greedy tokens, KV cache, compiled step",
        make: || Decode::new().map(|w| Box::new(w) as _),
    },
];

/// The spec called `name`.
pub fn spec(name: &str) -> Option<&'static Spec> {
    WORKLOADS.iter().find(|s| s.name == name)
}

// ---------------------------------------------------------------------------------------
// W1: per-op overhead.

const W1_OPS: usize = 10_000;

struct ScalarAdds {
    eval: bool,
}

impl Workload for ScalarAdds {
    fn run(&mut self) -> BoxResult<()> {
        let mut x = Array::from_scalar(0.0f32);
        for _ in 0..W1_OPS {
            x = &x + 1.0;
        }
        if self.eval {
            x.eval()?;
        }
        Ok(())
    }
}

struct Chain16 {
    x: Array,
    y: Array,
    eval: bool,
}

impl Chain16 {
    fn new(eval: bool) -> BoxResult<Chain16> {
        let x = ops::linspace(-1.0, 1.0, ops::LinspaceOptions::default().num(16))?;
        let y = ops::full(&[16], 0.5f32, None)?;
        mlx_tree::eval((&x, &y))?;
        Ok(Chain16 { x, y, eval })
    }
}

impl Workload for Chain16 {
    fn run(&mut self) -> BoxResult<()> {
        let y = &self.y;
        let mut x = self.x.clone();
        for _ in 0..W1_OPS / 4 {
            x = ops::multiply(&x, y)?;
            x = ops::add(&x, y)?;
            x = ops::sin(&x)?;
            x = ops::tanh(&x)?;
        }
        if self.eval {
            x.eval()?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// W2: tree flatten + unflatten, 1,000 leaves. The same structure as `model()` in
// workloads.py (nested dicts and lists there, derived structs, Vecs, Options and maps here).

/// The one linear-layer tree of W2 and W3 (W5 uses `mlx_nn::Linear` itself).
#[derive(TreeNode, Clone)]
struct TLinear {
    weight: Array,
    bias: Option<Array>,
}

#[derive(TreeNode)]
struct TAttention {
    wq: TLinear,
    wk: TLinear,
    wv: TLinear,
    wo: TLinear,
}

#[derive(TreeNode)]
struct TMlp {
    gate: TLinear,
    up: TLinear,
    down: TLinear,
}

#[derive(TreeNode)]
struct TNorm {
    weight: Array,
    #[tree(static)]
    eps: f32,
}

/// 20 leaves.
#[derive(TreeNode)]
struct TLayer {
    attn: TAttention,
    mlp: TMlp,
    norms: Vec<TNorm>,
    scales: BTreeMap<String, Array>,
}

#[derive(TreeNode)]
struct TEmbedding {
    weight: Array,
}

#[derive(TreeNode)]
struct TModel {
    embed: TEmbedding,
    layers: Vec<TLayer>,
    norm: TNorm,
    lm_head: TLinear,
    adapters: HashMap<String, Array>,
}

/// 49 layers x 20 leaves + 20 model-level leaves = 1,000 leaves.
const W2_LAYERS: usize = 49;
/// 4,999 layers: 100,000 leaves.
const W2_BIG_LAYERS: usize = 4_999;

fn tree_model() -> TModel {
    tree_model_with(W2_LAYERS)
}

fn tree_model_with(layers: usize) -> TModel {
    let leaf = || Array::from_scalar(0.0f32);
    let linear = |bias: bool| TLinear {
        weight: leaf(),
        bias: bias.then(leaf),
    };
    let norm = || TNorm {
        weight: leaf(),
        eps: 1e-5,
    };
    TModel {
        embed: TEmbedding { weight: leaf() },
        layers: (0..layers)
            .map(|_| TLayer {
                attn: TAttention {
                    wq: linear(true),
                    wk: linear(true),
                    wv: linear(true),
                    wo: linear(true),
                },
                mlp: TMlp {
                    gate: linear(false),
                    up: linear(false),
                    down: linear(false),
                },
                norms: vec![norm(), norm()],
                scales: (0..7).map(|i| (format!("s{i}"), leaf())).collect(),
            })
            .collect(),
        norm: norm(),
        lm_head: linear(true),
        adapters: (0..16).map(|i| (format!("a{i:02}"), leaf())).collect(),
    }
}

struct TreeRoundtrip {
    model: TModel,
}

impl Workload for TreeRoundtrip {
    fn run(&mut self) -> BoxResult<()> {
        let (leaves, def) = tree_flatten(&self.model)?;
        debug_assert_eq!(leaves.len(), 1000);
        let leaves: Vec<Array> = leaves.into_iter().cloned().collect();
        let back: TModel = tree_unflatten(&def, leaves)?;
        std::hint::black_box(back);
        Ok(())
    }
}

/// Unflatten alone, of a tree 100 times W2's: the leaves are shared with the original tree
/// (a clone is a reference-count increment, like Python's lists of the same leaves), the
/// rebuilt tree is dropped inside the iteration, as Python frees its result.
struct Unflatten100k {
    leaves: Vec<Array>,
    def: mlx_tree::TreeDef,
}

impl Unflatten100k {
    fn new() -> BoxResult<Unflatten100k> {
        let model = tree_model_with(W2_BIG_LAYERS);
        let (leaves, def) = tree_flatten(&model)?;
        assert_eq!(leaves.len(), 100_000);
        Ok(Unflatten100k {
            leaves: leaves.into_iter().cloned().collect(),
            def,
        })
    }
}

impl Workload for Unflatten100k {
    fn run(&mut self) -> BoxResult<()> {
        let back: TModel = tree_unflatten(&self.def, self.leaves.clone())?;
        std::hint::black_box(back);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// W3: compiled-call overhead with a 100-leaf tree argument.

/// A block with static data (part of the compiled function's cache key, as Python's
/// `mx.compile` keys on the float constants in its argument trees).
#[derive(TreeNode, Clone)]
struct CBlock {
    fc1: TLinear,
    fc2: TLinear,
    #[tree(static)]
    shift: f32,
}

/// 25 blocks x 4 leaves = 100 leaves.
const W3_BLOCKS: usize = 25;

type W3Fn = fn(&Vec<CBlock>) -> Result<Vec<CBlock>>;

struct CompiledCall {
    tree: Vec<CBlock>,
    compiled: mlx_tree::Compiled<Vec<CBlock>, Vec<CBlock>, W3Fn>,
    eval: bool,
}

fn w3_tree() -> Result<Vec<CBlock>> {
    let mut n = 0;
    let mut next = || {
        n += 1;
        ops::full(&[4], n as f32, None)
    };
    let mut tree = Vec::with_capacity(W3_BLOCKS);
    for _ in 0..W3_BLOCKS {
        tree.push(CBlock {
            fc1: TLinear {
                weight: next()?,
                bias: Some(next()?),
            },
            fc2: TLinear {
                weight: next()?,
                bias: Some(next()?),
            },
            shift: 1.0,
        });
    }
    eval(&tree)?;
    Ok(tree)
}

impl CompiledCall {
    fn new(eval_outputs: bool) -> BoxResult<CompiledCall> {
        let f: W3Fn = w3_fun;
        Ok(CompiledCall {
            tree: w3_tree()?,
            compiled: mlx_tree::compile(f, None),
            eval: eval_outputs,
        })
    }
}

/// `x * 2 + shift` on every leaf (shift = 1: the same graph as the flat floor's `x * 2 + 1`).
#[allow(clippy::ptr_arg)] // `compile` passes `&I`, and `I` is the `Vec` tree itself
fn w3_fun(tree: &Vec<CBlock>) -> Result<Vec<CBlock>> {
    tree.iter()
        .map(|b| {
            let f = |x: &Array| ops::add(&ops::multiply(x, 2.0)?, b.shift);
            let lin = |l: &TLinear| -> Result<TLinear> {
                Ok(TLinear {
                    weight: f(&l.weight)?,
                    bias: l.bias.as_ref().map(f).transpose()?,
                })
            };
            Ok(CBlock {
                fc1: lin(&b.fc1)?,
                fc2: lin(&b.fc2)?,
                shift: b.shift,
            })
        })
        .collect()
}

impl Workload for CompiledCall {
    fn run(&mut self) -> BoxResult<()> {
        let out = self.compiled.call(&self.tree)?;
        if self.eval {
            eval(&out)?;
        }
        Ok(())
    }

    fn check(&self) -> BoxResult<()> {
        traced_once("w3", self.compiled.stats())
    }
}

/// The floor under W3: array-level compile on the leaves as a flat list, so the call is MLX's
/// own work (cache lookup, replay) plus the thinnest binding; the tree rows minus this row are
/// the tree handling each language adds.
struct CompiledFlat {
    leaves: Vec<Array>,
    compiled: mlx_rs::compile::Compiled<FlatFn>,
}

type FlatFn = fn(&[Array]) -> Result<Vec<Array>>;

fn w3_flat(xs: &[Array]) -> Result<Vec<Array>> {
    xs.iter()
        .map(|x| ops::add(&ops::multiply(x, 2.0)?, 1.0))
        .collect()
}

impl CompiledFlat {
    fn new() -> BoxResult<CompiledFlat> {
        let tree = w3_tree()?;
        let f: FlatFn = w3_flat;
        Ok(CompiledFlat {
            leaves: tree_leaves(&tree).into_iter().cloned().collect(),
            compiled: mlx_rs::compile::compile(f, None),
        })
    }
}

impl Workload for CompiledFlat {
    fn run(&mut self) -> BoxResult<()> {
        std::hint::black_box(self.compiled.call(&self.leaves)?);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// W4: GELU fusion.

/// Elements of W4's input: `BENCH_W4_N`, else 2^20. The GPU run uses 16M, where a kernel
/// launch no longer dominates (as in workloads.py).
fn w4_n() -> BoxResult<i32> {
    match std::env::var("BENCH_W4_N") {
        Ok(n) => Ok(n.parse()?),
        Err(_) => Ok(1 << 20),
    }
}

/// Traces of `gelu_flat`: MLX's array-level compile has no counter of its own.
static GELU_TRACES: AtomicU64 = AtomicU64::new(0);

/// `0.5 * x * (1 + erf(x / sqrt(2)))`, the exact (erf) form, op for op as in workloads.py.
fn gelu(x: &Array) -> Result<Array> {
    let inner = ops::erf(&ops::divide(x, std::f64::consts::SQRT_2)?)?;
    ops::multiply(&ops::multiply(x, 0.5)?, &ops::add(&inner, 1.0)?)
}

struct Gelu {
    x: Array,
    compiled: Option<mlx_rs::compile::Compiled<FlatFn>>,
}

fn gelu_flat(xs: &[Array]) -> Result<Vec<Array>> {
    GELU_TRACES.fetch_add(1, Ordering::Relaxed);
    Ok(vec![gelu(&xs[0])?])
}

impl Gelu {
    fn new(compiled: bool) -> BoxResult<Gelu> {
        let x = random::normal(&[w4_n()?], Default::default(), &random::key(0)?)?;
        x.eval()?;
        GELU_TRACES.store(0, Ordering::Relaxed);
        let f: FlatFn = gelu_flat;
        Ok(Gelu {
            x,
            compiled: compiled.then(|| mlx_rs::compile::compile(f, None)),
        })
    }
}

impl Workload for Gelu {
    fn run(&mut self) -> BoxResult<()> {
        let y = match &self.compiled {
            Some(c) => c.call(std::slice::from_ref(&self.x))?.remove(0),
            None => gelu(&self.x)?,
        };
        y.eval()?;
        Ok(())
    }

    fn check(&self) -> BoxResult<()> {
        match &self.compiled {
            Some(_) => traces_are_one("w4", GELU_TRACES.load(Ordering::Relaxed)),
            None => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------------
// W5: MLP training step through the library, as a Python user writes it: `nn.Linear` layers,
// `nn.losses.cross_entropy`, `nn.value_and_grad`, `optim.Adam`, with the model and the
// optimizer passed mutably to one compiled step.

#[derive(TreeNode, Clone)]
struct Mlp {
    layers: Vec<nn::Linear>,
}

impl Forward for Mlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        let mut h = x.clone();
        let n = self.layers.len();
        for (i, l) in self.layers.iter().enumerate() {
            h = l.forward(&h)?;
            if i + 1 < n {
                h = nn::relu(&h)?;
            }
        }
        Ok(h)
    }
}

const W5_SIZES: [i32; 4] = [784, 512, 512, 10];
const W5_BATCH: i32 = 128;
const LR: f32 = 1e-3;

fn w5_loss(model: &Mlp, (x, y): &(Array, Array)) -> Result<Array> {
    let mean = CrossEntropyOptions::default().reduction(Reduction::Mean);
    losses::cross_entropy(&model.forward(x)?, y, mean)
}

/// One step: what is traced once and replayed. Updates the model and the optimizer in place
/// and returns the loss.
fn train_step((model, opt): &mut (Mlp, Adam), batch: &(Array, Array)) -> Result<Array> {
    let (loss, grads) = nn::value_and_grad(w5_loss)(model, batch)?;
    opt.update(model, &grads)?;
    Ok(loss)
}

type StepFn = fn(&mut (Mlp, Adam), &(Array, Array)) -> Result<Array>;

struct TrainStep {
    state: (Mlp, Adam),
    data: (Array, Array),
    step: mlx_tree::CompiledMut<(Mlp, Adam), (Array, Array), Array, StepFn>,
}

impl TrainStep {
    fn new() -> BoxResult<TrainStep> {
        let key = random::key(0)?;
        let keys = random::split(&key, 8)?;
        let k = |i: i32| ops::take(&keys, i, 0);
        let mut layers = Vec::new();
        for (i, w) in W5_SIZES.windows(2).enumerate() {
            let (din, dout) = (w[0], w[1]);
            let scale = 1.0 / (din as f64).sqrt();
            layers.push(nn::Linear::from_weights(
                random::uniform(
                    &[dout, din],
                    UniformOptions::default().low(-scale).high(scale),
                    &k(i as i32)?,
                )?,
                Some(ops::zeros(&[dout], None)?),
            ));
        }
        let model = Mlp { layers };
        let mut opt = Adam::new(LR);
        // The optimizer state exists before the first compiled call, so it never retraces.
        opt.init(&model)?;
        let x = random::normal(&[W5_BATCH, W5_SIZES[0]], Default::default(), &k(6)?)?;
        let y = random::randint(0, W5_SIZES[3], &[W5_BATCH], None, &k(7)?)?;
        let state = (model, opt);
        eval((&state, &x, &y))?;
        let f: StepFn = train_step;
        Ok(TrainStep {
            state,
            data: (x, y),
            step: mlx_tree::compile_mut(f, None),
        })
    }
}

impl Workload for TrainStep {
    fn run(&mut self) -> BoxResult<()> {
        let loss = self.step.call(&mut self.state, &self.data)?;
        eval((&loss, &self.state))?;
        Ok(())
    }

    fn check(&self) -> BoxResult<()> {
        traced_once("w5", self.step.stats())
    }
}

// ---------------------------------------------------------------------------------------
// W6: decode with a small Llama-style model, preallocated KV cache, compiled step.

const V_VOCAB: i32 = 1024;
const V_DIM: i32 = 256;
const V_HEADS: i32 = 8;
const V_HEAD_DIM: i32 = V_DIM / V_HEADS;
const V_HIDDEN: i32 = 768;
const V_LAYERS: usize = 4;
const V_MAX_LEN: i32 = 128;
const V_TOKENS: usize = 128;
const NORM_EPS: f32 = 1e-5;
const ROPE_BASE: f32 = 10_000.0;

#[derive(TreeNode, Clone)]
struct Block {
    attn_norm: Array,
    wq: Array,
    wk: Array,
    wv: Array,
    wo: Array,
    mlp_norm: Array,
    w1: Array,
    w2: Array,
    w3: Array,
}

#[derive(TreeNode, Clone)]
struct Llama {
    embed: Array,
    layers: Vec<Block>,
    norm: Array,
    lm_head: Array,
}

/// Preallocated keys/values `[1, heads, max_len, head_dim]` per layer and the write position.
#[derive(TreeNode, Clone)]
struct KvCache {
    keys: Vec<Array>,
    values: Vec<Array>,
    offset: Array,
}

fn linear_nt(x: &Array, w: &Array) -> Result<Array> {
    ops::matmul(x, &w.t()?)
}

fn heads(x: &Array) -> Result<Array> {
    ops::transpose(
        &ops::reshape(x, &[1, 1, V_HEADS, V_HEAD_DIM])?,
        [0, 2, 1, 3],
    )
}

/// One token through the model: updates the cache in place and returns the greedy next token.
fn decode_step(cache: &mut KvCache, (p, token): &(Llama, Array)) -> Result<Array> {
    let offset = &cache.offset;
    let start = ops::reshape(offset, &[1])?;
    let mask = ops::less_equal(&ops::arange(0, V_MAX_LEN, 1, None)?, offset)?;
    let scale = (V_HEAD_DIM as f32).powf(-0.5);
    let mut h = ops::take(&p.embed, token, 0)?;
    let mut keys = Vec::with_capacity(V_LAYERS);
    let mut values = Vec::with_capacity(V_LAYERS);
    for (l, (kc, vc)) in p.layers.iter().zip(cache.keys.iter().zip(&cache.values)) {
        let x = fast::rms_norm(&h, Some(&l.attn_norm), NORM_EPS)?;
        let rope = |t: &Array| fast::rope(t, V_HEAD_DIM, false, Some(ROPE_BASE), 1.0, offset, None);
        let q = rope(&heads(&linear_nt(&x, &l.wq)?)?)?;
        let k = rope(&heads(&linear_nt(&x, &l.wk)?)?)?;
        let v = heads(&linear_nt(&x, &l.wv)?)?;
        let kc = ops::slice_update(kc, &k, &start, &[2])?;
        let vc = ops::slice_update(vc, &v, &start, &[2])?;
        let o = fast::scaled_dot_product_attention(&q, &kc, &vc, scale, &mask, None)?;
        let o = ops::reshape(&ops::transpose(&o, [0, 2, 1, 3])?, &[1, 1, V_DIM])?;
        h = ops::add(&h, &linear_nt(&o, &l.wo)?)?;
        let x = fast::rms_norm(&h, Some(&l.mlp_norm), NORM_EPS)?;
        let g = linear_nt(&x, &l.w1)?;
        let silu = ops::multiply(&g, &ops::sigmoid(&g)?)?;
        let up = linear_nt(&x, &l.w3)?;
        h = ops::add(&h, &linear_nt(&ops::multiply(&silu, &up)?, &l.w2)?)?;
        keys.push(kc);
        values.push(vc);
    }
    let h = fast::rms_norm(&h, Some(&p.norm), NORM_EPS)?;
    let logits = linear_nt(&h, &p.lm_head)?;
    let next = ops::reshape(&ops::argmax(&logits, -1, false)?, &[1, 1])?;
    cache.offset = ops::add(offset, 1)?;
    cache.keys = keys;
    cache.values = values;
    Ok(next)
}

type DecodeFn = fn(&mut KvCache, &(Llama, Array)) -> Result<Array>;

struct Decode {
    params: Llama,
    cache: KvCache,
    step: mlx_tree::CompiledMut<KvCache, (Llama, Array), Array, DecodeFn>,
}

impl Decode {
    fn new() -> BoxResult<Decode> {
        let mut seed = 0u64;
        let mut w = |shape: &[i32]| -> BoxResult<Array> {
            seed += 1;
            let scale = 1.0 / (shape[shape.len() - 1] as f64).sqrt();
            Ok(random::normal(
                shape,
                NormalOptions::default().scale(scale),
                &random::key(seed)?,
            )?)
        };
        let ones = || ops::ones(&[V_DIM], None);
        let mut layers = Vec::with_capacity(V_LAYERS);
        for _ in 0..V_LAYERS {
            layers.push(Block {
                attn_norm: ones()?,
                wq: w(&[V_DIM, V_DIM])?,
                wk: w(&[V_DIM, V_DIM])?,
                wv: w(&[V_DIM, V_DIM])?,
                wo: w(&[V_DIM, V_DIM])?,
                mlp_norm: ones()?,
                w1: w(&[V_HIDDEN, V_DIM])?,
                w2: w(&[V_DIM, V_HIDDEN])?,
                w3: w(&[V_HIDDEN, V_DIM])?,
            });
        }
        let params = Llama {
            embed: w(&[V_VOCAB, V_DIM])?,
            layers,
            norm: ones()?,
            lm_head: w(&[V_VOCAB, V_DIM])?,
        };
        let kv = || ops::zeros(&[1, V_HEADS, V_MAX_LEN, V_HEAD_DIM], None);
        let cache = KvCache {
            keys: (0..V_LAYERS).map(|_| kv()).collect::<Result<_>>()?,
            values: (0..V_LAYERS).map(|_| kv()).collect::<Result<_>>()?,
            offset: Array::from_scalar(0i32),
        };
        eval((&params, &cache))?;
        let f: DecodeFn = decode_step;
        Ok(Decode {
            params,
            cache,
            step: mlx_tree::compile_mut(f, None),
        })
    }

    /// Generates `V_TOKENS` tokens greedily from token 0; returns them.
    fn generate(&mut self) -> BoxResult<Vec<u32>> {
        // Rewind: stale cache entries past the offset are masked out.
        self.cache.offset = Array::from_scalar(0i32);
        // argmax yields uint32: starting with uint32 keeps one input signature (one trace).
        let mut token = Array::from_slice(&[0u32], &[1, 1])?;
        let mut out = Vec::with_capacity(V_TOKENS);
        for _ in 0..V_TOKENS {
            // The parameters are an argument (as in workloads.py), cloned into the argument
            // tuple: one refcount bump per leaf.
            let args = (self.params.clone(), token);
            token = self.step.call(&mut self.cache, &args)?;
            eval((&token, &self.cache))?;
            out.push(token.item::<u32>()?);
        }
        Ok(out)
    }
}

impl Workload for Decode {
    fn run(&mut self) -> BoxResult<()> {
        self.generate()?;
        Ok(())
    }

    fn check(&self) -> BoxResult<()> {
        traced_once("w6", self.step.stats())
    }
}

/// Number of tokens one decode iteration generates (for tokens/s).
pub const DECODE_TOKENS: usize = V_TOKENS;
