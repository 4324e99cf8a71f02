#!/usr/bin/env python3
"""config.json files as transformers 5.23 writes them, for the config-key audit of mlx-lm's
architectures (`mlx-lm/tests/config_keys.rs`).

Each entry is `XConfig(<small sizes>).to_dict()`: every key of the configuration class,
`PreTrainedConfig`'s own included, at its default unless given here. The test runs each
architecture's config reader on it and expects no key left unaccounted for; the variants
cover the keys inside `rope_parameters` of every rope type mlx-lm supports.

Writes `mlx-lm/tests/data/transformers_configs.json`. No PyTorch needed.
Run: scripts/gen-golden config_keys
"""
import json
import math
import pathlib
import sys

# This folder holds random.py (the MLX generator), which would shadow the standard library:
# search it last (for common.py).
HERE = pathlib.Path(__file__).resolve().parent
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE] + [str(HERE)]

import transformers  # noqa: E402
from transformers import (  # noqa: E402
    BailingHybridConfig,
    Cohere2Config,
    CohereConfig,
    DeepseekV2Config,
    DeepseekV3Config,
    Dots1Config,
    Ernie4_5_MoeConfig,
    FalconH1Config,
    FalconMambaConfig,
    GraniteConfig,
    Exaone4Config,
    GPT2Config,
    GPTNeoXConfig,
    GptOssConfig,
    Gemma2Config,
    Gemma3Config,
    Gemma3TextConfig,
    GemmaConfig,
    Llama4TextConfig,
    Glm4MoeConfig,
    GraniteMoeConfig,
    Glm4Config,
    GraniteMoeHybridConfig,
    HeliumConfig,
    InternLM3Config,
    JambaConfig,
    KimiLinearConfig,
    LongcatFlashConfig,
    Lfm2Config,
    Lfm2MoeConfig,
    LlamaConfig,
    Mamba2Config,
    MambaConfig,
    MistralConfig,
    Ministral3Config,
    Mistral3Config,
    MixtralConfig,
    NemotronHConfig,
    OlmoeConfig,
    Olmo2Config,
    Olmo3Config,
    OlmoHybridConfig,
    Phi3Config,
    PhiConfig,
    PhimoeConfig,
    Qwen2Config,
    Qwen2MoeConfig,
    Qwen3_5Config,
    Qwen3_5MoeConfig,
    Qwen3Config,
    Qwen3MoeConfig,
    Qwen3NextConfig,
    RecurrentGemmaConfig,
    SeedOssConfig,
    SmolLM3Config,
    StableLmConfig,
    Starcoder2Config,
)

import common  # noqa: E402

assert transformers.__version__ == "5.23.0", f"expected transformers 5.23.0, found {transformers.__version__}"

OUT = common.ROOT / "mlx-lm" / "tests" / "data" / "transformers_configs.json"

SIZES = {
    "vocab_size": 384,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}

GRANITE = dict(SIZES, shared_intermediate_size=128, num_local_experts=0, mamba_n_heads=4,
               mamba_d_state=16, layer_types=["mamba", "attention", "mamba", "mamba"])

FALCON_H1_MULTIPLIERS = dict(
    attention_in_multiplier=1.0, attention_out_multiplier=0.9375,
    embedding_multiplier=5.656854249492381, key_multiplier=0.390625,
    lm_head_multiplier=0.0390625, ssm_in_multiplier=1.25,
    ssm_out_multiplier=0.23570226039551587,
    ssm_multipliers=[0.3535533905932738, 0.25, 0.3535533905932738, 0.5, 0.3535533905932738],
    mlp_multipliers=[0.8838834764831844, 0.5859375],
)

# GPT-NeoX: every head its own keys and values, the MLP 4 x hidden wide (mlx_lm's only shape).
NEOX = dict(vocab_size=384, hidden_size=64, intermediate_size=256, num_hidden_layers=4,
            num_attention_heads=4)

LLAMA3_ROPE = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 1024,
}

# Every key transformers' yarn reads.
YARN_ROPE = {
    "rope_type": "yarn",
    "rope_theta": 1000000.0,
    "factor": 4.0,
    "original_max_position_embeddings": 1024,
    "attention_factor": 1.2,
    "beta_fast": 16.0,
    "beta_slow": 2.0,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
    "truncate": False,
}

# What Liquid AI's published LFM2 configs add: their training code's copies of settings
# (LFM2-1.2B's, at these sizes), which transformers keeps as it keeps any key it does not know.
LFM2_LIQUID_KEYS = {
    "block_dim": 64,
    "block_mlp_init_scale": 1.0,
    "block_norm_eps": 1e-05,
    "block_out_init_scale": 1.0,
    "block_use_swiglu": True,
    "block_use_xavier_init": True,
    "conv_dim": 64,
    "conv_dim_out": 64,
    "conv_use_xavier_init": True,
    "num_heads": 4,
    "use_pos_enc": True,
}


def configs():
    qwen3_5_text = dict(
        SIZES,
        head_dim=32,
        linear_num_value_heads=4,
        linear_num_key_heads=2,
        linear_key_head_dim=16,
        linear_value_head_dim=16,
        # As Qwen3.5 checkpoints write it: multimodal rope sections for the vision inputs.
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000000.0,
            "partial_rotary_factor": 0.25,
            "mrope_section": [2, 1, 1],
            "mrope_interleaved": True,
        },
    )
    vision = {"depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "out_hidden_size": 64}
    return {
        "llama": LlamaConfig(**SIZES, head_dim=16),
        "llama-llama3": LlamaConfig(**SIZES, rope_parameters=dict(LLAMA3_ROPE)),
        "llama-linear": LlamaConfig(**SIZES, rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}),
        "mistral": MistralConfig(**SIZES, head_dim=16),
        "qwen2": Qwen2Config(**SIZES),
        # max_position_embeddings / original_max_position_embeddings is the factor, as
        # transformers checks.
        "qwen2-yarn": Qwen2Config(**SIZES, max_position_embeddings=4096, rope_parameters=dict(YARN_ROPE)),
        "qwen3": Qwen3Config(**SIZES, head_dim=16),
        "smollm3": SmolLM3Config(**SIZES),
        "qwen3_5": Qwen3_5Config(text_config=qwen3_5_text, vision_config=vision),
        # Convolution layers 0 and 2, attention layers 1 and 3 (`layer_types` derived).
        "lfm2": Lfm2Config(**SIZES, full_attn_idxs=[1, 3]),
        "lfm2-liquid": Lfm2Config(**SIZES, full_attn_idxs=[1, 3], **LFM2_LIQUID_KEYS),
        # LFM2-MoE: one dense layer, then sparse blocks of 8 experts (top 4).
        "lfm2_moe": Lfm2MoeConfig(**SIZES, moe_intermediate_size=32, num_experts=8,
                                  num_experts_per_tok=4, num_dense_layers=1,
                                  layer_types=["conv", "full_attention", "conv", "conv"]),
        "lfm2-linear": Lfm2Config(
            **SIZES,
            full_attn_idxs=[1, 3],
            rope_parameters={"rope_type": "linear", "rope_theta": 1000000.0, "factor": 2.0},
        ),
        "mamba": MambaConfig(vocab_size=384, hidden_size=64, state_size=16, num_hidden_layers=4),
        "falcon_mamba": FalconMambaConfig(vocab_size=384, hidden_size=64, state_size=16,
                                          num_hidden_layers=4),
        # One key/value head, as every RecurrentGemma (transformers' default is one per head).
        "recurrent_gemma": RecurrentGemmaConfig(vocab_size=384, hidden_size=64,
                                                intermediate_size=192, num_hidden_layers=6,
                                                num_attention_heads=4, num_key_value_heads=1),
        # hidden_size * expand (2) == num_heads * head_dim, as transformers checks.
        "mamba2": Mamba2Config(vocab_size=384, hidden_size=64, num_heads=4, head_dim=32, n_groups=2,
                               state_size=16, num_hidden_layers=4),
        # The pattern as older configs give it; transformers writes it as layers_block_type.
        "nemotron_h": NemotronHConfig(vocab_size=384, hidden_size=64, num_attention_heads=4,
                                      num_key_value_heads=2, head_dim=16, intermediate_size=128,
                                      mamba_num_heads=8, mamba_head_dim=16, n_groups=4,
                                      ssm_state_size=16, hybrid_override_pattern="M-M*-"),
        # Nemotron-3-Nano's kind: expert blocks (E) with their router and shared expert.
        "nemotron_h-moe": NemotronHConfig(vocab_size=384, hidden_size=64, num_attention_heads=4,
                                          num_key_value_heads=2, head_dim=16,
                                          intermediate_size=128, mamba_num_heads=8,
                                          mamba_head_dim=16, n_groups=4, ssm_state_size=16,
                                          hybrid_override_pattern="MEM*E", n_routed_experts=8,
                                          num_experts_per_tok=2, moe_intermediate_size=32,
                                          moe_shared_expert_intermediate_size=64),
        # Dense (no experts), as Granite-4.0-H-Micro; NoPE and RoPE attention.
        "granitemoehybrid": GraniteMoeHybridConfig(**GRANITE, position_embedding_type="nope"),
        "granitemoehybrid-rope": GraniteMoeHybridConfig(**GRANITE, position_embedding_type="rope"),
        # Granite-4.0-H-Tiny's kind: 8 experts (top 2) beside the shared MLP.
        "granitemoehybrid-moe": GraniteMoeHybridConfig(**dict(GRANITE, num_local_experts=8),
                                                       num_experts_per_tok=2,
                                                       position_embedding_type="nope"),
        # Falcon-H1-0.5B's keys (its multipliers, no gated norm, rope_theta 1e11 as
        # transformers 5 nests it); and one whose SSM width comes from mamba_expand
        # (mamba_d_ssm null, mamba_d_head "auto") with the gated norm over two groups.
        "falcon_h1": FalconH1Config(**SIZES, head_dim=16, mamba_d_ssm=128, mamba_n_heads=8,
                                    mamba_d_head=16, mamba_d_state=16, mamba_rms_norm=False,
                                    mamba_norm_before_gate=False, tie_word_embeddings=True,
                                    rope_parameters={"rope_type": "default", "rope_theta": 1e11},
                                    **FALCON_H1_MULTIPLIERS),
        "falcon_h1-expand": FalconH1Config(**SIZES, mamba_d_ssm=None, mamba_n_heads=8,
                                           mamba_d_head="auto", mamba_d_state=16,
                                           mamba_n_groups=2, mamba_rms_norm=True),
        # Mixture-of-experts: 8 experts, 2 per token. transformers 5 writes Qwen3-MoE's
        # expert count as num_local_experts (Qwen3's own checkpoints say num_experts).
        "qwen3_moe": Qwen3MoeConfig(**SIZES, head_dim=16, num_local_experts=8,
                                    num_experts_per_tok=2, moe_intermediate_size=32,
                                    mlp_only_layers=[3], norm_topk_prob=True),
        "mixtral": MixtralConfig(**SIZES, num_local_experts=8, num_experts_per_tok=2),
        "qwen2_moe": Qwen2MoeConfig(**SIZES, num_experts=8, num_experts_per_tok=2,
                                    moe_intermediate_size=32,
                                    shared_expert_intermediate_size=128),
        "olmoe": OlmoeConfig(**SIZES, num_experts=8, num_experts_per_tok=2),
        # Qwen3-Next with experts (a shared one beside them) and without (num_experts 0:
        # the sparse block's keys then say nothing); the layer mix as layer_types.
        "qwen3_next": Qwen3NextConfig(**SIZES, head_dim=16, linear_num_value_heads=4,
                                      linear_num_key_heads=2, linear_key_head_dim=16,
                                      linear_value_head_dim=16, num_experts=8,
                                      num_experts_per_tok=2, moe_intermediate_size=32,
                                      shared_expert_intermediate_size=64),
        # Qwen3.5-MoE as its checkpoints write it: text_config and a vision tower.
        "qwen3_5_moe": Qwen3_5MoeConfig(
            text_config=dict(qwen3_5_text, num_experts=8, num_experts_per_tok=2,
                             moe_intermediate_size=32, shared_expert_intermediate_size=64),
            vision_config=vision),
        "qwen3_next-dense": Qwen3NextConfig(**SIZES, head_dim=16, linear_num_value_heads=4,
                                            linear_num_key_heads=2, linear_key_head_dim=16,
                                            linear_value_head_dim=16, num_experts=0),
        # Gated-delta-net layers 0-2, attention layer 3 (the default layer_types); RoPE as
        # transformers defaults it, and none (rope_theta null, as the released checkpoints).
        "olmo_hybrid": OlmoHybridConfig(**SIZES, linear_num_key_heads=2, linear_num_value_heads=4,
                                        linear_key_head_dim=32, linear_value_head_dim=16),
        "olmo_hybrid-nope": OlmoHybridConfig(**SIZES, linear_num_key_heads=2,
                                             linear_num_value_heads=4, linear_key_head_dim=32,
                                             linear_value_head_dim=16,
                                             rope_parameters={"rope_type": "default",
                                                              "rope_theta": None}),
        # Attention in layer 2 of every 4, experts in every other layer from 1 (4 of 8 with 2 per
        # token); and mlx_lm's own layers_block_type, as its converted checkpoints carry it.
        "jamba": JambaConfig(**SIZES, attn_layer_period=4, attn_layer_offset=2,
                             num_experts=4, num_experts_per_tok=2),
        "jamba-block-types": dict(
            JambaConfig(**SIZES, attn_layer_period=4, attn_layer_offset=2, num_experts=4,
                        num_experts_per_tok=2).to_dict(),
            layers_block_type=["mamba", "mamba", "attention", "mamba"]),
        # Baichuan-M1 has no transformers config class (its checkpoints run remote code): the
        # keys of mlx_lm's ModelArgs, with the sliding-window layers' own head counts.
        "baichuan_m1": {"model_type": "baichuan_m1", "vocab_size": 384, "hidden_size": 64,
                        "intermediate_size": 128, "num_hidden_layers": 4,
                        "num_attention_heads": 4, "num_key_value_heads": 2,
                        "rope_theta": 10000.0, "sliding_window": 8,
                        "sliding_window_layers": [0, 2], "conv_window": 2,
                        "rms_norm_eps": 1e-6, "num_swa_attention_heads": 8,
                        "num_swa_key_value_heads": 4, "tie_word_embeddings": False},
        # PLaMo 2 has no transformers config class (its checkpoints run remote code): the keys
        # of PLaMo-2-1B's published config.json, which are those of mlx_lm's ModelArgs.
        "plamo2": {"model_type": "plamo2", "hidden_size": 2048, "num_hidden_layers": 16,
                   "rms_norm_eps": 1e-06, "tie_word_embeddings": True,
                   "num_attention_heads": 16, "num_key_value_heads": 1,
                   "hidden_size_per_head": 128, "max_position_embeddings": 10485760,
                   "attention_window_size": 2048, "full_attention_idx": [],
                   "mamba_d_state": 64, "mamba_d_conv": 4, "mamba_num_heads": 32,
                   "mamba_step": 2, "mamba_chunk_size": 256, "mamba_enabled": True,
                   "intermediate_size": 8192, "vocab_size": 100000},
        # Multi-head latent attention and the grouped router: 16 experts in 4 groups.
        "deepseek_v3": DeepseekV3Config(**SIZES, n_routed_experts=16, n_group=4, topk_group=2,
                                        num_experts_per_tok=4, kv_lora_rank=32, q_lora_rank=64,
                                        qk_rope_head_dim=16, v_head_dim=32,
                                        qk_nope_head_dim=32, moe_intermediate_size=32),
        # Issue 38, grouped-router families: GLM-4.5's q/k norms and partial rope; dots1's
        # defaults (its sliding_window 4096 from max_window_layers 62 on: none in 4 layers).
        "glm4_moe": Glm4MoeConfig(**SIZES, head_dim=16, n_routed_experts=8, n_group=2,
                                  topk_group=1, num_experts_per_tok=2, moe_intermediate_size=32,
                                  use_qk_norm=True, attention_bias=True),
        # DeepSeek-V2's router (group_limited_greedy, 16 experts in 4 groups) and DeepSeek-V2's
        # yarn rope as its checkpoints give it.
        "deepseek_v2": DeepseekV2Config(**SIZES, n_routed_experts=16, n_group=4, topk_group=2,
                                        num_experts_per_tok=4, kv_lora_rank=32, q_lora_rank=64,
                                        qk_rope_head_dim=16, v_head_dim=32, qk_nope_head_dim=32,
                                        moe_intermediate_size=32,
                                        topk_method="group_limited_greedy",
                                        max_position_embeddings=163840,
                                        rope_parameters={"rope_type": "yarn", "factor": 40.0,
                                                         "rope_theta": 10000.0,
                                                         "mscale": 0.707,
                                                         "mscale_all_dim": 0.707,
                                                         "beta_fast": 32, "beta_slow": 1,
                                                         "original_max_position_embeddings":
                                                             4096}),
        # Granite-3.0-MoE's scalars and experts.
        "granitemoe": GraniteMoeConfig(**SIZES, embedding_multiplier=12.0,
                                       residual_multiplier=0.22, attention_multiplier=0.015625,
                                       logits_scaling=6.0, num_local_experts=8,
                                       num_experts_per_tok=2),
        # Phi-mini-MoE's kind: no rope scaling, biased attention and head.
        "phimoe": PhimoeConfig(**SIZES, num_local_experts=8, num_experts_per_tok=2,
                               attention_bias=True, lm_head_bias=True),
        # Phi-3.5-MoE's long rope as its released config writes it (rope_scaling beside the
        # top-level position limits).
        "phimoe-longrope": dict(
            {k: v for k, v in PhimoeConfig(**SIZES, num_local_experts=8, num_experts_per_tok=2,
                                           attention_bias=True,
                                           lm_head_bias=True).to_dict().items()
             if k != "rope_parameters"},
            rope_theta=10000.0, max_position_embeddings=131072,
            original_max_position_embeddings=4096, sliding_window=131072,
            rope_scaling={"type": "longrope", "long_factor": [1.5] * 8,
                          "short_factor": [1.0] * 8, "long_mscale": 1.243163121016122,
                          "short_mscale": 1.243163121016122}),
        # ERNIE-4.5-MoE as transformers defaults it (moe_layer_end_index -1: the last layer).
        "ernie4_5_moe": Ernie4_5_MoeConfig(**SIZES, moe_num_experts=8, moe_k=2,
                                           moe_intermediate_size=32,
                                           moe_num_shared_experts=1),
        "dots1": Dots1Config(**SIZES, n_routed_experts=8, n_shared_experts=2,
                             num_experts_per_tok=2, moe_intermediate_size=32,
                             first_k_dense_replace=1),
        # Kimi Linear: transformers' class (which derives layer_types, mlp_layer_types and the
        # linear_* sizes from the checkpoint's linear_attn_config and first_k_dense_replace)
        # with the keys the released config.json adds (mla_use_nope, linear_attn_config).
        "kimi_linear": KimiLinearConfig(**dict(SIZES, num_key_value_heads=4), num_experts=8,
                                        moe_intermediate_size=32, num_experts_per_token=2,
                                        kv_lora_rank=32, qk_rope_head_dim=16, v_head_dim=32,
                                        qk_nope_head_dim=32, mla_use_nope=True,
                                        first_k_dense_replace=1, linear_attn_config={
                                            "num_heads": 2, "head_dim": 32,
                                            "short_conv_kernel_size": 4,
                                            "kda_layers": [1, 2, 3], "full_attn_layers": [4]}),
        # The released checkpoints run Moonshot's remote code: the keys of
        # Kimi-Linear-48B-A3B-Instruct's config.json (what mlx_lm reads), at small sizes.
        "kimi_linear-remote": {
            "model_type": "kimi_linear", "architectures": ["KimiLinearForCausalLM"],
            "auto_map": {"AutoConfig": "configuration_kimi.KimiLinearConfig"},
            "vocab_size": 384, "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 4,
            "head_dim": 72, "hidden_act": "silu", "initializer_range": 0.02,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": None,
            "model_max_length": 1048576, "tie_word_embeddings": False, "use_cache": True,
            "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
            "kv_lora_rank": 32, "q_lora_rank": None, "qk_nope_head_dim": 32,
            "qk_rope_head_dim": 16, "v_head_dim": 32, "mla_use_nope": True,
            "num_experts": 8, "moe_intermediate_size": 32, "num_experts_per_token": 2,
            "num_shared_experts": 1, "moe_router_activation_func": "sigmoid",
            "moe_renormalize": True, "routed_scaling_factor": 2.446,
            "first_k_dense_replace": 1, "moe_layer_freq": 1, "use_grouped_topk": True,
            "num_expert_group": 1, "topk_group": 1, "num_nextn_predict_layers": 0,
            "linear_attn_config": {"num_heads": 2, "head_dim": 32, "short_conv_kernel_size": 4,
                                   "kda_layers": [1, 2, 3], "full_attn_layers": [4]}},
        # RWKV-7: transformers has no class for it; the released checkpoints carry
        # flash-linear-attention's RWKV7Config, whose keys (at their defaults there, small
        # sizes here) a PretrainedConfig of the same keys writes, with its own beside them.
        "rwkv7": dict(transformers.PretrainedConfig(
            attn_mode="chunk", hidden_size=64, hidden_ratio=4, intermediate_size=256,
            num_hidden_layers=2, head_dim=32, num_heads=None, decay_low_rank_dim=16,
            gate_low_rank_dim=32, a_low_rank_dim=16, v_low_rank_dim=16, hidden_act="sqrelu",
            max_position_embeddings=2048, norm_first=True, norm_bias=True, norm_eps=1e-5,
            attn=None, use_cache=True, pad_token_id=None, bos_token_id=1, eos_token_id=2,
            tie_word_embeddings=False, initializer_range=0.02, fuse_norm=True,
            fuse_cross_entropy=True, vocab_size=384).to_dict(),
            model_type="rwkv7", architectures=["RWKV7ForCausalLM"]),
        # Issue 38, LongCat-Flash: two MLA sub-blocks per layer (num_layers; transformers'
        # num_hidden_layers is twice it and not written), 8 routed and 4 identity experts.
        "longcat_flash": LongcatFlashConfig(
            vocab_size=384, hidden_size=64, num_layers=2, num_attention_heads=4,
            ffn_hidden_size=128, q_lora_rank=32, kv_lora_rank=32, qk_nope_head_dim=32,
            qk_rope_head_dim=16, head_dim=16, v_head_dim=32, n_routed_experts=8,
            zero_expert_num=4, moe_topk=4, expert_ffn_hidden_size=32),
        # LongCat-Flash-Lite has no transformers class (its checkpoints run remote code): the
        # keys of mlx_lm's longcat_flash_ngram ModelArgs, the n-gram embedding's among them.
        "longcat_flash_ngram": {
            "model_type": "longcat_flash_ngram", "vocab_size": 384, "hidden_size": 64,
            "ffn_hidden_size": 128, "moe_topk": 4, "expert_ffn_hidden_size": 32,
            "n_routed_experts": 8, "zero_expert_num": 4, "num_layers": 2,
            "max_position_embeddings": 4096, "num_attention_heads": 4, "kv_lora_rank": 32,
            "q_lora_rank": 32, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32,
            "v_head_dim": 32, "routed_scaling_factor": 6.0, "rms_norm_eps": 1e-5,
            "rope_theta": 10000000.0, "mla_scale_q_lora": True, "mla_scale_kv_lora": True,
            "attention_bias": False, "zero_expert_type": "identity",
            "ngram_vocab_size_ratio": 78, "emb_neighbor_num": 3, "emb_split_num": 2,
            "norm_topk_prob": False, "router_bias": False, "rope_scaling": None},
        # Issue 37, RMSNorm llama-likes (helper A).
        "helium": HeliumConfig(**SIZES, head_dim=16),
        "seed_oss": SeedOssConfig(**SIZES, head_dim=16),
        "granite": GraniteConfig(**SIZES, embedding_multiplier=12.0, residual_multiplier=0.22,
                                 attention_multiplier=0.0625, logits_scaling=8.0),
        "internlm3": InternLM3Config(**SIZES, head_dim=16, rope_parameters={
            "rope_type": "dynamic", "rope_theta": 50000000.0, "factor": 6.0}),
        # InternLM3's published checkpoints run remote code: the keys of InternLM3-8B's
        # config.json, its dynamic NTK rope included.
        "internlm3-remote": {"model_type": "internlm3", "architectures": ["InternLM3ForCausalLM"],
                      "auto_map": {"AutoConfig": "configuration_internlm3.InternLM3Config"},
                      "vocab_size": 384, "hidden_size": 64, "intermediate_size": 128,
                      "num_hidden_layers": 4, "num_attention_heads": 4,
                      "num_key_value_heads": 2, "head_dim": 16, "hidden_act": "silu",
                      "max_position_embeddings": 32768, "initializer_range": 0.02,
                      "rms_norm_eps": 1e-5, "use_cache": True, "bos_token_id": 1,
                      "eos_token_id": 2, "pad_token_id": 2, "tie_word_embeddings": False,
                      "rope_theta": 50000000, "rope_scaling": {"rope_type": "dynamic",
                                                               "factor": 6.0},
                      "qkv_bias": False, "attention_dropout": 0.0, "bias": False,
                      "torch_dtype": "bfloat16"},
        # The LayerNorm families (issue 37): StarCoder2 as transformers defaults it (tanh
        # GELU, biases, no sliding window), and with StarCoder2-3B's window.
        "starcoder2": Starcoder2Config(**SIZES),
        "starcoder2-window": Starcoder2Config(**SIZES, sliding_window=4096),
        # StableLM 2 12B's kind: per-head q/k LayerNorms, parallel layers.
        "stablelm": StableLmConfig(**SIZES, qk_layernorm=True, use_parallel_residual=True),
        "phi": PhiConfig(**SIZES),
        # Command-R+'s kind: per-head q/k LayerNorms.
        "cohere": CohereConfig(**SIZES, use_qk_norm=True),
        # GPT-NeoX as transformers 5 writes it (rope_parameters only), and with the keys of the
        # Pythia configs beside them (rotary_pct, rotary_emb_base, which mlx_lm reads).
        "gpt_neox": GPTNeoXConfig(**NEOX),
        "gpt_neox-pythia": dict(GPTNeoXConfig(**NEOX).to_dict(), rotary_pct=0.25,
                                rotary_emb_base=10000),
        # Gemma: transformers' default activation name (gelu_pytorch_tanh; mlx_lm computes
        # the exact GELU whatever the name), one key-value head (Gemma-2B's MQA).
        "gemma": GemmaConfig(**dict(SIZES, num_key_value_heads=1), head_dim=16),
        # Gemma 2: transformers 5 writes the alternating layer_types and the soft caps.
        "gemma2": Gemma2Config(**SIZES, head_dim=16, query_pre_attn_scalar=16),
        # Gemma 3 as transformers 5 writes it: layer_types and the ropes per layer kind under
        # rope_parameters (6 layers, its pattern of 6: five sliding, one global); with the
        # global layers' rope scaled (Gemma-3-4B's linear 8); the multimodal wrapper.
        "gemma3_text": Gemma3TextConfig(**dict(SIZES, num_hidden_layers=6), head_dim=16,
                                        query_pre_attn_scalar=16),
        "gemma3_text-scaled": Gemma3TextConfig(
            **dict(SIZES, num_hidden_layers=6), head_dim=16, query_pre_attn_scalar=16,
            rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                             "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                "rope_theta": 1000000.0}}),
        "gemma3": Gemma3Config(text_config=Gemma3TextConfig(
            **dict(SIZES, num_hidden_layers=6), head_dim=16, query_pre_attn_scalar=16).to_dict()),
        # Phi-3 (issue 37, dense-b): the plain rope as transformers defaults it, and
        # Phi-3-mini-128k's kind (longrope, which transformers 5 moves into rope_parameters
        # with its original_max_position_embeddings; the 4k model's sliding window).
        "phi3": Phi3Config(**SIZES),
        "phi3-longrope": Phi3Config(**SIZES, max_position_embeddings=1024,
                                    original_max_position_embeddings=32, sliding_window=2047,
                                    rope_scaling={"type": "longrope",
                                                  "short_factor": [1.0] * 8,
                                                  "long_factor": [2.0] * 8}),
        # OLMo 2 and OLMo 3 as transformers defaults them (OLMo 3: three sliding layers to one
        # full, its window 4096, rope_parameters per layer type), and OLMo 3 as its released
        # configs write the rope (rope_theta, the full layers' yarn under rope_scaling).
        "olmo2": Olmo2Config(**SIZES),
        "olmo3": Olmo3Config(**SIZES),
        "olmo3-yarn": dict(
            {k: v for k, v in Olmo3Config(**SIZES).to_dict().items() if k != "rope_parameters"},
            rope_theta=500000.0,
            rope_scaling={"rope_type": "yarn", "factor": 8.0,
                          "original_max_position_embeddings": 8192, "beta_fast": 32.0,
                          "beta_slow": 1.0, "attention_factor": 1.2079441541679836}),
        # GLM-4-0414 as transformers defaults it (biased q/k/v, partial_rotary_factor 0.5 under
        # rope_parameters).
        "glm4": Glm4Config(**SIZES, head_dim=16),
        # Ministral 3 as transformers defaults it (yarn, llama_4_scaling_beta and
        # max_position_embeddings under rope_parameters); the multimodal Mistral 3 over it
        # and over a mistral text model (Mistral-Small-3.1's).
        # Llama 4 text as mlx_lm's dense llama4_text reads it (no expert layer: moe_layers
        # [], MobileLLM-R1's kind); the chunking and temperature-tuning keys at their defaults.
        "llama4_text": Llama4TextConfig(**SIZES, head_dim=16, moe_layers=[]),
        "ministral3": Ministral3Config(**SIZES, head_dim=16),
        "mistral3": Mistral3Config(text_config=Ministral3Config(**SIZES, head_dim=16).to_dict()),
        "mistral3-mistral": Mistral3Config(text_config=MistralConfig(**SIZES).to_dict()),
        # EXAONE 4.0 as transformers 5 writes it (the pattern as a period, 4, and layer_types)
        # and as its released configs (the pattern as "LLLG", llama3 rope scaling).
        "exaone4": Exaone4Config(**SIZES),
        "exaone4-lllg": dict(Exaone4Config(**SIZES).to_dict(), sliding_window_pattern="LLLG",
                             head_dim=16, rope_theta=1000000.0,
                             rope_parameters=None,
                             rope_scaling={"rope_type": "llama3", "factor": 16.0,
                                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                           "original_max_position_embeddings": 8192}),
        # Command R7B as transformers 5 writes it (layer_types, no pattern).
        "cohere2": Cohere2Config(**dict(SIZES, num_key_value_heads=2), head_dim=16),
        # GPT-2 as transformers defaults it.
        "gpt2": GPT2Config(vocab_size=384, n_embd=64, n_layer=4, n_head=4, n_positions=128),
        # GPT-OSS as transformers 5 defaults it (its yarn rope under rope_parameters, with
        # truncate false; swiglu_alpha and swiglu_limit; layer_types alternating).
        "gpt_oss": GptOssConfig(**SIZES, num_local_experts=8),
        # Ling 3.0 as transformers 5.23 writes it (its `bailing_hybrid` is mlx_lm's
        # bailing_moe_v3, chosen by the checkpoints' `architectures`): `head_dim` the rotary
        # size beside `linear_head_dim`, the router settings under transformers' names
        # (`num_expert_group`, `num_experts_per_token`, `moe_renormalize`), `layer_types` and
        # `mlp_layer_types` derived, rope under `rope_parameters`.
        "bailing_moe_v3": BailingHybridConfig(**dict(SIZES, num_key_value_heads=4),
                                              architectures=["BailingMoeV3ForCausalLM"],
                                              moe_intermediate_size=32, num_experts=8,
                                              num_experts_per_tok=2, n_group=4, topk_group=2,
                                              kv_lora_rank=32, qk_rope_head_dim=8,
                                              qk_nope_head_dim=16, v_head_dim=16, head_dim=32,
                                              layer_group_size=2, first_k_dense_replace=1),
    }


def tag_non_finite(value):
    """Non-finite floats as mlx_lm's `save_config` writes them (`{"__float__": "Infinity"}`), so
    the file stays JSON; transformers writes a bare `Infinity` (Mamba2Config's
    `time_step_limit`), which config_keys.rs reads in a test of its own."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value).replace("inf", "Infinity").replace("nan", "NaN")}
    if isinstance(value, dict):
        return {k: tag_non_finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [tag_non_finite(v) for v in value]
    return value


def main():
    out = {
        "transformers_version": transformers.__version__,
        "configs": {name: tag_non_finite(c if isinstance(c, dict) else c.to_dict())
                    for name, c in configs().items()},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
