#!/usr/bin/env python3
"""LoRA training speed and memory side by side: our `examples/lora` against `mlx_lm.lora`
0.32.2 on the same libmlx, model, data, config and seed, with gradient checkpointing off and
on, in one command.

    bench/lora/bench.py --rust BIN --model DIR --data DIR --out PREFIX
                        [--python PY] [--iters N] [--batch-size B] [--num-layers L]
                        [--steps-per-report R] [--rank R] [--rounds K] [--command TEXT]

Each run is one process of each side, alternating (Rust first in odd rounds, Python first in
even ones), given one YAML config (`-c`): LoRA on the last L layers, Adam, no validation
(the data folder should hold train.jsonl alone). Per run it records:
- tokens/s: trained tokens over training time (mlx_lm's measure: validation excluded) of the
  report intervals after the first, whose time includes tracing and compiling the step;
- the first interval's seconds (the compile shows there);
- peak memory: MLX's `get_peak_memory` at the last report (the allocator's high-water mark,
  weights included: on a GPU the device memory, on the CPU the arrays');
- the process's maximum resident set (`wait4`'s ru_maxrss: Python's interpreter and
  libraries count there, so read it on the CPU only as a rough figure);
- the train losses of each report (the same seed and data: they should agree);
- ours: the compiled step's trace count, which must be 1 (one batch width, no gradient
  accumulation): the script fails after writing the results otherwise.
Python's numbers come from bench/lora/mlx_lm_lora.py (mlx_lm.lora with a callback that prints
what its trainer reports), ours from the progress lines of examples/lora.
Writes PREFIX.md and PREFIX.json. One machine, shared or not: read the ratios.
"""
import argparse
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent

# examples/lora's progress line: iteration, loss, arrow, tok/s, trained k tokens, lr, it/s, peak.
RUST_LINE = re.compile(
    r"^\s*(\d+)\s+(\S+) [▲▼]\s+([\d,]+)\s+([\d.]+)k\s+lr (\S+)\s+([\d.]+) it/s\s+peak ([\d.]+) MB"
)
RUST_TRACES = re.compile(r"train step: (\d+) trace\(s\), (\d+) calls")


def config_yaml(a, model, data, adapter_path, checkpoint):
    lines = [
        f"model: {json.dumps(str(model))}",
        f"data: {json.dumps(str(data))}",
        "train: true",
        "fine_tune_type: lora",
        f"num_layers: {a.num_layers}",
        f"batch_size: {a.batch_size}",
        f"iters: {a.iters}",
        f"steps_per_report: {a.steps_per_report}",
        f"steps_per_eval: {a.iters + 1}",
        f"save_every: {a.iters + 1}",
        "learning_rate: 1e-4",
        "optimizer: adam",
        f"adapter_path: {json.dumps(str(adapter_path))}",
        f"grad_checkpoint: {'true' if checkpoint else 'false'}",
        f"lora_parameters: {{rank: {a.rank}, scale: 20.0, dropout: 0.0}}",
        "seed: 0",
    ]
    return "\n".join(lines) + "\n"


def run_process(argv, env=None):
    """Runs argv, returning (stdout, stderr, status, wall seconds, max RSS bytes)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        # ru_maxrss is in kilobytes on Linux.
        return (out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                proc.returncode, wall, usage.ru_maxrss * 1024)


def summarize(reports, steps_per_report):
    """reports: dicts with it, loss, tokens_per_second, it_per_second, peak_gb."""
    if not reports:
        raise RuntimeError("no progress reports")
    times = [steps_per_report / r["it_per_second"] for r in reports]
    tokens = [r["tokens_per_second"] * t for r, t in zip(reports, times)]
    warm = slice(1, None) if len(reports) > 1 else slice(0, None)
    return {
        "tokens_per_second": sum(tokens[warm]) / sum(times[warm]),
        "first_interval_s": times[0],
        "train_seconds": sum(times),
        "peak_gb": reports[-1]["peak_gb"],
        "losses": [r["loss"] for r in reports],
    }


def run_rust(a, config_path):
    out, err, status, wall, rss = run_process([a.rust, "-c", str(config_path)])
    if status != 0:
        raise RuntimeError(f"examples/lora failed ({status}):\n{out[-2000:]}\n{err[-2000:]}")
    reports = []
    for line in out.splitlines():
        m = RUST_LINE.match(line)
        if m:
            reports.append({
                "it": int(m[1]), "loss": float(m[2]),
                "tokens_per_second": float(m[3].replace(",", "")),
                "it_per_second": float(m[6]), "peak_gb": float(m[7]) / 1e3,
            })
    traces = RUST_TRACES.search(err)
    if not traces:
        raise RuntimeError(f"examples/lora printed no trace count:\n{err[-2000:]}")
    result = summarize(reports, a.steps_per_report)
    result.update(traces=int(traces[1]), calls=int(traces[2]), wall_s=wall, max_rss_bytes=rss)
    return result


def run_python(a, config_path):
    out, err, status, wall, rss = run_process(
        [a.python, str(HERE / "mlx_lm_lora.py"), "-c", str(config_path)],
        env=dict(os.environ, TOKENIZERS_PARALLELISM="true"))
    if status != 0:
        raise RuntimeError(f"mlx_lm.lora failed ({status}):\n{out[-2000:]}\n{err[-2000:]}")
    reports = []
    for line in out.splitlines():
        if line.startswith("REPORT "):
            info = json.loads(line[len("REPORT "):])
            reports.append({
                "it": info["iteration"], "loss": info["train_loss"],
                "tokens_per_second": info["tokens_per_second"],
                "it_per_second": info["iterations_per_second"], "peak_gb": info["peak_memory"],
            })
    result = summarize(reports, a.steps_per_report)
    result.update(wall_s=wall, max_rss_bytes=rss)
    return result


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def device_name(python):
    """MLX's default device, with the GPU's name where nvidia-smi answers."""
    code = "import mlx.core as mx; d = mx.default_device(); print(d)"
    try:
        dev = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
        name = dev.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        name = "?"
    if "gpu" in name:
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=60)
            gpu = smi.stdout.strip().splitlines()
            if gpu:
                name += f", {gpu[0]}"
        except (OSError, subprocess.SubprocessError):
            pass
    return name


def model_summary(model):
    config = json.loads((pathlib.Path(model) / "config.json").read_text())
    keys = ["model_type", "hidden_size", "num_hidden_layers", "intermediate_size",
            "num_attention_heads", "num_key_value_heads", "vocab_size", "torch_dtype"]
    return {k: config[k] for k in keys if k in config}


def write_results(a, runs, meta):
    rows = {}
    for r in runs:
        rows.setdefault((r["side"], r["checkpoint"]), []).append(r)
    table = {}
    for (side, ckpt), rs in rows.items():
        table[f"{side}/{'on' if ckpt else 'off'}"] = {
            "tokens_per_second": median([r["tokens_per_second"] for r in rs]),
            "peak_gb": median([r["peak_gb"] for r in rs]),
            "max_rss_bytes": median([r["max_rss_bytes"] for r in rs]),
            "first_interval_s": median([r["first_interval_s"] for r in rs]),
            "wall_s": median([r["wall_s"] for r in rs]),
        }
    result = {"meta": meta, "summary": table, "runs": runs}
    pathlib.Path(a.out + ".json").write_text(json.dumps(result, indent=1) + "\n")

    def cell(side, ckpt, key):
        return table.get(f"{side}/{ckpt}", {}).get(key)

    md = [f"# LoRA training: examples/lora against mlx_lm.lora ({meta['device']})", ""]
    md += [f"Command: `{meta['command']}`", ""]
    md += [f"- date: {meta['date']}; machine: {meta['machine']}; MLX device: {meta['device']}",
           f"- model: {json.dumps(meta['model'])}",
           f"- LoRA rank {a.rank} on the last {a.num_layers} layers, Adam, batch {a.batch_size}, "
           f"{a.iters} iterations, a report every {a.steps_per_report}; batches of "
           f"{meta['batch_width']} tokens (one width); {a.rounds} round(s), medians shown",
           f"- load average before: {meta['load_before']}; after: {meta['load_after']}", ""]
    md += ["| checkpointing | side | tokens/s | peak memory (MLX) | max RSS | first interval | process wall |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for ckpt in ("off", "on"):
        for side in ("rust", "python"):
            t = table.get(f"{side}/{ckpt}")
            if not t:
                continue
            md.append(f"| {ckpt} | {'ours' if side == 'rust' else 'mlx_lm'} | "
                      f"{t['tokens_per_second']:,.0f} | {t['peak_gb'] * 1e3:,.1f} MB | "
                      f"{t['max_rss_bytes'] / 1e6:,.0f} MB | {t['first_interval_s']:.2f} s | "
                      f"{t['wall_s']:.1f} s |")
    md += ["", "Ratios (ours / mlx_lm):", ""]
    for ckpt in ("off", "on"):
        tr, tp = cell("rust", ckpt, "tokens_per_second"), cell("python", ckpt, "tokens_per_second")
        mr, mp = cell("rust", ckpt, "peak_gb"), cell("python", ckpt, "peak_gb")
        if tr and tp and mr and mp:
            md.append(f"- checkpointing {ckpt}: tokens/s {tr / tp:.3f}, peak memory {mr / mp:.3f}")
    for side, name in (("rust", "ours"), ("python", "mlx_lm")):
        on, off = cell(side, "on", "peak_gb"), cell(side, "off", "peak_gb")
        ton, toff = cell(side, "on", "tokens_per_second"), cell(side, "off", "tokens_per_second")
        if on and off and ton and toff:
            md.append(f"- {name}, checkpointing on / off: peak memory {on / off:.3f}, "
                      f"tokens/s {ton / toff:.3f}")
    traces = sorted({r["traces"] for r in runs if r["side"] == "rust"})
    if traces:
        md += ["", f"Our compiled training step: traced {', '.join(map(str, traces))} time(s) "
               f"per run (asserted 1), called {a.iters} times."]
    agree = meta["losses_agree"]
    md += [f"Train losses of the two sides at each report, to the 3 decimals ours prints: "
           f"{'equal in every run' if agree else 'NOT equal (see the JSON)'}.", ""]
    pathlib.Path(a.out + ".md").write_text("\n".join(md))
    return table


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rust", required=True, help="the examples/lora binary")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True, help="a folder with train.jsonl")
    p.add_argument("--out", required=True, help="results prefix: PREFIX.md, PREFIX.json")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--num-layers", type=int, default=16)
    p.add_argument("--steps-per-report", type=int, default=5)
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--only", choices=["rust", "python"], help="one side alone (a smoke test)")
    p.add_argument("--command", default=None, help="the command to print in the results")
    a = p.parse_args()
    if a.iters % a.steps_per_report or a.iters < 2 * a.steps_per_report:
        p.error("--iters: a multiple of --steps-per-report, at least two reports")

    work = pathlib.Path(tempfile.mkdtemp(prefix="lora-bench-"))
    sides = [("rust", run_rust), ("python", run_python)]
    if a.only:
        sides = [s for s in sides if s[0] == a.only]
    load_before = os.getloadavg()
    runs = []
    for rnd in range(a.rounds):
        for ckpt in (False, True):
            order = sides if rnd % 2 == 0 else sides[::-1]
            for side, fn in order:
                name = f"{side}-{'ckpt' if ckpt else 'plain'}-{rnd}"
                config = work / f"{name}.yaml"
                config.write_text(config_yaml(a, a.model, a.data, work / name, ckpt))
                print(f"=== {name} ===", file=sys.stderr, flush=True)
                r = fn(a, config)
                r.update(side=side, checkpoint=ckpt, round=rnd)
                print(f"    {r['tokens_per_second']:,.0f} tok/s, peak {r['peak_gb'] * 1e3:,.1f} MB, "
                      f"RSS {r['max_rss_bytes'] / 1e6:,.0f} MB, losses {r['losses']}"
                      + (f", {r['traces']} trace(s)" if "traces" in r else ""),
                      file=sys.stderr, flush=True)
                runs.append(r)

    # Losses at each report, per run: ours prints 3 decimals.
    agree = True
    for r in runs:
        if r["side"] != "rust":
            continue
        for q in runs:
            if q["side"] == "python" and q["checkpoint"] == r["checkpoint"]:
                agree &= all(abs(x - round(y, 3)) < 1e-9 for x, y in zip(r["losses"], q["losses"]))
    shape = pathlib.Path(a.data) / "bench.json"
    width = json.loads(shape.read_text())["batch_width"] if shape.exists() else "?"
    meta = {
        "command": a.command or " ".join(["bench/lora/bench.py"] + sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "device": device_name(a.python),
        "model": model_summary(a.model),
        "batch_width": width,
        "load_before": " ".join(f"{x:.1f}" for x in load_before),
        "load_after": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "losses_agree": agree,
        "args": vars(a),
    }
    write_results(a, runs, meta)
    print(pathlib.Path(a.out + ".md").read_text())
    bad = [r for r in runs if r["side"] == "rust" and r["traces"] != 1]
    if bad:
        sys.exit(f"our training step was traced {[r['traces'] for r in bad]} times, not once")


if __name__ == "__main__":
    main()
