#!/usr/bin/env python3
"""Golden data for sharding weights over a distributed group: what Python's `shard_linear`
and `shard_inplace` (mlx.nn.layers.distributed) give each rank of a group of 2 and of 4 for
seeded weights, with segments (a fused QKV weight in 3 parts, split indices, split fractions),
float and quantized layers, a preset and a callable sharding rule; and the ValueErrors of bad
shardings.

Sharding only reads `group.size()` and `group.rank()` (the layers keep the group for their
collectives, which are not called here), so every rank of every group size is computed in
this one process with a stand-in group. The unsharded arrays are recorded too: the Rust test
(tests/nn_sharded.rs) shards those over real process groups of 2 and 4 and compares each
rank's arrays with these, exactly. Slicing is the same on every device, so the data is
written to tests/data/ whatever the default device (the quantized inputs are recorded, not
recomputed). Run via scripts/gen-golden.
"""

import mlx.core as mx
import mlx.nn as nn
from mlx.nn.layers.distributed import shard_inplace, shard_linear
from mlx.utils import tree_flatten

import common
from common import record


class StandInGroup:
    """What sharding reads of a `mx.distributed.Group`."""

    def __init__(self, rank, size):
        self._rank, self._size = rank, size

    def rank(self):
        return self._rank

    def size(self):
        return self._size


class Attention(nn.Module):
    """A fused QKV projection and an output projection (Rust twin in tests/nn_sharded.rs)."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.out = nn.Linear(8, 8, bias=False)


def params(module):
    return {k: record(v) for k, v in tree_flatten(module.parameters())}


mx.random.seed(16)
fused = nn.Linear(8, 24)  # queries, keys and values: 3 segments of 8 rows
square = nn.Linear(16, 16)
quantized = nn.QuantizedLinear.from_linear(nn.Linear(128, 12), group_size=32, bits=4)
attention = Attention()
mx.eval(fused.parameters(), square.parameters(), quantized.parameters(), attention.parameters())

inputs = {
    "fused": params(fused),
    "square": params(square),
    "quantized": params(quantized),
    "attention": params(attention),
}


# The callable rule of the shard_inplace case: the fused projection by rows in 3 segments,
# the output projection by columns, everything else whole.
def attention_rule(path, weight):
    if path.startswith("qkv."):
        return (-1, 3) if path.endswith("bias") else (0, 3)
    if path == "out.weight":
        return -1
    return None


def shard_linear_case(layer, sharding, segments):
    def run(group):
        return params(shard_linear(layer, sharding, segments=segments, group=group))

    return run


def shard_inplace_case(make, sharding, segments=1):
    def run(group):
        module = make()
        shard_inplace(module, sharding, segments=segments, group=group)
        return params(module)

    return run


def fresh_attention():
    m = Attention()
    m.update(attention.parameters())
    return m


def fresh_square():
    m = nn.Linear(16, 16)
    m.update(square.parameters())
    return m


CASES = {
    "fused_all_to_sharded_3": ("fused", shard_linear_case(fused, "all-to-sharded", 3)),
    "fused_sharded_to_all": ("fused", shard_linear_case(fused, "sharded-to-all", 1)),
    "square_all_to_sharded_indices": (
        "square",
        shard_linear_case(square, "all-to-sharded", [4, 12]),
    ),
    "square_sharded_to_all_fractions": (
        "square",
        shard_linear_case(square, "sharded-to-all", [0.25, 0.75]),
    ),
    "quantized_all_to_sharded_3": (
        "quantized",
        shard_linear_case(quantized, "all-to-sharded", 3),
    ),
    "quantized_sharded_to_all": (
        "quantized",
        shard_linear_case(quantized, "sharded-to-all", 1),
    ),
    "inplace_square_sharded_to_all": (
        "square",
        shard_inplace_case(fresh_square, "sharded-to-all"),
    ),
    "inplace_attention_callable": (
        "attention",
        shard_inplace_case(fresh_attention, attention_rule),
    ),
}

cases = {}
for name, (source, run) in CASES.items():
    cases[name] = {
        "input": source,
        "groups": {
            str(size): [run(StandInGroup(rank, size)) for rank in range(size)]
            for size in (2, 4)
        },
    }


# Bad shardings: the ValueError messages Python raises (a group of 2, rank 0).
def error_of(fn):
    try:
        fn()
    except ValueError as e:
        return str(e)
    raise AssertionError("expected a ValueError")


two = StandInGroup(0, 2)
errors = {
    "all_to_sharded_odd_output": error_of(
        lambda: shard_linear(nn.Linear(4, 7), "all-to-sharded", group=two)
    ),
    "sharded_to_all_odd_input": error_of(
        lambda: shard_linear(nn.Linear(7, 4), "sharded-to-all", group=two)
    ),
    "unknown_sharding": error_of(lambda: shard_linear(nn.Linear(4, 4), "rows", group=two)),
}

# Written to tests/data/ on every device (see the docstring).
common.DATA = common.ROOT / "tests" / "data"
common.write("nn_sharded", {"inputs": inputs, "cases": cases, "errors": errors})
