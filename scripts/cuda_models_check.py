"""Whose numbers move on a CUDA GPU: mlx_lm's own forward of golden test models on the GPU
against the CPU, against the CUDA record the tests compare with, and against itself fed one
token at a time, with the weights as loaded and as contiguous copies.

    python3 scripts/cuda_models_check.py qwen3_5_moe-hf deepseek_v2-hf ...

For a model whose Rust CUDA test fails while its CPU test passes bit for bit, this tells an
MLX CUDA difference (mlx_lm's GPU result far from its CPU result, or its prompt-long forward
far from its stepped one) from ours (mlx_lm's GPU result equal to the record). One line per
model: the worst absolute difference of last-position logits, float32.
"""
import importlib.util
import json
import sys
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_flatten, tree_map

ROOT = Path(__file__).resolve().parent.parent
# By path: scripts/golden/ holds a random.py that would shadow the standard library's.
_spec = importlib.util.spec_from_file_location(
    "weights_recipe", ROOT / "scripts" / "golden" / "weights_recipe.py")
weights_recipe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(weights_recipe)

from mlx_lm.models.cache import make_prompt_cache  # noqa: E402
from mlx_lm.utils import load_model  # noqa: E402


def last(logits):
    return logits[0, -1].astype(mx.float32)


def worst(a, b):
    return mx.abs(a - b).max().item()


def check(name):
    folder = ROOT / "tests" / "data" / "lm-models" / name
    weights_recipe.materialize(folder)
    record = json.loads((ROOT / "tests" / "data" / "cuda" / "lm" / f"{name}.json").read_text())
    arrays = mx.load(str(ROOT / "tests" / "data" / "cuda" / "lm" / f"{name}.safetensors"))
    prompt = mx.array(record["prompt"])[None]
    model, _ = load_model(folder)
    whole = last(model(prompt))
    mx.eval(whole)
    cache = make_prompt_cache(model)
    for i in range(prompt.shape[1]):
        out = model(prompt[:, i:i + 1], cache=cache)
        mx.eval(out)
    stepped = last(out)
    rec = arrays["logits"]
    rec = rec.reshape(-1, rec.shape[-1])[-1].astype(mx.float32)
    strided = [k for k, v in tree_flatten(model.parameters())
               if isinstance(v, mx.array) and not v.flags.row_contiguous] \
        if hasattr(mx.array, "flags") else []
    model.update(tree_map(lambda v: mx.contiguous(v) if isinstance(v, mx.array) else v,
                          model.parameters()))
    contiguous = last(model(prompt))
    with mx.stream(mx.cpu):
        cpu_model, _ = load_model(folder)
        cpu = last(cpu_model(prompt))
        mx.eval(cpu)
    print(f"{name}: gpu-vs-record {worst(whole, rec):.3g}  gpu-vs-cpu {worst(whole, cpu):.3g}  "
          f"stepped-vs-whole {worst(stepped, whole):.3g}  contiguous-vs-whole "
          f"{worst(contiguous, whole):.3g}  cpu-vs-record {worst(cpu, rec):.3g}"
          f"{'  strided: ' + ', '.join(strided[:4]) if strided else ''}", flush=True)


def main():
    print("MLX", mx.__version__, mx.default_device(), flush=True)
    for name in sys.argv[1:]:
        try:
            check(name)
        except Exception as e:  # one model's failure does not hide the others'
            print(f"{name}: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
