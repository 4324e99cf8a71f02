//! `config.json` (plus `generation_config.json`'s stop tokens), read as `mlx_lm.utils.load_config`
//! reads it, with a record of the keys an architecture's reader accounted for: a key that
//! may change the numerics must not be dropped without a word ([`ModelConfig::unread_keys`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// `model_type`s mlx_lm serves with another architecture's code (`MODEL_REMAPPING` in
/// mlx_lm 0.32.2, the entries whose target is an architecture of this crate's scope).
const MODEL_REMAPPING: &[(&str, &str)] = &[
    ("mistral", "llama"),
    ("iquestcoder", "llama"),
    ("xverse", "llama"),
    ("falcon_mamba", "mamba"),
];

/// `(model_type, architecture)` pairs mlx_lm serves with another architecture's code
/// (`MODEL_ARCHITECTURE_REMAPPING` in mlx_lm 0.32.2), consulted before [`MODEL_REMAPPING`]:
/// inclusionAI's Ling checkpoints with Kimi delta attention say `bailing_hybrid` beside
/// `BailingMoeV3ForCausalLM`.
const MODEL_ARCHITECTURE_REMAPPING: &[((&str, &str), &str)] = &[(
    ("bailing_hybrid", "BailingMoeV3ForCausalLM"),
    "bailing_moe_v3",
)];

/// Python's `_get_classes`: the first of the config's `architectures` (a list, or one string)
/// that [`MODEL_ARCHITECTURE_REMAPPING`] names with `model_type` picks the architecture;
/// otherwise [`MODEL_REMAPPING`] (or `model_type` itself).
fn remap_model_type(model_type: &str, values: &Map<String, Value>) -> String {
    let architectures: Vec<&str> = match values.get("architectures") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        Some(Value::String(s)) => vec![s.as_str()],
        _ => Vec::new(),
    };
    for architecture in architectures {
        if let Some((_, to)) = MODEL_ARCHITECTURE_REMAPPING
            .iter()
            .find(|((t, a), _)| *t == model_type && *a == architecture)
        {
            return (*to).to_string();
        }
    }
    MODEL_REMAPPING
        .iter()
        .find(|(from, _)| *from == model_type)
        .map_or(model_type.to_string(), |(_, to)| (*to).to_string())
}

/// transformers' `PreTrainedConfig` keys (5.23, plus those 4.x wrote, plus the generation
/// settings it pops from a model config): names, output and implementation switches, task
/// heads, encoder-decoder wiring, token ids and sampling defaults. None changes a decoder's
/// logits, so they are accounted for at the top level and in every sub-config (`*_config`)
/// without an architecture naming them. `tie_word_embeddings`, per-architecture in
/// transformers 5, is each architecture's to read.
const PRETRAINED_CONFIG_KEYS: &[&str] = &[
    // What the checkpoint is and where it came from. `dtype` is the stored tensors' dtype,
    // which the loader takes from the tensors themselves (or `LoadOptions::dtype`).
    "architectures",
    "model_type",
    "transformers_version",
    "_name_or_path",
    "name_or_path",
    "_commit_hash",
    "dtype",
    "torch_dtype",
    // What a forward call returns and how it is run, not what it computes.
    "output_hidden_states",
    "output_attentions",
    "return_dict",
    "use_return_dict",
    "torchscript",
    "use_cache",
    "use_bfloat16",
    "tf_legacy_loss",
    "gradient_checkpointing",
    "chunk_size_feed_forward",
    "attn_implementation",
    "_attn_implementation",
    "_attn_implementation_internal",
    "_attn_implementation_autoset",
    "experts_implementation",
    "_experts_implementation_internal",
    // Classification heads, fine-tuning tasks, encoder-decoder wiring: not in a decoder.
    "id2label",
    "label2id",
    "num_labels",
    "problem_type",
    "finetuning_task",
    "task_specific_params",
    "prefix",
    "pruned_heads",
    "is_encoder_decoder",
    "is_decoder",
    "add_cross_attention",
    "cross_attention_hidden_size",
    "tie_encoder_decoder",
    // Token ids and the tokenizer's class: the tokenizer's business (`eos_token_id` gives
    // stop tokens, `ModelConfig::eos_token_ids`).
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "sep_token_id",
    "decoder_start_token_id",
    "tokenizer_class",
    // Generation defaults (`GenerationConfig._get_default_generation_params`): sampling is
    // `GenerateOptions`', the logits are the same.
    "max_length",
    "min_length",
    "do_sample",
    "early_stopping",
    "num_beams",
    "num_beam_groups",
    "diversity_penalty",
    "temperature",
    "top_k",
    "top_p",
    "typical_p",
    "repetition_penalty",
    "length_penalty",
    "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size",
    "bad_words_ids",
    "num_return_sequences",
    "output_scores",
    "return_dict_in_generate",
    "forced_bos_token_id",
    "forced_eos_token_id",
    "remove_invalid_values",
    "exponential_decay_length_penalty",
    "suppress_tokens",
    "begin_suppress_tokens",
    "epsilon_cutoff",
    "eta_cutoff",
    "encoder_repetition_penalty",
    "num_assistant_tokens",
    "num_assistant_tokens_schedule",
    "assistant_confidence_threshold",
    "assistant_lookbehind",
    "target_lookbehind",
];

/// mlx_lm writes non-finite floats in a config as `{"__float__": "Infinity"}`, so the file
/// stays valid JSON.
const FLOAT_TAG: &str = "__float__";

/// A model's configuration: `config.json` as JSON values, with `generation_config.json`'s
/// `eos_token_id` taking precedence as in mlx_lm.
///
/// Every accessor ([`get`](Self::get), [`float`](Self::float), [`dim`](Self::dim), ...,
/// [`section`](Self::section) for the keys of a nested object) records the key it was asked
/// for; an architecture's reader also accounts for the keys it deliberately leaves alone
/// ([`declare_neutral`](Self::declare_neutral), [`require_value`](Self::require_value)). What
/// is left ([`unread_keys`](Self::unread_keys)) is what the loader reports
/// ([`LoadOptions::unread_keys`](crate::LoadOptions::unread_keys)). A section shares the
/// record of the config it came from; a clone starts with a copy of it.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("mlx-lm-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("config.json"), r#"{"model_type": "mistral", "rope_theta": 1e6}"#)?;
/// let config = mlx_lm::load_config(&dir)?;
/// assert_eq!(config.model_type(), "llama"); // mlx_lm serves mistral with its llama code
/// assert_eq!(config.float("rope_theta")?, Some(1e6));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ModelConfig {
    path: PathBuf,
    values: Map<String, Value>,
    model_type: String,
    /// Where these values sit in the file (`text_config.`), for error messages.
    prefix: String,
    accounted: Arc<Mutex<Accounted>>,
}

/// The keys a reader accounted for, by their path in the file (`text_config.hidden_size`).
#[derive(Debug, Clone, Default)]
struct Accounted {
    /// Read, declared neutral or checked: the whole value is accounted for.
    keys: BTreeSet<String>,
    /// Objects opened with `section`: accounted for key by key.
    sections: BTreeSet<String>,
}

impl Clone for ModelConfig {
    /// A copy whose record starts as this one's and then goes its own way.
    fn clone(&self) -> Self {
        ModelConfig {
            path: self.path.clone(),
            values: self.values.clone(),
            model_type: self.model_type.clone(),
            prefix: self.prefix.clone(),
            accounted: Arc::new(Mutex::new(self.record().clone())),
        }
    }
}

/// Reads `<dir>/config.json` and, when present, `<dir>/generation_config.json` (Python:
/// `mlx_lm.utils.load_config`). As there, a `generation_config.json` that does not parse is
/// ignored: it only ever contributes stop tokens.
pub fn load_config(dir: impl AsRef<Path>) -> Result<ModelConfig> {
    let path = dir.as_ref().join("config.json");
    let Value::Object(mut values) = read_json(&path)? else {
        return Err(invalid(&path, "", "the file is not a JSON object"));
    };
    let generation = dir.as_ref().join("generation_config.json");
    if generation.exists() {
        if let Ok(Value::Object(g)) = read_json(&generation) {
            // Python's `if eos := g.get("eos_token_id", False)`: 0, [] and null do not count.
            if let Some(eos) = g.get("eos_token_id").filter(|v| truthy(v)) {
                values.insert("eos_token_id".into(), eos.clone());
            }
        }
    }
    let model_type = match values.get("model_type") {
        Some(Value::String(t)) => t.clone(),
        Some(_) => return Err(invalid(&path, "model_type", "not a string")),
        None => return Err(invalid(&path, "model_type", "missing")),
    };
    let model_type = remap_model_type(&model_type, &values);
    Ok(ModelConfig {
        path,
        values,
        model_type,
        prefix: String::new(),
        accounted: Arc::default(),
    })
}

impl ModelConfig {
    /// A config from values made elsewhere (a GGUF file's metadata), `path` naming the file
    /// they came from; `model_type` is remapped as `load_config` does.
    pub(crate) fn from_values(path: &Path, values: Map<String, Value>) -> Result<ModelConfig> {
        let model_type = match values.get("model_type") {
            Some(Value::String(t)) => t.clone(),
            _ => return Err(invalid(path, "model_type", "missing or not a string")),
        };
        let model_type = remap_model_type(&model_type, &values);
        Ok(ModelConfig {
            path: path.to_path_buf(),
            values,
            model_type,
            prefix: String::new(),
            accounted: Arc::default(),
        })
    }

    /// The architecture: `model_type` after mlx_lm's remapping (`mistral` is `llama`).
    pub fn model_type(&self) -> &str {
        &self.model_type
    }

    /// The `config.json` this was read from, for error messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A raw value (`None` when absent), recorded as read whole (an object included: to read
    /// its keys one by one, take its [`section`](Self::section)).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.mark(key);
        self.values.get(key)
    }

    /// All values, `eos_token_id` from `generation_config.json` included. Looking here records
    /// nothing: a reader that takes its values from this map accounts for the keys it uses
    /// with [`get`](Self::get).
    pub fn values(&self) -> &Map<String, Value> {
        &self.values
    }

    /// A string (`None` when absent or null).
    pub fn string(&self, key: &str) -> Result<Option<&str>> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(invalid(
                &self.path,
                &self.key(key),
                &format!("expected a string, found {v}"),
            )),
        }
    }

    /// A number (`None` when absent or null), mlx_lm's tagged non-finite floats included.
    pub fn float(&self, key: &str) -> Result<Option<f64>> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => as_float(v).map(Some).ok_or_else(|| {
                invalid(
                    &self.path,
                    &self.key(key),
                    &format!("expected a number, found {v}"),
                )
            }),
        }
    }

    /// A non-negative integer (`None` when absent or null).
    pub fn usize(&self, key: &str) -> Result<Option<usize>> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| {
                    invalid(
                        &self.path,
                        &self.key(key),
                        &format!("expected a non-negative integer, found {v}"),
                    )
                }),
        }
    }

    /// A boolean (`None` when absent or null).
    pub fn bool(&self, key: &str) -> Result<Option<bool>> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(invalid(
                &self.path,
                &self.key(key),
                &format!("expected true or false, found {v}"),
            )),
        }
    }

    /// `key` as it appears in the file (`text_config.hidden_size`).
    pub(crate) fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// The object under `key` (`text_config`) as a config of its own, errors naming
    /// `key.<name>`; `model_type` is this config's. Its reads are recorded here, key by key
    /// (`text_config.hidden_size`): opening it accounts for none of them.
    pub fn section(&self, key: &str) -> Option<ModelConfig> {
        match self.values.get(key) {
            Some(Value::Object(values)) => {
                self.record().sections.insert(self.key(key));
                Some(ModelConfig {
                    path: self.path.clone(),
                    values: values.clone(),
                    model_type: self.model_type.clone(),
                    prefix: format!("{}{key}.", self.prefix),
                    accounted: Arc::clone(&self.accounted),
                })
            }
            _ => None,
        }
    }

    /// Accounts for keys this architecture leaves unread because they do not change its
    /// numerics (training settings such as `attention_dropout`, a size only a cache it does
    /// not have would use); say why at the call site. Absent keys are fine.
    pub fn declare_neutral(&self, keys: &[&str]) {
        for key in keys {
            self.mark(key);
        }
    }

    /// A key this architecture supports at one value only: absent, null or `supported` passes;
    /// any other value is an error naming the key, the value, the architecture and
    /// `supported`.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("mlx-lm-doc-req-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join("config.json"), r#"{"model_type": "qwen2", "use_sliding_window": true}"#)?;
    /// let config = mlx_lm::load_config(&dir)?;
    /// let e = config.require_value("use_sliding_window", false).unwrap_err().to_string();
    /// assert!(e.contains("use_sliding_window") && e.contains("qwen2"), "{e}");
    /// assert!(config.unread_keys().is_empty());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn require_value(&self, key: &str, supported: impl Into<Value>) -> Result<()> {
        let supported = supported.into();
        self.require(key, &supported.to_string(), |v| *v == supported)
    }

    /// A key this architecture supports at some values only: absent or null passes, and a
    /// value `ok` accepts; any other is an error naming the key, the value, the architecture
    /// and `supported` (what it accepts, in words).
    pub fn require(
        &self,
        key: &str,
        supported: &str,
        ok: impl FnOnce(&Value) -> bool,
    ) -> Result<()> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(()),
            Some(v) if ok(v) => Ok(()),
            Some(v) => Err(invalid(
                &self.path,
                &self.key(key),
                &format!(
                    "{v} is not supported by {} (supported: {supported})",
                    self.architecture()
                ),
            )),
        }
    }

    /// The keys no reader accounted for, by their path in the file (`foo_multiplier`,
    /// `rope_scaling.truncate`), in file order: each may change the numerics of the model
    /// built from this config. `PreTrainedConfig`'s own keys (names, token ids, output
    /// switches, sampling defaults) never count. A whole config answers for its sections; a
    /// section answers for its own keys.
    pub fn unread_keys(&self) -> Vec<String> {
        let record = self.record();
        let mut unread = Vec::new();
        let config =
            self.prefix.is_empty() || self.prefix.trim_end_matches('.').ends_with("_config");
        collect_unread(&self.values, &self.prefix, config, &record, &mut unread);
        unread
    }

    /// The architecture, as errors name it: `llama`, or `llama (serving mistral)` after
    /// mlx_lm's remapping.
    fn architecture(&self) -> String {
        match self.values.get("model_type").and_then(Value::as_str) {
            Some(t) if self.prefix.is_empty() && t != self.model_type => {
                format!("{} (serving {t})", self.model_type)
            }
            _ => self.model_type.clone(),
        }
    }

    fn mark(&self, key: &str) {
        self.record().keys.insert(self.key(key));
    }

    fn record(&self) -> std::sync::MutexGuard<'_, Accounted> {
        self.accounted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A required positive integer that fits an `i32` (array dimensions).
    pub fn dim(&self, key: &str) -> Result<i32> {
        self.dim_or(key, None)
    }

    /// `hidden / heads`, the head size of a family that derives it from `hidden_size` and
    /// `num_attention_heads`; an error naming the heads where they do not divide it.
    pub fn head_dim_of(&self, hidden: i32, heads: i32) -> Result<i32> {
        if hidden % heads != 0 {
            return Err(invalid(
                &self.path,
                &self.key("num_attention_heads"),
                &format!("{heads} heads do not divide hidden_size {hidden}"),
            ));
        }
        Ok(hidden / heads)
    }

    /// A positive integer that fits an `i32`, `default` when absent or null.
    pub fn dim_or(&self, key: &str, default: Option<i32>) -> Result<i32> {
        match self.usize(key)? {
            Some(n) => i32::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
                invalid(
                    &self.path,
                    &self.key(key),
                    &format!("{n} is not a valid size"),
                )
            }),
            None => default.ok_or_else(|| invalid(&self.path, &self.key(key), "missing")),
        }
    }

    /// A number, `default` when absent or null.
    pub fn float_or(&self, key: &str, default: f64) -> Result<f64> {
        Ok(self.float(key)?.unwrap_or(default))
    }

    /// A boolean, `default` when absent or null.
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool> {
        Ok(self.bool(key)?.unwrap_or(default))
    }

    /// The stop tokens: `eos_token_id` as one id or a list (empty when absent).
    pub fn eos_token_ids(&self) -> Result<Vec<u32>> {
        let bad = |v: &Value| invalid(&self.path, "eos_token_id", &format!("not a token id: {v}"));
        let id = |v: &Value| {
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad(v))
        };
        match self.get("eos_token_id") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(ids)) => ids.iter().map(id).collect(),
            Some(v) => Ok(vec![id(v)?]),
        }
    }
}

/// The keys of `values` (at `prefix`) that `record` does not account for; `config` says that
/// `values` is a (sub-)config, where `PreTrainedConfig`'s keys are accounted for.
fn collect_unread(
    values: &Map<String, Value>,
    prefix: &str,
    config: bool,
    record: &Accounted,
    unread: &mut Vec<String>,
) {
    for (key, value) in values {
        let path = format!("{prefix}{key}");
        if record.keys.contains(&path) || config && PRETRAINED_CONFIG_KEYS.contains(&key.as_str()) {
            continue;
        }
        match value {
            Value::Object(inner) if record.sections.contains(&path) => {
                // transformers' sub-configs (`text_config`, `vision_config`) are named so.
                let sub_config = key.ends_with("_config");
                collect_unread(inner, &format!("{path}."), sub_config, record, unread);
            }
            _ => unread.push(path),
        }
    }
}

pub(crate) fn as_float(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Object(o) if o.len() == 1 => match o.get(FLOAT_TAG)?.as_str()? {
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            "NaN" => Some(f64::NAN),
            _ => None,
        },
        _ => None,
    }
}

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

pub(crate) fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text)
        .or_else(|e| match tag_non_finite(&text) {
            // Python's json writes non-finite floats as bare `Infinity` / `NaN` (transformers'
            // Mamba2Config's `time_step_limit` is `[0.0, Infinity]`), which is not JSON.
            Some(tagged) => serde_json::from_str(&tagged).map_err(|_| e),
            None => Err(e),
        })
        .map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })
}

/// `text` with Python's bare `Infinity`, `-Infinity` and `NaN` (outside strings) written as
/// mlx_lm's tagged floats (`{"__float__": "Infinity"}`), or `None` when it has none.
fn tag_non_finite(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some(token) = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|t| rest.starts_with(t))
        {
            out.push_str(&format!("{{\"{FLOAT_TAG}\": \"{token}\"}}"));
            rest = &rest[token.len()..];
            changed = true;
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    changed.then_some(out)
}

pub(crate) fn invalid(path: &Path, key: &str, message: &str) -> Error {
    Error::Invalid {
        path: path.to_path_buf(),
        key: key.to_string(),
        message: message.to_string(),
    }
}
