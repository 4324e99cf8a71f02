#!/usr/bin/env python3
"""Instructions per iteration (valgrind callgrind) for the overhead-bound workloads, Rust and
Python on the same libmlx: a load-independent companion to the timing table (on a shared,
busy machine the timings of these rows scatter by 2x; instruction counts repeat exactly).

Each worker runs standalone twice under callgrind, with BENCH_SAMPLES=1 and =1+K; the
difference divided by K * inner is the cost of one iteration, without start-up, imports,
set-up and warm-up. Prints a markdown table, or writes it with --out.

    instructions.py --rust BIN --python PY [--out FILE]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXTRA = 2  # extra samples in the second run

# (workload, Python implementation)
ROWS = [
    ("w1_scalar_adds_graph", "mlx"),
    ("w1_chain16_graph", "mlx"),
    ("w2_tree_roundtrip", "optree"),
    ("w2_tree_roundtrip", "jax.tree_util"),
    ("w3_compiled_call", "mlx"),
    ("w3_compiled_call_flat", "mlx"),
]


def collected(argv, env):
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/cg"] + argv,
            env=env, capture_output=True, text=True,
        )
        if out.returncode != 0:
            raise SystemExit(f"{argv} failed under callgrind:\n{out.stderr[-2000:]}")
        m = re.search(r"Collected : (\d+)", out.stderr)
        return int(m.group(1))


def per_iteration(argv, inner, impl=None):
    env = dict(os.environ)
    if impl:
        env["BENCH_IMPL"] = impl
    counts = []
    for samples in (1, 1 + EXTRA):
        env["BENCH_SAMPLES"] = str(samples)
        counts.append(collected(argv, env))
    return (counts[1] - counts[0]) / (EXTRA * inner)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rust", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--out")
    args = ap.parse_args()
    listing = subprocess.run([args.rust, "--list"], capture_output=True, text=True, check=True)
    inner = dict((n, int(i)) for n, i in (l.split() for l in listing.stdout.splitlines()))
    rust_cache = {}
    py_cache = {}
    lines = [
        "| workload | Rust instr./iter | Python instr./iter | Python/Rust |",
        "|---|---|---|---|",
    ]
    for name, impl in ROWS:
        if name not in rust_cache:
            rust_cache[name] = per_iteration([args.rust, name], inner[name])
        r = rust_cache[name]
        p = per_iteration(
            [args.python, os.path.join(HERE, "workloads.py"), name],
            inner[name],
            impl if impl != "mlx" else None,
        )
        py_cache[name] = p
        label = name if impl == "mlx" else f"{name} vs {impl}"
        lines.append(f"| {label} | {r:,.0f} | {p:,.0f} | {p / r:.2f}x |")
        print(lines[-1], file=sys.stderr)
    # W3's goal is about overhead: the tree call minus the floor both languages share (MLX's
    # cache lookup and replay, measured as Rust's flat array-level call on the same libmlx).
    floor = rust_cache["w3_compiled_call_flat"]
    ro = rust_cache["w3_compiled_call"] - floor
    po = py_cache["w3_compiled_call"] - floor
    lines.append(
        f"| w3 overhead above the floor (call - Rust flat call) | {ro:,.0f} | {po:,.0f} "
        f"| {po / ro:.2f}x |"
    )
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
