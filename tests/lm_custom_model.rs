//! An architecture registered from outside mlx-lm (`examples/custom_model/arch.rs`, on the
//! shared blocks) loads, generates (its decode step traced once, equal to its eager forward),
//! saves and reloads a prompt cache, and runs through the `generate` command; an unknown
//! `model_type` is an error naming every registered one.

#[path = "../examples/custom_model/arch.rs"]
mod arch;
mod support;

use std::path::PathBuf;

use clap::Parser;
use mlx::core::{ops, Array};
use mlx::lm::{
    cli, generate, generate_step, generate_step_with_cache, load, load_prompt_cache,
    registered_models, save_prompt_cache, Error, GenerateOptions, LanguageModel, LoadOptions,
    Model, Tokenizer,
};
use mlx::utils::{tree_flatten_with_path, tree_map};
use support::lm::model_dir;

/// A fresh `tiny_lm` directory for `test`, with `tiny_lm` registered.
fn tiny_lm(test: &str) -> PathBuf {
    arch::register();
    let dir = std::env::temp_dir().join(format!("mlx-lm-custom-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    arch::write_random_model(&dir, &model_dir("qwen3"), 7).unwrap();
    dir
}

fn load_tiny(test: &str) -> (Model, Tokenizer, PathBuf) {
    let dir = tiny_lm(test);
    let (model, tokenizer, _) = load(&dir, LoadOptions::default()).unwrap();
    (model, tokenizer, dir)
}

fn greedy_options(n: usize) -> GenerateOptions {
    GenerateOptions {
        max_tokens: n,
        ..Default::default()
    }
}

/// Greedy tokens by the model's forward alone, no compile: the reference.
fn eager_greedy(model: &dyn LanguageModel, prompt: &[u32], n: usize) -> Vec<u32> {
    let mut cache = model.make_cache(1, 256).unwrap();
    let ids = Array::from_slice(prompt, &[1, prompt.len() as i32]).unwrap();
    let mut logits = model.forward(&ids, Some(&mut cache)).unwrap();
    let mut tokens = Vec::new();
    for _ in 0..n {
        let last = logits.index((0, -1)).unwrap();
        let token = ops::argmax(&last, -1, false)
            .unwrap()
            .item::<u32>()
            .unwrap();
        tokens.push(token);
        let next = Array::from_slice(&[token], &[1, 1]).unwrap();
        logits = model.forward(&next, Some(&mut cache)).unwrap();
    }
    tokens
}

#[test]
fn a_registered_architecture_loads_and_generates() {
    let (model, _, dir) = load_tiny("generate");
    assert_eq!(model.model_type(), arch::MODEL_TYPE);
    let tiny = model.downcast_ref::<arch::TinyLm>().expect("a TinyLm");
    assert_eq!(tiny.transformer.layers.len(), 2);
    let paths: Vec<String> = tree_flatten_with_path(&model)
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert!(paths.contains(&"transformer.layers.1.self_attn.q_norm.weight".to_string()));

    let prompt: Vec<u32> = (1..20).map(|i| (i * 37) % 384).collect();
    let n = 24;
    let mut steps = generate_step(&model, &prompt, &greedy_options(n)).unwrap();
    let tokens: Vec<u32> = steps.by_ref().map(|s| s.unwrap().0).collect();
    assert_eq!(steps.traces(), 1);
    assert_eq!(tokens, eager_greedy(&model, &prompt, n));
    // Generation takes the architecture's own type and a trait object alike.
    let direct: Vec<u32> = generate_step(tiny, &prompt, &greedy_options(n))
        .unwrap()
        .map(|s| s.unwrap().0)
        .collect();
    let dynamic: Vec<u32> = generate_step(model.as_dyn(), &prompt, &greedy_options(n))
        .unwrap()
        .map(|s| s.unwrap().0)
        .collect();
    assert_eq!(direct, tokens);
    assert_eq!(dynamic, tokens);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_registered_architecture_rebuilds_from_its_leaves() {
    let (model, _, dir) = load_tiny("rebuild");
    // A Model unflattens as its architecture: tree_map gives a model of the same type.
    let doubled: Model = tree_map(|x| Ok(x.clone()), &model).unwrap();
    assert!(doubled.downcast_ref::<arch::TinyLm>().is_some());
    let ids = Array::from_slice(&[1u32, 2, 3], &[1, 3]).unwrap();
    let (a, b) = (
        model.forward(&ids, None).unwrap(),
        doubled.forward(&ids, None).unwrap(),
    );
    assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_registered_architecture_saves_and_reloads_a_prompt_cache() {
    let (model, _, dir) = load_tiny("prompt-cache");
    let prompt: Vec<u32> = (1..30).map(|i| (i * 11) % 384).collect();
    let (first, second) = prompt.split_at(20);
    let n = 12;
    let whole: Vec<u32> = generate_step(&model, &prompt, &greedy_options(n))
        .unwrap()
        .map(|s| s.unwrap().0)
        .collect();

    // The first part's cache, saved and loaded back, continues into the same tokens.
    let mut head = generate_step(&model, first, &greedy_options(1)).unwrap();
    head.by_ref().for_each(|s| drop(s.unwrap()));
    let file = dir.join("prompt.safetensors");
    let metadata = [("model".to_string(), arch::MODEL_TYPE.to_string())].into();
    save_prompt_cache(&file, head.cache(), &metadata).unwrap();
    let (cache, meta) = load_prompt_cache(&file).unwrap();
    assert_eq!(meta["model"], arch::MODEL_TYPE);
    let continued: Vec<u32> = generate_step_with_cache(&model, second, cache, &greedy_options(n))
        .unwrap()
        .map(|s| s.unwrap().0)
        .collect();
    assert_eq!(continued, whole);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_registered_architecture_runs_through_the_generate_command() {
    let (model, tokenizer, dir) = load_tiny("cli");
    let argv = [
        "mlx-lm",
        "generate",
        "--model",
        dir.to_str().unwrap(),
        "--prompt",
        "hello world",
        "--max-tokens",
        "10",
        "--ignore-chat-template",
    ];
    let cli = cli::Cli::try_parse_from(argv).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    cli::run(&cli, &mut std::io::empty(), &mut out, &mut err).unwrap();
    let ids = tokenizer.encode("hello world", true).unwrap();
    let options = GenerateOptions {
        max_tokens: 10,
        stop_tokens: tokenizer.eos_token_ids(),
        ..Default::default()
    };
    let expected = generate(&model, &tokenizer, &ids, &options).unwrap();
    // mlx_lm's verbose printing: the text between `==========` lines, then the statistics.
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.starts_with(&format!("==========\n{expected}\n==========\nPrompt: ")),
        "{out}"
    );
    assert!(
        out.contains("tokens-per-sec") && out.contains("Peak memory: "),
        "{out}"
    );
    assert!(err.is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_unknown_model_type_lists_the_registered_ones() {
    let dir = tiny_lm("unknown");
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    std::fs::write(
        dir.join("config.json"),
        config.replace(arch::MODEL_TYPE, "no_such_arch"),
    )
    .unwrap();
    let e = load(&dir, LoadOptions::default()).unwrap_err();
    assert!(matches!(e, Error::UnsupportedModel { .. }), "{e}");
    let message = e.to_string();
    for registered in registered_models() {
        assert!(
            message.contains(&registered),
            "{message} lacks {registered}"
        );
    }
    assert!(message.contains("no_such_arch") && message.contains(arch::MODEL_TYPE));
    std::fs::remove_dir_all(dir).unwrap();
}
