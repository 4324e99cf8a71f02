//! Starts a server on an ephemeral loopback port over a committed test model, and speaks
//! raw HTTP to it.

#![allow(dead_code)]

use std::path::PathBuf;

use mlx_lm_server::{Server, ServerOptions};
use serde_json::Value;
use tokio::sync::oneshot;

/// A committed test model (`tests/data/lm-models/<name>`: random weights written from their
/// recipe, a 384-token BPE tokenizer, a ChatML template).
pub fn model_dir(name: &str) -> PathBuf {
    golden_models::model_dir(name)
}

pub struct Running {
    pub base: String,
    pub stop: Option<oneshot::Sender<()>>,
    pub done: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// Stops the server and waits for it (in-flight requests finish first).
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.done.await.unwrap().unwrap();
    }
}

/// A ChatML template that renders tools, calls and results as Qwen's does (so mlx_lm
/// picks its `json_tools` format: `<tool_call>` and `tool_call.name`).
pub const TOOL_TEMPLATE: &str = r#"{%- if tools %}<|im_start|>system
<tools>{% for tool in tools %}{{ tool | tojson }}{% endfor %}</tools><|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == "assistant" and message.tool_calls %}<|im_start|>assistant
{{ message.content }}{% for tool_call in message.tool_calls %}{% set tool_call = tool_call.function %}<tool_call>
{"name": "{{ tool_call.name }}", "arguments": {{ tool_call.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% elif message.role == "tool" %}<|im_start|>user
<tool_response>{{ message.content }}</tool_response><|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"#;

pub fn options(model: &str) -> ServerOptions {
    let mut o = ServerOptions::new(model_dir(model));
    o.port = 0;
    o.served_model_name = Some("test-model".into());
    o.context_length = 512;
    o.decode_concurrency = 4;
    o.log_requests = false;
    o
}

/// A value of the Prometheus text.
pub fn metric_value(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// The server traced each shape of its decode step it ran once and never again (the
/// shortest view's one-row steps at start-up, the others when a step first needed them):
/// at most each batch size (1, 2, 4, ... up to `slots`) with each attention view of a slot
/// of [`options`]' 512 positions (256 and 512), each in its two kinds (lean and full).
pub fn assert_each_size_traced_once(metrics: &str, slots: usize) {
    let sizes = std::iter::successors(Some(1usize), |n| Some(n * 2))
        .take_while(|n| *n < slots)
        .count()
        + 1;
    let shapes = metric_value(metrics, "mlx_lm_step_shapes");
    assert!(
        shapes >= 2.0 && shapes <= (sizes * 2 * 2) as f64,
        "{shapes} shapes: {metrics}"
    );
    assert_eq!(
        metric_value(metrics, "mlx_lm_step_traces"),
        shapes,
        "{metrics}"
    );
}

pub async fn start(options: ServerOptions) -> Running {
    let server = tokio::task::spawn_blocking(move || Server::load(options).unwrap())
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(server.run(listener, async {
        let _ = stopped.await;
    }));
    Running {
        base,
        stop: Some(stop),
        done,
    }
}

pub async fn post(base: &str, path: &str, body: &Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let json = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{path} answered {status} with non-JSON {text:?}: {e}"));
    (status, json)
}

pub async fn get(base: &str, path: &str) -> (u16, String) {
    let r = reqwest::get(format!("{base}{path}")).await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// A server-sent event: its `event:` name (if any) and its `data:`.
#[derive(Debug, Clone)]
pub struct Sse {
    pub event: Option<String>,
    pub data: String,
}

/// Reads events off a streaming response as they come; `stop_after`: drop the connection
/// after that many events (a client that goes away).
pub async fn stream(
    base: &str,
    path: &str,
    body: &Value,
    stop_after: Option<usize>,
) -> (u16, Vec<Sse>) {
    let mut r = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let mut buf = String::new();
    let mut events = Vec::new();
    while let Some(bytes) = r.chunk().await.unwrap() {
        buf.push_str(std::str::from_utf8(&bytes).unwrap());
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let mut e = Sse {
                event: None,
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event: ").or(line.strip_prefix("event:")) {
                    e.event = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ").or(line.strip_prefix("data:")) {
                    e.data.push_str(v);
                }
            }
            events.push(e);
            if stop_after.is_some_and(|n| events.len() >= n) {
                return (status, events);
            }
        }
    }
    (status, events)
}

/// The text of an OpenAI chat stream's deltas, and its finish reason.
pub fn chat_stream_text(events: &[Sse]) -> (String, Option<String>) {
    let mut text = String::new();
    let mut finish = None;
    for e in events {
        if e.data == "[DONE]" {
            continue;
        }
        let v: Value = serde_json::from_str(&e.data).unwrap();
        for c in v["choices"].as_array().unwrap() {
            if let Some(t) = c["delta"]["content"].as_str() {
                text.push_str(t);
            }
            if let Some(f) = c["finish_reason"].as_str() {
                finish = Some(f.to_string());
            }
        }
    }
    (text, finish)
}

/// Whether MLX multiplies float32 matrices of several rows with TF32 tensor cores here: a
/// CUDA GPU, `MLX_ENABLE_TF32` unset or not 0. The server's batched steps and prefill chunks
/// are then rounded to 10 bits of mantissa where a request decoded alone one row at a time is
/// not (docs/cuda.md).
pub fn tf32() -> bool {
    let gpu =
        mlx_rs::Device::default_device().is_ok_and(|d| d.device_type() == mlx_rs::DeviceType::Gpu);
    gpu && mlx_rs::cuda::is_available().unwrap_or(false)
        && std::env::var("MLX_ENABLE_TF32").map_or(true, |v| v.trim() != "0")
}

/// The bound of a continuous batch's rows against each request alone with TF32, relative
/// log-probabilities (`|a - b| / max(1, |b|)`): measured up to 7.16e-3 on an H200
/// (tests/lm_engine.rs's `tf32_bound::ENGINE_ROWS`, the engine this server runs).
pub const TF32_ENGINE_ROWS: f32 = 7.2e-3;

/// A request's greedy reply alone, as `generate` writes it, and with TF32 (see [`tf32`]) the
/// text of its tokens before the first pick whose two best log-probabilities are within twice
/// [`TF32_ENGINE_ROWS`] of each other (a pick that rounding may flip): `None` on the CPU or
/// where no pick is that close.
pub struct Greedy {
    pub text: String,
    pub before_close_pick: Option<String>,
}

pub fn greedy(
    model: &mlx_lm::Model,
    tokenizer: &mlx_lm::Tokenizer,
    prompt: &[u32],
    max_tokens: usize,
) -> Greedy {
    let options = mlx_lm::GenerateOptions {
        max_tokens,
        stop_tokens: tokenizer.eos_token_ids(),
        ..Default::default()
    };
    let text = mlx_lm::generate(model, tokenizer, prompt, &options).unwrap();
    let mut before_close_pick = None;
    if tf32() {
        let eos = tokenizer.eos_token_ids();
        let mut tokens = Vec::new();
        for step in mlx_lm::generate_step(model, prompt, &options).unwrap() {
            let (token, lp) = step.unwrap();
            let lp = lp.astype(mlx_rs::Dtype::Float32).unwrap();
            let lp = lp.to_vec::<f32>().unwrap();
            let (mut first, mut second) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
            for &x in &lp {
                if x > first {
                    second = first;
                    first = x;
                } else if x > second {
                    second = x;
                }
            }
            if first - second <= 2.0 * TF32_ENGINE_ROWS * first.abs().max(1.0) {
                before_close_pick = Some(tokenizer.decode(&tokens, true).unwrap());
                break;
            }
            if eos.contains(&token) {
                break;
            }
            tokens.push(token);
        }
    }
    Greedy {
        text,
        before_close_pick,
    }
}

/// `actual` is `expected`'s text, or with TF32 past a close pick begins with the text before it.
pub fn assert_reply(actual: &str, expected: &Greedy, what: &str) {
    match &expected.before_close_pick {
        Some(prefix) if actual != expected.text => {
            println!("{what}: compared up to a TF32-close pick");
            assert!(
                actual.starts_with(prefix.as_str()),
                "{what}: {actual:?} does not begin with {prefix:?}"
            );
        }
        _ => assert_eq!(actual, expected.text, "{what}"),
    }
}
