//! mlx_lm's local datasets: `train.jsonl`, `valid.jsonl` and `test.jsonl` in a directory, one
//! JSON object per line in one of three formats (detected from the first record):
//! `{"text": ...}`, `{"prompt": ..., "completion": ...}` or `{"messages": [...]}` (with
//! optional `tools`), tokenized as mlx_lm's `TextDataset`, `CompletionsDataset` and
//! `ChatDataset` do.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::batches::Example;
use crate::{ChatOptions, Error, Result, Tokenizer};

/// The record keys (Python: the `text_feature`, `prompt_feature`, `completion_feature` and
/// `chat_feature` config entries) and whether prompts are masked out of the loss.
#[derive(Clone, Debug)]
pub struct DatasetOptions {
    pub text_feature: String,
    pub prompt_feature: String,
    pub completion_feature: String,
    pub chat_feature: String,
    pub mask_prompt: bool,
}

impl Default for DatasetOptions {
    fn default() -> Self {
        DatasetOptions {
            text_feature: "text".into(),
            prompt_feature: "prompt".into(),
            completion_feature: "completion".into(),
            chat_feature: "messages".into(),
            mask_prompt: false,
        }
    }
}

/// Which of mlx_lm's dataset classes a file's records are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatasetFormat {
    Text,
    Completions,
    Chat,
}

/// One file's records, still untokenized, with the line each came from.
#[derive(Clone, Debug)]
pub struct Dataset {
    pub path: PathBuf,
    pub format: DatasetFormat,
    records: Vec<(usize, Map<String, Value>)>,
    options: DatasetOptions,
}

/// The three splits; a missing file is an empty split, as in mlx_lm.
#[derive(Clone, Debug)]
pub struct Splits {
    pub train: Option<Dataset>,
    pub valid: Option<Dataset>,
    pub test: Option<Dataset>,
}

/// `load_local_dataset`: the splits in `dir`.
pub fn load_local_dataset(dir: impl AsRef<Path>, options: &DatasetOptions) -> Result<Splits> {
    let dir = dir.as_ref();
    let split = |name: &str| -> Result<Option<Dataset>> {
        let path = dir.join(format!("{name}.jsonl"));
        if !path.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        Dataset::parse(&path, &text, options).map(Some)
    };
    Ok(Splits {
        train: split("train")?,
        valid: split("valid")?,
        test: split("test")?,
    })
}

impl Dataset {
    /// Parses JSONL `text` read from `path`; errors name the file and line.
    pub fn parse(path: &Path, text: &str, options: &DatasetOptions) -> Result<Dataset> {
        let invalid = |line: usize, message: String| Error::Invalid {
            path: path.to_path_buf(),
            key: format!("line {line}"),
            message,
        };
        let mut records = Vec::new();
        // Python iterates the file's lines and `json.loads` each, so a blank line is an error
        // there too; only a final newline ends the last record.
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let line_no = i + 1;
            match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(record)) => records.push((line_no, record)),
                Ok(other) => {
                    return Err(invalid(
                        line_no,
                        format!("expected a JSON object, found {other}"),
                    ))
                }
                Err(e) => return Err(invalid(line_no, format!("not valid JSON: {e}"))),
            }
        }
        let Some((_, first)) = records.first() else {
            return Err(invalid(0, "the file has no records".into()));
        };
        let format = if first.contains_key(&options.prompt_feature)
            && first.contains_key(&options.completion_feature)
        {
            DatasetFormat::Completions
        } else if first.contains_key(&options.chat_feature) {
            DatasetFormat::Chat
        } else if first.contains_key(&options.text_feature) {
            if options.mask_prompt {
                return Err(invalid(
                    1,
                    "Prompt masking not supported for text dataset.".into(),
                ));
            }
            DatasetFormat::Text
        } else {
            return Err(invalid(
                1,
                format!(
                    "unsupported data format: expected {:?}, {:?} and {:?}, or {:?} \
                     (mlx_lm's LORA.md#Data)",
                    options.text_feature,
                    options.prompt_feature,
                    options.completion_feature,
                    options.chat_feature
                ),
            ));
        };
        Ok(Dataset {
            path: path.to_path_buf(),
            format,
            records,
            options: options.clone(),
        })
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Record `index` tokenized (Python: the dataset's `process(dataset[index])`), for those
    /// that tokenize records as they need them (mlx_lm.perplexity).
    pub fn example(&self, index: usize, tokenizer: &Tokenizer) -> Result<Example> {
        let (line, record) = self.records.get(index).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{}: no record {index} (the file has {})",
                self.path.display(),
                self.records.len()
            ))
        })?;
        self.process(tokenizer, *line, record)
    }

    /// Tokenizes every record (Python: `CacheDataset` over the dataset's `process`).
    pub fn tokenize(&self, tokenizer: &Tokenizer) -> Result<Vec<Example>> {
        self.records
            .iter()
            .map(|(line, record)| {
                let mut example = self.process(tokenizer, *line, record)?;
                example.sort_len = record.len();
                Ok(example)
            })
            .collect()
    }

    fn field<'r>(
        &self,
        line: usize,
        record: &'r Map<String, Value>,
        key: &str,
    ) -> Result<&'r Value> {
        record.get(key).ok_or_else(|| Error::Invalid {
            path: self.path.clone(),
            key: format!("line {line}"),
            message: format!(
                "the record has no {key:?} (the format is {:?})",
                self.format
            ),
        })
    }

    fn string<'r>(
        &self,
        line: usize,
        record: &'r Map<String, Value>,
        key: &str,
    ) -> Result<&'r str> {
        self.field(line, record, key)?
            .as_str()
            .ok_or_else(|| Error::Invalid {
                path: self.path.clone(),
                key: format!("line {line}"),
                message: format!("{key:?} must be a string"),
            })
    }

    fn process(
        &self,
        tokenizer: &Tokenizer,
        line: usize,
        record: &Map<String, Value>,
    ) -> Result<Example> {
        let at_line = |e: Error| Error::Invalid {
            path: self.path.clone(),
            key: format!("line {line}"),
            message: e.to_string(),
        };
        let o = &self.options;
        match self.format {
            DatasetFormat::Text => {
                let text = self.string(line, record, &o.text_feature)?;
                let mut tokens = tokenizer.encode(text, true).map_err(at_line)?;
                let eos = tokenizer
                    .special_token("eos_token")
                    .and_then(|t| tokenizer.token_to_id(t))
                    .ok_or_else(|| {
                        Error::InvalidArgument(
                            "the tokenizer has no eos_token, which text datasets end with".into(),
                        )
                    })?;
                if tokens.last() != Some(&eos) {
                    tokens.push(eos);
                }
                Ok(Example::new(tokens, 0))
            }
            DatasetFormat::Completions => {
                let prompt = self.string(line, record, &o.prompt_feature)?;
                let completion = self.string(line, record, &o.completion_feature)?;
                let messages = vec![
                    json!({"role": "user", "content": prompt}),
                    json!({"role": "assistant", "content": completion}),
                ];
                self.chat(tokenizer, record, &messages, true)
                    .map_err(at_line)
            }
            DatasetFormat::Chat => {
                let messages = self
                    .field(line, record, &o.chat_feature)?
                    .as_array()
                    .filter(|m| !m.is_empty())
                    .ok_or_else(|| Error::Invalid {
                        path: self.path.clone(),
                        key: format!("line {line}"),
                        message: format!(
                            "{:?} must be a non-empty list of messages",
                            o.chat_feature
                        ),
                    })?;
                // mlx_lm adds the generation prompt to the prompt part only when the last
                // message is the assistant's.
                let last_is_assistant = messages
                    .last()
                    .and_then(|m| m.get("role"))
                    .and_then(Value::as_str)
                    == Some("assistant");
                self.chat(tokenizer, record, messages, last_is_assistant)
                    .map_err(at_line)
            }
        }
    }

    /// The tokens of the whole conversation and, with `mask_prompt`, the length of all but
    /// its last message (HF's `apply_chat_template(tokenize=True)`: rendered, then encoded
    /// without special tokens).
    fn chat(
        &self,
        tokenizer: &Tokenizer,
        record: &Map<String, Value>,
        messages: &[Value],
        add_generation_prompt: bool,
    ) -> Result<Example> {
        let tools = match record.get("tools") {
            None | Some(Value::Null) => None,
            Some(Value::Array(tools)) => Some(tools.clone()),
            Some(_) => {
                return Err(Error::InvalidArgument("\"tools\" must be a list".into()));
            }
        };
        let render = |messages: &[Value], add_generation_prompt: bool| -> Result<Vec<u32>> {
            let options = ChatOptions {
                add_generation_prompt,
                tools: tools.clone(),
                ..Default::default()
            };
            let text = tokenizer.apply_chat_template(&messages, &options)?;
            tokenizer.encode(&text, false)
        };
        let tokens = render(messages, false)?;
        let offset = if self.options.mask_prompt {
            render(&messages[..messages.len() - 1], add_generation_prompt)?.len()
        } else {
            0
        };
        Ok(Example::new(tokens, offset))
    }
}
