#!/usr/bin/env python3
"""Python side of benches/tree_flatten.rs: flatten + unflatten of the same 1,000-leaf
model-shaped tree with optree (the fast C++ pytree library) and with mlx.utils.

Run in a venv holding mlx==0.32.2, mlx-cpu==0.32.2 and optree (see docs/trees.md):
    /work/venv-bench/bin/python scripts/bench/tree_flatten.py
Prints the median time per flatten + unflatten round trip for each library. The Rust numbers
come from `cargo bench --bench tree_flatten`; compare the medians on the same machine.
"""
import statistics
import timeit

import mlx.core as mx
import optree
from mlx.utils import tree_flatten, tree_unflatten

LAYERS = 49  # 49 layers x 20 leaves + 20 model-level leaves = 1,000 leaves


def linear(bias=True):
    d = {"weight": mx.zeros((1,))}
    if bias:
        d["bias"] = mx.zeros((1,))
    return d


def layer():
    # Same shape as `Layer` in benches/tree_flatten.rs: nested modules, a list of experts
    # and a string-keyed map, 20 leaves.
    return {
        "attn": {"wq": linear(), "wk": linear(), "wv": linear(), "wo": linear()},
        "mlp": {"gate": linear(False), "up": linear(False), "down": linear(False)},
        "norms": [{"weight": mx.zeros((1,))}, {"weight": mx.zeros((1,))}],
        "scales": {f"s{i}": mx.zeros((1,)) for i in range(7)},
    }


def model():
    return {
        "embed": {"weight": mx.zeros((1,))},
        "layers": [layer() for _ in range(LAYERS)],
        "norm": {"weight": mx.zeros((1,))},
        "lm_head": linear(),
        "adapters": {f"a{i:02}": mx.zeros((1,)) for i in range(16)},
    }


def median_us(fn, number):
    runs = timeit.repeat(fn, number=number, repeat=15)
    return statistics.median(runs) / number * 1e6


def main():
    tree = model()
    leaves, spec = optree.tree_flatten(tree)
    assert len(leaves) == 1000, len(leaves)
    assert len(tree_flatten(tree)) == 1000

    def optree_roundtrip():
        leaves, spec = optree.tree_flatten(tree)
        optree.tree_unflatten(spec, leaves)

    def optree_flatten():
        optree.tree_flatten(tree)

    def mlx_roundtrip():
        tree_unflatten(tree_flatten(tree))

    print(f"optree {optree.__version__}, mlx {mx.__version__}")
    print(f"optree flatten:             {median_us(optree_flatten, 200):9.2f} us")
    print(f"optree flatten+unflatten:   {median_us(optree_roundtrip, 200):9.2f} us")
    print(f"mlx.utils flatten+unflatten:{median_us(mlx_roundtrip, 20):9.2f} us")


if __name__ == "__main__":
    main()
