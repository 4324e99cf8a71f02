//! A first tour: arrays, arithmetic, a matmul, reductions and random numbers from an explicit
//! key. Each step mirrors a line of Python MLX (shown in the comments); the golden test
//! `tests/core_golden.rs` checks the same values against Python.
//!
//! Run: `cargo run --release --example quickstart`

use mlx::core::random::{self, UniformOptions};
use mlx::core::{ops, Array, Device};

fn main() -> mlx::core::Result<()> {
    println!(
        "MLX {} on {}",
        mlx::core::version()?,
        Device::default_device()?
    );

    // a = mx.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).reshape(2, 3)
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    // b = mx.arange(0.0, 6.0).reshape(3, 2)
    let b = ops::arange_to(6.0f32)?.reshape(&[3, 2])?;
    println!("a =\n{a}\nb =\n{b}");

    // c = a * 2.0 + 1.0
    let c = &a * 2.0 + 1.0;
    println!("a * 2 + 1 =\n{c}");

    // m = mx.matmul(c, b)
    let m = ops::matmul(&c, &b)?;
    println!("c @ b =\n{m}");

    // mx.sum(m), mx.mean(m, axis=0), mx.max(m, axis=1, keepdims=True)
    println!("sum        = {}", m.sum(None, false)?);
    println!("mean(0)    = {}", m.mean(0, false)?);
    println!("max(1, kd) = {}", m.max(1, true)?);

    // key = mx.random.key(0); mx.random.normal((2, 3), key=key)
    let key = random::key(0)?;
    let normal = random::normal(&[2, 3], Default::default(), &key)?;
    // mx.random.uniform(0.0, 1.0, (3,), key=key): low and high are keywords in Rust
    let uniform = random::uniform(&[3], UniformOptions::default().low(0.0).high(1.0), &key)?;
    println!("normal(key 0)  =\n{normal}");
    println!("uniform(key 0) = {uniform}");

    // Data comes back to Rust as a Vec (row-major, whatever the layout).
    let column_major = m.t()?.to_vec::<f32>()?;
    println!("m.T as a Vec  = {column_major:?}");
    Ok(())
}
