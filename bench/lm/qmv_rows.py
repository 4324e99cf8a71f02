"""How MLX's quantized matrix-vector product scales with the rows it multiplies at once.

Speculative decoding verifies K+1 positions in one target forward, and a batch of B decodes B
rows: each multiplies a few rows by every quantized weight. Where the kernel reads the weights
once for all rows, the time stays near one row's; where it reads them again per row, it grows
with the rows. This times `mx.quantized_matmul` for 1 to 16 rows of a 4096 -> 12288 affine
4-bit layer (a Qwen3-8B MLP's input size, its gate and up projections side by side), in
bfloat16, on MLX's default device:

    python3 bench/lm/qmv_rows.py [--bits 4] [--group-size 64] [--iters 200]
                                 [--shapes 4096x12288,...] [--padded]

With `--padded`, each size of 2 to 7 rows is also timed padded with zero rows to 8 and cut
back (`mx.pad`, the product, a slice: what `mlx_nn::PadRows` runs).

Each size is timed as `--iters` independent products evaluated together (one kernel each,
queued back to back), median of 5 such runs; the weight bytes read per product over that time
is the bandwidth a product reaches.
"""

import argparse
import json
import time

import mlx.core as mx


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bits", type=int, default=4)
    p.add_argument("--group-size", type=int, default=64)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--rows", default="1,2,3,4,5,6,7,8,16")
    p.add_argument("--shapes", default="4096x12288", help="K x N of each layer")
    p.add_argument("--padded", action="store_true")
    a = p.parse_args()
    for shape in a.shapes.split(","):
        k, n = (int(v) for v in shape.split("x"))
        layer(a, k, n)


def layer(a, k, n):
    w = mx.random.normal((n, k)).astype(mx.bfloat16) * 0.02
    wq, scales, biases = mx.quantize(w, group_size=a.group_size, bits=a.bits)
    mx.eval(wq, scales, biases)
    weight_bytes = wq.nbytes + scales.nbytes + biases.nbytes
    out = {"device": str(mx.default_device()), "mlx": mx.__version__, "k": k, "n": n,
           "bits": a.bits, "group_size": a.group_size, "weight_bytes": weight_bytes, "rows": {}}
    for m in [int(r) for r in a.rows.split(",")]:
        xs = [mx.random.normal((m, k)).astype(mx.bfloat16) for _ in range(a.iters)]
        mx.eval(xs)

        def run():
            ys = [mx.quantized_matmul(x, wq, scales, biases, transpose=True,
                                      group_size=a.group_size, bits=a.bits) for x in xs]
            mx.eval(ys)

        def padded():
            ys = [mx.quantized_matmul(mx.pad(x, [(0, 8 - m), (0, 0)]), wq, scales, biases,
                                      transpose=True, group_size=a.group_size, bits=a.bits)[:m]
                  for x in xs]
            mx.eval(ys)

        t = timed(run, a.iters)
        out["rows"][m] = {"us": t * 1e6, "weight_GBps": weight_bytes / t / 1e9}
        line = (f"{k}->{n} {m:3d} rows: {t * 1e6:8.1f} us per product, "
                f"{weight_bytes / t / 1e9:7.1f} GB/s of weights")
        if a.padded and 2 <= m < 8:
            tp = timed(padded, a.iters)
            out["rows"][m]["padded_us"] = tp * 1e6
            line += f"; padded to 8: {tp * 1e6:8.1f} us"
        print(line, flush=True)
    print(json.dumps(out))


def timed(run, iters):
    run()
    times = []
    for _ in range(5):
        t = time.perf_counter()
        run()
        times.append((time.perf_counter() - t) / iters)
    return sorted(times)[2]


if __name__ == "__main__":
    main()
