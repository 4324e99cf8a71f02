//! Validation of a safetensors header, so that MLX never hands out arrays the header lies
//! about.
//!
//! MLX converts the header's numbers with unchecked casts: a dimension of `1.5` or
//! `4294967297` becomes 1, a negative one wraps around, and the byte count it compares with
//! `data_offsets` is a wrapping product. A hostile header therefore loads "successfully" as
//! arrays whose shape does not match their data, which read garbage or out of bounds when
//! evaluated. Its JSON parser also keeps only one of two equal names, and mlx-c cuts names at
//! a NUL byte, so two tensors can silently become one. This check reads every name and
//! number as written, computes every size with checked arithmetic, and rejects any header
//! that MLX would read differently from the safetensors format's meaning.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use super::json::{self, Json};
use crate::{Error, Result};

/// MLX's limit on the header length (the same as the reference implementation's); it also
/// bounds what this check allocates.
const MAX_HEADER_LEN: u64 = 100_000_000;

/// Checks the header of the open safetensors `file` (named `label`) against its size;
/// leaves the file at position 0.
pub(super) fn validate_file(file: &File, label: &str) -> Result<()> {
    let total = file.metadata().map_err(|e| io_error(label, e))?.len();
    let mut r = file;
    r.seek(SeekFrom::Start(0)).map_err(|e| io_error(label, e))?;
    validate(&mut r, total, label)?;
    r.seek(SeekFrom::Start(0)).map_err(|e| io_error(label, e))?;
    Ok(())
}

/// Checks the header of the safetensors data in `r`, which starts at position 0, against the
/// stream's length. Moves the stream's position.
pub(super) fn validate_stream<R: Read + Seek>(r: &mut R, label: &str) -> Result<()> {
    let total = r.seek(SeekFrom::End(0)).map_err(|e| io_error(label, e))?;
    r.seek(SeekFrom::Start(0)).map_err(|e| io_error(label, e))?;
    validate(r, total, label)
}

fn io_error(label: &str, e: std::io::Error) -> Error {
    Error::io(format!("[load_safetensors] {label}"), e)
}

fn header_error(label: &str, what: impl std::fmt::Display) -> Error {
    Error::invalid_data(
        format!("[load_safetensors] {label}"),
        format!("invalid safetensors header: {what}"),
    )
}

/// Reads the length and JSON header from `r` (positioned at the start of data `total` bytes
/// long) and checks every entry.
fn validate(r: &mut impl Read, total: u64, label: &str) -> Result<()> {
    if total < 8 {
        return Err(header_error(
            label,
            format!("the file is {total} bytes, too short for the 8-byte header length"),
        ));
    }
    let mut len = [0u8; 8];
    r.read_exact(&mut len).map_err(|e| io_error(label, e))?;
    let header_len = u64::from_le_bytes(len);
    if header_len == 0 || header_len >= MAX_HEADER_LEN {
        return Err(header_error(
            label,
            format!("header length {header_len} is not between 1 and {MAX_HEADER_LEN}"),
        ));
    }
    let data_len = (total - 8).checked_sub(header_len).ok_or_else(|| {
        header_error(
            label,
            format!(
                "the header is {header_len} bytes but the file has only {} after the length",
                total - 8
            ),
        )
    })?;
    // Bounded by MAX_HEADER_LEN and by the file's size.
    let mut text = vec![0u8; header_len as usize];
    r.read_exact(&mut text).map_err(|e| io_error(label, e))?;
    let header = json::parse(&text).map_err(|e| header_error(label, format!("bad JSON: {e}")))?;
    let Json::Object(entries) = header else {
        return Err(header_error(
            label,
            format!("the header is {}, not an object", header.kind()),
        ));
    };

    let mut names = HashSet::new();
    let mut spans = Vec::new();
    for (name, value) in &entries {
        if name.contains('\0') {
            return Err(header_error(
                label,
                format!(
                    "tensor name {name:?} contains a NUL byte, which MLX would cut the name at"
                ),
            ));
        }
        if !names.insert(name.as_str()) {
            return Err(header_error(
                label,
                format!("tensor name {name:?} appears more than once"),
            ));
        }
        if name == "__metadata__" {
            check_metadata(value).map_err(|e| header_error(label, format!("__metadata__ {e}")))?;
            continue;
        }
        let span = check_tensor(value, data_len).map_err(|e| {
            Error::invalid_data(
                format!("[load_safetensors] {label}"),
                format!("tensor {name:?} {e}"),
            )
        })?;
        spans.push((span, name.as_str()));
    }
    check_disjoint(&mut spans).map_err(|e| header_error(label, e))
}

/// `__metadata__` must map names to strings; MLX hands them out as C strings, so NUL would
/// silently shorten them.
fn check_metadata(value: &Json) -> std::result::Result<(), String> {
    let members = match value {
        Json::Object(m) => m,
        Json::Null => return Ok(()),
        other => return Err(format!("is {}, not an object", other.kind())),
    };
    let mut keys = HashSet::new();
    for (key, v) in members {
        if !keys.insert(key.as_str()) {
            return Err(format!("has the key {key:?} more than once"));
        }
        let Json::String(s) = v else {
            return Err(format!("value of {key:?} is {}, not a string", v.kind()));
        };
        if key.contains('\0') || s.contains('\0') {
            return Err(format!("entry {key:?} contains a NUL byte"));
        }
    }
    Ok(())
}

/// Bytes per element of the dtypes MLX reads (`dtype_from_safetensor_str`).
fn dtype_size(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E4M3" | "F8_E8M0" => 1,
        "F16" | "BF16" | "I16" | "U16" => 2,
        "F32" | "I32" | "U32" => 4,
        "I64" | "U64" | "C64" => 8,
        _ => return None,
    })
}

/// The one member named `key`; a repeated field would be read by MLX from a copy this check
/// did not look at.
fn field<'a>(members: &'a [(String, Json)], key: &str) -> std::result::Result<&'a Json, String> {
    let mut found = members.iter().filter(|(k, _)| k == key);
    match (found.next(), found.next()) {
        (Some((_, v)), None) => Ok(v),
        (None, _) => Err(format!("has no {key:?} field")),
        (Some(_), Some(_)) => Err(format!("has the field {key:?} more than once")),
    }
}

/// A number's value, when its text is an integer.
enum Int {
    Value(i128),
    NotInteger,
    TooLarge,
}

fn integer(text: &str) -> Int {
    if text.contains(['.', 'e', 'E']) {
        return Int::NotInteger;
    }
    text.parse().map_or(Int::TooLarge, Int::Value)
}

/// Checks one tensor entry; returns its `data_offsets`.
fn check_tensor(value: &Json, data_len: u64) -> std::result::Result<(u64, u64), String> {
    let Json::Object(members) = value else {
        return Err(format!("is {}, not an object", value.kind()));
    };
    let dtype = match field(members, "dtype")? {
        Json::String(s) => s.as_str(),
        other => return Err(format!("has a dtype that is {}", other.kind())),
    };
    let size = dtype_size(dtype).ok_or_else(|| format!("has unsupported dtype {dtype:?}"))?;

    let Json::Array(dims) = field(members, "shape")? else {
        return Err("has a shape that is not an array".into());
    };
    let shown = format!(
        "[{}]",
        dims.iter()
            .map(|d| match d {
                Json::Number(t) => t.clone(),
                other => other.kind().to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    // The product skips zero dimensions so that it still bounds MLX's strides (products of
    // the other dimensions) for an empty tensor.
    let mut elements: u64 = 1;
    let mut empty = false;
    for d in dims {
        let Json::Number(t) = d else {
            return Err(format!("has a shape entry that is {} in {shown}", d.kind()));
        };
        let d = match integer(t) {
            Int::Value(v) if v < 0 => {
                return Err(format!("has a negative dimension {v} in shape {shown}"))
            }
            Int::Value(v) if v <= i128::from(i32::MAX) => v as u64,
            Int::Value(_) | Int::TooLarge => {
                return Err(format!(
                    "has dimension {t} in shape {shown}, which overflows MLX's int32 dimensions"
                ))
            }
            Int::NotInteger => {
                return Err(format!(
                    "has dimension {t} in shape {shown}, which is not an integer"
                ))
            }
        };
        if d == 0 {
            empty = true;
        } else {
            elements = elements
                .checked_mul(d)
                .ok_or_else(|| too_large(&shown, dtype))?;
        }
    }
    let nbytes = elements
        .checked_mul(size)
        .filter(|&n| n <= i64::MAX as u64)
        .ok_or_else(|| too_large(&shown, dtype))?;
    let nbytes = if empty { 0 } else { nbytes };

    let Json::Array(offsets) = field(members, "data_offsets")? else {
        return Err("has data_offsets that are not an array".into());
    };
    if offsets.len() != 2 {
        return Err(format!(
            "has {} data_offsets (2 expected: begin and end)",
            offsets.len()
        ));
    }
    let mut bounds = [0u64; 2];
    for (slot, o) in bounds.iter_mut().zip(offsets) {
        let Json::Number(t) = o else {
            return Err(format!("has a data offset that is {}", o.kind()));
        };
        *slot = match integer(t) {
            Int::Value(v) if v < 0 => return Err(format!("has a negative data offset {v}")),
            Int::Value(v) => {
                u64::try_from(v).map_err(|_| format!("has data offset {t}, which overflows u64"))?
            }
            Int::TooLarge => return Err(format!("has data offset {t}, which overflows u64")),
            Int::NotInteger => return Err(format!("has data offset {t}, which is not an integer")),
        };
    }
    let [begin, end] = bounds;
    if begin > end {
        return Err(format!(
            "has data_offsets [{begin}, {end}] out of order (begin after end)"
        ));
    }
    if end - begin != nbytes {
        return Err(format!(
            "has data_offsets [{begin}, {end}] spanning {} bytes, but shape {shown} of {dtype} needs {nbytes}",
            end - begin
        ));
    }
    if end > data_len {
        return Err(format!(
            "has data_offsets [{begin}, {end}] past the end of the data section ({data_len} bytes)"
        ));
    }
    Ok((begin, end))
}

fn too_large(shown: &str, dtype: &str) -> String {
    format!("has shape {shown} of {dtype}, whose byte size overflows an i64")
}

/// The safetensors format forbids tensors sharing bytes; an overlap means a corrupt or crafted
/// file, where writing one array's data would change another's meaning.
fn check_disjoint(spans: &mut [((u64, u64), &str)]) -> std::result::Result<(), String> {
    spans.sort_unstable();
    let mut reach: Option<((u64, u64), &str)> = None;
    for &(span, name) in spans.iter() {
        if span.0 == span.1 {
            continue;
        }
        if let Some((prev, prev_name)) = reach {
            if span.0 < prev.1 {
                return Err(format!(
                    "tensors {prev_name:?} (bytes {}..{}) and {name:?} (bytes {}..{}) overlap",
                    prev.0, prev.1, span.0, span.1
                ));
            }
        }
        // Past the check, this span starts at or after every earlier one's end.
        reach = Some((span, name));
    }
    Ok(())
}
