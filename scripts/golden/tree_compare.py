#!/usr/bin/env python3
"""The tree comparison suite: mlx-tree against Python MLX 0.32.2's `mlx.utils`, and against
JAX's `tree_util` where MLX has no equivalent (structure equality and hashing, None as an
empty node, prefix trees, vmap out_axes=None).

Writes tests/data/tree_compare.json (read by tests/tree_compare.rs). Run via
scripts/gen-golden tree_compare (needs `jax` in the venv: `pip install "jax[cpu]"`).

Trees are written in a small spec language both sides interpret:
    {"leaf": 3.0}              a scalar float32 array
    {"list": [spec, ...]}      {"tuple": [spec, ...]}
    {"dict": [[key, spec], ...]}   (insertion order)
    null                       None
Leaves hold distinct values, so a comparison of leaf values also checks their order.

Deliberate deviations (docs/trees.md lists them with the reason):
- Python MLX's tree_flatten yields `None` as a leaf; here (as in JAX) None is an empty node.
  The expected flatten drops MLX's None leaves.
- Python MLX's tree_map accepts extra dict keys / longer lists in the other trees ("a
  superset"); here, as in JAX, the other trees must have the first tree's structure or have
  it as a prefix. Multi-tree cases take JAX's verdict (error or not) and MLX's result.
- tree_unflatten: where Python recurses forever (a duplicated path) or pads a list with
  billions of entries, the result here is an error.
"""
import sys

# This folder holds random.py (the golden data of mx.random), which would shadow the standard
# library's `random` for this script and for jax.
_here = sys.path.pop(0)
import random  # noqa: E402

import mlx.core as mx  # noqa: E402
from mlx.utils import tree_flatten, tree_map, tree_merge, tree_reduce, tree_unflatten  # noqa: E402

try:
    import jax
    import jax.numpy as jnp
    from jax import tree_util as jtu
except ImportError as e:  # pragma: no cover
    raise SystemExit("tree_compare.py needs jax: pip install 'jax[cpu]'") from e
sys.path.insert(0, _here)
from common import write  # noqa: E402

rng = random.Random(20261123)
_next = 0


def fresh():
    global _next
    _next += 1
    return float(_next)


# ---- spec <-> Python trees ----

def build(spec, make=mx.array):
    if spec is None:
        return None
    if "leaf" in spec:
        return make(spec["leaf"])
    if "list" in spec:
        return [build(s, make) for s in spec["list"]]
    if "tuple" in spec:
        return tuple(build(s, make) for s in spec["tuple"])
    return {k: build(s, make) for k, s in spec["dict"]}


def to_spec(tree):
    if tree is None:
        return None
    if isinstance(tree, list):
        return {"list": [to_spec(t) for t in tree]}
    if isinstance(tree, tuple):
        return {"tuple": [to_spec(t) for t in tree]}
    if isinstance(tree, dict):
        return {"dict": [[k, to_spec(v)] for k, v in tree.items()]}
    return {"leaf": float(tree.item()) if hasattr(tree, "item") else float(tree)}


def random_spec(depth=0, leaves=True):
    r = rng.random()
    if depth >= 4 or r < 0.3:
        return {"leaf": fresh()} if rng.random() > 0.08 else None
    n = rng.randint(0, 4)
    kind = rng.choice(["list", "tuple", "dict"])
    if kind == "dict":
        keys = rng.sample(["w", "b", "alpha", "zeta", "k0", "mid", "x_1", "Q"], n)
        return {"dict": [[k, random_spec(depth + 1)] for k in keys]}
    return {kind: [random_spec(depth + 1) for _ in range(n)]}


def relabel(spec):
    """The same structure with fresh leaf values."""
    if spec is None:
        return None
    if "leaf" in spec:
        return {"leaf": fresh()}
    if "dict" in spec:
        return {"dict": [[k, relabel(s)] for k, s in spec["dict"]]}
    (kind, items), = spec.items()
    return {kind: [relabel(s) for s in items]}


def shuffled(spec):
    """The same structure with every dict's insertion order shuffled."""
    if spec is None or "leaf" in spec:
        return spec
    if "dict" in spec:
        items = [[k, shuffled(s)] for k, s in spec["dict"]]
        rng.shuffle(items)
        return {"dict": items}
    (kind, items), = spec.items()
    return {kind: [shuffled(s) for s in items]}


def mlx_flatten(tree):
    return [[p, float(v.item())] for p, v in tree_flatten(tree) if v is not None]


cases = []


def case(op, **kw):
    cases.append({"op": op, **kw})


# ---- flatten: order and paths (Python MLX) ----

fixed_trees = [
    {"leaf": 1.0},
    None,
    {"list": []},
    {"tuple": []},
    {"dict": []},
    {"list": [None, {"leaf": 1.0}, None]},
    {"dict": [["b", {"leaf": 1.0}], ["a", {"leaf": 2.0}]]},
    {"dict": [["", {"leaf": 1.0}], ["a.b", {"leaf": 2.0}]]},
    {"tuple": [{"list": [{"leaf": 1.0}]}, {"dict": [["x", {"tuple": []}]]}]},
    {"list": [{"list": [{"list": [{"leaf": 3.0}]}]}]},
    {"dict": [["layers", {"list": [{"dict": [["w", {"leaf": 1.0}], ["b", None]]},
                                   {"dict": [["w", {"leaf": 2.0}], ["b", {"leaf": 3.0}]]}]}]]},
]
trees = fixed_trees + [random_spec() for _ in range(40)]
for spec in trees:
    case("flatten", tree=spec, expected=mlx_flatten(build(spec)))

# ---- unflatten from pairs (Python MLX), malformed ones included ----

def unflatten_case(keys, note=""):
    pairs = [[k, fresh()] for k in keys]
    try:
        out = tree_unflatten([(k, mx.array(v)) for k, v in pairs])
        expected = to_spec(out)
        error = None
    except RecursionError:
        expected, error = None, "given 2 times"
    case("unflatten", pairs=pairs, expected=expected, error=error, note=note)


for keys in [
    [""],
    ["a"],
    ["a", "b"],
    ["b", "a"],
    ["0", "1", "2"],
    ["2", "0", "1"],
    ["1"],
    ["3", "1"],
    ["01", "1"],
    ["-1", "0"],
    [" 1", "+0"],
    ["1_0"],
    ["a.0", "a.1", "b"],
    ["a.0.w", "a.2.w"],
    ["a", "a.b"],
    ["", "a"],
    ["x.", "x.y"],
    ["a..b"],
    ["0", "a"],
    ["layers.0.attn.wq.weight", "layers.0.attn.wq.bias", "layers.1.mlp.w", "norm"],
    ["a", "a"],
    ["", ""],
    ["a.b", "c", "a.b"],
]:
    unflatten_case(keys)

# Paths that would make Python pad a list with billions of entries: an error here (Python:
# MemoryError). Not run in Python.
for key in ["layers.4000000000.w", "99999999999999999999"]:
    case("unflatten", pairs=[[key, fresh()]], expected=None, error="pad the list",
         note="Python would pad the list until MemoryError")

# Round trip: tree_unflatten(tree_flatten(t)) for random trees (MLX).
for _ in range(10):
    spec = random_spec()
    flat = [(p, v) for p, v in tree_flatten(build(spec)) if v is not None]
    if not flat:
        continue
    pairs = [[p, float(v.item())] for p, v in flat]
    try:
        expected, error = to_spec(tree_unflatten(flat)), None
    except RecursionError:
        expected, error = None, "given 2 times"
    case("unflatten", pairs=pairs, expected=expected, error=error, note="round trip")

# ---- tree_map over several trees: JAX's verdict, MLX's result ----

def multi_map_case(first, rest, note=""):
    def fn(x, *rs):
        if x is None:  # a leaf to MLX, an empty node here: nothing to map
            return None
        total = x * 1000.0
        for r in rs:
            for _, leaf in tree_flatten(r):
                if leaf is not None:
                    total = total + leaf
        return total

    def jfn(x, *rs):
        return x

    try:
        jax.tree.map(jfn, build(first, jnp.asarray), *[build(r, jnp.asarray) for r in rest])
        ok = True
    except (ValueError, TypeError, KeyError):
        ok = False
    if ok:
        out = tree_map(fn, build(first), *[build(r) for r in rest])
        case("map_n", first=first, rest=rest, expected=mlx_flatten(out), error=None, note=note)
    else:
        case("map_n", first=first, rest=rest, expected=None, error="does not match", note=note)


for spec in trees[:6] + [random_spec() for _ in range(14)]:
    multi_map_case(spec, [relabel(spec)], "same structure")
    multi_map_case(spec, [shuffled(relabel(spec)), relabel(spec)], "dict order shuffled")
d = lambda *kv: {"dict": [[k, v] for k, v in kv]}
L = lambda v: {"leaf": v}
multi_map_case(d(("a", L(1.0)), ("b", L(2.0))), [d(("b", L(20.0)), ("a", L(10.0)))], "pair by key")
multi_map_case(d(("a", L(1.0))), [d(("a", {"list": [L(2.0), L(3.0)]}))], "prefix")
multi_map_case(L(5.0), [d(("x", L(1.0)), ("y", {"tuple": [L(2.0)]}))], "leaf prefix of a tree")
multi_map_case(d(("a", L(1.0))), [d(("a", L(2.0)), ("b", L(3.0)))], "extra key")
multi_map_case(d(("a", L(1.0)), ("b", L(2.0))), [d(("a", L(3.0)))], "missing key")
multi_map_case({"list": [L(1.0)]}, [{"list": [L(1.0), L(2.0)]}], "longer list")
multi_map_case({"list": [L(1.0)]}, [{"tuple": [L(1.0)]}], "list vs tuple")
multi_map_case({"list": [L(1.0), None]}, [{"list": [L(2.0), None]}], "None matches None")
multi_map_case({"list": [L(1.0), None]}, [{"list": [L(2.0), L(3.0)]}], "None vs leaf")
multi_map_case({"list": [L(1.0), {"list": []}]}, [{"list": [L(2.0), {"dict": []}]}], "empty list vs dict")
multi_map_case({"list": [L(1.0), L(2.0)]}, [{"list": [{"list": [L(3.0), L(4.0)]}, d(("k", L(5.0)))]}], "prefix in a list")

# ---- tree_reduce (MLX): order-sensitive fold ----

for spec in trees[:24]:
    try:
        acc = tree_reduce(lambda acc, x: acc * 3.0 + x, build(spec), 0.0)
    except TypeError:
        continue  # MLX folds None as a leaf; here None has no leaves
    value = float(acc.item()) if hasattr(acc, "item") else float(acc)
    case("reduce", tree=spec, expected=value)

# ---- tree_merge (MLX) ----

def merge_case(a, b, add):
    try:
        out = tree_merge(build(a), build(b), (lambda x, y: x + y) if add else None)
        case("merge", a=a, b=b, add=add, expected=to_spec(out), error=None)
    except ValueError:
        case("merge", a=a, b=b, add=add, expected=None, error="cannot merge")


merge_case(d(("a", L(1.0))), d(("b", L(2.0))), False)
merge_case(d(("a", L(1.0)), ("b", L(2.0))), d(("b", L(20.0)), ("c", L(3.0))), True)
merge_case(d(("a", L(1.0))), d(("a", L(2.0))), False)
merge_case({"list": [L(1.0), None]}, {"list": [None, L(2.0), L(3.0)]}, False)
merge_case({"list": [L(1.0)]}, {"dict": []}, False)
merge_case(d(("x", {"list": []})), d(("x", {"list": [L(4.0)]})), False)
merge_case(d(("m", d(("p", L(1.0))))), d(("m", d(("q", L(2.0))))), False)

# ---- TreeDef equality and hashing (JAX) ----

def eq_case(a, b, note=""):
    sa = jtu.tree_structure(build(a, jnp.asarray))
    sb = jtu.tree_structure(build(b, jnp.asarray))
    case("treedef_eq", a=a, b=b, equal=bool(sa == sb), num_leaves=sa.num_leaves, note=note)
    if sa == sb:
        assert hash(sa) == hash(sb)


for spec in trees[:8] + [random_spec() for _ in range(8)]:
    eq_case(spec, relabel(spec), "same structure")
    eq_case(spec, shuffled(relabel(spec)), "dicts shuffled")
eq_case({"list": [L(1.0)]}, {"tuple": [L(1.0)]})
eq_case({"list": []}, {"dict": []})
eq_case({"list": []}, None)
eq_case(None, {"tuple": []})
eq_case(d(("a", L(1.0))), d(("b", L(1.0))))
eq_case(d(("a", None)), d(("a", L(1.0))))
eq_case({"list": [L(1.0), L(2.0)]}, {"list": [L(1.0)]})

# ---- vmap axes (JAX) ----

def vmap_case(in_axes, out_axes, note):
    x = jnp.arange(6.0).reshape(2, 3)
    y = jnp.arange(3.0)

    def fn(t):
        return {"sum": t["x"] + t["y"], "shared": t["y"] * 2.0}

    jin = {"x": in_axes[0], "y": in_axes[1]}
    jout = {"sum": out_axes[0], "shared": out_axes[1]}
    try:
        out = jax.vmap(fn, in_axes=(jin,), out_axes=jout)({"x": x, "y": y})
        expected = {k: {"shape": list(v.shape), "values": [float(z) for z in v.reshape(-1)]}
                    for k, v in out.items()}
        case("vmap", in_axes=in_axes, out_axes=out_axes, expected=expected, error=None, note=note)
    except ValueError:
        case("vmap", in_axes=in_axes, out_axes=out_axes, expected=None, error="vmap", note=note)


vmap_case([0, None], [0, None], "unbatched output")
vmap_case([0, None], [1, None], "output axis 1")
vmap_case([0, None], [0, 0], "broadcast output batched")

write("tree_compare", {"cases": cases})
print(f"tree_compare: {len(cases)} cases")
