#!/usr/bin/env python3
"""Golden data for module access and model quantization: what Python's `children`,
`named_modules`, `modules`, `leaf_modules`, `filter_and_map`, `apply` and `nn.quantize` give
for one model whose Rust twin is in tests/nn_modules.rs (same fields, same order), and
`nn.QQLinear` in training and evaluation mode.

The model's weights are seeded; its Rust twin loads them from nn_modules.safetensors, so
values after `apply` and `nn.quantize` compare exactly. `QQLinear`'s matmul (`mx.qqmm`) runs
on CUDA GPUs only: on the CPU the record holds MLX's error instead of outputs.

Writes tests/data/[cuda/]nn_modules.json and .safetensors (read by tests/nn_modules.rs). Run
via scripts/gen-golden.
"""

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

from common import DATA, record, write


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.RMSNorm(32)
        self.proj = [nn.Linear(32, 32), nn.Linear(32, 32, bias=False)]
        self.extra = {"a": nn.Linear(32, 64)}
        self.w = mx.ones((2,))
        self.arrs = [mx.ones((1,))]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(64, 32)
        self.blocks = [Block(), Block()]
        self.head = nn.Linear(32, 64)


def names(pairs):
    return [k for k, _ in pairs]


def flat_modules(tree):
    return [[k, type(m).__name__] for k, m in tree_flatten(tree, is_leaf=nn.Module.is_module)]


mx.random.seed(11)
model = Model()
mx.eval(model.parameters())
DATA.mkdir(parents=True, exist_ok=True)
model.save_weights(str(DATA / "nn_modules.safetensors"))

structure = {
    "named_modules": [[k, type(m).__name__] for k, m in model.named_modules()],
    "modules": [type(m).__name__ for m in model.modules()],
    "children": flat_modules(model.children()),
    "leaf_modules": flat_modules(model.leaf_modules()),
    "block_children": flat_modules(model.blocks[0].children()),
}

# model.apply(fn, filter): float16 weights of Linear layers only. Python's filter sees each
# module's attributes on the way down, so it must let modules and lists through.
def linear_weights(module, key, value):
    if isinstance(value, nn.Module) or key in ("blocks", "proj", "extra"):
        return True
    return isinstance(module, nn.Linear) and key == "weight"


applied = Model()
applied.update(model.parameters())
applied.apply(lambda x: x.astype(mx.float16), linear_weights)
applied_dtypes = {k: str(v.dtype).removeprefix("mlx.core.") for k, v in tree_flatten(applied.parameters())}

# nn.quantize: every Linear and Embedding, then only the blocks' Linear layers.
quantized = {}
for name, predicate in [
    ("all", None),
    ("blocks", lambda path, m: isinstance(m, nn.Linear) and path.startswith("blocks.")),
]:
    q = Model()
    q.update(model.parameters())
    nn.quantize(q, group_size=32, bits=4, class_predicate=predicate)
    x = mx.array([[1, 5, 63, 0]])
    h = q.embed(x)
    y = q.head(h)
    quantized[name] = {
        "parameters": {k: record(v) for k, v in tree_flatten(q.parameters())},
        "modules": [[k, type(m).__name__] for k, m in q.named_modules()],
        "head_of_embed": record(y),
    }

# QQLinear, seeded, in both modes.
mx.random.seed(3)
x = mx.random.normal((4, 64))
qq = {}
for mode in ["nvfp4", "mxfp8"]:
    mx.random.seed(5)
    layer = nn.QQLinear(64, 32, mode=mode)
    case = {"weight": record(layer.weight), "x": record(x)}
    for training in [True, False]:
        layer.train(training)
        tag = "train" if training else "eval"
        case[f"{tag}_parameters"] = {k: record(v) for k, v in tree_flatten(layer.parameters())}
        try:
            case[f"{tag}_output"] = record(layer(x))
        except (RuntimeError, ValueError) as e:
            case[f"{tag}_error"] = str(e)
    qq[mode] = case

write("nn_modules", {
    "structure": structure,
    "applied_dtypes": applied_dtypes,
    "quantized": quantized,
    "qq_linear": qq,
})
