#!/usr/bin/env python3
"""Generation reference data for mlx-lm: what mlx_lm 0.32.2 (and the transformers it renders
chat templates with) does around the models `lm.py` writes.

Writes `tests/data/[cuda/]lm/generate.json` and `tests/data/[cuda/]lm/prompt-cache-<name>.safetensors`:

- `sampling`: tokens of `generate_step` with `make_sampler` / `make_logits_processors`
  after `mx.random.seed(seed)` (temperature, top-p, min-p, top-k, repetition penalty, logit
  bias, alone and combined; float, bf16 and 4-bit models).
- `cli`: the text `mlx_lm.generate` (the command, run as a subprocess) prints for a prompt with
  `--temp 0`, with the chat template and without (`--ignore-chat-template`), and the detokenized
  text of `stream_generate` for token sequences chosen to hit the streaming detokenizer's edge
  cases (special tokens, a leading space, incomplete UTF-8).
- `chat_templates`: `tokenizer.apply_chat_template(..., tokenize=False)` for the model
  directories' ChatML template and for templates written here that use what real templates
  use (tools through `tojson`, namespaces, loop controls, Python string methods,
  `raise_exception`, special-token variables, `continue_final_message`).
- `prompt_cache`: for each cache kind (key/value, rotating, conv + recurrent, conv beside
  key/value), a prompt prefix's cache saved with `save_prompt_cache`, and the greedy tokens
  that continue it with the rest of the prompt.
- `cache_list`: a file of mlx_lm's nested cache kinds no model here uses yet (a `CacheList`
  of an `ArraysCache` and a `KVCache`, as falcon_h1's layers have, and an `ArraysCache` of
  three arrays), saved with `save_prompt_cache`.

Run: scripts/gen-golden lm_generate (after lm, whose model directories it reads)
"""
import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE] + [str(HERE)]

import mlx.core as mx  # noqa: E402
import transformers  # noqa: E402

import mlx_lm  # noqa: E402
from mlx_lm.generate import generate_step, stream_generate  # noqa: E402
from mlx_lm.models.cache import (  # noqa: E402
    ArraysCache, CacheList, KVCache, make_prompt_cache, save_prompt_cache)
from mlx_lm.sample_utils import make_logits_processors, make_sampler  # noqa: E402
from common import load  # noqa: E402

import common  # noqa: E402
import weights_recipe  # noqa: E402
from lm import transformers_fixes  # noqa: E402
from lm import TRANSFORMERS_FIXES  # noqa: E402
from lm import PROMPT_LENS  # noqa: E402
from lm import CUDA_CANNOT  # noqa: E402

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"
assert transformers.__version__ == "5.23.0", f"expected transformers 5.23.0, found {transformers.__version__}"

MODELS = common.ROOT / "tests" / "data" / "lm-models"
OUT = common.DATA / "lm"
VOCAB = 384


def prompt_ids(name):
    """The prompt tokens lm.py uses for this architecture (24, or its PROMPT_LENS entry)."""
    arch = name.split("-")[0]
    seed = sum(map(ord, arch))
    length = PROMPT_LENS.get(name, PROMPT_LENS.get(arch, 24))
    return mx.random.randint(3, VOCAB, (length,), key=mx.random.key(seed)).astype(mx.int32)


SAMPLING = [
    {"model": "llama3", "seed": 7, "temp": 0.8},
    {"model": "qwen3", "seed": 11, "temp": 1.0},  # bf16 logits
    {"model": "llama3", "seed": 1, "temp": 1.0, "top_p": 0.9},
    {"model": "mistral", "seed": 2, "temp": 0.7, "min_p": 0.05, "min_tokens_to_keep": 3},
    {"model": "mistral", "seed": 3, "temp": 1.3, "top_k": 7},
    {"model": "qwen3_5", "seed": 4, "temp": 0.9, "top_p": 0.95, "min_p": 0.02, "top_k": 50},
    {"model": "mistral", "seed": 0, "temp": 0.0, "repetition_penalty": 1.5,
     "repetition_context_size": 8},
    {"model": "qwen2", "seed": 5, "temp": 0.6, "repetition_penalty": 0.8,
     "logit_bias": {"5": 3.0, "17": -2.5, "100": 1.5}},
    {"model": "qwen3-4bit", "seed": 6, "temp": 1.0, "top_k": 20},
    {"model": "llama3-4bit", "seed": 8, "temp": 0.5, "repetition_penalty": 1.2,
     "repetition_context_size": 40},
    {"model": "qwen3_next-4bit", "seed": 12, "temp": 1.0, "top_k": 20},
]
SAMPLED_TOKENS = 48


def sampling():
    cases = []
    for case in SAMPLING:
        model, _ = load(str(MODELS / case["model"]))
        sampler = make_sampler(case["temp"], case.get("top_p", 0.0), case.get("min_p", 0.0),
                               case.get("min_tokens_to_keep", 1), top_k=case.get("top_k", 0))
        bias = case.get("logit_bias")
        processors = make_logits_processors(
            {int(k): v for k, v in bias.items()} if bias else None,
            case.get("repetition_penalty"), case.get("repetition_context_size", 20))
        mx.random.seed(case["seed"])
        tokens = [t for t, _ in generate_step(prompt_ids(case["model"]), model,
                                               max_tokens=SAMPLED_TOKENS, sampler=sampler,
                                               logits_processors=processors)]
        cases.append({**case, "prompt": prompt_ids(case["model"]).tolist(), "tokens": tokens})
        print(f"sampling {case}: {tokens[:8]}...")
    return cases


CLI = [
    {"model": "qwen3", "prompt": "def golden(name):", "chat": False, "max_tokens": 48},
    {"model": "llama3", "prompt": "Hello, who are you?", "chat": True, "max_tokens": 40},
    {"model": "qwen3_5-4bit", "prompt": "Grüße aus 東京 — ok?", "chat": True, "max_tokens": 64,
     "system_prompt": "You answer in one line."},
    {"model": "mistral", "prompt": "line one\\nline two", "chat": False, "max_tokens": 64},
    {"model": "qwen2-4bit", "prompt": "The cache", "chat": True, "max_tokens": 100},
    # Granite 3.x's own chat template (lm.GRANITE_CHAT_TEMPLATE), with a system message.
    {"model": "granite", "prompt": "Name three rivers.", "chat": True, "max_tokens": 48,
     "system_prompt": "You are Granite."},
    # The LayerNorm families with their own chat templates (lm.FAMILY_CHAT_TEMPLATES):
    # StarCoder2-Instruct's and StableLM 2 Zephyr's; Phi-2 has none (its QA prompt format).
    {"model": "starcoder2-gelu", "prompt": "Write a function that adds two numbers.",
     "chat": True, "max_tokens": 48},
    {"model": "stablelm", "prompt": "Name a prime.", "chat": True, "max_tokens": 40,
     "system_prompt": "You are terse."},
    {"model": "phi", "prompt": "Instruct: Name a prime. Output:", "chat": False,
     "max_tokens": 40},
    # Command-R's template, a system turn.
    {"model": "cohere", "prompt": "  Say hi.  ", "chat": True, "max_tokens": 40,
     "system_prompt": "Be brief."},
    # Gemma's own chat template (bos, <start_of_turn>user ... <start_of_turn>model).
    {"model": "gemma2", "prompt": "  Why is the sky blue?  ", "chat": True, "max_tokens": 48},
    # Gemma 3's template: the system message in front of the first user turn; the sliding
    # layers' window (8) passed many times over.
    {"model": "gemma3_text", "prompt": "Why is the sea salty?", "chat": True, "max_tokens": 64,
     "system_prompt": "Answer briefly."},
    # Phi-3's own chat template (<|system|> ... <|end|>, <|user|>, <|assistant|>).
    {"model": "phi3", "prompt": "Explain rope scaling.", "chat": True, "max_tokens": 48,
     "system_prompt": "You are a helpful assistant."},
    # OLMo 2's own chat template (Tülu 3's <|system|> / <|user|> / <|assistant|>).
    {"model": "olmo2", "prompt": "What is a post-norm layer?", "chat": True, "max_tokens": 48,
     "system_prompt": "Answer briefly."},
    # GLM-4-0414's own chat template ([gMASK]<sop>, <|system|>, <|user|>, <|assistant|>).
    {"model": "glm4", "prompt": "Hi there.", "chat": True, "max_tokens": 40,
     "system_prompt": "Be kind."},
    # Mistral Small 3.1's / Ministral 3's chat template ([SYSTEM_PROMPT], [INST] ... [/INST])
    # on the FP8 mistral3 checkpoint.
    {"model": "mistral3", "prompt": "What is FP8?", "chat": True, "max_tokens": 48,
     "system_prompt": "Answer in one line."},
    # EXAONE 4.0's chat template ([|system|], [|user|], [|assistant|] with an empty thought);
    # its sliding layers' window (8) passed many times over.
    {"model": "exaone4", "prompt": "What is a global layer?", "chat": True, "max_tokens": 48,
     "system_prompt": "Be concise."},
    # Command R7B's chat template (<|START_RESPONSE|> around the chatbot's turn).
    {"model": "cohere2", "prompt": "Name a colour.", "chat": True, "max_tokens": 40,
     "system_prompt": "You are terse."},
    # GPT-2 has no chat template: a plain prompt.
    {"model": "gpt2", "prompt": "The learned positions", "chat": False, "max_tokens": 48},
]


def cli():
    cases = []
    for case in CLI:
        cmd = [sys.executable, "-m", "mlx_lm", "generate", "--model", str(MODELS / case["model"]),
               "--prompt", case["prompt"], "--temp", "0", "--max-tokens",
               str(case["max_tokens"]), "--verbose", "False"]
        if not case["chat"]:
            cmd.append("--ignore-chat-template")
        if "system_prompt" in case:
            cmd += ["--system-prompt", case["system_prompt"]]
        # From the repository root: `-m` puts the working folder first on sys.path, and this
        # folder's random.py would shadow the standard library.
        out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                             cwd=common.ROOT).stdout
        assert out.endswith("\n"), out
        cases.append({**case, "text": out[:-1]})
        print(f"cli {case['model']}: {out[:-1]!r}")
    return cases


TOKENIZERS = common.ROOT / "tests" / "data" / "lm-tokenizers"


def spm_tokenizer(folder):
    """A SentencePiece-style tokenizer (Llama 2 / Mistral 7B's tokenizer.json layout): BPE with
    byte fallback to <0xXX> tokens, "▁" for spaces, and the Replace/ByteFallback/Fuse/Strip
    decoder that makes mlx_lm pick its SPM detokenizer."""
    from tokenizers import Tokenizer, decoders, models, normalizers
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece in ["▁", "a", "b", "▁a", "▁b", "é", "\n"]:
        vocab[piece] = len(vocab)
    tok = Tokenizer(models.BPE(vocab, [("▁", "a"), ("▁", "b")], unk_token="<unk>",
                               byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                           normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>"}, indent=2) + "\n")


def wordpiece_tokenizer(folder):
    """A WordPiece tokenizer (BERT-style): mlx_lm's naive detokenizer, with
    `clean_up_tokenization_spaces` on."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    vocab = {t: i for i, t in enumerate(
        ["[UNK]", "[CLS]", "[SEP]", "hello", "world", "##lo", "hel", ",", ".", "!", "\n",
         "don", "'", "t", "##é", "caf"])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(cleanup=False)
    tok.add_special_tokens(["[UNK]", "[CLS]", "[SEP]"])
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]",
        "clean_up_tokenization_spaces": True}, indent=2) + "\n")


def detokenizer():
    """Texts of chosen token sequences through stream_generate's detokenizer: the segments as
    streamed, not just the whole. The model directories' byte-level tokenizer gets mlx_lm's
    BPE detokenizer; `lm-tokenizers/spm` its SPM one, `lm-tokenizers/wordpiece` the naive one."""
    from mlx_lm.tokenizer_utils import (BPEStreamingDetokenizer, NaiveStreamingDetokenizer,
                                        SPMStreamingDetokenizer)
    from mlx_lm.tokenizer_utils import load as load_tokenizer
    spm_tokenizer(TOKENIZERS / "spm")
    wordpiece_tokenizer(TOKENIZERS / "wordpiece")
    cases = []
    for folder, kind, sequences in [
        (TOKENIZERS / "spm", SPMStreamingDetokenizer, {
            "spm_words": ["▁a", "b", "▁b", "▁", "▁a"],
            "spm_bytes": ["a", "<0xC3>", "<0xA9>", "é", "<0xE6>", "<0x9D>", "<0xB1>", "▁b",
                          "<0xE6>"],
            "spm_special": ["<s>", "▁a", "</s>", "\n", "▁b"],
        }),
        (TOKENIZERS / "wordpiece", NaiveStreamingDetokenizer, {
            "naive_words": ["hello", "world", ",", "hel", "##lo", "!", "\n", "caf", "##é", "."],
            "naive_lines": ["hello", "\n", "world", "\n", "\n", "don", "'", "t"],
            "naive_special": ["[CLS]", "hello", "[SEP]", "[UNK]", "."],
        }),
    ]:
        tok = load_tokenizer(folder)
        assert isinstance(tok.detokenizer, kind), type(tok.detokenizer)
        vocab = tok._tokenizer.get_vocab()
        for name, pieces in sequences.items():
            cases.append(stream_pieces(tok, name, [vocab[p] for p in pieces],
                                       folder.relative_to(common.ROOT)))
    tok = load_tokenizer(MODELS / "llama3")
    assert isinstance(tok.detokenizer, BPEStreamingDetokenizer), type(tok.detokenizer)
    vocab = tok._tokenizer.get_vocab()
    space = vocab["Ġ"]
    # Byte-level symbols of the lead and continuation bytes of "é" (0xC3 0xA9) and "東".
    bytes_to_unicode = {b: c for c, b in __import__(
        "mlx_lm.tokenizer_utils", fromlist=["_byte_decoder"])._byte_decoder().items()}
    def byte(b):
        return vocab[bytes_to_unicode[b]]
    sequences = {
        "leading_space": [space, vocab["a"], space, space, vocab["b"]],
        "special_tokens": [vocab["<|im_start|>"], vocab["a"], vocab["<|endoftext|>"], space],
        "split_character": [vocab["a"], byte(0xC3), byte(0xA9), byte(0xE6), byte(0x9D),
                            byte(0xB1), vocab["b"]],
        "invalid_utf8": [byte(0xA9), vocab["a"], byte(0xC3), vocab["b"], byte(0xE6), byte(0x9D)],
        "nul_byte": [byte(0x00), vocab["a"]],
        "trailing_incomplete": [vocab["a"], byte(0xE6), byte(0x9D)],
    }
    for name, ids in sequences.items():
        cases.append(stream_pieces(tok, name, ids, (MODELS / "llama3").relative_to(common.ROOT)))
    return cases


def stream_pieces(tok, name, ids, folder):
    d = tok.detokenizer
    d.reset()
    segments = []
    for t in ids:
        d.add_token(t)
        segments.append(d.last_segment)
    d.finalize()
    segments.append(d.last_segment)
    return {"name": name, "tokenizer": str(folder), "tokens": ids, "segments": segments}


TOOLS_TEMPLATE = """
{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\\n\\n' }}
    {%- endif %}
    {{- "# Tools\\n\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools><|im_end|>\\n" }}
{%- elif messages[0].role == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if message.role == "system" and loop.first %}
        {%- continue %}
    {%- elif message.role == "user" or message.role == "system" %}
        {{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if '</think>' in content %}
            {%- set reasoning_content = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
            {%- set content = content.split('</think>')[-1].lstrip('\\n') %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index and (loop.last or reasoning_content) %}
            {{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- else %}
        {{- raise_exception('Unknown role: ' + message.role) }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}
"""

# Block tags on their own lines (trim_blocks / lstrip_blocks at work), special-token variables,
# filters and tests that templates use.
BLOCKS_TEMPLATE = """{{ bos_token }}
{% for message in messages %}
    {% if message['role'] not in ['user', 'assistant', 'system'] %}
        {{ raise_exception('Conversation roles must be user, system or assistant') }}
    {% endif %}
    [{{ loop.index }}/{{ loop.length }}] {{ message['role'] | upper }}: {{ message['content'] | trim }}
    {% if message.meta is mapping %}
        {% for key, value in message.meta | items %}
    {{ key }}={{ value | tojson }};
        {% endfor %}
        {{ message.meta | tojson(indent=2) }}
        {{ message.meta | tojson(sort_keys=true, separators=(',', ':')) }}
        {{ message.meta | tojson(ensure_ascii=true) }}
    {% endif %}
{% endfor %}
{% if add_generation_prompt %}ASSISTANT:{% endif %}{{ eos_token if not add_generation_prompt else '' }}
"""

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city — «quoted» \"text\", tab\there",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
            "required": ["city"],
        },
    },
}]

CONVERSATIONS = {
    "single": [{"role": "user", "content": "Hello!"}],
    "system": [{"role": "system", "content": "Be brief."},
               {"role": "user", "content": "What is MLX?"}],
    "multi_turn": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<think>\nthe user greets\n</think>\n\nHello."},
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
            "name": "get_weather", "arguments": {"city": "Zürich", "days": 2, "units": None,
                                                 "scale": 1.5, "tiny": 1e-07, "big": 1e16}}}]},
        {"role": "tool", "content": "{\"temp\": 3}"},
        {"role": "tool", "content": "sunny"},
        {"role": "assistant", "content": "Sunny, 3°C.", "tool_calls": None},
    ],
    "meta": [
        {"role": "system", "content": "  padded  ", "meta": {"b": [1, 2.0, True, None],
                                                             "a": "ü\n\"x\"", "c": {}}},
        {"role": "user", "content": "x"},
    ],
    "bad_role": [{"role": "robot", "content": "beep"}],
    "prefill": [{"role": "user", "content": "Count to three."},
                {"role": "assistant", "content": "One, two,"}],
}

TEMPLATE_CASES = [
    ("chatml", "single", {"add_generation_prompt": True}),
    ("chatml", "system", {"add_generation_prompt": False}),
    ("chatml", "prefill", {"continue_final_message": True}),
    ("tools", "single", {"add_generation_prompt": True, "tools": TOOLS}),
    ("tools", "system", {"add_generation_prompt": True, "enable_thinking": False}),
    ("tools", "multi_turn", {"add_generation_prompt": True, "tools": TOOLS}),
    ("tools", "multi_turn", {"add_generation_prompt": False}),
    ("tools", "bad_role", {"add_generation_prompt": True}),
    ("tools", "prefill", {"continue_final_message": True}),
    ("blocks", "meta", {"add_generation_prompt": True}),
    ("blocks", "system", {"add_generation_prompt": False}),
    ("blocks", "bad_role", {}),
]


def chat_templates():
    tok = transformers.AutoTokenizer.from_pretrained(str(MODELS / "llama3"))
    # Special-token variables the templates see (Python: tokenizer.special_tokens_map).
    tok.add_special_tokens({"bos_token": "<|endoftext|>"})
    templates = {"chatml": tok.chat_template, "tools": TOOLS_TEMPLATE, "blocks": BLOCKS_TEMPLATE}
    cases = []
    for template, conversation, kwargs in TEMPLATE_CASES:
        case = {"template": template, "conversation": conversation, "kwargs": kwargs}
        try:
            case["text"] = tok.apply_chat_template(
                CONVERSATIONS[conversation], chat_template=templates[template], tokenize=False,
                **kwargs)
        except Exception as e:  # noqa: BLE001  (the error is the expected outcome)
            case["error"] = str(e)
        cases.append(case)
    return {"templates": templates, "conversations": CONVERSATIONS,
            "special_tokens": tok.special_tokens_map, "cases": cases}


PROMPT_CACHE = [
    # (model, prefix length): key/value caches; rotating caches (window 8) past their window;
    # conv + recurrent caches.
    ("mistral", 16),
    ("llama3", 16),
    ("qwen3_5", 16),
    ("lfm2", 16),
    # Mamba-1: conv and SSM state only, in float32 and (as mlx_lm keeps them) bfloat16.
    ("falcon_mamba", 16),
    ("mamba-bf16", 16),
    # RG-LRU and conv state beside a rotating cache (window 8) past its window.
    ("recurrent_gemma", 16),
    # Mamba-2: the convolution's and the float32 SSM state only (ArraysCache(2) per layer),
    # float and bfloat16 (the latter as transformers computes it, lm.TRANSFORMERS_FIXES).
    ("mamba2", 16),
    ("mamba2-codestral", 16),
    # Nemotron-H: entries for the Mamba-2 and attention blocks only (none for the MLP blocks).
    ("nemotron_h", 16),
    ("granitemoehybrid", 16),
    # Falcon-H1: a CacheList per layer (the SSD's ArraysCache(2) and a KVCache), as MLX and
    # as a Hugging Face checkpoint (folded multipliers, the gated norm as transformers has it).
    ("falcon_h1", 16),
    ("falcon_h1-deep", 16),
    # Mixture-of-experts: key/value caches only; a prefix of 34 of the 40 tokens routes 68
    # (token, expert) pairs (the sorted expert path), the rest of the prompt 12 (unsorted).
    ("qwen3_moe", 34),
    # Qwen3-Next: the gated delta net's conv and float32 recurrent state (ArraysCache(2))
    # beside key/value caches, the sparse block's sorted path in the prefix.
    ("qwen3_next", 34),
    ("qwen3_5_moe", 34),
    # olmo_hybrid: an ArraysCache(4) per linear-attention layer (three convolution states and
    # the float32 recurrent state) beside key/value caches, NoPE and RoPE.
    ("olmo_hybrid", 16),
    ("olmo_hybrid-rope", 16),
    # plamo2: ArraysCache(2) per Mamba layer (convolution, float32 SSD state) beside
    # key/value caches.
    ("plamo2", 16),
    # jamba: Mamba-1 ArraysCache(2) (model-dtype SSM state) beside a key/value cache.
    ("jamba", 16),
    # baichuan_m1: a CacheList per layer (the last key and value, ArraysCache(2), beside a
    # KVCache or, in a sliding-window layer, a RotatingKVCache past its window).
    ("baichuan_m1", 16),
    # Multi-head latent attention: the compressed cache (keys the latent, values the rotary
    # key part); the prefix's expanded path, then the absorbed one-token steps.
    ("deepseek_v3", 34),
    # The grouped sigmoid router's families (issue 38): glm4_moe's partial rope and q/k
    # norms, dots1's experts under `experts`.
    ("glm4_moe", 34),
    ("dots1", 34),
    # deepseek_v2: the latent expanded per head before an ordinary key/value cache.
    ("deepseek_v2", 34),
    ("granitemoe", 34),
    ("phimoe", 34),
    # Phi-3.5-MoE's long rope (mlx_lm's SuScaledRoPE: the long factors at every length).
    ("phimoe-longrope", 34),
    ("ernie4_5_moe", 34),
    # Issue 37, RMSNorm llama-likes: internlm3's dynamic NTK rope (a prefix of 16, its
    # max_position_embeddings: the continuation's base grows), granite's multipliers.
    ("internlm3", 16),
    ("granite", 16),
    # The LayerNorm families: key/value caches (stablelm and phi in bfloat16: the cache
    # keeps the model's dtype, the attention product is float32).
    ("starcoder2", 16),
    ("stablelm-parallel", 16),
    ("phi-bf16", 16),
    ("cohere", 16),
    ("gpt_neox", 16),
    # Gemma 2: key/value caches under the soft-capped attention.
    ("gemma2", 16),
    # Gemma 3: rotating caches of window 8 after a prefix of 16 (mlx_lm keeps the whole
    # chunk until its next step) beside key/value caches.
    ("gemma3_text", 16),
    # Phi-3: key/value caches of the fused projections, longrope, a prefix of 16 within
    # original_max_position_embeddings (32) and a continuation past it.
    ("phi3", 16),
    # OLMo 3: rotating caches (window 8) past their window beside the full layers' key/value
    # caches.
    ("olmo3", 16),
    # GLM-4: key/value caches under the partial traditional rope.
    ("glm4", 16),
    # Llama 4 text (llama4_text): key/value caches of its rope layers and of its NoPE layer.
    ("llama4_text", 16),
    # Ministral 3: key/value caches under the query scaling, a prefix of 16 (one step of it)
    # and a continuation past it; the tied model's rotating cache past its window.
    ("ministral3", 16),
    ("ministral3-tied", 16),
    # EXAONE 4: rotating caches past their window beside the global layers' key/value caches.
    ("exaone4", 16),
    # Command R7B: the same, its global layers without rope.
    ("cohere2", 16),
    # GPT-2: key/value caches; the continuation's learned positions start at the prefix.
    ("gpt2", 16),
    # LFM2-MoE: short-convolution states beside key/value caches; the sparse blocks' sorted
    # path in the prefix.
    ("lfm2_moe", 34),
    # Granite-4.0-H-Tiny's kind: the SSD's states beside a key/value cache, the experts'
    # sorted path in the prefix.
    ("granitemoehybrid-tiny", 34),
    # Nemotron-3-Nano's kind: no cache entries for the expert blocks.
    ("nemotron_h-moe", 34),
    # Kimi Linear: KDA's ArraysCache(4) (three convolution states, the float32 recurrent
    # state) beside MLA's compressed key/value caches; the sparse blocks' sorted path in the
    # prefix.
    ("kimi_linear", 34),
    # kimi_k3: KDA's ArraysCache(2) (the fused convolution's state, the float32 recurrent
    # state) beside MLA's compressed caches; the attention residuals are no state.
    ("kimi_k3", 34),
    # MLX's floating-point quantization modes: a tied head through the quantized embedding's
    # as_linear (mxfp4), experts through gather_qmm (nvfp4), MLA's compressed caches with
    # the quantized MultiLinear of both paths (mxfp4).
    ("qwen2-mxfp4", 16),
    ("qwen3_moe-nvfp4", 34),
    ("deepseek_v3-mxfp4", 34),
    # RWKV-7: ArraysCache(3) per layer (the two token shifts' last inputs, the WKV state in
    # the model's dtype), float32 and bfloat16.
    ("rwkv7", 16),
    ("rwkv7-bf16", 16),
    # bailing_moe_linear: ArraysCache(1) (the linear attention's state in the model's dtype)
    # beside KVCache layers; the sparse blocks' sorted path in the prefix.
    ("bailing_moe_linear", 34),
    # bailing_hybrid: ArraysCache(1) (the linear attention's float32 state) beside MLA's
    # KVCache of latents; the sparse blocks' sorted path in the prefix.
    ("bailing_hybrid", 34),
    # bailing_moe_v3: ArraysCache(4) (KDA's three convolution states in the model's dtype and
    # its float32 recurrent state) beside MLA's KVCache of latents; the sorted path in the
    # prefix.
    ("bailing_moe_v3", 34),
    # Gear: ArraysCache(2) (the key and value convolutions' states) beside rotating caches
    # (window 8 / 6) past their window and full key/value caches.
    ("gear", 16),
    ("gear-untied", 16),
    # GPT-OSS: rotating caches (window 8) past their window beside the full layers' key/value
    # caches, under attention sinks; a prefix of 34 routes 136 (token, expert) pairs (the
    # sorted path), the MXFP4 experts through gather_qmm.
    ("gpt_oss", 34),
    ("gpt_oss-mxfp4", 34),
    # LongCat-Flash: a CacheList of two compressed latent caches per layer; the sparse
    # blocks' sorted path (zero experts among the picks) in the prefix.
    ("longcat_flash", 34),
    # LongCat-Flash-Lite: the n-gram embedding's ArraysCache(1) (the last 3 token ids,
    # int64) first, then the layers' CacheLists.
    ("longcat_flash_ngram", 34),
]
CONTINUE_TOKENS = 16
# (model, prefix, steps): the prefix as one call, then `steps` one-token calls, so the
# rotating caches are rings mid-rotation (their `_idx` inside the window) when saved.
PROMPT_CACHE_STEPS = [("gemma3_text", 12, 5)]


def prompt_cache():
    cases = []
    for name, prefix in PROMPT_CACHE:
        if common.device_folder() == "cuda" and name in CUDA_CANNOT:
            print(f"prompt cache {name}: no CUDA record ({CUDA_CANNOT[name]})")
            continue
        model, _ = load(str(MODELS / name))
        transformers_fixes(model)
        fix = TRANSFORMERS_FIXES.get(name)
        if fix is not None:
            fix(model)
        prompt = prompt_ids(name)
        cache = make_prompt_cache(model)
        model(prompt[None, :prefix], cache=cache)
        mx.eval([c.state for c in cache])
        path = OUT / f"prompt-cache-{name}.safetensors"
        save_prompt_cache(str(path), cache, {"model": name, "note": "golden ✓"})
        tokens = [t for t, _ in generate_step(prompt[prefix:], model, prompt_cache=cache,
                                               max_tokens=CONTINUE_TOKENS)]
        cases.append({"model": name, "prefix": prefix, "prompt": prompt.tolist(),
                      "file": path.name, "tokens": tokens})
        print(f"prompt cache {name}: {tokens}")
    for name, prefix, steps in PROMPT_CACHE_STEPS:
        model, _ = load(str(MODELS / name))
        prompt = prompt_ids(name)
        cache = make_prompt_cache(model)
        model(prompt[None, :prefix], cache=cache)
        for i in range(prefix, prefix + steps):
            model(prompt[None, i:i + 1], cache=cache)
        mx.eval([c.state for c in cache])
        path = OUT / f"prompt-cache-{name}-steps.safetensors"
        save_prompt_cache(str(path), cache, {"model": name, "note": "golden ✓"})
        end = prefix + steps
        tokens = [t for t, _ in generate_step(prompt[end:], model, prompt_cache=cache,
                                               max_tokens=CONTINUE_TOKENS)]
        cases.append({"model": name, "prefix": prefix, "steps": steps,
                      "prompt": prompt.tolist(), "file": path.name, "tokens": tokens})
        print(f"prompt cache {name} after {steps} steps: {tokens}")
    return cases


def cache_list():
    """Seeded arrays in a `CacheList(ArraysCache(2), KVCache())` (a conv state and a float32
    SSM state beside keys and values written up to offset 5) and an `ArraysCache(3)`."""
    keys = mx.random.split(mx.random.key(35), 7)
    arrays = ArraysCache(2)
    arrays[0] = mx.random.normal((1, 3, 8), key=keys[0])
    arrays[1] = mx.random.normal((1, 2, 4, 4), key=keys[1])
    kv = KVCache()
    kv.update_and_fetch(mx.random.normal((1, 2, 5, 4), key=keys[2]),
                        mx.random.normal((1, 2, 5, 4), key=keys[3]))
    three = ArraysCache(3)
    for j in range(3):
        three[j] = mx.random.normal((1, 1, 6), key=keys[4 + j]).astype(mx.bfloat16)
    path = OUT / "prompt-cache-cache-list.safetensors"
    save_prompt_cache(str(path), [CacheList(arrays, kv), three], {"kinds": "CacheList"})
    print(f"cache list: {path.name}")
    return {"file": path.name, "offset": kv.offset}


def main():
    weights_recipe.materialize_all(MODELS)
    OUT.mkdir(parents=True, exist_ok=True)
    data = {
        "mlx_version": mx.__version__,
        "mlx_lm_version": mlx_lm.__version__,
        "transformers_version": transformers.__version__,
        "sampling": sampling(),
        "cli": cli(),
        "detokenizer": detokenizer(),
        "chat_templates": chat_templates(),
        "prompt_cache": prompt_cache(),
        "cache_list": cache_list(),
    }
    (OUT / "generate.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {(OUT / 'generate.json').relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
