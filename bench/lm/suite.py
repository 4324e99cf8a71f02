#!/usr/bin/env python3
"""Decode benchmark of Rust mlx::lm against Python mlx_lm 0.32.2 on one libmlx (on a GPU: the
CUDA wheel), in one invocation; `scripts/gpu-suite lm-bench` runs it on the GPU machine.

    bench/lm/suite.py --rust BIN [--work DIR] [--out PREFIX] [--archs qwen3,qwen3_5]
        [--quants bf16,4bit] [--batches 1,8] [--prompt-len 512] [--max-tokens 256]
        [--vocab V] [--rounds 2] [--reps 2] [--breakdown-steps 64]
        [--breakdown-quants bf16,4bit] [--bandwidth-gib 2] [--no-sweep]
        [--model DIR] [--command TEXT]

1. The device's memory bandwidth (`mlx_lm_bench.py --bandwidth`: a bfloat16 sum, read only).
2. Random-weight models shaped like Qwen3-0.6B and Qwen3.5-0.8B, bfloat16 and 4-bit
   (`make_model.py`, mlx_lm's own classes and quantization), or the one --model given.
3. For each model and batch size: K rounds alternating a Python process (mlx_lm's
   `generate_step`, or its `BatchGenerator` for a batch) and a Rust process
   (examples/lm_bench.rs), each loading the model, one warm-up generation, R measured ones
   of N greedy tokens after a P-token prompt. Decode tok/s, prefill tok/s, time to first
   token, peak memory, the Rust step's trace count, and the decode rate as a fraction of the
   weight-bandwidth bound (batch x bandwidth / weight bytes: every weight read once a step).
4. A breakdown of one decode step of each model on both sides (`--breakdown`: host graph
   building, synchronous evaluation eager and compiled, pipelined time per token, the step's
   primitives, MLX's cost per primitive).
5. MLX's CUDA settings, measured on the bfloat16 Qwen3 model, batch 1: CUDA graphs off
   (`MLX_USE_CUDA_GRAPHS=0`) and more operations per graph (`MLX_MAX_OPS_PER_BUFFER`).

Every measurement is a JSON file in the work folder (default ~/.cache/mlx-lm-bench), and one
that is there already is not measured again: an invocation cut off by a time limit continues
where it stopped when run again. PREFIX.md and PREFIX.json (default bench/lm/RESULTS-gpu)
are written from what the folder holds, at the end of every invocation. Fails if Rust traced
a generation's step more than once or the two sides' greedy tokens differ.
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
import time

from tokens import common_prefix  # bench/lm/tokens.py, beside this script

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# (name, environment, Rust's extra arguments): Rust-only entries leave mlx_lm's column at
# its default rate.
SWEEP = [
    ("default", {}, []),
    ("Rust --no-fused-attention", {}, ["--no-fused-attention"]),
    ("Rust --no-fused-gated-delta", {}, ["--no-fused-gated-delta"]),
    ("Rust --no-in-place-cache", {}, ["--no-in-place-cache"]),
    # The eager step with mlx_lm's exact numbers (GenerateOptions::compile off).
    ("Rust --no-compile", {}, ["--no-compile"]),
    ("MLX_USE_CUDA_GRAPHS=0", {"MLX_USE_CUDA_GRAPHS": "0"}, []),
    ("MLX_MAX_OPS_PER_BUFFER=60", {"MLX_MAX_OPS_PER_BUFFER": "60"}, []),
    ("MLX_MAX_OPS_PER_BUFFER=120", {"MLX_MAX_OPS_PER_BUFFER": "120"}, []),
    ("MLX_MAX_OPS_PER_BUFFER=250", {"MLX_MAX_OPS_PER_BUFFER": "250"}, []),
]


def tensor_bytes(model_dir):
    """{name: bytes} of every tensor in the model's safetensors files (their headers only)."""
    sizes = {}
    for f in sorted(pathlib.Path(model_dir).glob("*.safetensors")):
        with open(f, "rb") as fh:
            header = json.loads(fh.read(int.from_bytes(fh.read(8), "little")))
        for name, t in header.items():
            if name != "__metadata__":
                sizes[name] = t["data_offsets"][1] - t["data_offsets"][0]
    return sizes


def bytes_read_per_step(model_dir, batch):
    """The weight bytes a decode step of a mixture-of-experts model reads: every weight outside
    the experts, and of the experts' (`switch_mlp`) the expected share a batch's tokens route
    to: 1 - (1 - k/E)^batch of them, if routing were uniform (k of E experts per token).
    `None` for a dense model (every weight is read)."""
    config = json.loads((pathlib.Path(model_dir) / "config.json").read_text())
    experts = config.get("num_experts") or config.get("num_local_experts")
    k = config.get("num_experts_per_tok")
    if not experts or not k:
        return None
    sizes = tensor_bytes(model_dir)
    expert_bytes = sum(v for n, v in sizes.items() if ".switch_mlp." in n)
    share = 1 - (1 - k / experts) ** batch
    return sum(sizes.values()) - expert_bytes + share * expert_bytes


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_json(cmd, path, env=None):
    """Runs `cmd`, which prints one JSON object, into `path`; returns it (cached)."""
    if path.exists():
        return json.loads(path.read_text())
    log(" ".join(map(str, cmd)) + (f"  ({env})" if env else ""))
    t = time.time()
    out = subprocess.run(list(map(str, cmd)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={**os.environ, **(env or {})}, cwd=ROOT)
    sys.stderr.write(out.stderr.decode(errors="replace"))
    out.check_returncode()
    out = out.stdout
    data = json.loads(out.decode().strip().splitlines()[-1])
    data["process_s"] = time.time() - t
    log(f"  {data['process_s']:.1f} s")
    path.write_text(json.dumps(data) + "\n")
    return data


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rust", required=True, help="examples/lm_bench, built against the same libmlx")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--work", default=os.path.expanduser("~/.cache/mlx-lm-bench"))
    p.add_argument("--out", default=str(HERE / "RESULTS-gpu"))
    p.add_argument("--archs", default="qwen3,qwen3_5")
    p.add_argument("--quants", default="bf16,4bit")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--prompt-len", type=int, default=512)
    p.add_argument("--vocab", type=int, default=151936, help="prompt ids below this")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--warmup-tokens", type=int, default=16)
    p.add_argument("--breakdown-steps", type=int, default=64)
    p.add_argument("--breakdown-quants", default="bf16,4bit")
    p.add_argument("--bandwidth-gib", type=float, default=2.0)
    p.add_argument("--no-sweep", action="store_true")
    p.add_argument("--sweep", help="comma-separated names of SWEEP's entries to run (default: all)")
    p.add_argument("--model", help="one model directory instead of the generated ones")
    p.add_argument("--command", default="scripts/gpu-suite lm-bench")
    a = p.parse_args()
    work = pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    py = [a.python, str(HERE / "mlx_lm_bench.py")]
    started = time.time()

    bandwidth = run_json(py + ["--bandwidth", a.bandwidth_gib], work / "bandwidth.json")
    log(f"bandwidth: {bandwidth}")

    models = []
    if a.model:
        models.append(("custom", "custom", pathlib.Path(a.model)))
    else:
        for arch in a.archs.split(","):
            for quant in a.quants.split(","):
                d = work / "models" / f"{arch}-{quant}"
                if not (d / "config.json").exists():
                    cmd = [a.python, HERE / "make_model.py", "--arch", arch, "--out", d]
                    if quant != "bf16":
                        cmd += ["--quantize", quant.removesuffix("bit")]
                    log(" ".join(map(str, cmd)))
                    subprocess.run(list(map(str, cmd)), check=True, cwd=ROOT,
                                   stdout=sys.stderr)
                models.append((arch, quant, d))

    batches = [int(b) for b in a.batches.split(",")]
    prompts = {}
    for b in batches:
        f = work / f"prompt-{a.prompt_len}x{b}.json"
        if not f.exists():
            subprocess.run(py + ["--write-prompt", str(f), "--prompt-len", str(a.prompt_len),
                                 "--vocab", str(a.vocab)]
                           + (["--batch", str(b)] if b > 1 else []), check=True, cwd=ROOT)
        prompts[b] = f

    common = ["--max-tokens", a.max_tokens, "--reps", a.reps, "--warmup", 1,
              "--warmup-tokens", a.warmup_tokens]
    rows = []
    failures = []
    for arch, quant, d in models:
        for b in batches:
            sides = {"python": [], "rust": []}
            failed = {}
            for k in range(1, a.rounds + 1):
                tag = f"{arch}-{quant}-b{b}-r{k}"
                args = ["--model", d, "--prompt", prompts[b]] + common
                for side, cmd in (("python", py), ("rust", [a.rust])):
                    if side in failed:
                        continue
                    try:
                        sides[side].append(run_json(cmd + args, work / f"run-{tag}-{side}.json"))
                    except subprocess.CalledProcessError as e:
                        # A side that crashes (an MLX bug on this device) is reported, and the
                        # other side still measured.
                        failed[side] = f"exit {e.returncode}: {last_line(e.stderr)}"
                        log(f"  {side} failed: {failed[side]}")
            row = {"arch": arch, "quant": quant, "batch": b}
            if failed:
                row["failed"] = failed
                failures.append(f"{arch}-{quant} batch {b}: " + "; ".join(
                    f"{side} {why}" for side, why in failed.items()))
                row.update({side: {"decode_tps": statistics.median(
                    r["decode_tps"] for o in outs for r in o["runs"]),
                    "weight_bytes": outs[0]["weight_bytes"]}
                    for side, outs in sides.items() if side not in failed})
                rows.append(row)
                continue
            for side, outs in sides.items():
                runs = [r for o in outs for r in o["runs"]]
                row[side] = {
                    "decode_tps": statistics.median(r["decode_tps"] for r in runs),
                    "prefill_tps": statistics.median(r["prefill_tps"] for r in runs),
                    "ttft_s": statistics.median(r["ttft_s"] for r in runs),
                    "peak_memory": max(o["peak_memory"] for o in outs),
                    "per_round_decode_tps": [o["median_decode_tps"] for o in outs],
                    # Per-token times (ms) where both sides report them.
                    "token_ms_p50": statistics.median(r["token_ms"]["p50"] for r in runs)
                    if all("token_ms" in r for r in runs) else None,
                    "token_ms_p90": statistics.median(r["token_ms"]["p90"] for r in runs)
                    if all("token_ms" in r for r in runs) else None,
                    "weight_bytes": outs[0]["weight_bytes"],
                }
            traces = sorted({t for o in sides["rust"] for t in o["traces_per_generation"]})
            row["rust"]["traces"] = traces
            # Greedy tokens both sides share from the start (worst sequence of the batch): a
            # GPU's reductions need not be deterministic and random weights have near-ties.
            row["shared_tokens"] = common_prefix(sides["python"][0]["tokens"],
                                                 sides["rust"][0]["tokens"])
            read = bytes_read_per_step(d, b)
            if read is not None:
                row["read_bytes"] = read
            bound = b * bandwidth["sum_gb_per_s"] * 1e9 / (read or row["rust"]["weight_bytes"])
            row["bound_tps"] = bound
            if traces != [1]:
                failures.append(f"{arch}-{quant} batch {b}: Rust traced {traces} times")
            rows.append(row)

    breakdowns = []
    for arch, quant, d in models:
        if not a.model and quant not in a.breakdown_quants.split(","):
            continue
        bd = {"arch": arch, "quant": quant}
        for side, cmd in (("python", py), ("rust", [a.rust])):
            bd[side] = run_json(cmd + ["--model", d, "--prompt", prompts[batches[0]],
                                       "--breakdown", a.breakdown_steps],
                                work / f"breakdown-{arch}-{quant}-{side}.json")
        breakdowns.append(bd)

    sweep = []
    if not a.no_sweep:
        arch, quant, d = models[0]
        main_row = next((r for r in rows if r["batch"] == 1), None)
        chosen = a.sweep.split(",") if a.sweep else [name for name, _, _ in SWEEP]
        for name, env, rust_args in SWEEP:
            if name != "default" and name not in chosen:
                continue
            entry = {"setting": name}
            if not env and not rust_args and main_row:  # measured above, in this run
                entry.update(python=main_row["python"]["decode_tps"],
                             rust=main_row["rust"]["decode_tps"])
                sweep.append(entry)
                continue
            args = ["--model", d, "--prompt", prompts[1], "--max-tokens", a.max_tokens,
                    "--reps", a.reps, "--warmup", 1, "--warmup-tokens", a.warmup_tokens]
            for side, cmd in (("python", py), ("rust", [a.rust])):
                if side == "python" and rust_args and main_row:
                    entry[side] = main_row["python"]["decode_tps"]
                    continue
                tag = name.replace("=", "-").replace(" ", "_")
                entry[side] = run_json(cmd + args + (rust_args if side == "rust" else []),
                                       work / f"sweep-{tag}-{side}.json", env)["median_decode_tps"]
            sweep.append(entry)

    report(a, bandwidth, rows, breakdowns, sweep, time.time() - started)
    if failures:
        sys.exit("FAILED: " + "; ".join(failures))


def last_line(stderr):
    lines = (stderr or b"").decode(errors="replace").strip().splitlines()
    return next((l for l in reversed(lines) if "Error" in l or "what()" in l),
                lines[-1] if lines else "no output")


def report(a, bandwidth, rows, breakdowns, sweep, elapsed):
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         stdout=subprocess.PIPE, text=True).stdout.strip() if has_nvidia() else ""
    device = gpu or f"{os.cpu_count()} CPU cores ({platform.processor() or platform.machine()})"
    # The binaries' commit, as `scripts/gpu-suite build` recorded it: a copy of the work tree
    # on a GPU machine may have no .git, or a stale one.
    commit = os.environ.get("MLX_COMMIT")
    if not commit:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True).stdout.strip() or "?"
        except OSError:
            commit = "?"
    date = datetime.date.today().isoformat()
    out = pathlib.Path(a.out)
    out.with_suffix(".json").write_text(json.dumps({
        "date": date, "device": device, "commit": commit, "command": a.command,
        "bandwidth": bandwidth, "rows": rows, "breakdowns": breakdowns, "sweep": sweep,
    }, indent=1) + "\n")
    gb = bandwidth["sum_gb_per_s"]
    lines = [
        f"# Decode: Rust mlx::lm vs Python mlx_lm 0.32.2 ({device})",
        "",
        f"{date}, commit {commit}, `{a.command}`. Both sides on the same libmlx (the "
        f"`mlx-cuda-13==0.32.2` wheel on a GPU), random-weight models (`bench/lm/make_model.py`), "
        f"a {a.prompt_len}-token prompt per sequence, {a.max_tokens} greedy tokens, medians of "
        f"{a.rounds} alternating rounds x {a.reps} runs per side. Memory bandwidth measured in "
        f"the same run: {gb:.0f} GB/s (a bfloat16 sum; copy: {bandwidth['copy_gb_per_s']:.0f} GB/s).",
        "",
        "| model | weights | batch | decode tok/s mlx_lm | decode tok/s Rust | Rust / mlx_lm "
        "| of the bound mlx_lm, Rust | prefill tok/s mlx_lm | prefill tok/s Rust | TTFT ms mlx_lm "
        "| TTFT ms Rust | peak GB mlx_lm | peak GB Rust | Rust traces | tokens as mlx_lm's "
        "| ms/token p50, p90 mlx_lm | ms/token p50, p90 Rust |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for r in rows:
        if "failed" in r:
            cols = {side: (f"fails: {r['failed'][side]}" if side in r["failed"]
                           else f"{r[side]['decode_tps']:.1f}") for side in ("python", "rust")}
            weights = next((r[s]["weight_bytes"] for s in ("rust", "python") if s in r), 0)
            lines.append(f"| {r['arch']} {r['quant']} | {weights / 1e9:.2f} GB | {r['batch']} "
                         f"| {cols['python']} | {cols['rust']} |" + " |" * 12)
            continue
        py, rs = r["python"], r["rust"]
        lines.append(
            f"| {r['arch']} {r['quant']} | {rs['weight_bytes'] / 1e9:.2f} GB"
            + (f" ({r['read_bytes'] / 1e9:.2f} GB read)" if "read_bytes" in r else "")
            + f" | {r['batch']} "
            f"| {py['decode_tps']:.1f} | {rs['decode_tps']:.1f} "
            f"| **{rs['decode_tps'] / py['decode_tps']:.2f}x** "
            f"| {py['decode_tps'] / r['bound_tps']:.1%}, {rs['decode_tps'] / r['bound_tps']:.1%} "
            f"| {py['prefill_tps']:.0f} | {rs['prefill_tps']:.0f} "
            f"| {py['ttft_s'] * 1e3:.1f} | {rs['ttft_s'] * 1e3:.1f} "
            f"| {py['peak_memory'] / 1e9:.2f} | {rs['peak_memory'] / 1e9:.2f} "
            f"| {rs['traces']} | {r['shared_tokens']}/{a.max_tokens} "
            f"| {fmt2(py['token_ms_p50'])}, {fmt2(py['token_ms_p90'])} "
            f"| {fmt2(rs['token_ms_p50'])}, {fmt2(rs['token_ms_p90'])} |")
    lines += [
        "",
        "Decode tok/s: batch x (N - 1) tokens over the time from the first token to the last; "
        "prefill tok/s: batch x prompt tokens over the time to the first token (TTFT). The "
        "bound: batch x bandwidth / weight bytes (every weight read once a step; for a "
        "mixture of experts, the weights outside the experts and the expected share "
        "1 - (1 - k/E)^batch of the experts' under uniform routing: `read_bytes`). Tokens as "
        "mlx_lm's: the greedy tokens both sides share from the start (the batch's worst "
        "sequence); GPU reductions need not be deterministic and random weights have "
        "near-ties, so two runs of one side can part ways too (`runs_agree_tokens` in the "
        "JSON). Per-round decode medians are in the JSON.",
        "",
        "## Where a decode step's time goes (batch 1)",
        "",
        "| model | side | build µs (eager) | eval µs (eager) | build µs (compiled) "
        "| eval µs (compiled) | pipelined µs/token | primitives eager / compiled "
        "| dispatch µs/primitive |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for bd in breakdowns:
        for side in ("python", "rust"):
            x = bd[side]
            comp = x.get("compiled", {})
            prims = x["primitives"]
            lines.append(
                f"| {bd['arch']} {bd['quant']} | {'mlx_lm' if side == 'python' else 'Rust'} "
                f"| {x['eager']['build_us']:.0f} | {x['eager']['eval_us']:.0f} "
                f"| {fmt(comp.get('build_us'))} | {fmt(comp.get('eval_us'))} "
                f"| {x['pipelined_us_per_token']:.0f} "
                f"| {prims['eager']} / {prims.get('compiled', '—')} "
                f"| {x['dispatch_us_per_primitive']:.2f} |")
    lines += [
        "",
        "Build: host time to build one step's graph (Python: mlx_lm's model call; Rust: the "
        "model's forward, or a call of the compiled step). Eval: `eval` of that graph, "
        "synchronously (MLX's dispatch of every primitive, the kernels, the wait). Pipelined: "
        "per token with the next step queued first, as generation runs. Dispatch: one "
        "evaluated chain of 2,000 one-element adds, per add. Primitive counts by kind are in "
        "the JSON.",
    ]
    if sweep:
        lines += ["", "## MLX's CUDA settings (first model, batch 1, decode tok/s)", "",
                  "| setting | mlx_lm | Rust | Rust / mlx_lm |", "|---|---:|---:|---:|"]
        for s in sweep:
            lines.append(f"| `{s['setting']}` | {s['python']:.1f} | {s['rust']:.1f} "
                         f"| {s['rust'] / s['python']:.2f}x |")
    lines += ["", f"The whole run took {elapsed / 60:.1f} min. Raw data: "
              f"`{out.with_suffix('.json').name}`.", ""]
    out.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))


def fmt2(x):
    return "—" if x is None else f"{x:.2f}"


def fmt(x):
    return "—" if x is None else f"{x:.0f}"


def has_nvidia():
    try:
        subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        return True
    except (OSError, subprocess.CalledProcessError):
        return False


if __name__ == "__main__":
    main()
