//! Anthropic's Messages API, `POST /v1/messages`.

use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use mlx_lm::ChatOptions;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::error::{ApiError, Failure, Flavor};
use crate::generation::{self, Finish, GenerationRequest};
use crate::params::{parse_body, Sampling};
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

/// Text blocks joined; other block types need modules this server does not have yet.
fn text_of(content: &Content, param: &str) -> Result<String, ApiError> {
    match content {
        Content::Text(t) => Ok(t.clone()),
        Content::Blocks(blocks) => {
            let mut text = String::new();
            for b in blocks {
                match (
                    b.get("type").and_then(Value::as_str),
                    b.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(t)) => text.push_str(t),
                    (kind, _) => {
                        return Err(ApiError::invalid(
                            param,
                            format!(
                                "content blocks of type {kind:?} are not supported (text only)"
                            ),
                        ))
                    }
                }
            }
            Ok(text)
        }
    }
}

pub async fn messages(State(state): State<AppState>, body: Bytes) -> Response {
    match run(state, body).await {
        Ok(r) => r,
        Err(f) => f.into_response(),
    }
}

async fn run(state: AppState, body: Bytes) -> Result<Response, Failure> {
    let req: MessagesRequest = parse_body(&body).map_err(fail)?;
    state.check_model(req.model.as_deref()).map_err(fail)?;
    if let Some(choice) = &req.tool_choice {
        if !matches!(
            choice.get("type").and_then(Value::as_str),
            Some("auto") | Some("none")
        ) {
            return Err(fail(ApiError::invalid(
                "tool_choice",
                "tool_choice other than auto or none needs constrained decoding, which this \
                 server does not do yet",
            )));
        }
    }
    if req.messages.is_empty() {
        return Err(fail(ApiError::invalid(
            "messages",
            "messages must not be empty",
        )));
    }
    let mut messages = Vec::new();
    if let Some(system) = &req.system {
        messages
            .push(json!({"role": "system", "content": text_of(system, "system").map_err(fail)?}));
    }
    for (i, m) in req.messages.iter().enumerate() {
        if m.role != "user" && m.role != "assistant" {
            return Err(fail(ApiError::invalid(
                &format!("messages[{i}].role"),
                format!("role must be \"user\" or \"assistant\", got {:?}", m.role),
            )));
        }
        let text = text_of(&m.content, &format!("messages[{i}].content")).map_err(fail)?;
        messages.push(json!({"role": m.role, "content": text}));
    }
    // Anthropic's tool shape to the OpenAI function shape chat templates expect.
    let tools = req.tools.as_ref().filter(|t| !t.is_empty()).map(|tools| {
        tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.get("name"),
                    "description": t.get("description"),
                    "parameters": t.get("input_schema"),
                }})
            })
            .collect::<Vec<_>>()
    });
    // A final assistant message is a prefill the reply continues.
    let continue_final = req.messages.last().is_some_and(|m| m.role == "assistant");
    let chat = ChatOptions {
        add_generation_prompt: !continue_final,
        continue_final_message: continue_final,
        tools,
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
    let request = GenerationRequest {
        options: sampling.to_options(&state).map_err(fail)?,
        prompt,
        stop_strings: req.stop_sequences.clone().unwrap_or_default(),
        top_logprobs: 0,
        logprobs: false,
    };
    let input_tokens = request.prompt.len();
    let mut rx = generation::start(&state, request).await.map_err(fail)?;
    let id = format!("msg_{}", crate::next_id());
    let model = state.model_id.clone();
    if !req.stream.unwrap_or(false) {
        let done = generation::collect(rx).await.map_err(fail)?;
        let (reason, sequence) = stop_reason(done.finish.as_ref());
        return Ok(Json(json!({
            "id": id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": done.text}],
            "stop_reason": reason,
            "stop_sequence": sequence,
            "usage": {"input_tokens": input_tokens, "output_tokens": done.completion_tokens},
        }))
        .into_response());
    }
    let (tx, events) = mpsc::channel::<Result<Event, Infallible>>(64);
    tokio::spawn(async move {
        let event = |name: &str, v: Value| Ok(Event::default().event(name).data(v.to_string()));
        let start = [
            event(
                "message_start",
                json!({"type": "message_start", "message": {
                    "id": id, "type": "message", "role": "assistant", "model": model,
                    "content": [], "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": input_tokens, "output_tokens": 0},
                }}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ),
        ];
        for e in start {
            if tx.send(e).await.is_err() {
                return;
            }
        }
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
            if !chunk.text.is_empty() {
                let delta = event(
                    "content_block_delta",
                    json!({"type": "content_block_delta",
                    "index": 0, "delta": {"type": "text_delta", "text": chunk.text}}),
                );
                if tx.send(delta).await.is_err() {
                    return;
                }
            }
            if let Some(f) = &chunk.finish {
                let (reason, sequence) = stop_reason(Some(f));
                let end = [
                    event(
                        "content_block_stop",
                        json!({"type": "content_block_stop", "index": 0}),
                    ),
                    event(
                        "message_delta",
                        json!({"type": "message_delta",
                        "delta": {"stop_reason": reason, "stop_sequence": sequence},
                        "usage": {"output_tokens": chunk.completion_tokens}}),
                    ),
                    event("message_stop", json!({"type": "message_stop"})),
                ];
                for e in end {
                    if tx.send(e).await.is_err() {
                        return;
                    }
                }
                return;
            }
        }
    });
    Ok((StatusCode::OK, Sse::new(ReceiverStream::new(events))).into_response())
}

fn stop_reason(finish: Option<&Finish>) -> (&'static str, Option<String>) {
    match finish {
        Some(Finish::Length) => ("max_tokens", None),
        Some(Finish::StopString(s)) => ("stop_sequence", Some(s.clone())),
        Some(Finish::StopToken) | None => ("end_turn", None),
    }
}
