#!/usr/bin/env python3
"""Golden data for mlx-nn's spatial layers: Conv3d, ConvTranspose1d/2d/3d, MaxPool1d/2d/3d,
AvgPool1d/2d/3d and Upsample (every mode), computed by Python MLX 0.32.2.

Writes tests/data/nn_spatial.json (read by tests/nn_spatial.rs). Run via scripts/gen-golden.

Every case stores the layer's constructor arguments (as Python takes them: an int or a list
per spatial argument), its parameters under Python's parameter paths
(`tree_flatten(module.parameters())`), the input and the output, so the Rust side builds the
same layer, loads the same weights by name and must produce the same numbers.
"""

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

from common import device_folder, record, write

mx.random.seed(42)


def params(module):
    return {path: record(a) for path, a in tree_flatten(module.parameters())}


def rand(shape, dtype=mx.float32):
    return mx.random.normal(shape).astype(dtype)


def jsonable(v):
    return list(v) if isinstance(v, tuple) else v


# ---------------------------------------------------------------------------------------------
# Convolutions

CONV_LAYERS = {
    "Conv3d": nn.Conv3d,
    "ConvTranspose1d": nn.ConvTranspose1d,
    "ConvTranspose2d": nn.ConvTranspose2d,
    "ConvTranspose3d": nn.ConvTranspose3d,
}

convs = {}


def conv_case(name, layer, in_channels, out_channels, kernel_size, input_shape,
              dtype=mx.float32, **kwargs):
    module = CONV_LAYERS[layer](in_channels, out_channels, kernel_size, **kwargs)
    # Non-zero biases, so a missing or misplaced bias add shows.
    if "bias" in module:
        module.bias = rand(module.bias.shape)
    module.set_dtype(dtype)
    x = rand(input_shape, dtype)
    convs[name] = {
        "layer": layer,
        "args": {
            "in_channels": in_channels,
            "out_channels": out_channels,
            "kernel_size": jsonable(kernel_size),
            **{k: jsonable(v) for k, v in kwargs.items()},
        },
        "params": params(module),
        "input": record(x),
        "output": record(module(x)),
    }


conv_case("conv3d", "Conv3d", 3, 4, 3, (2, 5, 6, 7, 3), padding=1)
conv_case("conv3d_tuples", "Conv3d", 2, 3, (2, 3, 1), (1, 6, 7, 5, 2), stride=(2, 1, 2),
          padding=(0, 1, 1), dilation=(1, 2, 1), bias=False)
conv_case("conv3d_negative_padding", "Conv3d", 2, 2, 2, (1, 5, 5, 5, 2), padding=-1)
conv_case("conv3d_f16", "Conv3d", 2, 4, 2, (1, 4, 5, 3, 2), mx.float16, stride=2)
conv_case("conv_transpose1d", "ConvTranspose1d", 4, 3, 3, (2, 7, 4), stride=2, padding=1,
          output_padding=1)
conv_case("conv_transpose1d_dilation", "ConvTranspose1d", 3, 2, 2, (1, 6, 3), dilation=2,
          bias=False)
conv_case("conv_transpose1d_bf16", "ConvTranspose1d", 4, 4, 3, (2, 5, 4), mx.bfloat16,
          stride=3)
conv_case("conv_transpose2d", "ConvTranspose2d", 3, 5, (3, 2), (2, 4, 5, 3), stride=(2, 1),
          padding=(1, 0), dilation=(1, 2), output_padding=(1, 0))
conv_case("conv_transpose2d_f16", "ConvTranspose2d", 2, 3, 3, (1, 5, 4, 2), mx.float16)
conv_case("conv_transpose3d", "ConvTranspose3d", 2, 3, 2, (1, 3, 4, 3, 2), stride=2)
conv_case("conv_transpose3d_tuples", "ConvTranspose3d", 2, 2, (3, 1, 2), (2, 3, 3, 4, 2),
          stride=(1, 2, 1), padding=1, output_padding=(0, 1, 0), bias=False)

# Seeded construction: fan sizes of 784 (28 x 28), where `sqrt(1 / 784)` rounded once from
# f64 (Python's float) and computed in f32 differ in the last bit.
seeded = {}
for name, layer, args in [
    ("conv3d", "Conv3d", (16, 2, (7, 7, 1))),
    ("conv_transpose1d", "ConvTranspose1d", (49, 2, 16)),
    ("conv_transpose2d", "ConvTranspose2d", (16, 2, (7, 7))),
    ("conv_transpose3d", "ConvTranspose3d", (4, 2, (7, 7, 4))),
]:
    mx.random.seed(7)
    seeded[name] = {
        "layer": layer,
        "args": {"in_channels": args[0], "out_channels": args[1],
                 "kernel_size": jsonable(args[2])},
        "params": params(CONV_LAYERS[layer](*args)),
    }
mx.random.seed(43)

# ---------------------------------------------------------------------------------------------
# Pooling

POOL_LAYERS = {
    "MaxPool1d": nn.MaxPool1d,
    "MaxPool2d": nn.MaxPool2d,
    "MaxPool3d": nn.MaxPool3d,
    "AvgPool1d": nn.AvgPool1d,
    "AvgPool2d": nn.AvgPool2d,
    "AvgPool3d": nn.AvgPool3d,
}

pools = {}


def pool_case(name, layer, kernel_size, input_shape, dtype=mx.float32, **kwargs):
    module = POOL_LAYERS[layer](kernel_size, **kwargs)
    if dtype == mx.int32:
        x = mx.random.randint(-50, 50, input_shape)
    else:
        x = rand(input_shape, dtype)
    pools[name] = {
        "layer": layer,
        "args": {
            "kernel_size": jsonable(kernel_size),
            **{k: jsonable(v) for k, v in kwargs.items()},
        },
        "input": record(x),
        "output": record(module(x)),
    }


# Windows that tile the input (reshape + transpose in Python) and ones that do not
# (as_strided): both paths, since they reduce in different memory orders.
pool_case("max1d_tiling", "MaxPool1d", 2, (2, 8, 3))
pool_case("max1d_strided_padded", "MaxPool1d", 3, (2, 9, 3), stride=2, padding=1)
pool_case("max1d_remainder", "MaxPool1d", 2, (1, 7, 2))
pool_case("max1d_empty", "MaxPool1d", 3, (1, 2, 2), stride=2)
pool_case("avg1d_overlap_padded", "AvgPool1d", 3, (2, 8, 3), stride=1, padding=1)
pool_case("avg1d_bf16", "AvgPool1d", (4,), (2, 12, 3), mx.bfloat16, stride=(2,))
pool_case("max2d_tiling", "MaxPool2d", 2, (2, 6, 8, 3))
pool_case("max2d_tuples", "MaxPool2d", (3, 2), (2, 7, 6, 3), stride=(2, 1), padding=(1, 0))
pool_case("max2d_f16", "MaxPool2d", 3, (1, 9, 9, 4), mx.float16, stride=2, padding=1)
pool_case("avg2d_padded", "AvgPool2d", 3, (2, 8, 7, 3), stride=2, padding=1)
pool_case("avg2d_tiling_f16", "AvgPool2d", 2, (2, 6, 6, 5), mx.float16)
pool_case("avg2d_bf16", "AvgPool2d", (2, 3), (1, 7, 8, 2), mx.bfloat16, stride=(1, 2),
          padding=(1, 1))
pool_case("avg2d_int32", "AvgPool2d", 2, (1, 5, 6, 2), mx.int32, padding=1)
pool_case("max3d_tiling", "MaxPool3d", 2, (1, 4, 4, 6, 2))
pool_case("max3d_bf16", "MaxPool3d", (2, 3, 2), (1, 5, 6, 4, 3), mx.bfloat16, stride=1,
          padding=(1, 1, 0))
pool_case("avg3d_strided", "AvgPool3d", 2, (2, 5, 6, 6, 2), stride=(1, 2, 2))
pool_case("avg3d_f16", "AvgPool3d", 3, (1, 6, 5, 7, 2), mx.float16, stride=2, padding=1)

# ---------------------------------------------------------------------------------------------
# Upsample

upsamples = {}


def upsample_case(name, scale_factor, input_shape, dtype=mx.float32, **kwargs):
    module = nn.Upsample(scale_factor, **kwargs)
    if dtype == mx.int32:
        x = mx.random.randint(-50, 50, input_shape)
    else:
        x = rand(input_shape, dtype)
    out = module(x)
    if out.size == 0 and device_folder() == "cuda":
        # MLX 0.32.2's CUDA backend dies with SIGFPE evaluating the antialiased upsample of
        # an empty result; one with no elements is the same on every device.
        with mx.stream(mx.cpu):
            out = module(x)
    upsamples[name] = {
        "scale_factor": jsonable(scale_factor),
        "mode": module.mode,
        "align_corners": module.align_corners,
        "antialias": module.antialias,
        "input": record(x),
        "output": record(out),
    }


# Nearest: integer factors (broadcast path), others (index path), up and down.
upsample_case("nearest_2x_2d", 2, (2, 3, 4, 3))
upsample_case("nearest_ints_2d", (2, 3), (1, 3, 2, 2))
upsample_case("nearest_1_5x_2d", 1.5, (2, 4, 5, 3))
upsample_case("nearest_mixed_2d", (0.5, 1.7), (1, 6, 5, 2))
upsample_case("nearest_2_5x_1d", 2.5, (2, 5, 3))
upsample_case("nearest_2x_3d_f16", 2, (1, 2, 3, 2, 2), mx.float16)
upsample_case("nearest_1_5x_int32", 1.5, (1, 4, 3, 2), mx.int32)

# Linear and cubic: both align_corners, integer / non-integer / below-one factors, 1-3
# spatial axes, half-precision and integer inputs (float32 weights make float32 outputs).
for mode in ("linear", "cubic"):
    for align in (False, True):
        tag = f"{mode}_{'align' if align else 'noalign'}"
        upsample_case(f"{tag}_2x_2d", 2, (2, 4, 3, 3), mode=mode, align_corners=align)
        upsample_case(f"{tag}_1_5x_2d", 1.5, (1, 5, 4, 2), mode=mode, align_corners=align)
        upsample_case(f"{tag}_mixed_2d", (0.5, 2.5), (2, 6, 3, 2), mode=mode,
                      align_corners=align)
        upsample_case(f"{tag}_3x_1d", 3, (2, 4, 3), mode=mode, align_corners=align)
        upsample_case(f"{tag}_1_7x_1d", 1.7, (1, 6, 2), mode=mode, align_corners=align)
        upsample_case(f"{tag}_3d", (2, 1.5, 0.75), (1, 3, 4, 4, 2), mode=mode,
                      align_corners=align)
        upsample_case(f"{tag}_f16", 2, (1, 3, 4, 2), mx.float16, mode=mode,
                      align_corners=align)
        upsample_case(f"{tag}_bf16", 1.5, (1, 4, 3, 2), mx.bfloat16, mode=mode,
                      align_corners=align)
        upsample_case(f"{tag}_int32", 2, (1, 3, 3, 1), mx.int32, mode=mode,
                      align_corners=align)

# Antialiased (align_corners=False only): downscaling widens the filter, upscaling does not.
for mode in ("linear", "cubic"):
    tag = f"{mode}_antialias"
    upsample_case(f"{tag}_0_5x_2d", 0.5, (2, 8, 8, 2), mode=mode, antialias=True)
    upsample_case(f"{tag}_0_3x_2d", 0.3, (1, 10, 9, 2), mode=mode, antialias=True)
    upsample_case(f"{tag}_mixed_2d", (0.75, 1.5), (1, 8, 4, 3), mode=mode, antialias=True)
    upsample_case(f"{tag}_2x_1d", 2, (2, 5, 3), mode=mode, antialias=True)
    upsample_case(f"{tag}_0_4x_3d", 0.4, (1, 5, 6, 5, 2), mode=mode, antialias=True)
    upsample_case(f"{tag}_f16", 0.5, (1, 6, 6, 2), mx.float16, mode=mode, antialias=True)
    # A factor below 1 / size leaves no output (an empty array, not an error).
    upsample_case(f"{tag}_empty", 0.1, (1, 5, 2), mode=mode, antialias=True)
    upsample_case(f"{mode}_empty", (0.1, 2), (1, 5, 3, 2), mode=mode)

write("nn_spatial", {"convs": convs, "seeded": seeded, "pools": pools, "upsamples": upsamples})
