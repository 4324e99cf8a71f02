//! The `quantization` entry of an MLX checkpoint's config (what `mlx_lm.convert -q` writes) and
//! the per-layer decisions `mlx_lm.utils.load_model` derives from it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{invalid, ModelConfig};
use crate::error::Result;

/// Group size and bits of one affine-quantized layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantParams {
    pub group_size: i32,
    pub bits: i32,
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
/// (`"model.embed_tokens": {"group_size": 64, "bits": 8}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Quantization {
    pub defaults: QuantParams,
    pub layers: BTreeMap<String, LayerQuantization>,
    config: PathBuf,
}

impl Quantization {
    /// Reads `quantization` from a config (`None` when the model is not quantized). Only
    /// MLX's affine mode is supported; another mode, or a foreign `quantization_config`
    /// (AWQ, GPTQ, ...), is an error naming the key.
    pub fn from_config(config: &ModelConfig) -> Result<Option<Quantization>> {
        let path = config.path();
        let Some(q) = config.get("quantization").filter(|v| !v.is_null()) else {
            let foreign = config.values().get("quantization_config");
            if let Some(method) = foreign.and_then(|q| q.get("quant_method")) {
                return Err(invalid(
                    path,
                    "quantization_config.quant_method",
                    &format!("{method} checkpoints are not supported (MLX affine only)"),
                ));
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

    /// The config file this was read from.
    pub fn config_path(&self) -> &Path {
        &self.config
    }
}

fn params(path: &Path, key: &str, v: &Value) -> Result<QuantParams> {
    let int = |name: &str, default: i64| -> Result<i32> {
        match v.get(name) {
            None | Some(Value::Null) => Ok(default as i32),
            Some(x) => x
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    invalid(
                        path,
                        &format!("{key}.{name}"),
                        &format!("expected a positive integer, found {x}"),
                    )
                }),
        }
    };
    if let Some(mode) = v.get("mode").and_then(Value::as_str) {
        if mode != "affine" {
            return Err(invalid(
                path,
                &format!("{key}.mode"),
                &format!("quantization mode {mode:?} is not supported (affine only)"),
            ));
        }
    }
    Ok(QuantParams {
        group_size: int("group_size", 64)?,
        bits: int("bits", 4)?,
    })
}
