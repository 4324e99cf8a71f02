#!/usr/bin/env bash
# Side-by-side CPU benchmark of the HTTP servers: mlx-lm-server (examples/server.rs) against
# mlx_lm.server 0.32.2, both on the same libmlx (the mlx-cpu==0.32.2 wheel), the same
# random-weight model and the same prompts, in one command:
#   bench/server/run.sh [--clients "1 8 32"] [--requests-per-level R] [--max-tokens N]
#                       [--prompt-words W] [--model DIR] [--results PREFIX] [--bin SERVER]
#                       [--dtype bfloat16|float32] [--layers L] [--logprobs N]
# 1. makes the venv (scripts/python-venv; MLX_VENV picks another) and the model
#    (bench/lm/make_model.py --arch smollm2_384: SmolLM2-135M's 30 layers with the test
#    tokenizer's 384-token vocabulary, so every generated token decodes to text; --dtype and
#    --layers: its dtype, bfloat16 by default, and its first L layers) if missing;
# 2. builds examples/server.rs in release against the wheel's libmlx and checks the link
#    (--bin: a server built elsewhere, as scripts/gpu-suite server-bench carries it; with
#    MLX_PYTHON set, that Python and its MLX instead of the venv's);
# 3. per side: starts the server (32 decode slots each; ours with 512 positions per slot),
#    one warm-up request, then for each client count C, R requests split over C concurrent
#    streaming clients (bench/server/load.py: greedy completions of N tokens, every prompt
#    different), then stops it; ours reports its decode steps' trace count (one per batch
#    size) and, per level,
#    where its time went (/metrics before and after the level);
# 4. writes PREFIX.md and PREFIX.json (default bench/server/RESULTS; bench/server/report.py):
#    tokens/s (completion tokens over wall time), TTFT p50/p99 and the requests that failed,
#    per side and client count, and the Rust server's mean prefill chunk and decode step.
# --logprobs N asks both servers for N top log-probabilities per token, so that each token
# sends a chunk and load.py's first chunk times the first token even where its text is held
# back (a lone space or part of a character waits for the next token in both servers).
# One run, no repetitions: the machine is shared, so read the ratios, not the digits.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmd="bench/server/run.sh${*:+ $*}"
levels="1 8 32" R=32 N=32 W=40 model=/tmp/smollm2-384-random results=bench/server/RESULTS bin=
load_args=()
model_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --clients) levels=$2; shift 2 ;;
    --requests-per-level) R=$2; shift 2 ;;
    --max-tokens) N=$2; shift 2 ;;
    --prompt-words) W=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --dtype) model_args+=(--dtype "$2"); shift 2 ;;
    --layers) model_args+=(--layers "$2"); shift 2 ;;
    --logprobs) load_args+=(--logprobs "$2"); shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
started=$(date +%s)
if [ -n "${MLX_PYTHON:-}" ]; then
  py=$MLX_PYTHON
else
  py=$(scripts/python-venv)/bin/python
fi
mlx_dir=$("$py" -c 'import mlx; print(list(mlx.__path__)[0])')
if [ ! -f "$model/model.safetensors" ]; then
  echo "=== model: $model ===" >&2
  "$py" bench/lm/make_model.py --arch smollm2_384 ${model_args[@]+"${model_args[@]}"} --out "$model" >&2
fi

if [ -z "$bin" ]; then
  target=${CARGO_TARGET_DIR:-target/mlx-dir}
  echo "=== examples/server.rs against the wheel's libmlx ($mlx_dir/lib) ===" >&2
  MLX_DIR=$mlx_dir cargo build --release -j2 --quiet --example server --target-dir "$target"
  bin=$target/release/examples/server
  libs=$(ldd "$bin")  # not piped into grep -q: SIGPIPE under pipefail
  grep -qF "$mlx_dir/lib/libmlx.so" <<<"$libs" || { echo "$bin does not link the wheel's libmlx.so:" >&2; echo "$libs" >&2; exit 1; }
fi

work=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port

wait_ready() {
  for _ in $(seq 1 600); do
    if "$py" -c "import urllib.request; urllib.request.urlopen('$base/health', timeout=2)" 2>/dev/null; then return 0; fi
    kill -0 "$server_pid" 2>/dev/null || { echo "the server exited" >&2; return 1; }
    sleep 0.5
  done
  echo "the server did not start" >&2
  return 1
}

# The Rust server's Prometheus text (its step and prefill timings are read around each level).
metrics() {
  "$py" -c "import urllib.request; print(urllib.request.urlopen('$base/metrics').read().decode())"
}

for side in mlx_lm rust; do
  echo "=== $side ===" >&2
  if [ $side = mlx_lm ]; then
    "$py" -m mlx_lm.server --model "$model" --port "$port" --decode-concurrency 32 --max-tokens "$N" \
      --log-level WARNING >"$work/$side.log" 2>&1 &
  else
    "$bin" --model "$model" --port "$port" --decode-concurrency 32 --context-length 512 \
      --max-tokens "$N" --log-requests false >"$work/$side.log" 2>&1 &
  fi
  server_pid=$!
  wait_ready
  "$py" bench/server/load.py "$base" --clients 1 --requests 1 --max-tokens 4 --tag warmup >/dev/null
  for c in $levels; do
    echo "--- $c clients ---" >&2
    [ $side = mlx_lm ] || metrics >"$work/$side-$c.metrics-before"
    "$py" bench/server/load.py "$base" --clients "$c" --requests $(( (R + c - 1) / c )) \
      --max-tokens "$N" --prompt-words "$W" --tag "$side-$c" ${load_args[@]+"${load_args[@]}"} \
      >"$work/$side-$c.json"
    [ $side = mlx_lm ] || metrics >"$work/$side-$c.metrics-after"
    cat "$work/$side-$c.json" >&2
  done
  if [ $side = rust ]; then
    metrics >"$work/rust.metrics-end"
    awk '/^mlx_lm_step_traces /{print $2}' "$work/rust.metrics-end" >"$work/traces"
    awk '/^mlx_lm_step_shapes /{print $2}' "$work/rust.metrics-end" >"$work/shapes"
  fi
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
done

machine="$(nproc) CPU cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(free -g | awk '/^Mem:/{print $2}') GiB RAM"
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
[ -z "$gpu_name" ] || machine="$gpu_name (MLX's default device), $machine"
"$py" bench/server/report.py "$work" "$levels" "$results" "$cmd" "$machine" "$model" \
  "$(( $(date +%s) - started ))" "$(git rev-parse --short HEAD 2>/dev/null || echo '?')"
