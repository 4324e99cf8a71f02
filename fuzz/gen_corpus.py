"""Writes the Python-made part of the fuzz seed corpus (fuzz/corpus/<target>/py-*).

Files written by Python MLX 0.32.2 and NumPy (what users load), plus hand-built files for
layouts neither writes: GGUF tensors quantized as Q4_0, Q4_1, Q8_0, Q2_K, Q4_K, Q6_K and
BF16 (MLX only writes float types), and safetensors F8_E4M3 / F8_E8M0 tensors.
Every file must load: fuzz/tests/bounded.rs checks that the whole corpus is accepted.

Run with the project's venv: .venv/bin/python fuzz/gen_corpus.py
"""

import json
import os
import struct
import sys
import tempfile

import mlx.core as mx
import mlx.nn as nn
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def out(target, name):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


def safetensors():
    arrays = {
        "w": mx.arange(12, dtype=mx.float32).reshape(3, 4) / 7,
        "b16": mx.array([1.5, -2.0, 3.25], dtype=mx.bfloat16),
        "h": mx.array([[0.5], [-0.25]], dtype=mx.float16),
        "ids": mx.array([1, 2, 3], dtype=mx.int64),
        "mask": mx.array([True, False]),
        "c": mx.array([1 + 2j], dtype=mx.complex64),
        "u": mx.array([7], dtype=mx.uint64),
        "scalar": mx.array(3.0),
        "empty": mx.zeros((0, 4)),
    }
    mx.save_safetensors(out("safetensors", "py-mlx-metadata.safetensors"), arrays,
                        metadata={"format": "mlx", "ünïcode": "ok"})
    mx.save_safetensors(out("safetensors", "py-mlx-one.safetensors"), {"x": mx.ones((2, 2))})

    # F8 tensors load as uint8; listed out of data order, header padded with spaces, as
    # other writers do.
    header = {
        "__metadata__": {"source": "hand"},
        "e4m3": {"dtype": "F8_E4M3", "shape": [2, 2], "data_offsets": [4, 8]},
        "e8m0": {"dtype": "F8_E8M0", "shape": [4], "data_offsets": [0, 4]},
        "i16": {"dtype": "I16", "shape": [2], "data_offsets": [8, 12]},
    }
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    data = bytes([127, 128, 1, 2]) + bytes([0x38, 0x40, 0xB8, 0x00]) + struct.pack("<hh", -5, 300)
    with open(out("safetensors", "py-hand-f8.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def npy():
    np.save(out("npy", "py-np-f32.npy"), np.arange(6, dtype=np.float32).reshape(2, 3))
    np.save(out("npy", "py-np-fortran.npy"), np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)))
    np.save(out("npy", "py-np-bigendian.npy"), np.arange(4, dtype=">i4"))
    np.save(out("npy", "py-np-bool-0d.npy"), np.array(True))
    np.save(out("npy", "py-np-empty.npy"), np.zeros((0, 3), dtype=np.float16))
    np.save(out("npy", "py-np-u64.npy"), np.array([1, 2**63], dtype=np.uint64))
    with open(out("npy", "py-np-v2.npy"), "wb") as f:
        np.lib.format.write_array(f, np.arange(3, dtype=np.int16), version=(2, 0))
    mx.save(out("npy", "py-mlx-f32.npy"), mx.arange(4, dtype=mx.float32))


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_file(kvs, tensors, alignment=32):
    """A GGUF v3 file; `tensors` are (name, dims in GGML order, type, data bytes)."""
    body = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, value in kvs:
        body += gguf_string(key) + struct.pack("<I", vtype) + value
    offset = 0
    infos, blobs = b"", b""
    for name, dims, ttype, data in tensors:
        infos += gguf_string(name) + struct.pack("<I", len(dims))
        infos += b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", ttype, offset)
        padded = data + b"\0" * (-len(data) % alignment)
        blobs += padded
        offset += len(padded)
    head = body + infos
    return head + b"\0" * (-len(head) % alignment) + blobs


def gguf():
    arrays = {"blk.0.attn_q.weight": mx.arange(8, dtype=mx.float32).reshape(2, 4),
              "h": mx.array([1.0, 2.0], dtype=mx.float16)}
    meta = {"general.architecture": "llama", "tokenizer.ggml.tokens": ["a", "b"],
            "llama.block_count": mx.array(1, dtype=mx.uint32),
            "v": mx.array([1.0, 2.5])}
    mx.save_gguf(out("gguf", "py-mlx.gguf"), arrays, meta)

    rng = np.random.default_rng(0)
    half = lambda x: np.float16(x).tobytes()
    q4_0 = b"".join(half(0.5) + rng.integers(0, 256, 16, dtype=np.uint8).tobytes() for _ in range(2))
    q4_1 = b"".join(half(0.25) + half(-1.0) + rng.integers(0, 256, 16, dtype=np.uint8).tobytes() for _ in range(2))
    q8_0 = b"".join(half(0.125) + rng.integers(-128, 128, 32, dtype=np.int8).tobytes() for _ in range(2))
    kvs = [("general.architecture", 8, gguf_string("llama")),
           ("general.alignment", 4, struct.pack("<I", 32)),
           ("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 2) + struct.pack("<ff", 0.5, -1.0)),
           ("flag", 7, b"\x01")]
    tensors = [("q4_0", [32, 2], 2, q4_0), ("q4_1", [64], 3, q4_1), ("q8_0", [32, 2], 8, q8_0)]
    with open(out("gguf", "py-hand-quantized.gguf"), "wb") as f:
        f.write(gguf_file(kvs, tensors))

    # Types gguflib converts to float16 (K-quants, bf16) and the plain integer types.
    k_block = lambda n: rng.integers(0, 256, n, dtype=np.uint8).tobytes()
    fix_scale = lambda block, at: block[:at] + half(0.01) + block[at + 2:]
    q2_k = fix_scale(fix_scale(k_block(82), 78), 80)
    q4_k = fix_scale(fix_scale(k_block(144), 0), 2)
    q6_k = fix_scale(k_block(210), 208)
    bf16 = np.array([1.0, -2.0, 0.5, 4.0], dtype=np.float32).view(np.uint32) >> 16
    tensors = [("q2_k", [256], 10, q2_k), ("q4_k", [256], 12, q4_k), ("q6_k", [256], 14, q6_k),
               ("bf16", [4], 30, bf16.astype(np.uint16).tobytes()),
               ("i8", [3], 24, np.array([1, -2, 3], dtype=np.int8).tobytes()),
               ("i16", [2], 25, np.array([-300, 300], dtype=np.int16).tobytes()),
               ("i32", [2, 1], 26, np.array([7, -7], dtype=np.int32).tobytes())]
    with open(out("gguf", "py-hand-converted.gguf"), "wb") as f:
        f.write(gguf_file([("general.architecture", 8, gguf_string("x"))], tensors))


def mlxfn():
    x = mx.array([[1.0, -2.0], [3.0, 4.0]])
    w = mx.array([[0.5, 1.5], [-1.0, 2.0]])
    mx.export_function(out("mlxfn", "py-matmul-constant.mlxfn"), lambda a: (a @ w).exp(), x)
    mx.export_function(out("mlxfn", "py-shapeless.mlxfn"), lambda a: mx.softmax(a, axis=-1), x,
                       shapeless=True)
    with mx.exporter(out("mlxfn", "py-two-traces.mlxfn"), lambda a: a.sum(axis=0) * 2) as exp:
        exp(x)
        exp(mx.ones((3, 5)))
    idx = mx.array([1, 0])
    mx.export_function(out("mlxfn", "py-take-where.mlxfn"),
                       lambda a, i: mx.where(a > 0, mx.take(a, i, axis=1), -a), x, idx)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.proj = nn.Linear(8, 8)


class Model(nn.Module):
    """The parameter names of the weights target's model (fuzz/src/targets/weights.rs)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.layers = [Block(), Block()]
        self.norm = nn.RMSNorm(8)
        self.head = nn.Linear(8, 5, bias=False)


def weights():
    mx.random.seed(0)
    model = Model()
    mx.eval(model.parameters())
    model.save_weights(out("weights", "py-model.safetensors"))
    model.set_dtype(mx.bfloat16)
    model.save_weights(out("weights", "py-model-bf16.safetensors"))


def main():
    if mx.__version__ != "0.32.2":
        sys.exit(f"expected MLX 0.32.2, found {mx.__version__}")
    safetensors()
    npy()
    gguf()
    mlxfn()
    weights()


if __name__ == "__main__":
    main()
