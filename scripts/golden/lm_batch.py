#!/usr/bin/env python3
"""Batched generation reference data for mlx-lm: the tokens of mlx_lm 0.32.2's
`batch_generate` (its `BatchGenerator`) for the models `lm.py` writes.

Writes `tests/data/[cuda/]lm/batch.json`: for each case, the prompts (equal lengths, and
lengths that differ, which mlx_lm right-pads for the prefill and then rolls into left
padding), the sampler and processors, each prompt's `max_tokens`, and each sequence's
tokens (`return_token_ids=True`); for a model whose mlx_lm batch lets the padding into its
recurrent state (mamba), the tokens of each prompt generated alone (`alone`). Sampling draws from the global key after
`mx.random.seed(seed)`, as `batch_generate` does.

Run: scripts/gen-golden lm_batch (after lm, whose model directories it reads)
"""
import json
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE] + [str(HERE)]

# After the line above: this folder's random.py is not the standard library's.
import subprocess  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

import mlx.core as mx  # noqa: E402

import mlx_lm  # noqa: E402
from mlx_lm.generate import batch_generate, generate_step  # noqa: E402
from mlx_lm.sample_utils import make_logits_processors, make_sampler  # noqa: E402
from common import load  # noqa: E402

import common  # noqa: E402
import weights_recipe  # noqa: E402
import lm  # noqa: E402  (mx.gather_qmm as mlx_lm 0.32.2 can call it on MLX 0.32.2)
from lm import transformers_fixes  # noqa: E402
from lm import TRANSFORMERS_FIXES  # noqa: E402

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"

MODELS = common.ROOT / "tests" / "data" / "lm-models"
OUT = common.DATA / "lm"
VOCAB = 384


def prompts(name, lengths):
    seed = sum(map(ord, name)) + len(lengths)
    keys = mx.random.split(mx.random.key(seed), len(lengths))
    return [mx.random.randint(3, VOCAB, (n,), key=k).tolist() for n, k in zip(lengths, keys)]


CASES = [
    {"model": "qwen3", "lengths": [16, 16, 16], "max_tokens": 24},
    {"model": "qwen3", "lengths": [5, 17, 9, 12], "max_tokens": 24},
    {"model": "mistral", "lengths": [7, 20, 2, 13], "max_tokens": 20, "seed": 3, "temp": 0.8},
    {"model": "qwen2", "lengths": [11, 4], "max_tokens": 20, "seed": 9, "temp": 0.7,
     "top_p": 0.9, "logit_bias": {"5": 3.0, "17": -2.5}},
    {"model": "mistral", "lengths": [12, 12], "max_tokens": 20},
    {"model": "qwen3_5", "lengths": [10, 10, 10, 10], "max_tokens": 24},
    {"model": "qwen3_5", "lengths": [3, 14, 8], "max_tokens": 24},
    {"model": "qwen3_5-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 5,
     "temp": 1.0, "top_k": 20},
    {"model": "qwen3-4bit", "lengths": [6, 18], "max_tokens": [10, 20]},
    # LFM2's short-convolution state beside key/value caches: equal and different lengths,
    # 4-bit with sampling, and (bfloat16, biases) prompts longer than one prefill chunk, so the
    # padding's lengths count down across chunks.
    {"model": "lfm2", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "lfm2", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "lfm2-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 6, "temp": 1.0,
     "top_k": 20},
    {"model": "lfm2-1.2b", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8},
    # Mamba-2's convolution and SSM state only: equal and different lengths, 4-bit with
    # sampling, the 8-group bfloat16 model (as transformers computes it, `lm.TRANSFORMERS_FIXES`),
    # and prompts longer than the SSD's 256-position chunk, so a padded sequence's lengths
    # run out inside a chunk and before the last one.
    {"model": "mamba2", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "mamba2", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "mamba2-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 7, "temp": 1.0,
     "top_k": 20},
    {"model": "mamba2-codestral", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    {"model": "mamba2", "lengths": [300, 41, 270], "max_tokens": 8},
    # Granite 4.0-H: Mamba-2 and attention layers with the µP multipliers; the bfloat16 RoPE
    # model with two groups (as transformers computes it) and chunked prefill.
    {"model": "granitemoehybrid", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "granitemoehybrid", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "granitemoehybrid-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 8,
     "temp": 1.0, "top_k": 20},
    {"model": "granitemoehybrid-rope", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # Falcon-H1: each layer's SSD state and key/value cache side by side (a CacheList); mlx_lm
    # keeps the padding out of the SSD (its mixer passes the lengths), so its batch is the
    # reference. The Hugging Face checkpoint with the gated norm (as transformers computes
    # it, `lm.TRANSFORMERS_FIXES`) and chunked prefill.
    {"model": "falcon_h1", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "falcon_h1", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "falcon_h1-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 9,
     "temp": 1.0, "top_k": 20},
    {"model": "falcon_h1-deep", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # Nemotron-H: mlx_lm's batch leaks the padding into the SSM state (its mixer does not
    # pass the lengths), so the reference is each prompt generated alone ("alone"), and the
    # record keeps mlx_lm's batch tokens beside it ("mlx_lm_batch_tokens"). Greedy only: a
    # sampled batch draws its keys for all rows at once, which generating alone cannot repeat.
    {"model": "nemotron_h", "lengths": [10, 10, 10], "max_tokens": 24, "alone": True},
    {"model": "nemotron_h", "lengths": [3, 14, 8, 11], "max_tokens": 24, "alone": True},
    {"model": "nemotron_h-nano", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8, "alone": True},
    # Sliding-window layers (rotating caches), prompts longer than one prefill chunk.
    {"model": "llama3", "lengths": [40, 40], "max_tokens": 12, "prefill_step_size": 16},
    # Mamba-1 (conv + SSM state only). Prompts of one length have no padding: mlx_lm's batch.
    # Prompts of different lengths: mlx_lm's mamba lets the right padding into both states
    # (it never reads the cache's lengths), so the reference is each prompt generated alone
    # (`alone`), which a batch that keeps the padding out reproduces; across prefill chunks
    # too.
    {"model": "falcon_mamba", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "falcon_mamba", "lengths": [3, 14, 8, 11], "max_tokens": 24, "alone": True},
    {"model": "mamba", "lengths": [9, 2, 15], "max_tokens": 16, "alone": True},
    {"model": "falcon_mamba-4bit", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8, "alone": True},
    # recurrent_gemma (RG-LRU state beside rotating caches): prompts longer than the window
    # and than one prefill chunk, so the RG-LRU's position-0 reset must not recur in later
    # chunks; of different lengths, each prompt is prefilled alone into its row (a ring
    # cannot roll padding out), so the reference is each prompt generated alone.
    {"model": "recurrent_gemma", "lengths": [20, 20, 20], "max_tokens": 16,
     "prefill_step_size": 8},
    {"model": "recurrent_gemma", "lengths": [5, 17, 9, 12], "max_tokens": 12,
     "prefill_step_size": 8, "alone": True},
    # Mixture-of-experts: the batch's prefill routes 64 (token, expert) pairs or more (mlx_lm
    # sorts them by expert), its decode steps fewer (unsorted); right padding routes through
    # the experts too but reaches no other token. Equal and different lengths, 4-bit with
    # sampling, chunked prefill with the shared expert.
    {"model": "qwen3_moe", "lengths": [16, 16, 16], "max_tokens": 24},
    {"model": "qwen3_moe", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "mixtral-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 10,
     "temp": 1.0, "top_k": 20},
    {"model": "mixtral", "lengths": [5, 17, 9, 12], "max_tokens": 20},
    {"model": "qwen2_moe", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8},
    {"model": "olmoe-bias", "lengths": [3, 14, 8, 11], "max_tokens": 20},
    # Qwen3-Next: the gated delta net's conv and recurrent state beside key/value caches,
    # with the sparse block and its shared expert (mlx_lm's batch keeps the padding out of
    # the state: measured 0 against each prompt alone). Different lengths, 4-bit with
    # sampling, and the dense variant across prefill chunks.
    {"model": "qwen3_next", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "qwen3_next-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 11,
     "temp": 1.0, "top_k": 20},
    {"model": "qwen3_next-dense", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # Qwen3.5-MoE (measured exact against each prompt alone too).
    {"model": "qwen3_5_moe", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "qwen3_5_moe-4bit", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # olmo_hybrid: mlx_lm masks the recurrence but not its three convolutions, whose state
    # then holds the padding (the first decode step's logits 3-4 off): prompts of different
    # lengths take each prompt generated alone as the reference. Prompts of one length are
    # mlx_lm's batch; 4-bit, and RoPE with chunked prefill.
    {"model": "olmo_hybrid", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "olmo_hybrid", "lengths": [3, 14, 8, 11], "max_tokens": 24, "alone": True},
    {"model": "olmo_hybrid-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "alone": True},
    {"model": "olmo_hybrid-rope", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8, "alone": True},
    # plamo2: mlx_lm keeps the padding out of its convolution and SSD (both read the cache's
    # lengths), so its batch is the reference: equal and different lengths, 4-bit with
    # sampling, chunked prefill.
    {"model": "plamo2", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "plamo2", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "plamo2-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 11, "temp": 1.0,
     "top_k": 20},
    {"model": "plamo2-untied", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # jamba (as transformers routes, `lm.TRANSFORMERS_FIXES`): mlx_lm's Mamba layers read
    # neither the mask nor the lengths, so the padding enters their convolution and SSM
    # state; prompts of different lengths take each prompt generated alone as the
    # reference, prompts of one length mlx_lm's batch.
    {"model": "jamba", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "jamba", "lengths": [3, 14, 8, 11], "max_tokens": 24, "alone": True},
    {"model": "jamba-4bit", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8, "alone": True},
    # baichuan_m1 with global layers only (its rotating caches cannot take a padded batch
    # here): mlx_lm keeps the padding's last key and value as the convolution's state, so
    # prompts of different lengths take each prompt generated alone as the reference.
    {"model": "baichuan_m1-global", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "baichuan_m1-global", "lengths": [3, 14, 8, 11], "max_tokens": 24,
     "alone": True},
    {"model": "baichuan_m1-global", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8, "alone": True},
    # With its sliding-window layers: prompts of one length, longer than the window and than
    # one prefill chunk.
    {"model": "baichuan_m1", "lengths": [20, 20, 20], "max_tokens": 16,
     "prefill_step_size": 8},
    # Multi-head latent attention's compressed cache, left-padded; the grouped router.
    {"model": "deepseek_v3", "lengths": [3, 14, 8, 11], "max_tokens": 20},
    {"model": "deepseek_v3-lite", "lengths": [9, 2, 15], "max_tokens": 16},
    # Issue 38: the grouped router's families, left-padded.
    {"model": "glm4_moe", "lengths": [3, 14, 8, 11], "max_tokens": 20},
    {"model": "dots1-tied", "lengths": [9, 2, 15], "max_tokens": 16},
    {"model": "deepseek_v2", "lengths": [3, 14, 8, 11], "max_tokens": 20},
    {"model": "deepseek_v2-lite", "lengths": [9, 2, 15], "max_tokens": 16},
    {"model": "granitemoe", "lengths": [5, 17, 9, 12], "max_tokens": 20},
    {"model": "phimoe-jitter", "lengths": [9, 2, 15], "max_tokens": 16},
    {"model": "phimoe-longrope", "lengths": [5, 17, 9, 12], "max_tokens": 20},
    {"model": "ernie4_5_moe-bias", "lengths": [3, 14, 8, 11], "max_tokens": 20},
    # kimi_linear: mlx_lm masks KDA's three convolutions and its recurrence (the cache's
    # lengths), so its batch is the reference; MLA's compressed cache left-padded, the
    # grouped router. Different lengths, 4-bit with sampling, the tied one (softmax router in
    # groups) across prefill chunks.
    {"model": "kimi_linear", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "kimi_linear-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 13,
     "temp": 1.0, "top_k": 20},
    {"model": "kimi_linear-tied", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # kimi_k3: the fused convolution's state and the recurrence masked by the cache's
    # lengths (mlx_lm's batch is the reference), the attention residuals over right-padded
    # rows; different lengths, 4-bit with sampling, the tied one across prefill chunks.
    {"model": "kimi_k3", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "kimi_k3-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 13,
     "temp": 1.0, "top_k": 20},
    {"model": "kimi_k3-tied", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # rwkv7: mlx_lm's token shifts keep the padding's last input and its WKV recurrence runs
    # over the padding (it never reads the cache's lengths), so prompts of different lengths
    # take each prompt generated alone as the reference; prompts of one length mlx_lm's
    # batch; 4-bit, the bfloat16 one (with flash-linear-attention's norm eps) across prefill
    # chunks.
    {"model": "rwkv7", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "rwkv7", "lengths": [3, 14, 8, 11], "max_tokens": 24, "alone": True},
    {"model": "rwkv7-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "alone": True},
    {"model": "rwkv7-bf16", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8, "alone": True},
    # bailing_moe_linear: mlx_lm's linear attention ignores the mask and runs its recurrence
    # over the padding, so prompts of different lengths take each prompt generated alone as
    # the reference; prompts of one length mlx_lm's batch (the linear layers' rope at the
    # batch's offsets); the tied one across prefill chunks.
    {"model": "bailing_moe_linear", "lengths": [10, 10, 10], "max_tokens": 16},
    {"model": "bailing_moe_linear", "lengths": [3, 14, 8, 11], "max_tokens": 16, "alone": True},
    {"model": "bailing_moe_linear-tied", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8, "alone": True},
    # bailing_hybrid: mlx_lm's chunked linear attention counts only the valid positions
    # (the cache's mask), so prompts of different lengths take mlx_lm's batch itself as the
    # reference; 4-bit with sampling, the tied one across prefill chunks.
    {"model": "bailing_hybrid", "lengths": [3, 14, 8, 11], "max_tokens": 16},
    {"model": "bailing_hybrid-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 13,
     "temp": 1.0, "top_k": 20},
    {"model": "bailing_hybrid-tied", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # bailing_moe_v3: mlx_lm's KDA keeps the padding out of its convolution states (the
    # cache's lengths) and its recurrent state (the mask), so prompts of different lengths
    # take mlx_lm's batch itself as the reference; 4-bit with sampling, the tied one across
    # prefill chunks.
    {"model": "bailing_moe_v3", "lengths": [3, 14, 8, 11], "max_tokens": 16},
    {"model": "bailing_moe_v3-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 13,
     "temp": 1.0, "top_k": 20},
    {"model": "bailing_moe_v3-tied", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # gear: rotating caches (windows 8 and 6) beside the convolutions' states, so prompts of
    # one length (a batch of different lengths needs a model without sliding-window layers
    # here); 4-bit with sampling, the untied one (soft caps, biases) across prefill chunks.
    {"model": "gear", "lengths": [12, 12, 12], "max_tokens": 24},
    {"model": "gear-4bit", "lengths": [9, 9, 9], "max_tokens": 16, "seed": 13,
     "temp": 1.0, "top_k": 20},
    {"model": "gear-untied", "lengths": [20, 20, 20], "max_tokens": 12,
     "prefill_step_size": 8},
    # Issue 37, RMSNorm llama-likes: left padding under helium's traditional rope, seed_oss's
    # wide heads (4-bit, sampled) and granite's multipliers across prefill chunks. (Not
    # internlm3: mlx_lm's dynamic NTK rope takes an integer offset, a batch's is an array.)
    {"model": "helium", "lengths": [5, 17, 9, 12], "max_tokens": 24},
    {"model": "seed_oss-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 5,
     "temp": 1.0, "top_k": 20},
    {"model": "granite", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8},
    # The LayerNorm families (issue 37): starcoder2 (tanh GELU as transformers computes it,
    # `lm.TRANSFORMERS_FIXES`), equal and different lengths, 4-bit with sampling, the exact
    # GELU with chunked prefill; stablelm sequential and parallel (bfloat16, float32 queries and
    # keys); phi float and bfloat16.
    {"model": "starcoder2", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "starcoder2", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "starcoder2-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 12,
     "temp": 1.0, "top_k": 20},
    {"model": "starcoder2-gelu", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    {"model": "stablelm", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "stablelm-parallel", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    {"model": "phi", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "phi-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 13, "temp": 1.0,
     "top_k": 20},
    {"model": "phi-bf16", "lengths": [12, 12], "max_tokens": 20},
    # cohere: the scaled tied head; q/k norms (float, 4-bit sampled) and biases (bfloat16).
    # The sampled case's seed keeps every row to max_tokens: mlx_lm drops a finished row, and
    # a sampled batch of fewer rows draws other noise for the rest (seed 14 ended a row at 8).
    {"model": "cohere", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "cohere-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 17, "temp": 1.0,
     "top_k": 20},
    {"model": "cohere-bias", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8},
    # gpt_neox: the exact GELU as transformers computes it (`lm.TRANSFORMERS_FIXES`), 4-bit
    # sampled, the Hugging Face layout; sequential bfloat16 with chunked prefill.
    {"model": "gpt_neox", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "gpt_neox-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 15,
     "temp": 1.0, "top_k": 20},
    {"model": "gpt_neox-hf", "lengths": [10, 10, 10], "max_tokens": 24},
    {"model": "gpt_neox-seq", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8},
    # Gemma: left-padded key/value caches under the exact-GELU model, 4-bit with sampling,
    # bfloat16 with chunked prefill.
    {"model": "gemma", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "gemma-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 13, "temp": 1.0,
     "top_k": 20},
    {"model": "gemma-bf16", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8},
    # Gemma 2: mlx_lm's batch fails (its soft-capped attention broadcasts the batch's mask
    # [B, 1, L, S] against the grouped heads [B, kv_heads, repeats, L, S]: a ValueError), so
    # each prompt generated alone is the reference; ours gives the mask the repeats' axis.
    {"model": "gemma2", "lengths": [10, 10, 10], "max_tokens": 24, "mlx_lm_fails": True},
    {"model": "gemma2", "lengths": [3, 14, 8, 11], "max_tokens": 24, "mlx_lm_fails": True},
    {"model": "gemma2-bf16", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8,
     "mlx_lm_fails": True},
    # Gemma 3: rotating caches beside key/value caches, so prompts of one length, longer than
    # the window (8) and than one prefill chunk; the wrapper 4-bit, sampled.
    {"model": "gemma3_text", "lengths": [20, 20, 20], "max_tokens": 24, "prefill_step_size": 8},
    # Of different lengths (rows at their own positions and ring phases, each prefilled alone),
    # replies wrapping the ring.
    {"model": "gemma3_text", "lengths": [3, 14, 8, 11], "max_tokens": 16, "alone": True},
    {"model": "gemma3-4bit", "lengths": [13, 13], "max_tokens": 16, "seed": 9, "temp": 1.0},
    # Phi-3 (issue 37, dense-b): left padding under the fused projections and longrope (the
    # batch's per-row offsets), 4-bit with sampling, the tied partial longrope with chunked
    # prefill.
    {"model": "phi3", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "phi3-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 14, "temp": 1.0,
     "top_k": 20},
    {"model": "phi3-tied", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8},
    # OLMo 2 (issue 37, dense-b): left padding under the post-norm layers and whole-projection
    # q/k norms, 4-bit sampled, bfloat16 with biases and chunked prefill; OLMo 3's sliding
    # layers with prompts of one length, longer than the window and than one prefill chunk.
    {"model": "olmo2", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "olmo2-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 15, "temp": 1.0,
     "top_k": 20},
    {"model": "olmo2-bias", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8},
    {"model": "olmo3", "lengths": [20, 20, 20], "max_tokens": 16, "prefill_step_size": 8},
    # GLM-4: left padding under the sandwich norms, 4-bit sampled, chunked prefill.
    {"model": "glm4", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "glm4-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 16, "temp": 1.0,
     "top_k": 20},
    {"model": "glm4", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8},
    # Ministral 3 (issue 37, session 50): left padding under the query scaling (each row's
    # own positions: mlx_lm's per-sequence offsets, past 16 padding positions too), 4-bit
    # sampled, chunked prefill (not both: as glm4's, no case combines the two); the tied
    # model's sliding layer with prompts of one length; the FP8 mistral3 wrapper.
    # Llama 4 text: its NoPE layer's and rope layers' caches, left-padded, float and 4-bit.
    {"model": "llama4_text", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "llama4_text-4bit", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    {"model": "ministral3", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "ministral3-4bit", "lengths": [30, 7, 19], "max_tokens": 12, "seed": 17,
     "temp": 1.0, "top_k": 20},
    {"model": "ministral3", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8},
    {"model": "ministral3-tied", "lengths": [20, 20, 20], "max_tokens": 16,
     "prefill_step_size": 8},
    {"model": "mistral3", "lengths": [9, 2, 15], "max_tokens": 16},
    # EXAONE 4 (issue 37, session 50): its sliding layers with prompts of one length past the
    # window, 4-bit sampled; the tied model (every layer global) left-padded.
    {"model": "exaone4", "lengths": [20, 20, 20], "max_tokens": 16, "prefill_step_size": 8},
    {"model": "exaone4-4bit", "lengths": [12, 12], "max_tokens": 16, "seed": 18, "temp": 1.0,
     "top_k": 20},
    {"model": "exaone4-tied", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    # Command R7B: sliding layers with prompts of one length; float16 (queries upcast).
    {"model": "cohere2", "lengths": [20, 20, 20], "max_tokens": 16, "prefill_step_size": 8},
    {"model": "cohere2", "lengths": [3, 14, 8, 11], "max_tokens": 12, "alone": True},
    {"model": "cohere2-f16", "lengths": [12, 12], "max_tokens": 16},
    # GPT-2: left padding under the learned positions (each row's own, negative over the
    # padding), 4-bit sampled, chunked prefill.
    {"model": "gpt2", "lengths": [3, 14, 8, 11], "max_tokens": 24},
    {"model": "gpt2-4bit", "lengths": [30, 7, 19], "max_tokens": 12, "seed": 19, "temp": 1.0,
     "top_k": 20},
    {"model": "gpt2", "lengths": [30, 7, 19], "max_tokens": 12, "prefill_step_size": 8},
    # LFM2-MoE: the short-convolution state with right-padded prompts (mlx_lm keeps the
    # padding out: measured equal to each prompt alone), the sigmoid router with its expert
    # bias; 4-bit (the router at 8 bits) sampled; prompts longer than one prefill chunk.
    {"model": "lfm2_moe", "lengths": [3, 14, 8, 11], "max_tokens": 20},
    {"model": "lfm2_moe-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 7,
     "temp": 1.0},
    {"model": "lfm2_moe-scaled", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # Granite-4.0-H-Tiny's kind: the Mamba-2 state with right-padded prompts (exact in
    # mlx_lm), the shared MLP beside 6 routed experts.
    {"model": "granitemoehybrid-tiny", "lengths": [3, 14, 8, 11], "max_tokens": 20},
    {"model": "granitemoehybrid-tiny-4bit", "lengths": [9, 2, 15], "max_tokens": 16,
     "seed": 8, "temp": 1.0},
    # Nemotron-3-Nano's kind: mlx_lm's batch leaks the padding into the SSM state (as for
    # nemotron_h), so the reference is each prompt alone; the grouped router's experts.
    {"model": "nemotron_h-moe", "lengths": [3, 14, 8, 11], "max_tokens": 20, "alone": True},
    # MLX's floating-point quantization modes: different lengths with sampling (a tied mxfp8
    # head), and the experts' gather_qmm in mxfp4 across prefill chunks.
    {"model": "qwen2-mxfp8", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 18, "temp": 1.0,
     "top_k": 20},
    {"model": "qwen3_moe-mxfp4", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # GPT-OSS (issue 38): attention sinks over the sliding layers' rotating caches (window 8)
    # and the full layers' key/value caches, prompts of one length (as the other sliding
    # families) past the window and longer than one prefill chunk; the MXFP4 experts sampled.
    {"model": "gpt_oss", "lengths": [20, 20, 20], "max_tokens": 16, "prefill_step_size": 8},
    {"model": "gpt_oss", "lengths": [9, 2, 15], "max_tokens": 12, "prefill_step_size": 4,
     "alone": True},
    {"model": "gpt_oss-mxfp4", "lengths": [12, 12], "max_tokens": 20, "seed": 19,
     "temp": 1.0, "top_k": 20},
    # LongCat-Flash (issue 38): both sub-blocks' latent caches left-padded, zero experts among
    # the picks; 4-bit (classifiers at 8 bits) sampled; the HF layout across prefill chunks.
    {"model": "longcat_flash", "lengths": [3, 14, 8, 11], "max_tokens": 20},
    {"model": "longcat_flash-4bit", "lengths": [9, 2, 15], "max_tokens": 16, "seed": 20,
     "temp": 1.0, "top_k": 20},
    {"model": "longcat_flash-hf", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 8},
    # LongCat-Flash-Lite: mlx_lm's n-gram embedding never reads the cache's lengths, so a
    # right-padded prefill leaves the padding's ids in its state: prompts of different
    # lengths take each prompt generated alone as the reference (also across prefill chunks,
    # some shorter than the n-grams); prompts of one length mlx_lm's batch.
    {"model": "longcat_flash_ngram", "lengths": [10, 10, 10], "max_tokens": 20},
    {"model": "longcat_flash_ngram", "lengths": [3, 14, 8, 11], "max_tokens": 20,
     "alone": True},
    {"model": "longcat_flash_ngram-4bit", "lengths": [30, 7, 19], "max_tokens": 12,
     "prefill_step_size": 2, "alone": True},
]


def case_tokens(case):
    model, tokenizer = load(str(MODELS / case["model"]))
    transformers_fixes(model)
    fix = TRANSFORMERS_FIXES.get(case["model"].removesuffix("-4bit"))
    if fix is not None:
        fix(model)
    ps = prompts(case["model"], case["lengths"])
    kwargs = {}
    if "temp" in case:
        kwargs["sampler"] = make_sampler(case["temp"], case.get("top_p", 0.0),
                                         top_k=case.get("top_k", 0))
    bias = case.get("logit_bias")
    if bias:
        kwargs["logits_processors"] = make_logits_processors({int(k): v for k, v in bias.items()})
    if "prefill_step_size" in case:
        kwargs["prefill_step_size"] = case["prefill_step_size"]
    mx.random.seed(case.get("seed", 0))
    eos = sorted(tokenizer.eos_token_ids)
    if case.get("mlx_lm_fails"):
        # mlx_lm's batch raises for this model: each prompt generated alone is the reference,
        # and the record keeps mlx_lm's error.
        assert not kwargs.get("sampler") and not kwargs.get("logits_processors")
        try:
            batch_generate(model, tokenizer, ps, max_tokens=case["max_tokens"], **kwargs)
            raise AssertionError(f"{case['model']}: mlx_lm's batch no longer fails")
        except ValueError as e:
            error = f"{type(e).__name__}: {e}"
        return {**case, "prompts": ps, "eos": eos, "mlx_lm_batch_error": error,
                "tokens": [alone(model, p, case["max_tokens"], tokenizer.eos_token_ids,
                                 case.get("prefill_step_size", 2048)) for p in ps]}
    response = batch_generate(model, tokenizer, ps, max_tokens=case["max_tokens"],
                              return_token_ids=True, **kwargs)
    out = {**case, "prompts": ps, "eos": sorted(tokenizer.eos_token_ids),
           "tokens": response.token_ids}
    if case.get("alone"):
        assert not kwargs.get("sampler") and not kwargs.get("logits_processors")
        out["mlx_lm_batch_tokens"] = response.token_ids
        out["mlx_lm_batch_first_logits_max_diff"] = batch_first_logits_diff(model, ps)
        out["tokens"] = [alone(model, p, case["max_tokens"], tokenizer.eos_token_ids,
                               case.get("prefill_step_size", 2048)) for p in ps]
    return out


def batch_first_logits_diff(model, ps):
    """How far mlx_lm's batch is from each prompt alone where it goes wrong: the logits of
    the prompts' last tokens after a right-padded batch prefill of the rest (as
    `BatchGenerator` prefills: merged caches, `prepare(lengths, right_padding)`, `finalize`)
    against each prompt's own forward pass; the largest difference."""
    from mlx_lm.generate import _merge_caches, _right_pad_prompts
    from mlx_lm.models.cache import make_prompt_cache
    heads = [p[:-1] for p in ps]
    lengths = [len(h) for h in heads]
    cache = _merge_caches([make_prompt_cache(model) for _ in ps])
    for c in cache:
        c.prepare(lengths=lengths, right_padding=[max(lengths) - n for n in lengths])
    model(_right_pad_prompts(heads), cache=cache)
    for c in cache:
        c.finalize()
    batch = model(mx.array([[p[-1]] for p in ps]), cache=cache)[:, -1].astype(mx.float32)
    single = mx.stack([model(mx.array(p)[None])[0, -1] for p in ps]).astype(mx.float32)
    return mx.max(mx.abs(batch - single)).item()


def alone(model, prompt, max_tokens, eos, prefill_step_size):
    """Greedy tokens of one prompt generated alone, up to (not including) a stop token, as
    batch_generate reports a sequence."""
    tokens = []
    for token, _ in generate_step(mx.array(prompt), model, max_tokens=max_tokens,
                                  prefill_step_size=prefill_step_size):
        if token in eos:
            break
        tokens.append(token)
    return tokens


# The cases mlx_lm cannot run on a CUDA GPU, so the CUDA record has none (the tests go by the
# record's cases): the models lm.py has no CUDA record of, and these.
CUDA_CANNOT = {
    **lm.CUDA_CANNOT,
    "baichuan_m1": "mlx_lm's batch of its sliding-window layers ends in an illegal memory "
                   "access in MLX 0.32.2's CUDA back end (H200, 2026-11-29)",
}


def run_cases(cases):
    """`case_tokens` of each case, in order. With MLX_GOLDEN_JOBS=N, N at a time, each in a
    process of its own (`lm_batch.py --case I`): each case loads its model and seeds MLX's
    generator itself, on a GPU one process is bound by Python and kernel compilation rather
    than by the GPU (`scripts/gpu-suite golden`), and a case that ends its process (MLX's CUDA
    back end aborts on an illegal memory access) fails alone, as `{"error": ...}`."""
    jobs = int(os.environ.get("MLX_GOLDEN_JOBS", "1"))
    if jobs <= 1:
        yield from map(case_tokens, cases)
        return

    def one(case):
        run = subprocess.run([sys.executable, __file__, "--case", str(CASES.index(case))],
                             capture_output=True, text=True)
        if run.returncode != 0:
            return {"error": (run.stderr.strip().splitlines() or ["no output"])[-1]}
        return json.loads(run.stdout.strip().splitlines()[-1])

    with ThreadPoolExecutor(jobs) as pool:
        yield from pool.map(one, cases)


def main():
    weights_recipe.materialize_all(MODELS)
    OUT.mkdir(parents=True, exist_ok=True)
    chosen = []
    for case in CASES:
        if common.device_folder() == "cuda" and case["model"] in CUDA_CANNOT:
            print(f"batch {case}: no CUDA record ({CUDA_CANNOT[case['model']]})")
        else:
            chosen.append(case)
    cases = []
    for case, out in zip(chosen, run_cases(chosen)):
        if "error" in out and common.device_folder() == "cuda":
            print(f"batch {case}: no CUDA record (mlx_lm fails there: {out['error']})")
            continue
        assert "error" not in out, f"{case}: {out['error']}"
        print(f"batch {case}: {[t[:6] for t in out['tokens']]}", flush=True)
        cases.append(out)
    data = {"mlx_version": mx.__version__, "mlx_lm_version": mlx_lm.__version__,
            "cases": cases}
    (OUT / "batch.json").write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {(OUT / 'batch.json').relative_to(common.ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--case"]:
        print(json.dumps(case_tokens(CASES[int(sys.argv[2])])))
    else:
        main()
