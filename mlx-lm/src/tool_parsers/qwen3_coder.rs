//! Qwen3-Coder's XML-like calls (Python: `mlx_lm/tool_parsers/qwen3_coder.py`):
//! `<tool_call>\n<function=name>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>`,
//! each value typed by the request's tool schema.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Number, Value};

use super::python_literal::literal_eval;
use super::{ToolCall, ToolCallError, ToolParser};

// Python's `<function=(.*?)</function>$`: `$` without MULTILINE also matches before a final
// newline; the engine here has no look-ahead, and only the group is read.
static FUNCTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)<function=(.*?)</function>\n?\z").expect("a valid pattern"));
static PARAMETER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)<parameter=(.*?)</parameter>").expect("a valid pattern"));
static NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*([^\s<>]+)>?").expect("a valid pattern"));

/// `<function=...>` calls inside `<tool_call>` (Qwen3-Coder, Qwen3.5).
#[derive(Debug, Clone, Copy, Default)]
pub struct Qwen3Coder;

impl ToolParser for Qwen3Coder {
    fn name(&self) -> &'static str {
        "qwen3_coder"
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
        tools: Option<&Value>,
    ) -> Result<Vec<ToolCall>, ToolCallError> {
        let Some(m) = FUNCTION.captures(text) else {
            return Err(ToolCallError("No function provided.".into()));
        };
        let call = &m[1];
        let Some(name) = NAME.captures(call) else {
            return Err(ToolCallError("No function name provided.".into()));
        };
        let function = name[1].to_string();
        let config = argument_types(&function, tools);
        let mut arguments = Map::new();
        for p in PARAMETER.captures_iter(&call[name.get(0).map_or(0, |m| m.end())..]) {
            let body = &p[1];
            let Some(pname) = NAME.captures(body) else {
                continue;
            };
            let mut value = &body[pname.get(0).map_or(0, |m| m.end())..];
            value = value.strip_prefix('\n').unwrap_or(value);
            value = value.strip_suffix('\n').unwrap_or(value);
            let converted = convert(value, &pname[1], config).map_err(ToolCallError)?;
            arguments.insert(pname[1].to_string(), converted);
        }
        Ok(vec![ToolCall {
            id: None,
            name: function,
            arguments: Value::Object(arguments),
        }])
    }
}

/// The `properties` of the tool's parameters (Python: `_get_arguments_config`).
fn argument_types<'t>(function: &str, tools: Option<&'t Value>) -> Option<&'t Map<String, Value>> {
    tools?.as_array()?.iter().find_map(|tool| {
        let f = tool.get("function")?;
        if f.get("name")?.as_str()? != function {
            return None;
        }
        f.get("parameters")?.get("properties")?.as_object()
    })
}

fn is_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Python's `str(param["type"])` of a JSON type value.
fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}

/// Python's `float(str)`: surrounding whitespace, `_` between digits, `inf` / `nan`.
fn python_float(text: &str) -> Result<f64, String> {
    let t = text.trim_matches(super::json_tools::PY_WHITESPACE);
    let bad = || format!("could not convert string to float: {text:?}");
    if t.starts_with('_') || t.ends_with('_') || t.contains("__") {
        return Err(bad());
    }
    let t = t.replace('_', "");
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity" | "nan") {
        return lower.parse::<f64>().map_err(|_| bad());
    }
    if body.is_empty()
        || !body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'+' | b'-'))
    {
        return Err(bad());
    }
    lower.parse::<f64>().map_err(|_| bad())
}

fn number(x: f64) -> Result<Value, String> {
    Number::from_f64(x)
        .map(Value::Number)
        .ok_or_else(|| format!("{x} has no JSON form"))
}

/// Python: `_convert_param_value`.
fn convert(value: &str, name: &str, config: Option<&Map<String, Value>>) -> Result<Value, String> {
    if value.to_lowercase() == "null" {
        return Ok(Value::Null);
    }
    let Some(param) = config.and_then(|c| c.get(name)).filter(|p| is_truthy(p)) else {
        return Ok(Value::String(value.into()));
    };
    let Some(kind) = param.get("type") else {
        return Ok(match serde_json::from_str::<Value>(value) {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
            _ => Value::String(value.into()),
        });
    };
    let kind = python_str(kind).trim().to_lowercase();
    if matches!(
        kind.as_str(),
        "string" | "str" | "text" | "varchar" | "char" | "enum"
    ) {
        return Ok(Value::String(value.into()));
    }
    if ["int", "uint", "long", "short", "unsigned"]
        .iter()
        .any(|p| kind.starts_with(p))
    {
        let x = python_float(value)?;
        if !x.is_finite() {
            // Python: int(float("inf")) raises OverflowError, which the server does not
            // catch.
            return Err(format!("cannot convert {value:?} to an integer"));
        }
        if x.fract() != 0.0 {
            return Err(format!("Invalid integer literal {value:?}"));
        }
        return if x.abs() < 9.007_199_254_740_992e15 {
            Ok(Value::from(x as i64))
        } else {
            number(x)
        };
    }
    if kind.starts_with("num") || kind.starts_with("float") {
        let x = python_float(value)?;
        if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 {
            return Ok(Value::from(x as i64));
        }
        if !x.is_finite() {
            return Err(format!("cannot convert {value:?} to an integer"));
        }
        return number(x);
    }
    if matches!(kind.as_str(), "boolean" | "bool" | "binary") {
        return Ok(Value::Bool(value.to_lowercase() == "true"));
    }
    if matches!(kind.as_str(), "object" | "array" | "arr")
        || kind.starts_with("dict")
        || kind.starts_with("list")
    {
        if let Ok(v) = serde_json::from_str::<Value>(value) {
            return Ok(v);
        }
    }
    Ok(literal_eval(value, false).unwrap_or_else(|_| Value::String(value.into())))
}
