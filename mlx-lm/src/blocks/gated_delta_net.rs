//! The gated delta net, the linear-attention token mixer of Qwen3.5 and Qwen3-Next (Python:
//! `mlx_lm.models.qwen3_next.Qwen3NextGatedDeltaNet` as Qwen3.5 uses it).
//!
//! It carries a convolution state and a recurrent state between calls, both leaves of the
//! model's cache tree ([`ArraysCache`]); Python's `mx.compile` rejects that cache, here it goes
//! through `compile_mut` like any other state.

use mlx_nn::{Conv1d, Forward, MaybeQuantizedLinear};
use mlx_rs::{fast, ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::decoder::{LayerContext, TokenMixer};
use crate::blocks::mlp::silu;
use crate::blocks::norm::RmsNormGated;
use crate::blocks::rows::{wrong_input, Rows};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::Checkpoint;
use crate::kernels::gated_delta::gated_delta_update;

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
}

/// Python: `GatedDeltaNet`.
#[derive(Debug, Clone, TreeNode)]
pub struct GatedDeltaNet {
    pub conv1d: Conv1d,
    pub in_proj_qkv: MaybeQuantizedLinear,
    pub in_proj_z: MaybeQuantizedLinear,
    pub in_proj_b: MaybeQuantizedLinear,
    pub in_proj_a: MaybeQuantizedLinear,
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
}

impl GatedDeltaNet {
    fn key_dim(&self) -> i32 {
        self.num_k_heads * self.head_k_dim
    }

    fn conv_dim(&self) -> i32 {
        2 * self.key_dim() + self.num_v_heads * self.head_v_dim
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
        Ok(GatedDeltaNet {
            conv1d: Conv1d {
                weight: ck.array(&p("conv1d.weight"), &[conv_dim, k, 1])?,
                bias: None,
                stride: 1,
                padding: 0,
                dilation: 1,
                groups: conv_dim,
                frozen: Default::default(),
            },
            in_proj_qkv: ck.linear(&p("in_proj_qkv"), d, conv_dim, false)?,
            in_proj_z: ck.linear(&p("in_proj_z"), d, value_dim, false)?,
            in_proj_b: ck.linear(&p("in_proj_b"), d, hv, false)?,
            in_proj_a: ck.linear(&p("in_proj_a"), d, hv, false)?,
            dt_bias: ck.array(&p("dt_bias"), &[hv])?,
            a_log: ck.array(&p("A_log"), &[hv])?,
            norm: RmsNormGated {
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
        let cache = match cache {
            None => None,
            Some(LayerCache::Arrays(c)) => Some(c),
            Some(_) => {
                return Err(wrong_input(
                    "a linear-attention layer got a key/value cache",
                ))
            }
        };
        let qkv = rows.unfold(&self.in_proj_qkv.forward(inputs)?)?;
        let z = ops::reshape(
            &self.in_proj_z.forward(inputs)?,
            &[b, s, self.num_v_heads, self.head_v_dim],
        )?;
        let beta_in = rows.unfold(&self.in_proj_b.forward(inputs)?)?;
        let a = rows.unfold(&self.in_proj_a.forward(inputs)?)?;

        // A right-padded batch's prefill: the padding after each sequence's tokens must not
        // reach the convolution's or the recurrence's state (Python: `ArraysCache.make_mask`).
        let mask = match cache.as_ref().and_then(|c| c.lengths.as_ref()) {
            Some(lengths) => Some(ops::less(
                &ops::arange(0, s, 1, Dtype::Int32)?,
                &ops::expand_dims(lengths, 1)?,
            )?),
            None => None,
        };
        let qkv = match &mask {
            Some(m) => ops::where_(
                &ops::expand_dims(m, -1)?,
                &qkv,
                &ops::zeros(&[], qkv.dtype())?,
            )?,
            None => qkv,
        };
        let n_keep = self.conv_kernel_size - 1;
        let conv_state = match &cache {
            Some(c) => c.conv.clone(),
            None => ops::zeros(&[b, n_keep, self.conv_dim()], inputs.dtype())?,
        };
        let conv_input = ops::concatenate(&[conv_state, qkv], 1)?;
        let conv_out = silu(&self.conv1d.forward(&conv_input)?)?;
        let kd = self.key_dim();
        let parts = ops::split(&conv_out, vec![kd, 2 * kd], -1)?;
        let q = ops::reshape(&parts[0], &[b, s, self.num_k_heads, self.head_k_dim])?;
        let k = ops::reshape(&parts[1], &[b, s, self.num_k_heads, self.head_k_dim])?;
        let v = ops::reshape(&parts[2], &[b, s, self.num_v_heads, self.head_v_dim])?;

        let (q, k) = normalize_qk(&q, &k, (self.head_k_dim as f64).powf(-0.5), 1e-6)?;
        let state = match &cache {
            Some(c) => c.recurrent.clone(),
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
            match c.lengths.take() {
                // Each sequence's last `n_keep` real inputs.
                Some(lengths) => {
                    let ends = ops::clip(&lengths, 0, s)?;
                    let positions = ops::add(
                        &ops::expand_dims(&ends, 1)?,
                        &ops::arange(0, n_keep, 1, Dtype::Int32)?,
                    )?;
                    let positions = ops::expand_dims(&positions, -1)?;
                    c.conv = ops::take_along_axis(&conv_input, &positions, 1)?;
                    c.lengths = Some(ops::subtract(&lengths, s)?);
                }
                None => {
                    let len = conv_input.shape()[1];
                    c.conv = ops::contiguous(&conv_input.index((.., len - n_keep..))?, None)?;
                }
            }
            c.recurrent = state;
        }
        let out = self.norm.forward(&out, &z)?;
        self.out_proj.forward(&ops::reshape(&out, &[b * s, -1])?)
    }
}

/// Python: `normalize_qk`: L2-normalizes q and k through `rms_norm` (whose eps is added to the
/// mean square, hence the scaled eps) and folds the readout scale into q.
fn normalize_qk(q: &Array, k: &Array, inv_scale: f64, eps: f64) -> Result<(Array, Array)> {
    let rms_eps = (eps * inv_scale * inv_scale) as f32;
    let q = ops::multiply(
        &fast::rms_norm(q, None, rms_eps)?,
        (inv_scale * inv_scale) as f32,
    )?;
    let k = ops::multiply(&fast::rms_norm(k, None, rms_eps)?, inv_scale as f32)?;
    Ok((q, k))
}

impl TokenMixer for GatedDeltaNet {
    fn key(&self) -> &'static str {
        "linear_attn"
    }

    fn accepts(key: &str) -> bool {
        key == "linear_attn"
    }

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        GatedDeltaNet::forward(self, x, ctx.rows, ctx.kernels.fused_gated_delta, cache)
    }

    /// The convolution state and the float32 recurrent state (Python: `ArraysCache(2)`,
    /// allocated up front).
    fn make_cache(&self, batch: i32, _capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Arrays(ArraysCache {
            conv: ops::zeros(&[batch, self.conv_kernel_size - 1, self.conv_dim()], dtype)?,
            recurrent: ops::zeros(
                &[batch, self.num_v_heads, self.head_v_dim, self.head_k_dim],
                Dtype::Float32,
            )?,
            lengths: None,
        }))
    }
}
