//! The constraint on a request's output: a forced tool call's grammar, or OpenAI's
//! `response_format` (JSON schema, JSON object) through `mlx_lm::structured`.

use mlx_lm::structured::{Constraint, ResponseFormat};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::tools::Tools;
use crate::AppState;

/// The constraint of a request (`None`: free text). Both a forced call and a
/// `response_format` is a 400: each decides the whole output.
pub fn for_output(
    state: &AppState,
    tools: Option<&Tools>,
    response_format: Option<&Value>,
) -> Result<Option<Constraint>, ApiError> {
    let format = response_format
        .map(ResponseFormat::from_openai)
        .transpose()
        .map_err(|e| ApiError::invalid("response_format", e.to_string()))?
        .filter(|f| *f != ResponseFormat::Text);
    let grammar = match tools {
        Some(t) => t.forced_grammar(state.tool_format, &state.tokenizer)?,
        None => None,
    };
    let invalid_format = |e: mlx_lm::Error| ApiError::invalid("response_format", e.to_string());
    match (grammar, format) {
        (Some(_), Some(_)) => Err(ApiError::invalid(
            "response_format",
            "response_format and a tool_choice that forces a call both decide the whole \
             output; send one of them",
        )),
        (Some(g), None) => state
            .constraints
            .lark(&g)
            .map(Some)
            .map_err(|e| ApiError::invalid("tools", format!("the tools' schemas: {e}"))),
        (None, Some(ResponseFormat::JsonSchema { schema, strict, .. })) => {
            let mut schema = schema;
            json_layout(&mut schema);
            state
                .constraints
                .json_schema(&schema, strict)
                .map(Some)
                .map_err(invalid_format)
        }
        (None, Some(ResponseFormat::JsonObject)) => {
            let mut schema = json!({"type": "object"});
            json_layout(&mut schema);
            state
                .constraints
                .json_schema(&schema, true)
                .map(Some)
                .map_err(invalid_format)
        }
        (None, Some(ResponseFormat::Text)) | (None, None) => Ok(None),
    }
}

/// The JSON the server's grammars let a model write: laid out as Python's `json.dumps`
/// writes it (`", "`, `": "`, no other whitespace), which is what models saw in training
/// and what their templates render. llguidance's default lets whitespace run anywhere, and
/// a model can then spend its whole budget on it. A schema's own `"x-guidance"` options
/// win.
pub fn json_layout(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let options = object.entry("x-guidance").or_insert_with(|| json!({}));
    if let Some(options) = options.as_object_mut() {
        for (k, v) in [
            ("whitespace_flexible", json!(false)),
            ("item_separator", json!(", ")),
            ("key_separator", json!(": ")),
        ] {
            options.entry(k).or_insert(v);
        }
    }
}
