//! A GGUF tensor's bytes as MLX arrays: the float types as they are; the block types MLX's
//! affine quantization represents exactly (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K: groups
//! of 32 values, a scale and an offset each) as MLX affine; Q2_K, Q3_K and Q6_K, whose scales
//! cover 16 values (a group size MLX's `quantized_matmul` does not take), de-quantized to
//! floats as gguf-py's `dequantize` computes them (f32 products of the f16 block scales and
//! the integer codes).

use half::{bf16, f16};
use mlx_rs::{Array, Dtype};

use super::reader::{GgufFile, TensorInfo};
use crate::config::invalid;
use crate::error::{Error, Result};

/// A tensor as loaded.
pub enum Decoded {
    Float(Array),
    /// MLX affine: `w = scales * q + biases` per group of 32 values along the last axis;
    /// the scales and biases float16 or (K-quants) float32.
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
        "Q2_K" => floats(blocks(data, 84, q2_k)),
        "Q3_K" => floats(blocks(data, 110, q3_k)),
        "Q6_K" => floats(blocks(data, 210, q6_k)),
        other => match affine_kind(other) {
            Some(kind) => affine(file, t, &shape, kind),
            None => Err(invalid(
                &file.path,
                &t.name,
                &format!(
                    "tensor type {other} is not supported (F32, F16, BF16, Q4_0, Q4_1, Q5_0, \
                     Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K are)"
                ),
            )),
        },
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

/// The codes and per-group affine parameters of a block type MLX's affine quantization holds
/// exactly: value `scale * code + bias` for each group of 32 codes.
#[derive(Default)]
struct Groups {
    codes: Vec<u8>,
    scales: Vec<f32>,
    biases: Vec<f32>,
}

impl Groups {
    fn push(&mut self, scale: f32, bias: f32, codes: impl IntoIterator<Item = u8>) {
        self.scales.push(scale);
        self.biases.push(bias);
        self.codes.extend(codes);
    }
}

/// Q8_0 (`d`, 32 signed bytes: `d * q`) as codes `q + 128`, bias `-128 d`.
fn q8_0_affine(b: &[u8], g: &mut Groups) {
    let d = h(b, 0);
    let codes = b[2..34].iter().map(|&q| (i16::from(q as i8) + 128) as u8);
    g.push(d, -128.0 * d, codes);
}

/// Q4_0 (`d`, 32 nibbles: `d * (q - 8)`) with bias `-8 d`; Q4_1 (`d`, `m`, 32 nibbles:
/// `d * q + m`) with bias `m`.
fn q4_affine(b: &[u8], g: &mut Groups, with_min: bool) {
    let d = h(b, 0);
    let (bias, qs) = if with_min {
        (h(b, 2), &b[4..20])
    } else {
        (-8.0 * d, &b[2..18])
    };
    let codes = qs.iter().map(|q| q & 0x0F).chain(qs.iter().map(|q| q >> 4));
    g.push(d, bias, codes);
}

/// Q5_0 (`d * (q - 16)`) with bias `-16 d`; Q5_1 (`d * q + m`) with bias `m`.
fn q5_affine(b: &[u8], g: &mut Groups, with_min: bool) {
    let d = h(b, 0);
    let (bias, rest) = if with_min {
        (h(b, 2), &b[4..])
    } else {
        (-16.0 * d, &b[2..])
    };
    g.push(d, bias, q5_codes(rest));
}

/// Q4_K as 8 groups of 32: scale `d * sc`, bias `-(dmin * m)`. Both products are exact in
/// float32 (an 11-bit float16 significand times a 6-bit integer), so `scale * q + bias` rounds
/// once, where gguf-py's `d * sc * q - dmin * m` does: the same float32 value.
fn q4_k_affine(b: &[u8], g: &mut Groups) {
    let (d, dmin) = (h(b, 0), h(b, 2));
    let (sc, m) = scale_min_k4(&b[4..16]);
    let qs = &b[16..144];
    for group in 0..8 {
        let (chunk, shift) = (group / 2, 4 * (group % 2));
        let codes = qs[32 * chunk..32 * chunk + 32]
            .iter()
            .map(|q| (q >> shift) & 0x0F);
        g.push(
            d * f32::from(sc[group]),
            -(dmin * f32::from(m[group])),
            codes,
        );
    }
}

/// Q5_K as Q4_K with the fifth bit of each code from `qh`.
fn q5_k_affine(b: &[u8], g: &mut Groups) {
    let (d, dmin) = (h(b, 0), h(b, 2));
    let (sc, m) = scale_min_k4(&b[4..16]);
    let (qh, qs) = (&b[16..48], &b[48..176]);
    for group in 0..8 {
        let (chunk, shift) = (group / 2, 4 * (group % 2));
        let codes =
            (0..32).map(|l| ((qs[32 * chunk + l] >> shift) & 0x0F) | (((qh[l] >> group) & 1) << 4));
        g.push(
            d * f32::from(sc[group]),
            -(dmin * f32::from(m[group])),
            codes,
        );
    }
}

/// The block types kept as MLX affine (group size 32; MLX's `quantized_matmul` takes groups
/// of 32, 64 or 128, so Q2_K, Q3_K and Q6_K, whose scales cover 16 values, de-quantize):
/// bits, block bytes, whether the scales and biases are float16, the block's groups.
type AffineKind = (i32, usize, bool, fn(&[u8], &mut Groups));

fn affine_kind(name: &str) -> Option<AffineKind> {
    Some(match name {
        "Q8_0" => (8, 34, true, q8_0_affine),
        "Q4_0" => (4, 18, true, |b, g| q4_affine(b, g, false)),
        "Q4_1" => (4, 20, true, |b, g| q4_affine(b, g, true)),
        "Q5_0" => (5, 22, true, |b, g| q5_affine(b, g, false)),
        "Q5_1" => (5, 24, true, |b, g| q5_affine(b, g, true)),
        "Q4_K" => (4, 144, false, q4_k_affine),
        "Q5_K" => (5, 176, false, q5_k_affine),
        _ => return None,
    })
}

/// A block type MLX's affine quantization represents exactly as MLX affine codes (packed
/// least significant bit first, as `mx.quantize` packs them), scales and biases, group size
/// 32. Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 keep float16 scales and biases: `d`, `m` and `d`
/// times a power of two are float16 values (MLX's own GGUF reader does the same for the
/// first three). Q4_K / Q5_K keep them in float32, the only MLX float type that holds the
/// products `d * sc` and `dmin * m` of their two-level scales (float16 and bfloat16 round
/// them): with them MLX's `scale * q + bias` is gguf-py's de-quantized value bit for bit.
fn affine(file: &GgufFile, t: &TensorInfo, shape: &[i32], kind: AffineKind) -> Result<Decoded> {
    let (bits, size, half, groups_of) = kind;
    let data = file.data(t);
    let mut g = Groups::default();
    for b in data.chunks_exact(size) {
        groups_of(b, &mut g);
    }
    let rows = &shape[..shape.len() - 1];
    let last = shape[shape.len() - 1];
    let with_last = |n: i32| [rows, &[n]].concat();
    let mlx = |source| Error::Mlx {
        path: file.path.clone(),
        source,
    };
    let params = |values: &[f32]| -> Result<Array> {
        let shape = with_last(last / GROUP_SIZE);
        if !half {
            return Array::from_slice(values, &shape).map_err(mlx);
        }
        let halves: Vec<f16> = values.iter().map(|&v| f16::from_f32(v)).collect();
        if let Some(v) = values.iter().find(|v| !f16::from_f32(**v).is_finite()) {
            return Err(invalid(
                &file.path,
                &t.name,
                &format!("a block's affine parameter {v} overflows float16"),
            ));
        }
        Array::from_slice(&halves, &shape).map_err(mlx)
    };
    Ok(Decoded::Affine {
        weight: Array::from_slice(&pack(&g.codes, bits), &with_last(last * bits / 32))
            .map_err(mlx)?,
        scales: params(&g.scales)?,
        biases: params(&g.biases)?,
        bits,
    })
}

/// `bits`-wide codes as one little-endian bit stream in 32-bit words. A row of a multiple of
/// 32 codes fills whole words, so rows never share one.
fn pack(codes: &[u8], bits: i32) -> Vec<u32> {
    let bits = bits as u32;
    let mut words = Vec::with_capacity(codes.len() * bits as usize / 32);
    let (mut acc, mut filled) = (0u64, 0u32);
    for &c in codes {
        acc |= u64::from(c) << filled;
        filled += bits;
        if filled >= 32 {
            words.push(acc as u32);
            acc >>= 32;
            filled -= 32;
        }
    }
    words
}

/// The 32 five-bit codes of a Q5_0 / Q5_1 block after its scales: 32 high bits, 32 nibbles.
fn q5_codes(rest: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let qh = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
    let qs = &rest[4..20];
    (0..32).map(move |j| {
        let low = if j < 16 {
            qs[j] & 0x0F
        } else {
            qs[j - 16] >> 4
        };
        low | ((((qh >> j) & 1) as u8) << 4)
    })
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
