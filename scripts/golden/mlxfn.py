#!/usr/bin/env python3
"""A function with keyword arguments exported by Python MLX 0.32.2, for the Rust `.mlxfn`
validator's tests (mlx-rs/tests/mlxfn_corrupt.rs): the Rust API exports positional arguments
only, so this file is how those tests see keyword names, a second signature in one file and a
constant index array.

Writes tests/data/mlxfn_kwargs.mlxfn. The Rust test calls it with its own arguments
(`kwargs_calls` there) and compares every corrupted copy with the intact one, so nothing else
is recorded.
"""
import mlx.core as mx

from common import ROOT

# The constants the exported graph stores: an index array and a float vector.
PICK = mx.array([2, 0], dtype=mx.int32)
SHIFT = mx.array([0.5, -1.5], dtype=mx.float32)


def fun(x, y, *, bias, scale):
    picked = mx.take(x, PICK, axis=1)
    return [
        mx.exp(x * scale) + bias,
        mx.sum(picked * y, axis=0) + SHIFT,
        mx.maximum(x, bias).astype(mx.float16),
    ]


if __name__ == "__main__":
    path = ROOT / "tests" / "data" / "mlxfn_kwargs.mlxfn"
    x = mx.arange(6, dtype=mx.float32).reshape(2, 3) * 0.25
    y = mx.arange(4, dtype=mx.float32).reshape(2, 2) - 1.0
    with mx.exporter(str(path), fun) as export:
        export(x, y, bias=mx.array(1.0), scale=mx.array(0.5))
        x3 = mx.arange(9, dtype=mx.float32).reshape(3, 3) * -0.5
        y3 = mx.arange(6, dtype=mx.float32).reshape(3, 2) * 0.5
        export(x3, y3, bias=mx.array([1.0, 2.0, 3.0]), scale=mx.array(2.0))
