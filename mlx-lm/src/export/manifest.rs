//! `export.json`: what a program needs, besides the `.mlxfn` graphs, to call them: the order,
//! shapes and dtypes of their inputs and outputs, the cache's initial values and tree, the
//! traced prompt lengths and the model's config.

use std::path::Path;

use mlx_rs::{Array, Dtype};
use mlx_tree::TreeDef;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The `format` of an `export.json`.
pub const FORMAT: &str = "mlx-lm.export";
/// The version of the layout described here.
pub const VERSION: u32 = 1;
/// The name of the manifest in an export directory.
pub const MANIFEST_FILE: &str = "export.json";

/// One array of a function's inputs or outputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeafSpec {
    /// `tokens`, `logits`, `cache.<path>` or the weight's parameter path.
    pub name: String,
    /// The shape; `-1` where the traces differ (the tokens' length).
    pub shape: Vec<i64>,
    /// Python MLX's name of the dtype (`float32`, `uint32`, ...).
    pub dtype: String,
    /// The value every element of a cache array starts with (an empty cache is constant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<f64>,
}

impl LeafSpec {
    pub(crate) fn of(name: String, a: &Array) -> LeafSpec {
        LeafSpec {
            name,
            shape: a.shape().iter().map(|&d| i64::from(d)).collect(),
            dtype: a.dtype().name().to_string(),
            fill: None,
        }
    }

    /// The dtype, parsed.
    pub fn dtype(&self) -> Result<Dtype> {
        dtype_named(&self.dtype)
    }

    /// Checks that `a` fits this spec (`-1` matches any size); the error names the input.
    pub fn check(&self, a: &Array, position: usize) -> Result<()> {
        let fits_shape = a.ndim() == self.shape.len()
            && a.shape()
                .iter()
                .zip(&self.shape)
                .all(|(&d, &s)| s == -1 || i64::from(d) == s);
        if !fits_shape || a.dtype().name() != self.dtype {
            return Err(Error::InvalidArgument(format!(
                "exported model: input {position} (`{}`) must be {} {:?} but is {} {:?}",
                self.name,
                self.dtype,
                self.shape,
                a.dtype(),
                a.shape()
            )));
        }
        Ok(())
    }
}

pub(crate) fn dtype_named(name: &str) -> Result<Dtype> {
    Dtype::ALL
        .into_iter()
        .find(|d| d.name() == name)
        .ok_or_else(|| Error::InvalidArgument(format!("exported model: unknown dtype {name:?}")))
}

/// How the weights reach the graphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightsMode {
    /// Inputs after the cache, in the manifest's order, kept in `weights.safetensors` under
    /// their parameter paths.
    Inputs,
    /// Constants inside each `.mlxfn` file: self-contained graphs, the weights in every file.
    Constants,
}

/// One exported function: its file and the token lengths it was traced for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionSpec {
    /// The `.mlxfn` file, relative to the manifest.
    pub file: String,
    /// The lengths `L` of the tokens `[1, L]` it takes, one trace each.
    pub lengths: Vec<usize>,
}

/// The manifest of an export directory (`export.json`).
///
/// Both functions take `tokens` (`uint32 [1, L]`), then the cache arrays, then (with
/// [`WeightsMode::Inputs`]) the weights, all positionally in the order of
/// [`inputs`](Self::inputs); they return `logits` (`[1, vocab]`, the last position's) and
/// the cache arrays after the tokens, in the order of [`outputs`](Self::outputs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub model_type: String,
    /// The dtype the model computes in.
    pub dtype: String,
    pub vocab_size: i32,
    /// The positions the cache holds: prompt and generated tokens together.
    pub max_positions: usize,
    /// Where the weights are.
    pub weights: WeightsMode,
    /// `weights.safetensors` (with [`WeightsMode::Inputs`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights_file: Option<String>,
    /// The prompt's chunks.
    pub prefill: FunctionSpec,
    /// One token at a time.
    pub decode: FunctionSpec,
    /// Every input, in order: `tokens`, the cache, the weights.
    pub inputs: Vec<LeafSpec>,
    /// Every output, in order: `logits`, the cache.
    pub outputs: Vec<LeafSpec>,
    /// How many inputs (after `tokens`) and outputs (after `logits`) are the cache.
    pub cache_leaves: usize,
    /// The cache's tree (mlx-tree's `TreeDef`: layer kinds, leaf order), to rebuild the
    /// crate's `Vec<LayerCache>` from the arrays.
    pub cache_tree: TreeDef,
    /// The token ids that end a generation (the config's `eos_token_id`s).
    pub eos_token_ids: Vec<u32>,
    /// The model's `config.json`, when the export was given one.
    #[serde(default)]
    pub config: Map<String, Value>,
}

impl Manifest {
    /// Reads and checks `dir/export.json`.
    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let m: Manifest = serde_json::from_str(&text).map_err(|source| Error::Json {
            path: path.clone(),
            source,
        })?;
        let invalid = |key: &str, message: String| Error::Invalid {
            path: path.clone(),
            key: key.into(),
            message,
        };
        if m.format != FORMAT || m.version != VERSION {
            return Err(invalid(
                "format",
                format!(
                    "{} version {} is not {FORMAT} version {VERSION}",
                    m.format, m.version
                ),
            ));
        }
        let weights = m.inputs.len().checked_sub(1 + m.cache_leaves);
        if weights.is_none() || m.outputs.len() != 1 + m.cache_leaves {
            return Err(invalid(
                "cache_leaves",
                format!(
                    "{} cache arrays do not fit {} inputs and {} outputs",
                    m.cache_leaves,
                    m.inputs.len(),
                    m.outputs.len()
                ),
            ));
        }
        if m.cache_tree.num_leaves() != m.cache_leaves {
            return Err(invalid(
                "cache_tree",
                format!(
                    "the tree has {} leaves, not {}",
                    m.cache_tree.num_leaves(),
                    m.cache_leaves
                ),
            ));
        }
        if (m.weights == WeightsMode::Inputs) != m.weights_file.is_some()
            || (m.weights == WeightsMode::Constants && weights != Some(0))
        {
            return Err(invalid(
                "weights",
                "weights as inputs need a weights_file, constants no weight inputs".into(),
            ));
        }
        if m.decode.lengths != [1] || m.prefill.lengths.iter().any(|&l| l < 2) {
            return Err(invalid(
                "prefill",
                "decode is traced for one token, prefill for two or more".into(),
            ));
        }
        for (i, leaf) in m.inputs.iter().chain(&m.outputs).enumerate() {
            leaf.dtype()
                .map_err(|e| invalid(&format!("inputs/outputs {i}"), e.to_string()))?;
            let cache = leaf.name.starts_with("cache.");
            if cache && leaf.fill.is_none() && i < m.inputs.len() {
                return Err(invalid(
                    &leaf.name,
                    "a cache array without its initial value".into(),
                ));
            }
        }
        Ok(m)
    }

    /// The cache inputs (their initial values in `fill`).
    pub fn cache(&self) -> &[LeafSpec] {
        &self.inputs[1..1 + self.cache_leaves]
    }

    /// The weight inputs (none when the weights are constants).
    pub fn weight_inputs(&self) -> &[LeafSpec] {
        &self.inputs[1 + self.cache_leaves..]
    }
}
