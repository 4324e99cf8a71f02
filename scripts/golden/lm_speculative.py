#!/usr/bin/env python3
"""Speculative decoding reference data for mlx-lm: mlx_lm 0.32.2's
`speculative_generate_step` (what `stream_generate(..., draft_model=...)` and
`mlx_lm.generate --draft-model` run) on the model directories `lm.py` writes. Every golden
model shares one tokenizer and its vocabulary of 384, so any two pair up as target and draft.

Writes `tests/data/[cuda/]lm/speculative.json` (per case: the prompt, the emitted tokens,
their `from_draft` flags, and the plain greedy tokens of the target) and
`tests/data/[cuda/]lm/speculative.safetensors` (`case<i>`: the log-probabilities each token
was drawn from, `[tokens, vocab]`).

The pairs: a float target with its own 4-bit quantization as the draft (they mostly agree:
long accepted runs), the 4-bit target with the float draft, and a target with an unrelated
draft (qwen2 for qwen3: mostly rejected); greedy and seeded sampling; 1, 2 and 4 draft
tokens; max_tokens not a multiple of the round so the last round drafts fewer.

Run: scripts/gen-golden lm_speculative (after lm, whose model directories it reads)
"""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE] + [str(HERE)]

import mlx.core as mx  # noqa: E402

import mlx_lm  # noqa: E402
from mlx_lm.generate import generate_step, speculative_generate_step  # noqa: E402
from mlx_lm.sample_utils import make_sampler  # noqa: E402

import common  # noqa: E402
import weights_recipe  # noqa: E402
from lm_generate import prompt_ids  # noqa: E402

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"

MODELS = common.ROOT / "tests" / "data" / "lm-models"
OUT = common.DATA / "lm"
MAX_TOKENS = 23

PAIRS = [("qwen3", "qwen3-4bit"), ("qwen3-4bit", "qwen3"), ("qwen3", "qwen2")]
SAMPLERS = [{"temp": 0.0, "seed": 0}, {"temp": 0.05, "seed": 5},
            {"temp": 0.1, "top_p": 0.9, "seed": 9}]


def main():
    for name in {n for pair in PAIRS for n in pair}:
        weights_recipe.materialize(MODELS / name)
    models = {}

    def model(name):
        if name not in models:
            models[name] = common.load(str(MODELS / name))[0]
        return models[name]

    cases, arrays = [], {}
    for target, draft in PAIRS:
        prompt = prompt_ids(target)
        plain = [t for t, _ in generate_step(prompt, model(target), max_tokens=MAX_TOKENS)]
        for s in SAMPLERS:
            for k in [1, 2, 4]:
                sampler = make_sampler(s["temp"], s.get("top_p", 0.0))
                mx.random.seed(s["seed"])
                out = list(speculative_generate_step(
                    prompt, model(target), model(draft), num_draft_tokens=k,
                    max_tokens=MAX_TOKENS, sampler=sampler))
                tokens = [int(t) for t, _, _ in out]
                flags = [bool(f) for _, _, f in out]
                # On the CPU greedy speculative decoding is plain greedy decoding. On a CUDA
                # GPU the verify pass multiplies k + 1 rows in TF32 where the plain step
                # multiplies one in float32 (docs/cuda.md), and a close pick can flip (mlx_lm
                # itself, qwen3 <- qwen3-4bit, k 1, on an H200): recorded, not asserted.
                if s["temp"] == 0.0 and common.device_folder() != "cuda":
                    assert tokens == plain, (target, draft, k)
                arrays[f"case{len(cases)}"] = mx.stack([lp for _, lp, _ in out])
                cases.append({"target": target, "draft": draft, "num_draft_tokens": k,
                              **s, "max_tokens": MAX_TOKENS, "prompt": prompt.tolist(),
                              "tokens": tokens, "from_draft": flags, "plain_greedy": plain,
                              "equals_plain_greedy": tokens == plain})
                print(f"{target} <- {draft} k={k} {s}: accepted {sum(flags)}/{len(flags)}")
    OUT.mkdir(parents=True, exist_ok=True)
    record = {"mlx_lm_version": mlx_lm.__version__, "cases": cases}
    (OUT / "speculative.json").write_text(json.dumps(record, indent=1) + "\n")
    mx.save_safetensors(str(OUT / "speculative.safetensors"), arrays)


if __name__ == "__main__":
    main()
