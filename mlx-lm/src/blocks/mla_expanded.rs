//! DeepSeek-V2's latent attention as mlx_lm's `DeepseekV2Attention` runs it: the same
//! projections as [`Mla`](crate::blocks::Mla) (a low-rank or plain query, one latent per
//! position plus one rotary key part shared by the heads), but the latent's up-projection
//! `kv_b_proj` stays one linear layer, applied to every position: the keys `[k_nope, k_pe]`
//! and values are expanded per head before the cache, which holds them as any key/value
//! cache does (keys `qk_nope + qk_rope` wide, values `v_head_dim`). The rotary part is the
//! last `qk_rope_head_dim` features of each query and key.

use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm, Sharding};
use mlx_rs::distributed::Group;
use mlx_rs::ops;
use mlx_rs::{Array, Dtype, Error, Result};
use mlx_tree::TreeNode;

use crate::blocks::attention::attend;
use crate::blocks::decoder::TokenMixer;
use crate::blocks::layer::LayerContext;
use crate::blocks::mla::{load_query, project_query, shard_query, split_linear, MlaConfig};
use crate::blocks::rope::RotaryEmbedding;
use crate::blocks::rows::{heads, merge_heads, wrong_input, Rows};
use crate::cache::{KvCache, LayerCache};
use crate::checkpoint::Checkpoint;

/// Python: `mlx_lm.models.deepseek_v2.DeepseekV2Attention`.
#[derive(Debug, Clone, TreeNode)]
pub struct ExpandedMla {
    pub q_proj: Option<MaybeQuantizedLinear>,
    pub q_a_proj: Option<MaybeQuantizedLinear>,
    pub q_a_layernorm: Option<RMSNorm>,
    pub q_b_proj: Option<MaybeQuantizedLinear>,
    pub kv_a_proj_with_mqa: MaybeQuantizedLinear,
    pub kv_a_layernorm: RMSNorm,
    pub kv_b_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub rope: RotaryEmbedding,
    #[tree(static)]
    pub num_heads: i32,
    #[tree(static)]
    pub qk_nope_head_dim: i32,
    #[tree(static)]
    pub kv_lora_rank: i32,
    #[tree(static)]
    pub qk_rope_head_dim: i32,
    #[tree(static)]
    pub v_head_dim: i32,
    #[tree(static)]
    pub scale: f32,
}

impl ExpandedMla {
    /// Takes the layer's tensors under `path` (`model.layers.0.self_attn`).
    pub fn load(ck: &mut Checkpoint, path: &str, c: &MlaConfig) -> crate::Result<ExpandedMla> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, h) = (c.hidden_size, c.num_heads);
        let (q_proj, q_a_proj, q_a_layernorm, q_b_proj) = load_query(ck, path, c)?;
        Ok(ExpandedMla {
            q_proj,
            q_a_proj,
            q_a_layernorm,
            q_b_proj,
            kv_a_proj_with_mqa: ck.linear(
                &p("kv_a_proj_with_mqa"),
                d,
                c.kv_lora_rank + c.qk_rope_head_dim,
                c.attention_bias,
            )?,
            kv_a_layernorm: ck.rms_norm(&p("kv_a_layernorm"), c.kv_lora_rank, 1e-6)?,
            kv_b_proj: ck.linear(
                &p("kv_b_proj"),
                c.kv_lora_rank,
                h * (c.qk_nope_head_dim + c.v_head_dim),
                false,
            )?,
            o_proj: ck.linear(&p("o_proj"), h * c.v_head_dim, d, c.attention_bias)?,
            rope: c.rope.clone(),
            num_heads: h,
            qk_nope_head_dim: c.qk_nope_head_dim,
            kv_lora_rank: c.kv_lora_rank,
            qk_rope_head_dim: c.qk_rope_head_dim,
            v_head_dim: c.v_head_dim,
            scale: c.scale,
        })
    }

    /// Python (deepseek_v2's `shard`): the query's last projection and the latent's
    /// up-projection `kv_b_proj` keep this process's heads (each head's key and value rows
    /// are contiguous in `kv_b_proj`), the output projection sums the heads' products over
    /// `group`; the latent stays whole. A head count the group size does not divide is an
    /// `Err`; on any error the layer is left as it was.
    pub fn shard(&mut self, group: &Group) -> Result<()> {
        let n = group.size();
        if self.num_heads % n != 0 {
            return Err(Error::InvalidArgument(format!(
                "[shard] {} latent attention heads do not split over {n} processes",
                self.num_heads
            )));
        }
        let (q_proj, q_b_proj) = shard_query((&self.q_proj, &self.q_b_proj), group)?;
        let kv_b_proj = split_linear(&self.kv_b_proj, Sharding::AllToSharded, group)?;
        let o_proj = split_linear(&self.o_proj, Sharding::ShardedToAll, group)?;
        (self.q_proj, self.q_b_proj) = (q_proj, q_b_proj);
        (self.kv_b_proj, self.o_proj) = (kv_b_proj, o_proj);
        self.num_heads /= n;
        Ok(())
    }

    /// Attention of rows `x` `[B * L, hidden]` (positions after what `cache` holds): rows out.
    pub fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let rows: Rows = ctx.rows;
        let q = project_query(
            x,
            (
                &self.q_proj,
                &self.q_a_proj,
                &self.q_a_layernorm,
                &self.q_b_proj,
            ),
        )?;
        let q = heads(&q, rows, self.num_heads, None)?;
        let q = ops::split(&q, &[self.qk_nope_head_dim][..], -1)?;
        let compressed = self.kv_a_proj_with_mqa.forward(x)?;
        let parts = ops::split(&compressed, &[self.kv_lora_rank][..], -1)?;
        let k_pe = heads(&parts[1], rows, 1, None)?;
        let kv = self
            .kv_b_proj
            .forward(&self.kv_a_layernorm.forward(&parts[0])?)?;
        let kv = heads(&kv, rows, self.num_heads, None)?;
        let kv = ops::split(&kv, &[self.qk_nope_head_dim][..], -1)?;
        let (k_nope, values) = (&kv[0], &kv[1]);

        let (q_pe, k_pe) = match &cache {
            None => (self.rope.forward(&q[1], 0)?, self.rope.forward(&k_pe, 0)?),
            Some(LayerCache::Kv(c)) => {
                let offset = c.rope_offset()?;
                (
                    self.rope.forward(&q[1], &offset)?,
                    self.rope.forward(&k_pe, &offset)?,
                )
            }
            Some(other) => {
                return Err(wrong_input(&format!(
                    "an MLA layer got a {} (not a key/value cache)",
                    other.class_name()
                )))
            }
        };
        let k_pe = ops::repeat(&k_pe, self.num_heads, 1)?;
        let keys = ops::concatenate(&[k_nope.clone(), k_pe], -1)?;
        let queries = ops::concatenate(&[q[0].clone(), q_pe], -1)?;
        let mask = ctx.masks.for_window(None);
        // The rope is applied above, to the last features only.
        let out = attend(
            queries,
            keys,
            values.clone(),
            None,
            self.scale,
            mask,
            None,
            ctx.kernels.fused_decode_attention,
            cache,
        )?;
        self.o_proj.forward(&merge_heads(&out)?)
    }
}

impl TokenMixer for ExpandedMla {
    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        ExpandedMla::forward(self, x, ctx, cache)
    }

    fn shard(&mut self, group: &Group) -> Result<()> {
        ExpandedMla::shard(self, group)
    }

    /// Per-head keys `[k_nope, k_pe]` and values (Python: a `KVCache`).
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Kv(KvCache::new(
            batch,
            self.num_heads,
            capacity,
            (
                self.qk_nope_head_dim + self.qk_rope_head_dim,
                self.v_head_dim,
            ),
            dtype,
        )?))
    }
}
