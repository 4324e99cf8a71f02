#!/usr/bin/env python3
"""The Python worker of scripts/bench-compare: the workloads of
benches/common/workloads.rs, done identically with mlx.core (same ops, shapes and order;
keep the two files in step), plus optree and jax.tree_util for W2.

    python workloads.py [NAME...]   # standalone: medians of 15 samples (BENCH_SAMPLES) each
    python workloads.py --serve     # stdin: "run NAME SAMPLES"; stdout: one JSON line each,
                                    # {"name": NAME, "times": {IMPL: [s per iteration, ...]}}
    python workloads.py --list      # "NAME INNER" lines (INNER = iterations per sample)

Needs mlx==0.32.2 (mlx-cpu), optree, jax[cpu], numpy: scripts/bench-compare makes that venv.
"""
import json
import math
import os
import statistics
import sys
import time

import mlx.core as mx

WARMUP_SAMPLES = 2

# ---------------------------------------------------------------------------------------
# W1: per-op overhead.

W1_OPS = 10_000


def scalar_adds(do_eval):
    def run():
        x = mx.array(0.0)
        for _ in range(W1_OPS):
            x = x + 1.0
        if do_eval:
            mx.eval(x)

    return {"mlx": run}


def chain16(do_eval):
    x0 = mx.linspace(-1.0, 1.0, 16)
    y = mx.full((16,), 0.5)
    mx.eval(x0, y)

    def run():
        x = x0
        for _ in range(W1_OPS // 4):
            x = mx.multiply(x, y)
            x = mx.add(x, y)
            x = mx.sin(x)
            x = mx.tanh(x)
        if do_eval:
            mx.eval(x)

    return {"mlx": run}


# ---------------------------------------------------------------------------------------
# W2: flatten + unflatten of a 1,000-leaf model-shaped tree (nested dicts and lists; the
# Rust side has the same structure as derived structs, Vecs, Options and maps).

W2_LAYERS = 49  # 49 layers x 20 leaves + 20 model-level leaves = 1,000
W2_BIG_LAYERS = 4_999  # 100,000 leaves


def tree_model(layers=W2_LAYERS):
    leaf = lambda: mx.array(0.0)

    def linear(bias=True):
        d = {"weight": leaf()}
        if bias:
            d["bias"] = leaf()
        return d

    def norm():
        return {"weight": leaf()}

    def layer():
        return {
            "attn": {"wq": linear(), "wk": linear(), "wv": linear(), "wo": linear()},
            "mlp": {"gate": linear(False), "up": linear(False), "down": linear(False)},
            "norms": [norm(), norm()],
            "scales": {f"s{i}": leaf() for i in range(7)},
        }

    return {
        "embed": {"weight": leaf()},
        "layers": [layer() for _ in range(layers)],
        "norm": norm(),
        "lm_head": linear(),
        "adapters": {f"a{i:02}": leaf() for i in range(16)},
    }


def tree_roundtrip():
    """mlx.utils, optree and jax.tree_util on the same tree; BENCH_IMPL=NAME builds only that
    one (and imports only its library: the instruction counts of scripts/bench/instructions.py
    would otherwise include importing jax)."""
    only = os.environ.get("BENCH_IMPL")
    tree = tree_model()
    impls = {}
    if only in (None, "mlx.utils"):
        from mlx.utils import tree_flatten, tree_unflatten

        assert len(tree_flatten(tree)) == 1000

        def mlx_utils():
            tree_unflatten(tree_flatten(tree))

        impls["mlx.utils"] = mlx_utils
    if only in (None, "optree"):
        import optree

        assert len(optree.tree_leaves(tree)) == 1000

        def with_optree():
            leaves, spec = optree.tree_flatten(tree)
            optree.tree_unflatten(spec, leaves)

        impls["optree"] = with_optree
    if only in (None, "jax.tree_util"):
        import jax

        assert len(jax.tree_util.tree_leaves(tree)) == 1000

        def with_jax():
            leaves, spec = jax.tree_util.tree_flatten(tree)
            jax.tree_util.tree_unflatten(spec, leaves)

        impls["jax.tree_util"] = with_jax
    return impls


def unflatten_100k():
    """Unflatten alone, of a tree 100 times W2's, from a prebuilt spec and leaf list (the
    result is freed inside the iteration); optree and jax.tree_util (mlx.utils has no
    treedef: its tree_unflatten takes (path, leaf) pairs, also timed)."""
    only = os.environ.get("BENCH_IMPL")
    tree = tree_model(W2_BIG_LAYERS)
    impls = {}
    if only in (None, "mlx.utils"):
        from mlx.utils import tree_flatten, tree_unflatten

        pairs = tree_flatten(tree)
        assert len(pairs) == 100_000
        impls["mlx.utils"] = lambda: tree_unflatten(pairs)
    if only in (None, "optree"):
        import optree

        leaves, spec = optree.tree_flatten(tree)
        assert len(leaves) == 100_000
        impls["optree"] = lambda: optree.tree_unflatten(spec, leaves)
    if only in (None, "jax.tree_util"):
        import jax

        jleaves, jspec = jax.tree_util.tree_flatten(tree)
        assert len(jleaves) == 100_000
        impls["jax.tree_util"] = lambda: jax.tree_util.tree_unflatten(jspec, jleaves)
    return impls


# ---------------------------------------------------------------------------------------
# W3: compiled-call overhead with a 100-leaf tree argument.

W3_BLOCKS = 25  # 25 blocks x 4 leaves


def compiled_call_tree():
    n = 0

    def nxt():
        nonlocal n
        n += 1
        return mx.full((4,), float(n))

    tree = []
    for _ in range(W3_BLOCKS):
        fc1 = {"weight": nxt(), "bias": nxt()}
        fc2 = {"weight": nxt(), "bias": nxt()}
        # A float constant per block: part of mx.compile's cache key, like Rust's static field.
        tree.append({"fc1": fc1, "fc2": fc2, "shift": 1.0})
    mx.eval(tree)
    return tree


def compiled_call(do_eval):
    tree = compiled_call_tree()

    def fun(tree):
        def block(b):
            f = lambda x: mx.add(mx.multiply(x, 2.0), b["shift"])
            lin = lambda l: {"weight": f(l["weight"]), "bias": f(l["bias"])}
            return {"fc1": lin(b["fc1"]), "fc2": lin(b["fc2"]), "shift": b["shift"]}

        return [block(b) for b in tree]

    cfun = mx.compile(fun)

    def run():
        out = cfun(tree)
        if do_eval:
            mx.eval(out)

    return {"mlx": run}


def compiled_call_flat():
    """The floor under W3: the same fn on the leaves as positional arguments."""
    leaves = [x for b in compiled_call_tree() for l in (b["fc1"], b["fc2"]) for x in (l["weight"], l["bias"])]
    assert len(leaves) == 100
    cfun = mx.compile(lambda *xs: [mx.add(mx.multiply(x, 2.0), 1.0) for x in xs])

    def run():
        cfun(*leaves)

    return {"mlx": run}


# ---------------------------------------------------------------------------------------
# W4: GELU fusion.

# BENCH_W4_N: the GPU run uses 16M elements, where a kernel launch no longer dominates.
W4_N = int(os.environ.get("BENCH_W4_N", 1 << 20))


def gelu(x):
    inner = mx.erf(mx.divide(x, math.sqrt(2.0)))
    return mx.multiply(mx.multiply(x, 0.5), mx.add(inner, 1.0))


def gelu_workload(compiled):
    x = mx.random.normal((W4_N,), key=mx.random.key(0))
    mx.eval(x)
    f = mx.compile(gelu) if compiled else gelu

    def run():
        mx.eval(f(x))

    return {"mlx": run}


# ---------------------------------------------------------------------------------------
# W5: MLP training step through the library: nn.Linear layers, nn.losses.cross_entropy,
# nn.value_and_grad, optim.Adam; the model and optimizer state are compiled inputs and outputs.

W5_SIZES = [784, 512, 512, 10]
W5_BATCH = 128
LR = 1e-3


def train_step_workload():
    from functools import partial

    import mlx.nn as nn
    import mlx.optimizers as optim

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(i, o) for i, o in zip(W5_SIZES[:-1], W5_SIZES[1:])]

        def __call__(self, x):
            for i, l in enumerate(self.layers):
                x = l(x)
                if i + 1 < len(self.layers):
                    x = nn.relu(x)
            return x

    keys = mx.random.split(mx.random.key(0), 8)
    model = Mlp()
    for i, (din, dout) in enumerate(zip(W5_SIZES[:-1], W5_SIZES[1:])):
        scale = 1.0 / math.sqrt(din)
        model.layers[i].weight = mx.random.uniform(-scale, scale, (dout, din), key=keys[i])
        model.layers[i].bias = mx.zeros((dout,))
    opt = optim.Adam(learning_rate=LR)
    opt.init(model.trainable_parameters())
    x = mx.random.normal((W5_BATCH, W5_SIZES[0]), key=keys[6])
    y = mx.random.randint(0, W5_SIZES[3], (W5_BATCH,), key=keys[7])
    mx.eval(model.parameters(), opt.state, x, y)

    def loss_fn(model, x, y):
        return nn.losses.cross_entropy(model(x), y, reduction="mean")

    loss_and_grad = nn.value_and_grad(model, loss_fn)
    state = [model.state, opt.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        opt.update(model, grads)
        return loss

    def run():
        loss = step(x, y)
        mx.eval(loss, state)

    return {"mlx": run}


# ---------------------------------------------------------------------------------------
# W6: decode with a small Llama-style model, preallocated KV cache, compiled step.

V_VOCAB, V_DIM, V_HEADS, V_HIDDEN, V_LAYERS = 1024, 256, 8, 768, 4
V_HEAD_DIM = V_DIM // V_HEADS
V_MAX_LEN = 128
V_TOKENS = 128
NORM_EPS = 1e-5
ROPE_BASE = 10_000.0


def heads(x):
    return mx.transpose(mx.reshape(x, (1, 1, V_HEADS, V_HEAD_DIM)), (0, 2, 1, 3))


def decode_step(params, token, cache):
    offset = cache["offset"]
    start = mx.reshape(offset, (1,))
    mask = mx.less_equal(mx.arange(0, V_MAX_LEN, 1), offset)
    scale = V_HEAD_DIM ** -0.5
    h = mx.take(params["embed"], token, 0)
    keys, values = [], []
    for l, kc, vc in zip(params["layers"], cache["keys"], cache["values"]):
        x = mx.fast.rms_norm(h, l["attn_norm"], NORM_EPS)
        rope = lambda t: mx.fast.rope(
            t, V_HEAD_DIM, traditional=False, base=ROPE_BASE, scale=1.0, offset=offset
        )
        q = rope(heads(mx.matmul(x, l["wq"].T)))
        k = rope(heads(mx.matmul(x, l["wk"].T)))
        v = heads(mx.matmul(x, l["wv"].T))
        kc = mx.slice_update(kc, k, start, [2])
        vc = mx.slice_update(vc, v, start, [2])
        o = mx.fast.scaled_dot_product_attention(q, kc, vc, scale=scale, mask=mask)
        o = mx.reshape(mx.transpose(o, (0, 2, 1, 3)), (1, 1, V_DIM))
        h = mx.add(h, mx.matmul(o, l["wo"].T))
        x = mx.fast.rms_norm(h, l["mlp_norm"], NORM_EPS)
        g = mx.matmul(x, l["w1"].T)
        silu = mx.multiply(g, mx.sigmoid(g))
        up = mx.matmul(x, l["w3"].T)
        h = mx.add(h, mx.matmul(mx.multiply(silu, up), l["w2"].T))
        keys.append(kc)
        values.append(vc)
    h = mx.fast.rms_norm(h, params["norm"], NORM_EPS)
    logits = mx.matmul(h, params["lm_head"].T)
    nxt = mx.reshape(mx.argmax(logits, -1), (1, 1))
    return nxt, {"keys": keys, "values": values, "offset": mx.add(offset, 1)}


def decode_workload():
    seed = 0

    def w(shape):
        nonlocal seed
        seed += 1
        scale = 1.0 / math.sqrt(shape[-1])
        return mx.random.normal(shape, scale=scale, key=mx.random.key(seed))

    ones = lambda: mx.ones((V_DIM,))
    layers = []
    for _ in range(V_LAYERS):
        layers.append({
            "attn_norm": ones(),
            "wq": w((V_DIM, V_DIM)), "wk": w((V_DIM, V_DIM)),
            "wv": w((V_DIM, V_DIM)), "wo": w((V_DIM, V_DIM)),
            "mlp_norm": ones(),
            "w1": w((V_HIDDEN, V_DIM)), "w2": w((V_DIM, V_HIDDEN)), "w3": w((V_HIDDEN, V_DIM)),
        })
    params = {"embed": w((V_VOCAB, V_DIM)), "layers": layers, "norm": ones(),
              "lm_head": w((V_VOCAB, V_DIM))}
    kv = lambda: mx.zeros((1, V_HEADS, V_MAX_LEN, V_HEAD_DIM))
    cache = {"keys": [kv() for _ in range(V_LAYERS)],
             "values": [kv() for _ in range(V_LAYERS)],
             "offset": mx.array(0, dtype=mx.int32)}
    mx.eval(params, cache)
    step = mx.compile(decode_step)
    holder = {"cache": cache}

    def run():
        cache = holder["cache"]
        cache["offset"] = mx.array(0, dtype=mx.int32)
        token = mx.array([[0]], dtype=mx.uint32)
        out = []
        for _ in range(V_TOKENS):
            token, cache = step(params, token, cache)
            mx.eval(token, cache)
            out.append(token.item())
        holder["cache"] = cache
        return out

    return {"mlx": run}


# ---------------------------------------------------------------------------------------

# name -> (iterations per sample, constructor); names and batch sizes as in workloads.rs.
WORKLOADS = {
    "w1_scalar_adds": (1, lambda: scalar_adds(True)),
    "w1_scalar_adds_graph": (1, lambda: scalar_adds(False)),
    "w1_chain16": (1, lambda: chain16(True)),
    "w1_chain16_graph": (1, lambda: chain16(False)),
    "w2_tree_roundtrip": (20, tree_roundtrip),
    "w2_unflatten_100k": (1, unflatten_100k),
    "w3_compiled_call": (50, lambda: compiled_call(False)),
    "w3_compiled_call_flat": (50, compiled_call_flat),
    "w3_compiled_call_eval": (20, lambda: compiled_call(True)),
    "w4_gelu_eager": (3, lambda: gelu_workload(False)),
    "w4_gelu_compiled": (3, lambda: gelu_workload(True)),
    "w5_train_step": (1, train_step_workload),
    "w6_decode_128": (1, decode_workload),
}


def sample(fn, inner):
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def setup(name):
    inner, make = WORKLOADS[name]
    impls = make()
    for fn in impls.values():
        for _ in range(WARMUP_SAMPLES):
            sample(fn, inner)
    return inner, impls


def serve():
    ready = {}
    for line in sys.stdin:
        parts = line.split()
        if not parts or parts[0] == "quit":
            break
        if parts[0] == "drop":
            ready.pop(parts[1], None)
            continue
        if parts[0] != "run" or len(parts) != 3:
            raise SystemExit(f"bad command {line!r}")
        name, samples = parts[1], int(parts[2])
        if name not in ready:
            ready[name] = setup(name)
        inner, impls = ready[name]
        # Implementations alternate sample by sample, so drift hits them alike.
        times = {k: [] for k in impls}
        for _ in range(samples):
            for k, fn in impls.items():
                times[k].append(sample(fn, inner))
        print(json.dumps({"name": name, "times": times}), flush=True)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--serve"]:
        return serve()
    if args[:1] == ["--list"]:
        print("\n".join(f"{k} {v[0]}" for k, v in WORKLOADS.items()))
        return
    samples = int(os.environ.get("BENCH_SAMPLES", "15"))
    print(f"mlx {mx.__version__}")
    for name in args or list(WORKLOADS):
        inner, impls = setup(name)
        for k, fn in impls.items():
            t = statistics.median(sample(fn, inner) for _ in range(samples))
            print(f"{name:<24} {k:<14} {t * 1e6:12.1f} us")


if __name__ == "__main__":
    main()
