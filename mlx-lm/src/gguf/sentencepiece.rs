//! A SentencePiece vocabulary (`tokenizer.ggml.model = "llama"`: tokens, scores) as the
//! `tokenizer.json` transformers builds from it (`gguf_tokenizer_mapping.py`'s
//! `sentencepiece_tokenizer`, `gemma_tokenizer` and `phi3_tokenizer`): a BPE with byte
//! fallback whose merges, when the file lists none, are recovered from the vocabulary
//! (`generate_merges`: every split of a token into two tokens, best score first). Which
//! normalizer and pre-tokenizer go with it depends on the architecture, as there:
//! - llama and the others: a Metaspace pre-tokenizer adding `▁` before the first word;
//! - gemma, gemma2, gemma3: spaces become `▁` with no prefix, split after each; tokens made of
//!   spaces are respelled with `▁`, and merges rank by the tokens' order in the file;
//! - phi3: a normalizer prepends `▁` and replaces spaces.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

const SPACE: &str = "\u{2581}";

/// The tokenizer.json of the vocabulary, without its added tokens and post-processor;
/// `merges` are the file's, if it lists them.
pub fn tokenizer(
    arch: &str,
    tokens: &[String],
    scores: &[f64],
    merges: Option<&[String]>,
) -> Value {
    let gemma = matches!(arch, "gemma" | "gemma2" | "gemma3");
    let tokens: Vec<String> = if gemma {
        // gemma files store tokens of spaces as spaces; the tokenizer looks them up as `▁`s.
        tokens
            .iter()
            .map(|t| {
                if t.contains(' ') && t.trim().is_empty() {
                    SPACE.repeat(t.chars().count())
                } else {
                    t.clone()
                }
            })
            .collect()
    } else {
        tokens.to_vec()
    };
    // As a Python dict built in order: a repeated token takes its last id.
    let mut vocab: HashMap<&str, usize> = HashMap::new();
    for (id, t) in tokens.iter().enumerate() {
        vocab.insert(t, id);
    }
    let merges: Vec<Value> = match merges {
        Some(m) => m
            .iter()
            .map(|m| json!(m.split(' ').collect::<Vec<_>>()))
            .collect(),
        None => {
            // gemma's scores do not follow its merge order; its tokens' order in the file does.
            let ranks: Vec<f64> = if gemma {
                (0..tokens.len()).map(|i| -(i as f64)).collect()
            } else {
                scores.to_vec()
            };
            generate_merges(&tokens, &ranks, &vocab)
                .into_iter()
                .map(|(l, r)| json!([l, r]))
                .collect()
        }
    };
    let vocab_json: Map<String, Value> = vocab
        .iter()
        .map(|(t, id)| (t.to_string(), json!(id)))
        .collect();
    let replace_space = json!({"type": "Replace", "pattern": {"String": " "}, "content": SPACE});
    let mut decoders = vec![
        json!({"type": "Replace", "pattern": {"String": SPACE}, "content": " "}),
        json!({"type": "ByteFallback"}),
        json!({"type": "Fuse"}),
    ];
    let (normalizer, pre_tokenizer) = if gemma {
        (
            replace_space,
            json!({"type": "Split", "pattern": {"String": " "},
                   "behavior": "MergedWithPrevious", "invert": false}),
        )
    } else if arch == "phi3" {
        (
            json!({"type": "Sequence", "normalizers": [
                {"type": "Prepend", "prepend": SPACE}, replace_space]}),
            Value::Null,
        )
    } else {
        (
            Value::Null,
            json!({"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "first",
                   "split": false}),
        )
    };
    if !gemma {
        // The prefix space the normalizer or pre-tokenizer added.
        decoders.push(json!({"type": "Strip", "content": " ", "start": 1, "stop": 0}));
    }
    // GemmaTokenizer names `<unk>` the unknown token; LlamaTokenizer's BPE has none (byte
    // fallback spells every character).
    let unk = (gemma && vocab.contains_key("<unk>")).then_some("<unk>");
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": null,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {"type": "BPE", "dropout": null, "unk_token": unk,
                  "continuing_subword_prefix": null, "end_of_word_suffix": null,
                  "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
                  "vocab": vocab_json, "merges": merges},
    })
}

/// transformers' `generate_merges(vocab, vocab_scores)`: for each token (in the order of the
/// first occurrence, with the last score given to it), its splits into two tokens of the
/// vocabulary ordered by their ids, all of them then ordered by score, then by the lengths of
/// the two parts (in characters), highest first; ties keep their order.
fn generate_merges<'a>(
    tokens: &'a [String],
    scores: &[f64],
    vocab: &HashMap<&str, usize>,
) -> Vec<(&'a str, &'a str)> {
    let mut order: Vec<&str> = Vec::new();
    let mut score_of: HashMap<&str, f64> = HashMap::new();
    for (t, &s) in tokens.iter().zip(scores) {
        if score_of.insert(t, s).is_none() {
            order.push(t);
        }
    }
    let mut merges: Vec<(&str, &str, f64, usize, usize)> = Vec::new();
    for token in order {
        let score = score_of[token];
        let mut local: Vec<(&str, &str, f64, usize, usize)> = token
            .char_indices()
            .skip(1)
            .filter_map(|(at, _)| {
                let (l, r) = token.split_at(at);
                (vocab.contains_key(l) && vocab.contains_key(r))
                    .then(|| (l, r, score, l.chars().count(), r.chars().count()))
            })
            .collect();
        local.sort_by_key(|(l, r, ..)| (vocab[l], vocab[r]));
        merges.extend(local);
    }
    // Python compares the scores as floats (0.0 == -0.0).
    merges.sort_by(|a, b| {
        b.2.partial_cmp(&a.2)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(b.3.cmp(&a.3))
            .then(b.4.cmp(&a.4))
    });
    merges.into_iter().map(|(l, r, ..)| (l, r)).collect()
}
