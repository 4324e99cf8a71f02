//! A BERT WordPiece tokenizer (uncased), equivalent to Hugging Face's `BertTokenizer` /
//! `tokenizers` `BertNormalizer + BertPreTokenizer + WordPiece` for the settings of
//! all-MiniLM-L6-v2: clean text, pad CJK characters, strip accents, lowercase, split on
//! whitespace and punctuation, greedy longest-match-first word pieces with a `##` prefix.

use std::collections::HashMap;
use std::path::Path;

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

pub struct WordPiece {
    vocab: HashMap<String, i32>,
    unk: i32,
    cls: i32,
    sep: i32,
    /// Python: `max_input_chars_per_word` (longer words become `[UNK]`).
    max_chars: usize,
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// BERT's punctuation: ASCII symbols plus Unicode punctuation blocks.
fn is_punctuation(c: char) -> bool {
    let cp = c as u32;
    (33..=47).contains(&cp)
        || (58..=64).contains(&cp)
        || (91..=96).contains(&cp)
        || (123..=126).contains(&cp)
        || matches!(cp,
            0x00A1 | 0x00A7 | 0x00AB | 0x00B6 | 0x00B7 | 0x00BB | 0x00BF
            | 0x2010..=0x2027 | 0x2030..=0x205E | 0x3001..=0x3003 | 0x3008..=0x3011
            | 0xFF01..=0xFF0F | 0xFF1A..=0xFF20)
}

fn is_control(c: char) -> bool {
    if c == '\t' || c == '\n' || c == '\r' {
        return false;
    }
    c.is_control()
}

impl WordPiece {
    /// Reads `vocab.txt` (one token a line; the line number is the id).
    pub fn from_vocab(path: &Path) -> Result<WordPiece, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let vocab: HashMap<String, i32> = text
            .lines()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as i32))
            .collect();
        let id = |t: &str| {
            vocab
                .get(t)
                .copied()
                .ok_or_else(|| format!("{}: no {t} token", path.display()))
        };
        Ok(WordPiece {
            unk: id("[UNK]")?,
            cls: id("[CLS]")?,
            sep: id("[SEP]")?,
            vocab,
            max_chars: 100,
        })
    }

    fn normalize(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if c == '\0' || c == '\u{FFFD}' || is_control(c) {
                continue;
            }
            if c.is_whitespace() {
                out.push(' ');
            } else if is_cjk(c) {
                out.push(' ');
                out.push(c);
                out.push(' ');
            } else {
                out.push(c);
            }
        }
        // Accents are stripped (NFD, drop combining marks), then the text is lowercased.
        let stripped: String = out.nfd().filter(|c| !is_combining_mark(*c)).collect();
        stripped.to_lowercase()
    }

    fn pre_tokenize(text: &str) -> Vec<String> {
        let mut words = Vec::new();
        for chunk in text.split_whitespace() {
            let mut cur = String::new();
            for c in chunk.chars() {
                if is_punctuation(c) {
                    if !cur.is_empty() {
                        words.push(std::mem::take(&mut cur));
                    }
                    words.push(c.to_string());
                } else {
                    cur.push(c);
                }
            }
            if !cur.is_empty() {
                words.push(cur);
            }
        }
        words
    }

    fn word_pieces(&self, word: &str, out: &mut Vec<i32>) {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > self.max_chars {
            out.push(self.unk);
            return;
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while start < end {
                let mut s: String = chars[start..end].iter().collect();
                if start > 0 {
                    s.insert_str(0, "##");
                }
                if let Some(&id) = self.vocab.get(&s) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => pieces.push(id),
                None => {
                    out.push(self.unk);
                    return;
                }
            }
            start = end;
        }
        out.extend(pieces);
    }

    /// `[CLS] tokens [SEP]`, truncated to `max_len` ids.
    pub fn encode(&self, text: &str, max_len: usize) -> Vec<i32> {
        let mut ids = vec![self.cls];
        for w in Self::pre_tokenize(&Self::normalize(text)) {
            self.word_pieces(&w, &mut ids);
        }
        ids.truncate(max_len.saturating_sub(1).max(1));
        ids.push(self.sep);
        ids
    }
}
