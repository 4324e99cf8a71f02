//! Adapters on a loaded model (Python: `mlx_lm.tuner.utils.linear_to_lora_layers`,
//! `load_adapters`, and the fuse of `mlx_lm.fuse`): one mechanism for every architecture,
//! because a model's linear layers, expert layers and embedding tables are
//! [`MaybeQuantized`](mlx_nn::MaybeQuantized) fields whose third variant is the adapted layer
//! ([`LoRALinear`], [`LoRASwitchLinear`], [`LoRAEmbedding`]): modules are found and replaced
//! by path in the model's tree, as Python's `named_modules` / `update_modules` do.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use mlx_nn::{
    AnyModule, LoRAEmbedding, LoRALinear, LoRAOptions, MaybeQuantized, Module, Quantizable,
};
use mlx_rs::Array;
use serde::Deserialize;
use serde_json::Value;

use crate::blocks::switch::LoRASwitchLinear;

use crate::{Error, Result};

/// How a model is fine-tuned (Python: `fine_tune_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FineTuneType {
    #[default]
    Lora,
    Dora,
    Full,
}

/// mlx_lm's `lora_parameters`: the adapters' rank, scale, dropout, and the module keys
/// (relative to a layer) that get one; `None`: every linear layer of the layers.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct LoraParameters {
    pub rank: i32,
    pub scale: f64,
    #[serde(default)]
    pub dropout: f64,
    #[serde(default)]
    pub keys: Option<Vec<String>>,
}

impl Default for LoraParameters {
    /// mlx_lm's defaults (`lora.py`'s `CONFIG_DEFAULTS`).
    fn default() -> Self {
        LoraParameters {
            rank: 8,
            scale: 20.0,
            dropout: 0.0,
            keys: None,
        }
    }
}

/// The part of `adapter_config.json` that decides the model's structure (mlx_lm writes all
/// its training arguments there; the rest is not needed to load the adapters).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct AdapterConfig {
    #[serde(default)]
    pub fine_tune_type: FineTuneType,
    pub num_layers: i32,
    #[serde(default)]
    pub lora_parameters: LoraParameters,
}

impl AdapterConfig {
    /// Reads `dir/adapter_config.json`.
    pub fn load(dir: impl AsRef<Path>) -> Result<AdapterConfig> {
        let path = dir.as_ref().join("adapter_config.json");
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let mut json: Value = serde_json::from_str(&text).map_err(|source| Error::Json {
            path: path.clone(),
            source,
        })?;
        // A full fine-tune's config has `lora_parameters: null` (mlx_lm.lora clears it before
        // saving), and mlx_lm's load_adapters reads the key only for LoRA and DoRA.
        if json.get("fine_tune_type").and_then(Value::as_str) == Some("full") {
            if let Some(table) = json.as_object_mut() {
                table.remove("lora_parameters");
            }
        }
        if let Some(p) = json.get("lora_parameters") {
            if p.is_null() {
                return Err(Error::Invalid {
                    path,
                    key: "lora_parameters".into(),
                    message: "null: LoRA and DoRA adapters need their rank and scale".into(),
                });
            }
            if p.get("scale").is_none() {
                // mlx_lm raises here too; `alpha` is other frameworks' name.
                return Err(Error::Invalid {
                    path,
                    key: "lora_parameters".into(),
                    message: "missing `scale` (mlx_lm's LoRA config uses `scale`, not `alpha`)"
                        .into(),
                });
            }
        }
        serde_json::from_value(json).map_err(|e| Error::Invalid {
            path,
            key: String::new(),
            message: e.to_string(),
        })
    }
}

fn run(e: mlx_rs::Error) -> Error {
    Error::Run(e)
}

/// The path of the model's list of blocks (Python: `model.layers`): the shallowest list of
/// modules named `layers`, and how many it holds.
fn layers_of(modules: &[(String, AnyModule)]) -> Result<(String, usize)> {
    let mut found: Vec<(String, usize)> = Vec::new();
    for (path, _) in modules {
        let Some((prefix, index)) = path.rsplit_once('.') else {
            continue;
        };
        let Ok(index) = index.parse::<usize>() else {
            continue;
        };
        if !(prefix == "layers" || prefix.ends_with(".layers")) {
            continue;
        }
        match found.iter_mut().find(|(p, _)| p == prefix) {
            Some((_, n)) => *n = (*n).max(index + 1),
            None => found.push((prefix.to_string(), index + 1)),
        }
    }
    found
        .into_iter()
        .min_by_key(|(p, _)| p.split('.').count())
        .ok_or_else(|| Error::InvalidArgument("the model has no `layers` to adapt".into()))
}

/// Python's type test in `get_keys_for_lora`: the modules an adapter can wrap.
fn adaptable(module: &AnyModule) -> bool {
    matches!(
        module.type_name(),
        "Linear"
            | "QuantizedLinear"
            | "SwitchLinear"
            | "QuantizedSwitchLinear"
            | "Embedding"
            | "QuantizedEmbedding"
    )
}

/// Python's `to_lora(layer)`: the adapter for the module at `path` (LoRA or DoRA on a linear
/// layer or an embedding, LoRA on expert layers), float or quantized. The base's parameters
/// that are frozen in the model (`frozen`, full paths) stay frozen inside the adapter, as
/// Python's module keeps its own frozen set when it is wrapped.
fn to_lora(
    path: &str,
    module: &AnyModule,
    options: LoRAOptions,
    frozen: &BTreeSet<String>,
) -> Result<AnyModule> {
    // The base's frozen parameters, as the adapter names them (under `field`).
    let keep = |field: &str| -> Vec<String> {
        module
            .named_parameters()
            .into_iter()
            .filter(|(p, _)| frozen.contains(&format!("{path}.{p}")))
            .map(|(p, _)| format!("{field}.{p}"))
            .collect()
    };
    let build = || -> mlx_rs::Result<Option<AnyModule>> {
        let linear = |base| wrap(LoRALinear::from_base(base, options)?, &keep("linear"));
        let switch = |base| wrap(LoRASwitchLinear::from_base(base, options)?, &keep("linear"));
        let table = |base| wrap(LoRAEmbedding::from_base(base, options)?, &keep("embedding"));
        Ok(Some(match module.type_name() {
            "Linear" => linear(MaybeQuantized::Float(module.downcast()?))?,
            "QuantizedLinear" => linear(MaybeQuantized::Quantized(module.downcast()?))?,
            "SwitchLinear" => switch(MaybeQuantized::Float(module.downcast()?))?,
            "QuantizedSwitchLinear" => switch(MaybeQuantized::Quantized(module.downcast()?))?,
            "Embedding" => table(MaybeQuantized::Float(module.downcast()?))?,
            "QuantizedEmbedding" => table(MaybeQuantized::Quantized(module.downcast()?))?,
            _ => return Ok(None),
        }))
    };
    build()
        .map_err(|e| Error::InvalidArgument(format!("{path}: {e}")))?
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{path}: can't convert a layer of type {} to LoRA",
                module.type_name()
            ))
        })
}

/// `adapter` as a module, with its base's parameters `frozen` (paths in the adapter) frozen.
fn wrap<T: Module>(mut adapter: T, frozen: &[String]) -> mlx_rs::Result<AnyModule> {
    if !frozen.is_empty() {
        let keys: Vec<&str> = frozen.iter().map(String::as_str).collect();
        adapter.freeze(Some(&keys))?;
    }
    AnyModule::new(&adapter)
}

/// The model's frozen parameters, by full path.
fn frozen_parameters<M: Module>(model: &M) -> Result<BTreeSet<String>> {
    let names = model.named_parameters().map_err(run)?;
    let mask = model.trainable_mask().map_err(run)?;
    Ok(names
        .into_iter()
        .zip(mask)
        .filter_map(|((p, _), trainable)| (!trainable).then_some(p))
        .collect())
}

/// Replaces the model's linear layers by adapted ones (Python: `linear_to_lora_layers(model,
/// num_layers, config, use_dora)`): in the last `num_layers` blocks (all of them for a value
/// `<= 0`, as Python's `model.layers[-max(num_layers, 0):]`), the modules at `keys` (paths
/// relative to a block; by default every linear layer found in any block), then any module
/// of the whole model whose full path is one of the keys. The adapters are drawn from MLX's
/// global random state in Python's order, so a seeded run gives mlx_lm's adapters.
pub fn linear_to_lora_layers<M: Module>(
    model: &mut M,
    num_layers: i32,
    config: &LoraParameters,
    use_dora: bool,
) -> Result<()> {
    let options = LoRAOptions {
        rank: config.rank,
        scale: config.scale,
        dropout: config.dropout,
        dora: use_dora,
    };
    let modules = model.named_modules().map_err(run)?;
    let (layers, count) = layers_of(&modules)?;
    let in_layer = |path: &str| -> Option<(usize, String)> {
        let rest = path.strip_prefix(layers.as_str())?.strip_prefix('.')?;
        let (index, key) = rest.split_once('.')?;
        Some((index.parse().ok()?, key.to_string()))
    };
    let keys: BTreeSet<String> = match &config.keys {
        Some(keys) => keys.iter().cloned().collect(),
        None => modules
            .iter()
            .filter(|(_, m)| adaptable(m))
            .filter_map(|(p, _)| in_layer(p).map(|(_, k)| k))
            .collect(),
    };
    let first = match usize::try_from(num_layers) {
        Ok(n) if n > 0 => count.saturating_sub(n),
        _ => 0,
    };
    // Block by block from the first, each in its own `named_modules` order, as Python's
    // loop draws them. (The model's `named_modules` visits the blocks last first; a block's
    // modules are contiguous there, in the block's own order, so a stable sort by index
    // gives Python's sequence.)
    let mut chosen: Vec<(usize, &String, &AnyModule)> = modules
        .iter()
        .filter_map(|(path, module)| {
            let (index, key) = in_layer(path)?;
            (index >= first && keys.contains(&key)).then_some((index, path, module))
        })
        .collect();
    chosen.sort_by_key(|(index, _, _)| *index);
    let frozen = frozen_parameters(model)?;
    let mut replaced = Vec::new();
    for (_, path, module) in chosen {
        replaced.push((path.clone(), to_lora(path, module, options, &frozen)?));
    }
    if !replaced.is_empty() {
        model.update_modules(replaced).map_err(run)?;
    }
    // Python's second pass over the whole model, with the keys as full paths.
    let frozen = frozen_parameters(model)?;
    let mut top = Vec::new();
    for (path, module) in model.named_modules().map_err(run)? {
        if keys.contains(&path) {
            top.push((path.clone(), to_lora(&path, &module, options, &frozen)?));
        }
    }
    if !top.is_empty() {
        model.update_modules(top).map_err(run)?;
    }
    Ok(())
}

/// Loads fine-tuned adapters from `dir` (`adapter_config.json`, `adapters.safetensors`)
/// into `model` (Python: `load_adapters(model, adapter_path)`): adds the adapter layers
/// the config describes, then loads their tensors; a full fine-tune's file replaces any of
/// the model's parameters. Every tensor must name a parameter of that kind with its shape.
pub fn load_adapters<M: Module>(model: &mut M, dir: impl AsRef<Path>) -> Result<()> {
    let dir = dir.as_ref();
    if !dir.exists() {
        return Err(Error::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the adapter path does not exist",
            ),
        });
    }
    let config = AdapterConfig::load(dir)?;
    if config.fine_tune_type != FineTuneType::Full {
        linear_to_lora_layers(
            model,
            config.num_layers,
            &config.lora_parameters,
            config.fine_tune_type == FineTuneType::Dora,
        )?;
    }
    let file: PathBuf = dir.join("adapters.safetensors");
    let (weights, _) = mlx_rs::io::load_safetensors(&file).map_err(|source| Error::Mlx {
        path: file.clone(),
        source,
    })?;
    let params: HashMap<String, Array> =
        model.named_parameters().map_err(run)?.into_iter().collect();
    let adapter_leaf =
        |name: &str| matches!(name.rsplit('.').next(), Some("lora_a" | "lora_b" | "m"));
    let mut errors = Vec::new();
    let mut names: Vec<&String> = weights.keys().collect();
    names.sort();
    for name in names {
        let w = &weights[name];
        match params.get(name.as_str()) {
            Some(p) if config.fine_tune_type == FineTuneType::Full || adapter_leaf(name) => {
                if p.shape() != w.shape() {
                    errors.push(format!(
                        "  {name}: adapter shape {:?} does not match model parameter shape {:?}",
                        w.shape(),
                        p.shape()
                    ));
                }
            }
            _ => errors.push(format!("  {name}: not an adapter parameter in the model")),
        }
    }
    if !errors.is_empty() {
        return Err(Error::Invalid {
            path: file,
            key: String::new(),
            message: format!("incompatible tensors:\n{}", errors.join("\n")),
        });
    }
    model
        .update_named_parameters(weights.into_iter().collect())
        .map_err(run)
}

/// Merges every adapter into its base layer (Python: `mlx_lm.fuse`'s
/// `[(n, m.fuse(dequantize)) for n, m in model.named_modules() if hasattr(m, "fuse")]` then
/// `model.update_modules`): a quantized base is requantized with its own settings unless
/// `dequantize`. Returns how many layers were fused. (mlx_lm's `--dequantize` also
/// dequantizes the layers without adapters, through `dequantize_model`; that is not done
/// here.)
pub fn fuse_adapters<M: Module>(model: &mut M, dequantize: bool) -> Result<usize> {
    let mut fused = Vec::new();
    for (path, module) in model.named_modules().map_err(run)? {
        let merged = match module.type_name() {
            "LoRALinear" => fused_module(
                module
                    .downcast::<LoRALinear>()
                    .map_err(run)?
                    .fuse(dequantize),
            ),
            "LoRASwitchLinear" => fused_module(
                module
                    .downcast::<LoRASwitchLinear>()
                    .map_err(run)?
                    .fuse(dequantize),
            ),
            "LoRAEmbedding" => fused_module(
                module
                    .downcast::<LoRAEmbedding>()
                    .map_err(run)?
                    .fuse(dequantize),
            ),
            _ => continue,
        };
        fused.push((path, merged.map_err(run)?));
    }
    let n = fused.len();
    if n > 0 {
        model.update_modules(fused).map_err(run)?;
    }
    Ok(n)
}

/// The layer an adapter's `fuse` returns, as a module (float or quantized).
fn fused_module<T: Quantizable>(
    layer: mlx_rs::Result<MaybeQuantized<T>>,
) -> mlx_rs::Result<AnyModule> {
    match layer? {
        MaybeQuantized::Float(l) => AnyModule::new(&l),
        MaybeQuantized::Quantized(q) => AnyModule::new(&q),
        MaybeQuantized::Adapted(a) => AnyModule::new(&*a),
        MaybeQuantized::Sharded(s) => AnyModule::new(&*s),
    }
}

/// Unfreezes the last `num_layers` blocks (all for a value `<= 0`), what `mlx_lm.lora` does
/// for `fine_tune_type: full` after `model.freeze()`.
pub fn unfreeze_last_layers<M: Module>(model: &mut M, num_layers: i32) -> Result<()> {
    let modules = model.named_modules().map_err(run)?;
    let (layers, count) = layers_of(&modules)?;
    let first = match usize::try_from(num_layers) {
        Ok(n) if n > 0 => count.saturating_sub(n),
        _ => 0,
    };
    let keys: Vec<String> = (first..count).map(|i| format!("{layers}.{i}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    model.unfreeze(Some(&keys)).map_err(run)
}
