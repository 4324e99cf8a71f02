#!/usr/bin/env python3
"""Quantized key/value cache reference data for mlx-lm: what mlx_lm 0.32.2's `generate_step`
does with `kv_bits`, `kv_group_size` and `quantized_kv_start` (its `QuantizedKVCache` and
`quantized_scaled_dot_product_attention`) on the models `lm.py` writes.

Writes `tests/data/[cuda/]lm/kv_quant.json`, `kv_quant.safetensors` (each case's
log-probabilities, `[steps, vocab]`, under `"<case>"`) and `prompt-cache-kv-quant-<name>.safetensors`:

- `generate`: seeded sampled tokens (temperature 1) and log-probabilities with 2..8 bits, group sizes 32/64,
  `quantized_kv_start` 0 (the cache is quantized after the prompt's prefill: the prefill
  attends in float, every step after in the quantized cache) and past the prompt (the switch
  happens mid-decode), for a bfloat16 llama (smollm2-bf16, head_dim 64), a float32 model and
  its 4-bit version (gemma, head_dim 32) and the hybrid Qwen3.5 (its key/value layers
  quantize, its recurrent layers stay), float and 4-bit, and Ministral 3 (its query scaling
  before the shared attention), float and 4-bit. (mistral's and qwen3's head_dim of 16
  has no group size MLX quantizes with.)
- `errors`: what mlx_lm refuses, with its message: a sliding-window model (llama3:
  `RotatingKVCache.to_quantized` raises), a group size that does not divide the head
  dimension (qwen3's 16), bits MLX does not have, an attention of its own that cannot read
  the quantized tuples (gemma2's soft cap).
- `prompt_cache`: a prompt prefix prefilled and quantized (`to_quantized`), saved with
  `save_prompt_cache` (QuantizedKVCache's state: nested tuples of the packed weights, scales
  and biases, then offset, group_size and bits), and the greedy tokens that continue it.

Run: scripts/gen-golden lm_kv_quant (after lm, whose model directories it reads)
"""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE] + [str(HERE)]

import mlx.core as mx  # noqa: E402

import mlx_lm  # noqa: E402
from mlx_lm.generate import generate_step, maybe_quantize_kv_cache  # noqa: E402
from mlx_lm.models.cache import make_prompt_cache, save_prompt_cache  # noqa: E402
from mlx_lm.sample_utils import make_sampler  # noqa: E402
from common import load  # noqa: E402

import common  # noqa: E402
import weights_recipe  # noqa: E402
from lm_generate import prompt_ids  # noqa: E402

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"

MODELS = common.ROOT / "tests" / "data" / "lm-models"
OUT = common.DATA / "lm"
STEPS = 12
# Sampled (seeded) rather than greedy: the random models' greedy tokens repeat one token, and
# sampled ones feed the cache varied positions.
TEMP = 1.0
# Positions after the prompt at which a "late" case switches: the prompt's length plus this.
LATE = 3

# (model, bits, group_size, start): start "late" means the prompt's length + LATE.
GENERATE = [
    # llama (SmolLM2-shaped: bfloat16, head_dim 64, 9 query heads over 3 key/value heads)
    ("smollm2-bf16", 4, 64, 0),
    ("smollm2-bf16", 8, 32, 0),
    ("smollm2-bf16", 4, 32, "late"),
    ("smollm2-bf16", 8, 64, "late"),
    ("smollm2-bf16", 2, 64, 0),
    ("smollm2-bf16", 3, 32, 0),
    ("smollm2-bf16", 5, 64, 0),
    ("smollm2-bf16", 6, 32, "late"),
    # float32, head_dim 32, and its 4-bit version
    ("gemma", 4, 32, 0),
    ("gemma", 8, 32, "late"),
    ("gemma-4bit", 4, 32, 0),
    ("gemma-4bit", 8, 32, "late"),
    # hybrid: gated-delta-net layers beside full attention (qk-norm, output gate)
    ("qwen3_5", 4, 32, 0),
    ("qwen3_5", 8, 32, "late"),
    ("qwen3_5-4bit", 4, 32, 0),
    # the query scaling of Ministral 3 (its own rope, then the shared attention), and 4-bit
    ("ministral3", 4, 32, 0),
    ("ministral3-4bit", 8, 32, "late"),
]
ERRORS = [
    ("llama3", 4, 32, 0),  # sliding-window layers: RotatingKVCache quantization NYI
    ("qwen3", 4, 32, 0),  # head_dim 16: no group of 32
    ("gemma", 4, 64, 0),  # head_dim 32: no group of 64
    ("smollm2-bf16", 7, 64, 0),  # no 7-bit quantization in MLX
    ("gemma2-bf16", 4, 32, 0),  # soft-capped attention of its own multiplies the cache's tuple
]
PROMPT_CACHE = [("smollm2-bf16", 16, 4, 64), ("qwen3_5", 16, 8, 32)]
# MLX 0.32.2's CUDA `quantized_matmul` has kernels for some shapes only: mlx_lm's quantized
# attention over 9 keys with head dim 64, 4 bits in groups of 64, raised "[quantized_matmul]
# No implementation for problem shape: 1x24x64x9, ..." on an H200. Such a case is recorded
# under "cuda_cannot" with MLX's message, in place of numbers.
CUDA_CANNOT = "No implementation for problem shape"


def cuda_cannot(key, run):
    """`run()`, or on a CUDA GPU `(key, MLX's message)` when MLX has no kernel for a shape."""
    try:
        return run(), None
    except RuntimeError as e:
        if common.device_folder() != "cuda" or CUDA_CANNOT not in str(e):
            raise
        print(f"{key}: no CUDA record ({e})")
        return None, {"key": key, "error": str(e)}


def generate_case(name, bits, group_size, start):
    model, _ = load(str(MODELS / name))
    prompt = prompt_ids(name)
    start = len(prompt) + LATE if start == "late" else start
    seed = sum(map(ord, name)) + bits + group_size
    mx.random.seed(seed)
    tokens, logprobs = [], []
    for t, lp in generate_step(prompt, model, max_tokens=STEPS, sampler=make_sampler(TEMP),
                               kv_bits=bits, kv_group_size=group_size,
                               quantized_kv_start=start):
        tokens.append(int(t))
        logprobs.append(lp)
    key = f"{name}-b{bits}-g{group_size}-s{start}"
    return key, {"model": name, "bits": bits, "group_size": group_size,
                 "quantized_kv_start": start, "prompt": prompt.tolist(), "temp": TEMP,
                 "seed": seed, "tokens": tokens}, mx.stack(logprobs)


def error_case(name, bits, group_size, start):
    model, _ = load(str(MODELS / name))
    prompt = prompt_ids(name)
    try:
        for _ in generate_step(prompt, model, max_tokens=2, kv_bits=bits,
                               kv_group_size=group_size, quantized_kv_start=start):
            pass
    except Exception as e:  # mlx_lm's own refusal, recorded
        return {"model": name, "bits": bits, "group_size": group_size,
                "quantized_kv_start": start, "error": f"{type(e).__name__}: {e}"}
    raise AssertionError(f"{name} with kv_bits {bits}, group {group_size} did not fail")


def prompt_cache_case(name, prefix, bits, group_size):
    model, _ = load(str(MODELS / name))
    prompt = prompt_ids(name)
    cache = make_prompt_cache(model)
    model(prompt[None, :prefix], cache=cache)
    maybe_quantize_kv_cache(cache, 0, group_size, bits)
    mx.eval([c.state for c in cache])
    path = OUT / f"prompt-cache-kv-quant-{name}.safetensors"
    save_prompt_cache(str(path), cache, {"model": name, "note": "quantized ✓"})
    classes = [type(c).__name__ for c in cache]
    tokens = []
    for t, _ in generate_step(prompt[prefix:], model, prompt_cache=cache, max_tokens=STEPS,
                              kv_bits=bits, kv_group_size=group_size, quantized_kv_start=0):
        tokens.append(int(t))
    print(f"prompt cache {name}: {classes} {tokens}")
    return {"model": name, "prefix": prefix, "bits": bits, "group_size": group_size,
            "prompt": prompt.tolist(), "file": path.name, "classes": classes,
            "tokens": tokens}


def main():
    weights_recipe.materialize_all(MODELS)
    OUT.mkdir(parents=True, exist_ok=True)
    cases, arrays, cannot = [], {}, []
    for case in GENERATE:
        done, refused = cuda_cannot(f"{case[0]}-b{case[1]}-g{case[2]}-s{case[3]}",
                                    lambda: generate_case(*case))
        if refused:
            cannot.append(refused)
            continue
        key, record, logprobs = done
        record["key"] = key
        cases.append(record)
        arrays[key] = logprobs
        print(f"{key}: {record['tokens']}")
    prompt_cache = []
    for c in PROMPT_CACHE:
        done, refused = cuda_cannot(f"prompt-cache-{c[0]}-b{c[2]}-g{c[3]}",
                                    lambda: prompt_cache_case(*c))
        if refused:
            cannot.append(refused)
        else:
            prompt_cache.append(done)
    errors = [error_case(*case) for case in ERRORS]
    for e in errors:
        print(f"error {e['model']} bits {e['bits']} group {e['group_size']}: {e['error']}")
    data = {
        "mlx_version": mx.__version__,
        "mlx_lm_version": mlx_lm.__version__,
        "steps": STEPS,
        "generate": cases,
        "errors": errors,
        "prompt_cache": prompt_cache,
    }
    if cannot:
        data["cuda_cannot"] = cannot
    mx.save_safetensors(str(OUT / "kv_quant.safetensors"), arrays)
    (OUT / "kv_quant.json").write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {(OUT / 'kv_quant.json').relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
