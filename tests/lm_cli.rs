//! The `mlx-lm` command-line tool against mlx_lm 0.32.2's own commands on the golden models
//! (`scripts/golden/lm_cli.py`, `tests/data/lm/cli.json`): `generate`'s whole output (the
//! statistics' rates and memory are timings, so of those lines only the format and the token
//! counts are compared), `chat`'s answers to a piped transcript, `cache_prompt`'s file in
//! both directions. Each command runs in-process (`cli::run`) and the binary as a
//! subprocess; bad input is an error line and status 1.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Parser;
use mlx::core::{io, ops, Array};
use mlx::lm::{self as lm, cli};
use serde_json::Value;
use support::golden::{data_dir, on_cuda};
use support::lm::model_dir;

/// mlx_lm's record, or `None` (the test says SKIPPED) on a CUDA GPU where
/// `tests/data/cuda/lm/cli.json` was not written: `scripts/golden/lm_cli.py` needs `datasets`,
/// which `scripts/gpu-suite golden` carries since 2026-11-29 (MLX_GPU_SUITE_GOLDEN=lm_cli).
fn golden() -> Option<Value> {
    if on_cuda() && !data_dir().join("lm/cli.json").exists() {
        println!("SKIPPED: no CUDA record of mlx_lm's command lines (tests/data/cuda/lm/cli.json)");
        return None;
    }
    Some(support::lm::golden("cli.json"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The model's path as mlx_lm's run gave it: relative to the repository root, which is the
/// working folder of this test binary and of the subprocesses it starts.
fn model_arg(name: &str) -> String {
    model_dir(name);
    format!("tests/data/lm-models/{name}")
}

/// Runs `mlx-lm ARGS` in-process with `stdin` as its input: (stdout, stderr) or the error.
fn run_in_process(argv: &[String], stdin: &str) -> Result<(String, String), String> {
    let argv = std::iter::once("mlx-lm".to_string()).chain(argv.iter().cloned());
    let cli = cli::Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    cli::run(&cli, &mut stdin.as_bytes(), &mut out, &mut err).map_err(|e| e.to_string())?;
    Ok((
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    ))
}

/// Runs the `mlx-lm` binary: (status code, stdout, stderr).
fn run_binary(argv: &[String], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mlx-lm"))
        .args(argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let err = String::from_utf8(output.stderr).unwrap();
    // On a CUDA GPU MLX may abort the process in its teardown after the tool finished.
    if let Some(err) = support::golden::cuda_teardown_abort(&output.status, &err) {
        println!("the tool finished, then aborted in MLX's CUDA teardown: taken as exit 0");
        return (0, String::from_utf8(output.stdout).unwrap(), err);
    }
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        err,
    )
}

/// Checks `ours` against mlx_lm's `theirs`: the same text up to the statistics, then
/// statistics lines of mlx_lm's format with the same token counts.
fn assert_generate_output(ours: &str, case: &Value) {
    let theirs = case["stdout"].as_str().unwrap();
    let Some(prompt_tokens) = case.get("prompt_tokens") else {
        assert_eq!(ours, theirs, "{case}");
        return;
    };
    let at = theirs.rfind("Prompt: ").unwrap();
    assert_eq!(ours.get(..at), Some(&theirs[..at]), "{case}");
    let stats: Vec<&str> = ours[at..].lines().collect();
    assert_eq!(stats.len(), 3, "{ours}");
    let number = |s: &str, decimals: usize| {
        let (whole, fraction) = s.split_once('.').unwrap_or((s, ""));
        !whole.is_empty()
            && whole.bytes().all(|b| b.is_ascii_digit())
            && fraction.len() == decimals
            && fraction.bytes().all(|b| b.is_ascii_digit())
    };
    for (line, label, count) in [
        (stats[0], "Prompt", prompt_tokens),
        (stats[1], "Generation", &case["generation_tokens"]),
    ] {
        let rest = line
            .strip_prefix(&format!("{label}: {count} tokens, "))
            .unwrap_or_else(|| panic!("{line:?} against {case}"));
        let rate = rest.strip_suffix(" tokens-per-sec").unwrap();
        assert!(number(rate, 3), "{line}");
    }
    let memory = stats[2]
        .strip_prefix("Peak memory: ")
        .and_then(|s| s.strip_suffix(" GB"))
        .unwrap();
    assert!(number(memory, 3), "{}", stats[2]);
    assert!(ours.ends_with('\n'));
}

fn generate_argv(case: &Value) -> Vec<String> {
    let mut argv = vec![
        "generate".to_string(),
        "--model".into(),
        model_arg(case["model"].as_str().unwrap()),
    ];
    argv.extend(strings(&case["args"]));
    argv
}

/// The value of `flag` in a case's arguments.
fn flag(args: &[String], flag: &str) -> Option<String> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).cloned()
}

/// What the library generates for a sampled case's flags: the prompt as `generate` builds
/// it, the sampler's options and the seed.
fn library_text(case: &Value) -> String {
    let args = strings(&case["args"]);
    let f = |name: &str, default: f64| flag(&args, name).map_or(default, |v| v.parse().unwrap());
    let (model, tokenizer, _) = lm::load(
        model_dir(case["model"].as_str().unwrap()),
        Default::default(),
    )
    .unwrap();
    let prompt = flag(&args, "--prompt").unwrap().replace("\\n", "\n");
    let ids = if args.iter().any(|a| a == "--ignore-chat-template") {
        tokenizer.encode(&prompt, true).unwrap()
    } else {
        let messages = [serde_json::json!({"role": "user", "content": prompt})];
        let chat = lm::ChatOptions {
            add_generation_prompt: true,
            ..Default::default()
        };
        let text = tokenizer.apply_chat_template(&messages, &chat).unwrap();
        tokenizer.encode(&text, false).unwrap()
    };
    let options = lm::GenerateOptions {
        max_tokens: f("--max-tokens", 100.0) as usize,
        sampler: lm::SamplerOptions {
            temperature: f("--temp", 0.0),
            top_p: f("--top-p", 1.0),
            min_p: f("--min-p", 0.0),
            min_tokens_to_keep: f("--min-tokens-to-keep", 1.0) as i32,
            top_k: f("--top-k", 0.0) as i32,
        },
        seed: Some(f("--seed", 0.0) as u64),
        stop_tokens: tokenizer.eos_token_ids(),
        ..Default::default()
    };
    lm::generate(&model, &tokenizer, &ids, &options).unwrap()
}

#[test]
fn generate_prints_what_mlx_lm_generate_prints() {
    let Some(golden) = golden() else { return };
    for case in golden["generate"].as_array().unwrap() {
        let stdin = case.get("stdin").and_then(Value::as_str).unwrap_or("");
        let argv = generate_argv(case);
        let (out, err) = run_in_process(&argv, stdin).unwrap();
        assert_eq!(err, "");
        if flag(&argv, "--seed").is_none() {
            assert_generate_output(&out, case);
            continue;
        }
        // Sampled: mlx_lm's text depends on the draws its model's initializers took from
        // the seeded key (see scripts/golden/lm_cli.py), so the text is the library's for
        // the seed, the printing mlx_lm's (its counts: every token generated).
        let text = library_text(case);
        let framed = format!("==========\n{text}\n==========\n");
        assert!(out.starts_with(&framed), "{out}\n{framed}");
        let theirs = case["stdout"].as_str().unwrap();
        let at = theirs.rfind("Prompt: ").unwrap();
        let ours_stats = &out[framed.len()..];
        let counts = |s: &str| -> Vec<String> {
            s.lines()
                .map(|l| l.split(", ").next().unwrap().to_string())
                .collect()
        };
        assert_eq!(counts(ours_stats)[..2], counts(&theirs[at..])[..2], "{out}");
        // Another seed draws other text.
        let mut other = argv.clone();
        let at = other.iter().position(|a| a == "--seed").unwrap();
        other[at + 1] = "12345".into();
        assert_ne!(run_in_process(&other, "").unwrap().0, out, "{case}");
    }
}

#[test]
fn the_binary_prints_what_mlx_lm_generate_prints() {
    let Some(golden) = golden() else { return };
    // The verbose default, stdin and the extra end-of-sequence token, as a subprocess.
    let cases = golden["generate"].as_array().unwrap().clone();
    for case in [&cases[0], &cases[1], cases.last().unwrap()] {
        let stdin = case.get("stdin").and_then(Value::as_str).unwrap_or("");
        let (code, out, err) = run_binary(&generate_argv(case), stdin);
        assert_eq!(code, 0, "{err}");
        assert_generate_output(&out, case);
    }
}

/// `--max-tokens -1` is mlx_lm's "no limit" (the golden case with it runs to its
/// `--extra-eos-token` in `generate_prints_what_mlx_lm_generate_prints`). Underneath, a
/// generation of `UNLIMITED` tokens sizes its cache for the prompt and grows it as it goes:
/// the golden prompt fills 512 slots, so the cache grows at the first generated token, and
/// the tokens are a limited generation's, the decode step traced once more.
#[test]
fn unlimited_generation_grows_its_cache() {
    let Some(golden) = golden() else { return };
    let cases = golden["generate"].as_array().unwrap().clone();
    let case = cases.iter().find(|c| c.get("unlimited").is_some()).unwrap();
    let args = strings(&case["args"]);
    assert_eq!(flag(&args, "--max-tokens").as_deref(), Some("-1"));
    let (model, tokenizer, _) = lm::load(model_dir("qwen3"), Default::default()).unwrap();
    let ids = tokenizer
        .encode(&flag(&args, "--prompt").unwrap(), true)
        .unwrap();
    let unlimited = &case["unlimited"];
    assert_eq!(Some(ids.len() as u64), unlimited["prompt_tokens"].as_u64());
    let n = unlimited["eos_at"].as_u64().unwrap() as usize + 1;
    let run = |max_tokens: usize| {
        let options = lm::GenerateOptions {
            max_tokens,
            ..Default::default()
        };
        let mut generator = lm::generate_step(&model, &ids, &options).unwrap();
        let tokens: Vec<u32> = generator.by_ref().take(n).map(|t| t.unwrap().0).collect();
        (tokens, generator.traces())
    };
    let (limited, limited_traces) = run(n);
    let (tokens, traces) = run(lm::UNLIMITED);
    assert_eq!(tokens, limited);
    assert_eq!((limited_traces, traces), (1, 2));
    // mlx_lm's end-of-sequence id ends it (the case's --extra-eos-token).
    let eos: u32 = flag(&args, "--extra-eos-token").unwrap().parse().unwrap();
    assert_eq!(tokens.last(), Some(&eos));
    assert!(!tokens[..n - 1].contains(&eos));
}

/// The answers in a chat screen (ours or mlx_lm's with its drawing removed): after each
/// input prompt `› `, an answer and its statistics line, a reset, or the goodbye.
fn chat_turns(screen: &str) -> Vec<Value> {
    let mut turns = Vec::new();
    for segment in screen.split("› \n").skip(1) {
        if segment.starts_with("  reset context cleared\n") {
            turns.push(serde_json::json!({"reset": true}));
        } else if segment.starts_with("bye\n") {
            turns.push(serde_json::json!({"quit": true}));
        } else {
            let at = segment
                .find("\n  ")
                .unwrap_or_else(|| panic!("{segment:?}"));
            let (text, stats) = (&segment[..at], &segment[at + 3..]);
            let (count, rest) = stats.split_once(" tokens · ").unwrap();
            assert!(
                rest.contains(" tok/s · prompt ") && rest.contains(" GB\n"),
                "{rest}"
            );
            let count: u64 = count.parse().unwrap();
            turns.push(serde_json::json!({"text": text, "generation_tokens": count}));
        }
    }
    turns
}

#[test]
fn chat_answers_a_piped_conversation_as_mlx_lm_chat() {
    let Some(golden) = golden() else { return };
    // As a subprocess, then one in-process: the prompt cache carries the turns, `r` resets
    // it, `q` quits; gemma3_text's first answer ends at a stop token before --max-tokens.
    for (i, case) in golden["chat"].as_array().unwrap().iter().enumerate() {
        let mut argv = vec![
            "chat".to_string(),
            "--model".into(),
            model_arg(case["model"].as_str().unwrap()),
        ];
        argv.extend(strings(&case["args"]));
        let stdin = case["stdin"].as_str().unwrap();
        let out = if i == 0 {
            run_in_process(&argv, stdin).unwrap().0
        } else {
            let (code, out, err) = run_binary(&argv, stdin);
            assert_eq!(code, 0, "{err}");
            out
        };
        let turns = chat_turns(&out);
        assert_eq!(&Value::Array(turns), &case["turns"], "{out}");
    }
}

#[test]
fn chat_takes_mlx_lm_s_unlimited_max_tokens() {
    // mlx_lm's header shows the limit as given (`f"{-1:,}"`).
    let argv = [
        "chat",
        "--model",
        &model_arg("llama3"),
        "--max-tokens",
        "-1",
    ]
    .map(String::from);
    let (out, _) = run_in_process(&argv, "q\n").unwrap();
    assert!(out.contains("\n  max tokens   -1\n"), "{out}");
    let argv = ["chat", "--model", &model_arg("llama3"), "--max-tokens", "0"].map(String::from);
    assert!(run_in_process(&argv, "q\n")
        .unwrap_err()
        .contains("non-zero"));
}

#[test]
fn chat_ends_at_the_end_of_its_input() {
    let argv = ["chat", "--model", &model_arg("llama3"), "--max-tokens", "3"].map(String::from);
    // A last line without its newline is a turn, as Python's `input()` returns it.
    let (code, out, err) = run_binary(&argv, "hello");
    assert_eq!(code, 0, "{err}");
    assert!(out.ends_with("bye\n"), "{out}");
    let turns = chat_turns(&out);
    assert_eq!(turns.len(), 2, "{out}");
    assert_eq!(turns[0]["generation_tokens"], 3, "{out}");
    assert_eq!(turns[1], serde_json::json!({"quit": true}));
}

fn temp_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mlx-lm-cli-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

type FileContents = (Vec<(String, Array)>, Vec<(String, String)>);

fn file_arrays(path: &Path) -> FileContents {
    let (arrays, meta) = io::load_safetensors(path).unwrap();
    let mut arrays: Vec<_> = arrays.into_iter().collect();
    arrays.sort_by(|a, b| a.0.cmp(&b.0));
    let mut meta: Vec<_> = meta.into_iter().collect();
    meta.sort();
    (arrays, meta)
}

/// The file mlx_lm.cache_prompt wrote and ours, array for array and bit for bit. A
/// sliding-window layer's ring (`RotatingKVCache`) may start elsewhere: mlx_lm keeps the
/// whole prefill chunk until the next step trims it and writes that step at slot 0, ours
/// holds the window in temporal order, the same positions; so its keys and values are
/// compared up to a rotation of the window, and its ring position (`idx`, state 5) not.
fn assert_same_file(ours: &Path, theirs: &Path) {
    let (our_arrays, our_meta) = file_arrays(ours);
    let (their_arrays, their_meta) = file_arrays(theirs);
    assert_eq!(our_meta, their_meta);
    assert_eq!(our_arrays.len(), their_arrays.len());
    let rotating: Vec<String> = their_meta
        .iter()
        .filter(|(_, v)| v == "RotatingKVCache")
        .filter_map(|(k, _)| k.strip_prefix("1."))
        .map(|layer| format!("{layer}."))
        .collect();
    // Bit for bit linked to the wheel's libmlx that wrote mlx_lm's file; our source build of
    // MLX rounds float32 kernels otherwise (tests/lm_models.rs bounds the logits' gap by
    // 1e-5), and the cached keys and values are such results.
    let same = |a: &Array, b: &Array| {
        if a.shape() != b.shape() || a.dtype() != b.dtype() {
            return false;
        }
        if mlx::core::sys::PREBUILT_MLX {
            return ops::array_equal(a, b, false)
                .unwrap()
                .item::<bool>()
                .unwrap();
        }
        ops::allclose(a, b, ops::AllcloseOptions::default().rtol(0.0).atol(1e-5))
            .unwrap()
            .item::<bool>()
            .unwrap()
    };
    for ((k, a), (l, b)) in our_arrays.iter().zip(&their_arrays) {
        assert_eq!(k, l);
        let state = rotating
            .iter()
            .find_map(|layer| k.strip_prefix(layer.as_str()));
        match state {
            Some("5") => continue,
            Some("0" | "1") => {
                let window = a.shape()[2];
                let found = (0..window).any(|shift| same(&ops::roll(a, shift, 2).unwrap(), b));
                assert!(found, "{k}: not mlx_lm's window");
            }
            _ => assert!(same(a, b), "{k}"),
        }
    }
}

#[test]
fn cache_prompt_files_move_between_mlx_lm_and_the_tool() {
    let Some(golden) = golden() else { return };
    for case in golden["cache_prompt"].as_array().unwrap() {
        let name = case["model"].as_str().unwrap();
        let dir = temp_dir(&format!("cache-{name}"));
        let model = if case.get("no_template").is_some() {
            // A copy of the model without its chat template, as mlx_lm's run had.
            let copy = dir.join("model");
            std::fs::create_dir_all(&copy).unwrap();
            for entry in std::fs::read_dir(model_dir(name)).unwrap() {
                let entry = entry.unwrap();
                std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
            }
            let path = copy.join("tokenizer_config.json");
            let mut config: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            config.as_object_mut().unwrap().remove("chat_template");
            std::fs::write(&path, config.to_string()).unwrap();
            copy.display().to_string()
        } else {
            model_arg(name)
        };
        let ours = dir.join("cache.safetensors");
        let argv = [
            "cache_prompt",
            "--model",
            &model,
            "--prompt",
            case["prompt"].as_str().unwrap(),
            "--prompt-cache-file",
            ours.to_str().unwrap(),
        ]
        .map(String::from);
        let (code, out, err) = run_binary(&argv, "");
        assert_eq!(code, 0, "{err}");
        // mlx_lm's progress line ends with the prompt's token count.
        let processed = |s: &str| -> String {
            let at = s.rfind("Processed").unwrap();
            s[at..].split(" tokens").next().unwrap().to_string()
        };
        let theirs_out = case["stdout"].as_str().unwrap();
        assert_eq!(processed(&out), processed(theirs_out), "{out}");
        assert!(out.ends_with(" GB\nSaving...\n"), "{out}");

        // Our file, continued by our generate: mlx_lm's text.
        let generate = |file: &Path| {
            let argv = [
                "generate",
                "--prompt-cache-file",
                file.to_str().unwrap(),
                "--prompt",
                case["query"].as_str().unwrap(),
                "--max-tokens",
                &case["max_tokens"].to_string(),
                "--verbose",
                "F",
            ]
            .map(String::from);
            run_in_process(&argv, "").unwrap().0
        };
        let text = format!("{}\n", case["text"].as_str().unwrap());
        assert_eq!(generate(&ours), text, "{case}");
        if let Some(file) = case.get("file") {
            // mlx_lm's file: ours is the same, and ours continues it as mlx_lm did.
            let theirs = data_dir().join("lm").join(file.as_str().unwrap());
            assert_same_file(&ours, &theirs);
            assert_eq!(generate(&theirs), text, "{case}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let llama = model_arg("llama3");
    let generate = |extra: &[&str]| {
        let mut argv: Vec<String> = ["generate", "--model", &llama, "--prompt", "hi"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        argv.extend(extra.iter().map(|s| s.to_string()));
        run_in_process(&argv, "").unwrap_err()
    };
    let cases: &[(&[&str], &str)] = &[
        (&["--max-tokens", "0"], "non-zero"),
        // mlx_lm's -1 is "no limit", which speculative decoding cannot take (in mlx_lm it
        // fails on an empty concatenation).
        (
            &["--max-tokens", "-1", "--draft-model", &llama],
            "needs a limit on max_tokens",
        ),
        (&["--max-kv-size", "0"], "positive"),
        (&["--max-kv-size", "-3"], "positive"),
        (
            &[
                "--temp",
                "1",
                "--xtc-probability",
                "0.5",
                "--xtc-threshold",
                "0.7",
            ],
            "threshold",
        ),
        (&["--chat-template-config", "[1]"], "JSON object"),
        (&["--chat-template-config", "{"], "not JSON"),
        (&["--extra-eos-token", "<no such token>"], "not a token"),
        (&["--temp", "-1"], "temperature"),
        (&["--top-p", "2"], "top_p"),
        (
            &["--prompt-cache-file", "/nonexistent/cache.safetensors"],
            "nonexistent",
        ),
        (&["--verbose"], "value"),
    ];
    for (extra, needle) in cases {
        let e = generate(extra);
        assert!(e.contains(needle), "{extra:?}: {e}");
    }
    // The binary: one line on stderr, status 1.
    let argv = [
        "generate",
        "--model",
        "/nonexistent/model",
        "--prompt",
        "hi",
    ]
    .map(String::from);
    let (code, out, err) = run_binary(&argv, "");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.starts_with("error: ") && err.lines().count() == 1,
        "{err}"
    );
    let (code, _, err) = run_binary(&["generate".to_string()], "");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--model"), "{err}");
}

/// convert's printing against mlx_lm's: the same lines, the bits per weight within 0.02.
/// mlx_lm divides the bytes of every array the model holds by the parameters, and a model
/// holds arrays besides its parameters (each attention layer's rope frequencies: 4 layers of
/// 16 float32s in llama3, 0.009 bits per weight); ours counts the parameters' bytes.
fn assert_convert_output(ours: &str, theirs: &str) {
    let (ours, theirs): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(ours.len(), theirs.len(), "{ours:?}");
    let bpw = |l: &str| -> Option<f64> {
        l.strip_prefix("[INFO] Quantized model with ")?
            .strip_suffix(" bits per weight.")?
            .parse()
            .ok()
    };
    for (a, b) in ours.iter().zip(&theirs) {
        match (bpw(a), bpw(b)) {
            (Some(x), Some(y)) => assert!((x - y).abs() <= 0.02, "{a} against {b}"),
            _ => assert_eq!(a, b),
        }
    }
}

#[test]
fn convert_writes_what_mlx_lm_convert_writes() {
    let Some(golden) = golden() else { return };
    // Cast, quantized (affine 4- and 8-bit, mxfp4, nvfp4, mxfp8, an architecture's own
    // predicate, mixed-bits recipes) and
    // dequantized: the same tensors bit for bit (their digest), the same config.json and
    // index, the same printing. The first as a subprocess.
    for (i, case) in golden["convert"].as_array().unwrap().iter().enumerate() {
        let dir = temp_dir(&format!("convert-{i}"));
        let dst = dir.join("out");
        let mut argv = vec![
            "convert".to_string(),
            "--hf-path".into(),
            model_arg(case["model"].as_str().unwrap()),
            "--mlx-path".into(),
            dst.display().to_string(),
        ];
        argv.extend(strings(&case["args"]));
        let out = if i == 0 {
            let (code, out, err) = run_binary(&argv, "");
            assert_eq!(code, 0, "{err}");
            out
        } else {
            run_in_process(&argv, "").unwrap().0
        };
        assert_convert_output(&out, case["stdout"].as_str().unwrap());
        let mut tensors = std::collections::HashMap::new();
        for entry in std::fs::read_dir(&dst).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "safetensors") {
                let (arrays, meta) = io::load_safetensors(&path).unwrap();
                assert_eq!(meta.get("format").map(String::as_str), Some("mlx"));
                tensors.extend(arrays);
            }
        }
        let mut names: Vec<&String> = tensors.keys().collect();
        names.sort();
        let theirs: Vec<&String> = case["tensors"].as_object().unwrap().keys().collect();
        assert_eq!(names, theirs, "{case}");
        for (name, spec) in case["tensors"].as_object().unwrap() {
            let a = &tensors[name];
            assert_eq!(a.dtype().name(), spec[0].as_str().unwrap(), "{name}");
            let shape: Vec<i64> = a.shape().iter().map(|&d| d as i64).collect();
            let expected: Vec<i64> = spec[1]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_i64().unwrap())
                .collect();
            assert_eq!(shape, expected, "{name}");
        }
        assert_eq!(
            golden_models::digest(&tensors).unwrap(),
            case["sha256"].as_str().unwrap(),
            "{case}: not mlx_lm's bits"
        );
        let json = |file: &str| -> Value {
            serde_json::from_str(&std::fs::read_to_string(dst.join(file)).unwrap()).unwrap()
        };
        assert_eq!(json("config.json"), case["config"], "{case}");
        assert_eq!(
            json("model.safetensors.index.json"),
            case["index"],
            "{case}"
        );
        // The converted directory loads and generates.
        let argv = [
            "generate",
            "--model",
            dst.to_str().unwrap(),
            "--max-tokens",
            "4",
            "--verbose",
            "F",
        ]
        .map(String::from);
        run_in_process(&argv, "").unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
    // Its errors: an existing destination, quantize with dequantize.
    let dir = temp_dir("convert-errors");
    let argv = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["convert", "--hf-path", &model_arg("llama3"), "--mlx-path"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.push(dir.display().to_string());
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let e = run_in_process(&argv(&[]), "").unwrap_err();
    assert!(e.contains("already exists"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
    let e = run_in_process(&argv(&["-q", "-d"]), "").unwrap_err();
    assert!(e.contains("not both"), "{e}");
    let e = run_in_process(&argv(&["-q", "--q-bits", "7"]), "").unwrap_err();
    assert!(e.contains("7 bits"), "{e}");
    assert!(!dir.exists());
}

/// The numbers of a `key=value, ...` list, each with 3 decimals as mlx_lm prints them.
fn benchmark_values(list: &str, keys: &[&str]) -> Vec<f64> {
    let parts: Vec<&str> = list.split(", ").collect();
    assert_eq!(parts.len(), keys.len(), "{list}");
    parts
        .iter()
        .zip(keys)
        .map(|(part, key)| {
            let value = part
                .strip_prefix(&format!("{key}="))
                .unwrap_or_else(|| panic!("{part}"));
            assert_eq!(
                value.split_once('.').map(|(_, f)| f.len()),
                Some(3),
                "{part}"
            );
            value.parse().unwrap()
        })
        .collect()
}

/// A benchmark's report: its trials and averages, parsed.
fn benchmark_report(out: &str, trials: usize) -> Vec<Vec<f64>> {
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), trials + 3, "{out}");
    assert_eq!(lines[0], "Running warmup..");
    assert!(lines[1].starts_with("Timing with prompt_tokens="), "{out}");
    let mut rows = Vec::new();
    for (i, line) in lines[2..2 + trials].iter().enumerate() {
        let list = line.strip_prefix(&format!("Trial {}:  ", i + 1)).unwrap();
        let keys = ["prompt_tps", "generation_tps", "peak_memory", "total_time"];
        rows.push(benchmark_values(list, &keys));
    }
    let averages = lines[trials + 2].strip_prefix("Averages: ").unwrap();
    rows.push(benchmark_values(
        averages,
        &["prompt_tps", "generation_tps", "peak_memory"],
    ));
    rows
}

#[test]
fn benchmark_prints_what_mlx_lm_benchmark_prints() {
    let Some(golden) = golden() else { return };
    // mlx_lm's lines and ours parse alike; the averages are the trials' means.
    for case in golden["benchmark"].as_array().unwrap() {
        let args = strings(&case["args"]);
        let trials: usize = args[args.iter().position(|a| a == "-n").unwrap() + 1]
            .parse()
            .unwrap();
        benchmark_report(case["stdout"].as_str().unwrap(), trials);
        let mut argv = vec![
            "benchmark".to_string(),
            "--model".into(),
            model_arg(case["model"].as_str().unwrap()),
        ];
        argv.extend(args.iter().cloned());
        let (code, out, err) = run_binary(&argv, "");
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out.lines().nth(1),
            case["stdout"].as_str().unwrap().lines().nth(1),
            "{out}"
        );
        let rows = benchmark_report(&out, trials);
        for k in 0..3 {
            let mean = rows[..trials].iter().map(|r| r[k]).sum::<f64>() / trials as f64;
            // Each printed value is rounded to 3 decimals.
            assert!((mean - rows[trials][k]).abs() <= 1.001e-3, "{out}");
            assert!(rows[..trials].iter().all(|r| r[k] > 0.0 || k == 2), "{out}");
        }
    }
}

/// perplexity's printing against mlx_lm's: the same lines but the timings (evaluation time,
/// peak memory, tokens per second), whose format is checked. The perplexity line is mlx_lm's
/// to its 3 decimals when linked to the wheel's libmlx (the numbers are then bit for bit,
/// `perplexity_is_mlx_lm_s_to_the_bit`); on the source build of MLX within one unit of the
/// last decimal.
fn assert_perplexity_output(ours: &str, theirs: &str) {
    let (ours, theirs): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(ours.len(), theirs.len(), "{ours:?}\n{theirs:?}");
    let decimals = |s: &str, n: usize| {
        let (whole, fraction) = s.split_once('.').unwrap_or((s, ""));
        !whole.is_empty()
            && whole.bytes().all(|b| b.is_ascii_digit())
            && fraction.len() == n
            && fraction.bytes().all(|b| b.is_ascii_digit())
    };
    for (a, b) in ours.iter().zip(&theirs) {
        let timing = [
            ("Evaluation time: ", " seconds", 2),
            ("Peak memory: ", " GB", 2),
            ("Tokens per second: ", "", 0),
        ]
        .iter()
        .find(|(prefix, _, _)| b.starts_with(prefix));
        if let Some((prefix, suffix, n)) = timing {
            let value = a.strip_prefix(prefix).and_then(|s| s.strip_suffix(suffix));
            assert!(value.is_some_and(|v| decimals(v, *n)), "{a} against {b}");
        } else if b.starts_with("Perplexity: ") && !mlx::core::sys::PREBUILT_MLX {
            let numbers = |l: &str| -> Vec<f64> {
                l["Perplexity: ".len()..]
                    .split(" ± ")
                    .map(|x| x.parse().unwrap())
                    .collect()
            };
            for (x, y) in numbers(a).iter().zip(numbers(b)) {
                assert!((x - y).abs() <= 1.001e-3, "{a} against {b}");
            }
        } else {
            assert_eq!(a, b);
        }
    }
}

fn perplexity_argv(case: &Value) -> Vec<String> {
    let mut argv = vec![
        "perplexity".to_string(),
        "--model".into(),
        model_arg(case["model"].as_str().unwrap()),
        "--data-path".into(),
        case["data_path"].as_str().unwrap().to_string(),
    ];
    argv.extend(strings(&case["args"]));
    argv
}

#[test]
fn perplexity_prints_what_mlx_lm_perplexity_prints() {
    let Some(golden) = golden() else { return };
    if golden.get("perplexity").is_none() {
        println!("SKIPPED: the record has no perplexity section (lm_cli.py without `datasets`)");
        return;
    }
    // Text records beside a valid.jsonl it must not read, chat records in a sharded data/
    // file, prompt/completion records in a file named for no split; a quantized model. The
    // first as a subprocess, with its `\r` progress line.
    for (i, case) in golden["perplexity"].as_array().unwrap().iter().enumerate() {
        let argv = perplexity_argv(case);
        let out = if i == 0 {
            let (code, out, err) = run_binary(&argv, "");
            assert_eq!(code, 0, "{err}");
            out
        } else {
            run_in_process(&argv, "").unwrap().0
        };
        assert_perplexity_output(&out, case["stdout"].as_str().unwrap());
    }
}

#[test]
fn perplexity_on_a_terminal_draws_a_progress_bar() {
    let Some(golden) = golden() else { return };
    if golden.get("perplexity").is_none() {
        println!("SKIPPED: the record has no perplexity section (lm_cli.py without `datasets`)");
        return;
    }
    // Under a pseudo-terminal (util-linux `script`), the progress is indicatif's bar on
    // stderr instead of mlx_lm's `\r` line; the results are the same lines.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` command to give the tool a terminal");
        return;
    }
    let case = &golden["perplexity"][0];
    let quote = |a: &String| format!("'{}'", a.replace('\'', r"'\''"));
    let command = std::iter::once(env!("CARGO_BIN_EXE_mlx-lm").to_string())
        .chain(perplexity_argv(case))
        .map(|a| quote(&a))
        .collect::<Vec<_>>()
        .join(" ");
    let output = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{screen}");
    assert!(screen.contains("batches"), "{screen}");
    assert!(!screen.contains("Processed "), "{screen}");
    assert!(screen.contains("EVALUATION RESULTS"), "{screen}");
}

#[test]
fn perplexity_is_mlx_lm_s_to_the_bit() {
    let Some(golden) = golden() else { return };
    if golden.get("perplexity").is_none() {
        println!("SKIPPED: the record has no perplexity section (lm_cli.py without `datasets`)");
        return;
    }
    // mlx_lm's own `load_data` rows (NumPy's permutation under the seed, the records'
    // tokens) and `eval_ppl` numbers at full precision: equal as f64 linked to the wheel's
    // libmlx; on the source build of MLX, whose float32 kernels round otherwise (logits within
    // 1e-5, tests/lm_models.rs), within 1e-5 relative: the mean and variance of some hundred
    // cross entropies of order 6 move by little more than their own rounding.
    use cli::perplexity::{eval_ppl, load_data, TrainSplit};
    for case in golden["perplexity"].as_array().unwrap() {
        let args = strings(&case["args"]);
        let get = |name: &str, default: &str| flag(&args, name).unwrap_or(default.into());
        let (model, tokenizer, _) = lm::load(
            model_dir(case["model"].as_str().unwrap()),
            Default::default(),
        )
        .unwrap();
        let split = TrainSplit::load(Path::new(case["data_path"].as_str().unwrap())).unwrap();
        assert_eq!(split.len() as u64, case["records"].as_u64().unwrap());
        let length: usize = get("--sequence-length", "512").parse().unwrap();
        let seed: u32 = get("--seed", "123").parse().unwrap();
        let samples: usize = get("--num-samples", "256").parse().unwrap();
        let rows = load_data(&tokenizer, &split, Some(samples), length, seed).unwrap();
        let theirs: Vec<i32> = case["rows"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r.as_array().unwrap().iter())
            .map(|t| t.as_i64().unwrap() as i32)
            .collect();
        assert_eq!(rows.tokens, theirs, "{case}");
        let batch: usize = get("--batch-size", "8").parse().unwrap();
        let mut batches = 0;
        let (ppl, se) = eval_ppl(&model, &rows, batch, &mut |_, _| {
            batches += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(batches, rows.rows.div_ceil(batch));
        let (their_ppl, their_se) = (case["ppl"].as_f64().unwrap(), case["se"].as_f64().unwrap());
        if mlx::core::sys::PREBUILT_MLX {
            assert_eq!((ppl, se), (their_ppl, their_se), "{case}");
        } else {
            assert!(
                (ppl - their_ppl).abs() <= 1e-5 * their_ppl,
                "{ppl} {their_ppl}"
            );
            assert!((se - their_se).abs() <= 1e-5 * their_se, "{se} {their_se}");
        }
        // Another seed draws other rows.
        let other = load_data(&tokenizer, &split, Some(samples), length, seed + 1).unwrap();
        assert_ne!(other.tokens, rows.tokens, "{case}");
        // Every record (`--num-samples -1`, mlx_lm's "all available"): all their tokens.
        let all = load_data(&tokenizer, &split, None, length, seed).unwrap();
        let total = case["all_tokens"].as_u64().unwrap() as usize;
        assert_eq!(all.rows, total / length, "{case}");
    }
}

#[test]
fn perplexity_refuses_what_it_cannot_do() {
    let data = "tests/data/lm/perplexity/text".to_string();
    let llama = model_arg("llama3");
    let dir = temp_dir("perplexity-parquet");
    std::fs::write(dir.join("train.parquet"), b"PAR1").unwrap();
    let parquet = dir.display().to_string();
    let run = |extra: &[&str]| {
        let mut argv: Vec<String> = ["perplexity", "--model", &llama]
            .iter()
            .map(|s| s.to_string())
            .collect();
        argv.extend(extra.iter().map(|s| s.to_string()));
        run_in_process(&argv, "").unwrap_err()
    };
    let cases: &[(&[&str], &str)] = &[
        // mlx_lm's default dataset is a Hub name: nothing is downloaded.
        (&["--sequence-length", "16"], "not downloaded"),
        (&["--data-path", "someone/some-dataset"], "not downloaded"),
        (
            &["--data-path", "tests/data/lm/perplexity/text/train.jsonl"],
            "directory",
        ),
        // The train files of text/ and chat/ together: records of two formats.
        (&["--data-path", "tests/data/lm/perplexity"], "one format"),
        (&["--data-path", &parquet], "JSON Lines"),
        (
            &[
                "--data-path",
                &data,
                "--num-samples",
                "1000",
                "--sequence-length",
                "16",
            ],
            "fewer",
        ),
        (
            &["--data-path", &data, "--num-samples", "0"],
            "positive or -1",
        ),
        (
            &["--data-path", &data, "--sequence-length", "1"],
            "at least 2",
        ),
        (&["--data-path", &data, "--batch-size", "0"], "positive"),
        (&["--data-path", &data, "--seed", "-1"], "2**32"),
    ];
    for (extra, needle) in cases {
        let e = run(extra);
        assert!(e.contains(needle), "{extra:?}: {e}");
    }
    std::fs::remove_dir_all(dir).unwrap();
    let argv = [
        "perplexity",
        "--model",
        "someone/some-model",
        "--data-path",
        &data,
    ]
    .map(String::from);
    let (code, _, err) = run_binary(&argv, "");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("Hugging Face Hub"), "{err}");
}

/// The option names a `--help` screen of ours lists: each option line's names, and the
/// aliases clap shows as `[alias: --model]`; mlx_lm's two-letter `-qa`, which clap cannot
/// declare, is accepted for `--quantize-activations` (`cli::args_os`).
fn our_flags(help: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for line in help.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('-') && line.starts_with(' ') {
            for part in trimmed.split("  ").next().unwrap().split(", ") {
                names.insert(part.split([' ', '=']).next().unwrap().to_string());
            }
        }
        // clap writes `[alias: --model]`, or `[aliases: ...]` for several.
        for label in ["[alias: ", "[aliases: "] {
            if let Some(at) = line.find(label) {
                let end = at + line[at..].find(']').unwrap();
                names.extend(line[at + label.len()..end].split(", ").map(String::from));
            }
        }
    }
    if names.contains("--quantize-activations") {
        names.insert("-qa".into());
    }
    names
}

/// Flags a command has here beyond mlx_lm's. `generate --pipeline`: started under the
/// launcher, the model is split by layers rather than by heads (mlx_lm.generate does not
/// split models; its chat's flag has this name).
const OURS_ONLY: &[(&str, &str)] = &[("generate", "--pipeline")];

#[test]
fn each_command_takes_mlx_lm_s_flags() {
    let Some(golden) = golden() else { return };
    // Every command's `--help` lists the names mlx_lm's lists, and no others but OURS_ONLY.
    for (command, theirs) in golden["flags"].as_object().unwrap() {
        let (code, help, err) = run_binary(&[command.clone(), "--help".into()], "");
        assert_eq!(code, 0, "{err}");
        let mut ours = our_flags(&help);
        for &(c, flag) in OURS_ONLY {
            if c == command.as_str() {
                assert!(ours.remove(flag), "{c}: {flag} is not listed any more");
            }
        }
        let theirs: std::collections::BTreeSet<String> = strings(theirs).into_iter().collect();
        assert_eq!(ours, theirs, "{command}:\n{help}");
    }
}

#[test]
fn network_and_unported_flags_are_errors_that_say_so() {
    let llama = model_arg("llama3");
    let dir = temp_dir("flags");
    let out = dir.join("out").display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "convert",
                "--hf-path",
                &llama,
                "--mlx-path",
                &out,
                "--upload-repo",
                "me/m",
            ],
            "--upload-repo is not supported by this tool: nothing is uploaded",
        ),
        (
            &[
                "convert",
                "--hf-path",
                "someone/some-model",
                "--mlx-path",
                &out,
            ],
            "not downloaded from the Hugging Face Hub",
        ),
        (
            &["generate", "--model", "someone/some-model"],
            "not downloaded from the Hugging Face Hub",
        ),
        (
            &["generate", "--model", &llama, "--image", "a.png"],
            "--image",
        ),
        (
            &["generate", "--model", &llama, "-qa"],
            "--quantize-activations",
        ),
        (
            &["benchmark", "--model", &llama, "-qa"],
            "--quantize-activations",
        ),
        (
            &["benchmark", "--model", &llama, "--pipeline"],
            "--pipeline",
        ),
        (&["chat", "--model", &llama, "--pipeline"], "--pipeline"),
        (
            &[
                "cache_prompt",
                "--model",
                &llama,
                "--prompt",
                "hi",
                "--prompt-cache-file",
                &out,
                "--kv-bits",
                "4",
            ],
            "--kv-bits",
        ),
        (
            &[
                "convert",
                "--hf-path",
                &llama,
                "--mlx-path",
                &out,
                "--quant-predicate",
                "mixed_3_6",
            ],
            "add -q",
        ),
        (
            &[
                "convert",
                "--hf-path",
                &llama,
                "--mlx-path",
                &out,
                "-q",
                "--quant-predicate",
                "mixed_3_6",
                "--q-mode",
                "mxfp4",
            ],
            "only support 'affine'",
        ),
        // lfm2's MLP has no down_proj: mlx_lm's recipe has no layers to place.
        (
            &[
                "convert",
                "--hf-path",
                &model_arg("lfm2"),
                "--mlx-path",
                &out,
                "-q",
                "--quant-predicate",
                "mixed_3_6",
            ],
            "expected keys for mixed quant",
        ),
    ];
    for (argv, needle) in cases {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let (code, stdout, err) = run_binary(&argv, "");
        assert_eq!(code, 1, "{argv:?}: {stdout}{err}");
        assert!(
            err.starts_with("error: ") && err.contains(needle),
            "{argv:?}: {err}"
        );
    }
    assert!(!dir.join("out").exists());
    // Accepted as mlx_lm accepts them: the same text.
    let argv = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "generate",
            "--model",
            &llama,
            "--max-tokens",
            "5",
            "--verbose",
            "F",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let plain = run_in_process(&argv(&[]), "").unwrap().0;
    let flagged = argv(&["--trust-remote-code", "--use-default-chat-template"]);
    assert_eq!(run_in_process(&flagged, "").unwrap().0, plain);
    std::fs::remove_dir_all(dir).unwrap();
}
