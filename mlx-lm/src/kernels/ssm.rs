//! One decode step of Mamba-2's state-space model as one CUDA kernel (Python:
//! `mlx_lm.models.ssm`'s `ssm_kernel` / `ssm_update_kernel`, which mlx_lm has for Metal only).
//!
//! Elsewhere mlx_lm runs a decode step through `ssm_attn`, the chunked "attention" form of the
//! SSD with a chunk of one position: `segsum`, a tril, three matmuls, a cumsum, repeats and
//! transposes, several dozen primitives per layer and token for what is one multiply-add per
//! state entry. This kernel does the step itself: per sequence `b`, head `h` (of group `g`)
//! and head feature `p`, with `dt` after `compute_dt` (float32) and everything in float32:
//!
//! ```text
//! A = -exp(A_log[h])                        # rounded to A_log's dtype first, as the ops do
//! S[p, n] = exp(dt A) S[p, n] + dt x[p] B[g, n]
//! y[p] = sum_n S[p, n] C[g, n] + D[h] x[p]
//! ```
//!
//! One warp per state row `S[p, :]`, its lanes over the `N` state entries (lane-strided, so the
//! warp's reads of the row, `B` and `C` are coalesced), one launch for every layer's step. The
//! sum over `N` runs in another order than the ops' matmuls, and `C B^T` is not rounded to the
//! model's dtype first as the ops' matmul rounds it, so the output differs from theirs in the
//! last bits (bfloat16: a rounding of that term); the state is the same sum of two products.
//! It runs where MLX's default device is a CUDA GPU and the model's
//! [`KernelOptions::fused_ssm_update`](crate::KernelOptions) is on, for a step of one position
//! with a state and no right-padded batch's mask (as mlx_lm runs its Metal kernel); elsewhere
//! the ops run.

use std::sync::OnceLock;

use mlx_rs::fast::{CudaKernel, KernelLaunch, TemplateArg};
use mlx_rs::{Array, Dtype, Error, Result};

use crate::kernels::on_cuda;

/// Threads per block: four warps, four state rows.
const THREADS: i32 = 128;

// One warp per state row (sequence b, head h, head feature p); lane i takes the state entries
// i, i + 32, ... below N (none where N < 32 and i >= N). Sizes besides N are read from the
// shapes at run time, so one compiled kernel serves every batch size and model of a state size
// (MLX keeps custom kernels in memory only).
// `x` [B, 1, H, P], `b`/`c` [B, 1, G, N], `dt` [B, 1, H] float32, `a_log`/`d` [H], state
// [B, H, P, N] float32; T is the output's dtype, TA A_log's.
const SOURCE: &str = r#"
  const int H = x_shape[2];
  const int P = x_shape[3];
  const int G = b_shape[2];
  const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= (int64_t)x_shape[0] * H * P) {
    return;
  }
  const int64_t bh = row / P;
  const int h = bh % H;
  const int64_t bg = (bh / H) * G + h / (H / G);

  const float dt_ = dt[bh];
  const float A = -static_cast<float>(static_cast<TA>(expf(static_cast<float>(a_log[h]))));
  const float dA = expf(A * dt_);
  const float x_ = static_cast<float>(x[row]);
  const float dtx = dt_ * x_;
  const float* si = state_in + row * N;
  float* so = state_out + row * N;
  const int64_t bc = bg * N;
  float acc = 0.f;
#pragma unroll
  for (int i = lane; i < N; i += 32) {
    const float s = dA * si[i] + dtx * static_cast<float>(b[bc + i]);
    so[i] = s;
    acc += s * static_cast<float>(c[bc + i]);
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    acc += __shfl_xor_sync(0xffffffff, acc, o);
  }
  if (lane == 0) {
    out[row] = static_cast<T>(acc + x_ * static_cast<float>(d[h]));
  }
"#;

fn kernel() -> Result<&'static CudaKernel> {
    static KERNEL: OnceLock<CudaKernel> = OnceLock::new();
    if let Some(k) = KERNEL.get() {
        return Ok(k);
    }
    let k = CudaKernel::new(
        "mlx_lm_ssm_update",
        &["x", "a_log", "b", "c", "d", "dt", "state_in"],
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

/// The dtype of `y + x * D` in the ops path (MLX's promotion of two float dtypes: the same
/// one, else float32, bfloat16 with float16 included).
fn output_dtype(x: Dtype, d: Dtype) -> Dtype {
    if x == d {
        x
    } else {
        Dtype::Float32
    }
}

/// Whether [`ssm_update_kernel`] takes these arguments: `x` `[B, 1, H, P]` (no size zero), `b`
/// and `c` `[B, 1, G, N]`, `dt` `[B, 1, H]`, `a_log` and `d` `[H]`, all of float dtypes, the
/// state `[B, H, P, N]` in float32, `H` a multiple of `G`, and the current stream on a CUDA
/// GPU. Any state size `N`: lanes past it add nothing (mlx_lm's Metal kernel needs a multiple
/// of 32). `dt` may be given before or after `compute_dt`: only its shape and kind are asked.
pub fn is_supported(
    x: &Array,
    a_log: &Array,
    b: &Array,
    c: &Array,
    d: &Array,
    dt: &Array,
    state: &Array,
) -> Result<bool> {
    let (xs, bs) = (x.shape(), b.shape());
    let shapes = xs.len() == 4
        && xs.iter().all(|&n| n > 0)
        && xs[1] == 1
        && bs.len() == 4
        && bs[..2] == xs[..2]
        && c.shape() == bs
        && dt.shape() == &xs[..3]
        && a_log.shape() == [xs[2]]
        && d.shape() == [xs[2]]
        && state.shape() == [xs[0], xs[2], xs[3], bs[3]]
        && bs[3] > 0
        && bs[2] > 0
        && xs[2] % bs[2] == 0;
    let dtypes = [x, a_log, b, c, d, dt].iter().all(|a| is_float(a.dtype()))
        && state.dtype() == Dtype::Float32;
    Ok(shapes && dtypes && on_cuda()?)
}

/// One decode step of the SSM from `state` (shapes as [`is_supported`] lists them, `dt` after
/// [`compute_dt`](crate::blocks::ssd::compute_dt)): the output `[B, 1, H, P]` in the dtype of
/// `y + x * D` (`x`'s, or float32 where `D`'s differs) and the new state in float32. An `Err`
/// where [`is_supported`] says no.
pub fn ssm_update_kernel(
    x: &Array,
    a_log: &Array,
    b: &Array,
    c: &Array,
    d: &Array,
    dt: &Array,
    state: &Array,
) -> Result<(Array, Array)> {
    if !is_supported(x, a_log, b, c, d, dt, state)? || dt.dtype() != Dtype::Float32 {
        let described = |a: &Array| format!("{:?} {:?}", a.shape(), a.dtype());
        return Err(Error::InvalidArgument(format!(
            "ssm_update_kernel: unsupported arguments (x {}, A_log {}, B {}, C {}, D {}, dt {}, \
             state {}), or not on a CUDA GPU",
            described(x),
            described(a_log),
            described(b),
            described(c),
            described(d),
            described(dt),
            described(state),
        )));
    }
    apply_unchecked(x, a_log, b, c, d, dt, state)
}

/// [`ssm_update_kernel`] after [`is_supported`] said yes, `dt` in float32.
pub(crate) fn apply_unchecked(
    x: &Array,
    a_log: &Array,
    b: &Array,
    c: &Array,
    d: &Array,
    dt: &Array,
    state: &Array,
) -> Result<(Array, Array)> {
    let xs = x.shape();
    let rows = xs[0] * xs[2] * xs[3];
    let threads = (rows * 32 + THREADS - 1) / THREADS * THREADS;
    let out_dtype = output_dtype(x.dtype(), d.dtype());
    let launch = KernelLaunch::default()
        .grid((threads, 1, 1))
        .threadgroup((THREADS, 1, 1))
        .template(vec![
            ("T".into(), TemplateArg::Dtype(out_dtype)),
            ("TA".into(), TemplateArg::Dtype(a_log.dtype())),
            ("N".into(), TemplateArg::Int(b.shape()[3])),
        ]);
    let mut outs = kernel()?.apply(
        &[x, a_log, b, c, d, dt, state],
        &[(xs, out_dtype), (state.shape(), Dtype::Float32)],
        &launch,
    )?;
    // Two output shapes were declared above, so MLX hands back two arrays.
    let state = outs.pop().expect("the kernel declares two outputs");
    let out = outs.pop().expect("the kernel declares two outputs");
    Ok((out, state))
}
