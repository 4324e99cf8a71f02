//! Attention whose scores are soft-capped (`tanh(s / cap) * cap`), written out op by op as
//! Gemma 2's `Attention` is in mlx_lm: the fused `scaled_dot_product_attention` cannot cap
//! its scores, and neither can the one-kernel decode attention, which this path never uses.

use mlx_rs::ops::{self, Ellipsis};
use mlx_rs::{Array, Dtype, Result};

use crate::blocks::mask::{causal_mask, causal_mask_at, PlainMask};
use crate::blocks::rope::RotaryEmbedding;
use crate::blocks::rows::wrong_input;
use crate::cache::LayerCache;

/// Rope at the cache's position (or 0), the cache update, then [`soft_capped_attention`]
/// over the keys and values the cache holds (Python: gemma2's `Attention.__call__` from the
/// rope on). Masks: none for one new position of a full-attention layer, else causal (and
/// windowed for a sliding layer) as a boolean array, as mlx_lm's `create_attention_mask(...,
/// return_array=True)` makes them.
///
/// A [`KvCache`](crate::cache::KvCache) in prefix mode hands over exactly the written
/// positions (mlx_lm's operands, so its numbers bit for bit); otherwise the whole buffer with
/// the mask of the written positions, whose masked-out scores add exact zeros.
#[allow(clippy::too_many_arguments)]
pub fn attend_soft_capped(
    queries: Array,
    keys: Array,
    values: Array,
    rope: &RotaryEmbedding,
    scale: f32,
    cap: f32,
    window: Option<i32>,
    cache: Option<&mut LayerCache>,
) -> Result<Array> {
    let length = queries.shape().get(2).copied().unwrap_or(0);
    let (queries, keys, values, mask) = match cache {
        None => {
            let mask = if length > 1 {
                Some(causal_mask(length, window)?)
            } else {
                None
            };
            (
                rope.forward(&queries, 0)?,
                rope.forward(&keys, 0)?,
                values,
                mask,
            )
        }
        Some(LayerCache::Kv(c)) if c.prefix_attention() => {
            let offset = c.rope_offset()?;
            let (q, k) = (
                rope.forward(&queries, &offset)?,
                rope.forward(&keys, &offset)?,
            );
            let end = c.offset.item::<i32>()? + length;
            let mask = if length > 1 || window.is_some() || c.left_padding.is_some() {
                Some(c.mask(length, window)?.index((Ellipsis, ..end))?)
            } else {
                None
            };
            c.update(&k, &values)?;
            let keys = c.keys.index((.., .., ..end))?;
            let values = c.values.index((.., .., ..end))?;
            (q, keys, values, mask)
        }
        Some(LayerCache::Kv(c)) => {
            let offset = c.rope_offset()?;
            let (q, k) = (
                rope.forward(&queries, &offset)?,
                rope.forward(&keys, &offset)?,
            );
            let (keys, values, mask) = c.update_and_fetch(&k, &values, window)?;
            (q, keys, values, Some(mask))
        }
        Some(LayerCache::Rotating(c)) => {
            let offset = c.offset.clone();
            let (q, k) = (
                rope.forward(&queries, &offset)?,
                rope.forward(&keys, &offset)?,
            );
            let (keys, values, mask) = c.update_and_fetch(&k, &values)?;
            // The eager path takes explicit masks only (gemma2's `return_array=True`).
            let mask = match mask {
                PlainMask::None => None,
                PlainMask::Causal => {
                    let held = keys.shape()[2] - length;
                    Some(causal_mask_at(length, held, None)?)
                }
                PlainMask::Array(m) | PlainMask::Cached(m) => Some(m),
            };
            (q, keys, values, mask)
        }
        // mlx_lm's soft-capped attention multiplies the cache's keys, a tuple there, and fails.
        Some(LayerCache::Quantized(_)) => {
            return Err(wrong_input(
                "soft-capped attention does not read a quantized key/value cache (kv_bits)",
            ))
        }
        Some(other) => {
            return Err(wrong_input(&format!(
                "an attention layer got a {} (a recurrent layer's cache)",
                other.class_name()
            )))
        }
    };
    soft_capped_attention(&queries, &keys, &values, scale, cap, mask.as_ref())
}

/// Python: gemma2's attention after the cache: `queries * scale`, the query heads of each
/// key-value head grouped (`[B, kv_heads, repeats, L, D]` against keys and values with a
/// new axis 2), `scores = q @ kᵀ`, `tanh(scores / cap) * cap`, masked-out scores set to the
/// dtype's lowest finite value, a float32-precise softmax, `scores @ values`.
///
/// A mask `[B, 1, L, S]` (a padded batch's, which mlx_lm's gemma2 would broadcast against
/// the grouped heads' axis) gets the repeats' axis too.
pub fn soft_capped_attention(
    queries: &Array,
    keys: &Array,
    values: &Array,
    scale: f32,
    cap: f32,
    mask: Option<&Array>,
) -> Result<Array> {
    let shape = queries.shape().to_vec();
    let [b, heads, l, d] = shape[..] else {
        return Err(wrong_input(&format!(
            "queries of shape {shape:?}, not [batch, heads, length, head_dim]"
        )));
    };
    let kv_heads = keys.shape().get(1).copied().unwrap_or(0);
    if kv_heads == 0 || heads % kv_heads != 0 {
        return Err(wrong_input(&format!(
            "{heads} query heads for {kv_heads} key-value heads"
        )));
    }
    let repeats = heads / kv_heads;
    let queries = ops::multiply(queries, scale)?;
    let (queries, keys, values) = if repeats > 1 {
        (
            ops::reshape(&queries, &[b, kv_heads, repeats, l, d])?,
            ops::expand_dims(keys, 2)?,
            ops::expand_dims(values, 2)?,
        )
    } else {
        (queries, keys.clone(), values.clone())
    };
    let scores = ops::matmul(&queries, &ops::swapaxes(&keys, -1, -2)?)?;
    let scores = ops::tanh(&ops::divide(&scores, cap)?)?;
    let mut scores = ops::multiply(&scores, cap)?;
    if let Some(mask) = mask {
        let mask = if repeats > 1 && mask.ndim() == 4 {
            ops::expand_dims(mask, 2)?
        } else {
            mask.clone()
        };
        let lowest = Array::from_scalar(lowest_finite(scores.dtype())).astype(scores.dtype())?;
        scores = ops::where_(&mask, &scores, &lowest)?;
    }
    let scores = ops::softmax(&scores, -1, true)?;
    let out = ops::matmul(&scores, &values)?;
    if repeats > 1 {
        ops::reshape(&out, &[b, heads, l, d])
    } else {
        Ok(out)
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
