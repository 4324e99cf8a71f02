#!/usr/bin/env python3
"""The tables of bench/server/run.sh from its work folder: per side (`mlx_lm`, `rust`) and
client count C, `SIDE-C.json` (bench/server/load.py's line), and `traces` (the Rust server's
trace count from /metrics, when it was read).

    bench/server/report.py WORK LEVELS PREFIX COMMAND MACHINE MODEL ELAPSED_S COMMIT

Writes PREFIX.md and PREFIX.json. A request that failed (a connection reset, a non-200) is
counted in its side's `failed` column, not hidden: tokens/s counts the completed ones.
"""
import json
import pathlib
import sys


def describe(model):
    config = json.loads((pathlib.Path(model) / "config.json").read_text())
    dtype = config.get("torch_dtype") or config.get("dtype") or "?"
    return (f"{config['model_type']}, {config['num_hidden_layers']} layers of width "
            f"{config['hidden_size']}, a {config['vocab_size']}-token vocabulary, {dtype}, "
            "random weights")


def main():
    work, levels, results, cmd, machine, model, elapsed, commit = sys.argv[1:]
    work = pathlib.Path(work)
    levels = [int(c) for c in levels.split()]
    runs = {side: {c: json.loads((work / f"{side}-{c}.json").read_text()) for c in levels}
            for side in ("mlx_lm", "rust")}
    traces_file = work / "traces"
    traces = int(traces_file.read_text()) if traces_file.exists() else None
    rows = []
    for c in levels:
        p, r = runs["mlx_lm"][c], runs["rust"][c]
        rows.append(
            f"| {c} | {p['requests']} + {len(p['errors'])} failed | "
            f"{r['requests']} + {len(r['errors'])} failed | {p['tokens_per_s']:.1f} | "
            f"{r['tokens_per_s']:.1f} | {r['tokens_per_s'] / p['tokens_per_s']:.2f} | "
            f"{p['ttft_p50_ms']:.0f} | {r['ttft_p50_ms']:.0f} | {p['ttft_p99_ms']:.0f} | "
            f"{r['ttft_p99_ms']:.0f} |")
    errors = sorted({e for side in runs.values() for r in side.values() for e in r["errors"]})
    traced = ("The Rust server's trace count was not read in this run" if traces is None else
              f"The Rust server's decode step was traced {traces} time(s) for the whole run "
              "(warm-up and every level included)")
    md = f"""# HTTP servers: mlx-lm-server (Rust) vs `mlx_lm.server`

`{cmd}`, commit {commit}; {machine}; {elapsed} s. Both servers on the same libmlx (the MLX
0.32.2 wheel), the model `{model}` ({describe(model)}), 32 decode slots each. Per client count
C, the requests are split over C concurrent clients, each streaming greedy completions one
after another (`bench/server/load.py`); every prompt is different. tokens/s: completion tokens
of the completed requests over the level's wall time. TTFT: from sending a request to its
first chunk with text, p50 and p99 over the level's completed requests. One run: read the
ratios, not the digits.

| clients | requests mlx_lm | requests Rust | tokens/s mlx_lm | tokens/s Rust | Rust / mlx_lm | TTFT p50 ms mlx_lm | TTFT p50 ms Rust | TTFT p99 ms mlx_lm | TTFT p99 ms Rust |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
""" + "\n".join(rows) + f"""

{traced}; mlx_lm's batch step is not compiled.
"""
    if errors:
        md += "\nFailed requests' errors: " + "; ".join(f"`{e}`" for e in errors) + ".\n"
    pathlib.Path(results + ".md").write_text(md)
    pathlib.Path(results + ".json").write_text(json.dumps(
        {"command": cmd, "commit": commit, "machine": machine, "model": model, "traces": traces,
         "elapsed_s": int(elapsed), "runs": runs}, indent=1) + "\n")
    print(md)


if __name__ == "__main__":
    main()
