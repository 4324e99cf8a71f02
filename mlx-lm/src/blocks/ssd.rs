//! Mamba-2's state-space duality (SSD) mixer, shared by mamba2, nemotron_h, granitemoehybrid
//! and falcon_h1 (Python: `mlx_lm.models.ssm` and each model's `Mamba2Mixer` / `Mamba2Block`).
//!
//! Per head `h` with scalar decay `A_h = -exp(A_log_h)`, per position `t` with step
//! `dt_t = clip(softplus(dt_t + dt_bias), lo, hi)` and group inputs `B_t`, `C_t` `[N]`:
//!
//! ```text
//! S_t = exp(dt_t A) S_{t-1} + dt_t x_t B_t^T       # state [head_dim, N] per head, float32
//! y_t = S_t C_t + D x_t
//! ```
//!
//! mlx_lm computes it in its "attention" form, chunks of 256 positions at a time
//! ([`ssm_attn`]): within a chunk `y = tril((C B^T) * exp(segsum(dt A))) (dt x)`, between
//! chunks the state carries over. On Metal it runs a one-token kernel for decode steps; on
//! every other device (CUDA, CPU) mlx_lm runs these ops for decode too, and so does this port,
//! op for op, so the numbers are mlx_lm's, except on a CUDA GPU, where a decode step is one
//! kernel of this port's ([`kernels::ssm`](crate::kernels::ssm), the model's
//! [`KernelOptions::fused_ssm_update`](crate::KernelOptions)).
//!
//! A right-padded batch's prefill passes `mask` (`bool [B, T]`) and `lengths` (each
//! sequence's real positions still to come): padded positions get a zero decay step and
//! `-inf` in the segment sums, and the state carried out of a chunk is the one after each
//! sequence's last real position, so the padding never reaches the state.

use mlx_nn::Frozen;
use std::sync::OnceLock;

use mlx_nn::{Conv1d, Forward, MaybeQuantizedLinear};
use mlx_rs::compile::CompiledFn;
use mlx_rs::ops::CumsumOptions;
use mlx_rs::{fast, ops, Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::blocks::conv::{causal_conv1d, conv_state, load_depthwise_conv1d, ConvActivation};
use crate::blocks::mlp::swiglu;
use crate::blocks::rows::{arrays_entry, wrong_input, Rows};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::Checkpoint;
use crate::kernels::ssm;

/// The slot of the convolution's state in the mixer's [`ArraysCache`] (Python: `cache[0]`):
/// `[batch, conv_kernel - 1, conv_dim]` in the model's dtype.
const CONV: usize = 0;
/// The slot of the SSM state (Python: `cache[1]`): `[batch, heads, head_dim, state_size]`,
/// float32 whatever the model's dtype (mlx_lm's `dt` is float32, and so is the product).
const SSM: usize = 1;

/// Positions per chunk of [`ssm_attn`] (Python: `step=256`).
const STEP: i32 = 256;

/// Python: `compute_dt` (`@mx.compile`, shapes part of the trace):
/// `clip(softplus(float32(dt) + dt_bias), lo, hi)`. The limits are constants of the trace,
/// as Python's floats are, so they key the compiled function's cache.
pub fn compute_dt(dt: &Array, dt_bias: &Array, limit: (f32, f32)) -> Result<Array> {
    static SLOT: OnceLock<CompiledFn> = OnceLock::new();
    let (lo, hi) = limit;
    let out = SLOT.get_or_init(|| CompiledFn::new(false)).call_with_refs(
        &[dt, dt_bias],
        &[u64::from(lo.to_bits()), u64::from(hi.to_bits())],
        &|xs| {
            let dt = ops::add(&xs[0].astype(Dtype::Float32)?, &xs[1])?;
            // Python: nn.softplus, `logaddexp(x, 0)`.
            let dt = ops::logaddexp(&dt, 0.0f32)?;
            Ok(vec![ops::clip(&dt, lo, hi)?])
        },
    )?;
    Ok(out
        .into_iter()
        .next()
        .expect("compute_dt returns one array"))
}

/// Python: `segsum(x, mask)`: for `x` `[..., T]`, `out[..., i, j] = x[j+1] + ... + x[i]` for
/// `j < i`, `0` on the diagonal and the entries above it summed as zeros (the `tril` before
/// the `cumsum`); with `mask` (`[B, T]`), masked positions count as zero and any pair with a
/// masked position is `-inf`.
fn segsum(x: &Array, mask: Option<&Array>) -> Result<Array> {
    let l = x.shape().last().copied().unwrap_or(0);
    let (x, mask) = match mask {
        Some(m) => {
            let m = ops::expand_dims(m, 1)?;
            (ops::multiply(x, &m)?, Some(m))
        }
        None => (x.clone(), None),
    };
    let x = ops::repeat(&ops::expand_dims(&x, -1)?, l, -1)?;
    let x = ops::tril(&x, -1)?;
    let x_segsum = ops::cumsum(&x, -2, CumsumOptions::default())?;
    match mask {
        Some(m) => {
            let pairs = ops::multiply(&ops::expand_dims(&m, -2)?, &ops::expand_dims(&m, -1)?)?;
            ops::where_(&pairs, &x_segsum, Array::from_scalar(f32::NEG_INFINITY))
        }
        None => Ok(x_segsum),
    }
}

/// The inputs of [`ssm_attn`] / [`ssm_update`] besides the state: `x` `[B, T, H, P]`, `b`
/// and `c` `[B, T, G, N]`, `dt` `[B, T, H]` (before [`compute_dt`]), and the layer's
/// parameters `A_log`, `D`, `dt_bias` `[H]`.
#[derive(Debug, Clone, Copy)]
pub struct SsmInputs<'a> {
    pub x: &'a Array,
    pub a_log: &'a Array,
    pub b: &'a Array,
    pub c: &'a Array,
    pub d: &'a Array,
    pub dt: &'a Array,
    pub dt_bias: &'a Array,
    pub time_step_limit: (f32, f32),
}

/// Python: `ssm_attn`, the SSD forward pass in chunks of 256 positions: the output `[B, T,
/// H, P]` in `x`'s dtype and the state after the last (real) position, float32. `state`
/// `None` is mlx_lm's fresh cache (no state term at all); `mask` and `lengths` are a
/// right-padded batch's (see the module doc).
pub fn ssm_attn(
    inputs: &SsmInputs<'_>,
    state: Option<Array>,
    mask: Option<&Array>,
    lengths: Option<&Array>,
) -> Result<(Array, Array)> {
    let SsmInputs {
        x,
        a_log,
        b: b_in,
        c: c_in,
        d,
        dt,
        dt_bias,
        time_step_limit,
    } = *inputs;
    let &[b, l, h, dh] = x.shape() else {
        return Err(wrong_input(
            "ssm_attn: x must be [batch, length, heads, head_dim]",
        ));
    };
    let &[_, _, g, n] = b_in.shape() else {
        return Err(wrong_input(
            "ssm_attn: B must be [batch, length, groups, state]",
        ));
    };
    let dt = compute_dt(dt, dt_bias, time_step_limit)?;
    let repeats = h / g;
    let a = ops::negative(&ops::exp(a_log)?.astype(dt.dtype())?)?;
    let mut dt_a = ops::multiply(&dt, &ops::reshape(&a, &[1, 1, -1])?)?;
    if let Some(m) = mask {
        dt_a = ops::multiply(&dt_a, &ops::expand_dims(m, -1)?)?;
    }
    let dtx = ops::multiply(&ops::reshape(&dt, &[b, l, h, 1])?, x)?;

    let mut state = state;
    let mut lengths = lengths.cloned();
    let mut ys = Vec::new();
    let mut i = 0;
    while i < l {
        let end = (i + STEP).min(l);
        let chunk_mask = match mask {
            Some(m) => Some(m.index((.., i..end))?),
            None => None,
        };
        let (y, next) = ssd_chunk(
            &dtx.index((.., i..end))?,
            &dt_a.index((.., i..end))?,
            &b_in.index((.., i..end))?,
            &c_in.index((.., i..end))?,
            state.as_ref(),
            chunk_mask.as_ref(),
            lengths.as_ref(),
            (repeats, dh, n),
            x.dtype(),
        )?;
        state = Some(next);
        if let Some(len) = &lengths {
            lengths = Some(ops::subtract(len, STEP)?);
        }
        ys.push(y);
        i = end;
    }
    let y = ops::add(
        &ops::concatenate(&ys, 1)?,
        &ops::multiply(x, &ops::reshape(d, &[1, 1, h, 1])?)?,
    )?;
    let state = match state {
        Some(s) => s,
        // An empty sequence: Python returns the state it got, here none; nothing to carry.
        None => return Err(wrong_input("ssm_attn: a sequence of no positions")),
    };
    Ok((y, state))
}

/// One chunk of [`ssm_attn`] (Python: its inner `_step`), `s` positions: `dtx` `[B, s, H,
/// P]`, `dt_a` `[B, s, H]`, `b`/`c` `[B, s, G, N]`.
#[allow(clippy::too_many_arguments)]
fn ssd_chunk(
    dtx: &Array,
    dt_a: &Array,
    b: &Array,
    c: &Array,
    state: Option<&Array>,
    mask: Option<&Array>,
    lengths: Option<&Array>,
    (repeats, dh, n): (i32, i32, i32),
    out_dtype: Dtype,
) -> Result<(Array, Array)> {
    let s = dtx.shape()[1];
    let batch = dtx.shape()[0];
    let g = b.shape()[2];
    let b_t = ops::transpose(b, [0, 2, 3, 1])?;
    let cb = ops::matmul(&ops::swapaxes(c, 1, 2)?, &b_t)?;
    let cb = ops::repeat(&cb, repeats, 1)?;
    let decay = ops::exp(&segsum(&ops::swapaxes(dt_a, 1, 2)?, mask)?)?;
    let attention = ops::tril(&ops::multiply(&cb, &decay)?, 0)?;
    let y = ops::matmul(&attention, &ops::swapaxes(dtx, 1, 2)?)?;
    let mut y = ops::swapaxes(&y, 1, 2)?;

    let decay = match lengths {
        Some(len) => {
            let pos = ops::maximum(&ops::subtract(&ops::minimum(len, STEP)?, 1)?, 0)?;
            let pos = ops::expand_dims(&pos, [1, 2, 3])?;
            ops::take_along_axis(&decay, &pos, 2)?
        }
        None => decay.index((.., .., s - 1..))?,
    };
    let decay = ops::transpose(&decay, [0, 3, 1, 2])?;
    let b_heads = ops::swapaxes(&ops::repeat(&b_t, repeats, 1)?, 2, 3)?;
    let dtx_decay = ops::multiply(dtx, &decay)?;
    let dtx_decay = ops::swapaxes(&ops::swapaxes(&dtx_decay, 1, 2)?, 2, 3)?;
    let mut next = ops::matmul(&dtx_decay, &b_heads)?;

    if let Some(state) = state {
        let exp_cumsum = ops::exp(&ops::cumsum(dt_a, -2, CumsumOptions::default())?)?;
        let last = exp_cumsum.index((.., -1))?;
        next = ops::add(
            &next,
            &ops::multiply(&ops::expand_dims(&last, [-1, -2])?, state)?,
        )?;
        let c = ops::reshape(c, &[batch, s, g, 1, n, 1])?;
        let prev = ops::matmul(&ops::reshape(state, &[batch, 1, g, repeats, dh, n])?, &c)?;
        let prev = ops::flatten(&prev.squeeze(-1)?, 2, 3)?;
        y = ops::add(
            &y,
            &ops::multiply(&ops::expand_dims(&exp_cumsum, -1)?, &prev)?,
        )?;
        if let Some(len) = lengths {
            let done = ops::expand_dims(&ops::less(len, 0)?, [1, 2, 3])?;
            next = ops::where_(&done, state, &next)?;
        }
    }
    Ok((y.astype(out_dtype)?, next))
}

/// Python: `ssm_update`: a decode step (one position, a state, no right-padded batch's mask)
/// as one kernel where it applies and `use_kernel` allows it (mlx_lm's is for Metal GPUs,
/// this port's for CUDA GPUs: [`kernels::ssm`](crate::kernels::ssm)), else [`ssm_attn`], as
/// mlx_lm runs it everywhere else, for decode steps too.
pub fn ssm_update(
    inputs: &SsmInputs<'_>,
    state: Option<Array>,
    mask: Option<&Array>,
    lengths: Option<&Array>,
    use_kernel: bool,
) -> Result<(Array, Array)> {
    if let (true, Some(s), None, None) = (use_kernel, &state, mask, lengths) {
        let i = inputs;
        if ssm::is_supported(i.x, i.a_log, i.b, i.c, i.d, i.dt, s)? {
            let dt = compute_dt(i.dt, i.dt_bias, i.time_step_limit)?;
            return ssm::apply_unchecked(i.x, i.a_log, i.b, i.c, i.d, &dt, s);
        }
    }
    ssm_attn(inputs, state, mask, lengths)
}

/// The gated RMSNorm after the SSM, `norm(y, gate)`.
#[derive(Debug, Clone, TreeNode)]
pub struct MambaRmsNormGated {
    pub weight: Array,
    #[tree(static)]
    pub eps: f32,
    /// Normalize each group of this many features on its own (`intermediate / n_groups`);
    /// `None`: the whole width at once.
    #[tree(static)]
    pub group_size: Option<i32>,
    /// Normalize `y` first and gate after (falcon_h1's `mamba_norm_before_gate`), rather
    /// than normalize the gated `y`.
    #[tree(static)]
    pub norm_before_gate: bool,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl MambaRmsNormGated {
    /// `rms_norm(silu(gate) * y)` over the full width with the weight inside the norm
    /// (Python: mamba2's and granitemoehybrid's `MambaRMSNormGated`, `rms_norm(x, weight)`),
    /// or, with `group_size`, per group with the weight applied after (Python: nemotron_h's:
    /// `weight * rms_norm(unflatten(x, (-1, group)), None).flatten(-2)`, which is also what
    /// transformers' Mamba-2 computes for every model). With `norm_before_gate` the norm
    /// comes first and `silu(gate)` multiplies its output (Python: `FalconH1RMSNormGated`).
    pub fn forward(&self, y: &Array, gate: &Array) -> Result<Array> {
        if self.norm_before_gate {
            swiglu(gate, &self.normalize(y)?)
        } else {
            self.normalize(&swiglu(gate, y)?)
        }
    }

    fn normalize(&self, x: &Array) -> Result<Array> {
        match self.group_size {
            None => fast::rms_norm(x, Some(&self.weight), self.eps),
            Some(group) => {
                let x = ops::unflatten(x, -1, &[-1, group])?;
                let x = fast::rms_norm(&x, None, self.eps)?;
                ops::multiply(&self.weight, &ops::flatten(&x, -2, None)?)
            }
        }
    }
}

/// What follows the SSM in a Mamba-2 mixer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, StaticData)]
pub enum GatedNorm {
    /// The gated RMSNorm, `norm(silu(gate) * y)` (mamba2, nemotron_h, granitemoehybrid).
    GateThenNorm,
    /// `silu(gate) * norm(y)` (falcon_h1 with `mamba_norm_before_gate`).
    NormThenGate,
    /// No norm, only the gate `silu(gate) * y` (falcon_h1 without `mamba_rms_norm`).
    None,
}

/// The sizes and switches of a Mamba-2 mixer.
#[derive(Debug, Clone, Copy, PartialEq, StaticData)]
pub struct Mamba2Config {
    pub hidden_size: i32,
    pub num_heads: i32,
    pub head_dim: i32,
    pub n_groups: i32,
    pub state_size: i32,
    pub conv_kernel: i32,
    /// The bias of `in_proj`.
    pub use_bias: bool,
    /// The bias of `out_proj` (mlx_lm's mamba2 family: `use_bias`; falcon_h1:
    /// `projectors_bias`).
    pub out_proj_bias: bool,
    pub use_conv_bias: bool,
    pub time_step_limit: (f32, f32),
    /// The gated norm's epsilon.
    pub norm_eps: f32,
    /// Whether the gated norm normalizes each of the `n_groups` groups on its own
    /// ([`MambaRmsNormGated`]).
    pub grouped_norm: bool,
    /// The norm after the SSM, and where the gate goes.
    pub gated_norm: GatedNorm,
    /// Whether `D` is cast to the input's dtype before the skip term (nemotron_h,
    /// granitemoehybrid), or used as stored (mamba2).
    pub cast_d: bool,
}

impl Mamba2Config {
    fn intermediate(&self) -> i32 {
        self.num_heads * self.head_dim
    }

    fn conv_dim(&self) -> i32 {
        self.intermediate() + 2 * self.n_groups * self.state_size
    }
}

/// Python: `Mamba2Block` (mamba2) / `Mamba2Mixer` (nemotron_h, granitemoehybrid, ...):
/// `gate, xBC, dt = split(in_proj(h))`; the causal convolution of `xBC` with silu;
/// `x, B, C = split(xBC)`; the SSD ([`ssm_update`]); `out_proj(norm(y, gate))`. Its cache is
/// an `ArraysCache(2)`: the convolution's last inputs, the SSM state in float32.
#[derive(Debug, Clone, TreeNode)]
pub struct Mamba2Mixer {
    pub in_proj: MaybeQuantizedLinear,
    pub conv1d: Conv1d,
    pub dt_bias: Array,
    #[tree(rename = "A_log")]
    pub a_log: Array,
    #[tree(rename = "D")]
    pub d: Array,
    pub norm: Option<MambaRmsNormGated>,
    pub out_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub config: Mamba2Config,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl Mamba2Mixer {
    /// Takes the mixer's tensors under `path`.
    pub fn load(ck: &mut Checkpoint, path: &str, c: &Mamba2Config) -> crate::Result<Mamba2Mixer> {
        let p = |name: &str| format!("{path}.{name}");
        let (h, i) = (c.num_heads, c.intermediate());
        let projection = i + c.conv_dim() + h;
        Ok(Mamba2Mixer {
            frozen: Frozen::default(),
            in_proj: ck.linear(&p("in_proj"), c.hidden_size, projection, c.use_bias)?,
            conv1d: load_depthwise_conv1d(
                ck,
                &p("conv1d"),
                c.conv_dim(),
                c.conv_kernel,
                c.use_conv_bias,
            )?,
            dt_bias: ck.array(&p("dt_bias"), &[h])?,
            a_log: ck.array(&p("A_log"), &[h])?,
            d: ck.array(&p("D"), &[h])?,
            norm: match c.gated_norm {
                GatedNorm::None => None,
                before => Some(MambaRmsNormGated {
                    frozen: Frozen::default(),
                    weight: ck.array(&p("norm.weight"), &[i])?,
                    eps: c.norm_eps,
                    group_size: c.grouped_norm.then_some(i / c.n_groups),
                    norm_before_gate: before == GatedNorm::NormThenGate,
                }),
            },
            out_proj: ck.linear(&p("out_proj"), i, c.hidden_size, c.out_proj_bias)?,
            config: *c,
        })
    }

    /// The mixer over rows `x` `[B * L, hidden]`, continuing `cache`'s state; a decode step
    /// through the one-kernel SSM update where it applies and `use_kernel` allows it
    /// ([`ssm_update`]).
    pub fn forward(
        &self,
        x: &Array,
        rows: Rows,
        use_kernel: bool,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let mut cache = arrays_entry(cache, "a Mamba-2 mixer")?;
        let c = &self.config;
        let (i, conv_dim) = (c.intermediate(), c.conv_dim());
        let projected = self.in_proj.forward(x)?;
        let parts = ops::split(&projected, &[i, i + conv_dim][..], -1)?;
        let (gate, conv_input, dt) = (&parts[0], &parts[1], &parts[2]);
        let mask = match &cache {
            Some(cache) => cache.make_mask(rows.len)?,
            None => None,
        };
        let conv_out = causal_conv1d(
            &self.conv1d,
            &rows.unfold(conv_input)?,
            mask.as_ref(),
            cache.as_deref_mut(),
            CONV,
            ConvActivation::Silu,
        )?;
        let gn = c.n_groups * c.state_size;
        let parts = ops::split(&conv_out, &[i, i + gn][..], -1)?;
        let (b, l) = (rows.batch, rows.len);
        let hidden = ops::reshape(&parts[0], &[b, l, c.num_heads, c.head_dim])?;
        let b_in = ops::reshape(&parts[1], &[b, l, c.n_groups, c.state_size])?;
        let c_in = ops::reshape(&parts[2], &[b, l, c.n_groups, c.state_size])?;
        let d = if c.cast_d {
            self.d.astype(hidden.dtype())?
        } else {
            self.d.clone()
        };
        let dt = rows.unfold(dt)?;
        let inputs = SsmInputs {
            x: &hidden,
            a_log: &self.a_log,
            b: &b_in,
            c: &c_in,
            d: &d,
            dt: &dt,
            dt_bias: &self.dt_bias,
            time_step_limit: c.time_step_limit,
        };
        let y = match cache {
            Some(cache) => {
                let (y, state) = ssm_update(
                    &inputs,
                    Some(cache[SSM].clone()),
                    mask.as_ref(),
                    cache.lengths.clone().as_ref(),
                    use_kernel,
                )?;
                cache[SSM] = state;
                cache.advance(l)?;
                y
            }
            None => ssm_update(&inputs, None, mask.as_ref(), None, use_kernel)?.0,
        };
        let y = ops::reshape(&y, &[b * l, i])?;
        let y = match &self.norm {
            Some(norm) => norm.forward(&y, gate)?,
            None => swiglu(gate, &y)?,
        };
        self.out_proj.forward(&y)
    }

    /// The mixer's state (Python: `ArraysCache(size=2)`, allocated up front): the
    /// convolution's last inputs in `dtype`, the SSM state in float32.
    pub fn make_cache(&self, batch: i32, dtype: Dtype) -> Result<LayerCache> {
        let c = &self.config;
        Ok(LayerCache::Arrays(ArraysCache::new(vec![
            conv_state(&self.conv1d, batch, dtype)?,
            ops::zeros(
                &[batch, c.num_heads, c.head_dim, c.state_size],
                Dtype::Float32,
            )?,
        ])))
    }
}
