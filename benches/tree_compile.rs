//! Call overhead of a compiled tree function: a 100-leaf model-shaped tree of tiny arrays in,
//! a tree of the same structure out (every leaf times 2), cache hit on every call.
//!
//! `cargo bench --bench tree_compile`; the Python counterpart (`mx.compile` on the same
//! structure as nested dicts/lists) is `scripts/bench/tree_compile.py`. Besides the tree
//! call, `flat_compiled_call` measures mlx-rs's array-level compile on the same 100 arrays,
//! so the difference is what the tree layer costs. The calls build lazy outputs (no eval),
//! as Python's do; `tree_compiled_call_eval` adds evaluation.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use mlx_rs::{compile::compile as compile_flat, Array};
use mlx_tree::{compile, eval, tree_leaves, tree_map, TreeNode};

#[derive(TreeNode, Clone)]
struct Linear {
    weight: Array,
    bias: Option<Array>,
}

/// 10 leaves, like `layer()` in scripts/bench/tree_compile.py.
#[derive(TreeNode, Clone)]
struct Layer {
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    up: Linear,
    norm: Array,
    #[tree(static)]
    eps: f32,
}

#[derive(TreeNode, Clone)]
struct Model {
    layers: Vec<Layer>,
}

fn tiny() -> Array {
    Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap()
}

fn model() -> Model {
    let lin = |bias: bool| Linear {
        weight: tiny(),
        bias: bias.then(tiny),
    };
    Model {
        layers: (0..10)
            .map(|_| Layer {
                wq: lin(true),
                wk: lin(false),
                wv: lin(true),
                wo: lin(true),
                up: lin(true),
                norm: tiny(),
                eps: 1e-5,
            })
            .collect(),
    }
}

fn bench(c: &mut Criterion) {
    let m = model();
    assert_eq!(tree_leaves(&m).len(), 100);
    let double = |m: &Model| tree_map(|x| Ok(x * 2.0), m);

    let f = compile(double, None);
    eval(&f.call(&m).unwrap()).unwrap();
    c.bench_function("tree_compiled_call_100_leaves", |b| {
        b.iter(|| black_box(f.call(black_box(&m)).unwrap()))
    });
    c.bench_function("tree_compiled_call_eval_100_leaves", |b| {
        b.iter(|| {
            let out = f.call(black_box(&m)).unwrap();
            eval(&out).unwrap();
            black_box(out)
        })
    });
    let stats = f.stats();
    assert_eq!(stats.traces, 1, "the benchmark must measure cache hits");

    let flat: Vec<Array> = tree_leaves(&m).into_iter().cloned().collect();
    let g = compile_flat(
        |xs: &[Array]| Ok(xs.iter().map(|x| x * 2.0).collect()),
        None,
    );
    g.call(&flat).unwrap();
    c.bench_function("flat_compiled_call_100_arrays", |b| {
        b.iter(|| black_box(g.call(black_box(&flat)).unwrap()))
    });

    c.bench_function("tree_flatten_unflatten_100_leaves", |b| {
        b.iter(|| {
            let (leaves, def) = mlx_tree::tree_flatten(black_box(&m)).unwrap();
            let owned: Vec<Array> = leaves.into_iter().cloned().collect();
            black_box(mlx_tree::tree_unflatten::<Model>(&def, owned).unwrap())
        })
    });

    c.bench_function("tree_eager_call_100_leaves", |b| {
        b.iter(|| black_box(double(black_box(&m)).unwrap()))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
