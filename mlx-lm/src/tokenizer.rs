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
