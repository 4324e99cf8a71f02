//! The server driven by the official Python clients (`openai`, `anthropic`; pinned in
//! scripts/python-venv) through scripts/server_clients.py: their chat, completion and
//! message calls, streamed and whole, give `mlx_lm::generate`'s greedy text; their error
//! types come back for the server's errors; forced tool calls (streamed and whole) come
//! back as the clients' tool-call objects, and JSON-schema output validates (`jsonschema`). Skipped, saying why, without that Python.

mod common;

use std::path::{Path, PathBuf};

use common::{options, start};
use mlx_lm::{generate, load, ChatOptions, GenerateOptions, LoadOptions};
use serde_json::json;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// $MLX_PYTHON or the repository's .venv, if it imports both clients.
fn python() -> Option<PathBuf> {
    std::env::var_os("MLX_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([Path::new(ROOT).join(".venv/bin/python")])
        .find(|py| {
            std::process::Command::new(py)
                .args(["-c", "import openai, anthropic, jsonschema"])
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_clients() {
    let Some(py) = python() else {
        println!(
            "SKIPPED: no Python with the openai, anthropic and jsonschema packages (set \
             MLX_PYTHON, or create .venv with scripts/python-venv)"
        );
        return;
    };
    let (model, tokenizer, _) = load(common::model_dir("qwen3"), LoadOptions::default()).unwrap();
    let greedy = |prompt: &[u32], max_tokens: usize| {
        let o = GenerateOptions {
            max_tokens,
            stop_tokens: tokenizer.eos_token_ids(),
            ..Default::default()
        };
        generate(&model, &tokenizer, prompt, &o).unwrap()
    };
    let chat = |messages: &serde_json::Value| {
        let o = ChatOptions {
            add_generation_prompt: true,
            ..Default::default()
        };
        tokenizer
            .encode(&tokenizer.apply_chat_template(messages, &o).unwrap(), false)
            .unwrap()
    };
    let stop_in = |text: &str, from: usize| -> (String, String) {
        let chars: Vec<char> = text.chars().collect();
        assert!(chars.len() > from + 3, "{text:?}");
        let stop: String = chars[from..from + 3].iter().collect();
        let cut = text[..text.find(&stop).unwrap()].to_string();
        (stop, cut)
    };

    let messages = json!([{"role": "user", "content": "Name three rivers."}]);
    let chat_prompt = chat(&messages);
    let completion = "Once upon a time";
    let completion_ids = tokenizer.encode(completion, true).unwrap();
    let completion_text = greedy(&completion_ids, 40);
    let (stop, cut) = stop_in(&completion_text, 7);
    let system_messages =
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]);
    let anthropic_prompt = chat(&system_messages);
    let anthropic_text = greedy(&anthropic_prompt, 30);
    let (a_stop, a_cut) = stop_in(&anthropic_text, 5);

    let mut o = options("qwen3");
    o.api_key = Some("sekrit".into());
    let server = start(o).await;
    // A second server whose template renders tools as Qwen's does (the json_tools format).
    let mut o = options("qwen3");
    o.api_key = Some("sekrit".into());
    o.chat_template = common::TOOL_TEMPLATE.into();
    let tooled = start(o).await;
    let cases = json!({
        "base": server.base,
        "tools_base": tooled.base,
        "chat": {"messages": messages, "max_tokens": 32, "expected": greedy(&chat_prompt, 32),
                 "prompt_tokens": chat_prompt.len()},
        "completion": {"prompt": completion, "max_tokens": 40, "expected": completion_text,
                       "stop": stop, "expected_stop": cut},
        "messages": {"system": "Be brief.", "messages": [{"role": "user", "content": "Hello"}],
                     "max_tokens": 30, "expected": anthropic_text, "prompt_tokens": anthropic_prompt.len(),
                     "stop": a_stop, "expected_stop": a_cut},
    });
    let file =
        std::env::temp_dir().join(format!("mlx-lm-server-clients-{}.json", std::process::id()));
    std::fs::write(&file, cases.to_string()).unwrap();
    let script = Path::new(ROOT).join("scripts/server_clients.py");
    let out = tokio::process::Command::new(&py)
        .arg(&script)
        .arg(&file)
        .output()
        .await
        .unwrap();
    let _ = std::fs::remove_file(&file);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the client checks failed:\n{text}");
    println!("{}", text.trim());
    server.shutdown().await;
    tooled.shutdown().await;
}
