//! Attention masks, made once per model call and shared by the layers (Python:
//! `create_attention_mask`).

use mlx_rs::fast::AttentionMask;
use mlx_rs::{ops, Array, Dtype, Result};

use crate::cache::LayerCache;

/// Python: `create_causal_mask(n, window_size=window)` (no cache).
pub fn causal_mask(n: i32, window: Option<i32>) -> Result<Array> {
    causal_mask_at(n, 0, window)
}

/// Python: `create_causal_mask(n, offset, window_size=window)`: `[n, offset + n]`, the `n`
/// new positions after `offset` held ones.
pub fn causal_mask_at(n: i32, offset: i32, window: Option<i32>) -> Result<Array> {
    let rows = ops::expand_dims(&ops::arange(offset, offset + n, 1, Dtype::Int32)?, 1)?;
    let cols = ops::expand_dims(&ops::arange(0, offset + n, 1, Dtype::Int32)?, 0)?;
    let mut mask = ops::greater_equal(&rows, &cols)?;
    if let Some(w) = window {
        mask = ops::logical_and(&mask, &ops::less(&rows, &ops::add(&cols, w)?)?)?;
    }
    Ok(mask)
}

/// The mask of an uncached call over `n` positions, as mlx_lm's `create_attention_mask` picks
/// it: none for one position, an explicit array where a window cuts in, else `"causal"`; or,
/// with a cache, the key/value layers' mask over their buffers, made once per call
/// ([`KvCache::mask`](crate::cache::KvCache::mask)).
#[derive(Debug, Clone)]
pub enum PlainMask {
    None,
    Causal,
    Array(Array),
    Cached(Array),
}

impl PlainMask {
    /// The mask of an uncached call over `n` positions, windowed or not.
    pub fn new(n: i32, window: Option<i32>) -> Result<PlainMask> {
        Ok(match window {
            _ if n == 1 => PlainMask::None,
            Some(w) if n > w => PlainMask::Array(causal_mask(n, Some(w))?),
            _ => PlainMask::Causal,
        })
    }

    /// The mask every full-attention key/value layer of `cache` shares for `n` new positions
    /// (from the first such layer), or `PlainMask::None` when no layer has one.
    pub fn shared<'c>(
        cache: impl IntoIterator<Item = &'c LayerCache>,
        n: i32,
    ) -> Result<PlainMask> {
        let kv = cache.into_iter().find_map(LayerCache::first_kv);
        Ok(match kv {
            Some(kv) => PlainMask::Cached(kv.mask(n, None)?),
            None => PlainMask::None,
        })
    }

    pub fn as_mask(&self) -> AttentionMask<'_> {
        match self {
            PlainMask::None => AttentionMask::None,
            PlainMask::Causal => AttentionMask::Causal,
            PlainMask::Array(m) | PlainMask::Cached(m) => AttentionMask::Array(m),
        }
    }
}

/// The masks of one model call: one for the full-attention layers, one for the
/// sliding-window layers (with a cache, each rotating cache makes its own: `None` here).
#[derive(Debug, Clone)]
pub struct Masks {
    pub full: PlainMask,
    pub sliding: PlainMask,
}

impl Masks {
    /// The masks for `n` new positions of layers with these windows (`None`: full
    /// attention; linear-attention layers count as full and ignore it), continuing `cache`.
    pub fn new(windows: &[Option<i32>], cache: Option<&[LayerCache]>, n: i32) -> Result<Masks> {
        let window = windows.iter().flatten().next().copied();
        Ok(match (cache, window) {
            (Some(c), _) => {
                let full_layers = windows.iter().zip(c).filter(|(w, _)| w.is_none());
                Masks {
                    full: PlainMask::shared(full_layers.map(|(_, c)| c), n)?,
                    sliding: PlainMask::None,
                }
            }
            (None, Some(w)) => Masks {
                full: PlainMask::new(n, None)?,
                sliding: PlainMask::new(n, Some(w))?,
            },
            (None, None) => Masks {
                full: PlainMask::new(n, None)?,
                sliding: PlainMask::None,
            },
        })
    }

    /// The mask of a layer with this window.
    pub fn for_window(&self, window: Option<i32>) -> &PlainMask {
        match window {
            Some(_) => &self.sliding,
            None => &self.full,
        }
    }
}
