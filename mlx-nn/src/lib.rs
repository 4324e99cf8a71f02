//! Neural-network building blocks for MLX in Rust (Python: `mlx.nn`).
//!
//! A module is a plain struct deriving [`TreeNode`](mlx_tree::TreeNode): its array fields
//! are its parameters, named by their key paths exactly as Python's `tree_flatten(model.
//! parameters())` names them, so weights written by Python load by name. Everything a Python
//! `nn.Module` does — `parameters()`, `trainable_parameters()`, `freeze`, `update`,
//! `load_weights`, `train`/`eval` — is the [`Module`] trait, implemented for every tree.
//!
//! ```
//! use mlx_nn::{Linear, Module, RMSNorm};
//! use mlx_rs::{ops, Array, Result};
//! use mlx_tree::TreeNode;
//!
//! #[derive(TreeNode)]
//! struct Block {
//!     norm: RMSNorm,
//!     proj: Linear,
//! }
//!
//! impl Block {
//!     fn forward(&self, x: &Array) -> Result<Array> {
//!         self.proj.forward(&self.norm.forward(x)?)
//!     }
//! }
//!
//! let block = Block { norm: RMSNorm::new(8, None)?, proj: Linear::new(8, 8, false)? };
//! let names: Vec<String> = block.named_parameters()?.into_iter().map(|(p, _)| p).collect();
//! assert_eq!(names, ["norm.weight", "proj.weight"]);
//! let y = block.forward(&ops::ones(&[2, 8], None)?)?;
//! assert_eq!(y.shape(), &[2, 8]);
//! # Ok::<(), mlx_rs::Error>(())
//! ```

// Pure safe Rust over mlx-rs and mlx-tree: the unsafe code lives in mlx-sys and mlx-rs only.
#![forbid(unsafe_code)]

mod activations;
pub mod init;
mod layers;
pub mod losses;
mod module;

pub use activations::*;
pub use layers::*;
pub use module::{value_and_grad, Frozen, LoadOptions, Module};
