#!/usr/bin/env python3
"""Golden data for the op surface of mlx-rs (tests/ops_golden.rs reads tests/data/ops.json).

Each case is {"name", "op", "inputs": [records], "params": {...}, "outputs": [records]}.
`op` and `params` name a Python call; the Rust test maps each `op` to the Rust function
(one match arm per op) and checks every output. Indexing cases carry an "index" param (a
list of entries: {"int": i}, {"slice": [start, stop, step]}, "none", "ellipsis",
{"array": record}) and, for puts, the value as an input.

Run via scripts/gen-golden (or `cd scripts/golden && python ops.py`).
"""
import mlx.core as mx

from common import record, write

CASES = []


def key(seed):
    return mx.random.key(seed)


def normal(shape, seed=0, dtype=mx.float32):
    a = mx.random.normal(shape, key=key(seed))
    return mx.round(a, 3).astype(dtype)


def uniform(shape, lo, hi, seed=0, dtype=mx.float32):
    a = mx.random.uniform(lo, hi, shape, key=key(seed))
    return mx.round(a, 3).astype(dtype)


def ints(shape, lo=-5, hi=6, seed=0, dtype=mx.int32):
    return mx.random.randint(lo, hi, shape, key=key(seed)).astype(dtype)


def bools(shape, seed=0):
    return mx.random.bernoulli(0.5, shape, key=key(seed))


def cplx(shape, seed=0):
    return normal(shape, seed) + 1j * normal(shape, seed + 100)


def case(name, op, inputs, params, fn, tol=None):
    out = fn(*inputs)
    if isinstance(out, (list, tuple)):
        outs = list(out)
    else:
        outs = [out]
    CASES.append({
        "name": name,
        "op": op,
        "inputs": [record(a) for a in inputs],
        "params": params,
        "outputs": [record(o) for o in outs],
        **({"tol": list(tol)} if tol else {}),
    })


# ---------------------------------------------------------------------------------------------
UNARY = {
    # op: input makers by dtype tag
    "abs": "fhbic", "arccos": "u", "arccosh": "g", "arcsin": "u", "arcsinh": "fh",
    "arctan": "fb", "arctanh": "u", "ceil": "fh", "conjugate": "c", "cos": "fhbc",
    "cosh": "f", "degrees": "f", "erf": "fh", "erfinv": "u", "exp": "fhbc", "expm1": "fh",
    "floor": "fb", "imag": "c", "isfinite": "n", "isinf": "n", "isnan": "n", "isneginf": "n",
    "isposinf": "n", "log": "pc", "log10": "p", "log1p": "p", "log2": "p", "logical_not": "o",
    "negative": "fic", "positive": "fi", "radians": "f", "real": "c", "reciprocal": "p",
    "rsqrt": "p", "sigmoid": "fhb", "sign": "fic", "sin": "fhbc", "sinh": "f", "sqrt": "pc",
    "square": "fic", "stop_gradient": "f", "tan": "f", "tanh": "fb", "trunc": "f",
    "copy": "fo", "bitwise_invert": "i", "atleast_1d": "s", "atleast_2d": "f",
    "atleast_3d": "f",
}


def unary_inputs(tag):
    return {
        "f": [("f32", normal((2, 3), 1))],
        "h": [("f16", normal((4,), 2, mx.float16))],
        "b": [("bf16", normal((4,), 3, mx.bfloat16))],
        "i": [("i32", ints((5,), seed=4))],
        "c": [("c64", cplx((3,), 5))],
        "u": [("unit", uniform((2, 3), -0.9, 0.9, 6))],
        "g": [("ge1", uniform((5,), 1.0, 4.0, 7))],
        "p": [("pos", uniform((2, 3), 0.1, 3.0, 8))],
        "n": [("special", mx.array([1.0, float("nan"), float("inf"), -float("inf"), 0.0]))],
        "o": [("bool", bools((5,), 9))],
        "s": [("scalar", mx.array(2.5))],
    }[tag]


def unary_cases():
    for op, tags in UNARY.items():
        for tag in tags:
            for label, x in unary_inputs(tag):
                # `copy` is C++ only; Python copies with mx.array(a).
                f = getattr(mx, op) if op != "copy" else mx.array
                case(f"{op}_{label}", op, [x], {}, f)
    case("exp_empty", "exp", [mx.zeros((0, 3))], {}, mx.exp)
    case("abs_scalar_int", "abs", [mx.array(-3)], {}, mx.abs)


BINARY = {
    "add": "fmsc", "subtract": "fm", "multiply": "fmsc", "divide": "fmi",
    "remainder": "fi", "power": "p", "maximum": "fmi", "minimum": "fi", "arctan2": "f",
    "logaddexp": "f", "floor_divide": "fi", "equal": "fib", "not_equal": "fi",
    "greater": "fi", "greater_equal": "f", "less": "fi", "less_equal": "f",
    "logical_and": "o", "logical_or": "o", "logical_xor": "o", "bitwise_and": "i",
    "bitwise_or": "i", "bitwise_xor": "i", "left_shift": "u", "right_shift": "u",
    "matmul": "x", "inner": "y", "outer": "y", "kron": "k",
}


def binary_inputs(tag):
    return {
        "f": [("f32_bcast", [normal((2, 3), 10), normal((3,), 11)], {}),
              ("f32_outer_bcast", [normal((2, 1), 12), normal((1, 3), 13)], {})],
        "m": [("f16_f32", [normal((3,), 14, mx.float16), normal((3,), 15)], {}),
              ("bf16_f16", [normal((3,), 14, mx.bfloat16), normal((3,), 16, mx.float16)], {})],
        "s": [("f16_scalar", [normal((3,), 17, mx.float16)], {"scalar": 2.5}),
              ("i32_float_scalar", [ints((3,), seed=18)], {"scalar": 0.5}),
              ("u8_int_scalar", [ints((3,), 0, 200, 19, mx.uint8)], {"scalar": 100})],
        "c": [("c64", [cplx((3,), 20), cplx((3,), 21)], {})],
        "i": [("i32", [ints((2, 3), seed=22), ints((3,), 1, 5, 23)], {})],
        "b": [("bool", [bools((4,), 24), bools((4,), 25)], {})],
        "o": [("bool", [bools((2, 3), 26), bools((3,), 27)], {})],
        "p": [("pos", [uniform((2, 3), 0.5, 2.0, 28), normal((3,), 29)], {}),
              ("int", [ints((4,), 0, 4, 30), ints((4,), 0, 3, 31)], {})],
        "u": [("u32", [ints((4,), 0, 100, 32, mx.uint32), ints((4,), 0, 4, 33, mx.uint32)], {})],
        "x": [("2d", [normal((2, 3), 34), normal((3, 4), 35)], {}),
              ("batched", [normal((2, 2, 3), 36), normal((3, 2), 37)], {}),
              ("vec", [normal((3,), 38), normal((3, 2), 39)], {}),
              ("f16", [normal((2, 3), 34, mx.float16), normal((3, 2), 35, mx.float16)], {})],
        "y": [("1d", [normal((3,), 40), normal((3,), 41)], {}),
              ("2d", [normal((2, 3), 42), normal((2, 3), 43)], {})],
        "k": [("2d", [normal((2, 2), 44), normal((2, 3), 45)], {})],
    }[tag]


def binary_cases():
    for op, tags in BINARY.items():
        f = getattr(mx, op)
        for tag in tags:
            for label, xs, params in binary_inputs(tag):
                if "scalar" in params:
                    s = params["scalar"]
                    case(f"{op}_{label}", op, xs, params, lambda a, f=f, s=s: f(a, s))
                    case(f"{op}_{label}_rev", op, xs, {**params, "reversed": True},
                         lambda a, f=f, s=s: f(s, a))
                else:
                    case(f"{op}_{label}", op, xs, params, f)


REDUCTIONS = ["sum", "mean", "max", "min", "prod", "all", "any", "logsumexp", "median",
              "count_nonzero", "var", "std"]


def reduction_cases():
    x = normal((2, 3, 4), 50)
    for op in REDUCTIONS:
        f = getattr(mx, op)
        for axis in [None, 0, -1, [0, 2]]:
            for keepdims in [False, True]:
                if op == "count_nonzero":
                    fn = lambda a, f=f, axis=axis, k=keepdims: f(a, axis=axis, keepdims=k)
                else:
                    fn = lambda a, f=f, axis=axis, k=keepdims: f(a, axis, k)
                case(f"{op}_{axis}_{keepdims}", op, [x], {"axis": axis, "keepdims": keepdims}, fn)
    for op in ["sum", "prod", "max", "min", "all", "any"]:
        f = getattr(mx, op)
        case(f"{op}_int", op, [ints((3, 4), seed=51)], {"axis": 1, "keepdims": False},
             lambda a, f=f: f(a, 1))
    for op in ["sum", "mean", "max"]:
        f = getattr(mx, op)
        case(f"{op}_f16", op, [normal((3, 4), 52, mx.float16)], {"axis": -1, "keepdims": False},
             lambda a, f=f: f(a, -1))
        case(f"{op}_bf16", op, [normal((3, 4), 53, mx.bfloat16)], {"axis": 0, "keepdims": True},
             lambda a, f=f: f(a, 0, True))
    case("sum_bool", "sum", [bools((6,), 54)], {"axis": None, "keepdims": False}, mx.sum)
    case("sum_empty", "sum", [mx.zeros((0, 3))], {"axis": 0, "keepdims": False}, lambda a: mx.sum(a, 0))
    case("prod_empty", "prod", [mx.zeros((2, 0))], {"axis": None, "keepdims": False}, mx.prod)
    case("sum_c64", "sum", [cplx((4,), 55)], {"axis": None, "keepdims": False}, mx.sum)
    case("sum_scalar", "sum", [mx.array(3.0)], {"axis": None, "keepdims": False}, mx.sum)
    for ddof in [1, 2]:
        case(f"var_ddof{ddof}", "var", [x], {"axis": 1, "keepdims": False, "ddof": ddof},
             lambda a, d=ddof: mx.var(a, 1, ddof=d))
        case(f"std_ddof{ddof}", "std", [x], {"axis": [0, 1], "keepdims": True, "ddof": ddof},
             lambda a, d=ddof: mx.std(a, [0, 1], True, ddof=d))
    for op in ["argmax", "argmin"]:
        f = getattr(mx, op)
        for axis in [None, 0, -1]:
            for keepdims in [False, True]:
                case(f"{op}_{axis}_{keepdims}", op, [x], {"axis": axis, "keepdims": keepdims},
                     lambda a, f=f, axis=axis, k=keepdims: f(a, axis, k))
        case(f"{op}_int", op, [ints((3, 4), seed=56)], {"axis": 1, "keepdims": False},
             lambda a, f=f: f(a, 1))


def cumulative_cases():
    x = normal((3, 4), 60)
    for op in ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]:
        f = getattr(mx, op)
        for axis in [None, 0, -1]:
            for reverse in [False, True]:
                for inclusive in [True, False]:
                    p = {"axis": axis, "reverse": reverse, "inclusive": inclusive}
                    case(f"{op}_{axis}_{reverse}_{inclusive}", op, [x], p,
                         lambda a, f=f, p=p: f(a, p["axis"], reverse=p["reverse"],
                                               inclusive=p["inclusive"]))
    xi = ints((2, 5), 1, 4, 61)
    case("cumsum_int", "cumsum", [xi], {"axis": 1, "reverse": False, "inclusive": True},
         lambda a: mx.cumsum(a, 1))
    case("cumsum_bool", "cumsum", [bools((6,), 62)], {"axis": 0, "reverse": False, "inclusive": True},
         lambda a: mx.cumsum(a, 0))
    case("cumsum_dtype", "cumsum", [xi], {"axis": 1, "reverse": False, "inclusive": True,
                                          "dtype": "float32"},
         lambda a: mx.cumsum(a, 1, dtype=mx.float32))
    case("cumprod_f16", "cumprod", [uniform((5,), 0.5, 1.5, 63, mx.float16)],
         {"axis": 0, "reverse": False, "inclusive": True}, lambda a: mx.cumprod(a, 0))


def shape_cases():
    x = normal((2, 3, 4), 70)
    case("reshape", "reshape", [x], {"shape": [4, -1]}, lambda a: mx.reshape(a, (4, -1)))
    case("reshape_scalar", "reshape", [mx.array([7])], {"shape": []}, lambda a: mx.reshape(a, ()))
    case("transpose", "transpose", [x], {"axes": None}, mx.transpose)
    case("transpose_axes", "transpose", [x], {"axes": [1, 0, 2]}, lambda a: mx.transpose(a, [1, 0, 2]))
    y = normal((1, 3, 1, 2), 71)
    case("squeeze_all", "squeeze", [y], {"axis": None}, mx.squeeze)
    case("squeeze_one", "squeeze", [y], {"axis": -2}, lambda a: mx.squeeze(a, -2))
    case("squeeze_two", "squeeze", [y], {"axis": [0, 2]}, lambda a: mx.squeeze(a, [0, 2]))
    case("expand_dims_one", "expand_dims", [x], {"axis": -1}, lambda a: mx.expand_dims(a, -1))
    case("expand_dims_two", "expand_dims", [x], {"axis": [0, 2]}, lambda a: mx.expand_dims(a, [0, 2]))
    case("flatten", "flatten", [x], {}, mx.flatten)
    case("flatten_axes", "flatten", [x], {"start_axis": 1, "end_axis": 2},
         lambda a: mx.flatten(a, 1, 2))
    case("unflatten", "unflatten", [x], {"axis": 2, "shape": [2, 2]},
         lambda a: mx.unflatten(a, 2, (2, 2)))
    case("swapaxes", "swapaxes", [x], {"axis1": 0, "axis2": -1}, lambda a: mx.swapaxes(a, 0, -1))
    case("moveaxis", "moveaxis", [x], {"source": 0, "destination": 2},
         lambda a: mx.moveaxis(a, 0, 2))
    case("broadcast_to", "broadcast_to", [normal((3, 1), 72)], {"shape": [2, 3, 4]},
         lambda a: mx.broadcast_to(a, (2, 3, 4)))
    case("broadcast_to_scalar", "broadcast_to", [mx.array(1.5)], {"shape": [2, 2]},
         lambda a: mx.broadcast_to(a, (2, 2)))
    case("broadcast_arrays", "broadcast_arrays", [normal((3, 1), 73), normal((1, 2), 74)], {},
         lambda a, b: mx.broadcast_arrays(a, b))
    a, b = normal((2, 3), 75), normal((2, 3), 76)
    for axis in [0, 1, -1, None]:
        case(f"concatenate_{axis}", "concatenate", [a, b], {"axis": axis},
             lambda a, b, axis=axis: mx.concatenate([a, b], axis))
    case("concatenate_dtypes", "concatenate", [a, ints((1, 3), seed=77)], {"axis": 0},
         lambda a, b: mx.concatenate([a, b], 0))
    for axis in [0, 1, -1]:
        case(f"stack_{axis}", "stack", [a, b], {"axis": axis},
             lambda a, b, axis=axis: mx.stack([a, b], axis))
    case("unstack", "unstack", [x], {"axis": 0}, lambda a: mx.unstack(a))
    case("unstack_axis", "unstack", [x], {"axis": 2}, lambda a: mx.unstack(a, axis=2))
    z = normal((6, 4), 78)
    case("split_sections", "split", [z], {"indices_or_sections": 3, "axis": 0},
         lambda a: mx.split(a, 3))
    case("split_indices", "split", [z], {"indices_or_sections": [1, 4], "axis": 0},
         lambda a: mx.split(a, [1, 4]))
    case("split_axis", "split", [z], {"indices_or_sections": 2, "axis": -1},
         lambda a: mx.split(a, 2, -1))
    case("tile", "tile", [a], {"reps": [2, 1]}, lambda a: mx.tile(a, (2, 1)))
    case("tile_more", "tile", [normal((3,), 79)], {"reps": [2, 2]}, lambda a: mx.tile(a, (2, 2)))
    case("repeat_flat", "repeat", [a], {"repeats": 2, "axis": None}, lambda a: mx.repeat(a, 2))
    case("repeat_axis", "repeat", [a], {"repeats": 3, "axis": 1}, lambda a: mx.repeat(a, 3, 1))
    for mode in ["constant", "edge", "reflect", "symmetric"]:
        case(f"pad_{mode}", "pad", [a], {"pad_width": [[1, 2], [2, 1]], "mode": mode},
             lambda a, m=mode: mx.pad(a, [(1, 2), (2, 1)], mode=m))
    case("pad_int", "pad", [a], {"pad_width": 1}, lambda a: mx.pad(a, 1))
    case("pad_pair_value", "pad", [ints((2, 2), seed=80)], {"pad_width": [1, 0], "constant_values": 9},
         lambda a: mx.pad(a, (1, 0), constant_values=9))
    case("roll_flat", "roll", [a], {"shift": 2, "axis": None}, lambda a: mx.roll(a, 2))
    case("roll_axis", "roll", [a], {"shift": -1, "axis": 1}, lambda a: mx.roll(a, -1, 1))
    case("roll_axes", "roll", [a], {"shift": [1, 2], "axis": [0, 1]},
         lambda a: mx.roll(a, (1, 2), (0, 1)))
    case("flip_all", "flip", [a], {"axis": None}, mx.flip)
    case("flip_one", "flip", [a], {"axis": 1}, lambda a: mx.flip(a, 1))
    case("flip_two", "flip", [x], {"axis": [0, 2]}, lambda a: mx.flip(a, [0, 2]))
    r = mx.arange(12).astype(mx.float32)
    case("as_strided", "as_strided", [r], {"shape": [3, 3], "strides": [3, 1], "offset": 1},
         lambda a: mx.as_strided(a, (3, 3), (3, 1), 1))
    case("as_strided_overlap", "as_strided", [r], {"shape": [4, 3], "strides": [2, 1], "offset": 0},
         lambda a: mx.as_strided(a, (4, 3), (2, 1)))
    case("contiguous", "contiguous", [mx.transpose(a)], {"allow_col_major": False},
         lambda a: mx.contiguous(a))
    case("view_f32_i32", "view", [normal((3,), 81)], {"dtype": "int32"}, lambda a: mx.view(a, mx.int32))
    case("view_f32_u8", "view", [normal((2,), 82)], {"dtype": "uint8"}, lambda a: mx.view(a, mx.uint8))
    for dt in ["int32", "float16", "bfloat16", "bool", "complex64", "uint8"]:
        case(f"astype_{dt}", "astype", [normal((4,), 83) * 3], {"dtype": dt},
             lambda a, dt=dt: a.astype(getattr(mx, "bool_" if dt == "bool" else dt)))


def gather_cases():
    x = normal((3, 4), 90)
    idx = mx.array([2, 0, 2])
    case("take_flat", "take", [x, mx.array([0, 5, 11])], {"axis": None}, lambda a, i: mx.take(a, i))
    case("take_axis0", "take", [x, idx], {"axis": 0}, lambda a, i: mx.take(a, i, 0))
    case("take_axis_neg", "take", [x, mx.array([[1, 3], [0, 0]])], {"axis": -1},
         lambda a, i: mx.take(a, i, -1))
    case("take_int", "take", [x], {"index": 2, "axis": 1}, lambda a: mx.take(a, 2, 1))
    ti = mx.array([[0, 3, 1, 2]] * 3)
    case("take_along_axis", "take_along_axis", [x, ti], {"axis": 1},
         lambda a, i: mx.take_along_axis(a, i, 1))
    case("take_along_axis_none", "take_along_axis", [x, mx.array([11, 0])], {"axis": None},
         lambda a, i: mx.take_along_axis(a, i, None))
    case("put_along_axis", "put_along_axis", [x, mx.array([[0], [2], [1]]), normal((3, 1), 91)],
         {"axis": 1}, lambda a, i, v: mx.put_along_axis(a, i, v, 1))
    case("put_along_axis_none", "put_along_axis", [x, mx.array([1, 5]), mx.array([9.0, 8.0])],
         {"axis": None}, lambda a, i, v: mx.put_along_axis(a, i, v, None))
    c = bools((3, 4), 92)
    case("where", "where", [c, x, normal((4,), 93)], {}, mx.where)
    case("where_scalar", "where", [c, x], {"y": 0.0}, lambda c, a: mx.where(c, a, 0.0))
    case("where_int", "where", [c, ints((3, 4), seed=94), ints((3, 4), seed=95)], {}, mx.where)
    s = mx.array([1.0, 2.0, 2.0, 3.0, 5.0])
    v = mx.array([[2.0, 0.0], [6.0, 3.0]])
    for side in ["left", "right"]:
        case(f"searchsorted_{side}", "searchsorted", [s, v], {"side": side},
             lambda a, b, side=side: mx.searchsorted(a, b, side=side))
    case("slice_dynamic", "slice", [x, mx.array([1, 2])], {"axes": [0, 1], "slice_size": [2, 2]},
         lambda a, st: mx.slice(a, st, [0, 1], [2, 2]))
    case("slice_update_dynamic", "slice_update", [x, normal((1, 4), 96), mx.array([2])],
         {"axes": [0]}, lambda a, u, st: mx.slice_update(a, u, st, [0]))


def sort_cases():
    x = normal((3, 5), 100)
    for op in ["sort", "argsort"]:
        f = getattr(mx, op)
        for axis in ["default", 0, None]:
            fn = (lambda a, f=f: f(a)) if axis == "default" else (lambda a, f=f, ax=axis: f(a, ax))
            case(f"{op}_{axis}", op, [x], {"axis": axis}, fn)
        case(f"{op}_int", op, [ints((6,), seed=101)], {"axis": "default"}, lambda a, f=f: f(a))
    case("sort_f16", "sort", [normal((6,), 102, mx.float16)], {"axis": "default"}, mx.sort)
    for op in ["partition", "argpartition"]:
        f = getattr(mx, op)
        for axis in ["default", 0, None]:
            fn = (lambda a, f=f: f(a, 2)) if axis == "default" else (lambda a, f=f, ax=axis: f(a, 2, ax))
            case(f"{op}_{axis}", op, [x], {"kth": 2, "axis": axis}, fn)
    for axis in ["default", 0, None]:
        fn = (lambda a: mx.topk(a, 2)) if axis == "default" else (lambda a, ax=axis: mx.topk(a, 2, ax))
        case(f"topk_{axis}", "topk", [x], {"k": 2, "axis": axis}, fn)


def creation_cases():
    case("zeros", "zeros", [], {"shape": [2, 3], "dtype": None}, lambda: mx.zeros((2, 3)))
    case("zeros_int", "zeros", [], {"shape": [4], "dtype": "int32"}, lambda: mx.zeros((4,), mx.int32))
    case("ones_bf16", "ones", [], {"shape": [2, 2], "dtype": "bfloat16"},
         lambda: mx.ones((2, 2), mx.bfloat16))
    case("ones_empty", "ones", [], {"shape": [0, 2], "dtype": None}, lambda: mx.ones((0, 2)))
    case("full_scalar", "full", [], {"shape": [2, 2], "vals": 3.5, "dtype": None},
         lambda: mx.full((2, 2), 3.5))
    case("full_array", "full", [mx.array([1, 2, 3])], {"shape": [2, 3], "dtype": None},
         lambda v: mx.full((2, 3), v))
    case("full_dtype", "full", [], {"shape": [3], "vals": 2, "dtype": "float16"},
         lambda: mx.full((3,), 2, mx.float16))
    case("arange_int", "arange", [], {"start": 0, "stop": 10, "step": 3, "dtype": None},
         lambda: mx.arange(0, 10, 3))
    case("arange_float", "arange", [], {"start": 0.5, "stop": 2.0, "step": 0.25, "dtype": None},
         lambda: mx.arange(0.5, 2.0, 0.25))
    case("arange_neg", "arange", [], {"start": 5, "stop": 0, "step": -2, "dtype": None},
         lambda: mx.arange(5, 0, -2))
    case("eye", "eye", [], {"n": 3}, lambda: mx.eye(3))
    case("eye_rect_k", "eye", [], {"n": 3, "m": 4, "k": 1, "dtype": "int32"},
         lambda: mx.eye(3, 4, 1, mx.int32))
    case("identity", "identity", [], {"n": 3, "dtype": "float16"}, lambda: mx.identity(3, mx.float16))
    case("tri", "tri", [], {"n": 3, "m": 4, "k": 0}, lambda: mx.tri(3, 4, 0))
    case("tri_k", "tri", [], {"n": 4, "m": 3, "k": -1}, lambda: mx.tri(4, 3, -1))
    x = normal((4, 4), 110)
    for k in [0, 1, -1]:
        case(f"tril_{k}", "tril", [x], {"k": k}, lambda a, k=k: mx.tril(a, k))
        case(f"triu_{k}", "triu", [x], {"k": k}, lambda a, k=k: mx.triu(a, k))
    case("linspace", "linspace", [], {"start": 0.0, "stop": 1.0, "num": 5, "endpoint": True},
         lambda: mx.linspace(0.0, 1.0, 5))
    case("linspace_default", "linspace", [], {"start": -1.0, "stop": 1.0, "num": None, "endpoint": True},
         lambda: mx.linspace(-1.0, 1.0))
    case("linspace_no_end", "linspace", [], {"start": 0.0, "stop": 1.0, "num": 4, "endpoint": False},
         lambda: mx.linspace(0.0, 1.0, 4, endpoint=False))
    y = normal((2, 3), 111, mx.float16)
    case("zeros_like", "zeros_like", [y], {"dtype": None}, lambda a: mx.zeros_like(a))
    case("zeros_like_dtype", "zeros_like", [y], {"dtype": "int32"}, lambda a: mx.zeros_like(a, mx.int32))
    case("ones_like", "ones_like", [y], {"dtype": None}, lambda a: mx.ones_like(a))
    case("ones_like_dtype", "ones_like", [y], {"dtype": "bool"}, lambda a: mx.ones_like(a, mx.bool_))
    case("full_like", "full_like", [y], {"vals": 2.5, "dtype": None}, lambda a: mx.full_like(a, 2.5))
    case("full_like_dtype", "full_like", [y], {"vals": 7, "dtype": "int32"},
         lambda a: mx.full_like(a, 7, mx.int32))
    for w in ["bartlett", "blackman", "hamming", "hanning"]:
        case(w, w, [], {"M": 6}, lambda w=w: getattr(mx, w)(6))
    a, b = mx.array([1, 2, 3]), mx.array([4.0, 5.0])
    case("meshgrid_xy", "meshgrid", [a, b], {"sparse": False, "indexing": "xy"},
         lambda a, b: mx.meshgrid(a, b))
    case("meshgrid_ij_sparse", "meshgrid", [a, b], {"sparse": True, "indexing": "ij"},
         lambda a, b: mx.meshgrid(a, b, sparse=True, indexing="ij"))


def misc_cases():
    x = mx.array([0.5, 1.5, 2.5, -0.5, 1.234567, -2.71828])
    case("round", "round", [x], {"decimals": 0}, mx.round)
    case("round_2", "round", [x], {"decimals": 2}, lambda a: mx.round(a, 2))
    case("round_neg", "round", [mx.array([1234.0, 5678.0])], {"decimals": -2}, lambda a: mx.round(a, -2))
    y = normal((2, 4), 120)
    case("clip", "clip", [y], {"a_min": -0.5, "a_max": 0.5}, lambda a: mx.clip(a, -0.5, 0.5))
    case("clip_min_none", "clip", [y], {"a_min": None, "a_max": 0.0}, lambda a: mx.clip(a, None, 0.0))
    case("clip_arrays", "clip", [y, normal((4,), 121) - 1, normal((4,), 122) + 1], {},
         lambda a, lo, hi: mx.clip(a, lo, hi))
    case("clip_int", "clip", [ints((6,), seed=123)], {"a_min": -2, "a_max": 2},
         lambda a: mx.clip(a, -2, 2))
    sp = mx.array([1.0, float("nan"), float("inf"), -float("inf")])
    case("nan_to_num", "nan_to_num", [sp], {}, mx.nan_to_num)
    case("nan_to_num_vals", "nan_to_num", [sp], {"nan": 1.5, "posinf": 9.0, "neginf": -9.0},
         lambda a: mx.nan_to_num(a, 1.5, 9.0, -9.0))
    case("nan_to_num_f16", "nan_to_num", [sp.astype(mx.float16)], {}, mx.nan_to_num)
    case("divmod_f", "divmod", [normal((4,), 124) * 5, uniform((4,), 0.5, 2, 125)], {}, mx.divmod)
    case("divmod_i", "divmod", [ints((5,), -9, 10, 126), ints((5,), 1, 4, 127)], {}, mx.divmod)
    z = normal((2, 3, 4), 128)
    case("softmax_all", "softmax", [z], {"axis": None, "precise": False}, mx.softmax)
    case("softmax_last", "softmax", [z], {"axis": -1, "precise": False}, lambda a: mx.softmax(a, -1))
    case("softmax_two", "softmax", [z], {"axis": [0, 2], "precise": True},
         lambda a: mx.softmax(a, [0, 2], precise=True))
    case("softmax_f16", "softmax", [z.astype(mx.float16)], {"axis": -1, "precise": True},
         lambda a: mx.softmax(a, -1, precise=True))
    p, q = mx.array([1.0, 2.0, float("nan"), 4.0]), mx.array([1.0 + 1e-6, 2.1, float("nan"), 4.0])
    case("isclose", "isclose", [p, q], {"equal_nan": False}, mx.isclose)
    case("isclose_tol_nan", "isclose", [p, q], {"rtol": 0.1, "atol": 0.0, "equal_nan": True},
         lambda a, b: mx.isclose(a, b, 0.1, 0.0, equal_nan=True))
    case("allclose", "allclose", [p, q], {"equal_nan": False}, mx.allclose)
    case("allclose_tol_nan", "allclose", [p, q], {"rtol": 0.1, "atol": 0.0, "equal_nan": True},
         lambda a, b: mx.allclose(a, b, 0.1, 0.0, equal_nan=True))
    case("array_equal", "array_equal", [mx.array([1, 2]), mx.array([1.0, 2.0])], {"equal_nan": False},
         mx.array_equal)
    case("array_equal_shape", "array_equal", [mx.array([1, 2]), mx.array([[1, 2]])], {"equal_nan": False},
         mx.array_equal)
    case("array_equal_nan", "array_equal", [p, p], {"equal_nan": True},
         lambda a, b: mx.array_equal(a, b, equal_nan=True))
    w = normal((3, 5), 129)
    case("diff", "diff", [w], {}, mx.diff)
    case("diff_n2_axis0", "diff", [w], {"n": 2, "axis": 0}, lambda a: mx.diff(a, 2, 0))
    m = normal((3, 4), 130)
    case("diag_2d", "diag", [m], {"k": 0}, mx.diag)
    case("diag_2d_k", "diag", [m], {"k": 1}, lambda a: mx.diag(a, 1))
    case("diag_1d", "diag", [normal((3,), 131)], {"k": -1}, lambda a: mx.diag(a, -1))
    case("diagonal", "diagonal", [z], {}, mx.diagonal)
    case("diagonal_args", "diagonal", [z], {"offset": 1, "axis1": 1, "axis2": 2},
         lambda a: mx.diagonal(a, 1, 1, 2))
    case("trace", "trace", [m], {}, mx.trace)
    case("trace_args", "trace", [z], {"offset": -1, "axis1": 1, "axis2": 2, "dtype": "float16"},
         lambda a: mx.trace(a, -1, 1, 2, mx.float16))
    case("trace_int", "trace", [ints((3, 3), seed=132)], {}, mx.trace)
    a2, b2 = normal((2, 3), 133), normal((3, 4), 134)
    case("einsum_matmul", "einsum", [a2, b2], {"subscripts": "ij,jk->ik"},
         lambda a, b: mx.einsum("ij,jk->ik", a, b))
    case("einsum_trace", "einsum", [m[:, :3]], {"subscripts": "ii->"}, lambda a: mx.einsum("ii->", a))
    case("einsum_outer_sum", "einsum", [a2, normal((2,), 135)], {"subscripts": "ij,i->j"},
         lambda a, b: mx.einsum("ij,i->j", a, b))
    case("tensordot_default", "tensordot", [normal((2, 3, 4), 136), normal((3, 4, 2), 137)], {},
         lambda a, b: mx.tensordot(a, b))
    case("tensordot_int", "tensordot", [a2, b2], {"axes": 1}, lambda a, b: mx.tensordot(a, b, 1))
    case("tensordot_pairs", "tensordot", [normal((2, 3, 4), 138), normal((4, 2), 139)],
         {"axes": [[0, 2], [1, 0]]}, lambda a, b: mx.tensordot(a, b, ([0, 2], [1, 0])))
    case("vecdot", "vecdot", [a2, normal((2, 3), 140)], {}, mx.vecdot)
    case("vecdot_axis0", "vecdot", [a2, normal((2, 3), 141)], {"axis": 0},
         lambda a, b: mx.vecdot(a, b, axis=0))
    case("vecdot_c64", "vecdot", [cplx((3,), 142), cplx((3,), 143)], {}, mx.vecdot)
    case("addmm", "addmm", [normal((2, 4), 144), a2, b2], {}, mx.addmm)
    case("addmm_ab", "addmm", [normal((4,), 145), a2, b2], {"alpha": 0.5, "beta": 2.0},
         lambda c, a, b: mx.addmm(c, a, b, 0.5, 2.0))
    h = normal((2, 8), 146)
    case("hadamard", "hadamard_transform", [h], {}, mx.hadamard_transform)
    case("hadamard_scale", "hadamard_transform", [h], {"scale": 0.5},
         lambda a: mx.hadamard_transform(a, 0.5))
    mm_a, mm_b = normal((64, 64), 147), normal((64, 64), 148)
    mask = mx.array([[True, False], [False, True]])
    case("block_masked_mm", "block_masked_mm", [mm_a, mm_b, mask], {"block_size": 32},
         lambda a, b, m: mx.block_masked_mm(a, b, 32, m), tol=(1e-4, 1e-4))
    ga, gb = normal((3, 2, 4), 149), normal((2, 4, 3), 150)
    case("gather_mm", "gather_mm", [ga, gb, mx.array([0, 2, 1]), mx.array([1, 0, 1])], {},
         lambda a, b, li, ri: mx.gather_mm(a, b, li, ri))
    case("segmented_mm", "segmented_mm", [normal((2, 6), 151), normal((6, 3), 152),
                                          mx.array([[0, 2], [2, 6]], mx.uint32)], {},
         mx.segmented_mm)
    case("stop_gradient", "stop_gradient", [h], {}, mx.stop_gradient)


def conv_cases():
    x1, w1 = normal((2, 9, 3), 160), normal((4, 3, 3), 161)
    case("conv1d", "conv1d", [x1, w1], {}, mx.conv1d)
    case("conv1d_args", "conv1d", [x1, w1], {"stride": 2, "padding": 1, "dilation": 2},
         lambda x, w: mx.conv1d(x, w, 2, 1, 2))
    case("conv1d_groups", "conv1d", [normal((1, 8, 4), 162), normal((4, 3, 2), 163)], {"groups": 2},
         lambda x, w: mx.conv1d(x, w, groups=2))
    x2, w2 = normal((1, 6, 5, 2), 164), normal((3, 3, 2, 2), 165)
    case("conv2d", "conv2d", [x2, w2], {}, mx.conv2d)
    case("conv2d_args", "conv2d", [x2, w2], {"stride": [2, 1], "padding": [1, 0], "dilation": 1},
         lambda x, w: mx.conv2d(x, w, (2, 1), (1, 0)))
    case("conv2d_f16", "conv2d", [x2.astype(mx.float16), w2.astype(mx.float16)], {"padding": 1},
         lambda x, w: mx.conv2d(x, w, padding=1))
    x3, w3 = normal((1, 4, 4, 4, 1), 166), normal((2, 2, 2, 2, 1), 167)
    case("conv3d", "conv3d", [x3, w3], {"stride": 2}, lambda x, w: mx.conv3d(x, w, 2))
    wt1 = normal((3, 3, 3), 168)
    case("conv_transpose1d", "conv_transpose1d", [x1, wt1], {"stride": 2, "padding": 1,
                                                             "output_padding": 1},
         lambda x, w: mx.conv_transpose1d(x, w, 2, 1, output_padding=1))
    wt2 = normal((2, 3, 3, 2), 169)
    case("conv_transpose2d", "conv_transpose2d", [x2, wt2], {"stride": [1, 2]},
         lambda x, w: mx.conv_transpose2d(x, w, (1, 2)))
    wt3 = normal((2, 2, 2, 2, 1), 170)
    case("conv_transpose3d", "conv_transpose3d", [x3, wt3], {"padding": 1},
         lambda x, w: mx.conv_transpose3d(x, w, padding=1))
    case("conv_general", "conv_general", [x2, w2],
         {"stride": [1, 2], "padding": [[1, 0], [0, 1]], "kernel_dilation": 1,
          "input_dilation": [2, 1], "groups": 1, "flip": True},
         lambda x, w: mx.conv_general(x, w, (1, 2), ([1, 0], [0, 1]), 1, (2, 1), 1, True))


def quant_cases():
    w = normal((8, 64), 180)
    for gs, bits in [(32, 4), (64, 8), (64, 2)]:
        wq, s, b = mx.quantize(w, gs, bits)
        case(f"quantize_{gs}_{bits}", "quantize", [w], {"group_size": gs, "bits": bits},
             lambda w, gs=gs, bits=bits: mx.quantize(w, gs, bits))
        case(f"dequantize_{gs}_{bits}", "dequantize", [wq, s, b], {"group_size": gs, "bits": bits},
             lambda q, s, b, gs=gs, bits=bits: mx.dequantize(q, s, b, gs, bits))
    case("quantize_default", "quantize", [w], {}, lambda w: mx.quantize(w))
    case("quantize_mxfp4", "quantize", [w], {"mode": "mxfp4"}, lambda w: mx.quantize(w, mode="mxfp4"))
    wq, s = mx.quantize(w, mode="mxfp4")
    case("dequantize_mxfp4", "dequantize", [wq, s], {"mode": "mxfp4"},
         lambda q, s: mx.dequantize(q, s, mode="mxfp4"))
    case("dequantize_dtype", "dequantize", [*mx.quantize(w)], {"dtype": "float16"},
         lambda q, s, b: mx.dequantize(q, s, b, dtype=mx.float16))
    wq, s, b = mx.quantize(w, 32, 4)
    x = normal((3, 64), 181)
    case("quantized_matmul", "quantized_matmul", [x, wq, s, b],
         {"transpose": True, "group_size": 32, "bits": 4},
         lambda x, q, s, b: mx.quantized_matmul(x, q, s, b, True, 32, 4))
    xt = normal((3, 8), 182)
    case("quantized_matmul_nt", "quantized_matmul", [xt, wq, s, b],
         {"transpose": False, "group_size": 32, "bits": 4},
         lambda x, q, s, b: mx.quantized_matmul(x, q, s, b, False, 32, 4))
    ws = normal((2, 8, 64), 183)
    wq2, s2, b2 = mx.quantize(ws, 32, 4)
    xg = normal((3, 1, 64), 184)
    case("gather_qmm", "gather_qmm", [xg, wq2, s2, b2, mx.array([0, 1, 2]), mx.array([1, 0, 1])],
         {"transpose": True, "group_size": 32, "bits": 4},
         lambda x, q, s, b, li, ri: mx.gather_qmm(x, q, s, b, li, ri, True, 32, 4))
    f = mx.array([0.0, 1.0, -2.5, 100.0, 0.01])
    case("to_fp8", "to_fp8", [f], {}, mx.to_fp8)
    case("from_fp8", "from_fp8", [mx.to_fp8(f)], {}, mx.from_fp8)
    case("from_fp8_f32", "from_fp8", [mx.to_fp8(f)], {"dtype": "float32"},
         lambda a: mx.from_fp8(a, mx.float32))


# ---------------------------------------------------------------------------------------------
# Indexing: the index is encoded as a list of entries (see the module docstring).

def enc(idx):
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    for e in idx:
        if e is None:
            out.append("none")
        elif e is Ellipsis:
            out.append("ellipsis")
        elif isinstance(e, int):
            out.append({"int": e})
        elif isinstance(e, slice):
            out.append({"slice": [e.start, e.stop, e.step]})
        elif isinstance(e, mx.array):
            out.append({"array": record(e)})
        else:
            raise TypeError(e)
    return out


def indexing_cases():
    a = mx.arange(24).reshape(2, 3, 4)
    f = normal((4, 5), 190)
    i1 = mx.array([2, 0, 1])
    i2 = mx.array([[0, 1], [1, 0]])
    gets = [
        ("int", a, 1), ("neg_int", a, -1), ("slice", a, slice(1, None)),
        ("step", f, slice(None, None, 2)), ("reverse", f, slice(None, None, -1)),
        ("neg_step_bounds", f, slice(3, 0, -2)), ("clamped", f, slice(-100, 100)),
        ("empty_slice", f, slice(3, 1)),
        ("tuple_int_slice", a, (1, slice(0, 2))), ("ellipsis_int", a, (Ellipsis, 0)),
        ("ellipsis_mid", a, (0, Ellipsis, slice(1, 3))), ("newaxis", a, (slice(None), None, 1)),
        ("newaxis_front", f, (None, Ellipsis)), ("newaxis_many", f, (None, 1, None, slice(None, 2))),
        ("all_ints", a, (1, 2, 3)), ("ellipsis_only", a, Ellipsis), ("none_only", f, None),
        ("array", f, i1), ("array2d", f, i2), ("array_axis1", a, (slice(None), i1)),
        ("array_then_slice", a, (mx.array([1, 0]), slice(1, 3))),
        ("two_arrays", a, (mx.array([1, 0]), mx.array([2, 0]))),
        ("arrays_broadcast", a, (mx.array([[0], [1]]), slice(None), mx.array([0, 3]))),
        ("int_and_array", a, (1, i1)), ("array_slice_int", a, (mx.array([1, 0]), slice(None), 2)),
        ("array_newaxis", f, (i1, None)), ("strided_then_array", a, (slice(None, None, -1), i1)),
        ("array_ellipsis", a, (Ellipsis, mx.array([3, 0]))),
        ("neg_array", f, mx.array([-1, -2])),
    ]
    for name, src, idx in gets:
        case(f"get_{name}", "index", [src], {"index": enc(idx)}, lambda s, idx=idx: s[idx])

    def setter(idx):
        def fn(s, v):
            t = mx.array(s)
            t[idx] = v
            return t
        return fn

    puts = [
        ("int", a, 1, mx.array(-1)), ("slice_row", f, slice(1, 3), normal((5,), 191)),
        ("step", f, slice(None, None, 2), mx.array(0.0)),
        ("reverse", f, (slice(None, None, -1), 0), mx.arange(4).astype(mx.float32)),
        ("tuple", a, (1, slice(0, 2), slice(None, None, 3)), mx.array([[7, 8], [9, 10]])),
        ("ellipsis", a, (Ellipsis, 1), mx.array(5)),
        ("newaxis", f, (None, 2), normal((1, 5), 192)), ("extra_leading_one", f, 0, normal((1, 1, 5), 193)),
        ("array", f, i1, mx.array(3.0)), ("array_rows", f, mx.array([0, 3]), normal((2, 5), 194)),
        ("array_axis1", a, (slice(None), i1), mx.array(-7)),
        ("array_slice", a, (mx.array([1, 0]), slice(1, 3)), mx.array([[1, 2, 3, 4], [5, 6, 7, 8]])),
        ("two_arrays", a, (mx.array([0, 1]), mx.array([2, 0])), mx.array(0)),
        ("int_array", a, (1, mx.array([0, 2])), mx.array([[11, 12, 13, 14]])),
        ("array_strided", a, (mx.array([0, 1]), slice(None), slice(None, None, 2)), mx.array(-2)),
        ("mask", f, f > 0, mx.array(0.0)),
        ("all", f, Ellipsis, mx.array(1.0)),
        ("dtype_cast", a, 0, mx.array(2.7)),
    ]
    for name, src, idx, v in puts:
        mask = isinstance(idx, mx.array) and idx.dtype == mx.bool_
        case(f"put_{name}", "index_put", [src, v], {"index": enc(idx), "mask": mask}, setter(idx))

    ats = [
        ("add_dup", mx.zeros((4,)), mx.array([0, 1, 1, 3]), mx.array(1.0), "add"),
        ("subtract_slice", f, slice(0, 2), mx.array(1.0), "subtract"),
        ("multiply", f, (slice(None), mx.array([0, 0, 4])), mx.array(2.0), "multiply"),
        ("divide", f, 1, mx.array(4.0), "divide"),
        ("maximum", f, mx.array([1, 1]), normal((2, 5), 195), "maximum"),
        ("minimum_slice", f, (Ellipsis, slice(1, 3)), mx.array(0.0), "minimum"),
    ]
    for name, src, idx, v, meth in ats:
        case(f"at_{name}", "at", [src, v], {"index": enc(idx), "method": meth},
             lambda s, v, idx=idx, meth=meth: getattr(s.at[idx], meth)(v))


if __name__ == "__main__":
    for fam in [unary_cases, binary_cases, reduction_cases, cumulative_cases, shape_cases,
                gather_cases, sort_cases, creation_cases, misc_cases, conv_cases, quant_cases,
                indexing_cases]:
        fam()
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    write("ops", {"cases": CASES})
    print(f"{len(CASES)} cases")
