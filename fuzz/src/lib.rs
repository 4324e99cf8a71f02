//! A fuzz harness for MLX's Rust bindings that runs on the stable toolchain: every file
//! loader (`.safetensors`, `.npy`, `.gguf`, `.mlxfn`), the `TreeDef` JSON reader, weights
//! loaded into a model, and shape/index arguments of the ops.
//!
//! - [`targets`]: one function per input kind, bytes in, `Ok`/`Err` out; whatever it loads
//!   is evaluated (crashes can wait until evaluation), and invariants between loaders are
//!   asserted (a broken one is a finding like a crash).
//! - [`mutate`]: deterministic mutation from a seed ([`rng`]).
//! - [`runner`]: campaigns that run each input in a child process (the `mlx-fuzz`
//!   executable started with `child`), so a crash or hang is caught, saved and checked
//!   alone, and the campaign goes on.
//!
//! `cargo run --profile ci -p mlx-fuzz -- run --target all --iterations 20000`, or
//! `scripts/fuzz`; `tests/bounded.rs` is the bounded run CI does. The seed corpus is in
//! `fuzz/corpus/<target>/`; `mlx-fuzz seed` rewrites its Rust-made part (`rust-*`, and the
//! `shapes` programs) and `fuzz/gen_corpus.py` its Python-made part (`py-*`). Both are
//! byte-for-byte repeatable except `.mlxfn` files, which hold array ids.

// Safe Rust only: the harness drives the bindings the way a user does.
#![forbid(unsafe_code)]

pub mod child;
pub mod mutate;
pub mod rng;
pub mod runner;
pub mod targets;

use std::path::PathBuf;

/// The committed seed corpus.
pub fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Where findings are written by default (ignored by git).
pub fn crash_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crashes")
}
