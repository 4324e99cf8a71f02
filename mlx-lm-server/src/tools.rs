//! Tool calling: the request's tools and `tool_choice` in both APIs' shapes, the model's
//! tool-call format (chosen as `mlx_lm.server` chooses it, from the tokenizer), generated
//! text split into content and calls while it streams, and — for a forced choice — a
//! grammar of the format that the output must follow.
//!
//! A forced choice (OpenAI `"required"` or a named function, Anthropic `any` or a named
//! tool) is a constraint: a Lark grammar whose calls are the format's markers around a
//! JSON value of the call's schema (the tool's `parameters` under its `name`). Formats
//! whose arguments are not one JSON value (`pythonic`, `qwen3_coder`: Python literals and
//! XML-tagged parameters, typed by the schema) cannot be constrained by a JSON schema; a
//! forced choice on such a model is a 400 that names the format.

use mlx_lm::tool_parsers::{ToolCall, ToolCallStream, ToolEvent, ToolParser};
use mlx_lm::Tokenizer;
use serde_json::{json, Map, Value};

use crate::error::ApiError;

/// One function a request offers, in OpenAI's shape (`{"name", "parameters", ...}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    pub name: String,
    /// The arguments' JSON schema (absent: any object).
    pub parameters: Value,
    /// OpenAI's `strict`: on, a schema keyword the grammar engine cannot enforce is an
    /// error rather than ignored.
    pub strict: bool,
}

/// What the model may or must do with the tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// Call tools or not, as the model decides.
    Auto,
    /// Call none: the tools are not shown to the model.
    None,
    /// Call at least one (OpenAI `"required"`, Anthropic `any`).
    Required,
    /// Call this one.
    Named(String),
}

/// The tools of a request, read and checked.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The OpenAI `tools` list as the chat template and the parsers see it.
    pub openai: Vec<Value>,
    pub functions: Vec<Function>,
    pub choice: ToolChoice,
    /// Whether a forced choice may make several calls.
    pub parallel: bool,
}

impl Tools {
    /// OpenAI's `tools`, `tool_choice` and `parallel_tool_calls`.
    pub fn from_openai(
        tools: Option<&[Value]>,
        choice: Option<&Value>,
        parallel: Option<bool>,
    ) -> Result<Option<Tools>, ApiError> {
        let tools = tools.unwrap_or_default();
        let mut functions = Vec::with_capacity(tools.len());
        for (i, t) in tools.iter().enumerate() {
            let param = format!("tools[{i}]");
            if t.get("type").and_then(Value::as_str).unwrap_or("function") != "function" {
                return Err(ApiError::invalid(
                    &param,
                    format!("{param}: only tools of type \"function\" are supported"),
                ));
            }
            let f = t.get("function").ok_or_else(|| {
                ApiError::invalid(&param, format!("{param} has no `function` object"))
            })?;
            functions.push(function(f, "parameters", &format!("{param}.function"))?);
        }
        let choice = match choice {
            None | Some(Value::Null) => ToolChoice::Auto,
            Some(Value::String(s)) => match s.as_str() {
                "auto" => ToolChoice::Auto,
                "none" => ToolChoice::None,
                "required" => ToolChoice::Required,
                other => {
                    return Err(ApiError::invalid(
                        "tool_choice",
                        format!(
                            "tool_choice {other:?} is not one of \"auto\", \"none\", \
                             \"required\" or a function object"
                        ),
                    ))
                }
            },
            Some(v) => {
                let name = v
                    .get("function")
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .filter(|_| v.get("type").and_then(Value::as_str) == Some("function"));
                match name {
                    Some(n) => ToolChoice::Named(n.to_string()),
                    None => {
                        return Err(ApiError::invalid(
                            "tool_choice",
                            format!(
                                "tool_choice {v} is not {{\"type\": \"function\", \
                                 \"function\": {{\"name\": ...}}}}"
                            ),
                        ))
                    }
                }
            }
        };
        Tools::build(tools.to_vec(), functions, choice, parallel.unwrap_or(true))
    }

    /// Anthropic's `tools` (`{"name", "description", "input_schema"}`) and `tool_choice`
    /// (`{"type": "auto" | "any" | "tool" | "none", "name", "disable_parallel_tool_use"}`);
    /// the tools are handed on in OpenAI's function shape, which chat templates expect.
    pub fn from_anthropic(
        tools: Option<&[Map<String, Value>]>,
        choice: Option<&Value>,
    ) -> Result<Option<Tools>, ApiError> {
        let tools = tools.unwrap_or_default();
        let mut functions = Vec::with_capacity(tools.len());
        let mut openai = Vec::with_capacity(tools.len());
        for (i, t) in tools.iter().enumerate() {
            let t = Value::Object(t.clone());
            let f = function(&t, "input_schema", &format!("tools[{i}]"))?;
            openai.push(json!({"type": "function", "function": {
                "name": f.name,
                "description": t.get("description"),
                "parameters": t.get("input_schema"),
            }}));
            functions.push(f);
        }
        let bad = |v: &Value| {
            ApiError::invalid(
                "tool_choice",
                format!(
                    "tool_choice {v} is not {{\"type\": \"auto\" | \"any\" | \"none\"}} or \
                     {{\"type\": \"tool\", \"name\": ...}}"
                ),
            )
        };
        let mut parallel = true;
        let choice = match choice {
            None | Some(Value::Null) => ToolChoice::Auto,
            Some(v) => {
                parallel = !v
                    .get("disable_parallel_tool_use")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                match v.get("type").and_then(Value::as_str) {
                    Some("auto") => ToolChoice::Auto,
                    Some("none") => ToolChoice::None,
                    Some("any") => ToolChoice::Required,
                    Some("tool") => ToolChoice::Named(
                        v.get("name")
                            .and_then(Value::as_str)
                            .ok_or_else(|| bad(v))?
                            .to_string(),
                    ),
                    _ => return Err(bad(v)),
                }
            }
        };
        Tools::build(openai, functions, choice, parallel)
    }

    fn build(
        openai: Vec<Value>,
        functions: Vec<Function>,
        choice: ToolChoice,
        parallel: bool,
    ) -> Result<Option<Tools>, ApiError> {
        if functions.is_empty() {
            return match choice {
                ToolChoice::Auto | ToolChoice::None => Ok(None),
                _ => Err(ApiError::invalid(
                    "tool_choice",
                    "tool_choice forces a tool call, but the request has no tools",
                )),
            };
        }
        if let ToolChoice::Named(name) = &choice {
            if !functions.iter().any(|f| &f.name == name) {
                return Err(ApiError::invalid(
                    "tool_choice",
                    format!("tool_choice names {name:?}, which is not among the tools"),
                ));
            }
        }
        Ok(Some(Tools {
            openai,
            functions,
            choice,
            parallel,
        }))
    }

    /// The tools the chat template gets: none when the model may not call any.
    pub fn for_template(&self) -> Option<Vec<Value>> {
        (self.choice != ToolChoice::None).then(|| self.openai.clone())
    }

    /// Whether the output is to be read for calls.
    pub fn parse_calls(&self) -> bool {
        self.choice != ToolChoice::None
    }

    /// The Lark grammar a forced choice puts on the output (`None` when nothing is
    /// forced); an error names a format that cannot be constrained.
    pub fn forced_grammar(
        &self,
        format: Option<&dyn ToolParser>,
        tokenizer: &Tokenizer,
    ) -> Result<Option<String>, ApiError> {
        let allowed: Vec<&Function> = match &self.choice {
            ToolChoice::Auto | ToolChoice::None => return Ok(None),
            ToolChoice::Required => self.functions.iter().collect(),
            ToolChoice::Named(n) => self.functions.iter().filter(|f| &f.name == n).collect(),
        };
        let Some(format) = format else {
            return Err(ApiError::invalid(
                "tool_choice",
                "tool_choice forces a tool call, but this model's tokenizer has no tool-call \
                 format this server can parse (none of mlx_lm's markers are in its chat \
                 template, and tokenizer_config.json names no supported tool_parser_type)",
            ));
        };
        // A marker that is one token of the vocabulary is written as that token, which is
        // how the model emits it (a special token is not spelled out of text pieces).
        let marker = |text: &str| match tokenizer.token_to_id(text) {
            Some(id) => format!("<[{id}]>"),
            None => Value::String(text.to_string()).to_string(),
        };
        let one = !self.parallel || matches!(self.choice, ToolChoice::Named(_));
        let strict = allowed.iter().any(|f| f.strict);
        let grammar = match format.name() {
            "json_tools" => {
                let call = json_grammar(&call_schema(&allowed, "arguments"), strict);
                let block = format!(
                    "{} \"\\n\" call \"\\n\" {}",
                    marker(format.tool_call_start()),
                    marker(format.tool_call_end())
                );
                let start = if one {
                    "start: block".to_string()
                } else {
                    "start: block (\"\\n\" block)*".to_string()
                };
                format!("{start}\nblock: {block}\ncall: {call}\n")
            }
            "llama3_json" => {
                let call = json_grammar(&call_schema(&allowed, "parameters"), strict);
                let start = if one {
                    "start: call".to_string()
                } else {
                    "start: call (\"; \" call)*".to_string()
                };
                format!("{start}\ncall: {call}\n")
            }
            "mistral" => {
                let mut list = json!({"type": "array", "items": call_schema(&allowed, "arguments"), "minItems": 1});
                if one {
                    list["maxItems"] = json!(1);
                }
                format!(
                    "start: {} calls\ncalls: {}\n",
                    marker(format.tool_call_start()),
                    json_grammar(&list, strict)
                )
            }
            other => {
                return Err(ApiError::invalid(
                    "tool_choice",
                    format!(
                        "tool_choice forces a tool call, but this model's tool-call format \
                         {other:?} writes arguments that a JSON schema grammar cannot \
                         constrain cleanly; use tool_choice \"auto\""
                    ),
                ))
            }
        };
        Ok(Some(grammar))
    }
}

/// One tool's name and schema; `schema_key`: where its schema is (`parameters` or
/// Anthropic's `input_schema`).
fn function(f: &Value, schema_key: &str, param: &str) -> Result<Function, ApiError> {
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::invalid(param, format!("{param} has no string `name`")))?;
    let parameters = match f.get(schema_key) {
        None | Some(Value::Null) => json!({"type": "object"}),
        Some(s @ (Value::Object(_) | Value::Bool(_))) => s.clone(),
        Some(v) => {
            return Err(ApiError::invalid(
                param,
                format!("{param}.{schema_key} must be a JSON schema object, got {v}"),
            ))
        }
    };
    Ok(Function {
        name: name.to_string(),
        parameters,
        strict: f.get("strict").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// A call object of one of `functions`: `{"name": <const>, <key>: <its schema>}`, the
/// name first as the formats write it.
fn call_schema(functions: &[&Function], key: &str) -> Value {
    let one = |f: &Function| {
        let mut properties = Map::new();
        properties.insert("name".into(), json!({"const": f.name}));
        properties.insert(key.into(), f.parameters.clone());
        json!({"type": "object", "properties": properties,
               "required": ["name", key], "additionalProperties": false})
    };
    match functions {
        [f] => one(f),
        fs => json!({"anyOf": fs.iter().map(|f| one(f)).collect::<Vec<_>>()}),
    }
}

/// llguidance's embedded JSON-schema rule, in the server's JSON layout; not strict: schema
/// keywords it cannot enforce are ignored (OpenAI's default for function schemas).
fn json_grammar(schema: &Value, strict: bool) -> String {
    let mut schema = schema.clone();
    crate::constraint::json_layout(&mut schema);
    if !strict {
        schema["x-guidance"]["lenient"] = json!(true);
    }
    format!("%json {schema}")
}

/// A call in OpenAI's shape (`arguments` a JSON string, as mlx_lm's server writes it).
pub fn openai_call(call: &ToolCall) -> Value {
    json!({
        "id": call_id(call, "call_"),
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments.to_string()},
    })
}

/// A call as an Anthropic `tool_use` content block.
pub fn anthropic_block(call: &ToolCall) -> Value {
    json!({"type": "tool_use", "id": call_id(call, "toolu_"), "name": call.name, "input": call.arguments})
}

fn call_id(call: &ToolCall, prefix: &str) -> String {
    call.id
        .clone()
        .unwrap_or_else(|| format!("{prefix}{}", crate::next_id()))
}

/// Generated text, piece by piece, split into content and calls.
#[derive(Debug)]
pub struct Splitter {
    stream: Option<ToolCallStream<'static>>,
}

impl Splitter {
    /// Splits by `format` when the request's calls are read; otherwise all text is content.
    pub fn new(format: Option<&'static dyn ToolParser>, tools: Option<&Tools>) -> Splitter {
        let stream = match (format, tools) {
            (Some(p), Some(t)) if t.parse_calls() => {
                Some(p.stream(Some(&Value::Array(t.openai.clone()))))
            }
            _ => None,
        };
        Splitter { stream }
    }

    /// The events of the next piece.
    pub fn push(&mut self, text: &str) -> Vec<ToolEvent> {
        match &mut self.stream {
            Some(s) => s.push(text),
            None if text.is_empty() => Vec::new(),
            None => vec![ToolEvent::Content(text.to_string())],
        }
    }

    /// The events at the end; `length`: the output was cut off.
    pub fn finish(&mut self, length: bool) -> Vec<ToolEvent> {
        self.stream
            .as_mut()
            .map_or_else(Vec::new, |s| s.finish(length))
    }

    /// Whether a call was made (the finish reason becomes the API's tool-call one).
    pub fn made_tool_call(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.made_tool_call())
    }
}

/// Logs a call that did not parse (it is dropped, as mlx_lm's server drops it).
pub fn log_invalid(text: &str, error: &impl std::fmt::Display) {
    eprintln!("dropped a tool call that does not parse ({error}): {text:?}");
}
