#!/usr/bin/env python3
"""Golden data for mlx_rs::linalg, computed on the CPU stream as Python users must
(`stream=mx.cpu`). Writes tests/data/linalg.json."""
import mlx.core as mx

from common import record, write

cpu = mx.cpu
a = mx.random.normal((4, 4), key=mx.random.key(10))
spd = a @ a.T + 4 * mx.eye(4)  # symmetric positive definite
b = mx.random.normal((4, 2), key=mx.random.key(11))
batch = mx.random.normal((2, 3, 3), key=mx.random.key(12))
rect = mx.random.normal((5, 3), key=mx.random.key(13))
v3a = mx.random.normal((2, 3), key=mx.random.key(14))
v3b = mx.random.normal((2, 3), key=mx.random.key(15))
upper = mx.triu(a) + 4 * mx.eye(4)
lower = mx.tril(a) + 4 * mx.eye(4)
inf = float("inf")


def norms():
    out = {}
    out["norm"] = record(mx.linalg.norm(a))
    out["norm_axis1_keep"] = record(mx.linalg.norm(a, axis=1, keepdims=True))
    for name, ord_ in (("2", 2), ("1", 1), ("0", 0), ("3", 3.0), ("half", 0.5), ("inf", inf), ("neginf", -inf)):
        out[f"vec_ord_{name}"] = record(mx.linalg.norm(a, ord=ord_, axis=0))
    for name, ord_ in (("1", 1), ("neg1", -1), ("inf", inf), ("neginf", -inf), ("fro", "fro"), ("nuc", "nuc"), ("2", 2), ("neg2", -2)):
        out[f"mat_ord_{name}"] = record(mx.linalg.norm(a, ord=ord_, stream=cpu))
    out["mat_fro_batch_axes"] = record(mx.linalg.norm(batch, ord="fro", axis=(1, 2)))
    out["norm_f16"] = record(mx.linalg.norm(a.astype(mx.float16), axis=1))
    out["norm_bf16"] = record(mx.linalg.norm(a.astype(mx.bfloat16)))
    out["norm_c64"] = record(mx.linalg.norm((a + 1j * a).astype(mx.complex64), axis=0))
    return out


def factorizations():
    out = {}
    q, r = mx.linalg.qr(a, stream=cpu)
    out["qr_q"], out["qr_r"] = record(q), record(r)
    u, s, vt = mx.linalg.svd(rect, stream=cpu)
    out["svd_s"], out["svd_u"], out["svd_vt"] = record(s), record(u), record(vt)
    out["svd_values"] = record(mx.linalg.svd(rect, compute_uv=False, stream=cpu))
    out["inv"] = record(mx.linalg.inv(a, stream=cpu))
    out["inv_batch"] = record(mx.linalg.inv(batch, stream=cpu))
    out["tri_inv_lower"] = record(mx.linalg.tri_inv(lower, stream=cpu))
    out["tri_inv_upper"] = record(mx.linalg.tri_inv(upper, upper=True, stream=cpu))
    out["cholesky"] = record(mx.linalg.cholesky(spd, stream=cpu))
    out["cholesky_upper"] = record(mx.linalg.cholesky(spd, upper=True, stream=cpu))
    L = mx.linalg.cholesky(spd, stream=cpu)
    out["cholesky_inv"] = record(mx.linalg.cholesky_inv(L, stream=cpu))
    out["pinv"] = record(mx.linalg.pinv(rect, stream=cpu))
    out["cross"] = record(mx.linalg.cross(v3a, v3b))
    out["cross_axis0"] = record(mx.linalg.cross(v3a.T, v3b.T, axis=0))
    w, vecs = mx.linalg.eigh(spd, stream=cpu)
    out["eigh_w"], out["eigh_v"] = record(w), record(vecs)
    out["eigh_upper_w"] = record(mx.linalg.eigh(spd, UPLO="U", stream=cpu)[0])
    out["eigvalsh"] = record(mx.linalg.eigvalsh(spd, stream=cpu))
    out["eigvalsh_upper"] = record(mx.linalg.eigvalsh(upper, UPLO="U", stream=cpu))
    ev, evec = mx.linalg.eig(spd, stream=cpu)
    out["eig_w"], out["eig_v"] = record(ev), record(evec)
    out["eigvals"] = record(mx.linalg.eigvals(spd, stream=cpu))
    p, l, u_ = mx.linalg.lu(a, stream=cpu)
    out["lu_p"], out["lu_l"], out["lu_u"] = record(p), record(l), record(u_)
    lu, piv = mx.linalg.lu_factor(a, stream=cpu)
    out["lu_factor_lu"], out["lu_factor_piv"] = record(lu), record(piv)
    out["solve"] = record(mx.linalg.solve(a, b, stream=cpu))
    out["solve_triangular"] = record(mx.linalg.solve_triangular(lower, b, stream=cpu))
    out["solve_triangular_upper"] = record(mx.linalg.solve_triangular(upper, b, upper=True, stream=cpu))
    out["det"] = record(mx.linalg.det(a, stream=cpu))
    out["det_batch"] = record(mx.linalg.det(batch, stream=cpu))
    sign, logdet = mx.linalg.slogdet(a, stream=cpu)
    out["slogdet_sign"], out["slogdet_log"] = record(sign), record(logdet)
    return out


if __name__ == "__main__":
    inputs = {k: record(v) for k, v in dict(a=a, spd=spd, b=b, batch=batch, rect=rect, v3a=v3a, v3b=v3b, upper=upper, lower=lower).items()}
    write("linalg", {"inputs": inputs, "norms": norms(), "factor": factorizations()})
