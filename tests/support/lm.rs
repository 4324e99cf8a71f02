//! The language-model tests' fixtures: model directories and mlx_lm's golden records.

use std::path::PathBuf;

use serde_json::Value;

use super::golden::data_dir;

/// A model directory of `tests/data/lm-models`, its weights written from their recipe.
pub fn model_dir(name: &str) -> PathBuf {
    golden_models::model_dir(name)
}

/// `tests/data/[cuda/]lm/<file>`, written by mlx_lm 0.32.2.
pub fn golden(file: &str) -> Value {
    let path = data_dir().join("lm").join(file);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(json["mlx_lm_version"], "0.32.2");
    json
}

/// A JSON list of token ids.
pub fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap() as u32)
        .collect()
}
