//! A request's generation as the handlers see it: submitted to the engine thread, its
//! tokens turned into text pieces (stop strings found across token boundaries and held
//! back while they may still match) by a task of its own.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::http::StatusCode;
use mlx_lm::{FinishReason, RequestOptions, TextAssembler, Tokenizer};
use tokio::sync::{mpsc, oneshot};

use crate::error::ApiError;
use crate::worker::{Event, Submission};
use crate::AppState;

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenerationRequest {
    pub prompt: Vec<u32>,
    pub options: RequestOptions,
    pub stop_strings: Vec<String>,
    /// How many alternatives to report per token (0: none).
    pub top_logprobs: usize,
    /// Whether to report each token's log-probability.
    pub logprobs: bool,
}

/// One generated token's log-probabilities, for the response.
#[derive(Debug, Clone)]
pub struct TokenLogprob {
    pub token: u32,
    pub logprob: f32,
    pub top: Vec<(u32, f32)>,
}

/// Why a generation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// A stop token.
    StopToken,
    /// A stop string (the one found).
    StopString(String),
    Length,
}

/// What one step of a generation adds.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub text: String,
    pub logprobs: Vec<TokenLogprob>,
    pub finish: Option<Finish>,
    /// Tokens generated so far (the stop token counted).
    pub completion_tokens: usize,
    /// Prompt tokens a cached prefix gave (not prefilled).
    pub cached_tokens: usize,
}

/// Submits a request and starts the task that turns its tokens into text; the chunks come
/// over the returned channel, the last one with `finish` set (or an error). Dropping the
/// receiver cancels the request.
pub async fn start(
    state: &AppState,
    request: GenerationRequest,
) -> Result<mpsc::Receiver<Result<Chunk, ApiError>>, ApiError> {
    if request.prompt.len() > state.context_length {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "the prompt has {} tokens, more than this server's context length of {}",
                request.prompt.len(),
                state.context_length
            ),
        )
        .with_code("context_length_exceeded"));
    }
    if state.metrics.queue_depth.load(Ordering::Relaxed) as usize >= state.options.max_queue {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is busy: too many requests are waiting; try again later",
        ));
    }
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let (accepted_tx, accepted) = oneshot::channel();
    let prompt_tokens = request.prompt.len();
    state
        .engine
        .submit(Submission {
            prompt: request.prompt,
            options: request.options,
            top_logprobs: request.top_logprobs,
            events: events_tx,
            accepted: accepted_tx,
        })
        .map_err(|_| unavailable())?;
    match accepted.await {
        Ok(Ok(())) => {}
        Ok(Err(message)) => return Err(ApiError::new(StatusCode::BAD_REQUEST, message)),
        Err(_) => return Err(unavailable()),
    }
    state
        .metrics
        .prompt_tokens
        .fetch_add(prompt_tokens as u64, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel(64);
    let tokenizer: Arc<Tokenizer> = state.tokenizer.clone();
    let stop_tokens = state.stop_tokens.clone();
    let want_logprobs = request.logprobs;
    let stop_strings = request.stop_strings;
    let log = state.options.log_requests;
    let submitted = std::time::Instant::now();
    tokio::spawn(async move {
        let mut first_token = None;
        let mut text = TextAssembler::new(&tokenizer, &stop_strings);
        let mut produced = 0usize;
        while let Some(event) = events.recv().await {
            let t = match event {
                Event::Token(t) => t,
                Event::Failed(message) => {
                    let e = ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message);
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            };
            produced += 1;
            first_token.get_or_insert_with(|| submitted.elapsed());
            // The engine ends a request at a stop token with `Stop`, at its length with
            // `Length`; a stop token's text is not part of the output.
            let is_stop_token =
                t.finish == Some(FinishReason::Stop) && stop_tokens.contains(&t.token);
            let piece = match text.push((!is_stop_token).then_some(t.token), t.finish.is_some()) {
                Ok(p) => p,
                Err(e) => {
                    let e = ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            };
            let finish = match (piece.stop, t.finish) {
                (Some(s), _) => Some(Finish::StopString(s)),
                (None, Some(FinishReason::Stop)) => Some(Finish::StopToken),
                (None, Some(FinishReason::Length)) => Some(Finish::Length),
                (None, None) => None,
            };
            let logprobs = if want_logprobs && !is_stop_token {
                vec![TokenLogprob {
                    token: t.token,
                    logprob: t.logprob,
                    top: t.top,
                }]
            } else {
                Vec::new()
            };
            let done = finish.is_some();
            if log && done {
                let total = submitted.elapsed();
                let ttft = first_token.unwrap_or(total);
                let rate = (produced - 1) as f64 / (total - ttft).as_secs_f64().max(1e-9);
                eprintln!(
                    "generation: {prompt_tokens} prompt + {produced} generated tokens, first \
                     token {:.1}ms, total {:.1}ms ({rate:.1} tokens/s after the first), {:?}",
                    ttft.as_secs_f64() * 1e3,
                    total.as_secs_f64() * 1e3,
                    finish.as_ref().unwrap()
                );
            }
            let chunk = Chunk {
                text: piece.text,
                logprobs,
                finish,
                completion_tokens: produced,
                cached_tokens: t.cached_tokens,
            };
            // A closed receiver (the client left) ends this task; dropping `events` then
            // cancels the request in the engine. So does a stop string.
            if tx.send(Ok(chunk)).await.is_err() || done {
                return;
            }
        }
        let e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is shutting down; the request was cancelled",
        );
        let _ = tx.send(Err(e)).await;
    });
    Ok(rx)
}

fn unavailable() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "the engine is not running (the server is shutting down)",
    )
}

/// A whole generation, for a non-streaming response.
#[derive(Debug, Clone, Default)]
pub struct Completed {
    pub text: String,
    pub logprobs: Vec<TokenLogprob>,
    pub finish: Option<Finish>,
    pub completion_tokens: usize,
    pub cached_tokens: usize,
}

/// Reads every chunk of a generation.
pub async fn collect(
    mut rx: mpsc::Receiver<Result<Chunk, ApiError>>,
) -> Result<Completed, ApiError> {
    let mut out = Completed::default();
    while let Some(chunk) = rx.recv().await {
        let chunk = chunk?;
        out.text.push_str(&chunk.text);
        out.logprobs.extend(chunk.logprobs);
        out.completion_tokens = chunk.completion_tokens;
        out.cached_tokens = chunk.cached_tokens;
        if chunk.finish.is_some() {
            out.finish = chunk.finish;
            break;
        }
    }
    Ok(out)
}
