//! What guarding integer division costs (issue 15): `ops::floor_divide` and `ops::remainder`
//! of two 1M-element int32 arrays, guarded (zero divisors and `MIN / -1` defined) against
//! MLX's kernel as it is (`*_unchecked`), evaluated each iteration, eager and compiled.
//!
//! `cargo bench --bench int_division`

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use mlx::core::compile::compile;
use mlx::core::{ops, random, Array, Dtype};

fn operands() -> (Array, Array) {
    let n = 1 << 20;
    let a = random::randint(-1000, 1000, &[n], None, None).unwrap();
    // Divisors without zeros, so the unchecked kernel is safe to time.
    let b = random::randint(1, 100, &[n], None, None).unwrap();
    let (a, b) = (
        a.astype(Dtype::Int32).unwrap(),
        b.astype(Dtype::Int32).unwrap(),
    );
    mlx::core::eval((&a, &b)).unwrap();
    (a, b)
}

fn bench(c: &mut Criterion) {
    let (a, b) = operands();
    let mut g = c.benchmark_group("int_division");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    type Op = fn(&Array, &Array) -> mlx::core::Result<Array>;
    let cases: [(&str, Op); 4] = [
        ("floor_divide guarded", |a, b| ops::floor_divide(a, b)),
        // SAFETY: `b` has no zero (randint from 1) and `a` no MIN.
        ("floor_divide unchecked", |a, b| unsafe {
            ops::floor_divide_unchecked(a, b)
        }),
        ("remainder guarded", |a, b| ops::remainder(a, b)),
        // SAFETY: as above.
        ("remainder unchecked", |a, b| unsafe {
            ops::remainder_unchecked(a, b)
        }),
    ];
    for (name, op) in cases {
        g.bench_function(name, |it| it.iter(|| op(&a, &b).unwrap().eval().unwrap()));
    }
    let guarded = compile(
        |x: &[Array]| Ok(vec![ops::floor_divide(&x[0], &x[1])?]),
        false,
    );
    g.bench_function("floor_divide guarded, compiled", |it| {
        it.iter(|| {
            guarded.call(&[a.clone(), b.clone()]).unwrap()[0]
                .eval()
                .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
