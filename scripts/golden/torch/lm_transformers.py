"""Llama checkpoints saved by transformers 5 itself, with its own logits, for the RoPE settings
it keeps only under `rope_parameters` (no top-level `rope_theta`, as in a real
SmolLM2-135M-Instruct saved by transformers 5). mlx_lm 0.32.2's llama reads the top level only
and silently runs such a checkpoint with base 10000; mlx-lm reads both places.

Writes, for each model of CONFIGS: `tests/data/lm-models/<name>/` (random float32 weights,
`LlamaForCausalLM.save_pretrained`) and `tests/data/lm/<name>.transformers.{json,safetensors}`
(the prompt, and its logits from transformers in float32 on the CPU). Then `lm.py NAME...`
adds the tokenizer and records mlx_lm's own (misread) logits for comparison.

Needs PyTorch and transformers 5, not MLX, so `scripts/gen-golden` does not run it.
Run: python3 scripts/golden/torch/lm_transformers.py [ROOT]
"""
import json
import pathlib
import sys

import torch
import transformers
from safetensors.torch import save_file

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[3])
BASE = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
            num_hidden_layers=3, rms_norm_eps=1e-5, vocab_size=384, max_position_embeddings=4096)
CONFIGS = {
    "llama-rope-parameters": (7, dict(
        BASE, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 100000.0})),
    # original_max_position_embeddings 16: with head_dim 16 and base 500000 the wavelengths
    # fall in all three of llama3's bands (kept, interpolated, divided by factor).
    "llama3-rope-parameters": (8, dict(
        BASE, tie_word_embeddings=False,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 16})),
}

for name, (seed, config) in CONFIGS.items():
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config)).float().eval()
    with torch.no_grad():
        # Weights of unit-scale activations (the default init, std 0.02, leaves attention
        # nearly uniform, where the rotation hardly shows); random norm weights.
        for key, p in model.named_parameters():
            if key.endswith("norm.weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.normal_(0, 1.0 if "embed" in key else p.shape[-1] ** -0.5)
    model.save_pretrained(ROOT / "tests/data/lm-models" / name)
    prompt = torch.randint(3, config["vocab_size"], (24,),
                           generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        logits = model(prompt[None]).logits.float()
    out = ROOT / "tests/data/lm" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    save_file({"logits": logits.contiguous()}, f"{out}.transformers.safetensors")
    pathlib.Path(f"{out}.transformers.json").write_text(json.dumps({
        "transformers_version": transformers.__version__, "torch_version": torch.__version__,
        "prompt": prompt.tolist()}, indent=1) + "\n")
    print(name, "max |logit|", logits.abs().max().item())
