//! Tool calls and structured output over raw HTTP. The test model has random weights, so
//! it never calls a tool on its own: a forced `tool_choice` makes it (the grammar of the
//! model's format, here Hermes/Qwen `<tool_call>` JSON), and what it wrote then goes
//! through the same parsing as any call. Checked: the calls' shape in both APIs, streamed
//! and whole (the same call either way: greedy), arguments valid against the tool's
//! schema, tool results through the chat template (the prompt equals the template's
//! rendering), `response_format` output valid against its schema, and the errors.

mod common;

use common::{options, post, start, stream, Sse, TOOL_TEMPLATE};
use mlx_lm::tool_parsers::infer_tool_parser;
use mlx_lm::{generate, load, ChatOptions, ChatTemplate, GenerateOptions, LoadOptions};
use serde_json::{json, Value};

fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 6},
                "days": {"type": "integer", "minimum": 1, "maximum": 9},
                "unit": {"enum": ["c", "f"]},
            },
            "required": ["city", "days", "unit"],
            "additionalProperties": false,
        },
    }})
}

fn time_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"zone": {"enum": ["utc", "cet"]}},
                       "required": ["zone"], "additionalProperties": false},
    }})
}

fn tool_options() -> mlx_lm_server::ServerOptions {
    let mut o = options("qwen3");
    o.chat_template = TOOL_TEMPLATE.into();
    o
}

fn validate(schema: &Value, value: &Value) {
    let validator = jsonschema::validator_for(schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{value} against {schema}: {errors:?}");
}

/// The tool calls of an OpenAI chat stream, assembled as the official client assembles
/// them (by index: id and name from the first delta, arguments concatenated).
fn stream_calls(events: &[Sse]) -> (Vec<Value>, Option<String>, String) {
    let mut calls: Vec<Value> = Vec::new();
    let mut finish = None;
    let mut content = String::new();
    for e in events {
        if e.data == "[DONE]" {
            continue;
        }
        let v: Value = serde_json::from_str(&e.data).unwrap();
        for c in v["choices"].as_array().unwrap() {
            if let Some(t) = c["delta"]["content"].as_str() {
                content.push_str(t);
            }
            for d in c["delta"]["tool_calls"].as_array().into_iter().flatten() {
                let i = d["index"].as_u64().unwrap() as usize;
                if i == calls.len() {
                    assert!(d["id"].is_string(), "a call's first delta has its id: {d}");
                    assert_eq!(d["type"], "function");
                    calls.push(json!({"id": d["id"], "type": "function",
                        "function": {"name": d["function"]["name"], "arguments": ""}}));
                }
                let args = calls[i]["function"]["arguments"]
                    .as_str()
                    .unwrap()
                    .to_string();
                let more = d["function"]["arguments"].as_str().unwrap_or_default();
                calls[i]["function"]["arguments"] = json!(args + more);
            }
            if let Some(f) = c["finish_reason"].as_str() {
                finish = Some(f.to_string());
            }
        }
    }
    (calls, finish, content)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_openai_tool_calls() {
    let server = start(tool_options()).await;
    let base = &server.base;
    let messages = json!([{"role": "user", "content": "Weather in Oslo?"}]);
    let tools = json!([weather_tool(), time_tool()]);
    let schema = weather_tool()["function"]["parameters"].clone();

    // A named function: exactly that call, its arguments valid against its schema.
    let body = json!({"messages": messages, "tools": tools, "max_tokens": 120,
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}}});
    let (status, r) = post(base, "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{r}");
    let choice = &r["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{r}");
    assert_eq!(choice["message"]["content"], Value::Null, "{r}");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{r}");
    assert_eq!(calls[0]["type"], "function");
    assert!(calls[0]["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    let arguments: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    validate(&schema, &arguments);

    // Streamed: the same call (greedy), in OpenAI's delta shape.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let (status, events) = stream(base, "/v1/chat/completions", &streamed, None).await;
    assert_eq!(status, 200);
    let (s_calls, finish, content) = stream_calls(&events);
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    assert_eq!(content, "");
    assert_eq!(s_calls.len(), 1);
    assert_eq!(s_calls[0]["function"], calls[0]["function"]);

    // "required", one call: either tool, valid against its own schema.
    let body = json!({"messages": messages, "tools": tools, "max_tokens": 120,
        "tool_choice": "required", "parallel_tool_calls": false});
    let (status, r) = post(base, "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{r}");
    let calls = r["choices"][0]["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{r}");
    let name = calls[0]["function"]["name"].as_str().unwrap();
    let tool = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not a tool"));
    let arguments: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    validate(&tool["function"]["parameters"], &arguments);

    // "none": the template gets no tools, and the text is content.
    let (status, r) = post(
        base,
        "/v1/chat/completions",
        &json!({"messages": messages, "tools": tools, "max_tokens": 8, "tool_choice": "none"}),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    assert!(r["choices"][0]["message"]["tool_calls"].is_null(), "{r}");
    assert!(r["choices"][0]["message"]["content"].is_string(), "{r}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_calls_in_the_mistral_and_llama3_formats() {
    // Templates that carry each format's marker (so mlx_lm's inference picks it) but render
    // the conversation as ChatML.
    for (marker, format) in [
        ("[TOOL_CALLS]", "mistral"),
        ("<|python_tag|>", "llama3_json"),
    ] {
        let mut o = options("qwen3");
        o.chat_template = format!(
            "{{% for m in messages %}}<|im_start|>{{{{ m.role }}}}\n{{{{ m.content }}}}<|im_end|>\n\
             {{% endfor %}}{{% if false %}}{marker}{{% endif %}}<|im_start|>assistant\n"
        );
        assert_eq!(
            infer_tool_parser(Some(&o.chat_template), |_| false),
            Some(format),
            "the template with {marker}"
        );
        let server = start(o).await;
        let schema = weather_tool()["function"]["parameters"].clone();
        let body = json!({"messages": [{"role": "user", "content": "Weather?"}],
            "tools": [weather_tool(), time_tool()], "max_tokens": 120,
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}});
        let (status, r) = post(&server.base, "/v1/chat/completions", &body).await;
        assert_eq!(status, 200, "{r}");
        assert_eq!(
            r["choices"][0]["finish_reason"], "tool_calls",
            "{format}: {r}"
        );
        let calls = r["choices"][0]["message"]["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "{format}: {r}");
        assert_eq!(calls[0]["function"]["name"], "get_weather");
        let arguments: Value =
            serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
        validate(&schema, &arguments);
        let mut streamed = body.clone();
        streamed["stream"] = json!(true);
        let (_, events) = stream(&server.base, "/v1/chat/completions", &streamed, None).await;
        let (s_calls, finish, _) = stream_calls(&events);
        assert_eq!(finish.as_deref(), Some("tool_calls"), "{format}");
        assert_eq!(s_calls[0]["function"], calls[0]["function"], "{format}");
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_anthropic_tool_use() {
    let server = start(tool_options()).await;
    let base = &server.base;
    let f = weather_tool()["function"].clone();
    let tools = json!([{"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}]);
    let body = json!({"max_tokens": 120, "messages": [{"role": "user", "content": "Weather?"}],
        "tools": tools, "tool_choice": {"type": "tool", "name": "get_weather"}});
    let (status, r) = post(base, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["stop_reason"], "tool_use", "{r}");
    let content = r["content"].as_array().unwrap();
    assert_eq!(content.len(), 1, "{r}");
    let block = &content[0];
    assert_eq!(block["type"], "tool_use");
    assert_eq!(block["name"], "get_weather");
    assert!(block["id"].as_str().unwrap().starts_with("toolu_"));
    validate(&f["parameters"], &block["input"]);

    // Streamed: a tool_use block whose input_json_delta pieces join into the same input.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let (status, events) = stream(base, "/v1/messages", &streamed, None).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = events.iter().map(|e| e.event.as_deref().unwrap()).collect();
    assert_eq!(names[0], "message_start");
    assert_eq!(names[1], "content_block_start");
    assert_eq!(*names.last().unwrap(), "message_stop");
    let start_block: Value = serde_json::from_str(&events[1].data).unwrap();
    assert_eq!(start_block["content_block"]["type"], "tool_use");
    assert_eq!(start_block["content_block"]["name"], "get_weather");
    assert_eq!(start_block["content_block"]["input"], json!({}));
    let mut partial = String::new();
    let mut stop_reason = None;
    for e in &events {
        let v: Value = serde_json::from_str(&e.data).unwrap();
        if v["type"] == "content_block_delta" {
            assert_eq!(v["delta"]["type"], "input_json_delta", "{v}");
            partial.push_str(v["delta"]["partial_json"].as_str().unwrap());
        }
        if v["type"] == "message_delta" {
            stop_reason = v["delta"]["stop_reason"].as_str().map(str::to_string);
        }
    }
    assert_eq!(
        serde_json::from_str::<Value>(&partial).unwrap(),
        block["input"]
    );
    assert_eq!(stop_reason.as_deref(), Some("tool_use"));
    assert!(names.contains(&"content_block_stop"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_results_go_through_the_chat_template() {
    let (model, mut tokenizer, _) =
        load(common::model_dir("qwen3"), LoadOptions::default()).unwrap();
    tokenizer.set_chat_template(Some(ChatTemplate::new(TOOL_TEMPLATE, "test")));
    let server = start(tool_options()).await;
    let base = &server.base;
    let tools = json!([weather_tool()]);
    // The conversation as the template gets it: a call's arguments as an object.
    let rendered = json!([
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Oslo", "days": 1, "unit": "c"}}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]);
    let chat = ChatOptions {
        add_generation_prompt: true,
        tools: Some(tools.as_array().unwrap().clone()),
        ..Default::default()
    };
    let prompt = tokenizer
        .encode(
            &tokenizer.apply_chat_template(&rendered, &chat).unwrap(),
            false,
        )
        .unwrap();
    let expected = generate(
        &model,
        &tokenizer,
        &prompt,
        &GenerateOptions {
            max_tokens: 16,
            stop_tokens: tokenizer.eos_token_ids(),
            ..Default::default()
        },
    )
    .unwrap();

    // OpenAI: arguments as a JSON string, content null, a `tool` message.
    let messages = json!([
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\", \"days\": 1, \"unit\": \"c\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]);
    let (status, r) = post(
        base,
        "/v1/chat/completions",
        &json!({"messages": messages, "tools": tools, "max_tokens": 16}),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["usage"]["prompt_tokens"], prompt.len(), "{r}");
    assert_eq!(r["choices"][0]["message"]["content"], expected.as_str());

    // Anthropic: tool_use and tool_result blocks.
    let f = weather_tool()["function"].clone();
    let (status, r) = post(base, "/v1/messages", &json!({"max_tokens": 16,
        "tools": [{"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}],
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "get_weather",
                "input": {"city": "Oslo", "days": 1, "unit": "c"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                "content": [{"type": "text", "text": "sunny"}]}]},
        ]})).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["usage"]["input_tokens"], prompt.len(), "{r}");
    assert_eq!(r["content"][0]["text"], expected.as_str());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_format_json_schema_and_object() {
    let server = start(options("qwen3")).await;
    let base = &server.base;
    let messages = json!([{"role": "user", "content": "A person as JSON."}]);
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 8},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
        },
        "required": ["name", "age", "tags"],
        "additionalProperties": false,
    });
    let body = json!({"messages": messages, "max_tokens": 120, "response_format":
        {"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": true}}});
    let (status, r) = post(base, "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["choices"][0]["finish_reason"], "stop", "{r}");
    let text = r["choices"][0]["message"]["content"].as_str().unwrap();
    let value: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    validate(&schema, &value);

    // Streamed: the same text (greedy).
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let (_, events) = stream(base, "/v1/chat/completions", &streamed, None).await;
    let (_, finish, content) = stream_calls(&events);
    assert_eq!(content, text);
    assert_eq!(finish.as_deref(), Some("stop"));

    let (status, r) = post(
        base,
        "/v1/chat/completions",
        &json!({"messages": messages, "max_tokens": 120, "response_format": {"type": "json_object"}}),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    let text = r["choices"][0]["message"]["content"].as_str().unwrap();
    if r["choices"][0]["finish_reason"] == "stop" {
        let value: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert!(value.is_object(), "{text}");
    } else {
        // Cut off by max_tokens: at least an object's beginning.
        assert!(text.trim_start().starts_with('{'), "{text}");
    }
    server.shutdown().await;
}

fn openai_error(v: &Value) -> &Value {
    let e = &v["error"];
    assert!(e["message"].is_string(), "{v}");
    e
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_and_format_errors() {
    let plain = start(options("qwen3")).await;
    let tooled = start(tool_options()).await;
    let mut o = options("qwen3");
    // A template with Liquid/LFM2's markers: mlx_lm's `pythonic` format.
    o.chat_template =
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\
        {% if tools %}<|tool_call_start|>{% endif %}<|im_start|>assistant\n"
            .into();
    let pythonic = start(o).await;
    let msgs = json!([{"role": "user", "content": "hi"}]);
    let tools = json!([weather_tool()]);
    let named = json!({"type": "function", "function": {"name": "get_weather"}});
    let cases = [
        // No format to constrain.
        (
            &plain.base,
            json!({"messages": msgs, "tools": tools, "tool_choice": "required"}),
            "tool_choice",
            "no tool-call format",
        ),
        (
            &pythonic.base,
            json!({"messages": msgs, "tools": tools, "tool_choice": named}),
            "tool_choice",
            "\"pythonic\"",
        ),
        (
            &tooled.base,
            json!({"messages": msgs, "tools": tools, "tool_choice": {"type": "function", "function": {"name": "nope"}}}),
            "tool_choice",
            "not among the tools",
        ),
        (
            &tooled.base,
            json!({"messages": msgs, "tool_choice": "required"}),
            "tool_choice",
            "no tools",
        ),
        (
            &tooled.base,
            json!({"messages": msgs, "tools": tools, "tool_choice": "sometimes"}),
            "tool_choice",
            "sometimes",
        ),
        (
            &tooled.base,
            json!({"messages": msgs, "tools": [{"type": "function", "function": {"description": "x"}}]}),
            "tools[0].function",
            "name",
        ),
        (
            &tooled.base,
            json!({"messages": msgs, "tools": tools, "tool_choice": named,
                   "response_format": {"type": "json_object"}}),
            "response_format",
            "send one",
        ),
        (
            &plain.base,
            json!({"messages": msgs, "response_format": {"type": "json_schema",
                   "json_schema": {"name": "x", "strict": true,
                                   "schema": {"type": "object", "properties": {"a": {"type": "nonsense"}}}}}}),
            "response_format",
            "nonsense",
        ),
        (
            &plain.base,
            json!({"messages": msgs, "response_format": {"type": "json_schema"}}),
            "response_format",
            "json_schema object",
        ),
        (
            &tooled.base,
            json!({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"type": "function",
                   "function": {"name": "get_weather", "arguments": "{not json"}}]}]}),
            "messages[0].tool_calls[0].function.arguments",
            "not JSON",
        ),
    ];
    for (base, body, param, says) in cases {
        let (s, v) = post(base, "/v1/chat/completions", &body).await;
        assert_eq!(s, 400, "{body} -> {v}");
        let e = openai_error(&v);
        assert_eq!(e["param"], param, "{v}");
        assert!(e["message"].as_str().unwrap().contains(says), "{v}");
    }
    // Anthropic's shape.
    let a_tools = json!([{"name": "get_weather", "input_schema": {"type": "object"}}]);
    for (base, body, says) in [
        (
            &tooled.base,
            json!({"max_tokens": 5, "messages": msgs, "tool_choice": {"type": "any"}}),
            "no tools",
        ),
        (
            &tooled.base,
            json!({"max_tokens": 5, "messages": msgs, "tools": a_tools,
                   "tool_choice": {"type": "tool", "name": "other"}}),
            "not among the tools",
        ),
        (
            &plain.base,
            json!({"max_tokens": 5, "messages": msgs, "tools": a_tools, "tool_choice": {"type": "any"}}),
            "no tool-call format",
        ),
        (
            &tooled.base,
            json!({"max_tokens": 5, "messages": msgs, "tools": a_tools, "tool_choice": {"type": "maybe"}}),
            "maybe",
        ),
    ] {
        let (s, v) = post(base, "/v1/messages", &body).await;
        assert_eq!(s, 400, "{body} -> {v}");
        assert_eq!(v["type"], "error", "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(says),
            "{v}"
        );
    }
    // Still serving, the step traced once.
    let (s, v) = post(
        &tooled.base,
        "/v1/chat/completions",
        &json!({"messages": msgs, "max_tokens": 4}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let (_, metrics) = common::get(&tooled.base, "/metrics").await;
    common::assert_each_size_traced_once(&metrics, 4);
    for s in [plain, tooled, pythonic] {
        s.shutdown().await;
    }
}
