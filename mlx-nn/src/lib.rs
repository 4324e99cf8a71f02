//! Neural-network building blocks for MLX in Rust (Python: `mlx.nn`).
//!
//! # Modules: two traits
//!
//! A module is a plain struct deriving [`TreeNode`](mlx_tree::TreeNode): its array fields
//! are its parameters, named by their key paths exactly as Python's `tree_flatten(model.
//! parameters())` names them, so weights written by Python load by name.
//!
//! - [`Module`] is what every tree of parameters can do — Python's `nn.Module` methods
//!   `parameters()`, `trainable_parameters()`, `freeze`/`unfreeze`, `train`/`eval` (as
//!   [`Module::train`]/[`Module::eval_mode`]: `eval` is what computes arrays),
//!   `load_weights`/`save_weights`, `update` (as [`Module::update_parameters`]). It is
//!   implemented for every tree; you never implement it.
//! - [`Forward`] is the call, Python's `module(x)`: layers implement it and so do your models,
//!   so calling any of them reads `model.forward(&x)` (or `x.apply(&model)`, see [`Apply`]).
//!   Layers with several inputs (attention with a mask, RoPE with an offset) have an inherent
//!   `forward` with those inputs instead; see [`Forward`].
//!
//! The only `update` a training loop writes is the optimizer's,
//! `optimizer.update(&mut model, &grads)`.
//!
//! # `value_and_grad`: which one
//!
//! One shape everywhere: `value_and_grad(f)` returns a function of `(&params, &args)` that
//! gives `(f(params, args), grads)` with `grads` of the parameters' own type.
//!
//! - [`mlx_tree::value_and_grad`] (also `mlx::utils::value_and_grad`): **the** one, for any
//!   tree of parameters — a model, a tuple of arrays, a registered type.
//! - [`value_and_grad`] (this crate, Python's `nn.value_and_grad(model, fn)`): the same, for a
//!   model with frozen parameters: those are held constant and get zero gradients. For a
//!   model without frozen parameters it *is* the tree one.
//! - `mlx_rs::transforms::value_and_grad(f, argnums)`: the low-level form over `&[Array]` and
//!   argument positions (Python's `mx.value_and_grad(fn, argnums)` on plain arrays), which the
//!   other two are built on.
//!
//! ```
//! use mlx_nn::{value_and_grad, Forward, Linear, Module, RMSNorm};
//! use mlx_rs::{ops, Array, Result};
//! use mlx_tree::TreeNode;
//!
//! #[derive(TreeNode)]
//! struct Block {
//!     norm: RMSNorm,
//!     proj: Linear,
//! }
//!
//! impl Forward for Block {
//!     fn forward(&self, x: &Array) -> Result<Array> {
//!         self.proj.forward(&self.norm.forward(x)?)
//!     }
//! }
//!
//! let block = Block { norm: RMSNorm::new(8, None)?, proj: Linear::new(8, 8, false)? };
//! let names: Vec<String> = block.named_parameters()?.into_iter().map(|(p, _)| p).collect();
//! assert_eq!(names, ["norm.weight", "proj.weight"]);
//! let x = ops::ones(&[2, 8], None)?;
//! assert_eq!(block.forward(&x)?.shape(), &[2, 8]);
//! let loss = |m: &Block, x: &Array| m.forward(x)?.square()?.mean(None, false);
//! let (_, grads) = value_and_grad(loss)(&block, &x)?;
//! assert_eq!(grads.proj.weight.shape(), &[8, 8]);
//! # Ok::<(), mlx_rs::Error>(())
//! ```

// Pure safe Rust over mlx-rs and mlx-tree: the unsafe code lives in mlx-sys and mlx-rs only.
#![forbid(unsafe_code)]

// The file layout follows Python's `mlx/nn/`: `layers/<module>.rs` for each module of
// `mlx/nn/layers/` (`layers/base/` is `base.py`, `Module`), and `init.rs`, `losses.rs`,
// `utils.rs` beside them. The other files here are Rust's own: the call trait, the
// quantized-or-not layer enum and the kept transposed weight.
mod forward;
pub mod init;
mod kept_transpose;
mod layers;
mod lora;
mod lora_embedding;
pub mod losses;
mod maybe_quantized;
pub mod utils;

pub use forward::{Apply, Forward};
pub use layers::activations::*;
pub use layers::base::any_module::{register_training_hook, AnyModule, ParameterEntry};
pub use layers::base::{Frozen, LoadWeightsOptions, Module};
pub use layers::containers::*;
pub use layers::convolution::*;
pub use layers::convolution_transpose::*;
pub use layers::distributed::{
    fully_shard, shard_inplace, shard_linear, sum_gradients, AllToShardedLinear,
    FullyShardedModule, MaybeFullySharded, QuantizedAllToShardedLinear,
    QuantizedAllToShardedLinearOptions, QuantizedShardedToAllLinear,
    QuantizedShardedToAllLinearOptions, Segments, ShardGroup, ShardPredicate, ShardSpec,
    ShardableLinear, ShardedLinear, ShardedToAllLinear, Sharding, ShardingRule, SumGradients,
};
pub use layers::dropout::*;
pub use layers::embedding::*;
pub use layers::linear::*;
pub use layers::normalization::*;
pub use layers::pooling::*;
pub use layers::positional_encoding::*;
pub use layers::quantized::{
    quantize, ClassPredicate, PadRows, QQLinear, QQLinearOptions, QuantizeModelOptions,
    QuantizedEmbedding, QuantizedLinear,
};
pub use layers::recurrent::*;
pub use layers::transformer::*;
pub use layers::upsample::*;
pub use lora::{LoRALinear, LoRAOptions, NoAdapter};
pub use lora_embedding::LoRAEmbedding;
pub use maybe_quantized::{
    MaybeQuantized, MaybeQuantizedEmbedding, MaybeQuantizedLinear, Quantizable,
};
pub use utils::{average_gradients, value_and_grad, AverageGradientsOptions};
// The conv layers take the conv ops' keyword arguments, so one import serves both.
pub use mlx_rs::ops::ConvOptions;
