//! `tokenizer.json` through the `tokenizers` crate, used as `transformers` (and so mlx_lm)
//! uses it.

use mlx_lm::{Error, Tokenizer};

/// A word-level tokenizer whose file asks for truncation to 2 tokens and padding to 8.
const TOKENIZER: &str = r#"{
  "version": "1.0",
  "truncation": {"direction": "Right", "max_length": 2, "strategy": "LongestFirst", "stride": 0},
  "padding": {"strategy": {"Fixed": 8}, "direction": "Right", "pad_to_multiple_of": null,
              "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
  "added_tokens": [],
  "normalizer": null,
  "pre_tokenizer": {"type": "Whitespace"},
  "post_processor": null,
  "decoder": null,
  "model": {"type": "WordLevel", "vocab": {"[PAD]": 0, "[UNK]": 1, "hello": 2, "world": 3, "again": 4},
            "unk_token": "[UNK]"}
}"#;

fn dir(test: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mlx-lm-tok-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn encodes_without_the_files_padding_and_truncation() {
    let d = dir("encode");
    std::fs::write(d.join("tokenizer.json"), TOKENIZER).unwrap();
    let tok = Tokenizer::load(&d).unwrap();
    // transformers' tokenizer(text) neither pads nor truncates unless asked.
    assert_eq!(
        tok.encode("hello world again", true).unwrap(),
        vec![2, 3, 4]
    );
    assert_eq!(tok.encode("hello unknown", false).unwrap(), vec![2, 1]);
    assert_eq!(tok.decode(&[2, 3], false).unwrap(), "hello world");
    assert_eq!(tok.token_to_id("again"), Some(4));
    assert_eq!(tok.vocab_size(), 5);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_missing_or_broken_file_is_named() {
    let d = dir("broken");
    let e = Tokenizer::load(&d).unwrap_err();
    assert!(
        matches!(e, Error::Io { .. }) && e.to_string().contains("tokenizer.json"),
        "{e}"
    );
    std::fs::write(
        d.join("tokenizer.json"),
        r#"{"model": {"type": "NoSuchModel"}}"#,
    )
    .unwrap();
    let e = Tokenizer::load(&d).unwrap_err();
    assert!(
        matches!(e, Error::Tokenizer { .. }) && e.to_string().contains("tokenizer.json"),
        "{e}"
    );
    // The tokenizers crate's own error stays reachable.
    assert!(std::error::Error::source(&e).is_some(), "{e:?}");
    std::fs::write(d.join("tokenizer.json"), "{not json").unwrap();
    let e = Tokenizer::load(&d).unwrap_err();
    assert!(
        matches!(e, Error::Json { .. }) && e.to_string().contains("tokenizer.json"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
