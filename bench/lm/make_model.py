#!/usr/bin/env python3
"""A random-weight model directory shaped like Qwen3-0.6B, Qwen3.5-0.8B or SmolLM2-135M, written by mlx_lm
0.32.2 itself.

The model is built by mlx_lm's own classes (`mlx_lm.utils._get_classes`) from the config
below and saved with `save_model` / `save_config`, as `mlx_lm.convert` writes a checkpoint
(see scripts/golden/lm.py, which makes the small golden models the same way); with
--quantize, quantized first by mlx_lm's `quantize_model` (affine, group size 64), as
`mlx_lm.convert -q` does. The tokenizer files are the small test tokenizer of
tests/data/lm-models/qwen3: the benchmark feeds token ids directly, so the tokenizer need not
cover the vocabulary.

    bench/lm/make_model.py [--arch qwen3|qwen3_5|smollm2|smollm2_384|qwen3_384] [--out DIR]
                           [--dtype bfloat16|float32]
                           [--quantize BITS] [--seed S]

Default output: /tmp/qwen3-0.6b-random (about 1.2 GB in bfloat16, not committed).
"""
import argparse
import pathlib
import shutil

import mlx.core as mx
import mlx_lm
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

ARCHS = {"qwen3": QWEN3, "qwen3_5": QWEN3_5, "smollm2": SMOLLM2, "smollm2_384": SMOLLM2_384,
         "qwen3_384": QWEN3_384}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", default="qwen3", choices=sorted(ARCHS))
    p.add_argument("--out", default="/tmp/qwen3-0.6b-random")
    p.add_argument("--quantize", type=int, metavar="BITS")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    out = pathlib.Path(a.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)

    mx.random.seed(a.seed)
    config = dict(ARCHS[a.arch], torch_dtype=a.dtype)
    model_class, args_class = _get_classes(config)
    model = model_class(args_class.from_dict(config))
    model.set_dtype(getattr(mx, a.dtype))
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
