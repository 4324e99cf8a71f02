"""mlx_lm's side of bench/lm/split.py: a llama-shaped model with random weights (mlx_lm's own
classes and initializers, in bfloat16), split tensor parallel by mlx_lm's `shard` when started
in a group, timed as bench/lm/mlx_lm_bench.py times `generate_step` (decode tok/s from the first
token to the last). One rank or several, started by examples/launch (`--backend nccl`):

    python3 bench/lm/split_mlx_lm.py CONFIG.json PROMPT.json [--max-tokens 128] [--reps 3]

Rank 0 prints one JSON line.
"""

import argparse
import json
import os
import time

import mlx.core as mx
from mlx.utils import tree_flatten
from mlx_lm.generate import generate_step
from mlx_lm.models import llama


def main():
    p = argparse.ArgumentParser()
    p.add_argument("config")
    p.add_argument("prompt")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    group = mx.distributed.init(backend="nccl" if "NCCL_PORT" in os.environ else "any")
    with open(a.config) as f:
        config = json.load(f)
    t = time.perf_counter()
    model = llama.Model(llama.ModelArgs.from_dict(config))  # lazy: nothing drawn yet
    model.set_dtype(mx.bfloat16)
    if group.size() > 1:
        model.shard(group)
    # A layer at a time: the whole model's float32 draws never live at once.
    for layer in model.layers:
        mx.eval(layer.parameters())
    mx.eval(model.parameters())
    load_s = time.perf_counter() - t
    weight_bytes = sum(v.nbytes for _, v in tree_flatten(model.parameters()))
    with open(a.prompt) as f:
        prompt = mx.array(json.load(f))
    runs = []
    for rep in range(a.reps + 1):
        mx.reset_peak_memory()
        t0 = time.perf_counter()
        t1 = None
        n = 0
        for _token, _ in generate_step(prompt, model, max_tokens=a.max_tokens if rep else 16):
            if n == 0:
                t1 = time.perf_counter()
            n += 1
        t2 = time.perf_counter()
        if rep:
            runs.append({"ttft_s": t1 - t0, "decode_tps": (n - 1) / (t2 - t1),
                         "peak_memory": mx.get_peak_memory()})
    decode = sorted(r["decode_tps"] for r in runs)[len(runs) // 2]
    if group.rank() == 0:
        print(json.dumps({"impl": "mlx_lm", "group": group.size(), "load_s": load_s,
                          "weight_bytes": weight_bytes, "median_decode_tps": decode,
                          "peak_memory": max(r["peak_memory"] for r in runs), "runs": runs}))


if __name__ == "__main__":
    main()
