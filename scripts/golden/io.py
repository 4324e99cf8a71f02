#!/usr/bin/env python3
"""Fixtures for mlx_rs::io: files written by Python MLX 0.32.2 that the Rust tests load.

Writes tests/data/fixtures/py_*.{safetensors,npy,gguf} and tests/data/io.json (the values and
metadata those files hold). Run `io.py check DIR` to verify, from Python, the files a Rust test
wrote into DIR (tests/io_interop.rs does this when a Python with MLX is available).
"""
import sys

import mlx.core as mx

from common import DATA, record, write

FIX = DATA / "fixtures"
k = mx.random.key(40)

ARRAYS = {
    "f32": mx.random.normal((3, 4), key=k),
    "f16": mx.random.normal((5,), key=mx.random.key(41)).astype(mx.float16),
    "bf16": mx.random.normal((2, 3), key=mx.random.key(42)).astype(mx.bfloat16),
    "i32": mx.arange(-6, 6).reshape(2, 2, 3),
    "i64": mx.array([-(2**40), 0, 2**40 + 7], dtype=mx.int64),
    "u8": mx.array([0, 7, 255], dtype=mx.uint8),
    "bool": mx.array([True, False, True]),
    "c64": mx.array([1 + 2j, -0.5 - 1j]).astype(mx.complex64),
    "scalar": mx.array(3.25),
    "empty": mx.zeros((0, 3)),
    "layers.0.attn.wq.weight": mx.ones((2, 2)),
}
METADATA = {"format": "mlx", "note": "written by scripts/golden/io.py", "empty": ""}
GGUF_ARRAYS = {"f32": ARRAYS["f32"], "f16": ARRAYS["f16"], "i32": ARRAYS["i32"].reshape(12)}
GGUF_METADATA = {
    "general.name": "fixture",
    "tokenizer.tokens": ["<s>", "hello", "world"],
    "answer": mx.array(42, dtype=mx.uint32),
    "vector": mx.array([1.0, 2.5, -3.0]),
}
NPY = ["f32", "f16", "bf16", "i32", "i64", "u8", "bool", "c64", "scalar", "empty"]


def generate():
    FIX.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(FIX / "py_weights.safetensors"), ARRAYS, metadata=METADATA)
    for name in NPY:
        mx.save(str(FIX / f"py_{name}.npy"), ARRAYS[name])
    mx.save_gguf(str(FIX / "py_model.gguf"), GGUF_ARRAYS, GGUF_METADATA)
    meta = {}
    for key, v in GGUF_METADATA.items():
        meta[key] = record(v) if isinstance(v, mx.array) else v
    write("io", {
        "arrays": {n: record(a) for n, a in ARRAYS.items()},
        "metadata": METADATA,
        "npy": NPY,
        "gguf_arrays": {n: record(a) for n, a in GGUF_ARRAYS.items()},
        "gguf_metadata": meta,
    })


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and bool(mx.array_equal(a, b, equal_nan=True))


def check(d):
    """Loads the files tests/io_interop.rs wrote (the fixtures' contents, re-saved by Rust)."""
    bad = []
    arrays, meta = mx.load(f"{d}/rust_weights.safetensors", return_metadata=True)
    if set(arrays) != set(ARRAYS) or meta != METADATA:
        bad.append(f"safetensors keys/metadata: {sorted(arrays)} {meta}")
    bad += [f"safetensors {n}" for n in ARRAYS if n in arrays and not same(arrays[n], ARRAYS[n])]
    arrays, meta = mx.load(f"{d}/rust_writer.safetensors", return_metadata=True)
    if meta != METADATA or not all(same(arrays[n], ARRAYS[n]) for n in ARRAYS):
        bad.append("safetensors written through a Rust Write + Seek")
    for n in NPY:
        if not same(mx.load(f"{d}/rust_{n}.npy"), ARRAYS[n]):
            bad.append(f"npy {n}")
    arrays, meta = mx.load(f"{d}/rust_model.gguf", return_metadata=True)
    bad += [f"gguf {n}" for n, a in GGUF_ARRAYS.items() if not same(arrays[n], a)]
    for key, v in GGUF_METADATA.items():
        got = meta.get(key)
        ok = same(got, v) if isinstance(v, mx.array) else got == v
        if not ok:
            bad.append(f"gguf metadata {key}: {got!r}")
    if bad:
        print("MISMATCH: " + "; ".join(bad))
        sys.exit(1)
    print("python loaded every rust-written file: OK")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        generate()
