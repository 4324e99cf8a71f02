//! `config.json` (plus `generation_config.json`'s stop tokens), read as `mlx_lm.utils.load_config`
//! reads it.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// `model_type`s mlx_lm serves with another architecture's code (`MODEL_REMAPPING` in
/// mlx_lm 0.32.2, the entries whose target is an architecture of this crate's scope).
const MODEL_REMAPPING: &[(&str, &str)] = &[
    ("mistral", "llama"),
    ("iquestcoder", "llama"),
    ("xverse", "llama"),
];

/// mlx_lm writes non-finite floats in a config as `{"__float__": "Infinity"}`, so the file
/// stays valid JSON.
const FLOAT_TAG: &str = "__float__";

/// A model's configuration: `config.json` as JSON values, with `generation_config.json`'s
/// `eos_token_id` taking precedence as in mlx_lm.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("mlx-lm-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("config.json"), r#"{"model_type": "mistral", "rope_theta": 1e6}"#)?;
/// let config = mlx_lm::load_config(&dir)?;
/// assert_eq!(config.model_type(), "llama"); // mlx_lm serves mistral with its llama code
/// assert_eq!(config.float("rope_theta")?, Some(1e6));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ModelConfig {
    path: PathBuf,
    values: Map<String, Value>,
    model_type: String,
    /// Where these values sit in the file (`text_config.`), for error messages.
    prefix: String,
}

/// Reads `<dir>/config.json` and, when present, `<dir>/generation_config.json` (Python:
/// `mlx_lm.utils.load_config`). As there, a `generation_config.json` that does not parse is
/// ignored: it only ever contributes stop tokens.
pub fn load_config(dir: impl AsRef<Path>) -> Result<ModelConfig> {
    let path = dir.as_ref().join("config.json");
    let Value::Object(mut values) = read_json(&path)? else {
        return Err(invalid(&path, "", "the file is not a JSON object"));
    };
    let generation = dir.as_ref().join("generation_config.json");
    if generation.exists() {
        if let Ok(Value::Object(g)) = read_json(&generation) {
            // Python's `if eos := g.get("eos_token_id", False)`: 0, [] and null do not count.
            if let Some(eos) = g.get("eos_token_id").filter(|v| truthy(v)) {
                values.insert("eos_token_id".into(), eos.clone());
            }
        }
    }
    let model_type = match values.get("model_type") {
        Some(Value::String(t)) => t.clone(),
        Some(_) => return Err(invalid(&path, "model_type", "not a string")),
        None => return Err(invalid(&path, "model_type", "missing")),
    };
    let model_type = MODEL_REMAPPING
        .iter()
        .find(|(from, _)| *from == model_type)
        .map_or(model_type.clone(), |(_, to)| (*to).to_string());
    Ok(ModelConfig {
        path,
        values,
        model_type,
        prefix: String::new(),
    })
}

impl ModelConfig {
    /// The architecture: `model_type` after mlx_lm's remapping (`mistral` is `llama`).
    pub fn model_type(&self) -> &str {
        &self.model_type
    }

    /// The `config.json` this was read from, for error messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A raw value (`None` when absent).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// All values, `eos_token_id` from `generation_config.json` included.
    pub fn values(&self) -> &Map<String, Value> {
        &self.values
    }

    /// A number (`None` when absent or null), mlx_lm's tagged non-finite floats included.
    pub fn float(&self, key: &str) -> Result<Option<f64>> {
        match self.values.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => as_float(v).map(Some).ok_or_else(|| {
                invalid(
                    &self.path,
                    &self.key(key),
                    &format!("expected a number, found {v}"),
                )
            }),
        }
    }

    /// A non-negative integer (`None` when absent or null).
    pub fn usize(&self, key: &str) -> Result<Option<usize>> {
        match self.values.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| {
                    invalid(
                        &self.path,
                        &self.key(key),
                        &format!("expected a non-negative integer, found {v}"),
                    )
                }),
        }
    }

    /// A boolean (`None` when absent or null).
    pub fn bool(&self, key: &str) -> Result<Option<bool>> {
        match self.values.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(invalid(
                &self.path,
                &self.key(key),
                &format!("expected true or false, found {v}"),
            )),
        }
    }

    /// `key` as it appears in the file (`text_config.hidden_size`).
    pub(crate) fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// The object under `key` (`text_config`) as a config of its own, errors naming
    /// `key.<name>`; `model_type` is this config's.
    pub fn section(&self, key: &str) -> Option<ModelConfig> {
        match self.values.get(key) {
            Some(Value::Object(values)) => Some(ModelConfig {
                path: self.path.clone(),
                values: values.clone(),
                model_type: self.model_type.clone(),
                prefix: format!("{}{key}.", self.prefix),
            }),
            _ => None,
        }
    }

    /// A required positive integer that fits an `i32` (array dimensions).
    pub fn dim(&self, key: &str) -> Result<i32> {
        self.dim_or(key, None)
    }

    /// A positive integer that fits an `i32`, `default` when absent or null.
    pub fn dim_or(&self, key: &str, default: Option<i32>) -> Result<i32> {
        match self.usize(key)? {
            Some(n) => i32::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
                invalid(
                    &self.path,
                    &self.key(key),
                    &format!("{n} is not a valid size"),
                )
            }),
            None => default.ok_or_else(|| invalid(&self.path, &self.key(key), "missing")),
        }
    }

    /// A number, `default` when absent or null.
    pub fn float_or(&self, key: &str, default: f64) -> Result<f64> {
        Ok(self.float(key)?.unwrap_or(default))
    }

    /// A boolean, `default` when absent or null.
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool> {
        Ok(self.bool(key)?.unwrap_or(default))
    }

    /// The stop tokens: `eos_token_id` as one id or a list (empty when absent).
    pub fn eos_token_ids(&self) -> Result<Vec<u32>> {
        let bad = |v: &Value| invalid(&self.path, "eos_token_id", &format!("not a token id: {v}"));
        let id = |v: &Value| {
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad(v))
        };
        match self.values.get("eos_token_id") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(ids)) => ids.iter().map(id).collect(),
            Some(v) => Ok(vec![id(v)?]),
        }
    }
}

fn as_float(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Object(o) if o.len() == 1 => match o.get(FLOAT_TAG)?.as_str()? {
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            "NaN" => Some(f64::NAN),
            _ => None,
        },
        _ => None,
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

pub(crate) fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| Error::Json {
        path: path.to_path_buf(),
        source,
    })
}

pub(crate) fn invalid(path: &Path, key: &str, message: &str) -> Error {
    Error::Invalid {
        path: path.to_path_buf(),
        key: key.to_string(),
        message: message.to_string(),
    }
}
