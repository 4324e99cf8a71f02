//! Pythonic calls (Python: `mlx_lm/tool_parsers/pythonic.py`):
//! `<|tool_call_start|>[name(a="x", b=2), other(c=[1, 2])]<|tool_call_end|>` (LFM2,
//! Llama 3.2 / 4's pythonic templates).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::python_literal::{literal_eval, Parser, PyResult};
use super::{ToolCall, ToolCallError, ToolParser};

static CALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)\[(?P<name>[\w.]+)\((?P<args>.*?)\)\]").expect("a valid pattern")
});
// Python's pattern names both quoted forms `quoted`; Rust's engine wants two names. Its `$`
// (no MULTILINE) also matches before a final newline.
static ARGS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?s)(?P<key>\w+)=(?:"(?P<q1>[^"]*)"|'(?P<q2>[^']*)'|(?P<bare>[^,]+))(?:,\s*|\n?\z)"#,
    )
    .expect("a valid pattern")
});

/// Python-call syntax in brackets.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pythonic;

impl ToolParser for Pythonic {
    fn name(&self) -> &'static str {
        "pythonic"
    }

    fn tool_call_start(&self) -> &'static str {
        "<|tool_call_start|>"
    }

    fn tool_call_end(&self) -> &'static str {
        "<|tool_call_end|>"
    }

    fn parse_tool_call(
        &self,
        text: &str,
        _: Option<&Value>,
    ) -> Result<Vec<ToolCall>, ToolCallError> {
        if let Some(calls) = calls_as_python(text) {
            return calls.map_err(ToolCallError);
        }
        // Anything that is not valid Python: the regex form.
        let Some(m) = CALL.captures(text) else {
            return Err(ToolCallError("No function provided.".into()));
        };
        let mut arguments = Map::new();
        for a in ARGS.captures_iter(&m["args"]) {
            let value = match (a.name("bare"), a.name("q1").or(a.name("q2"))) {
                (Some(bare), _) => bare.as_str().trim_matches(super::json_tools::PY_WHITESPACE),
                (None, Some(quoted)) => quoted.as_str(),
                (None, None) => "",
            };
            // Python literal_evals even a quoted value ("3" becomes 3) and keeps the string
            // where that fails.
            let value = literal_eval(value, false).unwrap_or_else(|_| Value::String(value.into()));
            arguments.insert(a["key"].to_string(), value);
        }
        Ok(vec![ToolCall {
            id: None,
            name: m["name"].to_string(),
            arguments: Value::Object(arguments),
        }])
    }
}

/// The text from its first `[` to its last `]` as a Python list of calls with keyword
/// literal arguments: `None` when it is not one (Python then tries the regex), an error when
/// it is but a value has no JSON form (Python's server crashes there).
fn calls_as_python(text: &str) -> Option<Result<Vec<ToolCall>, String>> {
    let start = text.find('[')?;
    let end = text.rfind(']')?;
    if end <= start {
        return None;
    }
    let mut p = Parser::new(&text[start..=end], true);
    let calls = list_of_calls(&mut p).ok()?;
    p.skip_space();
    if !p.at_end() || calls.is_empty() {
        return None;
    }
    Some(calls.into_iter().collect())
}

type Call = Result<ToolCall, String>;

fn list_of_calls(p: &mut Parser) -> PyResult<Vec<Call>> {
    p.expect('[')?;
    let mut calls = Vec::new();
    loop {
        if p.eat(']') {
            return Ok(calls);
        }
        calls.push(call(p)?);
        if !p.eat(',') {
            p.expect(']')?;
            return Ok(calls);
        }
    }
}

fn call(p: &mut Parser) -> PyResult<Call> {
    let mut name = p.name().ok_or("no function name")?;
    while p.eat('.') {
        name.push('.');
        name.push_str(&p.name().ok_or("no attribute name")?);
    }
    p.expect('(')?;
    let mut arguments = Map::new();
    loop {
        if p.eat(')') {
            break;
        }
        let key = p.name().ok_or("a positional argument")?;
        p.expect('=')?;
        // Python: literal_eval raises ValueError on a value that is no literal, and the
        // whole text goes to the regex.
        let value = p.value()?;
        if arguments.contains_key(&key) {
            return Err(format!("keyword argument repeated: {key}"));
        }
        arguments.insert(key, value);
        if !p.eat(',') {
            p.expect(')')?;
            break;
        }
    }
    Ok(Ok(ToolCall {
        id: None,
        name,
        arguments: Value::Object(arguments),
    }))
}
