"""Decode of a language model split over the GPUs of one machine, NCCL (issue 43).

    python3 bench/lm/split.py --lm-bench PATH --launch PATH --part check|big|fits --out PREFIX

The models are Llama-3.1-70B-shaped (80 layers of 8192, 64 heads, 8 key/value heads, MLP 28672,
vocabulary 128256), its 40-layer half, and Llama-3.2-1B-shaped, with random weights that
`lm_bench --random-weights` draws in each process after the split (`mlx::lm::random_model`):
no files, each GPU holding its share alone. The 70B model in bfloat16 (141 GB) does not fit
one GPU; its 40-layer half (71 GB) does.

- `check`: greedy tokens of the 1B model in float32 (TF32 off) split over 2 GPUs, tensor
  parallel, against one process's.
- `huge`: a Mistral-Large-2-shaped model (123B, 246 GB in bfloat16) over 2 (and 4) GPUs,
  and its 44-layer half on one.
- `mlx_lm`: mlx_lm's own split of the 70B model (bench/lm/split_mlx_lm.py) over 2 (and 4)
  GPUs, and its 40-layer half on one.
- `big`: the 70B model over 2 GPUs (and 4 where there are), tensor parallel. By layers needs
  send/recv, which MLX 0.32.2 has no CUDA implementation of.
- `fits`: the 40-layer half on one GPU and over 2 (and 4), tensor parallel: with 2 GPUs, each reads
  per token what one GPU reads for the half model alone, so the 70B row over 2 GPUs against
  the half on one shows what the split costs.

Each row is `lm_bench`'s median of its runs (128-token prompt, 128 greedy tokens); rank 0's
JSON is kept whole in PREFIX-PART.json and a table row printed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

LLAMA_70B = {
    "model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
    "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
    "vocab_size": 128256, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
    "max_position_embeddings": 131072, "tie_word_embeddings": False,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    "attention_bias": False, "mlp_bias": False, "hidden_act": "silu",
}
# Mistral-Large-2-shaped (123B): 246 GB in bfloat16, more than one H200 (150 GB) holds.
MISTRAL_LARGE = dict(LLAMA_70B, hidden_size=12288, intermediate_size=28672, num_hidden_layers=88,
                     num_attention_heads=96, num_key_value_heads=8, head_dim=128,
                     vocab_size=32768, rope_theta=1000000.0)
del MISTRAL_LARGE["rope_scaling"]
LLAMA_1B = dict(LLAMA_70B, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                tie_word_embeddings=True)


def gpus():
    """How many GPUs this machine has (nvidia-smi's list)."""
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    return sum(1 for l in out.splitlines() if l.startswith("GPU"))


def write_model(root, name, config):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f)
    return d


def launched(a, cmd, ranks, env=None):
    """Rank 0's JSON line of `cmd` run alone or by the launcher over `ranks` NCCL ranks;
    `None` (the output shown) when there is none."""
    if ranks > 1:
        cmd = [a.launch, "-n", str(ranks), "--backend", "nccl", "--timeout", str(a.timeout),
               "--"] + cmd
    e = dict(os.environ, **(env or {}))
    e.pop("LD_LIBRARY_PATH", None)
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=a.timeout + 30)
    for line in p.stdout.splitlines():
        if '"impl"' in line:
            return json.loads(line[line.index("{"):])
    sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
    sys.stderr.write(f"no result from {' '.join(cmd)} (exit {p.returncode})\n")
    return None


def run(a, model, prompt, ranks, split, dtype, tokens, reps, env=None):
    bench = [a.lm_bench, "--model", model, "--prompt", prompt, "--random-weights", "0",
             "--dtype", dtype, "--max-tokens", str(tokens), "--reps", str(reps),
             "--warmup", "1", "--warmup-tokens", "16"]
    if split == "pipeline":
        bench.append("--pipeline")
    r = launched(a, bench, ranks, env)
    if r is None:
        raise SystemExit("lm_bench gave no result")
    return r


def row(name, ranks, split, r):
    g = r.get("group") or {}
    ms = 1e3 / r["median_decode_tps"]
    share = r["weight_bytes"] / 1e9
    comm = g.get("comm_ms_per_token")
    kinds = ", ".join(f"{v} {k}" for k, v in (g.get("collectives_per_step") or {}).items())
    return (f"| {name} | {ranks} | {split or 'whole'} | {share:.1f} | {r['peak_memory'] / 1e9:.1f} "
            f"| {r['median_decode_tps']:.1f} | {ms:.2f} | {share / ms:.0f} "
            f"| {kinds or '-'} | {'-' if comm is None else f'{comm:.2f}'} "
            f"| {r['median_prefill_tps']:.0f} | {r['load_s']:.0f} | {r['traces_per_generation']} |")


HEADER = ("| model | GPUs | split | weights per GPU (GB) | peak per GPU (GB) | decode tok/s "
          "| ms/token | weight TB/s per GPU | collectives per step | their time alone (ms/token) "
          "| prefill tok/s | draw + split (s) | traces |\n|" + "---|" * 13)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lm-bench", required=True)
    p.add_argument("--launch", required=True)
    p.add_argument("--part", choices=["check", "big", "fits", "mlx_lm", "huge"], required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=int, default=540)
    a = p.parse_args()
    # Tensor parallel over 2 GPUs, and 4 where the machine has them.
    a.ranks = [n for n in (2, 4) if n <= gpus()]
    root = tempfile.mkdtemp(prefix="split-bench-")
    prompt = os.path.join(root, "prompt.json")
    with open(prompt, "w") as f:
        json.dump([(i * 7919 + 13) % 32000 for i in range(128)], f)  # in every vocabulary here
    results = {}
    if a.part == "check":
        m = write_model(root, "llama-1b", LLAMA_1B)
        env = {"MLX_ENABLE_TF32": "0"}
        whole = run(a, m, prompt, 1, None, "float32", 32, 1, env)
        results["whole"] = whole
        # By layers needs send/recv, which MLX 0.32.2 has no CUDA implementation of
        # ("Recv has no CUDA implementation."): tensor parallel alone.
        for split in ["tensor"]:
            r = run(a, m, prompt, 2, split, "float32", 32, 1, env)
            results[split] = r
            want, got = whole["tokens"][0], r["tokens"][0]
            same = next((i for i, (x, y) in enumerate(zip(want, got)) if x != y), len(want))
            print(f"1B float32, {split} over 2 GPUs: {same} of {len(want)} greedy tokens equal "
                  f"one process's; traces {r['traces_per_generation']}", flush=True)
    elif a.part == "mlx_lm":
        # mlx_lm's own split (bench/lm/split_mlx_lm.py) of the same shapes.
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "split_mlx_lm.py")
        for name, config, ranks in [("70B", LLAMA_70B, n) for n in a.ranks] + [
                ("70B, 40 layers", dict(LLAMA_70B, num_hidden_layers=40), 1)]:
            m = write_model(root, name.replace(" ", "").replace(",", "-"), config)
            r = launched(a, ["python3", script, os.path.join(m, "config.json"), prompt], ranks)
            if r is None:
                continue
            results[f"{name} {ranks}"] = r
            print(f"mlx_lm {name} on {ranks} GPU(s): {r['median_decode_tps']:.1f} tok/s, "
                  f"{r['weight_bytes'] / 1e9:.1f} GB per GPU, peak {r['peak_memory'] / 1e9:.1f} GB, "
                  f"load {r['load_s']:.0f} s", flush=True)
    else:
        print(HEADER, flush=True)
        half = dict(LLAMA_70B, num_hidden_layers=40)
        cases = ([("70B", LLAMA_70B, n, "tensor") for n in a.ranks]
                 if a.part == "big" else
                 [("123B", MISTRAL_LARGE, n, "tensor") for n in a.ranks]
                 + [("123B, 44 layers", dict(MISTRAL_LARGE, num_hidden_layers=44), 1, None)]
                 if a.part == "huge" else
                 [("70B, 40 layers", half, 1, None)]
                 + [("70B, 40 layers", half, n, "tensor") for n in a.ranks])
        for name, config, ranks, split in cases:
            m = write_model(root, name.replace(" ", "").replace(",", "-"), config)
            r = run(a, m, prompt, ranks, split, "bfloat16", 128, 3)
            results[f"{name} {ranks} {split}"] = r
            print(row(name, ranks, split, r), flush=True)
    with open(f"{a.out}-{a.part}.json", "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
