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
/// Everything of `mlx_rs`'s root, listed by name (no glob), with one deliberate difference:
/// [`core::eval`] and [`core::async_eval`] take trees, as Python's `mx.eval(*trees)` does
/// (`eval(&model)`, `eval((&y, &cache))`, `eval([&a, &b])`, `eval(&arrays[..])`); they are
/// [`mlx_tree::eval`] and [`mlx_tree::async_eval`]. `mlx_rs::eval` and `mlx_rs::async_eval`,
/// which take any iterator of `&Array`, are not re-exported here, so no name is shadowed; an
/// iterator of arrays is evaluated as `eval(iter.collect::<Vec<_>>())`. `tests/names.rs` checks
/// that this list stays complete when `mlx_rs` gains an item.
pub mod core {
    pub use mlx_rs::{
        clear_streams, cuda, device_info, metal, synchronize, version, with_device, with_stream,
        Array, ArrayElement, Device, DeviceInfoValue, DeviceType, Dtype, Error, ItemType, Result,
        Stream, ThreadLocalStream,
    };
    pub use mlx_rs::{
        compile, distributed, export, fast, fft, graph, io, linalg, memory, ops, random, transforms,
    };
    pub use mlx_rs::{half, num_complex, sys};
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

// The pages of docs/ link to each other as `[text][page.md]`, with definitions at the end of
// each page that GitHub follows. Markdown takes the first definition of a label, so these,
// placed before each page, send rustdoc to the page's module instead.
macro_rules! guide_links {
    () => {
        "\n[getting-started.md]: crate::guide::getting_started\n\
         [porting.md]: crate::porting\n\
         [trees.md]: crate::guide::trees\n\
         [nn.md]: crate::guide::nn\n\
         [language-models.md]: crate::guide::language_models\n\
         [cuda.md]: crate::guide::cuda\n\
         [distributed.md]: crate::guide::distributed\n\
         [threads.md]: crate::guide::threads\n\
         [reliability.md]: crate::guide::reliability\n\
         [testing.md]: crate::guide::testing\n\
         [performance.md]: crate::guide::performance\n\
         [fine-tuning.md]: crate::guide::fine_tuning\n\
         [server.md]: crate::guide::server\n\
         [cuda.md#threads-on-a-cuda-build]: crate::guide::cuda#threads-on-a-cuda-build\n\
         [distributed.md#performance]: crate::guide::distributed#performance\n\
         [getting-started.md#prebuilt-mlx-where-a-binary-finds-it]: crate::guide::getting_started#prebuilt-mlx-where-a-binary-finds-it\n\
         [performance.md#language-models-cpu]: crate::guide::performance#language-models-cpu\n\
         [reliability.md#fuzzing]: crate::guide::reliability#fuzzing\n\
         [testing.md#golden-data]: crate::guide::testing#golden-data\n\n"
    };
}

/// Porting Python MLX code: the rules (keyword arguments, axes, overloads), `mx.fast`, the
/// `mlx.nn` constructors, which `value_and_grad`, and every op of `ops.h` (this is
/// `docs/porting.md`; its Rust examples run as doctests).
#[doc = guide_links!()]
#[doc = include_str!("../docs/porting.md")]
pub mod porting {}

/// The user guide: the pages of `docs/` (their Rust examples run as doctests).
pub mod guide {
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/getting-started.md")]
    pub mod getting_started {}
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/trees.md")]
    pub mod trees {}
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/nn.md")]
    pub mod nn {}
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/language-models.md")]
    pub mod language_models {}
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/fine-tuning.md")]
    pub mod fine_tuning {}
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/server.md")]
    pub mod server {}
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/cuda.md")]
    pub mod cuda {}
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/distributed.md")]
    pub mod distributed {}
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/threads.md")]
    pub mod threads {}
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/reliability.md")]
    pub mod reliability {}
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/testing.md")]
    pub mod testing {}
    #[doc = guide_links!()]
    #[doc = include_str!("../docs/performance.md")]
    pub mod performance {}
}

// The README's examples compile and run as doctests; it is not part of the rendered docs.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
