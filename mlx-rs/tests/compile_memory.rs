//! Dropping a compiled function erases its cache entry: the arrays its traced graph holds
//! are released. Alone in this binary, because it reads process-wide memory counters.

use mlx_rs::compile::{compile, CompiledFn};
use mlx_rs::{memory, ops, synchronize, Array};

const N: i32 = 1024; // a 1024x1024 float32 constant: 4 MiB

fn active() -> usize {
    synchronize().unwrap();
    memory::get_active_memory().unwrap()
}

fn big_constant() -> Array {
    let c = ops::full(&[N, N], 3.0f32, None).unwrap();
    c.eval().unwrap();
    c
}

#[test]
fn dropping_a_compiled_function_releases_its_traced_graph() {
    let bytes = (N * N * 4) as usize;
    let x = ops::ones(&[N, N], None).unwrap();
    x.eval().unwrap();

    // The engine with a per-call function: after the call, nothing but MLX's compile cache
    // refers to the constant the function closed over.
    let base = active();
    let engine = CompiledFn::new(false);
    {
        let c = big_constant();
        let f = move |a: &[Array]| Ok(vec![&a[0] + &c]);
        let out = engine.call_with(std::slice::from_ref(&x), &[], &f).unwrap();
        out[0].eval().unwrap();
    }
    let held = active();
    assert!(
        held >= base + bytes,
        "the cache entry keeps the constant alive (base {base}, now {held})"
    );
    drop(engine);
    let after = active();
    assert!(
        after + bytes <= held,
        "dropping must erase the entry and free the constant (held {held}, after {after})"
    );

    // Same through `compile`: the constant lives in the closure and in the cache entry;
    // dropping the object releases both.
    let base = active();
    let c = big_constant();
    let f = compile(move |a: &[Array]| Ok(vec![&a[0] * &c]), None);
    for _ in 0..5 {
        f.call(std::slice::from_ref(&x)).unwrap()[0].eval().unwrap();
    }
    assert_eq!(f.traces(), 1);
    assert!(active() >= base + bytes);
    drop(f);
    let after = active();
    assert!(
        after < base + bytes,
        "constant still held after drop (base {base}, after {after})"
    );
}
