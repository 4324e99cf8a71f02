//! What the index bounds guard costs (issue 15): reads that clamp, writes that drop and
//! dynamic slice starts that clamp (`ops::bounds`), against MLX's ops as they are
//! (`*_unchecked`), each evaluated every iteration; eager, and compiled where the guard's
//! element-wise ops can fuse.
//!
//! `cargo bench --bench index_bounds`

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use mlx::core::compile::compile;
use mlx::core::{ops, random, Array, Dtype, Result};

fn ints(low: i32, high: i32, shape: &[i32]) -> Array {
    let a = random::randint(low, high, shape, None, None)
        .unwrap()
        .astype(Dtype::Int32)
        .unwrap();
    a.eval().unwrap();
    a
}

fn floats(shape: &[i32]) -> Array {
    let a = random::normal(shape, Default::default(), None).unwrap();
    a.eval().unwrap();
    a
}

type Op = Box<dyn Fn(&[Array]) -> Result<Array>>;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("index_bounds");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    // An embedding lookup (a 32000 x 512 table): a prefill batch, and one decode token.
    let table = floats(&[32000, 512]);
    let tokens = ints(0, 32000, &[8, 128]);
    let token = ints(0, 32000, &[1, 1]);
    // A reducing scatter (1M floats, 64K updates) and a set of 256 rows into 1024 x 1024.
    let target = floats(&[1 << 20]);
    let spots = ints(0, 1 << 20, &[1 << 16]);
    let adds = floats(&[1 << 16, 1]);
    let grid = floats(&[1024, 1024]);
    let rows = ints(0, 1024, &[256]);
    let row_values = floats(&[256, 1, 1024]);
    // A KV cache write: one position into [1, 8, 4096, 128] at a computed offset.
    let cache = floats(&[1, 8, 4096, 128]);
    let new_kv = floats(&[1, 8, 1, 128]);
    let offset = Array::from_slice(&[1000i32], &[1]).unwrap();

    // SAFETY (every unchecked case below): the indices come from randint over each axis's
    // range, and the offset leaves the update inside the cache.
    let cases: Vec<(&str, Vec<Array>, Op, Op)> = vec![
        (
            "take 8x128 of 32000x512",
            vec![table.clone(), tokens],
            Box::new(|x| ops::take(&x[0], &x[1], 0)),
            Box::new(|x| unsafe { ops::take_unchecked(&x[0], &x[1], 0) }),
        ),
        (
            "take 1x1 of 32000x512",
            vec![table, token],
            Box::new(|x| ops::take(&x[0], &x[1], 0)),
            Box::new(|x| unsafe { ops::take_unchecked(&x[0], &x[1], 0) }),
        ),
        (
            "scatter_add 64K into 1M",
            vec![target, spots, adds],
            Box::new(|x| ops::scatter_add(&x[0], [&x[1]], &x[2], &[0])),
            Box::new(|x| unsafe { ops::scatter_add_unchecked(&x[0], [&x[1]], &x[2], &[0]) }),
        ),
        (
            "scatter 256 rows into 1024x1024",
            vec![grid, rows, row_values],
            Box::new(|x| ops::scatter(&x[0], [&x[1]], &x[2], &[0])),
            Box::new(|x| unsafe { ops::scatter_unchecked(&x[0], [&x[1]], &x[2], &[0]) }),
        ),
        (
            "slice_update 1 position of a 4096 cache",
            vec![cache, new_kv, offset],
            Box::new(|x| ops::slice_update(&x[0], &x[1], &x[2], &[2])),
            Box::new(|x| unsafe { ops::slice_update_unchecked(&x[0], &x[1], &x[2], &[2]) }),
        ),
    ];
    for (name, inputs, checked, unchecked) in &cases {
        g.bench_function(format!("{name}, checked"), |it| {
            it.iter(|| checked(inputs).unwrap().eval().unwrap())
        });
        g.bench_function(format!("{name}, unchecked"), |it| {
            it.iter(|| unchecked(inputs).unwrap().eval().unwrap())
        });
        let compiled_checked = compile(|x: &[Array]| Ok(vec![checked(x)?]), false);
        let compiled_unchecked = compile(|x: &[Array]| Ok(vec![unchecked(x)?]), false);
        g.bench_function(format!("{name}, checked, compiled"), |it| {
            it.iter(|| compiled_checked.call(inputs).unwrap()[0].eval().unwrap())
        });
        g.bench_function(format!("{name}, unchecked, compiled"), |it| {
            it.iter(|| compiled_unchecked.call(inputs).unwrap()[0].eval().unwrap())
        });
        assert_eq!(compiled_checked.traces(), 1, "{name}: one trace");
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
