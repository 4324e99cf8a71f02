#!/usr/bin/env python3
"""Golden data for mlx_rs::fast: layer_norm, rms_norm, rope (int and array offsets, freqs),
scaled_dot_product_attention (no mask, causal, boolean and additive masks, sinks, grouped
heads) and cross_entropy, in float32, float16 and bfloat16. Writes tests/data/fast.json."""
import mlx.core as mx

from common import record, write

key = mx.random.key
x = mx.random.normal((2, 3, 8), key=key(20))
w = mx.random.normal((8,), key=key(21))
bias = mx.random.normal((8,), key=key(22))
q = mx.random.normal((1, 4, 5, 16), key=key(23))
kk = mx.random.normal((1, 4, 7, 16), key=key(24))
vv = mx.random.normal((1, 4, 7, 16), key=key(25))
kg = mx.random.normal((1, 2, 7, 16), key=key(26))
vg = mx.random.normal((1, 2, 7, 16), key=key(27))
bool_mask = mx.random.bernoulli(0.7, (5, 7), key=key(28))
bool_mask = bool_mask | (mx.arange(7)[None, :] == 0)  # every row attends somewhere
add_mask = mx.random.normal((1, 1, 5, 7), key=key(29))
sinks = mx.random.normal((4,), key=key(30))
rx = mx.random.normal((1, 2, 6, 8), key=key(31))
freqs = mx.random.uniform(0.1, 1.0, (2,), key=key(32))
logits = mx.random.normal((4, 10), key=key(33))
targets = mx.array([1, 0, 9, 4])


def cases():
    inputs = dict(x=x, w=w, bias=bias, q=q, k=kk, v=vv, kg=kg, vg=vg, bool_mask=bool_mask,
                  add_mask=add_mask, sinks=sinks, rx=rx, freqs=freqs, logits=logits, targets=targets)
    out = {"inputs": {n: record(a) for n, a in inputs.items()}}
    f = mx.fast
    out["layer_norm"] = record(f.layer_norm(x, w, bias, 1e-5))
    out["layer_norm_no_affine"] = record(f.layer_norm(x, None, None, 1e-5))
    out["layer_norm_weight_only"] = record(f.layer_norm(x, w, None, 1e-3))
    out["rms_norm"] = record(f.rms_norm(x, w, 1e-5))
    out["rms_norm_no_weight"] = record(f.rms_norm(x, None, 1e-6))
    for dt in ("float16", "bfloat16"):
        d = getattr(mx, dt)
        out[f"layer_norm_{dt}"] = record(f.layer_norm(x.astype(d), w.astype(d), bias.astype(d), 1e-5))
        out[f"rms_norm_{dt}"] = record(f.rms_norm(x.astype(d), w.astype(d), 1e-5))
        out[f"rope_{dt}"] = record(f.rope(rx.astype(d), 8, traditional=False, base=10000.0, scale=1.0, offset=0))
    out["rope"] = record(f.rope(rx, 8, traditional=False, base=10000.0, scale=1.0, offset=0))
    out["rope_traditional"] = record(f.rope(rx, 8, traditional=True, base=10000.0, scale=1.0, offset=3))
    out["rope_partial_scale"] = record(f.rope(rx, 4, traditional=False, base=500.0, scale=0.5, offset=2))
    out["rope_array_offset"] = record(f.rope(rx, 8, traditional=False, base=10000.0, scale=1.0, offset=mx.array(5)))
    out["rope_freqs"] = record(f.rope(rx, 4, traditional=False, base=None, scale=1.0, offset=1, freqs=freqs))
    s = 16 ** -0.5
    sdpa = f.scaled_dot_product_attention
    out["sdpa"] = record(sdpa(q, kk, vv, scale=s))
    out["sdpa_causal"] = record(sdpa(q, kk, vv, scale=s, mask="causal"))
    out["sdpa_bool_mask"] = record(sdpa(q, kk, vv, scale=s, mask=bool_mask))
    out["sdpa_add_mask"] = record(sdpa(q, kk, vv, scale=s, mask=add_mask))
    out["sdpa_sinks"] = record(sdpa(q, kk, vv, scale=s, sinks=sinks))
    out["sdpa_gqa_causal"] = record(sdpa(q, kg, vg, scale=0.3, mask="causal"))
    out["sdpa_f16"] = record(sdpa(q.astype(mx.float16), kk.astype(mx.float16), vv.astype(mx.float16), scale=s))
    out["cross_entropy"] = record(f.cross_entropy(logits, targets))
    return out


if __name__ == "__main__":
    write("fast", cases())
