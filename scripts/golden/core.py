#!/usr/bin/env python3
"""Golden data for the foundation: the quickstart's computations and random draws.

Writes tests/data/core.json (read by tests/core_golden.rs). Run via scripts/gen-golden.
"""
import mlx.core as mx

from common import record, write


def quickstart():
    # Mirrors examples/quickstart.rs step by step.
    a = mx.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).reshape(2, 3)
    b = mx.arange(0.0, 6.0).reshape(3, 2)
    c = a * 2.0 + 1.0
    m = mx.matmul(c, b)
    key = mx.random.key(0)
    return {
        "c": record(c),
        "matmul": record(m),
        "sum": record(mx.sum(m)),
        "mean_axis0": record(mx.mean(m, axis=0)),
        "max_axis1_keepdims": record(mx.max(m, axis=1, keepdims=True)),
        "normal": record(mx.random.normal((2, 3), key=key)),
        "uniform": record(mx.random.uniform(0.0, 1.0, (3,), key=key)),
    }


def random_cases():
    out = {}
    for seed in (0, 1, 42):
        k = mx.random.key(seed)
        out[f"key_{seed}"] = record(k)
        out[f"normal_{seed}_4x5"] = record(mx.random.normal((4, 5), key=k))
        out[f"normal_{seed}_loc_scale"] = record(mx.random.normal((7,), loc=2.0, scale=0.5, key=k))
        out[f"uniform_{seed}_3x3"] = record(mx.random.uniform(-1.0, 3.0, (3, 3), key=k))
    out["normal_bf16"] = record(mx.random.normal((5,), dtype=mx.bfloat16, key=mx.random.key(3)))
    out["split_0"] = record(mx.random.split(mx.random.key(0), 3))
    return out


if __name__ == "__main__":
    write("core", {"quickstart": quickstart(), "random": random_cases()})
