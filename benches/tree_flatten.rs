//! Flatten + unflatten of a 1,000-leaf model-shaped tree (nested derived structs, `Vec`s,
//! `Option`s, a `BTreeMap` and a `HashMap`, static data).
//!
//! `cargo bench --bench tree_flatten`; the Python counterpart (optree and mlx.utils on the
//! same structure as nested dicts/lists) is `scripts/bench/tree_flatten.py`. Compare medians
//! taken on the same machine.

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use mlx_rs::{ops, Array};
use mlx_tree::{tree_flatten, tree_leaves, tree_unflatten, TreeNode};

#[derive(TreeNode)]
struct Linear {
    weight: Array,
    bias: Option<Array>,
}

#[derive(TreeNode)]
struct Attention {
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
}

#[derive(TreeNode)]
struct Mlp {
    gate: Linear,
    up: Linear,
    down: Linear,
}

#[derive(TreeNode)]
struct Norm {
    weight: Array,
    #[tree(static)]
    eps: f32,
}

/// 20 leaves, like `layer()` in scripts/bench/tree_flatten.py.
#[derive(TreeNode)]
struct Layer {
    attn: Attention,
    mlp: Mlp,
    norms: Vec<Norm>,
    scales: BTreeMap<String, Array>,
}

#[derive(TreeNode)]
struct Embedding {
    weight: Array,
}

#[derive(TreeNode)]
struct Model {
    embed: Embedding,
    layers: Vec<Layer>,
    norm: Norm,
    lm_head: Linear,
    adapters: HashMap<String, Array>,
}

const LAYERS: usize = 49; // 49 x 20 + 20 = 1,000 leaves

fn leaf() -> Array {
    ops::zeros(&[1], None).expect("zeros")
}

fn linear(bias: bool) -> Linear {
    Linear {
        weight: leaf(),
        bias: bias.then(leaf),
    }
}

fn norm() -> Norm {
    Norm {
        weight: leaf(),
        eps: 1e-5,
    }
}

fn model() -> Model {
    Model {
        embed: Embedding { weight: leaf() },
        layers: (0..LAYERS)
            .map(|_| Layer {
                attn: Attention {
                    wq: linear(true),
                    wk: linear(true),
                    wv: linear(true),
                    wo: linear(true),
                },
                mlp: Mlp {
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

fn bench(c: &mut Criterion) {
    let model = model();
    let (leaves, def) = tree_flatten(&model).expect("flatten");
    assert_eq!(leaves.len(), 1000);
    let owned: Vec<Array> = leaves.into_iter().cloned().collect();

    let mut g = c.benchmark_group("tree_1000_leaves");
    g.bench_function("flatten", |b| {
        b.iter(|| black_box(tree_flatten(black_box(&model)).expect("flatten")))
    });
    g.bench_function("flatten+unflatten", |b| {
        b.iter(|| {
            let (leaves, def) = tree_flatten(black_box(&model)).expect("flatten");
            let leaves: Vec<Array> = leaves.into_iter().cloned().collect();
            black_box(tree_unflatten::<Model>(&def, leaves).expect("unflatten"))
        })
    });
    g.bench_function("unflatten", |b| {
        b.iter_batched(
            || owned.clone(),
            |leaves| black_box(tree_unflatten::<Model>(&def, leaves).expect("unflatten")),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("leaves", |b| {
        b.iter(|| black_box(tree_leaves(black_box(&model))))
    });
    g.bench_function("clone_1000_arrays", |b| b.iter(|| black_box(owned.clone())));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
