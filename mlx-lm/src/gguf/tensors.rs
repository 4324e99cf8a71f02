//! A GGUF tensor's bytes as MLX arrays: the float types as they are; Q4_0, Q4_1 and Q8_0 as
//! MLX affine quantization (the same values: a block's scale, and its offset as the bias);
//! Q5_0, Q5_1 and the K-quants de-quantized to floats, as gguf-py's `dequantize` computes
//! them (f32 products of the f16 block scales and the integer codes).

use half::{bf16, f16};
use mlx_rs::{Array, Dtype};

use super::reader::{GgufFile, TensorInfo};
use crate::config::invalid;
use crate::error::{Error, Result};

/// A tensor as loaded.
pub enum Decoded {
    Float(Array),
    /// MLX affine: `w = scales * q + biases` per group of 32 values along the last axis.
    Affine {
        weight: Array,
        scales: Array,
        biases: Array,
        bits: i32,
    },
}

/// The group size of every MLX-affine tensor made from a GGUF block type.
pub const GROUP_SIZE: i32 = 32;

/// Decodes `t`; `float` is the dtype de-quantized values are stored in.
pub fn decode(file: &GgufFile, t: &TensorInfo, float: Dtype) -> Result<Decoded> {
    let data = file.data(t);
    let shape = t.shape();
    let mlx = |source| Error::Mlx {
        path: file.path.clone(),
        source,
    };
    let floats = |values: Vec<f32>| -> Result<Decoded> {
        let a = Array::from_slice(&values, &shape).map_err(mlx)?;
        let a = if float == Dtype::Float32 {
            a
        } else {
            a.astype(float).map_err(mlx)?
        };
        Ok(Decoded::Float(a))
    };
    match t.ty.name {
        "F32" => Ok(Decoded::Float(
            Array::from_slice(&le::<4, f32>(data, f32::from_le_bytes), &shape).map_err(mlx)?,
        )),
        "F16" => Ok(Decoded::Float(
            Array::from_slice(&le::<2, f16>(data, f16::from_le_bytes), &shape).map_err(mlx)?,
        )),
        "BF16" => Ok(Decoded::Float(
            Array::from_slice(&le::<2, bf16>(data, bf16::from_le_bytes), &shape).map_err(mlx)?,
        )),
        "Q8_0" | "Q4_0" | "Q4_1" => affine(file, t, &shape),
        "Q5_0" => floats(blocks(data, 22, |b, out| q5(b, out, false))),
        "Q5_1" => floats(blocks(data, 24, |b, out| q5(b, out, true))),
        "Q2_K" => floats(blocks(data, 84, q2_k)),
        "Q3_K" => floats(blocks(data, 110, q3_k)),
        "Q4_K" => floats(blocks(data, 144, q4_k)),
        "Q5_K" => floats(blocks(data, 176, q5_k)),
        "Q6_K" => floats(blocks(data, 210, q6_k)),
        other => Err(invalid(
            &file.path,
            &t.name,
            &format!(
                "tensor type {other} is not supported (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, \
                 Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K are)"
            ),
        )),
    }
}

fn le<const N: usize, T>(data: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
    data.chunks_exact(N)
        .map(|c| f(c.try_into().expect("N bytes")))
        .collect()
}

fn h(b: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

/// Applies `f` to each block of `size` bytes, which appends the block's values to `out`.
fn blocks(data: &[u8], size: usize, f: impl Fn(&[u8], &mut Vec<f32>)) -> Vec<f32> {
    let mut out = Vec::with_capacity(data.len() / size * 256);
    for b in data.chunks_exact(size) {
        f(b, &mut out);
    }
    out
}

/// Q8_0 (`d`, 32 signed bytes: `d * q`), Q4_0 (`d`, 32 nibbles: `d * (q - 8)`) and Q4_1
/// (`d`, `m`, 32 nibbles: `d * q + m`) as MLX affine codes `u`, scale `d` and bias: Q8_0's
/// `u = q + 128` with bias `-128 d`, Q4_0's bias `-8 d`, Q4_1's `m`. The scales and biases are
/// float16, which holds `d`, `m` and `d` times a power of two exactly (MLX's own GGUF reader
/// does the same).
fn affine(file: &GgufFile, t: &TensorInfo, shape: &[i32]) -> Result<Decoded> {
    let data = file.data(t);
    let (bits, size) = match t.ty.name {
        "Q8_0" => (8, 34),
        "Q4_0" => (4, 18),
        _ => (4, 20),
    };
    let n_blocks = data.len() / size;
    let mut codes: Vec<u8> = Vec::with_capacity(n_blocks * 32);
    let mut scales = Vec::with_capacity(n_blocks);
    let mut biases = Vec::with_capacity(n_blocks);
    for b in data.chunks_exact(size) {
        let d = f16::from_le_bytes([b[0], b[1]]);
        let bias = match t.ty.name {
            "Q8_0" => {
                codes.extend(b[2..34].iter().map(|&q| (q as i8 as i16 + 128) as u8));
                -d.to_f32() * 128.0
            }
            name => {
                let qs = if name == "Q4_0" { &b[2..18] } else { &b[4..20] };
                codes.extend(qs.iter().map(|q| q & 0x0F));
                codes.extend(qs.iter().map(|q| q >> 4));
                if name == "Q4_0" {
                    -d.to_f32() * 8.0
                } else {
                    h(b, 2)
                }
            }
        };
        let bias = f16::from_f32(bias);
        if !bias.is_finite() {
            return Err(invalid(
                &file.path,
                &t.name,
                &format!("a block scale of {d} overflows float16 as an MLX bias"),
            ));
        }
        scales.push(d);
        biases.push(bias);
    }
    let per_word = 32 / bits as usize;
    let words: Vec<u32> = codes
        .chunks_exact(per_word)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u32, |w, (i, &q)| w | (u32::from(q) << (i * bits as usize)))
        })
        .collect();
    let rows = &shape[..shape.len() - 1];
    let last = shape[shape.len() - 1];
    let with_last = |n: i32| [rows, &[n]].concat();
    let mlx = |source| Error::Mlx {
        path: file.path.clone(),
        source,
    };
    Ok(Decoded::Affine {
        weight: Array::from_slice(&words, &with_last(last * bits / 32)).map_err(mlx)?,
        scales: Array::from_slice(&scales, &with_last(last / GROUP_SIZE)).map_err(mlx)?,
        biases: Array::from_slice(&biases, &with_last(last / GROUP_SIZE)).map_err(mlx)?,
        bits,
    })
}

/// Q5_0 (`d`, 32 high bits, 32 nibbles: `d * (q - 16)`) and Q5_1 (`d`, `m`, ...: `d * q + m`).
fn q5(b: &[u8], out: &mut Vec<f32>, with_min: bool) {
    let d = h(b, 0);
    let (m, rest) = if with_min {
        (h(b, 2), &b[4..])
    } else {
        (0.0, &b[2..])
    };
    let qh = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
    let qs = &rest[4..20];
    for j in 0..32 {
        let low = if j < 16 {
            qs[j] & 0x0F
        } else {
            qs[j - 16] >> 4
        };
        let q = f32::from(low | ((((qh >> j) & 1) as u8) << 4));
        out.push(if with_min { d * q + m } else { d * (q - 16.0) });
    }
}

/// Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin.
fn q2_k(b: &[u8], out: &mut Vec<f32>) {
    let (scales, qs) = (&b[0..16], &b[16..80]);
    let (d, dmin) = (h(b, 80), h(b, 82));
    for (group, &sc) in scales.iter().enumerate() {
        let dl = d * f32::from(sc & 0x0F);
        let ml = dmin * f32::from(sc >> 4);
        // Values 16g..16g+16 of the block: 32-byte half g/8, shift 2 * (g/2 % 4), bytes 16 * (g % 2).
        let (half, shift, start) = (group / 8, 2 * ((group / 2) % 4), 16 * (group % 2));
        for l in 0..16 {
            let q = (qs[32 * half + start + l] >> shift) & 3;
            out.push(dl * f32::from(q) - ml);
        }
    }
}

/// Q3_K: hmask[32], qs[64], scales[12] (16 six-bit signed scales), d.
fn q3_k(b: &[u8], out: &mut Vec<f32>) {
    let (hmask, qs, sc) = (&b[0..32], &b[32..96], &b[96..108]);
    let d = h(b, 108);
    for group in 0..16 {
        let low = (sc[group % 8] >> (4 * (group / 8))) & 0x0F;
        let high = (sc[8 + group % 4] >> (2 * (group / 4))) & 0x03;
        let scale = f32::from(((low | (high << 4)) as i8) - 32);
        let dl = d * scale;
        let (half, shift, start) = (group / 8, 2 * ((group / 2) % 4), 16 * (group % 2));
        // The high bit of value i lies in bit i / 32 of hmask[i % 32]; a set bit means no -4.
        for l in 0..16 {
            let i = 16 * group + l;
            let q = ((qs[32 * half + start + l] >> shift) & 3) as i8;
            let hbit = (hmask[i % 32] >> (i / 32)) & 1;
            let q = q - if hbit == 1 { 0 } else { 4 };
            out.push(dl * f32::from(q));
        }
    }
}

/// The 8 six-bit scales and mins of Q4_K and Q5_K (12 bytes).
fn scale_min_k4(s: &[u8]) -> ([u8; 8], [u8; 8]) {
    let mut sc = [0u8; 8];
    let mut m = [0u8; 8];
    for j in 0..4 {
        sc[j] = s[j] & 0x3F;
        m[j] = s[4 + j] & 0x3F;
        sc[4 + j] = (s[8 + j] & 0x0F) | ((s[j] >> 2) & 0x30);
        m[4 + j] = (s[8 + j] >> 4) | ((s[4 + j] >> 2) & 0x30);
    }
    (sc, m)
}

/// Q4_K: d, dmin, scales[12], qs[128]: value `d * sc * q - dmin * m` in groups of 32.
fn q4_k(b: &[u8], out: &mut Vec<f32>) {
    let (d, dmin) = (h(b, 0), h(b, 2));
    let (sc, m) = scale_min_k4(&b[4..16]);
    let qs = &b[16..144];
    for group in 0..8 {
        let dl = d * f32::from(sc[group]);
        let ml = dmin * f32::from(m[group]);
        let (chunk, shift) = (group / 2, 4 * (group % 2));
        for l in 0..32 {
            let q = (qs[32 * chunk + l] >> shift) & 0x0F;
            out.push(dl * f32::from(q) - ml);
        }
    }
}

/// Q5_K: d, dmin, scales[12], qh[32], qs[128].
fn q5_k(b: &[u8], out: &mut Vec<f32>) {
    let (d, dmin) = (h(b, 0), h(b, 2));
    let (sc, m) = scale_min_k4(&b[4..16]);
    let (qh, qs) = (&b[16..48], &b[48..176]);
    for group in 0..8 {
        let dl = d * f32::from(sc[group]);
        let ml = dmin * f32::from(m[group]);
        let (chunk, shift) = (group / 2, 4 * (group % 2));
        for l in 0..32 {
            let q = ((qs[32 * chunk + l] >> shift) & 0x0F) | (((qh[l] >> group) & 1) << 4);
            out.push(dl * f32::from(q) - ml);
        }
    }
}

/// Q6_K: ql[128], qh[64], scales[16] (signed), d: value `d * sc * (q - 32)` in groups of 16.
fn q6_k(b: &[u8], out: &mut Vec<f32>) {
    let (ql, qh, scales) = (&b[0..128], &b[128..192], &b[192..208]);
    let d = h(b, 208);
    let mut values = [0f32; 256];
    for (i, v) in values.iter_mut().enumerate() {
        // gguf-py: ql as (2 halves of 64 bytes) x (low, high nibble) x 64; qh as (2 halves of
        // 32 bytes) x (4 two-bit fields) x 32.
        let (half, within) = (i / 128, i % 128);
        let low = (ql[64 * half + within % 64] >> (4 * (within / 64))) & 0x0F;
        let high = (qh[32 * half + within % 32] >> (2 * (within / 32))) & 0x03;
        let q = ((low | (high << 4)) as i8) - 32;
        *v = d * f32::from(scales[i / 16] as i8) * f32::from(q);
    }
    out.extend_from_slice(&values);
}

/// Undoes llama.cpp's rotary permutation of a Q or K projection (`LlamaModel.permute` in
/// convert_hf_to_gguf.py: per head, rows `[2, d/2]` were stored as `[d/2, 2]`, ggml's
/// interleaved rotary pairs): rows `[heads, d/2, 2]` back to `[heads, 2, d/2]`. Acts on the first axis, so it applies to a weight, its bias and an MLX
/// affine tensor's packed codes, scales and biases alike.
pub fn unpermute(a: &Array, heads: i32) -> mlx_rs::Result<Array> {
    let shape = a.shape().to_vec();
    let rows = shape[0];
    let rest = &shape[1..];
    let half = rows / heads / 2;
    let split = [&[heads, half, 2], rest].concat();
    a.reshape(&split)?.swapaxes(1, 2)?.reshape(&shape)
}
