//! A quantized key/value cache (Python: `QuantizedKVCache`, made by `KVCache.to_quantized`
//! when `generate_step` gets `kv_bits`): keys and values stored as MLX's affine
//! quantization (packed `uint32` codes with a scale and a bias per group of features), and
//! attention computed on them with `quantized_matmul` (Python:
//! `quantized_scaled_dot_product_attention`), never de-quantized as a whole.
//!
//! Like [`KvCache`], it is a tree whose buffers are allocated at the size the generation needs
//! and whose offset is an array, so a compiled decode step traced once serves every token;
//! the switch from a float cache changes the tree, so the step traces once more then.

use mlx_rs::ops::{self, QuantizeOptions, QuantizedMatmulOptions};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

use super::{new_positions, KvCache, LayerCache};
use crate::blocks::mask::causal_mask_at;

/// The bit widths MLX's affine quantization has.
pub const KV_BITS: [i32; 6] = [2, 3, 4, 5, 6, 8];

/// The group sizes MLX's affine quantization has.
pub const KV_GROUP_SIZES: [i32; 3] = [32, 64, 128];

/// One quantized buffer: Python's `(w_q, scales, biases)` tuple of `mx.quantize`, each
/// `[batch, kv_heads, positions, ...]`.
#[derive(Debug, Clone, TreeNode)]
pub struct QuantizedArray {
    /// The packed codes (`uint32 [.., dim * bits / 32]`).
    pub weights: Array,
    /// One scale per group (`[.., dim / group_size]`, the model's dtype).
    pub scales: Array,
    /// One bias per group (`[.., dim / group_size]`, the model's dtype).
    pub biases: Array,
}

impl QuantizedArray {
    /// Python: `mx.quantize(x, group_size=group_size, bits=bits)`.
    pub fn quantize(x: &Array, group_size: i32, bits: i32) -> Result<QuantizedArray> {
        let options = QuantizeOptions::default().group_size(group_size).bits(bits);
        let (weights, scales, biases) = ops::quantize(x, options)?;
        let biases = biases.ok_or_else(|| {
            mlx_rs::Error::InvalidArgument("affine quantization returned no biases".into())
        })?;
        Ok(QuantizedArray {
            weights,
            scales,
            biases,
        })
    }

    /// The three arrays, in Python's tuple order.
    pub fn parts(&self) -> [&Array; 3] {
        [&self.weights, &self.scales, &self.biases]
    }

    fn map(&self, mut f: impl FnMut(&Array) -> Result<Array>) -> Result<QuantizedArray> {
        Ok(QuantizedArray {
            weights: f(&self.weights)?,
            scales: f(&self.scales)?,
            biases: f(&self.biases)?,
        })
    }

    /// How many positions the buffer holds.
    pub fn positions(&self) -> i32 {
        self.weights.shape().get(2).copied().unwrap_or(0)
    }

    /// The features per position the packed codes stand for.
    pub fn dim(&self, bits: i32) -> i32 {
        self.weights.shape().last().copied().unwrap_or(0) * 32 / bits
    }
}

/// Python: `QuantizedKVCache(group_size, bits)`, with the buffers allocated up front and the
/// offset an array, as [`KvCache`].
#[derive(Debug, Clone, TreeNode)]
pub struct QuantizedKvCache {
    pub keys: QuantizedArray,
    pub values: QuantizedArray,
    /// The number of positions written (an `int32` scalar).
    pub offset: Array,
    #[tree(static)]
    pub group_size: i32,
    #[tree(static)]
    pub bits: i32,
    /// Whether attention reads only the written prefix, as mlx_lm's `keys_and_values` returns
    /// it (see [`KvCache::set_prefix_attention`]): mlx_lm's operands, bit for bit, read back
    /// on the host, so not for a compiled step.
    #[tree(static)]
    pub(crate) prefix_attention: bool,
}

/// An error unless MLX quantizes heads of `head_dims` features with `group_size` and `bits`
/// (what mlx_lm finds out from `mx.quantize` when the cache switches).
pub fn check_kv_quantization(group_size: i32, bits: i32, head_dims: &[i32]) -> crate::Result<()> {
    let invalid = crate::Error::InvalidArgument;
    if !KV_BITS.contains(&bits) {
        return Err(invalid(format!(
            "kv_bits {bits} is not a width MLX quantizes with (2, 3, 4, 5, 6 or 8)"
        )));
    }
    if !KV_GROUP_SIZES.contains(&group_size) {
        return Err(invalid(format!(
            "kv_group_size {group_size} is not a group size MLX quantizes with (32, 64 or 128)"
        )));
    }
    if let Some(d) = head_dims.iter().find(|d| *d % group_size != 0) {
        return Err(invalid(format!(
            "kv_group_size {group_size} does not divide the attention heads' {d} features"
        )));
    }
    Ok(())
}

impl QuantizedKvCache {
    /// Python: `KVCache.to_quantized(group_size, bits)`: the whole buffers quantized (each
    /// position's features on their own, so the written prefix is what quantizing it alone
    /// gives).
    pub fn from_kv(kv: &KvCache, group_size: i32, bits: i32) -> crate::Result<QuantizedKvCache> {
        if kv.left_padding.is_some() || kv.offset.ndim() != 0 {
            return Err(crate::Error::InvalidArgument(
                "a batch's key/value cache (padded, or with per-row offsets) cannot be quantized"
                    .into(),
            ));
        }
        let dims = [kv.keys.shape()[3], kv.values.shape()[3]];
        check_kv_quantization(group_size, bits, &dims)?;
        if kv.writes_in_place {
            // The last step's write into the buffers is ordered only before readers of the
            // offset it returned (`decode_attention::write_in_place`): finish it first.
            kv.offset.eval()?;
        }
        Ok(QuantizedKvCache {
            keys: QuantizedArray::quantize(&kv.keys, group_size, bits)?,
            values: QuantizedArray::quantize(&kv.values, group_size, bits)?,
            offset: kv.offset.clone(),
            group_size,
            bits,
            prefix_attention: kv.prefix_attention,
        })
    }

    /// How many positions the buffers hold.
    pub fn capacity(&self) -> i32 {
        self.keys.positions()
    }

    /// Whether attention reads only the written prefix (see
    /// [`KvCache::set_prefix_attention`]).
    pub fn set_prefix_attention(&mut self, on: bool) {
        self.prefix_attention = on;
    }

    /// Grows the buffers to hold at least `capacity` positions (zeros past the old end, as
    /// Python's `expand_quant`).
    pub fn reserve(&mut self, capacity: i32) -> Result<()> {
        let extra = capacity - self.capacity();
        if extra <= 0 {
            return Ok(());
        }
        let grow = |buffer: &Array| -> Result<Array> {
            let mut shape = buffer.shape().to_vec();
            shape[2] = extra;
            ops::concatenate(&[buffer.clone(), ops::zeros(&shape, buffer.dtype())?], 2)
        };
        self.keys = self.keys.map(grow)?;
        self.values = self.values.map(grow)?;
        Ok(())
    }

    /// Quantizes `keys`/`values` (`[batch, kv_heads, length, dim]`) and writes them at the
    /// offset, which advances (Python: `update_and_fetch`'s writes).
    pub fn update(&mut self, keys: &Array, values: &Array) -> Result<()> {
        let length = keys.shape().get(2).copied().unwrap_or(0);
        let keys = QuantizedArray::quantize(keys, self.group_size, self.bits)?;
        let values = QuantizedArray::quantize(values, self.group_size, self.bits)?;
        let start = ops::reshape(&self.offset, &[1])?;
        let write = |buffer: &QuantizedArray, new: &QuantizedArray| -> Result<QuantizedArray> {
            let [w, s, b] = new.parts();
            Ok(QuantizedArray {
                weights: ops::slice_update(&buffer.weights, w, &start, &[2])?,
                scales: ops::slice_update(&buffer.scales, s, &start, &[2])?,
                biases: ops::slice_update(&buffer.biases, b, &start, &[2])?,
            })
        };
        self.keys = write(&self.keys, &keys)?;
        self.values = write(&self.values, &values)?;
        self.offset = ops::add(&self.offset, length)?;
        Ok(())
    }

    /// Writes the new keys and values and attends `queries` (`[batch, heads, length, dim]`,
    /// rotated) over the cache: Python's `update_and_fetch` then
    /// `quantized_scaled_dot_product_attention` with the mask `create_attention_mask` makes
    /// (none for one position, `"causal"` for several). Off prefix mode, over the whole
    /// buffers with a mask of the written positions, whose masked scores weigh exact zeros.
    pub fn attend(
        &mut self,
        queries: &Array,
        keys: &Array,
        values: &Array,
        scale: f32,
    ) -> Result<Array> {
        let length = keys.shape().get(2).copied().unwrap_or(0);
        if self.prefix_attention {
            let offset = self.offset.item::<i32>()?;
            let end = offset + length;
            if end > self.capacity() {
                self.reserve(
                    super::cache_slots(end as usize)
                        .map_err(|e| mlx_rs::Error::InvalidArgument(e.to_string()))?,
                )?;
            }
            self.update(keys, values)?;
            let prefix = |q: &QuantizedArray| -> Result<QuantizedArray> {
                if end == q.positions() {
                    Ok(q.clone())
                } else {
                    q.map(|x| x.index((.., .., ..end)))
                }
            };
            let (k, v) = (prefix(&self.keys)?, prefix(&self.values)?);
            let mask = if length > 1 {
                Some(causal_mask_at(length, offset, None)?)
            } else {
                None
            };
            return self.sdpa(queries, &k, &v, scale, mask.as_ref());
        }
        let slots = ops::arange(0, self.capacity(), 1, Dtype::Int32)?;
        let mask = ops::less_equal(
            &slots,
            &ops::expand_dims(&new_positions(&self.offset, length)?, 1)?,
        )?;
        self.update(keys, values)?;
        let (k, v) = (self.keys.clone(), self.values.clone());
        self.sdpa(queries, &k, &v, scale, Some(&mask))
    }

    /// Python: `quantized_scaled_dot_product_attention(queries, q_keys, q_values, scale,
    /// mask, group_size, bits)` with a boolean mask `[length, positions]`.
    fn sdpa(
        &self,
        queries: &Array,
        keys: &QuantizedArray,
        values: &QuantizedArray,
        scale: f32,
        mask: Option<&Array>,
    ) -> Result<Array> {
        let shape = queries.shape().to_vec();
        let (b, n_q_heads, l, d) = (shape[0], shape[1], shape[2], shape[3]);
        let n_kv_heads = keys.weights.shape()[1];
        let n_repeats = n_q_heads / n_kv_heads;
        // Python's `queries *= scale`: a Python float, weakly typed, in the queries' dtype.
        let mut queries =
            ops::multiply(queries, &Array::from_scalar(scale).astype(queries.dtype())?)?;
        let (mut keys, mut values) = (keys.clone(), values.clone());
        if n_repeats > 1 {
            queries = ops::reshape(&queries, &[b, n_kv_heads, n_repeats, l, d])?;
            keys = keys.map(|x| ops::expand_dims(x, -3))?;
            values = values.map(|x| ops::expand_dims(x, -3))?;
        }
        let qmm = |x: &Array, w: &QuantizedArray, transpose: bool| -> Result<Array> {
            let options = QuantizedMatmulOptions {
                biases: Some(&w.biases),
                transpose,
                group_size: Some(self.group_size),
                bits: Some(self.bits),
                ..Default::default()
            };
            ops::quantized_matmul(x, &w.weights, &w.scales, options)
        };
        let mut scores = qmm(&queries, &keys, true)?;
        if let Some(mask) = mask {
            let lowest =
                Array::from_scalar(lowest_finite(scores.dtype())).astype(scores.dtype())?;
            scores = ops::where_(mask, &scores, &lowest)?;
        }
        let scores = ops::softmax(&scores, -1, true)?;
        let out = qmm(&scores, &values, false)?;
        if n_repeats > 1 {
            ops::reshape(&out, &[b, n_q_heads, l, -1])
        } else {
            Ok(out)
        }
    }
}

/// Python: `mx.finfo(dtype).min`, as a float32 that the dtype holds exactly.
fn lowest_finite(dtype: Dtype) -> f32 {
    match dtype {
        // 0xff7f: bfloat16's lowest finite value (float32's rounds to -inf there).
        Dtype::Bfloat16 => f32::from_bits(0xff7f_0000),
        Dtype::Float16 => -65504.0,
        _ => f32::MIN,
    }
}

/// An error unless every key/value layer of `cache` can switch to a quantized cache of
/// `group_size` and `bits` (checked before a generation starts, so it fails at once rather
/// than when the cache reaches `quantized_kv_start`): the widths MLX has, heads the group
/// size divides, and no sliding-window layer (mlx_lm: `RotatingKVCache.to_quantized` raises
/// "RotatingKVCache Quantization NYI").
pub fn check_quantizable(cache: &[LayerCache], group_size: i32, bits: i32) -> crate::Result<()> {
    check_kv_quantization(group_size, bits, &[])?;
    for (i, layer) in cache.iter().enumerate() {
        match layer {
            LayerCache::Kv(kv) => {
                let dims = [kv.keys.shape()[3], kv.values.shape()[3]];
                check_kv_quantization(group_size, bits, &dims)
                    .map_err(|e| crate::Error::InvalidArgument(format!("cache layer {i}: {e}")))?;
            }
            LayerCache::Quantized(q) if q.group_size != group_size || q.bits != bits => {
                return Err(crate::Error::InvalidArgument(format!(
                    "cache layer {i} is quantized with {} bits in groups of {}, not {bits} bits \
                     in groups of {group_size}",
                    q.bits, q.group_size
                )))
            }
            LayerCache::Rotating(_) => {
                return Err(crate::Error::InvalidArgument(format!(
                    "cache layer {i} is a sliding-window (rotating) cache, which cannot be \
                     quantized (mlx_lm: RotatingKVCache Quantization NYI)"
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Python: `maybe_quantize_kv_cache` once the cache has reached `quantized_kv_start`: every
/// key/value layer becomes a [`QuantizedKvCache`]; recurrent layers and the caches inside a
/// `CacheList` (which has no `to_quantized`) stay as they are.
pub fn quantize_kv_cache(
    cache: &mut [LayerCache],
    group_size: i32,
    bits: i32,
) -> crate::Result<()> {
    check_quantizable(cache, group_size, bits)?;
    for layer in cache.iter_mut() {
        if let LayerCache::Kv(kv) = layer {
            *layer = LayerCache::Quantized(QuantizedKvCache::from_kv(kv, group_size, bits)?);
        }
    }
    Ok(())
}
