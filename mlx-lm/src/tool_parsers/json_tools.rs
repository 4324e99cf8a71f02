//! Hermes / Qwen JSON calls (Python: `mlx_lm/tool_parsers/json_tools.py`):
//! `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.

use serde_json::Value;

use super::{ToolCall, ToolCallError, ToolParser};

/// `<tool_call>` JSON `</tool_call>` (Qwen 2.5 / 3, Hermes, SmolLM3 and most templates that
/// render `tool_call.name`).
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonTools;

impl ToolParser for JsonTools {
    fn name(&self) -> &'static str {
        "json_tools"
    }

    fn tool_call_start(&self) -> &'static str {
        "<tool_call>"
    }

    fn tool_call_end(&self) -> &'static str {
        "</tool_call>"
    }

    fn parse_tool_call(
        &self,
        text: &str,
        _: Option<&Value>,
    ) -> Result<Vec<ToolCall>, ToolCallError> {
        let value = parse_json(text.trim_matches(PY_WHITESPACE))?;
        calls_from_json(value)
    }
}

/// Python's `str.strip()` characters that JSON would also skip are not all of them: strip
/// what Python strips.
pub(crate) const PY_WHITESPACE: &[char] = &[
    ' ', '\t', '\n', '\r', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\x1f', '\u{85}', '\u{a0}',
    '\u{1680}', '\u{2000}', '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}',
    '\u{2007}', '\u{2008}', '\u{2009}', '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}',
    '\u{3000}',
];

pub(crate) fn parse_json(text: &str) -> Result<Value, ToolCallError> {
    serde_json::from_str(text).map_err(|e| ToolCallError(format!("not JSON ({e}): {text}")))
}

/// A call object, or a list of them, as mlx_lm's server formats them: `name` and
/// `arguments` are required (Python raises `KeyError` without them), `id` is kept when
/// it is a string.
pub(crate) fn calls_from_json(value: Value) -> Result<Vec<ToolCall>, ToolCallError> {
    match value {
        Value::Array(items) => items.into_iter().map(call_from_json).collect(),
        v => Ok(vec![call_from_json(v)?]),
    }
}

fn call_from_json(value: Value) -> Result<ToolCall, ToolCallError> {
    let Value::Object(mut object) = value else {
        return Err(ToolCallError(format!(
            "a call is a JSON object, got {value}"
        )));
    };
    let name = match object.remove("name") {
        Some(Value::String(name)) => name,
        Some(other) => return Err(ToolCallError(format!("the name is not a string: {other}"))),
        None => return Err(ToolCallError("the call has no \"name\"".into())),
    };
    let Some(arguments) = object.remove("arguments") else {
        return Err(ToolCallError(format!(
            "the call of {name} has no \"arguments\""
        )));
    };
    let id = match object.remove("id") {
        Some(Value::String(id)) => Some(id),
        _ => None,
    };
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}
