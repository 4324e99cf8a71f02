//! Reading model directories: config values as mlx_lm reads them, single-file and sharded
//! weights, dtype override, and an error naming the file (and tensor) for each way a
//! checkpoint can be broken.

use std::collections::HashMap;
use std::path::PathBuf;

use mlx_lm::{load_config, load_weights, Error, WeightFiles};
use mlx_rs::{io, Array, Dtype};

/// A fresh model directory for one test.
fn model_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-lm-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn save(dir: &std::path::Path, file: &str, tensors: &[(&str, Array)]) {
    let map: HashMap<String, Array> = tensors
        .iter()
        .map(|(k, a)| (k.to_string(), a.clone()))
        .collect();
    io::save_safetensors(dir.join(file), map.iter(), None).unwrap();
}

fn f32s(values: &[f32], shape: &[i32]) -> Array {
    Array::from_slice(values, shape).unwrap()
}

#[test]
fn config_values_and_generation_stop_tokens() {
    let dir = model_dir("config");
    write(
        &dir,
        "config.json",
        r#"{"model_type": "mistral", "hidden_size": 64, "rope_theta": 10000.0,
            "tie_word_embeddings": false, "eos_token_id": 2,
            "max_value": {"__float__": "Infinity"}}"#,
    );
    let c = load_config(&dir).unwrap();
    assert_eq!(c.model_type(), "llama");
    assert_eq!(c.usize("hidden_size").unwrap(), Some(64));
    assert_eq!(c.float("rope_theta").unwrap(), Some(10000.0));
    assert_eq!(c.float("max_value").unwrap(), Some(f64::INFINITY));
    assert_eq!(c.bool("tie_word_embeddings").unwrap(), Some(false));
    assert_eq!(c.usize("absent").unwrap(), None);
    assert_eq!(c.eos_token_ids().unwrap(), vec![2]);
    // A wrong kind names the file and the key.
    let e = c.usize("rope_theta").unwrap_err().to_string();
    assert!(e.contains("config.json") && e.contains("rope_theta"), "{e}");

    // generation_config.json's stop tokens win, as in mlx_lm.load_config ...
    write(
        &dir,
        "generation_config.json",
        r#"{"eos_token_id": [2, 7]}"#,
    );
    assert_eq!(
        load_config(&dir).unwrap().eos_token_ids().unwrap(),
        vec![2, 7]
    );
    // ... unless falsy (Python's `if eos := ...`), and a file that does not parse is ignored.
    write(&dir, "generation_config.json", r#"{"eos_token_id": []}"#);
    assert_eq!(load_config(&dir).unwrap().eos_token_ids().unwrap(), vec![2]);
    write(&dir, "generation_config.json", "{not json");
    assert_eq!(load_config(&dir).unwrap().eos_token_ids().unwrap(), vec![2]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_configs_name_the_file() {
    let dir = model_dir("bad-config");
    let e = load_config(&dir).unwrap_err();
    assert!(
        matches!(e, Error::Io { .. }) && e.to_string().contains("config.json"),
        "{e}"
    );
    write(&dir, "config.json", r#"{"model_type": "llama",}"#);
    let e = load_config(&dir).unwrap_err();
    assert!(
        matches!(e, Error::Json { .. }) && e.to_string().contains("config.json"),
        "{e}"
    );
    write(&dir, "config.json", r#"{"hidden_size": 8}"#);
    let e = load_config(&dir).unwrap_err().to_string();
    assert!(e.contains("model_type") && e.contains("missing"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn single_file_weights_load_by_name_with_a_dtype_override() {
    let dir = model_dir("single");
    let w = f32s(&[1.5, -2.25, 3.0, 0.1], &[2, 2]);
    let packed = Array::from_slice(&[7u32, 9], &[2]).unwrap();
    save(
        &dir,
        "model.safetensors",
        &[("layers.0.weight", w.clone()), ("q.weight", packed.clone())],
    );
    let weights = load_weights(&dir, None).unwrap();
    assert_eq!(weights.len(), 2);
    assert_eq!(
        weights["layers.0.weight"].to_vec::<f32>().unwrap(),
        w.to_vec::<f32>().unwrap()
    );

    let cast = load_weights(&dir, Some(Dtype::Bfloat16)).unwrap();
    assert_eq!(cast["layers.0.weight"].dtype(), Dtype::Bfloat16);
    // Integer (packed quantized) tensors keep their type.
    assert_eq!(cast["q.weight"].dtype(), Dtype::Uint32);
    let want: Vec<f32> = w
        .astype(Dtype::Bfloat16)
        .unwrap()
        .astype(Dtype::Float32)
        .unwrap()
        .to_vec()
        .unwrap();
    let got: Vec<f32> = cast["layers.0.weight"]
        .astype(Dtype::Float32)
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(got, want);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shards_load_through_the_index_and_every_break_is_named() {
    let dir = model_dir("shards");
    save(
        &dir,
        "model-00001-of-00002.safetensors",
        &[("a", f32s(&[1.0], &[1]))],
    );
    save(
        &dir,
        "model-00002-of-00002.safetensors",
        &[("b", f32s(&[2.0], &[1])), ("c", f32s(&[3.0], &[1]))],
    );
    let index = |map: &str| format!(r#"{{"metadata": {{"total_size": 12}}, "weight_map": {map}}}"#);
    write(
        &dir,
        "model.safetensors.index.json",
        &index(
            r#"{"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors",
                  "c": "model-00002-of-00002.safetensors"}"#,
        ),
    );
    let found = WeightFiles::find(&dir).unwrap();
    assert_eq!(found.files.len(), 2);
    let weights = load_weights(&dir, None).unwrap();
    assert_eq!(weights.keys(), ["a", "b", "c"]);
    // Each tensor remembers its shard, for error messages about it.
    assert_eq!(
        weights.file_of("c"),
        Some(dir.join("model-00002-of-00002.safetensors").as_path())
    );
    assert_eq!(weights["c"].item::<f32>().unwrap(), 3.0);

    // Each broken index below is written, then loaded.
    let broken = |map: &str| {
        write(&dir, "model.safetensors.index.json", &index(map));
        load_weights(&dir, None).unwrap_err()
    };

    // A shard the index names that is not there: the shard and a tensor it holds.
    let e = broken(
        r#"{"a": "model-00001-of-00002.safetensors", "d": "model-00003-of-00003.safetensors"}"#,
    );
    let text = e.to_string();
    assert!(matches!(e, Error::MissingShard { .. }), "{text}");
    assert!(
        text.contains("model-00003-of-00003.safetensors") && text.contains("d)"),
        "{text}"
    );

    // A tensor the index places in a shard that lacks it.
    let e = broken(
        r#"{"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors"}"#,
    );
    let text = e.to_string();
    assert!(matches!(e, Error::MissingTensor { .. }), "{text}");
    assert!(
        text.contains(" b ") && text.contains("model-00001-of-00002.safetensors"),
        "{text}"
    );

    // A shard name that leaves the directory.
    let text = broken(r#"{"a": "../model.safetensors"}"#).to_string();
    assert!(text.contains("weight_map.a"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_duplicate_and_corrupt_weights_are_errors() {
    let dir = model_dir("broken");
    let e = load_weights(&dir, None).unwrap_err();
    assert!(matches!(e, Error::NoWeights { .. }), "{e}");

    // Without an index every model*.safetensors counts, so a tensor in two files is ambiguous.
    save(&dir, "model-a.safetensors", &[("x", f32s(&[1.0], &[1]))]);
    save(&dir, "model-b.safetensors", &[("x", f32s(&[2.0], &[1]))]);
    let text = load_weights(&dir, None).unwrap_err().to_string();
    assert!(
        text.contains("model-b.safetensors") && text.contains("x") && text.contains("model-a"),
        "{text}"
    );

    std::fs::remove_file(dir.join("model-b.safetensors")).unwrap();
    write(&dir, "model-c.safetensors", "not a safetensors file");
    let e = load_weights(&dir, None).unwrap_err();
    assert!(
        matches!(e, Error::Mlx { .. }) && e.to_string().contains("model-c.safetensors"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
