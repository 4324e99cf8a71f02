#!/usr/bin/env python3
"""A random-weight model directory shaped like Qwen3-0.6B, Qwen3.5-0.8B,
Qwen3-8B, SmolLM2-135M, LFM2-1.2B, Mamba-130M, Mamba2-1.3B, Nemotron-H-8B, Qwen3-30B-A3B or RWKV7-0.1B, written by mlx_lm
0.32.2 itself.

The model is built by mlx_lm's own classes (`mlx_lm.utils._get_classes`) from the config
below and saved with `save_model` / `save_config`, as `mlx_lm.convert` writes a checkpoint
(see scripts/golden/lm.py, which makes the small golden models the same way); with
--quantize, quantized first by mlx_lm's `quantize_model` (affine, group size 64), as
`mlx_lm.convert -q` does. The tokenizer files are the small test tokenizer of
tests/data/lm-models/qwen3: the benchmark feeds token ids directly, so the tokenizer need not
cover the vocabulary.

    bench/lm/make_model.py [--arch qwen3|qwen3_8b|qwen3_5|smollm2|smollm2_384|qwen3_384|qwen3_tiny|lfm2|mamba|mamba2|nemotron_h|qwen3_moe|rwkv7] [--out DIR]
                           [--dtype bfloat16|float32] [--layers N]
                           [--quantize BITS] [--seed S] [--residual-scale S] [--tie]

--residual-scale S multiplies every layer's output projections (attention `o_proj` and MLP
`down_proj`) by S; with S = 0 and --tie (tied embeddings), the model's greedy next token is its
input token (the residual stream is the token's own embedding, read back by the same matrix):
two such models, whatever their sizes, agree on every greedy token. bench/lm/speculative.py
makes its draft and target so, where random weights would otherwise never agree.

Default output: /tmp/qwen3-0.6b-random (about 1.2 GB in bfloat16, not committed).
"""
import argparse
import pathlib
import shutil

import mlx.core as mx
import mlx_lm
from mlx.utils import tree_flatten
from mlx_lm.utils import _get_classes, quantize_model, save_config, save_model

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "tests" / "data" / "lm-models" / "qwen3"

# Qwen/Qwen3-0.6B's config.json (the fields mlx_lm's qwen3 reads).
QWEN3 = {
    "model_type": "qwen3",
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000,
    "max_position_embeddings": 40960,
    "tie_word_embeddings": True,
}

# Qwen/Qwen3-8B's config.json (the fields mlx_lm's qwen3 reads): 36 layers, hidden 4096, 32
# query / 8 key-value heads of 128, MLP 12288, untied embeddings.
QWEN3_8B = dict(QWEN3, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=False)

# Qwen3.5-0.8B's text model: hidden 1024, 24 layers, full attention every 4th layer (8 query
# and 2 key/value heads of 256, a quarter of each rotated), 16 linear-attention (gated delta
# net) key and value heads of 128, MLP 3584, vocabulary 248320, tied embeddings.
QWEN3_5 = {
    "model_type": "qwen3_5",
    "text_config": {
        "model_type": "qwen3_5_text",
        "hidden_size": 1024,
        "intermediate_size": 3584,
        "num_hidden_layers": 24,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "full_attention_interval": 4,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 16,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
        "vocab_size": 248320,
        "rms_norm_eps": 1e-6,
        "max_position_embeddings": 262144,
        "tie_word_embeddings": True,
        "rope_parameters": {"rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                            "type": "default"},
    },
    "tie_word_embeddings": True,
}

# HuggingFaceTB/SmolLM2-135M-Instruct's config.json (the fields mlx_lm's llama reads): 30
# layers, hidden 576, 9 query / 3 key-value heads of 64, MLP 1536, vocabulary 49152, tied.
SMOLLM2 = {
    "model_type": "llama",
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "head_dim": 64,
    "vocab_size": 49152,
    "rms_norm_eps": 1e-5,
    "rope_theta": 100000.0,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": True,
}

# SmolLM2-135M's layers with the test tokenizer's 384-token vocabulary, so every token the
# model generates decodes to text: for benchmarks that go through text (bench/server).
SMOLLM2_384 = dict(SMOLLM2, vocab_size=384)
QWEN3_384 = dict(QWEN3, vocab_size=384)

# Qwen3's layout at hidden 64 (4 layers, 4 query / 2 key-value heads of 16, MLP 192, the
# test tokenizer's 384 tokens): small enough to train on a loaded 2-core CPU in minutes with
# the wheel's reference BLAS (bench/lora).
QWEN3_TINY = dict(QWEN3, hidden_size=64, intermediate_size=192, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=384)

# LiquidAI/LFM2-1.2B's config.json (the fields mlx_lm's lfm2 reads): 16 layers, 10 gated short
# convolutions and 6 attention layers (32 query / 8 key-value heads of 64), hidden 2048, MLP
# 12288 auto-adjusted to 8192, vocabulary 65536, tied.
LFM2 = {
    "model_type": "lfm2",
    "vocab_size": 65536,
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 128000,
    "norm_eps": 1e-5,
    "conv_bias": False,
    "conv_L_cache": 3,
    "block_dim": 2048,
    "block_ff_dim": 12288,
    "block_multiple_of": 256,
    "block_ffn_dim_multiplier": 1.0,
    "block_auto_adjust_ff_dim": True,
    "full_attn_idxs": [2, 5, 8, 10, 12, 14],
    "rope_theta": 1000000.0,
    "tie_word_embeddings": True,
}

# state-spaces/mamba-130m-hf's config.json (the fields mlx_lm's mamba reads): 24 layers,
# hidden 768, inner 1536, state 16, Δ rank 48, vocabulary 50280, tied.
MAMBA = {
    "model_type": "mamba",
    "vocab_size": 50280,
    "hidden_size": 768,
    "intermediate_size": 1536,
    "state_size": 16,
    "num_hidden_layers": 24,
    "conv_kernel": 4,
    "time_step_rank": 48,
    "use_bias": False,
    "use_conv_bias": True,
    "layer_norm_epsilon": 1e-5,
    "tie_word_embeddings": True,
}

# state-spaces/mamba2-1.3b (mamba_ssm's config: d_model 2048, n_layer 48, Mamba-2 defaults
# d_state 128, headdim 64, expand 2, ngroups 1, d_conv 4, vocabulary 50277 padded to a
# multiple of 16) in the fields mlx_lm's mamba2 reads.
MAMBA2 = {
    "model_type": "mamba2",
    "vocab_size": 50288,
    "hidden_size": 2048,
    "expand": 2,
    "intermediate_size": 4096,
    "num_heads": 64,
    "head_dim": 64,
    "state_size": 128,
    "num_hidden_layers": 48,
    "layer_norm_epsilon": 1e-5,
    "conv_kernel": 4,
    "n_groups": 1,
    "use_bias": False,
    "use_conv_bias": True,
    "tie_word_embeddings": True,
    "time_step_limit": [0.0, float("inf")],
    "time_step_rank": "auto",
    "chunk_size": 256,
}

# Nemotron-H-8B's shape: 52 blocks, 24 Mamba-2 (M: 128 heads of 64, state 128, 8 groups),
# 4 attention (*: 32 query / 8 key-value heads of 128) and 24 ReLU-squared MLPs (-: 21504),
# hidden 4096, vocabulary 131072, untied.
NEMOTRON_H = {
    "model_type": "nemotron_h",
    "vocab_size": 131072,
    "hidden_size": 4096,
    "intermediate_size": 21504,
    "max_position_embeddings": 8192,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "attention_bias": False,
    "mamba_num_heads": 128,
    "mamba_head_dim": 64,
    "mamba_proj_bias": False,
    "ssm_state_size": 128,
    "conv_kernel": 4,
    "n_groups": 8,
    "mlp_bias": False,
    "layer_norm_epsilon": 1e-5,
    "use_bias": False,
    "use_conv_bias": True,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "mlp_hidden_act": "relu2",
    "mamba_hidden_act": "silu",
    "residual_in_fp32": False,
    "tie_word_embeddings": False,
    "time_step_limit": [0.0, float("inf")],
}

# Qwen/Qwen3-30B-A3B's config.json (the fields mlx_lm's qwen3_moe reads): 48 layers, each a
# mixture of 128 experts of width 768, 8 routed per token (normalized), 32 query / 4 key-value
# heads of 128, hidden 2048, vocabulary 151936, untied. About 61 GB in bfloat16 and 17 GB in
# 4 bits: make it with --quantize 4 on a machine with the memory.
QWEN3_MOE = {
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "num_hidden_layers": 48,
    "intermediate_size": 6144,
    "num_attention_heads": 32,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "moe_intermediate_size": 768,
    "rms_norm_eps": 1e-6,
    "vocab_size": 151936,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": False,
    "max_position_embeddings": 40960,
    "norm_topk_prob": True,
}

# RWKV7-0.1B (fla-hub/rwkv7-0.1B-g1's config.json, the fields mlx_lm's rwkv7 reads): 12
# layers of 768, heads of 64, LoRA ranks decay 64 / a 64 / v 32 / gate 128, vocabulary 65536,
# untied.
RWKV7 = {
    "model_type": "rwkv7",
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "head_dim": 64,
    "norm_eps": 1e-5,
    "decay_low_rank_dim": 64,
    "a_low_rank_dim": 64,
    "v_low_rank_dim": 32,
    "gate_low_rank_dim": 128,
    "vocab_size": 65536,
    "tie_word_embeddings": False,
}

ARCHS = {"qwen3": QWEN3, "qwen3_8b": QWEN3_8B, "qwen3_5": QWEN3_5, "smollm2": SMOLLM2, "smollm2_384": SMOLLM2_384,
         "qwen3_384": QWEN3_384, "qwen3_tiny": QWEN3_TINY, "lfm2": LFM2, "mamba": MAMBA, "mamba2": MAMBA2, "nemotron_h": NEMOTRON_H,
         "qwen3_moe": QWEN3_MOE, "rwkv7": RWKV7}


def with_layers(config, n):
    """`config` cut to its first `n` layers (a hybrid's layer pattern cut with them)."""
    inner = config.get("text_config")
    if inner is not None:
        return dict(config, text_config=with_layers(inner, n))
    assert 0 < n <= config["num_hidden_layers"], f"--layers {n}: the shape has {config['num_hidden_layers']}"
    out = dict(config, num_hidden_layers=n)
    if "hybrid_override_pattern" in out:
        out["hybrid_override_pattern"] = out["hybrid_override_pattern"][:n]
    if "full_attn_idxs" in out:
        out["full_attn_idxs"] = [i for i in out["full_attn_idxs"] if i < n]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", default="qwen3", choices=sorted(ARCHS))
    p.add_argument("--out", default="/tmp/qwen3-0.6b-random")
    p.add_argument("--quantize", type=int, metavar="BITS")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", type=int, metavar="N",
                   help="the first N layers of the shape (a smaller model of the same width)")
    p.add_argument("--residual-scale", type=float, metavar="S",
                   help="multiply each layer's o_proj and down_proj by S")
    p.add_argument("--tie", action="store_true", help="tie the output head to the embedding")
    a = p.parse_args()
    out = pathlib.Path(a.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)

    mx.random.seed(a.seed)
    config = dict(ARCHS[a.arch], torch_dtype=a.dtype)
    if a.layers:
        config = with_layers(config, a.layers)
    if a.tie:
        config["tie_word_embeddings"] = True
    model_class, args_class = _get_classes(config)
    model = model_class(args_class.from_dict(config))
    model.set_dtype(getattr(mx, a.dtype))
    if a.residual_scale is not None:
        scaled = [(name, w * a.residual_scale) for name, w in tree_flatten(model.parameters())
                  if name.endswith(("o_proj.weight", "down_proj.weight"))]
        assert scaled, f"--residual-scale: {a.arch} has no o_proj/down_proj"
        model.load_weights(scaled, strict=False)
    mx.eval(model.parameters())
    if a.quantize:
        model, config = quantize_model(model, config, 64, a.quantize)
    save_model(out, model)
    save_config(dict(config), out / "config.json")
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(TOKENIZER / name, out / name)
    size = sum(f.stat().st_size for f in out.iterdir())
    q = f", {a.quantize}-bit" if a.quantize else ""
    print(f"wrote {out} ({a.arch}, {a.dtype}{q}, {size / 1e9:.2f} GB)")


if __name__ == "__main__":
    main()
