#!/usr/bin/env python3
"""Golden data for mlx_rs::fft: every transform with default and explicit n/s/axes/norm,
over float32, complex64, float16 and bfloat16 inputs. Writes tests/data/fft.json."""
import mlx.core as mx

from common import record, write

mx.random.seed(0)
x = mx.random.normal((4, 6), key=mx.random.key(1))
z = (mx.random.normal((3, 4, 5), key=mx.random.key(2))
     + 1j * mx.random.normal((3, 4, 5), key=mx.random.key(3))).astype(mx.complex64)
v = mx.random.normal((8,), key=mx.random.key(4))


def cases():
    out = {"x": record(x), "z": record(z), "v": record(v)}
    for norm in ("backward", "ortho", "forward"):
        out[f"fft_v_{norm}"] = record(mx.fft.fft(v, norm=norm))
        out[f"ifft_z_{norm}"] = record(mx.fft.ifft(z, norm=norm))
        out[f"rfft_x_{norm}"] = record(mx.fft.rfft(x, norm=norm))
        out[f"fftn_z_{norm}"] = record(mx.fft.fftn(z, norm=norm))
        out[f"irfftn_x_{norm}"] = record(mx.fft.irfftn(mx.fft.rfftn(x), norm=norm))
    out["fft_v_n5"] = record(mx.fft.fft(v, n=5))
    out["fft_v_n12"] = record(mx.fft.fft(v, n=12))
    out["fft_x_axis0"] = record(mx.fft.fft(x, axis=0))
    out["ifft_x_n3_axis0"] = record(mx.fft.ifft(x, n=3, axis=0))
    out["rfft_x_n7_axis0"] = record(mx.fft.rfft(x, n=7, axis=0))
    out["irfft_rx"] = record(mx.fft.irfft(mx.fft.rfft(x)))
    out["irfft_rx_n6"] = record(mx.fft.irfft(mx.fft.rfft(x), n=6))
    out["fft2_z"] = record(mx.fft.fft2(z))
    out["fft2_z_axes02"] = record(mx.fft.fft2(z, axes=[0, 2]))
    out["fft2_z_s"] = record(mx.fft.fft2(z, s=[3, 6], axes=[-2, -1]))
    out["ifft2_z"] = record(mx.fft.ifft2(z))
    out["rfft2_x"] = record(mx.fft.rfft2(x))
    out["irfft2_rx"] = record(mx.fft.irfft2(mx.fft.rfft2(x)))
    out["fftn_z_axes1"] = record(mx.fft.fftn(z, axes=[1]))
    out["fftn_z_s_axes"] = record(mx.fft.fftn(z, s=[2, 8], axes=[0, 2]))
    out["ifftn_z"] = record(mx.fft.ifftn(z))
    out["rfftn_x"] = record(mx.fft.rfftn(x))
    out["rfftn_x_s"] = record(mx.fft.rfftn(x, s=[5, 4], axes=[0, 1]))
    out["irfftn_rx_s"] = record(mx.fft.irfftn(mx.fft.rfftn(x), s=[4, 6], axes=[0, 1]))
    out["fftshift_x"] = record(mx.fft.fftshift(x))
    out["fftshift_x_axis1"] = record(mx.fft.fftshift(x, axes=[1]))
    out["ifftshift_z"] = record(mx.fft.ifftshift(z))
    out["ifftshift_z_axes"] = record(mx.fft.ifftshift(z, axes=[0, -1]))
    out["fftfreq_8"] = record(mx.fft.fftfreq(8))
    out["fftfreq_7_d"] = record(mx.fft.fftfreq(7, d=0.5))
    out["rfftfreq_8"] = record(mx.fft.rfftfreq(8))
    out["rfftfreq_9_d"] = record(mx.fft.rfftfreq(9, d=2.0))
    # Reduced-precision inputs are promoted by MLX; the dtype of the result is checked.
    out["x_f16"] = record(x.astype(mx.float16))
    out["fft_x_f16"] = record(mx.fft.fft(x.astype(mx.float16)))
    out["x_bf16"] = record(x.astype(mx.bfloat16))
    out["rfft_x_bf16"] = record(mx.fft.rfft(x.astype(mx.bfloat16)))
    out["xi"] = record(mx.arange(8))
    out["fft_int"] = record(mx.fft.fft(mx.arange(8)))
    return out


if __name__ == "__main__":
    write("fft", cases())
