//! Layers and models sharded over process groups (`mlx::nn`'s sharded layers, Python's
//! `mlx.nn.layers.distributed` and `nn.utils.clip_grad_norm_sharded`), on MLX's ring backend
//! over loopback with 2 and 4 processes started by `mlx::launch::Launch`:
//!
//! - tensor parallelism: an MLP of `AllToShardedLinear` -> activation -> `ShardedToAllLinear`
//!   built from an unsharded MLP gives its output and gradients on every rank (float and
//!   quantized);
//! - `shard_linear` / `shard_inplace` give each rank the arrays Python's give it
//!   (tests/data/nn_sharded.json, from scripts/golden/nn_sharded.py);
//! - training fully sharded (`fully_shard`, nested, frozen parameters, compiled) equals
//!   unsharded training on the same data;
//! - `clip_grad_norm_sharded` equals `clip_grad_norm` of the whole gradients;
//! - bad shardings are `Err`s with Python's messages where Python has one.
//!
//! The ranks are this test binary, re-run with `--ignored --exact child_*`. Every rank seeds
//! MLX's random state alike, so every rank builds the same unsharded model and data.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use mlx::core::distributed::{self, Backend, Group};
use mlx::core::ops::{self, DequantizeOptions, IntoIndex, QuantizationMode, QuantizeOptions};
use mlx::core::{eval, random, with_device, Array, Device, Dtype, Result};
use mlx::launch::{Launch, LaunchReport};
use mlx::nn::{
    self, fully_shard, gelu, relu, shard_inplace, shard_linear, sum_gradients, utils,
    AllToShardedLinear, Forward, FullyShardedModule, Linear, MaybeFullySharded, Module,
    QuantizedAllToShardedLinear, QuantizedAllToShardedLinearOptions, QuantizedLinear,
    QuantizedShardedToAllLinear, ShardSpec, ShardedLinear, ShardedToAllLinear, Sharding,
};
use mlx::optimizers::{clip_grad_norm, AdamW, Optimizer};
use mlx::utils::{compile_mut, tree_map, tree_structure, value_and_grad, TreeNode};
use serde_json::Value;
use support::golden::{array, assert_exact};

/// One group at a time: each rank's kernel folder (see [`launch`]) is then used by one
/// process at a time, and four-process groups do not compete for the CI machine's two cores.
static ONE_GROUP_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Rank `rank`'s temporary folder (see [`launch`]), named after this test binary.
fn rank_dir(rank: usize) -> PathBuf {
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(&std::env::current_exe().unwrap(), &mut hasher);
    let binary = std::hash::Hasher::finish(&hasher);
    std::env::temp_dir().join(format!("mlx-nn-sharded-{binary:x}-rank{rank}"))
}

/// Copies each compiled kernel (`mlx/<version>/cpu/*.so`) that one rank's folder has into the
/// folders of the others that lack it, so each kernel is compiled once, not once per rank.
/// Called between groups, when no rank is running: every library is whole.
fn share_kernels(dirs: &[PathBuf]) {
    let kernels = |dir: &Path| -> Vec<PathBuf> {
        let mut found = Vec::new();
        for version in std::fs::read_dir(dir.join("mlx"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let cpu = version.path().join("cpu");
            for entry in std::fs::read_dir(&cpu).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "so") {
                    found.push(path.strip_prefix(dir).unwrap().to_path_buf());
                }
            }
        }
        found
    };
    let all: Vec<(PathBuf, PathBuf)> = dirs
        .iter()
        .flat_map(|d| kernels(d).into_iter().map(move |k| (d.clone(), k)))
        .collect();
    for dir in dirs {
        for (from, kernel) in &all {
            let target = dir.join(kernel);
            if target.exists() {
                continue;
            }
            // Written under another name and renamed: a library appears whole or not at all.
            // (A short name: the kernels' own names are near the file system's limit.)
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            let partial = target.with_file_name("copying.partial");
            std::fs::copy(from.join(kernel), &partial).unwrap();
            std::fs::rename(&partial, &target).unwrap();
        }
    }
}

/// Runs the child test `name` as each of `ranks` processes.
///
/// Each rank gets a temporary folder of its own (`TMPDIR`): MLX compiles fused CPU kernels
/// (compiled activations, compiled steps) into `$TMPDIR/mlx/<version>/cpu`, and two processes
/// compiling the same kernel at once race there (one loads the other's half-written library:
/// "file too short"). Groups run one at a time and the folders are named after this test
/// binary and the rank, so no two running processes share one; between groups, the kernels
/// are copied to every rank's folder, for this run and the next.
fn launch(ranks: usize, name: &str) -> Launch {
    let exe = std::env::current_exe().unwrap();
    let args = [
        "--ignored",
        "--exact",
        name,
        "--nocapture",
        "--test-threads=1",
    ];
    let mut launch = Launch::new(ranks, &exe)
        .args(args)
        .timeout(Duration::from_secs(240))
        // Collected in the report; echoed, it would bypass the test harness's capture.
        .echo(false);
    for rank in 0..ranks {
        let dir = rank_dir(rank);
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = Command::new(&exe);
        command.args(args).env("TMPDIR", &dir);
        launch = launch.rank_command(rank, command);
    }
    launch
}

/// Runs `name` as each of `ranks` processes and checks that every rank ran and passed it.
fn run(ranks: usize, name: &str) {
    let _one = ONE_GROUP_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    share_kernels(&(0..4).map(rank_dir).collect::<Vec<_>>());
    let report: LaunchReport = launch(ranks, name).run().unwrap();
    for r in &report.ranks {
        assert!(
            r.output.contains("1 passed"),
            "rank {} did not run {name}:\n{}",
            r.rank,
            r.output
        );
    }
}

/// The group a child runs in: the launcher's ring of more than one process.
fn ring() -> Group {
    let group = distributed::init(true, Backend::Ring).unwrap();
    assert!(group.size() > 1, "started without a launcher");
    group
}

/// This rank's block `rank` of `n` equal blocks of `a` along `axis` (what sharding keeps).
fn block(a: &Array, axis: usize, n: i32, rank: i32) -> Array {
    let len = a.shape()[axis] / n;
    let mut index: Vec<ops::Index> = (0..a.ndim()).map(|_| (..).into_index()).collect();
    index[axis] = (rank * len..(rank + 1) * len).into_index();
    a.index(index).unwrap()
}

fn to_f32(a: &Array) -> Vec<f32> {
    a.astype(Dtype::Float32).unwrap().to_vec::<f32>().unwrap()
}

/// Asserts `a` and `b` hold the same shape, dtype and bits.
#[track_caller]
fn assert_identical(a: &Array, b: &Array, what: &str) {
    assert_eq!(a.shape(), b.shape(), "{what}: shape");
    assert_eq!(a.dtype(), b.dtype(), "{what}: dtype");
    let (x, y) = (to_f32(a), to_f32(b));
    for (i, (p, q)) in x.iter().zip(&y).enumerate() {
        assert!(p.to_bits() == q.to_bits(), "{what}[{i}]: {p} vs {q}");
    }
}

// ---------------------------------------------------------------------------------------------
// Tensor parallelism

#[test]
fn tensor_parallel_mlp_equals_the_unsharded_mlp_with_2_ranks() {
    run(2, "child_tensor_parallel");
}

#[test]
fn tensor_parallel_mlp_equals_the_unsharded_mlp_with_4_ranks() {
    run(4, "child_tensor_parallel");
}

/// Multiples of 1/8 in [-1, 1]. The sums that sharding reorders (each layer's products over
/// its input features, and the input gradient's over the hidden features) then hold values
/// with at most 9 fraction bits (three factors of 1/8) below 2^13 in the MLPs below: 22 bits,
/// which float32 holds exactly, so those sums are exact in any order and the sharded MLP must
/// give the unsharded one's bits (and everything computed from them, the loss included).
fn dyadic(shape: &[i32], key: &Array) -> Result<Array> {
    let k = random::randint(-8, 9, shape, Dtype::Int32, key)?;
    ops::divide(&k.astype(Dtype::Float32)?, 8.0f32)
}

/// `sum(mlp(x) * c)`: a loss whose gradient with respect to the output is `c`.
fn weighted_sum(y: &Array, c: &Array) -> Result<Array> {
    ops::multiply(y, c)?.sum(None, false)
}

/// An MLP `down(act(up(x)))`, unsharded (`Linear`, `QuantizedLinear`) or tensor parallel
/// (`ShardedLinear`), with its input as a parameter so that gradients reach it too.
#[derive(Clone, TreeNode)]
struct Mlp<U, D> {
    up: U,
    down: D,
    x: Array,
    #[tree(static)]
    gelu: bool,
}

impl<U: Forward, D: Forward> Mlp<U, D> {
    fn run(&self) -> Result<Array> {
        let h = self.up.forward(&self.x)?;
        let a = if self.gelu { gelu(&h)? } else { relu(&h)? };
        self.down.forward(&a)
    }
}

/// The loss and the gradients of every parameter of `mlp` (frozen ones get zeros).
fn loss_and_grads<U, D>(mlp: &Mlp<U, D>, c: &Array) -> (Array, Mlp<U, D>)
where
    U: Forward + TreeNode,
    D: Forward + TreeNode,
{
    let f = |m: &Mlp<U, D>, c: &Array| weighted_sum(&m.run()?, c);
    let (loss, grads) = nn::value_and_grad(f)(mlp, c).unwrap();
    eval((&loss, &grads)).unwrap();
    (loss, grads)
}

/// `mlp` with its layers sharded over `group` (all-to-sharded, then sharded-to-all).
fn shard_mlp<L: nn::ShardableLinear>(
    mlp: &Mlp<L, L>,
    group: &Group,
) -> Mlp<ShardedLinear, ShardedLinear> {
    Mlp {
        up: shard_linear(&mlp.up, Sharding::AllToSharded, None, group).unwrap(),
        down: shard_linear(&mlp.down, Sharding::ShardedToAll, None, group).unwrap(),
        x: mlp.x.clone(),
        gelu: mlp.gelu,
    }
}

/// Float32 weights on the grid of one 4-bit affine quantization group: every group of 32
/// starts with -1 and 0.875 and holds -1 + k/8 elsewhere, so MLX quantizes it with scale 1/8
/// and bias -1 exactly, and the dequantized weights are the dyadic values themselves.
fn quantizable(rows: i32, cols: i32, key: &Array) -> Result<Array> {
    let k = random::randint(0, 16, &[rows, cols], Dtype::Int32, key)?.astype(Dtype::Float32)?;
    let w = ops::subtract(&ops::divide(&k, 8.0f32)?, 1.0f32)?;
    let col = ops::arange(0, cols, 1, Dtype::Int32)?;
    let first = ops::equal(&ops::remainder(&col, 32)?, 0)?;
    let second = ops::equal(&ops::remainder(&col, 32)?, 1)?;
    let w = ops::where_(&first, -1.0f32, &w)?;
    ops::where_(&second, 0.875f32, &w)
}

/// The rounding error scale of `got` against the float64 truth: the largest difference.
fn max_error(got: &Array, truth: &Array) -> f64 {
    // Float64 runs on the CPU only (a CUDA GPU has none).
    with_device(&Device::cpu(), || {
        let d = ops::subtract(got.astype(Dtype::Float64)?, truth)?;
        ops::abs(&d)?.max(None, false)?.item::<f64>()
    })
    .unwrap()
    .unwrap()
}

/// The sharded result is as accurate as the unsharded one: both are float32 computations of
/// the same float64 `truth`, summed in different orders (partial sums over each process's
/// slice, then `all_sum`), so their errors have the same size: allow twice the unsharded
/// result's largest error, plus one float32 rounding of the largest value (for results the
/// unsharded computation happens to get nearly exact). Measured: the sharded errors are at
/// most 1.1 times the unsharded ones. A missing `all_sum` or a wrong slice is off by the size
/// of the values themselves, about 1e6 times more.
#[track_caller]
fn assert_as_accurate(sharded: &Array, unsharded: &Array, truth: &Array, what: &str) {
    assert_eq!(sharded.shape(), unsharded.shape(), "{what}: shape");
    // Float64 runs on the CPU only (a CUDA GPU has none).
    let scale = with_device(&Device::cpu(), || {
        ops::abs(truth)?.max(None, false)?.item::<f64>()
    })
    .unwrap()
    .unwrap();
    let floor = scale * f64::from(f32::EPSILON);
    let reference = max_error(unsharded, truth);
    let error = max_error(sharded, truth);
    assert!(
        error <= 2.0 * reference + floor,
        "{what}: sharded error {error:e} vs unsharded {reference:e} (largest value {scale:e})"
    );
}

/// A layer's float32 weight and bias (the dequantized weight for a quantized layer).
type Weights<'a> = (&'a Array, Option<&'a Array>);

/// The float64 truth of `mlp(x)` (gelu between the layers) and of the gradient of
/// `weighted_sum(mlp(x), c)` with respect to `x`: what the float32 results round.
fn truth64(x: &Array, up: Weights<'_>, down: Weights<'_>, c: &Array) -> (Array, Array) {
    // Float64 runs on the CPU only (a CUDA GPU has none).
    with_device(&Device::cpu(), || truth64_here(x, up, down, c)).unwrap()
}

fn truth64_here(x: &Array, up: Weights<'_>, down: Weights<'_>, c: &Array) -> (Array, Array) {
    let f64_of = |a: &Array| a.astype(Dtype::Float64).unwrap();
    let layer = |x: &Array, (w, b): Weights<'_>| -> Result<Array> {
        let y = ops::matmul(x, &f64_of(w).t()?)?;
        match b {
            Some(b) => ops::add(&y, f64_of(b)),
            None => Ok(y),
        }
    };
    let forward = |x: &Array| layer(&gelu(&layer(x, up)?)?, down);
    let x = f64_of(x);
    let y = forward(&x).unwrap();
    let loss = |x: &Array, c: &Array| weighted_sum(&forward(x)?, c);
    let (_, dx) = value_and_grad(loss)(&x, &f64_of(c)).unwrap();
    (y, dx)
}

/// A quantized layer (4 bits, group size 32) of `w` with bias `bias`.
fn quantized(w: &Array, bias: &Array) -> Result<QuantizedLinear> {
    let (wq, scales, biases) = ops::quantize(w, QuantizeOptions::default().group_size(32).bits(4))?;
    Ok(QuantizedLinear::from_parts(
        wq,
        scales,
        biases,
        Some(bias.clone()),
        32,
        4,
        QuantizationMode::Affine,
    ))
}

/// The float32 weight a quantized layer computes with.
fn dequantized(l: &QuantizedLinear) -> Array {
    let options = DequantizeOptions::default()
        .biases(l.biases.as_ref().unwrap())
        .group_size(32)
        .bits(4);
    ops::dequantize(&l.weight, &l.scales, options).unwrap()
}

#[test]
#[ignore = "a rank of tensor_parallel_mlp_equals_the_unsharded_mlp_*"]
fn child_tensor_parallel() -> Result<()> {
    let group = ring();
    let (n, rank) = (group.size(), group.rank());
    let keys = random::split(&random::key(3)?, 8)?;
    let key = |i: i32| keys.index(i).unwrap();
    let b = 4;

    // 1. Exact: dyadic float weights, relu. Outputs and every gradient bit for bit.
    let (d, h) = (8, 16);
    let mlp = Mlp {
        up: Linear::from_weights(dyadic(&[h, d], &key(0))?, Some(dyadic(&[h], &key(1))?)),
        down: Linear::from_weights(dyadic(&[d, h], &key(2))?, Some(dyadic(&[d], &key(3))?)),
        x: dyadic(&[b, d], &key(4))?,
        gelu: false,
    };
    let c = dyadic(&[b, d], &key(5))?;
    let sharded = shard_mlp(&mlp, &group);
    assert_identical(&sharded.run()?, &mlp.run()?, "exact output");
    let (loss, grads) = loss_and_grads(&mlp, &c);
    let (sharded_loss, sharded_grads) = loss_and_grads(&sharded, &c);
    assert_identical(&sharded_loss, &loss, "exact loss");
    // The input's gradient is the whole one on every rank: sum_gradients summed the shares.
    assert_identical(&sharded_grads.x, &grads.x, "exact dx");
    let ShardedLinear::AllToSharded(up) = &sharded_grads.up else {
        panic!("up is not an AllToShardedLinear")
    };
    let ShardedLinear::ShardedToAll(down) = &sharded_grads.down else {
        panic!("down is not a ShardedToAllLinear")
    };
    let full = |a: &Option<Array>| a.clone().unwrap();
    assert_identical(
        &up.weight,
        &block(&grads.up.weight, 0, n, rank),
        "exact d up.weight",
    );
    assert_identical(
        &full(&up.bias),
        &block(&full(&grads.up.bias), 0, n, rank),
        "exact d up.bias",
    );
    assert_identical(
        &down.weight,
        &block(&grads.down.weight, 1, n, rank),
        "exact d down.weight",
    );
    assert_identical(
        &full(&down.bias),
        &full(&grads.down.bias),
        "exact d down.bias",
    );

    // 2. Exact, quantized: 32 input features, 32 * n hidden (each rank's slice of the down
    // projection's input is one quantization group), weights on one quantization grid.
    let (qd, qh) = (32, 32 * n);
    let qmlp = Mlp {
        up: quantized(&quantizable(qh, qd, &key(6))?, &dyadic(&[qh], &key(1))?)?,
        down: quantized(&quantizable(d, qh, &key(7))?, &dyadic(&[d], &key(3))?)?,
        x: dyadic(&[b, qd], &key(4))?,
        gelu: false,
    };
    let qsharded = shard_mlp(&qmlp, &group);
    assert!(qsharded.up.is_quantized() && qsharded.down.is_quantized());
    assert_identical(&qsharded.run()?, &qmlp.run()?, "exact quantized output");
    let (_, qgrads) = loss_and_grads(&qmlp, &c);
    let (_, qsharded_grads) = loss_and_grads(&qsharded, &c);
    assert_identical(&qsharded_grads.x, &qgrads.x, "exact quantized dx");

    // 3. Random weights, gelu: float32 rounding differs with the summation order, so each
    // result is compared with the float64 truth (see assert_as_accurate).
    random::seed(11)?;
    let (rd, rh) = (32, 64);
    let rmlp = Mlp {
        up: Linear::new(rd, rh, true)?,
        down: Linear::new(rh, d, true)?,
        x: random::normal(&[b, rd], Default::default(), &key(4))?,
        gelu: true,
    };
    let rc = random::normal(&[b, d], Default::default(), &key(5))?;
    let (y64, dx64) = truth64(
        &rmlp.x,
        (&rmlp.up.weight, rmlp.up.bias.as_ref()),
        (&rmlp.down.weight, rmlp.down.bias.as_ref()),
        &rc,
    );
    let rsharded = shard_mlp(&rmlp, &group);
    assert_as_accurate(&rsharded.run()?, &rmlp.run()?, &y64, "gelu output");
    let (_, rgrads) = loss_and_grads(&rmlp, &rc);
    let (_, rsharded_grads) = loss_and_grads(&rsharded, &rc);
    assert_as_accurate(&rsharded_grads.x, &rgrads.x, &dx64, "gelu dx");

    // 4. The same with quantized layers (4 bits, group size 32): 32 * n hidden features.
    let q = |l: Linear| {
        l.to_quantized(Some(32), Some(4), QuantizationMode::Affine)
            .unwrap()
    };
    let rqmlp = Mlp {
        up: q(Linear::new(rd, 32 * n, true)?),
        down: q(Linear::new(32 * n, d, true)?),
        x: rmlp.x.clone(),
        gelu: true,
    };
    let (up_w, down_w) = (dequantized(&rqmlp.up), dequantized(&rqmlp.down));
    let (qy64, qdx64) = truth64(
        &rqmlp.x,
        (&up_w, rqmlp.up.bias.as_ref()),
        (&down_w, rqmlp.down.bias.as_ref()),
        &rc,
    );
    let rqsharded = shard_mlp(&rqmlp, &group);
    assert_as_accurate(
        &rqsharded.run()?,
        &rqmlp.run()?,
        &qy64,
        "quantized gelu output",
    );
    let (_, rqgrads) = loss_and_grads(&rqmlp, &rc);
    let (_, rqsharded_grads) = loss_and_grads(&rqsharded, &rc);
    assert_as_accurate(&rqsharded_grads.x, &rqgrads.x, &qdx64, "quantized gelu dx");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// shard_linear and shard_inplace against Python

#[test]
fn shard_linear_and_shard_inplace_equal_python_with_2_ranks() {
    run(2, "child_golden_shards");
}

#[test]
fn shard_linear_and_shard_inplace_equal_python_with_4_ranks() {
    run(4, "child_golden_shards");
}

/// tests/data/nn_sharded.json. Slicing is the same on every device, so the generator writes
/// this one file whatever its device, and it is read from here on every device.
fn golden() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nn_sharded.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["mlx_version"], "0.32.2");
    value
}

/// Python's `Attention` of scripts/golden/nn_sharded.py: the same fields in the same order.
#[derive(Clone, TreeNode)]
struct Attention {
    qkv: Linear,
    out: Linear,
}

/// The predicate `attention_rule` of scripts/golden/nn_sharded.py.
fn attention_rule(path: &str, _w: &Array) -> Option<ShardSpec> {
    if path.starts_with("qkv.") {
        return Some(if path.ends_with("bias") {
            (-1, 3).into()
        } else {
            (0, 3).into()
        });
    }
    (path == "out.weight").then(|| (-1).into())
}

#[test]
#[ignore = "a rank of shard_linear_and_shard_inplace_equal_python_*"]
fn child_golden_shards() -> Result<()> {
    let group = ring();
    let data = golden();
    let inputs = &data["inputs"];
    let linear = |name: &str| {
        let p = &inputs[name];
        Linear::from_weights(array(&p["weight"]), p.get("bias").map(array))
    };
    let q = &inputs["quantized"];
    let quantized = QuantizedLinear::from_parts(
        array(&q["weight"]),
        array(&q["scales"]),
        Some(array(&q["biases"])),
        Some(array(&q["bias"])),
        32,
        4,
        QuantizationMode::Affine,
    );
    let a = &inputs["attention"];
    let attention = Attention {
        qkv: Linear::from_weights(array(&a["qkv.weight"]), Some(array(&a["qkv.bias"]))),
        out: Linear::from_weights(array(&a["out.weight"]), None),
    };
    use Sharding::{AllToSharded, ShardedToAll};
    let g = &group;
    let cases = data["cases"].as_object().unwrap();
    for (name, case) in cases {
        let params = match name.as_str() {
            "fused_all_to_sharded_3" => shard_linear(&linear("fused"), AllToSharded, 3, g)?,
            "fused_sharded_to_all" => shard_linear(&linear("fused"), ShardedToAll, None, g)?,
            "square_all_to_sharded_indices" => {
                shard_linear(&linear("square"), AllToSharded, [4, 12], g)?
            }
            "square_sharded_to_all_fractions" => {
                shard_linear(&linear("square"), ShardedToAll, [0.25, 0.75], g)?
            }
            "quantized_all_to_sharded_3" => shard_linear(&quantized, AllToSharded, 3, g)?,
            "quantized_sharded_to_all" => shard_linear(&quantized, ShardedToAll, None, g)?,
            "inplace_square_sharded_to_all" => {
                let mut m = linear("square");
                shard_inplace(&mut m, ShardedToAll, None, g)?;
                check_case(name, case, m.named_parameters()?, &group);
                continue;
            }
            "inplace_attention_callable" => {
                let mut m = attention.clone();
                shard_inplace(&mut m, &attention_rule, None, g)?;
                check_case(name, case, m.named_parameters()?, &group);
                continue;
            }
            other => panic!("no Rust twin for the golden case {other}"),
        };
        check_case(name, case, params.named_parameters()?, &group);
    }
    assert_eq!(cases.len(), 8);
    Ok(())
}

/// `got` has Python's parameters for this rank, each equal to Python's.
fn check_case(name: &str, case: &Value, got: Vec<(String, Array)>, group: &Group) {
    let want = &case["groups"][group.size().to_string()][group.rank() as usize];
    let want = want.as_object().unwrap();
    let mut names: Vec<&String> = want.keys().collect();
    let mut got_names: Vec<&String> = got.iter().map(|(p, _)| p).collect();
    names.sort();
    got_names.sort();
    assert_eq!(got_names, names, "{name}: parameter names");
    for (path, a) in &got {
        assert_exact(
            a,
            &want[path],
            &format!("{name} {path} (rank {})", group.rank()),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// fully_shard

#[test]
fn fully_sharded_training_equals_unsharded_training_with_2_ranks() {
    run(2, "child_fully_shard");
}

#[test]
fn fully_sharded_training_equals_unsharded_training_with_4_ranks() {
    run(4, "child_fully_shard");
}

/// Linear -> gelu -> Linear.
#[derive(Clone, TreeNode)]
struct Block {
    up: Linear,
    down: Linear,
}

impl Forward for Block {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.down.forward(&gelu(&self.up.forward(x)?)?)
    }
}

/// Two blocks and a head, with blocks of type `B` (a `Block`, or a fully sharded one).
#[derive(Clone, TreeNode)]
struct Net<B> {
    blocks: Vec<B>,
    head: Linear,
}

impl<B: Forward> Forward for Net<B> {
    fn forward(&self, x: &Array) -> Result<Array> {
        let mut x = x.clone();
        for b in &self.blocks {
            x = ops::add(&x, &b.forward(&x)?)?;
        }
        self.head.forward(&x)
    }
}

/// Python's usual wrapping: every block, then the whole model (whose own sharding then
/// leaves the blocks' parameters to them and shards the head).
type ShardedNet = MaybeFullySharded<Net<MaybeFullySharded<Block>>>;

fn shard_net(net: Net<Block>, group: &Group) -> Result<ShardedNet> {
    let blocks = net
        .blocks
        .into_iter()
        .map(|b| fully_shard(b, group, None))
        .collect::<Result<Vec<_>>>()?;
    fully_shard(
        Net {
            blocks,
            head: net.head,
        },
        group,
        None,
    )
}

/// The full parameters of a sharded net, gathered.
fn gathered(net: &ShardedNet) -> Vec<(String, Array)> {
    let full = net
        .gathered_call(|n| {
            let blocks = n
                .blocks
                .iter()
                .map(|b| b.gathered_call(|b| Ok(b.clone())))
                .collect::<Result<Vec<Block>>>()?;
            Ok(Net {
                blocks,
                head: n.head.clone(),
            })
        })
        .unwrap();
    full.named_parameters().unwrap()
}

fn mse<M: Forward>(model: &M, (x, y): &(Array, Array)) -> Result<Array> {
    nn::losses::mse_loss(&model.forward(x)?, y, nn::losses::Reduction::Mean)
}

#[test]
#[ignore = "a rank of fully_sharded_training_equals_unsharded_training_*"]
fn child_fully_shard() -> Result<()> {
    let group = ring();
    let n = group.size();
    random::seed(5)?;
    let (d, h, out) = (8, 16, 4);
    let new_block = || -> Result<Block> {
        Ok(Block {
            up: Linear::new(d, h, true)?,
            down: Linear::new(h, d, true)?,
        })
    };
    let mut reference = Net {
        blocks: vec![new_block()?, new_block()?],
        head: Linear::new(d, out, true)?,
    };
    // A frozen parameter is sharded and gathered too, and stays as it is.
    reference.freeze(Some(&["head.bias"]))?;
    let mut model = shard_net(reference.clone(), &group)?;
    let MaybeFullySharded::Sharded(outer) = &model else {
        panic!("the net was not sharded")
    };
    // The outer wrapper shards the head only; each block shards its own parameters.
    assert_eq!(outer.sharded_paths(), ["head.weight", "head.bias"]);
    assert_eq!(outer.module.head.weight.shape(), &[out / n, d]);
    let paths: Vec<String> = model
        .named_parameters()?
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(paths[0], "module.blocks.0.module.up.weight");
    assert_eq!(paths.last().unwrap(), "module.head.bias");
    assert_eq!(model.trainable_mask()?.iter().filter(|t| !**t).count(), 1);

    let keys = random::split(&random::key(9)?, 2)?;
    let batch = (
        random::normal(&[16, d], Default::default(), &keys.index(0)?)?,
        random::normal(&[16, out], Default::default(), &keys.index(1)?)?,
    );
    // Every rank trains on the same batch, so the averaged gradient of each shard is the
    // slice of the whole gradient, and the shards follow the unsharded parameters. The first
    // loss is the same bits (the gathered parameters are the unsharded ones). With 2 ranks,
    // each gradient is (g + g) / 2 = g exactly, so training is the unsharded one bit for bit.
    // With 4, the ring sums four equal values in turn and 3g is not always a float32, so a
    // gradient can be off g by about EPSILON relative; AdamW (without bias correction) moves a
    // parameter by at most about lr (1 - b1) / sqrt(1 - b2) = 0.03 a step, and a relative
    // error e in the gradient changes that step by about 2e (once through m, once through
    // sqrt(v)). Over 3 steps: 3 * 0.03 * 2 * EPSILON, doubled for the second-order terms.
    // (AdamW hardly sees a gradient's scale, so a missing average is caught by the check of
    // the gradients themselves below, not by the parameters.)
    let (lr, steps) = (1e-2f32, 3);
    let max_step = f64::from(lr) * 0.1 / 0.001f64.sqrt();
    let tol = if n == 2 {
        0.0
    } else {
        4.0 * f64::from(steps) * max_step * f64::from(f32::EPSILON)
    };
    let mut opt_ref = AdamW::new(lr);
    let mut opt = AdamW::new(lr);
    for step in 0..steps {
        let (loss_ref, g_ref) = nn::value_and_grad(mse::<Net<Block>>)(&reference, &batch)?;
        opt_ref.update(&mut reference, &g_ref)?;
        let (loss, grads) = nn::value_and_grad(mse::<ShardedNet>)(&model, &batch)?;
        // The gradients are of the shards: the tree of the sharded model, its shapes, and
        // each is this rank's slice of the whole gradient, averaged over the ranks: g itself
        // with 2 ranks; with 4, the sum of four g rounds twice (3g, then 4g), so within
        // EPSILON of g relative.
        assert_eq!(tree_structure(&grads)?, tree_structure(&model)?);
        let whole = g_ref.named_parameters()?;
        for (p, g) in grads.named_parameters()? {
            let want = &whole
                .iter()
                .find(|(q, _)| *q == p.replace("module.", ""))
                .unwrap()
                .1;
            let want = block(want, 0, n, group.rank());
            let rtol = if n == 2 { 0.0 } else { f64::from(f32::EPSILON) };
            let close = ops::allclose(
                &g,
                &want,
                ops::AllcloseOptions::default().rtol(rtol).atol(0.0),
            )?;
            assert!(close.item::<bool>()?, "step {step}, gradient of {p}");
        }
        opt.update(&mut model, &grads)?;
        eval((&loss_ref, &reference, &loss, &model))?;
        if step == 0 || n == 2 {
            assert_identical(&loss, &loss_ref, &format!("loss of step {step}"));
        } else {
            // The loss of parameters within `tol` of each other: a few ulps of it.
            let (a, b) = (loss.item::<f32>()?, loss_ref.item::<f32>()?);
            assert!(
                (a - b).abs() <= 8.0 * f32::EPSILON * b.abs(),
                "step {step}: loss {a} vs {b}"
            );
        }
    }
    for ((p, a), (q, b)) in gathered(&model).iter().zip(reference.named_parameters()?) {
        assert_eq!(p, &q);
        assert_eq!(a.shape(), b.shape(), "{p}");
        let close = ops::allclose(a, &b, ops::AllcloseOptions::default().rtol(0.0).atol(tol))?;
        assert!(
            close.item::<bool>()?,
            "{p}: {:?} vs {:?}",
            to_f32(a),
            to_f32(&b)
        );
    }
    // The frozen bias did not move.
    let bias = |p: &[(String, Array)]| p.iter().find(|(k, _)| k == "head.bias").unwrap().1.clone();
    assert_identical(
        &bias(&gathered(&model)),
        &bias(&reference.named_parameters()?),
        "frozen bias",
    );

    // A compiled step (model and optimizer as state) traces once and trains as the eager one.
    let mut state = (shard_net(reference.clone(), &group)?, AdamW::new(lr));
    state.1.init(&state.0)?;
    let mut eager = (shard_net(reference.clone(), &group)?, AdamW::new(lr));
    let step = compile_mut(
        |(m, o): &mut (ShardedNet, AdamW), batch: &(Array, Array)| {
            let (loss, grads) = nn::value_and_grad(mse::<ShardedNet>)(m, batch)?;
            o.update(m, &grads)?;
            Ok(loss)
        },
        None,
    );
    for _ in 0..3 {
        let compiled = step.call(&mut state, &batch)?;
        let (loss, grads) = nn::value_and_grad(mse::<ShardedNet>)(&eager.0, &batch)?;
        eager.1.update(&mut eager.0, &grads)?;
        eval((&compiled, &loss, &state.0, &eager.0))?;
        // Compiled, the elementwise steps (gelu, the loss, AdamW's update) run as fused
        // kernels, which may round differently in the last bits: a few ulps of the loss.
        let (a, b) = (compiled.item::<f32>()?, loss.item::<f32>()?);
        assert!(
            (a - b).abs() <= 8.0 * f32::EPSILON * b.abs(),
            "compiled loss {a} vs eager {b}"
        );
    }
    assert_eq!(step.stats().traces, 1);

    // compute_dtype: the gathered parameters are bfloat16 for the call, the shards and their
    // gradients stay float32; the call is the bfloat16 model's, bit for bit.
    let single = new_block()?;
    let mut half = single.clone();
    half.set_dtype(Dtype::Bfloat16, None)?;
    let cast = fully_shard(single, &group, Dtype::Bfloat16)?;
    let MaybeFullySharded::Sharded(inner) = &cast else {
        panic!("not sharded")
    };
    assert_eq!(inner.compute_dtype(), Some(Dtype::Bfloat16));
    assert_eq!(inner.module.up.weight.dtype(), Dtype::Float32);
    let x = batch.0.astype(Dtype::Bfloat16)?;
    assert_identical(
        &cast.forward(&x)?,
        &half.forward(&x)?,
        "compute_dtype forward",
    );
    let total = |m: &MaybeFullySharded<Block>, x: &Array| {
        m.forward(x)?.astype(Dtype::Float32)?.sum(None, false)
    };
    let (_, grads) = nn::value_and_grad(total)(&cast, &x)?;
    let MaybeFullySharded::Sharded(g) = &grads else {
        panic!("grads not sharded")
    };
    assert_eq!(g.module.up.weight.dtype(), Dtype::Float32);
    assert_eq!(g.module.up.weight.shape(), &[h / n, d]);
    // The bfloat16 model's gradient, sliced and averaged in bfloat16: g itself with 2 ranks,
    // within the sums' two bfloat16 roundings (2^-8 each) with 4.
    let half_total = |m: &Block, x: &Array| m.forward(x)?.astype(Dtype::Float32)?.sum(None, false);
    let (_, half_grads) = nn::value_and_grad(half_total)(&half, &x)?;
    let want = block(&half_grads.up.weight, 0, n, group.rank()).astype(Dtype::Float32)?;
    let rtol = if n == 2 { 0.0 } else { 2.0 / 256.0 };
    let close = ops::allclose(
        &g.module.up.weight,
        &want,
        ops::AllcloseOptions::default().rtol(rtol).atol(0.0),
    )?;
    assert!(close.item::<bool>()?, "compute_dtype gradient");

    // Python's other cases: a module already sharded comes back as it is, and so does one
    // without parameters to shard.
    let bare = FullyShardedModule::new(new_block()?, &group, None)?;
    let again = fully_shard(bare.clone(), &group, None)?;
    assert!(!again.is_sharded());
    // It flattens as the wrapper it holds and is rebuilt as it was.
    let rebuilt = tree_map(|a| Ok(a.clone()), &again)?;
    assert!(!rebuilt.is_sharded());
    assert_eq!(tree_structure(&rebuilt)?, tree_structure(&bare)?);
    assert_identical(
        &again.forward(&batch.0)?,
        &bare.forward(&batch.0)?,
        "already sharded",
    );
    assert!(!fully_shard(nn::Identity, &group, None)?.is_sharded());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// clip_grad_norm_sharded

#[test]
fn clip_grad_norm_sharded_equals_clip_grad_norm_with_2_ranks() {
    run(2, "child_clip");
}

#[test]
fn clip_grad_norm_sharded_equals_clip_grad_norm_with_4_ranks() {
    run(4, "child_clip");
}

#[test]
#[ignore = "a rank of clip_grad_norm_sharded_equals_clip_grad_norm_*"]
fn child_clip() -> Result<()> {
    let group = ring();
    let (n, rank) = (group.size(), group.rank());
    let keys = random::split(&random::key(1)?, 3)?;
    let shapes: [&[i32]; 3] = [&[8, 3], &[4], &[12, 2, 2]];
    let full: Vec<Array> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| random::normal(s, Default::default(), &keys.index(i as i32)?))
        .collect::<Result<_>>()?;
    let shards: Vec<Array> = full.iter().map(|g| block(g, 0, n, rank)).collect();
    let elements: usize = full.iter().map(Array::size).sum();
    // Both sum the same nonnegative squares, in different orders (per shard, then over the
    // group); a float32 sum of m nonnegative terms in any order is within (m - 1) u of the
    // exact sum (u = EPSILON / 2), so the two are within m EPSILON of each other, and the
    // norm, a square root, within half that. The clipped values inherit it through the
    // factor max_norm / norm.
    let rtol = elements as f64 * f64::from(f32::EPSILON);
    for max_norm in [0.5f32, 1e6] {
        let (clipped, norm) = utils::clip_grad_norm_sharded(&shards, max_norm, &group)?;
        let (want, want_norm) = clip_grad_norm(&full, max_norm)?;
        let (a, b) = (
            f64::from(norm.item::<f32>()?),
            f64::from(want_norm.item::<f32>()?),
        );
        assert!((a - b).abs() <= rtol * b, "norm {a} vs {b}");
        for (i, (c, w)) in clipped.iter().zip(&want).enumerate() {
            let w = block(w, 0, n, rank);
            if max_norm > 1e3 {
                // Not clipped: the factor is exactly 1 and the shards come back as they were.
                assert_identical(c, &shards[i], "unclipped");
                continue;
            }
            let close = ops::allclose(c, &w, ops::AllcloseOptions::default().rtol(rtol).atol(0.0))?;
            assert!(
                close.item::<bool>()?,
                "leaf {i}: {:?} vs {:?}",
                to_f32(c),
                to_f32(&w)
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Bad input

#[test]
fn bad_shardings_are_errors_with_2_ranks() {
    run(2, "child_errors");
}

#[track_caller]
fn err<T>(r: Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
#[ignore = "a rank of bad_shardings_are_errors_*"]
fn child_errors() -> Result<()> {
    let group = ring();
    let n = group.size();
    let g = &group;
    let python = &golden()["errors"];
    // Python's messages where Python has a check of its own.
    let msg = err(AllToShardedLinear::from_linear(
        &Linear::new(4, 7, true)?,
        None,
        g,
    ));
    assert_eq!(msg, python["all_to_sharded_odd_output"]);
    let msg = err(shard_linear(
        &Linear::new(7, 4, true)?,
        Sharding::ShardedToAll,
        None,
        g,
    ));
    assert_eq!(msg, python["sharded_to_all_odd_input"]);
    assert_eq!(err("rows".parse::<Sharding>()), python["unknown_sharding"]);
    assert_eq!(
        "sharded-to-all".parse::<Sharding>()?,
        Sharding::ShardedToAll
    );
    assert!(AllToShardedLinear::new(4, 7, None, g).is_err());
    assert!(ShardedToAllLinear::new(7, 4, None, g).is_err());
    let opts = QuantizedAllToShardedLinearOptions::default().group(g);
    assert!(QuantizedAllToShardedLinear::new(64, 7, opts).is_err());
    // Each process's input slice must be whole quantization groups: 64 / 2 = 32 is one,
    // 32 / 2 = 16 is not.
    assert!(QuantizedShardedToAllLinear::new(32 * n, 4, opts.group_size(32)).is_ok());
    let msg = err(QuantizedShardedToAllLinear::new(
        16 * n,
        4,
        opts.group_size(32),
    ));
    assert!(msg.contains("quantization groups"), "{msg}");
    let narrow =
        Linear::new(16 * n, 4, true)?.to_quantized(Some(32), Some(4), QuantizationMode::Affine)?;
    assert!(shard_linear(&narrow, Sharding::ShardedToAll, None, g).is_err());

    // Segments that do not divide, or whose parts do not divide by the group size.
    let fused = Linear::new(4, 3 * n, true)?; // n segments of 3 rows: 3 is not a multiple of n
    let msg = err(shard_linear(&fused, Sharding::AllToSharded, n, g));
    assert!(
        msg.contains("segment 0 has 3 entries") && msg.contains("`weight`"),
        "{msg}"
    );
    let msg = err(shard_linear(
        &Linear::new(4, 4 * n, true)?,
        Sharding::AllToSharded,
        3,
        g,
    ));
    assert!(msg.contains("into 3 segments"), "{msg}");
    assert!(shard_linear(&fused, Sharding::AllToSharded, 0, g).is_err());
    let even = Linear::new(4, 4 * n, true)?;
    assert!(shard_linear(&even, Sharding::AllToSharded, [1], g).is_err());
    assert!(shard_linear(&even, Sharding::AllToSharded, [f64::NAN], g).is_err());

    // shard_inplace: an axis the parameter does not have; the module is left as it was.
    let mut m = even.clone();
    let far = |_: &str, _: &Array| Some(ShardSpec::from(5));
    let msg = err(shard_inplace(&mut m, &far, None, g));
    assert!(msg.contains("along axis 5"), "{msg}");
    assert_identical(&m.weight, &even.weight, "unchanged after an error");

    // fully_shard: Python's messages for a first axis that does not divide, and a scalar.
    let msg = err(fully_shard(Linear::new(4, 2 * n + 1, true)?, g, None));
    assert!(
        msg.starts_with("Cannot shard parameter 'weight' with shape"),
        "{msg}"
    );
    #[derive(TreeNode)]
    struct Scalar {
        s: Array,
    }
    let msg = err(FullyShardedModule::new(
        Scalar {
            s: Array::from(1.0f32),
        },
        g,
        None,
    ));
    assert_eq!(msg, "Cannot shard parameter 's' because it is a scalar.");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// One process

/// Without a launcher the global group has one process: every layer holds its whole
/// parameters and computes what the plain layer computes, `sum_gradients` is the identity,
/// and `fully_shard` leaves the module as it is.
#[test]
fn alone_the_sharded_layers_are_the_plain_ones() -> Result<()> {
    let group = distributed::init(false, None)?;
    assert_eq!(group.size(), 1);
    random::seed(2)?;
    let x = random::normal(&[3, 8], Default::default(), None)?;
    let up = Linear::new(8, 12, true)?;
    let down = Linear::new(12, 8, false)?;
    let a = AllToShardedLinear::from_linear(&up, 3, None)?;
    assert_identical(&a.weight, &up.weight, "whole weight");
    assert_identical(&a.forward(&x)?, &up.forward(&x)?, "all-to-sharded alone");
    let s = ShardedToAllLinear::from_linear(&down, None, &group)?;
    let h = up.forward(&x)?;
    assert_identical(&s.forward(&h)?, &down.forward(&h)?, "sharded-to-all alone");
    assert!(s.bias.is_none());
    let y = sum_gradients(&group)?.call(&x)?;
    assert_identical(&y, &x, "sum_gradients");
    // Built from scratch: Python's shapes and its uniform initialization.
    random::seed(4)?;
    let fresh = AllToShardedLinear::new(8, 12, false, None)?;
    random::seed(4)?;
    assert_identical(
        &fresh.weight,
        &Linear::new(8, 12, false)?.weight,
        "initialization",
    );
    let qopts = QuantizedAllToShardedLinearOptions::default().group_size(32);
    let q = QuantizedAllToShardedLinear::new(64, 8, qopts)?;
    assert_eq!(q.weight.shape(), &[8, 8]);
    assert_eq!(q.trainable_mask()?, [false, false, false, false]);
    // A sharded layer keeps its group through every tree transform.
    let mapped: AllToShardedLinear = tree_map(|a| Ok(a.clone()), &a)?;
    assert!(Group::ptr_eq(mapped.group(), a.group()));
    let layer = shard_linear(&up, Sharding::AllToSharded, None, None)?;
    let mapped: ShardedLinear = tree_map(|a| Ok(a.clone()), &layer)?;
    assert!(matches!(mapped, ShardedLinear::AllToSharded(_)));

    // fully_shard leaves the module as it is; FullyShardedModule wraps it anyway (one shard
    // each), under Python's paths.
    let net = fully_shard(up.clone(), None, None)?;
    assert!(!net.is_sharded());
    let wrapped = FullyShardedModule::new(up.clone(), None, None)?;
    assert_eq!(wrapped.num_sharded_params(), 2);
    assert_identical(&wrapped.forward(&x)?, &up.forward(&x)?, "wrapped alone");
    let sharded = MaybeFullySharded::Sharded(wrapped.clone());
    let names: Vec<String> = sharded
        .named_parameters()?
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(names, ["module.weight", "module.bias"]);
    // The two variants rebuild as themselves, though both flatten to the wrapper.
    assert!(tree_map(|a| Ok(a.clone()), &sharded)?.is_sharded());
    let held = MaybeFullySharded::Unsharded(wrapped);
    assert!(!tree_map(|a| Ok(a.clone()), &held)?.is_sharded());
    Ok(())
}
