"""What mlx_lm 0.32.2 needs to run on MLX 0.32.2, imported by every script that runs it.

mlx_lm 0.32.2's `QuantizedSwitchLinear` passes `global_scale=` (an nvfp4 per-expert scale,
None in affine mode) to `mx.gather_qmm`, which MLX 0.32.2 does not take: every quantized
mixture-of-experts model fails there with a TypeError. With the keyword dropped when it is
None, the call is the op mlx_lm means (its quantized switch layers compute exactly that).
"""
import mlx.core as mx

_gather_qmm = mx.gather_qmm


def gather_qmm_without_global_scale(*args, global_scale=None, **kwargs):
    assert global_scale is None, "a global scale needs a newer MLX"
    return _gather_qmm(*args, **kwargs)


mx.gather_qmm = gather_qmm_without_global_scale
