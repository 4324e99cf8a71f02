//! Llama 3.1 / 3.2 / 3.3 JSON calls: an output that is `{"name": ..., "parameters": {...}}`
//! (the templates' custom-tool format), optionally after `<|python_tag|>`, several joined
//! by `;`. mlx_lm has no parser for it (it serves Llama 3 without tool calls); this follows
//! the format Meta's model card and templates define, and reads it as vLLM's `llama3_json`
//! parser does: a call is an output whose first non-space character opens a JSON object,
//! or what follows `<|python_tag|>`, to the end of the output; `arguments` is accepted for
//! `parameters`.

use serde_json::Value;

use super::{ToolCall, ToolCallError, ToolParser};

/// Llama 3's JSON tool calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct Llama3Json;

impl ToolParser for Llama3Json {
    fn name(&self) -> &'static str {
        "llama3_json"
    }

    fn tool_call_start(&self) -> &'static str {
        "<|python_tag|>"
    }

    fn tool_call_end(&self) -> &'static str {
        ""
    }

    fn bare_json_calls(&self) -> bool {
        true
    }

    fn parse_tool_call(
        &self,
        text: &str,
        _: Option<&Value>,
    ) -> Result<Vec<ToolCall>, ToolCallError> {
        let mut calls = Vec::new();
        let mut rest = text.trim();
        while !rest.is_empty() {
            let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
            let value = match values.next() {
                Some(Ok(v)) => v,
                Some(Err(e)) => return Err(ToolCallError(format!("not JSON ({e}): {text}"))),
                None => break,
            };
            rest = rest[values.byte_offset()..].trim_start();
            rest = rest.strip_prefix(';').unwrap_or(rest).trim_start();
            let Value::Object(mut call) = value else {
                return Err(ToolCallError(format!(
                    "a call is a JSON object, got {value}"
                )));
            };
            let Some(Value::String(name)) = call.remove("name") else {
                return Err(ToolCallError(format!(
                    "a call without a string \"name\": {text}"
                )));
            };
            let arguments = match (call.remove("parameters"), call.remove("arguments")) {
                (Some(a), _) | (None, Some(a)) => a,
                (None, None) => {
                    return Err(ToolCallError(format!(
                        "the call of {name} has no \"parameters\""
                    )))
                }
            };
            // Some fine-tunes write the arguments as a JSON string.
            let arguments = match arguments {
                Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
                a => a,
            };
            calls.push(ToolCall {
                id: None,
                name,
                arguments,
            });
        }
        if calls.is_empty() {
            return Err(ToolCallError("No function provided.".into()));
        }
        Ok(calls)
    }
}
