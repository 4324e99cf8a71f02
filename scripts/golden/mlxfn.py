#!/usr/bin/env python3
"""Functions exported by Python MLX 0.32.2 for the Rust `.mlxfn` validator's tests
(mlx-rs/tests/mlxfn_corrupt.rs).

Writes
- tests/data/mlxfn_kwargs.mlxfn: keyword arguments, a second signature in one file and a
  constant index array (the Rust API exports positional arguments only). The Rust test calls
  it with its own arguments (`kwargs_calls` there) and compares every corrupted copy with the
  intact one, so nothing else is recorded.
- tests/data/mlxfn_corpus/*.mlxfn: one file per group of ops, covering the primitives MLX can
  export from the CPU (plain and shapeless traces, gradients and vmaps included). The Rust test
  imports each: the validator must accept every file MLX writes.
"""
import shutil

import mlx.core as mx

from common import ROOT

DATA = ROOT / "tests" / "data"

# The constants the kwargs graph stores: an index array and a float vector.
PICK = mx.array([2, 0], dtype=mx.int32)
SHIFT = mx.array([0.5, -1.5], dtype=mx.float32)


def kwargs_fun(x, y, *, bias, scale):
    picked = mx.take(x, PICK, axis=1)
    return [
        mx.exp(x * scale) + bias,
        mx.sum(picked * y, axis=0) + SHIFT,
        mx.maximum(x, bias).astype(mx.float16),
    ]


def write_kwargs():
    x = mx.arange(6, dtype=mx.float32).reshape(2, 3) * 0.25
    y = mx.arange(4, dtype=mx.float32).reshape(2, 2) - 1.0
    x3 = mx.arange(9, dtype=mx.float32).reshape(3, 3) * -0.5
    y3 = mx.arange(6, dtype=mx.float32).reshape(3, 2) * 0.5
    with mx.exporter(str(DATA / "mlxfn_kwargs.mlxfn"), kwargs_fun) as export:
        export(x, y, bias=mx.array(1.0), scale=mx.array(0.5))
        export(x3, y3, bias=mx.array([1.0, 2.0, 3.0]), scale=mx.array(2.0))


KEY = mx.random.key(11)


def uniform(*shape, i=0):
    return mx.random.uniform(-1, 1, shape, key=mx.random.split(KEY, 64)[i])


def masked_search(a, mask, values, edges):
    b = mx.array(a)
    b[mask] = values
    (c,) = mx.depends([a * 2], [b])
    return [b, c, mx.searchsorted(edges, a), mx.searchsorted(edges, a, side="right")]


def corpus():
    """(name, function, arguments, shapeless variants) for each file."""
    x, y, v = uniform(2, 3, i=0), uniform(3, 4, i=1), uniform(3, i=2)
    sq = uniform(3, 3, i=3) + 3 * mx.eye(3)
    spd = sq @ sq.T
    w3d, h12, h20, b3 = uniform(2, 1, 1, 1, 3, i=4), uniform(2, 12, i=5), uniform(1, 20, i=6), uniform(2, 2, 3, i=7)
    mx.eval(sq, spd, w3d, h12, h20, b3)
    ints = mx.array([[1, 2, 3], [4, 5, 6]], dtype=mx.int32)
    ints2 = mx.array([[3, 1, 2], [0, 5, 1]], dtype=mx.int32)
    both = (False, True)
    yield "unary", lambda a: [
        mx.abs(a), mx.arccos(a * 0.5), mx.arccosh(a * 0 + 2), mx.arcsin(a * 0.5), mx.arcsinh(a),
        mx.arctan(a), mx.arctanh(a * 0.5), mx.ceil(a), mx.cos(a), mx.cosh(a), mx.erf(a),
        mx.erfinv(a * 0.5), mx.exp(a), mx.expm1(a), mx.floor(a), mx.log(a * a + 1),
        mx.log2(a * a + 1), mx.log10(a * a + 1), mx.log1p(a * a), mx.negative(a), mx.round(a),
        mx.sigmoid(a), mx.sign(a), mx.sin(a), mx.sinh(a), mx.square(a), mx.sqrt(a * a),
        mx.rsqrt(a * a + 1), mx.tan(a), mx.tanh(a), mx.stop_gradient(a), mx.logical_not(a > 0),
    ], [x], both
    yield "binary", lambda a, b: [
        a + b, a - b, a * b, a / b, a % b, mx.maximum(a, b), mx.minimum(a, b),
        mx.power(mx.abs(a), b), mx.arctan2(a, b), mx.logaddexp(a, b), a == b, a != b, a < b,
        a <= b, a > b, a >= b, mx.logical_and(a > 0, b > 0), mx.logical_or(a > 0, b > 0),
        mx.where(a > b, a, b), *mx.divmod(a, b + 3), mx.isclose(a, b),
        mx.array_equal(a, b, equal_nan=True),
    ], [x, uniform(2, 3, i=8)], both
    yield "broadcast", lambda a, b: [a + b, a * 2.0, mx.broadcast_to(b, (4, 3))], [x, v], both
    yield "ints", lambda a, b: [
        a & b, a | b, a ^ b, a << (b % 4), a >> (b % 4), a // (b + 1), a % (b + 1),
        mx.cumsum(a, 0), mx.sum(a), mx.prod(a, 1), mx.max(a), mx.argmax(a, 1), mx.argmin(a, 0),
    ], [ints, ints2], (False,)
    yield "small_ints", lambda a: [
        mx.sum(a, 0), a.astype(mx.float16), mx.cumsum(a.astype(mx.bool_), 1), mx.sum(a > 2),
        mx.sum(a.astype(mx.int64)), a.astype(mx.int64) * 3, mx.sort(a.astype(mx.int64)),
    ], [ints.astype(mx.uint8)], (False,)
    yield "reduce", lambda a: [
        mx.sum(a, 0), mx.sum(a, (0, 1), keepdims=True), mx.prod(a, 1), mx.max(a, 0),
        mx.min(a, 1), mx.all(a > 0, 0), mx.any(a > 0, 1), mx.mean(a), mx.var(a, 0),
        mx.logsumexp(a, 1), mx.logsumexp(a, 0), mx.softmax(a, -1), mx.softmax(a, 0),
        mx.argmax(a, 0), mx.argmin(a), mx.std(a),
    ], [uniform(3, 4, i=9)], both
    yield "scan_sort", lambda a: [
        mx.cumsum(a, 0), mx.cumprod(a, 1, reverse=True), mx.cummax(a, 1),
        mx.cummin(a, 0, inclusive=False), mx.sort(a, 1), mx.argsort(a, 0), mx.partition(a, 2, 1),
        mx.argpartition(a, 1, 0), mx.topk(a, 2, 1),
    ], [uniform(3, 5, i=10)], (False,)
    yield "shape", lambda a: [
        a.reshape(-1), a.reshape(3, 2, 1), a.T, mx.transpose(a.reshape(1, 2, 3), (2, 0, 1)),
        mx.expand_dims(a, (0, 3)), mx.squeeze(a.reshape(1, 2, 1, 3)),
        mx.flatten(a.reshape(1, 2, 3), 1, 2), mx.unflatten(a, 1, (3, 1)),
        mx.moveaxis(a.reshape(1, 2, 3), 0, 2), mx.concatenate([a, a * 2], 1), mx.stack([a, a]),
        *mx.split(a, [1, 2], 1), *mx.split(a.reshape(6), 3), mx.pad(a, ((1, 0), (2, 1))),
        mx.pad(a, 1, mode="edge"), mx.pad(a, [(0, 0), (1, 2)], constant_values=3.0),
        mx.tile(a, (2, 1)), mx.repeat(a, 2, 0),
    ], [x], (False,)
    yield "slicing", lambda a: [
        a[1:], a[:, ::2], a[::-1, 1:], a[0], a[..., -1], a[None, :, None], a[3:0:-2], a[-1:],
        a[0:4:3], a[1:2:5], a[5:10], a[::-1, ::-3],
        mx.slice_update(a, mx.ones((1, 3)), mx.array([1]), [0]),
        mx.slice(a, mx.array([1, 0]), [0, 1], [1, 2]),
        mx.slice_update(a, mx.zeros((2, 2)), mx.array([0, 1]), (0, 1)), a.at[1:3, 2].add(1.0),
        a.at[0].multiply(2.0),
    ], [uniform(4, 5, i=11)], (False,)
    yield "gather_scatter", lambda a, i: [
        a[i], mx.take(a, i, 1), mx.take(a, mx.array([2, 0, 1])),
        mx.take_along_axis(a, mx.array([[0, 1, 2, 3, 0]]), 0), a[i, i % 4], a[mx.array([0, -1])],
        a.at[i].add(1.0), a.at[i].maximum(0.5), a.at[mx.array([1, 0])].multiply(2.0),
        mx.put_along_axis(a, mx.array([[0, 1, 2, 3, 0]]), mx.ones((1, 5)), 0),
        mx.where(a > 0, a, 1.0),
    ], [uniform(4, 5, i=12), mx.array([0, 2, 3], dtype=mx.int32)], both
    yield "matmul", lambda a, b, c: [
        a @ b, a[None] @ b, b.T @ a.T, a @ b[:, 0], a[0] @ b, mx.addmm(c, a, b, 0.5, 2.0),
        mx.addmm(c[0], a, b), mx.inner(a, a), mx.outer(a[0], b[0]), mx.tensordot(a, b, 1),
        mx.einsum("ij,jk->ik", a, b), b3 @ b,
    ], [x, y, uniform(2, 4, i=13)], both
    yield "conv", lambda a, w, w2, w3: [
        mx.conv1d(a, w, stride=2, padding=1), mx.conv2d(a.reshape(1, 4, 2, 3), w2, padding=(1, 0)),
        mx.conv_transpose1d(a, w, stride=2), mx.conv1d(mx.concatenate([a, a], 2), w3, groups=2),
        mx.conv3d(a.reshape(1, 2, 2, 2, 3), w3d),
    ], [uniform(1, 8, 3, i=14), uniform(4, 3, 3, i=15), uniform(5, 2, 2, 3, i=16), uniform(4, 3, 3, i=17)], both
    yield "fft", lambda a: [
        mx.fft.fft(a), mx.fft.ifft(a), mx.fft.rfft(a.real), mx.fft.irfft(mx.fft.rfft(a.real)),
        mx.fft.fft2(a), mx.fft.rfft2(a.real, s=(4, 6)), mx.fft.fftn(a, axes=(0,)),
    ], [uniform(4, 6, i=18) + 1j * uniform(4, 6, i=19)], (False,)
    yield "linalg", lambda a: [
        *mx.linalg.qr(a), *mx.linalg.svd(a), mx.linalg.svd(a, compute_uv=False),
        mx.linalg.inv(a), mx.linalg.cholesky(spd), *mx.linalg.eigh(spd),
        mx.linalg.eigvalsh(spd, UPLO="U"), *mx.linalg.eig(a), mx.linalg.eigvals(a),
        mx.linalg.tri_inv(mx.triu(a), upper=True), mx.linalg.norm(a), mx.linalg.pinv(a),
    ], [sq], (False,)
    yield "complex", lambda a: [
        mx.real(a), mx.imag(a), mx.conj(a), mx.abs(a), a * a, mx.exp(a), mx.sum(a, 0),
    ], [uniform(2, 3, i=20) + 1j * uniform(2, 3, i=21)], both
    yield "view_strided", lambda a: [
        a.view(mx.int32), a.view(mx.uint8), a.astype(mx.int64).view(mx.float32),
        mx.as_strided(a, (2, 2), (1, 2), 1), a.astype(mx.bfloat16),
    ], [uniform(3, 4, i=22)], (False,)
    yield "random", lambda k: [
        mx.random.uniform(shape=(3,), key=k), mx.random.normal((2, 2), key=k),
        mx.random.bernoulli(0.5, (4,), key=k), mx.random.randint(0, 10, (5,), key=k),
    ], [mx.random.key(3)], (False,)
    yield "creation", lambda a: [
        a + mx.arange(3), mx.arange(0, 1, 0.25) * a[0, 0], mx.linspace(0, 1, 5), mx.eye(3),
        mx.tri(3), mx.tril(mx.ones((3, 3))), mx.ones_like(a), mx.full((2, 3), a[0, 0]),
        mx.zeros_like(a),
    ], [x], (False,)
    wq = mx.quantize(uniform(8, 128, i=23), 64, 4)
    wq8 = mx.quantize(uniform(8, 128, i=24), 32, 8)
    wq3 = mx.quantize(uniform(8, 128, i=25), 128, 3)
    mx.eval(wq, wq8, wq3)
    yield "quantized", lambda w, a: [
        *mx.quantize(w, 64, 4), mx.quantized_matmul(a, *wq, transpose=True, group_size=64, bits=4),
        mx.dequantize(*wq8, group_size=32, bits=8),
        mx.quantized_matmul(a, *wq3, transpose=True, group_size=128, bits=3),
    ], [uniform(8, 128, i=26), uniform(2, 128, i=27)], (False,)
    wf = mx.quantize(uniform(8, 64, i=28), mode="mxfp4")
    mx.eval(wf)
    yield "quantized_mxfp4", lambda a, w, s: [
        mx.quantized_matmul(a, w, s, transpose=True, mode="mxfp4"), mx.dequantize(w, s, mode="mxfp4"),
    ], [uniform(2, 64, i=29), wf[0], wf[1]], (False,)
    wg = mx.quantize(uniform(2, 8, 64, i=30), 64, 4)
    mx.eval(wg)
    yield "gather_mm", lambda a, b, c: [
        mx.gather_mm(a, b, mx.array([0, 1, 1]), mx.array([1, 0, 1])),
        mx.gather_mm(a, b, None, mx.array([1, 0])),
        mx.gather_qmm(c, *wg, rhs_indices=mx.array([1, 0]), transpose=True, group_size=64, bits=4),
    ], [uniform(2, 3, 4, i=31), uniform(2, 4, 5, i=32), uniform(2, 1, 64, i=33)], (False,)
    yield "block_masked", lambda a, b: [
        mx.block_masked_mm(a, b, 32, mask_out=mx.array([[True, False], [False, True]])),
        mx.block_masked_mm(a, b, 32, mask_lhs=mx.ones((2, 2)) > 0, mask_rhs=mx.ones((2, 2)) > 0),
    ], [uniform(64, 64, i=34), uniform(64, 64, i=35)], (False,)
    yield "hadamard", lambda a: [
        mx.hadamard_transform(a), mx.hadamard_transform(h12), mx.hadamard_transform(h20, scale=0.5),
    ], [uniform(2, 16, i=36)], (False,)
    yield "grad_vmap", lambda a, b: [
        *mx.grad(lambda p, q: mx.sum(mx.tanh(p @ q) * mx.softmax(p @ q, -1)), argnums=(0, 1))(a, b),
        mx.grad(lambda p: mx.sum(mx.take(p, mx.array([0, 2]), 1) ** 2) + mx.sum(mx.cumsum(p, 1) * mx.sort(p, 1)))(a),
        mx.vmap(lambda r: mx.sum(r * r) + r[0])(a), mx.vmap(lambda r: r @ r.T)(a.reshape(2, 3, 1)),
    ], [x, y], both
    yield "dynamic", lambda a, s: [
        mx.slice(a, s, [0, 1], [2, 2]), mx.slice_update(a, mx.ones((2, 2)), s, [0, 1]),
    ], [uniform(4, 5, i=37), mx.array([1, 2])], (False,)
    yield "mean_shapeless", lambda a: [mx.mean(a, 1), mx.var(a)], [x], (True,)
    yield "masked_search", masked_search, [x, x > 0, mx.ones((6,)), mx.array([-0.5, 0.0, 0.5])], (False,)
    yield "half", lambda a: [
        mx.exp(a.astype(mx.float16)), mx.sum(a.astype(mx.bfloat16), 0),
        mx.softmax(a.astype(mx.float16), -1, precise=True), a.astype(mx.float16) @ a.T.astype(mx.float16),
    ], [x], both


def write_corpus():
    folder = DATA / "mlxfn_corpus"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for name, fun, args, variants in corpus():
        for shapeless in variants:
            path = folder / f"{name}{'_shapeless' if shapeless else ''}.mlxfn"
            mx.export_function(str(path), fun, *args, shapeless=shapeless)
            # Every file runs in Python MLX as exported, but for shapeless replays of
            # primitives MLX cannot infer shapes for (an error there too).
            try:
                mx.eval(mx.import_function(str(path))(*args))
            except ValueError as e:
                if not (shapeless and "cannot infer output shapes" in str(e)):
                    raise


if __name__ == "__main__":
    write_kwargs()
    write_corpus()
