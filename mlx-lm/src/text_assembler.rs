//! Tokens to text for a client: the streaming detokenizer plus stop strings, shared by
//! [`stream_generate`](crate::stream_generate) and servers that turn another generator's
//! tokens (an [`Engine`](crate::Engine)'s) into text.

use crate::detokenizer::StreamingDetokenizer;
use crate::error::Result;
use crate::tokenizer::Tokenizer;

/// Text of a growing token sequence, with stop strings found across token boundaries. Text
/// that may be the start of a stop string is held back until the next tokens tell, so the
/// pieces handed out never contain a stop string and a stop string is always found in text
/// not yet handed out.
#[derive(Debug)]
pub struct TextAssembler<'t> {
    detokenizer: StreamingDetokenizer<'t>,
    stop_strings: Vec<String>,
    /// The text so far, and how many bytes of it were handed out.
    text: String,
    emitted: usize,
}

/// What one token added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPiece {
    /// Text safe to hand out now.
    pub text: String,
    /// The stop string found: the text ends before it, and the generation should end.
    pub stop: Option<String>,
}

impl<'t> TextAssembler<'t> {
    pub fn new(tokenizer: &'t Tokenizer, stop_strings: &[String]) -> Self {
        TextAssembler {
            detokenizer: tokenizer.streaming_detokenizer(),
            stop_strings: stop_strings
                .iter()
                .filter(|s| !s.is_empty())
                .cloned()
                .collect(),
            text: String::new(),
            emitted: 0,
        }
    }

    /// Adds a generated token (`None`: a stop token, whose text is not part of the output);
    /// `last`: no token follows, so nothing is held back any more.
    pub fn push(&mut self, token: Option<u32>, last: bool) -> Result<TextPiece> {
        if let Some(token) = token {
            let piece = self.detokenizer.add(token)?;
            self.text.push_str(&piece);
        }
        if last {
            let rest = self.detokenizer.finish()?;
            self.text.push_str(&rest);
        }
        let mut end = self.text.len();
        let mut stop = None;
        if let Some((cut, i)) = find_stop(&self.text, self.emitted, &self.stop_strings) {
            self.text.truncate(cut);
            end = cut;
            stop = Some(self.stop_strings[i].clone());
        } else if !last {
            end -= held_back(&self.text[self.emitted..], &self.stop_strings);
        }
        let text = self.text[self.emitted..end].to_string();
        self.emitted = end;
        Ok(TextPiece { text, stop })
    }

    /// The text handed out so far.
    pub fn text(&self) -> &str {
        &self.text[..self.emitted]
    }
}

/// Where the first stop string in `text[from..]` starts, and which one it is.
fn find_stop(text: &str, from: usize, stops: &[String]) -> Option<(usize, usize)> {
    stops
        .iter()
        .enumerate()
        .filter_map(|(k, stop)| text[from..].find(stop.as_str()).map(|i| (from + i, k)))
        .min()
}

/// The length of the longest end of `tail` that begins a stop string (and so may become one).
fn held_back(tail: &str, stops: &[String]) -> usize {
    tail.char_indices()
        .map(|(i, _)| &tail[i..])
        .find(|end| {
            stops
                .iter()
                .any(|s| s.len() > end.len() && s.starts_with(end))
        })
        .map_or(0, str::len)
}
