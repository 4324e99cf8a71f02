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
//! applies, so they agree with each other. It runs where MLX's default device is a CUDA GPU;
//! [`set_fused_gated_delta`] turns it off.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use mlx_rs::fast::{CudaKernel, KernelLaunch, TemplateArg};
use mlx_rs::{Array, Dtype, Error, Result};

use crate::models::decode_attention::on_cuda;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Whether Qwen3.5's linear-attention layers on a CUDA GPU use the one-kernel recurrence
/// (default: on). Off, they run it as array ops, step by step, as on other devices. Affects
/// steps built after the call (a compiled step keeps what it traced).
pub fn set_fused_gated_delta(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether [`set_fused_gated_delta`] has it on.
pub fn fused_gated_delta() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

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
/// 256, `Hv` a multiple of `Hk`, the current stream on a CUDA GPU, and
/// [`set_fused_gated_delta`] on.
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
    Ok(fused_gated_delta() && shapes && dtypes && on_cuda()?)
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
             {}, mask {}), fused gated delta {}, or not on a CUDA GPU",
            described(q),
            described(k),
            described(v),
            described(g),
            described(beta),
            described(state),
            mask.map_or("none".into(), described),
            if fused_gated_delta() { "on" } else { "off" },
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
    match (outs.pop(), outs.pop()) {
        (Some(state), Some(out)) => Ok((out, state)),
        _ => Err(Error::Mlx(
            "gated_delta_kernel: expected two outputs".into(),
        )),
    }
}
