//! Attention with a cache, the token mixer of every transformer layer: grouped-query heads,
//! optional biases, per-head RMSNorm of queries and keys (qwen3), RoPE over all or the first
//! features of each head, a sliding window, and a sigmoid output gate (Qwen3.5 / Qwen3-Next).
//! Parameter paths are mlx_lm's (`q_proj`, `k_proj`, `v_proj`, `o_proj`, `q_norm`, `k_norm`).

use mlx_nn::Frozen;
use mlx_nn::{shard_linear, Forward, MaybeQuantized, MaybeQuantizedLinear, RMSNorm, Sharding};
use mlx_rs::distributed::Group;
use mlx_rs::fast::{self, AttentionMask};
use mlx_rs::ops::{self, Ellipsis};
use mlx_rs::{Array, Dtype, Error, Result};
use mlx_tree::TreeNode;

use crate::blocks::decoder::TokenMixer;
use crate::blocks::layer::LayerContext;
use crate::blocks::mask::PlainMask;
use crate::blocks::norm::{heads_normed, LayerNorm2D, PerHeadLayerNorm};
use crate::blocks::rope::RotaryEmbedding;
use crate::blocks::rows::{heads, heads_first, merge_heads, wrong_input, Rows};
use crate::cache::{KvCache, LayerCache};
use crate::checkpoint::Checkpoint;
use crate::kernels::decode_attention;

/// What an [`Attention`] layer is, read from a config by each architecture.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionConfig {
    pub hidden_size: i32,
    pub num_heads: i32,
    pub num_kv_heads: i32,
    pub head_dim: i32,
    /// Biases of the q/k/v projections (qwen2; llama's `attention_bias`).
    pub qkv_bias: bool,
    /// The bias of the output projection (llama's `attention_bias`).
    pub o_bias: bool,
    /// Per-head RMSNorm of queries and keys with this eps (qwen3, Qwen3.5).
    pub qk_norm: Option<f32>,
    /// The query projection also yields a gate: the output is `o_proj(attention *
    /// sigmoid(gate))` (Qwen3.5's `Qwen3NextAttention`).
    pub output_gate: bool,
    /// The rotary embedding; its `dims` below `head_dim` rotate only the first features
    /// (partial rotary). `None`: a layer without positional embedding (SmolLM3's NoPE
    /// layers).
    pub rope: Option<RotaryEmbedding>,
    /// Attend to only the last this many positions (a sliding-window layer).
    pub sliding_window: Option<i32>,
}

/// Python: `Attention` of llama / qwen2 / qwen3, and `Qwen3NextAttention` with
/// [`AttentionConfig::output_gate`].
#[derive(Debug, Clone, TreeNode)]
pub struct Attention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_norm: Option<RMSNorm>,
    pub k_norm: Option<RMSNorm>,
    pub rope: Option<RotaryEmbedding>,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
    #[tree(static)]
    pub window: Option<i32>,
    #[tree(static)]
    pub output_gate: bool,
    /// One learned logit per query head that joins every softmax and takes its share of the
    /// weight without a value (Python: `scaled_dot_product_attention(..., sinks=sinks)`,
    /// GPT-OSS); `None` in the other families.
    pub sinks: Option<Array>,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl Attention {
    /// Takes the layer's tensors under `path` from the checkpoint.
    pub fn load(ck: &mut Checkpoint, path: &str, a: &AttentionConfig) -> crate::Result<Attention> {
        let (d, h, kv, hd) = (a.hidden_size, a.num_heads, a.num_kv_heads, a.head_dim);
        let p = |name: &str| format!("{path}.{name}");
        let norm = |ck: &mut Checkpoint, name: &str| -> crate::Result<Option<RMSNorm>> {
            a.qk_norm
                .map(|eps| ck.rms_norm(&p(name), hd, eps))
                .transpose()
        };
        let q_out = if a.output_gate { h * hd * 2 } else { h * hd };
        Ok(Attention {
            frozen: Frozen::default(),
            q_proj: ck.linear(&p("q_proj"), d, q_out, a.qkv_bias)?,
            k_proj: ck.linear(&p("k_proj"), d, kv * hd, a.qkv_bias)?,
            v_proj: ck.linear(&p("v_proj"), d, kv * hd, a.qkv_bias)?,
            o_proj: ck.linear(&p("o_proj"), h * hd, d, a.o_bias)?,
            q_norm: norm(ck, "q_norm")?,
            k_norm: norm(ck, "k_norm")?,
            rope: a.rope.clone(),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
            scale: (hd as f64).powf(-0.5) as f32,
            window: a.sliding_window,
            output_gate: a.output_gate,
            sinks: None,
        })
    }

    /// Python (llama's `shard`, gpt_oss's with its sinks): the query, key and value
    /// projections keep this process's heads, and the sinks theirs; the output projection
    /// sums the heads' products over `group`. Every process
    /// needs whole heads: a head count the group size does not divide is an `Err`.
    pub fn shard(&mut self, group: &Group) -> Result<()> {
        // gpt_oss's sinks, one per query head: this process's heads' (Python slices them
        // after dividing the head count).
        let heads = self.n_heads / group.size();
        let sinks = self
            .sinks
            .as_ref()
            .map(|s| {
                let start = heads * group.rank();
                ops::contiguous(&s.index(start..start + heads)?, None)
            })
            .transpose()?;
        let mut parts = HeadProjections {
            q_proj: &mut self.q_proj,
            k_proj: &mut self.k_proj,
            v_proj: &mut self.v_proj,
            o_proj: &mut self.o_proj,
            n_heads: &mut self.n_heads,
            n_kv_heads: &mut self.n_kv_heads,
        };
        parts.shard(group)?;
        self.sinks = sinks;
        Ok(())
    }

    /// The layer's parts, as [`AttentionParts`] borrows them.
    pub fn parts(&self) -> AttentionParts<'_> {
        AttentionParts {
            q_proj: &self.q_proj,
            k_proj: &self.k_proj,
            v_proj: &self.v_proj,
            o_proj: &self.o_proj,
            q_norm: self.q_norm.as_ref(),
            k_norm: self.k_norm.as_ref(),
            rope: self.rope.as_ref(),
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
            scale: self.scale,
            window: self.window,
            output_gate: self.output_gate,
            sinks: self.sinks.as_ref(),
        }
    }

    /// Attention of rows `x` `[B * L, hidden]` (positions after what `cache` holds): rows out.
    pub fn forward(
        &self,
        x: &Array,
        rows: Rows,
        mask: &PlainMask,
        fused: bool,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        self.parts().forward(x, rows, mask, fused, cache)
    }
}

/// An attention layer's parameters and settings, borrowed from the layer whatever mlx_lm
/// calls them there (`o_proj`, `out_proj` or `dense`; `q_norm` or `q_layernorm`, ...): what
/// an architecture whose attention has other parameter names computes with, so the
/// computation is written once. `N` is the per-head norm of queries and keys: RMSNorm
/// (qwen3), or one with a weight per head (cohere's [`LayerNorm2D`],
/// stablelm's [`PerHeadLayerNorm`]).
#[derive(Debug)]
pub struct AttentionParts<'a, N = RMSNorm> {
    pub q_proj: &'a MaybeQuantizedLinear,
    pub k_proj: &'a MaybeQuantizedLinear,
    pub v_proj: &'a MaybeQuantizedLinear,
    pub o_proj: &'a MaybeQuantizedLinear,
    /// Per-head norm of queries and keys.
    pub q_norm: Option<&'a N>,
    pub k_norm: Option<&'a N>,
    pub rope: Option<&'a RotaryEmbedding>,
    pub n_heads: i32,
    pub n_kv_heads: i32,
    pub scale: f32,
    pub window: Option<i32>,
    /// The query projection also yields a sigmoid gate of the output.
    pub output_gate: bool,
    /// Attention sinks, one logit per query head ([`Attention::sinks`]).
    pub sinks: Option<&'a Array>,
}

// Not derived: a derive would ask `N: Clone`, and the parts only borrow it.
impl<N> Clone for AttentionParts<'_, N> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<N> Copy for AttentionParts<'_, N> {}

/// A norm of each head's features, and how projected rows become normalized heads under it.
pub trait HeadNorm: Forward {
    /// Rows `y` `[B * L, n * head_dim]` as `n` normalized heads `[B, n, L, head_dim]`. A norm
    /// with a weight per head normalizes before the heads move to the front.
    fn heads(&self, y: &Array, rows: Rows, n: i32) -> Result<Array> {
        heads_normed(y, rows, n, Some(self))
    }
}

/// Its weight is over the features alone, so one token's heads are normalized after the
/// reshape that puts them in front (no transpose).
impl HeadNorm for RMSNorm {
    fn heads(&self, y: &Array, rows: Rows, n: i32) -> Result<Array> {
        heads(y, rows, n, Some(self))
    }
}

impl HeadNorm for LayerNorm2D {}

impl HeadNorm for PerHeadLayerNorm {}

fn heads_of<N: HeadNorm>(y: &Array, rows: Rows, n: i32, norm: Option<&N>) -> Result<Array> {
    match norm {
        Some(norm) => norm.heads(y, rows, n),
        None => heads(y, rows, n, None),
    }
}

impl<N: HeadNorm> AttentionParts<'_, N> {
    /// Attention of rows `x` `[B * L, hidden]` (positions after what `cache` holds): rows out.
    pub fn forward(
        &self,
        x: &Array,
        rows: Rows,
        mask: &PlainMask,
        fused: bool,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        self.forward_upcast(x, rows, mask, fused, cache, Upcast::None)
    }

    /// [`forward`](Self::forward) with some operands of the attention product in float32.
    pub fn forward_upcast(
        &self,
        x: &Array,
        rows: Rows,
        mask: &PlainMask,
        fused: bool,
        cache: Option<&mut LayerCache>,
        upcast: Upcast,
    ) -> Result<Array> {
        let (queries, gate) = if self.output_gate {
            let q = ops::reshape(
                &self.q_proj.forward(x)?,
                &[rows.batch, rows.len, self.n_heads, -1],
            )?;
            let halves = ops::split(&q, 2, -1)?;
            let gate = ops::reshape(&halves[1], &[rows.batch * rows.len, -1])?;
            let q = match self.q_norm {
                Some(norm) => norm.forward(&halves[0])?,
                None => halves[0].clone(),
            };
            (heads_first(&q)?, Some(gate))
        } else {
            let q = self.q_proj.forward(x)?;
            (heads_of(&q, rows, self.n_heads, self.q_norm)?, None)
        };
        let keys = heads_of(&self.k_proj.forward(x)?, rows, self.n_kv_heads, self.k_norm)?;
        let values = heads(&self.v_proj.forward(x)?, rows, self.n_kv_heads, None)?;
        let out = attend_inner(
            queries,
            keys,
            values,
            self.rope,
            self.scale,
            mask,
            self.window,
            fused,
            cache,
            upcast,
            self.sinks,
        )?;
        let out = merge_heads(&out)?;
        match gate {
            Some(gate) => self
                .o_proj
                .forward(&ops::multiply(&out, &ops::sigmoid(&gate)?)?),
            None => self.o_proj.forward(&out),
        }
    }
}

/// An attention's projections and head counts, borrowed to split them by heads.
pub(crate) struct HeadProjections<'a> {
    pub q_proj: &'a mut MaybeQuantizedLinear,
    pub k_proj: &'a mut MaybeQuantizedLinear,
    pub v_proj: &'a mut MaybeQuantizedLinear,
    pub o_proj: &'a mut MaybeQuantizedLinear,
    pub n_heads: &'a mut i32,
    pub n_kv_heads: &'a mut i32,
}

impl HeadProjections<'_> {
    /// The query, key and value projections keep this process's heads, the output projection
    /// sums the heads' products over `group` (Python: llama's `shard`). Every process needs
    /// whole heads: a head count the group size does not divide is an `Err`, and on an error
    /// nothing changed.
    pub(crate) fn shard(&mut self, group: &Group) -> Result<()> {
        let n = group.size();
        if *self.n_heads % n != 0 || *self.n_kv_heads % n != 0 {
            return Err(Error::InvalidArgument(format!(
                "[shard] {} query and {} key/value heads do not split over {n} processes",
                self.n_heads, self.n_kv_heads
            )));
        }
        let split = |l: &MaybeQuantizedLinear, s: Sharding| -> Result<MaybeQuantizedLinear> {
            Ok(MaybeQuantized::Sharded(Box::new(shard_linear(
                l, s, 1, group,
            )?)))
        };
        // All four first, so a failure leaves the layer as it was.
        let q_proj = split(self.q_proj, Sharding::AllToSharded)?;
        let k_proj = split(self.k_proj, Sharding::AllToSharded)?;
        let v_proj = split(self.v_proj, Sharding::AllToSharded)?;
        let o_proj = split(self.o_proj, Sharding::ShardedToAll)?;
        (*self.q_proj, *self.k_proj, *self.v_proj, *self.o_proj) = (q_proj, k_proj, v_proj, o_proj);
        *self.n_heads /= n;
        *self.n_kv_heads /= n;
        Ok(())
    }
}

impl TokenMixer for Attention {
    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let mask = ctx.masks.for_window(self.window);
        Attention::forward(
            self,
            x,
            ctx.rows,
            mask,
            ctx.kernels.fused_decode_attention,
            cache,
        )
    }

    fn shard(&mut self, group: &Group) -> Result<()> {
        Attention::shard(self, group)
    }

    // make_cache and window (Python: llama's `make_cache`).
    crate::blocks::decoder::attention_cache!();
}

/// Rope at the cache's position (or 0), the cache update, and attention: what every
/// attention layer of mlx_lm does between its projections (no rope: Python's `NoPE`, the
/// identity). `fused` allows the one-kernel decode attention where it applies.
#[allow(clippy::too_many_arguments)]
pub fn attend(
    queries: Array,
    keys: Array,
    values: Array,
    rope: Option<&RotaryEmbedding>,
    scale: f32,
    plain_mask: &PlainMask,
    window: Option<i32>,
    fused: bool,
    cache: Option<&mut LayerCache>,
) -> Result<Array> {
    attend_upcast(
        queries,
        keys,
        values,
        rope,
        scale,
        plain_mask,
        window,
        fused,
        cache,
        Upcast::None,
    )
}

/// Which operands of the attention product a family computes in float32, after rope and
/// the cache update (the cache keeps the model's dtype), the output cast back to the
/// values' dtype: the families whose attention scores overflow or lose too much in half
/// precision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, mlx_tree::StaticData)]
pub enum Upcast {
    /// The model's dtype throughout.
    #[default]
    None,
    /// The queries (phi).
    Queries,
    /// The queries and keys (stablelm).
    QueriesKeys,
    /// The queries, when they are float16 (cohere2).
    QueriesIfFloat16,
}

impl Upcast {
    /// Whether attention of `queries` computes in another dtype than theirs (then the
    /// one-kernel decode attention, which computes in theirs, does not apply).
    fn changes(self, queries: &Array) -> bool {
        match self {
            Upcast::None => false,
            Upcast::Queries | Upcast::QueriesKeys => queries.dtype() != Dtype::Float32,
            Upcast::QueriesIfFloat16 => queries.dtype() == Dtype::Float16,
        }
    }

    /// `scaled_dot_product_attention` with the upcast operands, cast back to the values'
    /// dtype (Python: `sdpa(q.astype(float32), ...).astype(values.dtype)`).
    fn sdpa<'m>(
        self,
        queries: &Array,
        keys: &Array,
        values: &Array,
        scale: f32,
        mask: impl Into<AttentionMask<'m>>,
        sinks: Option<&Array>,
    ) -> Result<Array> {
        let f32 = |x: &Array| x.astype(Dtype::Float32);
        let (q, k) = match self {
            Upcast::None => {
                return fast::scaled_dot_product_attention(
                    queries, keys, values, scale, mask, sinks,
                )
            }
            Upcast::Queries => (f32(queries)?, keys.clone()),
            Upcast::QueriesKeys => (f32(queries)?, f32(keys)?),
            Upcast::QueriesIfFloat16 if queries.dtype() == Dtype::Float16 => {
                (f32(queries)?, keys.clone())
            }
            Upcast::QueriesIfFloat16 => (queries.clone(), keys.clone()),
        };
        fast::scaled_dot_product_attention(&q, &k, values, scale, mask, sinks)?
            .astype(values.dtype())
    }
}

/// [`attend`] with some operands of the product in float32 ([`Upcast`]).
#[allow(clippy::too_many_arguments)]
pub fn attend_upcast(
    queries: Array,
    keys: Array,
    values: Array,
    rope: Option<&RotaryEmbedding>,
    scale: f32,
    plain_mask: &PlainMask,
    window: Option<i32>,
    fused: bool,
    cache: Option<&mut LayerCache>,
    upcast: Upcast,
) -> Result<Array> {
    attend_inner(
        queries, keys, values, rope, scale, plain_mask, window, fused, cache, upcast, None,
    )
}

/// [`attend_upcast`] with optional attention sinks ([`Attention::sinks`]). Sinks never take
/// the one-kernel decode attention, which has none: MLX's own kernels then, as in mlx_lm.
#[allow(clippy::too_many_arguments)]
fn attend_inner(
    queries: Array,
    keys: Array,
    values: Array,
    rope: Option<&RotaryEmbedding>,
    scale: f32,
    plain_mask: &PlainMask,
    window: Option<i32>,
    fused: bool,
    cache: Option<&mut LayerCache>,
    upcast: Upcast,
    sinks: Option<&Array>,
) -> Result<Array> {
    let fused = fused && sinks.is_none() && !upcast.changes(&queries);
    let rotate_at = |x: &Array, offset: &Array| -> Result<Array> {
        match rope {
            Some(rope) => rope.forward(x, offset),
            None => Ok(x.clone()),
        }
    };
    let Some(cache) = cache else {
        let (queries, keys) = match rope {
            Some(rope) => (rope.forward(&queries, 0)?, rope.forward(&keys, 0)?),
            None => (queries, keys),
        };
        return upcast.sdpa(&queries, &keys, &values, scale, plain_mask.as_mask(), sinks);
    };
    let rotate = |offset: &Array| -> Result<(Array, Array)> {
        Ok((rotate_at(&queries, offset)?, rotate_at(&keys, offset)?))
    };
    let (queries, (keys, values, mask)) = match cache {
        LayerCache::Kv(c) if c.prefix_attention => {
            let (q, k) = rotate(&c.rope_offset()?)?;
            return attend_prefix(&q, &k, &values, scale, window, c, upcast, sinks);
        }
        LayerCache::Kv(c) => {
            let (q, k) = rotate(&c.rope_offset()?)?;
            let padding = c.left_padding.clone();
            if fused
                && decode_attention::is_supported(
                    &q,
                    scale,
                    &c.keys,
                    &c.values,
                    &c.offset,
                    padding.as_ref(),
                )?
            {
                if c.writes_in_place {
                    c.offset = decode_attention::write_in_place(
                        &c.keys, &c.values, &k, &values, &c.offset,
                    )?;
                } else {
                    c.update(&k, &values)?;
                }
                // The new offset comes out of the write: attention after it.
                return decode_attention::attend_unchecked(
                    &q,
                    &c.keys,
                    &c.values,
                    scale,
                    &c.offset,
                    padding.as_ref(),
                    window,
                );
            }
            match plain_mask {
                // A mask made for every layer, when its buffer is this layer's size.
                PlainMask::Cached(m)
                    if window.is_none() && m.shape().last() == Some(&c.attended()) =>
                {
                    let (keys, values) = c.update(&k, &values)?;
                    (q, (keys, values, m.clone()))
                }
                _ => (q, c.update_and_fetch(&k, &values, window)?),
            }
        }
        LayerCache::Rotating(c) => {
            let (q, k) = rotate(&c.offset)?;
            let (keys, values, mask) = c.update_and_fetch(&k, &values)?;
            return upcast.sdpa(&q, &keys, &values, scale, mask.as_mask(), sinks);
        }
        LayerCache::Quantized(c) => {
            // mlx_lm: "Quantized SDPA does not support attention sinks"; an upcast family
            // (phi, stablelm, cohere2) casts the cache's values, a tuple there, and fails.
            let refused = if sinks.is_some() {
                Some("attention sinks")
            } else if upcast != Upcast::None {
                Some("attention computed in float32")
            } else if window.is_some() {
                Some("a sliding window")
            } else {
                None
            };
            if let Some(what) = refused {
                return Err(mlx_rs::Error::InvalidArgument(format!(
                    "a quantized key/value cache (kv_bits) does not support {what}"
                )));
            }
            let (q, k) = rotate(&c.offset)?;
            return c.attend(&q, &k, &values, scale);
        }
        other => {
            return Err(wrong_input(&format!(
                "an attention layer got a {} (a recurrent layer's cache)",
                other.class_name()
            )))
        }
    };
    upcast.sdpa(&queries, &keys, &values, scale, &mask, sinks)
}

/// Attention over the written prefix of a cache in
/// [prefix mode](crate::cache::KvCache::set_prefix_attention): mlx_lm's own operands and masks
/// (`create_attention_mask`: none for one new position, `"causal"` for several, an explicit
/// mask where a window or padding cuts in).
#[allow(clippy::too_many_arguments)]
fn attend_prefix(
    queries: &Array,
    keys: &Array,
    values: &Array,
    scale: f32,
    window: Option<i32>,
    cache: &mut KvCache,
    upcast: Upcast,
    sinks: Option<&Array>,
) -> Result<Array> {
    let length = keys.shape().get(2).copied().unwrap_or(0);
    let end = cache.offset.item::<i32>()? + length;
    let explicit = if window.is_some() || cache.left_padding.is_some() {
        Some(cache.mask(length, window)?.index((Ellipsis, ..end))?)
    } else {
        None
    };
    cache.update(keys, values)?;
    let keys = cache.keys.index((.., .., ..end))?;
    let values = cache.values.index((.., .., ..end))?;
    let mask = match &explicit {
        Some(m) => AttentionMask::Array(m),
        None if length == 1 => AttentionMask::None,
        None => AttentionMask::Causal,
    };
    upcast.sdpa(queries, &keys, &values, scale, mask, sinks)
}
