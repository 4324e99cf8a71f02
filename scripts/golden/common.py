"""Shared helpers for the golden-data generators in this folder.

Each generator `scripts/golden/<area>.py` computes cases with Python MLX 0.32.2 and writes
`tests/data/<area>.json` through `write()`. Run all of them with `scripts/gen-golden`.

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
DATA = ROOT / "tests" / "data"


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
