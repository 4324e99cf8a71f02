"""A multi-row affine 4-bit quantized product as one CUDA kernel, against MLX's.

MLX 0.32.2's CUDA `quantized_matmul` of fewer than 8 rows runs its matrix-vector kernel once
per row, reading the weights again each time, and reads 4-bit weights at 0.9-1.0 TB/s on an
H200 (`bench/lm/qmv_rows.py`). This kernel reads each weight once for up to 8 rows, 16 bytes
per lane per load, and accumulates in float32. It times both on shapes of Qwen3-0.6B's and
Qwen3-8B's layers, 1 to 8 rows, and checks each result against MLX's and against a float32
product of the dequantized weights:

    python3 bench/lm/qmv_kernel.py [--iters 200] [--variants 1x4,2x4,1x8]

A variant RxU: R output rows per warp (32 / R lanes share a row), U loads in flight per lane.
"""

import argparse
import json

import mlx.core as mx

import qmv_rows  # bench/lm: the script's folder is first on sys.path

# One warp holds R output rows; the LPR = 32 / R lanes of a row take every LPR-th 16-byte
# chunk of its packed weights (32 4-bit values, inside one group as GS is a multiple of 32),
# U chunks at a time, all loaded before any is used. A chunk's 32 values are unpacked once
# and multiplied with each of the M input rows: sum(x * (s * q + b)) = s * sum(x * q) +
# b * sum(x). The lanes of a row meet by shuffles.
SOURCE = r"""
  constexpr int LPR = 32 / R;
  const int K = x_shape[1];
  const int N = w_shape[0];
  const int KC = K / 32;
  const int G = K / GS;
  const int lane = threadIdx.x % 32;
  const int n = ((blockIdx.x * blockDim.x + threadIdx.x) / 32) * R + lane / LPR;
  const int l = lane % LPR;
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; m++) acc[m] = 0.f;
  if (n < N) {
    const uint4* wrow = reinterpret_cast<const uint4*>(w) + (int64_t)n * KC;
    const T* srow = scales + (int64_t)n * G;
    const T* brow = biases + (int64_t)n * G;
    for (int c0 = l; c0 < KC; c0 += LPR * U) {
      uint4 wv[U];
      float s[U], b[U];
#pragma unroll
      for (int u = 0; u < U; u++) {
        const int c = c0 + u * LPR;
        if (c < KC) {
          wv[u] = wrow[c];
          s[u] = static_cast<float>(srow[c * 32 / GS]);
          b[u] = static_cast<float>(brow[c * 32 / GS]);
        }
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        const int c = c0 + u * LPR;
        if (c < KC) {
          float q[32];
          const uint32_t words[4] = {wv[u].x, wv[u].y, wv[u].z, wv[u].w};
#pragma unroll
          for (int j = 0; j < 4; j++) {
#pragma unroll
            for (int i = 0; i < 8; i++) {
              q[j * 8 + i] = __int_as_float(0x4B000000 | ((words[j] >> (4 * i)) & 0xF)) - 8388608.f;
            }
          }
#pragma unroll
          for (int m = 0; m < M; m++) {
            const uint4* xp = reinterpret_cast<const uint4*>(x + (int64_t)m * K + c * 32);
            float d = 0.f, xs = 0.f;
#pragma unroll
            for (int j = 0; j < 4; j++) {
              const uint4 xv = xp[j];
              const T* xe = reinterpret_cast<const T*>(&xv);
#pragma unroll
              for (int i = 0; i < 8; i++) {
                const float xf = static_cast<float>(xe[i]);
                d += xf * q[j * 8 + i];
                xs += xf;
              }
            }
            acc[m] += s[u] * d + b[u] * xs;
          }
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; m++) {
    float v = acc[m];
#pragma unroll
    for (int off = LPR / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffff, v, off);
    if (l == 0 && n < N) out[(int64_t)m * N + n] = static_cast<T>(v);
  }
"""

KERNEL = mx.fast.cuda_kernel("qmv_rows4", ["x", "w", "scales", "biases"], ["out"], SOURCE)


def ours(x, wq, scales, biases, gs, r, u, threads=256):
    m, k = x.shape
    n = wq.shape[0]
    warps = (n + r - 1) // r
    return KERNEL(inputs=[x, wq, scales, biases],
                  template=[("T", x.dtype), ("M", m), ("GS", gs), ("R", r), ("U", u)],
                  grid=(warps * 32, 1, 1), threadgroup=(threads, 1, 1),
                  output_shapes=[(m, n)], output_dtypes=[x.dtype])[0]


def timed(fn, xs, iters):
    return qmv_rows.timed(lambda: mx.eval([fn(x) for x in xs]), iters)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--rows", default="1,2,4,8")
    p.add_argument("--variants", default="1x2,1x4,1x8,2x4,4x4")
    p.add_argument("--group-size", type=int, default=64)
    p.add_argument("--shapes", default="1024x2048,1024x3072,3072x1024,4096x4096,4096x1024,"
                                       "4096x12288,12288x4096")
    a = p.parse_args()
    gs = a.group_size
    out = {"device": str(mx.default_device()), "mlx": mx.__version__, "group_size": gs,
           "results": []}
    for shape in a.shapes.split(","):
        k, n = (int(v) for v in shape.split("x"))
        w = mx.random.normal((n, k)).astype(mx.bfloat16) * 0.02
        wq, scales, biases = mx.quantize(w, group_size=gs, bits=4)
        wd = mx.dequantize(wq, scales, biases, group_size=gs, bits=4).astype(mx.float32)
        mx.eval(wq, scales, biases, wd)
        nbytes = wq.nbytes + scales.nbytes + biases.nbytes
        for m in [int(v) for v in a.rows.split(",")]:
            xs = [mx.random.normal((m, k)).astype(mx.bfloat16) for _ in range(a.iters)]
            mx.eval(xs)
            x0 = xs[0]
            exact = x0.astype(mx.float32) @ wd.T
            ref = mx.quantized_matmul(x0, wq, scales, biases, transpose=True, group_size=gs,
                                      bits=4)
            scale = mx.abs(exact).max().item()
            row = {"k": k, "n": n, "m": m, "weight_bytes": nbytes,
                   "mlx_err": mx.abs(ref.astype(mx.float32) - exact).max().item() / scale}
            t = timed(lambda x: mx.quantized_matmul(x, wq, scales, biases, transpose=True,
                                                    group_size=gs, bits=4), xs, a.iters)
            row["mlx_us"] = t * 1e6
            line = f"{k:5d}->{n:5d} M={m}: mlx {t * 1e6:7.1f} us {nbytes / t / 1e9:6.0f} GB/s"
            for v in a.variants.split(","):
                r, u = (int(s) for s in v.split("x"))
                y = ours(x0, wq, scales, biases, gs, r, u)
                err = mx.abs(y.astype(mx.float32) - exact).max().item() / scale
                t = timed(lambda x: ours(x, wq, scales, biases, gs, r, u), xs, a.iters)
                row[f"ours_{v}_us"] = t * 1e6
                row[f"ours_{v}_err"] = err
                line += f" | {v} {t * 1e6:6.1f} us {nbytes / t / 1e9:5.0f} GB/s err {err:.1e}"
            line += f" (mlx err {row['mlx_err']:.1e})"
            print(line, flush=True)
            out["results"].append(row)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
