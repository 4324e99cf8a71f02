//! Fine-tuning data against mlx_lm 0.32.2 (`scripts/golden/lora.py`): the tokenized examples of
//! its text, prompt/completion and chat datasets (tools, prompt masking), the batches of its
//! `iterate_batches` (order, padding, truncation) over two epochs, and NumPy's seeded
//! permutations that order them — all compared exactly, as they are integers.

use std::path::PathBuf;

use mlx::lm::tuner::{
    iterate_batches, load_local_dataset, DatasetFormat, DatasetOptions, Example, RandomState,
};
use mlx::lm::Tokenizer;
use serde_json::Value;

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/lora")
}

fn golden() -> Value {
    let text = std::fs::read_to_string(data().join("golden.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["mlx_lm_version"], "0.32.2");
    json
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

#[test]
fn numpy_permutations() {
    let golden = golden();
    for case in golden["permutations"].as_array().unwrap() {
        let mut rng = RandomState::new(case["seed"].as_u64().unwrap() as u32);
        for (n, expected) in usizes(&case["sizes"])
            .into_iter()
            .zip(case["values"].as_array().unwrap())
        {
            assert_eq!(
                rng.permutation(n),
                usizes(expected),
                "seed {}",
                case["seed"]
            );
        }
    }
}

#[test]
fn datasets_and_batches() {
    let golden = golden();
    let tokenizer = Tokenizer::load(data().join("tokenizer")).unwrap();
    for case in golden["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let options = DatasetOptions {
            mask_prompt: case["mask_prompt"].as_bool().unwrap(),
            ..Default::default()
        };
        let splits = load_local_dataset(data().join(name), &options).unwrap();
        let format = match name {
            "text" => DatasetFormat::Text,
            "completions" => DatasetFormat::Completions,
            _ => DatasetFormat::Chat,
        };
        for (split_name, split) in [
            ("train", splits.train),
            ("valid", splits.valid),
            ("test", splits.test),
        ] {
            let split = split.unwrap();
            assert_eq!(split.format, format);
            let expected = &case["splits"][split_name];
            let examples = split.tokenize(&tokenizer).unwrap();
            let want: Vec<(Vec<u32>, usize)> = expected["examples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    let tokens = usizes(&e[0]).into_iter().map(|t| t as u32).collect();
                    (tokens, e[1].as_u64().unwrap() as usize)
                })
                .collect();
            let label = format!("{name} mask_prompt={} {split_name}", options.mask_prompt);
            let got: Vec<(Vec<u32>, usize)> = examples
                .iter()
                .map(|e| (e.tokens.clone(), e.offset))
                .collect();
            assert_eq!(got, want, "{label}");
            if options.mask_prompt {
                assert!(examples.iter().all(|e| e.offset > 0), "{label}");
            }
            for run in expected["runs"].as_array().unwrap() {
                let batches = run["batches"].as_array().unwrap();
                let rng = RandomState::new(run["seed"].as_u64().unwrap() as u32);
                let plain: Vec<Example> = examples
                    .iter()
                    .map(|e| Example::new(e.tokens.clone(), e.offset))
                    .collect();
                let source = match run["source"].as_str().unwrap() {
                    "cache" => &examples,
                    _ => &plain,
                };
                let it = iterate_batches(
                    source,
                    run["batch_size"].as_u64().unwrap() as usize,
                    run["max_seq_length"].as_u64().unwrap() as usize,
                    true,
                    rng,
                )
                .unwrap();
                for (i, (batch, want)) in it.zip(batches).enumerate() {
                    let rows = want["tokens"].as_array().unwrap();
                    assert_eq!(batch.rows, rows.len(), "{label} batch {i}");
                    let tokens: Vec<i32> = rows
                        .iter()
                        .flat_map(|r| usizes(r).into_iter().map(|t| t as i32))
                        .collect();
                    assert_eq!(batch.width * batch.rows, tokens.len(), "{label} batch {i}");
                    assert_eq!(batch.tokens, tokens, "{label} batch {i}");
                    let pairs: Vec<usize> = batch
                        .offsets
                        .iter()
                        .zip(&batch.lengths)
                        .flat_map(|(&o, &l)| [o, l])
                        .collect();
                    let want_pairs: Vec<usize> = want["lengths"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .flat_map(usizes)
                        .collect();
                    assert_eq!(pairs, want_pairs, "{label} batch {i}");
                    let array = batch.tokens_array().unwrap();
                    assert_eq!(array.shape(), &[batch.rows as i32, batch.width as i32]);
                    assert_eq!(
                        batch.lengths_array().unwrap().shape(),
                        &[batch.rows as i32, 2]
                    );
                }
            }
        }
    }
}

#[test]
fn one_epoch_without_loop_and_errors() {
    let examples: Vec<Example> = (0..5).map(|i| Example::new(vec![1; i + 1], 0)).collect();
    let it = iterate_batches(&examples, 2, 64, false, RandomState::new(0)).unwrap();
    // Five examples make two full batches; the fifth is dropped, as in mlx_lm.
    assert_eq!(it.count(), 2);
    let err = iterate_batches(&examples, 6, 64, false, RandomState::new(0)).unwrap_err();
    assert!(err.to_string().contains("at least batch_size=6"), "{err}");
}

#[test]
fn bad_records_name_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("mlx-lora-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let options = DatasetOptions::default();
    let check = |content: &str, expected: &str| {
        std::fs::write(dir.join("train.jsonl"), content).unwrap();
        let err = load_local_dataset(&dir, &options).unwrap_err().to_string();
        assert!(err.contains("train.jsonl"), "{err}");
        assert!(err.contains(expected), "{err}");
    };
    check(
        "{\"text\": \"a\"}\n{\"text\": \"b\"\n",
        "line 2: not valid JSON",
    );
    check("{\"text\": \"a\"}\n\n{\"text\": \"b\"}\n", "line 2");
    check("[1, 2]\n", "line 1: expected a JSON object");
    check("{\"other\": 1}\n", "unsupported data format");
    std::fs::write(dir.join("train.jsonl"), "{\"text\": \"a\"}\n").unwrap();
    let err = load_local_dataset(
        &dir,
        &DatasetOptions {
            mask_prompt: true,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("Prompt masking not supported"), "{err}");
    // A record of the wrong shape is reported when it is tokenized, with its line.
    std::fs::write(
        dir.join("train.jsonl"),
        "{\"text\": \"a\"}\n{\"text\": 3}\n",
    )
    .unwrap();
    let split = load_local_dataset(&dir, &options).unwrap().train.unwrap();
    let tokenizer = Tokenizer::load(data().join("tokenizer")).unwrap();
    let err = split.tokenize(&tokenizer).unwrap_err().to_string();
    assert!(err.contains("train.jsonl: line 2"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// --- mlx_lm.lora's options (`-c config.yaml`) ----------------------------------------------

mod config {
    use std::path::PathBuf;

    use mlx::lm::tuner::{build_schedule, load_config_file, FineTuneType, LoraConfig, LrSchedule};
    use mlx::optimizers::{LearningRate, Schedule};
    use serde_json::{json, Map, Value};

    /// Writes `text` as a YAML file of its own (tests run in parallel).
    fn yaml(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mlx-lora-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.yaml"));
        std::fs::write(&path, text).unwrap();
        path
    }

    fn flags(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn resolve(name: &str, text: &str, cli: Value) -> mlx::lm::Result<LoraConfig> {
        let path = yaml(name, text);
        let file = load_config_file(&path)?;
        LoraConfig::resolve(flags(cli), Some((&path, file)))
    }

    #[test]
    fn defaults_are_mlx_lm_config_defaults() {
        let c = LoraConfig::resolve(Map::new(), None).unwrap();
        assert_eq!(c.model, "Qwen/Qwen3-0.6b");
        assert_eq!(c.optimizer, "adam");
        assert_eq!((c.num_layers, c.batch_size, c.iters), (16, 4, 1000));
        assert_eq!((c.val_batches, c.test_batches), (25, 500));
        assert_eq!(c.learning_rate, 1e-5);
        assert_eq!(
            (c.steps_per_report, c.steps_per_eval, c.save_every),
            (10, 200, 100)
        );
        assert_eq!((c.max_seq_length, c.grad_accumulation_steps), (2048, 1));
        assert_eq!(c.adapter_path, PathBuf::from("adapters"));
        assert_eq!(c.fine_tune_type, FineTuneType::Lora);
        assert_eq!((c.lora_parameters.rank, c.lora_parameters.scale), (8, 20.0));
        assert!(!c.train && !c.test && !c.grad_checkpoint && !c.mask_prompt);
        assert!(c.lr_schedule.is_none());
        // Every key of CONFIG_DEFAULTS goes to adapter_config.json.
        let saved = c.to_json().unwrap();
        for key in mlx::lm::tuner::config_defaults().keys() {
            assert!(saved.get(key).is_some(), "{key} not saved");
        }
    }

    #[test]
    fn flags_override_the_file_which_overrides_defaults() {
        let text = "iters: 5\nbatch_size: 2\nlearning_rate: 1e-4\nfine_tune_type: dora\n\
                    lr_schedule: null\nmask_prompt: true\n";
        let c = resolve(
            "merge",
            text,
            json!({"iters": 7, "seed": 3, "batch_size": null}),
        )
        .unwrap();
        assert_eq!(c.iters, 7); // flag over file
        assert_eq!(c.batch_size, 2); // a null flag is not given
        assert_eq!(c.seed, 3); // flag over default
        assert_eq!(c.learning_rate, 1e-4); // `1e-4` is a float, as with mlx_lm's resolver
        assert_eq!(c.fine_tune_type, FineTuneType::Dora);
        assert!(c.mask_prompt);
        assert!(c.lr_schedule.is_none()); // null in the file: the default
    }

    #[test]
    fn unknown_keys_are_errors_naming_them() {
        for (name, text, key) in [
            ("top", "learning_rat: 1e-4\n", "learning_rat"),
            (
                "lora",
                "lora_parameters: {rank: 4, scale: 1.0, dropout: 0.0, alpha: 8}\n",
                "alpha",
            ),
            (
                "opt",
                "optimizer_config: {adamw: {weight_decai: 0.1}}\n",
                "weight_decai",
            ),
            ("optname", "optimizer_config: {lion: {}}\n", "lion"),
            (
                "sched",
                "lr_schedule: {name: cosine_decay, arguments: [1e-3, 10], warm: 2}\n",
                "warm",
            ),
        ] {
            let err = resolve(name, text, json!({})).unwrap_err().to_string();
            assert!(err.contains(key), "{name}: {err}");
        }
    }

    #[test]
    fn bad_values_are_errors() {
        let cases = [
            (
                "noscale",
                "lora_parameters: {rank: 4, dropout: 0.0}\n",
                "scale",
            ),
            ("type", "iters: many\n", "iters"),
            ("report", "report_to: wandb\n", "report_to"),
            (
                "accum",
                "grad_accumulation_steps: 0\n",
                "grad_accumulation_steps",
            ),
            ("list", "- 1\n- 2\n", "table"),
            ("syntax", "iters: [1, 2\n", "config"),
        ];
        for (name, text, what) in cases {
            let err = resolve(name, text, json!({})).unwrap_err().to_string();
            assert!(err.contains(what), "{name}: {err}");
        }
        let missing = load_config_file("/nonexistent/config.yaml").unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/config.yaml"));
        let c = resolve("sgdopt", "optimizer: lion\n", json!({})).unwrap();
        let err = c
            .build_optimizer()
            .err()
            .expect("lion is no optimizer here");
        assert!(err.to_string().contains("lion"));
    }

    #[test]
    fn schedules_as_build_schedule_makes_them() {
        let s = |name: &str, arguments: Vec<f64>, warmup: u64| LrSchedule {
            name: name.into(),
            arguments,
            warmup,
            warmup_init: 1e-7,
        };
        // Warm-up: linear from warmup_init to the first argument, the schedule from warmup + 1.
        let joined = build_schedule(&s("cosine_decay", vec![1e-3, 100.0], 10)).unwrap();
        assert_eq!(
            joined,
            Schedule::Join {
                schedules: vec![
                    Schedule::Linear {
                        init: 1e-7,
                        end: 1e-3,
                        steps: 10
                    },
                    Schedule::CosineDecay {
                        init: 1e-3,
                        decay_steps: 100,
                        end: 0.0
                    },
                ],
                boundaries: vec![11],
            }
        );
        let plain = build_schedule(&s("step_decay", vec![0.1, 0.5, 3.0], 0)).unwrap();
        assert_eq!(
            plain,
            Schedule::StepDecay {
                init: 0.1,
                decay_rate: 0.5,
                step_size: 3
            }
        );
        for (name, args, what) in [
            ("cosine", vec![1e-3, 10.0], "unknown schedule"),
            ("cosine_decay", vec![1e-3], "arguments"),
            ("linear_schedule", vec![0.0, 1.0, 2.5], "whole number"),
            ("step_decay", vec![0.1, 0.5, 0.0], "step_size"),
        ] {
            let err = build_schedule(&s(name, args, 0)).unwrap_err().to_string();
            assert!(err.contains(what), "{name}: {err}");
        }
        let c = resolve(
            "schedule",
            "lr_schedule: {name: exponential_decay, arguments: [1e-2, 0.9]}\n",
            json!({}),
        )
        .unwrap();
        assert!(matches!(
            c.learning_rate().unwrap(),
            LearningRate::Schedule(_)
        ));
    }
}
