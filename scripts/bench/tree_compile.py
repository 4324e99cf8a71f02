#!/usr/bin/env python3
"""Python side of benches/tree_compile.rs: call overhead of `mx.compile` on a function from a
100-leaf tree of tiny arrays (nested dicts/lists, the same structure) to a tree of the same
structure, every leaf times 2, cache hit on every call; lazy outputs (no eval), then with
eval.

    /work/venv/bin/python scripts/bench/tree_compile.py

Prints the median time per call; compare with `cargo bench --bench tree_compile` medians on
the same machine.
"""
import statistics
import timeit

import mlx.core as mx
from mlx.utils import tree_flatten, tree_map


def tiny():
    return mx.array([1.0, 2.0])


def linear(bias=True):
    d = {"weight": tiny()}
    if bias:
        d["bias"] = tiny()
    return d


def layer():
    # Same as `Layer` in benches/tree_compile.rs: 10 leaves (eps is static there and absent
    # here: mx.compile does not take non-array leaves as part of the key without a retrace).
    return {"wq": linear(), "wk": linear(False), "wv": linear(), "wo": linear(), "up": linear(),
            "norm": tiny()}


def model():
    return {"layers": [layer() for _ in range(10)]}


def median_us(fn, number=2000, repeat=15):
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def main():
    m = model()
    assert len(tree_flatten(m)) == 100
    double = mx.compile(lambda t: tree_map(lambda x: x * 2, t))
    mx.eval(double(m))
    print(f"mx.compile call, 100 leaves:        {median_us(lambda: double(m)):8.2f} us")
    print(f"mx.compile call + eval, 100 leaves: {median_us(lambda: mx.eval(double(m)), 500):8.2f} us")
    flat = [x for _, x in tree_flatten(m)]
    flat_double = mx.compile(lambda *xs: [x * 2 for x in xs])
    mx.eval(flat_double(*flat))
    print(f"mx.compile call, 100 flat arrays:   {median_us(lambda: flat_double(*flat)):8.2f} us")


if __name__ == "__main__":
    main()
