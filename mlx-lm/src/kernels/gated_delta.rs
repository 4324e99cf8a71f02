//! The gated delta rule of Qwen3.5's linear-attention layers, as one CUDA kernel (Python:
//! `mlx_lm.models.gated_delta`'s `gated_delta_kernel`, which mlx_lm has for Metal only).
//!
//! Elsewhere mlx_lm runs the recurrence as array ops, step by step (`gated_delta_ops`): about
//! twenty primitives per token and layer, each dispatched by MLX on every call, and a prompt
//! of 512 tokens is a graph of some 10,000 primitives per layer. This kernel keeps each row
//! of the `[Dv, Dk]` state in one warp's registers and runs every step of the sequence in
//! one launch: one primitive per layer, for a decode step as for a prompt.
//!
//! Per step `t` and value head, with `k` and `q` of the head's key group (all in float32, as
//! the ops compute it):
//!
//! ```text
//! S = S * g[t]
//! delta = (v[t] - S k[t]) * beta[t]
//! S = S + delta k[t]^T
//! y[t] = S q[t]
//! ```
//!
//! and where `mask[t]` is false the state stays as it was (the output at that step is not
//! used). The sums over `Dk` run in another order than the ops' reductions, so the result
//! differs from theirs in the last bits; eager and compiled steps both use the kernel where it
//! applies, so they agree with each other. It runs where MLX's default device is a CUDA GPU
//! and the model's [`KernelOptions::fused_gated_delta`](crate::KernelOptions) is on.

use std::sync::OnceLock;

use mlx_rs::compile::CompiledFn;
use mlx_rs::fast::{CudaKernel, KernelLaunch, TemplateArg};
use mlx_rs::{ops, Array, Dtype, Error, Result};

use crate::kernels::on_cuda;

/// Threads per block: four warps, four state rows.
const THREADS: i32 = 128;

// One warp per state row (sequence b, value head hv, value feature dv); each lane holds DK / 32
// of the row's columns for the whole sequence. Shapes are read at run time, so one compiled
// kernel serves every sequence length (MLX keeps custom kernels in memory only).
const SOURCE: &str = r#"
  constexpr int E = DK / 32;
  const int B = v_shape[0];
  const int S = v_shape[1];
  const int HV = v_shape[2];
  const int DV = v_shape[3];
  const int HK = q_shape[2];
  const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= (int64_t)B * HV * DV) {
    return;
  }
  const int dv = row % DV;
  const int hv = (row / DV) % HV;
  const int b = row / ((int64_t)DV * HV);
  const int hk = hv / (HV / HK);

  float s[E];
  const float* sp = state_in + row * DK + lane * E;
#pragma unroll
  for (int i = 0; i < E; i++) {
    s[i] = sp[i];
  }
  for (int t = 0; t < S; t++) {
    const int64_t bt = (int64_t)b * S + t;
    const int64_t qk_at = (bt * HK + hk) * DK + lane * E;
    const int64_t head = bt * HV + hv;
    const float gt = static_cast<float>(g[head]);
    const float betat = static_cast<float>(beta[head]);
    const float vt = static_cast<float>(v[head * DV + dv]);
    float kv[E];
    float next[E];
    float mem = 0.f;
#pragma unroll
    for (int i = 0; i < E; i++) {
      kv[i] = static_cast<float>(k[qk_at + i]);
      next[i] = s[i] * gt;
      mem += next[i] * kv[i];
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
      mem += __shfl_xor_sync(0xffffffff, mem, o);
    }
    const float delta = (vt - mem) * betat;
    float y = 0.f;
#pragma unroll
    for (int i = 0; i < E; i++) {
      next[i] = next[i] + kv[i] * delta;
      y += next[i] * static_cast<float>(q[qk_at + i]);
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
      y += __shfl_xor_sync(0xffffffff, y, o);
    }
    if (lane == 0) {
      out[head * DV + dv] = static_cast<T>(y);
    }
    if (!HAS_MASK || mask[bt]) {
#pragma unroll
      for (int i = 0; i < E; i++) {
        s[i] = next[i];
      }
    }
  }
  float* so = state_out + row * DK + lane * E;
#pragma unroll
  for (int i = 0; i < E; i++) {
    so[i] = s[i];
  }
"#;

fn kernel() -> Result<&'static CudaKernel> {
    static KERNEL: OnceLock<CudaKernel> = OnceLock::new();
    if let Some(k) = KERNEL.get() {
        return Ok(k);
    }
    let k = CudaKernel::new(
        "mlx_lm_gated_delta",
        &["q", "k", "v", "g", "beta", "state_in", "mask"],
        &["out", "state_out"],
        SOURCE,
        "",
        true,
        0,
    )?;
    Ok(KERNEL.get_or_init(|| k))
}

fn is_float(d: Dtype) -> bool {
    matches!(d, Dtype::Bfloat16 | Dtype::Float16 | Dtype::Float32)
}

/// Whether [`gated_delta_kernel`] takes these arguments: `q`, `k` `[B, S, Hk, Dk]` and `v`
/// `[B, S, Hv, Dv]` of one float dtype, `g` and `beta` `[B, S, Hv]` of float dtypes, the state
/// `[B, Hv, Dv, Dk]` in float32, `mask` (if any) `bool [B, S]`, `Dk` a multiple of 32 up to
/// 256, `Hv` a multiple of `Hk`, and the current stream on a CUDA GPU.
pub fn is_supported(
    q: &Array,
    k: &Array,
    v: &Array,
    g: &Array,
    beta: &Array,
    state: &Array,
    mask: Option<&Array>,
) -> Result<bool> {
    let (qs, vs) = (q.shape(), v.shape());
    let shapes = qs.len() == 4
        && k.shape() == qs
        && vs.len() == 4
        && vs[..2] == qs[..2]
        && g.shape() == &vs[..3]
        && beta.shape() == &vs[..3]
        && state.shape() == [vs[0], vs[2], vs[3], qs[3]]
        && mask.map_or(true, |m| m.shape() == &qs[..2])
        && qs[3] % 32 == 0
        && (32..=256).contains(&qs[3])
        && qs[2] > 0
        && vs[2] % qs[2] == 0;
    let dtypes = is_float(q.dtype())
        && k.dtype() == q.dtype()
        && v.dtype() == q.dtype()
        && is_float(g.dtype())
        && is_float(beta.dtype())
        && state.dtype() == Dtype::Float32
        && mask.map_or(true, |m| m.dtype() == Dtype::Bool);
    Ok(shapes && dtypes && on_cuda()?)
}

/// Runs the gated delta rule over the `S` steps of the inputs (shapes as
/// [`is_supported`] lists them) from `state`: the outputs `[B, S, Hv, Dv]` in `q`'s dtype and
/// the final state. An `Err` where [`is_supported`] says no.
pub fn gated_delta_kernel(
    q: &Array,
    k: &Array,
    v: &Array,
    g: &Array,
    beta: &Array,
    state: &Array,
    mask: Option<&Array>,
) -> Result<(Array, Array)> {
    if !is_supported(q, k, v, g, beta, state, mask)? {
        let described = |a: &Array| format!("{:?} {:?}", a.shape(), a.dtype());
        return Err(Error::InvalidArgument(format!(
            "gated_delta_kernel: unsupported arguments (q {}, k {}, v {}, g {}, beta {}, state \
             {}, mask {}), or not on a CUDA GPU",
            described(q),
            described(k),
            described(v),
            described(g),
            described(beta),
            described(state),
            mask.map_or("none".into(), described),
        )));
    }
    apply_unchecked(q, k, v, g, beta, state, mask)
}

/// [`gated_delta_kernel`] after [`is_supported`] said yes.
pub(crate) fn apply_unchecked(
    q: &Array,
    k: &Array,
    v: &Array,
    g: &Array,
    beta: &Array,
    state: &Array,
    mask: Option<&Array>,
) -> Result<(Array, Array)> {
    let vs = v.shape();
    let rows = vs[0] * vs[2] * vs[3];
    let threads = (rows * 32 + THREADS - 1) / THREADS * THREADS;
    let launch = KernelLaunch::default()
        .grid((threads, 1, 1))
        .threadgroup((THREADS, 1, 1))
        .template(vec![
            ("T".into(), TemplateArg::Dtype(q.dtype())),
            ("DK".into(), TemplateArg::Int(q.shape()[3])),
            ("HAS_MASK".into(), TemplateArg::Bool(mask.is_some())),
        ]);
    // Without a mask the kernel never reads it; any array fills the slot.
    let mask = mask.unwrap_or(g);
    let mut outs = kernel()?.apply(
        &[q, k, v, g, beta, state, mask],
        &[(vs, q.dtype()), (state.shape(), Dtype::Float32)],
        &launch,
    )?;
    // Two output shapes were declared above, so MLX hands back two arrays.
    let state = outs.pop().expect("the kernel declares two outputs");
    let out = outs.pop().expect("the kernel declares two outputs");
    Ok((out, state))
}

/// Calls `f` compiled in `slot`, as mlx_lm calls its `@mx.compile`d helpers. On a GPU a compiled
/// chain of element-wise ops is one fused kernel, which may contract a multiply and an add
/// into one rounding; only the same compiled graph gives mlx_lm's bits there.
fn compiled(
    slot: &'static OnceLock<CompiledFn>,
    shapeless: bool,
    inputs: &[&Array],
    f: &dyn Fn(&[Array]) -> Result<Vec<Array>>,
) -> Result<Vec<Array>> {
    slot.get_or_init(|| CompiledFn::new(shapeless))
        .call_with_refs(inputs, &[], f)
}

/// Python: `compute_g`: `exp(-exp(A_log) * softplus(a + dt_bias))`, in float32, compiled
/// shapeless as mlx_lm compiles it.
pub fn compute_g(a_log: &Array, a: &Array, dt_bias: &Array) -> Result<Array> {
    static SLOT: OnceLock<CompiledFn> = OnceLock::new();
    let g = compiled(&SLOT, true, &[a_log, a, dt_bias], &|xs| {
        let softplus = ops::logaddexp(&ops::add(&xs[1], &xs[2])?, 0.0f32)?;
        let decay = ops::multiply(
            &ops::negative(&ops::exp(&xs[0].astype(Dtype::Float32)?)?)?,
            &softplus,
        )?;
        Ok(vec![ops::exp(&decay)?])
    })?;
    Ok(g.into_iter().next().expect("one output"))
}

/// Python: `compute_lower_bound_g` (kimi_k3's `gate_lower_bound`, bailing_moe_v3's
/// `kda_lower_bound`): the decay's log bounded by `lower_bound`, `exp(lower_bound *
/// sigmoid(exp(A_log) * (a + dt_bias)))`, in float32, compiled shapeless as mlx_lm compiles it
/// (the bound a constant of the trace, as Python's float argument).
pub fn compute_lower_bound_g(
    a_log: &Array,
    a: &Array,
    dt_bias: &Array,
    lower_bound: f64,
) -> Result<Array> {
    static SLOT: OnceLock<CompiledFn> = OnceLock::new();
    // Python's float times a float32 array: the bound rounded to float32.
    let bound = lower_bound as f32;
    let g = SLOT.get_or_init(|| CompiledFn::new(true)).call_with_refs(
        &[a_log, a, dt_bias],
        &[u64::from(bound.to_bits())],
        &|xs| {
            let rate = ops::exp(&xs[0].astype(Dtype::Float32)?)?;
            let x = ops::multiply(&rate, &ops::add(&xs[1].astype(Dtype::Float32)?, &xs[2])?)?;
            Ok(vec![ops::exp(&ops::multiply(&ops::sigmoid(&x)?, bound)?)?])
        },
    )?;
    Ok(g.into_iter().next().expect("one output"))
}

/// Which decay gate [`gated_delta_update_gated`] computes from the projection `a`.
#[derive(Debug, Clone, Copy, PartialEq, mlx_tree::StaticData)]
pub enum DecayGate {
    /// Python: `compute_g`, `exp(-exp(A_log) * softplus(a + dt_bias))`.
    Softplus,
    /// Python: `compute_lower_bound_g` with this `lower_bound` (bailing_moe_v3's
    /// `kda_lower_bound`, `kda_safe_gate`).
    LowerBound(f64),
}

/// Python: `_gated_delta_step_ops`, one step of the recurrence (`q`, `k` `[B, H, Dk]`, `v`
/// `[B, H, Dv]`, `g` `[B, H]` or per key channel `[B, H, Dk]`, `beta` `[B, H]`, `state` `[B, H, Dv, Dk]`, `mask` `[B]`): the step's
/// output in `q`'s dtype and the new state, compiled as mlx_lm compiles it (shapes part of
/// the trace: one trace per prompt shape, then cache hits for every step).
fn gated_delta_step(
    q: &Array,
    k: &Array,
    v: &Array,
    g: &Array,
    beta: &Array,
    state: &Array,
    mask: Option<&Array>,
) -> Result<(Array, Array)> {
    static SLOT: OnceLock<CompiledFn> = OnceLock::new();
    let mut inputs = vec![q, k, v, g, beta, state];
    inputs.extend(mask);
    let out = compiled(&SLOT, false, &inputs, &|xs| {
        let (q, k, v, g, beta, old_state) = (&xs[0], &xs[1], &xs[2], &xs[3], &xs[4], &xs[5]);
        // Python: `g[..., None, None]` for a gate per head `[B, H]`, `g[..., None, :]` for
        // one per key channel `[B, H, Dk]` (kimi_linear's).
        let decay = if g.ndim() == 3 {
            ops::expand_dims(g, -2)?
        } else {
            ops::expand_dims(g, [-1, -2])?
        };
        let state = ops::multiply(old_state, &decay)?;
        let k_row = ops::expand_dims(k, -2)?;
        let kv_mem = ops::sum(&ops::multiply(&state, &k_row)?, -1, false)?;
        let delta = ops::multiply(&ops::subtract(v, &kv_mem)?, &ops::expand_dims(beta, -1)?)?;
        let state = ops::add(
            &state,
            &ops::multiply(&k_row, &ops::expand_dims(&delta, -1)?)?,
        )?;
        let y = ops::sum(
            &ops::multiply(&state, &ops::expand_dims(q, -2)?)?,
            -1,
            false,
        )?;
        let state = match xs.get(6) {
            Some(mask) => ops::where_(&ops::expand_dims(mask, [1, 2, 3])?, &state, old_state)?,
            None => state,
        };
        Ok(vec![y.astype(q.dtype())?, state])
    })?;
    // The traced closure above returns exactly these two arrays.
    let [y, state]: [Array; 2] = out
        .try_into()
        .unwrap_or_else(|_| unreachable!("the gated delta step returns two arrays"));
    Ok((y, state))
}

/// Python: `gated_delta_update`: the gate and the write strength from the projections
/// (`beta = sigmoid(b)`, `g = compute_g(A_log, a, dt_bias)`), then the recurrence over the
/// sequence, as one kernel where it applies and `use_kernel` allows it, else as ops.
#[allow(clippy::too_many_arguments)]
pub fn gated_delta_update(
    q: &Array,
    k: &Array,
    v: &Array,
    a: &Array,
    b: &Array,
    a_log: &Array,
    dt_bias: &Array,
    state: Array,
    mask: Option<&Array>,
    use_kernel: bool,
) -> Result<(Array, Array)> {
    let beta = ops::sigmoid(b)?;
    gated_delta_update_with_beta(q, k, v, a, &beta, a_log, dt_bias, state, mask, use_kernel)
}

/// Python: `gated_delta_update(..., lower_bound=...)`: [`gated_delta_update`] with the decay
/// gate `gate` says (the write strength `sigmoid(b)` either way).
#[allow(clippy::too_many_arguments)]
pub fn gated_delta_update_gated(
    q: &Array,
    k: &Array,
    v: &Array,
    a: &Array,
    b: &Array,
    a_log: &Array,
    dt_bias: &Array,
    state: Array,
    mask: Option<&Array>,
    use_kernel: bool,
    gate: DecayGate,
) -> Result<(Array, Array)> {
    let beta = ops::sigmoid(b)?;
    let g = match gate {
        DecayGate::Softplus => compute_g(a_log, a, dt_bias)?,
        DecayGate::LowerBound(bound) => compute_lower_bound_g(a_log, a, dt_bias, bound)?,
    };
    gated_delta_recurrence(q, k, v, &g, &beta, state, mask, use_kernel)
}

/// [`gated_delta_update`] with the write strength `beta` given (olmo_hybrid's
/// `allow_neg_eigval` doubles `sigmoid(b)` first, Python's `beta = beta * 2.0`).
#[allow(clippy::too_many_arguments)]
pub fn gated_delta_update_with_beta(
    q: &Array,
    k: &Array,
    v: &Array,
    a: &Array,
    beta: &Array,
    a_log: &Array,
    dt_bias: &Array,
    state: Array,
    mask: Option<&Array>,
    use_kernel: bool,
) -> Result<(Array, Array)> {
    let g = compute_g(a_log, a, dt_bias)?;
    gated_delta_recurrence(q, k, v, &g, beta, state, mask, use_kernel)
}

/// The recurrence of [`gated_delta_update`] with the decay `g` and write strength `beta`
/// given (kimi_k3's lower-bounded decay, [`compute_lower_bound_g`]): one kernel where it
/// applies and `use_kernel` allows it, else the ops.
#[allow(clippy::too_many_arguments)]
pub fn gated_delta_recurrence(
    q: &Array,
    k: &Array,
    v: &Array,
    g: &Array,
    beta: &Array,
    state: Array,
    mask: Option<&Array>,
    use_kernel: bool,
) -> Result<(Array, Array)> {
    if use_kernel && is_supported(q, k, v, g, beta, &state, mask)? {
        return apply_unchecked(q, k, v, g, beta, &state, mask);
    }
    gated_delta_ops(q, k, v, g, beta, state, mask)
}

/// Python: `gated_delta_ops`, the recurrence step by step (what mlx_lm runs on every device
/// but Metal).
pub fn gated_delta_ops(
    q: &Array,
    k: &Array,
    v: &Array,
    g: &Array,
    beta: &Array,
    mut state: Array,
    mask: Option<&Array>,
) -> Result<(Array, Array)> {
    let (hk, hv) = (q.shape()[2], v.shape()[2]);
    let (q, k) = if hv / hk > 1 {
        (ops::repeat(q, hv / hk, -2)?, ops::repeat(k, hv / hk, -2)?)
    } else {
        (q.clone(), k.clone())
    };
    let steps = q.shape()[1];
    let mut ys = Vec::with_capacity(steps as usize);
    for t in 0..steps {
        let at = |x: &Array| x.index((.., t));
        let mask_t = mask.map(at).transpose()?;
        let (y, next) = gated_delta_step(
            &at(&q)?,
            &at(&k)?,
            &at(v)?,
            &at(g)?,
            &at(beta)?,
            &state,
            mask_t.as_ref(),
        )?;
        state = next;
        ys.push(y);
    }
    Ok((ops::stack(&ys, 1)?, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `exp(bound * sigmoid(exp(A_log) * (a + dt_bias)))` against the same formula in f64 on
    /// the host, within `[exp(bound), 1]`; two bounds in one process each get their own
    /// trace (the bound is a constant of it, as Python's `mx.compile` keys on the float).
    #[test]
    fn lower_bound_gate_is_bounded_and_keyed_on_its_bound() {
        let a_log = Array::from_slice(&[0.3f32, -0.7], &[2, 1]).unwrap();
        let a: Vec<f32> = (0..12).map(|i| (i as f32 - 6.0) * 0.9).collect();
        let a_arr = Array::from_slice(&a, &[1, 1, 2, 6]).unwrap();
        let dt: Vec<f32> = (0..12).map(|i| 0.05 * i as f32 - 0.2).collect();
        let dt_arr = Array::from_slice(&dt, &[2, 6]).unwrap();
        for bound in [-5.0f64, -3.0] {
            let g = compute_lower_bound_g(&a_log, &a_arr, &dt_arr, bound).unwrap();
            assert_eq!(g.dtype(), Dtype::Float32);
            let got = g.to_vec::<f32>().unwrap();
            for (i, v) in got.iter().enumerate() {
                let h = i / 6;
                let rate = f64::from([0.3f32, -0.7][h]).exp();
                let x = rate * (f64::from(a[i]) + f64::from(dt[i]));
                let want = (bound * (1.0 / (1.0 + (-x).exp()))).exp();
                assert!(
                    (f64::from(*v) - want).abs() < 1e-6,
                    "{bound} {i}: {v} {want}"
                );
                assert!(
                    f64::from(*v) >= bound.exp() - 1e-7 && *v <= 1.0,
                    "{bound}: {v}"
                );
            }
        }
    }
}
