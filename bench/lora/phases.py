#!/usr/bin/env python3
"""MLX's peak memory per phase of mlx_lm 0.32.2's LoRA training step: the Python half of
examples/lora_phases.rs, the same phases on the same model, data and seeds.

    python bench/lora/phases.py MODEL DATA CHECKPOINT MODE

LoRA (rank 8, scale 20) on the last 4 layers, Adam at 1e-4, batches of 4 from
DATA/train.jsonl, four steps. CHECKPOINT: 0 or 1 (mlx_lm's `grad_checkpoint`). MODE:
`compiled` (a copy of `trainer.train`'s compiled step, evaluated as it does:
`mx.eval(state, loss, ntoks)`), `eager` (the loss alone, then `value_and_grad`, then the
optimizer's update, each evaluated), `cparts` (the compiled loss, then a compiled
`value_and_grad` without update), `fwd` (the model's logits, the loss, the cross entropy of
the logits), `dot` (writes the graphs of the compiled loss and `value_and_grad` of the first
batch, as MLX replays them after fusing, to `py-compiled-{loss,vg}-CHECKPOINT.dot`). Each
line: the phase, the bytes held by live arrays after it and the peak during it (MB; the
peak is reset after each line). The venv's mlx_lm is not changed.
"""
import pathlib
import sys
import types
from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np
from mlx.utils import tree_flatten
from mlx_lm.tuner.datasets import CacheDataset, load_local_dataset
from mlx_lm.tuner.trainer import default_loss, grad_checkpoint, iterate_batches
from mlx_lm.tuner.utils import linear_to_lora_layers
from mlx_lm.utils import load

MB = 1e6


def mark(name):
    mx.synchronize()
    print(f"{name:28s} active {mx.get_active_memory() / MB:8.3f}  "
          f"peak {mx.get_peak_memory() / MB:8.3f}", flush=True)
    mx.reset_peak_memory()


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    model_dir, data_dir, ckpt, mode = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
    model, tokenizer = load(model_dir)
    mx.random.seed(0)
    model.freeze()
    linear_to_lora_layers(model, 4, {"rank": 8, "scale": 20.0, "dropout": 0.0})
    args = types.SimpleNamespace(train=True, test=False, mask_prompt=False)
    train, _, _ = load_local_dataset(pathlib.Path(data_dir), tokenizer, args)
    train = CacheDataset(train)
    if ckpt:
        grad_checkpoint(model.layers[0])
    opt = optim.Adam(learning_rate=1e-4)
    model.train()
    lvg = nn.value_and_grad(model, default_loss)
    state = [model.state, opt.state, mx.random.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(batch):
        (lvalue, toks), grad = lvg(model, *batch)
        opt.update(model, grad)
        return lvalue, toks

    @partial(mx.compile, inputs=state, outputs=state)
    def cfwd(batch):
        return default_loss(model, *batch)

    @partial(mx.compile, inputs=state, outputs=state)
    def cvg(batch):
        (lvalue, toks), grad = lvg(model, *batch)
        return lvalue, toks, grad

    np.random.seed(0)
    batches = iterate_batches(train, 4, 2048, loop=True)
    mark("start")
    for it in range(4):
        b = next(batches)
        mx.eval(b)
        mark(f"[{it}] batch")
        if mode == "compiled":
            lvalue, toks = step(b)
            mx.eval(state, lvalue, toks)
            mark(f"[{it}] compiled step")
            print(f"loss {lvalue.item():.6f}")
        elif mode == "eager":
            lvalue, toks = default_loss(model, *b)
            mx.eval(lvalue, toks)
            mark(f"[{it}] forward only")
            (lvalue, toks), grad = lvg(model, *b)
            mx.eval(lvalue, toks, grad)
            mark(f"[{it}] value_and_grad")
            opt.update(model, grad)
            del grad
            mx.eval(model.parameters(), opt.state)
            mark(f"[{it}] update")
            print(f"loss {lvalue.item():.6f}")
        elif mode == "dot":
            mx.eval(state)
            out = cfwd(b)
            with open(f"py-compiled-loss-{int(ckpt)}.dot", "w") as f:
                mx.export_to_dot(f, *out)
            lvalue, toks, grad = cvg(b)
            with open(f"py-compiled-vg-{int(ckpt)}.dot", "w") as f:
                mx.export_to_dot(f, lvalue, toks, *[g for _, g in tree_flatten(grad)])
            return
        elif mode == "cparts":
            out = cfwd(b)
            mx.eval(out)
            mark(f"[{it}] compiled forward")
            out = cvg(b)
            mx.eval(out)
            del out
            mark(f"[{it}] compiled value_and_grad")
        elif mode == "fwd":
            logits = model(b[0][:, :-1])
            mx.eval(logits)
            mark(f"[{it}] logits")
            out = default_loss(model, *b)
            mx.eval(out)
            mark(f"[{it}] loss")
            ce = nn.losses.cross_entropy(logits, b[0][:, 1:])
            mx.eval(ce)
            mark(f"[{it}] ce of logits")
            del logits, out, ce
        else:
            sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
