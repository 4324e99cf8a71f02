//! Errors in each API's own shape: OpenAI `{"error": {"message", "type", "param", "code"}}`,
//! Anthropic `{"type": "error", "error": {"type", "message"}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// Which API a request spoke, so its errors come back in that API's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    OpenAi,
    Anthropic,
}

/// A failed request: a status and what to tell the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// The request field at fault (OpenAI's `param`).
    pub param: Option<String>,
    /// A machine-readable reason (OpenAI's `code`), e.g. `context_length_exceeded`.
    pub code: Option<&'static str>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            param: None,
            code: None,
        }
    }

    /// A 400 about one field.
    pub fn invalid(param: &str, message: impl Into<String>) -> Self {
        ApiError {
            param: Some(param.to_string()),
            ..ApiError::new(StatusCode::BAD_REQUEST, message)
        }
    }

    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// The error as `flavor`'s API writes it.
    pub fn into_response_for(self, flavor: Flavor) -> Response {
        let body = match flavor {
            Flavor::OpenAi => json!({"error": {
                "message": self.message,
                "type": openai_type(self.status),
                "param": self.param,
                "code": self.code,
            }}),
            Flavor::Anthropic => json!({"type": "error", "error": {
                "type": anthropic_type(self.status),
                "message": self.message,
            }}),
        };
        (self.status, Json(body)).into_response()
    }

    /// The `error` object of a stream that fails after its first event.
    pub fn stream_body(&self, flavor: Flavor) -> serde_json::Value {
        match flavor {
            Flavor::OpenAi => json!({"error": {
                "message": self.message, "type": openai_type(self.status),
                "param": self.param, "code": self.code,
            }}),
            Flavor::Anthropic => json!({"type": "error", "error": {
                "type": anthropic_type(self.status), "message": self.message,
            }}),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.status)
    }
}

fn openai_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        404 => "not_found_error",
        429 | 503 => "server_overloaded",
        s if s >= 500 => "server_error",
        _ => "invalid_request_error",
    }
}

fn anthropic_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        s if s >= 500 => "api_error",
        _ => "invalid_request_error",
    }
}

/// An error on its way out, with the shape it must take.
#[derive(Debug)]
pub struct Failure(pub Flavor, pub ApiError);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        self.1.into_response_for(self.0)
    }
}
