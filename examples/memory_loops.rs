//! Leak check: eight loops of 100,000 iterations each over the binding's main paths (eager
//! ops, compiled calls, gradients, tree round trips, safetensors through memory, error
//! paths, custom vjp rules, checked integer division). Prints each loop's RSS and MLX
//! active memory before and after, and exits with 1 if either grew by more than a bound.
//!
//! `cargo run --release --example memory_loops [-- ITERATIONS]`

use std::io::Cursor;

use mlx::core::compile::compile;
use mlx::core::transforms::{custom_vjp, grad};
use mlx::core::{io, memory, ops, Array, Result};
use mlx::utils::{tree_flatten, tree_map, tree_unflatten, Value};

/// Growth allowed per loop: allocator and page-cache noise, not a leak of 100,000 objects.
const RSS_BOUND: i64 = 32 << 20;

fn rss_bytes() -> i64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: i64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn active() -> i64 {
    memory::get_active_memory().map_or(0, |b| b as i64)
}

fn run(name: &str, iterations: usize, mut body: impl FnMut(usize) -> Result<()>) -> Result<bool> {
    // One warm-up pass fills caches (compile cache, allocator pools) before measuring.
    for i in 0..100 {
        body(i)?;
    }
    memory::clear_cache()?;
    let (rss0, act0) = (rss_bytes(), active());
    for i in 0..iterations {
        body(i)?;
    }
    memory::clear_cache()?;
    let (rss1, act1) = (rss_bytes(), active());
    let ok = rss1 - rss0 <= RSS_BOUND && act1 <= act0;
    println!(
        "{name:<28} RSS {:>8.1} -> {:>8.1} MiB   MLX active {:>8} -> {:>8} B   {}",
        rss0 as f64 / 1048576.0,
        rss1 as f64 / 1048576.0,
        act0,
        act1,
        if ok { "ok" } else { "GREW" }
    );
    Ok(ok)
}

fn main() -> Result<()> {
    let iterations: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let x = ops::ones(&[64], None)?;
    let mut all = true;

    all &= run("eager ops", iterations, |_| {
        let y = ((&x * 2.0) + 1.0).sum(None, false)?;
        y.item::<f32>().map(|_| ())
    })?;

    let f = compile(
        |a: &[Array]| Ok(vec![(&a[0] * &a[0]).sum(None, false)?]),
        false,
    );
    all &= run("compiled calls", iterations, |_| {
        f.call(std::slice::from_ref(&x))?[0]
            .item::<f32>()
            .map(|_| ())
    })?;

    let g = grad(
        |a: &[Array]| Ok(vec![(&a[0] * &a[0]).sum(None, false)?]),
        None,
    );
    all &= run("gradients", iterations, |_| {
        g(std::slice::from_ref(&x))?[0].eval()
    })?;

    let tree = Value::List(vec![Value::Array(x.clone()), Value::Array(x.clone())]);
    all &= run("tree map and round trip", iterations, |_| {
        let mapped: Value = tree_map(|a| Ok(a + 1.0), &tree)?;
        let (leaves, def) = tree_flatten(&mapped)?;
        let leaves: Vec<Array> = leaves.into_iter().cloned().collect();
        let back: Value = tree_unflatten(&def, leaves)?;
        drop(back);
        Ok(())
    })?;

    let weights = std::collections::HashMap::from([("w".to_string(), x.clone())]);
    all &= run("safetensors in memory", iterations / 10, |_| {
        let mut buf = io::save_safetensors_to_writer(Cursor::new(Vec::new()), &weights, None)?;
        buf.set_position(0);
        let (loaded, _) = io::load_safetensors_from_reader(buf)?;
        loaded["w"].eval()
    })?;

    all &= run("error paths", iterations, |_| {
        let bad = x.reshape(&[7, 7]);
        assert!(bad.is_err());
        assert!(ops::zeros(&[100_000, 1_000_000], None).is_err());
        Ok(())
    })?;

    let c = custom_vjp(
        |a: &[Array]| Ok(vec![a[0].clone()]),
        |_: &[Array], cot: &[Array], _: &[Array]| Ok(vec![&cot[0] * 3.0]),
    )?;
    let h = grad(
        move |a: &[Array]| Ok(vec![c.call(a)?[0].sum(None, false)?]),
        None,
    );
    all &= run("custom vjp", iterations, |_| {
        h(std::slice::from_ref(&x))?[0].eval()
    })?;

    let ints = ops::arange_to(64)?;
    all &= run("checked integer division", iterations, |i| {
        ops::floor_divide(&ints, (i % 3) as i32)?.eval()
    })?;

    if !all {
        eprintln!("memory grew in at least one loop");
        std::process::exit(1);
    }
    Ok(())
}
