"""What differs on a CUDA GPU where the CPU is bit for bit: mlx_lm 0.32.2's own models whose
tests failed on an H200 (2026-11-29) in ways TF32 does not explain.

- baichuan_m1: our prompt logits 3.4 from mlx_lm's CUDA record (every logit), its head scaled
  by 4 gave logits 0.17 from the unscaled one (normalized at load, the same on the CPU), and
  mlx_lm's prompt whole against token by token was 4.1e-2 apart with TF32 off.
- bailing_moe_linear-tied and bailing_hybrid: one model, the same prompt twice, other tokens
  from the first.

For each model it prints, on the default device (the GPU there): the largest difference
between two forwards of one loaded model, between two loads, and against the CPU; for
baichuan_m1 the normalized head's rows against the CPU's and the attention of its head
dimensions (8 and 16) against the CPU's. Run on the GPU machine after `scripts/gpu-suite
setup` (e.g. inside a `golden` call's Python): `python3 scripts/cuda_probe.py`.
"""

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(HERE))

import mlx.core as mx  # noqa: E402

import common  # noqa: E402
import weights_recipe  # noqa: E402
from lm_generate import prompt_ids  # noqa: E402

MODELS = common.ROOT / "tests" / "data" / "lm-models"
NAMES = ["baichuan_m1", "baichuan_m1-global", "bailing_moe_linear-tied", "bailing_hybrid", "qwen3"]


def diff(a, b):
    return mx.max(mx.abs(a.astype(mx.float32) - b.astype(mx.float32))).item()


def forward(name, stream=None):
    model = common.load(str(MODELS / name))[0]
    prompt = prompt_ids(name)[None]
    with mx.stream(stream or mx.default_stream(mx.default_device())):
        out = [model(prompt) for _ in range(2)]
        mx.eval(out)
    return model, out


def main():
    print("device", mx.default_device(), "mlx", mx.__version__)
    for name in NAMES:
        weights_recipe.materialize(MODELS / name)
        model, (a, b) = forward(name)
        _, (c, _) = forward(name)
        _, (cpu, _) = forward(name, mx.cpu)
        print(f"{name}: two forwards {diff(a, b):.3g}, two loads {diff(a, c):.3g}, "
              f"against the CPU {diff(a, cpu):.3g}")
        if name.startswith("baichuan_m1"):
            w = model.lm_head.weight
            print(f"  head rows' norms: {mx.min(mx.linalg.norm(w, axis=-1)).item():.6f} to "
                  f"{mx.max(mx.linalg.norm(w, axis=-1)).item():.6f}")
            raw = mx.load(str(MODELS / name / "model.safetensors"))["lm_head.weight"]
            raw = raw.astype(mx.float32)
            gpu = mx.linalg.norm(raw, axis=-1, keepdims=True)
            cpu_norm = mx.linalg.norm(raw, axis=-1, keepdims=True, stream=mx.cpu)
            print(f"  the head's norms, GPU against CPU: {diff(gpu, cpu_norm):.3g}")
    for d in (8, 16):
        key = mx.random.key(d)
        q, k, v = (mx.random.normal((1, 4, 30, d), key=kk) for kk in mx.random.split(key, 3))
        mask = mx.tril(mx.ones((30, 30), dtype=mx.bool_))
        gpu = mx.fast.scaled_dot_product_attention(q, k, v, scale=d**-0.5, mask=mask)
        cpu = mx.fast.scaled_dot_product_attention(q, k, v, scale=d**-0.5, mask=mask,
                                                   stream=mx.cpu)
        print(f"attention, head dim {d}, 30 positions: GPU against CPU {diff(gpu, cpu):.3g}")


if __name__ == "__main__":
    main()
