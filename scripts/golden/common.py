"""Shared helpers for the golden-data generators in this folder.

Each generator `scripts/golden/<area>.py` computes cases with Python MLX 0.32.2 and writes
`tests/data/<area>.json` through `write()` (`tests/data/cuda/` on a CUDA GPU, everything it
writes included). Run all of them with `scripts/gen-golden` (`scripts/gpu-suite golden` on a
GPU machine).

Record format (read by `tests/support/golden.rs`):
    {"shape": [..], "dtype": "float32", "values": [...flattened row-major...]}
complex64 values are [re, im] pairs; bool values are true/false; float NaN/inf are the
strings "nan", "inf", "-inf".
"""
import json
import math
import pathlib

import mlx.core as mx

assert mx.__version__ == "0.32.2", f"expected MLX 0.32.2, found {mx.__version__}"

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


def device_folder():
    """Where records of the default device go, relative to tests/data: "" for the CPU, "cuda"
    when the default device is a CUDA GPU. GPU kernels round differently from the CPU's
    (matmul and reduction order, quantization, float->int conversion of out-of-range values),
    so each device is compared with Python on that same device; `tests/support/golden.rs`
    picks the folder the same way."""
    if mx.default_device().type == mx.DeviceType.gpu and mx.cuda.is_available():
        return "cuda"
    return ""


DATA = ROOT / "tests" / "data" / device_folder()


def _value(v):
    if isinstance(v, complex):
        return [_value(v.real), _value(v.imag)]
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def record(a):
    """An array as a JSON-able record (evaluates it)."""
    a = mx.array(a) if not isinstance(a, mx.array) else a
    mx.eval(a)
    return {
        "shape": list(a.shape),
        "dtype": str(a.dtype).removeprefix("mlx.core."),
        "values": [_value(v) for v in a.flatten().tolist()],
    }


def write(area, data):
    """Writes tests/data/<area>.json with the MLX version stamped in."""
    DATA.mkdir(parents=True, exist_ok=True)
    out = DATA / f"{area}.json"
    out.write_text(json.dumps({"mlx_version": mx.__version__, **data}, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


def load(path, **kwargs):
    """`mlx_lm.utils.load`, for a model whose config transformers 5.23 rejects: gear's
    `layer_types` name `conv_mixer`, which transformers' `PreTrainedConfig` validation refuses,
    so the tokenizer (which `AutoTokenizer` loads with the model's config) gets a plain config
    instead. mlx_lm 0.32.2's own `load` fails on such a checkpoint."""
    from mlx_lm.utils import load as mlx_lm_load

    config = json.loads((pathlib.Path(path) / "config.json").read_text())
    if config.get("model_type") == "gear":
        import transformers

        kwargs.setdefault("tokenizer_config", {"config": transformers.PreTrainedConfig()})
    return mlx_lm_load(path, **kwargs)
