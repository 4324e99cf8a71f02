//! MLX for Rust: one dependency for arrays, transforms and pytrees.
//!
//! The facade mirrors Python's package layout:
//!
//! | Python          | Rust            | crate      |
//! |-----------------|-----------------|------------|
//! | `mlx.core`      | [`core`]        | `mlx-rs`   |
//! | `mlx.utils`     | [`utils`]       | `mlx-tree` |
//! | `mlx.nn`        | [`nn`]          | `mlx-nn`   |
//! | `mlx.optimizers`| [`optimizers`]  | `mlx-optimizers` |
//! | `mlx_lm`        | [`lm`]          | `mlx-lm`   |
//! | `mlx.launch`    | [`launch`]      | `mlx-launch` |
//!
//! ```
//! use mlx::core::{ops, Array};
//! let a = Array::from_slice(&[1i32, 2, 3], &[3])?;
//! assert_eq!(ops::sum(&a, None, false)?.item::<i32>()?, 6);
//! # Ok::<(), mlx::core::Error>(())
//! ```

// The facade only re-exports: the unsafe code lives in mlx-sys and mlx-rs only.
#![forbid(unsafe_code)]

/// Arrays, ops, devices, streams and array-level transforms (Python: `mlx.core`).
///
/// [`core::eval`] and [`core::async_eval`] take trees, as Python's `mx.eval(*trees)` does:
/// `eval(&model)`, `eval((&y, &cache))` (they are [`mlx_tree::eval`]; the array-only forms
/// stay at `mlx_rs::eval`).
pub mod core {
    pub use mlx_rs::*;
    pub use mlx_tree::{async_eval, eval, EvalArgs};
}

/// Tree utilities (Python: `mlx.utils`).
pub mod utils {
    pub use mlx_tree::*;
}

/// Layers, losses, initializers and the `Module` trait (Python: `mlx.nn`).
pub mod nn {
    pub use mlx_nn::*;
}

/// Optimizers and learning-rate schedules (Python: `mlx.optimizers`).
pub mod optimizers {
    pub use mlx_optimizers::*;
}

/// Language models: checkpoints, architectures, generation (Python: `mlx_lm`).
pub mod lm {
    pub use mlx_lm::*;
}

/// Starting a process group on this machine (Python: `mlx.launch` with local hosts).
pub mod launch {
    pub use mlx_launch::*;
}

/// Porting Python MLX code: the rules (keyword arguments, axes, overloads), `mx.fast`, the
/// `mlx.nn` constructors, which `value_and_grad`, and every op of `ops.h` (this is
/// `docs/porting.md`; its Rust examples run as doctests).
#[doc = include_str!("../docs/porting.md")]
pub mod porting {}
