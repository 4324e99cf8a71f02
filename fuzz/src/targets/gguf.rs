//! `.gguf`: `load_gguf`, with every tensor (quantized ones come back as MLX quantized
//! triples or float16) and every metadata array evaluated.

use std::collections::BTreeMap;

use mlx_rs::io::{self, GgufMetadata};
use mlx_rs::{Array, Dtype};

use super::{err, saved, touch, Ctx, Outcome, Seeds};

pub const TOKENS: &[&[u8]] = &[
    b"GGUF",
    b"general.alignment",
    b"general.architecture",
    b"\x03\x00\x00\x00",
    b"\x08\x00\x00\x00",
    b"\x09\x00\x00\x00",
    b"\xff\xff\xff\xff\xff\xff\xff\xff",
];

pub fn run(ctx: &mut Ctx, data: &[u8]) -> Outcome {
    let file = ctx.write("gguf", data)?;
    let (arrays, metadata) = io::load_gguf(&file.0).map_err(err)?;
    for a in arrays.values() {
        touch(a)?;
    }
    for value in metadata.values() {
        if let GgufMetadata::Array(a) = value {
            touch(a)?;
        }
    }
    Ok(())
}

/// Maps are ordered so that the files come out the same every time.
pub fn seeds(ctx: &mut Ctx) -> Result<Seeds, String> {
    let f32s = Array::from_slice(&[1.0f32, -2.0, 3.5, 4.0, 0.25, -8.0], &[2, 3]).map_err(err)?;
    let f16s = f32s.astype(Dtype::Float16).map_err(err)?;
    let arrays = BTreeMap::from([
        ("blk.0.weight".to_string(), f32s.clone()),
        ("blk.0.half".to_string(), f16s),
        (
            "scalar".to_string(),
            Array::from_slice(&[9.0f32], &[1]).map_err(err)?,
        ),
    ]);
    let metadata = BTreeMap::from([
        (
            "general.architecture".to_string(),
            GgufMetadata::String("llama".into()),
        ),
        (
            "tokenizer.ggml.tokens".to_string(),
            GgufMetadata::Strings(vec!["<s>".into(), "a".into(), "".into()]),
        ),
        (
            "general.alignment".to_string(),
            GgufMetadata::Array(Array::from_scalar(32u32)),
        ),
        (
            "llama.context_length".to_string(),
            GgufMetadata::Array(Array::from_scalar(2048i32)),
        ),
        (
            "vector".to_string(),
            GgufMetadata::Array(Array::from_slice(&[1.0f32, 2.0], &[2]).map_err(err)?),
        ),
        (
            "flag".to_string(),
            GgufMetadata::Array(Array::from_scalar(true)),
        ),
    ]);
    let none = BTreeMap::<String, GgufMetadata>::new();
    Ok(vec![
        saved(ctx, "rust-tensors-metadata", "gguf", |p| {
            io::save_gguf(p, &arrays, &metadata)
        })?,
        saved(ctx, "rust-metadata-only", "gguf", |p| {
            io::save_gguf(p, &BTreeMap::<String, Array>::new(), &metadata)
        })?,
        saved(ctx, "rust-tensor-only", "gguf", |p| {
            io::save_gguf(p, &BTreeMap::from([("w".to_string(), f32s)]), &none)
        })?,
    ])
}
