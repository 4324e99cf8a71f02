//! Mistral calls (Python: `mlx_lm/tool_parsers/mistral.py`): `[TOOL_CALLS]` then either a
//! JSON list `[{"name": ..., "arguments": ...}]` or one or more `name[ARGS]{...}`, up to
//! the end of the output (there is no end marker).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::{ToolCall, ToolCallError, ToolParser};

static HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([\w-]+)\s*\[ARGS\]\s*").expect("a valid pattern"));

/// `[TOOL_CALLS]` calls (Mistral, Mistral Small 3.x, Devstral, Magistral).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mistral;

impl ToolParser for Mistral {
    fn name(&self) -> &'static str {
        "mistral"
    }

    fn tool_call_start(&self) -> &'static str {
        "[TOOL_CALLS]"
    }

    fn tool_call_end(&self) -> &'static str {
        ""
    }

    fn parse_tool_call(
        &self,
        text: &str,
        _: Option<&Value>,
    ) -> Result<Vec<ToolCall>, ToolCallError> {
        let fail = || ToolCallError(format!("Could not parse tool call from: {text}"));
        let mut calls = json_calls(text).ok_or_else(fail)?;
        if calls.is_empty() {
            calls = header_calls(text).ok_or_else(fail)?;
        }
        if calls.is_empty() {
            return Err(fail());
        }
        Ok(calls)
    }
}

/// `[{"name": ..., "arguments": ...}]`: empty when the text is not a JSON list, `None`
/// when it is one but not of calls (so it cannot fall through to the header form).
fn json_calls(text: &str) -> Option<Vec<ToolCall>> {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) else {
        return Some(Vec::new());
    };
    let mut calls = Vec::new();
    for item in items {
        let Value::Object(mut call) = item else {
            return None;
        };
        let name = call.get("name").and_then(Value::as_str).map(str::to_string);
        let mut arguments = call
            .remove("arguments")
            .unwrap_or(Value::Object(Default::default()));
        if let Value::String(s) = &arguments {
            // Some templates render the arguments as a JSON string.
            arguments = serde_json::from_str(s).unwrap_or(Value::Null);
        }
        let (Some(name), true) = (name, arguments.is_object()) else {
            return None;
        };
        let id = call.get("id").and_then(Value::as_str).map(str::to_string);
        calls.push(ToolCall {
            id,
            name,
            arguments,
        });
    }
    Some(calls)
}

/// `name[ARGS]{...}`, repeated: `None` when a call's JSON does not end (a cut-off
/// generation).
fn header_calls(text: &str) -> Option<Vec<ToolCall>> {
    let mut calls = Vec::new();
    let mut pos = 0;
    while let Some(m) = HEADER.captures_at(text, pos) {
        let whole = m.get(0)?;
        let name = m.get(1)?.as_str().to_string();
        let rest = &text[whole.end()..];
        // Python's raw_decode reads one JSON value where the header ends and says where it
        // stopped; it does not skip whitespace, which the header took.
        if rest.starts_with(char::is_whitespace) {
            return None;
        }
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let arguments = values.next()?.ok()?;
        pos = whole.end() + values.byte_offset();
        calls.push(ToolCall {
            id: None,
            name,
            arguments,
        });
    }
    Some(calls)
}
