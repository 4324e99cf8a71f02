//! The weights of a model directory: `model.safetensors`, or the shards that
//! `model.safetensors.index.json` names.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use mlx_rs::{Array, Dtype};
use serde_json::Value;

use crate::config::{invalid, read_json};
use crate::error::{Error, Result};

const INDEX: &str = "model.safetensors.index.json";

/// The weight files of a model directory, found as mlx_lm finds them: with an index, the
/// shards it names (each checked to exist); without one, every `model*.safetensors`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightFiles {
    /// The files, in name order.
    pub files: Vec<PathBuf>,
    /// `model.safetensors.index.json` and its `weight_map` (tensor name to shard file name),
    /// when the directory has one.
    pub index: Option<(PathBuf, BTreeMap<String, String>)>,
}

impl WeightFiles {
    /// Finds the weight files of `dir`. A shard the index names but the directory lacks is an
    /// error naming the shard and a tensor it should hold.
    pub fn find(dir: impl AsRef<Path>) -> Result<WeightFiles> {
        let dir = dir.as_ref();
        let index_path = dir.join(INDEX);
        if index_path.exists() {
            let map = weight_map(&index_path)?;
            let mut files: Vec<PathBuf> = Vec::new();
            for (key, shard) in &map {
                let file = dir.join(shard);
                if files.contains(&file) {
                    continue;
                }
                if !file.is_file() {
                    return Err(Error::MissingShard {
                        index: index_path,
                        shard: shard.clone(),
                        key: key.clone(),
                    });
                }
                files.push(file);
            }
            files.sort();
            return Ok(WeightFiles {
                files,
                index: Some((index_path, map)),
            });
        }
        let entries = std::fs::read_dir(dir).map_err(|source| Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                name.starts_with("model") && name.ends_with(".safetensors") && p.is_file()
            })
            .collect();
        if files.is_empty() {
            return Err(Error::NoWeights {
                dir: dir.to_path_buf(),
            });
        }
        files.sort();
        Ok(WeightFiles { files, index: None })
    }
}

/// Loads every tensor of a model directory by name (Python: the `weights` dict of
/// `mlx_lm.utils.load_model`). With `dtype`, floating-point tensors are cast to it, integer
/// ones (packed quantized weights) are kept, as `mlx_lm.convert --dtype` does.
///
/// Errors name the file and the tensor: a shard the index names that does not exist, a
/// tensor the index places in a shard that lacks it, a tensor found in two files, a file
/// MLX cannot read.
pub fn load_weights(dir: impl AsRef<Path>, dtype: Option<Dtype>) -> Result<HashMap<String, Array>> {
    let found = WeightFiles::find(dir)?;
    let mut weights: HashMap<String, Array> = HashMap::new();
    let mut origin: HashMap<String, PathBuf> = HashMap::new();
    for file in &found.files {
        let mlx = |source| Error::Mlx {
            path: file.clone(),
            source,
        };
        let (tensors, _metadata) = mlx_rs::io::load_safetensors(file).map_err(mlx)?;
        for (key, array) in tensors {
            if let Some(first) = origin.get(&key) {
                return Err(invalid(
                    file,
                    &key,
                    &format!("also in {}: which one is meant is unclear", first.display()),
                ));
            }
            let array = match dtype {
                Some(d) if array.dtype().is_floating() && array.dtype() != d => {
                    array.astype(d).map_err(mlx)?
                }
                _ => array,
            };
            origin.insert(key.clone(), file.clone());
            weights.insert(key, array);
        }
    }
    if let Some((index, map)) = &found.index {
        let dir = index.parent().unwrap_or(Path::new("."));
        for (key, shard) in map {
            let shard = dir.join(shard);
            if origin.get(key) != Some(&shard) {
                return Err(Error::MissingTensor {
                    index: index.clone(),
                    shard,
                    key: key.clone(),
                });
            }
        }
    }
    Ok(weights)
}

fn weight_map(index: &Path) -> Result<BTreeMap<String, String>> {
    let value = read_json(index)?;
    let Some(Value::Object(map)) = value.get("weight_map") else {
        return Err(invalid(index, "weight_map", "missing or not an object"));
    };
    map.iter()
        .map(|(key, shard)| match shard {
            Value::String(s) if !s.contains(['/', '\\']) => Ok((key.clone(), s.clone())),
            other => Err(invalid(
                index,
                &format!("weight_map.{key}"),
                &format!("expected a file name in the model directory, found {other}"),
            )),
        })
        .collect()
}
