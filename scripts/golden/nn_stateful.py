#!/usr/bin/env python3
"""Golden data for the mlx.nn layers with state or several inputs: BatchNorm (running
statistics in training and evaluation mode), GroupNorm, InstanceNorm, RNN/GRU/LSTM, Bilinear,
SinusoidalPositionalEncoding and ALiBi, computed by Python MLX 0.32.2.

Writes tests/data/nn_stateful.json (read by tests/nn_stateful.rs). Run via scripts/gen-golden.

Every case stores the layer's keyword arguments, its parameters under Python's paths
(`tree_flatten(module.parameters())`), the inputs and the outputs, so the Rust side builds the
same layer, loads the same weights by name and must produce the same numbers. Also recorded:
the keys `save_weights` writes and the trainable parameter names (BatchNorm's running
statistics are saved but frozen), seeded initial parameters, and a few SGD steps of a model
with a BatchNorm.
"""

import os

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten

from common import record, write

mx.random.seed(42)


def params(module):
    return {path: record(a) for path, a in tree_flatten(module.parameters())}


def rand(*shape, dtype=mx.float32):
    return mx.random.normal(shape).astype(dtype)


def randomize(module):
    """Random values for every parameter (so weight and bias of a norm matter), keeping
    running variances positive."""
    new = []
    for path, a in tree_flatten(module.parameters()):
        v = mx.random.normal(a.shape).astype(a.dtype)
        if path.endswith("running_var"):
            v = mx.abs(v) + 0.5
        new.append((path, v))
    module.load_weights(new)


# ---------------------------------------------------------------------------------------------
# BatchNorm: three training calls (output and running statistics after each), then one call in
# evaluation mode.

batch_norm = {}


def batch_norm_case(name, shape, dtype=mx.float32, calls=3, **kwargs):
    bn = nn.BatchNorm(shape[-1], **kwargs)
    randomize(bn)
    case = {"options": kwargs, "params": params(bn), "train": []}
    for _ in range(calls):
        x = rand(*shape, dtype=dtype) * 2 + 0.5
        y = bn(x)
        step = {"input": record(x), "output": record(y)}
        if "running_mean" in bn:
            step["running_mean"] = record(bn.running_mean)
            step["running_var"] = record(bn.running_var)
        case["train"].append(step)
    bn.eval()
    x = rand(*shape, dtype=dtype)
    case["eval"] = {"input": record(x), "output": record(bn(x))}
    batch_norm[name] = case


batch_norm_case("default_2d", (8, 4))
batch_norm_case("default_3d", (4, 6, 5))
batch_norm_case("default_4d", (2, 3, 5, 4))
batch_norm_case("no_affine", (6, 5, 3), affine=False)
batch_norm_case("no_tracking", (6, 3), track_running_stats=False)
batch_norm_case("plain", (5, 3), affine=False, track_running_stats=False)
batch_norm_case("momentum_eps", (7, 4), momentum=0.3, eps=1e-3)
batch_norm_case("float16", (4, 6, 5), dtype=mx.float16)
batch_norm_case("bfloat16", (8, 4), dtype=mx.bfloat16)

# ---------------------------------------------------------------------------------------------
# GroupNorm and InstanceNorm

group_norm = {}


def group_norm_case(name, num_groups, shape, dtype=mx.float32, **kwargs):
    gn = nn.GroupNorm(num_groups, shape[-1], **kwargs)
    randomize(gn)
    x = rand(*shape, dtype=dtype) * 3 - 1
    group_norm[name] = {
        "num_groups": num_groups,
        "options": kwargs,
        "params": params(gn),
        "input": record(x),
        "output": record(gn(x)),
    }


group_norm_case("default", 4, (2, 3, 5, 8))
group_norm_case("pytorch", 4, (2, 3, 5, 8), pytorch_compatible=True)
group_norm_case("no_affine", 2, (3, 7, 6), affine=False)
group_norm_case("pytorch_no_affine", 3, (3, 7, 6), affine=False, pytorch_compatible=True)
group_norm_case("eps_2d", 2, (4, 6), eps=1e-2)
group_norm_case("float16", 4, (2, 6, 8), dtype=mx.float16)
group_norm_case("float16_pytorch", 4, (2, 6, 8), dtype=mx.float16, pytorch_compatible=True)
group_norm_case("bfloat16", 2, (2, 5, 4), dtype=mx.bfloat16)

instance_norm = {}


def instance_norm_case(name, shape, dtype=mx.float32, **kwargs):
    norm = nn.InstanceNorm(shape[-1], **kwargs)
    randomize(norm)
    x = rand(*shape, dtype=dtype) * 2 + 1
    instance_norm[name] = {
        "options": kwargs,
        "params": params(norm),
        "input": record(x),
        "output": record(norm(x)),
    }


instance_norm_case("default_3d", (2, 5, 6))
instance_norm_case("affine_4d", (2, 3, 4, 6), affine=True)
instance_norm_case("affine_5d", (2, 2, 3, 2, 3), affine=True, eps=1e-3)
instance_norm_case("float16", (2, 7, 4), dtype=mx.float16, affine=True)

# ---------------------------------------------------------------------------------------------
# Recurrent layers: batched and unbatched inputs, with and without initial states.

recurrent = {}


def recurrent_case(name, layer, kind, x, hidden=None, cell=None, **kwargs):
    if kind == "lstm":
        out = layer(x, hidden, cell)
        outputs = [record(out[0]), record(out[1])]
    else:
        out = layer(x, hidden)
        outputs = [record(out)]
    recurrent[name] = {
        "kind": kind,
        "options": kwargs,
        "params": params(layer),
        "input": record(x),
        "hidden": None if hidden is None else record(hidden),
        "cell": None if cell is None else record(cell),
        "outputs": outputs,
    }


D, H = 5, 7
xb, xu = rand(3, 4, D), rand(4, D)
hb, hu = rand(3, H), rand(H)
cb, cu = rand(3, H), rand(H)

rnn = nn.RNN(D, H)
recurrent_case("rnn", rnn, "rnn", xb)
recurrent_case("rnn_hidden", rnn, "rnn", xb, hb)
recurrent_case("rnn_unbatched", rnn, "rnn", xu)
recurrent_case("rnn_unbatched_hidden", rnn, "rnn", xu, hu)
rnn_nb = nn.RNN(D, H, bias=False)
recurrent_case("rnn_no_bias", rnn_nb, "rnn", xb, hb, bias=False)
rnn_relu = nn.RNN(D, H, nonlinearity=nn.relu)
recurrent_case("rnn_relu", rnn_relu, "rnn", xb, hb, nonlinearity="relu")
rnn16 = nn.RNN(D, H)
rnn16.set_dtype(mx.float16)
recurrent_case("rnn_float16", rnn16, "rnn", xb.astype(mx.float16), hb.astype(mx.float16))

gru = nn.GRU(D, H)
recurrent_case("gru", gru, "gru", xb)
recurrent_case("gru_hidden", gru, "gru", xb, hb)
recurrent_case("gru_unbatched", gru, "gru", xu)
recurrent_case("gru_unbatched_hidden", gru, "gru", xu, hu)
gru_nb = nn.GRU(D, H, bias=False)
recurrent_case("gru_no_bias", gru_nb, "gru", xb, bias=False)
recurrent_case("gru_no_bias_hidden", gru_nb, "gru", xb, hb, bias=False)
gru16 = nn.GRU(D, H)
gru16.set_dtype(mx.bfloat16)
recurrent_case("gru_bfloat16", gru16, "gru", xb.astype(mx.bfloat16), hb.astype(mx.bfloat16))

lstm = nn.LSTM(D, H)
recurrent_case("lstm", lstm, "lstm", xb)
recurrent_case("lstm_hidden", lstm, "lstm", xb, hb)
recurrent_case("lstm_cell", lstm, "lstm", xb, None, cb)
recurrent_case("lstm_hidden_cell", lstm, "lstm", xb, hb, cb)
recurrent_case("lstm_unbatched", lstm, "lstm", xu)
recurrent_case("lstm_unbatched_hidden_cell", lstm, "lstm", xu, hu, cu)
lstm_nb = nn.LSTM(D, H, bias=False)
recurrent_case("lstm_no_bias", lstm_nb, "lstm", xb, hb, cb, bias=False)
lstm16 = nn.LSTM(D, H)
lstm16.set_dtype(mx.float16)
recurrent_case(
    "lstm_float16", lstm16, "lstm", xb.astype(mx.float16), hb.astype(mx.float16),
    cb.astype(mx.float16),
)

# ---------------------------------------------------------------------------------------------
# Bilinear

bilinear = {}


def bilinear_case(name, dims, x1, x2, **kwargs):
    layer = nn.Bilinear(*dims, **kwargs)
    if x1.dtype != mx.float32:
        layer.set_dtype(x1.dtype)
    bilinear[name] = {
        "dims": list(dims),
        "options": kwargs,
        "params": params(layer),
        "inputs": [record(x1), record(x2)],
        "output": record(layer(x1, x2)),
    }


bilinear_case("batched_3d", (4, 5, 6), rand(2, 3, 4), rand(2, 3, 5))
bilinear_case("batched_2d", (4, 5, 6), rand(3, 4), rand(3, 5))
bilinear_case("vectors", (4, 5, 6), rand(4), rand(5))
bilinear_case("no_bias", (3, 2, 5), rand(6, 3), rand(6, 2), bias=False)
bilinear_case("float16", (4, 5, 6), rand(3, 4, dtype=mx.float16), rand(3, 5, dtype=mx.float16))

# ---------------------------------------------------------------------------------------------
# Positional encodings

sinusoidal = {}


def sinusoidal_case(name, dims, x, **kwargs):
    pe = nn.SinusoidalPositionalEncoding(dims, **kwargs)
    sinusoidal[name] = {
        "dims": dims,
        "options": kwargs,
        "scale": pe.scale,
        "sigmas": record(pe._sigmas),
        "input": record(x),
        "output": record(pe(x)),
    }


positions = mx.arange(10, dtype=mx.float32)
sinusoidal_case("default", 8, positions)
sinusoidal_case("cos_first", 16, positions, cos_first=True)
sinusoidal_case("full_turns", 12, positions * 0.1, full_turns=True)
sinusoidal_case("scale_one", 6, positions, scale=1.0)
sinusoidal_case("scale_freqs", 10, positions, scale=0.3, min_freq=0.01, max_freq=3.0)
sinusoidal_case("dims_2", 2, positions)
sinusoidal_case("int_positions", 8, mx.arange(7))
sinusoidal_case("batched", 8, rand(2, 5) * 10)
sinusoidal_case("float16", 8, positions.astype(mx.float16))

alibi = {}


def alibi_case(name, scores, offset=0, mask=None):
    out = nn.ALiBi()(scores, offset=offset, mask=mask)
    alibi[name] = {
        "offset": offset,
        "scores": record(scores),
        "mask": None if mask is None else record(mask),
        "output": record(out),
    }


causal = nn.MultiHeadAttention.create_additive_causal_mask(5)
alibi_case("heads_4", rand(2, 4, 5, 5))
alibi_case("heads_4_mask", rand(2, 4, 5, 5), mask=causal)
alibi_case("heads_6_offset", rand(1, 6, 2, 5), offset=3)
alibi_case("heads_6_offset_mask", rand(1, 6, 2, 5), offset=3, mask=causal[3:])
alibi_case("heads_12", rand(1, 12, 3, 4))
alibi_case("float16_mask", rand(2, 8, 5, 5, dtype=mx.float16), mask=causal.astype(mx.float16))
alibi_case("bfloat16", rand(1, 3, 4, 4, dtype=mx.bfloat16))

slopes = {}
for n in [1, 2, 3, 5, 6, 8, 12, 16, 20, 31, 32]:
    for dtype in [mx.float32, mx.float16, mx.bfloat16]:
        key = f"{n}_{str(dtype).removeprefix('mlx.core.')}"
        slopes[key] = record(nn.ALiBi.create_alibi_slope(n, dtype))
alibi_matrices = {
    "q5_k7_h4": record(nn.ALiBi.create_alibi_matrix(5, 7, 4, 0)),
    "q6_k6_h3_offset2_float16": record(
        nn.ALiBi.create_alibi_matrix(6, 6, 3, 2, dtype=mx.float16)
    ),
}

# ---------------------------------------------------------------------------------------------
# Saved keys and trainable names.


def saved_keys(module):
    # Not `tempfile`: this folder's random.py shadows the standard module it imports.
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"nn_stateful_{os.getpid()}.safetensors")
    module.save_weights(path)
    try:
        return sorted(mx.load(path).keys())
    finally:
        os.remove(path)


def names(tree):
    return [path for path, _ in tree_flatten(tree)]


keyed = {
    "batch_norm": nn.BatchNorm(4),
    "batch_norm_no_affine": nn.BatchNorm(4, affine=False),
    "batch_norm_plain": nn.BatchNorm(4, affine=False, track_running_stats=False),
    "group_norm": nn.GroupNorm(2, 4),
    "instance_norm_affine": nn.InstanceNorm(4, affine=True),
    "rnn": nn.RNN(3, 4),
    "rnn_no_bias": nn.RNN(3, 4, bias=False),
    "gru": nn.GRU(3, 4),
    "gru_no_bias": nn.GRU(3, 4, bias=False),
    "lstm": nn.LSTM(3, 4),
    "bilinear": nn.Bilinear(2, 3, 4),
    "sinusoidal": nn.SinusoidalPositionalEncoding(8),
    "alibi": nn.ALiBi(),
    "sequential_batch_norm": nn.Sequential(nn.Linear(3, 4), nn.BatchNorm(4)),
}
modules = {
    name: {
        "saved": saved_keys(m),
        "parameters": names(m.parameters()),
        "trainable": names(m.trainable_parameters()),
    }
    for name, m in keyed.items()
}
# Python's BatchNorm.unfreeze keeps the running statistics frozen; unfreezing a model that
# contains one does not.
bn = nn.BatchNorm(4)
bn.unfreeze()
seq = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm(4))
seq.unfreeze()
modules["batch_norm"]["trainable_after_unfreeze"] = names(bn.trainable_parameters())
modules["sequential_batch_norm"]["trainable_after_unfreeze"] = names(seq.trainable_parameters())

# ---------------------------------------------------------------------------------------------
# Seeded construction: hidden size 7 and input1_dims 784, where the scale computed in float32
# differs from Python's float64 in the last bit.


def seeded(make, seed=7):
    mx.random.seed(seed)
    return params(make())


seeded_layers = {
    "rnn": seeded(lambda: nn.RNN(5, 7)),
    "rnn_no_bias": seeded(lambda: nn.RNN(5, 7, bias=False)),
    "gru": seeded(lambda: nn.GRU(5, 7)),
    "lstm": seeded(lambda: nn.LSTM(5, 7)),
    "bilinear": seeded(lambda: nn.Bilinear(784, 3, 2)),
}

# ---------------------------------------------------------------------------------------------
# Training: Linear -> BatchNorm -> mean square, SGD, three steps. The running statistics
# change inside nn.value_and_grad, as a side effect of the call.

mx.random.seed(3)
model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm(4))
start = params(model)
opt = optim.SGD(learning_rate=0.1)


def loss_fn(model, x, y):
    return ((model(x) - y) ** 2).mean()


loss_and_grad = nn.value_and_grad(model, loss_fn)
train_steps = []
for _ in range(3):
    x, y = rand(6, 3), rand(6, 4)
    loss, grads = loss_and_grad(model, x, y)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state, loss)
    train_steps.append({
        "x": record(x), "y": record(y), "loss": record(loss), "params": params(model),
    })
model.eval()
x_eval = rand(5, 3)
training = {
    "start": start,
    "steps": train_steps,
    "eval": {"input": record(x_eval), "output": record(model(x_eval))},
}

write("nn_stateful", {
    "batch_norm": batch_norm,
    "group_norm": group_norm,
    "instance_norm": instance_norm,
    "recurrent": recurrent,
    "bilinear": bilinear,
    "sinusoidal": sinusoidal,
    "alibi": alibi,
    "alibi_slopes": slopes,
    "alibi_matrices": alibi_matrices,
    "modules": modules,
    "seeded": seeded_layers,
    "training": training,
})
