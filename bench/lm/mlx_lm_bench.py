#!/usr/bin/env python3
"""Prefill and decode tokens/s of Python mlx_lm 0.32.2 (the side of bench/lm/run.sh and
bench/lm/suite.py that examples/lm_bench.rs mirrors).

    bench/lm/mlx_lm_bench.py --write-prompt FILE --prompt-len P [--batch B] [--vocab V] [--seed S]
    bench/lm/mlx_lm_bench.py --model DIR --prompt FILE --max-tokens N [--reps R] [--warmup W]
        [--warmup-tokens N] [--draft-model DIR [--num-draft-tokens K]]
    bench/lm/mlx_lm_bench.py --model DIR --prompt FILE --breakdown STEPS
    bench/lm/mlx_lm_bench.py --bandwidth GIB

The first form writes P random token ids (a JSON list; with --batch, a list of B such lists)
for both sides to read. The second loads the model with `mlx_lm.load` and runs
`mlx_lm.generate.generate_step` (a list; greedy, its defaults, as `stream_generate` runs it)
or mlx_lm's `BatchGenerator` (a list of lists, as `batch_generate` runs it) W times unmeasured
(of --warmup-tokens tokens), then R times measured, and prints JSON. Each run is timed as
examples/lm_bench.rs times it:

  time to first token: from the call to the first token (the prompt prefilled and the first
                  decode step; mlx_lm's prompt_tps); prefill tok/s = B * P / it
  decode tok/s  = B * (N - 1) / (time from the first token to the N-th)
                  (the N - 1 tokens after the first; `stream_generate` reports
                  N / that time as its generation_tps, so `stream_generate_tps` is also given)

With --draft-model, each run is mlx_lm's `speculative_generate_step` (a batch of one), as
`stream_generate(..., draft_model=)` runs it, timed the same way; the JSON adds how many
generated tokens came from the draft (`from_draft`), as examples/lm_bench.rs reports them.

The third splits a decode step of a batch of one as examples/lm_bench.rs --breakdown does:
mlx_lm's step built op by op in Python (host time), then evaluated synchronously; the
pipelined per-token time of generate_step; the primitives of one step's graph; MLX's cost per
primitive on a chain of one-element adds. The fourth measures the device's memory bandwidth:
a sum over GIB GiB of bfloat16 (read) and a copy (read and write), medians of 10.
"""
import argparse
import json
import pathlib
import platform
import statistics
import sys
import time

import io
import collections

import mlx.core as mx
import mlx_lm
from mlx_lm.generate import BatchGenerator, generate_step, speculative_generate_step
from mlx_lm.models.cache import make_prompt_cache
from mlx.utils import tree_flatten

from tokens import common_prefix  # bench/lm/tokens.py, beside this script

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts" / "golden"))
import mlx_lm_compat  # noqa: E402,F401  (mlx_lm 0.32.2 on MLX 0.32.2: quantized experts)

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"


def write_prompt(path, length, vocab, seed, batch):
    ids = mx.random.randint(0, vocab, (batch or 1, length), key=mx.random.key(seed)).tolist()
    pathlib.Path(path).write_text(json.dumps(ids if batch else ids[0]) + "\n")


def run_batch(model, prompts, max_tokens):
    """One batch generation as `batch_generate` runs it (no stop tokens: every sequence
    generates max_tokens)."""
    start = time.perf_counter()
    gen = BatchGenerator(model, max_tokens=max_tokens)
    gen.insert(prompts, [max_tokens] * len(prompts))
    stamps = []
    tokens = [[] for _ in prompts]
    while responses := gen.next_generated():
        stamps.append(time.perf_counter())
        for r in responses:
            tokens[r.uid].append(r.token)
    gen.close()
    mx.synchronize()
    assert len(stamps) == max_tokens, (len(stamps), max_tokens)
    first, last = stamps[0] - start, stamps[-1] - stamps[0]
    n = len(prompts)
    return {
        "ttft_s": first,
        "decode_s": last,
        "prefill_tps": n * len(prompts[0]) / first,
        "decode_tps": n * (max_tokens - 1) / last,
        "peak_memory": mx.get_peak_memory(),
        "token_ms": percentiles(stamps),
        "tokens": tokens,
    }


def timed(steps, prompt, max_tokens):
    """Runs a generator of `(token, logprobs[, from_draft])` from its first call, timing each
    token as it comes."""
    start = time.perf_counter()
    stamps, tokens, accepted = [], [], 0
    for token, _, *from_draft in steps:
        stamps.append(time.perf_counter())
        tokens.append(token)
        accepted += bool(from_draft and from_draft[0])
    # generate_step queues one step past the last token: let it finish before the next run.
    mx.synchronize()
    assert len(tokens) == max_tokens, (len(tokens), max_tokens)
    first, last = stamps[0] - start, stamps[-1] - stamps[0]
    return {
        "ttft_s": first,
        "decode_s": last,
        "prefill_tps": prompt.size / first,
        "decode_tps": (max_tokens - 1) / last,
        "stream_generate_tps": max_tokens / last,
        "accepted_draft_tokens": accepted,
        "peak_memory": mx.get_peak_memory(),
        "token_ms": percentiles(stamps),
        "tokens": [tokens],
    }


def run_once(model, prompt, max_tokens):
    return timed(generate_step(prompt, model, max_tokens=max_tokens), prompt, max_tokens)


def run_speculative(model, draft, prompt, max_tokens, num_draft):
    steps = speculative_generate_step(prompt, model, draft, num_draft_tokens=num_draft,
                                      max_tokens=max_tokens)
    return timed(steps, prompt, max_tokens)


def percentiles(stamps):
    """p10, p50, p90 and max of the milliseconds between consecutive tokens: where a mean
    decode rate hides its outliers (examples/lm_bench.rs reports the same)."""
    xs = sorted((b - a) * 1e3 for a, b in zip(stamps, stamps[1:]))
    at = lambda q: xs[round((len(xs) - 1) * q)] if xs else None
    return {"p10": at(0.1), "p50": at(0.5), "p90": at(0.9), "max": xs[-1] if xs else None}


def primitives(*outputs):
    f = io.StringIO()
    mx.export_to_dot(f, *outputs)
    kinds = collections.Counter(
        line.split('label ="')[1].split('"')[0]
        for line in f.getvalue().splitlines() if "shape=rectangle" in line)
    return dict(sorted(kinds.items()))


def us(a, b):
    return (b - a) * 1e6


def breakdown(model, prompt, steps):
    # Eager, synchronous: mlx_lm's step (`generate_step._step` without processors, greedy).
    cache = make_prompt_cache(model)
    model(prompt[None, :-1], cache=cache)
    mx.eval([c.state for c in cache])
    y = prompt[-1:]
    build, run, kinds = [], [], {}
    for i in range(steps):
        t0 = time.perf_counter()
        logits = model(y[None], cache=cache)[:, -1, :]
        logprobs = logits - mx.logsumexp(logits, keepdims=True)
        y = mx.argmax(logprobs, axis=-1)
        t1 = time.perf_counter()
        if i == 0:
            kinds = primitives(y)
        t2 = time.perf_counter()
        mx.eval(y, logprobs)
        t3 = time.perf_counter()
        build.append(us(t0, t1))
        run.append(us(t2, t3))
    # Pipelined: generate_step itself.
    stamps = [time.perf_counter() for _ in generate_step(prompt, model, max_tokens=steps)]
    mx.synchronize()
    per_token = [us(a, b) for a, b in zip(stamps, stamps[1:])]
    chain, dispatch = 2000, []
    for _ in range(5):
        x = mx.array([0.0])
        mx.eval(x)
        t0 = time.perf_counter()
        for _ in range(chain):
            x = x + 1.0
        t1 = time.perf_counter()
        mx.eval(x)
        t2 = time.perf_counter()
        dispatch.append((us(t0, t1) / chain, us(t1, t2) / chain))
    return {
        "impl": "mlx_lm",
        "mlx_version": mx.__version__,
        "mlx_lm_version": mlx_lm.__version__,
        "device": str(mx.default_device()),
        "prompt_tokens": int(prompt.size),
        "steps": steps,
        "eager": {"build_us": statistics.median(build), "eval_us": statistics.median(run)},
        "pipelined_us_per_token": statistics.median(per_token),
        "primitives": {"eager": sum(kinds.values()), "eager_kinds": kinds},
        "chain_build_us_per_op": statistics.median(d[0] for d in dispatch),
        "dispatch_us_per_primitive": statistics.median(d[1] for d in dispatch),
        "caches": [type(c).__name__ for c in make_prompt_cache(model)],
    }


def bandwidth(gib):
    n = int(gib * 2**30) // 2
    x = mx.ones((n,), dtype=mx.bfloat16)
    mx.eval(x)
    out = {}
    for name, fn, traffic in (("sum", lambda: mx.sum(x), 2 * n), ("copy", lambda: x + 1, 4 * n)):
        times = []
        for i in range(12):
            y = fn()
            t0 = time.perf_counter()
            mx.eval(y)
            t1 = time.perf_counter()
            if i >= 2:
                times.append(t1 - t0)
            del y
        out[f"{name}_gb_per_s"] = traffic / statistics.median(times) / 1e9
    return {"device": str(mx.default_device()), "bytes": 2 * n, **out}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--write-prompt")
    p.add_argument("--batch", type=int, help="--write-prompt: a batch of B prompts")
    p.add_argument("--breakdown", type=int, metavar="STEPS")
    p.add_argument("--bandwidth", type=float, metavar="GIB")
    p.add_argument("--prompt-len", type=int, default=512)
    p.add_argument("--vocab", type=int, default=151936)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model")
    p.add_argument("--prompt")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--warmup-tokens", type=int, help="tokens per warm-up run (default: N)")
    p.add_argument("--draft-model", help="speculative decoding with this draft (batch of one)")
    p.add_argument("--num-draft-tokens", type=int, default=3)
    a = p.parse_args()
    if a.write_prompt:
        write_prompt(a.write_prompt, a.prompt_len, a.vocab, a.seed, a.batch)
        return
    if a.bandwidth:
        print(json.dumps(bandwidth(a.bandwidth)))
        return
    if not (a.model and a.prompt):
        p.error("--model and --prompt (or --write-prompt)")

    t = time.perf_counter()
    model, _ = mlx_lm.load(a.model)
    load_s = time.perf_counter() - t
    weight_bytes = sum(v.nbytes for _, v in tree_flatten(model.parameters()))
    ids = json.loads(pathlib.Path(a.prompt).read_text())
    batched = isinstance(ids[0], list)
    if a.breakdown:
        prompt = mx.array(ids[0] if batched else ids, dtype=mx.uint32)
        print(json.dumps({**breakdown(model, prompt, a.breakdown), "weight_bytes": weight_bytes}))
        return
    draft = mlx_lm.load(a.draft_model)[0] if a.draft_model else None
    if draft is not None:
        if batched:
            p.error("--draft-model runs a batch of one only")
        prompt = mx.array(ids, dtype=mx.uint32)

        def once(n):
            return run_speculative(model, draft, prompt, n, a.num_draft_tokens)
    elif batched:
        prompts = ids

        def once(n):
            return run_batch(model, prompts, n)
    else:
        prompt = mx.array(ids, dtype=mx.uint32)

        def once(n):
            return run_once(model, prompt, n)
    for _ in range(a.warmup):
        once(a.warmup_tokens or a.max_tokens)
    mx.reset_peak_memory()
    runs = [once(a.max_tokens) for _ in range(a.reps)]
    tokens = runs[0].pop("tokens")
    # A GPU's reductions need not be deterministic and a random-weight model has near-ties:
    # greedy runs may part ways. Reported (tokens each later run shares with the first, for
    # its worst sequence), not fatal.
    agree = [common_prefix(tokens, r.pop("tokens")) for r in runs[1:]]
    print(json.dumps({
        "impl": "mlx_lm",
        "mlx_version": mx.__version__,
        "mlx_lm_version": mlx_lm.__version__,
        "python": platform.python_version(),
        "device": str(mx.default_device()),
        # The first parameter's (the embedding's, whatever the stack names it).
        "dtype": str(tree_flatten(model.parameters())[0][1].dtype),
        "load_s": load_s,
        "weight_bytes": weight_bytes,
        "batch": len(ids) if batched else 1,
        "prompt_tokens": len(ids[0]) if batched else len(ids),
        "generation_tokens": a.max_tokens,
        "warmup": a.warmup,
        "warmup_tokens": a.warmup_tokens or a.max_tokens,
        "median_prefill_tps": statistics.median(r["prefill_tps"] for r in runs),
        "median_decode_tps": statistics.median(r["decode_tps"] for r in runs),
        "median_ttft_s": statistics.median(r["ttft_s"] for r in runs),
        "draft_model": a.draft_model,
        "num_draft_tokens": a.num_draft_tokens if draft is not None else None,
        "median_accepted_draft_tokens": (
            statistics.median(r["accepted_draft_tokens"] for r in runs)
            if draft is not None else None),
        "peak_memory": max(r["peak_memory"] for r in runs),
        "runs_agree_tokens": agree,
        "first_tokens": [t[:8] for t in tokens],
        "tokens": tokens,
        "runs": runs,
    }))


if __name__ == "__main__":
    main()
