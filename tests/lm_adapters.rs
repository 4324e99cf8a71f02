//! Adapters against mlx_lm 0.32.2 (`scripts/golden/lora.py`, `tests/data/lora/adapters`):
//! adapters that mlx_lm made and saved on golden models (LoRA, QLoRA on a 4-bit model, DoRA;
//! on the expert layers of a mixture-of-experts model, float and 4-bit; on embedding tables,
//! LoRA and DoRA, tied, and quantized) load here, and the adapted model's logits of the golden prompt equal mlx_lm's bit for bit
//! (the same ops in the same order on the same CPU backend); the seeded initial adapters of
//! `linear_to_lora_layers` equal mlx_lm's bit for bit (the same draws from MLX's key chain);
//! and the compiled training step, from the same seeds, data and config as mlx_lm's
//! `trainer.train`, gives its losses step by step and its saved adapters.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use mlx::core::{io, ops, random, Array, Dtype};
use mlx::lm::tuner::{
    evaluate, fuse_adapters, iterate_batches, linear_to_lora_layers, load_adapters,
    load_config_file, load_local_dataset, trainable_parameters, AdapterConfig, DatasetOptions,
    FineTuneType, LoraConfig, LoraParameters, RandomState, TrainStep,
};
use mlx::lm::{load_model, LoadOptions, Tokenizer};
use mlx::nn::Module;
use mlx::optimizers::Adam;
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

/// The words of an integer array (packed quantized weights), exactly.
fn words(a: &Array) -> Vec<u32> {
    a.astype(Dtype::Uint32).unwrap().to_vec::<u32>().unwrap()
}

/// Linked to the wheel's libmlx (`MLX_DIR`), the same ops run the same kernels: bit for bit.
/// Our source build of MLX compiles its kernels with other flags (vectorized exp, reduction
/// order), which moves float32 results by a few ulps, and training carries them on: measured,
/// qwen3-4bit DoRA's losses 1.8e-3 apart at 5.3 by the third Adam step (3.4e-4 of it). A
/// bound of 1e-3 of the largest magnitude still fails a wrong op, loss or update (1e-2 and up).
const SOURCE_BUILD_RTOL: f32 = 1e-3;

/// `ours` equals `theirs` bit for bit when wheel-linked, within [`SOURCE_BUILD_RTOL`] of the
/// largest magnitude otherwise.
fn assert_near(ours: &Array, theirs: &Array, what: &str) {
    assert_eq!(ours.shape(), theirs.shape(), "{what}");
    let (a, b) = (bits(ours), bits(theirs));
    if mlx::core::sys::PREBUILT_MLX {
        let differ = a.iter().zip(&b).filter(|(x, y)| x != y).count();
        assert_eq!(differ, 0, "{what}: {differ} of {} differ", a.len());
        return;
    }
    let (a, b): (Vec<f32>, Vec<f32>) = (
        a.into_iter().map(f32::from_bits).collect(),
        b.into_iter().map(f32::from_bits).collect(),
    );
    let scale = b.iter().fold(0.0f32, |m, x| m.max(x.abs())).max(1.0);
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(
        worst <= SOURCE_BUILD_RTOL * scale,
        "{what}: {worst:e} apart"
    );
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
        assert_near(&logits, theirs, &format!("{name}: logits"));

        // mlx_lm.fuse: the adapters merged into the base layers (requantized when 4-bit).
        let n = fuse_adapters(&mut model, false).unwrap();
        assert!(n > 0, "{name}: nothing fused");
        let left = model
            .named_parameters()
            .unwrap()
            .into_iter()
            .filter(|(p, _)| {
                p.contains("lora_")
                    || p.contains(".linear.")
                    || p.contains(".embedding.")
                    || p.ends_with(".m")
            })
            .count();
        assert_eq!(left, 0, "{name}: adapter parameters left after fuse");
        // mlx_lm's fused layers, parameter for parameter (packed words of a requantized
        // layer included).
        let ours: BTreeMap<String, Array> = model.named_parameters().unwrap().into_iter().collect();
        let mut compared = 0;
        for (key, theirs) in expected(name) {
            let Some(path) = key.strip_prefix("fused.") else {
                continue;
            };
            let what = format!("{name}: fused {path}");
            let ours = ours.get(path).unwrap_or_else(|| panic!("{what}: missing"));
            assert_eq!(ours.dtype(), theirs.dtype(), "{what}");
            if theirs.dtype().is_floating() {
                assert_near(ours, &theirs, &what);
            } else if mlx::core::sys::PREBUILT_MLX {
                assert_eq!(words(ours), words(&theirs), "{what}");
            }
            compared += 1;
        }
        assert!(compared > 0, "{name}: no fused parameters recorded");
        let fused = model.forward(&inputs, None).unwrap();
        assert_near(
            &fused,
            &expected(name)["fused_logits"],
            &format!("{name}: fused logits"),
        );
    }
}

#[test]
fn seeded_adapters_equal_mlx_lm() {
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        let config = AdapterConfig::load(adapters().join(name)).unwrap();
        let mut model = load_model(
            model_dir(case["model"].as_str().unwrap()),
            LoadOptions::default(),
        )
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
            .filter(|(p, _)| p.ends_with(".lora_a") || p.ends_with(".lora_b") || p.ends_with(".m"))
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

/// The modules the default keys adapt (`lora_parameters` without `keys`) are mlx_lm's: every
/// linear, expert and embedding layer in the blocks, routers and shared experts included, in
/// mixture-of-experts models of several families and a hybrid one (qwen3_5: the gated delta
/// net's projections too; mlx_lm 0.32.2 has no per-architecture choice); after
/// `model.freeze`, only the adapters train.
#[test]
fn default_keys_equal_mlx_lm() {
    let text = std::fs::read_to_string(adapters().join("default_keys.json")).unwrap();
    let expected: BTreeMap<String, Vec<String>> = serde_json::from_str(&text).unwrap();
    assert!(expected.len() >= 9);
    let params = LoraParameters {
        rank: 1,
        scale: 1.0,
        dropout: 0.0,
        keys: None,
    };
    for (name, theirs) in &expected {
        let mut model = load_model(model_dir(name), LoadOptions::default())
            .unwrap()
            .0;
        // As mlx_lm.lora: the base frozen, then the adapters (their bases stay frozen).
        model.freeze(None).unwrap();
        linear_to_lora_layers(&mut model, -1, &params, false).unwrap();
        let ours: Vec<String> = model
            .named_parameters()
            .unwrap()
            .into_iter()
            .filter_map(|(p, _)| Some(p.strip_suffix(".lora_a")?.to_string()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(&ours, theirs, "{name}: adapted modules");
        let trainable: BTreeSet<String> =
            trainable_parameters(&model).unwrap().into_keys().collect();
        let adapters: BTreeSet<String> = theirs
            .iter()
            .flat_map(|m| [format!("{m}.lora_a"), format!("{m}.lora_b")])
            .collect();
        assert_eq!(trainable, adapters, "{name}: trainable parameters");
    }
}

/// What mlx_lm refuses is an error here too, and leaves the model as it was: DoRA on expert
/// layers (mlx_lm: "SwitchLinear doesn't support DoRA yet."), a key naming a module no adapter
/// wraps (a norm); and DoRA on a quantized table, which mlx_lm 0.32.2 builds on the packed
/// words and fails at its first call.
#[test]
fn unsupported_adapters_are_errors() {
    let cases: [(&str, Option<&[&str]>, bool, &str); 4] = [
        ("qwen3_moe", None, true, "doesn't support DoRA"),
        (
            "qwen3_moe-4bit",
            Some(&["mlp.switch_mlp.up_proj"]),
            true,
            "doesn't support DoRA",
        ),
        ("qwen3", Some(&["input_layernorm"]), false, "can't convert"),
        (
            "qwen3-4bit",
            Some(&["model.embed_tokens"]),
            true,
            "quantized embedding",
        ),
    ];
    for (name, keys, dora, message) in cases {
        let mut model = load_model(model_dir(name), LoadOptions::default())
            .unwrap()
            .0;
        let before: Vec<String> = model
            .named_parameters()
            .unwrap()
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        let params = LoraParameters {
            rank: 2,
            scale: 1.0,
            dropout: 0.0,
            keys: keys.map(|k| k.iter().map(|s| s.to_string()).collect()),
        };
        let err = linear_to_lora_layers(&mut model, -1, &params, dora)
            .unwrap_err()
            .to_string();
        assert!(err.contains(message), "{name}: {err}");
        let after: Vec<String> = model
            .named_parameters()
            .unwrap()
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(before, after, "{name}: the model changed");
    }
}

/// mlx_lm.lora saves a full fine-tune's config with `lora_parameters: null`; its
/// load_adapters never reads the key then, while LoRA needs it.
#[test]
fn full_fine_tune_config_without_lora_parameters() {
    let dir = std::env::temp_dir().join(format!("lm-adapters-full-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |kind: &str| {
        let config = serde_json::json!({
            "fine_tune_type": kind, "num_layers": 2, "lora_parameters": null,
        });
        std::fs::write(dir.join("adapter_config.json"), config.to_string()).unwrap();
    };
    write("full");
    let config = AdapterConfig::load(&dir).unwrap();
    assert_eq!(config.fine_tune_type, FineTuneType::Full);
    assert_eq!(config.num_layers, 2);
    write("lora");
    let err = AdapterConfig::load(&dir).unwrap_err().to_string();
    assert!(err.contains("lora_parameters"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn lora_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/lora")
}

#[test]
fn training_losses_and_adapters_equal_mlx_lm() {
    let tokenizer = Tokenizer::load(lora_data().join("tokenizer")).unwrap();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(lora_data().join("train"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty());
    for dir in dirs {
        let g: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("losses.json")).unwrap())
                .unwrap();
        assert_eq!(g["mlx_lm_version"], "0.32.2");
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let seed = g["seed"].as_u64().unwrap();
        let mut model = load_model(
            model_dir(g["model"].as_str().unwrap()),
            LoadOptions::default(),
        )
        .unwrap()
        .0;
        // mlx_lm.lora: np.random.seed, mx.random.seed, model.freeze(), linear_to_lora_layers.
        let rng = RandomState::new(seed as u32);
        random::seed(seed).unwrap();
        model.freeze(None).unwrap();
        let params: LoraParameters = serde_json::from_value(g["lora_parameters"].clone()).unwrap();
        linear_to_lora_layers(
            &mut model,
            g["num_layers"].as_i64().unwrap() as i32,
            &params,
            g["fine_tune_type"] == "dora",
        )
        .unwrap();
        let options = DatasetOptions {
            mask_prompt: g["mask_prompt"].as_bool().unwrap(),
            ..Default::default()
        };
        let splits =
            load_local_dataset(lora_data().join(g["data"].as_str().unwrap()), &options).unwrap();
        let train = splits.train.unwrap().tokenize(&tokenizer).unwrap();
        let lr = g["learning_rate"].as_f64().unwrap() as f32;
        let mut step = TrainStep::new(model, Adam::new(lr)).unwrap();
        let iters = g["iters"].as_u64().unwrap() as usize;
        let batch_size = g["batch_size"].as_u64().unwrap() as usize;
        let (mut losses, mut widths) = (Vec::new(), BTreeSet::new());
        for batch in iterate_batches(&train, batch_size, 2048, true, rng)
            .unwrap()
            .take(iters)
        {
            widths.insert(batch.width);
            losses.push(step.step(&batch).unwrap().0);
        }
        let theirs: Vec<f32> = g["losses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        eprintln!("{name}: ours {losses:?}\n{name}: theirs {theirs:?}");
        assert_near(
            &Array::from_slice(&losses, &[losses.len() as i32]).unwrap(),
            &Array::from_slice(&theirs, &[theirs.len() as i32]).unwrap(),
            &format!("{name}: losses"),
        );
        // One trace per batch shape, as Python's mx.compile.
        if std::env::var_os("MLX_DISABLE_COMPILE").is_none() {
            assert_eq!(step.stats().traces as usize, widths.len(), "{name}: traces");
        }
        let ours = trainable_parameters(&step.state.0).unwrap();
        let saved = io::load_safetensors(dir.join("adapters.safetensors"))
            .unwrap()
            .0;
        let mut names: Vec<&String> = ours.keys().collect();
        names.sort();
        let mut theirs_names: Vec<&String> = saved.keys().collect();
        theirs_names.sort();
        assert_eq!(names, theirs_names, "{name}: adapter paths");
        for path in names {
            let what = format!("{name}: {path}");
            assert_trained_near(&ours[path], &saved[path], 2.0 * lr * iters as f32, &what);
        }
    }
}

/// Trained parameters: bit for bit wheel-linked. On our source build of MLX, Adam moves a
/// parameter by about the learning rate a step whatever its gradient's size, so where a
/// gradient component is near zero the build's last-bit differences can turn its step around:
/// two runs stay within 2 lr a step (`bound`; measured 6e-3 after 5 steps at lr 1e-3, DoRA
/// 4-bit).
fn assert_trained_near(ours: &Array, theirs: &Array, bound: f32, what: &str) {
    if mlx::core::sys::PREBUILT_MLX {
        assert_near(ours, theirs, what);
        return;
    }
    let d = ops::abs(&ops::subtract(ours, theirs).unwrap()).unwrap();
    let worst = ops::max(&d, None, false).unwrap().item::<f32>().unwrap();
    assert!(worst <= bound, "{what}: {worst:e} > {bound:e}");
}

/// One mlx_lm.lora run of a config case (`scripts/golden/lora_config.py`): the config read as
/// `lora.main` reads it, then `train_model`'s steps (seeds, freeze, adapters, the optimizer
/// and schedule the config builds, accumulation, checkpointing, validation at `train`'s
/// iterations). Returns each step's loss and learning rate, the validation losses with their
/// iterations, the test loss, and the trained model.
fn run_config(dir: &std::path::Path, grad_checkpoint: Option<bool>) -> ConfigRun {
    let file = load_config_file(dir.join("config.yaml")).unwrap();
    let mut flags = serde_json::Map::new();
    if let Some(on) = grad_checkpoint {
        flags.insert("grad_checkpoint".into(), Value::Bool(on));
    }
    let config = LoraConfig::resolve(flags, Some((dir, file))).unwrap();
    let tokenizer = Tokenizer::load(lora_data().join("tokenizer")).unwrap();
    let mut model = load_model(model_dir(&config.model), LoadOptions::default())
        .unwrap()
        .0;
    // lora.run: np.random.seed; train_model: mx.random.seed, freeze, adapters.
    let rng = RandomState::new(config.seed as u32);
    random::seed(config.seed).unwrap();
    model.freeze(None).unwrap();
    linear_to_lora_layers(
        &mut model,
        config.num_layers,
        &LoraParameters::from(&config.lora_parameters),
        config.fine_tune_type == FineTuneType::Dora,
    )
    .unwrap();
    let splits = load_local_dataset(
        lora_data().join(&config.data),
        &DatasetOptions::from(&config),
    )
    .unwrap();
    let train = splits.train.unwrap().tokenize(&tokenizer).unwrap();
    let valid = splits.valid.unwrap().tokenize(&tokenizer).unwrap();
    let test = splits.test.unwrap().tokenize(&tokenizer).unwrap();
    let mut step = TrainStep::with_options(
        model,
        config.build_optimizer().unwrap(),
        config.grad_accumulation_steps,
        config.grad_checkpoint,
    )
    .unwrap();
    let (mut losses, mut rates, mut val_losses) = (Vec::new(), Vec::new(), Vec::new());
    // Validation and the test batches draw from the generator the training order comes from,
    // as mlx_lm's from NumPy's global state; `train` validates before the step.
    let mut batches =
        iterate_batches(&train, config.batch_size, config.max_seq_length, true, rng).unwrap();
    for it in 1..=config.iters {
        let batch = batches.next().unwrap();
        if it == 1 || it % config.steps_per_eval == 0 || it == config.iters {
            let loss = evaluate(
                &step.state.0,
                &valid,
                config.batch_size,
                usize::try_from(config.val_batches).ok(),
                config.max_seq_length,
                batches.rng_mut(),
            )
            .unwrap();
            val_losses.push((it, loss));
        }
        losses.push(step.step(&batch).unwrap().0);
        rates.push(step.learning_rate().unwrap());
    }
    let model = step.state.0;
    let test_loss = evaluate(
        &model,
        &test,
        config.batch_size,
        usize::try_from(config.test_batches).ok(),
        config.max_seq_length,
        batches.rng_mut(),
    )
    .unwrap();
    ConfigRun {
        losses,
        rates,
        val_losses,
        test_loss,
        model,
    }
}

struct ConfigRun {
    losses: Vec<f32>,
    rates: Vec<f32>,
    val_losses: Vec<(usize, f32)>,
    test_loss: f32,
    model: mlx::lm::Model,
}

fn f32s(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn vector(v: &[f32]) -> Array {
    Array::from_slice(v, &[v.len() as i32]).unwrap()
}

/// mlx_lm.lora with a YAML config (schedules with warm-up, AdamW / SGD / Adafactor / Muon with
/// their `optimizer_config`, gradient accumulation, gradient checkpointing on a 4-bit base and
/// on DoRA): each step's loss and learning rate, the validation losses (a case validating
/// every 2 steps on 2 of 4 batches: which 2 comes from the generator training draws from),
/// the saved adapters and the test loss equal mlx_lm's. A checkpointed case runs again without checkpointing: the same losses and
/// adapters (checkpointing only recomputes the layers' insides in the backward pass).
#[test]
fn config_training_equals_mlx_lm() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(lora_data().join("config"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 6);
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let g: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("losses.json")).unwrap())
                .unwrap();
        assert_eq!(g["mlx_lm_version"], "0.32.2");
        let saved = io::load_safetensors(dir.join("adapters.safetensors"))
            .unwrap()
            .0;
        let checkpointed = std::fs::read_to_string(dir.join("config.yaml"))
            .unwrap()
            .contains("grad_checkpoint: true");
        let runs: &[Option<bool>] = if checkpointed {
            &[None, Some(false)]
        } else {
            &[None]
        };
        for &flag in runs {
            let what = format!("{name} (grad_checkpoint flag {flag:?})");
            let ConfigRun {
                losses,
                rates,
                val_losses,
                test_loss,
                model,
            } = run_config(&dir, flag);
            eprintln!("{what}: ours {losses:?} {rates:?} {val_losses:?} {test_loss}");
            let theirs_val: Vec<(usize, f32)> = g["val_losses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| {
                    (
                        // mlx_lm reports the validation before step `it` as `it - 1`.
                        v[0].as_u64().unwrap() as usize + 1,
                        v[1].as_f64().unwrap() as f32,
                    )
                })
                .collect();
            let iterations = |v: &[(usize, f32)]| v.iter().map(|p| p.0).collect::<Vec<_>>();
            let values = |v: &[(usize, f32)]| v.iter().map(|p| p.1).collect::<Vec<_>>();
            assert_eq!(
                iterations(&val_losses),
                iterations(&theirs_val),
                "{what}: validation iterations"
            );
            assert_near(
                &vector(&values(&val_losses)),
                &vector(&values(&theirs_val)),
                &format!("{what}: validation losses"),
            );
            assert_near(
                &vector(&losses),
                &vector(&f32s(&g["losses"])),
                &format!("{what}: losses"),
            );
            assert_near(
                &vector(&rates),
                &vector(&f32s(&g["learning_rates"])),
                &format!("{what}: learning rates"),
            );
            assert_near(
                &vector(&[test_loss]),
                &vector(&[g["test_loss"].as_f64().unwrap() as f32]),
                &format!("{what}: test loss"),
            );
            let ours = trainable_parameters(&model).unwrap();
            let mut names: Vec<&String> = ours.keys().collect();
            names.sort();
            let mut theirs: Vec<&String> = saved.keys().collect();
            theirs.sort();
            assert_eq!(names, theirs, "{what}: adapter paths");
            // 2 lr a step (see `assert_trained_near`), over the schedule's rates.
            let bound = 2.0 * rates.iter().map(|r| r.abs()).sum::<f32>();
            for path in names {
                assert_trained_near(&ours[path], &saved[path], bound, &format!("{what}: {path}"));
            }
        }
    }
}

/// `model.freeze()` (how `mlx_lm.lora` starts) on every golden model: every parameter is held
/// by a module with its own frozen set (Python: each module's `_no_grad`), so `freeze(None)`
/// leaves nothing trainable, `unfreeze(None)` makes all trainable again, and freezing one
/// parameter's path freezes exactly it.
#[test]
fn every_golden_model_freezes() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/lm-models");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| root.join(n).is_dir())
        .collect();
    names.sort();
    assert!(names.len() > 100, "{} golden models", names.len());
    let mut failures = Vec::new();
    for name in &names {
        let mut model = load_model(model_dir(name), LoadOptions::default())
            .unwrap()
            .0;
        let all: Vec<String> = model
            .named_parameters()
            .unwrap()
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        // Python's quantized layers freeze themselves when built: as loaded, no quantized
        // layer's parameter trains.
        let quantized: Vec<String> = trainable_parameters(&model)
            .unwrap()
            .into_iter()
            .filter(|(p, a)| p.ends_with(".scales") || !a.dtype().is_floating())
            .map(|(p, _)| p)
            .collect();
        if !quantized.is_empty() {
            failures.push(format!("{name}: trainable as loaded: {quantized:?}"));
        }
        if let Err(e) = model.freeze(None) {
            failures.push(format!("{name}: {e}"));
            continue;
        }
        let trainable = trainable_parameters(&model).unwrap();
        assert!(
            trainable.is_empty(),
            "{name}: trainable after freeze: {:?}",
            trainable.keys()
        );
        model.unfreeze(None).unwrap();
        let trainable: Vec<String> = trainable_parameters(&model).unwrap().into_keys().collect();
        assert_eq!(
            trainable.len(),
            all.len(),
            "{name}: trainable after unfreeze"
        );
        // One parameter: the last one (a norm, a head or an SSM parameter in most models).
        let one = all.last().unwrap();
        model.freeze(Some(&[one.as_str()])).unwrap();
        let trainable: BTreeSet<String> =
            trainable_parameters(&model).unwrap().into_keys().collect();
        let expected: BTreeSet<String> = all.iter().filter(|p| *p != one).cloned().collect();
        assert_eq!(trainable, expected, "{name}: freeze({one})");
    }
    assert!(
        failures.is_empty(),
        "{} models do not freeze:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
