#!/usr/bin/env python3
"""mlx_lm.lora with a YAML config: mlx_lm 0.32.2's own `lora.main` option merge (`-c`
file, then `CONFIG_DEFAULTS`) and its own `train_model` (`build_schedule`, the optimizer of
`optimizer` + `optimizer_config`, `grad_accumulation_steps`, `grad_checkpoint`, its
compiled step) on golden models (tests/data/lm-models) and the datasets of tests/data/lora.

For each case writes `tests/data/lora/config/<case>/`: `config.yaml` (the file mlx_lm read;
`model` and `data` name a golden model and a dataset of tests/data/lora, resolved here to
their directories), `losses.json` (each step's loss and the learning rate after it, reported
every step; the validation losses with their iterations; the test loss and perplexity of the
trained model over the test split, as `lora.run` computes them after training: every batch
order drawn from NumPy's global state, seeded once), and
`adapters.safetensors` (what the trainer saves at the end).

Run: /work/main/.venv/bin/python scripts/golden/lora_config.py
"""
import json
import math
import pathlib
import sys
import types

HERE = pathlib.Path(__file__).resolve().parent
# The golden scripts' own modules (random.py...) must not shadow the standard library's.
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]

import mlx.core as mx  # noqa: E402
import mlx_lm  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402
from mlx_lm import lora  # noqa: E402
from mlx_lm.tuner.callbacks import TrainingCallback  # noqa: E402
from mlx_lm.tuner.datasets import CacheDataset, load_local_dataset  # noqa: E402
from mlx_lm.tuner.trainer import evaluate  # noqa: E402
from mlx_lm.utils import load, load_tokenizer  # noqa: E402

sys.path.append(str(HERE))  # after the standard library, which must not be shadowed
import weights_recipe  # noqa: E402

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "lora"
MODELS = ROOT / "tests" / "data" / "lm-models"
OUT = DATA / "config"

CASES = {
    # AdamW with its own betas and weight decay, cosine decay after a linear warm-up.
    "qwen3-adamw-cosine-warmup": """\
model: qwen3
data: text
train: true
steps_per_report: 1
steps_per_eval: 2
val_batches: 2
seed: 5
num_layers: 2
batch_size: 2
iters: 6
optimizer: adamw
optimizer_config:
  adamw:
    betas: [0.9, 0.98]
    weight_decay: 0.05
lr_schedule:
  name: cosine_decay
  arguments: [1e-3, 4, 1e-5]
  warmup: 2
  warmup_init: 1e-5
lora_parameters: {rank: 4, scale: 10.0, dropout: 0.0}
""",
    # SGD with momentum, a linear schedule, gradients accumulated over 2 batches.
    "qwen3-sgd-linear-accum2": """\
model: qwen3
data: completions
mask_prompt: true
train: true
steps_per_report: 1
seed: 3
num_layers: -1
batch_size: 2
iters: 6
optimizer: sgd
optimizer_config:
  sgd: {momentum: 0.9, nesterov: true}
lr_schedule:
  name: linear_schedule
  arguments: [0.05, 0.01, 5]
grad_accumulation_steps: 2
lora_parameters: {rank: 8, scale: 20.0, dropout: 0.0}
""",
    # Adafactor with its defaults (relative step size: the learning rate is not read).
    "llama3-adafactor": """\
model: llama3
data: text
train: true
steps_per_report: 1
seed: 1
num_layers: 1
batch_size: 2
iters: 4
optimizer: adafactor
learning_rate: 1e-3
lora_parameters: {rank: 4, scale: 5.0, dropout: 0.0,
                  keys: [self_attn.q_proj, self_attn.v_proj, mlp.down_proj]}
""",
    # Muon (momentum, Newton-Schulz orthogonalized updates), step decay.
    "qwen3-muon-step-decay": """\
model: qwen3
data: chat
train: true
steps_per_report: 1
seed: 9
num_layers: 2
batch_size: 2
iters: 5
optimizer: muon
optimizer_config:
  muon: {momentum: 0.9, ns_steps: 4}
lr_schedule:
  name: step_decay
  arguments: [2e-2, 0.5, 2]
lora_parameters: {rank: 4, scale: 10.0, dropout: 0.0}
""",
    # QLoRA with every layer checkpointed and 3 batches a step (the 4-bit base frozen
    # inside the checkpointed call, as Python's grad_checkpoint passes only the trainable
    # parameters).
    "qwen3-4bit-checkpoint-accum3": """\
model: qwen3-4bit
data: text
train: true
steps_per_report: 1
seed: 2
num_layers: -1
batch_size: 2
iters: 6
learning_rate: 1e-3
grad_checkpoint: true
grad_accumulation_steps: 3
lora_parameters: {rank: 8, scale: 20.0, dropout: 0.0}
""",
    # DoRA, exponential decay, gradient checkpointing, Adam with bias correction.
    "llama3-dora-checkpoint-exp": """\
model: llama3
data: completions
train: true
steps_per_report: 1
seed: 4
fine_tune_type: dora
num_layers: 2
batch_size: 2
iters: 5
optimizer_config:
  adam: {bias_correction: true}
lr_schedule:
  name: exponential_decay
  arguments: [1e-3, 0.9]
grad_checkpoint: true
lora_parameters: {rank: 4, scale: 10.0, dropout: 0.0}
""",
}


class Recorder(TrainingCallback):
    def __init__(self):
        self.losses, self.learning_rates, self.val_losses = [], [], []

    def on_train_loss_report(self, info):
        self.losses.append(info["train_loss"])
        self.learning_rates.append(info["learning_rate"])

    def on_val_loss_report(self, info):
        self.val_losses.append([info["iteration"], info["val_loss"]])


mx.set_default_device(mx.cpu)
tokenizer = load_tokenizer(DATA / "tokenizer")
# grad_checkpoint patches the layer classes' __call__ for good (Python's trainer does so
# once per process): keep the originals to undo it between cases.
originals = {}

for name, text in CASES.items():
    out = OUT / name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(text)
    # lora.main: flags (none here but -c), the file's keys where no flag is set, defaults.
    args = vars(lora.build_parser().parse_args(["-c", str(out / "config.yaml")]))
    with open(out / "config.yaml") as f:
        config = yaml.load(f, lora.yaml_loader)
    for k, v in config.items():
        if args.get(k, None) is None:
            args[k] = v
    for k, v in lora.CONFIG_DEFAULTS.items():
        if args.get(k, None) is None:
            args[k] = v
    args = types.SimpleNamespace(**args)
    model_name, data_name = args.model, args.data
    folder = MODELS / model_name
    weights_recipe.materialize(folder)
    args.model, args.data = str(folder), str(DATA / data_name)
    args.adapter_path = str(out / "run")
    np.random.seed(args.seed)  # lora.run
    model, _ = load(str(folder))
    for cls in {type(l) for l in model.layers}:
        originals.setdefault(cls, cls.__call__)
        cls.__call__ = originals[cls]
    train_set, valid_set, test_set = load_local_dataset(pathlib.Path(args.data), tokenizer, args)
    recorder = Recorder()
    # Validation and the test batches draw from NumPy's global state, which the training
    # order draws from too: lora.run seeds it once.
    lora.train_model(args, model, train_set, valid_set, recorder)
    test_loss = evaluate(model, CacheDataset(test_set), args.batch_size, args.test_batches,
                         args.max_seq_length)
    run = pathlib.Path(args.adapter_path)
    (run / "adapters.safetensors").replace(out / "adapters.safetensors")
    for f in run.iterdir():
        f.unlink()
    run.rmdir()
    (out / "losses.json").write_text(json.dumps({
        "mlx_lm_version": mlx_lm.__version__, "model": model_name, "data": data_name,
        "losses": recorder.losses, "learning_rates": recorder.learning_rates,
        "val_losses": recorder.val_losses,
        "test_loss": test_loss, "test_ppl": math.exp(test_loss)}, indent=1) + "\n")
    print("wrote", out, recorder.losses, recorder.learning_rates, test_loss)
