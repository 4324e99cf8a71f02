"""GGUF files made from golden models (tests/data/lm-models) as llama.cpp's
convert_hf_to_gguf.py writes them, for tests/lm_gguf.rs: `$PY gguf.py` writes
tests/data/gguf/.

For each model and type (F32, F16, Q8_0, Q4_0, Q4_1):
- `NAME-TYPE.gguf`: llama.cpp's metadata keys and tensor names, llama's Q/K rows permuted
  (`LlamaModel.permute`), norms and biases in F32 (as llama.cpp keeps 1-D tensors), the
  matrices in TYPE (gguf-py's numpy quantizers, llama.cpp's reference ones), the byte-level
  BPE tokenizer (`tokenizer.ggml.*`) and the chat template.
- `NAME-TYPE.safetensors` (not for F32, whose reference is the model's own record in
  tests/data/lm): mlx_lm's prompt logits with every matrix replaced by gguf-py's
  de-quantization of what the file holds: the logits of the values the file means.
Checked against transformers' GGUF reader (config and tokenizer; the tensors need PyTorch):
`load_gguf_checkpoint` must give the golden config's values and the golden vocabulary.

`spm-ARCH.gguf` + `spm.json`: a SentencePiece vocabulary (BPE with byte fallback, trained here
with `sentencepiece` on the repository's README) written as llama.cpp's
`_set_vocab_sentencepiece` writes one (`tokenizer.ggml.model = "llama"`: tokens, scores, token
types), under the architectures whose tokenizer transformers builds differently (llama's
Metaspace, gemma's space-splitting with merges in file order, phi3's prepended-space
normalizer); `spm.json` holds a corpus and transformers' ids for it, its decoding and the chat
template's text, from transformers' own GGUF tokenizer conversion.

`ARCH-TYPE.gguf` + `ARCH-TYPE.safetensors` for gemma2, gemma3, phi3 and qwen3moe: random
models made with mlx_lm's classes in configs a GGUF can express (llama.cpp's fixed choices:
gemma's attention scale 1/sqrt(head_dim), Gemma 3's 5:1 sliding pattern and local base 10000,
qwen3moe's all-sparse layers with renormalized top-k), written in llama.cpp's conventions:
gemma's RMSNorm weights stored plus one, Phi-3's fused qkv and gate_up (`attn_qkv`,
`ffn_up`) and LongRoPE factors as `rope_factors_long` / `rope_factors_short`, qwen3moe's
experts stacked (`ffn_{gate,up,down}_exps`) and router (`ffn_gate_inp`, kept F32); the
SentencePiece tokenizer for the gemmas and phi3. The safetensors hold the prompt and mlx_lm's
logits for the values the file means (gemma's norms: the stored value minus one in float32, as
transformers' GGUF loader computes).

`llamak-TYPE.gguf` + `.safetensors` for Q4_K, Q5_K, Q5_0, Q5_1: a llama with rows of 256
(whole K-quant blocks), the matrices in TYPE (Q4_K / Q5_K from `quantize_k`, a plain encoder:
gguf-py has none), and mlx_lm's logits for the values the file means.

`kquants.gguf` + `kquants.safetensors`: random blocks of Q5_0, Q5_1, Q2_K ... Q6_K (block
scales set to finite float16) and gguf-py's `dequantize` of them.
"""

import json
import math
import pathlib
import sys

# This folder holds random.py (the MLX generator), which would shadow the standard library:
# search it last (for weights_recipe.py).
HERE = pathlib.Path(__file__).resolve().parent
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE] + [str(HERE)]

import numpy as np  # noqa: E402

import mlx.core as mx  # noqa: E402
from mlx_lm.utils import load_model  # noqa: E402

import gguf  # noqa: E402
import weights_recipe  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests/data/lm-models"
OUT = ROOT / "tests/data/gguf"
# (golden model, llama.cpp architecture)
CASES = [("mistral", "llama"), ("qwen2", "qwen2"), ("qwen3", "qwen3")]
TYPES = ["F32", "F16", "Q8_0", "Q4_0", "Q4_1"]
# What is committed of the others (the F32 files check against transformers, then go): the
# byte-exact float path and the permute are mistral's; F16 is bit for bit too.
KEPT = {"mistral": TYPES, "qwen2": ["F16", "Q8_0", "Q4_0"], "qwen3": ["F16", "Q8_0", "Q4_0"]}

LAYER_NAMES = {
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def gguf_name(name):
    top = {"model.embed_tokens": "token_embd", "model.norm": "output_norm", "lm_head": "output"}
    base, suffix = name.rsplit(".", 1)
    if base in top:
        return f"{top[base]}.{suffix}"
    _, _, layer, part = base.split(".", 3)
    return f"blk.{layer}.{LAYER_NAMES[part]}.{suffix}"


def permute(w, n_head, n_head_kv):
    """convert_hf_to_gguf.py's `LlamaModel.permute`."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def add_tokenizer(writer, folder):
    tok = json.loads((folder / "tokenizer.json").read_text())
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    vocab = tok["model"]["vocab"]
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    special = {a["content"] for a in tok["added_tokens"] if a["special"]}
    types = [gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in tokens]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    eos = cfg["eos_token"]
    writer.add_eos_token_id(vocab[eos])
    writer.add_pad_token_id(vocab[cfg["pad_token"]])
    writer.add_add_bos_token(False)
    writer.add_chat_template(cfg["chat_template"])


def add_config(writer, config, arch):
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_rope_freq_base(config["rope_theta"])
    writer.add_vocab_size(config["vocab_size"])
    if "head_dim" in config:
        writer.add_key_length(config["head_dim"])
        writer.add_value_length(config["head_dim"])
    scaling = config.get("rope_scaling")
    if scaling:
        kind = scaling.get("type") or scaling.get("rope_type")
        writer.add_rope_scaling_type(
            {"linear": gguf.RopeScalingType.LINEAR, "yarn": gguf.RopeScalingType.YARN}[kind])
        writer.add_rope_scaling_factor(scaling["factor"])
        if kind == "yarn":
            writer.add_rope_scaling_orig_ctx_len(scaling["original_max_position_embeddings"])
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)


def stored(w, qtype):
    """What a file of `qtype` holds for the float32 matrix `w`, and the floats it means."""
    if qtype == "F32":
        return w, w
    if qtype == "F16":
        h = w.astype(np.float16)
        return h, h.astype(np.float32)
    t = gguf.GGMLQuantizationType[qtype]
    q = quantize_k(w, qtype) if qtype in K_BITS else gguf.quants.quantize(w, t)
    return q, gguf.quants.dequantize(q, t).reshape(w.shape)


K_BITS = {"Q4_K": 4, "Q5_K": 5}


def quantize_k(w, qtype):
    """Q4_K / Q5_K blocks for `w` (gguf-py has no quantizer for them): per group of 32 a
    min/max fit, its scale and min as 6-bit multiples of the block's float16 `d` and `dmin`,
    in llama.cpp's byte layout (`block_q4_K`, `block_q5_K`). A plain encoder, not llama.cpp's
    search for the best scales: the tests need valid blocks, whose meaning gguf-py's
    `dequantize` gives."""
    bits = K_BITS[qtype]
    qmax = 2**bits - 1
    rows = w.shape[0]
    x = w.astype(np.float32).reshape(-1, 8, 32)
    lo = np.minimum(x.min(-1), 0)
    hi = np.maximum(x.max(-1), 0)
    scale, mins = (hi - lo) / qmax, -lo
    d = (scale.max(-1) / 63).astype(np.float16)
    dmin = (mins.max(-1) / 63).astype(np.float16)

    def six_bits(v, unit):
        unit = unit.astype(np.float32)[:, None]
        safe = np.where(unit > 0, unit, 1)
        return np.where(unit > 0, np.round(v / safe), 0).clip(0, 63).astype(np.uint8)

    sc, m = six_bits(scale, d), six_bits(mins, dmin)
    step = d.astype(np.float32)[:, None] * sc
    offset = dmin.astype(np.float32)[:, None] * m
    safe = np.where(step > 0, step, 1)[..., None]
    q = np.where(step[..., None] > 0, np.round((x + offset[..., None]) / safe), 0)
    q = q.clip(0, qmax).astype(np.uint8)
    scales = np.concatenate([
        sc[:, :4] | ((sc[:, 4:] >> 4) << 6),
        m[:, :4] | ((m[:, 4:] >> 4) << 6),
        (sc[:, 4:] & 0x0F) | ((m[:, 4:] & 0x0F) << 4),
    ], axis=1)
    qs = np.concatenate([(q[:, 2 * c] & 0x0F) | ((q[:, 2 * c + 1] & 0x0F) << 4)
                         for c in range(4)], axis=1)
    parts = [d.reshape(-1, 1).view(np.uint8), dmin.reshape(-1, 1).view(np.uint8), scales]
    if bits == 5:
        qh = np.zeros((q.shape[0], 32), dtype=np.uint8)
        for g in range(8):
            qh |= ((q[:, g] >> 4) & 1) << g
        parts.append(qh)
    parts.append(qs)
    return np.concatenate(parts, axis=1).reshape(rows, -1)


def write_model(name, arch):
    folder = MODELS / name
    weights_recipe.materialize(folder)
    config = json.loads((folder / "config.json").read_text())
    record = json.loads((ROOT / f"tests/data/lm/{name}.json").read_text())
    prompt = mx.array(record["prompt"])[None]
    weights = {k: np.array(v.astype(mx.float32))
               for k, v in mx.load(str(folder / "model.safetensors")).items()}
    model, _ = load_model(folder)
    bounds = {}
    for qtype in TYPES:
        path = OUT / f"{name}-{qtype}.gguf"
        writer = gguf.GGUFWriter(str(path), arch)
        add_config(writer, config, arch)
        add_tokenizer(writer, folder)
        meant = {}
        for key in sorted(weights):
            w = weights[key]
            if w.ndim == 1:
                data, meant[key] = w, w
            else:
                data, meant[key] = stored(w, qtype)
            if arch == "llama" and (".q_proj." in key or ".k_proj." in key):
                heads = config["num_attention_heads"]
                kv = config["num_key_value_heads"] if ".k_proj." in key else None
                # Quantized rows permute as the floats do: a block never spans rows.
                data = permute(data, heads, kv)
            shape = w.shape
            if data.dtype == np.uint8:
                writer.add_tensor(gguf_name(key), data, raw_shape=data.shape,
                                  raw_dtype=gguf.GGMLQuantizationType[qtype])
            else:
                writer.add_tensor(gguf_name(key), np.ascontiguousarray(data))
            assert data.shape[0] == shape[0]
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        if qtype != "F32":
            model.load_weights([(k, mx.array(v)) for k, v in meant.items()], strict=True)
            logits = model(prompt).astype(mx.float32)
            mx.save_safetensors(str(OUT / f"{name}-{qtype}.safetensors"), {"logits": logits})
        print(f"{path.name}: {path.stat().st_size} bytes")
    check_with_transformers(name, arch, config, weights)
    for qtype in TYPES:
        if qtype not in KEPT[name]:
            for suffix in ["gguf", "safetensors"]:
                (OUT / f"{name}-{qtype}.{suffix}").unlink(missing_ok=True)


def check_with_transformers(name, arch, config, weights):
    """transformers' GGUF reading of the F32 file (its config mapping, its Q/K un-permute;
    `load_gguf_checkpoint` itself needs PyTorch) gives back the golden model."""
    from transformers.integrations.ggml import GGUF_CONFIG_MAPPING
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    reader = gguf.GGUFReader(str(OUT / f"{name}-F32.gguf"))
    parsed = {}
    for key, field in reader.fields.items():
        prefix, _, rest = key.partition(".")
        target = GGUF_CONFIG_MAPPING.get(prefix if prefix != arch else arch, {}).get(rest)
        if target and field.types and field.types[0] != gguf.GGUFValueType.ARRAY:
            parsed[target] = field.contents()
    for key in ["hidden_size", "intermediate_size", "num_attention_heads",
                "num_key_value_heads", "num_hidden_layers", "max_position_embeddings"]:
        assert parsed[key] == config[key], (name, key, parsed[key], config[key])
    assert abs(parsed["rms_norm_eps"] - config["rms_norm_eps"]) < 1e-10, name
    assert parsed["rope_theta"] == config["rope_theta"], name
    processor = LlamaTensorProcessor(config=parsed) if arch == "llama" else None
    by_gguf = {gguf_name(k): w for k, w in weights.items()}
    for t in reader.tensors:
        data = np.array(t.data)
        if processor:
            data = processor.process(data, t.name).weights
        assert np.array_equal(data, by_gguf[t.name]), (name, t.name)
    tokens = [str(bytes(p), "utf-8") for p in
              (reader.fields["tokenizer.ggml.tokens"].parts[i]
               for i in reader.fields["tokenizer.ggml.tokens"].data)]
    golden = json.loads((MODELS / name / "tokenizer.json").read_text())["model"]["vocab"]
    assert {t: i for i, t in enumerate(tokens)} == golden, name


# Varied text for the tokenizers: CJK, emoji, code, whitespace runs, characters only byte
# fallback spells, the special and user-defined tokens, empty and space-only strings.
SPM_CORPUS = [
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "hello world", " hello", "  two leading spaces", "trailing spaces   ", "   ",
    " ", "", "a", "\n", "\n\n\n", "\t\ttabs\tand\nnewlines\r\n",
    "multiple     inner      spaces", "line one\nline two\n\n  indented line",
    "日本語のテキストです。", "中文文本，包括标点符号。", "한국어 텍스트", "混合 mixed 文字 text",
    "emoji 🤖🚀 and flags 🇫🇷 and families 👨‍👩‍👧", "🤖", "café naïve résumé Ünïcödé",
    "Ελληνικά και кириллица", "العربية עברית", "math ∑ ∫ √ ≤ ≥ ≠ ∞",
    "fn main() {\n    println!(\"Hello {}\", 42);\n}",
    "def f(x):\n    return x ** 2  # square",
    "for (int i = 0; i < n; ++i) { a[i] += b[i]; }",
    "<html><body class=\"x\">&amp;</body></html>",
    "SELECT * FROM t WHERE id = 7;", "path/to/file.rs:12:34", "https://example.com/a?b=c&d=e",
    "numbers 1234567890 and 3.14159 and -0.5e-10", "2026-11-29T04:26:57Z",
    "CamelCaseIdentifier snake_case_identifier kebab-case", "ALL CAPS TEXT", "MiXeD cAsE",
    "punctuation!!! ??? ... --- ,,, ;;; :::", "quotes 'single' \"double\" `back`",
    "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
    "text<start_of_turn>glued<end_of_turn>text", "<think>reasoning</think> answer",
    " <think> spaced </think> ", "<s> and </s> and <unk> written out",
    "<bos><eos><pad><mask>", "\u0000 control \u0007 characters \u001b[0m",
    "zero\u200bwidth\u200cjoiners\u200d", "combining e\u0301 vs \u00e9",
    "a" * 40, "ab " * 20, "\u2581 the metaspace character itself \u2581\u2581",
    "The model loads a GGUF file and generates text.",
    "mlx-lm reads tokenizer.ggml.tokens, scores and token types.",
]

# Gemma's special tokens where its vocabulary has them; the others <unk>, <s>, </s>.
SPM_SPECIALS = {
    "gemma": dict(pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>",
                  bos_piece="<bos>", unk_piece="<unk>"),
    "llama": dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1),
}
# (architecture, vocabulary, template); the template shows that the file's is the one used.
SPM_TEMPLATE = ("{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}"
                "{{ eos_token }}{% endfor %}")
SPM_FILES = [("llama", "llama", SPM_TEMPLATE),
             ("gemma2", "gemma", None), ("gemma3", "gemma", None), ("phi3", "llama", None)]


def spm_vocab(kind):
    """`(tokens, scores, token types, special ids)` of a SentencePiece model trained here, as
    convert_hf_to_gguf.py's `_create_vocab_sentencepiece` reads them: the pieces, their scores,
    unknown / control / unused / byte types from the model, and the added tokens of a
    `tokenizer_config.json` (here `<start_of_turn>` / `<end_of_turn>` special, `<think>` not)."""
    import io

    import sentencepiece as spm

    text = (ROOT / "README.md").read_text()
    extra = ["<start_of_turn>", "<end_of_turn>", "<think>"] + (["<mask>"] if kind == "gemma" else [])
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(text.splitlines()), model_writer=model, model_type="bpe",
        vocab_size=384, byte_fallback=True, character_coverage=0.98, user_defined_symbols=extra,
        num_threads=1, split_digits=True, allow_whitespace_only_pieces=True,
        remove_extra_whitespaces=False, minloglevel=2, **SPM_SPECIALS[kind])
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    tokens, scores, types = [], [], []
    for i in range(sp.vocab_size()):
        piece = sp.id_to_piece(i)
        kind_of = gguf.TokenType.NORMAL
        if sp.is_unknown(i):
            kind_of = gguf.TokenType.UNKNOWN
        elif sp.is_control(i) or piece in ("<start_of_turn>", "<end_of_turn>", "<mask>"):
            kind_of = gguf.TokenType.CONTROL
        elif sp.is_unused(i):
            kind_of = gguf.TokenType.UNUSED
        elif sp.is_byte(i):
            kind_of = gguf.TokenType.BYTE
        elif piece == "<think>":
            kind_of = gguf.TokenType.USER_DEFINED
        tokens.append(piece)
        scores.append(sp.get_score(i))
        types.append(kind_of)
    ids = {"bos": sp.bos_id(), "eos": sp.eos_id(), "unk": sp.unk_id(), "pad": sp.pad_id()}
    return tokens, scores, types, ids


def add_spm_tokenizer(writer, kind, template):
    tokens, scores, types, ids = spm_vocab(kind)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(ids["bos"])
    writer.add_eos_token_id(ids["eos"])
    writer.add_unk_token_id(ids["unk"])
    if ids["pad"] >= 0:
        writer.add_pad_token_id(ids["pad"])
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_chat_template(template or GEMMA_TEMPLATE)


# Gemma's chat template (tests/data/lm-models/gemma2's).
GEMMA_TEMPLATE = json.loads((MODELS / "gemma2" / "tokenizer_config.json").read_text())[
    "chat_template"]


def transformers_gguf_tokenizer(path):
    """transformers' tokenizer of a GGUF file, as `from_pretrained(..., gguf_file=...)` builds
    it. Its metadata reader's module imports PyTorch for a dtype table only: a stand-in module
    lets it load without PyTorch."""
    import types

    import transformers
    import transformers.integrations.gguf.gguf_tokenizer_mapping  # noqa: F401

    if "transformers.integrations.gguf.reader" not in sys.modules:
        stub = types.ModuleType("torch")
        stub.__getattr__ = lambda name: name
        sys.modules["torch"] = stub
        try:
            import transformers.integrations.gguf.reader  # noqa: F401
        finally:
            del sys.modules["torch"]
    return transformers.PreTrainedTokenizerFast.from_pretrained(str(path.parent),
                                                               gguf_file=path.name)


def write_spm():
    record = {"texts": SPM_CORPUS, "files": {}}
    messages = [{"role": "user", "content": "Hi there"},
                {"role": "assistant", "content": "Hello 🤖"},
                {"role": "user", "content": "  spaced  "}]
    for arch, kind, template in SPM_FILES:
        path = OUT / f"spm-{arch}.gguf"
        writer = gguf.GGUFWriter(str(path), arch)
        add_spm_tokenizer(writer, kind, template)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        tok = transformers_gguf_tokenizer(path)
        ids = [tok.encode(t) for t in SPM_CORPUS]
        plain = [tok.encode(t, add_special_tokens=False) for t in SPM_CORPUS]
        record["files"][path.name] = {
            "ids": ids,
            "ids_without_special": plain,
            "decoded": [tok.decode(i, skip_special_tokens=False) for i in ids],
            "chat": tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
        }
        print(f"{path.name}: {path.stat().st_size} bytes")
    (OUT / "spm.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


FAMILY_LAYERS = {
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "post_attention_norm",
    "pre_feedforward_layernorm": "ffn_norm",
    "post_feedforward_layernorm": "post_ffw_norm",
    "self_attn.qkv_proj": "attn_qkv",
    "mlp.gate_up_proj": "ffn_up",
    "mlp.gate": "ffn_gate_inp",
    "mlp.switch_mlp.gate_proj": "ffn_gate_exps",
    "mlp.switch_mlp.up_proj": "ffn_up_exps",
    "mlp.switch_mlp.down_proj": "ffn_down_exps",
}
SMALL = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, vocab_size=384,
             max_position_embeddings=4096)
FAMILIES = {
    "gemma2": dict(SMALL, model_type="gemma2", num_hidden_layers=4, num_key_value_heads=2,
                   head_dim=16, query_pre_attn_scalar=16, rms_norm_eps=1e-6,
                   rope_theta=10000.0, attn_logit_softcapping=50.0,
                   final_logit_softcapping=30.0, sliding_window=4096,
                   hidden_activation="gelu_pytorch_tanh"),
    # 6 layers: the last is the global one of Gemma 3's 5:1 pattern; a window of 8 slides
    # within the prompt.
    "gemma3": dict(SMALL, model_type="gemma3_text", num_hidden_layers=6, num_key_value_heads=1,
                   head_dim=32, query_pre_attn_scalar=32, rms_norm_eps=1e-6,
                   rope_theta=1000000.0, rope_local_base_freq=10000.0, sliding_window=8,
                   sliding_window_pattern=6, hidden_activation="gelu_pytorch_tanh",
                   tie_word_embeddings=True),
    "phi3": dict(SMALL, model_type="phi3", num_hidden_layers=2, num_key_value_heads=4,
                 rms_norm_eps=1e-5, rope_theta=10000.0, original_max_position_embeddings=32,
                 rope_scaling={"type": "longrope",
                               "short_factor": [1.0 + 0.05 * i for i in range(8)],
                               "long_factor": [1.5 + 0.4 * i for i in range(8)]}),
    # Llama 3.1's rope scaling, which llama.cpp stores as the `rope_freqs` tensor: the
    # original context 64 puts the frequencies in all three bands.
    "llama31": dict(SMALL, model_type="llama", num_hidden_layers=2, num_key_value_heads=2,
                    head_dim=32, rms_norm_eps=1e-5, rope_theta=500000.0,
                    tie_word_embeddings=False,
                    rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0,
                                  "original_max_position_embeddings": 64}),
    "qwen3moe": dict(SMALL, model_type="qwen3_moe", num_hidden_layers=2, num_key_value_heads=2,
                     head_dim=16, moe_intermediate_size=32, num_experts=8,
                     num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1,
                     mlp_only_layers=[], rms_norm_eps=1e-6, rope_theta=1000000.0,
                     tie_word_embeddings=False),
    # Rows of 256 and more, a multiple of the K-quants' 256-value blocks.
    "llamak": dict(SMALL, model_type="llama", hidden_size=256, intermediate_size=512,
                   num_hidden_layers=2, num_key_value_heads=2, rms_norm_eps=1e-5,
                   rope_theta=10000.0, tie_word_embeddings=False),
}
FAMILY_TYPES = ["F32", "Q8_0", "Q4_0"]
# The types MLX affine holds exactly beyond Q4_0 / Q8_0, on llamak's wide rows.
TYPES_OF = {"llamak": ["Q4_K", "Q5_K", "Q5_0", "Q5_1"]}


def family_gguf_name(name, arch):
    base, suffix = name.rsplit(".", 1)
    if base.startswith("model.layers."):
        _, _, layer, part = base.split(".", 3)
        # Gemma's four norms a layer; the others' post-attention norm is the FFN's.
        gemma_only = {"post_attention_layernorm", "pre_feedforward_layernorm",
                      "post_feedforward_layernorm"}
        if part in FAMILY_LAYERS and (arch.startswith("gemma") or part not in gemma_only):
            return f"blk.{layer}.{FAMILY_LAYERS[part]}.{suffix}"
    return gguf_name(name)


def add_family_config(writer, arch, config):
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_vocab_size(config["vocab_size"])
    if "head_dim" in config:
        writer.add_key_length(config["head_dim"])
        writer.add_value_length(config["head_dim"])
    if arch != "gemma2":  # Gemma2Model writes no rotary base: llama.cpp's default 10000
        writer.add_rope_freq_base(config["rope_theta"])
    if arch.startswith("gemma"):
        writer.add_sliding_window(config["sliding_window"])
    if arch == "gemma2":
        writer.add_float32(f"{arch}.attn_logit_softcapping", config["attn_logit_softcapping"])
        writer.add_float32(f"{arch}.final_logit_softcapping", config["final_logit_softcapping"])
    if arch == "phi3":
        # Phi3MiniModel: the original context, no window (0), LongRoPE's attention factor.
        orig = config["original_max_position_embeddings"]
        writer.add_rope_dimension_count(config["hidden_size"] // config["num_attention_heads"])
        writer.add_rope_scaling_orig_ctx_len(orig)
        writer.add_sliding_window(0)
        scale = config["max_position_embeddings"] / orig
        writer.add_rope_scaling_attn_factors(
            math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1.0 else 1.0)
    if arch == "qwen3moe":
        writer.add_expert_count(config["num_experts"])
        writer.add_expert_used_count(config["num_experts_per_tok"])
        writer.add_expert_feed_forward_length(config["moe_intermediate_size"])
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)


def llama3_rope_freqs(config):
    """convert_hf_to_gguf.py's `LlamaModel.generate_extra_tensors` for llama3 rope scaling."""
    scaling = config["rope_scaling"]
    base, dim = config["rope_theta"], config["head_dim"]
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)))
    factor = scaling.get("factor", 8.0)
    low, high = scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
    old = scaling["original_max_position_embeddings"]
    factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / float(freq)
        if wavelen < old / high:
            factors.append(1)
        elif wavelen > old / low:
            factors.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def write_family(name):
    from mlx_lm.utils import _get_classes
    from mlx.utils import tree_flatten

    config = FAMILIES[name]
    arch = "llama" if name in ("llama31", "llamak") else name
    model_class, args_class = _get_classes(config)
    mx.random.seed(41)
    model = model_class(args_class.from_dict(config))
    if name == "gemma3":
        # mlx_lm ties Gemma 3's head when the checkpoint has none, as the real ones.
        model.tie_word_embeddings = True
        model.pop("lm_head")
    # Norm weights away from their initial ones and zeros, so a wrong offset shows.
    params = dict(tree_flatten(model.parameters()))
    for k, v in params.items():
        if k.endswith("norm.weight"):
            params[k] = mx.random.uniform(-0.5, 0.5, v.shape)
    model.load_weights(list(params.items()))
    weights = {k: np.array(v.astype(mx.float32)) for k, v in params.items()}
    prompt = mx.random.randint(0, config["vocab_size"], (1, 24)).astype(mx.int32)
    gemma = arch.startswith("gemma")
    for qtype in TYPES_OF.get(name, FAMILY_TYPES):
        path = OUT / f"{name}-{qtype}.gguf"
        writer = gguf.GGUFWriter(str(path), arch)
        add_family_config(writer, arch, config)
        if arch == "qwen3moe":
            add_tokenizer(writer, MODELS / "qwen3_moe")
        elif arch == "llama":
            add_tokenizer(writer, MODELS / "mistral")
        else:
            add_spm_tokenizer(writer, "gemma" if gemma else "llama",
                              None if gemma else SPM_TEMPLATE)
        meant = {}
        for key in sorted(weights):
            w = weights[key]
            if gemma and key.endswith("norm.weight"):
                data = w + np.float32(1)
                meant[key] = data - np.float32(1)
            elif w.ndim == 1 or key.endswith("mlp.gate.weight"):
                data, meant[key] = w, w
            else:
                data, meant[key] = stored(w, qtype)
            if arch == "llama" and (".q_proj." in key or ".k_proj." in key):
                kv = config["num_key_value_heads"] if ".k_proj." in key else None
                data = permute(data, config["num_attention_heads"], kv)
            if data.dtype == np.uint8:
                writer.add_tensor(family_gguf_name(key, arch), data, raw_shape=data.shape,
                                  raw_dtype=gguf.GGMLQuantizationType[qtype])
            else:
                writer.add_tensor(family_gguf_name(key, arch), np.ascontiguousarray(data))
        if name == "llama31":
            writer.add_tensor("rope_freqs.weight", llama3_rope_freqs(config))
        if arch == "phi3":
            scaling = config["rope_scaling"]
            writer.add_tensor("rope_factors_long.weight",
                              np.array(scaling["long_factor"], dtype=np.float32))
            writer.add_tensor("rope_factors_short.weight",
                              np.array(scaling["short_factor"], dtype=np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        model.load_weights([(k, mx.array(v)) for k, v in meant.items()], strict=True)
        logits = model(prompt).astype(mx.float32)
        mx.save_safetensors(str(OUT / f"{name}-{qtype}.safetensors"),
                            {"logits": logits, "prompt": prompt})
        print(f"{path.name}: {path.stat().st_size} bytes")


def write_kquants():
    rng = np.random.default_rng(41)
    # (type, byte offsets of its float16 block scales)
    kinds = [("Q5_0", [0]), ("Q5_1", [0, 2]), ("Q2_K", [80, 82]), ("Q3_K", [108]),
             ("Q4_K", [0, 2]), ("Q5_K", [0, 2]), ("Q6_K", [208])]
    writer = gguf.GGUFWriter(str(OUT / "kquants.gguf"), "llama")
    expected = {}
    for kind, scale_at in kinds:
        t = gguf.GGMLQuantizationType[kind]
        items, size = gguf.GGML_QUANT_SIZES[t]
        rows, cols = 3, 512
        blocks = rng.integers(0, 256, size=(rows * cols // items, size), dtype=np.uint8)
        for at in scale_at:
            scales = rng.uniform(-0.05, 0.05, size=blocks.shape[0]).astype(np.float16)
            blocks[:, at:at + 2] = scales.view(np.uint8).reshape(-1, 2)
        data = blocks.reshape(rows, -1)
        writer.add_tensor(kind, data, raw_shape=data.shape, raw_dtype=t)
        expected[kind] = mx.array(gguf.quants.dequantize(data, t).reshape(rows, cols))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    mx.save_safetensors(str(OUT / "kquants.safetensors"), expected)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    names = sys.argv[1:] or [n for n, _ in CASES] + list(FAMILIES) + ["spm", "kquants"]
    for name, arch in CASES:
        if name in names:
            write_model(name, arch)
    for name in FAMILIES:
        if name in names:
            write_family(name)
    if "spm" in names:
        write_spm()
    if "kquants" in names:
        write_kquants()


if __name__ == "__main__":
    main()
