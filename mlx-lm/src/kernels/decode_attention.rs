//! Attention of one new token over the written slots of a key/value buffer, as one CUDA
//! kernel.
//!
//! A compiled decode step attends over the cache's whole fixed-size buffer with a mask of the
//! written slots (see [`crate::cache`]). MLX's CUDA backend has no fused attention for a query
//! with an array mask (its vector kernel and cuDNN take none), so that attention runs as about
//! ten separate kernels per layer (two matmuls, softmax, select, broadcasts) over every slot of
//! the buffer: on an H100 that was a fifth of a Qwen3-0.6B decode step's primitives. This
//! kernel reads the write position (the cache's offset array, and its left padding) on the
//! device and attends over exactly the written slots, so the step keeps one shape, is traced
//! once, and pays one kernel per layer.
//!
//! It runs where MLX's default device is a CUDA GPU; elsewhere (CPU, Metal) the masked
//! [`fast::scaled_dot_product_attention`](mlx_rs::fast::scaled_dot_product_attention) runs,
//! which on a CPU equals mlx_lm's result bit for bit. The kernel accumulates in float32 (as
//! MLX's vector kernel does), so on a GPU its result differs from the masked path's in the
//! last bits; eager and compiled steps both use it, so they agree with each other.
//! Whether a model uses it is its own option
//! ([`KernelOptions::fused_decode_attention`](crate::KernelOptions)), set at load.
//!
//! Beside it, a write kernel writes a step's keys and values into a cache's buffers
//! without making new ones, for caches that [write in
//! place](crate::cache::KvCache::set_writes_in_place): the attention takes the offset the
//! write returns, which orders it after the write.

use std::sync::OnceLock;

use mlx_rs::fast::{CudaKernel, KernelLaunch, TemplateArg};
use mlx_rs::{Array, Dtype, Error, Result};

use crate::kernels::on_cuda;

/// Threads per block: 32 lanes share one key's head dimension, each warp takes every
/// `THREADS / 32`-th key.
const THREADS: i32 = 1024;

// One block per (sequence, query head). Each lane holds D / 32 features of the query, and of
// the running output; each warp runs an online softmax over its keys; the warps' partial
// results meet in shared memory. `end` is the cache's offset after this token's write (the
// slots [0, end) are written), `start` each sequence's left padding; WINDOW > 0 keeps the
// last WINDOW slots only. The scale comes in as its float32 bits, so it is exactly the f32
// the masked path multiplies by. Head counts and the capacity are read from the shapes at
// run time rather than compiled in: MLX does not keep custom kernels on disk, and a capacity
// that changes between generations would compile a kernel each time.
const SOURCE: &str = r#"
  constexpr int E = D / 32;
  constexpr int NW = THREADS / 32;
  const float neg_inf = __int_as_float(0xff800000);
  const float scale = __int_as_float(SCALE_BITS);
  const int HQ = q_shape[1];
  const int HKV = k_shape[1];
  const int CAP = k_shape[2];
  const int bh = blockIdx.x;
  const int b = bh / HQ;
  const int hk = (bh % HQ) / (HQ / HKV);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int stop = min(end[0], CAP);
  int first = HAS_START ? max(start[b], 0) : 0;
  if (WINDOW > 0) {
    first = max(first, stop - WINDOW);
  }

  float qv[E];
  const T* qp = q + (int64_t)bh * D + lane * E;
#pragma unroll
  for (int i = 0; i < E; i++) {
    qv[i] = scale * static_cast<float>(qp[i]);
  }
  const int64_t base = (int64_t)(b * HKV + hk) * CAP * D + lane * E;
  const T* kb = k + base;
  const T* vb = v + base;

  float m = neg_inf;
  float l = 0.f;
  float acc[E];
#pragma unroll
  for (int i = 0; i < E; i++) {
    acc[i] = 0.f;
  }
#pragma unroll 4
  for (int j = first + warp; j < stop; j += NW) {
    const T* kp = kb + (int64_t)j * D;
    const T* vp = vb + (int64_t)j * D;
    float kv[E];
    float vv[E];
#pragma unroll
    for (int i = 0; i < E; i++) {
      kv[i] = static_cast<float>(kp[i]);
      vv[i] = static_cast<float>(vp[i]);
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < E; i++) {
      s += qv[i] * kv[i];
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
      s += __shfl_xor_sync(0xffffffff, s, o);
    }
    const float mn = fmaxf(m, s);
    const float c = expf(m - mn);
    const float p = expf(s - mn);
    l = l * c + p;
#pragma unroll
    for (int i = 0; i < E; i++) {
      acc[i] = acc[i] * c + p * vv[i];
    }
    m = mn;
  }

  __shared__ float sm[NW];
  __shared__ float sl[NW];
  __shared__ float sacc[NW * D];
  if (lane == 0) {
    sm[warp] = m;
    sl[warp] = l;
  }
#pragma unroll
  for (int i = 0; i < E; i++) {
    sacc[warp * D + lane * E + i] = acc[i];
  }
  __syncthreads();
  for (int d = threadIdx.x; d < D; d += THREADS) {
    float mx = neg_inf;
    for (int w = 0; w < NW; w++) {
      mx = fmaxf(mx, sm[w]);
    }
    float num = 0.f;
    float den = 0.f;
    for (int w = 0; w < NW; w++) {
      if (sm[w] == neg_inf) {
        continue;
      }
      const float c = expf(sm[w] - mx);
      num += c * sacc[w * D + d];
      den += c * sl[w];
    }
    out[(int64_t)bh * D + d] = static_cast<T>(den > 0.f ? num / den : 0.f);
  }
"#;

// Writes one step's keys and values into the buffers at the offset, in place, and returns
// the new offset. One thread per element of the new keys and of the new values; every
// address goes through the arrays' strides, so no input is copied on the way in (MLX copies
// inputs to contiguous ones only when a kernel asks it to: a write into such a copy would
// be lost). Slots past the buffer's end are not written.
const WRITE_SOURCE: &str = r#"
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int B = k_new_shape[0];
  const int H = k_new_shape[1];
  const int L = k_new_shape[2];
  const int D = k_new_shape[3];
  const int CAP = keys_shape[2];
  const int64_t n = (int64_t)B * H * L * D;
  const int start = offset[0];
  if (i == 0) {
    end[0] = start + L;
  }
  if (i >= 2 * n) {
    return;
  }
  const bool is_v = i >= n;
  const int64_t j = is_v ? i - n : i;
  const int d = j % D;
  const int l = (j / D) % L;
  const int h = (j / ((int64_t)D * L)) % H;
  const int b = j / ((int64_t)D * L * H);
  const int pos = start + l;
  if (pos < 0 || pos >= CAP) {
    return;
  }
  if (is_v) {
    T* dst = const_cast<T*>(values) + b * values_strides[0] + h * values_strides[1] +
        (int64_t)pos * values_strides[2] + d * values_strides[3];
    *dst = v_new[b * v_new_strides[0] + h * v_new_strides[1] + l * v_new_strides[2] +
        d * v_new_strides[3]];
  } else {
    T* dst = const_cast<T*>(keys) + b * keys_strides[0] + h * keys_strides[1] +
        (int64_t)pos * keys_strides[2] + d * keys_strides[3];
    *dst = k_new[b * k_new_strides[0] + h * k_new_strides[1] + l * k_new_strides[2] +
        d * k_new_strides[3]];
  }
"#;

/// Threads per block of the write.
const WRITE_THREADS: i32 = 256;

fn write_kernel() -> Result<&'static CudaKernel> {
    static KERNEL: OnceLock<CudaKernel> = OnceLock::new();
    if let Some(k) = KERNEL.get() {
        return Ok(k);
    }
    let k = CudaKernel::new(
        "mlx_lm_kv_write",
        &["keys", "values", "k_new", "v_new", "offset"],
        &["end"],
        WRITE_SOURCE,
        "",
        false,
        0,
    )?;
    Ok(KERNEL.get_or_init(|| k))
}

/// Writes `k_new`/`v_new` (`[B, Hkv, L, D]`) into the buffers `keys`/`values` at `offset`
/// *in place* and returns the new offset (`offset + L`, an `int32` scalar computed on the
/// device), for [`KvCache::writes_in_place`](crate::cache::KvCache::writes_in_place) caches
/// on a CUDA GPU, after [`is_supported`] said yes for this step.
///
/// MLX arrays are values: an update makes a new buffer. Its `slice_update` moves the old
/// buffer into the new array when nothing else holds it, but a pipelined decode loop builds
/// and dispatches step t + 1 while the GPU still runs step t, whose attention holds the
/// buffers until it finishes; so every step copied every layer's whole buffers (a Qwen3-0.6B
/// step at 1,024 slots: 117 MB). Here the buffers stay the same arrays and only the new slots
/// are written. Every reader must depend on the returned offset (the decode attention takes
/// it as its end), which orders it after the write; a clone of the buffers sees the write.
pub(crate) fn write_in_place(
    keys: &Array,
    values: &Array,
    k_new: &Array,
    v_new: &Array,
    offset: &Array,
) -> Result<Array> {
    let fits = |new: &Array, buffer: &Array| {
        let (n, b) = (new.shape(), buffer.shape());
        n.len() == 4
            && b.len() == 4
            && n[..2] == b[..2]
            && n[3] == b[3]
            && new.dtype() == buffer.dtype()
    };
    if !fits(k_new, keys)
        || !fits(v_new, values)
        || k_new.shape()[2] != v_new.shape()[2]
        || offset.dtype() != Dtype::Int32
        || offset.ndim() != 0
    {
        return Err(Error::InvalidArgument(format!(
            "write_in_place: new keys {:?} {:?} and values {:?} {:?} do not fit buffers {:?} \
             {:?} and {:?} {:?}, or the offset ({:?} {:?}) is no int32 scalar",
            k_new.shape(),
            k_new.dtype(),
            v_new.shape(),
            v_new.dtype(),
            keys.shape(),
            keys.dtype(),
            values.shape(),
            values.dtype(),
            offset.shape(),
            offset.dtype()
        )));
    }
    let s = k_new.shape();
    // Shapes are positive i32s: the product of four fits a u64, a block count an i32 or not.
    let elements = 2 * s.iter().map(|&d| d.max(0) as u64).product::<u64>();
    let threads = elements.div_ceil(WRITE_THREADS as u64) * WRITE_THREADS as u64;
    let threads = i32::try_from(threads)
        .map_err(|_| Error::InvalidArgument(format!("write_in_place: {s:?} is too large")))?;
    let launch = KernelLaunch::default()
        .grid((threads.max(WRITE_THREADS), 1, 1))
        .threadgroup((WRITE_THREADS, 1, 1))
        .template(vec![("T".into(), TemplateArg::Dtype(keys.dtype()))]);
    let mut out = write_kernel()?.apply(
        &[keys, values, k_new, v_new, offset],
        &[(&[], Dtype::Int32)],
        &launch,
    )?;
    Ok(out.remove(0))
}

fn kernel() -> Result<&'static CudaKernel> {
    static KERNEL: OnceLock<CudaKernel> = OnceLock::new();
    if let Some(k) = KERNEL.get() {
        return Ok(k);
    }
    let k = CudaKernel::new(
        "mlx_lm_decode_attention",
        &["q", "k", "v", "end", "start"],
        &["out"],
        SOURCE,
        "",
        true,
        0,
    )?;
    Ok(KERNEL.get_or_init(|| k))
}

/// Whether [`decode_attention`] takes these arguments: one query position, a head dimension
/// of 32 to 256 in steps of 32, query heads a multiple of key heads, one float dtype, `int32`
/// positions, a positive finite scale, and the current stream on a CUDA GPU.
pub fn is_supported(
    queries: &Array,
    scale: f32,
    keys: &Array,
    values: &Array,
    offset: &Array,
    left_padding: Option<&Array>,
) -> Result<bool> {
    let (q, k, v) = (queries.shape(), keys.shape(), values.shape());
    let shapes = q.len() == 4
        && k.len() == 4
        && k == v
        && q[0] == k[0]
        && q[2] == 1
        && q[3] == k[3]
        && k[3] % 32 == 0
        && (32..=256).contains(&k[3])
        && k[1] > 0
        && q[1] % k[1] == 0;
    let dtype = queries.dtype();
    let dtypes = matches!(dtype, Dtype::Bfloat16 | Dtype::Float16 | Dtype::Float32)
        && keys.dtype() == dtype
        && values.dtype() == dtype
        && offset.dtype() == Dtype::Int32
        && offset.ndim() == 0
        && left_padding.map_or(true, |p| p.dtype() == Dtype::Int32 && p.shape() == [q[0]]);
    // Positive: the scale's bits become part of the kernel's name, which a sign would break.
    let scale = scale.is_finite() && scale > 0.0;
    Ok(shapes && dtypes && scale && on_cuda()?)
}

/// Attention of `queries` (`[B, Hq, 1, D]`, scaled by `scale`) over the slots
/// `[max(left_padding, end - window), end)` of the buffers `keys`/`values`
/// (`[B, Hkv, capacity, D]`, written up to `end`, an `int32` scalar; `left_padding`:
/// `int32 [B]`): `[B, Hq, 1, D]`. Slots outside that range are never read. An `Err` where
/// [`is_supported`] says no.
///
/// ```
/// use mlx_lm::kernels::decode_attention::{decode_attention, is_supported};
/// use mlx_rs::{ops, Array, Dtype};
/// let q = ops::ones(&[1, 4, 1, 64], Dtype::Bfloat16)?;
/// let kv = ops::ones(&[1, 2, 16, 64], Dtype::Bfloat16)?;
/// let end = Array::from_scalar(5i32);
/// if is_supported(&q, 0.125, &kv, &kv, &end, None)? {
///     let out = decode_attention(&q, &kv, &kv, 0.125, &end, None, None)?;
///     assert_eq!(out.shape(), &[1, 4, 1, 64]);
/// } else {
///     assert!(decode_attention(&q, &kv, &kv, 0.125, &end, None, None).is_err());
/// }
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn decode_attention(
    queries: &Array,
    keys: &Array,
    values: &Array,
    scale: f32,
    end: &Array,
    left_padding: Option<&Array>,
    window: Option<i32>,
) -> Result<Array> {
    if !is_supported(queries, scale, keys, values, end, left_padding)? {
        return Err(Error::InvalidArgument(format!(
            "decode_attention: unsupported arguments (queries {:?} {:?}, keys {:?} {:?}, values \
             {:?} {:?}, end {:?} {:?}, scale {scale}), or not on a CUDA GPU",
            queries.shape(),
            queries.dtype(),
            keys.shape(),
            keys.dtype(),
            values.shape(),
            values.dtype(),
            end.shape(),
            end.dtype(),
        )));
    }
    attend_unchecked(queries, keys, values, scale, end, left_padding, window)
}

/// [`decode_attention`] after [`is_supported`] said yes.
pub(crate) fn attend_unchecked(
    queries: &Array,
    keys: &Array,
    values: &Array,
    scale: f32,
    end: &Array,
    left_padding: Option<&Array>,
    window: Option<i32>,
) -> Result<Array> {
    let (q, k) = (queries.shape(), keys.shape());
    let (batch, hq, d) = (q[0], q[1], k[3]);
    let launch = KernelLaunch::default()
        .grid((THREADS * batch * hq, 1, 1))
        .threadgroup((THREADS, 1, 1))
        .template(vec![
            ("T".into(), TemplateArg::Dtype(queries.dtype())),
            ("D".into(), TemplateArg::Int(d)),
            ("THREADS".into(), TemplateArg::Int(THREADS)),
            (
                "WINDOW".into(),
                TemplateArg::Int(window.unwrap_or(0).max(0)),
            ),
            (
                "HAS_START".into(),
                TemplateArg::Bool(left_padding.is_some()),
            ),
            // The f32's bits, reinterpreted: the kernel turns them back into the same float.
            (
                "SCALE_BITS".into(),
                TemplateArg::Int(scale.to_bits() as i32),
            ),
        ]);
    let start = left_padding.unwrap_or(end);
    let mut out = kernel()?.apply(
        &[queries, keys, values, end, start],
        &[(q, queries.dtype())],
        &launch,
    )?;
    Ok(out.remove(0))
}
