//! OpenAI's `response_format` request field.

use serde_json::Value;

use crate::error::{Error, Result};

/// What shape the output must take (OpenAI: `response_format`).
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseFormat {
    /// `{"type": "text"}`: no constraint.
    Text,
    /// `{"type": "json_object"}`: one JSON object.
    JsonObject,
    /// `{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`: one JSON
    /// value valid against `schema`.
    JsonSchema {
        name: String,
        schema: Value,
        /// OpenAI's `strict` (default off): on, a schema keyword the grammar engine cannot
        /// enforce is an error; off, it is ignored.
        strict: bool,
    },
}

impl ResponseFormat {
    /// Reads an OpenAI `response_format` object. Anything else than the shapes above is
    /// an error that says what was expected (a server answers it with a 400).
    ///
    /// ```
    /// use mlx_lm::structured::ResponseFormat;
    /// let format = ResponseFormat::from_openai(&serde_json::json!({
    ///     "type": "json_schema",
    ///     "json_schema": {"name": "point", "schema": {"type": "object"}, "strict": true},
    /// }))?;
    /// assert!(matches!(format, ResponseFormat::JsonSchema { strict: true, .. }));
    /// # Ok::<(), mlx_lm::Error>(())
    /// ```
    pub fn from_openai(value: &Value) -> Result<ResponseFormat> {
        let invalid = |m: String| Err(Error::InvalidArgument(format!("response_format: {m}")));
        let Some(object) = value.as_object() else {
            return invalid(format!("expected an object, got {value}"));
        };
        match object.get("type").and_then(Value::as_str) {
            Some("text") => Ok(ResponseFormat::Text),
            Some("json_object") => Ok(ResponseFormat::JsonObject),
            Some("json_schema") => {
                let Some(spec) = object.get("json_schema").and_then(Value::as_object) else {
                    return invalid("type json_schema needs a json_schema object".into());
                };
                let name = match spec.get("name") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => {
                        return invalid(format!("json_schema.name must be a string, got {v}"))
                    }
                };
                // OpenAI's schema is optional: without one, any JSON value.
                let schema = match spec.get("schema") {
                    None | Some(Value::Null) => Value::Object(Default::default()),
                    Some(s @ (Value::Object(_) | Value::Bool(_))) => s.clone(),
                    Some(v) => {
                        return invalid(format!("json_schema.schema must be an object, got {v}"))
                    }
                };
                let strict = match spec.get("strict") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(v) => {
                        return invalid(format!("json_schema.strict must be a boolean, got {v}"))
                    }
                };
                Ok(ResponseFormat::JsonSchema {
                    name,
                    schema,
                    strict,
                })
            }
            Some(other) => invalid(format!(
                "unknown type {other:?} (expected text, json_object or json_schema)"
            )),
            None => invalid("missing type (text, json_object or json_schema)".into()),
        }
    }
}
