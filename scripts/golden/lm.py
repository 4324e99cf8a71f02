#!/usr/bin/env python3
"""Language-model reference data for mlx-lm, computed by mlx_lm 0.32.2 itself.

Two outputs:

1. Model directories, `tests/data/lm-models/<name>/`, written on the CPU only (the GPU run
   reads the committed ones, so both devices test the same weights): a random-weight model
   built by mlx_lm's own classes and saved with `mlx_lm.utils.save_model` / `save_config`,
   exactly as `mlx_lm.convert` writes a checkpoint; `*-4bit` versions made by
   `mlx_lm.utils.quantize_model`; a Hugging Face-layout copy of the Qwen3.5 model
   (`qwen3_5-hf`: the prefix, conv1d axis order and norm offsets that mlx_lm's sanitize
   undoes); and a small byte-level BPE tokenizer trained here, with a ChatML chat template.
   Not these: the Llama checkpoints of `TRANSFORMERS_MODELS`, saved by transformers 5 itself
   (`torch/lm_transformers.py`, run where PyTorch is, with transformers' logits); this script
   only adds the tokenizer to them and records mlx_lm's logits of them.
2. `tests/data/[cuda/]lm/<name>.safetensors` + `.json`: the prompt's logits
   (`model(prompt[None])`, no cache), and 64 greedy tokens from `mlx_lm.generate.generate_step`
   with its default (greedy) sampler and each step's log-probabilities (random-weight models
   soon repeat one token, so the tokens alone would say little about the decode path), plus
   each step's margin between the best and second-best
   log-probability (how close a tie was: a comparison that fails on a tiny margin is a
   rounding question, not a wrong model). For a model with recurrent state (an
   `ArraysCache`), also `mx_compile`: what Python's `mx.compile` does with its decode step
   (`compile_attempts`), the seed problem mlx-lm's compiled step with the cache as state
   solves.

Run: scripts/gen-golden lm (every model); `lm.py NAME ...` for some (say, a new one), e.g.
after `torch/lm_transformers.py`: `lm.py llama-rope-parameters llama3-rope-parameters`.
"""
import contextlib
import json
import math
import pathlib
import shutil
import sys

# This folder holds random.py (the MLX generator), which would shadow the standard library:
# search it last (for common.py).
HERE = pathlib.Path(__file__).resolve().parent
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE] + [str(HERE)]

import mlx.core as mx  # noqa: E402
import mlx.nn as nn  # noqa: E402
from mlx.utils import tree_flatten, tree_map_with_path  # noqa: E402

import mlx_lm  # noqa: E402
from mlx_lm.generate import generate_step  # noqa: E402
from mlx_lm.models.cache import ArraysCache, CacheList, make_prompt_cache  # noqa: E402
from mlx_lm.utils import load_model, quantize_model, save_config, save_model  # noqa: E402

import common  # noqa: E402
import weights_recipe  # noqa: E402

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"

import mlx_lm_compat  # noqa: E402,F401  (mlx_lm 0.32.2 on MLX 0.32.2: quantized experts)

MODELS = common.ROOT / "tests" / "data" / "lm-models"
OUT = common.DATA / "lm"
VOCAB = 384
PROMPT_LEN = 24
GREEDY_TOKENS = 64

BASE = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 3,
    "rms_norm_eps": 1e-5,
    "vocab_size": VOCAB,
    "max_position_embeddings": 4096,
}

# BASE without rms_norm_eps, for the LayerNorm families (whose configs have no such key).
LAYER_NORM_BASE = {k: v for k, v in BASE.items() if k != "rms_norm_eps"}
STARCODER2 = {**LAYER_NORM_BASE, "model_type": "starcoder2"}

# name -> (config, dtype, seed). Together they cover: GQA, tied and untied embeddings,
# biases, explicit head_dim, the RoPE variants (default, llama3, yarn, linear, partial),
# sliding-window layers, qwen3's q/k norms, qwen3_5's linear/full layer mix, SmolLM3's layers
# without positional embedding (NoPE), LFM2's short-convolution/attention layer mix, Mamba-1's
# selective-scan stacks (falcon_mamba's dt/B/C norms), bf16
# weights.
CONFIGS = {
    # A Mistral-style config: mlx_lm maps model_type mistral onto llama.
    "mistral": (
        {**BASE, "model_type": "mistral", "tie_word_embeddings": False, "rope_theta": 1e6,
         "sliding_window": None},
        mx.float32, 1,
    ),
    # Llama 3 RoPE, tied embeddings, biases, head_dim wider than hidden/heads, and every other
    # layer a sliding-window layer (window 8 < prompt length: the rotating cache matters).
    "llama3": (
        {**BASE, "model_type": "llama", "tie_word_embeddings": True, "num_hidden_layers": 4,
         "head_dim": 32, "attention_bias": True, "mlp_bias": True, "rope_theta": 500000.0,
         "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
         "layer_types": ["sliding_attention", "full_attention"] * 2, "sliding_window": 8},
        mx.float32, 2,
    ),
    # Qwen2: q/k/v biases, tied embeddings, yarn ("long rope").
    "qwen2": (
        {**BASE, "model_type": "qwen2", "tie_word_embeddings": True, "rope_theta": 1e6,
         "rope_scaling": {"type": "yarn", "factor": 4.0,
                          "original_max_position_embeddings": 32}},
        mx.float32, 3,
    ),
    # Qwen3 in bfloat16 (as its real checkpoints are), untied, linear rope scaling.
    "qwen3": (
        {**BASE, "model_type": "qwen3", "tie_word_embeddings": False, "head_dim": 16,
         "rope_theta": 1e6, "rope_scaling": {"type": "linear", "factor": 2.0}},
        mx.bfloat16, 4,
    ),
    # Qwen3.5 dense text model: gated-delta-net layers with a full-attention layer every 2nd.
    "qwen3_5": (
        {"model_type": "qwen3_5", "text_config": {
            **BASE, "model_type": "qwen3_5_text", "num_hidden_layers": 4, "head_dim": 32,
            "tie_word_embeddings": True, "full_attention_interval": 2, "rms_norm_eps": 1e-6,
            "linear_num_value_heads": 4, "linear_num_key_heads": 2, "linear_key_head_dim": 32,
            "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e6,
                                "partial_rotary_factor": 0.25}}},
        mx.float32, 5,
    ),
    # SmolLM3: llama with NoPE layers (no_rope_layers[i] == 0), untied embeddings.
    "smollm3": (
        {**BASE, "model_type": "smollm3", "tie_word_embeddings": False, "num_hidden_layers": 4,
         "rope_theta": 2e6, "no_rope_layers": [1, 0, 1, 0]},
        mx.float32, 6,
    ),
    # LFM2 (LFM2-350M's layer mix: its 16 layers, attention at 2, 5, 8, 10, 12, 14, the
    # others gated short convolutions; 4 query / 2 key-value heads as its 16 / 8): MLP width
    # auto-adjusted from block_ff_dim (200 -> 133 -> 144, a multiple of 16). LFM2 always ties
    # its embeddings.
    "lfm2": (
        {"model_type": "lfm2", "vocab_size": VOCAB, "hidden_size": 64, "num_hidden_layers": 16,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096,
         "norm_eps": 1e-5, "conv_bias": False, "conv_L_cache": 3, "block_dim": 64,
         "block_multiple_of": 16, "block_ffn_dim_multiplier": 1.0,
         "block_auto_adjust_ff_dim": True, "block_ff_dim": 200, "rope_theta": 1e6,
         "layer_types": ["conv", "conv", "full_attention"] * 2 + ["conv", "conv"]
                        + ["full_attention", "conv"] * 4},
        mx.float32, 8,
    ),
    # LFM2-1.2B's layer mix (the same 16 layers, as `full_attn_idxs`; 8 query / 2 key-value
    # heads as its 32 / 8) in bfloat16, with what the config readers must also take: the MLP
    # width from intermediate_size with a multiplier (200 -> 133 -> 146 -> 160), rope_theta
    # only under rope_parameters, and biases on the convolutions (conv_bias).
    "lfm2-1.2b": (
        {"model_type": "lfm2", "vocab_size": VOCAB, "hidden_size": 64, "num_hidden_layers": 16,
         "num_attention_heads": 8, "num_key_value_heads": 2, "max_position_embeddings": 4096,
         "norm_eps": 1e-5, "conv_bias": True, "conv_L_cache": 3, "block_dim": 64,
         "block_multiple_of": 32, "block_ffn_dim_multiplier": 1.1,
         "block_auto_adjust_ff_dim": True, "intermediate_size": 200,
         "rope_parameters": {"rope_type": "default", "rope_theta": 5e5},
         "full_attn_idxs": [2, 5, 8, 10, 12, 14]},
        mx.bfloat16, 9,
    ),
    # LFM2-8B-A1B's shape (lfm2_moe): its first 8 of 24 layers (attention at 2 and 6, the
    # others gated short convolutions), the first two layers' feed-forward dense
    # (num_dense_layers 2), the others sparse: a sigmoid router with the expert bias choosing
    # 4 experts per token (its 4 of 32; here of 8), their weights renormalized.
    "lfm2_moe": (
        {"model_type": "lfm2_moe", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 8,
         "num_experts": 8, "num_experts_per_tok": 4, "norm_topk_prob": True,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096,
         "use_expert_bias": True, "num_dense_layers": 2, "norm_eps": 1e-5, "conv_bias": False,
         "conv_L_cache": 3, "rope_theta": 1e6, "routed_scaling_factor": 1.0,
         "layer_types": ["conv", "conv", "full_attention", "conv", "conv", "conv",
                         "full_attention", "conv"]},
        mx.float32, 23,
    ),
    # The router's other settings (float32: MLX's gather_mm on the CPU takes no bfloat16):
    # top 2 not renormalized, scaled by routed_scaling_factor; one dense layer; attention
    # placed by full_attn_idxs; biased convolutions; rope_theta under rope_parameters.
    "lfm2_moe-scaled": (
        {"model_type": "lfm2_moe", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 6,
         "num_experts": 8, "num_experts_per_tok": 2, "norm_topk_prob": False,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096,
         "use_expert_bias": True, "num_dense_layers": 1, "norm_eps": 1e-5, "conv_bias": True,
         "conv_L_cache": 3, "rope_parameters": {"rope_type": "default", "rope_theta": 5e5},
         "routed_scaling_factor": 2.5, "full_attn_idxs": [1, 4]},
        mx.float32, 24,
    ),
    # No expert bias: the plain sigmoid top 2, renormalized.
    "lfm2_moe-nobias": (
        {"model_type": "lfm2_moe", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 4,
         "num_experts": 4, "num_experts_per_tok": 2, "norm_topk_prob": True,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096,
         "use_expert_bias": False, "num_dense_layers": 1, "norm_eps": 1e-5,
         "conv_bias": False, "conv_L_cache": 3,
         "layer_types": ["conv", "full_attention", "conv", "full_attention"]},
        mx.float32, 25,
    ),
    # Mamba2-2.7B's shape (its Hugging Face config, state-spaces/mamba2-2.7b converted): one
    # group of B/C for all heads, tied embeddings, time_step_limit (0, inf), expand 2; 4 of its
    # 64 layers, 4 heads of 32 (its 80 of 64), state 16 (its 128).
    "mamba2": (
        {"model_type": "mamba2", "vocab_size": VOCAB, "hidden_size": 64, "expand": 2,
         "intermediate_size": 128, "num_heads": 4, "head_dim": 32, "state_size": 16,
         "num_hidden_layers": 4, "layer_norm_epsilon": 1e-5, "conv_kernel": 4, "n_groups": 1,
         "use_bias": False, "use_conv_bias": True, "tie_word_embeddings": True,
         "time_step_limit": [0.0, float("inf")], "time_step_rank": "auto",
         "hidden_act": "silu", "residual_in_fp32": True, "chunk_size": 256},
        mx.float32, 10,
    ),
    # Mamba-Codestral-7B's shape in bfloat16: 8 groups of B/C (here 4 groups of 2 heads, its
    # 8 of 16), untied head, 4 of its 64 layers; layer_norm_epsilon 1e-6 (its 1e-5) so that
    # the block norms' epsilon shows. transformers' gated norm normalizes each group on its
    # own and its block norms use layer_norm_epsilon, where mlx_lm's mamba2 normalizes the
    # whole width and uses 1e-5: the reference is mlx_lm's model with those two fixed
    # (`transformers_mamba2`), and the record keeps how far mlx_lm's own logits are.
    "mamba2-codestral": (
        {"model_type": "mamba2", "vocab_size": VOCAB, "hidden_size": 64, "expand": 2,
         "intermediate_size": 128, "num_heads": 8, "head_dim": 16, "state_size": 16,
         "num_hidden_layers": 4, "layer_norm_epsilon": 1e-6, "conv_kernel": 4, "n_groups": 4,
         "use_bias": False, "use_conv_bias": True, "tie_word_embeddings": False,
         "time_step_limit": [0.0, float("inf")], "time_step_rank": "auto"},
        mx.bfloat16, 11,
    ),
    # Nemotron-H-8B's block pattern, its first 10 blocks (Mamba-2 `M`, ReLU² MLP `-`, NoPE
    # attention `*`) as the string its config gives; 8 groups of B/C (here 4 groups of 2 heads,
    # its 128 heads of 64 in 8), 4 query / 2 key-value heads of 16 (its 32 / 8 of 128), untied.
    "nemotron_h": (
        {"model_type": "nemotron_h", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 128, "max_position_embeddings": 4096, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 16, "attention_bias": False,
         "mamba_num_heads": 8, "mamba_head_dim": 16, "mamba_proj_bias": False,
         "ssm_state_size": 16, "conv_kernel": 4, "n_groups": 4, "mlp_bias": False,
         "layer_norm_epsilon": 1e-5, "use_bias": False, "use_conv_bias": True,
         "hybrid_override_pattern": "M-M-M-M*-M", "mlp_hidden_act": "relu2",
         "mamba_hidden_act": "silu", "residual_in_fp32": False, "tie_word_embeddings": False,
         "time_step_limit": [0.0, float("inf")]},
        mx.float32, 12,
    ),
    # Nemotron-3-Nano's (30B-A3B) kind of block pattern: Mamba-2 blocks alternating with
    # mixture-of-experts blocks (E), one attention block; ReLU² experts behind DeepSeek-V3's
    # sigmoid router with the correction bias (one group, as Nano's), top 6 of 8 (its 6 of
    # 128) renormalized and scaled by 2.5 (its routed_scaling_factor), a shared expert.
    "nemotron_h-moe": (
        {"model_type": "nemotron_h", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 128, "max_position_embeddings": 4096, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 16, "attention_bias": False,
         "mamba_num_heads": 8, "mamba_head_dim": 16, "mamba_proj_bias": False,
         "ssm_state_size": 16, "conv_kernel": 4, "n_groups": 4, "mlp_bias": False,
         "layer_norm_epsilon": 1e-5, "use_bias": False, "use_conv_bias": True,
         "hybrid_override_pattern": "MEMEM*EME", "mlp_hidden_act": "relu2",
         "mamba_hidden_act": "silu", "residual_in_fp32": False, "tie_word_embeddings": False,
         "time_step_limit": [0.0, float("inf")], "n_routed_experts": 8, "n_shared_experts": 1,
         "moe_intermediate_size": 32, "moe_shared_expert_intermediate_size": 64,
         "num_experts_per_tok": 6, "n_group": 1, "topk_group": 1, "norm_topk_prob": True,
         "routed_scaling_factor": 2.5},
        mx.float32, 27,
    ),
    # NVIDIA-Nemotron-Nano-9B-v2's first 16 blocks in bfloat16, as transformers 5 writes the
    # pattern (`layers_block_type`); 2 groups, attention heads of 16 with 1 key-value head.
    "nemotron_h-nano": (
        {"model_type": "nemotron_h", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 96, "max_position_embeddings": 4096, "num_attention_heads": 4,
         "num_key_value_heads": 1, "head_dim": 16, "attention_bias": False,
         "mamba_num_heads": 8, "mamba_head_dim": 8, "mamba_proj_bias": False,
         "ssm_state_size": 16, "conv_kernel": 4, "n_groups": 2, "mlp_bias": False,
         "layer_norm_epsilon": 1e-5, "use_bias": False, "use_conv_bias": True,
         "layers_block_type": [{"M": "linear_attention", "-": "mlp", "*": "full_attention"}[c]
                               for c in "M-M-M-MM-M-M-M*-"]},
        mx.bfloat16, 13,
    ),
    # A Granite 4.0-H layer mix: Mamba-2 layers with an attention layer among them (NoPE,
    # scale attention_multiplier), one group of B/C, the multipliers of µP (embedding,
    # residual, logits), tied embeddings, the dense MLP (no experts: Granite-4.0-H-Micro's).
    "granitemoehybrid": (
        {"model_type": "granitemoehybrid", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 128, "shared_intermediate_size": 128, "num_hidden_layers": 8,
         "max_position_embeddings": 4096, "num_attention_heads": 4, "num_key_value_heads": 2,
         "attention_bias": False, "embedding_multiplier": 12.0, "attention_multiplier": 0.0625,
         "logits_scaling": 4.0, "residual_multiplier": 0.22,
         "layer_types": ["mamba"] * 3 + ["attention"] + ["mamba"] * 3 + ["attention"],
         "rms_norm_eps": 1e-5, "mamba_n_heads": 4, "mamba_d_head": 32, "mamba_expand": 2,
         "mamba_proj_bias": False, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_n_groups": 1,
         "mamba_conv_bias": True, "position_embedding_type": "nope", "num_local_experts": 0,
         "tie_word_embeddings": True, "time_step_limit": [0.0, float("inf")],
         "hidden_act": "silu"},
        mx.float32, 14,
    ),
    # Granite-4.0-H-Tiny's shape with its mixture of experts: Mamba-2 layers with one
    # attention layer (NoPE), every layer's feed-forward a shared SwiGLU MLP
    # (shared_intermediate_size) plus 6 routed experts of intermediate_size (its 6 of 64; here
    # of 8), a softmax over the top 6 router logits; µP multipliers as Tiny's.
    "granitemoehybrid-tiny": (
        {"model_type": "granitemoehybrid", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 32, "shared_intermediate_size": 64, "num_hidden_layers": 6,
         "max_position_embeddings": 4096, "num_attention_heads": 4, "num_key_value_heads": 2,
         "attention_bias": False, "embedding_multiplier": 12.0,
         "attention_multiplier": 0.0078125, "logits_scaling": 6.0, "residual_multiplier": 0.22,
         "layer_types": ["mamba"] * 2 + ["attention"] + ["mamba"] * 3, "rms_norm_eps": 1e-5,
         "mamba_n_heads": 4, "mamba_d_head": 32, "mamba_expand": 2, "mamba_proj_bias": False,
         "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_n_groups": 1, "mamba_conv_bias": True,
         "position_embedding_type": "nope", "num_local_experts": 8, "num_experts_per_tok": 6,
         "tie_word_embeddings": True, "time_step_limit": [0.0, float("inf")],
         "hidden_act": "silu"},
        mx.float32, 26,
    ),
    # The same kind in bfloat16 with what the reader must also take: RoPE layers
    # (position_embedding_type "rope", rope_theta under rope_parameters), an untied head, two
    # groups of B/C (transformers' grouped gated norm: `transformers_mamba2_norms`).
    "granitemoehybrid-rope": (
        {"model_type": "granitemoehybrid", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 96, "shared_intermediate_size": 96, "num_hidden_layers": 4,
         "max_position_embeddings": 4096, "num_attention_heads": 4, "num_key_value_heads": 2,
         "attention_bias": False, "embedding_multiplier": 12.0, "attention_multiplier": 0.25,
         "logits_scaling": 8.0, "residual_multiplier": 0.5,
         "layer_types": ["mamba", "attention", "mamba", "attention"], "rms_norm_eps": 1e-6,
         "mamba_n_heads": 8, "mamba_d_head": 16, "mamba_proj_bias": False, "mamba_d_state": 16,
         "mamba_d_conv": 4, "mamba_n_groups": 2, "mamba_conv_bias": True,
         "position_embedding_type": "rope", "rope_parameters": {"rope_type": "default",
                                                                  "rope_theta": 10000.0},
         "tie_word_embeddings": False, "time_step_limit": [0.0, float("inf")]},
        mx.bfloat16, 15,
    ),
    # SmolLM2-135M's layers in bfloat16, as `mlx_lm.convert --dtype bfloat16` writes them:
    # hidden 576, 9 query / 3 key-value heads of 64, MLP 1536, tied embeddings, rope base
    # 1e5; 1 layer of its 30 and a vocabulary of 2048 of its 49152 keep the files at 9 MB
    # (the whole model is 270 MB; bench/lm/bf16_study.sh measures that one). Logits as mlx_lm's
    # initialization makes them, not sharpened: the bfloat16 near-ties of a real model, where
    # a compiled step's fused kernels may pick another token than mlx_lm's separate ops.
    "smollm2-bf16": (
        {"model_type": "llama", "hidden_size": 576, "intermediate_size": 1536,
         "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64,
         "num_hidden_layers": 1, "rms_norm_eps": 1e-5, "vocab_size": 2048,
         "max_position_embeddings": 8192, "rope_theta": 100000.0, "tie_word_embeddings": True},
        mx.bfloat16, 7,
    ),
    # Mamba-130M's shape (selective-scan layers only, expand 2, state 16, conv 4,
    # time_step_rank "auto" = ceil(hidden / 16), no projection biases, tied embeddings) at
    # hidden 64 and 4 of its 24 layers, with the keys transformers' MambaConfig writes.
    "mamba": (
        {"model_type": "mamba", "vocab_size": VOCAB, "hidden_size": 64, "intermediate_size": 128,
         "expand": 2, "state_size": 16, "num_hidden_layers": 4, "conv_kernel": 4,
         "use_bias": False, "use_conv_bias": True, "time_step_rank": "auto",
         "layer_norm_epsilon": 1e-5, "residual_in_fp32": True, "hidden_act": "silu",
         "tie_word_embeddings": True},
        mx.float32, 10,
    ),
    # Mamba-370M's depth-to-width (48 layers of 1024: here 6 of 64) in bfloat16, as
    # `mlx_lm.convert --dtype bfloat16` writes it, with what the other config leaves out: an
    # untied output head, projection biases, an explicit time_step_rank.
    "mamba-bf16": (
        {"model_type": "mamba", "vocab_size": VOCAB, "hidden_size": 64, "intermediate_size": 128,
         "expand": 2, "state_size": 16, "num_hidden_layers": 6, "conv_kernel": 4,
         "use_bias": True, "use_conv_bias": True, "time_step_rank": 8,
         "layer_norm_epsilon": 1e-5, "residual_in_fp32": True, "hidden_act": "silu",
         "tie_word_embeddings": False},
        mx.bfloat16, 11,
    ),
    # FalconMamba-7B's shape (mlx_lm serves model_type falcon_mamba with mamba's code and
    # use_bcdt_rms: weightless RMSNorm of dt, B and C, eps mixer_rms_eps; untied head) at
    # hidden 64, 4 of its 64 layers.
    "falcon_mamba": (
        {"model_type": "falcon_mamba", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 128, "expand": 2, "state_size": 16, "num_hidden_layers": 4,
         "conv_kernel": 4, "use_bias": False, "use_conv_bias": True, "time_step_rank": "auto",
         "layer_norm_epsilon": 1e-5, "residual_in_fp32": True, "hidden_act": "silu",
         "mixer_rms_eps": 1e-6, "tie_word_embeddings": False},
        mx.float32, 12,
    ),
    # RecurrentGemma-2B's block pattern (recurrent, recurrent, attention; 26 layers of 2560:
    # here 6 of 64), its MLP of 3x the width (intermediate_size 6x), one key/value head, RoPE
    # on half of each head, logits soft-capped at 30, tied embeddings, rms_norm_eps 1e-6; a
    # window of 8 (2048 there) so the prompt passes it.
    "recurrent_gemma": (
        {"model_type": "recurrent_gemma", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 384, "num_hidden_layers": 6, "num_attention_heads": 4,
         "num_key_value_heads": 1, "attention_bias": False, "conv1d_width": 4,
         "logits_soft_cap": 30.0, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
         "partial_rotary_factor": 0.5, "attention_window_size": 8,
         "block_types": ["recurrent", "recurrent", "attention"], "lru_width": 64,
         "hidden_activation": "gelu_pytorch_tanh", "embeddings_scale_by_sqrt_dim": True,
         "tie_word_embeddings": True},
        mx.float32, 13,
    ),
    # The same in bfloat16 with an untied output head (`lm_head`).
    "recurrent_gemma-bf16": (
        {"model_type": "recurrent_gemma", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 384, "num_hidden_layers": 6, "num_attention_heads": 4,
         "num_key_value_heads": 1, "attention_bias": False, "conv1d_width": 4,
         "logits_soft_cap": 30.0, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
         "partial_rotary_factor": 0.5, "attention_window_size": 8,
         "block_types": ["recurrent", "recurrent", "attention"], "lru_width": 64,
         "hidden_activation": "gelu_pytorch_tanh", "embeddings_scale_by_sqrt_dim": True,
         "tie_word_embeddings": False},
        mx.bfloat16, 14,
    ),
    # Falcon-H1-0.5B's layer (Mamba-2 SSD and RoPE attention side by side in every layer, then
    # a SwiGLU MLP; one group of B/C, no gated norm, rope_theta 1e11, its µP multipliers, as
    # mlx_lm's defaults hold them) at hidden 64, 3 of its 36 layers, 4 query / 2 key-value heads
    # of 16 (its 8 / 2 of 64), 6 SSM heads of 16 (its 24 of 64); tied embeddings, so the
    # logits carry lm_head_multiplier / embedding_multiplier. An MLX checkpoint (the
    # multipliers folded, as mlx_lm.convert writes one).
    "falcon_h1": (
        {"model_type": "falcon_h1", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 16, "mamba_d_ssm": 96, "mamba_n_heads": 6,
         "mamba_d_head": 16, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_n_groups": 1,
         "mamba_expand": 2, "mamba_chunk_size": 128, "mamba_conv_bias": True,
         "mamba_proj_bias": False, "mamba_rms_norm": False, "mamba_norm_before_gate": False,
         "projectors_bias": False, "attention_bias": False, "mlp_bias": False,
         "rms_norm_eps": 1e-5, "rope_theta": 1e11, "max_position_embeddings": 4096,
         "hidden_act": "silu", "tie_word_embeddings": True,
         "attention_in_multiplier": 1.0, "attention_out_multiplier": 0.9375,
         "embedding_multiplier": 5.656854249492381, "key_multiplier": 0.390625,
         "lm_head_multiplier": 0.0390625, "ssm_in_multiplier": 1.25,
         "ssm_out_multiplier": 0.23570226039551587,
         "ssm_multipliers": [0.3535533905932738, 0.25, 0.3535533905932738, 0.5,
                             0.3535533905932738],
         "mlp_multipliers": [0.8838834764831844, 0.5859375]},
        mx.float32, 16,
    ),
    # A Hugging Face checkpoint in bfloat16, as Falcon-H1's are (convolution weights [C, 1, K],
    # no multiplier folded: mlx_lm's sanitize folds them at load, in bfloat16) with what the
    # other leaves out: the gated norm
    # (mamba_rms_norm) normalizing before the gate, two groups of B/C, an untied head,
    # attention_in_multiplier != 1. The reference is transformers' computation
    # (`transformers_falcon_h1`: keys times key_multiplier, values times
    # attention_in_multiplier, the norm per group), the record keeps mlx_lm's own distance.
    "falcon_h1-deep": (
        {"model_type": "falcon_h1", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 96, "num_hidden_layers": 4, "num_attention_heads": 4,
         "num_key_value_heads": 1, "head_dim": 16, "mamba_d_ssm": 128, "mamba_n_heads": 8,
         "mamba_d_head": 16, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_n_groups": 2,
         "mamba_expand": 2, "mamba_chunk_size": 128, "mamba_conv_bias": True,
         "mamba_proj_bias": False, "mamba_rms_norm": True, "mamba_norm_before_gate": True,
         "projectors_bias": False, "attention_bias": False, "mlp_bias": False,
         "rms_norm_eps": 1e-6, "rope_theta": 1e11, "max_position_embeddings": 4096,
         "hidden_act": "silu", "tie_word_embeddings": False,
         "attention_in_multiplier": 0.75, "attention_out_multiplier": 0.9375,
         "embedding_multiplier": 5.656854249492381, "key_multiplier": 0.390625,
         "lm_head_multiplier": 0.0390625, "ssm_in_multiplier": 1.25,
         "ssm_out_multiplier": 0.23570226039551587,
         "ssm_multipliers": [0.3535533905932738, 0.25, 0.3535533905932738, 0.5,
                             0.3535533905932738],
         "mlp_multipliers": [0.8838834764831844, 0.5859375]},
        mx.bfloat16, 17,
    ),
    # Qwen3-30B-A3B's layer shape (q/k norms, head_dim explicit, experts of
    # moe_intermediate_size with a softmax router renormalized over the top k, untied head)
    # at hidden 64: 8 experts of 32 (its 128 of 768), top 4 (its 8), 4 layers, the last kept
    # dense by mlp_only_layers (every Qwen3-MoE layer is sparse; this one shows the dense
    # path beside the sparse one). More than two experts per token: the weighted sum adds
    # them in the router's order, which then shows in the last bits (two terms add the same
    # either way round).
    "qwen3_moe": (
        {**BASE, "model_type": "qwen3_moe", "num_hidden_layers": 4, "head_dim": 16,
         "num_experts": 8, "num_experts_per_tok": 4, "moe_intermediate_size": 32,
         "decoder_sparse_step": 1, "mlp_only_layers": [3], "norm_topk_prob": True,
         "rope_theta": 1e6, "tie_word_embeddings": False, "rms_norm_eps": 1e-6},
        mx.float32, 16,
    ),
    # Mixtral-8x7B's shape: 8 experts, top 2, under block_sparse_moe, 4 query / 2 key-value
    # heads (its 32 / 8), rope base 1e6, untied head; experts of 128 at hidden 64.
    "mixtral": (
        {**BASE, "model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2,
         "rope_theta": 1e6, "tie_word_embeddings": False},
        mx.float32, 17,
    ),
    # Qwen1.5-MoE-A2.7B's shape: every layer sparse with a shared expert behind a sigmoid
    # gate (shared width 4x an expert's, as its 5632 / 1408), q/k/v biases, as many key-value
    # heads as query heads; 8 experts (its 60), top 4 (its 4).
    "qwen2_moe": (
        {**BASE, "model_type": "qwen2_moe", "num_key_value_heads": 4, "num_experts": 8,
         "num_experts_per_tok": 4, "moe_intermediate_size": 32,
         "shared_expert_intermediate_size": 128, "rope_theta": 1e6,
         "tie_word_embeddings": False, "rms_norm_eps": 1e-6},
        mx.float32, 18,
    ),
    # OLMoE-1B-7B's shape: q/k norms over the whole projection, experts of intermediate_size
    # in every layer, softmax router without renormalization, untied head, as many key-value
    # heads as query heads; 8 experts of 32 (its 64 of 1024), top 4 (its 8).
    "olmoe": (
        {**BASE, "model_type": "olmoe", "num_key_value_heads": 4, "intermediate_size": 32,
         "num_experts": 8, "num_experts_per_tok": 4, "norm_topk_prob": False,
         "rope_theta": 10000.0, "tie_word_embeddings": False, "clip_qkv": None},
        mx.float32, 19,
    ),
    # GPT-OSS-20B's shape (issue 38): head_dim 64 and GQA 8:2 (its 64:8), 4 layers alternating
    # sliding (window 8, inside the 40-token prompt: the rotating caches wrap during the 64
    # greedy tokens) and full attention, per-head attention sinks, biased q/k/v/o, experts of
    # intermediate_size = hidden_size as its 2880 / 2880, 8 experts top 4 (its 32 top 4) with
    # biases and the clamped SwiGLU, the router a biased linear; its yarn rope (factor 32, beta
    # 32 / 1, base 150000) over an original context of 64 (its 4096). Without the released
    # config's `truncate: false`, which mlx_lm 0.32.2 does not read (its yarn always rounds
    # the correction range): the reference is mlx_lm's rope (gpt_oss-truncate has the key).
    "gpt_oss": (
        {**BASE, "model_type": "gpt_oss", "num_hidden_layers": 4, "num_attention_heads": 8,
         "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 64,
         "num_local_experts": 8, "num_experts_per_tok": 4, "experts_per_token": 4,
         "sliding_window": 8, "rope_theta": 150000, "max_position_embeddings": 2048,
         "layer_types": ["sliding_attention", "full_attention"] * 2,
         "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                          "beta_slow": 1.0, "original_max_position_embeddings": 64},
         "initial_context_length": 64, "swiglu_limit": 7.0, "attention_bias": True,
         "hidden_act": "silu", "router_aux_loss_coef": 0.9, "output_router_logits": False,
         "tie_word_embeddings": False},
        mx.float32, 66,
    ),
    # The released configs' yarn, `truncate: false` (the correction range unrounded, as
    # transformers and OpenAI's reference compute it; mlx_lm 0.32.2 ignores the key and
    # rounds): the reference is mlx_lm's model with its ropes' frequencies so computed
    # (TRANSFORMERS_FIXES), a 2 : 2 head layout and every other layer sliding from the second.
    "gpt_oss-truncate": (
        {**BASE, "model_type": "gpt_oss", "num_hidden_layers": 4, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 64,
         "num_local_experts": 8, "num_experts_per_tok": 4, "sliding_window": 8,
         "rope_theta": 150000, "max_position_embeddings": 2048,
         "layer_types": ["full_attention", "sliding_attention"] * 2,
         "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                          "beta_slow": 1.0, "original_max_position_embeddings": 64,
                          "truncate": False},
         "attention_bias": True, "hidden_act": "silu", "tie_word_embeddings": False},
        mx.float32, 67,
    ),
    # What mlx_lm's olmoe also reads: biases on the experts (mlp_bias: each routed expert's
    # bias, `bias[indices]`) and on the attention projections, renormalized top-k weights,
    # grouped key-value heads, tied embeddings.
    "olmoe-bias": (
        {**BASE, "model_type": "olmoe", "intermediate_size": 32, "num_experts": 8,
         "num_experts_per_tok": 2, "norm_topk_prob": True, "mlp_bias": True,
         "attention_bias": True, "rope_theta": 10000.0, "tie_word_embeddings": True},
        mx.float32, 20,
    ),
    # Qwen3-Next-80B-A3B's layer mix: gated-delta-net layers (fused, per-key-head interleaved
    # in_proj_qkvz / in_proj_ba) with full attention every 4th layer (gated, q/k norms,
    # partial rotary 0.25), every layer sparse with a shared expert behind a sigmoid gate,
    # softmax router renormalized over the top k, untied head; 2 key / 4 value linear heads
    # (its 16 / 32), 4 query / 2 key-value heads (its 16 / 2), 8 experts of 32 (its 512 of
    # 512), top 4 (its 10), shared expert 64 (its 512).
    "qwen3_next": (
        {**BASE, "model_type": "qwen3_next", "num_hidden_layers": 4, "head_dim": 32,
         "full_attention_interval": 4, "linear_num_value_heads": 4,
         "linear_num_key_heads": 2, "linear_key_head_dim": 32, "linear_value_head_dim": 16,
         "linear_conv_kernel_dim": 4, "num_experts": 8, "num_experts_per_tok": 4,
         "decoder_sparse_step": 1, "shared_expert_intermediate_size": 64,
         "mlp_only_layers": [], "moe_intermediate_size": 32, "norm_topk_prob": True,
         "rope_theta": 1e6, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-6,
         "tie_word_embeddings": False},
        mx.float32, 21,
    ),
    # Qwen3-Next without experts (num_experts 0: every layer the dense MLP), full attention
    # every 2nd layer, tied embeddings, sparse-step and mlp-only settings that then say
    # nothing.
    "qwen3_next-dense": (
        {**BASE, "model_type": "qwen3_next", "num_hidden_layers": 4, "head_dim": 32,
         "full_attention_interval": 2, "linear_num_value_heads": 4,
         "linear_num_key_heads": 2, "linear_key_head_dim": 32, "linear_value_head_dim": 16,
         "linear_conv_kernel_dim": 4, "num_experts": 0, "num_experts_per_tok": 0,
         "decoder_sparse_step": 1, "shared_expert_intermediate_size": 0,
         "mlp_only_layers": [], "moe_intermediate_size": 0, "norm_topk_prob": False,
         "rope_theta": 1e6, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-6,
         "tie_word_embeddings": True},
        mx.float32, 22,
    ),
    # Qwen3.5's MoE text model (Qwen3.5-35B-A3B's layer mix): gated-delta-net layers (four
    # separate projections) with full attention every 4th layer, every layer sparse with
    # Qwen3-Next's block (softmax router renormalized over the top k, a shared expert behind
    # a sigmoid gate), untied head; 8 experts of 32 (its 256 of 512), top 4 (its 8), shared
    # expert 64 (its 512).
    "qwen3_5_moe": (
        {"model_type": "qwen3_5_moe", "text_config": {
            **BASE, "model_type": "qwen3_5_moe_text", "num_hidden_layers": 4, "head_dim": 32,
            "tie_word_embeddings": False, "full_attention_interval": 4, "rms_norm_eps": 1e-6,
            "linear_num_value_heads": 4, "linear_num_key_heads": 2, "linear_key_head_dim": 32,
            "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4, "num_experts": 8,
            "num_experts_per_tok": 4, "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 64,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e7,
                                "partial_rotary_factor": 0.25}}},
        mx.float32, 23,
    ),
    # OLMo-Hybrid-7B's layer mix (three gated-delta-net layers, then full attention, its
    # default `i % 4 == 3`; 32 layers of 3840 there) at hidden 64 and 8 layers: separate q/k/v
    # projections and convolutions, beta in [0, 2] (linear_allow_neg_eigval), no positional
    # embedding (its rope_theta is null), untied head, as many key-value heads as query heads;
    # 2 key heads of 32 and 4 value heads of 16 (its 30 of 96 and 30 of 192).
    "olmo_hybrid": (
        {"model_type": "olmo_hybrid", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 128, "num_hidden_layers": 8, "num_attention_heads": 4,
         "num_key_value_heads": 4, "rms_norm_eps": 1e-6, "max_position_embeddings": 4096,
         "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 32,
         "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4,
         "linear_allow_neg_eigval": True, "tie_word_embeddings": False,
         "attention_bias": False, "hidden_act": "silu",
         "rope_parameters": {"rope_type": "default", "rope_theta": None}},
        mx.float32, 21,
    ),
    # What the other leaves out: RoPE (base 1e4 under rope_parameters), explicit layer_types,
    # grouped key-value heads, attention biases, a tied head, beta in [0, 1].
    "olmo_hybrid-rope": (
        {"model_type": "olmo_hybrid", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 96, "num_hidden_layers": 6, "num_attention_heads": 4,
         "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "max_position_embeddings": 4096,
         "linear_num_key_heads": 2, "linear_num_value_heads": 2, "linear_key_head_dim": 32,
         "linear_value_head_dim": 32, "linear_conv_kernel_dim": 3,
         "linear_allow_neg_eigval": False, "tie_word_embeddings": True,
         "attention_bias": True, "hidden_act": "silu",
         "layer_types": ["linear_attention", "full_attention", "linear_attention",
                         "linear_attention", "full_attention", "linear_attention"],
         "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}},
        mx.float32, 22,
    ),
    # PLaMo-2-1B's layer mix (Mamba-2 and attention alternating, mamba_step 2; 16 layers of
    # 2048 there) at hidden 64 and 6 layers: one key-value head (as its 16 query heads share
    # one), heads of 16 (its 128), 4 Mamba heads of 16 with a state of 16 (its 32 of 128, 64),
    # tied embeddings.
    "plamo2": (
        {"model_type": "plamo2", "vocab_size": VOCAB, "hidden_size": 64, "num_hidden_layers": 6,
         "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "num_attention_heads": 4,
         "num_key_value_heads": 1, "hidden_size_per_head": 16,
         "max_position_embeddings": 10485760, "attention_window_size": 2048,
         "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_num_heads": 4, "mamba_step": 2,
         "mamba_chunk_size": 256, "mamba_enabled": True, "intermediate_size": 128},
        mx.float32, 23,
    ),
    # What the other leaves out: an untied head, mamba_step 3 (attention in layers 1 and 4),
    # two key-value heads, a convolution of 3 taps, 8 Mamba heads of 8.
    "plamo2-untied": (
        {"model_type": "plamo2", "vocab_size": VOCAB, "hidden_size": 64, "num_hidden_layers": 5,
         "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "num_attention_heads": 4,
         "num_key_value_heads": 2, "hidden_size_per_head": 8, "mamba_d_state": 8,
         "mamba_d_conv": 3, "mamba_num_heads": 8, "mamba_step": 3, "mamba_enabled": True,
         "intermediate_size": 96},
        mx.float32, 24,
    ),
    # Jamba-v0.1's layer mix (Mamba-1 layers, attention at layer 4 of every 8, experts in every
    # other layer from 1; 32 layers of 4096 there) at hidden 64 and 8 layers: 4 query / 2
    # key-value heads (its 32 / 8), 4 experts of 128, 2 per token (its 16, 2), expand 2,
    # state 16, dt_rank "auto", an untied head. The reference is transformers' router
    # (`transformers_jamba`).
    "jamba": (
        {"model_type": "jamba", "vocab_size": VOCAB, "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 2,
         "attn_layer_offset": 4, "attn_layer_period": 8, "expert_layer_offset": 1,
         "expert_layer_period": 2, "mamba_d_conv": 4, "mamba_d_state": 16, "mamba_expand": 2,
         "mamba_dt_rank": "auto", "mamba_proj_bias": False, "mamba_conv_bias": True,
         "num_experts": 4, "num_experts_per_tok": 2, "rms_norm_eps": 1e-6,
         "max_position_embeddings": 4096, "tie_word_embeddings": False, "hidden_act": "silu"},
        mx.float32, 25,
    ),
    # What the other leaves out: projection biases (mamba_proj_bias), no convolution bias, an
    # explicit dt_rank, attention every other layer, experts from layer 0 (both rules agree
    # for offset 0), a tied head.
    "jamba-tied": (
        {"model_type": "jamba", "vocab_size": VOCAB, "hidden_size": 64, "intermediate_size": 96,
         "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 4,
         "attn_layer_offset": 1, "attn_layer_period": 2, "expert_layer_offset": 0,
         "expert_layer_period": 2, "mamba_d_conv": 3, "mamba_d_state": 8, "mamba_expand": 2,
         "mamba_dt_rank": 8, "mamba_proj_bias": True, "mamba_conv_bias": False,
         "num_experts": 4, "num_experts_per_tok": 2, "rms_norm_eps": 1e-5,
         "max_position_embeddings": 4096, "tie_word_embeddings": True, "hidden_act": "silu"},
        mx.float32, 26,
    ),
    # Baichuan-M1's layer kinds at hidden 64 and 4 layers: sliding-window layers 0 and 2 with
    # their own head counts (8 query / 4 key-value heads of 8) and a window of 8, so the
    # prompt passes it; global layers of 4 / 2 heads of 16; the two-tap key/value
    # convolution; an untied head (normalized at load).
    "baichuan_m1": (
        {"model_type": "baichuan_m1", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
         "num_key_value_heads": 2, "rope_theta": 10000.0, "sliding_window": 8,
         "sliding_window_layers": [0, 2], "conv_window": 2, "rms_norm_eps": 1e-6,
         "num_swa_attention_heads": 8, "num_swa_key_value_heads": 4,
         "tie_word_embeddings": False},
        mx.float32, 27,
    ),
    # Global layers only (no rotating cache): eager generation bit for bit, and right-padded
    # batches.
    "baichuan_m1-global": (
        {"model_type": "baichuan_m1", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 96, "num_hidden_layers": 3, "num_attention_heads": 4,
         "num_key_value_heads": 4, "rope_theta": 500000.0, "sliding_window": 8,
         "sliding_window_layers": [], "conv_window": 2, "rms_norm_eps": 1e-5,
         "tie_word_embeddings": False},
        mx.float32, 28,
    ),
    # DeepSeek-V3's shape: multi-head latent attention with a low-rank query (q_lora_rank),
    # the latent 32 wide (its 512), 32 + 16 query/key features per head without / with rope
    # (its 128 + 64), values of 32 (its 128); yarn rope with mscale and mscale_all_dim (which
    # also scales the attention); the first layer dense (first_k_dense_replace), then 16
    # routed experts (its 256) in 4 groups (its 8), 2 groups kept (its 4), top 4 (its 8),
    # sigmoid scores with the correction bias, renormalized and scaled by
    # routed_scaling_factor, one shared expert. 4 query heads (its 128).
    "deepseek_v3": (
        {**BASE, "model_type": "deepseek_v3", "num_hidden_layers": 3, "num_key_value_heads": 4,
         "moe_intermediate_size": 32, "n_shared_experts": 1, "n_routed_experts": 16,
         "routed_scaling_factor": 2.5, "kv_lora_rank": 32, "q_lora_rank": 64,
         "qk_rope_head_dim": 16, "v_head_dim": 32, "qk_nope_head_dim": 32,
         "topk_method": "noaux_tc", "scoring_func": "sigmoid", "norm_topk_prob": True,
         "n_group": 4, "topk_group": 2, "num_experts_per_tok": 4, "moe_layer_freq": 1,
         "first_k_dense_replace": 1, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
         "rope_scaling": {"type": "yarn", "factor": 40.0, "mscale": 1.0,
                          "mscale_all_dim": 0.707, "beta_fast": 32, "beta_slow": 1,
                          "original_max_position_embeddings": 4096},
         "attention_bias": False, "tie_word_embeddings": False},
        mx.float32, 21,
    ),
    # DeepSeek-V2-Lite's attention shape on deepseek_v3: no low-rank query (one q_proj), no
    # rope scaling, experts ungrouped (n_group 1), top 2 not renormalized; every other layer
    # sparse (moe_layer_freq 2), two shared experts.
    "deepseek_v3-lite": (
        {**BASE, "model_type": "deepseek_v3", "num_hidden_layers": 3, "num_key_value_heads": 4,
         "moe_intermediate_size": 32, "n_shared_experts": 2, "n_routed_experts": 8,
         "routed_scaling_factor": 1.0, "kv_lora_rank": 32, "q_lora_rank": None,
         "qk_rope_head_dim": 16, "v_head_dim": 32, "qk_nope_head_dim": 32,
         "topk_method": "noaux_tc", "scoring_func": "sigmoid", "norm_topk_prob": False,
         "n_group": 1, "topk_group": 1, "num_experts_per_tok": 2, "moe_layer_freq": 2,
         "first_k_dense_replace": 0, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
         "attention_bias": False, "tie_word_embeddings": False},
        mx.float32, 22,
    ),
    # Kimi-Linear-48B-A3B's layer mix (Kimi Delta Attention in three layers of four, MLA in
    # every fourth; 27 layers of 2304 there) at hidden 64 and 8 layers: 2 KDA heads of 32 (its
    # 32 of 128) with a per-channel gate, short convolutions of 4; MLA without rope
    # (mla_use_nope) over a latent of 32 (its 512), 32 + 16 query/key features per head (its
    # 128 + 64), values of 32 (its 128), 4 heads (its 32); the first layer dense, then 8
    # routed experts of 32 (its 256 of 1024), top 4 (its 8), sigmoid scores with the
    # correction bias, renormalized and scaled by 2.446 (its own factor), one shared expert;
    # untied head.
    "kimi_linear": (
        {"model_type": "kimi_linear", "vocab_size": VOCAB, "hidden_size": 64,
         "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 4,
         "intermediate_size": 128, "head_dim": 72, "rope_theta": 10000.0,
         "rms_norm_eps": 1e-5, "model_max_length": 4096, "num_experts": 8,
         "moe_intermediate_size": 32, "kv_lora_rank": 32, "qk_nope_head_dim": 32,
         "qk_rope_head_dim": 16, "v_head_dim": 32, "mla_use_nope": True,
         "num_experts_per_token": 4, "num_shared_experts": 1,
         "moe_router_activation_func": "sigmoid", "moe_renormalize": True,
         "routed_scaling_factor": 2.446, "first_k_dense_replace": 1, "moe_layer_freq": 1,
         "use_grouped_topk": True, "num_expert_group": 1, "topk_group": 1,
         "tie_word_embeddings": False, "hidden_act": "silu", "q_lora_rank": None,
         "linear_attn_config": {"num_heads": 2, "head_dim": 32, "short_conv_kernel_size": 4,
                                "kda_layers": [1, 2, 3, 5, 6, 7], "full_attn_layers": [4, 8]}},
        mx.float32, 41,
    ),
    # What the other leaves out: a tied head, experts in 2 groups of which 1 is kept, every
    # other layer sparse from the first (moe_layer_freq 2, first_k_dense_replace 0), top 2
    # not renormalized, no shared expert, softmax scores, a convolution of 3 taps, KDA heads
    # of 64 (different from MLA's), MLA first.
    "kimi_linear-tied": (
        {"model_type": "kimi_linear", "vocab_size": VOCAB, "hidden_size": 64,
         "num_hidden_layers": 5, "num_attention_heads": 2, "num_key_value_heads": 2,
         "intermediate_size": 96, "head_dim": 64, "rope_theta": 10000.0,
         "rms_norm_eps": 1e-6, "model_max_length": 4096, "num_experts": 8,
         "moe_intermediate_size": 32, "kv_lora_rank": 32, "qk_nope_head_dim": 16,
         "qk_rope_head_dim": 16, "v_head_dim": 16, "mla_use_nope": True,
         "num_experts_per_token": 2, "num_shared_experts": 0,
         "moe_router_activation_func": "softmax", "moe_renormalize": False,
         "routed_scaling_factor": 1.0, "first_k_dense_replace": 0, "moe_layer_freq": 2,
         "use_grouped_topk": True, "num_expert_group": 2, "topk_group": 1,
         "tie_word_embeddings": True, "hidden_act": "silu",
         "linear_attn_config": {"num_heads": 1, "head_dim": 64, "short_conv_kernel_size": 3,
                                "kda_layers": [2, 3, 5], "full_attn_layers": [1, 4]}},
        mx.float32, 42,
    ),
    # Issue 35, bailing_moe_linear (inclusionAI's Ling/Ring-linear-2.0, e.g.
    # Ring-mini-linear-2.0; its config could not be read offline, so the shape follows
    # mlx_lm's ModelArgs and the Ling-2.0 MoE it extends): groups of layer_group_size layers
    # whose last is softmax attention and the rest linear attention, the tail past the last
    # whole group all attention (here groups of 3 over 7 layers: attention at 2, 5, 6);
    # attention heads of 24 (head_dim) beside linear heads of 16 (hidden / heads), GQA 4:2,
    # half-rotary RoPE, q/k RMSNorm, g_norm in 2 groups; the first layer dense, then 8
    # experts of 32, top 2 from 1 of 2 groups, sigmoid scores with the expert bias,
    # renormalized, times 2.5, one shared expert; untied head.
    "bailing_moe_linear": (
        {"model_type": "bailing_moe_linear", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 128, "max_position_embeddings": 4096,
         "moe_intermediate_size": 32, "num_experts": 8, "num_shared_experts": 1,
         "norm_topk_prob": True, "num_attention_heads": 4, "num_experts_per_tok": 2,
         "num_hidden_layers": 7, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
         "rope_theta": 600000.0, "first_k_dense_replace": 1, "layer_group_size": 3,
         "group_norm_size": 2, "head_dim": 24, "partial_rotary_factor": 0.5,
         "use_qk_norm": True, "use_qkv_bias": False, "use_bias": False,
         "moe_router_enable_expert_bias": True, "routed_scaling_factor": 2.5,
         "score_function": "sigmoid", "n_group": 2, "topk_group": 1,
         "tie_word_embeddings": False, "use_rmsnorm": True, "hidden_act": "silu"},
        mx.float32, 71,
    ),
    # What the other leaves out (in float32: MLX's CPU gather_mm takes float32 only): a tied
    # head, 6 heads (ALiBi's slopes for a count not a power of two), GQA 6:2 at the default
    # head_dim, biases everywhere (use_bias, use_qkv_bias), softmax scores without the
    # expert bias, one group, top 2 not renormalized, no shared expert, every layer sparse,
    # groups of 2 over 4 layers (attention at 1 and 3), full rotary, g_norm in 3 groups.
    "bailing_moe_linear-tied": (
        {"model_type": "bailing_moe_linear", "vocab_size": VOCAB, "hidden_size": 96,
         "intermediate_size": 128, "max_position_embeddings": 4096,
         "moe_intermediate_size": 32, "num_experts": 8, "num_shared_experts": 0,
         "norm_topk_prob": False, "num_attention_heads": 6, "num_experts_per_tok": 2,
         "num_hidden_layers": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
         "rope_theta": 10000.0, "first_k_dense_replace": 0, "layer_group_size": 2,
         "group_norm_size": 3, "use_qk_norm": False, "use_qkv_bias": True, "use_bias": True,
         "moe_router_enable_expert_bias": False, "score_function": "softmax",
         "tie_word_embeddings": True},
        mx.float32, 72,
    ),
    # Issue 35, bailing_hybrid (mlx_lm's model of inclusionAI's Ling-2.5-shaped hybrids; no
    # released config could be read offline, so the shape follows mlx_lm's ModelArgs and the
    # Ling/DeepSeek-V3 parts it joins): groups of 3 over 7 layers, the last of each group
    # multi-latent attention (q_lora_rank, kv_lora_rank, a 8-feature interleaved rope part
    # beside 16 nope features, v heads of 16), the others the chunked float32 linear
    # attention (head_dim 16, half rotary, q/k norms, g_norm in 2 groups), the tail all MLA
    # (MLA at 2, 5, 6); the first layer dense, then 8 experts of 32 in 4 groups of which 2
    # are kept (the dropped ones masked to -inf), top 2, sigmoid scores with the expert
    # bias, renormalized, times 2.5, one shared expert; untied head.
    "bailing_hybrid": (
        {"model_type": "bailing_hybrid", "vocab_size": VOCAB, "hidden_size": 64, "intermediate_size": 128,
         "moe_intermediate_size": 32, "num_hidden_layers": 7, "num_attention_heads": 4,
         "num_key_value_heads": 4, "num_experts": 8, "num_experts_per_tok": 2,
         "num_shared_experts": 1, "n_group": 4, "topk_group": 2, "first_k_dense_replace": 1,
         "layer_group_size": 3, "group_norm_size": 2, "rms_norm_eps": 1e-6,
         "rope_theta": 6000000.0, "max_position_embeddings": 4096,
         "routed_scaling_factor": 2.5, "head_dim": 16, "kv_lora_rank": 32,
         "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16, "q_lora_rank": 32,
         "rope_interleave": True, "partial_rotary_factor": 0.5, "use_qkv_bias": False,
         "use_bias": False, "use_qk_norm": True, "score_function": "sigmoid",
         "norm_topk_prob": True, "moe_router_enable_expert_bias": True,
         "tie_word_embeddings": False, "hidden_act": "silu"},
        mx.float32, 73,
    ),
    # What the other leaves out: a tied head, 6 heads (ALiBi's slopes for a count not a power
    # of two) at the default head_dim (0: hidden / heads; transformers' config class, which
    # the generators' tokenizer loading builds, rejects null), q_proj without the low-rank
    # path, biases (use_bias, use_qkv_bias), no q/k norms, a plain (not interleaved) full
    # rope, softmax scores without the expert bias, one group (none dropped), top 2 not
    # renormalized, no shared expert, every layer sparse, groups of 2 over 4 layers (MLA at
    # 1 and 3), g_norm in 3 groups; its prompt of 150 tokens runs two chunks of 128, the
    # second padded.
    "bailing_hybrid-tied": (
        {"model_type": "bailing_hybrid", "vocab_size": VOCAB, "hidden_size": 96,
         "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 4,
         "num_attention_heads": 6, "num_key_value_heads": 6, "num_experts": 8,
         "num_experts_per_tok": 2, "num_shared_experts": 0, "n_group": 1, "topk_group": 1,
         "first_k_dense_replace": 0, "layer_group_size": 2, "group_norm_size": 3,
         "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 4096,
         "routed_scaling_factor": 1.0, "head_dim": 0, "kv_lora_rank": 32,
         "qk_rope_head_dim": 16, "qk_nope_head_dim": 16, "v_head_dim": 16, "q_lora_rank": None,
         "rope_interleave": False, "partial_rotary_factor": 1.0, "use_qkv_bias": True,
         "use_bias": True, "use_qk_norm": False, "score_function": "softmax",
         "norm_topk_prob": False, "moe_router_enable_expert_bias": False,
         "tie_word_embeddings": True},
        mx.float32, 74,
    ),
    # Issue 35, bailing_moe_v3 (what mlx_lm builds for a `bailing_hybrid` config naming
    # `BailingMoeV3ForCausalLM`; transformers 5.23's bailing_hybrid, inclusionAI's Ling 3.0):
    # shaped as transformers' config class describes the released model, scaled down (no
    # released config.json could be read offline): groups of 3 over 6 layers, the last of
    # each multi-latent attention with its sigmoid head gate (one q_proj, no q LoRA as in
    # transformers; kv_lora_rank 32, an 8-feature interleaved rope part beside 16 nope
    # features, v heads of 16), the others Kimi delta attention (4 heads of 32, short
    # convolutions of 4, the decay gate bounded at exp(-5)); the first layer dense, then 8
    # experts of 32 in 4 groups of which 2 are kept (the dropped ones at -inf), top 2, sigmoid
    # scores plus the expert bias, renormalized, times 2.5, one shared expert; untied head.
    "bailing_moe_v3": (
        {"model_type": "bailing_hybrid", "architectures": ["BailingMoeV3ForCausalLM"],
         "vocab_size": VOCAB, "hidden_size": 64, "intermediate_size": 128,
         "moe_intermediate_size": 32, "moe_shared_expert_intermediate_size": 32,
         "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 4,
         "num_experts": 8, "num_experts_per_tok": 2, "num_shared_experts": 1,
         "first_k_dense_replace": 1, "n_group": 4, "topk_group": 2,
         "routed_scaling_factor": 2.5, "layer_group_size": 3, "head_dim": 32,
         "q_lora_rank": None, "kv_lora_rank": 32, "qk_nope_head_dim": 16,
         "qk_rope_head_dim": 8, "v_head_dim": 16, "short_conv_kernel_size": 4,
         "kda_lower_bound": -5.0, "kda_safe_gate": True, "no_kda_lora": True,
         "rms_norm_eps": 1e-6, "rope_theta": 6000000.0, "max_position_embeddings": 4096,
         "rope_interleave": True, "tie_word_embeddings": False, "hidden_act": "silu"},
        mx.float32, 75,
    ),
    # What the other leaves out: a tied head, the query's low-rank path (q_lora_rank, which
    # mlx_lm keeps and transformers has not), 6 KDA heads of 16 (under the 32 a kernel
    # needs), a wider decay bound (-3), every layer sparse, one group (none dropped), top 3,
    # scale 1, groups of 2 over 4 layers (MLA at 1 and 3), rope base 10^4, eps 1e-5.
    "bailing_moe_v3-tied": (
        {"model_type": "bailing_hybrid", "architectures": ["BailingMoeV3ForCausalLM"],
         "vocab_size": VOCAB, "hidden_size": 96, "intermediate_size": 128,
         "moe_intermediate_size": 32, "moe_shared_expert_intermediate_size": 32,
         "num_hidden_layers": 4, "num_attention_heads": 6, "num_key_value_heads": 6,
         "num_experts": 8, "num_experts_per_tok": 3, "num_shared_experts": 1,
         "first_k_dense_replace": 0, "n_group": 1, "topk_group": 1,
         "routed_scaling_factor": 1.0, "layer_group_size": 2, "head_dim": 16,
         "q_lora_rank": 16, "kv_lora_rank": 32, "qk_nope_head_dim": 16,
         "qk_rope_head_dim": 16, "v_head_dim": 16, "short_conv_kernel_size": 4,
         "kda_lower_bound": -3.0, "kda_safe_gate": True, "no_kda_lora": True,
         "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 4096,
         "rope_interleave": True, "tie_word_embeddings": True, "hidden_act": "silu"},
        mx.float32, 76,
    ),
    # RWKV-7 "Goose" (issue 35): RWKV7-0.1B's shape (head size 64, the LoRA ranks of the
    # released 0.1B: decay 64, a 64, v 32, gate 128 at width 768; here gate 64 at width 128),
    # 4 of its 12 layers, untied head, the keys flash-linear-attention's RWKV7Config writes.
    # Its 4-bit version is `mlx_lm.convert -q`'s default groups of 64 with mlx_lm's
    # quant_predicate (the LoRAs' up-projections `lora.2` and the embedding at 8 bits; the
    # rank-32 v_lora's up-projection not a multiple of 64, so left in float).
    "rwkv7": (
        {"model_type": "rwkv7", "architectures": ["RWKV7ForCausalLM"], "vocab_size": VOCAB,
         "hidden_size": 128, "intermediate_size": 512, "hidden_ratio": 4.0,
         "num_hidden_layers": 4, "head_dim": 64, "num_heads": None, "norm_eps": 1e-5,
         "decay_low_rank_dim": 64, "a_low_rank_dim": 64, "v_low_rank_dim": 32,
         "gate_low_rank_dim": 64, "hidden_act": "sqrelu", "norm_first": True,
         "norm_bias": True, "attn": None, "attn_mode": "chunk", "fuse_norm": False,
         "fuse_cross_entropy": True, "max_position_embeddings": 2048,
         "initializer_range": 0.006, "use_cache": True, "bos_token_id": 0,
         "eos_token_id": 0, "tie_word_embeddings": False},
        mx.float32, 61,
    ),
    # The same family in bfloat16 (the WKV state kept in bfloat16, as mlx_lm keeps it), tied
    # embeddings, heads of 32: flash-linear-attention's per-head norm takes eps
    # head_dim * norm_eps (mlx_lm: 64e-5 whatever the head size, right for 64 only), so the
    # reference is mlx_lm's model with that eps (`fla_rwkv7`).
    "rwkv7-bf16": (
        {"model_type": "rwkv7", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 256, "num_hidden_layers": 3, "head_dim": 32, "norm_eps": 1e-5,
         "decay_low_rank_dim": 16, "a_low_rank_dim": 16, "v_low_rank_dim": 16,
         "gate_low_rank_dim": 32, "hidden_act": "sqrelu", "tie_word_embeddings": True},
        mx.bfloat16, 62,
    ),
    # Issue 35, Gear (mlx_lm's gear: no checkpoint named, no transformers config): a Gemma-3
    # decoder whose layer_types mix gated key/value convolutions (conv_mixer, an
    # ArraysCache(2)) with sliding (RotatingKVCache, window 8, rope 10^4) and full (KVCache,
    # rope 10^6) attention, in the proportions its defaults suggest (Gemma 3's sliding : full
    # with conv mixers between); one key-value head for 4 (Gemma-3-1B's), heads of 32 wider
    # than hidden / heads, query_pre_attn_scalar = head_dim, tied. The prompt (24) runs far
    # past the window.
    "gear": (
        {**BASE, "model_type": "gear", "num_hidden_layers": 6, "head_dim": 32,
         "num_key_value_heads": 1, "rms_norm_eps": 1e-6, "sliding_window": 8,
         "conv_L_cache": 3, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
         "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True,
         "layer_types": ["conv_mixer", "sliding_attention", "conv_mixer",
                         "sliding_attention", "conv_mixer", "full_attention"]},
        mx.float32, 81,
    ),
    # Every option at once: untied, biases on every projection and convolution, both soft
    # caps (gemma2's 50 / 30: the attention written out), the full layers' rope scaled
    # linearly by 8, query_pre_attn_scalar other than head_dim, 4-tap convolutions, 2
    # key-value heads for 4, the exact GELU, a conv_mixer first and last.
    "gear-untied": (
        {**BASE, "model_type": "gear", "num_hidden_layers": 5, "head_dim": 16,
         "rms_norm_eps": 1e-6, "sliding_window": 6, "conv_L_cache": 4,
         "query_pre_attn_scalar": 24, "attention_bias": True, "hidden_activation": "gelu",
         "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
         "rope_scaling": {"rope_type": "linear", "factor": 8.0},
         "tie_word_embeddings": False,
         "layer_types": ["conv_mixer", "full_attention", "sliding_attention",
                         "conv_mixer", "conv_mixer"]},
        mx.float32, 82,
    ),
    # Issue 37, RMSNorm llama-likes (helper A).
    # Helium-1 2B's shape: grouped heads (its 16 / 8), head_dim the key mlx_lm ignores
    # (hidden / heads), traditional rope at rope_theta, no biases, untied (mlx_lm cannot load a
    # tied helium: its Model always builds lm_head), rms_norm_eps 1e-8.
    "helium": (
        {**BASE, "model_type": "helium", "num_hidden_layers": 3, "head_dim": 16,
         "rms_norm_eps": 1e-8, "rope_theta": 20000.0, "attention_bias": False,
         "mlp_bias": False, "tie_word_embeddings": False},
        mx.float32, 371,
    ),
    # Seed-OSS-36B's shape: head_dim wider than hidden / heads (its 128 against 5120 / 80),
    # grouped heads, q/k/v biases without an o_proj bias, untied, rope_theta 1e7.
    "seed_oss": (
        {**BASE, "model_type": "seed_oss", "head_dim": 32, "rms_norm_eps": 1e-6,
         "rope_theta": 1e7, "attention_bias": True, "attention_out_bias": False,
         "mlp_bias": False, "tie_word_embeddings": False},
        mx.float32, 372,
    ),
    # InternLM3-8B's shape: 4 query heads per key/value head (its 32 / 2), head_dim the key
    # mlx_lm ignores, untied, rope_theta 5e7, its dynamic NTK rope (factor 6) with
    # max_position_embeddings 16 (its 32768) so that the 24-token prompt and every decode step
    # run past it (the base grows with each step); biases on (InternLM3-8B: off; transformers
    # refuses qkv_bias and bias to differ), o_proj's with qkv_bias as mlx_lm ties it.
    "internlm3": (
        {**BASE, "model_type": "internlm3", "num_key_value_heads": 1, "head_dim": 16,
         "rope_theta": 5e7, "rope_scaling": {"rope_type": "dynamic", "factor": 6.0},
         "max_position_embeddings": 16, "qkv_bias": True, "bias": True,
         "tie_word_embeddings": False},
        mx.float32, 374,
    ),
    # Granite-3.1-2B's shape: grouped heads (its 32 / 8), tied, its multipliers (embedding 12,
    # residual 0.22, logits 8; attention 1 / head_dim as its 1 / 64), rope_theta 5e6. Its
    # 4-bit version is mlx_lm's quant_predicate's mix: o_proj and down_proj at 8 bits in groups
    # of 64, one `quantization` entry each in config.json.
    "granite": (
        {**BASE, "model_type": "granite", "rope_theta": 5e6, "attention_multiplier": 0.0625,
         "embedding_multiplier": 12.0, "residual_multiplier": 0.22, "logits_scaling": 8.0,
         "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": True},
        mx.float32, 373,
    ),
    # StarCoder2 (issue 37): LayerNorms with biases, biased projections, the c_fc/c_proj MLP,
    # GQA 4:2, tied. hidden_act as its configs say (tanh GELU, what transformers computes;
    # mlx_lm's erf GELU fixed by TRANSFORMERS_FIXES); no sliding window (mlx_lm ignores it).
    "starcoder2": (
        {**STARCODER2, "num_hidden_layers": 3, "norm_epsilon": 1e-5,
         "rope_theta": 100000.0, "hidden_act": "gelu_pytorch_tanh", "use_bias": True,
         "sliding_window": None, "tie_word_embeddings": True},
        mx.float32, 40,
    ),
    # The exact GELU (hidden_act "gelu": mlx_lm's numerics unchanged, so `mlx_lm.generate`
    # is the CLI's reference, with StarCoder2-Instruct's template), MQA, untied.
    "starcoder2-gelu": (
        {**STARCODER2, "num_hidden_layers": 2, "num_key_value_heads": 1, "norm_epsilon": 1e-6,
         "rope_theta": 10000.0, "hidden_act": "gelu", "tie_word_embeddings": False},
        mx.float32, 41,
    ),
    # StableLM (issue 37): sequential layers (StableLM-3B-4E1T, StableLM 2 1.6B's shape) with
    # q/k biases and a LayerNorm per query and key head, rope over a quarter of each head,
    # MHA, untied.
    "stablelm": (
        {**LAYER_NORM_BASE, "model_type": "stablelm", "num_key_value_heads": 4,
         "partial_rotary_factor": 0.25, "layer_norm_eps": 1e-5, "rope_theta": 10000.0,
         "use_qkv_bias": True, "qk_layernorm": True, "use_parallel_residual": False,
         "hidden_act": "silu", "tie_word_embeddings": False},
        mx.float32, 42,
    ),
    # StableLM 2 12B's shape: parallel layers (one norm), per-head q/k norms, GQA 4:2, no
    # biases, in bfloat16 (where the float32 queries and keys matter).
    "stablelm-parallel": (
        {**LAYER_NORM_BASE, "model_type": "stablelm", "partial_rotary_factor": 0.5,
         "layer_norm_eps": 1e-5, "rope_theta": 10000.0, "use_qkv_bias": False,
         "qk_layernorm": True, "use_parallel_residual": True, "hidden_act": "silu",
         "tie_word_embeddings": False},
        mx.bfloat16, 43,
    ),
    # Phi-2's shape (issue 37): parallel layers on one LayerNorm, biases everywhere (the head
    # too), rope over 0.4 of each head, MHA, the tanh GELU (gelu_new), float32 queries.
    "phi": (
        {"model_type": "phi", "vocab_size": VOCAB, "hidden_size": 64, "intermediate_size": 256,
         "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 4,
         "partial_rotary_factor": 0.4, "layer_norm_eps": 1e-5, "rope_theta": 10000.0,
         "hidden_act": "gelu_new", "qk_layernorm": False, "tie_word_embeddings": False,
         "max_position_embeddings": 2048},
        mx.float32, 44,
    ),
    # GQA 4:2 in bfloat16 (where the float32 queries matter), half of each head rotated.
    "phi-bf16": (
        {"model_type": "phi", "vocab_size": VOCAB, "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "partial_rotary_factor": 0.5, "layer_norm_eps": 1e-5, "rope_theta": 10000.0,
         "hidden_act": "gelu_new", "tie_word_embeddings": False,
         "max_position_embeddings": 2048},
        mx.bfloat16, 45,
    ),
    # Command-R+'s kind (issue 37): parallel layers on one bias-free LayerNorm, a LayerNorm per
    # query and key head (weights [heads, head_dim]), traditional rope, GQA 4:2, the tied head
    # times logit_scale.
    "cohere": (
        {**LAYER_NORM_BASE, "model_type": "cohere", "layer_norm_eps": 1e-5,
         "logit_scale": 0.0625, "rope_theta": 8e6, "use_qk_norm": True,
         "attention_bias": False, "hidden_act": "silu", "tie_word_embeddings": True},
        mx.float32, 46,
    ),
    # Command-R (v01)'s kind without q/k norms, in bfloat16, with the norm and projection
    # biases mlx_lm can load (layer_norm_bias, attention_bias) and another logit_scale.
    "cohere-bias": (
        {**LAYER_NORM_BASE, "model_type": "cohere", "num_hidden_layers": 2,
         "layer_norm_eps": 1e-5, "logit_scale": 0.125, "rope_theta": 10000.0,
         "use_qk_norm": False, "attention_bias": True, "layer_norm_bias": True,
         "hidden_act": "silu", "tie_word_embeddings": True},
        mx.bfloat16, 47,
    ),
    # Pythia's kind (issue 37): the per-head fused query_key_value, parallel layers on two
    # LayerNorms, rope over a quarter of each head (rotary_pct, rotary_emb_base), the untied
    # embed_out; hidden_act "gelu" as Pythia's configs say (the exact GELU, what transformers
    # computes; mlx_lm's tanh GELU fixed by TRANSFORMERS_FIXES). Its Hugging Face layout
    # (gpt_neox-hf: gpt_neox.* names and transformers' buffers) is what sanitize maps back.
    "gpt_neox": (
        {"model_type": "gpt_neox", "vocab_size": VOCAB, "hidden_size": 64,
         "intermediate_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
         "layer_norm_eps": 1e-5, "rotary_emb_base": 10000, "rotary_pct": 0.25,
         "use_parallel_residual": True, "hidden_act": "gelu", "max_position_embeddings": 2048,
         "tie_word_embeddings": False},
        mx.float32, 48,
    ),
    # Sequential layers, half of each head rotated, the tanh GELU (gelu_new: mlx_lm's
    # numerics), bfloat16.
    "gpt_neox-seq": (
        {"model_type": "gpt_neox", "vocab_size": VOCAB, "hidden_size": 64,
         "num_hidden_layers": 2, "num_attention_heads": 2, "layer_norm_eps": 1e-5,
         "rotary_emb_base": 500000, "rotary_pct": 0.5, "use_parallel_residual": False,
         "hidden_act": "gelu_new", "max_position_embeddings": 2048,
         "tie_word_embeddings": False},
        mx.bfloat16, 49,
    ),
    # Gemma-2B's shape: one key-value head for 4 query heads (its 8 : 1), heads of 32 wider
    # than hidden/heads (as Gemma-7B's 256 against 3072 / 16), the exact-GELU GeGLU under
    # the legacy hidden_act "gelu", the head tied (always), embeddings times sqrt(64).
    "gemma": (
        {**BASE, "model_type": "gemma", "num_key_value_heads": 1, "head_dim": 32,
         "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "gelu"},
        mx.float32, 31,
    ),
    # Gemma-7B's in bfloat16, as its checkpoints are: as many key-value heads as query
    # heads, the newer configs' hidden_activation; the norm's 1 + w rounds to bfloat16.
    "gemma-bf16": (
        {**BASE, "model_type": "gemma", "num_key_value_heads": 4, "head_dim": 16,
         "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "gelu",
         "hidden_activation": "gelu_pytorch_tanh"},
        mx.bfloat16, 32,
    ),
    # Gemma-2-27B's shape: queries scaled by query_pre_attn_scalar ** -0.5 with the scalar
    # other than head_dim (its 144 = 4608 / 32 against heads of 128; here 24 against 16),
    # 4 query / 2 key-value heads (its 32 / 16), attention scores capped at 50 and logits at
    # 30, sandwich norms, the tanh-GELU GeGLU. transformers 5's layer_types (alternate
    # sliding layers, which mlx_lm ignores) with its window of 4096: beyond every position
    # here, so mlx_lm's model is transformers'.
    "gemma2": (
        {**BASE, "model_type": "gemma2", "num_hidden_layers": 4, "head_dim": 16,
         "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "query_pre_attn_scalar": 24,
         "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
         "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 4096,
         "layer_types": ["sliding_attention", "full_attention"] * 2},
        mx.float32, 33,
    ),
    # In bfloat16 as its checkpoints are, caps small enough to bite (the random model's
    # scores stay far below 50), mlx_lm's defaults otherwise (query_pre_attn_scalar 144).
    "gemma2-bf16": (
        {**BASE, "model_type": "gemma2", "num_hidden_layers": 3, "head_dim": 32,
         "rms_norm_eps": 1e-6, "attn_logit_softcapping": 0.5,
         "final_logit_softcapping": 10.0},
        mx.bfloat16, 34,
    ),
    # GLM-4.5's shape: heads wider than hidden / heads (its 96 x 128 over 4096; here 4 x 32
    # over 64), biased q/k/v, per-head q/k norms, rope over half of each head
    # (partial_rotary_factor), the first layer dense, then 16 routed experts (its 160), top 4
    # (its 8), sigmoid scores with the correction bias, renormalized, scaled by 2.5, one
    # shared expert; an untied head.
    "glm4_moe": (
        {**BASE, "model_type": "glm4_moe", "num_hidden_layers": 3, "head_dim": 32,
         "partial_rotary_factor": 0.5, "attention_bias": True, "use_qk_norm": True,
         "moe_intermediate_size": 32, "n_routed_experts": 16, "n_shared_experts": 1,
         "num_experts_per_tok": 4, "n_group": 1, "topk_group": 1,
         "routed_scaling_factor": 2.5, "norm_topk_prob": True, "first_k_dense_replace": 1,
         "rope_theta": 1000000.0, "rope_scaling": None, "tie_word_embeddings": False,
         "num_nextn_predict_layers": 1},
        mx.float32, 35,
    ),
    # GLM-4.5-Air's: no q/k norms, scale 1; the experts in 2 groups of which 1 is kept
    # (glm4_moe's copy of the grouped router), top 2; two dense layers.
    "glm4_moe-air": (
        {**BASE, "model_type": "glm4_moe", "num_hidden_layers": 4, "head_dim": 32,
         "partial_rotary_factor": 0.5, "attention_bias": True, "use_qk_norm": False,
         "moe_intermediate_size": 32, "n_routed_experts": 8, "n_shared_experts": 1,
         "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1,
         "routed_scaling_factor": 1.0, "norm_topk_prob": True, "first_k_dense_replace": 2,
         "rope_theta": 1000000.0, "rope_scaling": None, "tie_word_embeddings": False},
        mx.float32, 36,
    ),
    # dots.llm1's shape: as many key/value heads as query heads, q/k norms, the first layer
    # dense, then 16 routed experts (its 128), top 6 (its 6), the correction bias, renormalized,
    # scaled by 2.5, two shared experts (n_shared_experts 2: one MLP twice as wide); ungrouped
    # (n_group 1) and untied.
    "dots1": (
        {**BASE, "model_type": "dots1", "num_hidden_layers": 3, "num_key_value_heads": 4,
         "moe_intermediate_size": 32, "n_routed_experts": 16, "n_shared_experts": 2,
         "num_experts_per_tok": 6, "n_group": 1, "topk_group": 1, "norm_topk_prob": True,
         "routed_scaling_factor": 2.5, "first_k_dense_replace": 1, "scoring_func": "noaux_tc",
         "rope_theta": 10000000.0, "sliding_window": None, "max_window_layers": 62,
         "tie_word_embeddings": False},
        mx.float32, 37,
    ),
    # dots1's copy of the grouped router with groups dropped (4 groups, 2 kept), biased MLPs
    # (mlp_bias), tied embeddings, a linear rope scaling; every layer sparse.
    "dots1-tied": (
        {**BASE, "model_type": "dots1", "num_hidden_layers": 3, "num_key_value_heads": 2,
         "moe_intermediate_size": 32, "n_routed_experts": 16, "n_shared_experts": 1,
         "num_experts_per_tok": 4, "n_group": 4, "topk_group": 2, "norm_topk_prob": False,
         "routed_scaling_factor": 1.0, "first_k_dense_replace": 0, "mlp_bias": True,
         "rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 2.0},
         "tie_word_embeddings": True},
        mx.float32, 38,
    ),
    # DeepSeek-V2's shape: the latent attention with a low-rank query, expanded per head
    # before the cache (mlx_lm's deepseek_v2 keeps kv_b_proj whole); yarn rope with mscale
    # and mscale_all_dim; the first layer dense, then 16 routed experts (its 160) in 4 groups
    # (its 8), 2 kept (its 3) by their best expert (group_limited_greedy), top 4 (its 6) of
    # the softmax, unnormalized, scaled by 16 (its 16), two shared experts.
    "deepseek_v2": (
        {**BASE, "model_type": "deepseek_v2", "num_hidden_layers": 3, "num_key_value_heads": 4,
         "moe_intermediate_size": 32, "n_shared_experts": 2, "n_routed_experts": 16,
         "routed_scaling_factor": 16.0, "kv_lora_rank": 32, "q_lora_rank": 64,
         "qk_rope_head_dim": 16, "v_head_dim": 32, "qk_nope_head_dim": 32,
         "topk_method": "group_limited_greedy", "scoring_func": "softmax",
         "norm_topk_prob": False, "n_group": 4, "topk_group": 2, "num_experts_per_tok": 4,
         "moe_layer_freq": 1, "first_k_dense_replace": 1, "rms_norm_eps": 1e-6,
         "rope_theta": 10000.0,
         "rope_scaling": {"type": "yarn", "factor": 40.0, "mscale": 0.707,
                          "mscale_all_dim": 0.707, "beta_fast": 32, "beta_slow": 1,
                          "original_max_position_embeddings": 4096},
         "attention_bias": False, "tie_word_embeddings": False},
        mx.float32, 39,
    ),
    # DeepSeek-V2-Lite's: one q_proj (no q_lora_rank), greedy top 2 of 8, scale 1; every
    # other layer sparse (moe_layer_freq 2).
    "deepseek_v2-lite": (
        {**BASE, "model_type": "deepseek_v2", "num_hidden_layers": 3, "num_key_value_heads": 4,
         "moe_intermediate_size": 32, "n_shared_experts": 2, "n_routed_experts": 8,
         "routed_scaling_factor": 1.0, "kv_lora_rank": 32, "q_lora_rank": None,
         "qk_rope_head_dim": 16, "v_head_dim": 32, "qk_nope_head_dim": 32,
         "topk_method": "greedy", "scoring_func": "softmax", "norm_topk_prob": False,
         "n_group": 1, "topk_group": 1, "num_experts_per_tok": 2, "moe_layer_freq": 2,
         "first_k_dense_replace": 0, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
         "rope_scaling": {"type": "yarn", "factor": 40.0, "mscale": 0.707,
                          "mscale_all_dim": 0.707, "beta_fast": 32, "beta_slow": 1,
                          "original_max_position_embeddings": 4096},
         "attention_bias": False, "tie_word_embeddings": False},
        mx.float32, 40,
    ),
    # Granite-3.0-1B-A400M's shape: granite's scalars (its embedding 12, residual 0.22,
    # attention 1/64, logits 6), 8 experts (its 32) under block_sparse_moe, top 4 (its 8),
    # tied embeddings.
    "granitemoe": (
        {**BASE, "model_type": "granitemoe", "num_hidden_layers": 3, "intermediate_size": 64,
         "num_local_experts": 8, "num_experts_per_tok": 4, "embedding_multiplier": 12.0,
         "residual_multiplier": 0.22, "attention_multiplier": 0.015625,
         "logits_scaling": 6.0, "attention_bias": False, "rope_theta": 10000.0,
         "rms_norm_eps": 1e-6, "tie_word_embeddings": True},
        mx.float32, 41,
    ),
    # Phi-mini-MoE's shape (no rope scaling):
    # LayerNorms, biased attention and head, 8 experts (its 16), top 2 by sparsemixer with
    # router_jitter_noise 0.01.
    "phimoe": (
        {**BASE, "model_type": "phimoe", "num_hidden_layers": 3, "num_local_experts": 8,
         "num_experts_per_tok": 2, "router_jitter_noise": 0.01, "rope_theta": 10000.0,
         "rope_scaling": None, "attention_bias": True, "lm_head_bias": True,
         "sliding_window": None, "tie_word_embeddings": False},
        mx.float32, 42,
    ),
    # Phi-3.5-MoE's long rope: `longrope` factors (its head's 64 cut to this head's 8) and
    # mscales, 131072 positions over 4096 original (mlx_lm rotates with the long factors at
    # every length).
    "phimoe-longrope": (
        {**BASE, "model_type": "phimoe", "num_hidden_layers": 3, "num_local_experts": 8,
         "num_experts_per_tok": 2, "router_jitter_noise": 0.01, "rope_theta": 10000.0,
         "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
         "rope_scaling": {"type": "longrope",
                          "long_factor": [1.0, 1.14, 1.6, 2.5, 4.9, 11.2, 25.8, 47.3],
                          "short_factor": [1.0, 1.02, 1.05, 1.1, 1.2, 1.3, 1.1, 1.0],
                          "long_mscale": 1.243163121016122,
                          "short_mscale": 1.243163121016122},
         "attention_bias": True, "lm_head_bias": True, "sliding_window": None,
         "tie_word_embeddings": False},
        mx.float32, 44,
    ),
    # sparsemixer's band wide enough to hold several experts (jitter 0.3), top 4.
    "phimoe-jitter": (
        {**BASE, "model_type": "phimoe", "num_hidden_layers": 3, "num_local_experts": 8,
         "num_experts_per_tok": 4, "router_jitter_noise": 0.3, "rope_theta": 10000.0,
         "attention_bias": True, "lm_head_bias": True, "tie_word_embeddings": False},
        mx.float32, 43,
    ),
    # ERNIE-4.5-21B-A3B's shape: interleaved rope, layer 0 dense then sparse to the last
    # (moe_layer_end_index), 16 experts (its 64), top 6 (its 6) of a float32 softmax,
    # renormalized, two shared experts; tied; its aux-free correction bias is in the
    # checkpoint only (mlx_lm drops it).
    "ernie4_5_moe": (
        {**BASE, "model_type": "ernie4_5_moe", "num_hidden_layers": 3, "use_bias": False,
         "moe_num_experts": 16, "moe_k": 6, "moe_intermediate_size": 32,
         "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_end_index": 2,
         "moe_layer_interval": 1, "moe_use_aux_free": True, "rope_theta": 500000.0,
         "tie_word_embeddings": True},
        mx.float32, 44,
    ),
    # Biases everywhere (use_bias), a sigmoid gate, every other layer sparse, no shared
    # experts, the experts as wide as the dense MLP (moe_intermediate_size 0), untied.
    "ernie4_5_moe-bias": (
        {**BASE, "model_type": "ernie4_5_moe", "num_hidden_layers": 4, "use_bias": True,
         "moe_num_experts": 8, "moe_k": 2, "moe_intermediate_size": 0,
         "moe_layer_start_index": 0, "moe_layer_interval": 2, "moe_gate_act": "sigmoid",
         "rope_theta": 10000.0, "tie_word_embeddings": False},
        mx.float32, 45,
    ),
    # Issue 37, Gemma 3 (helper dense-a). Gemma-3-1B's shape: one key-value head for 4 query
    # heads, heads of 32 wider than hidden/heads (its 256 against 1152 / 4), q/k Gemma norms,
    # query_pre_attn_scalar = head_dim, sliding layers of window 8 with a rope of base 10^4
    # and every third layer global (its 5 : 1 as 2 : 1) with base 10^6; the head tied (no
    # lm_head in the file). The prompt (24) and generation run far past the window.
    "gemma3_text": (
        {**BASE, "model_type": "gemma3_text", "num_hidden_layers": 4, "head_dim": 32,
         "num_key_value_heads": 1, "rms_norm_eps": 1e-6, "query_pre_attn_scalar": 32,
         "sliding_window": 8, "sliding_window_pattern": 3, "rope_theta": 1000000.0,
         "rope_local_base_freq": 10000.0, "hidden_activation": "gelu_pytorch_tanh",
         "tie_word_embeddings": True},
        mx.float32, 35,
    ),
    # Gemma-3-4B's kind: 2 key-value heads for 4, the global layers' rope scaled linearly by
    # 8, the head untied (an lm_head in the file), query_pre_attn_scalar other than head_dim.
    "gemma3_text-untied": (
        {**BASE, "model_type": "gemma3_text", "num_hidden_layers": 4, "head_dim": 16,
         "rms_norm_eps": 1e-6, "query_pre_attn_scalar": 24, "sliding_window": 6,
         "sliding_window_pattern": 2, "rope_theta": 1000000.0,
         "rope_local_base_freq": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 8.0},
         "tie_word_embeddings": False},
        mx.float32, 36,
    ),
    # In bfloat16, as the checkpoints are: sqrt(hidden) and the norms' 1 + w round there.
    "gemma3_text-bf16": (
        {**BASE, "model_type": "gemma3_text", "num_hidden_layers": 3, "head_dim": 16,
         "rms_norm_eps": 1e-6, "query_pre_attn_scalar": 16, "sliding_window": 8,
         "sliding_window_pattern": 3},
        mx.bfloat16, 37,
    ),
    # The text model of a multimodal Gemma 3 checkpoint: text_config without head counts
    # (the wrapper's defaults, 8 and 4), the top-level vocab_size, and the vision tower's and
    # projector's tensors in the file (sanitize drops them).
    "gemma3": (
        {"model_type": "gemma3", "vocab_size": VOCAB,
         "text_config": {"model_type": "gemma3_text", "hidden_size": 64,
                         "intermediate_size": 128, "num_hidden_layers": 3, "head_dim": 16,
                         "rms_norm_eps": 1e-6, "query_pre_attn_scalar": 16,
                         "sliding_window": 8, "sliding_window_pattern": 3,
                         "rope_scaling": {"rope_type": "linear", "factor": 8.0}}},
        mx.float32, 38,
    ),
    # Phi-3-mini-128k's shape (issue 37, dense-b): MHA, untied, the fused qkv_proj and
    # gate_up_proj, longrope with its short and long factors (mlx_lm rotates with the long
    # ones at every length) and max / original_max_position_embeddings 32 as its
    # 131072 / 4096; original_max_position_embeddings 32 lies inside the 24-token prompt and
    # its 64 greedy tokens, so the generation crosses it. Phi-3.5's sliding_window beyond
    # every position (mlx_lm ignores the key).
    "phi3": (
        {**BASE, "model_type": "phi3", "num_key_value_heads": 4, "rope_theta": 10000.0,
         "max_position_embeddings": 1024, "original_max_position_embeddings": 32,
         "rope_scaling": {"type": "longrope",
                          "short_factor": [1.0 + 0.05 * i for i in range(8)],
                          "long_factor": [1.5 + 0.4 * i for i in range(8)]},
         "sliding_window": 262144, "hidden_act": "silu", "tie_word_embeddings": False},
        mx.float32, 50,
    ),
    # Phi-4-mini's shape: GQA 4:2, tied, longrope over 0.75 of each head (12 of 16 features:
    # the scale multiplies the rotated ones only), max 16 times original.
    "phi3-tied": (
        {**BASE, "model_type": "phi3", "rope_theta": 250000.0, "partial_rotary_factor": 0.75,
         "max_position_embeddings": 256, "original_max_position_embeddings": 16,
         "rope_scaling": {"type": "longrope",
                          "short_factor": [1.0, 1.1, 1.3, 1.6, 2.0, 2.5],
                          "long_factor": [1.0, 1.5, 3.0, 6.0, 12.0, 20.0]},
         "hidden_act": "silu", "tie_word_embeddings": True},
        mx.float32, 51,
    ),
    # Phi-3-mini-4k's kind: the plain rope (no scaling), in bfloat16 as its checkpoints are.
    "phi3-plain": (
        {**BASE, "model_type": "phi3", "num_key_value_heads": 4, "rope_theta": 10000.0,
         "max_position_embeddings": 4096, "original_max_position_embeddings": 4096,
         "hidden_act": "silu", "tie_word_embeddings": False},
        mx.bfloat16, 52,
    ),
    # OLMo-2-0325-32B's kind (issue 37, dense-b): post-norm layers, q/k RMSNorms over the
    # whole projection, GQA 4:2 (its 40 : 8), untied, rope_theta 500000.
    "olmo2": (
        {**BASE, "model_type": "olmo2", "rms_norm_eps": 1e-6, "rope_theta": 500000.0,
         "attention_bias": False, "hidden_act": "silu", "tie_word_embeddings": False},
        mx.float32, 53,
    ),
    # Tied (mlx_lm's default), MHA, biases on the four attention projections and (mlx_lm's
    # mlp_bias) the MLP, head_dim wider than hidden / heads, in bfloat16.
    "olmo2-bias": (
        {**BASE, "model_type": "olmo2", "num_key_value_heads": 4, "head_dim": 32,
         "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "attention_bias": True,
         "mlp_bias": True, "tie_word_embeddings": True},
        mx.bfloat16, 54,
    ),
    # OLMo-3-7B's kind: three sliding-window layers (window 8, inside the 24-token prompt) to
    # one full layer, the full layers' long-context yarn (factor 8, attention_factor
    # 0.1 ln 8 + 1 as its config writes it), GQA 4:2, untied.
    "olmo3": (
        {**BASE, "model_type": "olmo3", "num_hidden_layers": 4, "rms_norm_eps": 1e-6,
         "rope_theta": 500000.0, "sliding_window": 8, "attention_bias": False,
         "max_position_embeddings": 512,
         "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
         "rope_scaling": {"rope_type": "yarn", "factor": 8.0,
                          "original_max_position_embeddings": 64, "beta_fast": 32.0,
                          "beta_slow": 1.0, "attention_factor": 1.2079441541679836},
         "hidden_act": "silu", "tie_word_embeddings": False},
        mx.float32, 55,
    ),
    # GLM-4-9B-0414's shape (issue 37, dense-b): sandwich norms, the fused gate_up_proj,
    # biased q/k/v, the traditional rope over half of each head, heads wider than
    # hidden / heads (its 128 against 4096 / 32), GQA 4:2 (its 32 : 2), its own lm_head.
    "glm4": (
        {**BASE, "model_type": "glm4", "head_dim": 32, "partial_rotary_factor": 0.5,
         "rope_theta": 10000.0, "attention_bias": True, "hidden_act": "silu",
         "tie_word_embeddings": False},
        mx.float32, 56,
    ),
    # Ministral-3-8B's kind (issue 37, session 50): llama's layers whose queries are scaled
    # after rope by 1 + 0.1 ln(1 + floor(p / 16)) (its original_max_position_embeddings
    # 16384 as 16, so the 24-token prompt and its 64 greedy tokens cross five steps of it),
    # the yarn rope (factor 16, mscale = mscale_all_dim = 1) all under rope_parameters, heads
    # wider than hidden / heads (its 128 against 4096 / 32), GQA 4:2, untied.
    # Llama 4 text as mlx_lm's llama4_text has it (dense; MobileLLM-R1's kind): GQA, the
    # fourth layer NoPE, weightless q/k norms, the MLP of intermediate_size_mlp (not
    # intermediate_size), untied `output`; with the transformers keys mlx_lm leaves unused
    # (no expert layer; chunking and temperature tuning past these positions).
    "llama4_text": (
        {**BASE, "model_type": "llama4_text", "num_hidden_layers": 4, "head_dim": 16,
         "intermediate_size_mlp": 96, "rope_theta": 500000.0, "tie_word_embeddings": False,
         "no_rope_layers": [1, 1, 1, 0], "use_qk_norm": True, "hidden_act": "silu",
         "moe_layers": [], "num_local_experts": 16, "num_experts_per_tok": 1,
         "interleave_moe_layer_step": 1, "attention_chunk_size": 8192,
         "attn_temperature_tuning": True, "floor_scale": 8192, "attn_scale": 0.1,
         "attention_bias": False},
        mx.float32, 71,
    ),
    "ministral3": (
        {**BASE, "model_type": "ministral3", "head_dim": 32, "tie_word_embeddings": False,
         "hidden_act": "silu",
         "rope_parameters": {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 16.0,
                             "original_max_position_embeddings": 16, "beta_fast": 32.0,
                             "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                             "llama_4_scaling_beta": 0.1}},
        mx.float32, 57,
    ),
    # Ministral-3-3B's kind: tied, in bfloat16, and a sliding-window layer between two full
    # ones (layer_types; window 8), with a larger beta and a rope without scaling.
    "ministral3-tied": (
        {**BASE, "model_type": "ministral3", "tie_word_embeddings": True, "sliding_window": 8,
         "layer_types": ["full_attention", "sliding_attention", "full_attention"],
         "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                             "original_max_position_embeddings": 8,
                             "llama_4_scaling_beta": 0.5}},
        mx.bfloat16, 58,
    ),
    # A multimodal Ministral 3 checkpoint as the hub has it (mistral3_fp8_layout): the text
    # model under transformers 5's `model.language_model.`, the head at the top, FP8 weights
    # (e4m3 values in bfloat16 and a `weight_scale_inv` each, an `activation_scale` beside),
    # the vision tower's and projector's tensors; sizes small enough that every projection is
    # stored inline, bit for bit. Tied in text_config (the 3B's).
    "mistral3": (
        {"model_type": "mistral3", "vision_config": {"model_type": "pixtral"},
         "image_token_index": 10, "spatial_merge_size": 2,
         "text_config": {"model_type": "ministral3", "vocab_size": VOCAB, "hidden_size": 32,
                         "intermediate_size": 64, "num_hidden_layers": 2,
                         "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
                         "rms_norm_eps": 1e-5, "max_position_embeddings": 4096,
                         "tie_word_embeddings": True,
                         "rope_parameters": {"rope_type": "yarn", "rope_theta": 1000000.0,
                                             "factor": 16.0,
                                             "original_max_position_embeddings": 16,
                                             "beta_fast": 32.0, "beta_slow": 1.0,
                                             "mscale": 1.0, "mscale_all_dim": 1.0,
                                             "llama_4_scaling_beta": 0.1}}},
        mx.bfloat16, 59,
    ),
    # Mistral-Small-3.1's kind: mistral3 over a `mistral` text model (llama's decoder), in
    # mlx_lm's layout, untied (text_config without the key).
    "mistral3-llama": (
        {"model_type": "mistral3",
         "text_config": {**BASE, "model_type": "mistral", "head_dim": 32,
                         "rope_theta": 1000000000.0}},
        mx.float32, 60,
    ),
    # EXAONE-4.0-32B's kind (issue 37, session 50): post-norm layers, per-head q/k norms,
    # "LLLG" (three local layers with window 8 and rope, the fourth global without rope; the
    # 24-token prompt three windows long), llama3 rope scaling (factor 16 over an original
    # 16), GQA 4:2, untied; transformers 5's layer_types beside the pattern.
    "exaone4": (
        {**BASE, "model_type": "exaone4", "num_hidden_layers": 4, "head_dim": 16,
         "rope_theta": 1000000.0, "tie_word_embeddings": False, "sliding_window": 8,
         "sliding_window_pattern": "LLLG",
         "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
         "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
         "hidden_act": "silu"},
        mx.float32, 61,
    ),
    # EXAONE-4.0-1.2B's kind: no pattern (every layer global, with rope; transformers needs
    # layer_types then), tied.
    "exaone4-tied": (
        {**BASE, "model_type": "exaone4", "head_dim": 16, "rope_theta": 1000000.0,
         "tie_word_embeddings": True, "sliding_window": None,
         "sliding_window_pattern": None, "layer_types": ["full_attention"] * 3,
         "rope_scaling": None},
        mx.float32, 62,
    ),
    # Command-R7B's kind (issue 37, session 50): Command-R's parallel layers, three sliding
    # layers (window 8, rope) to one global (no rope), GQA 4:2, logits scaled.
    "cohere2": (
        {**LAYER_NORM_BASE, "model_type": "cohere2", "num_hidden_layers": 4, "head_dim": 16,
         "layer_norm_eps": 1e-5, "logit_scale": 0.25, "rope_theta": 50000.0,
         "sliding_window": 8, "sliding_window_pattern": 4, "hidden_act": "silu"},
        mx.float32, 63,
    ),
    # In float16, where the queries go to float32 for the attention product; every other
    # layer global, biased projections and LayerNorms.
    "cohere2-f16": (
        {**LAYER_NORM_BASE, "model_type": "cohere2", "num_hidden_layers": 4, "head_dim": 16,
         "layer_norm_eps": 1e-5, "logit_scale": 0.0625, "rope_theta": 10000.0,
         "sliding_window": 6, "sliding_window_pattern": 2, "attention_bias": True,
         "layer_norm_bias": True},
        mx.float16, 64,
    ),
    # GPT-2's shape (issue 37, session 50): learned positions (128 of them, past the prompt
    # and its 64 greedy tokens), fused c_attn, MHA, tied; and the Hugging Face layout
    # (gpt2-hf: un-prefixed names, Conv1D weights [in, out], the causal-mask buffers).
    # Issue 38, LongCat-Flash-Chat's shape: two MLA sub-blocks per layer (2 layers, its 28)
    # with q_lora_rank and kv_lora_rank a quarter of the hidden width (its 1536 and 512 of
    # 6144, whose LoRA scales are 2 and 3.46), 32 + 16 query/key features per head (its 128 +
    # 64), values of 32 (its 128), 4 heads (its 64), rope base 1e7; dense MLPs of 256 (its
    # 12288) beside the shortcut MoE: 8 routed experts of 32 (its 512 of 2048) and 4 identity
    # experts (its 256), top 4 (its 12), softmax scores with the correction bias, times 6.0
    # (its own factor), not renormalized; untied head.
    "longcat_flash": (
        {"model_type": "longcat_flash", "attention_method": "MLA",
         "zero_expert_type": "identity", "vocab_size": VOCAB, "hidden_size": 128,
         "ffn_hidden_size": 256, "expert_ffn_hidden_size": 32, "n_routed_experts": 8,
         "zero_expert_num": 4, "moe_topk": 4, "num_layers": 2, "num_attention_heads": 4,
         "max_position_embeddings": 4096, "kv_lora_rank": 32, "q_lora_rank": 32,
         "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32,
         "routed_scaling_factor": 6.0, "rms_norm_eps": 1e-5, "rope_theta": 10000000.0,
         "mla_scale_q_lora": True, "mla_scale_kv_lora": True, "attention_bias": False,
         "norm_topk_prob": False, "router_bias": False, "tie_word_embeddings": False},
        mx.float32, 66,
    ),
    # Issue 35/38, LongCat-Flash-Lite's n-gram embedding (mlx_lm's defaults: n-grams up to 4
    # tokens, 4 hashes each, 12 tables) in front of longcat_flash's layers: the tables 32 wide
    # (hidden 384 / 12, so they quantize), of 4 x vocab rows and more (its 78 x); the router
    # with a bias and renormalized (the keys mlx_lm reads beside transformers' defaults), and
    # attention biases.
    "longcat_flash_ngram": (
        {"model_type": "longcat_flash_ngram", "vocab_size": VOCAB, "hidden_size": 384,
         "ffn_hidden_size": 256, "expert_ffn_hidden_size": 32, "n_routed_experts": 8,
         "zero_expert_num": 4, "moe_topk": 4, "num_layers": 2, "num_attention_heads": 4,
         "max_position_embeddings": 4096, "kv_lora_rank": 32, "q_lora_rank": 96,
         "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32,
         "routed_scaling_factor": 6.0, "rms_norm_eps": 1e-5, "rope_theta": 10000000.0,
         "mla_scale_q_lora": True, "mla_scale_kv_lora": True, "attention_bias": True,
         "zero_expert_type": "identity", "ngram_vocab_size_ratio": 4, "emb_neighbor_num": 4,
         "emb_split_num": 4, "norm_topk_prob": True, "router_bias": True,
         "tie_word_embeddings": False},
        mx.float32, 67,
    ),
    "gpt2": (
        {"model_type": "gpt2", "vocab_size": VOCAB, "n_embd": 64, "n_layer": 3, "n_head": 4,
         "n_ctx": 128, "n_positions": 128, "layer_norm_epsilon": 1e-5,
         "activation_function": "gelu_new"},
        mx.float32, 65,
    ),
    # Issue 35, kimi_k3 (helper kimi3). No released checkpoint to read: the shape is mlx_lm's
    # TextArgs defaults (93 layers of 7168, 96 MLA heads, vocab 163840) and the options its
    # code has, scaled down. The checkpoint's layout, under text_config (a
    # vision-language wrapper, parameters under language_model.): Kimi Delta Attention in three
    # layers of four (fused qkv_proj and one short convolution, gate_lower_bound -5: the
    # sigmoid form of the decay), MLA without rope behind a low-rank query (q_lora_rank) with
    # the sigmoid output gate; SiTU (beta 2, linear_beta 4) in the dense MLP, the shared
    # expert and the routed experts; a latent MoE (the experts at 32 features between
    # routed_expert_down_proj and _up_proj, the normed latent) behind the float32 sigmoid
    # router, grouped (2 groups of 4, both kept); attention residuals in blocks of 3 layers (8
    # layers: the last block partial). Untied head.
    "kimi_k3": (
        {"model_type": "kimi_k3", "text_config": {
            "model_type": "kimi_linear", "vocab_size": VOCAB, "hidden_size": 64,
            "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 4,
            "intermediate_size": 128, "rms_norm_eps": 1e-5, "max_position_embeddings": 4096,
            "hidden_act": "situ", "activation_situ_beta": 2.0,
            "activation_situ_linear_beta": 4.0, "attn_res_block_size": 3,
            "q_lora_rank": 32, "kv_lora_rank": 32, "qk_nope_head_dim": 32,
            "qk_rope_head_dim": 16, "v_head_dim": 32, "mla_use_nope": True,
            "mla_use_output_gate": True, "num_experts": 8, "num_experts_per_token": 4,
            "num_shared_experts": 1, "moe_intermediate_size": 32,
            "moe_router_activation_func": "sigmoid", "moe_renormalize": True,
            "routed_scaling_factor": 2.5, "first_k_dense_replace": 1, "moe_layer_freq": 1,
            "use_grouped_topk": True, "num_expert_group": 2, "topk_group": 2,
            "routed_expert_hidden_size": 32, "latent_moe_use_norm": True,
            "tie_word_embeddings": False,
            "linear_attn_config": {"num_heads": 2, "head_dim": 32, "short_conv_kernel_size": 4,
                                   "kda_layers": [1, 2, 3, 5, 6, 7],
                                   "full_attn_layers": [4, 8], "gate_lower_bound": -5.0}}},
        mx.float32, 66,
    ),
    # What the other leaves out, in the flat layout (no text_config: mlx_lm reads the whole
    # config as the text model's): a tied head, no attention residuals, plain MoE (no latent),
    # one query projection, no output gate, the softplus decay (no lower bound), a full-rank
    # KDA output gate (g_proj), SiTU at its default beta without linear_beta; experts in 2
    # groups of which 1 is kept, every other layer sparse from the first, top 2 not
    # renormalized, no shared expert, a convolution of 3 taps, MLA first.
    "kimi_k3-tied": (
        {"model_type": "kimi_k3", "vocab_size": VOCAB, "hidden_size": 64,
         "num_hidden_layers": 5, "num_attention_heads": 2, "num_key_value_heads": 2,
         "intermediate_size": 96, "rms_norm_eps": 1e-6, "hidden_act": "situ",
         "kv_lora_rank": 32, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
         "v_head_dim": 32, "mla_use_nope": True, "num_experts": 8,
         "num_experts_per_token": 2, "num_shared_experts": 0, "moe_intermediate_size": 32,
         "moe_renormalize": False, "routed_scaling_factor": 1.0, "first_k_dense_replace": 0,
         "moe_layer_freq": 2, "num_expert_group": 2, "topk_group": 1,
         "tie_word_embeddings": True,
         "linear_attn_config": {"num_heads": 1, "head_dim": 64, "short_conv_kernel_size": 3,
                                "kda_layers": [2, 3, 5], "full_attn_layers": [1, 4],
                                "use_full_rank_gate": True}},
        mx.float32, 67,
    ),
}

# Prompt lengths other than PROMPT_LEN: the mixture-of-experts models route 2 or 4 experts
# per token, and mlx_lm sorts the (token, expert) pairs by expert from 64 pairs on; 40 tokens
# make the prompt's forward (and generate_step's prefill of 39) take the sorted path, each
# decode step the unsorted one.
PROMPT_LENS = {"qwen3_moe": 40, "mixtral": 40, "qwen2_moe": 40, "olmoe": 40, "qwen3_next": 40,
               "qwen3_5_moe": 40, "deepseek_v3": 40, "deepseek_v3-lite": 40, "lfm2_moe": 40,
               "granitemoehybrid-tiny": 40, "nemotron_h-moe": 40,
               "glm4_moe": 40, "glm4_moe-air": 40, "dots1": 40, "dots1-tied": 40,
               "deepseek_v2": 40, "deepseek_v2-lite": 40, "granitemoe": 40,
               "phimoe": 40, "phimoe-jitter": 40, "phimoe-longrope": 40, "ernie4_5_moe": 40,
               "ernie4_5_moe-bias": 40, "kimi_linear": 40, "gpt_oss": 40,
               "bailing_moe_linear": 40, "bailing_hybrid": 40, "bailing_hybrid-tied": 150,
               "bailing_moe_v3": 40, "bailing_moe_v3-tied": 40,
               "longcat_flash": 40, "longcat_flash_ngram": 40,
               "kimi_k3": 40}

# Llama checkpoints saved by transformers 5 (`torch/lm_transformers.py`): `rope_theta` only
# under `rope_parameters`. mlx_lm 0.32.2's llama reads the top level only and silently runs
# them with base 10000, so the reference of mlx-lm is transformers' logits
# (`<name>.transformers.*`); mlx_lm's own record shows how far off that base is.
TRANSFORMERS_MODELS = ["llama-rope-parameters", "llama3-rope-parameters"]

# name of the float model -> quantization of its 4-bit version: (group_size, bits, predicate),
# or None for no 4-bit version.
QUANTIZED = {
    "mistral": (32, 4, None),
    # Per-layer overrides: the embedding at 8 bits, one projection left in float.
    "llama3": (32, 4, lambda p, m: {"group_size": 64, "bits": 8} if p.endswith("embed_tokens")
               else (False if p == "model.layers.0.mlp.down_proj" else True)),
    "qwen2": (32, 4, None),
    "qwen3": (32, 4, None),
    "qwen3_5": (32, 4, None),
    "smollm3": (32, 4, None),
    "llama4_text": (32, 4, None),
    "smollm2-bf16": None,
    "lfm2": (32, 4, None),
    "lfm2-1.2b": None,
    "lfm2_moe": (32, 4, None),
    "lfm2_moe-scaled": None,
    "lfm2_moe-nobias": None,
    "mamba": (32, 4, None),
    "mamba-bf16": None,
    "falcon_mamba": (32, 4, None),
    "recurrent_gemma": (32, 4, None),
    "recurrent_gemma-bf16": None,
    "mamba2": (32, 4, None),
    "mamba2-codestral": None,
    "nemotron_h": (32, 4, None),
    "nemotron_h-nano": None,
    "nemotron_h-moe": (32, 4, None),
    "granitemoehybrid": (32, 4, None),
    "granitemoehybrid-rope": None,
    "granitemoehybrid-tiny": (32, 4, None),
    "falcon_h1": (32, 4, None),
    "falcon_h1-deep": None,
    "qwen3_moe": (32, 4, None),
    "mixtral": (32, 4, None),
    "qwen2_moe": (32, 4, None),
    "olmoe": (32, 4, None),
    "olmoe-bias": None,
    "qwen3_next": (32, 4, None),
    "qwen3_next-dense": None,
    "qwen3_5_moe": (32, 4, None),
    "olmo_hybrid": (32, 4, None),
    "olmo_hybrid-rope": None,
    "plamo2": (32, 4, None),
    "plamo2-untied": None,
    "jamba": (32, 4, None),
    "jamba-tied": None,
    "baichuan_m1": (32, 4, None),
    "baichuan_m1-global": None,
    "deepseek_v3": (32, 4, None),
    "deepseek_v3-lite": None,
    "glm4_moe": (32, 4, None),
    "glm4_moe-air": None,
    "dots1": (32, 4, None),
    "dots1-tied": None,
    "deepseek_v2": (32, 4, None),
    "deepseek_v2-lite": None,
    "granitemoe": (32, 4, None),
    "phimoe": (32, 4, None),
    "phimoe-jitter": None,
    "phimoe-longrope": (32, 4, None),
    "ernie4_5_moe": (32, 4, None),
    "ernie4_5_moe-bias": None,
    # mlx_lm's quant_predicate: the router (`mlp.gate`) at 8 bits.
    "kimi_linear": (32, 4, None),
    "kimi_linear-tied": None,
    "rwkv7": (64, 4, None),
    "rwkv7-bf16": None,
    # mlx_lm's quant_predicate: the routers (`mlp.gate.gate_proj`) at 8 bits.
    "bailing_moe_linear": (32, 4, None),
    "bailing_moe_linear-tied": None,
    # mlx_lm's quant_predicate: the routers at 8 bits, the absorbed MLA matrices in float.
    "bailing_hybrid": (32, 4, None),
    "bailing_hybrid-tied": None,
    # mlx_lm's quant_predicate: the embedding, head, MLA's projections but dense (its q_proj
    # and g_proj too) and KDA's b_proj in float; the router is no linear layer.
    "bailing_moe_v3": (32, 4, None),
    "bailing_moe_v3-tied": None,
    "gear": (32, 4, None),
    "gear-untied": None,
    # Issue 37, RMSNorm llama-likes (helper A).
    "helium": (32, 4, None),
    "seed_oss": (32, 4, None),
    "internlm3": (32, 4, None),
    # mlx_lm's quant_predicate (granite.py: o_proj, down_proj, lm_head at 8 bits).
    "granite": (32, 4, None),
    "starcoder2": (32, 4, None),
    "starcoder2-gelu": None,
    "stablelm": (32, 4, None),
    "stablelm-parallel": None,
    "phi": (32, 4, None),
    "phi-bf16": None,
    "cohere": (32, 4, None),
    "cohere-bias": None,
    "gpt_neox": (32, 4, None),
    "gpt_neox-seq": None,
    "gemma": (32, 4, None),
    "gemma-bf16": None,
    "gemma2": (32, 4, None),
    "gemma2-bf16": None,
    # Issue 37, Gemma 3 (helper dense-a).
    "gemma3_text": (32, 4, None),
    "gemma3_text-untied": None,
    "gemma3_text-bf16": None,
    "gemma3": (32, 4, None),
    "phi3": (32, 4, None),
    "phi3-tied": None,
    "phi3-plain": None,
    "olmo2": (32, 4, None),
    "olmo2-bias": None,
    "olmo3": (32, 4, None),
    "glm4": (32, 4, None),
    "ministral3": (32, 4, None),
    "ministral3-tied": None,
    "mistral3": (32, 4, None),
    "mistral3-llama": None,
    "exaone4": (32, 4, None),
    "exaone4-tied": None,
    "cohere2": (32, 4, None),
    "cohere2-f16": None,
    "gpt2": (32, 4, None),
    # mlx_lm's quant_predicate: the routers at 8 bits.
    "gpt_oss": (32, 4, None),
    "gpt_oss-truncate": None,
    # mlx_lm's quant_predicate: the routers' classifiers at 8 bits.
    "longcat_flash": (32, 4, None),
    "longcat_flash_ngram": (32, 4, None),
    # mlx_lm's quant_predicate: the routers at 8 bits, the residual projections kept float.
    "kimi_k3": (32, 4, None),
    "kimi_k3-tied": None,
}

# Models also converted in MLX's floating-point quantization modes (`<name>-<mode>`, as
# `mlx_lm.convert -q --q-mode MODE` writes them: the mode's group size and bits; a layer the
# architecture's quant_predicate names keeps its own, affine, entry): a tied dense model
# (QuantizedEmbedding's lookup and as_linear), a mixture of experts (gather_qmm) and
# multi-head latent attention (QuantizedMultiLinear, both transposes).
QUANTIZED_MODES = {
    "qwen2": ("mxfp4", "nvfp4", "mxfp8"),
    "qwen3_moe": ("mxfp4", "nvfp4", "mxfp8"),
    "deepseek_v3": ("mxfp4",),
    # What GPT-OSS ships: `mlx_lm.convert --q-mode mxfp4` of it.
    "gpt_oss": ("mxfp4",),
}
MODE_SUFFIXES = tuple(f"-{m}" for m in ("mxfp4", "nvfp4", "mxfp8"))


def base_name(name):
    """The CONFIGS name a model directory was made from."""
    for suffix in ("-hf", "-4bit") + MODE_SUFFIXES:
        name = name.removesuffix(suffix)
    return name


# Models saved as a Hugging Face checkpoint would hold them: convolution weights `[C, 1, K]`,
# which makes mlx_lm's falcon_h1 sanitize fold its multipliers into the weights at load.
HF_LAYOUT = {"falcon_h1-deep"}

# Models whose every parameter that mlx_lm initializes to a constant (norm weights at one,
# biases at zero) is perturbed, not only the norms: with zero biases a wrong bias path would
# go unseen. (The older models keep `perturb_norms` alone, so their data stays as committed.)
PERTURB_CONSTANTS = {"lfm2", "lfm2-1.2b", "mamba", "mamba-bf16", "falcon_mamba",
                     "recurrent_gemma", "recurrent_gemma-bf16", "mamba2", "mamba2-codestral",
                     "nemotron_h", "nemotron_h-nano", "granitemoehybrid",
                     "granitemoehybrid-rope", "falcon_h1", "falcon_h1-deep", "qwen3_moe",
                     "mixtral", "qwen2_moe", "olmoe", "olmoe-bias", "qwen3_next",
                     "qwen3_next-dense", "qwen3_5_moe", "olmo_hybrid",
                     "olmo_hybrid-rope", "plamo2", "plamo2-untied", "jamba",
                     "jamba-tied", "baichuan_m1", "baichuan_m1-global", "deepseek_v3",
                     "deepseek_v3-lite",
                     # Issue 37, RMSNorm llama-likes (helper A).
                     "helium", "seed_oss", "granite", "internlm3",
                     # Issue 37, LayerNorm families (helper C).
                     "starcoder2", "starcoder2-gelu",
                     "stablelm", "stablelm-parallel", "phi", "phi-bf16",
                     "cohere", "cohere-bias", "gpt_neox", "gpt_neox-seq",
                     # Issue 37, Gemma (helper B).
                     "gemma", "gemma-bf16", "gemma2", "gemma2-bf16",
                     # Issue 37, Gemma 3 (helper dense-a).
                     "gemma3_text", "gemma3_text-untied", "gemma3_text-bf16", "gemma3",
                     # Issue 37, Phi-3 (dense-b).
                     "phi3", "phi3-tied", "phi3-plain", "olmo2", "olmo2-bias", "olmo3",
                     "glm4",
                     # Issue 37, Ministral 3 (session 50).
                     "ministral3", "ministral3-tied", "mistral3", "mistral3-llama",
                     "exaone4", "exaone4-tied", "cohere2", "cohere2-f16", "gpt2",
                     # Issue 35, mixture-of-experts hybrids.
                     "lfm2_moe", "lfm2_moe-scaled", "lfm2_moe-nobias",
                     "granitemoehybrid-tiny", "nemotron_h-moe",
                     # Issue 38, grouped-router families.
                     "glm4_moe", "glm4_moe-air", "dots1", "dots1-tied",
                     "deepseek_v2", "deepseek_v2-lite", "granitemoe",
                     "phimoe", "phimoe-jitter", "phimoe-longrope", "ernie4_5_moe",
                     "ernie4_5_moe-bias",
                     # Issue 35, Kimi Linear.
                     "kimi_linear", "kimi_linear-tied",
                     # Issue 35, RWKV-7.
                     "rwkv7", "rwkv7-bf16",
                     # Issue 35, bailing_moe_linear.
                     "bailing_moe_linear", "bailing_moe_linear-tied",
                     # Issue 35, bailing_hybrid.
                     "bailing_hybrid", "bailing_hybrid-tied",
                     # Issue 35, bailing_moe_v3.
                     "bailing_moe_v3", "bailing_moe_v3-tied",
                     # Issue 35, Gear.
                     "gear", "gear-untied",
                     # Issue 38, GPT-OSS.
                     "gpt_oss", "gpt_oss-truncate",
                     # Issue 38, LongCat-Flash (and its n-gram embedding).
                     "longcat_flash", "longcat_flash_ngram",
                     # Issue 35, kimi_k3.
                     "kimi_k3", "kimi_k3-tied"}

# Models whose reference is mlx_lm's model with its departures from transformers fixed
# (a function of the loaded model); the record also keeps mlx_lm's own logits' distance.
TRANSFORMERS_FIXES = {}

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


# The families' own chat templates (written from the published tokenizer_config.json files),
# in place of the ChatML one, for the CLI's greedy text against `mlx_lm.generate`'s.
# Granite 3.x (ibm-granite/granite-3.1-2b-instruct, without its tool and document branches):
# role markers around each message, `<|end_of_text|>` after each.
GRANITE_CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' %}"
    "{{- '<|start_of_role|>system<|end_of_role|>' + message['content'] + '<|end_of_text|>\n' }}"
    "{%- elif message['role'] == 'user' %}"
    "{{- '<|start_of_role|>user<|end_of_role|>' + message['content'] + '<|end_of_text|>\n' }}"
    "{%- elif message['role'] == 'assistant' %}"
    "{{- '<|start_of_role|>assistant<|end_of_role|>' + message['content'] + '<|end_of_text|>\n' }}"
    "{%- endif %}"
    "{%- if loop.last and add_generation_prompt %}"
    "{{- '<|start_of_role|>assistant<|end_of_role|>' }}"
    "{%- endif %}"
    "{%- endfor %}"
)
# Family chat templates, as the families' tokenizer_config.json on the hub has them (written
# from the released files), for the CLI's chat cases (lm_generate.py): the model name (its
# 4-bit version too) -> its template, in place of the ChatML one the other models share.
FAMILY_CHAT_TEMPLATES = {
    "granite": GRANITE_CHAT_TEMPLATE,
    # bigcode/starcoder2-15b-instruct-v0.1.
    "starcoder2-gelu": (
        "{{bos_token}}{{'You are an exceptionally intelligent coding assistant that consistently"
        " delivers accurate and reliable responses to user instructions.\\n\\n'}}\n"
        "{%- for message in messages %}\n"
        "    {%- if message['role'] == 'system' %}\n"
        "        {{ raise_exception('System messages are not allowed in this template.') }}\n"
        "    {%- else %}\n"
        "        {%- if message['role'] == 'user' %}\n"
        "{{'### Instruction\\n' + message['content'] + '\\n\\n'}}\n"
        "        {%- else %}\n"
        "{{'### Response\\n' + message['content'] + eos_token + '\\n\\n'}}\n"
        "        {%- endif %}\n"
        "    {%- endif %}\n"
        "{%- endfor %}\n"
        "{{'### Response\\n'}}"
    ),
    # CohereForAI/c4ai-command-r-v01 (its default template).
    "cohere": (
        "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:]"
        " %}{% set system_message = messages[0]['content'] %}{% elif false == true %}{% set "
        "loop_messages = messages %}{% set system_message = 'You are Command-R, a brilliant, "
        "sophisticated, AI-assistant trained to assist human users by providing thorough "
        "responses. You are trained by Cohere.' %}{% else %}{% set loop_messages = messages %}"
        "{% set system_message = false %}{% endif %}{% if system_message != false %}{{ "
        "'<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' + system_message + '<|END_OF_TURN_TOKEN|>' }}"
        "{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != "
        "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
        "user/assistant/user/assistant/...') }}{% endif %}{% set content = message['content'] %}"
        "{% if message['role'] == 'user' %}{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + "
        "content.strip() + '<|END_OF_TURN_TOKEN|>' }}{% elif message['role'] == 'assistant' %}"
        "{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>'  + content.strip() + "
        "'<|END_OF_TURN_TOKEN|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ "
        "'<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %}"
    ),
    # stabilityai/stablelm-2-zephyr-1_6b.
    "stablelm": (
        "{% for message in messages %}\n"
        "{% if message['role'] == 'user' %}\n"
        "{{ '<|user|>\\n' + message['content'] + eos_token }}\n"
        "{% elif message['role'] == 'system' %}\n"
        "{{ '<|system|>\\n' + message['content'] + eos_token }}\n"
        "{% elif message['role'] == 'assistant' %}\n"
        "{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\n"
        "{% endif %}\n"
        "{% if loop.last and add_generation_prompt %}\n"
        "{{ '<|assistant|>' }}\n"
        "{% endif %}\n"
        "{% endfor %}"
    ),
}
# The chat template of Gemma's instruction-tuned checkpoints (Gemma 1 and 2 have the same):
# the bos token first, no system role, user and model turns alternating between
# <start_of_turn> and <end_of_turn>. With the golden tokenizer those markers are plain text
# to the byte-level BPE, and its bos_token is null (transformers leaves it undefined: empty).
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}"
    "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}"
    "{% else %}{% set role = message['role'] %}{% endif %}"
    "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}"
)

# Gemma 3's instruction-tuned checkpoints' template: Gemma's turns, a system message put in
# front of the first user turn's text (two newlines after it), content given as a string or
# as a list of parts (an image part becomes <start_of_image>).
GEMMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
    "    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n"
    "                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "    {%- else -%}\n"
    "        {{ raise_exception(\"Invalid content type\") }}\n"
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\n'}}\n"
    "{%- endif -%}\n"
)

# Model families whose golden models carry their real chat template (by model_type) in
# place of the shared tokenizer's ChatML one.
CHAT_TEMPLATES = {"gemma": GEMMA_CHAT_TEMPLATE, "gemma2": GEMMA_CHAT_TEMPLATE,
                  "gemma3_text": GEMMA3_CHAT_TEMPLATE, "gemma3": GEMMA3_CHAT_TEMPLATE}

# microsoft/Phi-3-mini-4k-instruct's (Phi-3.5-mini-instruct's too): <|system|>, <|user|>,
# <|assistant|> turns each closed by <|end|>, the eos token after a conversation that asks
# for no reply.
CHAT_TEMPLATES["phi3"] = (
    "{% for message in messages %}{% if message['role'] == 'system' %}"
    "{{'<|system|>\n' + message['content'] + '<|end|>\n'}}"
    "{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}"
    "{% elif message['role'] == 'assistant' %}"
    "{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}"
)

# allenai/OLMo-2-1124-7B-Instruct's (Tülu 3's): bos, <|system|> / <|user|> / <|assistant|>
# headers on their own lines, the eos token after each assistant turn.
OLMO2_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}"
    "{{ '<|system|>\n' + message['content'] + '\n' }}"
    "{% elif message['role'] == 'user' %}{{ '<|user|>\n' + message['content'] + '\n' }}"
    "{% elif message['role'] == 'assistant' %}{% if not loop.last %}"
    "{{ '<|assistant|>\n'  + message['content'] + eos_token + '\n' }}"
    "{% else %}{{ '<|assistant|>\n'  + message['content'] + eos_token }}{% endif %}{% endif %}"
    "{% if loop.last and add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
    "{% endfor %}"
)
CHAT_TEMPLATES["olmo2"] = OLMO2_CHAT_TEMPLATE

# THUDM/GLM-4-9B-0414's, without its tool and observation branches: [gMASK]<sop>, the
# system messages first, then <|user|> / <|assistant|> turns, each header on its own line.
CHAT_TEMPLATES["glm4"] = (
    "[gMASK]<sop>{%- for msg in messages %}{%- if msg.role == 'system' %}<|system|>\n"
    "{{ msg.content }}{%- endif %}{%- endfor %}"
    "{%- for message in messages if message.role != 'system' %}"
    "{%- set role = message['role'] %}{%- set content = message['content'] %}"
    "{%- if role == 'user' %}<|user|>\n{{ content }}"
    "{%- elif role == 'assistant' %}<|assistant|>\n{{ content }}{%- endif %}{%- endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

# mistralai/Mistral-Small-3.1-24B-Instruct-2503's (Ministral 3's is its kind), text turns
# only and without its dated default system prompt: bos, the system message in
# [SYSTEM_PROMPT] ... [/SYSTEM_PROMPT], each user turn in [INST] ... [/INST], each assistant
# turn closed by the eos token.
MISTRAL3_CHAT_TEMPLATE = (
    "{{- bos_token }}{%- if messages[0]['role'] == 'system' %}"
    "{%- set system_message = messages[0]['content'] %}{%- set loop_messages = messages[1:] %}"
    "{{- '[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' }}"
    "{%- else %}{%- set loop_messages = messages %}{%- endif %}"
    "{%- for message in loop_messages %}{%- if message['role'] == 'user' %}"
    "{{- '[INST]' + message['content'] + '[/INST]' }}"
    "{%- elif message['role'] == 'assistant' %}{{- message['content'] + eos_token }}"
    "{%- else %}{{- raise_exception('Only user, system and assistant roles are supported!') }}"
    "{%- endif %}{%- endfor %}"
)
CHAT_TEMPLATES["ministral3"] = MISTRAL3_CHAT_TEMPLATE
CHAT_TEMPLATES["mistral3"] = MISTRAL3_CHAT_TEMPLATE

# LGAI-EXAONE/EXAONE-4.0-32B's, text turns only (no tools): [|system|], [|user|] and
# [|assistant|] turns closed by [|endofturn|], and the generation prompt with an empty
# thought unless enable_thinking.
CHAT_TEMPLATES["exaone4"] = (
    "{%- for message in messages %}{%- if message['role'] == 'system' %}"
    "{{- '[|system|]' + message['content'] + '[|endofturn|]\n' }}"
    "{%- elif message['role'] == 'user' %}{{- '[|user|]' + message['content'] + '[|endofturn|]\n' }}"
    "{%- elif message['role'] == 'assistant' %}"
    "{{- '[|assistant|]' + message['content'] + '[|endofturn|]\n' }}{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '[|assistant|]' }}"
    "{%- if enable_thinking is defined and enable_thinking is true %}{{- '<think>\n' }}"
    "{%- else %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}{%- endif %}"
)

# CohereForAI/c4ai-command-r7b-12-2024's, text turns only (no tools, documents or its long
# default preamble): Command-R's turn tokens, the chatbot's turns inside
# <|START_RESPONSE|> ... <|END_RESPONSE|>.
CHAT_TEMPLATES["cohere2"] = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
    "{{ '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' + messages[0]['content'] + "
    "'<|END_OF_TURN_TOKEN|>' }}{% set loop_messages = messages[1:] %}"
    "{% else %}{% set loop_messages = messages %}{% endif %}"
    "{% for message in loop_messages %}{% if message['role'] == 'user' %}"
    "{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + message['content'] + '<|END_OF_TURN_TOKEN|>' }}"
    "{% elif message['role'] == 'assistant' %}"
    "{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_RESPONSE|>' + message['content'] + "
    "'<|END_RESPONSE|><|END_OF_TURN_TOKEN|>' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_RESPONSE|>' }}{% endif %}"
)


def corpus():
    """Text the tokenizer learns its merges from: this file's own source, stable and local."""
    return pathlib.Path(__file__).read_text().splitlines()


def train_tokenizer(folder):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus(), trainer)
    assert tok.get_vocab_size() <= VOCAB, tok.get_vocab_size()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "chat_template": CHAT_TEMPLATE,
    }, indent=2) + "\n")


def model_classes(config):
    from mlx_lm.utils import _get_classes
    return _get_classes(config)


def perturb_norms(model, key):
    """RMSNorm weights start at ones; random ones make a wrong norm path visible."""
    def f(path, x):
        nonlocal key
        if path.endswith("norm.weight") or path.endswith("layernorm.weight"):
            key, sub = mx.random.split(key)
            return x + 0.1 * mx.random.normal(x.shape, key=sub).astype(x.dtype)
        return x
    model.update(tree_map_with_path(f, model.parameters()))


def perturb_constants(model, key):
    """Every parameter that starts as one repeated value (norm weights at one, biases at
    zero), moved by 0.1 N(0, 1) per element."""
    def f(path, x):
        nonlocal key
        if x.size > 0 and mx.all(x == x.reshape(-1)[0]).item():
            key, sub = mx.random.split(key)
            return x + 0.1 * mx.random.normal(x.shape, key=sub).astype(x.dtype)
        return x
    model.update(tree_map_with_path(f, model.parameters()))


def make_models(names):
    """Writes the models `names` of CONFIGS (each with its 4-bit and Hugging Face-layout
    versions) and gives TRANSFORMERS_MODELS the tokenizer. The tokenizer is the committed one
    (every model directory has a copy) when there is one, so that adding a model changes no
    other; it is trained only for a first generation."""
    tokenizer = MODELS / "_tokenizer"
    committed = MODELS / "mistral"
    if (committed / "tokenizer.json").exists():
        tokenizer.mkdir(parents=True)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(committed / f, tokenizer / f)
    for name in names:
        modes = [MODELS / f"{name}-{m}" for m in QUANTIZED_MODES.get(name, ())]
        for folder in [MODELS / name, MODELS / f"{name}-4bit", MODELS / f"{name}-hf",
                       MODELS / f"{name}-4bit-hf", MODELS / f"{name}-mxfp4-hf"] + modes:
            if folder.exists():
                shutil.rmtree(folder)
    if not tokenizer.exists():
        tokenizer.mkdir(parents=True)
        train_tokenizer(tokenizer)
    for name in names:
        config, dtype, seed = CONFIGS[name]
        mx.random.seed(seed)
        model_class, args_class = model_classes(config)
        model = model_class(args_class.from_dict(config))
        if name in PERTURB_CONSTANTS:
            perturb_constants(model, mx.random.key(seed + 100))
        else:
            perturb_norms(model, mx.random.key(seed + 100))
        if config["model_type"] == "gemma3_text" and config.get("tie_word_embeddings", True):
            # mlx_lm's gemma3_text ties its head when the checkpoint has none (sanitize).
            model.pop("lm_head")
            model.tie_word_embeddings = True
        if config["model_type"] == "gemma3":
            model.language_model.pop("lm_head")
            model.language_model.tie_word_embeddings = True
        if config["model_type"] == "recurrent_gemma" and config.get("tie_word_embeddings"):
            # mlx_lm's recurrent_gemma always builds `lm_head` and drops it at load when the
            # checkpoint has none: a tied checkpoint is one without it.
            model.pop("lm_head")
        model.set_dtype(dtype)
        mx.eval(model.parameters())
        save(MODELS / name, model, config)
        if QUANTIZED[name] is not None:
            gs, bits, predicate = QUANTIZED[name]
            qmodel, qconfig = quantize_model(model, dict(config), gs, bits,
                                             quant_predicate=predicate)
            save(MODELS / f"{name}-4bit", qmodel, qconfig, like=MODELS / name)
        for mode in QUANTIZED_MODES.get(name, ()):
            # `quantize_model` quantized `model` in place: the saved float model, afresh.
            fmodel, _ = load_model(MODELS / name)
            qmodel, qconfig = quantize_model(fmodel, dict(config), None, None, mode=mode)
            save(MODELS / f"{name}-{mode}", qmodel, qconfig, like=MODELS / name)
        if name == "qwen3_5":
            hf_layout_qwen3_5()
            weights_recipe.write(MODELS / "qwen3_5-hf")
        if name in HF_LAYOUT:
            hf_layout_conv(MODELS / name)
            weights_recipe.write(MODELS / name)
        if name == "qwen3_5_moe":
            hf_layout_qwen3_5_moe()
            weights_recipe.write(MODELS / "qwen3_5_moe-hf")
        if name == "nemotron_h-moe":
            hf_layout_nemotron_h_moe()
            weights_recipe.write(MODELS / "nemotron_h-moe-hf")
        if name == "granitemoehybrid-tiny":
            hf_layout_granitemoehybrid_moe()
            weights_recipe.write(MODELS / "granitemoehybrid-tiny-hf")
        if name == "lfm2_moe":
            hf_layout_lfm2_moe()
            weights_recipe.write(MODELS / "lfm2_moe-hf")
        if name == "mixtral":
            hf_layout_mixtral()
            weights_recipe.write(MODELS / "mixtral-hf")
        if name == "gemma3":
            gemma3_vision_tensors()
            weights_recipe.write(MODELS / "gemma3")
        if name == "mistral3":
            mistral3_fp8_layout()
            weights_recipe.write(MODELS / "mistral3")
        if name == "gpt2":
            hf_layout_gpt2()
            weights_recipe.write(MODELS / "gpt2-hf")
        if name == "gpt_neox":
            hf_layout_gpt_neox()
            weights_recipe.write(MODELS / "gpt_neox-hf")
        if name == "deepseek_v3":
            hf_layout_deepseek_v3(config)
            weights_recipe.write(MODELS / "deepseek_v3-hf")
            hf_layout_deepseek_v3_4bit(config)
            weights_recipe.write(MODELS / "deepseek_v3-4bit-hf")
        if name == "phimoe":
            hf_layout_mixtral("phimoe")
            weights_recipe.write(MODELS / "phimoe-hf")
        if name == "granitemoe":
            hf_layout_granitemoe()
            weights_recipe.write(MODELS / "granitemoe-hf")
        if name in HF_EXPERTS:
            hf_layout_experts(name, config)
            weights_recipe.write(MODELS / f"{name}-hf")
        if name == "longcat_flash":
            hf_layout_longcat_flash(config)
            weights_recipe.write(MODELS / "longcat_flash-hf")
        if name == "kimi_linear":
            hf_layout_kimi_linear(config)
            weights_recipe.write(MODELS / "kimi_linear-hf")
        if name == "kimi_k3":
            hf_layout_kimi_k3(config)
            weights_recipe.write(MODELS / "kimi_k3-hf")
        if name == "rwkv7":
            hf_layout_rwkv7()
            weights_recipe.write(MODELS / "rwkv7-hf")
        if name == "gpt_oss":
            hf_layout_gpt_oss(config)
            weights_recipe.write(MODELS / "gpt_oss-mxfp4-hf")
    add_tokenizer(TRANSFORMERS_MODELS)
    shutil.rmtree(tokenizer)


def save(folder, model, config, like=None):
    save_model(folder, model)
    save_config(dict(config), folder / "config.json")
    weights_recipe.write(folder, like)
    for f in (MODELS / "_tokenizer").iterdir():
        shutil.copy(f, folder / f.name)
    # A model's own template, else its family's.
    template = (FAMILY_CHAT_TEMPLATES.get(base_name(folder.name))
                or CHAT_TEMPLATES.get(config.get("model_type")))
    if template is not None:
        tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
        tokenizer_config["chat_template"] = template
        (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2)
                                                      + "\n")
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [2]}) + "\n")


def add_tokenizer(names):
    """The tokenizer of `MODELS/_tokenizer` into the transformers-saved models `names`."""
    for name in names:
        for f in (MODELS / "_tokenizer").iterdir():
            shutil.copy(f, MODELS / name / f.name)


def hf_layout_qwen3_5():
    """The Qwen3.5 weights as a Hugging Face checkpoint stores them: `model.language_model.`
    prefix, conv1d weights `[C, 1, K]`, norm weights stored as offsets from one, and an `mtp.`
    tensor mlx_lm drops. mlx_lm's sanitize maps it back to the same model."""
    src = MODELS / "qwen3_5"
    dst = MODELS / "qwen3_5-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    out = {}
    norms = (".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight",
             ".q_norm.weight", ".k_norm.weight")
    for k, v in weights.items():
        if "conv1d.weight" in k:
            v = v.moveaxis(1, 2)
        if any(k.endswith(s) for s in norms):
            v = v - 1.0
        out[k.replace("language_model.model.", "model.language_model.")] = v
    out["mtp.fc.weight"] = mx.zeros((4, 4))
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def gemma3_vision_tensors():
    """A multimodal Gemma 3 checkpoint's tensors beside the text model's: a vision tower's and
    the projector's (small stand-ins), which mlx_lm's gemma3 sanitize drops."""
    path = MODELS / "gemma3" / "model.safetensors"
    weights = mx.load(str(path))
    key = mx.random.key(3803)
    weights["vision_tower.vision_model.embeddings.patch_embedding.weight"] = mx.random.normal(
        (8, 3, 2, 2), key=key)
    weights["multi_modal_projector.mm_input_projection_weight"] = mx.random.normal(
        (8, 64), key=mx.random.split(key)[0])
    path.unlink()
    (path.parent / "model.safetensors.index.json").unlink()
    mx.save_safetensors(str(path), weights, metadata={"format": "mlx"})


def mistral3_fp8_layout():
    """The mistral3 model as a hub checkpoint of Ministral 3 holds it: transformers 5's
    `model.language_model.` prefix, the head (when there is one) at the top, each
    projection an FP8 weight with its per-tensor `weight_scale_inv` (e4m3 values times the
    scale are the weight) and an `activation_scale`, and small stand-ins for the vision
    tower's and projector's tensors. mlx_lm's sanitize multiplies each weight by its scale
    and drops the rest. The e4m3 values are kept in bfloat16 (mlx_lm multiplies the raw
    bytes of an F8_E4M3 tensor; mlx-lm's test writes that form itself)."""
    path = MODELS / "mistral3" / "model.safetensors"
    weights = mx.load(str(path))
    out = {}
    for k, v in weights.items():
        k = k.removeprefix("language_model.")
        if k.startswith("model."):
            k = "model.language_model." + k.removeprefix("model.")
        if k.endswith("_proj.weight"):
            scale = (mx.max(mx.abs(v.astype(mx.float32))) / 448.0).astype(mx.bfloat16)
            v = mx.from_fp8(mx.to_fp8(v.astype(mx.float32) / scale), dtype=mx.bfloat16)
            out[k + "_scale_inv"] = scale
            out[k.removesuffix("weight") + "activation_scale"] = mx.array(0.5, mx.bfloat16)
        out[k] = v
    key = mx.random.key(5903)
    out["model.vision_tower.patch_conv.weight"] = mx.random.normal((8, 3, 2, 2), key=key)
    out["model.multi_modal_projector.linear_1.weight"] = mx.random.normal(
        (8, 8), key=mx.random.split(key)[0])
    mx.eval(out)
    path.unlink()
    (path.parent / "model.safetensors.index.json").unlink()
    mx.save_safetensors(str(path), out, metadata={"format": "pt"})


def hf_layout_gpt2():
    """The GPT-2 weights as a Hugging Face checkpoint stores them: no `model.` prefix, the
    Conv1D projections `[in, out]`, and each layer's causal-mask buffer `attn.bias`. mlx_lm's
    sanitize maps it back to the same model."""
    src = MODELS / "gpt2"
    dst = MODELS / "gpt2-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    out = {}
    conv1d = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
    for k, v in weights.items():
        k = k.removeprefix("model.")
        out[k] = v.T if k.endswith(conv1d) else v
    for i in range(CONFIGS["gpt2"][0]["n_layer"]):
        out[f"h.{i}.attn.bias"] = mx.tril(mx.ones((8, 8), dtype=mx.bool_))[None, None]
    mx.eval(out)
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_gpt_neox():
    """The GPT-NeoX weights as a Hugging Face checkpoint stores them: `gpt_neox.layers.{i}.`,
    `gpt_neox.embed_in`, `gpt_neox.final_layer_norm`, `embed_out` at the top, and
    transformers' buffers (the causal mask `attention.bias`, `attention.masked_bias`, the
    rotary `inv_freq`). mlx_lm's sanitize maps it back to the same model."""
    src = MODELS / "gpt_neox"
    dst = MODELS / "gpt_neox-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    out = {}
    for k, v in weights.items():
        k = k.removeprefix("model.")
        if k.startswith("h."):
            k = "gpt_neox.layers." + k.removeprefix("h.")
        elif k != "embed_out.weight":
            k = "gpt_neox." + k
        out[k] = v
    for i in range(CONFIGS["gpt_neox"][0]["num_hidden_layers"]):
        p = f"gpt_neox.layers.{i}.attention"
        out[f"{p}.bias"] = mx.tril(mx.ones((8, 8), dtype=mx.bool_))[None, None]
        out[f"{p}.masked_bias"] = mx.array(-1e9)
        out[f"{p}.rotary_emb.inv_freq"] = mx.arange(2, dtype=mx.float32)
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_conv(folder):
    """The checkpoint in `folder` with its convolution weights as a Hugging Face checkpoint
    stores them, `[C, 1, K]` (what mlx_lm's falcon_h1 sanitize recognizes one by)."""
    weights = mx.load(str(folder / "model.safetensors"))
    weights = {k: v.moveaxis(1, 2) if "conv1d.weight" in k else v for k, v in weights.items()}
    mx.eval(weights)
    (folder / "model.safetensors").unlink()
    mx.save_safetensors(str(folder / "model.safetensors"), weights, metadata={"format": "pt"})


def prompt_ids(seed):
    return mx.random.randint(3, VOCAB, (PROMPT_LEN,), key=mx.random.key(seed)).astype(mx.int32)
def hf_layout_nemotron_h_moe():
    """The Nemotron-3-Nano-shaped weights as NVIDIA's checkpoint stores them: convolution
    weights `[C, 1, K]`, each expert apart (`mixer.experts.{e}.up_proj` / `down_proj`) and a
    multi-token-prediction tensor (`mtp.*`). mlx_lm's sanitize maps them back."""
    src = MODELS / "nemotron_h-moe"
    dst = MODELS / "nemotron_h-moe-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    names = {"fc1": "up_proj", "fc2": "down_proj"}
    out = {}
    for k, v in weights.items():
        if "conv1d.weight" in k:
            v = v.moveaxis(1, 2)
        if ".switch_mlp." in k:
            prefix, rest = k.split(".switch_mlp.")
            proj, param = rest.split(".")
            for e in range(v.shape[0]):
                out[f"{prefix}.experts.{e}.{names[proj]}.{param}"] = v[e]
        else:
            out[k] = v
    out["mtp.layers.0.norm.weight"] = mx.ones((4,))
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_granitemoehybrid_moe():
    """The Granite-4.0-H-Tiny-shaped weights as IBM's checkpoint stores them: convolution
    weights `[C, 1, K]`, each layer's experts as `block_sparse_moe.input_linear` `[E, 2I, D]`
    (gate rows first) and `block_sparse_moe.output_linear` `[E, D, I]`. mlx_lm's sanitize
    splits them back into `switch_mlp`."""
    src = MODELS / "granitemoehybrid-tiny"
    dst = MODELS / "granitemoehybrid-tiny-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    out = {}
    for k, v in weights.items():
        if "conv1d.weight" in k:
            v = v.moveaxis(1, 2)
        if ".switch_mlp.up_proj." in k:
            continue
        if ".switch_mlp.gate_proj." in k:
            up = weights[k.replace("gate_proj", "up_proj")]
            out[k.replace("switch_mlp.gate_proj", "input_linear")] = \
                mx.concatenate([v, up], axis=1)
            continue
        out[k.replace("switch_mlp.down_proj", "output_linear")] = v
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_lfm2_moe():
    """The LFM2-MoE weights as Liquid AI's checkpoint stores them: convolution weights
    `[C, 1, K]`, the projections named `w1` / `w2` / `w3` (gate, down, up) and each sparse
    layer's experts apart (`feed_forward.experts.{e}.w1`). mlx_lm's sanitize maps them back."""
    src = MODELS / "lfm2_moe"
    dst = MODELS / "lfm2_moe-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    names = {"gate_proj": "w1", "down_proj": "w2", "up_proj": "w3"}
    out = {}
    for k, v in weights.items():
        if "conv.weight" in k:
            v = v.moveaxis(1, 2)
        for mlx_name, name in names.items():
            k = k.replace(f".{mlx_name}.", f".{name}.")
        if ".switch_mlp." in k:
            prefix, rest = k.split(".switch_mlp.")
            for e in range(v.shape[0]):
                out[f"{prefix}.experts.{e}.{rest}"] = v[e]
        else:
            out[k] = v
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_gpt_oss(config):
    """The GPT-OSS model as OpenAI's checkpoints ship it (`gpt_oss-mxfp4-hf`): the experts in
    MXFP4 and everything else in float (`quantization_config: {quant_method: mxfp4}`, no
    `quantization`), each layer's experts as `experts.gate_up_proj_blocks` (the packed bytes
    `[E, 2I, in / 32, 16]`, gate and up rows interleaved), `gate_up_proj_scales`,
    `gate_up_proj_bias` (interleaved too), `down_proj_blocks` / `_scales` / `_bias`. mlx_lm's
    sanitize turns them back into its switch layers."""
    dst = MODELS / "gpt_oss-mxfp4-hf"
    shutil.copytree(MODELS / "gpt_oss", dst)
    (dst / "model.safetensors.index.json").unlink()
    fmodel, _ = load_model(MODELS / "gpt_oss")
    qmodel, _ = quantize_model(fmodel, dict(config), None, None, mode="mxfp4",
                               quant_predicate=lambda p, m: ".experts." in p)
    weights = dict(tree_flatten(qmodel.parameters()))

    def interleave(a, b):
        return mx.stack([a, b], axis=-2).reshape(*a.shape[:-2], 2 * a.shape[-2], a.shape[-1])

    def blocks(w):
        return w.view(mx.uint8).reshape(*w.shape[:-1], -1, 16)

    out = {}
    for k, v in weights.items():
        if ".experts.up_proj." in k:
            continue
        if ".experts.gate_proj." in k:
            prefix, param = k.split(".experts.gate_proj.")
            up = weights[f"{prefix}.experts.up_proj.{param}"]
            if param == "bias":
                both = mx.stack([v, up], axis=-1).reshape(*v.shape[:-1], -1)
                out[f"{prefix}.experts.gate_up_proj_bias"] = both
            elif param == "weight":
                out[f"{prefix}.experts.gate_up_proj_blocks"] = blocks(interleave(v, up))
            else:
                out[f"{prefix}.experts.gate_up_proj_scales"] = interleave(v, up)
        elif ".experts.down_proj." in k:
            prefix, param = k.split(".experts.down_proj.")
            suffix = {"weight": "blocks", "scales": "scales", "bias": "bias"}[param]
            out[f"{prefix}.experts.down_proj_{suffix}"] = blocks(v) if param == "weight" else v
        else:
            out[k] = v
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})
    hf_config = {k: v for k, v in dict(config).items() if k != "quantization"}
    hf_config["quantization_config"] = {
        "quant_method": "mxfp4",
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                   "model.embed_tokens", "lm_head"],
    }
    (dst / "config.json").write_text(json.dumps(hf_config, indent=4) + "\n")


def hf_layout_mixtral(name="mixtral"):
    """The Mixtral weights (phimoe's too) as a Hugging Face checkpoint stores them: each
    expert's projections apart, `block_sparse_moe.experts.{e}.w1` / `w2` / `w3` (gate, down,
    up). mlx_lm's sanitize stacks them back into `switch_mlp`."""
    src = MODELS / name
    dst = MODELS / f"{name}-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    names = {"gate_proj": "w1", "down_proj": "w2", "up_proj": "w3"}
    out = {}
    for k, v in weights.items():
        if ".switch_mlp." not in k:
            out[k] = v
            continue
        prefix, rest = k.split(".switch_mlp.")
        proj, param = rest.split(".")
        for e in range(v.shape[0]):
            out[f"{prefix}.experts.{e}.{names[proj]}.{param}"] = v[e]
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_qwen3_5_moe():
    """The Qwen3.5-MoE weights as a Hugging Face checkpoint stores them (transformers'
    `Qwen3_5MoeExperts`): each layer's experts fused, `mlp.experts.gate_up_proj` `[E, 2I, D]`
    (gate rows first) and `mlp.experts.down_proj` `[E, D, I]`, under `model.language_model.`,
    conv1d weights `[C, 1, K]`, norm weights as offsets from one, an `mtp.` tensor. mlx_lm's
    sanitize splits and maps it back."""
    src = MODELS / "qwen3_5_moe"
    dst = MODELS / "qwen3_5_moe-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    norms = (".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight",
             ".q_norm.weight", ".k_norm.weight")
    out = {}
    for k, v in weights.items():
        k = k.replace("language_model.model.", "model.language_model.")
        if ".switch_mlp.up_proj." in k:
            continue
        if ".switch_mlp.gate_proj." in k:
            up = weights[k.replace("model.language_model.", "language_model.model.")
                         .replace("gate_proj", "up_proj")]
            out[k.replace("switch_mlp.gate_proj.weight", "experts.gate_up_proj")] = \
                mx.concatenate([v, up], axis=-2)
            continue
        if ".switch_mlp.down_proj." in k:
            out[k.replace("switch_mlp.down_proj.weight", "experts.down_proj")] = v
            continue
        if "conv1d.weight" in k:
            v = v.moveaxis(1, 2)
        if any(k.endswith(s) for s in norms):
            v = v - 1.0
        out[k] = v
    out["mtp.fc.weight"] = mx.zeros((4, 4))
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


# Models also written as a Hugging Face checkpoint holds them (`<name>-hf`): each expert's
# projections apart (`mlp.experts.{e}.gate_proj`) and, where the family's checkpoints append
# one, a multi-token-prediction layer (`model.layers.{num_hidden_layers}`) mlx_lm drops.
HF_EXPERTS = {"glm4_moe": True, "dots1": False, "deepseek_v2": False, "ernie4_5_moe": False}


def hf_layout_experts(name, config):
    """The experts of `name` unstacked as a Hugging Face checkpoint stores them (from mlx_lm's
    `switch_mlp` or dots1's stacked `experts`), plus the MTP layer HF_EXPERTS asks for.
    mlx_lm's sanitize stacks them back."""
    src = MODELS / name
    dst = MODELS / f"{name}-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    out = {}
    for k, v in weights.items():
        stacked = next((s for s in (".switch_mlp.", ".mlp.experts.") if s in k), None)
        if stacked is None:
            out[k] = v
            continue
        prefix, rest = k.split(stacked)
        prefix += ".mlp" if stacked == ".mlp.experts." else ""
        for e in range(v.shape[0]):
            out[f"{prefix}.experts.{e}.{rest}"] = v[e]
    if config["model_type"] == "ernie4_5_moe":
        # ERNIE-4.5's aux-free correction bias and a multi-token-prediction tensor, which
        # mlx_lm's sanitize drops.
        out["model.layers.1.mlp.moe_statics.e_score_correction_bias"] = mx.zeros((1, 16))
        out["model.mtp_linear_proj.0.weight"] = mx.zeros((4, 4))
    if HF_EXPERTS[name]:
        n = config["num_hidden_layers"]
        out[f"model.layers.{n}.eh_proj.weight"] = mx.zeros((4, 4))
        out[f"model.layers.{n}.mlp.experts.0.up_proj.weight"] = mx.zeros((4, 4))
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_granitemoe():
    """The GraniteMoE weights as a Hugging Face checkpoint stores them: each layer's experts
    fused, `block_sparse_moe.input_linear` `[E, 2I, D]` (gate rows first) and
    `block_sparse_moe.output_linear` `[E, D, I]`. mlx_lm's sanitize splits and renames them."""
    src = MODELS / "granitemoe"
    dst = MODELS / "granitemoe-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    out = {}
    for k, v in weights.items():
        if ".switch_mlp.up_proj." in k:
            continue
        if ".switch_mlp.gate_proj." in k:
            up = weights[k.replace("gate_proj", "up_proj")]
            out[k.replace("switch_mlp.gate_proj", "input_linear")] = \
                mx.concatenate([v, up], axis=1)
        elif ".switch_mlp.down_proj." in k:
            out[k.replace("switch_mlp.down_proj", "output_linear")] = v
        else:
            out[k] = v
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_deepseek_v3(config):
    """The DeepSeek-V3 weights as a Hugging Face checkpoint stores them: each expert's
    projections apart (`mlp.experts.{e}.gate_proj`), the latent's up-projection as one
    `kv_b_proj` `[heads * (qk_nope + v_head), kv_lora_rank]`, a multi-token-prediction layer
    (`model.layers.61`, the one mlx_lm drops) and precomputed rotary frequencies. mlx_lm's
    sanitize maps it back to the same model."""
    src = MODELS / "deepseek_v3"
    dst = MODELS / "deepseek_v3-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    heads = config["num_attention_heads"]
    out = {}
    for k, v in weights.items():
        if ".switch_mlp." in k:
            prefix, rest = k.split(".switch_mlp.")
            for e in range(v.shape[0]):
                out[f"{prefix}.experts.{e}.{rest}"] = v[e]
        elif k.endswith("embed_q.weight") and "unembed" not in k:
            prefix = k.removesuffix("embed_q.weight")
            wk = v.swapaxes(-1, -2)
            wv = weights[prefix + "unembed_out.weight"]
            kv_b = mx.concatenate([wk, wv], axis=1)
            out[prefix + "kv_b_proj.weight"] = kv_b.reshape(-1, kv_b.shape[-1])
            out[prefix + "rotary_emb.inv_freq"] = mx.ones((8,))
        elif not k.endswith("unembed_out.weight"):
            out[k] = v
    out["model.layers.61.eh_proj.weight"] = mx.zeros((4, 4))
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_longcat_flash(config):
    """The LongCat-Flash weights as its Hugging Face checkpoint stores them: each expert's
    projections apart (`mlp.experts.{e}.gate_proj`), each sub-block's latent up-projection as
    one `kv_b_proj`, a multi-token-prediction module (`model.mtp.*`, which mlx_lm drops).
    mlx_lm's sanitize maps it back to the same model."""
    src = MODELS / "longcat_flash"
    dst = MODELS / "longcat_flash-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    out = {}
    for k, v in weights.items():
        if ".switch_mlp." in k:
            prefix, rest = k.split(".switch_mlp.")
            for e in range(v.shape[0]):
                out[f"{prefix}.experts.{e}.{rest}"] = v[e]
        elif k.endswith("embed_q.weight") and "unembed" not in k:
            prefix = k.removesuffix("embed_q.weight")
            wk = v.swapaxes(-1, -2)
            wv = weights[prefix + "unembed_out.weight"]
            kv_b = mx.concatenate([wk, wv], axis=1)
            out[prefix + "kv_b_proj.weight"] = kv_b.reshape(-1, kv_b.shape[-1])
        elif not k.endswith("unembed_out.weight"):
            out[k] = v
    out["model.mtp.layers.0.eh_proj.weight"] = mx.zeros((4, 4))
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_kimi_linear(config):
    """The Kimi-Linear weights as the released checkpoint (its remote code) stores them: the
    sparse layers under `block_sparse_moe` with each expert's `w1`/`w2`/`w3` apart and the
    correction bias on the gate, the short convolutions as `q_conv1d` `[C, 1, K]`, `dt_bias`
    per head `[H, Dk]`, the latent's up-projection as one `kv_b_proj`, and a
    multi-token-prediction tensor (`model.mtp.`) mlx_lm drops. mlx_lm's sanitize maps it back
    to the same model."""
    src = MODELS / "kimi_linear"
    dst = MODELS / "kimi_linear-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    heads = config["linear_attn_config"]["num_heads"]
    names = {"gate_proj": "w1", "down_proj": "w2", "up_proj": "w3"}
    out = {}
    for k, v in weights.items():
        if ".mlp.switch_mlp." in k:
            prefix, rest = k.split(".mlp.switch_mlp.")
            proj, leaf = rest.split(".")
            for e in range(v.shape[0]):
                out[f"{prefix}.block_sparse_moe.experts.{e}.{names[proj]}.{leaf}"] = v[e]
        elif ".mlp.e_score_correction_bias" in k:
            out[k.replace(".mlp.e_score_correction_bias",
                          ".block_sparse_moe.gate.e_score_correction_bias")] = v
        elif (".mlp.gate." in k or ".mlp.shared_experts." in k) and any(
                f"{k.split('.mlp.')[0]}.mlp.switch_mlp.{p}.weight" in weights
                for p in names):
            out[k.replace(".mlp.", ".block_sparse_moe.")] = v
        elif "_conv.conv.weight" in k:
            out[k.replace("_conv.conv.weight", "_conv1d.weight")] = v.moveaxis(1, 2)
        elif k.endswith(".dt_bias"):
            out[k] = v.reshape(heads, -1)
        elif k.endswith("embed_q.weight") and "unembed" not in k:
            prefix = k.removesuffix("embed_q.weight")
            wk = v.swapaxes(-1, -2)
            wv = weights[prefix + "unembed_out.weight"]
            kv_b = mx.concatenate([wk, wv], axis=1)
            out[prefix + "kv_b_proj.weight"] = kv_b.reshape(-1, kv_b.shape[-1])
        elif not k.endswith("unembed_out.weight"):
            out[k] = v
    out["model.mtp.0.eh_proj.weight"] = mx.zeros((4, 4))
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_kimi_k3(config):
    """The kimi_k3 weights in the layout mlx_lm's sanitize reads from a release: under
    `language_model.` beside vision tensors it drops; each expert's `w1`/`w2`/`w3` apart under
    `block_sparse_moe` (the correction bias, the shared experts and the latent projections
    there too); KDA's q, k and v projections and their short convolutions apart (`q_conv1d`
    `[C, 1, K]`), `dt_bias` per head `[H, Dk]`, `A_log` `[1, 1, H, 1]`; the latent's
    up-projection as one `kv_b_proj`; the attention residuals' `proj_weight`/`norm_weight`
    under `self_attention_res`/`mlp_res`/`output_attn_res`; multi-token-prediction tensors
    and a layer past `num_hidden_layers`, which mlx_lm drops."""
    src = MODELS / "kimi_k3"
    dst = MODELS / "kimi_k3-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    text = config["text_config"]
    cfg = text["linear_attn_config"]
    heads, pd = cfg["num_heads"], cfg["num_heads"] * cfg["head_dim"]
    names = {"gate_proj": "w1", "down_proj": "w2", "up_proj": "w3"}
    out = {}
    for k, v in weights.items():
        k = k.removeprefix("language_model.")
        if ".mlp.switch_mlp." in k:
            prefix, rest = k.split(".mlp.switch_mlp.")
            proj, leaf = rest.split(".")
            for e in range(v.shape[0]):
                out[f"{prefix}.block_sparse_moe.experts.{e}.{names[proj]}.{leaf}"] = v[e]
        elif ".mlp.e_score_correction_bias" in k:
            out[k.replace(".mlp.e_score_correction_bias",
                          ".block_sparse_moe.gate.e_score_correction_bias")] = v
        elif any(f".mlp.{n}." in k for n in ("gate", "shared_experts", "routed_expert_down_proj",
                                             "routed_expert_up_proj", "routed_expert_norm")):
            out[k.replace(".mlp.", ".block_sparse_moe.")] = v
        elif k.endswith("qkv_proj.weight"):
            for name, part in zip("qkv", mx.split(v, 3, axis=0)):
                out[k.replace("qkv_proj", f"{name}_proj")] = part
        elif k.endswith("qkv_conv.conv.weight"):
            for name, part in zip("qkv", mx.split(v, 3, axis=0)):
                out[k.replace("qkv_conv.conv", f"{name}_conv1d")] = part.moveaxis(1, 2)
        elif k.endswith(".dt_bias"):
            out[k] = v.reshape(heads, -1)
        elif k.endswith(".A_log"):
            out[k] = v.reshape(1, 1, heads, 1)
        elif k.endswith("embed_q.weight") and "unembed" not in k:
            prefix = k.removesuffix("embed_q.weight")
            wk = v.swapaxes(-1, -2)
            wv = weights["language_model." + prefix + "unembed_out.weight"]
            kv_b = mx.concatenate([wk, wv], axis=1)
            out[prefix + "kv_b_proj.weight"] = kv_b.reshape(-1, kv_b.shape[-1])
        elif k.endswith("unembed_out.weight"):
            pass
        elif "_res_proj.weight" in k or "_res_norm.weight" in k:
            head, tail = k.rsplit("_res_", 1)
            leaf = "proj_weight" if tail.startswith("proj") else "norm_weight"
            out[f"{head}_res.{leaf}"] = v
        else:
            out[k] = v
    assert pd * 3 == weights["language_model.model.layers.0.self_attn.qkv_proj.weight"].shape[0]
    out = {f"language_model.{k}": v for k, v in out.items()}
    out["language_model.model.mtp.0.eh_proj.weight"] = mx.zeros((4, 4))
    out["mtp.0.norm.weight"] = mx.zeros((4,))
    out[f"language_model.model.layers.{text['num_hidden_layers']}.input_layernorm.weight"] = \
        mx.zeros((text["hidden_size"],))
    out["vision_tower.patch_embed.weight"] = mx.zeros((4, 4))
    out["mm_projector.proj.weight"] = mx.zeros((4, 4))
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def hf_layout_rwkv7():
    """The RWKV-7 weights as flash-linear-attention's checkpoints store them: `k_k`, `k_a`
    and the per-head norm's weight and bias flat `[hidden]` (mlx_lm's sanitize makes them
    `[heads, head_dim]`)."""
    src = MODELS / "rwkv7"
    dst = MODELS / "rwkv7-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    out = {k: (v.reshape(-1) if any(n in k for n in ("k_k", "k_a", "g_norm")) else v)
           for k, v in weights.items()}
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "pt"})


def fla_rwkv7(model):
    """mlx_lm's rwkv7 made flash-linear-attention's `RWKV7Model` where they differ for this
    config: the per-head output norm's eps is `head_dim * norm_eps` (mlx_lm: 64e-5)."""
    for layer in model.layers:
        layer.attn.g_norm.eps = model.args.head_dim * model.args.norm_eps


TRANSFORMERS_FIXES["rwkv7-bf16"] = fla_rwkv7


def hf_layout_deepseek_v3_4bit(config):
    """The 4-bit DeepSeek-V3 with a quantized `kv_b_proj` (4 bits, groups of 32: the two halves
    dequantized, joined and quantized again), as an MLX conversion of a Hugging Face checkpoint
    holds it; mlx_lm's sanitize dequantizes, splits and requantizes it."""
    src = MODELS / "deepseek_v3-4bit"
    dst = MODELS / "deepseek_v3-4bit-hf"
    shutil.copytree(src, dst)
    (dst / "model.safetensors.index.json").unlink()
    weights = mx.load(str(src / "model.safetensors"))
    out = {}
    for k, v in weights.items():
        if k.endswith("embed_q.weight") and "unembed" not in k:
            prefix = k.removesuffix("embed_q.weight")
            deq = lambda n: mx.dequantize(weights[prefix + n + ".weight"],
                                          weights[prefix + n + ".scales"],
                                          weights[prefix + n + ".biases"], group_size=32, bits=4)
            kv_b = mx.concatenate([deq("embed_q").swapaxes(-1, -2), deq("unembed_out")], axis=1)
            kv_b = kv_b.reshape(-1, kv_b.shape[-1])
            w, sc, b = mx.quantize(kv_b, group_size=32, bits=4)
            out[prefix + "kv_b_proj.weight"] = w
            out[prefix + "kv_b_proj.scales"] = sc
            out[prefix + "kv_b_proj.biases"] = b
        elif "embed_q." not in k and "unembed_out." not in k:
            out[k] = v
    (dst / "model.safetensors").unlink()
    mx.save_safetensors(str(dst / "model.safetensors"), out, metadata={"format": "mlx"})


def prompt_ids(seed, length=PROMPT_LEN):
    return mx.random.randint(3, VOCAB, (length,), key=mx.random.key(seed)).astype(mx.int32)


def on_hopper():
    return (common.device_folder() == "cuda"
            and mx.device_info(mx.gpu).get("architecture", "").startswith("sm_9"))


def padded_quantized_matmul(x, w, scales, biases, group_size, bits):
    """`x @ dequantize(w).T` with one group of zeros appended to both, as mlx-rs computes it
    (mlx-rs/src/ops/qmm_sm90.rs): zero codes with scale 0 and bias 0 dequantize to exact
    zeros, so the product gains only `0 * 0` terms."""
    def pad(a, n):
        return mx.concatenate([a, mx.zeros(a.shape[:-1] + (n,), a.dtype)], axis=-1)
    return mx.quantized_matmul(pad(x, group_size), pad(w, group_size * bits // 32),
                               pad(scales, 1), pad(biases, 1), transpose=True,
                               group_size=group_size, bits=bits)


@contextlib.contextmanager
def single_groups_padded(model):
    """MLX 0.32.2 computes quantized matmuls whose weight rows are one group long (the 8-bit
    tied embedding of llama3-4bit, 64 columns in groups of 64; the 8-bit routers of the 4-bit
    MoE models) on its Hopper kernel
    `qmm_sm90` when they have more than one row, and gets them wrong by whole units (mlx_lm's
    prompt logits were off by 4.3 on an H100). mlx-rs appends a group of zeros to such
    products, which moves them to MLX's other kernels; the prompt logits are recorded the
    same way, and so is the generation: a one-group layer's prefill product (a MoE router's)
    reaches the cache. Products of one row, as the decode steps multiply, MLX gets right, and
    mlx-rs leaves them alone: so does this."""
    changed = []
    if on_hopper():
        for path, m in model.named_modules():
            if not isinstance(m, (nn.QuantizedLinear, nn.QuantizedEmbedding)):
                continue
            k = m.weight.shape[-1] * 32 // m.bits
            if m.mode != "affine" or m.bits not in (4, 8) or k % 64 or m.group_size < k:
                continue
            if isinstance(m, nn.QuantizedLinear):
                # A layer is called through its type: the class changes, then changes back.
                m.__class__ = PaddedQuantizedLinear
                changed.append(m)
                continue
            def as_linear(x, m=m):
                if rows(x) == 1:
                    return nn.QuantizedEmbedding.as_linear(m, x)
                return padded_quantized_matmul(x, m.weight, m.scales, m.biases,
                                               m.group_size, m.bits)
            m.as_linear = as_linear
            changed.append(m)
    try:
        yield len(changed)
    finally:
        for m in changed:
            if isinstance(m, PaddedQuantizedLinear):
                m.__class__ = nn.QuantizedLinear
            else:
                del m.as_linear


def rows(x):
    """The rows of a matmul with `x`: mlx-rs pads only products of more than one."""
    return math.prod(x.shape[:-1])


class PaddedQuantizedLinear(nn.QuantizedLinear):
    """`nn.QuantizedLinear` (MLX 0.32.2) through `padded_quantized_matmul`: a one-group layer
    (a MoE router of 64 inputs quantized in groups of 64) as mlx-rs computes it on Hopper."""

    def __call__(self, x):
        if rows(x) == 1:
            return super().__call__(x)
        x = padded_quantized_matmul(x, self["weight"], self["scales"], self["biases"],
                                    self.group_size, self.bits)
        if "bias" in self:
            x = x + self["bias"]
        return x


def compile_attempts(model, prompt):
    """Python's `mx.compile` on one decode step after an eager prefill of all but the
    prompt's last token, the three ways one would write it; the error text of each, or None
    where it worked.

    - `closure`: the step closes over the cache. The logits evaluate, but the cache now holds
      the trace's placeholders, and evaluating its state raises.
    - `cache_argument`: the cache passed as an argument. Rejected: mx.compile takes trees of
      arrays only, not cache objects.
    - `state_in_out`: the caches' state arrays declared as implicit inputs and outputs.
      Rejected for a model with key/value caches (their state is fresh slices, so the outputs
      are not captured); it works only for caches that are all `ArraysCache`s (mamba, rwkv7).
    """
    out = {}

    def fresh():
        cache = make_prompt_cache(model)
        model(prompt[None, :-1], cache=cache)
        mx.eval([c.state for c in cache])
        return cache

    y = prompt[None, -1:]
    cache = fresh()
    try:
        mx.eval(mx.compile(lambda t: model(t, cache=cache))(y))
        mx.eval([c.state for c in cache])
        out["closure"] = None
    except Exception as e:  # noqa: BLE001  (the error is the record)
        out["closure"] = f"{type(e).__name__}: {e}"
    cache = fresh()
    try:
        mx.eval(mx.compile(lambda t, c: model(t, cache=c))(y, cache))
        out["cache_argument"] = None
    except Exception as e:  # noqa: BLE001
        out["cache_argument"] = f"{type(e).__name__}: {e}"
    cache = fresh()
    state = [c.state for c in cache]
    try:
        mx.eval(mx.compile(lambda t: model(t, cache=cache), inputs=state, outputs=state)(y))
        out["state_in_out"] = None
    except Exception as e:  # noqa: BLE001
        out["state_in_out"] = f"{type(e).__name__}: {e}"
    return out


def has_recurrent_state(model):
    """Whether the model's cache holds more than keys and values (an `ArraysCache`, alone or
    in a `CacheList`)."""
    def recurrent(c):
        if isinstance(c, CacheList):
            return any(recurrent(x) for x in c.caches)
        return isinstance(c, ArraysCache)
    return any(recurrent(c) for c in make_prompt_cache(model))


def transformers_fixes(model):
    """mlx_lm changed to compute what transformers computes where mlx-lm follows
    transformers against mlx_lm (the reference is then mlx_lm's ops with transformers'
    constants): recurrent_gemma's two pre-norms take the config's `rms_norm_eps`, not
    `nn.RMSNorm`'s default 1e-5. Returns what it changed, for the record."""
    fixes = []
    if model.model_type == "recurrent_gemma":
        for layer in model.layers:
            layer.temporal_pre_norm.eps = model.args.rms_norm_eps
            layer.channel_pre_norm.eps = model.args.rms_norm_eps
        fixes.append("temporal_pre_norm and channel_pre_norm eps = rms_norm_eps")
    return fixes
def transformers_mamba2(model):
    """mlx_lm's mamba2 made transformers' `Mamba2`: each block's pre-norm with the config's
    `layer_norm_epsilon` (mlx_lm: `nn.RMSNorm`'s default 1e-5), and the gated norm per group
    of `intermediate / n_groups` features with the weight applied after it (transformers'
    `MambaRMSNormGated`; mlx_lm's nemotron_h has it as its `MambaRMSNormGated`)."""
    from mlx_lm.models import nemotron_h
    args = model.args
    width = args.num_heads * args.head_dim
    for layer in model.layers:
        layer.norm.eps = args.layer_norm_epsilon
        norm = nemotron_h.MambaRMSNormGated(width, eps=args.layer_norm_epsilon,
                                            group_size=width // args.n_groups)
        norm.weight = layer.mixer.norm.weight
        layer.mixer.norm = norm


TRANSFORMERS_FIXES["mamba2-codestral"] = transformers_mamba2


def transformers_mamba2_norms(model):
    """mlx_lm's granitemoehybrid made transformers' `GraniteMoeHybrid` where they differ for
    this config: the gated norm per group of `intermediate / mamba_n_groups` features
    (transformers' `GraniteMoeHybridRMSNormGated(group_size=...)`)."""
    from mlx_lm.models import nemotron_h
    args = model.args
    width = args.mamba_n_heads * args.mamba_d_head
    for layer in model.layers:
        if layer.layer_type != "mamba":
            continue
        norm = nemotron_h.MambaRMSNormGated(width, eps=args.rms_norm_eps,
                                            group_size=width // args.mamba_n_groups)
        norm.weight = layer.mamba.norm.weight
        layer.mamba.norm = norm


TRANSFORMERS_FIXES["granitemoehybrid-rope"] = transformers_mamba2_norms


class GroupedGatedNorm(nn.Module):
    """transformers' `FalconH1RMSNormGated` in mlx_lm's ops: each group of `group` features
    normalized on its own, the weight after the norm, the gate before or after it."""

    def __init__(self, weight, eps, group, norm_before_gate):
        super().__init__()
        self.weight = weight
        self.eps = eps
        self.group = group
        self.norm_before_gate = norm_before_gate

    def normalize(self, x):
        x = mx.unflatten(x, axis=-1, shape=(-1, self.group))
        return self.weight * mx.fast.rms_norm(x, None, self.eps).flatten(-2)

    def __call__(self, y, gate):
        from mlx_lm.models.activations import swiglu
        if self.norm_before_gate:
            return swiglu(gate, self.normalize(y))
        return self.normalize(swiglu(gate, y))


def transformers_falcon_h1(model):
    """mlx_lm's falcon_h1 (loaded from a Hugging Face checkpoint, multipliers folded by its
    sanitize) made transformers' `FalconH1`: the keys also times `key_multiplier` and the
    values times `attention_in_multiplier` (transformers scales the attention's input and
    its keys), and the gated norm per group of `mamba_d_ssm / mamba_n_groups` features."""
    args = model.args
    for layer in model.layers:
        attn = layer.self_attn
        attn.k_proj.weight = attn.k_proj.weight * args.key_multiplier
        attn.v_proj.weight = attn.v_proj.weight * args.attention_in_multiplier
        mamba = layer.mamba
        if args.mamba_rms_norm:
            mamba.norm = GroupedGatedNorm(mamba.norm.weight, args.rms_norm_eps,
                                          args.mamba_d_ssm // args.mamba_n_groups,
                                          args.mamba_norm_before_gate)


TRANSFORMERS_FIXES["falcon_h1-deep"] = transformers_falcon_h1


class TransformersJambaMoe(nn.Module):
    """transformers' `JambaSparseMoeBlock` routing in mlx_lm's ops: the top k of the softmax
    over all experts, unnormalized (mlx_lm's: the softmax over the top k logits)."""

    def __call__(self, x):
        gates = mx.softmax(self.router(x), axis=-1, precise=True)
        k = self.num_experts_per_tok
        inds = mx.stop_gradient(mx.argpartition(-gates, kth=k - 1, axis=-1)[..., :k])
        scores = mx.take_along_axis(gates, inds, axis=-1)
        y = self.switch_mlp(x, inds)
        return (y * scores[..., None]).sum(axis=-2)


def transformers_jamba(model):
    """mlx_lm's jamba made transformers' `Jamba` where they differ for this config: the
    router (the expert layers' rule agrees for offset 1 of period 2)."""
    from mlx_lm.models.jamba import JambaSparseMoeBlock
    for layer in model.layers:
        if isinstance(layer.feed_forward, JambaSparseMoeBlock):
            layer.feed_forward.__class__ = type("JambaMoe", (TransformersJambaMoe,
                                                             JambaSparseMoeBlock), {})


TRANSFORMERS_FIXES["jamba"] = transformers_jamba
TRANSFORMERS_FIXES["jamba-tied"] = transformers_jamba


def transformers_gelu_approx(model):
    """mlx_lm's starcoder2 made transformers' `Starcoder2Model` for a `gelu_pytorch_tanh`
    config: the MLP's tanh GELU (mlx_lm: the exact `nn.gelu` whatever the config says)."""
    for layer in model.layers:
        mlp = layer.mlp
        mlp.__class__ = type("TanhMLP", (type(mlp),),
                             {"__call__": lambda self, x: self.c_proj(nn.gelu_approx(self.c_fc(x)))})


TRANSFORMERS_FIXES["starcoder2"] = transformers_gelu_approx


def transformers_gelu(model):
    """mlx_lm's gpt_neox made transformers' `GPTNeoXModel` for a `gelu` config: the MLP's
    exact GELU (mlx_lm: `nn.gelu_approx` whatever the config says)."""
    for layer in model.layers:
        mlp = layer.mlp
        mlp.__class__ = type("ErfMLP", (type(mlp),), {
            "__call__": lambda self, x: self.dense_4h_to_h(nn.gelu(self.dense_h_to_4h(x)))})


TRANSFORMERS_FIXES["gpt_neox"] = transformers_gelu
TRANSFORMERS_FIXES["gpt_neox-hf"] = transformers_gelu


def transformers_yarn_untruncated(model):
    """mlx_lm's gpt_oss with its yarn ropes as transformers computes them for
    `rope_scaling.truncate: false`: `YarnRoPE`'s frequencies with the correction range
    unrounded (mlx_lm's own expressions otherwise, in its order)."""
    args = model.args
    scaling = args.rope_scaling
    dims, base = args.head_dim, args.rope_theta
    factor = scaling["factor"]
    original = scaling["original_max_position_embeddings"]

    def correction_dim(rotations):
        return (dims * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(correction_dim(scaling["beta_fast"]), 0)
    high = min(correction_dim(scaling["beta_slow"]), dims - 1)
    if low == high:
        high += 0.001
    ramp = mx.clip((mx.arange(dims // 2, dtype=mx.float32) - low) / (high - low), 0, 1)
    freq_mask = 1.0 - ramp
    freq_extra = base ** (mx.arange(0, dims, 2, dtype=mx.float32) / dims)
    freq_inter = factor * freq_extra
    freqs = (freq_inter * freq_extra) / (freq_inter * freq_mask + freq_extra * (1 - freq_mask))
    for layer in model.layers:
        layer.self_attn.rope._freqs = freqs


TRANSFORMERS_FIXES["gpt_oss-truncate"] = transformers_yarn_untruncated


def transformers_longcat_norms(model):
    """mlx_lm's longcat_flash made transformers' `LongcatFlash`: each MLA's `q_a_layernorm`
    and `kv_a_layernorm` at eps 1e-6 (transformers' `LongcatFlashMLA`, DeepSeek's; mlx_lm
    builds them as `nn.RMSNorm`, eps 1e-5). The n-gram model's layers are the same classes."""
    for layer in model.layers:
        for attn in layer.self_attn:
            attn.q_a_layernorm.eps = 1e-6
            attn.kv_a_layernorm.eps = 1e-6


TRANSFORMERS_FIXES["longcat_flash"] = transformers_longcat_norms
TRANSFORMERS_FIXES["longcat_flash_ngram"] = transformers_longcat_norms


def golden(name):
    weights_recipe.materialize(MODELS / name)
    model, _ = load_model(MODELS / name)
    fixes = transformers_fixes(model)
    if name in SANITIZED:
        OUT.mkdir(parents=True, exist_ok=True)
        mx.save_safetensors(str(OUT / f"{name}.sanitized.safetensors"),
                            dict(tree_flatten(model.parameters())))
    # One prompt per architecture: its 4-bit and Hugging Face-layout versions see the same one;
    # a transformers-saved model sees the one transformers ran.
    reference = common.ROOT / "tests" / "data" / "lm" / f"{name}.transformers.json"
    if name in TRANSFORMERS_MODELS:
        prompt = mx.array(json.loads(reference.read_text())["prompt"], dtype=mx.int32)
    else:
        # A model of an architecture's mixture-of-experts configs may take its own length.
        arch = name.split("-")[0]
        length = PROMPT_LENS.get(base_name(name), PROMPT_LENS.get(arch, PROMPT_LEN))
        prompt = prompt_ids(sum(map(ord, arch)), length)
    base = base_name(name)
    mlx_lm_differs_by = None
    if base in TRANSFORMERS_FIXES:
        unfixed = model(prompt[None]).astype(mx.float32)
        TRANSFORMERS_FIXES[base](model)
    with single_groups_padded(model) as padded:
        logits = model(prompt[None]).astype(mx.float32)
        mx.eval(logits)
    if base in TRANSFORMERS_FIXES:
        mlx_lm_differs_by = mx.max(mx.abs(unfixed - logits)).item()
    if padded:
        print(f"{name}: prompt logits with {padded} one-group layers padded (MLX's qmm_sm90)")
    tokens, margins, steps = [], [], []
    with single_groups_padded(model):
        for token, logprobs in generate_step(prompt, model, max_tokens=GREEDY_TOKENS):
            logprobs = logprobs.astype(mx.float32)
            top2 = mx.topk(logprobs, 2)
            margins.append(abs(top2[1] - top2[0]).item())
            tokens.append(token)
            steps.append(logprobs)
    OUT.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(OUT / f"{name}.safetensors"),
                        {"logits": logits, "greedy_logprobs": mx.stack(steps)})
    record = {
        "mlx_version": mx.__version__,
        "mlx_lm_version": mlx_lm.__version__,
        "prompt": prompt.tolist(),
        "greedy": tokens,
        "min_greedy_margin": min(margins),
    }
    if fixes:
        record["transformers_fixes"] = fixes
    if mlx_lm_differs_by is not None:
        record["mlx_lm_unfixed_max_logit_diff"] = mlx_lm_differs_by
    if has_recurrent_state(model):
        # The first two forms always fail; the third works for models whose caches are all
        # ArraysCaches (mamba, mamba2) and fails where there are key/value layers.
        record["mx_compile"] = compile_attempts(model, prompt)
    (OUT / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {(OUT / name).relative_to(common.ROOT)}.{{json,safetensors}} "
          f"(min margin {min(margins):.3g})")


# Models whose parameters as mlx_lm loads them (after its sanitize) are recorded too,
# `<name>.sanitized.safetensors`: a checkpoint whose sanitize computes new values (Ministral
# 3's FP8 weights times their scales), which a loader must reproduce bit for bit.
SANITIZED = {"mistral3"}


# What MLX 0.32.2 or mlx_lm cannot compute on a CUDA GPU (docs/cuda.md), so those models have
# no CUDA records and `golden` passes over them there.
CUDA_CANNOT = {
    "deepseek_v3-4bit": "quantized_matmul has no CUDA kernel for transpose=False (MultiLinear)",
    "deepseek_v3-4bit-hf": "quantized_matmul has no CUDA kernel for transpose=False (MultiLinear)",
    "qwen3_next-4bit": "mlx_lm's generation gives NaN log-probabilities",
    "kimi_linear-4bit": "quantized_matmul has no CUDA kernel for transpose=False (MultiLinear)",
    "deepseek_v3-mxfp4": "quantized_matmul has no CUDA kernel for transpose=False (MultiLinear)",
}


def main():
    """`lm.py [NAME ...]`: the models NAME of CONFIGS or TRANSFORMERS_MODELS (default: all)
    and their golden data; the other models and their data stay as they are."""
    only = sys.argv[1:]
    unknown = set(only) - set(CONFIGS) - set(TRANSFORMERS_MODELS)
    assert not unknown, f"not in CONFIGS or TRANSFORMERS_MODELS: {sorted(unknown)}"
    names = [n for n in CONFIGS if n in only] if only else list(CONFIGS)
    if common.device_folder() == "":
        make_models(names)
    written = {p.name for p in MODELS.iterdir()}
    chosen = set(names) | (set(only) & set(TRANSFORMERS_MODELS) if only else
                           set(TRANSFORMERS_MODELS))
    for name in sorted(written):
        base = base_name(name)
        if common.device_folder() == "cuda" and name in CUDA_CANNOT:
            print(f"{name}: no CUDA record ({CUDA_CANNOT[name]})")
        elif base in chosen or name in chosen:
            golden(name)


if __name__ == "__main__":
    main()
