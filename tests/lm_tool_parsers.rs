//! Tool-call parsing (`mlx_lm::tool_parsers`) against mlx_lm 0.32.2's server pipeline
//! (`scripts/golden/tool_parsers.py`): for every format and model output, the text whole,
//! split in two at every character, and one character at a time, ending at a stop token or
//! at `max_tokens`; each piece's content, reasoning and calls must be Python's, at the same
//! piece. Exact comparison: the events are strings and JSON values. Calls mlx_lm's server
//! drops (a parse error) or crashes on are both invalid calls here.
//!
//! Beside the golden data: the format choice from chat templates and vocabularies, and
//! Llama 3's JSON calls, which mlx_lm does not parse (checked against the format Meta's
//! templates define).

mod support;

use mlx::lm::tool_parsers::{
    infer_tool_parser, parser_for, ParsedOutput, TextState, ToolCallStream, ToolEvent, ToolParser,
    TOOL_PARSERS,
};
use serde_json::{json, Value};

fn golden() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/lm/tool_parsers.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Events as the golden file writes them, adjacent text of one kind joined (Python's
/// state machine may hand a piece's text out in several runs).
fn normalize(events: impl IntoIterator<Item = Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for e in events {
        let kind = e[0].as_str().unwrap().to_string();
        if kind == "content" || kind == "reasoning" {
            let text = e[1].as_str().unwrap();
            if text.is_empty() {
                continue;
            }
            if let Some(last) = out.last_mut() {
                if last[0] == kind.as_str() {
                    let joined = format!("{}{text}", last[1].as_str().unwrap());
                    last[1] = Value::String(joined);
                    continue;
                }
            }
        }
        out.push(e);
    }
    out
}

fn as_json(e: &ToolEvent) -> Value {
    match e {
        ToolEvent::Content(t) => json!(["content", t]),
        ToolEvent::Reasoning(t) => json!(["reasoning", t]),
        ToolEvent::ToolCall(c) => {
            json!(["call", {"name": c.name, "arguments": c.arguments, "id": c.id}])
        }
        ToolEvent::InvalidToolCall { .. } => json!(["invalid"]),
    }
}

fn expected(steps: &Value) -> Vec<Vec<Value>> {
    steps
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            normalize(s.as_array().unwrap().iter().map(|e| {
                if e[0] == "invalid" {
                    json!(["invalid"])
                } else {
                    e.clone()
                }
            }))
        })
        .collect()
}

fn run(parser: &dyn ToolParser, case: &Value, pieces: &[String]) -> Vec<Vec<Value>> {
    let tools = (!case["tools"].is_null()).then_some(&case["tools"]);
    let mut stream = if case["thinking"] == true {
        ToolCallStream::with_reasoning(parser, tools, "<think>", "</think>", TextState::Normal)
    } else {
        parser.stream(tools)
    };
    let mut steps: Vec<Vec<Value>> = pieces
        .iter()
        .map(|p| normalize(stream.push(p).iter().map(as_json)))
        .collect();
    let length = case["finish"] == "length";
    steps.push(normalize(stream.finish(length).iter().map(as_json)));
    steps
}

#[test]
fn streams_match_mlx_lm_at_every_split() {
    let data = golden();
    let cases = data["streams"].as_array().unwrap();
    assert!(cases.len() >= 70);
    let mut compared = 0;
    for case in cases {
        let name = case["parser"].as_str().unwrap();
        let parser = parser_for(name).unwrap();
        let text = case["text"].as_str().unwrap();
        let chars: Vec<char> = text.chars().collect();
        let label = format!("{name} {:?} finish={}", text, case["finish"]);

        let whole = run(parser.as_ref(), case, &[text.to_string()]);
        assert_eq!(whole, expected(&case["whole"]), "{label}: whole");

        let pieces: Vec<String> = chars.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            run(parser.as_ref(), case, &pieces),
            expected(&case["chars"]),
            "{label}: a character at a time"
        );
        for (i, split) in case["splits"].as_array().unwrap().iter().enumerate() {
            let head: String = chars[..i].iter().collect();
            let tail: String = chars[i..].iter().collect();
            assert_eq!(
                run(parser.as_ref(), case, &[head, tail]),
                expected(split),
                "{label}: split at character {i}"
            );
            compared += 1;
        }
        // The joined pieces never hold a marker.
        let all: Vec<ToolEvent> = {
            let mut s = parser.stream((!case["tools"].is_null()).then_some(&case["tools"]));
            let mut e: Vec<ToolEvent> = pieces.iter().flat_map(|p| s.push(p)).collect();
            e.extend(s.finish(case["finish"] == "length"));
            e
        };
        let content = ParsedOutput::from_events(all).content;
        if case["thinking"] != true {
            assert!(
                !content.contains(parser.tool_call_start()),
                "{label}: {content:?}"
            );
        }
    }
    assert!(compared > 2000, "{compared}");
}

#[test]
fn parse_is_the_whole_stream() {
    let parser = parser_for("qwen3_coder").unwrap();
    let text = "Hi <tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call> bye";
    let out = parser.parse(text, None);
    assert_eq!(out.content, "Hi  bye");
    assert_eq!(out.tool_calls.len(), 1);
    assert_eq!(out.tool_calls[0].arguments, json!({"x": "1"}));
    assert!(out.invalid.is_empty());
    let bad = parser_for("json_tools")
        .unwrap()
        .parse("<tool_call>{oops</tool_call>", None);
    assert!(bad.tool_calls.is_empty());
    assert_eq!(bad.invalid.len(), 1);
    assert_eq!(bad.invalid[0].0, "{oops");
    assert!(
        bad.invalid[0].1.to_string().contains("not JSON"),
        "{}",
        bad.invalid[0].1
    );
}

#[test]
fn format_choice_matches_mlx_lm() {
    for case in golden()["selection"].as_array().unwrap() {
        let vocab: Vec<&str> = case["vocab"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let got = infer_tool_parser(case["template"].as_str(), |t| vocab.contains(&t));
        assert_eq!(got, case["parser"].as_str(), "{}", case["label"]);
    }
    // Every name the choice gives that a parser exists for is one.
    for name in TOOL_PARSERS {
        assert_eq!(parser_for(name).unwrap().name(), name);
    }
    assert!(parser_for("gemma4").is_none());
}

#[test]
fn llama3_choice_and_tokenizer_config() {
    // Llama 3.1's template names <|python_tag|> and mlx_lm finds no format in it.
    let llama = "{%- if builtin_tools is defined %}{{- '<|python_tag|>' }}{%- endif %}{{- '{\"name\": \"' + tool_call.name + '\", \"parameters\": ' }}";
    assert_eq!(
        infer_tool_parser(Some(llama), |_| false),
        Some("llama3_json")
    );
    // tokenizer_config.json's tool_parser_type wins over the template.
    let dir = support::lm::model_dir("qwen3");
    let tmp = std::env::temp_dir().join(format!("tool-parser-type-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::copy(dir.join("tokenizer.json"), tmp.join("tokenizer.json")).unwrap();
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tokenizer_config.json")).unwrap())
            .unwrap();
    let tokenizer = mlx::lm::Tokenizer::load(&tmp).unwrap();
    assert_eq!(
        mlx::lm::tool_parsers::tool_parser_for_tokenizer(&tokenizer),
        None
    );
    config["tool_parser_type"] = json!("mistral");
    std::fs::write(tmp.join("tokenizer_config.json"), config.to_string()).unwrap();
    let tokenizer = mlx::lm::Tokenizer::load(&tmp).unwrap();
    assert_eq!(tokenizer.tool_parser_type(), Some("mistral"));
    assert_eq!(
        mlx::lm::tool_parsers::tool_parser_for_tokenizer(&tokenizer),
        Some("mistral")
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

fn events(parser: &dyn ToolParser, pieces: &[&str], length: bool) -> Vec<Value> {
    let mut s = parser.stream(None);
    let mut out: Vec<Value> = pieces
        .iter()
        .flat_map(|p| s.push(p))
        .map(|e| as_json(&e))
        .collect();
    out.extend(s.finish(length).iter().map(as_json));
    normalize(out)
}

#[test]
fn llama3_json_calls() {
    let p = parser_for("llama3_json").unwrap();
    let call = r#"{"name": "get_weather", "parameters": {"city": "Paris"}}"#;
    let expected =
        vec![json!(["call", {"name": "get_weather", "arguments": {"city": "Paris"}, "id": null}])];
    // A bare call, split anywhere, leading whitespace included.
    let text = format!("\n {call}");
    for i in 0..=text.len() {
        assert_eq!(
            events(p.as_ref(), &[&text[..i], &text[i..]], false),
            expected,
            "split {i}"
        );
    }
    // After <|python_tag|>, and several joined by ';'.
    let two = format!("<|python_tag|>{call}; {{\"name\": \"b\", \"arguments\": {{}}}}");
    let got = events(p.as_ref(), &[&two], false);
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[1],
        json!(["call", {"name": "b", "arguments": {}, "id": null}])
    );
    // Text first: content, and a later python_tag starts a call.
    let mixed = format!("Let me check. <|python_tag|>{call}");
    assert_eq!(
        events(p.as_ref(), &[&mixed], false),
        vec![json!(["content", "Let me check. "]), expected[0].clone()]
    );
    // Content that only mentions JSON later is content.
    let prose = r#"Use {"name": 1} like this."#;
    assert_eq!(
        events(p.as_ref(), &["Use", &prose[3..]], false),
        vec![json!(["content", prose])]
    );
    // Cut off: an invalid call; whitespace alone is nothing.
    assert_eq!(
        events(p.as_ref(), &[r#"{"name": "f", "param"#], true),
        vec![json!(["invalid"])]
    );
    assert_eq!(events(p.as_ref(), &["  "], false), Vec::<Value>::new());
    assert_eq!(
        events(p.as_ref(), &["  "], true),
        vec![json!(["content", "  "])]
    );
    // No name or no parameters: invalid.
    assert_eq!(
        events(p.as_ref(), &[r#"{"parameters": {}}"#], false),
        vec![json!(["invalid"])]
    );
    assert_eq!(
        events(p.as_ref(), &[r#"{"name": "f"}"#], false),
        vec![json!(["invalid"])]
    );
}
