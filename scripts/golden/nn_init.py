#!/usr/bin/env python3
"""Golden data for seeded initialization: layers and init functions constructed right after
`mx.random.seed`, with fan sizes (784 = 28 x 28, 119) where computing Python's
`math.sqrt(1 / n)` in float32 instead of float64 changes the last bit of the scale, and so of
most samples.

Writes tests/data/nn_init.json (read by tests/nn_golden.rs). Run via scripts/gen-golden.
"""

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

from common import record, write


def params(module):
    return {path: record(a) for path, a in tree_flatten(module.parameters())}


def seeded(make, seed=7):
    mx.random.seed(seed)
    return make()


layers = {
    "linear": params(seeded(lambda: nn.Linear(784, 3))),
    "embedding": params(seeded(lambda: nn.Embedding(3, 784))),
    "conv1d": params(seeded(lambda: nn.Conv1d(49, 2, 16))),
    "conv2d": params(seeded(lambda: nn.Conv2d(16, 2, (7, 7)))),
}

shape = (7, 112)  # fan_in 112, fan_out 7
inits = {}
for name, fn in [
    ("glorot_normal", lambda a: nn.init.glorot_normal()(a)),
    ("glorot_uniform", lambda a: nn.init.glorot_uniform()(a, gain=0.5)),
    ("he_normal", lambda a: nn.init.he_normal()(a)),
    ("he_uniform", lambda a: nn.init.he_uniform()(a, mode="fan_out", gain=2.0)),
]:
    mx.random.seed(11)
    inits[name] = record(fn(mx.zeros(shape)))

# Seeded dropout: the keep probability and scale from Python floats (p = 0.3, 0.7).
dropouts = {}
x4 = mx.arange(1, 1 + 2 * 3 * 4 * 5, dtype=mx.float32).reshape(2, 3, 4, 5)
x5 = x4.reshape(2, 3, 2, 2, 5)
for name, layer, inp in [
    ("dropout", nn.Dropout(0.3), x4),
    ("dropout2d", nn.Dropout2d(0.7), x4),
    ("dropout2d_unbatched", nn.Dropout2d(0.3), x4[0]),
    ("dropout3d", nn.Dropout3d(0.3), x5),
]:
    mx.random.seed(3)
    dropouts[name] = record(layer(inp))

# Orthogonal (QR on the CPU) and sparse initializers, seeded.
seeded_inits = {}
for name, fn, shape_ in [
    ("orthogonal_tall", lambda a: nn.init.orthogonal(gain=0.5)(a), (5, 3)),
    ("orthogonal_wide", lambda a: nn.init.orthogonal()(a), (3, 5)),
    ("sparse", lambda a: nn.init.sparse(0.3, mean=0.1, std=2.0)(a), (6, 8)),
    ("sparse_none", lambda a: nn.init.sparse(0.0)(a), (2, 4)),
]:
    mx.random.seed(5)
    seeded_inits[name] = record(fn(mx.zeros(shape_)))

x = mx.linspace(-4, 4, 33)
write("nn_init", {
    "layers": layers,
    "init_shape": list(shape),
    "inits": inits,
    "identity": record(nn.init.identity()(mx.zeros((3, 3)))),
    "dropouts": dropouts,
    "seeded_inits": seeded_inits,
    "gelu_approx": {"x": record(x), "y": record(nn.gelu_approx(x))},
})
