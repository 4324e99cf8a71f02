"""Golden data for the optimizers mlx-optimizers added after the first set: Adafactor, Muon and
MultiOptimizer, computed by Python MLX 0.32.2.

Writes tests/data/optim_extra.json (read by tests/optim_extra.rs). Run via scripts/gen-golden.

Each case runs several steps on a flat dict of parameters of different ranks (Adafactor factors
the second moment of 2-D and larger parameters, Muon orthogonalizes matrices, transposing tall
ones and flattening 3-D ones), with the gradient `p * p - t` for a fixed `t`: exactly rounded
elementwise ops, so the Rust side computes the same gradients bit for bit on any build.
"""
import mlx.core as mx
import mlx.optimizers as optim
from mlx.utils import tree_flatten

from common import record, write

mx.random.seed(7)

SHAPES = {"bias": (5,), "w": (4, 6), "tall": (6, 3), "k": (2, 3, 4)}
init = {name: mx.random.normal(shape) for name, shape in SHAPES.items()}
targets = {name: mx.random.normal(shape) for name, shape in SHAPES.items()}
mx.eval(init, targets)
init_records = {k: record(v) for k, v in init.items()}


def grads_of(params):
    return {k: params[k] * params[k] - targets[k] for k in params}


def matrices(path, g):
    return g.ndim >= 2


cases = {
    "adafactor": lambda: optim.Adafactor(),
    "adafactor_lr": lambda: optim.Adafactor(
        learning_rate=0.01, relative_step=False, scale_parameter=False, beta_1=0.9,
        weight_decay=0.1, clip_threshold=0.5),
    "adafactor_warmup": lambda: optim.Adafactor(
        warmup_init=True, beta_1=0.8, eps=(1e-20, 1e-2), decay_rate=-0.6),
    "adafactor_scaled_lr": lambda: optim.Adafactor(
        learning_rate=0.03, relative_step=False, weight_decay=0.05),
    "adafactor_schedule": lambda: optim.Adafactor(
        learning_rate=optim.cosine_decay(0.05, 4, 0.001), relative_step=False),
    "muon": lambda: optim.Muon(learning_rate=0.02),
    "muon_plain": lambda: optim.Muon(
        learning_rate=0.05, momentum=0.9, weight_decay=0.0, nesterov=False, ns_steps=3),
    "muon_schedule": lambda: optim.Muon(
        learning_rate=optim.linear_schedule(0.0, 0.1, 3), weight_decay=0.1),
    "multi": lambda: optim.MultiOptimizer(
        [optim.Muon(learning_rate=0.02), optim.AdamW(learning_rate=0.01)], [matrices]),
    "multi3": lambda: optim.MultiOptimizer(
        [optim.SGD(learning_rate=0.1, momentum=0.9), optim.Adafactor(),
         optim.Adam(learning_rate=0.01)],
        [lambda path, g: path.startswith("t"), lambda path, g: g.ndim == 3]),
    "multi_single": lambda: optim.MultiOptimizer([optim.Lion(learning_rate=0.01)]),
}

STEPS = 4
results = {}
for name, make in cases.items():
    opt = make()
    # Fresh array objects: Adafactor's weight decay is an in-place `parameter += ...`, which
    # would otherwise change `init` itself for the cases after it.
    params = {k: mx.array(v) for k, v in init.items()}
    steps = []
    for _ in range(STEPS):
        params = opt.apply_gradients(grads_of(params), params)
        mx.eval(params, opt.state)
        steps.append({k: record(v) for k, v in tree_flatten(params)})
    results[name] = steps
    assert all(mx.array_equal(init[k], mx.array(init_records[k]["values"]).reshape(init[k].shape))
               for k in init), name

write("optim_extra", {
    "init": init_records,
    "targets": {k: record(v) for k, v in targets.items()},
    "steps": results,
})
