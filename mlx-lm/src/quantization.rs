//! The `quantization` entry of an MLX checkpoint's config (what `mlx_lm.convert -q` writes) and
//! the per-layer decisions `mlx_lm.utils.load_model` derives from it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mlx_rs::ops::QuantizationMode;
use serde_json::Value;

use crate::config::{invalid, ModelConfig};
use crate::error::Result;

/// Group size, bits and mode of one quantized layer (Python: the `{"group_size", "bits",
/// "mode"}` entries of a config's `quantization`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantParams {
    pub group_size: i32,
    pub bits: i32,
    pub mode: QuantizationMode,
}

impl QuantParams {
    /// Affine quantization (integer codes, a scale and a bias per group).
    pub const fn affine(group_size: i32, bits: i32) -> QuantParams {
        QuantParams {
            group_size,
            bits,
            mode: QuantizationMode::Affine,
        }
    }

    /// `mode` with its default group size and bits where not given (Python:
    /// `_defaults_for_mode`: affine 64 and 4, mxfp4 32 and 4, nvfp4 16 and 4, mxfp8 32 and 8).
    pub fn for_mode(mode: QuantizationMode, group_size: Option<i32>, bits: Option<i32>) -> Self {
        let (g, b) = match mode {
            QuantizationMode::Affine => (64, 4),
            QuantizationMode::Mxfp4 => (32, 4),
            QuantizationMode::Nvfp4 => (16, 4),
            QuantizationMode::Mxfp8 => (32, 8),
        };
        QuantParams {
            group_size: group_size.unwrap_or(g),
            bits: bits.unwrap_or(b),
            mode,
        }
    }

    /// Why MLX 0.32.2's `mx.quantize` would reject these parameters, if it would: affine takes
    /// 2, 3, 4, 5, 6 or 8 bits in groups of 32, 64 or 128; each floating-point mode exactly one
    /// pair (mxfp4 4 bits in 32, nvfp4 4 in 16, mxfp8 8 in 32).
    pub fn unsupported(&self) -> Option<String> {
        let QuantParams {
            group_size,
            bits,
            mode,
        } = *self;
        let fits = match mode {
            QuantizationMode::Affine => {
                [32, 64, 128].contains(&group_size) && [2, 3, 4, 5, 6, 8].contains(&bits)
            }
            _ => {
                let only = QuantParams::for_mode(mode, None, None);
                (group_size, bits) == (only.group_size, only.bits)
            }
        };
        (!fits).then(|| {
            format!(
                "{bits} bits in groups of {group_size} is not a {} quantization MLX supports",
                mode.as_str()
            )
        })
    }
}

/// The mode named by a config's `"mode"` string (Python's `mx.quantize` modes).
pub(crate) fn parse_mode(mode: &str) -> Option<QuantizationMode> {
    [
        QuantizationMode::Affine,
        QuantizationMode::Mxfp4,
        QuantizationMode::Nvfp4,
        QuantizationMode::Mxfp8,
    ]
    .into_iter()
    .find(|m| m.as_str() == mode)
}

/// What the config says about one layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerQuantization {
    /// Left in floating point (`"path": false`).
    Float,
    /// Quantized with these parameters.
    Quantized(QuantParams),
}

/// A checkpoint's quantization: defaults plus per-layer entries keyed by module path
/// (`"model.embed_tokens": {"group_size": 64, "bits": 8}`). A per-layer entry stands on its
/// own, as Python passes it to `to_quantized` as it is: without `mode` it is affine, without
/// `group_size` or `bits` its mode's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantization {
    pub defaults: QuantParams,
    pub layers: BTreeMap<String, LayerQuantization>,
    config: PathBuf,
}

impl Quantization {
    /// Reads `quantization` from a config (`None` when the model is not quantized): MLX's
    /// affine mode and its floating-point modes (`mxfp4`, `nvfp4`, `mxfp8`), as
    /// `mlx_lm.convert` writes them, and the `quantization_config` of checkpoints that ship
    /// in an MLX mode (`quant_method` `mxfp4`, as GPT-OSS does, or `mxfp8`). Another
    /// `quant_method` (AWQ, GPTQ, ...), a mode MLX does not have, or a group size and bits
    /// its mode does not take is an error naming the key.
    pub fn from_config(config: &ModelConfig) -> Result<Option<Quantization>> {
        let path = config.path();
        let Some(q) = config.get("quantization").filter(|v| !v.is_null()) else {
            let foreign = config.values().get("quantization_config");
            if let Some(method) = foreign.and_then(|q| q.get("quant_method")) {
                // mlx_lm's `load_model`: these methods are MLX modes, the packed tensors
                // loaded as they are.
                let mode = match method.as_str() {
                    Some("mxfp4") => QuantizationMode::Mxfp4,
                    Some("mxfp8") => QuantizationMode::Mxfp8,
                    _ => {
                        return Err(invalid(
                            path,
                            "quantization_config.quant_method",
                            &format!(
                                "{method} checkpoints are not supported (MLX quantization \
                                 modes only: affine, mxfp4, nvfp4, mxfp8)"
                            ),
                        ))
                    }
                };
                config.declare_neutral(&["quantization_config"]);
                return Ok(Some(Quantization {
                    defaults: QuantParams::for_mode(mode, None, None),
                    layers: BTreeMap::new(),
                    config: path.to_path_buf(),
                }));
            }
            if foreign.is_some_and(Value::is_null) {
                config.declare_neutral(&["quantization_config"]);
            }
            // Another `quantization_config` stays unread: a float checkpoint with one is
            // not what it claims to be.
            return Ok(None);
        };
        // mlx_lm writes its `quantization` here too, for transformers' sake: the same entries.
        config.declare_neutral(&["quantization_config"]);
        let Value::Object(map) = q else {
            return Err(invalid(path, "quantization", "expected an object"));
        };
        let defaults = params(path, "quantization", q)?;
        let mut layers = BTreeMap::new();
        for (key, value) in map {
            match value {
                Value::Bool(false) => {
                    layers.insert(key.clone(), LayerQuantization::Float);
                }
                Value::Object(_) => {
                    let p = params(path, &format!("quantization.{key}"), value)?;
                    layers.insert(key.clone(), LayerQuantization::Quantized(p));
                }
                _ => {}
            }
        }
        Ok(Some(Quantization {
            defaults,
            layers,
            config: path.to_path_buf(),
        }))
    }

    /// Per-layer parameters only (a GGUF file's quantized tensors, each with its own), read
    /// from `file`; a layer without an entry is float.
    pub(crate) fn for_layers(
        layers: BTreeMap<String, LayerQuantization>,
        file: &Path,
    ) -> Quantization {
        Quantization {
            defaults: QuantParams::for_mode(QuantizationMode::Affine, None, None),
            layers,
            config: file.to_path_buf(),
        }
    }

    /// The config file this was read from.
    pub fn config_path(&self) -> &Path {
        &self.config
    }
}

fn params(path: &Path, key: &str, v: &Value) -> Result<QuantParams> {
    let int = |name: &str| -> Result<Option<i32>> {
        match v.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| {
                    invalid(
                        path,
                        &format!("{key}.{name}"),
                        &format!("expected a positive integer, found {x}"),
                    )
                }),
        }
    };
    let mode = match v.get("mode") {
        None | Some(Value::Null) => QuantizationMode::Affine,
        Some(m) => m.as_str().and_then(parse_mode).ok_or_else(|| {
            invalid(
                path,
                &format!("{key}.mode"),
                &format!("{m} is not an MLX quantization mode (affine, mxfp4, nvfp4, mxfp8)"),
            )
        })?,
    };
    // mlx_lm 0.32.2 writes it for nvfp4 switch layers quantized with `--global-scale`; MLX
    // 0.32.2's `gather_qmm` takes no such scale.
    if v.get("global_scale").and_then(Value::as_bool) == Some(true) {
        return Err(invalid(
            path,
            &format!("{key}.global_scale"),
            "nvfp4 global scales are not supported (MLX 0.32.2's gather_qmm takes none)",
        ));
    }
    let p = QuantParams::for_mode(mode, int("group_size")?, int("bits")?);
    match p.unsupported() {
        Some(why) => Err(invalid(path, key, &why)),
        None => Ok(p),
    }
}

/// One of `mlx_lm.convert`'s mixed-bits recipes (`--quant-predicate mixed_3_6`; Python:
/// `mixed_quant_predicate_builder`, after llama.cpp's Q4_K_M): affine, the low bits for most
/// layers, the high bits for the output head and, in the first and last eighth of the layers
/// and every third layer between, for the value and down projections. It replaces the
/// architecture's own choices (`quant_predicate`) as mlx_lm's does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MixedQuantRecipe {
    pub low_bits: i32,
    pub high_bits: i32,
    /// `--q-group-size` as given: `None` is the mode's default, and mlx_lm records it as
    /// `null` in each layer's config entry.
    pub group_size: Option<i32>,
    /// Where a module path holds its layer index (`model.layers.N.mlp.down_proj`: 2).
    pub layer_location: usize,
    /// The model's layers (Python: `len(model.layers)`).
    pub num_layers: usize,
}

/// mlx_lm's `QUANT_RECIPES` and their (low, high) bits.
pub const QUANT_RECIPES: [(&str, i32, i32); 4] = [
    ("mixed_2_6", 2, 6),
    ("mixed_3_4", 3, 4),
    ("mixed_3_6", 3, 6),
    ("mixed_4_6", 4, 6),
];

impl MixedQuantRecipe {
    /// The recipe `name` for a model whose parameters are at `paths` (flattened, as
    /// `tree_flatten` gives them): the layer index's place is read off the first module path
    /// with `down_proj` in it (mlx_lm's `down_keys[0]`), the number of layers is that of the
    /// indices under the same prefix.
    pub fn new(name: &str, group_size: Option<i32>, paths: &[String]) -> Result<Self> {
        let (_, low_bits, high_bits) = QUANT_RECIPES
            .iter()
            .find(|(n, _, _)| *n == name)
            .copied()
            .ok_or_else(|| {
            crate::Error::InvalidArgument(format!("Invalid quant recipe {name}"))
        })?;
        let down = paths
            .iter()
            .filter_map(|p| p.find("down_proj").map(|at| (p, at)))
            .map(|(p, at)| {
                // The module path: up to the end of the component holding `down_proj`.
                let end = p[at..].find('.').map_or(p.len(), |e| at + e);
                &p[..end]
            })
            .next()
            .ok_or_else(|| {
                crate::Error::InvalidArgument(
                    "Model does not have expected keys for mixed quant.".into(),
                )
            })?;
        let parts: Vec<&str> = down.split('.').collect();
        // Python's loop leaves the last place when no part is a number.
        let layer_location = parts
            .iter()
            .position(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
            .unwrap_or(parts.len() - 1);
        let prefix = &parts[..layer_location];
        let layers: std::collections::BTreeSet<&str> = paths
            .iter()
            .filter_map(|p| {
                let parts: Vec<&str> = p.split('.').collect();
                (parts.len() > layer_location && parts[..layer_location] == *prefix)
                    .then(|| parts[layer_location])
            })
            .collect();
        Ok(MixedQuantRecipe {
            low_bits,
            high_bits,
            group_size,
            layer_location,
            num_layers: layers.len(),
        })
    }

    /// The parameters of the layer at module path `path` (Python: `mixed_quant_predicate`).
    pub fn params(&self, path: &str) -> Result<QuantParams> {
        let parts: Vec<&str> = path.split('.').collect();
        let index = match parts.get(self.layer_location) {
            None => 0,
            Some(k) => k.parse::<i64>().map_err(|_| {
                crate::Error::InvalidArgument(format!(
                    "mixed quantization: `{path}` has no layer index at place {} (mlx_lm: \
                     invalid literal for int() with base 10: '{k}')",
                    self.layer_location
                ))
            })?,
        };
        let n = self.num_layers as i64;
        let use_more_bits =
            index < n / 8 || index >= 7 * n / 8 || (index - n / 8).rem_euclid(3) == 2;
        let high = ((path.contains("v_proj")
            || path.contains("v_a_proj")
            || path.contains("v_b_proj")
            || path.contains("down_proj"))
            && use_more_bits)
            || path.contains("lm_head");
        Ok(QuantParams::for_mode(
            QuantizationMode::Affine,
            self.group_size,
            Some(if high { self.high_bits } else { self.low_bits }),
        ))
    }
}
