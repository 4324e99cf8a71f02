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
