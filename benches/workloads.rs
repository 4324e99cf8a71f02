//! Criterion benchmarks of the side-by-side workloads W1..W6 (issue 7): one benchmark per
//! workload of `benches/common/workloads.rs`, each timing one iteration.
//!
//! `cargo bench --bench workloads [-- FILTER]`. The Python comparison (same workloads with
//! Python's mlx.core, optree and jax.tree_util, alternated with these in one run, written to
//! `bench/RESULTS.md`) is `scripts/bench-compare`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

#[path = "common/workloads.rs"]
mod workloads;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("workloads");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for spec in workloads::WORKLOADS {
        let mut w = (spec.make)().expect("workload setup");
        g.bench_function(spec.name, |b| b.iter(|| w.run().expect("workload run")));
        w.check().expect("compiled workloads trace once");
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
