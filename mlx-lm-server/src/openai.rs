//! OpenAI's `POST /v1/chat/completions` and `POST /v1/completions`.

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
use crate::generation::{self, Chunk, Finish, GenerationRequest, TokenLogprob};
use crate::params::{parse_body, Sampling, StopField};
use crate::tools::{self, Splitter, Tools};
use crate::{unix_time, AppState};

#[derive(Debug, Clone, Default, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

/// Declares an OpenAI request with the fields both endpoints read (the model, `n`,
/// streaming, stop) once. Plain fields rather than a flattened struct: a flattened field's
/// type error would lose its name in the 400. The sampling fields are read into a
/// [`Sampling`] from the same body.
macro_rules! openai_request {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident: $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Deserialize)]
        pub struct $name {
            pub model: Option<String>,
            pub n: Option<u64>,
            pub stream: Option<bool>,
            pub stream_options: Option<StreamOptions>,
            pub stop: Option<StopField>,
            $($(#[$fmeta])* pub $field: $ty,)*
        }
    };
}

openai_request! {
    /// The fields of a chat completion request this server reads; others are ignored, as
    /// OpenAI's clients send fields a given server may not know.
    pub struct ChatRequest {
        pub messages: Vec<Map<String, Value>>,
        pub max_completion_tokens: Option<u64>,
        pub logprobs: Option<bool>,
        pub top_logprobs: Option<u64>,
        pub tools: Option<Vec<Value>>,
        pub tool_choice: Option<Value>,
        pub parallel_tool_calls: Option<bool>,
        pub response_format: Option<Value>,
        pub chat_template_kwargs: Option<Map<String, Value>>,
    }
}

openai_request! {
    /// A legacy completion request.
    pub struct CompletionRequest {
        pub prompt: PromptField,
        /// How many alternatives to report per token (the legacy API's integer `logprobs`).
        pub logprobs: Option<u64>,
        pub echo: Option<bool>,
        pub suffix: Option<String>,
    }
}

/// The legacy API's `prompt`: text, or token ids.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum PromptField {
    Text(String),
    Tokens(Vec<u32>),
    /// A list of one prompt (more are a 400: this server answers one prompt per request).
    Texts(Vec<String>),
}

fn fail(e: ApiError) -> Failure {
    Failure(Flavor::OpenAi, e)
}

/// `n` other than 1 and the features another module will bring are refused clearly.
fn check_common(n: Option<u64>) -> Result<(), ApiError> {
    match n {
        None | Some(1) => Ok(()),
        Some(n) => Err(ApiError::invalid(
            "n",
            format!("n = {n}: this server returns one choice per request; send {n} requests"),
        )),
    }
}

/// The top-logprob count a request may ask for (OpenAI's bound).
const MAX_TOP_LOGPROBS: u64 = 20;

pub async fn chat_completions(
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Response, Failure> {
    let req: ChatRequest = parse_body(&body).map_err(fail)?;
    let mut sampling: Sampling = parse_body(&body).map_err(fail)?;
    state.check_model(req.model.as_deref()).map_err(fail)?;
    check_common(req.n).map_err(fail)?;
    let tools = Tools::from_openai(
        req.tools.as_deref(),
        req.tool_choice.as_ref(),
        req.parallel_tool_calls,
    )
    .map_err(fail)?;
    let constraint = constraint::for_output(&state, tools.as_ref(), req.response_format.as_ref())
        .map_err(fail)?;
    let top_logprobs = req.top_logprobs.unwrap_or(0);
    if top_logprobs > MAX_TOP_LOGPROBS {
        return Err(fail(ApiError::invalid(
            "top_logprobs",
            format!("top_logprobs must be at most {MAX_TOP_LOGPROBS}"),
        )));
    }
    let logprobs = req.logprobs.unwrap_or(false);
    if top_logprobs > 0 && !logprobs {
        return Err(fail(ApiError::invalid(
            "top_logprobs",
            "top_logprobs needs logprobs set to true",
        )));
    }
    let messages = normalize_messages(&req.messages).map_err(fail)?;
    let mut extra = state.chat_template_args.clone();
    extra.extend(req.chat_template_kwargs.clone().unwrap_or_default());
    let chat = ChatOptions {
        add_generation_prompt: true,
        tools: tools.as_ref().and_then(Tools::for_template),
        extra,
        ..Default::default()
    };
    let prompt = state.render_chat(&messages, &chat).map_err(fail)?;
    sampling.max_tokens = req.max_completion_tokens.or(sampling.max_tokens);
    let mut options = sampling.to_options(&state).map_err(fail)?;
    options.constraint = constraint;
    let request = GenerationRequest {
        options,
        prompt,
        stop_strings: req
            .stop
            .clone()
            .map(StopField::into_vec)
            .unwrap_or_default(),
        top_logprobs: top_logprobs as usize,
        logprobs,
    };
    let prompt_tokens = request.prompt.len();
    let rx = generation::start(&state, request).await.map_err(fail)?;
    let id = format!("chatcmpl-{}", crate::next_id());
    let model = state.model_id.clone();
    let created = unix_time();
    if req.stream.unwrap_or(false) {
        let include_usage = req.stream_options.map(|o| o.include_usage).unwrap_or(false);
        let tokenizer = state.tokenizer.clone();
        let head = json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model});
        let first = chunk_with(
            &head,
            json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}]),
        );
        let mut splitter = Splitter::new(state.tool_format, tools.as_ref());
        let mut calls = 0usize;
        return Ok(stream(rx, first, move |c: &Chunk| {
            let mut events = splitter.push(&c.text);
            if let Some(f) = &c.finish {
                events.extend(splitter.finish(*f == Finish::Length));
            }
            let mut content = String::new();
            let mut deltas = Vec::new();
            for e in events {
                match e {
                    ToolEvent::Content(t) | ToolEvent::Reasoning(t) => content.push_str(&t),
                    ToolEvent::ToolCall(call) => {
                        // As OpenAI streams a call: its id and name with empty arguments
                        // first, then the arguments (here in one piece).
                        let mut v = tools::openai_call(&call);
                        let arguments =
                            std::mem::replace(&mut v["function"]["arguments"], json!(""));
                        v["index"] = json!(calls);
                        deltas.push(json!({"tool_calls": [v]}));
                        deltas.push(json!({"tool_calls": [{"index": calls, "function": {"arguments": arguments}}]}));
                        calls += 1;
                    }
                    ToolEvent::InvalidToolCall { text, error } => tools::log_invalid(&text, &error),
                }
            }
            let mut out = Vec::new();
            if !content.is_empty() || !c.logprobs.is_empty() {
                let logprobs = logprobs.then(|| chat_logprobs(&tokenizer, &c.logprobs));
                out.push(chunk_with(&head, json!([{"index": 0, "delta": {"content": content}, "logprobs": logprobs, "finish_reason": null}])));
            }
            for d in deltas {
                out.push(chunk_with(
                    &head,
                    json!([{"index": 0, "delta": d, "logprobs": null, "finish_reason": null}]),
                ));
            }
            if let Some(f) = &c.finish {
                let reason = chat_finish_name(f, splitter.made_tool_call());
                out.push(chunk_with(
                    &head,
                    json!([{"index": 0, "delta": {}, "logprobs": null, "finish_reason": reason}]),
                ));
                if include_usage {
                    let mut u = chunk_with(&head, json!([]));
                    u["usage"] = usage(prompt_tokens, c.completion_tokens, c.cached_tokens);
                    out.push(u);
                }
            }
            out
        }));
    }
    let done = generation::collect(rx).await.map_err(fail)?;
    let logprobs = logprobs.then(|| chat_logprobs(&state.tokenizer, &done.logprobs));
    let mut splitter = Splitter::new(state.tool_format, tools.as_ref());
    let mut events = splitter.push(&done.text);
    events.extend(splitter.finish(done.finish == Some(Finish::Length)));
    let mut content = String::new();
    let mut calls = Vec::new();
    for e in events {
        match e {
            ToolEvent::Content(t) | ToolEvent::Reasoning(t) => content.push_str(&t),
            ToolEvent::ToolCall(call) => calls.push(tools::openai_call(&call)),
            ToolEvent::InvalidToolCall { text, error } => tools::log_invalid(&text, &error),
        }
    }
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        // OpenAI's message of calls alone has no content.
        if content.is_empty() {
            message["content"] = Value::Null;
        }
        message["tool_calls"] = Value::Array(calls);
    }
    Ok(Json(json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": logprobs,
            "finish_reason": done.finish.as_ref().map(|f| chat_finish_name(f, splitter.made_tool_call())),
        }],
        "usage": usage(prompt_tokens, done.completion_tokens, done.cached_tokens),
    }))
    .into_response())
}

/// A chat's finish reason: `tool_calls` when it made calls and was not cut off (as
/// mlx_lm's server reports it).
fn chat_finish_name(f: &Finish, made_tool_call: bool) -> &'static str {
    match f {
        Finish::Length => "length",
        _ if made_tool_call => "tool_calls",
        f => finish_name(f),
    }
}

pub async fn completions(State(state): State<AppState>, body: Bytes) -> Result<Response, Failure> {
    let req: CompletionRequest = parse_body(&body).map_err(fail)?;
    let sampling: Sampling = parse_body(&body).map_err(fail)?;
    state.check_model(req.model.as_deref()).map_err(fail)?;
    check_common(req.n).map_err(fail)?;
    if req.suffix.as_deref().is_some_and(|s| !s.is_empty()) {
        return Err(fail(ApiError::invalid("suffix", "suffix is not supported")));
    }
    let top_logprobs = req.logprobs;
    if top_logprobs.is_some_and(|k| k > MAX_TOP_LOGPROBS) {
        return Err(fail(ApiError::invalid(
            "logprobs",
            format!("logprobs must be at most {MAX_TOP_LOGPROBS}"),
        )));
    }
    let (prompt, prompt_text) = match &req.prompt {
        PromptField::Text(t) => (state.encode(t).map_err(fail)?, t.clone()),
        PromptField::Texts(v) if v.len() == 1 => (state.encode(&v[0]).map_err(fail)?, v[0].clone()),
        PromptField::Texts(v) => {
            return Err(fail(ApiError::invalid(
                "prompt",
                format!(
                    "{} prompts: this server answers one prompt per request",
                    v.len()
                ),
            )))
        }
        PromptField::Tokens(ids) => {
            let text = state
                .tokenizer
                .decode(ids, false)
                .map_err(|e| fail(ApiError::invalid("prompt", e.to_string())))?;
            (ids.clone(), text)
        }
    };
    if prompt.is_empty() {
        return Err(fail(ApiError::invalid("prompt", "the prompt is empty")));
    }
    let request = GenerationRequest {
        options: sampling.to_options(&state).map_err(fail)?,
        prompt,
        stop_strings: req
            .stop
            .clone()
            .map(StopField::into_vec)
            .unwrap_or_default(),
        top_logprobs: top_logprobs.unwrap_or(0) as usize,
        logprobs: top_logprobs.is_some(),
    };
    let prompt_tokens = request.prompt.len();
    let rx = generation::start(&state, request).await.map_err(fail)?;
    let id = format!("cmpl-{}", crate::next_id());
    let model = state.model_id.clone();
    let created = unix_time();
    let echo = req.echo.unwrap_or(false).then_some(prompt_text);
    let want_logprobs = top_logprobs.is_some();
    if req.stream.unwrap_or(false) {
        let include_usage = req.stream_options.map(|o| o.include_usage).unwrap_or(false);
        let tokenizer = state.tokenizer.clone();
        let head =
            json!({"id": id, "object": "text_completion", "created": created, "model": model});
        let first = echo.map(|text| {
            chunk_with(
                &head,
                json!([{"index": 0, "text": text, "logprobs": null, "finish_reason": null}]),
            )
        });
        let mut offset = 0usize;
        return Ok(stream_opt(rx, first, move |c: &Chunk| {
            let mut out = Vec::new();
            if !c.text.is_empty() || !c.logprobs.is_empty() || c.finish.is_some() {
                let logprobs = want_logprobs
                    .then(|| completion_logprobs(&tokenizer, &c.logprobs, &mut offset));
                out.push(chunk_with(&head, json!([{"index": 0, "text": c.text, "logprobs": logprobs, "finish_reason": c.finish.as_ref().map(finish_name)}])));
            }
            if c.finish.is_some() && include_usage {
                let mut u = chunk_with(&head, json!([]));
                u["usage"] = usage(prompt_tokens, c.completion_tokens, c.cached_tokens);
                out.push(u);
            }
            out
        }));
    }
    let done = generation::collect(rx).await.map_err(fail)?;
    let mut offset = 0;
    let logprobs =
        want_logprobs.then(|| completion_logprobs(&state.tokenizer, &done.logprobs, &mut offset));
    let text = match echo {
        Some(p) => p + &done.text,
        None => done.text,
    };
    Ok(Json(json!({
        "id": id,
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "text": text,
            "logprobs": logprobs,
            "finish_reason": done.finish.as_ref().map(finish_name),
        }],
        "usage": usage(prompt_tokens, done.completion_tokens, done.cached_tokens),
    }))
    .into_response())
}

/// OpenAI's content parts (`[{"type": "text", "text": ...}]`) joined into one string, as
/// mlx_lm's server does for templates that expect strings; other part types are refused.
/// Tool messages (`role: "tool"`) and assistant calls go to the template as they are.
fn normalize_messages(messages: &[Map<String, Value>]) -> Result<Vec<Value>, ApiError> {
    if messages.is_empty() {
        return Err(ApiError::invalid("messages", "messages must not be empty"));
    }
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let param = format!("messages[{i}]");
        if !m.get("role").is_some_and(Value::is_string) {
            return Err(ApiError::invalid(
                &param,
                format!("{param} has no string `role`"),
            ));
        }
        let mut m = m.clone();
        if let Some(Value::Array(parts)) = m.get("content") {
            let mut text = String::new();
            for part in parts {
                match (
                    part.get("type").and_then(Value::as_str),
                    part.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(t)) => text.push_str(t),
                    (kind, _) => {
                        return Err(ApiError::invalid(
                            &format!("{param}.content"),
                            format!("content parts of type {kind:?} are not supported (text only)"),
                        ))
                    }
                }
            }
            m.insert("content".into(), Value::String(text));
        }
        // As mlx_lm's server hands messages to templates: no content is empty content, and
        // a call's arguments (a JSON string in OpenAI's shape) are an object.
        if m.get("content").map_or(true, Value::is_null) {
            m.insert("content".into(), Value::String(String::new()));
        }
        if let Some(Value::Array(calls)) = m.get_mut("tool_calls") {
            for (j, call) in calls.iter_mut().enumerate() {
                let Some(arguments) = call
                    .get_mut("function")
                    .and_then(|f| f.get_mut("arguments"))
                else {
                    continue;
                };
                if let Value::String(text) = arguments {
                    *arguments = serde_json::from_str(text).map_err(|e| {
                        ApiError::invalid(
                            &format!("{param}.tool_calls[{j}].function.arguments"),
                            format!("the arguments are not JSON: {e}"),
                        )
                    })?;
                }
            }
        }
        out.push(Value::Object(m));
    }
    Ok(out)
}

pub fn finish_name(f: &Finish) -> &'static str {
    match f {
        Finish::Length => "length",
        Finish::StopToken | Finish::StopString(_) => "stop",
    }
}

/// Usage counts; `prompt_tokens` counts the cached ones too, as OpenAI's do.
fn usage(prompt: usize, completion: usize, cached: usize) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
           "prompt_tokens_details": {"cached_tokens": cached}})
}

fn chunk_with(head: &Value, choices: Value) -> Value {
    let mut v = head.clone();
    v["choices"] = choices;
    v
}

/// A token's text as one token alone decodes it, and its UTF-8 bytes.
fn token_text(tokenizer: &mlx_lm::Tokenizer, id: u32) -> (String, Vec<u8>) {
    let text = tokenizer.decode(&[id], false).unwrap_or_default();
    let bytes = text.as_bytes().to_vec();
    (text, bytes)
}

fn chat_logprobs(tokenizer: &mlx_lm::Tokenizer, lps: &[TokenLogprob]) -> Value {
    let content: Vec<Value> = lps
        .iter()
        .map(|lp| {
            let (token, bytes) = token_text(tokenizer, lp.token);
            let top: Vec<Value> = lp
                .top
                .iter()
                .map(|(id, v)| {
                    let (t, b) = token_text(tokenizer, *id);
                    json!({"token": t, "logprob": v, "bytes": b})
                })
                .collect();
            json!({"token": token, "logprob": lp.logprob, "bytes": bytes, "top_logprobs": top})
        })
        .collect();
    json!({"content": content})
}

fn completion_logprobs(
    tokenizer: &mlx_lm::Tokenizer,
    lps: &[TokenLogprob],
    offset: &mut usize,
) -> Value {
    let mut tokens = Vec::new();
    let mut values = Vec::new();
    let mut tops = Vec::new();
    let mut offsets = Vec::new();
    for lp in lps {
        let (t, _) = token_text(tokenizer, lp.token);
        offsets.push(*offset);
        *offset += t.len();
        tokens.push(t);
        values.push(lp.logprob);
        let top: Map<String, Value> = lp
            .top
            .iter()
            .map(|(id, v)| (token_text(tokenizer, *id).0, json!(v)))
            .collect();
        tops.push(Value::Object(top));
    }
    json!({"tokens": tokens, "token_logprobs": values, "top_logprobs": tops, "text_offset": offsets})
}

fn stream(
    rx: mpsc::Receiver<Result<Chunk, ApiError>>,
    first: Value,
    map: impl FnMut(&Chunk) -> Vec<Value> + Send + 'static,
) -> Response {
    stream_opt(rx, Some(first), map)
}

/// An OpenAI event stream: `data: {...}` per chunk, `data: [DONE]` at the end; an error
/// after the stream began is one `data: {"error": ...}` event.
fn stream_opt(
    mut rx: mpsc::Receiver<Result<Chunk, ApiError>>,
    first: Option<Value>,
    mut map: impl FnMut(&Chunk) -> Vec<Value> + Send + 'static,
) -> Response {
    let (tx, events) = mpsc::channel::<Result<Event, Infallible>>(64);
    tokio::spawn(async move {
        let send = |v: &Value| Ok(Event::default().data(v.to_string()));
        if let Some(first) = first {
            if tx.send(send(&first)).await.is_err() {
                return;
            }
        }
        while let Some(chunk) = rx.recv().await {
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) => {
                    let _ = tx.send(send(&e.stream_body(Flavor::OpenAi))).await;
                    break;
                }
            };
            for v in map(&chunk) {
                if tx.send(send(&v)).await.is_err() {
                    return;
                }
            }
            if chunk.finish.is_some() {
                break;
            }
        }
        let _ = tx.send(Ok(Event::default().data("[DONE]"))).await;
    });
    (StatusCode::OK, Sse::new(ReceiverStream::new(events))).into_response()
}
