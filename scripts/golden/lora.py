#!/usr/bin/env python3
"""Fine-tuning data reference for mlx-lm's tuner: mlx_lm 0.32.2's own `load_local_dataset`,
`CacheDataset` and `iterate_batches` on the fixtures in `tests/data/lora` (text,
prompt/completion and chat records, with tools, with and without `mask_prompt`), and NumPy's
`np.random.permutation` after `np.random.seed`, which orders mlx_lm's batches.

Writes `tests/data/lora/golden.json`: per dataset, each split's tokenized examples
(tokens, offset) and the batches of two epochs (`loop=True`) for a seed, a batch size and a
`max_seq_length` (one that truncates), over the `CacheDataset` and over a plain list; and permutations for several seeds and sizes.

Also writes `tests/data/lora/adapters/<case>/`: adapters made by mlx_lm's own
`linear_to_lora_layers` on golden models (tests/data/lm-models; LoRA, DoRA, QLoRA on a 4-bit
model; on the expert layers of a mixture-of-experts model, float and 4-bit; on the embedding
table, LoRA and DoRA, tied and quantized) after `mx.random.seed`, saved as its trainer saves them (`adapters.safetensors` of the
trainable parameters, `adapter_config.json`), with `lora_b` (and DoRA's `m`) moved off their
initial values so the update is not zero; and `golden.safetensors`: the seeded initial
adapters (`init.<path>`) and the logits of the model's golden prompt after mlx_lm's
`load_adapters` on a freshly loaded model (`logits`, float32), and after `mlx_lm.fuse`'s
merge of the adapters into the base layers (`fused_logits`, and the fused layers' parameters,
`fused.<path>`). And
`tests/data/lora/adapters/default_keys.json`: the modules the default keys adapt in several
mixture-of-experts models.

And `tests/data/lora/train/<case>/`: mlx_lm's own `trainer.train` (its compiled step, Adam)
for a few iterations on a golden model with seeded adapters (`mx.random.seed`,
`np.random.seed`, `model.freeze()`, `linear_to_lora_layers`, as `mlx_lm.lora` does), on a
dataset of `tests/data/lora`: each step's loss (`losses.json`, reported every step) and the
adapters it saves at the end (`adapters.safetensors`).

Run: /work/main/.venv/bin/python scripts/golden/lora.py
"""
import json
import pathlib
import sys
import types

HERE = pathlib.Path(__file__).resolve().parent
# The golden scripts' own modules (random.py...) must not shadow the standard library's.
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]

import mlx_lm  # noqa: E402
import numpy as np  # noqa: E402
from mlx_lm.tuner.datasets import CacheDataset, load_local_dataset  # noqa: E402
from mlx_lm.tuner.trainer import iterate_batches  # noqa: E402
from mlx_lm.utils import load_tokenizer  # noqa: E402

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "lora"

tokenizer = load_tokenizer(DATA / "tokenizer")

permutations = []
for seed in (0, 1, 42, 2**32 - 1):
    np.random.seed(seed)
    # Sizes past one MT19937 block (624 words) and a power of two (the rejection mask).
    perms = [np.random.permutation(n).tolist() for n in (1, 2, 7, 16, 700, 3)]
    permutations.append({"seed": seed, "sizes": [1, 2, 7, 16, 700, 3], "values": perms})

cases = []
for name, mask_prompt in (("text", False), ("completions", False), ("completions", True),
                          ("chat", False), ("chat", True)):
    config = types.SimpleNamespace(mask_prompt=mask_prompt)
    splits = load_local_dataset(DATA / name, tokenizer, config)
    case = {"name": name, "mask_prompt": mask_prompt, "splits": {}}
    for split_name, split in zip(("train", "valid", "test"), splits):
        cached = CacheDataset(split)
        examples = [[list(map(int, cached[i][0])), int(cached[i][1])] for i in range(len(cached))]
        # mlx_lm's trainer batches a CacheDataset, which sorts by the number of the raw
        # records' keys; a plain list of (tokens, offset) sorts by the token count.
        plain = [(e[0], e[1]) for e in examples]
        runs = []
        for source, seed, batch_size, max_seq_length in (("cache", 0, 2, 2048),
                                                          ("cache", 3, 4, 40),
                                                          ("plain", 5, 2, 2048)):
            data = cached if source == "cache" else plain
            it = iterate_batches(data, batch_size, max_seq_length, loop=True, seed=seed)
            n = 2 * (len(cached) // batch_size)
            batches = []
            for _ in range(n):
                b, lengths = next(it)
                batches.append({"tokens": np.array(b).tolist(), "lengths": np.array(lengths).tolist()})
            runs.append({"source": source, "seed": seed, "batch_size": batch_size,
                         "max_seq_length": max_seq_length, "batches": batches})
        case["splits"][split_name] = {"examples": examples, "runs": runs}
    cases.append(case)

out = {"mlx_lm_version": mlx_lm.__version__, "numpy_version": np.__version__,
       "permutations": permutations, "cases": cases}
(DATA / "golden.json").write_text(json.dumps(out, separators=(",", ":")) + "\n")
print("wrote", DATA / "golden.json")


# --- adapters on golden models -------------------------------------------------------------
import mlx.core as mx  # noqa: E402
from mlx.utils import tree_flatten, tree_unflatten  # noqa: E402
from mlx_lm.tuner.utils import linear_to_lora_layers, load_adapters  # noqa: E402
from mlx_lm.utils import load  # noqa: E402

sys.path.append(str(HERE))  # after the standard library, which must not be shadowed
import mlx_lm_compat  # noqa: E402,F401  (mlx_lm 0.32.2 on MLX 0.32.2: quantized experts)
import weights_recipe  # noqa: E402

MODELS = ROOT / "tests" / "data" / "lm-models"
LM = ROOT / "tests" / "data" / "lm"
ADAPTERS = DATA / "adapters"

ADAPTER_CASES = [
    # name, model, fine_tune_type, num_layers, lora_parameters, seed
    ("qwen3-lora", "qwen3", "lora", 2, {"rank": 4, "scale": 10.0, "dropout": 0.0}, 7),
    ("qwen3-4bit-qlora", "qwen3-4bit", "lora", -1, {"rank": 8, "scale": 20.0, "dropout": 0.0}, 11),
    ("llama3-dora", "llama3", "dora", 1,
     {"rank": 4, "scale": 5.0, "dropout": 0.0, "keys": ["self_attn.q_proj", "self_attn.v_proj", "mlp.down_proj"]}, 3),
    # Expert layers (LoRASwitchLinear) by the default keys: attention, the router, the
    # experts, and the dense MLP of qwen3_moe's `mlp_only_layers`.
    ("qwen3_moe-lora", "qwen3_moe", "lora", -1, {"rank": 4, "scale": 10.0, "dropout": 0.0}, 13),
    ("qwen3_moe-4bit-qlora", "qwen3_moe-4bit", "lora", 3,
     {"rank": 4, "scale": 20.0, "dropout": 0.0}, 17),
    # Embedding adapters (LoRAEmbedding, DoRAEmbedding) by their full path; llama3 ties its
    # output projection to the table (`as_linear`), qwen3-4bit's table is quantized.
    ("llama3-lora-embed", "llama3", "lora", 1,
     {"rank": 4, "scale": 10.0, "dropout": 0.0, "keys": ["model.embed_tokens", "self_attn.q_proj"]}, 19),
    ("llama3-dora-embed", "llama3", "dora", 1,
     {"rank": 4, "scale": 5.0, "dropout": 0.0, "keys": ["model.embed_tokens", "mlp.down_proj"]}, 23),
    ("qwen3-4bit-qlora-embed", "qwen3-4bit", "lora", 1,
     {"rank": 8, "scale": 20.0, "dropout": 0.0, "keys": ["model.embed_tokens"]}, 29),
    # A hybrid model (issue 40): the default keys adapt the gated delta net's projections
    # (in_proj_qkv, in_proj_z, in_proj_a, in_proj_b, out_proj) as well as the attention and MLP
    # layers.
    ("qwen3_5-lora", "qwen3_5", "lora", -1, {"rank": 4, "scale": 10.0, "dropout": 0.0}, 31),
]

mx.set_default_device(mx.cpu)
for name, model_name, fine_tune_type, num_layers, params, seed in ADAPTER_CASES:
    folder = MODELS / model_name
    weights_recipe.materialize(folder)
    model, _ = load(str(folder))
    mx.random.seed(seed)
    model.freeze()
    linear_to_lora_layers(model, num_layers, params, use_dora=fine_tune_type == "dora")
    init = dict(tree_flatten(model.trainable_parameters()))
    mx.eval(init)
    # Trained-looking adapters: lora_b off zero, DoRA's magnitudes off the base norms.
    key = mx.random.key(1000 + seed)
    trained = {}
    for i, (path, x) in enumerate(sorted(init.items())):
        k = mx.random.split(key, len(init))[i]
        if path.endswith("lora_b"):
            x = 0.05 * mx.random.normal(x.shape, key=k)
        elif path.endswith(".m"):
            x = x * (1.0 + 0.1 * mx.random.normal(x.shape, key=k))
        trained[path] = x
    out = ADAPTERS / name
    out.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(out / "adapters.safetensors"), trained)
    config = {"fine_tune_type": fine_tune_type, "num_layers": num_layers, "lora_parameters": params}
    (out / "adapter_config.json").write_text(json.dumps(config, indent=4) + "\n")

    fresh, _ = load(str(folder))
    load_adapters(fresh, str(out))
    prompt = json.loads((LM / f"{model_name}.json").read_text())["prompt"]
    logits = fresh(mx.array([prompt])).astype(mx.float32)
    # mlx_lm.fuse: every adapted layer merged into its base (requantized on a 4-bit model).
    fused = [(n, m.fuse(dequantize=False)) for n, m in fresh.named_modules() if hasattr(m, "fuse")]
    fresh.update_modules(tree_unflatten(fused))
    fused_logits = fresh(mx.array([prompt])).astype(mx.float32)
    golden = {f"init.{p}": x for p, x in init.items()}
    # The fused layers' parameters (packed and requantized on a 4-bit model).
    for p, x in tree_flatten(fresh.parameters()):
        if any(p.startswith(n + ".") for n, _ in fused):
            golden[f"fused.{p}"] = x
    golden["logits"] = logits
    golden["fused_logits"] = fused_logits
    mx.save_safetensors(str(out / "golden.safetensors"), golden)
    print("wrote", out, sorted(init)[:3], "...", len(init), "adapter tensors")

# The modules the default keys adapt (every linear, expert and embedding layer in the
# blocks; mlx_lm 0.32.2 has no per-architecture choice): the adapted paths of each
# mixture-of-experts model, all its blocks.
DEFAULT_KEY_MODELS = ["qwen3_moe", "mixtral", "deepseek_v3", "qwen2_moe", "olmoe", "gpt_oss",
                      "glm4_moe", "llama4_text", "qwen3_5"]
default_keys = {}
for model_name in DEFAULT_KEY_MODELS:
    folder = MODELS / model_name
    weights_recipe.materialize(folder)
    model, _ = load(str(folder))
    linear_to_lora_layers(model, -1, {"rank": 1, "scale": 1.0, "dropout": 0.0})
    default_keys[model_name] = sorted(
        p[: -len(".lora_a")] for p, _ in tree_flatten(model.parameters()) if p.endswith(".lora_a"))
(ADAPTERS / "default_keys.json").write_text(json.dumps(default_keys, indent=1) + "\n")
print("wrote", ADAPTERS / "default_keys.json")

(ADAPTERS / "cases.json").write_text(json.dumps(
    [{"name": n, "model": m, "fine_tune_type": f, "num_layers": l, "lora_parameters": p, "seed": s}
     for n, m, f, l, p, s in ADAPTER_CASES], indent=1) + "\n")


# --- training on golden models -------------------------------------------------------------
import mlx.optimizers as optim  # noqa: E402
from mlx_lm.tuner.callbacks import TrainingCallback  # noqa: E402
from mlx_lm.tuner.trainer import TrainingArgs, train  # noqa: E402

TRAIN = DATA / "train"
TRAIN_CASES = [
    # name, model, fine_tune_type, num_layers, lora_parameters, seed, data, mask_prompt,
    # batch_size, iters, learning_rate
    ("qwen3-lora-text", "qwen3", "lora", 2, {"rank": 4, "scale": 10.0, "dropout": 0.0}, 5,
     "text", False, 2, 6, 1e-3),
    ("qwen3-4bit-dora-chat", "qwen3-4bit", "dora", -1, {"rank": 8, "scale": 20.0, "dropout": 0.0},
     2, "chat", True, 2, 5, 1e-3),
    # Expert layers: the default keys (attention, router, experts, dense MLP).
    ("qwen3_moe-lora-text", "qwen3_moe", "lora", 2, {"rank": 4, "scale": 10.0, "dropout": 0.0},
     5, "text", False, 2, 4, 1e-3),
    ("qwen3_moe-4bit-lora-chat", "qwen3_moe-4bit", "lora", -1,
     {"rank": 8, "scale": 20.0, "dropout": 0.0}, 2, "chat", True, 2, 4, 1e-3),
    # Embedding adapters on a tied table (the lookup and the output projection both adapted).
    ("llama3-lora-embed-completions", "llama3", "lora", 2,
     {"rank": 4, "scale": 10.0, "dropout": 0.0, "keys": ["model.embed_tokens", "self_attn.v_proj"]},
     6, "completions", True, 2, 4, 1e-3),
    ("llama3-dora-embed-text", "llama3", "dora", 1,
     {"rank": 4, "scale": 10.0, "dropout": 0.0, "keys": ["model.embed_tokens", "self_attn.q_proj"]},
     8, "text", False, 2, 4, 1e-3),
    # A hybrid model, every layer: linear attention (gated delta net) and full attention.
    ("qwen3_5-lora-text", "qwen3_5", "lora", -1, {"rank": 4, "scale": 10.0, "dropout": 0.0},
     7, "text", False, 2, 4, 1e-3),
]


class Recorder(TrainingCallback):
    def __init__(self):
        self.losses = []

    def on_train_loss_report(self, info):
        self.losses.append(info["train_loss"])


for (name, model_name, fine_tune_type, num_layers, params, seed, data_name, mask_prompt,
     batch_size, iters, lr) in TRAIN_CASES:
    folder = MODELS / model_name
    weights_recipe.materialize(folder)
    model, _ = load(str(folder))
    np.random.seed(seed)
    mx.random.seed(seed)
    model.freeze()
    linear_to_lora_layers(model, num_layers, params, use_dora=fine_tune_type == "dora")
    config = types.SimpleNamespace(mask_prompt=mask_prompt)
    train_set = CacheDataset(load_local_dataset(DATA / data_name, tokenizer, config)[0])
    out = TRAIN / name
    out.mkdir(parents=True, exist_ok=True)
    args = TrainingArgs(batch_size=batch_size, iters=iters, val_batches=0, steps_per_report=1,
                        steps_per_eval=10**9, steps_per_save=10**9, max_seq_length=2048,
                        adapter_file=str(out / "adapters.safetensors"))
    recorder = Recorder()
    train(model, optim.Adam(learning_rate=lr), train_set, None, args,
          training_callback=recorder)
    (out / "losses.json").write_text(json.dumps({
        "mlx_lm_version": mlx_lm.__version__, "model": model_name,
        "fine_tune_type": fine_tune_type, "num_layers": num_layers, "lora_parameters": params,
        "seed": seed, "data": data_name, "mask_prompt": mask_prompt, "batch_size": batch_size,
        "iters": iters, "learning_rate": lr, "losses": recorder.losses}, indent=1) + "\n")
    print("wrote", out, recorder.losses)
