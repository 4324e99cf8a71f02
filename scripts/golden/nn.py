#!/usr/bin/env python3
"""Golden data for mlx-nn and mlx-optimizers: layers, activations, losses, optimizer steps
and learning-rate schedules computed by Python MLX 0.32.2.

Writes tests/data/nn.json (read by tests/nn_golden.rs). Run via scripts/gen-golden.

Every case stores its inputs, the layer's parameters under Python's parameter paths
(`tree_flatten(module.parameters())`), and the outputs, so the Rust side loads the same
weights by name and must produce the same numbers.
"""

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten

from common import DATA, record, write

mx.random.seed(42)


def params(module):
    return {path: record(a) for path, a in tree_flatten(module.parameters())}


def rand(*shape):
    return mx.random.normal(shape)


layers = {}


def layer_case(name, module, inputs, output, **extra):
    layers[name] = {
        "params": params(module),
        "inputs": [record(x) for x in inputs],
        "output": record(output),
        **extra,
    }


x = rand(2, 5, 8)
lin = nn.Linear(8, 6)
layer_case("linear", lin, [x], lin(x))
lin_nb = nn.Linear(8, 6, bias=False)
layer_case("linear_no_bias", lin_nb, [x], lin_nb(x))

emb = nn.Embedding(10, 8)
idx = mx.array([[1, 4, 9], [0, 0, 3]], dtype=mx.int32)
layer_case("embedding", emb, [idx], emb(idx))
layer_case("embedding_as_linear", emb, [x], emb.as_linear(x))

rms = nn.RMSNorm(8, eps=1e-6)
rms.weight = rand(8)
layer_case("rms_norm", rms, [x], rms(x))
ln = nn.LayerNorm(8)
ln.weight, ln.bias = rand(8), rand(8)
layer_case("layer_norm", ln, [x], ln(x))
ln_plain = nn.LayerNorm(8, affine=False)
layer_case("layer_norm_no_affine", ln_plain, [x], ln_plain(x))

h = rand(2, 3, 5, 8)  # [B, heads, L, D]
rope = nn.RoPE(8)
layer_case("rope", rope, [h], rope(h))
layer_case("rope_offset", rope, [h], rope(h, offset=3), offset=3)
rope_t = nn.RoPE(6, traditional=True, base=500.0, scale=0.5)
layer_case("rope_traditional", rope_t, [h], rope_t(h, offset=1), offset=1)

q, kv = rand(2, 5, 8), rand(2, 7, 8)
mha = nn.MultiHeadAttention(8, 2)
layer_case("mha", mha, [q, kv, kv], mha(q, kv, kv))
mask = nn.MultiHeadAttention.create_additive_causal_mask(5)
layer_case("mha_causal", mha, [q, q, q], mha(q, q, q, mask))
layers["causal_mask"] = {"params": {}, "inputs": [], "output": record(mask)}
mha_b = nn.MultiHeadAttention(8, 4, bias=True)
layer_case("mha_bias", mha_b, [q, kv, kv], mha_b(q, kv, kv))

# Grouped-query attention (Rust's MultiHeadAttention::with_kv_heads; Python's MHA has none):
# 4 query heads, 2 key/value heads, computed here with the kv heads repeated explicitly.
gqa = {"query_proj": nn.Linear(8, 8), "key_proj": nn.Linear(8, 4), "value_proj": nn.Linear(8, 4),
       "out_proj": nn.Linear(8, 8)}
for lin_ in gqa.values():
    del lin_.bias


def heads(t, n):
    return mx.unflatten(t, -1, (n, -1)).transpose(0, 2, 1, 3)


gq = heads(gqa["query_proj"](q), 4)
gk = mx.repeat(heads(gqa["key_proj"](kv), 2), 2, axis=1)
gv = mx.repeat(heads(gqa["value_proj"](kv), 2), 2, axis=1)
go = mx.fast.scaled_dot_product_attention(gq, gk, gv, scale=(1 / 2) ** 0.5)
go = gqa["out_proj"](go.transpose(0, 2, 1, 3).flatten(-2, -1))
layers["mha_gqa"] = {
    "params": {f"{name}.weight": record(m.weight) for name, m in gqa.items()},
    "inputs": [record(q), record(kv), record(kv)],
    "output": record(go),
}

xs = rand(2, 9, 4)
c1 = nn.Conv1d(4, 6, 3, stride=2, padding=1)
layer_case("conv1d", c1, [xs], c1(xs))
xi = rand(1, 6, 6, 3)
c2 = nn.Conv2d(3, 4, 3, stride=1, padding=1)
layer_case("conv2d", c2, [xi], c2(xi))
c2g = nn.Conv2d(4, 4, 2, groups=2, bias=False)
xg = rand(1, 5, 5, 4)
layer_case("conv2d_groups", c2g, [xg], c2g(xg))

seq = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
layer_case("sequential", seq, [x], seq(x))

big = rand(3, 64)
qlin_src = nn.Linear(64, 16)
qlin = nn.QuantizedLinear.from_linear(qlin_src, group_size=32, bits=4)
layer_case("quantized_linear", qlin_src, [big], qlin(big), quantized=params(qlin))
qemb_src = nn.Embedding(12, 64)
qemb = nn.QuantizedEmbedding.from_embedding(qemb_src, group_size=32, bits=4)
qidx = mx.array([[1, 5, 11]], dtype=mx.int32)
layer_case("quantized_embedding", qemb_src, [qidx], qemb(qidx), quantized=params(qemb))
layers["quantized_embedding_as_linear"] = {
    "params": params(qemb_src),
    "inputs": [record(big)],
    "output": record(qemb.as_linear(big)),
}

# ---- activations ----
a = mx.linspace(-4, 4, 17).reshape(1, 17)
acts = {
    name: record(f(a))
    for name, f in [
        ("relu", nn.relu),
        ("relu6", nn.relu6),
        ("leaky_relu", nn.leaky_relu),
        ("elu", nn.elu),
        ("softplus", nn.softplus),
        ("softsign", nn.softsign),
        ("silu", nn.silu),
        ("log_sigmoid", nn.log_sigmoid),
        ("sigmoid", nn.sigmoid),
        ("gelu", nn.gelu),
        ("gelu_approx", nn.gelu_approx),
        ("gelu_fast_approx", nn.gelu_fast_approx),
        ("mish", nn.mish),
        ("tanh", nn.tanh),
        ("selu", nn.selu),
        ("softmax", nn.softmax),
        ("log_softmax", nn.log_softmax),
        ("hard_tanh", nn.hard_tanh),
        ("relu2", nn.relu2),
        ("softmin", nn.softmin),
        ("softshrink", nn.softshrink),
        ("softshrink_1", lambda x: nn.softshrink(x, 1.0)),
        ("hard_shrink", nn.hard_shrink),
        ("hardswish", nn.hardswish),
        ("celu", lambda x: nn.celu(x, 1.5)),
        ("step", nn.step),
        ("step_1", lambda x: nn.step(x, 1.0)),
        ("PReLU", nn.PReLU(1, 0.3)),
        ("ELU", nn.ELU(0.5)),
        ("CELU", nn.CELU(0.5)),
        ("LeakyReLU", nn.LeakyReLU(0.2)),
        ("HardShrink", nn.HardShrink(1.0)),
        ("Softshrink", nn.Softshrink(1.0)),
        ("Step", nn.Step(0.5)),
        ("Hardswish", nn.Hardswish()),
        ("HardTanh", nn.HardTanh()),
        ("Softmax", nn.Softmax()),
        ("Softmin", nn.Softmin()),
        ("LogSoftmax", nn.LogSoftmax()),
        ("ReLU2", nn.ReLU2()),
        ("Softsign", nn.Softsign()),
    ]
}
acts["glu"] = record(nn.glu(mx.linspace(-4, 4, 16).reshape(2, 8)))

# ---- losses ----
logits = rand(4, 5)
targets = mx.array([0, 3, 4, 1], dtype=mx.int32)
probs = mx.softmax(rand(4, 5), axis=-1)
w = mx.abs(rand(4))
preds, tgt = rand(3, 4), rand(3, 4)
bin_logits = rand(6)
bin_t = mx.array([0, 1, 1, 0, 1, 0], dtype=mx.float32)
logp = nn.log_softmax(rand(4, 5))
logq = nn.log_softmax(rand(4, 5))
L = nn.losses
losses = {
    "inputs": {
        "logits": record(logits), "targets": record(targets), "probs": record(probs),
        "weights": record(w), "preds": record(preds), "tgt": record(tgt),
        "bin_logits": record(bin_logits), "bin_t": record(bin_t),
        "logp": record(logp), "logq": record(logq),
    },
    "cross_entropy": record(L.cross_entropy(logits, targets)),
    "cross_entropy_smooth_mean": record(
        L.cross_entropy(logits, targets, label_smoothing=0.1, reduction="mean")),
    "cross_entropy_probs": record(L.cross_entropy(logits, probs)),
    "cross_entropy_weights_sum": record(
        L.cross_entropy(logits, targets, weights=w, reduction="sum")),
    "bce_logits": record(L.binary_cross_entropy(bin_logits, bin_t)),
    "bce_probs": record(
        L.binary_cross_entropy(mx.sigmoid(bin_logits), bin_t, with_logits=False, reduction="none")),
    "mse": record(L.mse_loss(preds, tgt)),
    "l1_sum": record(L.l1_loss(preds, tgt, reduction="sum")),
    "nll": record(L.nll_loss(logp, targets)),
    "kl_div": record(L.kl_div_loss(logp, logq)),
    "smooth_l1": record(L.smooth_l1_loss(preds, tgt, beta=0.5)),
}


# Inputs of the later losses from their own keys, leaving the global stream (and so every
# record after this one) as it was.
def keyed(seed, *shape):
    return mx.random.normal(shape, key=mx.random.key(seed))


signs = mx.where(keyed(1, 3, 4) > 0, 1.0, -1.0)
x1, x2, x3 = keyed(2, 3, 4), keyed(3, 3, 4), keyed(4, 3, 4)
variances = mx.abs(keyed(5, 3, 4))
variances = variances.at[0, 0].add(-variances[0, 0])  # one zero: clamped to eps
losses["inputs"].update({
    "signs": record(signs), "x1": record(x1), "x2": record(x2), "x3": record(x3),
    "vars": record(variances),
})
losses.update({
    "hinge": record(L.hinge_loss(preds, signs)),
    "hinge_mean": record(L.hinge_loss(preds, signs, reduction="mean")),
    "huber": record(L.huber_loss(preds, tgt)),
    "huber_delta_sum": record(L.huber_loss(preds, tgt, delta=0.3, reduction="sum")),
    "log_cosh": record(L.log_cosh_loss(preds, tgt)),
    "cosine": record(L.cosine_similarity_loss(x1, x2)),
    "cosine_axis0_mean": record(L.cosine_similarity_loss(x1, x2, axis=0, reduction="mean")),
    "margin_ranking": record(L.margin_ranking_loss(x1, x2, signs)),
    "margin_ranking_margin": record(L.margin_ranking_loss(x1, x2, signs, margin=0.5)),
    "gaussian_nll": record(L.gaussian_nll_loss(x1, x2, variances)),
    "gaussian_nll_full_none": record(
        L.gaussian_nll_loss(x1, x2, variances, full=True, reduction="none")),
    "triplet": record(L.triplet_loss(x1, x2, x3)),
    "triplet_p3": record(L.triplet_loss(x1, x2, x3, axis=0, p=3, margin=0.5, reduction="sum")),
})

# ---- optimizers: several steps on a small MLP ----


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 8), nn.Linear(8, 3)]

    def __call__(self, x):
        return self.layers[1](nn.relu(self.layers[0](x)))


mlp0 = Mlp()
init_params = params(mlp0)
bx, by = rand(16, 4), mx.array([0, 1, 2, 1] * 4, dtype=mx.int32)


def loss_fn(model, x, y):
    return L.cross_entropy(model(x), y, reduction="mean")


optimizer_cases = {
    "sgd": lambda: optim.SGD(learning_rate=0.1),
    "sgd_momentum": lambda: optim.SGD(learning_rate=0.1, momentum=0.9, weight_decay=0.01,
                                      dampening=0.1),
    "sgd_nesterov": lambda: optim.SGD(learning_rate=0.1, momentum=0.9, nesterov=True),
    "adam": lambda: optim.Adam(learning_rate=0.01),
    "adam_bias_correction": lambda: optim.Adam(learning_rate=0.01, betas=[0.8, 0.9], eps=1e-6,
                                               bias_correction=True),
    "adamw": lambda: optim.AdamW(learning_rate=0.01, weight_decay=0.1),
    "lion": lambda: optim.Lion(learning_rate=0.01, weight_decay=0.1),
    "adam_cosine": lambda: optim.Adam(learning_rate=optim.cosine_decay(0.05, 4, 0.001)),
    "rmsprop": lambda: optim.RMSprop(learning_rate=0.01, alpha=0.9),
    "adagrad": lambda: optim.Adagrad(learning_rate=0.1),
    "adadelta": lambda: optim.AdaDelta(learning_rate=1.0, rho=0.95),
    "adamax": lambda: optim.Adamax(learning_rate=0.01, betas=[0.8, 0.95]),
    "sgd_warmup": lambda: optim.SGD(learning_rate=optim.join_schedules(
        [optim.linear_schedule(0.0, 0.1, 2), optim.cosine_decay(0.1, 5)], [2])),
}
STEPS = 4
optimizers = {}
for name, make in optimizer_cases.items():
    model = Mlp()
    model.update(mlp0.parameters())
    opt = make()
    vg = nn.value_and_grad(model, loss_fn)
    steps = []
    for _ in range(STEPS):
        loss, grads = vg(model, bx, by)
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state)
        steps.append({"loss": loss.item(), "lr": opt.learning_rate.item(),
                      "params": params(model)})
    optimizers[name] = steps

# Gradient names and values for one step, and clipping.
vg = nn.value_and_grad(mlp0, loss_fn)
loss0, grads0 = vg(mlp0, bx, by)
clipped, norm = optim.clip_grad_norm(grads0, max_norm=0.5)
grads = {
    "loss": loss0.item(),
    "grads": {p: record(g) for p, g in tree_flatten(grads0)},
    "clipped": {p: record(g) for p, g in tree_flatten(clipped)},
    "norm": record(norm),
}

# ---- schedules ----
steps_arr = mx.arange(0, 12).astype(mx.uint64)
schedules = {
    "cosine_decay": record(optim.cosine_decay(0.1, 8, 0.01)(steps_arr)),
    "linear_schedule": record(optim.linear_schedule(0.0, 0.1, 5)(steps_arr)),
    "exponential_decay": record(optim.exponential_decay(0.1, 0.9)(steps_arr)),
    "step_decay": record(optim.step_decay(0.1, 0.5, 3)(steps_arr)),
    "join": record(optim.join_schedules(
        [optim.linear_schedule(0.0, 0.1, 3), optim.cosine_decay(0.1, 6)], [3])(steps_arr)),
}

write("nn", {
    "layers": layers,
    "activations": {"input": record(a), **acts},
    "losses": losses,
    "mlp": {"params": init_params, "x": record(bx), "y": record(by)},
    "optimizers": optimizers,
    "grads": grads,
    "schedules": schedules,
})

# A weights file written by Python from tree_flatten(model.parameters()), loaded by name in Rust.
mx.save_safetensors(str(DATA / "nn_mlp.safetensors"),
                    dict(tree_flatten(mlp0.parameters())))
