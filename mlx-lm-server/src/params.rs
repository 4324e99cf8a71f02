//! What the APIs share: sampling fields, their defaults and limits, the stop field, request
//! bodies read as JSON with errors in the API's own shape.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::http::StatusCode;
use mlx_lm::{RequestOptions, SamplerOptions};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::ApiError;
use crate::AppState;

/// Reads a request body; malformed JSON and fields of the wrong type are 400s that name
/// the field.
pub fn parse_body<T: DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if inner.is_syntax() || inner.is_eof() {
            format!("the request body is not valid JSON: {inner}")
        } else if path == "." {
            format!("invalid request body: {inner}")
        } else {
            format!("invalid value for `{path}`: {inner}")
        };
        let mut err = ApiError::new(StatusCode::BAD_REQUEST, message);
        if path != "." {
            err.param = Some(path);
        }
        err
    })
}

/// OpenAI's `stop` (and Anthropic's `stop_sequences`): one string or a list.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum StopField {
    One(String),
    Many(Vec<String>),
}

impl StopField {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            StopField::One(s) => vec![s],
            StopField::Many(v) => v,
        }
    }
}

/// The sampling fields every API has (absent: the server's defaults). OpenAI's endpoints
/// read them with [`parse_body`] from the request's body, beside the request's own fields
/// (not flattened into the request: a flattened field's type error would lose its name in the
/// 400); Anthropic's request has only some and fills the others in with the defaults.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Sampling {
    pub max_tokens: Option<u64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<i64>,
    pub min_p: Option<f64>,
    pub seed: Option<i64>,
    pub logit_bias: Option<BTreeMap<String, f64>>,
    pub presence_penalty: Option<f64>,
    pub frequency_penalty: Option<f64>,
    pub repetition_penalty: Option<f64>,
    pub repetition_context_size: Option<u64>,
}

impl Sampling {
    /// The engine's options for these fields; out-of-range values are 400s naming the field.
    pub fn to_options(&self, state: &AppState) -> Result<RequestOptions, ApiError> {
        let o = &state.options;
        let limit = state.max_tokens_limit();
        let max_tokens = match self.max_tokens {
            None => o.max_tokens.min(limit),
            Some(0) => {
                return Err(ApiError::invalid(
                    "max_tokens",
                    "max_tokens must be at least 1",
                ))
            }
            Some(n) if n as usize > limit => {
                return Err(ApiError::invalid(
                    "max_tokens",
                    format!("max_tokens is {n}, more than this server's limit of {limit}"),
                ))
            }
            Some(n) => n as usize,
        };
        let temperature = self.temperature.unwrap_or(o.temp);
        if !temperature.is_finite() || temperature < 0.0 {
            return Err(ApiError::invalid(
                "temperature",
                "temperature must be a number >= 0",
            ));
        }
        let top_p = self.top_p.unwrap_or(o.top_p);
        if !(0.0..=1.0).contains(&top_p) {
            return Err(ApiError::invalid("top_p", "top_p must be in [0, 1]"));
        }
        let min_p = self.min_p.unwrap_or(o.min_p);
        if !(0.0..=1.0).contains(&min_p) {
            return Err(ApiError::invalid("min_p", "min_p must be in [0, 1]"));
        }
        // OpenAI-style clients send -1 for "off" as often as 0.
        let top_k = match self.top_k {
            None => o.top_k,
            Some(k) if k <= 0 => 0,
            Some(k) => i32::try_from(k)
                .ok()
                .filter(|k| *k < state.vocab_size)
                .ok_or_else(|| {
                    ApiError::invalid(
                        "top_k",
                        format!(
                            "top_k must be below the vocabulary size {}",
                            state.vocab_size
                        ),
                    )
                })?,
        };
        let mut logit_bias = Vec::new();
        for (k, v) in self.logit_bias.iter().flatten() {
            let token = k
                .parse::<u32>()
                .ok()
                .filter(|t| (*t as i64) < state.vocab_size as i64)
                .ok_or_else(|| {
                    ApiError::invalid(
                        "logit_bias",
                        format!("logit_bias key {k:?} is not a token id of this model"),
                    )
                })?;
            if !v.is_finite() {
                return Err(ApiError::invalid(
                    "logit_bias",
                    "logit_bias values must be finite",
                ));
            }
            logit_bias.push((token, *v));
        }
        for (name, value) in [
            ("presence_penalty", self.presence_penalty),
            ("frequency_penalty", self.frequency_penalty),
        ] {
            if value.is_some_and(|v| !(-2.0..=2.0).contains(&v)) {
                return Err(ApiError::invalid(
                    name,
                    format!("{name} must be in [-2, 2]"),
                ));
            }
        }
        if self
            .repetition_penalty
            .is_some_and(|p| !p.is_finite() || p < 0.0)
        {
            return Err(ApiError::invalid(
                "repetition_penalty",
                "repetition_penalty must be a number >= 0",
            ));
        }
        Ok(RequestOptions {
            max_tokens,
            sampler: SamplerOptions {
                temperature,
                top_p,
                min_p,
                top_k,
                ..Default::default()
            },
            // A negative seed (some clients send -1 for "none") is no seed.
            seed: self.seed.and_then(|s| u64::try_from(s).ok()),
            logit_bias,
            stop_tokens: state.stop_tokens.clone(),
            repetition_penalty: self.repetition_penalty,
            repetition_context_size: self.repetition_context_size.map_or(20, |n| n as usize),
            presence_penalty: self.presence_penalty.unwrap_or(0.0),
            frequency_penalty: self.frequency_penalty.unwrap_or(0.0),
            // `response_format` beyond text is refused before this (a 400 naming it).
            constraint: None,
        })
    }
}
