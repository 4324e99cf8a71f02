#!/usr/bin/env python3
"""Prefill and decode tokens/s of Python mlx_lm 0.32.2 (the side of bench/lm/run.sh that
examples/lm_bench.rs mirrors).

    bench/lm/mlx_lm_bench.py --write-prompt FILE --prompt-len P [--vocab V] [--seed S]
    bench/lm/mlx_lm_bench.py --model DIR --prompt FILE --max-tokens N [--reps R] [--warmup W]
        [--warmup-tokens N]

The first form writes P random token ids (a JSON list) for both sides to read. The second
loads the model with `mlx_lm.load` and runs `mlx_lm.generate.generate_step` (greedy, its
defaults, as `stream_generate` runs it) W times unmeasured (of --warmup-tokens tokens), then R times measured, and prints
JSON. Each run is timed as examples/lm_bench.rs times it:

  prefill tok/s = P / (time from calling generate_step to the first token)
                  (mlx_lm's prompt_tps: the prompt, prefilled, and the first decode step)
  decode tok/s  = (N - 1) / (time from the first token to the N-th)
                  (the N - 1 tokens after the first; `stream_generate` reports
                  N / that time as its generation_tps, so `stream_generate_tps` is also given)
"""
import argparse
import json
import pathlib
import platform
import statistics
import time

import mlx.core as mx
import mlx_lm
from mlx_lm.generate import generate_step

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"


def write_prompt(path, length, vocab, seed):
    ids = mx.random.randint(0, vocab, (length,), key=mx.random.key(seed)).tolist()
    pathlib.Path(path).write_text(json.dumps(ids) + "\n")


def run_once(model, prompt, max_tokens):
    start = time.perf_counter()
    stamps = []
    tokens = []
    for token, _ in generate_step(prompt, model, max_tokens=max_tokens):
        stamps.append(time.perf_counter())
        tokens.append(token)
    # generate_step queues one step past the last token: let it finish before the next run.
    mx.synchronize()
    assert len(tokens) == max_tokens, (len(tokens), max_tokens)
    first, last = stamps[0] - start, stamps[-1] - stamps[0]
    return {
        "prefill_s": first,
        "decode_s": last,
        "prefill_tps": prompt.size / first,
        "decode_tps": (max_tokens - 1) / last,
        "stream_generate_tps": max_tokens / last,
        "tokens": tokens,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--write-prompt")
    p.add_argument("--prompt-len", type=int, default=512)
    p.add_argument("--vocab", type=int, default=151936)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model")
    p.add_argument("--prompt")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--warmup-tokens", type=int, help="tokens per warm-up run (default: N)")
    a = p.parse_args()
    if a.write_prompt:
        write_prompt(a.write_prompt, a.prompt_len, a.vocab, a.seed)
        return
    if not (a.model and a.prompt):
        p.error("--model and --prompt (or --write-prompt)")

    t = time.perf_counter()
    model, _ = mlx_lm.load(a.model)
    load_s = time.perf_counter() - t
    prompt = mx.array(json.loads(pathlib.Path(a.prompt).read_text()), dtype=mx.uint32)
    for _ in range(a.warmup):
        run_once(model, prompt, a.warmup_tokens or a.max_tokens)
    runs = [run_once(model, prompt, a.max_tokens) for _ in range(a.reps)]
    tokens = runs[0].pop("tokens")
    for r in runs[1:]:
        assert r.pop("tokens") == tokens, "greedy tokens differ between runs"
    print(json.dumps({
        "impl": "mlx_lm",
        "mlx_version": mx.__version__,
        "mlx_lm_version": mlx_lm.__version__,
        "python": platform.python_version(),
        "device": str(mx.default_device()),
        "dtype": str(next(iter(model.parameters()["model"]["embed_tokens"].values())).dtype),
        "load_s": load_s,
        "prompt_tokens": int(prompt.size),
        "generation_tokens": a.max_tokens,
        "warmup": a.warmup,
        "warmup_tokens": a.warmup_tokens or a.max_tokens,
        "median_prefill_tps": statistics.median(r["prefill_tps"] for r in runs),
        "median_decode_tps": statistics.median(r["decode_tps"] for r in runs),
        "peak_memory": mx.get_peak_memory(),
        "first_tokens": tokens[:8],
        "runs": runs,
    }))


if __name__ == "__main__":
    main()
