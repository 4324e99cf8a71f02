#!/usr/bin/env python3
"""Golden data for mlx-tree's value_and_grad and weights IO against Python MLX 0.32.2.

Writes tests/data/tree_grad.json and tests/data/tree_grad_mlp.safetensors (read by
tests/tree_grad_golden.rs): an MLP as nn.Modules, its parameters saved with
`mx.save_safetensors(file, dict(tree_flatten(model.parameters())))`, a batch, and the loss
and gradients `nn.value_and_grad(model, loss_fn)` gives, keyed by
`tree_flatten(model.parameters())` paths.
"""
import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

from common import DATA, record, write


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 8), nn.Linear(8, 8, bias=False), nn.Linear(8, 3)]

    def __call__(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = nn.relu(x)
        return x


def main():
    mx.random.seed(7)
    model = MLP()
    x = mx.random.normal((5, 4))
    y = mx.random.normal((5, 3))

    def loss_fn(model, x, y):
        return nn.losses.mse_loss(model(x), y, reduction="mean")

    loss, grads = nn.value_and_grad(model, loss_fn)(model, x, y)
    params = tree_flatten(model.parameters())
    mx.save_safetensors(str(DATA / "tree_grad_mlp.safetensors"), dict(params))
    write(
        "tree_grad",
        {
            "params": [[p, record(a)] for p, a in params],
            "x": record(x),
            "y": record(y),
            "loss": record(loss),
            "grads": [[p, record(a)] for p, a in tree_flatten(grads)],
        },
    )


if __name__ == "__main__":
    main()
