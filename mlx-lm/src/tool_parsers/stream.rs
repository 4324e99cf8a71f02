//! Streamed text split into content, reasoning and tool calls, as `mlx_lm.server` splits a
//! response (its `TextStateMachine` with the tool-call and reasoning transitions of
//! `make_text_state_machine`).

use serde_json::Value;

use super::text_state::{TextState, TextStateMachine};
use super::{ToolCall, ToolCallError, ToolParser};

/// What a piece of generated text turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolEvent {
    /// Text for the user.
    Content(String),
    /// Text inside reasoning markers (only when the stream knows them).
    Reasoning(String),
    /// A parsed call, once its end marker (or the end of the output) was seen.
    ToolCall(ToolCall),
    /// A call whose text does not parse (dropped from the calls, as mlx_lm drops it).
    InvalidToolCall { text: String, error: ToolCallError },
}

/// Splits streamed text of one generation into [`ToolEvent`]s. Marker text is never
/// content: a piece that may begin a marker is held back until the next piece tells.
#[derive(Debug)]
pub struct ToolCallStream<'p> {
    parser: &'p dyn ToolParser,
    tools: Option<Value>,
    machine: TextStateMachine,
    /// The text of the call being read.
    tool_text: String,
    made_tool_call: bool,
    /// Only whitespace seen so far (for formats whose calls may start bare).
    at_start: bool,
    pending_start: String,
}

impl<'p> ToolCallStream<'p> {
    pub(crate) fn new(parser: &'p dyn ToolParser, tools: Option<Value>) -> Self {
        ToolCallStream::build(parser, tools, None, TextState::Normal)
    }

    /// A stream that also knows a reasoning block's markers (`<think>`, `</think>`), and
    /// starts in `initial` (Python's server starts in reasoning when the prompt ends inside
    /// an open block). A tool call may start inside reasoning, as in mlx_lm.
    pub fn with_reasoning(
        parser: &'p dyn ToolParser,
        tools: Option<&Value>,
        think_start: &str,
        think_end: &str,
        initial: TextState,
    ) -> Self {
        ToolCallStream::build(
            parser,
            tools.cloned(),
            Some((think_start.to_string(), think_end.to_string())),
            initial,
        )
    }

    fn build(
        parser: &'p dyn ToolParser,
        tools: Option<Value>,
        reasoning: Option<(String, String)>,
        initial: TextState,
    ) -> Self {
        let start = parser.tool_call_start().to_string();
        let end = parser.tool_call_end().to_string();
        let mut normal = Vec::new();
        let mut transitions = Vec::new();
        if let Some((think_start, think_end)) = reasoning {
            normal.push((think_start, TextState::Reasoning));
            transitions.push((
                TextState::Reasoning,
                vec![
                    (think_end, TextState::Normal),
                    (start.clone(), TextState::Tool),
                ],
            ));
        }
        normal.push((start, TextState::Tool));
        transitions.push((TextState::Normal, normal));
        transitions.push((
            TextState::Tool,
            if end.is_empty() {
                Vec::new()
            } else {
                vec![(end, TextState::Normal)]
            },
        ));
        ToolCallStream {
            parser,
            tools,
            machine: TextStateMachine::new(&transitions, initial),
            tool_text: String::new(),
            made_tool_call: false,
            at_start: parser.bare_json_calls() && initial == TextState::Normal,
            pending_start: String::new(),
        }
    }

    /// Whether a call was seen (then a server reports `finish_reason: "tool_calls"` for
    /// an output that ended at a stop token).
    pub fn made_tool_call(&self) -> bool {
        self.made_tool_call
    }

    /// The state the stream is in.
    pub fn state(&self) -> TextState {
        self.machine.state()
    }

    /// Consumes the next piece of generated text.
    pub fn push(&mut self, text: &str) -> Vec<ToolEvent> {
        if self.at_start {
            // A format whose calls may start bare: the output is a call when its first
            // non-space character opens a JSON object; until then nothing is known.
            self.pending_start.push_str(text);
            if self.pending_start.trim_start().is_empty() {
                return Vec::new();
            }
            self.at_start = false;
            let pending = std::mem::take(&mut self.pending_start);
            let trimmed = pending.trim_start();
            if trimmed.starts_with('{') {
                self.enter_tool_state();
                return self.feed(trimmed);
            }
            return self.feed(&pending);
        }
        self.feed(text)
    }

    fn enter_tool_state(&mut self) {
        let start = self.parser.tool_call_start();
        // The machine takes the marker, which is cut out, and is then in the tool state.
        let _ = self.machine.split(start);
    }

    fn feed(&mut self, text: &str) -> Vec<ToolEvent> {
        let segments = self.machine.split(text);
        self.collect(segments)
    }

    fn collect(&mut self, segments: Vec<(TextState, String)>) -> Vec<ToolEvent> {
        let mut events = Vec::new();
        let n = segments.len();
        for (i, (state, text)) in segments.into_iter().enumerate() {
            match state {
                TextState::Tool => self.tool_text.push_str(&text),
                TextState::Normal if !text.is_empty() => events.push(ToolEvent::Content(text)),
                TextState::Reasoning if !text.is_empty() => events.push(ToolEvent::Reasoning(text)),
                _ => {}
            }
            // A tool run that is not the last one has ended at its end marker.
            if state == TextState::Tool && i + 1 < n {
                self.end_call(&mut events);
            }
        }
        events
    }

    fn end_call(&mut self, events: &mut Vec<ToolEvent>) {
        let text = std::mem::take(&mut self.tool_text);
        self.made_tool_call = true;
        match self.parser.parse_tool_call(&text, self.tools.as_ref()) {
            Ok(calls) => events.extend(calls.into_iter().map(ToolEvent::ToolCall)),
            Err(error) => events.push(ToolEvent::InvalidToolCall { text, error }),
        }
    }

    /// Ends the stream. `length`: the output was cut off (`max_tokens`), and text held back
    /// as a possible marker is handed out; otherwise (a stop token or string) it is
    /// dropped, as mlx_lm's server does. A call still open is parsed as it stands.
    pub fn finish(&mut self, length: bool) -> Vec<ToolEvent> {
        let mut events = Vec::new();
        if self.at_start {
            self.at_start = false;
            let pending = std::mem::take(&mut self.pending_start);
            if length && !pending.is_empty() {
                events.push(ToolEvent::Content(pending));
            }
        }
        if length {
            let state = self.machine.state();
            let rest = self.machine.flush();
            events.extend(self.collect(vec![(state, rest)]));
        } else {
            self.machine.discard();
        }
        if self.machine.state() == TextState::Tool && !self.tool_text.is_empty() {
            self.end_call(&mut events);
        }
        events
    }
}
