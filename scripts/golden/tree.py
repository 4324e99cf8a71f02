#!/usr/bin/env python3
"""Golden data for mlx-tree: flatten order and key paths of Python MLX's `mlx.utils`.

Writes tests/data/tree.json (read by tests/tree_golden.rs). Run via scripts/gen-golden.

Each case is a Python tree built from the "Python equivalents" of the data model in the
mlx-tree crate docs (nn.Module attributes for derived structs, lists for Vec, dicts with
sorted keys for BTreeMap/HashMap, dicts in insertion order for Value::Dict). Leaves hold
distinct values so the Rust side can check that leaf i of its flatten is leaf i of Python's.
"""
import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_map, tree_unflatten

from common import record, write

_next_id = 0


def leaf(shape=()):
    """A fresh leaf whose values are a counter, so every leaf is distinct."""
    global _next_id
    _next_id += 1
    return mx.full(shape, float(_next_id))


def flat(tree):
    return [[path, record(a)] for path, a in tree_flatten(tree)]


# ---- a model, as nn.Modules (derived structs on the Rust side) ----

class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d)


class Mlp(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.gate = nn.Linear(d, h, bias=False)
        self.up = nn.Linear(d, h, bias=False)
        self.down = nn.Linear(h, d, bias=False)


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.attn = Attention(d)
        self.mlp = Mlp(d, h)
        self.input_norm = nn.RMSNorm(d)
        self.post_norm = nn.RMSNorm(d)


class Model(nn.Module):
    def __init__(self, vocab, d, h, n_layers):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = [Block(d, h) for _ in range(n_layers)]
        self.norm = nn.RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab)


def model_case():
    model = Model(vocab=8, d=4, h=6, n_layers=3)
    # Distinct leaf values, keeping each parameter's shape.
    model.update(tree_map(lambda p: leaf(p.shape), model.parameters()))
    return flat(model.parameters())


def nested_case():
    # Insertion order deliberately unsorted: Value::Dict keeps it, as Python does.
    tree = {
        "zeta": [leaf(), (leaf(), leaf())],
        "alpha": {"y": leaf(), "x": [leaf()]},
        "mid": (leaf(),),
        "empty": [],
        "nested": [[leaf(), leaf()], [], [[leaf()]]],
    }
    return flat(tree)


def sorted_maps_case():
    # BTreeMap / HashMap flatten in sorted key order: the dict equivalent has sorted keys.
    keys = ["b", "a10", "a2", "_x", "B"]
    tree = {"scales": {k: leaf() for k in sorted(keys)}, "pair": (leaf(), {k: leaf() for k in sorted(keys[:2])})}
    return flat(tree)


def cache_layouts_case():
    n = 3
    per_layer = [{"keys": leaf((1, 2)), "values": leaf((1, 2))} for _ in range(n)]
    per_field = {"keys": [leaf((1, 2)) for _ in range(n)], "values": [leaf((1, 2)) for _ in range(n)]}
    return {"per_layer": flat(per_layer), "per_field": flat(per_field)}


def structure(tree):
    """A tree's shape as JSON that keeps dict order: leaves become their id."""
    if isinstance(tree, dict):
        return {"dict": [[k, structure(v)] for k, v in tree.items()]}
    if isinstance(tree, list):
        return {"list": [structure(v) for v in tree]}
    return tree.item()


def unflatten_cases():
    cases = []
    inputs = [
        ["layers.0.w", "layers.1.w", "layers.1.b", "head"],
        ["3", "1"],  # integer keys with a gap: a list padded with {}
        ["b.x", "a", "b.y"],  # first-seen order
        ["10", "9", "x"],  # not all integers: a dict
        ["0.0.0", "0.1"],
    ]
    for paths in inputs:
        pairs = [(p, leaf()) for p in paths]
        cases.append(
            {
                "pairs": [[p, a.item()] for p, a in pairs],
                "structure": structure(tree_unflatten(pairs)),
            }
        )
    return cases


if __name__ == "__main__":
    write(
        "tree",
        {
            "model": model_case(),
            "nested": nested_case(),
            "sorted_maps": sorted_maps_case(),
            "cache_layouts": cache_layouts_case(),
            "unflatten": unflatten_cases(),
        },
    )
