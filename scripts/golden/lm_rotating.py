#!/usr/bin/env python3
"""Bounded cache and XTC reference data for mlx-lm: what mlx_lm 0.32.2 does with
`max_kv_size` (`make_prompt_cache(model, max_kv_size)`: a `RotatingKVCache(max_size,
keep=4)` per layer of a model without a `make_cache` of its own) and with XTC sampling
(`make_sampler(..., xtc_probability, xtc_threshold, xtc_special_tokens)`, its `apply_xtc`).

Writes `tests/data/[cuda/]lm/rotating.json`, `rotating.safetensors` (each case's
log-probabilities, `[steps, vocab]`, under `"<case>"`, and the sampler cases' logits) and
`prompt-cache-rotating-<case>.safetensors`:

- `own_cache_model_types`: the model types whose mlx_lm `Model` has a `make_cache` (which
  `make_prompt_cache` calls instead, ignoring `max_kv_size`).
- `generate`: seeded sampled tokens (temperature 1) and log-probabilities of `generate_step`
  with `max_kv_size` below the prompt and the generation together: prompts longer than the
  cache in one prefill chunk and in several (`prefill_step_size`), prompts shorter that the
  generation carries past the bound; float32, bfloat16 (gemma2's soft cap) and 4-bit models;
  and models whose own `make_cache` ignores the bound (llama, the hybrid qwen3_5). Some
  cases sample with XTC too.
- `sampler`: `make_sampler(temp, top_p, min_p, ..., top_k, xtc_probability, xtc_threshold,
  xtc_special_tokens)` drawn 64 times after `mx.random.seed(seed)` from fixed logits
  (float32 and bfloat16), the special tokens among the likely ones.
- `prompt_cache`: a bounded cache saved with `save_prompt_cache` after a prompt chunk longer
  than the bound, and mid-rotation (a chunk, then one-token steps), with the greedy tokens
  and log-probabilities that continue it.

Run: scripts/gen-golden lm_rotating (after lm, whose model directories it reads)
"""
import importlib
import json
import pathlib
import pkgutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE] + [str(HERE)]

import mlx.core as mx  # noqa: E402

import mlx_lm  # noqa: E402
import mlx_lm.models  # noqa: E402
from mlx_lm.generate import generate_step  # noqa: E402
from mlx_lm.models.cache import make_prompt_cache, save_prompt_cache  # noqa: E402
from mlx_lm.sample_utils import make_sampler  # noqa: E402
from common import load  # noqa: E402

import common  # noqa: E402
import weights_recipe  # noqa: E402
from lm_generate import prompt_ids  # noqa: E402

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"

MODELS = common.ROOT / "tests" / "data" / "lm-models"
OUT = common.DATA / "lm"
STEPS = 24
TEMP = 1.0

# (model, max_kv_size, prefill_step_size, xtc): xtc None or (probability, threshold).
GENERATE = [
    ("qwen3", 16, 2048, None),  # a 24-token prompt in one chunk past the bound
    ("qwen3", 16, 5, None),  # chunks of 5 across the bound
    ("qwen3", 30, 2048, None),  # the generation carries the cache past the bound
    ("qwen3", 7, 3, None),  # 3 rotating slots
    ("gemma", 12, 7, None),  # float32
    ("gemma", 20, 2048, (0.5, 0.1)),
    ("qwen2-4bit", 20, 2048, None),
    ("qwen2-4bit", 10, 4, (1.0, 0.05)),
    ("gemma2-bf16", 16, 6, None),  # soft-capped attention, bfloat16
    ("phi3", 14, 2048, None),
    ("qwen3_moe", 16, 9, None),
    # make_cache of their own: max_kv_size changes nothing
    ("smollm2-bf16", 16, 2048, None),
    ("qwen3_5", 16, 5, None),
]
SAMPLER = [
    # (dtype, seed, temp, top_p, min_p, top_k, xtc_probability, xtc_threshold)
    ("float32", 3, 1.0, 0.0, 0.0, 0, 0.5, 0.1),
    ("float32", 4, 0.7, 0.0, 0.0, 0, 1.0, 0.02),
    ("float32", 5, 1.0, 0.9, 0.05, 0, 0.7, 0.05),
    ("float32", 6, 1.0, 0.0, 0.0, 20, 0.8, 0.01),
    ("bfloat16", 7, 1.0, 0.0, 0.0, 0, 0.6, 0.1),
    ("bfloat16", 8, 0.9, 0.95, 0.0, 30, 1.0, 0.03),
]
SAMPLER_DRAWS = 64
# (model, max_kv_size, chunk, single steps)
PROMPT_CACHE = [("qwen3", 16, 20, 0), ("qwen3", 16, 18, 3), ("gemma", 12, 10, 5)]
CONTINUE = 12


def own_cache_model_types():
    own = []
    for info in pkgutil.iter_modules(mlx_lm.models.__path__):
        try:
            module = importlib.import_module(f"mlx_lm.models.{info.name}")
        except BaseException:  # an optional dependency (olmo's) missing: not a cache of its own
            continue
        model = getattr(module, "Model", None)
        if model is not None and hasattr(model, "make_cache"):
            own.append(info.name)
    return sorted(own)


def generate_case(name, max_kv_size, prefill_step_size, xtc):
    model, tokenizer = load(str(MODELS / name))
    prompt = prompt_ids(name)
    seed = sum(map(ord, name)) + max_kv_size + prefill_step_size
    key = f"{name}-kv{max_kv_size}-p{prefill_step_size}"
    record = {"model": name, "max_kv_size": max_kv_size, "prefill_step_size": prefill_step_size,
              "prompt": prompt.tolist(), "temp": TEMP, "seed": seed}
    sampler_args = {}
    if xtc is not None:
        special = tokenizer.encode("\n") + list(tokenizer.eos_token_ids)
        sampler_args = {"xtc_probability": xtc[0], "xtc_threshold": xtc[1],
                        "xtc_special_tokens": special}
        record.update(xtc_probability=xtc[0], xtc_threshold=xtc[1], xtc_special_tokens=special)
        key += f"-xtc{xtc[0]}"
    cache = make_prompt_cache(model, max_kv_size)
    record["classes"] = sorted({type(c).__name__ for c in cache})
    mx.random.seed(seed)
    tokens, logprobs = [], []
    for t, lp in generate_step(prompt, model, max_tokens=STEPS, prompt_cache=cache,
                               sampler=make_sampler(TEMP, **sampler_args),
                               prefill_step_size=prefill_step_size):
        tokens.append(int(t))
        logprobs.append(lp)
    record["key"] = key
    record["tokens"] = tokens
    record["offset"] = next(c.offset for c in cache if hasattr(c, "offset"))
    return key, record, mx.stack(logprobs)


def sampler_case(i, dtype, seed, temp, top_p, min_p, top_k, probability, threshold):
    logits = mx.random.normal((1, 96), key=mx.random.key(100 + i)) * 3
    logits = logits.astype(getattr(mx, dtype))
    logprobs = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
    special = mx.argsort(-logits[0])[:2].tolist()  # two of the likeliest: never excluded
    sampler = make_sampler(temp, top_p, min_p, 1, top_k, xtc_probability=probability,
                           xtc_threshold=threshold, xtc_special_tokens=special)
    mx.random.seed(seed)
    tokens = [sampler(logprobs).item() for _ in range(SAMPLER_DRAWS)]
    key = f"sampler-{i}"
    return key, {"key": key, "dtype": dtype, "seed": seed, "temp": temp, "top_p": top_p,
                 "min_p": min_p, "top_k": top_k, "xtc_probability": probability,
                 "xtc_threshold": threshold, "xtc_special_tokens": special,
                 "tokens": tokens}, logprobs


def prompt_cache_case(name, max_kv_size, chunk, singles):
    model, _ = load(str(MODELS / name))
    prompt = prompt_ids(name)
    cache = make_prompt_cache(model, max_kv_size)
    model(prompt[None, :chunk], cache=cache)
    for t in range(chunk, chunk + singles):
        model(prompt[None, t:t + 1], cache=cache)
    mx.eval([c.state for c in cache])
    state = cache[0].state
    key = f"{name}-kv{max_kv_size}-c{chunk}-s{singles}"
    path = OUT / f"prompt-cache-rotating-{key}.safetensors"
    save_prompt_cache(str(path), cache, {"model": name, "note": "rotating ✓"})
    held = chunk + singles
    tokens, logprobs = [], []
    for t, lp in generate_step(prompt[held:], model, prompt_cache=cache, max_tokens=CONTINUE):
        tokens.append(int(t))
        logprobs.append(lp)
    print(f"prompt cache {key}: buffer {state[0].shape[2]}, offset {state[2]}, idx {state[5]}")
    return key, {"key": key, "model": name, "max_kv_size": max_kv_size, "chunk": chunk,
                 "singles": singles, "prompt": prompt.tolist(), "file": path.name,
                 "buffer": state[0].shape[2], "idx": state[5], "tokens": tokens}, \
        mx.stack(logprobs)


def main():
    weights_recipe.materialize_all(MODELS)
    OUT.mkdir(parents=True, exist_ok=True)
    arrays = {}
    cases = []
    for case in GENERATE:
        key, record, logprobs = generate_case(*case)
        cases.append(record)
        arrays[key] = logprobs
        print(f"{key} {record['classes']}: {record['tokens']}")
    samplers = []
    for i, case in enumerate(SAMPLER):
        key, record, logprobs = sampler_case(i, *case)
        samplers.append(record)
        arrays[key] = logprobs
        print(f"{key}: {record['tokens']}")
    prompt_caches = []
    for case in PROMPT_CACHE:
        key, record, logprobs = prompt_cache_case(*case)
        prompt_caches.append(record)
        arrays[f"prompt-cache-{key}"] = logprobs
    data = {
        "mlx_version": mx.__version__,
        "mlx_lm_version": mlx_lm.__version__,
        "steps": STEPS,
        "own_cache_model_types": own_cache_model_types(),
        "generate": cases,
        "sampler": samplers,
        "prompt_cache": prompt_caches,
    }
    mx.save_safetensors(str(OUT / "rotating.safetensors"), arrays)
    (OUT / "rotating.json").write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {(OUT / 'rotating.json').relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
