//! Validation of a `.npy` header before MLX parses it.
//!
//! MLX trusts the header length field (a v2 file can make it allocate 4 GiB before failing),
//! reads the header at fixed byte positions (the dtype at byte 11, the order flag at byte 34),
//! parses the shape with `stoi` and never compares the data size with the file. A hostile
//! header therefore loads as an array whose shape is negative or wraps around, or differs from
//! the one written, and that reads garbage or out of bounds when evaluated. This check parses
//! the header as the Python dict literal it is, checks the shape and the data size with checked
//! arithmetic, and accepts only headers that MLX's positional reading sees the same way.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use crate::{Error, Result};

/// Far above any real header (NumPy itself refuses headers over 10 000 bytes by default) and
/// small enough to read before knowing whether the header is sane.
const MAX_HEADER_LEN: u64 = 1 << 20;

/// Checks the open `.npy` file (named `label`): its header, and that the data fills the rest of the file
/// exactly, as NumPy writes it.
pub(super) fn validate_file(file: &File, label: &str) -> Result<()> {
    let total = file.metadata().map_err(|e| io_error(label, e))?.len();
    let mut r = file;
    r.seek(SeekFrom::Start(0)).map_err(|e| io_error(label, e))?;
    validate(&mut r, total, label, false)?;
    r.seek(SeekFrom::Start(0)).map_err(|e| io_error(label, e))?;
    Ok(())
}

/// Checks the `.npy` data in `r`, which starts at position 0; bytes after the data are allowed,
/// as a stream may hold more than one array. Leaves the stream at position 0.
pub(super) fn validate_stream<R: Read + Seek>(r: &mut R, label: &str) -> Result<()> {
    let total = r.seek(SeekFrom::End(0)).map_err(|e| io_error(label, e))?;
    r.seek(SeekFrom::Start(0)).map_err(|e| io_error(label, e))?;
    validate(r, total, label, true)?;
    r.seek(SeekFrom::Start(0)).map_err(|e| io_error(label, e))?;
    Ok(())
}

fn io_error(label: &str, e: std::io::Error) -> Error {
    Error::io(format!("[load] {label}"), e)
}

fn header_error(label: &str, what: impl std::fmt::Display) -> Error {
    Error::invalid_data(
        format!("[load] {label}"),
        format!("invalid .npy header: {what}"),
    )
}

fn validate(r: &mut impl Read, total: u64, label: &str, trailing_ok: bool) -> Result<()> {
    if total < 10 {
        return Err(header_error(
            label,
            format!("the file is {total} bytes, too short for a .npy header"),
        ));
    }
    let mut head = [0u8; 8];
    r.read_exact(&mut head).map_err(|e| io_error(label, e))?;
    if &head[..6] != b"\x93NUMPY" {
        return Err(header_error(label, "not a .npy file (bad magic)"));
    }
    let (len_size, header_len) = match head[6] {
        1 => {
            let mut len = [0u8; 2];
            r.read_exact(&mut len).map_err(|e| io_error(label, e))?;
            (2, u64::from(u16::from_le_bytes(len)))
        }
        2 => {
            let mut len = [0u8; 4];
            r.read_exact(&mut len).map_err(|e| io_error(label, e))?;
            (4, u64::from(u32::from_le_bytes(len)))
        }
        v => {
            return Err(header_error(
                label,
                format!("unsupported format version {v} (MLX reads versions 1 and 2)"),
            ))
        }
    };
    let data_start = 8 + len_size + header_len;
    if data_start > total {
        return Err(header_error(
            label,
            format!("header length {header_len} runs past the end of the file ({total} bytes)"),
        ));
    }
    if header_len > MAX_HEADER_LEN {
        return Err(header_error(
            label,
            format!("header length {header_len} is over the {MAX_HEADER_LEN}-byte limit"),
        ));
    }
    let mut header = vec![0u8; header_len as usize];
    r.read_exact(&mut header).map_err(|e| io_error(label, e))?;

    let h = parse_header(&header).map_err(|e| header_error(label, e))?;
    let size = itemsize(&h.descr)
        .ok_or_else(|| header_error(label, format!("unsupported dtype {:?}", h.descr)))?;
    let mut dims = Vec::with_capacity(h.shape.len());
    for t in &h.shape {
        let d = match t.parse::<i128>() {
            Ok(v) if v < 0 => {
                return Err(header_error(
                    label,
                    format!("negative dimension {v} in shape ({})", h.shape.join(", ")),
                ))
            }
            Ok(v) if v <= i128::from(i32::MAX) => v as u64,
            _ => {
                return Err(header_error(
                    label,
                    format!(
                        "dimension {t} in shape ({}) overflows MLX's int32 dimensions",
                        h.shape.join(", ")
                    ),
                ))
            }
        };
        dims.push(d);
    }

    let mlx = mlx_reading(&header);
    let dims_i64: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    if mlx.as_ref().map(|(d, f, s)| (*d, *f, s)) != Some((h.descr.as_bytes(), h.fortran, &dims_i64))
    {
        return Err(header_error(
            label,
            "the header's layout differs from NumPy's, and MLX, which reads fixed positions, \
             would misread it",
        ));
    }

    // Zero dimensions are skipped so that the product still bounds MLX's strides.
    let mut elements: u64 = 1;
    for &d in dims.iter().filter(|&&d| d != 0) {
        elements = elements
            .checked_mul(d)
            .ok_or_else(|| too_large(label, &h, size))?;
    }
    let nbytes = elements
        .checked_mul(size)
        .filter(|&n| n <= i64::MAX as u64)
        .ok_or_else(|| too_large(label, &h, size))?;
    let nbytes = if dims.contains(&0) { 0 } else { nbytes };
    let present = total - data_start;
    if present < nbytes || (!trailing_ok && present != nbytes) {
        let what = if present < nbytes {
            "truncated .npy file"
        } else {
            "corrupt .npy file (bytes after the data)"
        };
        return Err(Error::invalid_data(
            format!("[load] {label}"),
            format!(
                "{what}: shape ({}) of {} needs {nbytes} data bytes but {present} follow the header",
                h.shape.join(", "),
                h.descr
            ),
        ));
    }
    Ok(())
}

fn too_large(label: &str, h: &Header, size: u64) -> Error {
    header_error(
        label,
        format!(
            "shape ({}) of {size}-byte elements overflows: its byte size does not fit in an i64",
            h.shape.join(", ")
        ),
    )
}

/// Bytes per element of the array-protocol type strings MLX reads
/// (`dtype_from_array_protocol`), which are three characters: byte order, kind, size.
fn itemsize(descr: &str) -> Option<u64> {
    let b = descr.as_bytes();
    if b.len() != 3 || !matches!(b[0], b'<' | b'>' | b'|' | b'=') {
        return None;
    }
    Some(match &b[1..] {
        b"b1" | b"i1" | b"u1" => 1,
        b"i2" | b"u2" | b"f2" | b"V2" => 2,
        b"i4" | b"u4" | b"f4" => 4,
        b"i8" | b"u8" | b"f8" | b"c8" => 8,
        _ => return None,
    })
}

/// The fields of a `.npy` header; the shape as the integers' source text.
struct Header {
    descr: String,
    fortran: bool,
    shape: Vec<String>,
}

enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<String>),
}

/// Parses the header as the subset of Python literals NumPy writes: a dict of string keys to
/// a string, a boolean and a tuple of integers.
fn parse_header(text: &[u8]) -> std::result::Result<Header, String> {
    let mut p = Lexer { s: text, i: 0 };
    let mut fields: Vec<(String, Value)> = Vec::new();
    p.ws();
    p.expect(b'{')?;
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.ws();
        p.expect(b':')?;
        p.ws();
        let value = p.value()?;
        if fields.iter().any(|(k, _)| *k == key) {
            return Err(format!("key {key:?} appears more than once"));
        }
        fields.push((key, value));
        p.ws();
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    p.ws();
    if p.i != text.len() {
        return Err(p.err("unexpected data after the dict"));
    }

    let (mut descr, mut fortran, mut shape) = (None, None, None);
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("descr", Value::Str(s)) => descr = Some(s),
            ("fortran_order", Value::Bool(b)) => fortran = Some(b),
            ("shape", Value::Tuple(t)) => shape = Some(t),
            ("descr" | "fortran_order" | "shape", _) => {
                return Err(format!("key {key:?} has a value of the wrong type"))
            }
            _ => return Err(format!("unexpected key {key:?}")),
        }
    }
    Ok(Header {
        descr: descr.ok_or("no 'descr' key")?,
        fortran: fortran.ok_or("no 'fortran_order' key")?,
        shape: shape.ok_or("no 'shape' key")?,
    })
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

impl Lexer<'_> {
    fn err(&self, what: &str) -> String {
        format!("{what} at byte {} of the header", self.i)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.i += 1;
        }
        hit
    }

    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.err(&format!("expected {:?}", char::from(c))))
        }
    }

    /// A quoted string of printable ASCII without escapes (all NumPy writes).
    fn string(&mut self) -> std::result::Result<String, String> {
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(self.err("expected a quoted string")),
        };
        self.i += 1;
        let start = self.i;
        while let Some(c) = self.peek() {
            if c == quote {
                let s = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                self.i += 1;
                return Ok(s);
            }
            if c == b'\\' || !(b' '..=b'~').contains(&c) {
                return Err(self.err("unsupported character in a string"));
            }
            self.i += 1;
        }
        Err(self.err("unterminated string"))
    }

    fn word(&mut self, w: &str) -> bool {
        let rest = &self.s[self.i..];
        let hit = rest.starts_with(w.as_bytes())
            && !rest
                .get(w.len())
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
        if hit {
            self.i += w.len();
        }
        hit
    }

    fn value(&mut self) -> std::result::Result<Value, String> {
        match self.peek() {
            Some(b'\'' | b'"') => Ok(Value::Str(self.string()?)),
            Some(b'(') => self.tuple(),
            _ if self.word("True") => Ok(Value::Bool(true)),
            _ if self.word("False") => Ok(Value::Bool(false)),
            _ => Err(self.err("expected a string, True, False or a tuple")),
        }
    }

    /// A tuple of integer literals; as in Python, `(2)` is not a tuple.
    fn tuple(&mut self) -> std::result::Result<Value, String> {
        self.i += 1;
        let mut items = Vec::new();
        let mut trailing_comma = false;
        loop {
            self.ws();
            if self.eat(b')') {
                break;
            }
            items.push(self.int()?);
            self.ws();
            trailing_comma = self.eat(b',');
            if !trailing_comma {
                self.ws();
                self.expect(b')')?;
                break;
            }
        }
        if items.len() == 1 && !trailing_comma {
            return Err(self.err("the shape is a parenthesized integer, not a tuple"));
        }
        Ok(Value::Tuple(items))
    }

    fn int(&mut self) -> std::result::Result<String, String> {
        let start = self.i;
        self.eat(b'-');
        let digits = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        if self.i == digits {
            return Err(self.err("expected an integer"));
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }
}

/// What MLX's own header reading (`mlx::core::load`) makes of `header`: the dtype string,
/// the fortran-order flag and the shape, or `None` where it would throw.
fn mlx_reading(header: &[u8]) -> Option<(&[u8], bool, Vec<i64>)> {
    let descr = header.get(11..14)?;
    let fortran = *header.get(34)? == b'T';
    let start = header.iter().rposition(|&c| c == b'(')? + 1;
    let end = header.iter().rposition(|&c| c == b')')?;
    let mut rest = header.get(start..end)?;
    let mut shape = Vec::new();
    while !rest.is_empty() {
        let (dim, pos) = stoi(rest)?;
        shape.push(dim);
        // MLX skips two characters (", ") after each number.
        if pos + 2 <= rest.len() {
            rest = &rest[pos + 2..];
        } else {
            let tail = &rest[pos..];
            if !(tail.is_empty() || tail == b" " || tail == b",") {
                return None;
            }
            rest = &[];
        }
    }
    Some((descr, fortran, shape))
}

/// `std::stoi`: leading whitespace, a sign, decimal digits; the value and the characters
/// consumed, or `None` where it throws.
fn stoi(s: &[u8]) -> Option<(i64, usize)> {
    let mut i = s
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    let negative = match s[i] {
        b'-' => {
            i += 1;
            true
        }
        b'+' => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = i;
    while s.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let magnitude: i64 = std::str::from_utf8(&s[digits..i]).ok()?.parse().ok()?;
    let v = if negative { -magnitude } else { magnitude };
    i32::try_from(v).ok()?;
    Some((v, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(shape: &str) -> Vec<u8> {
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}          \n")
            .into_bytes()
    }

    #[test]
    fn numpy_and_mlx_layouts_parse_alike() {
        for (shape, dims) in [
            ("()", vec![]),
            ("(5,)", vec![5]),
            ("(2, 3)", vec![2, 3]),
            ("(2, 3, )", vec![2, 3]),
            ("(0, 7)", vec![0, 7]),
        ] {
            let text = header(shape);
            let h = parse_header(&text).unwrap();
            assert_eq!(h.descr, "<f4");
            assert!(!h.fortran);
            let parsed: Vec<i64> = h.shape.iter().map(|t| t.parse().unwrap()).collect();
            assert_eq!(parsed, dims, "{shape}");
            assert_eq!(mlx_reading(&text).unwrap().2, dims, "{shape}");
        }
    }

    #[test]
    fn layouts_mlx_misreads_are_caught() {
        // MLX skips two characters after each number, so "(2,3)" reads as (2,).
        let text = header("(2,3)");
        assert_eq!(parse_header(&text).unwrap().shape, ["2", "3"]);
        assert_eq!(mlx_reading(&text).unwrap().2, vec![2]);
        // Keys in another order move the dtype away from byte 11.
        let text = b"{'fortran_order': False, 'descr': '<f4', 'shape': (2,), }\n";
        assert!(parse_header(text).is_ok());
        assert_ne!(mlx_reading(text).unwrap().0, b"<f4");
    }

    #[test]
    fn malformed_dicts_are_rejected() {
        for bad in [
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
            "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x",
            "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)",
        ] {
            assert!(parse_header(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn stoi_matches_the_standard_library() {
        assert_eq!(stoi(b" 12, 3"), Some((12, 3)));
        assert_eq!(stoi(b"-4"), Some((-4, 2)));
        assert_eq!(stoi(b"x"), None);
        assert_eq!(stoi(b"2147483648"), None);
        assert_eq!(stoi(b""), None);
    }
}
