//! Adapters against mlx_lm 0.32.2 (`scripts/golden/lora.py`, `tests/data/lora/adapters`):
//! adapters that mlx_lm made and saved on golden models (LoRA, QLoRA on a 4-bit model, DoRA)
//! load here, and the adapted model's logits of the golden prompt equal mlx_lm's bit for bit
//! (the same ops in the same order on the same CPU backend); the seeded initial adapters of
//! `linear_to_lora_layers` equal mlx_lm's bit for bit (the same draws from MLX's key chain).

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use mlx::core::{io, random, Array, Dtype};
use mlx::lm::tuner::{linear_to_lora_layers, load_adapters, AdapterConfig, FineTuneType};
use mlx::lm::{load_model, LoadOptions};
use mlx::nn::Module;
use serde_json::Value;
use support::lm::{golden, ids, model_dir};

fn adapters() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/lora/adapters")
}

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(adapters().join("cases.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn bits(a: &Array) -> Vec<u32> {
    let a = a.astype(Dtype::Float32).unwrap();
    a.to_vec::<f32>()
        .unwrap()
        .into_iter()
        .map(f32::to_bits)
        .collect()
}

fn expected(case: &str) -> std::collections::HashMap<String, Array> {
    io::load_safetensors(adapters().join(case).join("golden.safetensors"))
        .unwrap()
        .0
}

#[test]
fn mlx_lm_adapters_load_and_logits_equal_mlx_lm() {
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        let model_name = case["model"].as_str().unwrap();
        let mut model = load_model(model_dir(model_name), LoadOptions::default())
            .unwrap()
            .0;
        load_adapters(&mut model, adapters().join(name)).unwrap();
        let saved = io::load_safetensors(adapters().join(name).join("adapters.safetensors"))
            .unwrap()
            .0;
        let params: BTreeMap<String, Array> =
            model.named_parameters().unwrap().into_iter().collect();
        for (path, a) in &saved {
            assert_eq!(bits(&params[path]), bits(a), "{name}: {path} not loaded");
        }
        let prompt: Vec<i32> = ids(&golden(&format!("{model_name}.json"))["prompt"])
            .into_iter()
            .map(|t| t as i32)
            .collect();
        let inputs = Array::from_slice(&prompt, &[1, prompt.len() as i32]).unwrap();
        let logits = model.forward(&inputs, None).unwrap();
        let theirs = &expected(name)["logits"];
        assert_eq!(logits.shape(), theirs.shape(), "{name}");
        let (ours, theirs) = (bits(&logits), bits(theirs));
        let differ = ours.iter().zip(&theirs).filter(|(a, b)| a != b).count();
        assert_eq!(differ, 0, "{name}: {differ} of {} logits differ", ours.len());
    }
}

#[test]
fn seeded_adapters_equal_mlx_lm() {
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        let config = AdapterConfig::load(adapters().join(name)).unwrap();
        let mut model = load_model(model_dir(case["model"].as_str().unwrap()), LoadOptions::default())
            .unwrap()
            .0;
        random::seed(case["seed"].as_u64().unwrap()).unwrap();
        linear_to_lora_layers(
            &mut model,
            config.num_layers,
            &config.lora_parameters,
            config.fine_tune_type == FineTuneType::Dora,
        )
        .unwrap();
        let ours: BTreeMap<String, Array> = model
            .named_parameters()
            .unwrap()
            .into_iter()
            .filter(|(p, _)| {
                p.ends_with(".lora_a") || p.ends_with(".lora_b") || p.ends_with(".m")
            })
            .collect();
        let theirs: BTreeMap<String, Array> = expected(name)
            .into_iter()
            .filter_map(|(p, a)| Some((p.strip_prefix("init.")?.to_string(), a)))
            .collect();
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{name}: adapter paths"
        );
        for (path, a) in &ours {
            assert_eq!(bits(a), bits(&theirs[path]), "{name}: {path}");
        }
    }
}

#[test]
fn bad_adapters_are_errors() {
    let mut model = load_model(model_dir("qwen3"), LoadOptions::default())
        .unwrap()
        .0;
    // Missing directory.
    assert!(load_adapters(&mut model, adapters().join("no-such-adapter")).is_err());
    // Adapters of another model: shapes (llama3's) that do not fit qwen3's layers.
    let err = load_adapters(&mut model, adapters().join("llama3-dora"));
    assert!(err.is_err(), "llama3's adapters loaded into qwen3");
}
