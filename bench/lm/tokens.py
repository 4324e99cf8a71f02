"""What `suite.py` and `mlx_lm_bench.py` both need to compare greedy token sequences."""


def common_prefix(a, b):
    """The tokens every sequence of `b` shares with the same one of `a` from the start."""
    return min(next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
               for x, y in zip(a, b))
