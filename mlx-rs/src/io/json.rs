//! The JSON of a safetensors header, read with serde_json into a value that keeps what the
//! header check needs and a general-purpose value hides: every occurrence of a key (MLX's
//! parser keeps only one of two equal keys, so a check that saw the other would vouch for the
//! wrong tensor) and whether a number was written as an integer (MLX truncates `1.5` to 1 and
//! wraps `4294967297` to 1, so the check must judge what was written, not a rounded value).
//! serde_json is strict RFC 8259 (no trailing data, no lone surrogates) and limits nesting,
//! so a hostile `[[[[...` cannot overflow the stack.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A parsed JSON value.
#[derive(Debug)]
pub(super) enum Json {
    Null,
    Bool,
    /// The number as serde_json writes it: digits for an integer that fits in 64 bits, a
    /// float form (`1000.0`, `1e30`) for anything else.
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Members in file order, duplicates kept.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// What kind of value this is, for error messages.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

/// Parses one JSON value that spans all of `text` (surrounding whitespace allowed).
pub(super) fn parse(text: &[u8]) -> Result<Json, String> {
    serde_json::from_slice(text).map_err(|e| e.to_string())
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Json, E> {
        Ok(Json::Bool)
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.to_string()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.to_string()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        // serde_json's own float form always has a `.` or an exponent, so an integer-valued
        // float (`1e3`) stays recognizably a float.
        let text = serde_json::Number::from_f64(v).map_or_else(|| "NaN".into(), |n| n.to_string());
        Ok(Json::Number(text))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        while let Some(entry) = map.next_entry::<String, Json>()? {
            members.push(entry);
        }
        Ok(Json::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Json {
        parse(text.as_bytes()).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn keeps_duplicate_keys_and_number_text() {
        let Json::Object(m) = ok(r#" {"a": [1.5, -0, 4294967297, 1e3], "a": null} "#) else {
            panic!("not an object")
        };
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].0, "a");
        assert_eq!(m[1].0, "a");
        let Json::Array(items) = &m[0].1 else {
            panic!("not an array")
        };
        let texts: Vec<_> = items
            .iter()
            .map(|v| match v {
                Json::Number(t) => t.as_str(),
                _ => "?",
            })
            .collect();
        // serde_json reads `-0` as a float: a shape entry written so is refused, as no writer
        // of safetensors files writes it.
        assert_eq!(texts, ["1.5", "-0.0", "4294967297", "1000.0"]);
    }

    #[test]
    fn decodes_escapes_including_nul_and_surrogate_pairs() {
        let Json::String(s) = ok(r#""a\u0000b\ud83d\ude00\n\"""#) else {
            panic!("not a string")
        };
        assert_eq!(s, "a\0b\u{1f600}\n\"");
    }

    #[test]
    fn rejects_what_strict_json_rejects() {
        for bad in [
            "",
            "{",
            "{\"a\":1,}",
            "[1,]",
            "01",
            "1.",
            "-",
            "1e",
            "+1",
            "{'a': 1}",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\x\"",
            "\"a\nb\"",
            "{} x",
            "nul",
            "NaN",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad:?} parsed");
        }
        assert!(parse(b"\"\xff\"").is_err(), "invalid UTF-8 parsed");
        // serde_json's nesting limit (128) keeps a hostile `[[[[...` off the stack.
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(parse(deep.as_bytes())
            .unwrap_err()
            .contains("recursion limit"));
        let fine = "[".repeat(100) + &"]".repeat(100);
        assert!(parse(fine.as_bytes()).is_ok());
    }
}
