//! The decoder-only transformer that `llama`, `qwen2` and `qwen3` share: mlx_lm writes one file
//! per architecture with the same modules, differing in biases, q/k norms and defaults; here
//! those differences are [`DecoderArgs`], and each architecture's file reads its config into
//! them. Parameter paths are mlx_lm's (`model.layers.0.self_attn.q_proj.weight`).

use mlx_nn::{Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::fast::{self, AttentionMask};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::cache::{KvCache, LayerCache, RotatingKvCache};
use crate::checkpoint::Checkpoint;
use crate::models::decode_attention;
use crate::rope::Rope;

/// What distinguishes the decoder architectures, read from a config.
#[derive(Debug, Clone)]
pub struct DecoderArgs {
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub num_hidden_layers: i32,
    pub vocab_size: i32,
    pub rms_norm_eps: f32,
    /// Biases of q/k/v (qwen2: true) and of o (llama's `attention_bias` covers all four).
    pub qkv_bias: bool,
    pub o_bias: bool,
    pub mlp_bias: bool,
    /// qwen3's per-head RMSNorm of queries and keys.
    pub qk_norm: bool,
    pub tie_word_embeddings: bool,
    pub rope: Rope,
    /// Per layer: a sliding-window layer (llama's `layer_types`).
    pub sliding: Vec<bool>,
    pub sliding_window: Option<i32>,
}

/// The error for a call whose arguments do not fit the model (a cache of the wrong kind).
pub(crate) fn wrong_input(message: &str) -> mlx_rs::Error {
    mlx_rs::Error::InvalidArgument(message.to_string())
}

/// Python: `x * sigmoid(x)` (`nn.silu`).
pub(crate) fn silu(x: &Array) -> Result<Array> {
    ops::multiply(x, &ops::sigmoid(x)?)
}

/// Python: `create_causal_mask(n, window_size=window)` (no cache).
pub(crate) fn causal_mask(n: i32, window: Option<i32>) -> Result<Array> {
    let positions = ops::arange(0, n, 1, Dtype::Int32)?;
    let rows = ops::expand_dims(&positions, 1)?;
    let cols = ops::expand_dims(&positions, 0)?;
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
pub(crate) enum PlainMask {
    None,
    Causal,
    Array(Array),
    Cached(Array),
}

/// The mask every full-attention key/value layer of `cache` shares for `n` new positions
/// (from the first such layer), or `PlainMask::None` when no layer has one.
pub(crate) fn shared_cache_mask<'c>(
    cache: impl IntoIterator<Item = &'c LayerCache>,
    n: i32,
) -> Result<PlainMask> {
    let kv = cache.into_iter().find_map(|c| match c {
        LayerCache::Kv(kv) => Some(kv),
        _ => None,
    });
    Ok(match kv {
        Some(kv) => PlainMask::Cached(kv.mask(n, None)?),
        None => PlainMask::None,
    })
}

impl PlainMask {
    pub(crate) fn new(n: i32, window: Option<i32>) -> Result<PlainMask> {
        Ok(match window {
            _ if n == 1 => PlainMask::None,
            Some(w) if n > w => PlainMask::Array(causal_mask(n, Some(w))?),
            _ => PlainMask::Causal,
        })
    }

    pub(crate) fn as_mask(&self) -> AttentionMask<'_> {
        match self {
            PlainMask::None => AttentionMask::None,
            PlainMask::Causal => AttentionMask::Causal,
            PlainMask::Array(m) | PlainMask::Cached(m) => AttentionMask::Array(m),
        }
    }
}

/// The batch and sequence sizes of hidden states that travel as rows.
///
/// Between layers a model's hidden states are rows `[B * L, hidden]`, not `[B, L, hidden]`:
/// MLX's matmul folds a 3-D input into rows and back, one `Flatten` and one `Unflatten`
/// around every projection. Those are views, but each is a primitive that MLX dispatches on
/// every call: in a Qwen3-0.6B decode step they were 394 of 1,329. Rows keep the
/// projections plain 2-D matmuls; only attention, which needs heads, reshapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rows {
    pub batch: i32,
    pub len: i32,
}

impl Rows {
    /// The rows of token ids `[B, L]`.
    pub(crate) fn of(inputs: &Array) -> Result<Rows> {
        match *inputs.shape() {
            [batch, len] => Ok(Rows { batch, len }),
            ref s => Err(wrong_input(&format!(
                "token ids must be [batch, length], got shape {s:?}"
            ))),
        }
    }

    /// `[B * L, ...]` as `[B, L, ...]`.
    pub(crate) fn unfold(self, x: &Array) -> Result<Array> {
        let mut shape = vec![self.batch, self.len];
        shape.extend_from_slice(&x.shape()[1..]);
        ops::reshape(x, &shape)
    }

    /// `[B, L, ...]` as `[B * L, ...]`.
    pub(crate) fn fold(self, x: &Array) -> Result<Array> {
        let mut shape = vec![self.batch * self.len];
        shape.extend_from_slice(&x.shape()[2..]);
        ops::reshape(x, &shape)
    }
}

/// `[B, L, heads, dim]` as `[B, heads, L, dim]`. One token (a decode step) has both layouts
/// in the same order in memory, so a reshape does it without a transpose primitive.
pub(crate) fn heads_first(x: &Array) -> Result<Array> {
    match *x.shape() {
        [b, 1, h, d] => ops::reshape(x, &[b, h, 1, d]),
        _ => ops::transpose(x, [0, 2, 1, 3]),
    }
}

/// Splits projected rows `[B * L, heads * dim]` into heads `[B, heads, L, dim]`, normalizing
/// each head first when a norm is given (qwen3).
pub(crate) fn heads(x: &Array, rows: Rows, n: i32, norm: Option<&RMSNorm>) -> Result<Array> {
    // One token: straight to `[B, heads, 1, dim]`, one reshape; the norm is over the last
    // axis either way.
    let x = if rows.len == 1 {
        ops::reshape(x, &[rows.batch, n, 1, -1])?
    } else {
        ops::reshape(x, &[rows.batch, rows.len, n, -1])?
    };
    let x = match norm {
        Some(norm) => norm.forward(&x)?,
        None => x,
    };
    if rows.len == 1 {
        Ok(x)
    } else {
        ops::transpose(&x, [0, 2, 1, 3])
    }
}

/// `[B, heads, L, dim]` back to rows `[B * L, heads * dim]`.
pub(crate) fn merge_heads(x: &Array) -> Result<Array> {
    let &[b, h, l, d] = x.shape() else {
        return Err(wrong_input(
            "attention output must be [batch, heads, length, dim]",
        ));
    };
    let x = if l == 1 {
        x.clone()
    } else {
        ops::transpose(x, [0, 2, 1, 3])?
    };
    ops::reshape(&x, &[b * l, h * d])
}

/// Rope at the cache's position (or 0), the cache update, and attention: what every
/// attention layer of mlx_lm does between its projections.
#[allow(clippy::too_many_arguments)]
pub(crate) fn attend(
    queries: Array,
    keys: Array,
    values: Array,
    rope: &Rope,
    scale: f32,
    plain_mask: &PlainMask,
    window: Option<i32>,
    cache: Option<&mut LayerCache>,
) -> Result<Array> {
    match cache {
        None => {
            let queries = rope.forward(&queries, 0)?;
            let keys = rope.forward(&keys, 0)?;
            fast::scaled_dot_product_attention(
                &queries,
                &keys,
                &values,
                scale,
                plain_mask.as_mask(),
                None,
            )
        }
        Some(cache) => {
            let rotate = |offset: &Array| -> Result<(Array, Array)> {
                Ok((
                    rope.forward(&queries, offset)?,
                    rope.forward(&keys, offset)?,
                ))
            };
            let (queries, (keys, values, mask)) = match cache {
                LayerCache::Kv(c) => {
                    let (q, k) = rotate(&c.rope_offset()?)?;
                    let padding = c.left_padding.clone();
                    if decode_attention::is_supported(
                        &q,
                        scale,
                        &c.keys,
                        &c.values,
                        &c.offset,
                        padding.as_ref(),
                    )? {
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
                            if window.is_none() && m.shape().last() == Some(&c.capacity()) =>
                        {
                            let (keys, values) = c.update(&k, &values)?;
                            (q, (keys, values, m.clone()))
                        }
                        _ => (q, c.update_and_fetch(&k, &values, window)?),
                    }
                }
                LayerCache::Rotating(c) => {
                    let (q, k) = rotate(&c.offset)?;
                    (q, c.update_and_fetch(&k, &values)?)
                }
                LayerCache::Arrays(_) => {
                    return Err(wrong_input(
                        "an attention layer got a linear-attention cache",
                    ))
                }
            };
            fast::scaled_dot_product_attention(&queries, &keys, &values, scale, &mask, None)
        }
    }
}

/// Python: `Attention` of llama / qwen2 / qwen3.
#[derive(Debug, Clone, TreeNode)]
pub struct Attention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_norm: Option<RMSNorm>,
    pub k_norm: Option<RMSNorm>,
    pub rope: Rope,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub scale: f32,
}

impl Attention {
    fn load(ck: &mut Checkpoint, path: &str, a: &DecoderArgs) -> crate::Result<Attention> {
        let (d, h, kv, hd) = (
            a.hidden_size,
            a.num_attention_heads,
            a.num_key_value_heads,
            a.head_dim,
        );
        let norm = |ck: &mut Checkpoint, name: &str| -> crate::Result<Option<RMSNorm>> {
            a.qk_norm
                .then(|| ck.rms_norm(&format!("{path}.{name}"), hd, a.rms_norm_eps))
                .transpose()
        };
        Ok(Attention {
            q_proj: ck.linear(&format!("{path}.q_proj"), d, h * hd, a.qkv_bias)?,
            k_proj: ck.linear(&format!("{path}.k_proj"), d, kv * hd, a.qkv_bias)?,
            v_proj: ck.linear(&format!("{path}.v_proj"), d, kv * hd, a.qkv_bias)?,
            o_proj: ck.linear(&format!("{path}.o_proj"), h * hd, d, a.o_bias)?,
            q_norm: norm(ck, "q_norm")?,
            k_norm: norm(ck, "k_norm")?,
            rope: a.rope.clone(),
            n_heads: h,
            n_kv_heads: kv,
            // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
            scale: (hd as f64).powf(-0.5) as f32,
        })
    }

    fn forward(
        &self,
        x: &Array,
        rows: Rows,
        mask: &PlainMask,
        window: Option<i32>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let queries = heads(
            &self.q_proj.forward(x)?,
            rows,
            self.n_heads,
            self.q_norm.as_ref(),
        )?;
        let keys = heads(
            &self.k_proj.forward(x)?,
            rows,
            self.n_kv_heads,
            self.k_norm.as_ref(),
        )?;
        let values = heads(&self.v_proj.forward(x)?, rows, self.n_kv_heads, None)?;
        let out = attend(
            queries, keys, values, &self.rope, self.scale, mask, window, cache,
        )?;
        self.o_proj.forward(&merge_heads(&out)?)
    }
}

/// Python: `MLP` (SwiGLU).
#[derive(Debug, Clone, TreeNode)]
pub struct Mlp {
    pub gate_proj: MaybeQuantizedLinear,
    pub down_proj: MaybeQuantizedLinear,
    pub up_proj: MaybeQuantizedLinear,
}

impl Mlp {
    pub(crate) fn load(
        ck: &mut Checkpoint,
        path: &str,
        dim: i32,
        hidden: i32,
        bias: bool,
    ) -> crate::Result<Mlp> {
        Ok(Mlp {
            gate_proj: ck.linear(&format!("{path}.gate_proj"), dim, hidden, bias)?,
            down_proj: ck.linear(&format!("{path}.down_proj"), hidden, dim, bias)?,
            up_proj: ck.linear(&format!("{path}.up_proj"), dim, hidden, bias)?,
        })
    }
}

impl Forward for Mlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        let gate = silu(&self.gate_proj.forward(x)?)?;
        self.down_proj
            .forward(&ops::multiply(&gate, &self.up_proj.forward(x)?)?)
    }
}

/// Python: `TransformerBlock`.
#[derive(Debug, Clone, TreeNode)]
pub struct DecoderLayer {
    pub self_attn: Attention,
    pub mlp: Mlp,
    pub input_layernorm: RMSNorm,
    pub post_attention_layernorm: RMSNorm,
    #[tree(static)]
    pub use_sliding: bool,
}

/// Python: `LlamaModel` / `Qwen2Model` / `Qwen3Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct DecoderModel {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<DecoderLayer>,
    pub norm: RMSNorm,
    #[tree(static)]
    pub sliding_window: Option<i32>,
}

impl DecoderModel {
    pub(crate) fn load(ck: &mut Checkpoint, a: &DecoderArgs) -> crate::Result<DecoderModel> {
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let path = format!("model.layers.{i}");
            layers.push(DecoderLayer {
                self_attn: Attention::load(ck, &format!("{path}.self_attn"), a)?,
                mlp: Mlp::load(
                    ck,
                    &format!("{path}.mlp"),
                    a.hidden_size,
                    a.intermediate_size,
                    a.mlp_bias,
                )?,
                input_layernorm: ck.rms_norm(
                    &format!("{path}.input_layernorm"),
                    a.hidden_size,
                    a.rms_norm_eps,
                )?,
                post_attention_layernorm: ck.rms_norm(
                    &format!("{path}.post_attention_layernorm"),
                    a.hidden_size,
                    a.rms_norm_eps,
                )?,
                use_sliding: a.sliding.get(i as usize).copied().unwrap_or(false),
            });
        }
        Ok(DecoderModel {
            embed_tokens: ck.embedding("model.embed_tokens", a.vocab_size, a.hidden_size)?,
            layers,
            norm: ck.rms_norm("model.norm", a.hidden_size, a.rms_norm_eps)?,
            sliding_window: a.sliding_window,
        })
    }

    /// The final hidden states `[B, L, hidden]`.
    pub fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        let rows = Rows::of(inputs)?;
        rows.unfold(&self.forward_rows(inputs, rows, cache)?)
    }

    /// The final hidden states as rows `[B * L, hidden]`.
    pub(crate) fn forward_rows(
        &self,
        inputs: &Array,
        rows: Rows,
        mut cache: Option<&mut [LayerCache]>,
    ) -> Result<Array> {
        let mut h = self.embed_tokens.forward(&rows.fold(inputs)?)?;
        let n = rows.len;
        // With a cache, the full-attention layers share one mask; sliding-window layers
        // make their own.
        let (full, sliding) = match (cache.as_deref(), self.sliding_window) {
            (Some(c), _) => {
                let full_layers = self.layers.iter().zip(c).filter(|(l, _)| !l.use_sliding);
                (
                    shared_cache_mask(full_layers.map(|(_, c)| c), n)?,
                    PlainMask::None,
                )
            }
            (None, Some(w)) if self.layers.iter().any(|l| l.use_sliding) => {
                (PlainMask::new(n, None)?, PlainMask::new(n, Some(w))?)
            }
            (None, _) => (PlainMask::new(n, None)?, PlainMask::None),
        };
        for (i, layer) in self.layers.iter().enumerate() {
            let (mask, window) = if layer.use_sliding {
                (&sliding, self.sliding_window)
            } else {
                (&full, None)
            };
            let c = cache.as_deref_mut().and_then(|c| c.get_mut(i));
            let r = layer.self_attn.forward(
                &layer.input_layernorm.forward(&h)?,
                rows,
                mask,
                window,
                c,
            )?;
            h = ops::add(&h, &r)?;
            let r = layer
                .mlp
                .forward(&layer.post_attention_layernorm.forward(&h)?)?;
            h = ops::add(&h, &r)?;
        }
        self.norm.forward(&h)
    }

    /// One cache per layer: a rotating one for sliding-window layers (Python: llama's
    /// `make_cache`), else a key/value cache of `capacity`.
    pub(crate) fn make_cache(
        &self,
        batch: i32,
        capacity: i32,
        dtype: Dtype,
    ) -> Result<Vec<LayerCache>> {
        self.layers
            .iter()
            .map(|l| {
                let a = &l.self_attn;
                let hd = head_dim(&a.k_proj, a.n_kv_heads);
                Ok(match (l.use_sliding, self.sliding_window) {
                    (true, Some(w)) => LayerCache::Rotating(RotatingKvCache::new(
                        batch,
                        a.n_kv_heads,
                        w,
                        (hd, hd),
                        dtype,
                    )?),
                    _ => LayerCache::Kv(KvCache::new(
                        batch,
                        a.n_kv_heads,
                        capacity,
                        (hd, hd),
                        dtype,
                    )?),
                })
            })
            .collect()
    }
}

/// The per-head size of a projection to `heads` heads.
pub(crate) fn head_dim(proj: &MaybeQuantizedLinear, heads: i32) -> i32 {
    output_dims(proj) / heads.max(1)
}

/// A projection's output size (its weight's rows, quantized or not).
pub(crate) fn output_dims(proj: &MaybeQuantizedLinear) -> i32 {
    match proj {
        mlx_nn::MaybeQuantized::Float(l) => l.weight.shape()[0],
        mlx_nn::MaybeQuantized::Quantized(q) => q.weight.shape()[0],
    }
}

/// The dtype a model computes in: its embedding table's (the scales' when quantized).
pub(crate) fn compute_dtype(embed: &MaybeQuantizedEmbedding) -> Dtype {
    match embed {
        mlx_nn::MaybeQuantized::Float(e) => e.weight.dtype(),
        mlx_nn::MaybeQuantized::Quantized(q) => q.scales.dtype(),
    }
}

/// Logits through the output head: the embedding table when tied, else `lm_head`.
pub(crate) fn logits(
    h: &Array,
    embed: &MaybeQuantizedEmbedding,
    lm_head: Option<&MaybeQuantizedLinear>,
) -> Result<Array> {
    match lm_head {
        Some(head) => head.forward(h),
        None => embed.as_linear(h),
    }
}
