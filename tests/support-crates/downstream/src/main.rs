//! A user's program, as small as one can be while still reaching MLX through every layer:
//! `mlx` → `mlx-rs` → `mlx-sys` → (mlx-c, libmlx). It prints the device it ran on and
//! `[[1, 2], [3, 4]] @ [[5, 6], [7, 8]]` computed by MLX; `tests/starts.rs` runs it.

use mlx::core::{ops, Array, Device};

fn main() -> mlx::core::Result<()> {
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    let b = Array::from_slice(&[5.0f32, 6.0, 7.0, 8.0], &[2, 2])?;
    let product = ops::matmul(&a, &b)?.to_vec::<f32>()?;
    println!("device {}", Device::default_device()?);
    println!("product {product:?}");
    Ok(())
}
