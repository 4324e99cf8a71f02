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
//! | `RotatingKVCache` | keys, values, offset, keep (0 for a sliding window, 4 for `max_kv_size`), max_size, idx (ring position) |
//! | `QuantizedKVCache` | (keys' codes, scales, biases), (values' ...), offset, group_size, bits |
//! | `ArraysCache` | [its arrays], left_padding, lengths |
//! | `CacheList` | [(state, class name) of each cache] |
//!
//! So a layer's keys are `"<layer>.0"`.. for a key/value cache, `"<layer>.0.<j>"` for an
//! `ArraysCache`'s arrays, and `"<layer>.<j>.0.<...>"` with the class name at
//! `"<layer>.<j>.1"` (a `"string"` scalar: its code points) for a `CacheList`'s caches.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use mlx_rs::{ops, Array, Dtype};

use crate::cache::{
    check_kv_quantization, ArraysCache, Cache, KvCache, LayerCache, QuantizedArray,
    QuantizedKvCache, RotatingKvCache,
};
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
        let mut padded = false;
        layer.for_each(&mut |c| {
            padded |= matches!(c, LayerCache::Kv(kv) if kv.left_padding.is_some())
        });
        if padded {
            return Err(Error::InvalidArgument(format!(
                "cache layer {i}: a left-padded (batch) key/value cache cannot be saved as a \
                 prompt cache"
            )));
        }
        meta.insert(format!("1.{i}"), layer.class_name().to_string());
        let mut state = Vec::new();
        layer_state(layer, &i.to_string(), &mut state).map_err(mlx)?;
        for (key, entry) in state {
            let (array, kind) = match entry {
                Entry::Array(a) => (a, None),
                Entry::Scalar(v) => (Array::from_scalar(v), Some("scalar")),
                // Python: `mx.array([ord(c) for c in s])`.
                Entry::String(text) => {
                    let codes: Vec<i32> = text.chars().map(|c| c as i32).collect();
                    let n = codes.len() as i32;
                    (
                        Array::from_slice(&codes, &[n]).map_err(mlx)?,
                        Some("string"),
                    )
                }
                Entry::None => (
                    Array::from_slice::<f32>(&[], &[0]).map_err(mlx)?,
                    Some("none"),
                ),
            };
            if let Some(kind) = kind {
                scalars.push((key.clone(), kind));
            }
            arrays.push((key, array));
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
    let (arrays, meta) = mlx_rs::io::load_safetensors(path).map_err(|source| Error::Mlx {
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
    let mut reader = Reader {
        path,
        arrays,
        scalar_kinds,
    };
    let mut cache = Vec::with_capacity(classes.len());
    for (n, (i, class)) in classes.iter().enumerate() {
        if *i != n {
            return Err(invalid(&format!("1.{n}"), "missing layer class".into()));
        }
        cache.push(reader.layer(class, &i.to_string(), &format!("1.{i}"))?);
    }
    if let Some(key) = reader.arrays.keys().min() {
        return Err(invalid(key, "an array no layer's state uses".into()));
    }
    Ok((cache, metadata))
}

/// The arrays of a prompt-cache file not yet taken by a layer, and which of them stand for
/// scalars.
struct Reader<'p> {
    path: &'p Path,
    arrays: HashMap<String, Array>,
    scalar_kinds: HashMap<String, String>,
}

impl Reader<'_> {
    fn invalid(&self, key: &str, message: String) -> Error {
        Error::Invalid {
            path: self.path.to_path_buf(),
            key: key.to_string(),
            message,
        }
    }

    fn mlx(&self, source: mlx_rs::Error) -> Error {
        Error::Mlx {
            path: self.path.to_path_buf(),
            source,
        }
    }

    fn has(&self, key: &str) -> bool {
        self.arrays.contains_key(key)
    }

    /// The entry `key` of a `class` state; `None` where Python saved `None`.
    fn take(&mut self, key: &str, class: &str) -> Result<Option<Array>> {
        let array = self
            .arrays
            .remove(key)
            .ok_or_else(|| self.invalid(key, format!("the {class} state has no entry {key}")))?;
        Ok(match self.scalar_kinds.get(key).map(String::as_str) {
            Some("none") => None,
            _ => Some(array),
        })
    }

    /// The scalar entry `key`.
    fn number(&mut self, key: &str, class: &str) -> Result<i32> {
        let a = self
            .take(key, class)?
            .ok_or_else(|| self.invalid(key, "missing".into()))?;
        scalar(self.path, key, &a)
    }

    /// The string entry `key` (Python: its code points).
    fn string(&mut self, key: &str, class: &str) -> Result<String> {
        if self.scalar_kinds.get(key).map(String::as_str) != Some("string") {
            return Err(self.invalid(key, "expected a string (a cache's class name)".into()));
        }
        let a = self
            .take(key, class)?
            .ok_or_else(|| self.invalid(key, "missing".into()))?;
        let codes = a
            .astype(Dtype::Int32)
            .and_then(|a| a.to_vec::<i32>())
            .map_err(|e| self.mlx(e))?;
        codes
            .into_iter()
            .map(|c| u32::try_from(c).ok().and_then(char::from_u32))
            .collect::<Option<String>>()
            .ok_or_else(|| self.invalid(key, "not a string's code points".into()))
    }

    /// The cache of `class` whose state entries sit under `prefix` (`class_key` names where
    /// the class came from, for errors).
    fn layer(&mut self, class: &str, prefix: &str, class_key: &str) -> Result<LayerCache> {
        let key = |k: &str| format!("{prefix}.{k}");
        Ok(match class {
            "KVCache" => {
                let (keys, values, offset) = (
                    self.take(&key("0"), class)?,
                    self.take(&key("1"), class)?,
                    self.take(&key("2"), class)?,
                );
                let (Some(keys), Some(values), Some(offset)) = (keys, values, offset) else {
                    return Err(self.invalid(&key("0"), "an empty KVCache (no prompt was processed)".into()));
                };
                let offset = scalar(self.path, &key("2"), &offset)?;
                check_rank4(self.path, &key("0"), &keys, &values)?;
                if offset < 0 || offset > keys.shape()[2] {
                    return Err(self.invalid(&key("2"), format!("offset {offset} outside a buffer of {}", keys.shape()[2])));
                }
                LayerCache::Kv(KvCache {
                    keys,
                    values,
                    offset: Array::from_scalar(offset),
                    left_padding: None,
                    writes_in_place: false,
                    prefix_attention: false,
                    view: None,
                })
            }
            "QuantizedKVCache" => {
                let mut parts = Vec::with_capacity(6);
                for i in 0..2 {
                    for j in 0..3 {
                        let at = key(&format!("{i}.{j}"));
                        match self.take(&at, class)? {
                            Some(a) if a.ndim() == 4 => parts.push(a),
                            Some(a) => {
                                return Err(self.invalid(&at, format!("expected a [batch, heads, positions, ...] array, found shape {:?}", a.shape())))
                            }
                            None => return Err(self.invalid(&at, "an empty QuantizedKVCache (no prompt was processed)".into())),
                        }
                    }
                }
                let offset = self.number(&key("2"), class)?;
                let group_size = self.number(&key("3"), class)?;
                let bits = self.number(&key("4"), class)?;
                check_kv_quantization(group_size, bits, &[])
                    .map_err(|e| self.invalid(&key("3"), e.to_string()))?;
                let [weights, scales, biases, v_weights, v_scales, v_biases]: [Array; 6] = parts
                    .try_into()
                    .map_err(|_| self.invalid(&key("0"), "a QuantizedKVCache state of other than six arrays".into()))?;
                let keys = QuantizedArray { weights, scales, biases };
                let values = QuantizedArray { weights: v_weights, scales: v_scales, biases: v_biases };
                let length = keys.positions();
                let consistent = [&keys, &values].iter().all(|q| {
                    let [w, s, b] = q.parts();
                    let groups = q.dim(bits) / group_size;
                    w.dtype() == Dtype::Uint32
                        && s.shape() == b.shape()
                        && s.shape()[..3] == w.shape()[..3]
                        && w.shape()[..3] == keys.weights.shape()[..3]
                        && s.shape()[3] == groups
                        && (w.shape()[3] * 32) % bits == 0
                });
                if !consistent {
                    return Err(self.invalid(&key("0.0"), format!(
                        "the quantized keys {:?} and values {:?} (codes, scales, biases) do not fit {bits} bits in groups of {group_size}",
                        keys.parts().map(|a| a.shape().to_vec()),
                        values.parts().map(|a| a.shape().to_vec())
                    )));
                }
                if offset < 0 || offset > length {
                    return Err(self.invalid(&key("2"), format!("offset {offset} outside a buffer of {length}")));
                }
                LayerCache::Quantized(QuantizedKvCache {
                    keys,
                    values,
                    offset: Array::from_scalar(offset),
                    group_size,
                    bits,
                    prefix_attention: false,
                })
            }
            "RotatingKVCache" => {
                let (keys, values) = (self.take(&key("0"), class)?, self.take(&key("1"), class)?);
                let (Some(keys), Some(values)) = (keys, values) else {
                    return Err(self.invalid(&key("0"), "an empty RotatingKVCache (no prompt was processed)".into()));
                };
                let offset = self.number(&key("2"), class)?;
                let keep = self.number(&key("3"), class)?;
                let max_size = self.number(&key("4"), class)?;
                let idx = self.number(&key("5"), class)?;
                check_rank4(self.path, &key("0"), &keys, &values)?;
                if keep < 0 || keep >= max_size.max(1) {
                    return Err(self.invalid(&key("3"), format!(
                        "a rotating cache of max_size {max_size} cannot keep {keep} positions"
                    )));
                }
                let length = keys.shape()[2];
                // Past the window, the buffer holds at least the window (mlx_lm never trims
                // it shorter), and a ring mid-rotation has written past its kept slots.
                let mid_rotation = is_mid_rotation(length, offset, max_size, idx);
                if max_size < 1
                    || offset < 0
                    || idx < 0
                    || idx > length
                    || (keep > 0 && offset > max_size && length < max_size)
                    || (mid_rotation && idx <= keep)
                {
                    return Err(self.invalid(&key("2"), format!(
                        "inconsistent rotating cache: offset {offset}, keep {keep}, max_size {max_size}, idx {idx}, {length} slots"
                    )));
                }
                let ring = rotating_from_python(&keys, &values, offset, max_size, keep, idx)
                    .map_err(|e| self.mlx(e))?;
                LayerCache::Rotating(ring)
            }
            "ArraysCache" => {
                let mut slots = Vec::new();
                while self.has(&key(&format!("0.{}", slots.len()))) {
                    let at = key(&format!("0.{}", slots.len()));
                    match self.take(&at, class)? {
                        Some(a) => slots.push(a),
                        None => {
                            return Err(self.invalid(&at, "an empty ArraysCache slot (its layer never ran: no prompt was processed)".into()))
                        }
                    }
                }
                if slots.is_empty() {
                    return Err(self.invalid(&key("0.0"), "an ArraysCache without arrays".into()));
                }
                for extra in ["1", "2"] {
                    if self.take(&key(extra), class)?.is_some() {
                        return Err(self.invalid(&key(extra), "batched (left-padded) ArraysCache states are not supported".into()));
                    }
                }
                LayerCache::Arrays(ArraysCache::new(slots))
            }
            "CacheList" => {
                let mut caches = Vec::new();
                while self.has(&key(&format!("{}.1", caches.len()))) {
                    let j = caches.len();
                    let name_key = key(&format!("{j}.1"));
                    let inner = self.string(&name_key, class)?;
                    caches.push(self.layer(&inner, &key(&format!("{j}.0")), &name_key)?);
                }
                if caches.is_empty() {
                    return Err(self.invalid(&key("0.1"), "a CacheList without caches".into()));
                }
                LayerCache::List(caches)
            }
            other => {
                return Err(self.invalid(class_key, format!(
                    "cache class {other} is not supported (supported: KVCache, RotatingKVCache, QuantizedKVCache, ArraysCache, CacheList)"
                )))
            }
        })
    }
}

enum Entry {
    Array(Array),
    Scalar(i32),
    String(String),
    None,
}

/// A layer's state entries, as mlx_lm flattens its `state` under `prefix`.
fn layer_state(
    layer: &LayerCache,
    prefix: &str,
    out: &mut Vec<(String, Entry)>,
) -> mlx_rs::Result<()> {
    let mut push = |key: &str, entry: Entry| out.push((format!("{prefix}.{key}"), entry));
    match layer {
        LayerCache::Kv(c) => {
            let offset = c.offset.item::<i32>()?;
            let end =
                ((offset + STEP - 1) / STEP * STEP).clamp(STEP.min(c.capacity()), c.capacity());
            push("0", Entry::Array(c.keys.index((.., .., ..end))?));
            push("1", Entry::Array(c.values.index((.., .., ..end))?));
            push("2", Entry::Scalar(offset));
        }
        LayerCache::Quantized(c) => {
            let offset = c.offset.item::<i32>()?;
            let end =
                ((offset + STEP - 1) / STEP * STEP).clamp(STEP.min(c.capacity()), c.capacity());
            for (i, q) in [&c.keys, &c.values].into_iter().enumerate() {
                for (j, a) in q.parts().into_iter().enumerate() {
                    push(&format!("{i}.{j}"), Entry::Array(a.index((.., .., ..end))?));
                }
            }
            push("2", Entry::Scalar(offset));
            push("3", Entry::Scalar(c.group_size));
            push("4", Entry::Scalar(c.bits));
        }
        LayerCache::Rotating(c) => {
            let offset = c.offset.item::<i32>()?;
            let window = c.window();
            // Before the window fills, position p sits in slot p: the written slots, mlx_lm's
            // buffer after a prompt; after, the ring as it lies, mlx_lm's `_idx` one past the
            // newest position's slot. (After a call of several tokens mlx_lm keeps the whole
            // chunk until its next step trims it to the window; the file then holds the
            // window's last positions, which mlx_lm reads to the same state.)
            let (n, idx) = if offset < window {
                (offset, offset)
            } else {
                let newest = ops::argmax(&c.positions, None, false)?.item::<u32>()? as i32;
                (window, newest + 1)
            };
            push("0", Entry::Array(c.keys.index((.., .., ..n))?));
            push("1", Entry::Array(c.values.index((.., .., ..n))?));
            push("2", Entry::Scalar(offset));
            push("3", Entry::Scalar(c.keep));
            push("4", Entry::Scalar(window));
            push("5", Entry::Scalar(idx));
        }
        LayerCache::Arrays(c) => {
            for (j, a) in c.cache.iter().enumerate() {
                push(&format!("0.{j}"), Entry::Array(a.clone()));
            }
            push("1", Entry::None);
            push("2", Entry::None);
        }
        LayerCache::List(caches) => {
            for (j, c) in caches.iter().enumerate() {
                layer_state(c, &format!("{prefix}.{j}.0"), out)?;
                out.push((
                    format!("{prefix}.{j}.1"),
                    Entry::String(c.class_name().to_string()),
                ));
            }
        }
    }
    Ok(())
}

/// Whether a Python `RotatingKVCache`'s buffer is a full ring mid-rotation: the window's
/// slots, the next write (`idx`) short of their end.
fn is_mid_rotation(length: i32, offset: i32, max_size: i32, idx: i32) -> bool {
    length == max_size && idx < length && idx < offset && offset >= max_size
}

/// A Python `RotatingKVCache` state as a ring of `max_size` slots in mlx_lm's layout (see
/// [`RotatingKvCache`]). A full ring mid-rotation (`idx` short of its end) keeps its slots, so
/// the next steps write where mlx_lm's would; any other buffer, put in temporal order as
/// `_temporal_order` does (the kept positions first, it ends with the newest position), gives
/// its kept positions and its last ones from slot 0, what mlx_lm's next call trims it to.
fn rotating_from_python(
    keys: &Array,
    values: &Array,
    offset: i32,
    max_size: i32,
    keep: i32,
    idx: i32,
) -> mlx_rs::Result<RotatingKvCache> {
    let length = keys.shape()[2];
    let ring = max_size - keep;
    let (ring_keys, ring_values, positions) = if is_mid_rotation(length, offset, max_size, idx) {
        // A kept slot holds its own position; a rotating slot s holds
        // offset - 1 - ((idx - 1 - s) mod (max_size - keep)).
        let positions: Vec<i32> = (0..max_size)
            .map(|s| {
                if s < keep {
                    s
                } else {
                    offset - 1 - (idx - 1 - s).rem_euclid(ring)
                }
            })
            .collect();
        (keys.clone(), values.clone(), positions)
    } else {
        let temporal = |v: &Array| -> mlx_rs::Result<Array> {
            if idx == length {
                Ok(v.clone())
            } else if idx < offset {
                ops::concatenate(
                    &[
                        v.index((.., .., ..keep))?,
                        v.index((.., .., idx..))?,
                        v.index((.., .., keep..idx))?,
                    ],
                    2,
                )
            } else {
                v.index((.., .., ..idx))
            }
        };
        let (keys, values) = (temporal(keys)?, temporal(values)?);
        let held = keys.shape()[2];
        if keep > 0 && offset > max_size {
            // The kept positions, then the last of the rest (the loader checked that the
            // buffer holds the window).
            let relaid = |v: &Array| -> mlx_rs::Result<Array> {
                ops::concatenate(
                    &[
                        v.index((.., .., ..keep))?,
                        v.index((.., .., held - ring..))?,
                    ],
                    2,
                )
            };
            let positions: Vec<i32> = (0..max_size)
                .map(|s| {
                    if s < keep {
                        s
                    } else {
                        offset - ring + (s - keep)
                    }
                })
                .collect();
            (relaid(&keys)?, relaid(&values)?, positions)
        } else {
            let n = offset.min(max_size).min(held);
            let last = |v: &Array| -> mlx_rs::Result<Array> {
                let v = v.index((.., .., held - n..))?;
                if n == max_size {
                    return Ok(v);
                }
                let mut shape = v.shape().to_vec();
                shape[2] = max_size - n;
                ops::concatenate(&[v, ops::zeros(&shape, keys.dtype())?], 2)
            };
            let positions: Vec<i32> = (0..max_size)
                .map(|s| if s < n { offset - n + s } else { -1 })
                .collect();
            (last(&keys)?, last(&values)?, positions)
        }
    };
    Ok(RotatingKvCache {
        keys: ring_keys,
        values: ring_values,
        positions: Array::from_slice(&positions, &[max_size])?,
        offset: Array::from_scalar(offset),
        keep,
        prefix_attention: false,
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
