//! Exported models (`mlx::lm::export`): a qwen3 and a qwen3_5 golden model exported to
//! `.mlxfn` graphs generate, greedily, the tokens our `generate_step` generates — imported in
//! Rust ([`ExportedModel`]) and in Python MLX 0.32.2 (`examples/exported_model.py`, which uses
//! `mx.import_function`, the manifest and the weights only). Inputs that do not fit the
//! manifest are errors naming the input.
//!
//! One test per binary: imported graphs run on the thread that first used MLX (MLX 0.32.2).
//! The Python half needs a Python with MLX 0.32.2 ($MLX_PYTHON or the repository's .venv);
//! without one it is skipped, saying so.

mod support;

use std::path::{Path, PathBuf};

use clap::Parser;
use mlx::core::{export, ops, Array, Dtype};
use mlx::lm::export::{
    export_model, ExportOptions, ExportedFunction, ExportedModel, WeightsMode, MANIFEST_FILE,
};
use mlx::lm::{generate_step, generate_step_with_cache, load_model, GenerateOptions, LoadOptions};
use support::lm::{golden, ids, model_dir};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn temp_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mlx-lm-export-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A Python interpreter that imports MLX 0.32.2: $MLX_PYTHON or the repository's .venv.
fn python() -> Option<PathBuf> {
    let candidates = std::env::var_os("MLX_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([Path::new(ROOT).join(".venv/bin/python")]);
    candidates.into_iter().find(|py| {
        std::process::Command::new(py)
            .args([
                "-c",
                "import mlx.core as mx; assert mx.__version__ == '0.32.2'",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Greedy tokens of `examples/exported_model.py` on the export in `dir`.
fn python_greedy(py: &Path, dir: &Path, prompt: &[u32], n: usize) -> Vec<u32> {
    let ids: Vec<String> = prompt.iter().map(u32::to_string).collect();
    let out = std::process::Command::new(py)
        .arg(Path::new(ROOT).join("examples/exported_model.py"))
        .arg(dir)
        .args(["--prompt-ids", &ids.join(","), "--max-tokens"])
        .arg(n.to_string())
        .args(["--ignore-eos", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "exported_model.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    ids_of(&json["tokens"])
}

fn ids_of(v: &serde_json::Value) -> Vec<u32> {
    ids(v)
}

fn file_kib(path: &Path) -> f64 {
    std::fs::metadata(path).unwrap().len() as f64 / 1024.0
}

fn error_of(r: mlx::lm::Result<Vec<Array>>) -> String {
    r.map(drop).unwrap_err().to_string()
}

/// Inputs that do not fit the manifest: each a clear error naming what is wrong, before MLX
/// sees them.
fn check_mismatched_inputs(m: &ExportedModel) {
    let mut inputs = vec![ops::zeros(&[1, 1], Dtype::Uint32).unwrap()];
    inputs.extend(m.new_cache().unwrap());
    let n_weights = m.manifest().weight_inputs().len();
    assert!(n_weights > 0);

    // Too few: the weights left out.
    let e = error_of(m.call(ExportedFunction::Decode, &inputs));
    assert!(
        e.contains(&format!("{} inputs given", inputs.len())) && e.contains("cache arrays"),
        "{e}"
    );

    let weights: Vec<Array> = m
        .manifest()
        .weight_inputs()
        .iter()
        .map(|s| {
            let shape: Vec<i32> = s.shape.iter().map(|&d| d as i32).collect();
            ops::zeros(&shape, s.dtype().unwrap()).unwrap()
        })
        .collect();
    inputs.extend(weights);
    assert!(m.call(ExportedFunction::Decode, &inputs).is_ok());

    // A cache array of the wrong shape: named, with both shapes.
    let mut wrong = inputs.clone();
    let spec = &m.manifest().inputs[1];
    let mut shape: Vec<i32> = spec.shape.iter().map(|&d| d as i32).collect();
    shape.push(1);
    wrong[1] = ops::zeros(&shape, spec.dtype().unwrap()).unwrap();
    let e = error_of(m.call(ExportedFunction::Decode, &wrong));
    assert!(e.contains(&format!("input 1 (`{}`)", spec.name)), "{e}");

    // A weight of the wrong dtype.
    let mut wrong = inputs.clone();
    let last = inputs.len() - 1;
    let spec = &m.manifest().inputs[last];
    wrong[last] = wrong[last].astype(Dtype::Float16).unwrap();
    let e = error_of(m.call(ExportedFunction::Decode, &wrong));
    assert!(
        e.contains(&spec.name) && e.contains("float16") && e.contains(&spec.dtype),
        "{e}"
    );

    // Tokens of the wrong dtype, and a length no trace was made for.
    let mut wrong = inputs.clone();
    wrong[0] = ops::zeros(&[1, 1], Dtype::Int32).unwrap();
    let e = error_of(m.call(ExportedFunction::Decode, &wrong));
    assert!(e.contains("`tokens`") && e.contains("int32"), "{e}");
    let mut wrong = inputs.clone();
    wrong[0] = ops::zeros(&[1, 3], Dtype::Uint32).unwrap();
    let e = error_of(m.call(ExportedFunction::Prefill, &wrong));
    assert!(e.contains("not 3"), "{e}");
    let e = error_of(m.call(ExportedFunction::Decode, &wrong));
    assert!(e.contains("not 3"), "{e}");

    // A prompt and length the cache cannot hold; a token outside the vocabulary.
    let too_many = m.manifest().max_positions + 1;
    let e = m.generate_greedy(&[1, 2], too_many, &[]).unwrap_err();
    assert!(e.to_string().contains("positions"), "{e}");
    let vocab = m.manifest().vocab_size as u32;
    assert!(m.generate_greedy(&[vocab], 2, &[]).is_err());
    assert!(m.generate_greedy(&[], 2, &[]).is_err());
}

/// Why the export gives a model exported with its weights as constants fresh row-contiguous
/// parameters: MLX 0.32.2's `export_function` writes a constant's buffer as it lies in
/// memory, ignoring its strides, so an evaluated transposed view comes back untransposed (the
/// kept `weight.T` of our linear layers did so). If this fails, MLX writes strided constants
/// correctly and `export_model`'s copy is no longer needed.
fn strided_constants_are_written_unstrided() {
    let dir = temp_dir("strided-constant");
    let path = dir.join("transposed.mlxfn");
    let w = ops::arange(0.0, 12.0, 1.0, Dtype::Float32)
        .unwrap()
        .reshape(&[4, 3])
        .unwrap()
        .t()
        .unwrap();
    w.eval().unwrap();
    let x = ops::zeros(&[3, 4], Dtype::Float32).unwrap();
    let f = |xs: &[Array]| -> mlx::core::Result<Vec<Array>> { Ok(vec![ops::add(&xs[0], &w)?]) };
    export::export_function(&path, f, std::slice::from_ref(&x), false).unwrap();
    let imported = export::import_function(&path).unwrap().call(&[x]).unwrap();
    let row: Vec<f32> = imported[0].index(0).unwrap().to_vec().unwrap();
    assert_eq!(
        w.index(0).unwrap().to_vec::<f32>().unwrap(),
        [0.0, 3.0, 6.0, 9.0]
    );
    assert_eq!(
        row,
        [0.0, 1.0, 2.0, 3.0],
        "MLX now writes strided constants as they are"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exported_models_generate_our_greedy_tokens() {
    let py = python();
    let n = 24;
    for name in ["qwen3_5", "qwen3"] {
        let (model, config) = load_model(model_dir(name), LoadOptions::default()).unwrap();
        let prompt = ids(&golden(&format!("{name}.json"))["prompt"]);
        // (a) our generate: compiled decode step, default (greedy) sampler.
        let options = GenerateOptions {
            max_tokens: n,
            ..Default::default()
        };
        let ours: Vec<u32> = generate_step(&model, &prompt, &options)
            .unwrap()
            .map(|s| s.unwrap().0)
            .collect();
        assert_eq!(ours.len(), n);

        let dir = temp_dir(name);
        let export_options = ExportOptions {
            // What the generation above allocates (its buffers round up to 256 the same way).
            max_positions: prompt.len() + n + 1,
            ..Default::default()
        };
        let manifest = export_model(&model, Some(&config), &dir, &export_options).unwrap();
        assert_eq!(manifest.model_type, name);
        for file in [
            "decode.mlxfn",
            "prefill.mlxfn",
            "weights.safetensors",
            MANIFEST_FILE,
        ] {
            println!("{name}: {file} {:.1} KiB", file_kib(&dir.join(file)));
        }

        // (b) our import, without the model.
        let exported = ExportedModel::load(&dir).unwrap();
        // The prompt's 23 tokens go in as 16 + 4 + 2 + 1 (the decode step): three traces
        // of the prefill file and the decode file, where generate prefills one chunk.
        assert_eq!(exported.chunks(prompt.len() - 1), [16, 4, 2, 1]);
        let imported = exported.generate_greedy(&prompt, n, &[]).unwrap();
        assert_eq!(imported, ours, "{name}: imported in Rust");

        // The exported cache is the crate's cache tree: the model continues from it.
        let mut cache = exported.new_cache().unwrap();
        let (head, tail) = prompt.split_at(prompt.len() - 1);
        let mut at = 0;
        for c in exported.chunks(head.len()) {
            cache = exported.step(&head[at..at + c], cache).unwrap().1;
            at += c;
        }
        let tree = exported.cache_tree(cache).unwrap();
        let continued: Vec<u32> = generate_step_with_cache(&model, tail, tree, &options)
            .unwrap()
            .map(|s| s.unwrap().0)
            .collect();
        assert_eq!(
            continued, ours,
            "{name}: the model continuing the exported cache"
        );

        // (c) Python MLX's import.
        match &py {
            Some(py) => {
                let theirs = python_greedy(py, &dir, &prompt, n);
                assert_eq!(theirs, ours, "{name}: imported in Python MLX");
                println!("{name}: Python's mx.import_function run generated the same {n} tokens");
            }
            None => println!(
                "SKIPPED the Python half for {name}: no Python with MLX 0.32.2 found (set \
                 MLX_PYTHON, or create .venv with scripts/python-venv)"
            ),
        }

        // Weights as constants: self-contained graphs, the same tokens in Rust and Python.
        let const_dir = temp_dir(&format!("{name}-constants"));
        let options = ExportOptions {
            weights: WeightsMode::Constants,
            ..export_options.clone()
        };
        let manifest = export_model(&model, Some(&config), &const_dir, &options).unwrap();
        assert!(manifest.weight_inputs().is_empty());
        assert!(!const_dir.join("weights.safetensors").exists());
        for file in ["decode.mlxfn", "prefill.mlxfn"] {
            println!(
                "{name} (weights as constants): {file} {:.1} KiB",
                file_kib(&const_dir.join(file))
            );
        }
        let constants = ExportedModel::load(&const_dir).unwrap();
        let imported = constants.generate_greedy(&prompt, n, &[]).unwrap();
        assert_eq!(
            imported, ours,
            "{name}: weights as constants, imported in Rust"
        );
        if let Some(py) = &py {
            let theirs = python_greedy(py, &const_dir, &prompt, n);
            assert_eq!(theirs, ours, "{name}: weights as constants, in Python MLX");
        }
        let _ = std::fs::remove_dir_all(&const_dir);

        if name == "qwen3" {
            check_mismatched_inputs(&exported);
            strided_constants_are_written_unstrided();

            // The `export` command: the same tokens, the tokenizer beside the graphs.
            let cli_dir = temp_dir("qwen3-cli");
            let model_path = model_dir(name);
            let max = (prompt.len() + n + 1).to_string();
            let argv = [
                "mlx-lm",
                "export",
                "--model",
                model_path.to_str().unwrap(),
                "--output",
                cli_dir.to_str().unwrap(),
                "--max-positions",
                &max,
            ];
            let cli = mlx::lm::cli::Cli::try_parse_from(argv).unwrap();
            let mut out = Vec::new();
            mlx::lm::cli::run(&cli, &mut &b""[..], &mut out, &mut Vec::new()).unwrap();
            let out = String::from_utf8(out).unwrap();
            assert!(out.starts_with("Exported qwen3 ("), "{out}");
            assert!(cli_dir.join("tokenizer.json").is_file());
            let from_cli = ExportedModel::load(&cli_dir).unwrap();
            assert_eq!(from_cli.generate_greedy(&prompt, n, &[]).unwrap(), ours);
            let _ = std::fs::remove_dir_all(&cli_dir);

            let const_dir = temp_dir("qwen3-shapeless");
            // Why the graphs have fixed shapes: MLX 0.32.2's shapeless replay asks every
            // primitive for its output shape. At another length the first to fail is the
            // reshape of the token ids to rows (`Rows::fold`, `[1, L]` to `[L]` with L
            // fixed); at the traced length itself a `Slice` (which cannot infer its shape)
            // of the CPU fallback of MLX's `fast::rope` (rotate-half).
            let shapeless = const_dir.join("shapeless.mlxfn");
            let cache = model.make_cache(1, 256).unwrap();
            let step = |xs: &[Array]| -> mlx::core::Result<Vec<Array>> {
                let mut cache = cache.clone();
                Ok(vec![model.forward(&xs[0], Some(&mut cache))?])
            };
            let at = |l: i32| vec![ops::zeros(&[1, l], Dtype::Uint32).unwrap()];
            export::export_function(&shapeless, step, &at(4), true).unwrap();
            let f = export::import_function(&shapeless).unwrap();
            let e = f
                .call(&at(8))
                .and_then(|out| out[0].eval().map(|_| out))
                .map(drop);
            println!("shapeless step at another length: {e:?}");
            let e = e.unwrap_err().to_string();
            assert!(
                e.contains("Cannot reshape array of size 8 into shape (4)"),
                "{e}"
            );
            let e = f
                .call(&at(4))
                .and_then(|out| out[0].eval().map(|_| out))
                .map(drop);
            println!("shapeless step at the traced length: {e:?}");
            let on_cpu = mlx::core::Device::default_device().unwrap().device_type()
                == mlx::core::DeviceType::Cpu;
            if on_cpu {
                let e = e.unwrap_err().to_string();
                assert!(e.contains("Slice cannot infer output shapes"), "{e}");
            }
            let _ = std::fs::remove_dir_all(&const_dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
