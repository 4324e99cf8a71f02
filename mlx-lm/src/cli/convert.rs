//! `mlx-lm convert` (Python: `mlx_lm.convert`): a Hugging Face / MLX model directory to an
//! MLX one, cast (`--dtype`), quantized (`-q --q-bits --q-group-size --q-mode`) or
//! dequantized (`--dequantize`).
//!
//! The model loads as the architecture loads it (sanitized to mlx_lm's parameter paths,
//! cast and quantized at load with mlx_lm's ops, [`LoadOptions`]), and its parameters are
//! written as mlx_lm's `save` writes them: `model.safetensors` (shards of 5 GiB at most,
//! metadata `format: mlx`), `model.safetensors.index.json`, `config.json` with the
//! `quantization` (and `quantization_config`) mlx_lm records, sorted; the tokenizer's files,
//! `generation_config.json` and `*.py` are copied. The tensors are mlx_lm.convert's bit for
//! bit (`tests/lm_cli.rs`). `-q --quant-predicate mixed_3_6` (and mlx_lm's other recipes)
//! quantizes each layer with the bits of mlx_lm's recipe ([`MixedQuantRecipe`]).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use mlx_rs::ops::{self, DequantizeOptions, QuantizationMode};
use mlx_rs::{Array, Dtype};
use serde_json::{json, Map, Value};

use super::Error;
use crate::{LayerQuantization, LoadOptions, MixedQuantRecipe, QuantParams, Quantization};

/// mlx_lm's `MAX_FILE_SIZE_GB`.
const MAX_FILE_SIZE_GB: usize = 5;

/// The files of a model directory besides its weights and config that convert copies (mlx_lm
/// writes the tokenizer with `save_pretrained`, then copies these two).
const COPIED: &[&str] = &[
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.model",
    "chat_template.jinja",
    "chat_template.json",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "generation_config.json",
];

/// Converts a model directory to MLX's format.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The model directory to convert.
    #[arg(long = "hf-path", visible_alias = "model")]
    pub hf_path: PathBuf,
    /// Where to write the converted model (must not exist).
    #[arg(long, default_value = "mlx_model")]
    pub mlx_path: PathBuf,
    /// Quantize the model.
    #[arg(long, short = 'q')]
    pub quantize: bool,
    /// Group size for quantization (default: the mode's, 64 for affine).
    #[arg(long)]
    pub q_group_size: Option<i32>,
    /// Bits per weight for quantization (default: the mode's, 4 for affine).
    #[arg(long)]
    pub q_bits: Option<i32>,
    /// The quantization mode.
    #[arg(long, default_value = "affine", value_parser = ["affine", "mxfp4", "nvfp4", "mxfp8"])]
    pub q_mode: String,
    /// Mixed-bit quantization recipe (with -q).
    #[arg(long, value_parser = ["mixed_2_6", "mixed_3_4", "mixed_3_6", "mixed_4_6"])]
    pub quant_predicate: Option<String>,
    /// The dtype of the floating-point parameters (default: config.json's `torch_dtype`).
    #[arg(long, value_parser = ["float16", "bfloat16", "float32"])]
    pub dtype: Option<String>,
    /// Dequantize a quantized model.
    #[arg(long, short = 'd')]
    pub dequantize: bool,
    /// The Hugging Face repo to upload the model to (not here: nothing is uploaded).
    #[arg(long)]
    pub upload_repo: Option<String>,
    /// Accepted as mlx_lm's: no code from the model directory is ever run here.
    #[arg(long)]
    pub trust_remote_code: bool,
}

/// Runs the command: prints mlx_lm's `[INFO]` lines to `out`, the progress of the writing to
/// `err`.
pub fn run(
    args: &Args,
    _input: &mut dyn BufRead,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> Result<(), Error> {
    if let Some(repo) = &args.upload_repo {
        // Before converting, rather than after as mlx_lm fails.
        return Err(super::unsupported(
            "--upload-repo",
            &format!(
                "nothing is uploaded to the Hugging Face Hub here; convert, then upload the \
                 directory yourself (`hf upload {repo} {}`)",
                args.mlx_path.display()
            ),
        )
        .into());
    }
    super::local_model(&args.hf_path)?;
    if args.mlx_path.exists() {
        return Err(format!(
            "Cannot save to the path {} as it already exists. Please delete the \
             file/directory or specify a new path to save to.",
            args.mlx_path.display()
        )
        .into());
    }
    if args.quantize && args.dequantize {
        return Err("Choose either quantize or dequantize, not both.".into());
    }
    if args.quant_predicate.is_some() {
        // mlx_lm builds the recipe and, without -q, silently does not use it.
        if !args.quantize {
            return Err("--quant-predicate is a recipe for quantizing: add -q".into());
        }
        if args.q_mode != "affine" {
            return Err("Quant predicates only support 'affine' quantization.".into());
        }
    }
    writeln!(out, "[INFO] Loading")?;
    let mut config = read_config(&args.hf_path)?;
    let dtype = args
        .dtype
        .clone()
        .or_else(|| {
            config
                .get("torch_dtype")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .or_else(|| {
            config
                .get("text_config")
                .and_then(|t| t.get("dtype"))
                .and_then(Value::as_str)
                .map(String::from)
        });
    let dtype = match dtype.as_deref() {
        Some("float16") => Some(Dtype::Float16),
        Some("bfloat16") => Some(Dtype::Bfloat16),
        Some("float32") => Some(Dtype::Float32),
        _ => None,
    };
    if let Some(name) = dtype.and_then(dtype_name) {
        writeln!(out, "[INFO] Using dtype: {name}")?;
    }
    let mut options = LoadOptions {
        dtype,
        ..Default::default()
    };
    let quant = if args.quantize {
        if config.contains_key("quantization") {
            return Err("the model is quantized already (--dequantize it first)".into());
        }
        let mode = crate::quantization::parse_mode(&args.q_mode)
            .ok_or_else(|| format!("unknown --q-mode {}", args.q_mode))?;
        let p = QuantParams::for_mode(mode, args.q_group_size, args.q_bits);
        if let Some(e) = p.unsupported() {
            return Err(e.into());
        }
        if let Some(name) = &args.quant_predicate {
            // The model's structure first (its tensors unread), as mlx_lm's recipe reads it.
            let paths = crate::load::parameter_paths(&args.hf_path, options)?;
            let recipe = MixedQuantRecipe::new(name, args.q_group_size, &paths)?;
            options.quant_recipe = Some(recipe);
        }
        writeln!(out, "[INFO] Quantizing")?;
        options.quantize = Some(p);
        Some(p)
    } else {
        None
    };
    let (model, _, model_config) = crate::load(&args.hf_path, options)?;
    let stored = Quantization::from_config(&model_config)?;
    let mut weights: Vec<(String, Array)> = mlx_tree::tree_flatten_with_path(&model)?
        .into_iter()
        .map(|(k, v)| (k, v.clone()))
        .collect();

    if let Some(p) = quant {
        let mut q = json!({"group_size": p.group_size, "bits": p.bits, "mode": p.mode.as_str()});
        // Layers the architecture quantized otherwise (its `quant_predicate`), read off the
        // packed shapes, as mlx_lm's config records them.
        for (path, params) in quantized_layers(&weights, p)? {
            if let Some(recipe) = options.quant_recipe {
                // mlx_lm records every layer its recipe quantized, with the group size as
                // given (`null` for the default).
                q[path.as_str()] = json!({"group_size": recipe.group_size, "bits": params.bits,
                                 "mode": params.mode.as_str()});
            } else if params != p {
                q[path.as_str()] = json!({"group_size": params.group_size, "bits": params.bits,
                                 "mode": params.mode.as_str()});
            }
        }
        config.insert("quantization".into(), q.clone());
        config.insert("quantization_config".into(), q);
        let bytes: usize = weights.iter().map(|(_, a)| a.nbytes()).sum();
        let params = total_parameters(&weights, Some(p))?;
        writeln!(
            out,
            "[INFO] Quantized model with {:.3} bits per weight.",
            bytes as f64 * 8.0 / params as f64
        )?;
    }
    if args.dequantize {
        writeln!(out, "[INFO] Dequantizing")?;
        config.remove("quantization");
        config.remove("quantization_config");
        if let Some(stored) = &stored {
            weights = dequantize(weights, stored)?;
        }
    }
    let defaults = quant.or(stored
        .as_ref()
        .filter(|_| !args.dequantize)
        .map(|q| q.defaults));
    save(&args.mlx_path, &args.hf_path, &weights, &config, defaults)?;
    Ok(())
}

fn dtype_name(dtype: Dtype) -> Option<&'static str> {
    match dtype {
        Dtype::Float16 => Some("float16"),
        Dtype::Bfloat16 => Some("bfloat16"),
        Dtype::Float32 => Some("float32"),
        _ => None,
    }
}

/// config.json as mlx_lm's `load_config` reads it: generation_config.json's `eos_token_id`
/// (when set) replaces the config's.
fn read_config(dir: &Path) -> Result<Map<String, Value>, Error> {
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let Value::Object(mut config) =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?
    else {
        return Err(format!("{}: not a JSON object", path.display()).into());
    };
    let generation = dir.join("generation_config.json");
    if let Ok(text) = std::fs::read_to_string(generation) {
        if let Ok(Value::Object(g)) = serde_json::from_str::<Value>(&text) {
            if let Some(eos) = g.get("eos_token_id").filter(|v| truthy(v)) {
                config.insert("eos_token_id".into(), eos.clone());
            }
        }
    }
    Ok(config)
}

/// Python's truth value of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn get<'a>(weights: &'a [(String, Array)], key: &str) -> Option<&'a Array> {
    weights.iter().find(|(k, _)| k == key).map(|(_, a)| a)
}

/// Each quantized layer's path and parameters, read off its packed shapes: the weight's
/// last axis holds `in * bits / 32` words and the scales' `in / group_size` groups. Of the
/// pairs those allow, the requested group size is taken (mlx_lm's predicates change bits),
/// else the requested bits.
fn quantized_layers(
    weights: &[(String, Array)],
    p: QuantParams,
) -> Result<Vec<(String, QuantParams)>, Error> {
    let mut layers = Vec::new();
    for (key, scales) in weights {
        let Some(path) = key.strip_suffix(".scales") else {
            continue;
        };
        let weight = get(weights, &format!("{path}.weight"))
            .ok_or_else(|| format!("{path}: scales without a weight"))?;
        let words = *weight.shape().last().unwrap_or(&0) as i64;
        let groups = *scales.shape().last().unwrap_or(&0) as i64;
        let (g, b) = (p.group_size as i64, p.bits as i64);
        let params = if (words * 32) % (groups * g) == 0 {
            QuantParams {
                bits: ((words * 32) / (groups * g)) as i32,
                ..p
            }
        } else if (words * 32) % b == 0 && ((words * 32) / b) % groups == 0 {
            QuantParams {
                group_size: ((words * 32) / b / groups) as i32,
                ..p
            }
        } else {
            return Err(format!("{path}: packed shapes no quantization explains").into());
        };
        layers.push((path.to_string(), params));
    }
    Ok(layers)
}

/// mlx_lm's `get_total_parameters`: over the leaf modules (those without modules inside),
/// a quantized layer counts its unpacked weight and its bias, any other its parameters; the
/// parameters a module holds beside its submodules (a gated-delta layer's `A_log`) are not
/// counted.
pub(crate) fn total_parameters(
    weights: &[(String, Array)],
    p: Option<QuantParams>,
) -> Result<usize, Error> {
    let quantized: BTreeMap<String, QuantParams> = match p {
        Some(p) => quantized_layers(weights, p)?.into_iter().collect(),
        None => BTreeMap::new(),
    };
    let parents: std::collections::HashSet<&str> = weights
        .iter()
        .filter_map(|(k, _)| k.rsplit_once('.').map(|(m, _)| m))
        .filter_map(|m| m.rsplit_once('.').map(|(parent, _)| parent))
        .collect();
    let mut total = 0;
    for (key, a) in weights {
        let (module, name) = key.rsplit_once('.').unwrap_or(("", key));
        if parents.contains(module) {
            continue;
        }
        total += match quantized.get(module) {
            Some(q) if name == "weight" => a.size() * 32 / q.bits as usize,
            Some(_) if name == "bias" => a.size(),
            Some(_) => 0,
            None => a.size(),
        };
    }
    Ok(total)
}

/// mlx_lm's `dequantize_model`: each quantized layer's weight unpacked with its parameters,
/// its scales and biases dropped.
fn dequantize(
    weights: Vec<(String, Array)>,
    q: &Quantization,
) -> Result<Vec<(String, Array)>, Error> {
    let mut out = Vec::with_capacity(weights.len());
    for (key, a) in &weights {
        let (module, name) = key.rsplit_once('.').unwrap_or(("", key));
        let Some(scales) = get(&weights, &format!("{module}.scales")) else {
            out.push((key.clone(), a.clone()));
            continue;
        };
        match name {
            "scales" | "biases" => {}
            "weight" => {
                let p = match q.layers.get(module) {
                    Some(LayerQuantization::Quantized(p)) => *p,
                    _ => q.defaults,
                };
                let mut options = DequantizeOptions::default()
                    .group_size(p.group_size)
                    .bits(p.bits)
                    .mode(p.mode);
                let biases = get(&weights, &format!("{module}.biases"));
                if let (Some(b), QuantizationMode::Affine) = (biases, p.mode) {
                    options = options.biases(b);
                }
                out.push((key.clone(), ops::dequantize(a, scales, options)?));
            }
            _ => out.push((key.clone(), a.clone())),
        }
    }
    Ok(out)
}

/// mlx_lm's `save`: the weights in shards, the index, the config, the tokenizer's files.
fn save(
    dst: &Path,
    src: &Path,
    weights: &[(String, Array)],
    config: &Map<String, Value>,
    quant: Option<QuantParams>,
) -> Result<(), Error> {
    std::fs::create_dir_all(dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    // mlx_lm's `make_shards`: a new shard when the next tensor would pass the limit.
    let limit = MAX_FILE_SIZE_GB << 30;
    let mut shards: Vec<Vec<&(String, Array)>> = Vec::new();
    let mut size = 0;
    for w in weights {
        if shards.is_empty() || size + w.1.nbytes() > limit {
            shards.push(Vec::new());
            size = 0;
        }
        shards.last_mut().unwrap().push(w);
        size += w.1.nbytes();
    }
    let count = shards.len();
    let bar = super::progress_bar(count as u64, "[{elapsed}] {bar:40} {pos}/{len} shards")?;
    let metadata = std::collections::HashMap::from([("format".to_string(), "mlx".to_string())]);
    let mut weight_map = BTreeMap::new();
    for (i, shard) in shards.iter().enumerate() {
        let name = if count > 1 {
            format!("model-{:05}-of-{count:05}.safetensors", i + 1)
        } else {
            "model.safetensors".to_string()
        };
        mlx_rs::io::save_safetensors(
            dst.join(&name),
            shard.iter().map(|(k, a)| (k, a)),
            Some(&metadata),
        )?;
        for (k, _) in shard {
            weight_map.insert(k.clone(), name.clone());
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let total_size: usize = weights.iter().map(|(_, a)| a.nbytes()).sum();
    let total_parameters = total_parameters(weights, quant)?;
    let index = json!({
        "metadata": {"total_size": total_size, "total_parameters": total_parameters},
        "weight_map": weight_map,
    });
    write_json(&dst.join("model.safetensors.index.json"), &index)?;

    // mlx_lm's `save_config`: unused keys dropped, `quantization_config` mirroring
    // `quantization`, keys sorted.
    let mut config = config.clone();
    config.remove("_name_or_path");
    config.remove("vision_config");
    if let Some(q) = config.get("quantization").cloned() {
        config.insert("quantization_config".into(), q);
    }
    let sorted: BTreeMap<String, Value> = config.into_iter().collect();
    write_json(&dst.join("config.json"), &json!(sorted))?;

    for entry in std::fs::read_dir(src).map_err(|e| format!("{}: {e}", src.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if COPIED.contains(&name.as_ref()) || name.ends_with(".py") || name.ends_with(".tiktoken") {
            std::fs::copy(entry.path(), dst.join(name.as_ref()))?;
        }
    }
    Ok(())
}

/// JSON as Python's `json.dump(..., indent=4)` writes it.
fn write_json(path: &Path, value: &Value) -> Result<(), Error> {
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    serde::Serialize::serialize(value, &mut ser)?;
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()).into())
}
