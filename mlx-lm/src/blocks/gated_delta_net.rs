//! The gated delta net, the linear-attention token mixer of Qwen3.5 and Qwen3-Next (Python:
//! `mlx_lm.models.qwen3_next.Qwen3NextGatedDeltaNet` as Qwen3.5 uses it).
//!
//! It carries a convolution state and a recurrent state between calls, both leaves of the
//! model's cache tree ([`ArraysCache`]); Python's `mx.compile` rejects that cache, here it goes
//! through `compile_mut` like any other state.

use mlx_nn::{Conv1d, Forward, MaybeQuantizedLinear};
use mlx_rs::{fast, ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::conv::{causal_conv1d, conv_state, load_depthwise_conv1d, ConvActivation};
use crate::blocks::decoder::TokenMixer;
use crate::blocks::layer::LayerContext;
use crate::blocks::norm::RmsNormGated;
use crate::blocks::rows::{wrong_input, Rows};
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
            conv1d: load_depthwise_conv1d(ck, &p("conv1d"), conv_dim, k, false)?,
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
        let mut cache = match cache {
            None => None,
            Some(LayerCache::Arrays(c)) => Some(c),
            Some(other) => {
                return Err(wrong_input(&format!(
                    "a linear-attention layer got a {}",
                    other.class_name()
                )))
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
        Ok(LayerCache::Arrays(ArraysCache::new(vec![
            conv_state(&self.conv1d, batch, dtype)?,
            ops::zeros(
                &[batch, self.num_v_heads, self.head_v_dim, self.head_k_dim],
                Dtype::Float32,
            )?,
        ])))
    }
}
