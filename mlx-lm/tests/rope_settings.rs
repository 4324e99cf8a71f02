//! RoPE settings read where transformers 5 writes them: under `rope_parameters` as well as
//! at the top level, for every architecture (mlx_lm reads only one of the two places for
//! most of them and silently takes its default for the other).

use std::path::PathBuf;

use mlx_lm::blocks::rope_theta;
use mlx_lm::load_config;
use mlx_lm::models::{Llama, Qwen2, Qwen3, Qwen3_5};

fn config_dir(test: &str, config: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-lm-rope-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), config).unwrap();
    dir
}

const SIZES: &str = r#""hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 32, "rms_norm_eps": 1e-6,
    "head_dim": 16, "tie_word_embeddings": true"#;

#[test]
fn rope_theta_is_read_at_the_top_level_and_under_rope_parameters() {
    for (model_type, default) in [("llama", 10000.0), ("qwen2", 1_000_000.0)] {
        let nested = config_dir(
            &format!("{model_type}-nested"),
            &format!(
                r#"{{"model_type": "{model_type}", {SIZES},
                "rope_parameters": {{"rope_type": "default", "rope_theta": 500000.0}}}}"#
            ),
        );
        let top = config_dir(
            &format!("{model_type}-top"),
            &format!(r#"{{"model_type": "{model_type}", {SIZES}, "rope_theta": 250000.0}}"#),
        );
        let neither = config_dir(
            &format!("{model_type}-neither"),
            &format!(r#"{{"model_type": "{model_type}", {SIZES}}}"#),
        );
        let args = |dir: &PathBuf| {
            let c = load_config(dir).unwrap();
            match model_type {
                "llama" => Llama::args(&c).unwrap(),
                _ => Qwen2::args(&c).unwrap(),
            }
        };
        assert_eq!(args(&nested).rope.base, Some(500000.0), "{model_type}");
        assert_eq!(args(&top).rope.base, Some(250000.0), "{model_type}");
        assert_eq!(
            args(&neither).rope.base,
            Some(default as f32),
            "{model_type}"
        );
        for dir in [nested, top, neither] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}

#[test]
fn a_required_rope_theta_missing_from_both_places_is_an_error() {
    let dir = config_dir("qwen3", &format!(r#"{{"model_type": "qwen3", {SIZES}}}"#));
    let c = load_config(&dir).unwrap();
    let e = Qwen3::args(&c).unwrap_err().to_string();
    assert!(e.contains("rope_theta") && e.contains("missing"), "{e}");
    assert!(rope_theta(&c, None).is_err());
    assert_eq!(rope_theta(&c, Some(3.0)).unwrap(), 3.0);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn qwen3_5_reads_partial_rotary_at_the_top_level_when_rope_parameters_lack_it() {
    let linear = r#""linear_num_value_heads": 4, "linear_num_key_heads": 2,
        "linear_key_head_dim": 32, "linear_value_head_dim": 16, "full_attention_interval": 2"#;
    let dir = config_dir(
        "qwen3_5",
        &format!(
            r#"{{"model_type": "qwen3_5", {SIZES}, {linear}, "partial_rotary_factor": 0.5,
            "rope_parameters": {{"rope_type": "default", "rope_theta": 1000.0}}}}"#
        ),
    );
    let a = Qwen3_5::args(&load_config(&dir).unwrap()).unwrap();
    assert_eq!(a.attention.rope.as_ref().unwrap().dims, 8);
    assert_eq!(a.attention.rope.as_ref().unwrap().base, Some(1000.0));
    std::fs::remove_dir_all(dir).unwrap();
}
