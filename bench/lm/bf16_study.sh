#!/usr/bin/env bash
# How far a bfloat16 model's compiled decode step (ours) and mlx_lm's eager one each are from
# a float32 run of the same weights, on this machine's CPU, linked to the mlx-cpu==0.32.2
# wheel's libmlx (examples/lm_bf16_study.rs says what it measures):
#   bench/lm/bf16_study.sh [--prompts N] [--prompt-len P] [--steps S] [--seed S]
# The model: a random-weight SmolLM2-135M-shaped checkpoint in bfloat16 written by mlx_lm's
# own classes (bench/lm/make_model.py --arch smollm2, 0.27 GB in /tmp). Writes
# bench/lm/bf16-study-cpu.json. Defaults (8 prompts of 64 tokens, 32 steps) take about 12
# minutes on 2 cores; scripts/gpu-suite bf16-study runs the same on an NVIDIA GPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=$(scripts/python-venv)
mlx_dir=$("$venv/bin/python" -c 'import mlx; print(list(mlx.__path__)[0])')
model=/tmp/smollm2-135m-random
[ -f "$model/model.safetensors" ] || "$venv/bin/python" bench/lm/make_model.py --arch smollm2 --out "$model" >&2
MLX_DIR=$mlx_dir cargo build --release -j2 --quiet --example lm_bf16_study --target-dir target/mlx-dir
target/mlx-dir/release/examples/lm_bf16_study --model "$model" --prompts 8 --prompt-len 64 --steps 32 \
  --json bench/lm/bf16-study-cpu.json "$@"
