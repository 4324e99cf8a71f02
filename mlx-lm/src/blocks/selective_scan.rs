//! The Mamba-1 selective scan, the token mixer of mamba and falcon_mamba (Python:
//! `mlx_lm.models.mamba.MambaBlock`; jamba's `MambaMixer` is the same scan with weighted
//! dt/B/C norms and another ops order).
//!
//! ```text
//! x, z = split(in_proj(h), 2)
//! x = silu(conv1d(x))                       # causal depthwise, state in cache[0]
//! for each position t:                      # Python: `ssm_step`
//!     Δ, B, C = split(x_proj(x_t), [R, R+N])  # falcon_mamba: weightless rms_norm of each
//!     Δ = softplus(dt_proj(Δ))
//!     h = (Δ x_t) ⊗ B + h * exp(Δ ⊗ A)        # A = -exp(A_log); h in cache[1]
//!     y_t = h · C + D x_t
//! out_proj(silu(z) * y)
//! ```
//!
//! mlx_lm runs the scan one position at a time, projections included, as a Python loop of
//! small ops: a prefill of `T` tokens is `T` rounds of some 20 ops per layer (23 with
//! falcon_mamba's norms), each a separate dispatch. The loop here is that loop, op for op,
//! so the logits are mlx_lm's bit for bit; a decode step (`T = 1`) is one round, and
//! compiled it is one graph. Hoisting `x_proj`/`dt_proj`/softplus out of the loop (one
//! matmul over all positions) would remove a quarter of those ops, but a matmul of `T` rows
//! need not round each row as a matmul of one does, so it would not be mlx_lm's bits. On a
//! CUDA GPU (the model's [`KernelOptions::fused_selective_scan`](crate::KernelOptions)) the
//! projections run once over all positions and the recurrence is one kernel
//! ([`kernels::selective_scan`](crate::kernels::selective_scan)), for a prompt as for a decode
//! step: a faster prefill, not mlx_lm's bits.
//!
//! The state stays in the model's dtype, as mlx_lm keeps it (transformers keeps it in
//! float32; the same numbers for a float32 model). Unlike mlx_lm, a right-padded batch's
//! padding never reaches the state: the convolution keeps each sequence's last real inputs
//! ([`causal_conv1d`]) and the scan holds a sequence's state still over its padding.

use mlx_nn::Frozen;
use mlx_nn::{Conv1d, Forward, MaybeQuantizedLinear};
use mlx_rs::{fast, ops, Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::blocks::conv::{causal_conv1d, conv_state, load_depthwise_conv1d, ConvActivation};
use crate::blocks::mlp::swiglu;
use crate::blocks::rows::{wrong_input, Rows};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::Checkpoint;
use crate::kernels::on_cuda;
use crate::kernels::selective_scan::{self, ScanInputs};

/// The slot of the convolution's last inputs (Python: `cache[0]`), `[batch, conv_kernel -
/// 1, intermediate_size]`, model dtype.
const CONV: usize = 0;
/// The slot of the SSM state (Python: `cache[1]`), `[batch, intermediate_size,
/// state_size]`, model dtype.
const SSM: usize = 1;

/// What normalizes Δ, B and C after `x_proj`.
#[derive(Debug, Clone, Copy, PartialEq, StaticData)]
pub enum BcdtNorm {
    /// Nothing (mamba).
    None,
    /// `rms_norm` without a weight, each of the three (falcon_mamba's `use_bcdt_rms`, eps
    /// `mixer_rms_eps`).
    Weightless { eps: f32 },
}

/// The sizes of a [`MambaMixer`] (Python: mamba's `ModelArgs`).
#[derive(Debug, Clone, PartialEq)]
pub struct MambaMixerConfig {
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub state_size: i32,
    pub conv_kernel: i32,
    pub time_step_rank: i32,
    /// Biases of `in_proj` and `out_proj`.
    pub use_bias: bool,
    pub use_conv_bias: bool,
    pub bcdt_norm: BcdtNorm,
}

/// Python: `MambaBlock`.
#[derive(Debug, Clone, TreeNode)]
pub struct MambaMixer {
    pub in_proj: MaybeQuantizedLinear,
    pub conv1d: Conv1d,
    pub x_proj: MaybeQuantizedLinear,
    pub dt_proj: MaybeQuantizedLinear,
    /// `[intermediate_size, state_size]`.
    #[tree(rename = "A_log")]
    pub a_log: Array,
    /// `[intermediate_size]`.
    #[tree(rename = "D")]
    pub d: Array,
    pub out_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub time_step_rank: i32,
    #[tree(static)]
    pub state_size: i32,
    #[tree(static)]
    pub bcdt_norm: BcdtNorm,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl MambaMixer {
    /// Takes the layer's tensors under `path` (mlx_lm's layout: `conv1d.weight` `[I, K, 1]`).
    pub fn load(ck: &mut Checkpoint, path: &str, a: &MambaMixerConfig) -> crate::Result<Self> {
        let (d, i, n, r) = (
            a.hidden_size,
            a.intermediate_size,
            a.state_size,
            a.time_step_rank,
        );
        let p = |name: &str| format!("{path}.{name}");
        Ok(MambaMixer {
            frozen: Frozen::default(),
            in_proj: ck.linear(&p("in_proj"), d, 2 * i, a.use_bias)?,
            conv1d: load_depthwise_conv1d(ck, &p("conv1d"), i, a.conv_kernel, a.use_conv_bias)?,
            x_proj: ck.linear(&p("x_proj"), i, r + 2 * n, false)?,
            dt_proj: ck.linear(&p("dt_proj"), r, i, true)?,
            a_log: ck.array(&p("A_log"), &[i, n])?,
            d: ck.array(&p("D"), &[i])?,
            out_proj: ck.linear(&p("out_proj"), i, d, a.use_bias)?,
            time_step_rank: r,
            state_size: n,
            bcdt_norm: a.bcdt_norm,
        })
    }

    fn intermediate_size(&self) -> i32 {
        self.d.shape().first().copied().unwrap_or(0)
    }

    /// The layer over rows `h` `[B * L, hidden]`, continuing `cache`'s state; the scan as one
    /// kernel where it applies and `use_kernel` allows it ([`MambaMixer::scan`]).
    pub fn forward(
        &self,
        h: &Array,
        rows: Rows,
        use_kernel: bool,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let mut cache = match cache {
            None => None,
            Some(LayerCache::Arrays(c)) if c.cache.len() == 2 => Some(c),
            Some(other) => {
                return Err(wrong_input(&format!(
                    "a mamba layer needs an ArraysCache of 2 arrays, got a {}",
                    other.class_name()
                )))
            }
        };
        let xz = ops::split(&self.in_proj.forward(h)?, 2, -1)?;
        let (x, z) = (rows.unfold(&xz[0])?, &xz[1]);
        let mask = match &cache {
            Some(c) => c.make_mask(rows.len)?,
            None => None,
        };
        let x = causal_conv1d(
            &self.conv1d,
            &x,
            mask.as_ref(),
            cache.as_deref_mut(),
            CONV,
            ConvActivation::Silu,
        )?;
        let state = cache.as_ref().map(|c| c[SSM].clone());
        let (y, state) = self.scan(&x, state, mask.as_ref(), use_kernel)?;
        if let Some(c) = cache {
            c[SSM] = state;
            c.advance(rows.len)?;
        }
        self.out_proj.forward(&swiglu(z, &rows.fold(&y)?)?)
    }

    /// The selective scan of `x` `[B, T, I]` (after the convolution) from `state` `[B, I, N]`
    /// (`None`: no earlier positions, Python's `state=None`): `y` `[B, T, I]` and the state
    /// after the last position. Where `mask` (`bool [B, T]`) is false the position is a
    /// right-padded batch's padding and the state does not move. With `use_kernel`, one
    /// kernel where it applies ([`kernels::selective_scan`](crate::kernels::selective_scan)),
    /// else mlx_lm's loop.
    pub fn scan(
        &self,
        x: &Array,
        mut state: Option<Array>,
        mask: Option<&Array>,
        use_kernel: bool,
    ) -> Result<(Array, Array)> {
        let a = ops::negative(&ops::exp(&self.a_log)?)?;
        if use_kernel && on_cuda()? {
            if let Some(out) = self.scan_kernel(x, &a, state.as_ref(), mask)? {
                return Ok(out);
            }
        }
        let t_len = x.shape().get(1).copied().unwrap_or(0);
        let mut ys = Vec::with_capacity(t_len as usize);
        for t in 0..t_len {
            let xt = x.index((.., t))?;
            let (y, new_state) = self.step(&xt, &a, state.as_ref())?;
            let new_state = match (mask, &state) {
                (Some(m), Some(old)) => {
                    let keep = ops::reshape(&m.index((.., t))?, &[-1, 1, 1])?;
                    ops::where_(&keep, &new_state, old)?
                }
                (Some(m), None) => {
                    let keep = ops::reshape(&m.index((.., t))?, &[-1, 1, 1])?;
                    ops::where_(&keep, &new_state, &ops::zeros(&[], new_state.dtype())?)?
                }
                (None, _) => new_state,
            };
            state = Some(new_state);
            ys.push(y);
        }
        let state = match state {
            Some(s) => s,
            None => ops::zeros(
                &[
                    x.shape().first().copied().unwrap_or(0),
                    self.intermediate_size(),
                    self.state_size,
                ],
                x.dtype(),
            )?,
        };
        Ok((ops::stack(&ys, 1)?, state))
    }

    /// The scan as one kernel, the projections over every position at once: `None` where
    /// the kernel does not take the arrays.
    fn scan_kernel(
        &self,
        x: &Array,
        a: &Array,
        state: Option<&Array>,
        mask: Option<&Array>,
    ) -> Result<Option<(Array, Array)>> {
        let (delta, b, c) = self.projections(x)?;
        let state = match state {
            Some(s) => s.clone(),
            None => ops::zeros(
                &[
                    x.shape().first().copied().unwrap_or(0),
                    self.intermediate_size(),
                    self.state_size,
                ],
                x.dtype(),
            )?,
        };
        let inputs = ScanInputs {
            x,
            delta: &delta,
            a,
            b: &b,
            c: &c,
            d: &self.d,
        };
        if !selective_scan::is_supported(&inputs, &state, mask)? {
            return Ok(None);
        }
        selective_scan::apply_unchecked(&inputs, &state, mask).map(Some)
    }

    /// Δ (after its softplus), B and C of the positions `x` `[..., I]`.
    fn projections(&self, x: &Array) -> Result<(Array, Array, Array)> {
        let (r, n) = (self.time_step_rank, self.state_size);
        let parts = ops::split(&self.x_proj.forward(x)?, vec![r, r + n], -1)?;
        let (mut delta, mut b, mut c) = (parts[0].clone(), parts[1].clone(), parts[2].clone());
        if let BcdtNorm::Weightless { eps } = self.bcdt_norm {
            delta = fast::rms_norm(&delta, None, eps)?;
            b = fast::rms_norm(&b, None, eps)?;
            c = fast::rms_norm(&c, None, eps)?;
        }
        let delta = mlx_nn::softplus(&self.dt_proj.forward(&delta)?)?;
        Ok((delta, b, c))
    }

    /// Python: `ssm_step`: one position `x` `[B, I]`.
    fn step(&self, x: &Array, a: &Array, state: Option<&Array>) -> Result<(Array, Array)> {
        let (delta, b, c) = self.projections(x)?;
        let mut new_state = ops::multiply(
            &ops::expand_dims(&ops::multiply(&delta, x)?, -1)?,
            &ops::expand_dims(&b, 1)?,
        )?;
        if let Some(state) = state {
            let decay = ops::exp(&ops::multiply(&ops::expand_dims(&delta, -1)?, a)?)?;
            new_state = ops::add(&new_state, &ops::multiply(state, &decay)?)?;
        }
        let y = ops::squeeze(&ops::matmul(&new_state, &ops::expand_dims(&c, -1)?)?, 2)?;
        let y = ops::add(&y, &ops::multiply(&self.d, x)?)?;
        Ok((y, new_state))
    }

    /// The convolution's state and the SSM state, zeros in the model's dtype (Python:
    /// `ArraysCache(size=2)`, whose slots the layer fills on its first call).
    pub fn make_cache(&self, batch: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Arrays(ArraysCache::new(vec![
            conv_state(&self.conv1d, batch, dtype)?,
            ops::zeros(&[batch, self.intermediate_size(), self.state_size], dtype)?,
        ])))
    }
}
