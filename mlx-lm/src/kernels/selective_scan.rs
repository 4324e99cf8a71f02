//! Mamba-1's selective scan over a whole sequence as one CUDA kernel (mamba, falcon_mamba and
//! jamba; mlx_lm has no kernel for it on any device).
//!
//! mlx_lm runs the scan one position at a time as a Python loop of small ops (mamba,
//! falcon_mamba: the projections too; jamba: the recurrence's `fma`): a prompt of 512 tokens is
//! some 10,000 dispatched primitives per layer. Here the projections run once over every
//! position (the caller's), and this kernel runs the recurrence, for a decode step as for a
//! prompt: per sequence `b` and channel `i`, with `A = -exp(A_log)` `[I, N]`,
//!
//! ```text
//! h[n] = h[n] exp(Δ[t, i] A[i, n]) + Δ[t, i] x[t, i] B[t, n]
//! y[t, i] = sum_n h[n] C[t, n] + D[i] x[t, i]
//! ```
//!
//! and where `mask[t]` is false (a right-padded batch's padding) the state stays as it was.
//! One thread per channel holds its `N` state entries in registers for the whole sequence and
//! rounds each product, exponential and sum to the model's dtype as mlx_lm's separate ops do
//! (the state stays in that dtype, as mlx_lm keeps it): the values are the ops' but for the
//! order of the readout's sum over `N` (a matmul there; on an NVIDIA GPU a float32 matmul
//! rounds its inputs to TF32, which the kernel does not) and jamba's compiled `fma`, which
//! rounds `h exp(Δ A)` once less. It runs where MLX's default device is a CUDA GPU and the
//! model's [`KernelOptions::fused_selective_scan`](crate::KernelOptions) is on; elsewhere the
//! ops run.

use std::sync::OnceLock;

use mlx_rs::fast::{CudaKernel, KernelLaunch, TemplateArg};
use mlx_rs::{Array, Dtype, Error, Result};

use crate::kernels::on_cuda;

/// Threads per block, one channel each.
const THREADS: i32 = 128;

/// The largest state size the kernel keeps in registers (Mamba-1 models use 16).
const MAX_STATE: i32 = 64;

// One thread per (sequence b, channel i), its N state entries in registers across the T
// positions. `x`/`delta` [B, T, I], `b`/`c` [B, T, N], `a` [I, N], `d` [I], state [B, I, N],
// all in T, the model's dtype; `mask` [B, T] bool where HAS_MASK. Sizes besides N are read from
// the shapes at run time, so one compiled kernel serves every prompt length.
const SOURCE: &str = r#"
  const int batch = x_shape[0];
  const int steps = x_shape[1];
  const int channels = x_shape[2];
  const int64_t bi = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (bi >= (int64_t)batch * channels) {
    return;
  }
  const int i = bi % channels;
  const int64_t seq = bi / channels;
  // Each op's result rounded to the model's dtype, as the ops round it (a no-op in float32).
  auto rt = [](float v) { return static_cast<float>(static_cast<T>(v)); };

  float h[N];
  float an[N];
#pragma unroll
  for (int n = 0; n < N; n++) {
    h[n] = static_cast<float>(state_in[bi * N + n]);
    an[n] = static_cast<float>(a[(int64_t)i * N + n]);
  }
  const float dv = static_cast<float>(d[i]);
  for (int t = 0; t < steps; t++) {
    const int64_t bt = seq * steps + t;
    const float dl = static_cast<float>(delta[bt * channels + i]);
    const float xv = static_cast<float>(x[bt * channels + i]);
    const float dx = rt(dl * xv);
    // Without a mask another array fills the slot (of another type) and is never read.
    const bool keep = !HAS_MASK || reinterpret_cast<const bool*>(mask)[bt];
    float acc = 0.f;
#pragma unroll
    for (int n = 0; n < N; n++) {
      const float decay = rt(expf(rt(dl * an[n])));
      const float s = rt(rt(h[n] * decay) + rt(dx * static_cast<float>(b[bt * N + n])));
      acc += s * static_cast<float>(c[bt * N + n]);
      if (keep) {
        h[n] = s;
      }
    }
    y[bt * channels + i] = static_cast<T>(rt(acc) + rt(dv * xv));
  }
#pragma unroll
  for (int n = 0; n < N; n++) {
    state_out[bi * N + n] = static_cast<T>(h[n]);
  }
"#;

fn kernel() -> Result<&'static CudaKernel> {
    static KERNEL: OnceLock<CudaKernel> = OnceLock::new();
    if let Some(k) = KERNEL.get() {
        return Ok(k);
    }
    let k = CudaKernel::new(
        "mlx_lm_selective_scan",
        &["x", "delta", "a", "b", "c", "d", "state_in", "mask"],
        &["y", "state_out"],
        SOURCE,
        "",
        true,
        0,
    )?;
    Ok(KERNEL.get_or_init(|| k))
}

/// The arrays of one scan: `x` and `delta` (after its softplus) `[B, T, I]`, `b` and `c` `[B,
/// T, N]`, `a` (`-exp(A_log)`) `[I, N]`, `d` `[I]`, the state `[B, I, N]`.
#[derive(Debug, Clone, Copy)]
pub struct ScanInputs<'a> {
    pub x: &'a Array,
    pub delta: &'a Array,
    pub a: &'a Array,
    pub b: &'a Array,
    pub c: &'a Array,
    pub d: &'a Array,
}

/// Whether [`selective_scan_kernel`] takes these arguments: the shapes [`ScanInputs`] lists (no
/// size zero), all of one float dtype with the state, `N` at most 64, `mask` (if any) `bool [B,
/// T]`, and the current stream on a CUDA GPU.
pub fn is_supported(inputs: &ScanInputs<'_>, state: &Array, mask: Option<&Array>) -> Result<bool> {
    let ScanInputs {
        x,
        delta,
        a,
        b,
        c,
        d,
    } = *inputs;
    let (xs, bs) = (x.shape(), b.shape());
    let shapes = xs.len() == 3
        && xs.iter().all(|&n| n > 0)
        && delta.shape() == xs
        && bs.len() == 3
        && bs[..2] == xs[..2]
        && c.shape() == bs
        && (1..=MAX_STATE).contains(&bs[2])
        && a.shape() == [xs[2], bs[2]]
        && d.shape() == [xs[2]]
        && state.shape() == [xs[0], xs[2], bs[2]]
        && mask.map_or(true, |m| m.shape() == &xs[..2]);
    let dtype = x.dtype();
    let dtypes = matches!(dtype, Dtype::Bfloat16 | Dtype::Float16 | Dtype::Float32)
        && [delta, a, b, c, d, state]
            .iter()
            .all(|t| t.dtype() == dtype)
        && mask.map_or(true, |m| m.dtype() == Dtype::Bool);
    Ok(shapes && dtypes && on_cuda()?)
}

/// The scan over the `T` positions of `inputs` from `state` (shapes as [`is_supported`] lists
/// them): the outputs `[B, T, I]` and the state after the last position (after the last real
/// one where `mask` has padding), in the inputs' dtype. An `Err` where [`is_supported`] says
/// no.
pub fn selective_scan_kernel(
    inputs: &ScanInputs<'_>,
    state: &Array,
    mask: Option<&Array>,
) -> Result<(Array, Array)> {
    if !is_supported(inputs, state, mask)? {
        let described = |a: &Array| format!("{:?} {:?}", a.shape(), a.dtype());
        let i = inputs;
        return Err(Error::InvalidArgument(format!(
            "selective_scan_kernel: unsupported arguments (x {}, delta {}, A {}, B {}, C {}, D \
             {}, state {}, mask {}), or not on a CUDA GPU",
            described(i.x),
            described(i.delta),
            described(i.a),
            described(i.b),
            described(i.c),
            described(i.d),
            described(state),
            mask.map_or("none".into(), described),
        )));
    }
    apply_unchecked(inputs, state, mask)
}

/// [`selective_scan_kernel`] after [`is_supported`] said yes.
pub(crate) fn apply_unchecked(
    inputs: &ScanInputs<'_>,
    state: &Array,
    mask: Option<&Array>,
) -> Result<(Array, Array)> {
    let ScanInputs {
        x,
        delta,
        a,
        b,
        c,
        d,
    } = *inputs;
    let xs = x.shape();
    let channels = xs[0] * xs[2];
    let threads = (channels + THREADS - 1) / THREADS * THREADS;
    let launch = KernelLaunch::default()
        .grid((threads, 1, 1))
        .threadgroup((THREADS, 1, 1))
        .template(vec![
            ("T".into(), TemplateArg::Dtype(x.dtype())),
            ("N".into(), TemplateArg::Int(b.shape()[2])),
            ("HAS_MASK".into(), TemplateArg::Bool(mask.is_some())),
        ]);
    // Without a mask the kernel never reads it; any array fills the slot.
    let mask = mask.unwrap_or(d);
    let mut outs = kernel()?.apply(
        &[x, delta, a, b, c, d, state, mask],
        &[(xs, x.dtype()), (state.shape(), x.dtype())],
        &launch,
    )?;
    // Two output shapes were declared above, so MLX hands back two arrays.
    let state = outs.pop().expect("the kernel declares two outputs");
    let y = outs.pop().expect("the kernel declares two outputs");
    Ok((y, state))
}
