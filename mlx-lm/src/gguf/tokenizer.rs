//! `tokenizer.ggml.*` as a `tokenizer.json` and `tokenizer_config.json`, as transformers'
//! GGUF tokenizer conversion (`integrations/gguf/gguf_tokenizer_mapping.py`) builds them:
//! `gpt2` files as a byte-level BPE with the file's merges, `llama` (SentencePiece) files as
//! the BPE with byte fallback of `sentencepiece.rs`; control tokens as special added tokens,
//! user-defined ones as plain added tokens, the BOS token prepended when `add_bos_token` says so
//! (by default for SentencePiece files, as llama.cpp does), the chat template from
//! `tokenizer.chat_template`.

use serde_json::{json, Map, Value};

use super::reader::{GgufFile, MetaValue};
use super::sentencepiece;
use crate::config::invalid;
use crate::error::Result;

/// llama.cpp's `tokenizer.ggml.token_type` values.
const CONTROL: i64 = 3;
const USER_DEFINED: i64 = 4;

/// The pre-tokenizer split of llama.cpp's `tokenizer.ggml.pre` names (llama-vocab.cpp's
/// regexes); `None` is GPT-2's, which byte-level BPE applies itself.
fn pre_split(pre: &str) -> Option<Option<&'static str>> {
    Some(match pre {
        // llama.cpp splits SmolLM's digits one by one before GPT-2's split (as the
        // original tokenizer.json does); transformers' GGUF conversion, the reference here,
        // knows no "smollm" and applies GPT-2's alone.
        "default" | "gpt2" | "smollm" => None,
        "llama-bpe" | "llama3" | "smaug-bpe" => Some(
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        ),
        "qwen2" => Some(
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        ),
        _ => return None,
    })
}

/// `(tokenizer.json, tokenizer_config.json)` of the file's tokenizer.
pub fn tokenizer_files(file: &GgufFile) -> Result<(Value, Value)> {
    let meta = |k: &str| file.metadata.get(k);
    let bad = |k: &str, m: &str| invalid(&file.path, k, m);
    let model = meta("tokenizer.ggml.model")
        .and_then(MetaValue::as_str)
        .ok_or_else(|| bad("tokenizer.ggml.model", "missing or not a string"))?;
    if model != "gpt2" && model != "llama" {
        return Err(bad(
            "tokenizer.ggml.model",
            &format!(
                "{model} tokenizers are not supported (gpt2, byte-level BPE, and llama, \
                 SentencePiece, are)"
            ),
        ));
    }
    let strings = |k: &str| -> Result<Vec<String>> {
        meta(k)
            .and_then(MetaValue::as_array)
            .ok_or_else(|| bad(k, "missing or not an array"))?
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(k, "not a string"))
            })
            .collect()
    };
    let tokens = strings("tokenizer.ggml.tokens")?;
    let merges = match (model, meta("tokenizer.ggml.merges")) {
        ("llama", None) => None,
        _ => Some(strings("tokenizer.ggml.merges")?),
    };
    let types: Vec<i64> = match meta("tokenizer.ggml.token_type").and_then(MetaValue::as_array) {
        Some(t) => t.iter().map(|v| v.as_i64().unwrap_or(1)).collect(),
        None => vec![1; tokens.len()],
    };
    if types.len() != tokens.len() {
        return Err(bad(
            "tokenizer.ggml.token_type",
            &format!("{} entries for {} tokens", types.len(), tokens.len()),
        ));
    }
    let id_of = |k: &str| -> Result<Option<(usize, String)>> {
        match meta(k).map(|v| v.as_i64()) {
            None => Ok(None),
            Some(Some(id)) if id >= 0 && (id as usize) < tokens.len() => {
                Ok(Some((id as usize, tokens[id as usize].clone())))
            }
            Some(_) => Err(bad(k, "not a token id of the vocabulary")),
        }
    };
    let bos = id_of("tokenizer.ggml.bos_token_id")?;
    let eos = id_of("tokenizer.ggml.eos_token_id")?;
    let unk = id_of("tokenizer.ggml.unknown_token_id")?;
    let pad = id_of("tokenizer.ggml.padding_token_id")?;
    let flag = |k: &str| meta(k).and_then(MetaValue::as_bool);
    let arch = meta("general.architecture")
        .and_then(MetaValue::as_str)
        .unwrap_or_default();
    let mut json = if model == "llama" {
        let scores: Vec<f64> = meta("tokenizer.ggml.scores")
            .and_then(MetaValue::as_array)
            .ok_or_else(|| bad("tokenizer.ggml.scores", "missing or not an array"))?
            .iter()
            .map(|v| {
                v.as_f64()
                    .ok_or_else(|| bad("tokenizer.ggml.scores", "not a number"))
            })
            .collect::<Result<_>>()?;
        if scores.len() != tokens.len() {
            return Err(bad(
                "tokenizer.ggml.scores",
                &format!("{} entries for {} tokens", scores.len(), tokens.len()),
            ));
        }
        sentencepiece::tokenizer(arch, &tokens, &scores, merges.as_deref())
    } else {
        byte_level_bpe(file, &tokens, merges.unwrap_or_default(), unk.as_ref())?
    };
    // Control tokens stay whole and are special, user-defined ones stay whole (those the
    // vocabulary holds as spelled: gemma's respelled whitespace tokens are not). A
    // SentencePiece file's named special tokens are special too: transformers' tokenizer
    // classes add them so.
    let named: Vec<usize> = [&bos, &eos, &unk, &pad]
        .iter()
        .filter_map(|t| t.as_ref().map(|(id, _)| *id))
        .collect();
    let in_vocab = |t: &str| json["model"]["vocab"].get(t).is_some();
    let added: Vec<Value> = tokens
        .iter()
        .zip(&types)
        .enumerate()
        .filter_map(|(id, (t, ty))| {
            let special = *ty == CONTROL || (model == "llama" && named.contains(&id));
            (special || (*ty == USER_DEFINED && in_vocab(t))).then(|| {
                json!({"id": id, "content": t, "single_word": false, "lstrip": false,
                       "rstrip": false, "normalized": false, "special": special})
            })
        })
        .collect();
    json["added_tokens"] = Value::Array(added);
    let mut single = Vec::new();
    let mut special = Map::new();
    let mut add = |on: bool, tok: &Option<(usize, String)>, single: &mut Vec<Value>| {
        if let (true, Some((id, t))) = (on, tok) {
            single.push(json!({"SpecialToken": {"id": t, "type_id": 0}}));
            special.insert(t.clone(), json!({"id": t, "ids": [id], "tokens": [t]}));
        }
    };
    // llama.cpp adds BOS to a SentencePiece vocabulary that does not say otherwise.
    let bos_default = model == "llama";
    add(
        flag("tokenizer.ggml.add_bos_token").unwrap_or(bos_default),
        &bos,
        &mut single,
    );
    single.push(json!({"Sequence": {"id": "A", "type_id": 0}}));
    add(
        flag("tokenizer.ggml.add_eos_token").unwrap_or(false),
        &eos,
        &mut single,
    );
    json["post_processor"] = if special.is_empty() {
        Value::Null
    } else {
        let mut pair = single.clone();
        pair.extend(
            single
                .iter()
                .map(|v| {
                    v.to_string()
                        .replace("\"A\"", "\"B\"")
                        .replace("\"type_id\":0", "\"type_id\":1")
                })
                .map(|s| serde_json::from_str::<Value>(&s).expect("valid JSON")),
        );
        json!({"type": "TemplateProcessing", "single": single, "pair": pair,
               "special_tokens": special})
    };
    let mut config = Map::new();
    for (name, tok) in [
        ("bos_token", &bos),
        ("eos_token", &eos),
        ("unk_token", &unk),
        ("pad_token", &pad),
    ] {
        if let Some((_, t)) = tok {
            config.insert(name.into(), json!(t));
        }
    }
    if let Some(t) = meta("tokenizer.chat_template") {
        let t = t
            .as_str()
            .ok_or_else(|| bad("tokenizer.chat_template", "not a string"))?;
        config.insert("chat_template".into(), json!(t));
    }
    Ok((json, Value::Object(config)))
}

/// A `gpt2` file's tokenizer.json, without its added tokens and post-processor.
fn byte_level_bpe(
    file: &GgufFile,
    tokens: &[String],
    merges: Vec<String>,
    unk: Option<&(usize, String)>,
) -> Result<Value> {
    let meta = |k: &str| file.metadata.get(k);
    let bad = |k: &str, m: &str| invalid(&file.path, k, m);
    let pre_name = meta("tokenizer.ggml.pre")
        .and_then(MetaValue::as_str)
        .unwrap_or("default");
    let split = pre_split(pre_name).ok_or_else(|| {
        bad(
            "tokenizer.ggml.pre",
            &format!(
                "pre-tokenizer {pre_name} is not supported (default, gpt2, llama-bpe, qwen2 are)"
            ),
        )
    })?;

    let byte_level = |regex: bool| {
        json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
               "use_regex": regex})
    };
    let pre_tokenizer = match split {
        None => byte_level(true),
        Some(pattern) => json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
             "invert": false},
            byte_level(false),
        ]}),
    };

    let mut vocab = Map::new();
    for (id, t) in tokens.iter().enumerate() {
        // A repeated token keeps its first id, as a dict built in order would not: make
        // it an error rather than a silent renumbering.
        if vocab.insert(t.clone(), json!(id)).is_some() {
            return Err(bad(
                "tokenizer.ggml.tokens",
                &format!("token {t:?} appears twice"),
            ));
        }
    }
    Ok(json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true,
                    "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": unk.map(|u| &u.1),
                  "continuing_subword_prefix": null, "end_of_word_suffix": null,
                  "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                  "vocab": vocab, "merges": merges},
    }))
}
