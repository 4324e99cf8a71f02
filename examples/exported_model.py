#!/usr/bin/env python3
"""Greedy generation from a model exported by `mlx_lm::export` (`mlx-lm export`), with
Python MLX alone: `mx.import_function` of the two graphs, the `export.json` manifest and the
weights file; no model code, from this project or from mlx_lm.

    python examples/exported_model.py EXPORT_DIR --prompt "Hello" [--max-tokens 64]
    python examples/exported_model.py EXPORT_DIR --prompt-ids 1,2,3 --json

`--prompt` needs a tokenizer: the `transformers` tokenizer of `--tokenizer` (default: the
export directory, where `mlx-lm export` copies the model's tokenizer files). With `--json`
it prints {"tokens": [...]} and nothing else (the Rust tests compare those ids).
"""

import argparse
import json
import os
import sys

import mlx.core as mx


class ExportedModel:
    """The graphs, manifest and weights of an export directory."""

    def __init__(self, path):
        with open(os.path.join(path, "export.json")) as f:
            m = json.load(f)
        if m.get("format") != "mlx-lm.export" or m.get("version") != 1:
            raise ValueError(f"{path}: not an mlx-lm export (version 1)")
        self.m = m
        self.prefill = mx.import_function(os.path.join(path, m["prefill"]["file"]))
        self.decode = mx.import_function(os.path.join(path, m["decode"]["file"]))
        n_cache = m["cache_leaves"]
        self.cache_specs = m["inputs"][1 : 1 + n_cache]
        self.weights = []
        if m["weights"] == "inputs":
            arrays = mx.load(os.path.join(path, m["weights_file"]))
            self.weights = [arrays[s["name"]] for s in m["inputs"][1 + n_cache :]]

    def new_cache(self):
        # The fill as an array of the dtype: `mx.full(shape, 0.0, dtype=mx.int32)` is
        # float32 in MLX 0.32.2.
        return [
            mx.full(s["shape"], mx.array(s["fill"], dtype=getattr(mx, s["dtype"])))
            for s in self.cache_specs
        ]

    def step(self, tokens, cache):
        """tokens: a list of ids of a traced length. Returns (logits [1, vocab], cache)."""
        fun = self.decode if len(tokens) == 1 else self.prefill
        out = fun(mx.array([tokens], dtype=mx.uint32), *cache, *self.weights)
        return out[0], out[1:]

    def chunks(self, n):
        """The prompt chunks: the largest traced length that fits first, then single tokens."""
        out = []
        for length in sorted(self.m["prefill"]["lengths"], reverse=True):
            while n >= length:
                out.append(length)
                n -= length
        return out + [1] * n

    def generate_greedy(self, prompt, max_tokens, stop_tokens=()):
        if len(prompt) + max(max_tokens - 1, 0) > self.m["max_positions"]:
            raise ValueError(f"the model was exported for {self.m['max_positions']} positions")
        cache = self.new_cache()
        head, last = prompt[:-1], prompt[-1]
        at = 0
        for n in self.chunks(len(head)):
            _, cache = self.step(head[at : at + n], cache)
            at += n
            mx.eval(cache)
        tokens = []
        while len(tokens) < max_tokens:
            logits, cache = self.step([last], cache)
            logprobs = logits - mx.logsumexp(logits, keepdims=True)
            last = mx.argmax(logprobs, axis=-1).item()
            if last in stop_tokens:
                break
            tokens.append(last)
        return tokens


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("path", help="the export directory")
    p.add_argument("--prompt", help="text (needs a tokenizer)")
    p.add_argument("--prompt-ids", help="token ids, comma-separated")
    p.add_argument("--tokenizer", help="a tokenizer directory (default: the export's)")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--ignore-eos", action="store_true", help="do not stop at the model's EOS")
    p.add_argument("--json", action="store_true", help='print {"tokens": [...]} only')
    args = p.parse_args()

    model = ExportedModel(args.path)
    tokenizer = None
    if args.prompt_ids is not None:
        prompt = [int(t) for t in args.prompt_ids.split(",") if t.strip()]
    elif args.prompt is not None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer or args.path)
        prompt = tokenizer.encode(args.prompt)
    else:
        p.error("give --prompt or --prompt-ids")
    if not prompt:
        p.error("the prompt is empty")
    stop = () if args.ignore_eos else tuple(model.m.get("eos_token_ids", []))
    tokens = model.generate_greedy(prompt, args.max_tokens, stop)
    if args.json:
        print(json.dumps({"tokens": tokens}))
    elif tokenizer is not None:
        print(tokenizer.decode(tokens))
    else:
        print(" ".join(map(str, tokens)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
