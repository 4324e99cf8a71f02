//! An OpenAI- and Anthropic-compatible HTTP server for MLX language models (Python:
//! `mlx_lm.server`), on axum/tokio over mlx-lm's continuous-batching
//! [`Engine`](mlx_lm::Engine).
//!
//! One thread owns the model, its arrays and the engine ([`worker`]); the HTTP handlers
//! tokenize, submit requests to it over a channel and turn the tokens they get back into
//! each API's responses, streamed (server-sent events) or whole. A client that closes its
//! stream cancels its request, which frees its slot at the next step.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let options = mlx_lm_server::ServerOptions::new("path/to/model");
//! mlx_lm_server::serve(options).await?; // until ctrl-c
//! # Ok(()) }
//! ```
//!
//! Under a launcher (`launch -n N -- server ...`), [`serve`] splits the model over the
//! process group: rank 0 serves HTTP and the other ranks run the same engine steps
//! ([`lockstep`], [`follow`]).
//!
//! Endpoints: `POST /v1/chat/completions`, `POST /v1/completions` (OpenAI),
//! `POST /v1/messages` (Anthropic), `GET /v1/models`, `GET /health`, `GET /metrics`
//! (Prometheus text). See docs/server.md for the fields each reads.

pub mod anthropic;
pub mod constraint;
pub mod error;
pub mod generation;
pub mod lockstep;
pub mod metrics;
pub mod openai;
mod options;
pub mod params;
pub mod tools;
pub mod worker;

use std::future::Future;
use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use mlx_lm::structured::ConstraintFactory;
use mlx_lm::tool_parsers::{parser_for, tool_parser_for_tokenizer, ToolParser};
use mlx_lm::{ChatOptions, ChatTemplate, EngineOptions, Tokenizer};
use mlx_rs::distributed::Group;
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;

pub use error::{ApiError, Flavor};
pub use metrics::Metrics;
pub use options::{ServerOptions, TraceAtStart};
use worker::EngineHandle;
pub use worker::Split;

/// What every handler reads.
#[derive(Debug)]
pub struct StateInner {
    pub engine: EngineHandle,
    pub tokenizer: Arc<Tokenizer>,
    /// The name `/v1/models` lists.
    pub model_id: String,
    pub options: ServerOptions,
    pub metrics: Arc<Metrics>,
    /// Positions per slot: the longest prompt plus generation.
    pub context_length: usize,
    pub vocab_size: i32,
    pub stop_tokens: Vec<u32>,
    /// `--chat-template-args`.
    pub chat_template_args: Map<String, Value>,
    /// The model's tool-call format, chosen from its tokenizer as mlx_lm does (`None`: the
    /// output is not read for calls).
    pub tool_format: Option<&'static dyn ToolParser>,
    /// Grammars for this model's vocabulary (structured output, forced tool calls).
    pub constraints: ConstraintFactory,
}

/// The handlers' shared state.
#[derive(Debug, Clone)]
pub struct AppState(pub Arc<StateInner>);

impl Deref for AppState {
    type Target = StateInner;
    fn deref(&self) -> &StateInner {
        &self.0
    }
}

impl AppState {
    /// A request's `model` must be absent, this server's model or `default_model`.
    pub fn check_model(&self, model: Option<&str>) -> Result<(), ApiError> {
        match model {
            None | Some("") | Some("default_model") => Ok(()),
            Some(m) if m == self.model_id => Ok(()),
            Some(m) => Err(ApiError {
                param: Some("model".into()),
                ..ApiError::new(
                    StatusCode::NOT_FOUND,
                    format!(
                        "the model {m:?} does not exist; this server serves {:?}",
                        self.model_id
                    ),
                )
                .with_code("model_not_found")
            }),
        }
    }

    /// The most tokens a request may ask for.
    pub fn max_tokens_limit(&self) -> usize {
        self.options.max_tokens_limit.unwrap_or(self.context_length)
    }

    /// A conversation through the chat template, tokenized (Python: `apply_chat_template`
    /// then `encode(..., add_special_tokens=False)`).
    pub fn render_chat(
        &self,
        messages: &[Value],
        chat: &ChatOptions,
    ) -> Result<Vec<u32>, ApiError> {
        let text = self
            .tokenizer
            .apply_chat_template(&messages, chat)
            .map_err(|e| ApiError::invalid("messages", format!("the chat template failed: {e}")))?;
        self.tokenizer
            .encode(&text, false)
            .map_err(|e| ApiError::invalid("messages", e.to_string()))
    }

    /// A completion prompt, tokenized as mlx_lm's server does (`tokenizer.encode(prompt)`).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ApiError> {
        self.tokenizer
            .encode(text, true)
            .map_err(|e| ApiError::invalid("prompt", e.to_string()))
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A response id's unique part.
pub(crate) fn next_id() -> String {
    format!(
        "{:x}{:04x}",
        unix_time(),
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    )
}

pub(crate) fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A loaded model behind its engine thread, ready to serve.
#[derive(Debug)]
pub struct Server {
    state: AppState,
    engine_thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Loads the model (on the engine thread) and its tokenizer.
    pub fn load(options: ServerOptions) -> Result<Server, mlx_lm::Error> {
        Server::load_split(options, None)
    }

    /// [`load`](Self::load), the model split over a process group as `split` says: this
    /// process is rank 0 and serves; every other rank must run [`follow`] with the same
    /// options at the same time (the ranks load the model and start its engine together).
    pub fn load_split(
        options: ServerOptions,
        split: Option<Split>,
    ) -> Result<Server, mlx_lm::Error> {
        let invalid = mlx_lm::Error::InvalidArgument;
        if split.as_ref().is_some_and(|s| s.pipeline) && options.prompt_cache_bytes.is_some() {
            // Each rank keeps the caches of its own layers: their sizes differ, and a limit in
            // bytes would make the ranks keep different prompts (and prefill differently).
            return Err(invalid(
                "--prompt-cache-bytes cannot limit a model split by layers (--pipeline): each \
                 rank's caches hold other layers; limit --prompt-cache-size instead"
                    .into(),
            ));
        }
        let chat_template_args: Map<String, Value> =
            serde_json::from_str(&options.chat_template_args)
                .map_err(|e| invalid(format!("--chat-template-args is not a JSON object: {e}")))?;
        let mut tokenizer = Tokenizer::load(&options.model)?;
        let config = mlx_lm::load_config(&options.model)?;
        tokenizer.add_eos_token_ids(config.eos_token_ids()?);
        if !options.chat_template.is_empty() {
            tokenizer.set_chat_template(Some(ChatTemplate::new(
                options.chat_template.clone(),
                "--chat-template",
            )));
        }
        let metrics = Arc::new(Metrics::default());
        let engine_options = EngineOptions {
            max_batch: options.decode_concurrency,
            capacity: options.context_length,
            prefill_step_size: options.prefill_step_size,
            prefill_batch: options.prompt_concurrency,
            prompt_cache_size: options.prompt_cache_size,
            prompt_cache_bytes: options.prompt_cache_bytes.unwrap_or(usize::MAX),
            ..Default::default()
        };
        let (engine, info, thread) = worker::spawn(
            options.model.clone(),
            engine_options,
            options.trace_at_start,
            metrics.clone(),
            split,
        )?;
        let model_id = options
            .served_model_name
            .clone()
            .unwrap_or_else(|| options.model.display().to_string());
        let stop_tokens = tokenizer.eos_token_ids();
        let tool_format = tool_format(&tokenizer);
        let constraints = ConstraintFactory::new(&tokenizer, info.vocab_size as usize)?;
        Ok(Server {
            state: AppState(Arc::new(StateInner {
                engine,
                tokenizer: Arc::new(tokenizer),
                model_id,
                context_length: options.context_length,
                options,
                metrics,
                vocab_size: info.vocab_size,
                stop_tokens,
                chat_template_args,
                tool_format,
                constraints,
            })),
            engine_thread: Some(thread),
        })
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The routes, with authentication, the body limit, error shaping and request logs.
    pub fn router(&self) -> Router {
        router(self.state.clone())
    }

    /// Serves on `listener` until `shutdown` resolves; then lets in-flight requests finish
    /// for `--shutdown-timeout` seconds, cancels what is left, and stops the engine thread.
    ///
    /// With a split model, an `Err` as soon as the process group fails (a rank died): the
    /// requests in flight fail, and connections get [`FAILED_GRACE`] to close.
    pub async fn run(
        mut self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let engine = self.state.engine.clone();
        let watched = self.state.engine.clone();
        let grace = Duration::from_secs(self.state.options.shutdown_timeout);
        let signal = async move {
            tokio::select! {
                () = shutdown => {}
                why = watched.failed() => {
                    eprintln!("shutting down: {why}");
                    return;
                }
            }
            eprintln!("shutting down: finishing in-flight requests (at most {grace:?})");
            tokio::spawn(async move {
                tokio::time::sleep(grace).await;
                eprintln!("shutting down: cancelling what is still in flight");
                engine.stop();
            });
        };
        let watched = self.state.engine.clone();
        let failed_deadline = async move {
            watched.failed().await;
            tokio::time::sleep(FAILED_GRACE).await;
        };
        let serving = axum::serve(listener, self.router()).with_graceful_shutdown(signal);
        let result = tokio::select! {
            r = serving => r,
            () = failed_deadline => Ok(()),
        };
        self.state.engine.stop();
        if let Some(thread) = self.engine_thread.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
        match self.state.engine.failure() {
            Some(why) => Err(std::io::Error::other(why)),
            None => result,
        }
    }
}

/// The parser of a tokenizer's tool-call format. The parsers are unit structs, so the
/// leaked box allocates nothing, and a stream can borrow its parser for as long as it runs.
fn tool_format(tokenizer: &Tokenizer) -> Option<&'static dyn ToolParser> {
    let name = tool_parser_for_tokenizer(tokenizer)?;
    match parser_for(name) {
        Some(p) => Some(&*Box::leak(p)),
        None => {
            eprintln!(
                "this model's tool-call format {name:?} has no parser here; tool calls are \
                 returned as text"
            );
            None
        }
    }
}

/// How long connections get to close after the process group failed.
pub const FAILED_GRACE: Duration = Duration::from_secs(2);

/// A rank other than 0 of a split server (see [`Server::load_split`]): loads the model of
/// `options`, splits it over `group` alike and runs the steps rank 0 shares until rank 0
/// stops (`Ok`), or the group fails or this rank falls out of step with rank 0 (`Err`).
pub fn follow(options: &ServerOptions, group: &Group) -> Result<(), mlx_lm::Error> {
    let split = Split {
        group: group.clone(),
        pipeline: options.pipeline,
    };
    let model = worker::load_split(&options.model, Some(&split))?;
    lockstep::follow(&model, group)
}

/// Loads the model, binds `--host:--port` and serves until ctrl-c.
///
/// Started by a launcher as a group of several processes, the model is split over them (by
/// heads, or by layers with `--pipeline`): rank 0 loads, binds and serves, the others
/// [`follow`] it and return when it stops.
pub async fn serve(options: ServerOptions) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let group = mlx_rs::distributed::init(false, None)?;
    let split = if group.size() > 1 {
        if group.rank() != 0 {
            eprintln!(
                "rank {} of {}: following rank 0's steps",
                group.rank(),
                group.size()
            );
            let options = options.clone();
            tokio::task::spawn_blocking(move || follow(&options, &group)).await??;
            return Ok(());
        }
        Some(Split {
            group,
            pipeline: options.pipeline,
        })
    } else {
        None
    };
    let addr = format!("{}:{}", options.host, options.port);
    let server = Server::load_split(options, split)?;
    let listener = TcpListener::bind(&addr).await?;
    let local: SocketAddr = listener.local_addr()?;
    eprintln!("serving {} on http://{local}", server.state.model_id);
    server
        .run(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// The router over a state (see [`Server::router`]).
pub fn router(state: AppState) -> Router {
    let limit = state.options.max_request_bytes;
    Router::new()
        .route("/v1/chat/completions", post(openai::chat_completions))
        .route("/chat/completions", post(openai::chat_completions))
        .route("/v1/completions", post(openai::completions))
        .route("/v1/messages", post(anthropic::messages))
        .route("/v1/models", get(models))
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate))
        .route("/health", get(health))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(state.clone(), log_and_shape))
        .with_state(state)
}

fn flavor_of(path: &str) -> Flavor {
    if path.starts_with("/v1/messages") {
        Flavor::Anthropic
    } else {
        Flavor::OpenAi
    }
}

async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn models(State(state): State<AppState>) -> Json<Value> {
    Json(json!({"object": "list", "data": [{
        "id": state.model_id, "object": "model", "created": unix_time(), "owned_by": "mlx-lm",
    }]}))
}

async fn metrics(State(state): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

async fn not_found(request: Request) -> Response {
    let path = request.uri().path().to_string();
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no route for {} {path}", request.method()),
    )
    .into_response_for(flavor_of(&path))
}

/// Bearer keys (`Authorization: Bearer <key>`, or Anthropic's `x-api-key`), when the server
/// has one. Compared without an early exit so timing does not tell a key's prefix.
async fn authenticate(
    State(state): State<AppState>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    let Some(key) = state.options.api_key.as_deref() else {
        return next.run(request).await;
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()));
    let ok = given.is_some_and(|g| {
        g.len() == key.len()
            && g.bytes()
                .zip(key.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    });
    if ok {
        return next.run(request).await;
    }
    let path = request.uri().path().to_string();
    ApiError::new(StatusCode::UNAUTHORIZED, "missing or wrong API key")
        .into_response_for(flavor_of(&path))
}

/// One log line per request, and errors the framework writes as plain text (a body over
/// the limit, a wrong method) rewritten in the API's own JSON shape.
async fn log_and_shape(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let generating = method == axum::http::Method::POST;
    if generating {
        state.metrics.requests.fetch_add(1, Ordering::Relaxed);
    }
    let mut response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if status.is_client_error() || status.is_server_error() {
        if generating {
            state.metrics.request_errors.fetch_add(1, Ordering::Relaxed);
        }
        if !is_json {
            let message = match status {
                StatusCode::PAYLOAD_TOO_LARGE => format!(
                    "the request body is larger than this server's limit of {} bytes",
                    state.options.max_request_bytes
                ),
                StatusCode::METHOD_NOT_ALLOWED => format!("{method} is not allowed on {path}"),
                _ => status.canonical_reason().unwrap_or("error").to_string(),
            };
            response = ApiError::new(status, message).into_response_for(flavor_of(&path));
        }
    }
    if state.options.log_requests {
        eprintln!(
            "{method} {path} {} {:.1}ms",
            status.as_u16(),
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    response
}
