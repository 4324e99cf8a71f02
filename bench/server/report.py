#!/usr/bin/env python3
"""The tables of bench/server/run.sh from its work folder: per side (`mlx_lm`, `rust`) and
client count C, `SIDE-C.json` (bench/server/load.py's line), `rust-C.metrics-before` and
`-after` (the Rust server's /metrics around the level, when read), and `traces` and
`shapes` (its trace count and the batch sizes traced, at the end, when they were read).

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


def metric_sums(text):
    """{name with labels: value} of a Prometheus text's `_sum` and `_count` lines."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name, value = line.rsplit(" ", 1)
        if "_sum" in name or "_count" in name:
            out[name] = float(value)
    return out


def breakdown(work, c):
    """Mean seconds of the Rust server's parts over one level (None where not read)."""
    before, after = (work / f"rust-{c}.metrics-{w}" for w in ("before", "after"))
    if not (before.exists() and after.exists()):
        return None
    b, a = metric_sums(before.read_text()), metric_sums(after.read_text())

    def mean(name, labels=""):
        key = (lambda part: f"{name}_{part}{{{labels}}}" if labels else f"{name}_{part}")
        n = a.get(key("count"), 0) - b.get(key("count"), 0)
        return ((a.get(key("sum"), 0) - b.get(key("sum"), 0)) / n, int(n)) if n else (None, 0)

    return {
        "ttft_s": mean("mlx_lm_time_to_first_token_seconds"),
        "prefill_chunk_s": mean("mlx_lm_prefill_chunk_seconds"),
        "decode_step_s": mean("mlx_lm_decode_step_seconds", 'joined="false"'),
        "decode_step_joined_s": mean("mlx_lm_decode_step_seconds", 'joined="true"'),
    }


def ms(part):
    value, n = part
    return "–" if value is None else f"{value * 1e3:.1f} ({n})"


def main():
    work, levels, results, cmd, machine, model, elapsed, commit = sys.argv[1:]
    work = pathlib.Path(work)
    levels = [int(c) for c in levels.split()]
    runs = {side: {c: json.loads((work / f"{side}-{c}.json").read_text()) for c in levels}
            for side in ("mlx_lm", "rust")}
    traces_file = work / "traces"
    traces = int(traces_file.read_text()) if traces_file.exists() else None
    shapes_file = work / "shapes"
    shapes = (int(float(shapes_file.read_text())) if shapes_file.exists()
              and shapes_file.read_text().strip() else None)
    rows = []
    for c in levels:
        p, r = runs["mlx_lm"][c], runs["rust"][c]
        rows.append(
            f"| {c} | {p['requests']} + {len(p['errors'])} failed | "
            f"{r['requests']} + {len(r['errors'])} failed | {p['tokens_per_s']:.1f} | "
            f"{r['tokens_per_s']:.1f} | {r['tokens_per_s'] / p['tokens_per_s']:.2f} | "
            f"{p['ttft_p50_ms']:.0f} | {r['ttft_p50_ms']:.0f} | {p['ttft_p99_ms']:.0f} | "
            f"{r['ttft_p99_ms']:.0f} |")
    parts = {c: breakdown(work, c) for c in levels}
    part_rows = [f"| {c} | {ms(b['ttft_s'])} | {ms(b['prefill_chunk_s'])} | "
                 f"{ms(b['decode_step_joined_s'])} | {ms(b['decode_step_s'])} |"
                 for c, b in parts.items() if b]
    errors = sorted({e for side in runs.values() for r in side.values() for e in r["errors"]})
    traced = ("The Rust server's trace count was not read in this run" if traces is None else
              f"The Rust server's decode steps were traced {traces} time(s) for the whole run "
              "(warm-up and every level included)")
    if traces is not None and shapes is not None:
        traced += (f", over {shapes} shapes (a compiled step per batch size of 1, 2, 4, ... "
                   "32 rows, attention view of 256, 512, ... positions up to the context "
                   "length and kind, lean for greedy rows or full; the one-row steps of the "
                   "shortest view traced at start-up, each other shape when a step first "
                   "needed it)")
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
    if part_rows:
        md += """
Where the Rust server's time went, per level (its /metrics before and after; mean ms, and how
many): TTFT from a request's arrival at the engine to its first token (no HTTP, no
tokenizer); a step's prefill (a chunk, batch 1 and eager, of each of up to 8 waiting
requests); a decode step (over the fewest rows of 1, 2, 4, ... 32 that hold the running
requests) in which a request joined (its row copied into the slot batch) and one without.

| clients | engine TTFT | a step's prefill | decode step, a request joined | decode step |
|---:|---:|---:|---:|---:|
""" + "\n".join(part_rows) + "\n"
    if errors:
        md += "\nFailed requests' errors: " + "; ".join(f"`{e}`" for e in errors) + ".\n"
    pathlib.Path(results + ".md").write_text(md)
    pathlib.Path(results + ".json").write_text(json.dumps(
        {"command": cmd, "commit": commit, "machine": machine, "model": model, "traces": traces,
         "traced_sizes": shapes,
         "elapsed_s": int(elapsed), "runs": runs,
         "rust_breakdown": {str(c): b for c, b in parts.items()}}, indent=1) + "\n")
    print(md)


if __name__ == "__main__":
    main()
