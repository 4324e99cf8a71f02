#!/usr/bin/env python3
"""How far a float32 prompt computed whole is from the same prompt fed one token at a time, on
MLX's default device, with MLX's TF32 setting as the environment gives it.

On a CUDA GPU MLX multiplies float32 matrices with TF32 tensor cores by default
(`MLX_ENABLE_TF32=1`: inputs rounded to 10-bit mantissas), but a one-row product takes a
matrix-vector kernel in full float32. So the whole prompt (rows = prompt length) and the
prompt fed token by token (one row a step, as a decode step or a prefill chunk of one) are
different computations there, where on the CPU they agree to float32 rounding. This measures
that gap per golden model, in mlx_lm itself, so the GPU suite's tolerances for paths that
change the number of rows can be argued from it.

Usage (on the GPU machine, after `scripts/gpu-suite run` or `golden` installed the wheel):
    python3 bench/lm/tf32_study.py lfm2 qwen2 phi3 ...        # TF32 as MLX defaults
    MLX_ENABLE_TF32=0 python3 bench/lm/tf32_study.py lfm2 ...  # full float32
Prints one JSON object per model: the largest difference of the prompt's last-position
log-probabilities, whole against token by token, and that position's greedy margin.
"""
import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "scripts" / "golden"))

import mlx.core as mx  # noqa: E402
from mlx_lm.models.cache import make_prompt_cache  # noqa: E402
from mlx_lm.utils import load_model  # noqa: E402

import weights_recipe  # noqa: E402


def logprobs(x):
    x = x.astype(mx.float32)
    return x - mx.logsumexp(x, axis=-1, keepdims=True)


def study(name):
    folder = ROOT / "tests" / "data" / "lm-models" / name
    weights_recipe.materialize(folder)
    model, _ = load_model(folder)
    # The prompt is the golden record's (the same on every device; the GPU run's transfers
    # carry only the CUDA records).
    records = [ROOT / "tests" / "data" / d / "lm" / f"{name}.json" for d in ("cuda", ".")]
    record = json.loads(next(r for r in records if r.exists()).read_text())
    prompt = mx.array(record["prompt"])[None]
    whole = logprobs(model(prompt)[0, -1])
    cache = make_prompt_cache(model)
    for i in range(prompt.shape[1]):
        out = model(prompt[:, i : i + 1], cache=cache)
    stepped = logprobs(out[0, -1])
    top2 = mx.sort(whole)[-2:]
    mx.eval(whole, stepped, top2)
    return {
        "model": name,
        "device": str(mx.default_device()),
        "MLX_ENABLE_TF32": os.environ.get("MLX_ENABLE_TF32", "unset (1)"),
        "max_abs_diff": mx.max(mx.abs(whole - stepped)).item(),
        "margin": (top2[1] - top2[0]).item(),
        "same_argmax": mx.argmax(whole).item() == mx.argmax(stepped).item(),
    }


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(json.dumps(study(name)), flush=True)
