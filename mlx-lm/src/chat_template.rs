//! Chat templates (Python: `tokenizer.apply_chat_template(..., tokenize=False)`), rendered
//! with `minijinja` in the environment `transformers` gives Jinja: blocks trimmed
//! (`trim_blocks`, `lstrip_blocks`), `break` / `continue`, Python's string and dict methods
//! (`.strip()`, `.split()`, `.startswith()`, `.items()`, ...), `raise_exception`,
//! `strftime_now`, and `tojson` as Python's `json.dumps` writes it (`", "` and `": "`
//! separators, non-ASCII kept, Python's float repr) rather than Jinja's HTML-safe one.

use std::path::{Path, PathBuf};

use minijinja::value::{Kwargs, Value as JValue, ValueKind};
use minijinja::{Environment, ErrorKind};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// How to render a conversation (Python: the keyword arguments of `apply_chat_template`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatOptions {
    /// End with the header of an assistant turn, for the model to answer.
    pub add_generation_prompt: bool,
    /// End inside the last message (an assistant reply to go on with) instead of closing it.
    pub continue_final_message: bool,
    /// Tool schemas (JSON), the template's `tools`.
    pub tools: Option<Vec<Value>>,
    /// Documents for retrieval-augmented templates, the template's `documents`.
    pub documents: Option<Vec<Value>>,
    /// Further template variables (Python: `**kwargs`, e.g. `enable_thinking`); they override
    /// the special-token variables.
    pub extra: Map<String, Value>,
}

/// The marker `transformers` appends to the message to continue, then cuts the text at.
const CONTINUE_TAG: &str = "CONTINUE_FINAL_MESSAGE_TAG ";

/// A model's chat template.
#[derive(Debug)]
pub struct ChatTemplate {
    source: String,
    origin: PathBuf,
    env: std::result::Result<Environment<'static>, minijinja::Error>,
}

impl Clone for ChatTemplate {
    fn clone(&self) -> Self {
        ChatTemplate::new(self.source.clone(), self.origin.clone())
    }
}

impl ChatTemplate {
    /// A template from its Jinja source; `origin` (the file it came from) names it in errors.
    /// A template that does not parse is reported when it is rendered, as in `transformers`:
    /// a model loads whatever its template.
    pub fn new(source: impl Into<String>, origin: impl Into<PathBuf>) -> ChatTemplate {
        let source = source.into();
        let env = environment(&source);
        ChatTemplate {
            source,
            origin: origin.into(),
            env,
        }
    }

    /// The Jinja source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders `messages` (anything that serializes to a list of objects with `role` and
    /// `content`, e.g. `serde_json::json!([{"role": "user", "content": "Hi"}])`) with the
    /// tokenizer's special tokens (`bos_token`, `eos_token`, ...) as variables.
    ///
    /// As in `transformers`, keys of a message whose value is null are dropped (templates test
    /// for a key, not for null), and `continue_final_message` cuts the text right after the
    /// last message's content.
    pub fn apply(
        &self,
        messages: &impl Serialize,
        special_tokens: &[(String, String)],
        options: &ChatOptions,
    ) -> Result<String> {
        let fail = |message: String| conversation_error(&self.origin, message);
        let jinja = |e: minijinja::Error| Error::Template {
            path: self.origin.clone(),
            message: describe(&e),
            source: Some(e),
        };
        if options.add_generation_prompt && options.continue_final_message {
            return Err(fail(
                "continue_final_message and add_generation_prompt are not compatible".into(),
            ));
        }
        // minijinja's errors are not Clone: each call gets one of the same kind and text.
        let env = self
            .env
            .as_ref()
            .map_err(|e| jinja(minijinja::Error::new(e.kind(), describe(e))))?;
        let mut messages = match serde_json::to_value(messages) {
            Ok(Value::Array(m)) => m,
            Ok(_) => return Err(fail("messages must be a list of objects".into())),
            Err(e) => return Err(fail(format!("messages do not serialize: {e}"))),
        };
        for (i, m) in messages.iter_mut().enumerate() {
            let Value::Object(m) = m else {
                return Err(fail(format!("message {i} is not an object")));
            };
            m.retain(|_, v| !v.is_null());
        }
        let continued = if options.continue_final_message {
            Some(mark_final_message(&mut messages, &self.origin)?)
        } else {
            None
        };

        let mut vars = Map::new();
        for (name, token) in special_tokens {
            vars.insert(name.clone(), Value::String(token.clone()));
        }
        for (k, v) in &options.extra {
            vars.insert(k.clone(), v.clone());
        }
        vars.insert("messages".into(), Value::Array(messages));
        vars.insert(
            "tools".into(),
            options.tools.clone().map_or(Value::Null, Value::Array),
        );
        vars.insert(
            "documents".into(),
            options.documents.clone().map_or(Value::Null, Value::Array),
        );
        vars.insert(
            "add_generation_prompt".into(),
            Value::Bool(options.add_generation_prompt),
        );
        let template = env.get_template("chat").map_err(jinja)?;
        let text = template
            .render(JValue::from_serialize(&vars))
            .map_err(jinja)?;
        match continued {
            None => Ok(text),
            Some(final_message) => cut_at_tag(text, &final_message, &self.origin),
        }
    }
}

/// A conversation the template at `origin` cannot take: the caller's mistake, not the
/// template's, so there is no `minijinja` error behind it.
fn conversation_error(origin: &Path, message: impl Into<String>) -> Error {
    Error::Template {
        path: origin.to_path_buf(),
        message: message.into(),
        source: None,
    }
}

/// Appends the continue tag to the last message's content (the last text block of a list),
/// returning the content as it was.
fn mark_final_message(messages: &mut [Value], origin: &Path) -> Result<String> {
    let fail = |message: &str| conversation_error(origin, message);
    let last = messages
        .last_mut()
        .ok_or_else(|| fail("continue_final_message is set but the conversation is empty"))?;
    let text = match last.get_mut("content") {
        Some(Value::String(s)) => s,
        Some(Value::Array(blocks)) => blocks
            .iter_mut()
            .rev()
            .find_map(|b| match b.get_mut("text") {
                Some(Value::String(s)) => Some(s),
                _ => None,
            })
            .ok_or_else(|| {
                fail("continue_final_message is set but the final message has no text to continue")
            })?,
        _ => {
            return Err(fail(
                "continue_final_message is set but the final message has no content",
            ))
        }
    };
    let original = text.clone();
    text.push_str(CONTINUE_TAG);
    Ok(original)
}

/// Python: the text up to the tag; if the template trimmed the tag's trailing space, up to
/// the tag with trailing whitespace removed.
fn cut_at_tag(text: String, final_message: &str, origin: &Path) -> Result<String> {
    let tag = CONTINUE_TAG.trim();
    if !text.contains(final_message.trim()) || !text.contains(tag) {
        return Err(conversation_error(
            origin,
            format!(
                "continue_final_message is set but the final message does not appear in the chat \
             after applying the chat template: {:?}",
                final_message.trim()
            ),
        ));
    }
    let at = text.rfind(tag).unwrap_or(0);
    if text[at..].starts_with(CONTINUE_TAG) {
        Ok(text[..at].to_string())
    } else {
        Ok(text[..at].trim_end().to_string())
    }
}

fn environment(source: &str) -> std::result::Result<Environment<'static>, minijinja::Error> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    minijinja_contrib::add_to_environment(&mut env);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_filter("tojson", tojson);
    env.add_function(
        "raise_exception",
        |message: String| -> std::result::Result<JValue, minijinja::Error> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
        },
    );
    env.add_function("strftime_now", |format: String| {
        chrono::Local::now().format(&format).to_string()
    });
    env.add_template_owned("chat", source.to_string())?;
    Ok(env)
}

/// A minijinja error with its cause chain (the `raise_exception` message included).
fn describe(e: &minijinja::Error) -> String {
    let mut text = match e.detail() {
        Some(detail) => detail.to_string(),
        None => e.to_string(),
    };
    if let Some(line) = e.line() {
        text.push_str(&format!(" (line {line})"));
    }
    text
}

/// `tojson` as `transformers` defines it: `json.dumps(x, ensure_ascii=False, indent=None,
/// separators=None, sort_keys=False)`.
fn tojson(
    value: JValue,
    indent: Option<JValue>,
    kwargs: Kwargs,
) -> std::result::Result<String, minijinja::Error> {
    let indent = match kwargs.get::<Option<JValue>>("indent")?.or(indent) {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) if v.kind() == ValueKind::Number => {
            Some(" ".repeat(usize::try_from(i64::try_from(v)?).unwrap_or(0)))
        }
        Some(v) => Some(v.as_str().map(str::to_string).ok_or_else(|| {
            minijinja::Error::new(
                ErrorKind::InvalidOperation,
                "tojson: indent must be an int or a string",
            )
        })?),
    };
    let separators = match kwargs.get::<Option<JValue>>("separators")? {
        Some(v) if !v.is_none() => {
            let parts: Vec<String> = v
                .try_iter()?
                .map(|p| p.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .filter(|p: &Vec<String>| p.len() == 2)
                .ok_or_else(|| {
                    minijinja::Error::new(
                        ErrorKind::InvalidOperation,
                        "tojson: separators must be two strings",
                    )
                })?;
            (parts[0].clone(), parts[1].clone())
        }
        // Python's defaults: "," at line ends when indenting, else ", ".
        _ => (
            if indent.is_some() { "," } else { ", " }.to_string(),
            ": ".to_string(),
        ),
    };
    let options = JsonOptions {
        ensure_ascii: kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false),
        sort_keys: kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false),
        indent,
        separators,
    };
    kwargs.assert_all_used()?;
    let mut out = String::new();
    write_json(&mut out, &value, &options, 0)?;
    Ok(out)
}

struct JsonOptions {
    ensure_ascii: bool,
    sort_keys: bool,
    indent: Option<String>,
    separators: (String, String),
}

/// Python's `json.dumps` of a template value.
fn write_json(
    out: &mut String,
    value: &JValue,
    options: &JsonOptions,
    level: usize,
) -> std::result::Result<(), minijinja::Error> {
    let newline = |out: &mut String, level: usize| {
        if let Some(indent) = &options.indent {
            out.push('\n');
            out.push_str(&indent.repeat(level));
        }
    };
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::String => write_string(
            out,
            value.as_str().unwrap_or_default(),
            options.ensure_ascii,
        ),
        ValueKind::Number => {
            if value.is_integer() {
                out.push_str(&value.to_string());
            } else {
                out.push_str(&python_float_repr(f64::try_from(value.clone())?));
            }
        }
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<JValue> = value.try_iter()?.collect();
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&options.separators.0);
                }
                newline(out, level + 1);
                write_json(out, item, options, level + 1)?;
            }
            newline(out, level);
            out.push(']');
        }
        ValueKind::Map => {
            let mut keys: Vec<JValue> = value.try_iter()?.collect();
            if keys.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            if options.sort_keys {
                keys.sort();
            }
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push_str(&options.separators.0);
                }
                newline(out, level + 1);
                // Python turns number and bool keys into their JSON text.
                let name = match key.kind() {
                    ValueKind::String => key.as_str().unwrap_or_default().to_string(),
                    ValueKind::Bool => if key.is_true() { "true" } else { "false" }.to_string(),
                    ValueKind::None => "null".to_string(),
                    _ => key.to_string(),
                };
                write_string(out, &name, options.ensure_ascii);
                out.push_str(&options.separators.1);
                write_json(out, &value.get_item(key)?, options, level + 1)?;
            }
            newline(out, level);
            out.push('}');
        }
        _ => {
            return Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!("tojson: a {} is not JSON serializable", value.kind()),
            ))
        }
    }
    Ok(())
}

/// Python's `json.dumps` of a string: `"`, `\` and control characters escaped, other
/// characters kept (or, with `ensure_ascii`, escaped as UTF-16 units).
fn write_string(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ensure_ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: the shortest digits that round-trip, positional for exponents
/// -4..16 (with `.0` when integral), else `d.ddde±XX`; `NaN` and `Infinity` as `json.dumps`
/// writes them.
pub(crate) fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.5e-7", "1e16".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{body}")
    } else {
        let rest = &digits[1..];
        let mantissa = if rest.is_empty() {
            digits[..1].to_string()
        } else {
            format!("{}.{rest}", &digits[..1])
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{esign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::python_float_repr;

    #[test]
    fn floats_print_as_python_repr() {
        // Values and their repr() in CPython 3.11.
        for (f, repr) in [
            (2.0, "2.0"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e-7, "1e-07"),
            (1e16, "1e+16"),
            (1.5e300, "1.5e+300"),
            (123456789012345.6, "123456789012345.6"),
            (1234567890123456.7, "1234567890123456.8"),
            (-0.0001, "-0.0001"),
            (0.00001234, "1.234e-05"),
            (-0.0, "-0.0"),
            (f64::MAX, "1.7976931348623157e+308"),
        ] {
            assert_eq!(python_float_repr(f), repr, "{f}");
        }
    }
}
