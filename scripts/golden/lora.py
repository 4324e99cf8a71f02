#!/usr/bin/env python3
"""Fine-tuning data reference for mlx-lm's tuner: mlx_lm 0.32.2's own `load_local_dataset`,
`CacheDataset` and `iterate_batches` on the fixtures in `tests/data/lora` (text,
prompt/completion and chat records, with tools, with and without `mask_prompt`), and NumPy's
`np.random.permutation` after `np.random.seed`, which orders mlx_lm's batches.

Writes `tests/data/lora/golden.json`: per dataset, each split's tokenized examples
(tokens, offset) and the batches of two epochs (`loop=True`) for a seed, a batch size and a
`max_seq_length` (one that truncates), over the `CacheDataset` and over a plain list; and permutations for several seeds and sizes.

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
