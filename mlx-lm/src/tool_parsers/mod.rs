//! Tool calls in generated text (Python: `mlx_lm/tool_parsers/`, and how `mlx_lm.server`
//! finds them): each model family writes its calls between its own markers in its own
//! format; a [`ToolParser`] knows one format, [`infer_tool_parser`] picks it for a
//! tokenizer as mlx_lm does, and [`ToolCallStream`] splits streamed text into content and
//! calls without ever handing out marker text as content.
//!
//! ```
//! use mlx_lm::tool_parsers::{parser_for, ToolEvent};
//!
//! let parser = parser_for("json_tools").unwrap();
//! let text = "Let me check.<tool_call>{\"name\": \"weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>";
//! let out = parser.parse(text, None);
//! assert_eq!(out.content, "Let me check.");
//! assert_eq!(out.tool_calls[0].name, "weather");
//! assert_eq!(out.tool_calls[0].arguments["city"], "Oslo");
//!
//! // Streaming: the same text in pieces, split anywhere.
//! let mut stream = parser.stream(None);
//! let mut events = Vec::new();
//! for piece in ["Let me check.<tool", "_call>{\"name\": \"weather\", ", "\"arguments\": {}}</tool_call>"] {
//!     events.extend(stream.push(piece));
//! }
//! events.extend(stream.finish(false));
//! assert!(matches!(&events[0], ToolEvent::Content(t) if t == "Let me check."));
//! assert!(matches!(&events[1], ToolEvent::ToolCall(c) if c.name == "weather"));
//! ```
//!
//! A call that does not parse (a truncated generation, a model that strays from its
//! format) is dropped from the calls, as `mlx_lm.server` drops it with a warning, and
//! reported as [`ToolEvent::InvalidToolCall`] / [`ParsedOutput::invalid`] with its text and
//! the reason. Where mlx_lm's server crashes instead (a JSON call without `name` or
//! `arguments` raises `KeyError` in its formatter, a call that is not an object
//! `AttributeError`), the call is reported the same way, as invalid.

mod json_tools;
mod llama3_json;
mod mistral;
mod python_literal;
mod pythonic;
mod qwen3_coder;
mod stream;
mod text_state;

use serde_json::Value;

pub use json_tools::JsonTools;
pub use llama3_json::Llama3Json;
pub use mistral::Mistral;
pub use pythonic::Pythonic;
pub use qwen3_coder::Qwen3Coder;
pub use stream::{ToolCallStream, ToolEvent};
pub use text_state::TextState;

/// One call of a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The id the model gave the call, where its format has one (Mistral's JSON form);
    /// a server makes one up otherwise, as mlx_lm does.
    pub id: Option<String>,
    pub name: String,
    /// The arguments, as JSON (OpenAI sends them as a JSON string of this value).
    pub arguments: Value,
}

/// Why a tool call's text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("could not parse tool call: {0}")]
pub struct ToolCallError(pub String);

/// A completed text taken apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedOutput {
    /// The text outside tool calls, markers removed.
    pub content: String,
    /// The text of reasoning blocks, where the stream was told its markers.
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    /// Calls that did not parse: their text and why.
    pub invalid: Vec<(String, ToolCallError)>,
}

/// One tool-call format (Python: a module of `mlx_lm.tool_parsers`).
pub trait ToolParser: Send + Sync + std::fmt::Debug {
    /// mlx_lm's name of the format (`tool_parser_type` in `tokenizer_config.json`).
    fn name(&self) -> &'static str;

    /// The text that opens a tool call.
    fn tool_call_start(&self) -> &'static str;

    /// The text that closes one; empty where a call runs to the end of the output.
    fn tool_call_end(&self) -> &'static str;

    /// Reads the text between the markers into one or more calls (Python:
    /// `parse_tool_call(text, tools)`); `tools` is the request's OpenAI `tools` list, which
    /// some formats read to type the arguments.
    fn parse_tool_call(
        &self,
        text: &str,
        tools: Option<&Value>,
    ) -> Result<Vec<ToolCall>, ToolCallError>;

    /// Whether an output that begins with a JSON object is a call without a start marker
    /// (Llama 3's custom tools).
    fn bare_json_calls(&self) -> bool {
        false
    }
}

impl<'a> dyn ToolParser + 'a {
    /// A stream over generated text in this format.
    pub fn stream(&self, tools: Option<&Value>) -> ToolCallStream<'_> {
        ToolCallStream::new(self, tools.cloned())
    }

    /// Takes a completed generation apart.
    pub fn parse(&self, text: &str, tools: Option<&Value>) -> ParsedOutput {
        let mut stream = self.stream(tools);
        let mut events = stream.push(text);
        events.extend(stream.finish(false));
        ParsedOutput::from_events(events)
    }
}

impl ParsedOutput {
    /// Gathers a stream's events.
    pub fn from_events(events: impl IntoIterator<Item = ToolEvent>) -> ParsedOutput {
        let mut out = ParsedOutput::default();
        for e in events {
            match e {
                ToolEvent::Content(t) => out.content.push_str(&t),
                ToolEvent::Reasoning(t) => out.reasoning.push_str(&t),
                ToolEvent::ToolCall(c) => out.tool_calls.push(c),
                ToolEvent::InvalidToolCall { text, error } => out.invalid.push((text, error)),
            }
        }
        out
    }
}

/// The names [`parser_for`] knows.
pub const TOOL_PARSERS: [&str; 5] = [
    "json_tools",
    "llama3_json",
    "mistral",
    "pythonic",
    "qwen3_coder",
];

/// The parser of a format by mlx_lm's name (`tool_parser_type`).
pub fn parser_for(name: &str) -> Option<Box<dyn ToolParser>> {
    Some(match name {
        "json_tools" => Box::new(JsonTools),
        "llama3_json" => Box::new(Llama3Json),
        "mistral" => Box::new(Mistral),
        "pythonic" => Box::new(Pythonic),
        "qwen3_coder" => Box::new(Qwen3Coder),
        _ => return None,
    })
}

/// mlx_lm's choice of a tool-call format (`tokenizer_utils._infer_tool_parser`): by marker
/// strings in the chat template, in mlx_lm's order, then by tokens in the vocabulary. The
/// formats mlx_lm knows and this module does not yet (`minimax_m2`, `gemma4`,
/// `function_gemma`, `longcat`, `glm47`, `kimi_k2`, `minicpm5`, `muse_spark`, `kimi_k3`)
/// are still recognised, so the name is mlx_lm's, and [`parser_for`] then says `None`.
/// One addition: a template mlx_lm finds no format in that has Llama 3's
/// `<|python_tag|>` is `llama3_json` (mlx_lm serves Llama 3 without tool parsing).
pub fn infer_tool_parser(
    chat_template: Option<&str>,
    has_token: impl Fn(&str) -> bool,
) -> Option<&'static str> {
    if let Some(t) = chat_template {
        let has = |s: &str| t.contains(s);
        let name = if has("<minimax:tool_call>") {
            Some("minimax_m2")
        } else if has("<|tool_call>") && has("<tool_call|>") {
            Some("gemma4")
        } else if has("<start_function_call>") {
            Some("function_gemma")
        } else if has("<longcat_tool_call>") {
            Some("longcat")
        } else if has("<arg_key>") {
            Some("glm47")
        } else if has("<|tool_list_start|>") || has("<|tool_call_start|>") {
            Some("pythonic")
        } else if has("<tool_call>\\n<function=") || has("<tool_call>\n<function=") {
            Some("qwen3_coder")
        } else if has("<|tool_calls_section_begin|>") {
            Some("kimi_k2")
        } else if has("<function name=\"") && has("<param name=\"") {
            Some("minicpm5")
        } else if has("[TOOL_CALLS]") {
            Some("mistral")
        } else if has("<atem:function_calls>") {
            Some("muse_spark")
        } else if has("<tool_call>") && has("tool_call.name") {
            Some("json_tools")
        } else {
            None
        };
        if name.is_some() {
            return name;
        }
    }
    // mlx_lm's `_is_xtml_vocab`: the Kimi K3 control tokens.
    if ["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"]
        .iter()
        .all(|t| has_token(t))
    {
        return Some("kimi_k3");
    }
    if has_token("<|tool_call_start|>") && has_token("<|tool_call_end|>") {
        return Some("pythonic");
    }
    if chat_template.is_some_and(|t| t.contains("<|python_tag|>")) {
        return Some("llama3_json");
    }
    None
}

/// The format of a tokenizer (Python: `tokenizer_utils.load`): `tokenizer_config.json`'s
/// `tool_parser_type` when it names one, else [`infer_tool_parser`] on its chat template
/// and vocabulary.
pub fn tool_parser_for_tokenizer(tokenizer: &crate::Tokenizer) -> Option<&'static str> {
    if let Some(name) = tokenizer.tool_parser_type() {
        return KNOWN.iter().find(|k| **k == name).copied();
    }
    infer_tool_parser(tokenizer.chat_template().map(|t| t.source()), |t| {
        tokenizer.token_to_id(t).is_some()
    })
}

/// Every name mlx_lm 0.32.2 has a module for.
const KNOWN: [&str; 15] = [
    "function_gemma",
    "gemma4",
    "glm47",
    "json_tools",
    "kimi_k2",
    "kimi_k3",
    "laguna",
    "llama3_json",
    "longcat",
    "minicpm5",
    "minimax_m2",
    "mistral",
    "muse_spark",
    "pythonic",
    "qwen3_coder",
];
