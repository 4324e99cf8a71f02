//! The golden test models of `tests/data/lm-models`, with their weights written from recipes.
//!
//! A model directory commits its small tensors (`weights-inline.safetensors`, as mlx_lm wrote
//! them) and a recipe for the large ones (`weights-recipe.json`): seeds, means and spreads, and
//! quantization settings, from which the same MLX ops on the CPU make the same bytes here as
//! in Python (`scripts/golden/weights_recipe.py`, which documents the format). [`model_dir`]
//! writes `model.safetensors` (ignored by git) the first time a test asks for the model and
//! checks the recipe's SHA-256, so a test never reads weights other than those mlx_lm's golden
//! data was computed from.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mlx_rs::ops::{self, QuantizationMode, QuantizeOptions};
use mlx_rs::{io, random, Array, Device, Dtype};
use serde::Deserialize;
use sha2::{Digest, Sha256};

const RECIPE: &str = "weights-recipe.json";
const INLINE: &str = "weights-inline.safetensors";
const WEIGHTS: &str = "model.safetensors";
const FORMAT: &str = "mlx golden weights recipe 1";

#[derive(Deserialize)]
struct Recipe {
    format: String,
    metadata: HashMap<String, String>,
    tensors: Vec<Entry>,
    sha256: String,
}

#[derive(Deserialize)]
struct Entry {
    name: String,
    dtype: String,
    shape: Vec<i32>,
    normal: Normal,
    quantized: Option<Quantized>,
}

#[derive(Deserialize)]
struct Normal {
    seed: u64,
    loc: f32,
    scale: f32,
}

#[derive(Deserialize)]
struct Quantized {
    group_size: i32,
    bits: i32,
    mode: String,
}

/// The repository's `tests/data/lm-models`.
pub fn models_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/lm-models")
}

/// The model directory `tests/data/lm-models/<name>`, its weights written.
///
/// # Panics
/// When the directory's recipe cannot be read or makes other tensors than Python's did.
pub fn model_dir(name: &str) -> PathBuf {
    let dir = models_root().join(name);
    materialize(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Every model directory of `tests/data/lm-models`, by name, their weights written.
pub fn all_models() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(models_root())
        .expect("tests/data/lm-models")
        .filter_map(|e| {
            let e = e.ok()?;
            e.file_type()
                .ok()?
                .is_dir()
                .then(|| e.file_name().into_string().ok())?
        })
        .collect();
    names.sort();
    for name in &names {
        model_dir(name);
    }
    names
}

/// Writes `dir/model.safetensors` from `dir`'s recipe unless it holds those tensors already;
/// a directory without a recipe (a checkpoint transformers saved) is used as it is.
pub fn materialize(dir: &Path) -> Result<(), String> {
    // Tests of one binary run on several threads; one writes, the others wait and then find
    // the file current.
    static WRITING: Mutex<()> = Mutex::new(());
    let _guard = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(text) = std::fs::read_to_string(dir.join(RECIPE)) else {
        return Ok(());
    };
    let recipe: Recipe = serde_json::from_str(&text).map_err(|e| format!("{RECIPE}: {e}"))?;
    if recipe.format != FORMAT {
        return Err(format!("{RECIPE}: unknown format {:?}", recipe.format));
    }
    let path = dir.join(WEIGHTS);
    if path.exists() {
        let (current, _) = io::load_safetensors(&path).map_err(|e| e.to_string())?;
        if digest(&current)? == recipe.sha256 {
            return Ok(());
        }
    }
    // The CPU whatever the default device: MLX's random numbers and quantization are the same
    // ops there as in Python's run, so the bytes are too.
    let tensors = mlx_rs::with_device(&Device::cpu(), || build(dir, &recipe))
        .map_err(|e| e.to_string())??;
    let made = digest(&tensors)?;
    if made != recipe.sha256 {
        return Err(format!(
            "the recipe makes tensors of SHA-256 {made}, Python's made {}",
            recipe.sha256
        ));
    }
    // Another process (a test binary running beside this one) may write the same file: each
    // writes its own and renames it into place, which is atomic. The name ends as MLX wants
    // it (it would append `.safetensors`) and starts unlike the `model*.safetensors` a loader
    // reads.
    let partial = dir.join(format!("partial-{}-{WEIGHTS}", std::process::id()));
    io::save_safetensors(&partial, &tensors, Some(&recipe.metadata)).map_err(|e| e.to_string())?;
    std::fs::rename(&partial, &path).map_err(|e| format!("{}: {e}", path.display()))
}

fn build(dir: &Path, recipe: &Recipe) -> Result<HashMap<String, Array>, String> {
    let (mut tensors, _) = io::load_safetensors(dir.join(INLINE)).map_err(|e| e.to_string())?;
    for entry in &recipe.tensors {
        let made = make(entry).map_err(|e| format!("{}: {e}", entry.name))?;
        mlx_rs::eval(made.values()).map_err(|e| e.to_string())?;
        tensors.extend(made);
    }
    Ok(tensors)
}

/// `normal(key(seed)) * scale + loc`, cast, and quantized where the entry says so: the ops
/// and order of `weights_recipe._make`.
fn make(entry: &Entry) -> Result<HashMap<String, Array>, String> {
    let e = |e: mlx_rs::Error| e.to_string();
    let dtype = dtype(&entry.dtype)?;
    let Normal { seed, loc, scale } = entry.normal;
    let key = random::key(seed).map_err(e)?;
    let x = random::normal(&entry.shape, Default::default(), &key).map_err(e)?;
    let scale = Array::from_slice(&[scale], &[]).map_err(e)?;
    let loc = Array::from_slice(&[loc], &[]).map_err(e)?;
    let x = ops::add(&ops::multiply(&x, &scale).map_err(e)?, &loc).map_err(e)?;
    let x = ops::astype(&x, dtype).map_err(e)?;
    let Some(q) = &entry.quantized else {
        return Ok(HashMap::from([(entry.name.clone(), x)]));
    };
    let mode = match q.mode.as_str() {
        "affine" => QuantizationMode::Affine,
        "mxfp4" => QuantizationMode::Mxfp4,
        "mxfp8" => QuantizationMode::Mxfp8,
        "nvfp4" => QuantizationMode::Nvfp4,
        other => return Err(format!("unknown quantization mode {other:?}")),
    };
    let options = QuantizeOptions::default()
        .group_size(q.group_size)
        .bits(q.bits)
        .mode(mode);
    let (w, scales, biases) = ops::quantize(&x, options).map_err(e)?;
    let mut out = HashMap::from([
        (format!("{}.weight", entry.name), w),
        (format!("{}.scales", entry.name), scales),
    ]);
    if let Some(biases) = biases {
        out.insert(format!("{}.biases", entry.name), biases);
    }
    Ok(out)
}

fn dtype(name: &str) -> Result<Dtype, String> {
    Dtype::ALL
        .into_iter()
        .find(|d| d.name() == name)
        .ok_or_else(|| format!("unknown dtype {name:?}"))
}

/// SHA-256 over the tensors in name order (name, dtype, shape, little-endian bytes), as
/// `weights_recipe.digest` computes it.
pub fn digest(tensors: &HashMap<String, Array>) -> Result<String, String> {
    let e = |e: mlx_rs::Error| e.to_string();
    let mut names: Vec<&String> = tensors.keys().collect();
    names.sort();
    let mut h = Sha256::new();
    for name in names {
        let x = &tensors[name];
        h.update(name.as_bytes());
        h.update(b"\0");
        h.update(x.dtype().name().as_bytes());
        h.update(b"\0");
        h.update(
            serde_json::to_string(x.shape())
                .expect("a shape")
                .as_bytes(),
        );
        h.update(b"\0");
        let flat = ops::reshape(x, &[-1]).map_err(e)?;
        let bytes = ops::view(&flat, Dtype::Uint8).map_err(e)?;
        h.update(bytes.to_vec::<u8>().map_err(e)?);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
