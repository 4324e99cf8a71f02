//! Pytrees for MLX in Rust.
//!
//! This crate will hold the tree node trait, its derive, the `TypeId`-keyed registry,
//! `TreeDef` and the tree-aware transforms (see DESIGN.md, section Trees). It is part of the
//! workspace from the start so the dependency direction mlx-sys -> mlx-rs -> mlx-tree -> mlx
//! is fixed.

pub use mlx_rs::{Array, Error, Result};
