//! The quantized key/value cache (`kv_bits`, `kv_group_size`, `quantized_kv_start`) against
//! mlx_lm 0.32.2's `generate_step` (`scripts/golden/lm_kv_quant.py`): tokens and
//! log-probabilities, the compiled step's traces around the switch, prompt-cache files with
//! quantized caches in both directions, and the errors of what cannot be quantized.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Parser;
use mlx::core::{io, ops, Array, Dtype};
use mlx::lm::{
    self, cli, generate_step, generate_step_with_cache, load_model, load_prompt_cache,
    save_prompt_cache, GenerateOptions, LayerCache, LoadOptions, Model, SamplerOptions,
};
use serde_json::Value;
use support::golden::{cuda_cannot, data_dir, on_cuda};
use support::lm::{ids, model_dir};

/// mlx_lm's record, or `None` on a CUDA GPU: `lm_kv_quant.py` has written the CPU record
/// only (its numbers are the wheel's CPU kernels').
fn golden() -> Option<Value> {
    if on_cuda() {
        println!("no CUDA record of mlx_lm's quantized key/value cache: not compared");
        return None;
    }
    Some(support::lm::golden("kv_quant.json"))
}

/// How far the compiled step's log-probabilities may be from mlx_lm's. It attends over the
/// whole preallocated buffers with a mask of the written positions (the masked scores weigh
/// exact zeros, but the softmax's sum runs over longer rows) and fuses elementwise ops:
/// measured on the wheel's CPU kernels, float32 within 5.7e-6 (gemma, gemma-4bit; qwen3_5
/// 3.8e-6), bfloat16 (smollm2-bf16) bit for bit. The source build adds its own rounding
/// (`support::lm::eager_tolerance`).
fn compiled_tolerance(dtype: Dtype) -> f32 {
    match (mlx::core::sys::PREBUILT_MLX, dtype) {
        (true, Dtype::Bfloat16) => 0.0,
        (true, _) => 6e-6,
        (false, dtype) => 6e-6 + support::lm::eager_tolerance(dtype),
    }
}

fn golden_logprobs() -> std::collections::HashMap<String, Array> {
    io::load_safetensors(data_dir().join("lm/kv_quant.safetensors"))
        .unwrap()
        .0
}

fn load(name: &str) -> Model {
    load_model(model_dir(name), LoadOptions::default())
        .unwrap()
        .0
}

fn temp_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mlx-lm-kvq-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The `generate` cases, each with the record's step count.
fn cases(golden: &Value) -> Vec<Value> {
    let steps = golden["steps"].clone();
    golden["generate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c["steps"] = steps.clone();
            c
        })
        .collect()
}

fn options_of(case: &Value, compile: bool) -> GenerateOptions {
    GenerateOptions {
        max_tokens: case["steps"].as_u64().unwrap() as usize,
        sampler: SamplerOptions {
            temperature: case["temp"].as_f64().unwrap(),
            ..Default::default()
        },
        seed: Some(case["seed"].as_u64().unwrap()),
        compile,
        kv_bits: Some(case["bits"].as_i64().unwrap() as i32),
        kv_group_size: case["group_size"].as_i64().unwrap() as i32,
        quantized_kv_start: case["quantized_kv_start"].as_u64().unwrap() as usize,
        ..Default::default()
    }
}

/// The tokens, the log-probabilities stacked (`[steps, vocab]`, the model's dtype) and the
/// traces of a generation.
fn run(model: &Model, prompt: &[u32], options: &GenerateOptions) -> (Vec<u32>, Array, u64) {
    let mut steps = generate_step(model, prompt, options).unwrap();
    let (mut tokens, mut logprobs) = (Vec::new(), Vec::new());
    for step in steps.by_ref() {
        let (token, lp) = step.unwrap();
        tokens.push(token);
        logprobs.push(lp);
    }
    (tokens, ops::stack(&logprobs, 0).unwrap(), steps.traces())
}

fn max_abs_diff(a: &Array, b: &Array) -> f32 {
    let f32 = |x: &Array| x.astype(Dtype::Float32).unwrap();
    let d = ops::abs(&ops::subtract(f32(a), f32(b)).unwrap()).unwrap();
    ops::max(&d, None, false).unwrap().item::<f32>().unwrap()
}

#[test]
fn eager_generation_equals_mlx_lm_bit_for_bit() {
    // compile: false runs mlx_lm's ops on mlx_lm's operands (the written prefix of the
    // quantized buffers, its masks), so wheel-linked every log-probability is mlx_lm's.
    let Some(golden) = golden() else { return };
    let expected = golden_logprobs();
    for case in cases(&golden) {
        let key = case["key"].as_str().unwrap();
        let model = load(case["model"].as_str().unwrap());
        let prompt = ids(&case["prompt"]);
        let (tokens, logprobs, traces) = run(&model, &prompt, &options_of(&case, false));
        assert_eq!(tokens, ids(&case["tokens"]), "{key}");
        assert_eq!(traces, 0, "{key}");
        let theirs = &expected[key];
        assert_eq!(logprobs.dtype(), theirs.dtype(), "{key}");
        let diff = max_abs_diff(&logprobs, theirs);
        assert!(
            diff <= support::lm::eager_tolerance(theirs.dtype()),
            "{key}: {diff}"
        );
    }
}

#[test]
fn compiled_generation_traces_once_per_cache_kind() {
    // Tokens must agree; the log-probabilities stay within `compiled_tolerance`.
    let Some(golden) = golden() else { return };
    let expected = golden_logprobs();
    for case in cases(&golden) {
        let key = case["key"].as_str().unwrap();
        let model = load(case["model"].as_str().unwrap());
        let prompt = ids(&case["prompt"]);
        let start = case["quantized_kv_start"].as_u64().unwrap() as usize;
        let (tokens, logprobs, traces) = run(&model, &prompt, &options_of(&case, true));
        assert_eq!(tokens, ids(&case["tokens"]), "{key}");
        // Quantized after the prefill: one trace, on the quantized cache. Switched mid-decode:
        // one on the float cache, one on the quantized, never one per token.
        let switches_mid_decode = start > prompt.len() - 1;
        assert_eq!(traces, if switches_mid_decode { 2 } else { 1 }, "{key}");
        let diff = max_abs_diff(&logprobs, &expected[key]);
        println!("{key}: compiled log-probabilities within {diff:e} of mlx_lm's");
        assert!(
            diff <= compiled_tolerance(logprobs.dtype()),
            "{key}: {diff}"
        );
    }
}

#[test]
fn quantized_cache_changes_the_numbers() {
    // The float cache's log-probabilities differ from mlx_lm's quantized ones after the switch
    // (the comparisons above can fail), and equal them before it.
    let Some(golden) = golden() else { return };
    let expected = golden_logprobs();
    for case in cases(&golden) {
        let key = case["key"].as_str().unwrap();
        if case["bits"].as_i64().unwrap() == 8 {
            continue; // 8 bits may round a bfloat16 model's keys back to themselves
        }
        let model = load(case["model"].as_str().unwrap());
        let prompt = ids(&case["prompt"]);
        let options = GenerateOptions {
            kv_bits: None,
            ..options_of(&case, false)
        };
        let mut float = generate_step(&model, &prompt, &options).unwrap();
        let (_, first) = float.next().unwrap().unwrap();
        let theirs = expected[key].index(0).unwrap();
        let start = case["quantized_kv_start"].as_u64().unwrap() as usize;
        let equal = ops::array_equal(&first, &theirs, false)
            .unwrap()
            .item::<bool>()
            .unwrap();
        // The first step runs on a quantized cache when the prefill reached the start.
        assert_eq!(equal, start > prompt.len() - 1, "{key}");
    }
}

fn refused(model: &Model, prompt: &[u32], options: &GenerateOptions) -> Option<String> {
    match generate_step(model, prompt, options) {
        Err(e) => Some(e.to_string()),
        Ok(steps) => steps.filter_map(|s| s.err()).map(|e| e.to_string()).next(),
    }
}

#[test]
fn what_mlx_lm_refuses_is_an_error() {
    let Some(golden) = golden() else { return };
    for case in golden["errors"].as_array().unwrap() {
        let name = case["model"].as_str().unwrap();
        let model = load(name);
        let options = GenerateOptions {
            max_tokens: 2,
            kv_bits: Some(case["bits"].as_i64().unwrap() as i32),
            kv_group_size: case["group_size"].as_i64().unwrap() as i32,
            quantized_kv_start: case["quantized_kv_start"].as_u64().unwrap() as usize,
            ..Default::default()
        };
        let prompt: Vec<u32> = (3..27).collect();
        let error = refused(&model, &prompt, &options);
        let error = error.unwrap_or_else(|| panic!("{name}: {case} did not fail"));
        println!("{name}: ours: {error}; mlx_lm: {}", case["error"]);
    }
}

#[test]
fn bad_values_and_unsupported_layers_are_errors() {
    let model = load("smollm2-bf16");
    let prompt: Vec<u32> = (3..27).collect();
    let bad = [
        (1, 64),
        (7, 64),
        (9, 64),
        (0, 64),
        (-4, 64),
        (4, 16),
        (4, 0),
        (4, -32),
        (4, 128),
    ];
    for (bits, group_size) in bad {
        let options = GenerateOptions {
            max_tokens: 2,
            kv_bits: Some(bits),
            kv_group_size: group_size,
            quantized_kv_start: 0,
            ..Default::default()
        };
        let error = refused(&model, &prompt, &options);
        assert!(error.is_some(), "bits {bits}, group {group_size}");
    }
    // mlx_lm's batch generation has no quantized cache: an error, not a float cache.
    let options = GenerateOptions {
        max_tokens: 2,
        kv_bits: Some(4),
        quantized_kv_start: 0,
        ..Default::default()
    };
    let batch = lm::batch_generate_step(&model, &[&prompt[..], &prompt[..5]], &options);
    assert!(batch.is_err());
    // Every width MLX has works (head_dim 64): on the CPU. MLX's CUDA quantized_matmul has
    // no kernel for some of these shapes (mlx_lm fails there the same way).
    for bits in [2, 3, 4, 5, 6, 8] {
        let options = GenerateOptions {
            max_tokens: 2,
            kv_bits: Some(bits),
            kv_group_size: 64,
            quantized_kv_start: 0,
            ..Default::default()
        };
        match refused(&model, &prompt, &options) {
            Some(e) if cuda_cannot(&e) => println!("SKIPPED bits {bits} on CUDA: {e}"),
            error => assert!(error.is_none(), "bits {bits}: {error:?}"),
        }
    }
    // Attention of its own (MLA), sinks and sliding windows (gpt_oss), float32 attention
    // (phi): errors, never numbers from a cache they do not read.
    for name in ["deepseek_v3", "gpt_oss", "phi"] {
        let model = load(name);
        for group_size in [32, 64] {
            let options = GenerateOptions {
                max_tokens: 2,
                kv_bits: Some(4),
                kv_group_size: group_size,
                quantized_kv_start: 0,
                ..Default::default()
            };
            let error = refused(&model, &prompt, &options);
            assert!(error.is_some(), "{name} group {group_size}");
            println!("{name}, group {group_size}: {}", error.unwrap());
        }
    }
}

#[test]
fn prompt_cache_files_move_between_mlx_lm_and_rust() {
    let Some(golden) = golden() else { return };
    for case in golden["prompt_cache"].as_array().unwrap() {
        let name = case["model"].as_str().unwrap();
        let model = load(name);
        let prompt = ids(&case["prompt"]);
        let prefix = case["prefix"].as_u64().unwrap() as usize;
        let (bits, group_size) = (
            case["bits"].as_i64().unwrap() as i32,
            case["group_size"].as_i64().unwrap() as i32,
        );
        let expected = ids(&case["tokens"]);
        let options = GenerateOptions {
            max_tokens: expected.len(),
            kv_bits: Some(bits),
            kv_group_size: group_size,
            quantized_kv_start: 0,
            ..Default::default()
        };
        let python_file = data_dir().join("lm").join(case["file"].as_str().unwrap());

        // mlx_lm's file, continued here.
        let (cache, metadata) = load_prompt_cache(&python_file).unwrap();
        assert_eq!(metadata.get("model").map(String::as_str), Some(name));
        let classes: Vec<&str> = cache.iter().map(LayerCache::class_name).collect();
        let their_classes: Vec<&str> = case["classes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(classes, their_classes, "{name}");
        let continue_from = |cache: lm::Cache| -> Vec<u32> {
            generate_step_with_cache(&model, &prompt[prefix..], cache, &options)
                .unwrap()
                .map(|r| r.unwrap().0)
                .collect()
        };
        assert_eq!(continue_from(cache), expected, "{name}");

        // Ours: the prefix, quantized, saved: mlx_lm's keys, metadata and arrays bit for bit.
        let mut cache = model.make_cache(1, 256).unwrap();
        let head = Array::from_slice(&prompt[..prefix], &[1, prefix as i32]).unwrap();
        model.forward(&head, Some(&mut cache)).unwrap();
        lm::cache::quantize_kv_cache(&mut cache, group_size, bits).unwrap();
        let ours = temp_dir(name).join("cache.safetensors");
        let meta = BTreeMap::from([
            ("model".to_string(), name.to_string()),
            ("note".to_string(), "quantized ✓".to_string()),
        ]);
        save_prompt_cache(&ours, &cache, &meta).unwrap();
        let (their_arrays, their_meta) = io::load_safetensors(&python_file).unwrap();
        let (our_arrays, our_meta) = io::load_safetensors(&ours).unwrap();
        let sorted = |m: &std::collections::HashMap<String, String>| -> BTreeMap<String, String> {
            m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        // The scalars' list may be in another order; its set and everything else is the same.
        let scalars =
            |m: &BTreeMap<String, String>| -> (BTreeMap<String, String>, Vec<(String, String)>) {
                let rest = m
                    .iter()
                    .filter(|(k, _)| !k.starts_with("2."))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let mut pairs: Vec<(String, String)> = (1..)
                    .map_while(|j| {
                        Some((
                            m.get(&format!("2.{j}.0"))?.clone(),
                            m.get(&format!("2.{j}.1"))?.clone(),
                        ))
                    })
                    .collect();
                pairs.sort();
                (rest, pairs)
            };
        assert_eq!(
            scalars(&sorted(&our_meta)),
            scalars(&sorted(&their_meta)),
            "{name}"
        );
        let mut keys: Vec<_> = our_arrays.keys().collect();
        keys.sort();
        let mut their_keys: Vec<_> = their_arrays.keys().collect();
        their_keys.sort();
        assert_eq!(keys, their_keys, "{name}");
        for (key, theirs) in &their_arrays {
            let ours = &our_arrays[key];
            assert_eq!(ours.shape(), theirs.shape(), "{name} {key}");
            assert_eq!(ours.dtype(), theirs.dtype(), "{name} {key}");
            if mlx::core::sys::PREBUILT_MLX {
                let same = ops::array_equal(ours, theirs, false).unwrap();
                assert!(same.item::<bool>().unwrap(), "{name} {key}");
            } else if !is_packed(ours) {
                // Our source build of MLX rounds float32 kernels otherwise than the wheel
                // that wrote mlx_lm's file (tests/lm_models.rs bounds the logits' gap by
                // 1e-5); a quantized cache's packed codes may then round to a neighbouring
                // code, which the continuation below still checks.
                let close = ops::allclose(
                    &ours.astype(Dtype::Float32).unwrap(),
                    &theirs.astype(Dtype::Float32).unwrap(),
                    ops::AllcloseOptions::default().rtol(1e-4).atol(1e-5),
                )
                .unwrap();
                assert!(close.item::<bool>().unwrap(), "{name} {key}");
            }
        }
        // And ours, read back, continues as mlx_lm's.
        let (cache, _) = load_prompt_cache(&ours).unwrap();
        assert_eq!(continue_from(cache), expected, "{name}");
    }
}

#[test]
fn a_quantized_file_with_other_bits_is_an_error() {
    let Some(golden) = golden() else { return };
    let case = &golden["prompt_cache"][0];
    let model = load(case["model"].as_str().unwrap());
    let prompt = ids(&case["prompt"]);
    let prefix = case["prefix"].as_u64().unwrap() as usize;
    let (cache, _) =
        load_prompt_cache(data_dir().join("lm").join(case["file"].as_str().unwrap())).unwrap();
    let options = GenerateOptions {
        max_tokens: 2,
        kv_bits: Some(8),
        kv_group_size: 32,
        quantized_kv_start: 0,
        ..Default::default()
    };
    assert!(generate_step_with_cache(&model, &prompt[prefix..], cache, &options).is_err());
}

#[test]
fn generate_command_takes_the_kv_flags() {
    let name = "smollm2-bf16";
    let argv = |bits: &str| {
        [
            "mlx-lm",
            "generate",
            "--verbose",
            "False",
            "--model",
            model_dir(name).to_str().unwrap(),
            "--prompt",
            "hello there",
            "--max-tokens",
            "6",
            "--kv-bits",
            bits,
            "--kv-group-size",
            "64",
            "--quantized-kv-start",
            "0",
        ]
        .map(String::from)
    };
    let generate = |cli: &cli::Cli| match &cli.command {
        cli::Command::Generate(args) => args.clone(),
        other => panic!("not generate: {other:?}"),
    };
    let parsed = cli::Cli::try_parse_from(argv("4")).unwrap();
    let args = generate(&parsed);
    assert_eq!(
        (args.kv_bits, args.kv_group_size, args.quantized_kv_start),
        (Some(4), 64, 0)
    );
    let (mut out, mut err) = (Vec::new(), Vec::new());
    match cli::run(&parsed, &mut std::io::empty(), &mut out, &mut err) {
        // MLX's CUDA quantized_matmul has no kernel for this model's quantized attention
        // (smollm2-bf16's head dim 64, 4 bits in groups of 64): mlx_lm fails there too.
        Err(e) if cuda_cannot(&e.to_string()) => println!("SKIPPED the run on CUDA: {e}"),
        result => {
            result.unwrap();
            assert!(!out.is_empty());
        }
    }
    let parsed = cli::Cli::try_parse_from(argv("7")).unwrap();
    let result = cli::run(
        &parsed,
        &mut std::io::empty(),
        &mut Vec::new(),
        &mut Vec::new(),
    );
    let message = result.unwrap_err().to_string();
    assert!(message.contains("kv_bits 7"), "{message}");
    // The defaults are mlx_lm's.
    let args = generate(&cli::Cli::try_parse_from(&argv("4")[..10]).unwrap());
    assert_eq!(
        (args.kv_bits, args.kv_group_size, args.quantized_kv_start),
        (None, 64, 5000)
    );
}

/// A quantized cache's packed codes (uint32 words), which a rounding difference of the
/// quantized values changes by whole codes.
fn is_packed(a: &Array) -> bool {
    a.dtype() == Dtype::Uint32
}
