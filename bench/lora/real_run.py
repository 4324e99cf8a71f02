#!/usr/bin/env python3
"""A real fine-tuning run with examples/lora: a small random-weight Qwen3-shaped model learns
to turn a sentence about a person into a JSON record, which the base model cannot do.

    bench/lora/real_run.py --lora BIN --generate BIN [--python PY] [--work DIR]
                           [--out bench/lora/RESULTS-real-run.md] [--iters N] [--eval N]

1. the model: bench/lm/make_model.py --arch qwen3_tiny (4 layers of 64, the test
   tokenizer's 384 tokens, float32), random weights from mlx_lm's own classes;
2. the data: bench/lora/make_data.py json (prompt/completion records; the test split's
   name/city pairs never occur in training);
3. greedy generations of the base model for the first N test prompts (examples/generate,
   the chat template as in training);
4. LoRA training with examples/lora -c (the YAML written next to the data), prompt masked,
   with its progress lines;
5. the same generations with --adapter-path, scored: JSON that parses with the keys name,
   age, city in that order, and exact matches of the expected record;
6. a results file with the command, the losses and the generations before and after.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = ROOT / "bench" / "lora"

CONFIG = """\
model: {model}
data: {data}
train: true
test: true
fine_tune_type: {kind}
mask_prompt: true
num_layers: -1
batch_size: {batch_size}
iters: {iters}
optimizer: adam
learning_rate: {lr}
steps_per_report: {report}
steps_per_eval: {eval_every}
val_batches: 4
test_batches: -1
save_every: {iters}
adapter_path: {adapters}
lora_parameters: {{rank: {rank}, scale: 20.0, dropout: 0.0}}
seed: 0
"""


def run(argv, **kw):
    print("$ " + " ".join(map(str, argv)), file=sys.stderr, flush=True)
    done = subprocess.run(list(map(str, argv)), capture_output=True, text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"{argv[0]} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def generate(a, model, prompt, adapters=None):
    argv = [a.generate, "--model", model, "--prompt", prompt, "--max-tokens", 48,
            "--temp", 0, "--verbose", "False"]
    if adapters:
        argv += ["--adapter-path", adapters]
    return run(argv).stdout.strip()


FIELDS = ["name", "age", "city"]


def score(text, expected):
    """(parses with the keys in order, equals the expected record, each field right)."""
    try:
        got = json.loads(text)
    except ValueError:
        return (False, False) + (False,) * len(FIELDS)
    want = json.loads(expected)
    ok = isinstance(got, dict) and list(got) == FIELDS
    fields = tuple(ok and got[k] == want[k] for k in FIELDS)
    return (ok, got == want) + fields


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lora", required=True, help="the examples/lora binary")
    p.add_argument("--generate", required=True, help="the examples/generate binary")
    p.add_argument("--python", default=sys.executable, help="Python with mlx_lm 0.32.2")
    p.add_argument("--work", default="/tmp/lora-real-run")
    p.add_argument("--out", default=str(HERE / "RESULTS-real-run.md"))
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--fine-tune-type", default="full", choices=["full", "lora", "dora"])
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--rank", type=int, default=16, help="lora, dora: the adapters' rank")
    p.add_argument("--report", type=int, default=20)
    p.add_argument("--eval", type=int, default=16, help="test prompts generated before and after")
    a = p.parse_args()
    command = "bench/lora/real_run.py " + " ".join(sys.argv[1:])
    work = pathlib.Path(a.work)
    model, data, adapters = work / "model", work / "data", work / "adapters"
    started = time.time()

    run([a.python, ROOT / "bench/lm/make_model.py", "--arch", "qwen3_tiny", "--dtype", "float32",
         "--out", model])
    run([a.python, HERE / "make_data.py", "json", "--out", data])
    tests = [json.loads(l) for l in (data / "test.jsonl").read_text().splitlines()][: a.eval]

    before = [generate(a, model, t["prompt"]) for t in tests]

    config = work / "lora.yaml"
    config.write_text(CONFIG.format(
        model=json.dumps(str(model)), data=json.dumps(str(data)), adapters=json.dumps(str(adapters)),
        batch_size=a.batch_size, iters=a.iters, lr=a.learning_rate, report=a.report,
        eval_every=max(a.iters // 4, 1), rank=a.rank, kind=a.fine_tune_type))
    tic = time.time()
    trained = run([a.lora, "-c", config])
    train_seconds = time.time() - tic
    log = trained.stdout

    after = [generate(a, model, t["prompt"], adapters) for t in tests]

    losses = re.findall(r"^\s*(\d+)\s+(\S+) [▲▼]\s+([\d,]+)", log, re.M)
    vals = re.findall(r"^\s*(\d+)\s+val (\S+)", log, re.M)
    test = re.search(r"Test loss (\S+), Test ppl (\S+)\.", log)
    traces = re.search(r"train step: (\d+) trace\(s\)", trained.stderr)
    if not losses or not vals or not test:
        sys.exit(f"examples/lora's output lacks its progress lines:\n{log[-3000:]}")
    sb = [score(g, t["completion"]) for g, t in zip(before, tests)]
    sa = [score(g, t["completion"]) for g, t in zip(after, tests)]

    n = len(tests)
    kind = {"full": "every weight of the 4 blocks trained (embeddings frozen, as mlx_lm's full "
                    "fine-tuning)",
            "lora": f"LoRA rank {a.rank} on every linear layer of the 4 blocks",
            "dora": f"DoRA rank {a.rank} on every linear layer of the 4 blocks"}[a.fine_tune_type]
    md = ["# A real fine-tuning run: a random Qwen3-shaped model learns a JSON format", "",
          f"Command (CPU, {time.strftime('%Y-%m-%d', time.gmtime())}; "
          f"{time.time() - started:.0f} s in all, training {train_seconds:.0f} s; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores):", "",
          f"    {command}", "",
          "The model is bench/lm/make_model.py's `qwen3_tiny` (Qwen3's layout: 4 layers of 64, "
          "4 query and 2 key-value heads, MLP 192, the test tokenizer's 384 tokens; random "
          "weights), so the base can do nothing. The task (bench/lora/make_data.py json): a "
          "sentence about a person, in one of three phrasings, to a JSON record with the keys "
          "`name`, `age`, `city` in that order; the model must find and copy the three values. "
          "The test prompts' name/city pairs never occur in training.", "",
          f"Training: examples/lora -c with this config ({kind}, Adam at {a.learning_rate}, "
          f"batch {a.batch_size}, prompt masked):", "",
          "```yaml", config.read_text().rstrip(), "```", "",
          "## Loss", "",
          "| iteration | train loss | validation loss |", "| ---: | ---: | ---: |"]
    val = dict(vals)
    rows = {int(i): [l, ""] for i, l, _ in losses}
    for i, v in val.items():
        rows.setdefault(int(i), ["", ""])[1] = v
    for i in sorted(rows):
        md.append(f"| {i} | {rows[i][0]} | {rows[i][1]} |")
    md += ["", f"Test loss after training: {test[1]} (perplexity {test[2]}); validation loss of "
           f"the base model (iteration 1): {vals[0][1]}."]
    if traces:
        md.append(f"The compiled training step was traced {traces[1]} time(s) (one per batch width).")
    md += ["", "## Generations (greedy, examples/generate, without and with --adapter-path)", "",
           f"Over the first {n} test prompts: the output parses as JSON with the keys name, age, "
           f"city: {sum(s[0] for s in sb)}/{n} before, {sum(s[0] for s in sa)}/{n} after; "
           f"exactly the expected record: {sum(s[1] for s in sb)}/{n} before, "
           f"{sum(s[1] for s in sa)}/{n} after; each field right after training: "
           + ", ".join(f"{k} {sum(s[2 + i] for s in sa)}/{n}" for i, k in enumerate(FIELDS))
           + ".", "",
           "| prompt | before | after | expected |", "| --- | --- | --- | --- |"]

    def cell(s):
        return "`" + s.replace("|", "\\|").replace("\n", "⏎").replace("`", "'") + "`" if s else "(nothing)"

    for t, b, f in zip(tests, before, after):
        md.append(f"| {t['prompt']} | {cell(b)} | {cell(f)} | {cell(t['completion'])} |")
    md += ["", "## examples/lora's output", "", "```", log.rstrip(), "```", ""]
    pathlib.Path(a.out).write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
