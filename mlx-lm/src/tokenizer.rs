//! Tokenization with Hugging Face's `tokenizers` (the engine behind Python's fast tokenizers,
//! which mlx_lm uses through `transformers`), from a model directory's `tokenizer.json`.
//! Built with its pure-Rust regex engine (fancy-regex) instead of onig.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A model's tokenizer: `tokenizer.json`, used as `transformers` uses it.
///
/// The padding and truncation a `tokenizer.json` may carry are switched off, as
/// `transformers` does for a call without `padding=` / `truncation=` (which is how mlx_lm
/// encodes prompts): all-MiniLM's file, for one, pads every text to 128 tokens.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
}

impl Tokenizer {
    /// Reads `<dir>/tokenizer.json`.
    pub fn load(dir: impl AsRef<Path>) -> Result<Tokenizer> {
        Tokenizer::from_file(dir.as_ref().join("tokenizer.json"))
    }

    /// Reads a `tokenizer.json` file; one that does not parse is an error naming it.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Tokenizer> {
        let path = path.as_ref().to_path_buf();
        if !path.is_file() {
            return Err(Error::Io {
                path,
                source: std::io::ErrorKind::NotFound.into(),
            });
        }
        let mut inner = tokenizers::Tokenizer::from_file(&path).map_err(|e| Error::Tokenizer {
            path: path.clone(),
            message: e.to_string(),
        })?;
        inner.with_padding(None);
        inner.with_truncation(None).map_err(|e| Error::Tokenizer {
            path: path.clone(),
            message: e.to_string(),
        })?;
        Ok(Tokenizer { inner, path })
    }

    /// Token ids of `text` (Python: `tokenizer.encode(text, add_special_tokens=...)`; mlx_lm
    /// adds them for a plain prompt).
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        self.inner
            .encode(text, add_special_tokens)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| self.error(e))
    }

    /// Text of `ids` (Python: `tokenizer.decode(ids, skip_special_tokens=...)`).
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        self.inner
            .decode(ids, skip_special_tokens)
            .map_err(|e| self.error(e))
    }

    /// The id of a token string, if the vocabulary has it (added tokens included).
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Vocabulary size, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// A detokenizer that turns tokens into text as they arrive.
    pub fn streaming_detokenizer(&self) -> StreamingDetokenizer<'_> {
        StreamingDetokenizer {
            tokenizer: self,
            tokens: Vec::new(),
            emitted: 0,
        }
    }

    /// The wrapped `tokenizers` tokenizer, for what this type does not cover.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }

    fn error(&self, e: tokenizers::Error) -> Error {
        Error::Tokenizer {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("path", &self.path)
            .field("vocab_size", &self.vocab_size())
            .finish()
    }
}

/// Text of a growing token sequence, piece by piece (Python: mlx_lm's
/// `NaiveStreamingDetokenizer`): each token decodes the tokens so far and yields what is new,
/// holding back a piece that ends in an incomplete character (decoded as U+FFFD) until a later
/// token completes it. Special tokens are skipped, as mlx_lm's detokenizer does.
#[derive(Debug)]
pub struct StreamingDetokenizer<'t> {
    tokenizer: &'t Tokenizer,
    tokens: Vec<u32>,
    /// Bytes of the decoded text handed out so far.
    emitted: usize,
}

impl StreamingDetokenizer<'_> {
    /// Adds a token; returns the text it completes (possibly empty).
    pub fn add(&mut self, token: u32) -> Result<String> {
        self.tokens.push(token);
        let text = self.tokenizer.decode(&self.tokens, true)?;
        if text.ends_with('\u{FFFD}') {
            return Ok(String::new());
        }
        Ok(self.take_new(&text))
    }

    /// Whatever is still held back (an incomplete character, as U+FFFD).
    pub fn finish(&mut self) -> Result<String> {
        let text = self.tokenizer.decode(&self.tokens, true)?;
        Ok(self.take_new(&text))
    }

    fn take_new(&mut self, text: &str) -> String {
        let new = text.get(self.emitted..).unwrap_or_default().to_string();
        self.emitted = text.len().max(self.emitted);
        new
    }
}
