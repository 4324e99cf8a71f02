//! Anthropic's Messages API, `POST /v1/messages`.

use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use mlx_lm::tool_parsers::ToolEvent;
use mlx_lm::ChatOptions;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::constraint;
use crate::error::{ApiError, Failure, Flavor};
use crate::generation::{self, Finish, GenerationRequest};
use crate::params::{parse_body, Sampling};
use crate::tools::{self, Splitter, Tools};
use crate::AppState;

/// A message's content: a string or content blocks.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Blocks(Vec<Map<String, Value>>),
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: Content,
}

/// The fields of a Messages request this server reads.
#[derive(Debug, Clone, Deserialize)]
pub struct MessagesRequest {
    pub model: Option<String>,
    pub max_tokens: u64,
    pub messages: Vec<Message>,
    pub system: Option<Content>,
    pub stop_sequences: Option<Vec<String>>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<i64>,
    pub stream: Option<bool>,
    pub tools: Option<Vec<Map<String, Value>>>,
    pub tool_choice: Option<Value>,
}

fn fail(e: ApiError) -> Failure {
    Failure(Flavor::Anthropic, e)
}

/// Text blocks joined; `tool_result` blocks only where `results` collects them (a user
/// message's), `tool_use` blocks only where `calls` does (an assistant's); other block
/// types are refused.
fn read_content(
    content: &Content,
    param: &str,
    mut results: Option<&mut Vec<Value>>,
    mut calls: Option<&mut Vec<Value>>,
) -> Result<String, ApiError> {
    let blocks = match content {
        Content::Text(t) => return Ok(t.clone()),
        Content::Blocks(blocks) => blocks,
    };
    let mut text = String::new();
    for (j, b) in blocks.iter().enumerate() {
        let param = format!("{param}[{j}]");
        match b.get("type").and_then(Value::as_str) {
            Some("text") => match b.get("text").and_then(Value::as_str) {
                Some(t) => text.push_str(t),
                None => {
                    return Err(ApiError::invalid(
                        &param,
                        "a text block without a string `text`",
                    ))
                }
            },
            Some("tool_result") if results.is_some() => {
                let id = b
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        ApiError::invalid(&param, "a tool_result block without `tool_use_id`")
                    })?;
                let output = match b.get("content") {
                    None | Some(Value::Null) => String::new(),
                    Some(c) => {
                        let c: Content = serde_json::from_value(c.clone()).map_err(|_| {
                            ApiError::invalid(
                                &param,
                                "a tool_result's content is a string or text blocks",
                            )
                        })?;
                        read_content(&c, &format!("{param}.content"), None, None)?
                    }
                };
                if let Some(r) = results.as_deref_mut() {
                    r.push(json!({"role": "tool", "tool_call_id": id, "content": output}));
                }
            }
            Some("tool_use") if calls.is_some() => {
                let (Some(id), Some(name)) = (
                    b.get("id").and_then(Value::as_str),
                    b.get("name").and_then(Value::as_str),
                ) else {
                    return Err(ApiError::invalid(
                        &param,
                        "a tool_use block without a string `id` and `name`",
                    ));
                };
                let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
                if let Some(c) = calls.as_deref_mut() {
                    c.push(json!({"id": id, "type": "function",
                                  "function": {"name": name, "arguments": input}}));
                }
            }
            kind => {
                return Err(ApiError::invalid(
                    &param,
                    format!("content blocks of type {kind:?} are not supported here"),
                ))
            }
        }
    }
    Ok(text)
}

/// The conversation in the shape chat templates take: a user's `tool_result` blocks are
/// `tool` messages (before the rest of that turn), an assistant's `tool_use` blocks its
/// `tool_calls`.
fn conversation(req: &MessagesRequest) -> Result<Vec<Value>, ApiError> {
    let mut messages = Vec::new();
    if let Some(system) = &req.system {
        messages.push(
            json!({"role": "system", "content": read_content(system, "system", None, None)?}),
        );
    }
    for (i, m) in req.messages.iter().enumerate() {
        let param = format!("messages[{i}].content");
        match m.role.as_str() {
            "user" => {
                let mut results = Vec::new();
                let text = read_content(&m.content, &param, Some(&mut results), None)?;
                let only_results = !results.is_empty() && text.is_empty();
                messages.extend(results);
                if !only_results {
                    messages.push(json!({"role": "user", "content": text}));
                }
            }
            "assistant" => {
                let mut calls = Vec::new();
                let text = read_content(&m.content, &param, None, Some(&mut calls))?;
                let mut message = json!({"role": "assistant", "content": text});
                if !calls.is_empty() {
                    message["tool_calls"] = Value::Array(calls);
                }
                messages.push(message);
            }
            role => {
                return Err(ApiError::invalid(
                    &format!("messages[{i}].role"),
                    format!("role must be \"user\" or \"assistant\", got {role:?}"),
                ))
            }
        }
    }
    Ok(messages)
}

pub async fn messages(State(state): State<AppState>, body: Bytes) -> Result<Response, Failure> {
    let req: MessagesRequest = parse_body(&body).map_err(fail)?;
    state.check_model(req.model.as_deref()).map_err(fail)?;
    if req.messages.is_empty() {
        return Err(fail(ApiError::invalid(
            "messages",
            "messages must not be empty",
        )));
    }
    let tools =
        Tools::from_anthropic(req.tools.as_deref(), req.tool_choice.as_ref()).map_err(fail)?;
    // Anthropic has no response_format: a forced tool call is its structured output.
    let constraint = constraint::for_output(&state, tools.as_ref(), None).map_err(fail)?;
    let messages = conversation(&req).map_err(fail)?;
    // A final assistant message is a prefill the reply continues.
    let continue_final = req.messages.last().is_some_and(|m| m.role == "assistant");
    let chat = ChatOptions {
        add_generation_prompt: !continue_final,
        continue_final_message: continue_final,
        tools: tools.as_ref().and_then(Tools::for_template),
        extra: state.chat_template_args.clone(),
        ..Default::default()
    };
    let prompt = state.render_chat(&messages, &chat).map_err(fail)?;
    let sampling = Sampling {
        max_tokens: Some(req.max_tokens),
        temperature: req.temperature,
        top_p: req.top_p,
        top_k: req.top_k,
        ..Default::default()
    };
    let mut options = sampling.to_options(&state).map_err(fail)?;
    options.constraint = constraint;
    let request = GenerationRequest {
        options,
        prompt,
        stop_strings: req.stop_sequences.clone().unwrap_or_default(),
        top_logprobs: 0,
        logprobs: false,
    };
    let input_tokens = request.prompt.len();
    let mut rx = generation::start(&state, request).await.map_err(fail)?;
    let id = format!("msg_{}", crate::next_id());
    let model = state.model_id.clone();
    let mut splitter = Splitter::new(state.tool_format, tools.as_ref());
    if !req.stream.unwrap_or(false) {
        let done = generation::collect(rx).await.map_err(fail)?;
        let mut events = splitter.push(&done.text);
        events.extend(splitter.finish(done.finish == Some(Finish::Length)));
        let mut content: Vec<Value> = Vec::new();
        for e in events {
            match e {
                ToolEvent::Content(t) | ToolEvent::Reasoning(t) => match content.last_mut() {
                    Some(Value::Object(b)) if b["type"] == "text" => {
                        let joined = format!("{}{t}", b["text"].as_str().unwrap_or_default());
                        b.insert("text".into(), Value::String(joined));
                    }
                    _ => content.push(json!({"type": "text", "text": t})),
                },
                ToolEvent::ToolCall(call) => content.push(tools::anthropic_block(&call)),
                ToolEvent::InvalidToolCall { text, error } => tools::log_invalid(&text, &error),
            }
        }
        if content.is_empty() {
            content.push(json!({"type": "text", "text": ""}));
        }
        let (reason, sequence) = stop_reason(done.finish.as_ref(), splitter.made_tool_call());
        return Ok(Json(json!({
            "id": id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": reason,
            "stop_sequence": sequence,
            "usage": {"input_tokens": input_tokens, "output_tokens": done.completion_tokens},
        }))
        .into_response());
    }
    let (tx, events) = mpsc::channel::<Result<Event, Infallible>>(64);
    tokio::spawn(async move {
        let event = |name: &str, v: Value| Ok(Event::default().event(name).data(v.to_string()));
        let start = event(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input_tokens, "output_tokens": 0},
            }}),
        );
        if tx.send(start).await.is_err() {
            return;
        }
        // Blocks open as their kind of output arrives: a text block at the first text,
        // a tool_use block per call (its input as one input_json_delta).
        let mut blocks = Blocks::default();
        while let Some(chunk) = rx.recv().await {
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) => {
                    let _ = tx
                        .send(event("error", e.stream_body(Flavor::Anthropic)))
                        .await;
                    return;
                }
            };
            let mut pieces = splitter.push(&chunk.text);
            if let Some(f) = &chunk.finish {
                pieces.extend(splitter.finish(*f == Finish::Length));
            }
            let mut out = Vec::new();
            for piece in pieces {
                match piece {
                    ToolEvent::Content(t) | ToolEvent::Reasoning(t) => {
                        if t.is_empty() {
                            continue;
                        }
                        blocks.open_text(&mut out);
                        out.push((
                            "content_block_delta",
                            json!({"type": "content_block_delta",
                            "index": blocks.index, "delta": {"type": "text_delta", "text": t}}),
                        ));
                    }
                    ToolEvent::ToolCall(call) => {
                        let mut block = tools::anthropic_block(&call);
                        let input = std::mem::replace(&mut block["input"], json!({}));
                        blocks.open(&mut out, block);
                        out.push(("content_block_delta", json!({"type": "content_block_delta",
                            "index": blocks.index,
                            "delta": {"type": "input_json_delta", "partial_json": input.to_string()}})));
                        blocks.close(&mut out);
                    }
                    ToolEvent::InvalidToolCall { text, error } => tools::log_invalid(&text, &error),
                }
            }
            if let Some(f) = &chunk.finish {
                if blocks.next == 0 {
                    blocks.open_text(&mut out);
                }
                blocks.close(&mut out);
                let (reason, sequence) = stop_reason(Some(f), splitter.made_tool_call());
                out.push((
                    "message_delta",
                    json!({"type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": sequence},
                    "usage": {"output_tokens": chunk.completion_tokens}}),
                ));
                out.push(("message_stop", json!({"type": "message_stop"})));
            }
            for (name, v) in out {
                if tx.send(event(name, v)).await.is_err() {
                    return;
                }
            }
            if chunk.finish.is_some() {
                return;
            }
        }
    });
    Ok((StatusCode::OK, Sse::new(ReceiverStream::new(events))).into_response())
}

/// The content blocks of a streamed message: which is open, and the next index.
#[derive(Debug, Default)]
struct Blocks {
    /// The open block's index.
    index: usize,
    open_kind: Option<&'static str>,
    next: usize,
}

type Out = Vec<(&'static str, Value)>;

impl Blocks {
    fn open(&mut self, out: &mut Out, block: Value) {
        self.close(out);
        self.index = self.next;
        self.next += 1;
        self.open_kind = Some(if block["type"] == "text" {
            "text"
        } else {
            "tool_use"
        });
        out.push((
            "content_block_start",
            json!({"type": "content_block_start",
            "index": self.index, "content_block": block}),
        ));
    }

    fn open_text(&mut self, out: &mut Out) {
        if self.open_kind != Some("text") {
            self.open(out, json!({"type": "text", "text": ""}));
        }
    }

    fn close(&mut self, out: &mut Out) {
        if self.open_kind.take().is_some() {
            out.push((
                "content_block_stop",
                json!({"type": "content_block_stop", "index": self.index}),
            ));
        }
    }
}

/// Anthropic's stop reason: `tool_use` when calls were made and the output was not cut off.
fn stop_reason(finish: Option<&Finish>, made_tool_call: bool) -> (&'static str, Option<String>) {
    match finish {
        Some(Finish::Length) => ("max_tokens", None),
        _ if made_tool_call => ("tool_use", None),
        Some(Finish::StopString(s)) => ("stop_sequence", Some(s.clone())),
        Some(Finish::StopToken) | None => ("end_turn", None),
    }
}
