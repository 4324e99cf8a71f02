//! Attention whose queries are scaled by their position after rope: the long-context query
//! scaling Llama 4 introduced, as Ministral 3 uses it (`llama_4_scaling_beta`): each query
//! at position `p` is multiplied by `1 + β ln(1 + ⌊p / original_max_position_embeddings⌋)`,
//! so queries past the original context sharpen their attention.

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::blocks::attention::{attend, Attention, HeadProjections};
use crate::blocks::decoder::TokenMixer;
use crate::blocks::layer::LayerContext;
use crate::blocks::rope::RotaryEmbedding;
use crate::blocks::rows::{heads, merge_heads, wrong_input};
use crate::cache::LayerCache;

/// Python: ministral3's `_get_llama_4_attn_scale(size, offset, beta,
/// max_position_embeddings)`.
#[derive(Debug, Clone, Copy, PartialEq, StaticData)]
pub struct Llama4Scaling {
    /// `rope_parameters.llama_4_scaling_beta`.
    pub beta: f64,
    /// `rope_parameters.original_max_position_embeddings`.
    pub original_max_position_embeddings: i32,
}

impl Llama4Scaling {
    /// The factors of `len` positions from `offset` (an `int32` scalar, or one per sequence
    /// `[B]`): `[len, 1]`, or `[B, 1, len, 1]` per sequence, in `dtype`. The same ops as
    /// mlx_lm's: integer positions, a float32 true division, floor, log.
    pub fn factors(&self, offset: &Array, len: i32, dtype: Dtype) -> Result<Array> {
        let positions = ops::arange(0, len, 1, Dtype::Int32)?;
        let per_sequence = offset.ndim() > 0;
        let offset = if per_sequence {
            ops::reshape(offset, &[-1, 1])?
        } else {
            offset.clone()
        };
        let blocks = ops::floor(&ops::divide(
            &ops::add(&positions, &offset)?,
            self.original_max_position_embeddings,
        )?)?;
        let scaling = ops::add(
            1.0,
            &ops::multiply(self.beta, &ops::log(&ops::add(1.0, &blocks)?)?)?,
        )?;
        let shape: &[i32] = if per_sequence {
            &[-1, 1, len, 1]
        } else {
            &[len, 1]
        };
        ops::reshape(&scaling, shape)?.astype(dtype)
    }
}

/// Python: ministral3's `Attention`: llama's, the queries multiplied by
/// [`Llama4Scaling`]'s factors after rope, before attention at `head_dim ** -0.5`.
#[derive(Debug, Clone, TreeNode)]
pub struct QueryScaledAttention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub rope: RotaryEmbedding,
    #[tree(static)]
    pub scaling: Llama4Scaling,
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
}

impl QueryScaledAttention {
    /// `a`, llama's attention as loaded without rope, q/k norms or output gate (whose
    /// projections and sizes this takes), rotating with `rope` and its queries scaled by
    /// `scaling`.
    pub fn new(
        a: Attention,
        rope: RotaryEmbedding,
        scaling: Llama4Scaling,
    ) -> QueryScaledAttention {
        debug_assert!(a.rope.is_none() && a.q_norm.is_none() && !a.output_gate);
        QueryScaledAttention {
            q_proj: a.q_proj,
            k_proj: a.k_proj,
            v_proj: a.v_proj,
            o_proj: a.o_proj,
            rope,
            scaling,
            n_heads: a.n_heads,
            n_kv_heads: a.n_kv_heads,
            head_dim: a.head_dim,
            scale: a.scale,
            window: a.window,
        }
    }
}

impl TokenMixer for QueryScaledAttention {
    /// Python (ministral3's `shard`): llama's split by heads; the factors are per position.
    fn shard(&mut self, group: &mlx_rs::distributed::Group) -> Result<()> {
        HeadProjections {
            q_proj: &mut self.q_proj,
            k_proj: &mut self.k_proj,
            v_proj: &mut self.v_proj,
            o_proj: &mut self.o_proj,
            n_heads: &mut self.n_heads,
            n_kv_heads: &mut self.n_kv_heads,
        }
        .shard(group)
    }

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let rows = ctx.rows;
        let queries = heads(&self.q_proj.forward(x)?, rows, self.n_heads, None)?;
        let keys = heads(&self.k_proj.forward(x)?, rows, self.n_kv_heads, None)?;
        let values = heads(&self.v_proj.forward(x)?, rows, self.n_kv_heads, None)?;
        // Rope here rather than in `attend` (which then has none): the factors multiply the
        // rotated queries. The position is the one `attend` would rotate at.
        let (queries, keys, offset) = match cache.as_deref() {
            None => (
                self.rope.forward(&queries, 0)?,
                self.rope.forward(&keys, 0)?,
                Array::from_scalar(0i32),
            ),
            Some(c) => {
                let offset = match c {
                    LayerCache::Kv(c) => c.rope_offset()?,
                    LayerCache::Rotating(c) => c.offset.clone(),
                    LayerCache::Quantized(c) => c.offset.clone(),
                    other => {
                        return Err(wrong_input(&format!(
                            "an attention layer got a {} (a recurrent layer's cache)",
                            other.class_name()
                        )))
                    }
                };
                (
                    self.rope.forward(&queries, &offset)?,
                    self.rope.forward(&keys, &offset)?,
                    offset,
                )
            }
        };
        let factors = self.scaling.factors(&offset, rows.len, x.dtype())?;
        let queries = ops::multiply(&queries, &factors)?;
        let out = attend(
            queries,
            keys,
            values,
            None,
            self.scale,
            ctx.masks.for_window(self.window),
            self.window,
            ctx.kernels.fused_decode_attention,
            cache,
        )?;
        self.o_proj.forward(&merge_heads(&out)?)
    }

    // make_cache and window (Python: ministral3's `make_cache`).
    crate::blocks::decoder::attention_cache!();
}
