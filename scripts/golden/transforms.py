#!/usr/bin/env python3
"""Golden data for function transforms: grad / value_and_grad / vjp / jvp / vmap /
checkpoint / custom_function, computed by Python MLX 0.32.2.

Writes tests/data/transforms.json (read by tests/transforms_golden.rs) and the export fixture
tests/data/transforms_python.mlxfn (imported by the Rust export tests). Every function here
has a twin in the Rust test, written op for op; inputs are recorded so both sides see the
same numbers.
"""
import mlx.core as mx

from common import DATA, record, write

KEY = mx.random.key(7)


def normal(shape, i):
    return mx.random.normal(shape, key=mx.random.split(KEY, 64)[i])


# ---- the functions (mirrored in tests/transforms_golden.rs) ----


def elementwise(x, y):
    return mx.sum(mx.sin(x) * mx.exp(y) + x * x / (1.0 + y * y))


def reductions(x):
    return mx.sum(mx.mean(x, axis=1) * mx.max(x, axis=0)[:3]) + mx.prod(mx.tanh(x)) + mx.sum(
        mx.logsumexp(x, axis=0)
    )


def matmul_chain(a, b, c):
    return mx.sum(mx.tanh(a @ b) @ c)


def softmax_lse(x, w):
    return mx.sum(mx.softmax(x, axis=-1) * w) + mx.sum(mx.logsumexp(x, axis=1))


IDX = mx.array([2, 0, 2, 1], dtype=mx.int32)


def indexing(x):
    # take along axis 0, and a slice x[1:3, 0:4:2]
    taken = mx.take(x, IDX, axis=0)
    sl = x[1:3, 0:4:2]
    return mx.sum(taken * taken) + mx.sum(mx.exp(sl))


def mlp_loss(w1, b1, w2, b2, x, y):
    h = mx.maximum(x @ w1 + b1, 0.0)
    logits = h @ w2 + b2
    picked = mx.take_along_axis(logits, y[:, None], axis=1)[:, 0]
    return mx.mean(mx.logsumexp(logits, axis=1) - picked)


def inputs():
    return {
        "x34": normal((3, 4), 0),
        "y34": normal((3, 4), 1),
        "a": normal((2, 3), 2),
        "b": normal((3, 4), 3),
        "c": normal((4, 2), 4),
        "w": normal((3, 4), 5),
        "w1": normal((5, 8), 6) * 0.5,
        "b1": normal((8,), 7) * 0.1,
        "w2": normal((8, 3), 8) * 0.5,
        "b2": normal((3,), 9) * 0.1,
        "xb": normal((6, 5), 10),
        "yb": mx.array([0, 2, 1, 1, 0, 2], dtype=mx.int32),
        "ct34": normal((3, 4), 11),
        "t34a": normal((3, 4), 12),
        "t34b": normal((3, 4), 13),
        "m": normal((4, 3), 14),
        "v": normal((3,), 15),
        "batch": normal((5, 3), 16),
        "batch_t": normal((3, 5), 17),
    }


def grads(inp):
    I = inp
    out = {}

    def vg(name, fun, args, argnums):
        value, g = mx.value_and_grad(fun, argnums=argnums)(*args)
        g = g if isinstance(g, tuple) else (g,)
        out[name] = {"value": record(value), "grads": [record(t) for t in g]}

    vg("elementwise", elementwise, (I["x34"], I["y34"]), (0, 1))
    vg("reductions", reductions, (I["x34"],), 0)
    vg("matmul_chain", matmul_chain, (I["a"], I["b"], I["c"]), (0, 1, 2))
    vg("matmul_chain_arg1", matmul_chain, (I["a"], I["b"], I["c"]), 1)
    vg("softmax_lse", softmax_lse, (I["x34"], I["w"]), (0, 1))
    vg("indexing", indexing, (I["x34"],), 0)
    vg(
        "mlp_loss",
        mlp_loss,
        (I["w1"], I["b1"], I["w2"], I["b2"], I["xb"], I["yb"]),
        (0, 1, 2, 3),
    )

    # value_and_grad with an auxiliary output that must not be differentiated
    def with_aux(x, y):
        loss = elementwise(x, y)
        return loss, x * y

    (loss, aux), g = mx.value_and_grad(with_aux, argnums=(0, 1))(I["x34"], I["y34"])
    out["with_aux"] = {"value": record(loss), "aux": record(aux), "grads": [record(t) for t in g]}

    # checkpoint gives the same gradients
    ck = mx.checkpoint(lambda a, b, c: matmul_chain(a, b, c))
    g = mx.grad(ck, argnums=(0, 1, 2))(I["a"], I["b"], I["c"])
    out["checkpoint_matmul_chain"] = {"grads": [record(t) for t in g]}

    # custom vjp: forward sin(x) * y, backward uses a deliberately "wrong" rule so the
    # custom rule is observable: d/dx := cot * 2 * x, d/dy := cot * cos(y)
    @mx.custom_function
    def f(x, y):
        return mx.sin(x) * y

    @f.vjp
    def f_vjp(primals, cotangent, output):
        x, y = primals
        return cotangent * 2.0 * x, cotangent * mx.cos(y)

    g = mx.grad(lambda x, y: mx.sum(f(x, y) * f(x, y)), argnums=(0, 1))(I["x34"], I["y34"])
    out["custom_vjp"] = {"grads": [record(t) for t in g]}

    # custom jvp and vmap rules, also deliberately distinguishable from the true ones
    @mx.custom_function
    def h(x):
        return mx.exp(x) * 2.0

    @h.jvp
    def h_jvp(primals, tangents):
        # Python passes a single argument (and its tangent) unwrapped.
        x = primals[0] if isinstance(primals, (list, tuple)) else primals
        t = tangents[0] if isinstance(tangents, (list, tuple)) else tangents
        return t * 3.0 * x

    @h.vmap
    def h_vmap(inputs, axes):
        # Python passes a single argument and its axis unwrapped.
        x = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        ax = axes[0] if isinstance(axes, (list, tuple)) else axes
        return mx.exp(x) * 5.0, ax

    _, t = mx.jvp(h, [I["x34"]], [I["t34a"]])
    out["custom_jvp"] = {"jvps": [record(a) for a in t]}
    out["custom_vmap"] = record(mx.vmap(h, in_axes=1, out_axes=0)(I["x34"]))
    return out


def vjp_jvp(inp):
    I = inp
    out = {}
    o, v = mx.vjp(lambda x, y: [mx.sin(x) * mx.exp(y), x @ y.T], [I["x34"], I["y34"]], [I["ct34"], mx.ones((3, 3))])
    out["vjp_two_outputs"] = {"outputs": [record(t) for t in o], "vjps": [record(t) for t in v]}
    o, v = mx.vjp(lambda x: [mx.softmax(x, axis=-1)], [I["x34"]], [I["ct34"]])
    out["vjp_softmax"] = {"outputs": [record(t) for t in o], "vjps": [record(t) for t in v]}
    o, t = mx.jvp(lambda x, y: [mx.sin(x) * mx.exp(y), mx.sum(x * y, axis=0)], [I["x34"], I["y34"]], [I["t34a"], I["t34b"]])
    out["jvp_two_inputs"] = {"outputs": [record(a) for a in o], "jvps": [record(a) for a in t]}
    o, t = mx.jvp(lambda x: [mx.logsumexp(x, axis=1)], [I["x34"]], [I["t34a"]])
    out["jvp_logsumexp"] = {"outputs": [record(a) for a in o], "jvps": [record(a) for a in t]}
    return out


def vmaps(inp):
    I = inp
    out = {}
    # matrix-vector per batch row: in_axes (None, 0)
    r = mx.vmap(lambda m, v: m @ v, in_axes=(None, 0))(I["m"], I["batch"])
    out["matvec_none_0"] = record(r)
    # batch along axis 1 of the input, output batch axis 1
    r = mx.vmap(lambda v: mx.softmax(v * 2.0, axis=0), in_axes=1, out_axes=1)(I["batch_t"])
    out["softmax_in1_out1"] = record(r)
    # negative axes, two outputs
    r = mx.vmap(lambda v: (mx.sum(v * v), v + 1.0), in_axes=-1, out_axes=(0, -1))(I["batch_t"])
    out["two_outputs_negative_axes"] = [record(t) for t in r]
    # vmap of grad (per-example gradients)
    r = mx.vmap(mx.grad(lambda v: mx.sum(mx.sin(v) * v)))(I["batch"])
    out["per_example_grad"] = record(r)
    # grad of vmap
    g = mx.grad(lambda m: mx.sum(mx.vmap(lambda v: m @ v, in_axes=0)(I["batch"])))(I["m"])
    out["grad_of_vmap"] = record(g)
    return out


def export_fixture(inp):
    """A function exported by Python for the Rust import test, and its expected output."""

    def fun(x, y):
        return [mx.tanh(x @ y) + 1.0, mx.sum(x, axis=0)]

    path = DATA / "transforms_python.mlxfn"
    mx.export_function(str(path), fun, inp["a"], inp["b"])
    o = fun(inp["a"], inp["b"])
    return {"outputs": [record(t) for t in o]}


if __name__ == "__main__":
    inp = inputs()
    write(
        "transforms",
        {
            "inputs": {k: record(v) for k, v in inp.items()},
            "grads": grads(inp),
            "vjp_jvp": vjp_jvp(inp),
            "vmap": vmaps(inp),
            "export": export_fixture(inp),
        },
    )
