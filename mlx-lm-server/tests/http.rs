//! The server over raw HTTP (reqwest): chat and completions, streamed and whole, against
//! `mlx_lm::generate` of the same prompt tokens (greedy: the text must be equal, exactly);
//! stop strings across token boundaries; logprobs; the Anthropic Messages API and its
//! event stream; errors in each API's own shape that leave the server serving; the API
//! key; metrics; graceful shutdown.

mod common;

use common::{chat_stream_text, get, options, post, start, stream};
use mlx_lm::{generate, load, ChatOptions, GenerateOptions, LoadOptions, Model, Tokenizer};
use serde_json::{json, Value};

fn reference() -> (Model, Tokenizer) {
    let (model, tokenizer, _) = load(common::model_dir("qwen3"), LoadOptions::default()).unwrap();
    (model, tokenizer)
}

/// Greedy text of `generate` for prompt tokens, stopping at the tokenizer's stop tokens.
fn greedy_text(model: &Model, tokenizer: &Tokenizer, prompt: &[u32], max_tokens: usize) -> String {
    let options = GenerateOptions {
        max_tokens,
        stop_tokens: tokenizer.eos_token_ids(),
        ..Default::default()
    };
    generate(model, tokenizer, prompt, &options).unwrap()
}

fn chat_prompt(tokenizer: &Tokenizer, messages: &Value) -> Vec<u32> {
    let chat = ChatOptions {
        add_generation_prompt: true,
        ..Default::default()
    };
    tokenizer
        .encode(
            &tokenizer.apply_chat_template(messages, &chat).unwrap(),
            false,
        )
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_and_completions_equal_generate() {
    let (model, tokenizer) = reference();
    let server = start(options("qwen3")).await;
    let base = &server.base;

    let messages = json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name three rivers."}]);
    let prompt = chat_prompt(&tokenizer, &messages);
    let expected = greedy_text(&model, &tokenizer, &prompt, 40);
    assert!(!expected.is_empty());

    let (status, r) = post(
        base,
        "/v1/chat/completions",
        &json!({"model": "test-model", "messages": messages, "max_tokens": 40}),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["object"], "chat.completion");
    assert_eq!(r["choices"][0]["message"]["role"], "assistant");
    assert_eq!(r["choices"][0]["message"]["content"], expected.as_str());
    assert_eq!(r["usage"]["prompt_tokens"], prompt.len());
    let completion_tokens = r["usage"]["completion_tokens"].as_u64().unwrap();
    assert!(completion_tokens > 0 && completion_tokens <= 40);
    let finish = r["choices"][0]["finish_reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(finish == "length", completion_tokens == 40, "{r}");

    // Content parts join into the same prompt; max_completion_tokens is max_tokens.
    let parts = json!([{"role": "system", "content": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}]},
                       {"role": "user", "content": "Name three rivers."}]);
    let (_, r2) = post(
        base,
        "/v1/chat/completions",
        &json!({"messages": parts, "max_completion_tokens": 40}),
    )
    .await;
    assert_eq!(r2["choices"][0]["message"]["content"], expected.as_str());

    // Streamed: the deltas join into the same text; the first chunk names the role; [DONE].
    let (status, events) = stream(
        base,
        "/v1/chat/completions",
        &json!({"messages": messages, "max_tokens": 40, "stream": true,
        "stream_options": {"include_usage": true}}),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let first: Value = serde_json::from_str(&events[0].data).unwrap();
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(first["object"], "chat.completion.chunk");
    let (text, f) = chat_stream_text(&events);
    assert_eq!(text, expected);
    assert_eq!(f.as_deref(), Some(finish.as_str()));
    let usage: Value = serde_json::from_str(&events[events.len() - 2].data).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], completion_tokens);
    assert_eq!(usage["choices"], json!([]));

    // Completions: the prompt encoded with special tokens, as mlx_lm's server does.
    let text_prompt = "Once upon a time";
    let ids = tokenizer.encode(text_prompt, true).unwrap();
    let expected = greedy_text(&model, &tokenizer, &ids, 30);
    let (status, r) = post(
        base,
        "/v1/completions",
        &json!({"prompt": text_prompt, "max_tokens": 30}),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["object"], "text_completion");
    assert_eq!(r["choices"][0]["text"], expected.as_str());
    assert_eq!(r["usage"]["prompt_tokens"], ids.len());
    // Token ids as the prompt, and echo.
    let (_, r) = post(
        base,
        "/v1/completions",
        &json!({"prompt": ids, "max_tokens": 30, "echo": true}),
    )
    .await;
    assert_eq!(
        r["choices"][0]["text"],
        format!("{}{expected}", tokenizer.decode(&ids, false).unwrap())
    );
    let (_, events) = stream(
        base,
        "/v1/completions",
        &json!({"prompt": text_prompt, "max_tokens": 30, "stream": true}),
        None,
    )
    .await;
    let mut streamed = String::new();
    for e in events.iter().filter(|e| e.data != "[DONE]") {
        let v: Value = serde_json::from_str(&e.data).unwrap();
        streamed.push_str(v["choices"][0]["text"].as_str().unwrap());
    }
    assert_eq!(streamed, expected);

    let (status, body) = get(base, "/v1/models").await;
    assert_eq!(status, 200);
    let models: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(models["data"][0]["id"], "test-model");
    assert_eq!(get(base, "/health").await.0, 200);
    let (_, metrics) = get(base, "/metrics").await;
    common::assert_each_size_traced_once(&metrics, 4);
    assert!(
        metrics.contains("mlx_lm_time_to_first_token_seconds_count 6\n"),
        "{metrics}"
    );
    // One request at a time: each joined the batch in a step of its own, and each whose
    // prompt was not all in the prompt cache had one prefill chunk (2048 tokens a chunk).
    let value = |name: &str| -> f64 {
        let line = metrics
            .lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("no {name} in {metrics}"));
        line[name.len() + 1..].parse().unwrap()
    };
    assert_eq!(
        value("mlx_lm_decode_step_seconds_count{joined=\"true\"}"),
        6.0
    );
    let chunks = value("mlx_lm_prefill_chunk_seconds_count");
    assert!((1.0..=6.0).contains(&chunks), "{metrics}");
    assert!(value("mlx_lm_prefill_chunk_seconds_sum") > 0.0, "{metrics}");
    assert!(
        value("mlx_lm_decode_step_seconds_count{joined=\"false\"}") > 0.0,
        "{metrics}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_strings_and_logprobs() {
    let (model, tokenizer) = reference();
    let server = start(options("qwen3")).await;
    let base = &server.base;
    let ids = tokenizer.encode("The river", true).unwrap();
    let full = greedy_text(&model, &tokenizer, &ids, 48);
    // A stop string from the middle of the greedy text, three characters long, so it
    // likely spans a token boundary; the output ends right before its first occurrence.
    let chars: Vec<char> = full.chars().collect();
    assert!(chars.len() > 12, "{full:?}");
    let stop: String = chars[8..11].iter().collect();
    let cut = &full[..full.find(&stop).unwrap()];
    let body = json!({"prompt": "The river", "max_tokens": 48, "stop": [stop, "never-there"]});
    let (_, r) = post(base, "/v1/completions", &body).await;
    assert_eq!(r["choices"][0]["text"], cut);
    assert_eq!(r["choices"][0]["finish_reason"], "stop");
    let mut streaming = body.clone();
    streaming["stream"] = json!(true);
    let (_, events) = stream(base, "/v1/completions", &streaming, None).await;
    let mut streamed = String::new();
    let mut finish = None;
    for e in events.iter().filter(|e| e.data != "[DONE]") {
        let v: Value = serde_json::from_str(&e.data).unwrap();
        streamed.push_str(v["choices"][0]["text"].as_str().unwrap());
        assert!(
            !streamed.contains(&stop),
            "the stop string was streamed: {streamed:?}"
        );
        if let Some(f) = v["choices"][0]["finish_reason"].as_str() {
            finish = Some(f.to_string());
        }
    }
    assert_eq!(streamed, cut);
    assert_eq!(finish.as_deref(), Some("stop"));

    // Anthropic reports which stop sequence it was.
    let messages = json!([{"role": "user", "content": "The river"}]);
    let prompt = chat_prompt(&tokenizer, &messages);
    let chat_full = greedy_text(&model, &tokenizer, &prompt, 48);
    let chars: Vec<char> = chat_full.chars().collect();
    let stop: String = chars[6..9].iter().collect();
    let (_, r) = post(
        base,
        "/v1/messages",
        &json!({"max_tokens": 48, "messages": messages, "stop_sequences": [stop]}),
    )
    .await;
    assert_eq!(
        r["content"][0]["text"],
        &chat_full[..chat_full.find(&stop).unwrap()]
    );
    assert_eq!(r["stop_reason"], "stop_sequence");
    assert_eq!(r["stop_sequence"], stop.as_str());

    // Chat logprobs: one entry per generated token; greedy, so each token is its top
    // alternative; the alternatives sorted; their tokens' text joins into the content
    // where the tokens are whole characters.
    let (_, r) = post(
        base,
        "/v1/chat/completions",
        &json!({"messages": messages, "max_tokens": 12, "logprobs": true, "top_logprobs": 3}),
    )
    .await;
    let content = r["choices"][0]["logprobs"]["content"].as_array().unwrap();
    let n = r["usage"]["completion_tokens"].as_u64().unwrap() as usize;
    let stopped = r["choices"][0]["finish_reason"] == "stop";
    assert_eq!(content.len(), if stopped { n - 1 } else { n });
    for entry in content {
        let top = entry["top_logprobs"].as_array().unwrap();
        assert_eq!(top.len(), 3);
        assert_eq!(top[0]["token"], entry["token"]);
        assert_eq!(top[0]["logprob"], entry["logprob"]);
        let lps: Vec<f64> = top.iter().map(|t| t["logprob"].as_f64().unwrap()).collect();
        assert!(lps.windows(2).all(|w| w[0] >= w[1]), "{lps:?}");
        assert!(lps[0] <= 0.0);
        let bytes: Vec<u8> = entry["bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap() as u8)
            .collect();
        assert_eq!(bytes, entry["token"].as_str().unwrap().as_bytes());
    }
    // The log-probabilities are generate_step's for the same tokens, to the engine's
    // batched-sum rounding: tests/lm_engine.rs bounds it by 1e-3 for this model, where a
    // wrong row or position moves log-probabilities by 1e-2 and more.
    let opts = GenerateOptions {
        max_tokens: content.len(),
        stop_tokens: tokenizer.eos_token_ids(),
        ..Default::default()
    };
    let steps: Vec<(u32, Vec<f32>)> = mlx_lm::generate_step(&model, &prompt, &opts)
        .unwrap()
        .map(|s| {
            let (t, lp) = s.unwrap();
            (
                t,
                lp.astype(mlx_rs::Dtype::Float32)
                    .unwrap()
                    .to_vec::<f32>()
                    .unwrap(),
            )
        })
        .collect();
    for (entry, (token, lp)) in content.iter().zip(&steps) {
        let text = tokenizer.decode(&[*token], false).unwrap();
        assert_eq!(entry["token"], text.as_str());
        let got = entry["logprob"].as_f64().unwrap();
        // The server's engine runs the request as one row of its slot batch: on the CPU the
        // row's ops are the request's own (lm_engine: bit-identical), on a GPU the batched
        // matmuls group their sums otherwise (lm_engine's bound, 1e-3 of a log-probability's
        // size). A wrong row or position moves it by 1e-2 and more.
        assert!(
            (got - lp[*token as usize] as f64).abs() < 1e-3,
            "{got} vs {}",
            lp[*token as usize]
        );
    }

    // Legacy completions logprobs: tokens, their logprobs, the top alternatives.
    let (_, r) = post(
        base,
        "/v1/completions",
        &json!({"prompt": "The river", "max_tokens": 6, "logprobs": 2}),
    )
    .await;
    let lp = &r["choices"][0]["logprobs"];
    assert_eq!(
        lp["tokens"].as_array().unwrap().len(),
        lp["token_logprobs"].as_array().unwrap().len()
    );
    assert_eq!(lp["top_logprobs"][0].as_object().unwrap().len(), 2);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_messages() {
    let (model, tokenizer) = reference();
    let server = start(options("qwen3")).await;
    let base = &server.base;
    let messages =
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]);
    let prompt = chat_prompt(&tokenizer, &messages);
    let expected = greedy_text(&model, &tokenizer, &prompt, 24);
    let body = json!({"model": "test-model", "max_tokens": 24, "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}]});
    let (status, r) = post(base, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["type"], "message");
    assert_eq!(r["role"], "assistant");
    assert_eq!(r["content"][0]["type"], "text");
    assert_eq!(r["content"][0]["text"], expected.as_str());
    assert_eq!(r["usage"]["input_tokens"], prompt.len());
    let reason = r["stop_reason"].as_str().unwrap();
    assert!(reason == "end_turn" || reason == "max_tokens", "{reason}");

    let mut streaming = body.clone();
    streaming["stream"] = json!(true);
    let (status, events) = stream(base, "/v1/messages", &streaming, None).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = events.iter().map(|e| e.event.as_deref().unwrap()).collect();
    assert_eq!(names[..2], ["message_start", "content_block_start"]);
    assert_eq!(
        names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert!(names[2..names.len() - 3]
        .iter()
        .all(|n| *n == "content_block_delta"));
    let mut text = String::new();
    for e in &events {
        let v: Value = serde_json::from_str(&e.data).unwrap();
        assert_eq!(v["type"], e.event.as_deref().unwrap());
        if v["type"] == "content_block_delta" {
            text.push_str(v["delta"]["text"].as_str().unwrap());
        }
        if v["type"] == "message_delta" {
            assert_eq!(v["delta"]["stop_reason"], reason);
            assert_eq!(v["usage"]["output_tokens"], r["usage"]["output_tokens"]);
        }
    }
    assert_eq!(text, expected);
    server.shutdown().await;
}

/// An error's body in OpenAI's shape.
fn openai_error(v: &Value) -> &Value {
    let e = &v["error"];
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    assert!(e["type"].is_string(), "{v}");
    assert!(e.get("param").is_some() && e.get("code").is_some(), "{v}");
    e
}

fn anthropic_error(v: &Value) -> &Value {
    assert_eq!(v["type"], "error", "{v}");
    assert!(
        v["error"]["type"].is_string() && v["error"]["message"].is_string(),
        "{v}"
    );
    &v["error"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_in_each_apis_shape() {
    let mut o = options("qwen3");
    o.max_request_bytes = 4096;
    let server = start(o).await;
    let base = &server.base;
    let client = reqwest::Client::new();
    let raw = |path: &str, body: &'static str| {
        client
            .post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let r = raw("/v1/chat/completions", "{not json").await.unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert!(openai_error(&v)["message"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));

    let msgs = json!([{"role": "user", "content": "hi"}]);
    let cases = [
        (
            json!({"messages": msgs, "max_tokens": "ten"}),
            400,
            Some("max_tokens"),
            None,
        ),
        (json!({"messages": "hi"}), 400, Some("messages"), None),
        (
            json!({"messages": msgs, "temperature": "hot"}),
            400,
            Some("temperature"),
            None,
        ),
        (
            json!({"messages": msgs, "model": "gpt-9"}),
            404,
            Some("model"),
            Some("model_not_found"),
        ),
        (json!({"messages": msgs, "n": 2}), 400, Some("n"), None),
        (
            json!({"messages": msgs, "max_tokens": 100000}),
            400,
            Some("max_tokens"),
            None,
        ),
        (
            json!({"messages": msgs, "temperature": -1}),
            400,
            Some("temperature"),
            None,
        ),
        (
            json!({"messages": msgs, "top_logprobs": 50, "logprobs": true}),
            400,
            Some("top_logprobs"),
            None,
        ),
        (
            json!({"messages": msgs, "logit_bias": {"99999": 1.0}}),
            400,
            Some("logit_bias"),
            None,
        ),
        (
            json!({"messages": msgs, "tool_choice": "required"}),
            400,
            Some("tool_choice"),
            None,
        ),
        (
            json!({"messages": msgs, "response_format": {"type": "yaml"}}),
            400,
            Some("response_format"),
            None,
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}),
            400,
            Some("messages[0].content"),
            None,
        ),
        (
            json!({"messages": [{"role": "user", "content": "word ".repeat(600)}]}),
            400,
            None,
            Some("context_length_exceeded"),
        ),
    ];
    for (body, status, param, code) in cases {
        let (s, v) = post(base, "/v1/chat/completions", &body).await;
        assert_eq!(s, status, "{body} -> {v}");
        let e = openai_error(&v);
        if let Some(p) = param {
            assert_eq!(e["param"], p, "{v}");
        }
        if let Some(c) = code {
            assert_eq!(e["code"], c, "{v}");
        }
    }
    let (s, v) = post(
        base,
        "/v1/completions",
        &json!({"prompt": "hi", "suffix": "x"}),
    )
    .await;
    assert_eq!(s, 400);
    openai_error(&v);
    // Too large a body: 413, still JSON in the API's shape.
    let big = json!({"messages": [{"role": "user", "content": "x".repeat(8000)}]});
    let (s, v) = post(base, "/v1/chat/completions", &big).await;
    assert_eq!(s, 413);
    openai_error(&v);
    let (s, v) = post(base, "/v1/messages", &big).await;
    assert_eq!(s, 413);
    assert_eq!(anthropic_error(&v)["type"], "request_too_large");
    // Anthropic's shape for its endpoint.
    for (body, status) in [
        (json!({"messages": msgs}), 400),
        (
            json!({"max_tokens": 5, "messages": msgs, "model": "claude-9"}),
            404,
        ),
        (
            json!({"max_tokens": 5, "messages": [{"role": "tool", "content": "x"}]}),
            400,
        ),
        (
            json!({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]}),
            400,
        ),
    ] {
        let (s, v) = post(base, "/v1/messages", &body).await;
        assert_eq!(s, status, "{v}");
        anthropic_error(&v);
    }
    let (s, v) = post(base, "/v1/nothing", &json!({})).await;
    assert_eq!(s, 404);
    openai_error(&v);
    let r = client
        .get(format!("{base}/v1/chat/completions"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    openai_error(&r.json().await.unwrap());
    // The server still serves.
    let (s, v) = post(
        base,
        "/v1/chat/completions",
        &json!({"messages": msgs, "max_tokens": 4}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let (_, metrics) = get(base, "/metrics").await;
    common::assert_each_size_traced_once(&metrics, 4);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key() {
    let mut o = options("qwen3");
    o.api_key = Some("sekrit".into());
    let server = start(o).await;
    let base = &server.base;
    let client = reqwest::Client::new();
    let body = json!({"max_tokens": 3, "messages": [{"role": "user", "content": "hi"}]});
    let r = client
        .post(format!("{base}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(
        openai_error(&r.json().await.unwrap())["type"],
        "authentication_error"
    );
    let r = client
        .post(format!("{base}/v1/messages"))
        .header("x-api-key", "wrong!")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(
        anthropic_error(&r.json().await.unwrap())["type"],
        "authentication_error"
    );
    let r = client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth("sekrit")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = client
        .post(format!("{base}/v1/messages"))
        .header("x-api-key", "sekrit")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        client
            .get(format!("{base}/v1/models"))
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    // Liveness needs no key.
    assert_eq!(get(base, "/health").await.0, 200);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_in_flight_streams() {
    let (model, tokenizer) = reference();
    let server = start(options("qwen3")).await;
    let ids = tokenizer.encode("A long story", true).unwrap();
    let expected = greedy_text(&model, &tokenizer, &ids, 64);
    let body = json!({"prompt": "A long story", "max_tokens": 64, "stream": true});
    let mut r = reqwest::Client::new()
        .post(format!("{}/v1/completions", server.base))
        .json(&body)
        .send()
        .await
        .unwrap();
    // The stream has begun; then the server is told to stop, and the stream still ends
    // whole.
    let mut raw = String::from_utf8(r.chunk().await.unwrap().unwrap().to_vec()).unwrap();
    let stopping = tokio::spawn(server.shutdown());
    while let Some(bytes) = r.chunk().await.unwrap() {
        raw.push_str(std::str::from_utf8(&bytes).unwrap());
    }
    stopping.await.unwrap();
    let datas: Vec<&str> = raw
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(*datas.last().unwrap(), "[DONE]");
    let mut text = String::new();
    for d in &datas[..datas.len() - 1] {
        let v: Value = serde_json::from_str(d).unwrap();
        text.push_str(v["choices"][0]["text"].as_str().unwrap());
    }
    assert_eq!(text, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn penalties_and_logit_bias() {
    let (model, tokenizer) = reference();
    let server = start(options("qwen3")).await;
    let base = &server.base;
    let ids = tokenizer.encode("Rivers and rivers", true).unwrap();
    let plain = greedy_text(&model, &tokenizer, &ids, 32);
    // mlx_lm's repetition penalty: equal to generate with the same processor.
    let penalized = |penalty: f64, window: usize, bias: Vec<(u32, f64)>| {
        let o = GenerateOptions {
            max_tokens: 32,
            stop_tokens: tokenizer.eos_token_ids(),
            processors: mlx_lm::LogitsProcessors {
                logit_bias: bias,
                repetition_penalty: Some(penalty),
                repetition_context_size: window,
            },
            ..Default::default()
        };
        generate(&model, &tokenizer, &ids, &o).unwrap()
    };
    let want = penalized(1.6, 10, vec![]);
    assert_ne!(want, plain, "the penalty changes nothing for this prompt");
    let (_, r) = post(
        base,
        "/v1/completions",
        &json!({"prompt": "Rivers and rivers", "max_tokens": 32,
        "repetition_penalty": 1.6, "repetition_context_size": 10}),
    )
    .await;
    assert_eq!(r["choices"][0]["text"], want.as_str());
    // With a logit bias as well (mlx_lm applies the bias first).
    let want = penalized(1.6, 10, vec![(40, 3.0)]);
    let (_, r) = post(
        base,
        "/v1/completions",
        &json!({"prompt": "Rivers and rivers", "max_tokens": 32,
        "repetition_penalty": 1.6, "repetition_context_size": 10, "logit_bias": {"40": 3.0}}),
    )
    .await;
    assert_eq!(r["choices"][0]["text"], want.as_str());
    // OpenAI's presence and frequency penalties reach the engine (tests/lm_engine.rs checks
    // their values against OpenAI's definition): they change the greedy text.
    for field in ["presence_penalty", "frequency_penalty"] {
        let (s, r) = post(
            base,
            "/v1/completions",
            &json!({"prompt": "Rivers and rivers", "max_tokens": 32, field: 2.0}),
        )
        .await;
        assert_eq!(s, 200, "{r}");
        assert_ne!(r["choices"][0]["text"], plain.as_str(), "{field}");
        let (s, r) = post(base, "/v1/completions", &json!({"prompt": "x", field: 2.5})).await;
        assert_eq!(s, 400, "{r}");
        assert_eq!(openai_error(&r)["param"], field);
    }
    // The penalties did not leak into the next request of the same slot.
    let (_, r) = post(
        base,
        "/v1/completions",
        &json!({"prompt": "Rivers and rivers", "max_tokens": 32}),
    )
    .await;
    assert_eq!(r["choices"][0]["text"], plain.as_str());
    let (_, metrics) = get(base, "/metrics").await;
    common::assert_each_size_traced_once(&metrics, 4);
    server.shutdown().await;
}

/// The value of an unlabelled metric.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_frees_its_slot() {
    let mut o = options("qwen3");
    o.decode_concurrency = 1;
    let server = start(o).await;
    let base = &server.base;
    // 480 tokens asked for; the client reads three events and closes the connection.
    let body = json!({"prompt": "Go on", "max_tokens": 480, "stream": true});
    let (_, events) = stream(base, "/v1/completions", &body, Some(3)).await;
    assert_eq!(events.len(), 3);
    // The one slot frees long before 480 tokens (what is buffered between the engine and
    // the socket is generated before the closed connection is noticed). Polled, bounded.
    let mut text = String::new();
    for _ in 0..200 {
        text = get(base, "/metrics").await.1;
        if metric(&text, "mlx_lm_active_slots") == 0.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(metric(&text, "mlx_lm_active_slots"), 0.0, "{text}");
    let generated = metric(&text, "mlx_lm_generated_tokens_total");
    eprintln!("{generated} tokens generated for the client that left");
    assert!(
        generated < 240.0,
        "{generated} tokens generated for a client that left"
    );
    // The slot serves the next request.
    let (s, r) = post(
        base,
        "/v1/completions",
        &json!({"prompt": "Go on", "max_tokens": 4}),
    )
    .await;
    assert_eq!(s, 200, "{r}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_and_template_variables_reach_the_chat_template() {
    let (model, tokenizer) = reference();
    let mut o = options("qwen3");
    // A template that shows what it was given: the first tool's name, a variable from
    // --chat-template-args (overridden per request by chat_template_kwargs), the messages.
    o.chat_template = "{% if tools %}{{ tools[0].function.name }}:{{ tools[0].function.parameters.type }}\n{% endif %}\
        {% if flag %}[{{ flag }}]{% endif %}{% for m in messages %}{{ m.role }}={{ m.content }}\n{% endfor %}"
        .into();
    o.chat_template_args = r#"{"flag": "server"}"#.into();
    let server = start(o).await;
    let base = &server.base;
    let expect = |rendered: &str| {
        let ids = tokenizer.encode(rendered, false).unwrap();
        (ids.len(), greedy_text(&model, &tokenizer, &ids, 12))
    };
    let tool = json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}});
    let messages = json!([{"role": "user", "content": "Hello"}]);

    let (n, text) = expect("get_weather:object\n[server]user=Hello\n");
    let (_, r) = post(
        base,
        "/v1/chat/completions",
        &json!({"messages": messages, "tools": [tool], "max_tokens": 12}),
    )
    .await;
    assert_eq!(r["usage"]["prompt_tokens"], n, "{r}");
    assert_eq!(r["choices"][0]["message"]["content"], text.as_str());

    let (n, text) = expect("[request]user=Hello\n");
    let (_, r) = post(
        base,
        "/v1/chat/completions",
        &json!({"messages": messages, "max_tokens": 12,
        "chat_template_kwargs": {"flag": "request"}}),
    )
    .await;
    assert_eq!(r["usage"]["prompt_tokens"], n, "{r}");
    assert_eq!(r["choices"][0]["message"]["content"], text.as_str());

    // Anthropic tools arrive in the OpenAI function shape; the system prompt comes first.
    let (n, text) = expect("lookup:object\n[server]system=Be brief.\nuser=Hello\n");
    let (_, r) = post(base, "/v1/messages", &json!({"max_tokens": 12, "system": "Be brief.", "messages": messages,
        "tools": [{"name": "lookup", "description": "Looks up", "input_schema": {"type": "object"}}]})).await;
    assert_eq!(r["usage"]["input_tokens"], n, "{r}");
    assert_eq!(r["content"][0]["text"], text.as_str());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sliding_window_model_is_served() {
    // gemma3_text: sliding layers of 8 positions beside global ones. Two requests at once,
    // prompts longer than the window, replies that wrap it: each is `generate`'s text.
    let (model, tokenizer, _) =
        load(common::model_dir("gemma3_text"), LoadOptions::default()).unwrap();
    let server = start(options("gemma3_text")).await;
    let base = &server.base;
    let texts = [
        "Once upon a time there was a river that ran to the sea",
        "The quick brown fox jumps over the lazy dog, twice",
    ];
    let ids: Vec<Vec<u32>> = texts
        .iter()
        .map(|t| tokenizer.encode(t, true).unwrap())
        .collect();
    assert!(
        ids.iter().all(|p| p.len() > 8),
        "prompts longer than the window"
    );
    let bodies: Vec<Value> = ids
        .iter()
        .map(|p| json!({"prompt": p, "max_tokens": 24}))
        .collect();
    let (a, b) = tokio::join!(
        post(base, "/v1/completions", &bodies[0]),
        post(base, "/v1/completions", &bodies[1])
    );
    for (i, (status, r)) in [a, b].into_iter().enumerate() {
        assert_eq!(status, 200, "{r}");
        // Two rows at once: with TF32 (a CUDA GPU) up to a pick closer than its rounding.
        let expected = common::greedy(&model, &tokenizer, &ids[i], 24);
        let text = r["choices"][0]["text"].as_str().unwrap();
        common::assert_reply(text, &expected, &format!("request {i}"));
    }
    server.shutdown().await;
}
