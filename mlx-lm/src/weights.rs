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

/// The tensors of a checkpoint by name, each remembering the file it came from so that an
/// error about it can name that file.
#[derive(Debug, Clone, Default)]
pub struct Weights {
    tensors: HashMap<String, (Array, PathBuf)>,
}

impl Weights {
    /// The tensor named `key`.
    pub fn get(&self, key: &str) -> Option<&Array> {
        self.tensors.get(key).map(|(a, _)| a)
    }

    /// Removes and returns the tensor named `key`.
    pub fn take(&mut self, key: &str) -> Option<Array> {
        self.tensors.remove(key).map(|(a, _)| a)
    }

    /// The file `key` was read from.
    pub fn file_of(&self, key: &str) -> Option<&Path> {
        self.tensors.get(key).map(|(_, p)| p.as_path())
    }

    /// Whether a tensor named `key` exists.
    pub fn contains(&self, key: &str) -> bool {
        self.tensors.contains_key(key)
    }

    /// The names, sorted.
    pub fn keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self.tensors.keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }

    /// How many tensors there are.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Adds (or replaces) a tensor, recording the file it belongs to.
    pub fn insert(&mut self, key: impl Into<String>, array: Array, file: impl Into<PathBuf>) {
        self.tensors.insert(key.into(), (array, file.into()));
    }

    /// Renames a tensor, keeping its file; `false` when there is none named `from`.
    pub fn rename(&mut self, from: &str, to: impl Into<String>) -> bool {
        match self.tensors.remove(from) {
            Some(entry) => {
                self.tensors.insert(to.into(), entry);
                true
            }
            None => false,
        }
    }

    /// Keeps the tensors for which `keep(name, array)` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &Array) -> bool) {
        self.tensors.retain(|k, (a, _)| keep(k, a));
    }

    /// Replaces each tensor by `f(name, array)`; an error names the tensor and its file.
    pub fn map(
        &mut self,
        mut f: impl FnMut(&str, &Array) -> mlx_rs::Result<Option<Array>>,
    ) -> Result<()> {
        for (key, (array, file)) in self.tensors.iter_mut() {
            if let Some(new) = f(key, array).map_err(|source| Error::Mlx {
                path: file.clone(),
                source,
            })? {
                *array = new;
            }
        }
        Ok(())
    }

    /// The tensors as a plain map.
    pub fn into_map(self) -> HashMap<String, Array> {
        self.tensors.into_iter().map(|(k, (a, _))| (k, a)).collect()
    }
}

impl std::ops::Index<&str> for Weights {
    type Output = Array;

    /// The tensor named `key`; panics when there is none (as `HashMap` indexing does).
    fn index(&self, key: &str) -> &Array {
        match self.get(key) {
            Some(a) => a,
            None => panic!("no tensor named {key}"),
        }
    }
}

/// Loads every tensor of a model directory by name (Python: the `weights` dict of
/// `mlx_lm.utils.load_model`). With `dtype`, floating-point tensors are cast to it, integer
/// ones (packed quantized weights) are kept, as `mlx_lm.convert --dtype` does.
///
/// Errors name the file and the tensor: a shard the index names that does not exist, a
/// tensor the index places in a shard that lacks it, a tensor found in two files, a file
/// MLX cannot read.
pub fn load_weights(dir: impl AsRef<Path>, dtype: Option<Dtype>) -> Result<Weights> {
    let found = WeightFiles::find(dir)?;
    let mut weights = Weights::default();
    for file in &found.files {
        let mlx = |source| Error::Mlx {
            path: file.clone(),
            source,
        };
        let (tensors, _metadata) = mlx_rs::io::load_safetensors(file).map_err(mlx)?;
        for (key, array) in tensors {
            if let Some(first) = weights.file_of(&key) {
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
            weights.insert(key, array, file.clone());
        }
    }
    if let Some((index, map)) = &found.index {
        let dir = index.parent().unwrap_or(Path::new("."));
        for (key, shard) in map {
            let shard = dir.join(shard);
            if weights.file_of(key) != Some(shard.as_path()) {
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
