//! Prompt-cache files (Python: `mlx_lm.models.cache.save_prompt_cache` /
//! `load_prompt_cache`): a processed prompt's cache in a `.safetensors` file, in mlx_lm's
//! layout, so files move between the two in both directions.
//!
//! mlx_lm's layout: the arrays of each layer's `state`, flattened as `"<layer>.<i>"` (a list
//! inside a state adds a level: `"<layer>.0.<j>"`), and as metadata, flattened the same way,
//! `[metadata, class names, scalars]`. Scalars (offsets, sizes) are stored as arrays and
//! listed in `scalars` as `(key, "scalar" | "string" | "none")`, after a first `""`.
//!
//! | class | state |
//! |---|---|
//! | `KVCache` | keys, values (buffers, 256-position steps), offset |
//! | `RotatingKVCache` | keys, values, offset, keep, max_size, idx (ring position) |
//! | `ArraysCache` | [conv, recurrent], left_padding, lengths |

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use mlx_rs::{ops, Array, Dtype};

use crate::cache::{ArraysCache, Cache, KvCache, LayerCache, RotatingKvCache};
use crate::error::{Error, Result};

/// mlx_lm's `KVCache.step`: buffers grow in steps of this many positions.
const STEP: i32 = 256;

/// Saves `cache` with string `metadata` (Python: `save_prompt_cache(file, cache, metadata)`).
/// Key/value caches are written as mlx_lm holds them (the buffer up to the next 256-position
/// step past the offset), sliding-window caches as the window in temporal order; mlx_lm's
/// `load_prompt_cache` reads either.
pub fn save_prompt_cache(
    path: impl AsRef<Path>,
    cache: &[LayerCache],
    metadata: &BTreeMap<String, String>,
) -> Result<()> {
    let path = path.as_ref();
    let mlx = |source| Error::Mlx {
        path: path.to_path_buf(),
        source,
    };
    let mut arrays: Vec<(String, Array)> = Vec::new();
    let mut meta: HashMap<String, String> = HashMap::new();
    for (k, v) in metadata {
        meta.insert(format!("0.{k}"), v.clone());
    }
    let mut scalars: Vec<(String, &str)> = Vec::new();
    for (i, layer) in cache.iter().enumerate() {
        if matches!(layer, LayerCache::Kv(c) if c.left_padding.is_some()) {
            return Err(Error::InvalidArgument(format!(
                "cache layer {i}: a left-padded (batch) key/value cache cannot be saved as a \
                 prompt cache"
            )));
        }
        let (class, state) = layer_state(layer).map_err(mlx)?;
        meta.insert(format!("1.{i}"), class.to_string());
        for (key, entry) in state {
            let key = format!("{i}.{key}");
            match entry {
                Entry::Array(a) => arrays.push((key, a)),
                Entry::Scalar(v) => {
                    arrays.push((key.clone(), Array::from_scalar(v)));
                    scalars.push((key, "scalar"));
                }
                Entry::None => {
                    arrays.push((
                        key.clone(),
                        Array::from_slice::<f32>(&[], &[0]).map_err(mlx)?,
                    ));
                    scalars.push((key, "none"));
                }
            }
        }
    }
    meta.insert("2.0".into(), String::new());
    for (j, (key, kind)) in scalars.into_iter().enumerate() {
        meta.insert(format!("2.{}.0", j + 1), key);
        meta.insert(format!("2.{}.1", j + 1), kind.to_string());
    }
    mlx_rs::io::save_safetensors(path, arrays.iter().map(|(k, a)| (k, a)), Some(&meta)).map_err(mlx)
}

/// Loads a prompt cache and its metadata (Python: `load_prompt_cache(file,
/// return_metadata=True)`). Its buffers are as the file holds them;
/// [`generate_step_with_cache`](crate::generate_step_with_cache) checks them against the
/// model and makes room for the generation.
pub fn load_prompt_cache(path: impl AsRef<Path>) -> Result<(Cache, BTreeMap<String, String>)> {
    let path = path.as_ref();
    let (mut arrays, meta) = mlx_rs::io::load_safetensors(path).map_err(|source| Error::Mlx {
        path: path.to_path_buf(),
        source,
    })?;
    let invalid = |key: &str, message: String| Error::Invalid {
        path: path.to_path_buf(),
        key: key.to_string(),
        message,
    };
    let mut metadata = BTreeMap::new();
    let mut classes: BTreeMap<usize, String> = BTreeMap::new();
    let mut scalar_kinds: HashMap<String, String> = HashMap::new();
    let mut scalar_pairs: BTreeMap<usize, (Option<String>, Option<String>)> = BTreeMap::new();
    for (key, value) in &meta {
        let parse = |s: &str| {
            s.parse::<usize>()
                .map_err(|_| invalid(key, "not a prompt-cache metadata key".into()))
        };
        match key.split_once('.') {
            Some(("0", name)) => {
                metadata.insert(name.to_string(), value.clone());
            }
            Some(("1", i)) => {
                classes.insert(parse(i)?, value.clone());
            }
            Some(("2", rest)) => match rest.split_once('.') {
                Some((j, "0")) => {
                    scalar_pairs.entry(parse(j)?).or_default().0 = Some(value.clone())
                }
                Some((j, "1")) => {
                    scalar_pairs.entry(parse(j)?).or_default().1 = Some(value.clone())
                }
                _ => {}
            },
            _ => {}
        }
    }
    for (key, kind) in scalar_pairs.into_values() {
        if let (Some(key), Some(kind)) = (key, kind) {
            scalar_kinds.insert(key, kind);
        }
    }
    if classes.is_empty() {
        return Err(invalid(
            "1",
            "no cache classes in the metadata: not a prompt cache of mlx_lm 0.32's format".into(),
        ));
    }
    let mut cache = Vec::with_capacity(classes.len());
    for (n, (i, class)) in classes.iter().enumerate() {
        if *i != n {
            return Err(invalid(&format!("1.{n}"), "missing layer class".into()));
        }
        let mut take = |name: &str| -> Result<Option<Array>> {
            let key = format!("{i}.{name}");
            let array = arrays
                .remove(&key)
                .ok_or_else(|| invalid(&key, format!("the {class} state has no entry {key}")))?;
            Ok(match scalar_kinds.get(&key).map(String::as_str) {
                Some("none") => None,
                _ => Some(array),
            })
        };
        let layer = match class.as_str() {
            "KVCache" => {
                let (keys, values, offset) = (take("0")?, take("1")?, take("2")?);
                let (Some(keys), Some(values), Some(offset)) = (keys, values, offset) else {
                    return Err(invalid(&format!("{i}.0"), "an empty KVCache (no prompt was processed)".into()));
                };
                let offset = scalar(path, &format!("{i}.2"), &offset)?;
                check_rank4(path, &format!("{i}.0"), &keys, &values)?;
                if offset < 0 || offset > keys.shape()[2] {
                    return Err(invalid(&format!("{i}.2"), format!("offset {offset} outside a buffer of {}", keys.shape()[2])));
                }
                LayerCache::Kv(KvCache {
                    keys,
                    values,
                    offset: Array::from_scalar(offset),
                    left_padding: None,
                    writes_in_place: false,
                    prefix_attention: false,
                })
            }
            "RotatingKVCache" => {
                let entries = ["0", "1", "2", "3", "4", "5"].map(&mut take);
                let [keys, values, offset, keep, max_size, idx] = entries;
                let (Some(keys), Some(values)) = (keys?, values?) else {
                    return Err(invalid(&format!("{i}.0"), "an empty RotatingKVCache (no prompt was processed)".into()));
                };
                let number = |k: &str, a: Result<Option<Array>>| -> Result<i32> {
                    let a = a?.ok_or_else(|| invalid(&format!("{i}.{k}"), "missing".into()))?;
                    scalar(path, &format!("{i}.{k}"), &a)
                };
                let (offset, keep, max_size, idx) =
                    (number("2", offset)?, number("3", keep)?, number("4", max_size)?, number("5", idx)?);
                check_rank4(path, &format!("{i}.0"), &keys, &values)?;
                if keep != 0 {
                    return Err(invalid(&format!("{i}.3"), format!(
                        "a rotating cache that keeps its first {keep} positions (mlx_lm's --max-kv-size) is not supported; sliding-window layers keep none"
                    )));
                }
                let length = keys.shape()[2];
                if max_size < 1 || offset < 0 || idx < 0 || idx > length {
                    return Err(invalid(&format!("{i}.2"), format!(
                        "inconsistent rotating cache: offset {offset}, max_size {max_size}, idx {idx}, {length} slots"
                    )));
                }
                LayerCache::Rotating(rotating_from_python(&keys, &values, offset, max_size, idx).map_err(|source| Error::Mlx { path: path.to_path_buf(), source })?)
            }
            "ArraysCache" => {
                let conv = take("0.0")?;
                let recurrent = take("0.1")?;
                let (Some(conv), Some(recurrent)) = (conv, recurrent) else {
                    return Err(invalid(&format!("{i}.0"), "an empty ArraysCache (no prompt was processed)".into()));
                };
                for extra in ["1", "2"] {
                    if take(extra)?.is_some() {
                        return Err(invalid(&format!("{i}.{extra}"), "batched (left-padded) ArraysCache states are not supported".into()));
                    }
                }
                LayerCache::Arrays(ArraysCache {
                    conv,
                    recurrent,
                    lengths: None,
                })
            }
            other => {
                return Err(invalid(&format!("1.{i}"), format!(
                    "cache class {other} is not supported (supported: KVCache, RotatingKVCache, ArraysCache)"
                )))
            }
        };
        cache.push(layer);
    }
    if let Some(key) = arrays.keys().min() {
        return Err(invalid(key, "an array no layer's state uses".into()));
    }
    Ok((cache, metadata))
}

enum Entry {
    Array(Array),
    Scalar(i32),
    None,
}

/// A layer's mlx_lm class and state entries.
fn layer_state(layer: &LayerCache) -> mlx_rs::Result<(&'static str, Vec<(&'static str, Entry)>)> {
    Ok(match layer {
        LayerCache::Kv(c) => {
            let offset = c.offset.item::<i32>()?;
            let end =
                ((offset + STEP - 1) / STEP * STEP).clamp(STEP.min(c.capacity()), c.capacity());
            (
                "KVCache",
                vec![
                    ("0", Entry::Array(c.keys.index((.., .., ..end))?)),
                    ("1", Entry::Array(c.values.index((.., .., ..end))?)),
                    ("2", Entry::Scalar(offset)),
                ],
            )
        }
        LayerCache::Rotating(c) => {
            let offset = c.offset.item::<i32>()?;
            let window = c.window();
            let n = offset.min(window);
            // Temporal order: positions offset-n .. offset-1, each in slot p % window.
            let slots: Vec<i32> = (offset - n..offset).map(|p| p % window).collect();
            let slots = Array::from_slice(&slots, &[n])?;
            (
                "RotatingKVCache",
                vec![
                    ("0", Entry::Array(ops::take(&c.keys, &slots, 2)?)),
                    ("1", Entry::Array(ops::take(&c.values, &slots, 2)?)),
                    ("2", Entry::Scalar(offset)),
                    ("3", Entry::Scalar(0)),
                    ("4", Entry::Scalar(window)),
                    ("5", Entry::Scalar(n)),
                ],
            )
        }
        LayerCache::Arrays(c) => (
            "ArraysCache",
            vec![
                ("0.0", Entry::Array(c.conv.clone())),
                ("0.1", Entry::Array(c.recurrent.clone())),
                ("1", Entry::None),
                ("2", Entry::None),
            ],
        ),
    })
}

/// A Python `RotatingKVCache` state as a ring of `max_size` slots (position `p` in slot
/// `p % max_size`). Python's buffer, put in temporal order as its `_temporal_order` does,
/// ends with the newest position.
fn rotating_from_python(
    keys: &Array,
    values: &Array,
    offset: i32,
    max_size: i32,
    idx: i32,
) -> mlx_rs::Result<RotatingKvCache> {
    let length = keys.shape()[2];
    let temporal = |v: &Array| -> mlx_rs::Result<Array> {
        if idx == length {
            Ok(v.clone())
        } else if idx < offset {
            ops::concatenate(&[v.index((.., .., idx..))?, v.index((.., .., ..idx))?], 2)
        } else {
            v.index((.., .., ..idx))
        }
    };
    let (keys, values) = (temporal(keys)?, temporal(values)?);
    let held = keys.shape()[2];
    let n = offset.min(max_size).min(held);
    let first = offset - n;
    // Slot s holds the position p in first..offset with p % max_size == s, if any.
    let mut index = vec![0i32; max_size as usize];
    let mut positions = vec![-1i32; max_size as usize];
    for p in first..offset {
        let s = (p % max_size) as usize;
        index[s] = held - n + (p - first);
        positions[s] = p;
    }
    let written = Array::from_slice(&positions, &[max_size])?;
    let mask = ops::reshape(&ops::greater_equal(&written, 0)?, &[1, 1, max_size, 1])?;
    let index = Array::from_slice(&index, &[max_size])?;
    let ring = |v: &Array| -> mlx_rs::Result<Array> {
        let gathered = ops::take(v, &index, 2)?;
        ops::where_(
            &mask,
            &gathered,
            Array::from_scalar(0.0f32).astype(v.dtype())?,
        )
    };
    Ok(RotatingKvCache {
        keys: ring(&keys)?,
        values: ring(&values)?,
        positions: written,
        offset: Array::from_scalar(offset),
    })
}

fn scalar(path: &Path, key: &str, a: &Array) -> Result<i32> {
    let invalid = |message: String| Error::Invalid {
        path: path.to_path_buf(),
        key: key.to_string(),
        message,
    };
    if a.size() != 1 {
        return Err(invalid(format!(
            "expected a scalar, found shape {:?}",
            a.shape()
        )));
    }
    let v = a
        .astype(Dtype::Int64)
        .and_then(|a| a.item::<i64>())
        .map_err(|source| Error::Mlx {
            path: path.to_path_buf(),
            source,
        })?;
    i32::try_from(v).map_err(|_| invalid(format!("{v} does not fit a position")))
}

fn check_rank4(path: &Path, key: &str, keys: &Array, values: &Array) -> Result<()> {
    let (k, v) = (keys.shape(), values.shape());
    if k.len() != 4 || v.len() != 4 || k[..3] != v[..3] {
        return Err(Error::Invalid {
            path: path.to_path_buf(),
            key: key.to_string(),
            message: format!("keys {k:?} and values {v:?} are not [batch, heads, positions, dim] buffers of one size"),
        });
    }
    Ok(())
}
