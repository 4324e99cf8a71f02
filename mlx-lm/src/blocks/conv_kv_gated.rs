//! Gear's gated key/value convolution, the token mixer of its `conv_mixer` layers (Python:
//! `mlx_lm.models.gear.ConvKVGatedMixer`): per-head Gemma norms of the query and key
//! projections, a causal depthwise convolution of the keys and one of the values
//! ([`causal_conv1d`], `L_cache` taps, no activation), each key-value head's keys and values
//! repeated for its query heads, then `o_proj(sigmoid(q * k) * v)`. No attention, no rope:
//! its state is the two convolutions' last `L_cache - 1` inputs, two slots of an
//! [`ArraysCache`] (Python: `ArraysCache(size=2)`).
//!
//! A right-padded batch's padding is zeroed at the mixer's input (Python:
//! `_apply_mask(x, mask)` before the projections, the mask the cache's
//! [`make_mask`](ArraysCache::make_mask)); the states keep each sequence's last real inputs,
//! so the padding never reaches them.

use mlx_nn::{Conv1d, Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::conv::{causal_conv1d, conv_state, load_depthwise_conv1d, ConvActivation};
use crate::blocks::norm::GemmaRmsNorm;
use crate::blocks::rows::{arrays_entry, Rows};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::Checkpoint;

/// The slots of the layer's [`ArraysCache`] (Python: `cache_idx` 0 and 1): the key and the
/// value convolutions' states, `[batch, L_cache - 1, kv_heads * head_dim]`.
const KEY: usize = 0;
const VALUE: usize = 1;

/// The sizes of the mixer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConvKvGatedConfig {
    pub hidden_size: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    /// The convolutions' taps (Python: `conv_L_cache`).
    pub l_cache: i32,
    /// Biases on the projections and the convolutions (Python: `attention_bias`).
    pub bias: bool,
    pub rms_norm_eps: f32,
}

/// Python: `ConvKVGatedMixer`.
#[derive(Debug, Clone, TreeNode)]
pub struct ConvKvGatedMixer {
    pub key_conv: Conv1d,
    pub value_conv: Conv1d,
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_norm: GemmaRmsNorm,
    pub k_norm: GemmaRmsNorm,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
}

impl ConvKvGatedMixer {
    /// Takes the mixer's tensors under `path` (`model.layers.{i}.local_mixer`).
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        c: ConvKvGatedConfig,
    ) -> crate::Result<ConvKvGatedMixer> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, h, kv, hd) = (
            c.hidden_size,
            c.num_attention_heads,
            c.num_key_value_heads,
            c.head_dim,
        );
        Ok(ConvKvGatedMixer {
            key_conv: load_depthwise_conv1d(ck, &p("key_conv"), kv * hd, c.l_cache, c.bias)?,
            value_conv: load_depthwise_conv1d(ck, &p("value_conv"), kv * hd, c.l_cache, c.bias)?,
            q_proj: ck.linear(&p("q_proj"), d, h * hd, c.bias)?,
            k_proj: ck.linear(&p("k_proj"), d, kv * hd, c.bias)?,
            v_proj: ck.linear(&p("v_proj"), d, kv * hd, c.bias)?,
            o_proj: ck.linear(&p("o_proj"), h * hd, d, c.bias)?,
            q_norm: GemmaRmsNorm::load(ck, &p("q_norm"), hd, c.rms_norm_eps)?,
            k_norm: GemmaRmsNorm::load(ck, &p("k_norm"), hd, c.rms_norm_eps)?,
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
        })
    }

    /// The mixer over rows `x` `[B * L, hidden]` (already normed), continuing `cache`'s
    /// states.
    pub fn forward(&self, x: &Array, rows: Rows, cache: Option<&mut LayerCache>) -> Result<Array> {
        let mut cache = arrays_entry(cache, "a conv_mixer layer")?;
        let (b, l) = (rows.batch, rows.len);
        let mut x = rows.unfold(x)?;
        if let Some(mask) = match &cache {
            Some(c) => c.make_mask(l)?,
            None => None,
        } {
            x = ops::where_(
                &ops::expand_dims(&mask, -1)?,
                &x,
                &ops::zeros(&[], x.dtype())?,
            )?;
        }
        let q = ops::reshape(
            &self.q_proj.forward(&x)?,
            &[b, l, self.n_heads, self.head_dim],
        )?;
        let k = ops::reshape(
            &self.k_proj.forward(&x)?,
            &[b, l, self.n_kv_heads, self.head_dim],
        )?;
        let v = self.v_proj.forward(&x)?;
        let q = ops::reshape(&self.q_norm.forward(&q)?, &[b, l, -1])?;
        let k = ops::reshape(&self.k_norm.forward(&k)?, &[b, l, -1])?;
        // The padding is already zeroed above (Python masks the input, not the
        // convolutions' operands).
        let none = ConvActivation::None;
        let k = causal_conv1d(&self.key_conv, &k, None, cache.as_deref_mut(), KEY, none)?;
        let v = causal_conv1d(
            &self.value_conv,
            &v,
            None,
            cache.as_deref_mut(),
            VALUE,
            none,
        )?;
        if let Some(cache) = cache {
            cache.advance(l)?;
        }
        let (k, v) = (self.expand_kv(&k, rows)?, self.expand_kv(&v, rows)?);
        let gated = ops::multiply(&ops::sigmoid(&ops::multiply(&q, &k)?)?, &v)?;
        self.o_proj.forward(&rows.fold(&gated)?)
    }

    /// Python: `_expand_kv`: `[B, L, kv_heads * head_dim]` to `[B, L, heads * head_dim]`,
    /// each key-value head repeated for its group of query heads.
    fn expand_kv(&self, x: &Array, rows: Rows) -> Result<Array> {
        let groups = self.n_heads / self.n_kv_heads;
        let (b, l) = (rows.batch, rows.len);
        let x = ops::reshape(x, &[b, l, self.n_kv_heads, self.head_dim])?;
        let x = ops::broadcast_to(
            &ops::expand_dims(&x, 3)?,
            &[b, l, self.n_kv_heads, groups, self.head_dim],
        )?;
        ops::reshape(&x, &[b, l, self.n_heads * self.head_dim])
    }

    /// The two convolutions' states (Python: `ArraysCache(size=2)`, its slots filled with
    /// zeros on the first call; allocated up front here, in the model's dtype).
    pub fn make_cache(&self, batch: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Arrays(ArraysCache::new(vec![
            conv_state(&self.key_conv, batch, dtype)?,
            conv_state(&self.value_conv, batch, dtype)?,
        ])))
    }
}
