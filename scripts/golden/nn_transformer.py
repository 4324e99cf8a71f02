#!/usr/bin/env python3
"""Golden data for mlx-nn's transformer layers (`mlx.nn.layers.transformer`) computed by Python
MLX 0.32.2: encoder and decoder layers and stacks (pre- and post-norm, with and without masks,
float32 and float16, dropout in eval mode, gradient checkpointing), the full `nn.Transformer`,
and 20 AdamW steps of a small `nn.TransformerEncoder` language model.

Writes tests/data/nn_transformer.json and, for the language model's weights,
tests/data/nn_transformer_lm.safetensors (initial) and nn_transformer_lm_final.safetensors
(after the 20 steps); read by tests/nn_transformer.rs. Run via scripts/gen-golden.

Every case stores its inputs, the module's parameters under Python's parameter paths
(`tree_flatten(module.parameters())`), and the outputs, so the Rust side loads the same
weights by name and must produce the same numbers.
"""

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map

from common import DATA, record, write

mx.random.seed(7)


def params(module):
    return {path: record(a) for path, a in tree_flatten(module.parameters())}


def perturbed(module):
    """Moves every parameter off its initial value (LayerNorms start at ones and zeros, which
    would hide a swapped weight), so each parameter's name matters."""
    module.update(tree_map(lambda p: p + 0.2 * mx.random.normal(p.shape, dtype=p.dtype),
                           module.parameters()))
    return module


def rand(*shape):
    return mx.random.normal(shape)


causal5 = nn.MultiHeadAttention.create_additive_causal_mask(5)
# A padding mask for cross-attention: queries may not see the last two of 7 memory rows.
memory_mask = mx.where(mx.arange(7) < 5, 0.0, -1e9)[None, :].astype(mx.float32)

cases = {}


def case(name, module, config, inputs, output, masks):
    """`masks`: the mask arguments by name, each None, "causal5" or "memory" (which array)."""
    cases[name] = {
        "config": config,
        "params": params(module),
        "inputs": [record(x) for x in inputs],
        "masks": masks,
        "output": record(output),
    }


MASKS = {None: None, "causal5": causal5, "memory": memory_mask}

x = rand(2, 5, 8)
memory = rand(2, 7, 8)

# ---- encoder layers ----
for name, cfg, mask in [
    ("encoder_layer_norm_first", {"norm_first": True}, "causal5"),
    ("encoder_layer_post_norm", {"norm_first": False}, "causal5"),
    ("encoder_layer_no_mask_gelu", {"norm_first": False, "mlp_dims": 12,
                                    "activation": "gelu"}, None),
]:
    kw = dict(cfg)
    if "activation" in kw:
        kw["activation"] = getattr(nn, kw["activation"])
    m = perturbed(nn.TransformerEncoderLayer(8, 2, **kw))
    case(name, m, {"dims": 8, "num_heads": 2, **cfg}, [x], m(x, MASKS[mask]), {"mask": mask})

# ---- encoder stacks ----
for name, cfg, mask in [
    ("encoder_norm_first", {"norm_first": True}, "causal5"),
    ("encoder_post_norm", {"norm_first": False}, "causal5"),
    ("encoder_no_mask", {"norm_first": True, "mlp_dims": 16}, None),
]:
    m = perturbed(nn.TransformerEncoder(2, 8, 2, **cfg))
    case(name, m, {"num_layers": 2, "dims": 8, "num_heads": 2, **cfg}, [x],
         m(x, MASKS[mask]), {"mask": mask})

# Dropout in eval mode is the identity, as is a checkpointed layer's forward.
m = perturbed(nn.TransformerEncoder(2, 8, 2, dropout=0.3))
m.eval()
case("encoder_dropout_eval", m, {"num_layers": 2, "dims": 8, "num_heads": 2, "dropout": 0.3,
                                 "eval": True}, [x], m(x, causal5), {"mask": "causal5"})

# ---- decoder layers and stacks ----
for name, cfg, masks in [
    ("decoder_layer_norm_first", {"norm_first": True},
     {"x_mask": "causal5", "memory_mask": None}),
    ("decoder_layer_post_norm", {"norm_first": False},
     {"x_mask": "causal5", "memory_mask": "memory"}),
]:
    m = perturbed(nn.TransformerDecoderLayer(8, 2, **cfg))
    out = m(x, memory, MASKS[masks["x_mask"]], MASKS[masks["memory_mask"]])
    case(name, m, {"dims": 8, "num_heads": 2, **cfg}, [x, memory], out, masks)

for name, cfg, masks in [
    ("decoder_norm_first", {"norm_first": True},
     {"x_mask": "causal5", "memory_mask": "memory"}),
    ("decoder_post_norm", {"norm_first": False},
     {"x_mask": "causal5", "memory_mask": None}),
]:
    m = perturbed(nn.TransformerDecoder(2, 8, 2, **cfg))
    out = m(x, memory, MASKS[masks["x_mask"]], MASKS[masks["memory_mask"]])
    case(name, m, {"num_layers": 2, "dims": 8, "num_heads": 2, **cfg}, [x, memory], out, masks)

# ---- the full model ----
for name, cfg in [
    ("transformer_norm_first", {"norm_first": True}),
    ("transformer_post_norm", {"norm_first": False, "mlp_dims": 12}),
]:
    m = perturbed(nn.Transformer(8, 2, 2, 1, **cfg))
    masks = {"src_mask": None, "tgt_mask": "causal5", "memory_mask": "memory"}
    # src has 7 rows so that the memory mask (over the 7 encoder outputs) applies.
    out = m(memory, x, None, causal5, memory_mask)
    case(name, m, {"dims": 8, "num_heads": 2, "num_encoder_layers": 2,
                   "num_decoder_layers": 1, **cfg}, [memory, x], out, masks)

# ---- float16 ----
m = perturbed(nn.TransformerEncoder(2, 8, 2))
m.set_dtype(mx.float16)
x16 = x.astype(mx.float16)
causal16 = nn.MultiHeadAttention.create_additive_causal_mask(5, mx.float16)
cases["encoder_float16"] = {
    "config": {"num_layers": 2, "dims": 8, "num_heads": 2},
    "params": params(m),
    "inputs": [record(x16)],
    "masks": {"mask": "causal5_f16"},
    "output": record(m(x16, causal16)),
}

# ---- gradient checkpointing: same values and gradients ----
m = perturbed(nn.TransformerEncoder(2, 8, 2, checkpoint=True))


def sum_loss(model, x):
    return (model(x, causal5) ** 2).sum()


loss, grads = nn.value_and_grad(m, sum_loss)(m, x)
cases["encoder_checkpoint"] = {
    "config": {"num_layers": 2, "dims": 8, "num_heads": 2, "checkpoint": True},
    "params": params(m),
    "inputs": [record(x)],
    "masks": {"mask": "causal5"},
    "output": record(m(x, causal5)),
    "loss": record(loss),
    "grads": {p: record(g) for p, g in tree_flatten(grads)},
}

# ---- a small language model trained with AdamW ----
VOCAB, DIMS, HEADS, LAYERS, SEQ, BATCH, STEPS = 48, 32, 4, 2, 12, 4, 20


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, DIMS)
        self.encoder = nn.TransformerEncoder(LAYERS, DIMS, HEADS)
        self.out = nn.Linear(DIMS, VOCAB)

    def __call__(self, tokens):
        mask = nn.MultiHeadAttention.create_additive_causal_mask(tokens.shape[1])
        return self.out(self.encoder(self.embedding(tokens), mask))


def lm_loss(model, tokens):
    logits = model(tokens[:, :-1])
    return nn.losses.cross_entropy(logits, tokens[:, 1:], reduction="mean")


lm = LM()
mx.eval(lm.parameters())
mx.save_safetensors(str(DATA / "nn_transformer_lm.safetensors"),
                    dict(tree_flatten(lm.parameters())))
batches = mx.random.randint(0, VOCAB, (STEPS, BATCH, SEQ + 1)).astype(mx.int32)
opt = optim.AdamW(learning_rate=1e-3)
vg = nn.value_and_grad(lm, lm_loss)
losses = []
for step in range(STEPS):
    loss, grads = vg(lm, batches[step])
    opt.update(lm, grads)
    mx.eval(lm.parameters(), opt.state)
    losses.append(loss.item())
mx.save_safetensors(str(DATA / "nn_transformer_lm_final.safetensors"),
                    dict(tree_flatten(lm.parameters())))

write("nn_transformer", {
    "masks": {"causal5": record(causal5), "causal5_f16": record(causal16),
              "memory": record(memory_mask)},
    "cases": cases,
    "lm": {
        "config": {"vocab": VOCAB, "dims": DIMS, "num_heads": HEADS, "num_layers": LAYERS,
                   "learning_rate": 1e-3},
        "batches": record(batches),
        "losses": losses,
    },
})
