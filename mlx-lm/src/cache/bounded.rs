//! mlx_lm's `make_prompt_cache(model, max_kv_size)`: a bounded cache for generation
//! ([`GenerateOptions::max_kv_size`](crate::GenerateOptions::max_kv_size)).

use super::{LayerCache, RotatingKvCache};

/// The positions a bounded cache never evicts (Python: `RotatingKVCache(max_size, keep=4)`
/// in `make_prompt_cache`).
pub const MAX_KV_SIZE_KEEP: i32 = 4;

/// The `model_type`s whose mlx_lm 0.32.2 `Model` has a `make_cache` of its own, which
/// `make_prompt_cache` calls instead, ignoring `max_kv_size` (read from mlx_lm's classes by
/// `scripts/golden/lm_rotating.py`, checked against this list by `tests/lm_rotating.rs`).
pub const OWN_CACHE_MODEL_TYPES: &[&str] = &[
    "afm7",
    "afmoe",
    "baichuan_m1",
    "bailing_hybrid",
    "bailing_moe_linear",
    "bailing_moe_v3",
    "cohere2",
    "deepseek_v32",
    "deepseek_v41",
    "exaone4",
    "exaone_moe",
    "falcon_h1",
    "gear",
    "gemma3",
    "gemma3_text",
    "gemma3n",
    "gemma4",
    "gemma4_text",
    "glm_moe_dsa",
    "gpt_oss",
    "granitemoehybrid",
    "iquestloopcoder",
    "jamba",
    "kimi_k3",
    "kimi_linear",
    "laguna",
    "lfm2-vl",
    "lfm2",
    "lfm2_moe",
    "llama",
    "llama4",
    "longcat_flash",
    "longcat_flash_ngram",
    "mamba",
    "mamba2",
    "mellum",
    "mimo_v2_flash",
    "minimax_m3_vl",
    "ministral3",
    "muse_glimmer",
    "muse_spark",
    "nanbeige",
    "nemotron-nas",
    "nemotron_h",
    "olmo3",
    "olmo_hybrid",
    "plamo2",
    "plamo3",
    "prism_hadamard_qwen35",
    "qwen3_5",
    "qwen3_5_moe",
    "qwen3_next",
    "recurrent_gemma",
    "rwkv7",
    "spark2_5",
    "step3p5",
];

/// Whether mlx_lm bounds the cache of a `model_type` by `max_kv_size`: only where its
/// `Model` has no `make_cache` of its own.
pub fn max_kv_size_applies(model_type: &str) -> bool {
    !OWN_CACHE_MODEL_TYPES.contains(&model_type)
}

/// Python: `make_prompt_cache(model, max_kv_size)` applied to the cache `cache` the model
/// made: for a model type without a cache of its own in mlx_lm
/// ([`max_kv_size_applies`]), every key/value layer becomes a
/// `RotatingKVCache(max_size=max_kv_size, keep=4)` of its batch, heads, features and dtype;
/// otherwise the cache stays as it is, as mlx_lm's own `make_cache` ignores the bound.
/// Returns whether it bounded the cache.
///
/// `max_kv_size` must exceed the 4 kept positions (an error otherwise: mlx_lm's ring would
/// have no slot to rotate); a layer of another kind than a plain key/value cache in a model
/// the bound applies to is an error too, rather than an unbounded layer.
pub fn bound_kv_cache(
    cache: &mut [LayerCache],
    model_type: &str,
    max_kv_size: usize,
) -> crate::Result<bool> {
    let invalid = crate::Error::InvalidArgument;
    if max_kv_size == 0 {
        return Err(invalid("max_kv_size must be positive".into()));
    }
    if !max_kv_size_applies(model_type) {
        return Ok(false);
    }
    let max_size = i32::try_from(max_kv_size)
        .ok()
        .filter(|n| *n > MAX_KV_SIZE_KEEP)
        .ok_or_else(|| {
            invalid(format!(
                "max_kv_size {max_kv_size}: a RotatingKVCache that keeps the first \
                 {MAX_KV_SIZE_KEEP} positions needs more slots than that (and at most {})",
                i32::MAX
            ))
        })?;
    for (i, layer) in cache.iter_mut().enumerate() {
        let LayerCache::Kv(kv) = layer else {
            return Err(invalid(format!(
                "max_kv_size: cache layer {i} of this {model_type} model is a {}, not a \
                 KVCache that mlx_lm would make a RotatingKVCache",
                layer.class_name()
            )));
        };
        let (k, v) = (kv.keys.shape(), kv.values.shape());
        let ring = RotatingKvCache::with_keep(
            k[0],
            k[1],
            max_size,
            MAX_KV_SIZE_KEEP,
            (k[3], v[3]),
            kv.keys.dtype(),
        )?;
        *layer = LayerCache::Rotating(ring);
    }
    Ok(true)
}
