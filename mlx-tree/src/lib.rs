//! Pytrees for MLX in Rust: your own structs, containers and foreign types as trees of
//! [`Array`] leaves (Python: `mlx.utils`, `jax.tree_util`).
//!
//! A tree is an interior node — a struct, `Vec`, `[T; N]`, tuple, `Option`, `Box`, string-keyed
//! map, registered foreign type or dynamic [`Value`] — over `Array` leaves. Flattening a tree
//! gives its leaves in a fixed order plus a [`TreeDef`] (everything but the leaves);
//! unflattening rebuilds the same type from the two. Transforms (`compile`, `value_and_grad`,
//! `vmap`, `export`) and weights IO are built on exactly these two operations.
//!
//! # Three ways in
//!
//! All three are equal citizens: every tree function treats their nodes alike.
//!
//! 1. **Built-in impls**: `Array` (a leaf), `Vec<T>`, `[T; N]`, tuples up to 12, `()`,
//!    `Option<T>`, `Box<T>`, `BTreeMap<String, T>`, `HashMap<String, T>`.
//! 2. **`#[derive(TreeNode)]`** on your own structs (named, tuple, unit) and enums. Field
//!    attributes: `#[tree(static)]` (non-array data, part of the structure — needs
//!    [`StaticData`]), `#[tree(skip)]` (not part of the tree, rebuilt with
//!    `Default`), `#[tree(rename = "..")]` (the path segment). Generic structs work. A field that
//!    is neither a tree nor marked is a compile error.
//! 3. **The registry**: [`register::<T>(name, flatten, unflatten)`](register) for a type from a
//!    crate that does not implement [`TreeNode`] (the orphan rule forbids you to); use it as
//!    [`Registered<T>`] in typed trees or [`Value::Registered`] in dynamic ones. The registered
//!    functions are written with the same [`Flattener`]/[`Unflattener`] calls the derive
//!    generates.
//!
//! ```
//! use mlx_tree::{tree_flatten_with_path, tree_map, Array, TreeNode};
//!
//! #[derive(TreeNode)]
//! struct Linear {
//!     weight: Array,
//!     bias: Option<Array>,
//! }
//!
//! #[derive(TreeNode)]
//! struct Mlp {
//!     layers: Vec<Linear>,
//!     #[tree(static)]
//!     activation: String,
//! }
//!
//! let leaf = || Array::from_scalar(1.0f32);
//! let mlp = Mlp {
//!     layers: vec![
//!         Linear { weight: leaf(), bias: Some(leaf()) },
//!         Linear { weight: leaf(), bias: None },
//!     ],
//!     activation: "relu".into(),
//! };
//! let paths: Vec<String> = tree_flatten_with_path(&mlp)?.into_iter().map(|(p, _)| p).collect();
//! assert_eq!(paths, ["layers.0.weight", "layers.0.bias", "layers.1.weight"]);
//!
//! let doubled: Mlp = tree_map(|x| Ok(x * 2.0), &mlp)?;
//! assert_eq!(doubled.activation, "relu");
//! # Ok::<(), mlx_tree::Error>(())
//! ```
//!
//! # The data model (flatten order and key paths)
//!
//! This section is the one definition of the order; everything else refers to it.
//! Flattening is a depth-first, pre-order walk that visits children in this order:
//!
//! | node | children, in order | path segment of a child | Python equivalent |
//! |------|--------------------|-------------------------|-------------------|
//! | `Array` | — (a leaf) | — | `mx.array` |
//! | derived struct | fields in declaration order (skipped fields omitted) | field name, or `rename`; tuple-struct fields use their index (`0`, `1`) | an `nn.Module` (or dict) whose attributes were set in that order |
//! | derived enum | the active variant's fields, as for a struct | field name | the variant's fields as a dict |
//! | `Vec<T>`, `[T; N]`, slices | elements | index | `list` |
//! | tuples, `()` | elements | index | `tuple` |
//! | `BTreeMap<String, T>`, `HashMap<String, T>` | entries in **sorted key order** (never hash order) | key | `dict` with keys inserted in sorted order |
//! | `Value::Dict` | entries in insertion order | key | `dict` |
//! | `Option<T>` | `None`: nothing; `Some(x)`: `x` | none (transparent) | `x`, or the key absent |
//! | `Box<T>` | `T` itself (no node of its own) | none | `x` |
//! | registered type | what its registered `flatten` emits, in that order | the keys it gives | a dict of those keys |
//!
//! A leaf's key path joins the segments with `.`: `layers.0.attn.wq.weight`. For a structure
//! built of the Python equivalents above, the leaves come out in the same order and with the
//! same paths as Python MLX's `mlx.utils.tree_flatten` (checked against MLX 0.32.2 by the
//! golden test `tests/tree_golden.rs`), so `tree_flatten(model.parameters())` keys from Python
//! name the same leaves here. Python treats non-array values (ints, `None`) as leaves too; here
//! leaves are arrays only and everything else is static data or absent.
//!
//! # Static data
//!
//! `#[tree(static)]` fields (and `static_field` in registered types) are part of the
//! structure: two trees whose static data differs have different [`TreeDef`]s, so a compiled
//! function retraces, and `tree_map` over several trees reports the difference. A static type
//! implements [`StaticData`] (built in for primitives, `String`, `Option`, `Vec`, tuples,
//! `BTreeSet`/`BTreeMap`; `#[derive(StaticData)]` for your own types). It is stored typed, not
//! through a lossy encoding, and compared exactly as a trace needs: floats by bit pattern, so
//! `0.0` and `-0.0` differ, a NaN equals the same NaN and `Some(f32::INFINITY)` differs from
//! `None`. Small `Copy` values are stored in place, so flattening allocates nothing for them.
//! Static data is serialized (to JSON) only where a `TreeDef` is written.
//!
//! # Utilities
//!
//! [`tree_flatten`], [`tree_unflatten`], [`tree_leaves`], [`tree_structure`],
//! [`tree_flatten_with_path`], [`tree_map`], [`tree_map_n`], [`tree_map_with_path`],
//! [`tree_reduce`], [`tree_merge`], plus [`tree_map_in_place`] and [`tree_assign_leaves`] for
//! in-place updates. Structure mismatches are `Err(Error::InvalidArgument)` whose message names
//! the path where the trees differ and how (type, length, keys, static data).
//!
//! # Transforms and weights IO
//!
//! Every transform takes and returns your tree types (several arguments: a tuple):
//!
//! - [`compile(f, shapeless)`](compile) for `f: Fn(&I) -> Result<O>`: cache keyed by the
//!   argument's [`TreeDef`] (static data included) plus shapes/dtypes (ranks/dtypes when
//!   shapeless); a structure change retraces; [`Compiled::stats`] gives
//!   [`CompileStats`] (calls, traces, cache hits, signatures).
//! - [`compile_mut(f, shapeless)`](compile_mut) for `f: Fn(&mut S, &I) -> Result<O>`: the state's
//!   leaves are inputs and outputs of the graph and are written back into `S` in place after
//!   each call (an SSM or KV cache; a `(model, optimizer_state)` tuple for training).
//! - [`value_and_grad(f)`](value_and_grad) / [`grad(f)`](grad) for
//!   `f: Fn(&P, &A) -> Result<O>`: gradients w.r.t. `P`, as a `P`; the first leaf of `O` is
//!   the loss, the rest are auxiliary outputs.
//! - [`vmap(f, in_axes, out_axes)`](vmap): per-leaf axes as one axis or a [`TreeAxes`]
//!   prefix.
//! - [`export_function`] / [`import_function`]: MLX's `.mlxfn` plus the input/output
//!   `TreeDef`s in `<file>.tree.json`; [`ImportedTreeFunction::call`] takes and returns the
//!   same types.
//! - [`save_weights`] / [`load_weights`] / [`assign_weights`]: safetensors by key path;
//!   missing, unexpected and wrong-shape keys are one `Err` listing them ([`LoadWeightsOptions`]
//!   relaxes the first two).
//!
//! Static data is never traced: it is part of the compile key (a change retraces), copied
//! unchanged into gradients, shared by every vmapped example, baked into exported graphs
//! (checked on call), and not written to weights files.
//!
//! See `docs/trees.md` in the repository for when to use which way in, and KV-cache and
//! SSM-state examples through `compile_mut`.

// Pure safe Rust over mlx-rs: the unsafe code lives in mlx-sys and mlx-rs only.
#![forbid(unsafe_code)]

// Lets `#[derive(TreeNode)]` name this crate as `::mlx_tree` from inside it too.
extern crate self as mlx_tree;

mod compile;
mod def;
mod error;
mod eval;
mod export;
mod flatten;
mod io;
mod node;
mod pair;
mod prefix;
mod registry;
mod retrace;
mod stack;
mod statics;
mod transforms;
mod util;
mod value;

pub use compile::{compile, compile_mut, CompileStats, Compiled, CompiledMut};
pub use def::{NodeKind, NodeRef, TreeDef};
pub use error::{Error, Result};
pub use eval::{async_eval, eval, EvalArgs};
pub use export::{export_function, import_function, tree_signature_path, ImportedTreeFunction};
pub use flatten::{Flattener, Unflattener};
pub use io::{assign_weights, load_weights, save_weights, LoadWeightsOptions};
pub use mlx_rs::Array;
pub use node::TreeNode;
pub use registry::{is_registered, register, registered_name, Registered, RegisteredValue};
pub use retrace::{RetraceCause, RetraceReport};
pub use statics::{StaticData, StaticValue};
pub use transforms::{grad, value_and_grad, vmap, TreeAxes};
pub use util::{
    tree_assign_leaves, tree_flatten, tree_flatten_with_path, tree_leaves, tree_map,
    tree_map_in_place, tree_map_n, tree_map_with_path, tree_merge, tree_reduce, tree_structure,
    tree_unflatten, MergeFn,
};
pub use value::Value;

/// `#[derive(StaticData)]`: see [`StaticData`].
pub use mlx_tree_derive::StaticData;
/// `#[derive(TreeNode)]`: see the crate docs, "Three ways in".
pub use mlx_tree_derive::TreeNode;

/// Re-exported for code generated by `#[derive(StaticData)]`.
#[doc(hidden)]
pub use serde_json;

/// Helpers for code generated by the derives; not a public API.
#[doc(hidden)]
pub mod __private {
    use serde_json::{Map, Value as Json};

    use crate::error::{self, Result};

    pub use crate::statics::json_error;

    pub fn json_object<T>(json: &Json, fields: usize) -> Result<&Map<String, Json>> {
        match json {
            Json::Object(m) if m.len() == fields => Ok(m),
            _ => Err(json_error::<T>(json)),
        }
    }

    pub fn json_field<'j, T>(map: &'j Map<String, Json>, key: &str) -> Result<&'j Json> {
        map.get(key).ok_or_else(|| {
            error::invalid(format!(
                "static data of type `{}` has no field `{key}`",
                std::any::type_name::<T>()
            ))
        })
    }

    pub fn json_array<T>(json: &Json, len: usize) -> Result<&[Json]> {
        match json {
            Json::Array(a) if a.len() == len => Ok(a),
            _ => Err(json_error::<T>(json)),
        }
    }

    pub fn json_null<T>(json: &Json) -> Result<()> {
        json.is_null()
            .then_some(())
            .ok_or_else(|| json_error::<T>(json))
    }

    /// An enum's JSON: `"Variant"` (a unit variant) or `{"Variant": fields}`.
    pub fn json_variant<T>(json: &Json) -> Result<(&str, Option<&Json>)> {
        match json {
            Json::String(s) => Ok((s, None)),
            Json::Object(m) if m.len() == 1 => {
                let (k, v) = m.iter().next().ok_or_else(|| json_error::<T>(json))?;
                Ok((k, Some(v)))
            }
            _ => Err(json_error::<T>(json)),
        }
    }

    /// Runs `f` with enough stack for one more level of a recursive walk.
    #[inline]
    pub fn grow<R>(f: impl FnOnce() -> R) -> R {
        crate::stack::grow(f)
    }
}
