//! GGUF checkpoints (llama.cpp's format): one file holding the config (as metadata), the
//! tokenizer and the tensors, loaded as the Hugging Face checkpoint it was converted from
//! (config keys, tensor names, Q/K layout), so the same architectures build from it.

mod arch;
mod reader;
mod sentencepiece;
mod tensors;
mod tokenizer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mlx_rs::ops::QuantizationMode;
use mlx_rs::Dtype;

pub use arch::hf_name;
pub use reader::{GgufFile, MetaValue, TensorInfo};
pub use tensors::{decode, unpermute, Decoded};

use crate::config::{invalid, ModelConfig};
use crate::error::{Error, Result};
use crate::quantization::{LayerQuantization, QuantParams, Quantization};
use crate::tokenizer::Tokenizer;
use crate::weights::Weights;

/// The GGUF file `path` names: `path` itself when it is a `.gguf` file, or the one `.gguf`
/// file of a directory without a `config.json`; `None` otherwise. A directory with several is
/// an error (which one is meant is unclear).
pub fn gguf_path(path: &Path) -> Result<Option<PathBuf>> {
    if path.is_file() {
        return Ok(path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
            .then(|| path.to_path_buf()));
    }
    if !path.is_dir() || path.join("config.json").exists() {
        return Ok(None);
    }
    let entries = std::fs::read_dir(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
        })
        .collect();
    found.sort();
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(invalid(
            path,
            "",
            &format!(
                "{} GGUF files and no config.json: name the file to load",
                found.len()
            ),
        )),
    }
}

/// A GGUF file read as a checkpoint.
pub struct GgufCheckpoint {
    pub config: ModelConfig,
    pub weights: Weights,
    pub quantization: Option<Quantization>,
    pub file: GgufFile,
}

/// Reads `path` as a checkpoint: the config from the metadata, every tensor under its Hugging
/// Face name, the block types MLX affine holds exactly (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K,
/// Q5_K; group size 32) as MLX affine with a per-layer quantization entry, the others
/// (Q2_K, Q3_K, Q6_K) de-quantized to `float` (the loader passes `LoadOptions::dtype`,
/// float16 by default).
pub fn read_checkpoint(path: &Path, float: Option<Dtype>) -> Result<GgufCheckpoint> {
    let file = GgufFile::open(path)?;
    let mut arch = arch::architecture(&file)?;
    rope_factors(&file, &mut arch.config)?;
    let config = ModelConfig::from_values(path, arch.config)?;
    let float = float.unwrap_or(Dtype::Float16);
    let mut weights = Weights::default();
    let mut layers = BTreeMap::new();
    let mlx = |source| Error::Mlx {
        path: path.to_path_buf(),
        source,
    };
    for t in &file.tensors {
        if arch::is_rope_factors(&t.name) {
            continue;
        }
        let name = hf_name(&arch.name, &t.name).ok_or_else(|| {
            invalid(
                path,
                &t.name,
                "not a tensor of this architecture in llama.cpp's naming",
            )
        })?;
        let heads = arch.permuted_qk.and_then(|(q, kv)| {
            if name.contains(".self_attn.q_proj.") {
                Some(q)
            } else if name.contains(".self_attn.k_proj.") {
                Some(kv)
            } else {
                None
            }
        });
        let fix = |a: mlx_rs::Array| match heads {
            Some(h) => unpermute(&a, h).map_err(mlx),
            None => Ok(a),
        };
        let plus_one = arch.norms_plus_one && name.ends_with("norm.weight");
        match tensors::decode(&file, t, float)? {
            Decoded::Float(a) if plus_one => {
                // In float32, as transformers subtracts from the de-quantized numpy array.
                let a = a.astype(Dtype::Float32).map_err(mlx)?;
                let one = mlx_rs::Array::from_scalar(1.0f32);
                let a = mlx_rs::ops::subtract(&a, &one).map_err(mlx)?;
                weights.insert(name, a, path)
            }
            Decoded::Float(a) => weights.insert(name, fix(a)?, path),
            Decoded::Affine {
                weight,
                scales,
                biases,
                bits,
            } => {
                let Some(layer) = name.strip_suffix(".weight").filter(|_| !plus_one) else {
                    return Err(invalid(
                        path,
                        &t.name,
                        "a quantized tensor that is not a weight",
                    ));
                };
                let params = QuantParams {
                    group_size: tensors::GROUP_SIZE,
                    bits,
                    mode: QuantizationMode::Affine,
                };
                layers.insert(layer.to_string(), LayerQuantization::Quantized(params));
                weights.insert(format!("{layer}.scales"), fix(scales)?, path);
                weights.insert(format!("{layer}.biases"), fix(biases)?, path);
                weights.insert(name, fix(weight)?, path);
            }
        }
    }
    let quantization = (!layers.is_empty()).then(|| Quantization::for_layers(layers, path));
    Ok(GgufCheckpoint {
        config,
        weights,
        quantization,
        file,
    })
}

/// Fills in the rotary factors llama.cpp stores as tensors: Phi-3's LongRoPE factors
/// (`rope_factors_long`, `rope_factors_short`) as `rope_scaling`'s `long_factor` and
/// `short_factor`, Llama 3.1's `rope_freqs` as the `factors` of the `gguf_rope_freqs` type.
fn rope_factors(
    file: &GgufFile,
    config: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<()> {
    let read = |name: &str| -> Result<serde_json::Value> {
        let t = file
            .tensor(name)
            .ok_or_else(|| invalid(&file.path, name, "missing"))?;
        let Decoded::Float(a) = tensors::decode(file, t, Dtype::Float32)? else {
            return Err(invalid(&file.path, name, "quantized rotary factors"));
        };
        let values = a
            .astype(Dtype::Float32)
            .and_then(|a| a.to_vec::<f32>())
            .map_err(|source| Error::Mlx {
                path: file.path.clone(),
                source,
            })?;
        // Python floats of the float32 values, as a config holds them.
        Ok(serde_json::json!(values
            .iter()
            .map(|v| f64::from(*v))
            .collect::<Vec<_>>()))
    };
    if let Some(scaling) = config.get_mut("rope_scaling") {
        if scaling["type"] == "longrope" {
            scaling["long_factor"] = read("rope_factors_long.weight")?;
            scaling["short_factor"] = read("rope_factors_short.weight")?;
        } else if scaling["rope_type"] == "gguf_rope_freqs" {
            scaling["factors"] = read("rope_freqs.weight")?;
        }
    }
    Ok(())
}

/// The tokenizer of a GGUF file (`tokenizer.ggml.*`, `tokenizer.chat_template`).
pub fn load_tokenizer(file: &GgufFile) -> Result<Tokenizer> {
    let (json, config) = tokenizer::tokenizer_files(file)?;
    Tokenizer::from_json(&json, file.path.clone(), Some(&(config, file.path.clone())))
}
