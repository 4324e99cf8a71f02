#!/usr/bin/env python3
"""Speculative decoding, Rust mlx::lm against Python mlx_lm 0.32.2 on one libmlx (on a GPU: the
CUDA wheel); `scripts/gpu-suite spec-bench` runs it on the GPU machine.

    bench/lm/speculative.py --rust BIN [--python PY] [--work DIR] [--out PREFIX]
        [--target-arch qwen3_8b] [--target-quantize 4] [--draft-arch qwen3]
        [--draft-quantize BITS] [--layers-target N] [--layers-draft N]
        [--prompt-len 512] [--max-tokens 256] [--num-draft 3] [--rounds 1] [--reps 3]
        [--command TEXT]

A target shaped like Qwen3-8B in 4-bit and a draft shaped like Qwen3-0.6B (bfloat16), made
by mlx_lm's own classes (`make_model.py`), in two pairings:

- `random`: independent random weights. The draft's proposals are (almost) never the
  target's tokens: the cost of drafting with nothing accepted, the lower end.
- `agree`: both models made so that their greedy next token is their input token
  (`make_model.py --residual-scale 0 --tie`): every proposal is accepted, so K of every
  K + 1 tokens come from the draft, the upper end.

Random weights cannot agree as a trained draft and target do (60-80% accepted is typical for
a Qwen3 pair); the two pairings bracket the speed-up between nothing and everything accepted,
on the same models and the same compute per token as the real shapes.

For each pairing, --rounds times, each side runs the target alone (`generate_step`) and then
with the draft (`speculative_generate_step`, K draft tokens per verification), mlx_lm first,
each in a process of its own (examples/lm_bench.rs, mlx_lm_bench.py: one warm-up generation,
then --reps measured ones, of N greedy tokens after a P-token prompt). Every measurement is a JSON file in the work
folder (default ~/.cache/mlx-lm-bench/speculative); one that is there is not measured again.
PREFIX.md and PREFIX.json (default bench/lm/RESULTS-speculative) are written at the end.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys

from suite import log, run_json  # bench/lm/suite.py, beside this script
from tokens import common_prefix

HERE = pathlib.Path(__file__).resolve().parent
PAIRINGS = {
    "random": ([], []),
    "agree": (["--residual-scale", "0", "--tie"], ["--residual-scale", "0", "--tie"]),
}


def make(py, work, name, arch, quantize, layers, seed, extra):
    out = work / "models" / name
    if not (out / "config.json").exists():
        cmd = [py, HERE / "make_model.py", "--arch", arch, "--out", out, "--seed", seed, *extra]
        if quantize:
            cmd += ["--quantize", quantize]
        if layers:
            cmd += ["--layers", layers]
        log(" ".join(map(str, cmd)))
        subprocess.run(list(map(str, cmd)), check=True)
    return out


def vocab(model_dir):
    config = json.loads((model_dir / "config.json").read_text())
    return config.get("vocab_size") or config["text_config"]["vocab_size"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rust", required=True, help="examples/lm_bench, built against the same libmlx")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--work", default=os.path.expanduser("~/.cache/mlx-lm-bench/speculative"))
    p.add_argument("--out", default=str(HERE / "RESULTS-speculative"))
    p.add_argument("--target-arch", default="qwen3_8b")
    p.add_argument("--target-quantize", default="4", help="bits, or 0 for none")
    p.add_argument("--draft-arch", default="qwen3")
    p.add_argument("--draft-quantize", default="0", help="bits, or 0 for none")
    p.add_argument("--layers-target", type=int, help="the first N layers of the target's shape")
    p.add_argument("--layers-draft", type=int, help="the first N layers of the draft's shape")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--prompt-len", type=int, default=512)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--num-draft", type=int, default=3)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--pairings", default="random,agree")
    p.add_argument("--command", default="bench/lm/speculative.py",
                   help="the command line to print in the results")
    a = p.parse_args()
    work = pathlib.Path(a.work)
    (work / "runs").mkdir(parents=True, exist_ok=True)
    tq = int(a.target_quantize) or None
    dq = int(a.draft_quantize) or None
    rows = []
    for pairing in a.pairings.split(","):
        target_extra, draft_extra = PAIRINGS[pairing]
        dt = ["--dtype", a.dtype]
        target = make(a.python, work, f"target-{pairing}", a.target_arch, tq, a.layers_target, 0,
                      target_extra + dt)
        draft = make(a.python, work, f"draft-{pairing}", a.draft_arch, dq, a.layers_draft, 1,
                     draft_extra + dt)
        assert vocab(target) == vocab(draft), "the draft and target must share a vocabulary"
        prompt = work / f"prompt-{a.prompt_len}-{vocab(target)}.json"
        if not prompt.exists():
            subprocess.run([a.python, str(HERE / "mlx_lm_bench.py"), "--write-prompt", str(prompt),
                            "--prompt-len", str(a.prompt_len), "--vocab", str(vocab(target))],
                           check=True)
        common = ["--model", target, "--prompt", prompt, "--max-tokens", a.max_tokens,
                  "--reps", a.reps]
        spec = ["--draft-model", draft, "--num-draft-tokens", a.num_draft]
        runs = {}
        for r in range(a.rounds):
            for side, cmd in (("mlx_lm", [a.python, HERE / "mlx_lm_bench.py"]),
                              ("rust", [a.rust])):
                for mode, extra in (("plain", []), ("speculative", spec)):
                    path = work / "runs" / f"{pairing}-{side}-{mode}-{r}.json"
                    runs.setdefault((side, mode), []).append(run_json(cmd + common + extra, path))
        for side in ("mlx_lm", "rust"):
            plain, specs = runs[(side, "plain")], runs[(side, "speculative")]
            med = lambda rs, key: statistics.median(x[key] for x in rs)
            accepted = med(specs, "median_accepted_draft_tokens")
            rows.append({
                "pairing": pairing,
                "impl": side,
                "plain_decode_tps": med(plain, "median_decode_tps"),
                "speculative_decode_tps": med(specs, "median_decode_tps"),
                "plain_ttft_s": med(plain, "median_ttft_s"),
                "speculative_ttft_s": med(specs, "median_ttft_s"),
                "accepted_draft_tokens": accepted,
                "rounds": med(specs, "median_rounds") if side == "rust" else None,
                "generated": a.max_tokens,
                # Greedy speculative decoding emits the target's own greedy tokens: how many
                # of them the two runs share from the start (a GPU's float32 products differ
                # between a round's verification of K+1 positions and a step's one: near-ties
                # can part them).
                "tokens_equal_to_plain": common_prefix(plain[0]["tokens"], specs[0]["tokens"]),
                "traces_per_generation": specs[0].get("traces_per_generation"),
                "peak_memory": max(x["peak_memory"] for x in specs),
                "device": specs[0]["device"],
            })
        # Both sides run the same greedy generation: the same target tokens.
        rows[-1]["tokens_equal_to_mlx_lm"] = common_prefix(
            runs[("mlx_lm", "speculative")][0]["tokens"], runs[("rust", "speculative")][0]["tokens"])
    write(a, rows)


def write(a, rows):
    meta = {
        "date": datetime.date.today().isoformat(),
        "command": a.command,
        "host": platform.node(),
        "target": f"{a.target_arch}" + (f", {a.target_quantize}-bit" if int(a.target_quantize) else "")
        + (f", first {a.layers_target} layers" if a.layers_target else ""),
        "draft": f"{a.draft_arch}" + (f", {a.draft_quantize}-bit" if int(a.draft_quantize) else f", {a.dtype}")
        + (f", first {a.layers_draft} layers" if a.layers_draft else ""),
        "prompt_tokens": a.prompt_len,
        "generation_tokens": a.max_tokens,
        "num_draft_tokens": a.num_draft,
        "rounds": a.rounds,
        "reps": a.reps,
    }
    pathlib.Path(a.out + ".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    lines = [
        "# Speculative decoding: Rust mlx::lm against mlx_lm",
        "",
        f"`{a.command}`, {meta['date']}, on {rows[0]['device'] if rows else '?'} ({meta['host']}).",
        f"Target: {meta['target']}; draft: {meta['draft']}; random weights made by mlx_lm's classes",
        f"(bench/lm/make_model.py). {a.prompt_len}-token prompt, {a.max_tokens} greedy tokens, "
        f"{a.num_draft} draft tokens a round; medians of {a.reps} runs after one warm-up, "
        f"{a.rounds} round(s) alternating the sides.",
        "`random`: independent weights (nothing accepted); `agree`: models whose greedy token is "
        "their input (every proposal accepted: K of K + 1 tokens). The pairings bracket a real pair's "
        "speed-up.",
        "",
        "| pairing | side | target alone tok/s | with draft tok/s | speed-up | accepted / generated "
        "| rounds | tokens = plain | traces |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        rounds = "" if r["rounds"] is None else f"{r['rounds']:.0f}"
        lines.append(
            f"| {r['pairing']} | {r['impl']} | {r['plain_decode_tps']:.1f} | "
            f"{r['speculative_decode_tps']:.1f} | "
            f"{r['speculative_decode_tps'] / r['plain_decode_tps']:.2f}x | "
            f"{r['accepted_draft_tokens']:.0f} / {r['generated']} | "
            f"{rounds} | "
            f"{r['tokens_equal_to_plain']} / {r['generated']} | "
            f"{r['traces_per_generation'] or ''} |")
    lines += ["", "Rust / mlx_lm, decode tok/s:", ""]
    by = {(r["pairing"], r["impl"]): r for r in rows}
    for pairing in dict.fromkeys(r["pairing"] for r in rows):
        m, rs = by.get((pairing, "mlx_lm")), by.get((pairing, "rust"))
        if m and rs:
            lines.append(
                f"- {pairing}: target alone {rs['plain_decode_tps'] / m['plain_decode_tps']:.2f}x, "
                f"with the draft {rs['speculative_decode_tps'] / m['speculative_decode_tps']:.2f}x; "
                f"greedy tokens shared with mlx_lm's: {rs.get('tokens_equal_to_mlx_lm')} / {a.max_tokens}")
    pathlib.Path(a.out + ".md").write_text("\n".join(lines) + "\n")
    log(f"wrote {a.out}.md")


if __name__ == "__main__":
    main()
