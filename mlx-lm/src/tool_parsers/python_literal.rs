//! Python literals as `ast.literal_eval` reads them, into JSON: numbers, strings, `True`,
//! `False`, `None`, lists, tuples (as lists) and dicts with string keys; with `json_names`,
//! also the `true`, `false` and `null` that chat templates write inside Python calls (the
//! pythonic parser's `_JSONLiterals`). What Python evaluates but JSON cannot hold (sets,
//! bytes, complex numbers), and what Python refuses, is an error: mlx_lm's server crashes on
//! the first (`json.dumps` raises) and falls back to a string or a regex on the second.

use serde_json::{Map, Number, Value};

/// A parse position in a Python expression.
pub(crate) struct Parser<'a> {
    chars: Vec<char>,
    pub(crate) pos: usize,
    json_names: bool,
    _text: &'a str,
}

pub(crate) type PyResult<T> = Result<T, String>;

impl<'a> Parser<'a> {
    pub(crate) fn new(text: &'a str, json_names: bool) -> Parser<'a> {
        Parser {
            chars: text.chars().collect(),
            pos: 0,
            json_names,
            _text: text,
        }
    }

    pub(crate) fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.chars.len()
    }

    /// Skips what Python skips between tokens inside brackets: spaces, newlines,
    /// comments, line continuations.
    pub(crate) fn skip_space(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | '\r' | '\x0c' => self.pos += 1,
                '\\' if self.chars.get(self.pos + 1) == Some(&'\n') => self.pos += 2,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    pub(crate) fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub(crate) fn expect(&mut self, c: char) -> PyResult<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected {c:?} at {}", self.pos))
        }
    }

    /// An identifier (Python's: a letter or `_`, then letters, digits, `_`).
    pub(crate) fn name(&mut self) -> Option<String> {
        self.skip_space();
        let start = self.pos;
        if !self.peek().is_some_and(|c| c.is_alphabetic() || c == '_') {
            return None;
        }
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.pos += 1;
        }
        Some(self.chars[start..self.pos].iter().collect())
    }

    /// One literal.
    pub(crate) fn value(&mut self) -> PyResult<Value> {
        self.skip_space();
        let Some(c) = self.peek() else {
            return Err("unexpected end".into());
        };
        match c {
            '[' => {
                self.pos += 1;
                Ok(Value::Array(self.items(']')?))
            }
            '(' => {
                self.pos += 1;
                // A parenthesized value, or a tuple (a list in JSON).
                if self.eat(')') {
                    return Ok(Value::Array(Vec::new()));
                }
                let first = self.value()?;
                if self.eat(')') {
                    return Ok(first);
                }
                self.expect(',')?;
                let mut items = vec![first];
                items.extend(self.items(')')?);
                Ok(Value::Array(items))
            }
            '{' => {
                self.pos += 1;
                self.dict()
            }
            '+' | '-' => {
                self.pos += 1;
                self.skip_space();
                let n = self.number()?;
                Ok(if c == '-' { negate(n)? } else { n })
            }
            '0'..='9' | '.' => self.number(),
            '"' | '\'' => self.strings(String::new()),
            _ => {
                let start = self.pos;
                let Some(name) = self.name() else {
                    return Err(format!("unexpected {c:?}"));
                };
                let prefix = name.to_ascii_lowercase();
                if matches!(self.peek(), Some('"' | '\'')) && matches!(prefix.as_str(), "r" | "u") {
                    return self.strings(prefix);
                }
                if matches!(self.peek(), Some('"' | '\''))
                    && matches!(prefix.as_str(), "b" | "br" | "rb" | "f" | "rf" | "fr")
                {
                    return Err(format!("a {prefix}-string is no JSON value"));
                }
                match (name.as_str(), self.json_names) {
                    ("True", _) | ("true", true) => Ok(Value::Bool(true)),
                    ("False", _) | ("false", true) => Ok(Value::Bool(false)),
                    ("None", _) | ("null", true) => Ok(Value::Null),
                    _ => {
                        self.pos = start;
                        Err(format!("{name} is not a literal"))
                    }
                }
            }
        }
    }

    /// Comma-separated values up to `close` (a trailing comma allowed).
    fn items(&mut self, close: char) -> PyResult<Vec<Value>> {
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                return Ok(items);
            }
            items.push(self.value()?);
            if !self.eat(',') {
                self.expect(close)?;
                return Ok(items);
            }
        }
    }

    fn dict(&mut self) -> PyResult<Value> {
        let mut map = Map::new();
        loop {
            if self.eat('}') {
                return Ok(Value::Object(map));
            }
            let key = self.value()?;
            if !self.eat(':') {
                return Err("a set is no JSON value".into());
            }
            let value = self.value()?;
            // json.dumps writes these keys as strings; other keys make it raise.
            let key = match key {
                Value::String(s) => s,
                Value::Bool(b) => b.to_string(),
                Value::Null => "null".into(),
                Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
                k => return Err(format!("a dict key {k} is no JSON key")),
            };
            map.insert(key, value);
            if !self.eat(',') {
                self.expect('}')?;
                return Ok(Value::Object(map));
            }
        }
    }

    /// One or more adjacent string literals (Python joins them).
    fn strings(&mut self, mut prefix: String) -> PyResult<Value> {
        let mut out = String::new();
        loop {
            out.push_str(&self.string(prefix.contains('r'))?);
            self.skip_space();
            let save = self.pos;
            match self.peek() {
                Some('"' | '\'') => prefix.clear(),
                Some(c) if c.is_alphabetic() => {
                    let p = self.name().unwrap_or_default().to_ascii_lowercase();
                    if !matches!(p.as_str(), "r" | "u") || !matches!(self.peek(), Some('"' | '\''))
                    {
                        self.pos = save;
                        return Ok(Value::String(out));
                    }
                    prefix = p;
                }
                _ => return Ok(Value::String(out)),
            }
        }
    }

    fn string(&mut self, raw: bool) -> PyResult<String> {
        let quote = self.peek().ok_or("unexpected end")?;
        let triple = self.chars.get(self.pos + 1) == Some(&quote)
            && self.chars.get(self.pos + 2) == Some(&quote);
        self.pos += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let c = self.peek().ok_or("unterminated string")?;
            if c == quote {
                if !triple {
                    self.pos += 1;
                    return Ok(out);
                }
                if self.chars.get(self.pos + 1) == Some(&quote)
                    && self.chars.get(self.pos + 2) == Some(&quote)
                {
                    self.pos += 3;
                    return Ok(out);
                }
            }
            if c == '\n' && !triple {
                return Err("unterminated string".into());
            }
            self.pos += 1;
            if c != '\\' {
                out.push(c);
                continue;
            }
            let e = self.peek().ok_or("unterminated string")?;
            if raw {
                // A raw string keeps the backslash (and the quote it protects).
                out.push('\\');
                out.push(e);
                self.pos += 1;
                continue;
            }
            self.pos += 1;
            match e {
                '\n' => {}
                '\\' | '\'' | '"' => out.push(e),
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'a' => out.push('\x07'),
                'b' => out.push('\x08'),
                'f' => out.push('\x0c'),
                'v' => out.push('\x0b'),
                '0'..='7' => {
                    let mut v = e.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match self.peek().and_then(|c| c.to_digit(8)) {
                            Some(d) => {
                                v = v * 8 + d;
                                self.pos += 1;
                            }
                            None => break,
                        }
                    }
                    out.push(char::from_u32(v).ok_or("bad octal escape")?);
                }
                'x' | 'u' | 'U' => {
                    let n = match e {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let digits: String = self
                        .chars
                        .get(self.pos..self.pos + n)
                        .ok_or("truncated escape")?
                        .iter()
                        .collect();
                    let v = u32::from_str_radix(&digits, 16).map_err(|_| "bad escape")?;
                    self.pos += n;
                    out.push(char::from_u32(v).ok_or("bad escape")?);
                }
                // Python keeps an unknown escape as written.
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }

    fn number(&mut self) -> PyResult<Value> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            || (matches!(self.peek(), Some('+' | '-'))
                && matches!(self.chars.get(self.pos.wrapping_sub(1)), Some('e' | 'E'))
                && !self.chars[start..self.pos]
                    .iter()
                    .any(|c| matches!(c, 'x' | 'X')))
        {
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        parse_number(&text).ok_or_else(|| format!("{text:?} is not a number"))
    }
}

fn negate(n: Value) -> PyResult<Value> {
    match n {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                return Ok(Value::from(-i));
            }
            if let Some(u) = n.as_u64() {
                // u64 above i64::MAX: as a float.
                return Number::from_f64(-(u as f64))
                    .map(Value::Number)
                    .ok_or("bad number".into());
            }
            Number::from_f64(-n.as_f64().unwrap_or(0.0))
                .map(Value::Number)
                .ok_or("bad number".into())
        }
        _ => Err("a sign before no number".into()),
    }
}

/// A Python number literal: ints (decimal, `0x`, `0o`, `0b`, with `_` between digits) and
/// floats; imaginary numbers are no JSON value.
fn parse_number(text: &str) -> Option<Value> {
    if text.ends_with(['j', 'J'])
        || text.starts_with('_')
        || text.ends_with('_')
        || text.contains("__")
    {
        return None;
    }
    let digits = text.replace('_', "");
    let lower = digits.to_ascii_lowercase();
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(rest) = lower.strip_prefix(prefix) {
            let rest = rest.strip_prefix('_').unwrap_or(rest);
            return u64::from_str_radix(rest, radix).ok().map(Value::from);
        }
    }
    let is_int = lower.bytes().all(|b| b.is_ascii_digit());
    if is_int {
        // Python refuses leading zeros ("07"), except in zero itself.
        if lower.len() > 1 && lower.starts_with('0') && lower.bytes().any(|b| b != b'0') {
            return None;
        }
        return lower.parse::<u64>().ok().map(Value::from).or_else(|| {
            lower
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
        });
    }
    if !lower
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'+' | b'-'))
    {
        return None;
    }
    lower
        .parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
}

/// `ast.literal_eval(text)` into JSON (leading spaces and tabs skipped, as Python does).
pub(crate) fn literal_eval(text: &str, json_names: bool) -> PyResult<Value> {
    let mut p = Parser::new(text.trim_start_matches([' ', '\t']), json_names);
    let v = p.value()?;
    p.skip_space();
    if !p.at_end() {
        return Err("text after the value".into());
    }
    Ok(v)
}
