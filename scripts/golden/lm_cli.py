#!/usr/bin/env python3
"""Command-line reference data for the `mlx-lm` tool: what mlx_lm 0.32.2's own commands
(`python -m mlx_lm <command>`, run as subprocesses) print and write for the golden models
that `lm.py` writes (their weights materialized from the recipes first, as lm_generate.py's
`cli` section does).

Writes `tests/data/lm/cli.json` and `tests/data/lm/cli-*.safetensors`:

- `generate`: mlx_lm.generate's whole stdout for flag combinations (verbose framing and
  statistics, `--prompt -`, `--system-prompt`, `--prefill-response`, `--extra-eos-token` as a
  token and as an id, `--max-kv-size` within its bound, `--chat-template-config`,
  `--adapter-path`, seeded sampling with the samplers' flags, `--max-tokens -1` until an end
  of sequence), with the numbers of the statistics lines parsed out (their rates and memory
  are timings: tests check their format only).
- `chat`: the answers of mlx_lm.chat to a transcript piped into it (`q` and `r` included),
  parsed out of its `rich` screen.
- `cache_prompt`: the file mlx_lm.cache_prompt writes (copied to
  `cli-prompt-cache-<model>.safetensors`), and mlx_lm.generate's text continuing from it.
- `convert`: mlx_lm.convert's output directories (cast, quantized affine 4/8-bit and mxfp4,
  an architecture's own quant_predicate, mixed-bits recipes, dequantized): the files, the
  tensors' names, dtypes, shapes and SHA-256 (`weights_recipe.digest`), config.json and the
  index.
- `benchmark`: mlx_lm.benchmark's lines for short runs (single and batched).
- `flags`: each command's option names from its `--help`.
- `perplexity`: mlx_lm.perplexity's printing on local datasets this script writes
  (`tests/data/lm/perplexity/`: text, chat and prompt/completion records, split layouts
  `datasets` reads), with its data rows and full-precision perplexity and standard error from
  its own `load_data` and `eval_ppl` (a script run beside the command). Needs Hugging Face
  `datasets` (mlx_lm imports it for local folders too; scripts/python-venv installs it).

Model paths are given relative to the repository root (the folder the commands run in, as
the Rust tests' do), since mlx_lm records the path as given in a prompt-cache file.

Run: scripts/gen-golden lm_cli (after lm, whose model directories it reads); `python lm_cli.py
SECTION...` (from scripts/golden) rewrites only those sections of cli.json.
"""
import json
import pathlib
import re
import shutil
import subprocess
import sys

# This folder's random.py would shadow the standard library's: after it on sys.path.
HERE = pathlib.Path(__file__).resolve().parent
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE] + [str(HERE)]

import tempfile  # noqa: E402

import mlx.core as mx  # noqa: E402

import mlx_lm  # noqa: E402
import common  # noqa: E402
import weights_recipe  # noqa: E402

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"

MODELS = common.ROOT / "tests" / "data" / "lm-models"
OUT = common.DATA / "lm"


def model_path(name):
    return str((MODELS / name).relative_to(common.ROOT))


def mlx_lm_command(command, args, stdin=None):
    # From the repository root: `-m` puts the working folder first on sys.path, and
    # scripts/golden's random.py would shadow the standard library.
    # Bytes, decoded without text mode's newline translation: a model's "\r" stays one.
    cmd = [sys.executable, "-m", "mlx_lm", command, *args]
    run = subprocess.run(cmd, capture_output=True, cwd=common.ROOT,
                         input=None if stdin is None else stdin.encode())
    if run.returncode != 0:
        raise RuntimeError(f"{cmd}: {run.stderr.decode()}")
    return run.stdout.decode()


STATS = re.compile(
    r"Prompt: (\d+) tokens, \d+\.\d{3} tokens-per-sec\n"
    r"Generation: (\d+) tokens, \d+\.\d{3} tokens-per-sec\n"
    r"Peak memory: \d+\.\d{3} GB\n$")

GENERATE = [
    # mlx_lm's defaults: the chat template, verbose printing.
    {"model": "llama3", "args": ["--prompt", "Hello, who are you?", "--max-tokens", "24"]},
    {"model": "qwen3", "args": ["--prompt", "-", "--max-tokens", "20"],
     "stdin": "From stdin,\nwith a newline."},
    {"model": "qwen3", "args": ["--prompt", "Say hi.", "--system-prompt", "Be brief.",
                                "--chat-template-config", '{"enable_thinking": false}',
                                "--max-tokens", "20"]},
    {"model": "llama3", "args": ["--prompt", "Name a river.", "--prefill-response",
                                 "The river", "--max-tokens", "16"]},
    # Within the bound mlx_lm's RotatingKVCache(keep=4) evicts nothing.
    {"model": "qwen2-4bit", "args": ["--prompt", "The cache", "--max-kv-size", "64",
                                     "--max-tokens", "30"]},
    {"model": "gemma3_text", "args": ["--prompt", "Why is the sea salty?", "--max-tokens", "24",
                                      "--verbose", "F"]},
    # Adapters mlx_lm trained and saved (scripts/golden/lora.py), relative to the root.
    {"model": "qwen3", "args": ["--prompt", "Adapt this.", "--adapter-path",
                                "tests/data/lora/adapters/qwen3-lora", "--max-tokens", "20"]},
    # Seeded sampling through the samplers' flags. mlx_lm seeds the global key before it
    # builds the model, whose initializers then draw from it, so its sampled text depends on
    # the architecture's parameter count; the tests check the output's form and compare the
    # text with the library's seeded generation instead.
    {"model": "llama3", "args": ["--prompt", "Tell a story.", "--temp", "0.8", "--top-p",
                                 "0.9", "--min-p", "0.05", "--top-k", "20", "--seed", "7",
                                 "--max-tokens", "24"]},
    {"model": "qwen3", "args": ["--prompt", "line one\\nline two", "--temp", "1.0", "--seed",
                                "3", "--min-p", "0.1", "--min-tokens-to-keep", "2",
                                "--ignore-chat-template", "--max-tokens", "24"]},
]


def extra_eos_cases():
    """`--extra-eos-token` stopping a greedy generation: by a token's text, and by an id (the
    first token, so nothing is printed: mlx_lm's "No text generated for this prompt")."""
    from mlx_lm.utils import load
    _, tok = load(str(MODELS / "qwen3"))
    args = ["--prompt", "def golden(name):", "--ignore-chat-template", "--max-tokens", "40"]
    out = mlx_lm_command("generate", ["--model", model_path("qwen3"), *args, "--verbose", "F"])
    ids = tok.encode(out[:-1], add_special_tokens=False)
    token = tok.convert_ids_to_tokens(ids[6])
    first = str(ids[0])
    return [
        {"model": "qwen3", "args": [*args, "--extra-eos-token", token]},
        {"model": "qwen3", "args": [*args, "--extra-eos-token", first]},
    ]


def unlimited_cases():
    """`--max-tokens -1`, mlx_lm's "no limit": a greedy generation that runs until an end of
    sequence, here an `--extra-eos-token` id the model first emits some tokens after its
    prompt and output passed 512 positions (the Rust tool's cache, sized for the prompt when
    there is no limit, grows there: the tokens after the growth are compared too)."""
    from mlx_lm.generate import generate_step
    from mlx_lm.utils import load
    model, tok = load(str(MODELS / "qwen3"))
    base = " ".join(f"item {i}," for i in range(76))
    for pad in range(16):
        prompt = base + " ." * pad
        ids = tok.encode(prompt)
        if len(ids) > 512:
            break
        out = [t for (t, _), _ in zip(generate_step(mx.array(ids), model), range(64))]
        first = {}
        for i, t in enumerate(out):
            first.setdefault(t, i)
        token, at = max(first.items(), key=lambda kv: kv[1])
        # The token fed at index 512 - len(ids) is the first past the prompt's 512 slots.
        if at >= 512 - len(ids) + 3 and token not in tok.eos_token_ids:
            args = ["--prompt", prompt, "--ignore-chat-template", "--max-tokens", "-1",
                    "--extra-eos-token", str(token)]
            return [{"model": "qwen3", "args": args, "unlimited": {
                "prompt_tokens": len(ids), "eos_at": at}}]
    raise RuntimeError("no prompt whose greedy output reaches a new token after 512 positions")


def generate():
    cases = []
    for case in GENERATE + unlimited_cases() + extra_eos_cases():
        args = ["--model", model_path(case["model"]), *case["args"]]
        out = mlx_lm_command("generate", args, case.get("stdin"))
        record = {**case, "stdout": out}
        stats = STATS.search(out)
        if stats:
            record["prompt_tokens"] = int(stats.group(1))
            record["generation_tokens"] = int(stats.group(2))
        cases.append(record)
        print(f"generate {case['args']}: {out!r}")
    return cases


# rich's colours, and the cursor movement and readline markers around the input prompt.
ANSI = re.compile(r"\x1b\[2A\r|\x1b\[[0-9;]*[A-Za-z]|[\x01\x02]")
TURN = re.compile(r"^(.*)\n  (\d+) tokens · [0-9.]+ tok/s · prompt [0-9.]+ tok/s · peak "
                  r"[0-9.]+ GB\n", re.S)

CHAT = [
    {"model": "llama3", "args": ["--max-tokens", "12"],
     "stdin": "hello there\nsecond turn\nr\nthird\nq\n"},
    {"model": "qwen3", "args": ["--max-tokens", "10", "--system-prompt", "You are terse."],
     "stdin": "Hi.\nAnd again?\nOnce more.\nq\n"},
    # A sliding-window model: its rotating layers keep the turns past the window (8).
    {"model": "gemma3_text", "args": ["--max-tokens", "9"],
     "stdin": "Why is the sea salty?\nWhy is the sky blue?\nq\n"},
]


def chat_turns(screen):
    """The answers in mlx_lm.chat's screen: after each input prompt `› `, an answer and its
    statistics line, or `reset`, or `bye`."""
    text = ANSI.sub("", screen)
    turns = []
    for segment in text.split("› \n")[1:]:
        if segment.startswith("  reset context cleared\n"):
            turns.append({"reset": True})
        elif segment.startswith("bye\n"):
            turns.append({"quit": True})
        else:
            m = TURN.match(segment)
            assert m, segment
            turns.append({"text": m.group(1), "generation_tokens": int(m.group(2))})
    return turns


def chat():
    cases = []
    for case in CHAT:
        args = ["--model", model_path(case["model"]), *case["args"]]
        out = mlx_lm_command("chat", args, case["stdin"])
        turns = chat_turns(out)
        cases.append({**case, "turns": turns})
        print(f"chat {case['model']}: {turns}")
    return cases


CACHE_PROMPT = [
    {"model": "llama3", "prompt": "You are a careful assistant. Here is a long document.",
     "query": "Summarize it.", "max_tokens": 20},
    {"model": "qwen3", "prompt": "Plain text, no template here:", "query": " and more",
     "max_tokens": 16, "no_template": True},
]


def cache_prompt():
    cases = []
    for case in CACHE_PROMPT:
        name = f"cli-prompt-cache-{case['model']}.safetensors"
        tmp = tempfile.mkdtemp()
        model = model_path(case["model"])
        if case.get("no_template"):
            # A copy of the model without its chat template: the plain-tokens path.
            model = tmp + "/model"
            shutil.copytree(MODELS / case["model"], model)
            config = json.loads(open(model + "/tokenizer_config.json").read())
            config.pop("chat_template", None)
            open(model + "/tokenizer_config.json", "w").write(json.dumps(config))
        file = f"{tmp}/cache.safetensors"
        out = mlx_lm_command("cache_prompt", ["--model", model, "--prompt",
                                              case["prompt"], "--prompt-cache-file", file])
        text = mlx_lm_command("generate", ["--prompt-cache-file", file, "--prompt",
                                           case["query"], "--max-tokens",
                                           str(case["max_tokens"]), "--verbose", "F"])
        if not case.get("no_template"):
            shutil.copy(file, OUT / name)
        shutil.rmtree(tmp)
        record = {**case, "stdout": out, "text": text[:-1]}
        if not case.get("no_template"):
            record["file"] = name
        cases.append(record)
        print(f"cache_prompt {case['model']}: {out!r} {text!r}")
    return cases


CONVERT = [
    {"model": "llama3", "args": ["--dtype", "bfloat16"]},
    {"model": "llama3", "args": ["-q"]},
    {"model": "llama3", "args": ["-q", "--q-bits", "8", "--q-group-size", "32", "--dtype",
                                 "float16"]},
    {"model": "llama3", "args": ["-q", "--q-mode", "mxfp4"]},
    # The other modes of MLX 0.32.2 (their group sizes and bits mlx_lm's defaults).
    {"model": "llama3", "args": ["-q", "--q-mode", "nvfp4"]},
    {"model": "llama3", "args": ["-q", "--q-mode", "mxfp8"]},
    # An architecture's own quant_predicate (qwen3_5's gates stay 8-bit).
    {"model": "qwen3_5", "args": ["-q"]},
    # mlx_lm's mixed-bits recipes: high bits for v_proj/down_proj in the first and last
    # eighth and every third layer, and for lm_head; the group size as given (null when not);
    # over an MoE hybrid of 8 layers with an output head, and over qwen3_5, whose own
    # predicate the recipe replaces.
    {"model": "llama3", "args": ["-q", "--quant-predicate", "mixed_3_6"]},
    {"model": "llama3", "args": ["-q", "--quant-predicate", "mixed_4_6", "--q-group-size", "32",
                                 "--q-bits", "8", "--dtype", "float16"]},
    {"model": "jamba", "args": ["-q", "--quant-predicate", "mixed_2_6"]},
    {"model": "qwen3_5", "args": ["-q", "--quant-predicate", "mixed_3_4"]},
    {"model": "qwen2-4bit", "args": ["--dequantize"]},
    {"model": "qwen2-mxfp4", "args": ["-d"]},
]


def convert():
    """mlx_lm.convert's outputs: its printing, the tensors' names, dtypes and shapes and a
    digest of their bytes (weights_recipe.digest), config.json and the index as JSON."""
    cases = []
    for case in CONVERT:
        tmp = tempfile.mkdtemp()
        dst = f"{tmp}/out"
        out = mlx_lm_command("convert", ["--hf-path", model_path(case["model"]),
                                         "--mlx-path", dst, *case["args"]])
        tensors = {}
        for f in sorted(pathlib.Path(dst).glob("*.safetensors")):
            tensors.update(mx.load(str(f)))
        record = {
            **case,
            "stdout": out,
            "files": sorted(p.name for p in pathlib.Path(dst).iterdir()),
            "tensors": {k: [str(v.dtype).removeprefix("mlx.core."), list(v.shape)]
                        for k, v in sorted(tensors.items())},
            "sha256": weights_recipe.digest(tensors),
            "config": json.loads((pathlib.Path(dst) / "config.json").read_text()),
            "index": json.loads((pathlib.Path(dst) / "model.safetensors.index.json").read_text()),
        }
        shutil.rmtree(tmp)
        cases.append(record)
        print(f"convert {case['model']} {case['args']}: {out!r} {record['sha256']}")
    return cases


BENCHMARK = [{"model": "llama3", "args": ["-p", "16", "-g", "8", "-n", "2"]},
             {"model": "qwen3", "args": ["-p", "12", "-g", "6", "-b", "2", "-n", "1"]}]


def benchmark():
    """mlx_lm.benchmark's lines (timings: the tests parse their format and count)."""
    cases = []
    for case in BENCHMARK:
        out = mlx_lm_command("benchmark", ["--model", model_path(case["model"]), *case["args"]])
        cases.append({**case, "stdout": out})
        print(f"benchmark {case}: {out!r}")
    return cases


PPL_DATA = OUT / "perplexity"

# Local datasets as `datasets.load_dataset(path, split="train")` reads them (mlx_lm.perplexity
# hands it the path): a train.jsonl beside a valid.jsonl it must not read, a sharded file in a
# data/ folder, a file with no split in its name (the whole folder is the train split).
SUBJECTS = ["the river", "a lighthouse", "the old library", "seven crows", "a paper boat",
            "the night train", "a quiet garden", "the glass bridge"]


def ppl_datasets():
    def write(path, records):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in records))

    text = [{"text": f"Story {i}: {SUBJECTS[i % 8]} waited {i * 3 + 1} days by "
                     f"{SUBJECTS[(i * 5) % 8]}, and then it rained{'!' * (i % 3)}"}
            for i in range(24)]
    write(PPL_DATA / "text" / "train.jsonl", text)
    write(PPL_DATA / "text" / "valid.jsonl", [{"text": "Not the train split."}] * 30)
    chat = [{"messages": [{"role": "user", "content": f"Tell me about {SUBJECTS[i % 8]}."},
                          {"role": "assistant", "content": f"It is number {i}, and it is "
                                                           f"{'very ' * (i % 4)}old."}]}
            for i in range(16)]
    write(PPL_DATA / "chat" / "data" / "train-00000-of-00001.jsonl", chat)
    write(PPL_DATA / "chat" / "data" / "test-00000-of-00001.jsonl", chat[:2])
    completions = [{"prompt": f"Where is {SUBJECTS[i % 8]}?",
                    "completion": f"Past {SUBJECTS[(i + 3) % 8]}, {i} steps on."}
                   for i in range(12)]
    write(PPL_DATA / "completions" / "records.jsonl", completions)


PERPLEXITY = [
    {"model": "llama3", "data": "text", "args": ["--sequence-length", "16", "--num-samples",
                                                 "10", "--batch-size", "4", "--seed", "7"]},
    {"model": "qwen3", "data": "chat", "args": ["--sequence-length", "24", "--num-samples", "6"]},
    {"model": "qwen2-4bit", "data": "completions",
     "args": ["--sequence-length", "12", "--num-samples", "9", "--batch-size", "3", "--seed",
              "2024"]},
]


# mlx_lm's own `load_data` and `eval_ppl`, run from the repository root as the commands are:
# in this folder its torch/ would pass for PyTorch to `datasets`.
PPL_REFERENCE = """
import json, sys, types
import mlx.core as mx
import numpy as np
from mlx_lm import perplexity as ppl
from mlx_lm.tuner.datasets import load_dataset
from mlx_lm.utils import load

model, data, num_samples, length, batch, seed = json.loads(sys.argv[1])
np.random.seed(seed)
mx.random.seed(seed)
model, tok = load(model)
rows = ppl.load_data(tok, data, num_samples, length)
value, se = ppl.eval_ppl(model, rows, batch_size=batch)
split = load_dataset(types.SimpleNamespace(
    hf_dataset={"path": data, "train_split": "train", "valid_split": "train[:1]"},
    train=True, test=False), tok)[0]
total = sum(len(split.process(split[i])[0]) for i in range(len(split)))
print(json.dumps({"rows": rows.tolist(), "ppl": value, "se": se, "records": len(split),
                  "all_tokens": total}))
"""


def perplexity():
    """mlx_lm.perplexity's printing, and its `load_data` rows and `eval_ppl` numbers at full
    precision (the command prints 3 decimals), with the total tokens of the whole train split
    (for `--num-samples -1`, which mlx_lm 0.32.2 fails on)."""
    ppl_datasets()
    cases = []
    for case in PERPLEXITY:
        data = str((PPL_DATA / case["data"]).relative_to(common.ROOT))
        args = ["--model", model_path(case["model"]), "--data-path", data, *case["args"]]
        out = mlx_lm_command("perplexity", args)
        flags = dict(zip(case["args"][::2], case["args"][1::2]))
        params = [model_path(case["model"]), data, int(flags["--num-samples"]),
                  int(flags["--sequence-length"]), int(flags.get("--batch-size", 8)),
                  int(flags.get("--seed", 123))]
        run = subprocess.run([sys.executable, "-c", PPL_REFERENCE, json.dumps(params)],
                             capture_output=True, cwd=common.ROOT, text=True)
        if run.returncode != 0:
            raise RuntimeError(run.stderr)
        reference = json.loads(run.stdout.strip().splitlines()[-1])
        cases.append({**case, "data_path": data, "stdout": out, **reference})
        print(f"perplexity {case}: {out!r} {reference['ppl']!r} {reference['se']!r}")
    return cases


def flags():
    """Each command's option strings as its `--help` lists them (the option lines of the
    `options:` section: each name before its metavariable)."""
    table = {}
    for command in ["generate", "chat", "cache_prompt", "convert", "benchmark", "perplexity"]:
        out = mlx_lm_command(command, ["--help"])
        names = set()
        for line in out.splitlines():
            if re.match(r"^  -", line):
                for part in line.strip().split("  ")[0].split(", "):
                    names.add(part.split(" ")[0])
        table[command] = sorted(names)
        print(f"flags {command}: {table[command]}")
    return table


SECTIONS = {"generate": lambda: generate(), "chat": lambda: chat(),
            "cache_prompt": lambda: cache_prompt(), "convert": lambda: convert(),
            "benchmark": lambda: benchmark(), "perplexity": lambda: perplexity(),
            "flags": lambda: flags()}


def main():
    """All sections, or those named on the command line (the others kept from the file)."""
    names = sys.argv[1:] or list(SECTIONS)
    unknown = [n for n in names if n not in SECTIONS]
    assert not unknown, f"unknown sections {unknown}; known: {list(SECTIONS)}"
    for name in {c["model"] for c in GENERATE + CHAT + CACHE_PROMPT + CONVERT + BENCHMARK
                 + PERPLEXITY}:
        weights_recipe.materialize(MODELS / name)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "cli.json"
    # A first record of a device (tests/data/cuda on a GPU) may start from some sections:
    # `perplexity` needs `datasets`, which the GPU machine's Python lacks
    # (`scripts/gpu-suite golden` runs `lm_cli.py generate chat cache_prompt convert
    # benchmark flags` there).
    data = json.loads(path.read_text()) if sys.argv[1:] and path.exists() else {}
    data.update({"mlx_version": mx.__version__, "mlx_lm_version": mlx_lm.__version__})
    for name in SECTIONS:
        if name in names:
            data[name] = SECTIONS[name]()
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
