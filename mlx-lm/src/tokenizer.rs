//! Tokenization with Hugging Face's `tokenizers` (the engine behind Python's fast tokenizers,
//! which mlx_lm uses through `transformers`), from a model directory's `tokenizer.json`,
//! `tokenizer_config.json` (special tokens, chat template) and `chat_template.jinja`.
//! Built with its pure-Rust regex engine (fancy-regex) instead of onig.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::chat_template::ChatTemplate;
use crate::config::read_json;
use crate::detokenizer::{Kind, StreamingDetokenizer};
use crate::error::{Error, Result};

/// The special-token variables a chat template sees (Python: `special_tokens_map`).
const SPECIAL_TOKENS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

/// A model's tokenizer: `tokenizer.json`, used as `transformers` uses it, with what
/// `tokenizer_config.json` adds (Python: mlx_lm's `TokenizerWrapper`).
///
/// The padding and truncation a `tokenizer.json` may carry are switched off, as
/// `transformers` does for a call without `padding=` / `truncation=` (which is how mlx_lm
/// encodes prompts): all-MiniLM's file, for one, pads every text to 128 tokens.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
    detokenizer: Kind,
    /// `(name, token)` of the special tokens the config names, in `SPECIAL_TOKENS` order.
    special_tokens: Vec<(String, String)>,
    clean_up_tokenization_spaces: bool,
    chat_template: Option<ChatTemplate>,
    eos_token_ids: BTreeSet<u32>,
    /// `tokenizer_config.json`'s `tool_parser_type` (mlx_lm's key for the tool-call format).
    tool_parser_type: Option<String>,
}

impl Tokenizer {
    /// Reads `<dir>/tokenizer.json` and, where present, `<dir>/tokenizer_config.json` and
    /// `<dir>/chat_template.jinja` (which `transformers` 5 writes instead of the config's
    /// `chat_template`, and which wins over it).
    pub fn load(dir: impl AsRef<Path>) -> Result<Tokenizer> {
        let dir = dir.as_ref();
        let config_path = dir.join("tokenizer_config.json");
        let config = if config_path.is_file() {
            Some((read_json(&config_path)?, config_path))
        } else {
            None
        };
        let mut tokenizer = Tokenizer::build(dir.join("tokenizer.json"), config.as_ref())?;
        let jinja = dir.join("chat_template.jinja");
        if jinja.is_file() {
            let source = std::fs::read_to_string(&jinja).map_err(|source| Error::Io {
                path: jinja.clone(),
                source,
            })?;
            tokenizer.chat_template = Some(ChatTemplate::new(source, jinja));
        }
        Ok(tokenizer)
    }

    /// Reads a `tokenizer.json` file alone; one that does not parse is an error naming it.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Tokenizer> {
        Tokenizer::build(path.as_ref().to_path_buf(), None)
    }

    fn build(path: PathBuf, config: Option<&(Value, PathBuf)>) -> Result<Tokenizer> {
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        Tokenizer::build_from_text(&text, path, config)
    }

    /// A tokenizer from a `tokenizer.json` made in memory (a GGUF file's), `path` naming
    /// where it came from; `config` as `tokenizer_config.json` would give it.
    pub(crate) fn from_json(
        json: &Value,
        path: PathBuf,
        config: Option<&(Value, PathBuf)>,
    ) -> Result<Tokenizer> {
        Tokenizer::build_from_text(&json.to_string(), path, config)
    }

    fn build_from_text(
        text: &str,
        path: PathBuf,
        config: Option<&(Value, PathBuf)>,
    ) -> Result<Tokenizer> {
        let invalid = |source: tokenizers::Error| Error::Tokenizer {
            path: path.clone(),
            message: source.to_string(),
            source: Some(source),
        };
        let json: Value = serde_json::from_str(text).map_err(|source| Error::Json {
            path: path.clone(),
            source,
        })?;
        let mut inner: tokenizers::Tokenizer = text.parse().map_err(invalid)?;
        inner.with_padding(None);
        inner.with_truncation(None).map_err(invalid)?;

        let mut special_tokens = Vec::new();
        let mut clean_up_tokenization_spaces = false;
        let mut chat_template = None;
        let mut tool_parser_type = None;
        if let Some((config, config_path)) = config {
            tool_parser_type = config
                .get("tool_parser_type")
                .and_then(Value::as_str)
                .map(str::to_string);
            let bad = |key: &str, message: &str| Error::Invalid {
                path: config_path.clone(),
                key: key.to_string(),
                message: message.to_string(),
            };
            for name in SPECIAL_TOKENS {
                match config.get(name) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(t)) => special_tokens.push((name.to_string(), t.clone())),
                    // An AddedToken: {"content": "<s>", "lstrip": false, ...}.
                    Some(v) => match v.get("content").and_then(Value::as_str) {
                        Some(t) => special_tokens.push((name.to_string(), t.to_string())),
                        None => {
                            return Err(bad(name, "expected a token string or {\"content\": ...}"))
                        }
                    },
                }
            }
            match config.get("clean_up_tokenization_spaces") {
                None | Some(Value::Null) => {}
                Some(Value::Bool(b)) => clean_up_tokenization_spaces = *b,
                Some(_) => return Err(bad("clean_up_tokenization_spaces", "expected a bool")),
            }
            chat_template = match config.get("chat_template") {
                None | Some(Value::Null) => None,
                Some(Value::String(t)) => Some(t.clone()),
                // Several named templates: [{"name": "default", "template": ...}, ...].
                Some(Value::Array(named)) => named
                    .iter()
                    .find(|t| t.get("name").and_then(Value::as_str) == Some("default"))
                    .and_then(|t| t.get("template")?.as_str())
                    .map(str::to_string),
                Some(_) => {
                    return Err(bad(
                        "chat_template",
                        "expected a string or a list of named templates",
                    ))
                }
            }
            .map(|source| ChatTemplate::new(source, config_path.clone()));
        }

        let mut tokenizer = Tokenizer {
            inner,
            path,
            detokenizer: Kind::Naive {
                clean_spaces: false,
            },
            special_tokens,
            clean_up_tokenization_spaces,
            chat_template,
            eos_token_ids: BTreeSet::new(),
            tool_parser_type,
        };
        if let Some(eos) = tokenizer.special_token("eos_token") {
            if let Some(id) = tokenizer.token_to_id(eos) {
                tokenizer.eos_token_ids.insert(id);
            }
        }
        // Python's probe: does decode drop the space in " ,"?
        let clean_spaces = || {
            tokenizer
                .encode("a ,b", false)
                .and_then(|ids| tokenizer.decode(&ids, false))
                .is_ok_and(|t| !t.contains(" ,"))
        };
        let kind = Kind::for_tokenizer(&json, &tokenizer.inner, clean_spaces);
        tokenizer.detokenizer = kind;
        Ok(tokenizer)
    }

    /// Token ids of `text` (Python: `tokenizer.encode(text, add_special_tokens=...)`; mlx_lm
    /// adds them for a plain prompt).
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        self.inner
            .encode(text, add_special_tokens)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| self.error(e))
    }

    /// Text of `ids` (Python: `tokenizer.decode(ids, skip_special_tokens=...)`), with the
    /// config's `clean_up_tokenization_spaces` applied as `transformers` does.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        let text = self
            .inner
            .decode(ids, skip_special_tokens)
            .map_err(|e| self.error(e))?;
        Ok(if self.clean_up_tokenization_spaces {
            clean_up_tokenization(&text)
        } else {
            text
        })
    }

    /// The id of a token string, if the vocabulary has it (added tokens included).
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Vocabulary size, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// A special token the config names (`"bos_token"`, `"eos_token"`, ...).
    pub fn special_token(&self, name: &str) -> Option<&str> {
        self.special_tokens
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.as_str())
    }

    /// The special tokens the config names, as `(name, token)` (Python: `special_tokens_map`).
    pub fn special_tokens(&self) -> &[(String, String)] {
        &self.special_tokens
    }

    /// The tokens that end a generation (Python: `TokenizerWrapper.eos_token_ids`): the
    /// config's `eos_token` and those added by [`add_eos_token_ids`](Self::add_eos_token_ids)
    /// ([`load`](crate::load) adds the model config's `eos_token_id`).
    pub fn eos_token_ids(&self) -> Vec<u32> {
        self.eos_token_ids.iter().copied().collect()
    }

    /// Adds tokens that end a generation.
    pub fn add_eos_token_ids(&mut self, ids: impl IntoIterator<Item = u32>) {
        self.eos_token_ids.extend(ids);
    }

    /// The chat template, if the model has one.
    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        self.chat_template.as_ref()
    }

    /// Renders a conversation with the model's chat template and the tokenizer's special
    /// tokens (Python: `tokenizer.apply_chat_template(messages, tokenize=False, ...)`).
    ///
    /// ```no_run
    /// # fn main() -> mlx_lm::Result<()> {
    /// let tokenizer = mlx_lm::Tokenizer::load("Qwen3-0.6B")?;
    /// let messages = serde_json::json!([{"role": "user", "content": "Hi!"}]);
    /// let options = mlx_lm::ChatOptions { add_generation_prompt: true, ..Default::default() };
    /// let prompt = tokenizer.apply_chat_template(&messages, &options)?;
    /// let ids = tokenizer.encode(&prompt, false)?;
    /// # Ok(()) }
    /// ```
    pub fn apply_chat_template(
        &self,
        messages: &impl serde::Serialize,
        options: &crate::ChatOptions,
    ) -> Result<String> {
        let template = self.chat_template.as_ref().ok_or_else(|| Error::Template {
            path: self.path.clone(),
            message: "the tokenizer has no chat template (tokenizer_config.json's chat_template \
                      or chat_template.jinja)"
                .into(),
            source: None,
        })?;
        template.apply(messages, &self.special_tokens, options)
    }

    /// `tokenizer_config.json`'s `tool_parser_type`, which names the tool-call format
    /// (see [`tool_parsers`](crate::tool_parsers)).
    pub fn tool_parser_type(&self) -> Option<&str> {
        self.tool_parser_type.as_deref()
    }

    /// Replaces the chat template (Python: `tokenizer.chat_template = ...`).
    pub fn set_chat_template(&mut self, template: Option<ChatTemplate>) {
        self.chat_template = template;
    }

    /// A detokenizer that turns tokens into text as they arrive.
    pub fn streaming_detokenizer(&self) -> StreamingDetokenizer<'_> {
        StreamingDetokenizer::new(self)
    }

    /// The wrapped `tokenizers` tokenizer, for what this type does not cover.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }

    pub(crate) fn detokenizer_kind(&self) -> &Kind {
        &self.detokenizer
    }

    pub(crate) fn out_of_vocabulary(&self, token: u32) -> Error {
        Error::Tokenizer {
            path: self.path.clone(),
            message: format!(
                "token {token} is outside the vocabulary of {}",
                self.vocab_size()
            ),
            source: None,
        }
    }

    fn error(&self, e: tokenizers::Error) -> Error {
        Error::Tokenizer {
            path: self.path.clone(),
            message: e.to_string(),
            source: Some(e),
        }
    }
}

/// `transformers`' `clean_up_tokenization`: no space before punctuation and English
/// contractions.
fn clean_up_tokenization(text: &str) -> String {
    [
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ]
    .iter()
    .fold(text.to_string(), |t, (from, to)| t.replace(from, to))
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("path", &self.path)
            .field("vocab_size", &self.vocab_size())
            .finish()
    }
}
