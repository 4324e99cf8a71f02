#!/usr/bin/env bash
# Side-by-side CPU benchmark of language-model generation: Rust mlx::lm (examples/lm_bench.rs)
# against Python mlx_lm 0.32.2 (bench/lm/mlx_lm_bench.py), both on the same libmlx (the
# mlx-cpu==0.32.2 wheel), the same random-weight Qwen3-0.6B-shaped model and the same prompt
# token ids, in one command:
#   bench/lm/run.sh [--prompt-len P] [--max-tokens N] [--reps R] [--rounds K]
#                   [--dtype bfloat16|float32] [--model DIR] [--results PREFIX]
# 1. makes the venv (scripts/python-venv) and the model (bench/lm/make_model.py) if missing;
# 2. builds examples/lm_bench.rs in release against the wheel's libmlx (MLX_DIR,
#    target/mlx-dir) and checks that it links it;
# 3. writes P random prompt ids, then alternates K rounds of Python and Rust processes, each
#    loading the model, one warm-up generation (the whole prompt, 4 tokens), then R measured
#    generations of N greedy tokens;
# 4. pools each side's measured runs, takes medians and writes PREFIX.md and PREFIX.json
#    (default bench/lm/RESULTS), keeping a hand-written "## Notes" section of an earlier
#    PREFIX.md. Fails if a Rust generation traced its decode step more than once.
# Defaults (P=256, N=64, R=2, K=2, bfloat16) take about 16 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmd="bench/lm/run.sh${*:+ $*}"
P=256 N=64 R=2 K=2 dtype=bfloat16 model= results=bench/lm/RESULTS
while [ $# -gt 0 ]; do
  case "$1" in
    --prompt-len) P=$2; shift 2 ;;
    --max-tokens) N=$2; shift 2 ;;
    --reps) R=$2; shift 2 ;;
    --rounds) K=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$model" ]; then
  model=/tmp/qwen3-0.6b-random
  [ "$dtype" = bfloat16 ] || model=$model-$dtype
fi
started=$(date +%s)

venv=$(scripts/python-venv)
py=$venv/bin/python
mlx_dir=$("$py" -c 'import mlx; print(list(mlx.__path__)[0])')

if ! "$py" -c "import json, sys; sys.exit(json.load(open('$model/config.json')).get('torch_dtype') != '$dtype')" 2>/dev/null ||
  [ ! -f "$model/model.safetensors" ]; then
  echo "=== model: $model ($dtype) ===" >&2
  "$py" bench/lm/make_model.py --out "$model" --dtype "$dtype" >&2
fi

echo "=== examples/lm_bench.rs against the wheel's libmlx ($mlx_dir/lib) ===" >&2
MLX_DIR=$mlx_dir cargo build --release -j2 --quiet --example lm_bench --target-dir target/mlx-dir
bin=target/mlx-dir/release/examples/lm_bench
libs=$(ldd "$bin")  # not piped into grep -q: SIGPIPE under pipefail
grep -qF "$mlx_dir/lib/libmlx.so" <<<"$libs" || { echo "$bin does not link the wheel's libmlx.so:" >&2; echo "$libs" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" bench/lm/mlx_lm_bench.py --write-prompt "$work/prompt.json" --prompt-len "$P"
common=(--model "$model" --prompt "$work/prompt.json" --max-tokens "$N" --reps "$R" --warmup 1 --warmup-tokens 4)
for k in $(seq 1 "$K"); do
  echo "=== round $k/$K: mlx_lm (P=$P, N=$N, $R runs) ===" >&2
  "$py" bench/lm/mlx_lm_bench.py "${common[@]}" >"$work/python-$k.json"
  echo "=== round $k/$K: Rust ===" >&2
  "$bin" "${common[@]}" >"$work/rust-$k.json"
done

machine="$(nproc) CPU cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(free -g | awk '/^Mem:/{print $2}') GiB RAM"
blas=$(ldd "$mlx_dir/lib/libmlx.so" | awk '/blas|lapack/{print $1}' | tr '\n' ' ')
"$py" - "$work" "$K" "$results" "$cmd" "$machine" "$blas" "$model" "$dtype" "$(( $(date +%s) - started ))" <<'PY'
import json, pathlib, re, statistics, subprocess, sys

work, K, results, cmd, machine, blas, model, dtype, elapsed = sys.argv[1:]
work, K = pathlib.Path(work), int(K)
sides = {}
for side in ("python", "rust"):
    rounds = [json.loads((work / f"{side}-{k}.json").read_text()) for k in range(1, K + 1)]
    runs = [r for rd in rounds for r in rd["runs"]]
    sides[side] = {"rounds": rounds, "runs": runs,
                   "prefill_tps": statistics.median(r["prefill_tps"] for r in runs),
                   "decode_tps": statistics.median(r["decode_tps"] for r in runs)}
py, rs = sides["python"], sides["rust"]
traces = [t for rd in rs["rounds"] for t in rd["traces_per_generation"]]
assert set(traces) == {1}, f"the decode step was not traced exactly once per generation: {traces}"
same_tokens = py["rounds"][0]["first_tokens"] == rs["rounds"][0]["first_tokens"]
first = py["rounds"][0]
# The libraries' own numbers: mlx_lm's stream_generate reports N / decode time, Rust's
# stats() (N - 1) / decode time; prompt_tps is P / time to the first token on both.
lib = {
    "mlx_lm_stream_generate_generation_tps": statistics.median(r["stream_generate_tps"] for r in py["runs"]),
    "rust_stats_generation_tps": statistics.median(r["stats"]["generation_tps"] for r in rs["runs"]),
    "rust_stats_prompt_tps": statistics.median(r["stats"]["prompt_tps"] for r in rs["runs"]),
}
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
summary = {
    "command": cmd, "machine": machine, "libmlx_blas": blas.strip(), "commit": commit,
    "model": model, "dtype": dtype, "mlx_version": first["mlx_version"],
    "mlx_lm_version": first["mlx_lm_version"],
    "prompt_tokens": first["prompt_tokens"], "generation_tokens": first["generation_tokens"],
    "rounds": K, "runs_per_round": len(first["runs"]),
    "mlx_lm": {"prefill_tps": py["prefill_tps"], "decode_tps": py["decode_tps"]},
    "rust": {"prefill_tps": rs["prefill_tps"], "decode_tps": rs["decode_tps"],
             "traces_per_generation": traces},
    "ratio_rust_over_mlx_lm": {"prefill": rs["prefill_tps"] / py["prefill_tps"],
                               "decode": rs["decode_tps"] / py["decode_tps"]},
    "library_reported": lib,
    "same_greedy_tokens": same_tokens,
    "elapsed_s": int(elapsed),
    "raw": {"mlx_lm": py["rounds"], "rust": rs["rounds"]},
}
pathlib.Path(results + ".json").write_text(json.dumps(summary, indent=1) + "\n")

def per_round(side, key):
    return ", ".join(f"{statistics.median(r[key] for r in rd['runs']):.3f}" for rd in sides[side]["rounds"])

P, N = summary["prompt_tokens"], summary["generation_tokens"]
md = f"""# Language-model generation: Rust `mlx::lm` vs Python `mlx_lm` (CPU)

A random-weight Qwen3-0.6B-shaped model (`bench/lm/make_model.py`: mlx_lm {summary['mlx_lm_version']}'s
own classes, 28 layers, hidden 1024, vocab 151936, tied embeddings, {dtype}), a prompt of
{P} random token ids, {N} greedy tokens, through `mlx_lm.generate.generate_step` (Python) and
`mlx::lm::generate_step` (Rust, `examples/lm_bench.rs`), both on the same libmlx: the
`mlx-cpu=={summary['mlx_version']}` wheel (the Rust example built with `MLX_DIR`).

| | prefill tok/s | decode tok/s |
|---|---:|---:|
| mlx_lm {summary['mlx_lm_version']} (Python) | {py['prefill_tps']:.3f} | {py['decode_tps']:.3f} |
| mlx::lm (Rust) | {rs['prefill_tps']:.3f} | {rs['decode_tps']:.3f} |
| ratio Rust / mlx_lm | {summary['ratio_rust_over_mlx_lm']['prefill']:.3f} | {summary['ratio_rust_over_mlx_lm']['decode']:.3f} |

- prefill tok/s = {P} / (time from calling `generate_step` to the first token): the prompt
  prefilled and the first decode step, what mlx_lm's `stream_generate` reports as `prompt_tps`.
- decode tok/s = {N - 1} / (time from the first token to the {N}-th). (mlx_lm's
  `stream_generate` divides {N}, not {N - 1}, by that time: its `generation_tps` here would
  be {lib['mlx_lm_stream_generate_generation_tps']:.3f}; Rust's `TokenGenerator::stats()` reports
  {lib['rust_stats_generation_tps']:.3f}.)
- Medians of {K} rounds x {summary['runs_per_round']} runs per side; the rounds alternate
  (Python, Rust, Python, ...), each process loading the model and making one unmeasured
  warm-up generation (the whole prompt, 4 tokens) first. Per-round medians, prefill:
  mlx_lm {per_round('python', 'prefill_tps')}; Rust {per_round('rust', 'prefill_tps')}.
  Decode: mlx_lm {per_round('python', 'decode_tps')}; Rust {per_round('rust', 'decode_tps')}.
- Rust's compiled decode step was traced {'once' if set(traces) == {1} else traces} in each of
  its {len(traces)} generations (warm-ups included; the example fails otherwise).
- Same greedy tokens on both sides: {'yes' if same_tokens else 'NO'}.
- Machine: {machine}. The wheel's libmlx runs matmuls through {summary['libmlx_blas'] or 'its own code'}
  (a reference BLAS, one thread), which is why the absolute numbers are low.
- Commit {commit}; the whole run took {int(elapsed) // 60} min {int(elapsed) % 60} s.

Command:

```
{cmd}
```

Raw runs: `{pathlib.Path(results).name}.json`.
"""
# A hand-written "## Notes" section of an earlier PREFIX.md is kept.
old = pathlib.Path(results + ".md")
notes = re.search(r"^## Notes\b.*", old.read_text(), re.M | re.S) if old.exists() else None
if notes:
    md += "\n" + notes.group(0)
old.write_text(md)
print(md)
PY
