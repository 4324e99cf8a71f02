//! Streaming detokenization (Python: mlx_lm's `tokenizer_utils` detokenizers): text of a
//! growing token sequence, piece by piece, exactly as mlx_lm streams it.
//!
//! mlx_lm picks one of three from `tokenizer.json`'s decoder, and they do not agree on every
//! sequence (special tokens, a leading space, bytes that are not UTF-8), so the same choice is
//! made here:
//! - a `ByteLevel` decoder (GPT-2 style BPE: Llama 3, Qwen, Mistral Nemo): [`Bpe`](Kind::Bpe)
//!   maps each token's symbols back to bytes and emits them once they are valid UTF-8;
//! - SentencePiece's `Replace ▁, ByteFallback, Fuse[, Strip]` sequence (Llama 2, Mistral 7B):
//!   [`Spm`](Kind::Spm) does the same with `▁` as the space and `<0xXX>` byte tokens;
//! - anything else: [`Naive`](Kind::Naive) decodes the tokens of the current line again after
//!   each token.

use serde_json::Value;

use crate::error::Result;
use crate::tokenizer::Tokenizer;

/// Which streaming detokenizer a tokenizer uses, with what it precomputes.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// `BPEStreamingDetokenizer`: each token's string of byte-level symbols.
    Bpe { tokens: Vec<String> },
    /// `SPMStreamingDetokenizer`: each token's bytes; whether a leading space is dropped.
    Spm {
        tokens: Vec<Vec<u8>>,
        trim_space: bool,
    },
    /// `NaiveStreamingDetokenizer`: whether the tokenizer's decode drops the space before
    /// punctuation (then a trailing space is held back, as it may vanish).
    Naive { clean_spaces: bool },
}

impl Kind {
    /// The detokenizer mlx_lm picks for a `tokenizer.json` (Python: `tokenizer_utils.load`).
    pub(crate) fn for_tokenizer(
        json: &Value,
        inner: &tokenizers::Tokenizer,
        naive_clean_spaces: impl FnOnce() -> bool,
    ) -> Kind {
        let decoder = json.get("decoder");
        let spm = |strip: bool| {
            let mut steps = vec![
                serde_json::json!({"type": "Replace", "pattern": {"String": "▁"}, "content": " "}),
                serde_json::json!({"type": "ByteFallback"}),
                serde_json::json!({"type": "Fuse"}),
            ];
            if strip {
                steps.push(
                    serde_json::json!({"type": "Strip", "content": " ", "start": 1, "stop": 0}),
                );
            }
            decoder.is_some_and(|d| {
                matches_description(
                    &serde_json::json!({"type": "Sequence", "decoders": steps}),
                    d,
                )
            })
        };
        let vocab = || {
            (0..inner.get_vocab_size(true) as u32)
                .map(|id| inner.id_to_token(id).unwrap_or_default())
        };
        if spm(true) || spm(false) {
            Kind::Spm {
                tokens: vocab().map(|t| spm_bytes(&t)).collect(),
                trim_space: spm(true),
            }
        } else if decoder.and_then(|d| d.get("type")).and_then(Value::as_str) == Some("ByteLevel") {
            Kind::Bpe {
                tokens: vocab().collect(),
            }
        } else {
            Kind::Naive {
                clean_spaces: naive_clean_spaces(),
            }
        }
    }
}

/// Python's `_match`: every key of the description is in the value, recursively (a value may
/// carry more), lists element by element.
fn matches_description(description: &Value, value: &Value) -> bool {
    match (description, value) {
        (Value::Object(d), Value::Object(v)) => d
            .iter()
            .all(|(k, dv)| v.get(k).is_some_and(|vv| matches_description(dv, vv))),
        (Value::Array(d), Value::Array(v)) => {
            d.len() == v.len() && d.iter().zip(v).all(|(a, b)| matches_description(a, b))
        }
        _ => description == value,
    }
}

/// A SentencePiece token's bytes: `<0xXX>` byte tokens carry their value in hex.
fn spm_bytes(token: &str) -> Vec<u8> {
    if let Some(hex) = token.strip_prefix("<0x").and_then(|t| t.get(..2)) {
        if let Ok(b) = u8::from_str_radix(hex, 16) {
            return vec![b];
        }
    }
    token.as_bytes().to_vec()
}

/// GPT-2's byte-level alphabet, reversed: the byte each symbol stands for. Printable bytes
/// (`!`..`~`, `¡`..`¬`, `®`..`ÿ`) stand for themselves; the 68 others were shifted to U+0100..
/// in byte order: 0x00..=0x20, 0x7F..=0xA0, 0xAD.
fn byte_of_symbol(c: char) -> Option<u8> {
    let c = c as u32;
    match c {
        0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF => Some(c as u8),
        0x100..=0x120 => Some((c - 0x100) as u8),
        0x121..=0x142 => Some((c - 0x121 + 0x7F) as u8),
        0x143 => Some(0xAD),
        _ => None,
    }
}

/// Python's `BPEStreamingDetokenizer._decode_bytes`. Its `if res:` treats byte 0 as missing,
/// so the symbol of the NUL byte ('Ā') is kept as the character itself; mlx_lm streams
/// 'Ā' for it, and so does this.
fn bpe_streaming_bytes(symbols: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(symbols.len());
    for c in symbols.chars() {
        match byte_of_symbol(c) {
            Some(b) if b != 0 => out.push(b),
            _ => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

/// Python's `BPEStreamingDetokenizer.finalize` mapping, where byte 0 is a byte.
fn bpe_final_bytes(symbols: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(symbols.len());
    for c in symbols.chars() {
        match byte_of_symbol(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

/// Text of a growing token sequence, piece by piece, as mlx_lm's streaming detokenizer
/// for the same `tokenizer.json` yields it: `add` returns what a token completes (Python:
/// `add_token` then `last_segment`), [`finish`](Self::finish) what was held back (Python:
/// `finalize`). The pieces joined are the text mlx_lm's `stream_generate` prints.
#[derive(Debug)]
pub struct StreamingDetokenizer<'t> {
    tokenizer: &'t Tokenizer,
    /// The text so far (Python: `text`), and how much of it was handed out: bytes, or for the
    /// naive detokenizer characters (see `take_new`).
    text: String,
    emitted: usize,
    /// Bpe: the symbols not yet emitted.
    unflushed_symbols: String,
    /// Spm: the bytes not yet emitted.
    unflushed: Vec<u8>,
    /// Naive: the tokens of the current line and their decoded text.
    line: Vec<u32>,
    line_text: String,
}

impl<'t> StreamingDetokenizer<'t> {
    pub(crate) fn new(tokenizer: &'t Tokenizer) -> Self {
        StreamingDetokenizer {
            tokenizer,
            text: String::new(),
            emitted: 0,
            unflushed: Vec::new(),
            unflushed_symbols: String::new(),
            line: Vec::new(),
            line_text: String::new(),
        }
    }

    /// Adds a token; returns the text it completes (possibly empty).
    pub fn add(&mut self, token: u32) -> Result<String> {
        match self.tokenizer.detokenizer_kind() {
            Kind::Bpe { tokens } => {
                // Python: a token past the vocabulary (a padded embedding) reads as "!".
                let symbols = tokens.get(token as usize).map_or("!", String::as_str);
                self.unflushed_symbols.push_str(symbols);
                let text = lossy(&bpe_streaming_bytes(&self.unflushed_symbols));
                let lone_space = symbols.chars().count() == 1
                    && symbols.chars().next().and_then(byte_of_symbol) == Some(b' ');
                if !text.ends_with('\u{FFFD}') && !lone_space {
                    self.push_trimmed(&text, true);
                    self.unflushed_symbols.clear();
                }
            }
            Kind::Spm { tokens, trim_space } => {
                let bytes = tokens
                    .get(token as usize)
                    .ok_or_else(|| self.tokenizer.out_of_vocabulary(token))?;
                self.unflushed.extend_from_slice(bytes);
                self.spm_flush(*trim_space, false);
            }
            Kind::Naive { clean_spaces } => {
                self.line.push(token);
                self.naive_refresh(*clean_spaces)?;
            }
        }
        Ok(self.take_new())
    }

    /// Whatever is still held back (an incomplete character, as U+FFFD).
    pub fn finish(&mut self) -> Result<String> {
        match self.tokenizer.detokenizer_kind() {
            Kind::Bpe { .. } => {
                let text = lossy(&bpe_final_bytes(&self.unflushed_symbols));
                self.push_trimmed(&text, true);
                self.unflushed_symbols.clear();
            }
            Kind::Spm { trim_space, .. } => self.spm_flush(*trim_space, true),
            Kind::Naive { .. } => {
                let text = self.tokenizer.decode(&self.line, false)?;
                self.text.push_str(&text);
                self.line.clear();
                self.line_text.clear();
            }
        }
        Ok(self.take_new())
    }

    /// Python's `_maybe_trim_space`: the first text drops one leading space.
    fn push_trimmed(&mut self, text: &str, trim: bool) {
        let text = match text.strip_prefix(' ') {
            Some(rest) if trim && self.text.is_empty() => rest,
            _ => text,
        };
        self.text.push_str(text);
    }

    fn spm_flush(&mut self, trim_space: bool, force: bool) {
        let bytes = replace_all(&self.unflushed, "▁".as_bytes(), b" ");
        let text = lossy(&bytes);
        if !force && text.ends_with('\u{FFFD}') {
            return;
        }
        self.push_trimmed(&text, trim_space);
        self.unflushed.clear();
    }

    /// Python's `NaiveStreamingDetokenizer.text`: the current line decoded again, held back
    /// while it ends in an incomplete character (or, where decode cleans spaces, a space), and
    /// committed at a newline.
    fn naive_refresh(&mut self, clean_spaces: bool) -> Result<()> {
        let mut current = self.tokenizer.decode(&self.line, false)?;
        if current.ends_with('\u{FFFD}') {
            current.truncate(current.trim_end_matches('\u{FFFD}').len());
        } else if clean_spaces && current.ends_with(' ') {
            current.pop();
        }
        if current.ends_with('\n') {
            self.text.push_str(&current);
            self.line.clear();
            self.line_text.clear();
        } else {
            self.line_text = current;
        }
        Ok(())
    }

    /// Python's `last_segment`: the text past what was handed out. Python counts characters;
    /// BPE and SPM text only grows, so a byte offset is the same there, while the naive
    /// detokenizer's current line may change under the offset and is counted as Python does.
    fn take_new(&mut self) -> String {
        if !matches!(self.tokenizer.detokenizer_kind(), Kind::Naive { .. }) {
            let new = self
                .text
                .get(self.emitted..)
                .unwrap_or_default()
                .to_string();
            self.emitted = self.text.len();
            return new;
        }
        let full: Vec<char> = self.text.chars().chain(self.line_text.chars()).collect();
        let new = full
            .get(self.emitted..)
            .map(|c| c.iter().collect())
            .unwrap_or_default();
        self.emitted = full.len();
        new
    }
}

/// Python's `bytes.decode("utf-8", "replace")`: each maximal invalid subsequence becomes one
/// U+FFFD, as Rust's lossy conversion does too.
fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn replace_all(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::byte_of_symbol;

    #[test]
    fn byte_level_alphabet_is_a_bijection() {
        // GPT-2's bytes_to_unicode: 256 symbols, each byte once; 'Ġ' is the space, 'Ċ' the
        // newline, 'Ā' the NUL byte.
        let mut seen = [false; 256];
        for c in (0u32..0x200).filter_map(char::from_u32) {
            if let Some(b) = byte_of_symbol(c) {
                assert!(!seen[b as usize], "byte {b} twice");
                seen[b as usize] = true;
            }
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(byte_of_symbol('Ġ'), Some(b' '));
        assert_eq!(byte_of_symbol('Ċ'), Some(b'\n'));
        assert_eq!(byte_of_symbol('Ā'), Some(0));
        assert_eq!(byte_of_symbol('a'), Some(b'a'));
    }
}
