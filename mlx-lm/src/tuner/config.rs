//! mlx_lm.lora's options (Python: `lora.py`'s `CONFIG_DEFAULTS`, its YAML file and its
//! command-line flags) and what they build: the learning-rate schedule (`build_schedule`)
//! and the optimizer (`optimizer` + `optimizer_config`).
//!
//! The layers merge as in mlx_lm's `main`: a flag given on the command line wins, then the
//! YAML file's value, then the default. Unlike Python, which copies any key of the file into
//! its namespace (so a misspelled key is silently ignored), a key that is not one of
//! mlx_lm's options is an `Err` naming it, in the file and in its nested tables.

use std::path::{Path, PathBuf};

use mlx_optimizers::{
    cosine_decay, exponential_decay, join_schedules, linear_schedule, step_decay, Adafactor, Adam,
    AdamW, AnyOptimizer, LearningRate, Muon, Schedule, SGD,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{FineTuneType, LoraParameters};
use crate::{Error, Result};

/// Every option of `mlx_lm.lora`, resolved (Python: the `args` namespace after `main` filled
/// it from the flags, the YAML file and `CONFIG_DEFAULTS`). Field names are mlx_lm's keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraConfig {
    pub model: String,
    pub train: bool,
    pub fine_tune_type: FineTuneType,
    /// `adam`, `adamw`, `muon`, `sgd` or `adafactor` (any case, as Python lowercases it).
    pub optimizer: String,
    /// Keyword arguments of each optimizer; only the chosen one's are used.
    pub optimizer_config: OptimizerConfig,
    pub data: String,
    pub seed: u64,
    pub num_layers: i32,
    pub batch_size: usize,
    pub iters: usize,
    /// Validation batches; -1: the whole validation set.
    pub val_batches: i64,
    /// The fixed learning rate, used when there is no `lr_schedule`.
    pub learning_rate: f64,
    pub steps_per_report: usize,
    pub steps_per_eval: usize,
    pub resume_adapter_file: Option<PathBuf>,
    pub adapter_path: PathBuf,
    pub save_every: usize,
    pub test: bool,
    /// Test batches; -1: the whole test set.
    pub test_batches: i64,
    pub max_seq_length: usize,
    /// The YAML file these options came from.
    pub config: Option<PathBuf>,
    pub grad_checkpoint: bool,
    pub grad_accumulation_steps: usize,
    /// Clear MLX's buffer cache after a step when it holds more than this many bytes (0:
    /// after every step where it holds any).
    pub clear_cache_threshold: u64,
    pub lr_schedule: Option<LrSchedule>,
    pub lora_parameters: LoraParametersConfig,
    pub mask_prompt: bool,
    /// mlx_lm's `wandb` / `swanlab` reporting, which is not here: anything but null is an
    /// `Err` when the config resolves.
    pub report_to: Option<String>,
    pub project_name: Option<String>,
    /// Accepted for mlx_lm's configs; nothing here runs a checkpoint's own code.
    pub trust_remote_code: bool,
    /// The dataset record keys mlx_lm's `load_local_dataset` reads from the same namespace
    /// (not in `CONFIG_DEFAULTS`, but documented keys of its YAML files).
    #[serde(default = "default_text_feature")]
    pub text_feature: String,
    #[serde(default = "default_prompt_feature")]
    pub prompt_feature: String,
    #[serde(default = "default_completion_feature")]
    pub completion_feature: String,
    #[serde(default = "default_chat_feature")]
    pub chat_feature: String,
}

fn default_text_feature() -> String {
    "text".into()
}
fn default_prompt_feature() -> String {
    "prompt".into()
}
fn default_completion_feature() -> String {
    "completion".into()
}
fn default_chat_feature() -> String {
    "messages".into()
}

/// mlx_lm's `lr_schedule`: a schedule of `mlx.optimizers` by name with its positional
/// arguments (the first is the initial rate), after an optional linear warm-up of `warmup`
/// steps from `warmup_init`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LrSchedule {
    pub name: String,
    pub arguments: Vec<f64>,
    #[serde(default)]
    pub warmup: u64,
    #[serde(default)]
    pub warmup_init: f64,
}

/// `lora_parameters` as a config gives them: `rank`, `scale` and `dropout` are required, as
/// mlx_lm's `linear_to_lora_layers` reads all three (it names a missing `scale`); `keys`
/// optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraParametersConfig {
    pub rank: i32,
    pub scale: f64,
    pub dropout: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<Vec<String>>,
}

impl From<&LoraParametersConfig> for LoraParameters {
    fn from(c: &LoraParametersConfig) -> Self {
        LoraParameters {
            rank: c.rank,
            scale: c.scale,
            dropout: c.dropout,
            keys: c.keys.clone(),
        }
    }
}

/// `optimizer_config`: the keyword arguments of each optimizer (Python passes the chosen
/// one's as `opt_class(learning_rate=lr, **optimizer_config[name])`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptimizerConfig {
    #[serde(default)]
    pub adam: AdamConfig,
    #[serde(default)]
    pub adamw: AdamWConfig,
    #[serde(default)]
    pub muon: MuonConfig,
    #[serde(default)]
    pub sgd: SgdConfig,
    #[serde(default)]
    pub adafactor: AdafactorConfig,
}

/// `optim.Adam`'s keyword arguments; unset ones take Python's defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdamConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub betas: Option<(f64, f64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eps: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bias_correction: Option<bool>,
}

/// `optim.AdamW`'s keyword arguments.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdamWConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub betas: Option<(f64, f64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eps: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_decay: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bias_correction: Option<bool>,
}

/// `optim.SGD`'s keyword arguments.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SgdConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub momentum: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_decay: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dampening: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nesterov: Option<bool>,
}

/// `optim.Muon`'s keyword arguments.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MuonConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub momentum: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_decay: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nesterov: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ns_steps: Option<usize>,
}

/// `optim.Adafactor`'s keyword arguments.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdafactorConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eps: Option<(f64, f64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clip_threshold: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decay_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta_1: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_decay: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_parameter: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relative_step: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup_init: Option<bool>,
}

/// mlx_lm's `CONFIG_DEFAULTS`, as JSON.
pub fn config_defaults() -> Map<String, Value> {
    let Value::Object(map) = serde_json::json!({
        "model": "Qwen/Qwen3-0.6b",
        "train": false,
        "fine_tune_type": "lora",
        "optimizer": "adam",
        "optimizer_config": {"adam": {}, "adamw": {}, "muon": {}, "sgd": {}, "adafactor": {}},
        "data": "mlx-community/WikiSQL",
        "seed": 0,
        "num_layers": 16,
        "batch_size": 4,
        "iters": 1000,
        "val_batches": 25,
        "learning_rate": 1e-5,
        "steps_per_report": 10,
        "steps_per_eval": 200,
        "resume_adapter_file": null,
        "adapter_path": "adapters",
        "save_every": 100,
        "test": false,
        "test_batches": 500,
        "max_seq_length": 2048,
        "config": null,
        "grad_checkpoint": false,
        "grad_accumulation_steps": 1,
        "clear_cache_threshold": 0,
        "lr_schedule": null,
        "lora_parameters": {"rank": 8, "dropout": 0.0, "scale": 20.0},
        "mask_prompt": false,
        "report_to": null,
        "project_name": null,
        "trust_remote_code": false,
    }) else {
        unreachable!("a JSON object literal")
    };
    map
}

/// Reads a YAML config file as a table of options. serde_norway, the maintained fork of
/// serde_yaml (archived), with its pure-Rust libyaml port: it reads `1e-5` as a float, as
/// mlx_lm's SafeLoader does with the resolver `lora.py` adds for it.
pub fn load_config_file(path: impl AsRef<Path>) -> Result<Map<String, Value>> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let invalid = |message: String| Error::Invalid {
        path: path.to_path_buf(),
        key: "config".into(),
        message,
    };
    let value: Value = serde_norway::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    match value {
        Value::Object(map) => Ok(map),
        // An empty file: no options.
        Value::Null => Ok(Map::new()),
        other => Err(invalid(format!("expected a table of options, got {other}"))),
    }
}

impl LoraConfig {
    /// The options as mlx_lm's `main` merges them: each of `flags` (the command line; absent
    /// or null: not given), else the file's value, else `CONFIG_DEFAULTS`'. A key of either
    /// that is not an option, or a value of the wrong kind, is an `Err` naming it.
    pub fn resolve(
        flags: Map<String, Value>,
        file: Option<(&Path, Map<String, Value>)>,
    ) -> Result<LoraConfig> {
        let mut args: Map<String, Value> =
            flags.into_iter().filter(|(_, v)| !v.is_null()).collect();
        let source = file.as_ref().map(|(p, _)| p.to_path_buf());
        if let Some((_, file)) = file {
            for (k, v) in file {
                if !args.contains_key(&k) && !v.is_null() {
                    args.insert(k, v);
                }
            }
        }
        for (k, v) in config_defaults() {
            args.entry(k).or_insert(v);
        }
        let path = source.unwrap_or_else(|| PathBuf::from("<command line>"));
        let config: LoraConfig = match serde_json::from_value(Value::Object(args.clone())) {
            Ok(c) => c,
            Err(e) => {
                return Err(Error::Invalid {
                    path,
                    key: culprit(&args).unwrap_or_else(|| "config".into()),
                    message: e.to_string(),
                })
            }
        };
        if let Some(to) = &config.report_to {
            return Err(Error::Invalid {
                path,
                key: "report_to".into(),
                message: format!("reporting to {to:?} is not supported"),
            });
        }
        if config.grad_accumulation_steps < 1 {
            return Err(Error::InvalidArgument(
                "grad_accumulation_steps must be at least 1".into(),
            ));
        }
        Ok(config)
    }

    /// The learning rate the optimizer gets (Python: `build_schedule(args.lr_schedule) if
    /// args.lr_schedule else args.learning_rate`).
    pub fn learning_rate(&self) -> Result<LearningRate> {
        Ok(match &self.lr_schedule {
            Some(s) => LearningRate::Schedule(build_schedule(s)?),
            None => LearningRate::Fixed(self.learning_rate as f32),
        })
    }

    /// The optimizer `optimizer` names, with its `optimizer_config` and the learning rate
    /// (Python: `opt_class(learning_rate=lr, **optimizer_config)`).
    pub fn build_optimizer(&self) -> Result<AnyOptimizer> {
        let lr = self.learning_rate()?;
        let c = &self.optimizer_config;
        Ok(match self.optimizer.to_lowercase().as_str() {
            "adam" => {
                let mut o = Adam::new(lr);
                if let Some((b1, b2)) = c.adam.betas {
                    o = o.betas(b1, b2);
                }
                if let Some(eps) = c.adam.eps {
                    o = o.eps(eps);
                }
                if let Some(b) = c.adam.bias_correction {
                    o = o.bias_correction(b);
                }
                o.into()
            }
            "adamw" => {
                let mut o = AdamW::new(lr);
                if let Some((b1, b2)) = c.adamw.betas {
                    o = o.betas(b1, b2);
                }
                if let Some(eps) = c.adamw.eps {
                    o = o.eps(eps);
                }
                if let Some(w) = c.adamw.weight_decay {
                    o = o.weight_decay(w);
                }
                if let Some(b) = c.adamw.bias_correction {
                    o = o.bias_correction(b);
                }
                o.into()
            }
            "sgd" => {
                let mut o = SGD::new(lr);
                if let Some(m) = c.sgd.momentum {
                    o = o.momentum(m);
                }
                if let Some(w) = c.sgd.weight_decay {
                    o = o.weight_decay(w);
                }
                if let Some(d) = c.sgd.dampening {
                    o = o.dampening(d);
                }
                if let Some(n) = c.sgd.nesterov {
                    o = o.nesterov(n);
                }
                o.into()
            }
            "muon" => {
                let mut o = Muon::new(lr);
                if let Some(m) = c.muon.momentum {
                    o = o.momentum(m);
                }
                if let Some(w) = c.muon.weight_decay {
                    o = o.weight_decay(w);
                }
                if let Some(n) = c.muon.nesterov {
                    o = o.nesterov(n);
                }
                if let Some(n) = c.muon.ns_steps {
                    o = o.ns_steps(n);
                }
                o.into()
            }
            "adafactor" => {
                let a = &c.adafactor;
                let mut o = Adafactor::new().learning_rate(lr);
                if let Some((e1, e2)) = a.eps {
                    o = o.eps(e1, e2);
                }
                if let Some(v) = a.clip_threshold {
                    o = o.clip_threshold(v);
                }
                if let Some(v) = a.decay_rate {
                    o = o.decay_rate(v);
                }
                if let Some(v) = a.beta_1 {
                    o = o.beta_1(v);
                }
                if let Some(v) = a.weight_decay {
                    o = o.weight_decay(v);
                }
                if let Some(v) = a.scale_parameter {
                    o = o.scale_parameter(v);
                }
                if let Some(v) = a.relative_step {
                    o = o.relative_step(v);
                }
                if let Some(v) = a.warmup_init {
                    o = o.warmup_init(v);
                }
                o.into()
            }
            other => {
                return Err(Error::InvalidArgument(format!(
                    "Unsupported optimizer: {other}"
                )))
            }
        })
    }

    /// mlx_lm's `adapter_config.json`: every option (Python: `save_config(vars(args))`,
    /// sorted by key).
    pub fn to_json(&self) -> Result<Value> {
        let value =
            serde_json::to_value(self).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        Ok(match value {
            Value::Object(map) => {
                let mut entries: Vec<(String, Value)> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().collect())
            }
            other => other,
        })
    }
}

/// The option whose value fails alone over the defaults (serde names an unknown key, not the
/// key of a value of the wrong kind).
fn culprit(args: &Map<String, Value>) -> Option<String> {
    args.iter().find_map(|(k, v)| {
        let mut alone = config_defaults();
        alone.insert(k.clone(), v.clone());
        serde_json::from_value::<LoraConfig>(Value::Object(alone))
            .is_err()
            .then(|| k.clone())
    })
}

fn count(name: &str, index: usize, v: f64) -> Result<u64> {
    if v.fract() != 0.0 || v < 0.0 {
        return Err(Error::InvalidArgument(format!(
            "lr_schedule {name}: argument {index} ({v}) must be a whole number of steps"
        )));
    }
    Ok(v as u64)
}

/// mlx_lm's `build_schedule`: `name(*arguments)` of `mlx.optimizers`' schedules, joined after
/// a linear warm-up from `warmup_init` to the first argument over `warmup` steps (the
/// schedule starting at step `warmup + 1`, as Python's boundary).
pub fn build_schedule(config: &LrSchedule) -> Result<Schedule> {
    let a = &config.arguments;
    let name = config.name.as_str();
    let arity = |min: usize, max: usize| -> Result<()> {
        if a.len() < min || a.len() > max {
            return Err(Error::InvalidArgument(format!(
                "lr_schedule {name} takes {min} to {max} arguments, got {}",
                a.len()
            )));
        }
        Ok(())
    };
    let run = Error::Run;
    let schedule = match name {
        "exponential_decay" => {
            arity(2, 2)?;
            exponential_decay(a[0], a[1])
        }
        "step_decay" => {
            arity(3, 3)?;
            step_decay(a[0], a[1], count(name, 2, a[2])?).map_err(run)?
        }
        "cosine_decay" => {
            arity(2, 3)?;
            cosine_decay(a[0], count(name, 1, a[1])?, a.get(2).copied()).map_err(run)?
        }
        "linear_schedule" => {
            arity(3, 3)?;
            linear_schedule(a[0], a[1], count(name, 2, a[2])?).map_err(run)?
        }
        other => {
            return Err(Error::InvalidArgument(format!(
                "lr_schedule: unknown schedule {other:?} (exponential_decay, step_decay, \
                 cosine_decay, linear_schedule)"
            )))
        }
    };
    if config.warmup == 0 {
        return Ok(schedule);
    }
    let warmup = linear_schedule(config.warmup_init, a[0], config.warmup).map_err(run)?;
    join_schedules(vec![warmup, schedule], vec![config.warmup + 1]).map_err(run)
}

/// The dataset options of a config (its record keys and `mask_prompt`).
impl From<&LoraConfig> for super::DatasetOptions {
    fn from(c: &LoraConfig) -> Self {
        super::DatasetOptions {
            text_feature: c.text_feature.clone(),
            prompt_feature: c.prompt_feature.clone(),
            completion_feature: c.completion_feature.clone(),
            chat_feature: c.chat_feature.clone(),
            mask_prompt: c.mask_prompt,
        }
    }
}
