//! Exported models: a model's prefill and decode step as MLX `.mlxfn` graphs, with the cache
//! as inputs and outputs, so that a program without this crate — Python's
//! `mx.import_function`, or C++ through MLX — runs the model (what `torch.export` of a
//! Hugging Face model with its cache does for PyTorch).
//!
//! [`export_model`] writes a directory:
//!
//! - `decode.mlxfn`: one step of one token, `tokens` `uint32 [1, 1]`;
//! - `prefill.mlxfn`: the same step traced for each of
//!   [`ExportOptions::prefill_lengths`] (`[1, L]`); a prompt is fed in chunks of those lengths
//!   (the largest that fits first), the rest one token at a time through the decode step;
//! - `weights.safetensors`: the parameters under their mlx_lm paths
//!   ([`WeightsMode::Inputs`], the default);
//! - `export.json` ([`Manifest`]): the inputs in order (`tokens`, the cache arrays, the
//!   weights) and outputs (`logits` `[1, vocab]` of the last position, the cache arrays) with
//!   shapes and dtypes, each cache array's initial value, the cache's `TreeDef`, the model's
//!   config and its end-of-sequence ids.
//!
//! Every function is `(tokens, *cache, *weights) -> (logits, *cache)`: the cache's buffers,
//! write positions (`offset`) and recurrent states go in and come back, so the caller keeps
//! the state and the graph holds none.
//!
//! **Fixed shapes.** The graphs are exported with `shapeless = false`. MLX 0.32.2's shapeless
//! replay asks every primitive for its output shape from the new inputs, even at the traced
//! shapes, and our step fails it twice over (`tests/lm_export.rs` shows both): at another
//! length the first to fail is the reshape of the token ids to rows (`Rows::fold`: `[1, L]`
//! to `[L]`, L fixed in the primitive; `[reshape] Cannot reshape array of size 8 into shape
//! (4)`), followed by the other reshapes between rows and heads and the `Arange`s sized by
//! the length or the capacity (positions, mask slots); and at the traced length itself the
//! `Slice` primitive, which has no output-shape rule in MLX 0.32.2, from the CPU fallback of
//! MLX's own `fast::rope` (its rotate-half; 12 of them in qwen3's decode step, the step's
//! only slices). A shapeless decode step would need a rotary embedding without slices and
//! positions and masks without `Arange`, in every architecture: the prompt lengths are
//! covered by several traces instead, and the cache by a fixed capacity
//! ([`ExportOptions::max_positions`]).
//!
//! **Weights as inputs** (the default): one `weights.safetensors` serves both graphs and all
//! their traces (MLX shares a constant only between the traces of one file), the graphs stay
//! small (tens of kilobytes a trace for the test models), and the same graphs run any weights
//! of the same shapes and dtypes (a fine-tune, a fused adapter). The cost is the caller's: it
//! passes the weights with every call. [`WeightsMode::Constants`] bakes them into each file
//! instead (self-contained, at the weights' size per file).
//!
//! MLX 0.32.2's `export_function` writes a constant's data as `arr.data()` for
//! `arr.nbytes()` bytes, ignoring its strides (mlx/export.cpp): an evaluated transposed or
//! broadcast view is read back as the row-major array it is not. In Python, on the wheel:
//!
//! ```python
//! w = mx.arange(12, dtype=mx.float32).reshape(4, 3).T; mx.eval(w)
//! mx.export_function("t.mlxfn", lambda x: [x + w], mx.zeros((3, 4)))
//! mx.import_function("t.mlxfn")(mx.zeros((3, 4)))[0][0]  # [0, 1, 2, 3], not [0, 3, 6, 9]
//! ```
//!
//! Our layers keep such a view (`weight.T`, evaluated once for inference), which made the
//! constants' graphs generate wrong tokens; the export hands the traced model fresh
//! row-contiguous parameters instead (`tests/lm_export.rs` shows both).
//!
//! [`ExportedModel`] runs an export directory from Rust without the architecture's code;
//! `examples/exported_model.py` does the same in Python with `mx.import_function` only.

mod manifest;
mod runner;

use std::path::Path;

use mlx_rs::{ops, Array, Dtype};
use mlx_tree::{tree_assign_leaves, tree_flatten, tree_flatten_with_path, tree_unflatten};

use crate::cache::{cache_slots, LayerCache};
use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::model::{LanguageModel, Model};

pub use manifest::{FunctionSpec, LeafSpec, Manifest, WeightsMode, FORMAT, MANIFEST_FILE, VERSION};
pub use runner::{ExportedFunction, ExportedModel};

/// The file names of an export directory.
pub const DECODE_FILE: &str = "decode.mlxfn";
pub const PREFILL_FILE: &str = "prefill.mlxfn";
pub const WEIGHTS_FILE: &str = "weights.safetensors";

/// How to export a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportOptions {
    /// The positions the exported cache holds, prompt and generated tokens together (rounded
    /// up to a multiple of 256, as generation sizes its buffers). Default 4096.
    pub max_positions: usize,
    /// The prompt chunk lengths the prefill is traced for (each at least 2; one token goes
    /// through the decode step; those above the capacity are left out). Default: the powers
    /// of two from 2 to 512, so any prompt length is a sum of traced chunks.
    pub prefill_lengths: Vec<usize>,
    /// Whether the weights are inputs or constants of the graphs (see the module docs).
    pub weights: WeightsMode,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            max_positions: 4096,
            prefill_lengths: (1..=9).map(|p| 1 << p).collect(),
            weights: WeightsMode::Inputs,
        }
    }
}

/// Exports `model`'s prefill and decode step with its cache to `dir` (created if needed; the
/// files above are overwritten). `config`, when given, is copied into the manifest with its
/// end-of-sequence ids. Returns the manifest written.
///
/// The graph is traced on the current default device and keeps it; a model loaded on a CUDA
/// GPU with its custom kernels on traces them into the graph, which MLX cannot write: export
/// such a model with [`KernelOptions::none`](crate::KernelOptions::none) or on the CPU.
pub fn export_model<M: LanguageModel + ?Sized>(
    model: &M,
    config: Option<&ModelConfig>,
    dir: impl AsRef<Path>,
    options: &ExportOptions,
) -> Result<Manifest> {
    let dir = dir.as_ref();
    let invalid = Error::InvalidArgument;
    let capacity = cache_slots(options.max_positions.max(1))?;
    if let Some(&l) = options.prefill_lengths.iter().find(|&&l| l < 2) {
        return Err(invalid(format!(
            "prefill length {l}: each must be at least 2 (one token is the decode step)"
        )));
    }
    // Chunks longer than the cache could never be fed.
    let mut lengths: Vec<usize> = options
        .prefill_lengths
        .iter()
        .copied()
        .filter(|&l| l <= capacity as usize)
        .collect();
    lengths.sort_unstable();
    lengths.dedup();
    if lengths.is_empty() {
        return Err(invalid(format!(
            "no prefill length among {:?} fits the {capacity} positions",
            options.prefill_lengths
        )));
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;

    let cache = model.make_cache(1, capacity)?;
    let (cache_leaves, cache_def) = tree_flatten(&cache)?;
    let cache_named = tree_flatten_with_path(&cache)?;
    let params: Model = model.clone_model();
    let weights: Vec<(String, Array)> = tree_flatten_with_path(&params)?
        .into_iter()
        .map(|(name, a)| (name, a.clone()))
        .collect();
    let as_inputs = options.weights == WeightsMode::Inputs;
    let n_cache = cache_leaves.len();
    // As constants, the graphs must hold only row-contiguous arrays: MLX 0.32.2 writes a
    // constant's buffer as it lies in memory, whatever its strides (see the module docs), and
    // a layer's kept `weight.T` (an evaluated transposed view, mlx_nn's `KeptTranspose`)
    // would be read back untransposed. A fresh row-contiguous array for every parameter (the
    // same buffer where it already is one) makes the layers transpose inside the graph.
    let constants: Option<Model> = if as_inputs {
        None
    } else {
        let fresh = weights
            .iter()
            .map(|(_, a)| ops::contiguous(a, false))
            .collect::<mlx_rs::Result<Vec<Array>>>()?;
        mlx_tree::eval(&fresh[..])?;
        let mut m = params.clone();
        tree_assign_leaves(&mut m, fresh)?;
        Some(m)
    };

    // The step every trace runs: the cache and (as inputs) the weights rebuilt from the flat
    // arguments, one forward, the last position's logits and the cache's arrays out.
    let step = |xs: &[Array]| -> mlx_rs::Result<Vec<Array>> {
        let (tokens, rest) = xs
            .split_first()
            .ok_or_else(|| mlx_rs::Error::InvalidArgument("no tokens".into()))?;
        let (cache_xs, weight_xs) = rest.split_at(n_cache.min(rest.len()));
        let mut cache: Vec<LayerCache> = tree_unflatten(&cache_def, cache_xs.to_vec())?;
        let logits = match &constants {
            None => {
                let mut m = params.clone();
                tree_assign_leaves(&mut m, weight_xs.to_vec())?;
                m.forward(tokens, Some(&mut cache))?
            }
            Some(m) => m.forward(tokens, Some(&mut cache))?,
        };
        let logits = logits.index((.., -1, ..))?;
        let (out, def) = tree_flatten(&cache)?;
        if def != cache_def {
            return Err(mlx_rs::Error::InvalidArgument(
                "the model changed its cache's structure in a step".into(),
            ));
        }
        Ok(std::iter::once(logits)
            .chain(out.into_iter().cloned())
            .collect())
    };

    let args = |length: usize| -> Result<Vec<Array>> {
        let tokens = ops::zeros(&[1, length as i32], Dtype::Uint32)?;
        let mut xs = vec![tokens];
        xs.extend(cache_leaves.iter().map(|&a| a.clone()));
        if as_inputs {
            xs.extend(weights.iter().map(|(_, a)| a.clone()));
        }
        Ok(xs)
    };
    let traced = |e: mlx_rs::Error, what: &str| {
        Error::InvalidArgument(format!(
            "exporting the {what} of {}: {e}",
            model.model_type()
        ))
    };
    mlx_rs::export::export_function(dir.join(DECODE_FILE), step, &args(1)?, false)
        .map_err(|e| traced(e, "decode step"))?;
    {
        let exporter = mlx_rs::export::exporter(dir.join(PREFILL_FILE), step, false)?;
        for &l in &lengths {
            exporter
                .call(&args(l)?)
                .map_err(|e| traced(e, &format!("prefill of {l} tokens")))?;
        }
        exporter.close();
    }

    // The outputs' shapes and dtypes, from the step run lazily (nothing is computed).
    let outputs = step(&args(1)?)?;
    let mut inputs = vec![LeafSpec {
        name: "tokens".into(),
        shape: vec![1, -1],
        dtype: Dtype::Uint32.name().into(),
        fill: None,
    }];
    for (path, a) in &cache_named {
        let mut spec = LeafSpec::of(format!("cache.{path}"), a);
        spec.fill = Some(constant_value(a, path)?);
        inputs.push(spec);
    }
    if as_inputs {
        inputs.extend(
            weights
                .iter()
                .map(|(name, a)| LeafSpec::of(name.clone(), a)),
        );
        let named: Vec<(&String, &Array)> = weights.iter().map(|(n, a)| (n, a)).collect();
        mlx_rs::io::save_safetensors(dir.join(WEIGHTS_FILE), named, None)?;
    }
    let mut out_specs = vec![LeafSpec::of("logits".into(), &outputs[0])];
    out_specs.extend(
        cache_named
            .iter()
            .zip(&outputs[1..])
            .map(|((path, _), a)| LeafSpec::of(format!("cache.{path}"), a)),
    );
    let manifest = Manifest {
        format: FORMAT.into(),
        version: VERSION,
        model_type: model.model_type().into(),
        dtype: model.dtype().name().into(),
        vocab_size: model.vocab_size(),
        max_positions: capacity as usize,
        weights: options.weights,
        weights_file: as_inputs.then(|| WEIGHTS_FILE.to_string()),
        prefill: FunctionSpec {
            file: PREFILL_FILE.into(),
            lengths,
        },
        decode: FunctionSpec {
            file: DECODE_FILE.into(),
            lengths: vec![1],
        },
        inputs,
        outputs: out_specs,
        cache_leaves: n_cache,
        cache_tree: cache_def.clone(),
        eos_token_ids: match config {
            Some(c) => c.eos_token_ids()?,
            None => Vec::new(),
        },
        config: config.map(|c| c.values().clone()).unwrap_or_default(),
    };
    let path = dir.join(MANIFEST_FILE);
    let json = serde_json::to_string_pretty(&manifest).map_err(|source| Error::Json {
        path: path.clone(),
        source,
    })?;
    std::fs::write(&path, json).map_err(|source| Error::Io { path, source })?;
    Ok(manifest)
}

/// The one value every element of an empty cache's array holds; an array that is not
/// constant cannot be described by the manifest (no architecture makes one).
fn constant_value(a: &Array, path: &str) -> Result<f64> {
    let a = a.astype(Dtype::Float32)?;
    let lo = ops::min(&a, None, false)?.item::<f32>()?;
    let hi = ops::max(&a, None, false)?.item::<f32>()?;
    if lo != hi {
        return Err(Error::InvalidArgument(format!(
            "the empty cache's `{path}` is not constant ({lo} to {hi}): it cannot be exported"
        )));
    }
    Ok(f64::from(lo))
}
