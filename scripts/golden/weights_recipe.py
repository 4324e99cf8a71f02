"""Golden model weights as recipes: the large tensors of a test model, regenerated from seeds.

A random-weight model's large tensors are noise that no compression shrinks, and every
architecture adds a few of them: committed as they are, they made the repository too large to
travel to a GPU machine. So a test model directory commits, instead of `model.safetensors`:

* `weights-recipe.json`: for each large tensor (floating, at least `LARGE` elements; or a
  quantized weight whose float source is that large) its name, dtype, shape and how to make
  it: `normal(key(seed)) * scale + loc` in float32 on the CPU, cast to its dtype, and, for a
  quantized one, `mx.quantize(..., group_size, bits, mode)` of that; `loc` and `scale` are the
  mean and standard deviation of the tensor mlx_lm's classes had made, so each keeps its
  magnitude. Plus the file's metadata and a SHA-256 over every tensor.
* `weights-inline.safetensors`: the small tensors (norms, biases, `A_log`, convolutions...)
  exactly as mlx_lm wrote them, since their values (ones, ranges, structure) matter.

`materialize(folder)` writes `model.safetensors` from the two (git ignores it); the Rust
tests do the same (tests/support-crates/golden-models), with the same MLX ops on the CPU, and
check the digest, so Python and Rust read the same bytes. Golden data is computed by loading
the materialized folder, never from the model in memory.
"""
import hashlib
import json
import zlib

import mlx.core as mx
import numpy as np

RECIPE = "weights-recipe.json"
INLINE = "weights-inline.safetensors"
WEIGHTS = "model.safetensors"
LARGE = 4096
FORMAT = "mlx golden weights recipe 1"


def _dtype_name(dtype):
    return str(dtype).removeprefix("mlx.core.")


def _dtype(name):
    return getattr(mx, name)


def _f32(x):
    """A Python float rounded to float32, so that JSON carries it exactly."""
    return float(np.float32(x))


def _bytes(x):
    return bytes(memoryview(np.array(x.reshape(-1).view(mx.uint8))))


def digest(tensors):
    """SHA-256 over the tensors in name order: name, dtype, shape, little-endian bytes."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        x = tensors[name]
        h.update(name.encode() + b"\0" + _dtype_name(x.dtype).encode() + b"\0")
        h.update(json.dumps(list(x.shape), separators=(",", ":")).encode() + b"\0")
        h.update(_bytes(x))
    return h.hexdigest()


def _normal(spec, shape):
    x = mx.random.normal(shape, key=mx.random.key(spec["seed"]))
    return x * mx.array(spec["scale"], mx.float32) + mx.array(spec["loc"], mx.float32)


def _make(entry):
    """The tensors one recipe entry makes, by name."""
    spec = entry["normal"]
    if "quantized" not in entry:
        return {entry["name"]: _normal(spec, entry["shape"]).astype(_dtype(entry["dtype"]))}
    q = entry["quantized"]
    source = _normal(spec, entry["shape"]).astype(_dtype(entry["dtype"]))
    parts = mx.quantize(source, group_size=q["group_size"], bits=q["bits"], mode=q["mode"])
    names = ("weight", "scales", "biases")
    return {f"{entry['name']}.{n}": p for n, p in zip(names, parts)}


def build(recipe, inline):
    """Every tensor of the model: the inline ones and those the recipe makes."""
    out = dict(inline)
    with mx.stream(mx.cpu):
        for entry in recipe["tensors"]:
            made = _make(entry)
            mx.eval(made)
            out.update(made)
    return out


def materialize(folder):
    """Writes `folder/model.safetensors` from its recipe, unless it holds those tensors
    already. A folder without a recipe (a transformers-saved model) is left as it is."""
    if not (folder / RECIPE).exists():
        return
    recipe = json.loads((folder / RECIPE).read_text())
    assert recipe["format"] == FORMAT, f"{folder / RECIPE}: unknown format {recipe['format']}"
    if (folder / WEIGHTS).exists() and digest(mx.load(str(folder / WEIGHTS))) == recipe["sha256"]:
        return
    tensors = build(recipe, mx.load(str(folder / INLINE)))
    assert digest(tensors) == recipe["sha256"], f"{folder}: the recipe makes other tensors"
    mx.save_safetensors(str(folder / WEIGHTS), tensors, metadata=recipe["metadata"])


def materialize_all(root):
    """`materialize` for every model folder under `root`."""
    for folder in sorted(root.iterdir()):
        if folder.is_dir():
            materialize(folder)


# `nn.quantize`'s defaults per mode (mlx.nn.layers.quantized._defaults_for_mode).
MODE_DEFAULTS = {"affine": (64, 4), "mxfp4": (32, 4), "nvfp4": (16, 4), "mxfp8": (32, 8)}


def _quantization(config, prefix):
    q = config["quantization"]
    own = q.get(prefix)
    if not isinstance(own, dict):
        return {"group_size": q["group_size"], "bits": q["bits"],
                "mode": q.get("mode", "affine")}
    # A layer's own entry went to `to_quantized(**entry)` as it is: without a mode it is
    # affine, whatever the model's mode, and the mode's defaults fill what it leaves out.
    mode = own.get("mode", "affine")
    group_size, bits = MODE_DEFAULTS[mode]
    return {"group_size": own.get("group_size", group_size), "bits": own.get("bits", bits),
            "mode": mode}


def write(folder, like=None):
    """Replaces the large tensors of `folder/model.safetensors` (as mlx_lm wrote it) by
    regenerated ones of the same mean and spread, and writes the recipe, the inline tensors
    and the new `model.safetensors`.

    `like`: the folder of the float model a quantized one was made from. Its recipe's tensors
    are the float sources here too, so the quantized model stays that model quantized (a
    test quantizes the float one as it loads and compares)."""
    weights, metadata = mx.load(str(folder / WEIGHTS), return_metadata=True)
    config = json.loads((folder / "config.json").read_text())
    source = {}
    if like is not None:
        source = {e["name"]: e for e in json.loads((like / RECIPE).read_text())["tensors"]}
    entries, inline, quantized = [], {}, set()
    for name in sorted(weights):
        if not name.endswith(".scales") or "quantization" not in config:
            continue
        prefix = name.removesuffix(".scales")
        q = _quantization(config, prefix)
        parts = [weights[f"{prefix}.weight"], weights[name], weights.get(f"{prefix}.biases")]
        dequantized = mx.dequantize(*parts, group_size=q["group_size"], bits=q["bits"],
                                    mode=q["mode"])
        if dequantized.size < LARGE:
            continue
        quantized.update({f"{prefix}.weight", name, f"{prefix}.biases"})
        float_entry = source.get(f"{prefix}.weight")
        if float_entry is not None:
            float_entry = dict(float_entry, name=prefix, quantized=q)
        entries.append(float_entry or {
            "name": prefix, "dtype": _dtype_name(weights[name].dtype),
            "shape": list(dequantized.shape), "quantized": q,
            "normal": _spread(folder, prefix, dequantized)})
    for name in sorted(weights):
        x = weights[name]
        if name in quantized:
            continue
        if mx.issubdtype(x.dtype, mx.floating) and x.size >= LARGE:
            entries.append(source.get(name) or {
                "name": name, "dtype": _dtype_name(x.dtype), "shape": list(x.shape),
                "normal": _spread(folder, name, x)})
        else:
            inline[name] = x
    recipe = {"format": FORMAT, "metadata": metadata, "tensors": entries}
    tensors = build(recipe, inline)
    recipe["sha256"] = digest(tensors)
    mx.save_safetensors(str(folder / INLINE), inline)
    (folder / RECIPE).write_text(json.dumps(recipe, indent=1) + "\n")
    mx.save_safetensors(str(folder / WEIGHTS), tensors, metadata=metadata)


def _spread(folder, name, x):
    x = x.astype(mx.float32)
    # The seed names the model and the tensor, so a model's weights do not change when
    # another model is added.
    return {"seed": zlib.crc32(f"{folder.name}/{name}".encode()),
            "loc": _f32(mx.mean(x).item()), "scale": _f32(mx.sqrt(mx.var(x)).item())}
