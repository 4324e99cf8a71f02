//! The gated delta net, the linear-attention token mixer of Qwen3.5 and Qwen3-Next (Python:
//! `mlx_lm.models.qwen3_5.GatedDeltaNet` and `mlx_lm.models.qwen3_next.Qwen3NextGatedDeltaNet`).
//! The two differ only in their input projections: Qwen3.5 has four (`in_proj_qkv`,
//! `in_proj_z`, `in_proj_b`, `in_proj_a`), Qwen3-Next two fused ones whose outputs interleave
//! the parts per key head (`in_proj_qkvz`, `in_proj_ba`, [`GdnProjections::Fused`]).
//!
//! It carries a convolution state and a recurrent state between calls, both leaves of the
//! model's cache tree ([`ArraysCache`]); Python's `mx.compile` rejects that cache, here it goes
//! through `compile_mut` like any other state.

use mlx_nn::Frozen;
use mlx_nn::{
    shard_linear, Conv1d, Forward, MaybeQuantized, MaybeQuantizedLinear, Segments, Sharding,
};
use mlx_rs::distributed::Group;
use mlx_rs::{fast, ops, Array, Dtype, Error, Result};
use mlx_tree::TreeNode;

use crate::blocks::conv::{causal_conv1d, conv_state, load_depthwise_conv1d, ConvActivation};
use crate::blocks::decoder::{not_shardable, TokenMixer};
use crate::blocks::layer::LayerContext;
use crate::blocks::norm::RmsNormGated;
use crate::blocks::rows::{arrays_entry, wrong_input, Rows};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::Checkpoint;
use crate::kernels::gated_delta::gated_delta_update;

/// The slot of its [`ArraysCache`] holding the convolution's last inputs (Python:
/// `cache[0]`), `[batch, kernel - 1, conv_dim]`.
const CONV: usize = 0;
/// The slot holding the recurrent state (Python: `cache[1]`), `[batch, value_heads,
/// v_head_dim, k_head_dim]`, float32.
const STATE: usize = 1;

/// The sizes of a [`GatedDeltaNet`] (Python: `TextModelArgs`' `linear_*` fields).
#[derive(Debug, Clone, PartialEq)]
pub struct GatedDeltaNetConfig {
    pub hidden_size: i32,
    pub linear_num_value_heads: i32,
    pub linear_num_key_heads: i32,
    pub linear_key_head_dim: i32,
    pub linear_value_head_dim: i32,
    pub linear_conv_kernel_dim: i32,
    pub rms_norm_eps: f32,
    pub projections: GdnProjections,
}

/// How a [`GatedDeltaNet`] stores its input projections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GdnProjections {
    /// Qwen3.5: `in_proj_qkv` `[2 Kd + Vd]`, `in_proj_z` `[Vd]`, `in_proj_b` and `in_proj_a`
    /// `[Hv]`, each part contiguous.
    Separate,
    /// Qwen3-Next: `in_proj_qkvz` `[2 Kd + 2 Vd]` and `in_proj_ba` `[2 Hv]`, each grouped
    /// per key head (`q k v z` of head 0, then of head 1, ...; Python:
    /// `fix_query_key_value_ordering`). Kept fused, as mlx_lm keeps them, so the parameter
    /// paths and the matrix products are mlx_lm's.
    Fused,
}

/// Python: `GatedDeltaNet` / `Qwen3NextGatedDeltaNet`. Either the fused projections
/// (`in_proj_qkvz`, `in_proj_ba`) or the separate ones are present, as
/// [`GdnProjections`] says; the absent ones are no part of the tree.
#[derive(Debug, Clone, TreeNode)]
pub struct GatedDeltaNet {
    pub conv1d: Conv1d,
    pub in_proj_qkvz: Option<MaybeQuantizedLinear>,
    pub in_proj_ba: Option<MaybeQuantizedLinear>,
    pub in_proj_qkv: Option<MaybeQuantizedLinear>,
    pub in_proj_z: Option<MaybeQuantizedLinear>,
    pub in_proj_b: Option<MaybeQuantizedLinear>,
    pub in_proj_a: Option<MaybeQuantizedLinear>,
    pub dt_bias: Array,
    #[tree(rename = "A_log")]
    pub a_log: Array,
    pub norm: RmsNormGated,
    pub out_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub num_k_heads: i32,
    #[tree(static)]
    pub num_v_heads: i32,
    #[tree(static)]
    pub head_k_dim: i32,
    #[tree(static)]
    pub head_v_dim: i32,
    #[tree(static)]
    pub conv_kernel_size: i32,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl GatedDeltaNet {
    fn key_dim(&self) -> i32 {
        self.num_k_heads * self.head_k_dim
    }

    /// Takes the layer's tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        a: &GatedDeltaNetConfig,
    ) -> crate::Result<GatedDeltaNet> {
        let key_dim = a.linear_key_head_dim * a.linear_num_key_heads;
        let value_dim = a.linear_value_head_dim * a.linear_num_value_heads;
        let conv_dim = 2 * key_dim + value_dim;
        let (d, hv, k) = (
            a.hidden_size,
            a.linear_num_value_heads,
            a.linear_conv_kernel_dim,
        );
        let p = |name: &str| format!("{path}.{name}");
        let conv1d = load_depthwise_conv1d(ck, &p("conv1d"), conv_dim, k, false)?;
        let (mut qkvz, mut ba, mut qkv, mut z, mut b, mut a_proj) =
            (None, None, None, None, None, None);
        match a.projections {
            GdnProjections::Fused => {
                qkvz = Some(ck.linear(&p("in_proj_qkvz"), d, conv_dim + value_dim, false)?);
                ba = Some(ck.linear(&p("in_proj_ba"), d, 2 * hv, false)?);
            }
            GdnProjections::Separate => {
                qkv = Some(ck.linear(&p("in_proj_qkv"), d, conv_dim, false)?);
                z = Some(ck.linear(&p("in_proj_z"), d, value_dim, false)?);
                b = Some(ck.linear(&p("in_proj_b"), d, hv, false)?);
                a_proj = Some(ck.linear(&p("in_proj_a"), d, hv, false)?);
            }
        }
        Ok(GatedDeltaNet {
            frozen: Frozen::default(),
            conv1d,
            in_proj_qkvz: qkvz,
            in_proj_ba: ba,
            in_proj_qkv: qkv,
            in_proj_z: z,
            in_proj_b: b,
            in_proj_a: a_proj,
            dt_bias: ck.array(&p("dt_bias"), &[hv])?,
            a_log: ck.array(&p("A_log"), &[hv])?,
            norm: RmsNormGated {
                frozen: Default::default(),
                weight: ck.array(&p("norm.weight"), &[a.linear_value_head_dim])?,
                eps: a.rms_norm_eps,
            },
            out_proj: ck.linear(&p("out_proj"), value_dim, d, false)?,
            num_k_heads: a.linear_num_key_heads,
            num_v_heads: hv,
            head_k_dim: a.linear_key_head_dim,
            head_v_dim: a.linear_value_head_dim,
            conv_kernel_size: k,
        })
    }

    /// The layer over rows `inputs` `[B * L, hidden]`, continuing `cache`'s state; `use_kernel`
    /// allows the one-kernel recurrence.
    pub fn forward(
        &self,
        inputs: &Array,
        rows: Rows,
        use_kernel: bool,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let (b, s) = (rows.batch, rows.len);
        let mut cache = arrays_entry(cache, "a linear-attention layer")?;
        let (qkv, z, beta_in, a) = self.project(inputs, rows)?;

        // A right-padded batch's prefill: the padding after each sequence's tokens must not
        // reach the convolution's or the recurrence's state (Python: `ArraysCache.make_mask`).
        let mask = match &cache {
            Some(c) => c.make_mask(s)?,
            None => None,
        };
        let conv_out = causal_conv1d(
            &self.conv1d,
            &qkv,
            mask.as_ref(),
            cache.as_deref_mut(),
            CONV,
            ConvActivation::Silu,
        )?;
        let kd = self.key_dim();
        let parts = ops::split(&conv_out, vec![kd, 2 * kd], -1)?;
        let q = ops::reshape(&parts[0], &[b, s, self.num_k_heads, self.head_k_dim])?;
        let k = ops::reshape(&parts[1], &[b, s, self.num_k_heads, self.head_k_dim])?;
        let v = ops::reshape(&parts[2], &[b, s, self.num_v_heads, self.head_v_dim])?;

        let (q, k) = normalize_qk(&q, &k, (self.head_k_dim as f64).powf(-0.5), 1e-6)?;
        let state = match &cache {
            Some(c) => c[STATE].clone(),
            None => ops::zeros(
                &[b, self.num_v_heads, self.head_v_dim, self.head_k_dim],
                Dtype::Float32,
            )?,
        };
        let (out, state) = gated_delta_update(
            &q,
            &k,
            &v,
            &a,
            &beta_in,
            &self.a_log,
            &self.dt_bias,
            state,
            mask.as_ref(),
            use_kernel,
        )?;
        if let Some(c) = cache {
            c[STATE] = state;
            c.advance(s)?;
        }
        let out = self.norm.forward(&out, &z)?;
        self.out_proj.forward(&ops::reshape(&out, &[b * s, -1])?)
    }
}

impl GatedDeltaNet {
    /// Python (Qwen3.5's `shard`): keeps this process's share of the key and value heads:
    /// its slice of each of q, k and v in the convolution's input projection and weights,
    /// of the gate and decay projections and parameters, and the output projection sums the
    /// heads' products over `group`. Qwen3-Next's fused projections (interleaved per key
    /// head) have no such split here: an `Err`, as for head counts the group size does not
    /// divide.
    pub fn shard(&mut self, group: &Group) -> Result<()> {
        let (n, rank) = (group.size(), group.rank());
        if self.in_proj_qkvz.is_some() {
            return Err(not_shardable::<Self>());
        }
        if self.num_k_heads % n != 0 || self.num_v_heads % n != 0 {
            return Err(Error::InvalidArgument(format!(
                "[shard] {} key and {} value heads do not split over {n} processes",
                self.num_k_heads, self.num_v_heads
            )));
        }
        let kd = self.key_dim();
        let split = |l: &Option<MaybeQuantizedLinear>,
                     s: Sharding,
                     segments: Segments|
         -> Result<Option<MaybeQuantizedLinear>> {
            l.as_ref()
                .map(|l| {
                    let l = shard_linear(l, s, segments, group)?;
                    Ok(MaybeQuantized::Sharded(Box::new(l)))
                })
                .transpose()
        };
        let qkv = split(
            &self.in_proj_qkv,
            Sharding::AllToSharded,
            vec![kd, 2 * kd].into(),
        )?;
        let z = split(&self.in_proj_z, Sharding::AllToSharded, 1.into())?;
        let b = split(&self.in_proj_b, Sharding::AllToSharded, 1.into())?;
        let a = split(&self.in_proj_a, Sharding::AllToSharded, 1.into())?;
        let out = shard_linear(&self.out_proj, Sharding::ShardedToAll, 1, group)?;
        // The depthwise convolution's channels are q, k, v: each part's block of this rank.
        let conv_weight = ops::concatenate(
            &ops::split(&self.conv1d.weight, vec![kd, 2 * kd], 0)?
                .iter()
                .map(|part| rank_block(part, n, rank))
                .collect::<Result<Vec<_>>>()?,
            0,
        )?;
        let conv_bias = match &self.conv1d.bias {
            Some(bias) => Some(ops::concatenate(
                &ops::split(bias, vec![kd, 2 * kd], 0)?
                    .iter()
                    .map(|part| rank_block(part, n, rank))
                    .collect::<Result<Vec<_>>>()?,
                0,
            )?),
            None => None,
        };
        let dt_bias = rank_block(&self.dt_bias, n, rank)?;
        let a_log = rank_block(&self.a_log, n, rank)?;
        self.in_proj_qkv = qkv;
        self.in_proj_z = z;
        self.in_proj_b = b;
        self.in_proj_a = a;
        self.out_proj = MaybeQuantized::Sharded(Box::new(out));
        self.conv1d.groups = conv_weight.shape()[0];
        self.conv1d.weight = conv_weight;
        self.conv1d.bias = conv_bias;
        self.dt_bias = dt_bias;
        self.a_log = a_log;
        self.num_k_heads /= n;
        self.num_v_heads /= n;
        Ok(())
    }

    /// The input projections of rows `[B * L, hidden]`: the convolution's input `q k v`
    /// `[B, L, 2 Kd + Vd]`, the gate `z` `[B, L, Hv, Dv]`, and `b`, `a` `[B, L, Hv]`.
    fn project(&self, inputs: &Array, rows: Rows) -> Result<(Array, Array, Array, Array)> {
        let (b, s) = (rows.batch, rows.len);
        let shape_z = [b, s, self.num_v_heads, self.head_v_dim];
        let layer =
            |p: &Option<MaybeQuantizedLinear>| p.as_ref().map(|l| l.forward(inputs)).transpose();
        if let (Some(qkvz), Some(ba)) = (layer(&self.in_proj_qkvz)?, layer(&self.in_proj_ba)?) {
            // Python: `fix_query_key_value_ordering`, then the three parts of q, k, v
            // concatenated head-major again as the convolution's input.
            let (nk, dk, dv) = (self.num_k_heads, self.head_k_dim, self.head_v_dim);
            let per_head = self.num_v_heads / nk;
            let qkvz = ops::reshape(&qkvz, &[b, s, nk, -1])?;
            let ba = ops::reshape(&ba, &[b, s, nk, -1])?;
            let parts = ops::split(&qkvz, vec![dk, 2 * dk, 2 * dk + per_head * dv], -1)?;
            let flat = |x: &Array| ops::reshape(x, &[b, s, -1]);
            let qkv =
                ops::concatenate(&[flat(&parts[0])?, flat(&parts[1])?, flat(&parts[2])?], -1)?;
            let z = ops::reshape(&parts[3], &shape_z)?;
            let parts = ops::split(&ba, vec![per_head], -1)?;
            let beta_in = ops::reshape(&parts[0], &[b, s, self.num_v_heads])?;
            let a = ops::reshape(&parts[1], &[b, s, self.num_v_heads])?;
            return Ok((qkv, z, beta_in, a));
        }
        let separate = |p: &Option<MaybeQuantizedLinear>, name: &str| {
            layer(p)?.ok_or_else(|| wrong_input(&format!("a gated delta net without {name}")))
        };
        let qkv = rows.unfold(&separate(&self.in_proj_qkv, "in_proj_qkv")?)?;
        let z = ops::reshape(&separate(&self.in_proj_z, "in_proj_z")?, &shape_z)?;
        let beta_in = rows.unfold(&separate(&self.in_proj_b, "in_proj_b")?)?;
        let a = rows.unfold(&separate(&self.in_proj_a, "in_proj_a")?)?;
        Ok((qkv, z, beta_in, a))
    }
}

/// Rank `rank`'s block of `n` equal blocks of `a` along axis 0, in a buffer of its own
/// (Python: `mx.contiguous(mx.split(a, n)[rank])`).
fn rank_block(a: &Array, n: i32, rank: i32) -> Result<Array> {
    let len = a.shape()[0] / n;
    ops::contiguous(&a.index(rank * len..(rank + 1) * len)?, None)
}

/// Python: `normalize_qk`: L2-normalizes q and k through `rms_norm` (whose eps is added to the
/// mean square, hence the scaled eps) and folds the readout scale into q.
pub(crate) fn normalize_qk(
    q: &Array,
    k: &Array,
    inv_scale: f64,
    eps: f64,
) -> Result<(Array, Array)> {
    let rms_eps = (eps * inv_scale * inv_scale) as f32;
    let q = ops::multiply(
        &fast::rms_norm(q, None, rms_eps)?,
        (inv_scale * inv_scale) as f32,
    )?;
    let k = ops::multiply(&fast::rms_norm(k, None, rms_eps)?, inv_scale as f32)?;
    Ok((q, k))
}

impl TokenMixer for GatedDeltaNet {
    const KEY: &'static str = "linear_attn";

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        GatedDeltaNet::forward(self, x, ctx.rows, ctx.kernels.fused_gated_delta, cache)
    }

    fn shard(&mut self, group: &Group) -> Result<()> {
        GatedDeltaNet::shard(self, group)
    }

    /// The convolution state and the float32 recurrent state (Python: `ArraysCache(2)`,
    /// allocated up front).
    fn make_cache(&self, batch: i32, _capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Arrays(ArraysCache::new(vec![
            conv_state(&self.conv1d, batch, dtype)?,
            ops::zeros(
                &[batch, self.num_v_heads, self.head_v_dim, self.head_k_dim],
                Dtype::Float32,
            )?,
        ])))
    }
}
