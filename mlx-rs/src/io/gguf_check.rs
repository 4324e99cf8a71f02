//! Structural validation of a GGUF header before MLX parses it.
//!
//! MLX's GGUF loader (gguflib) walks the memory-mapped header with unchecked pointer
//! arithmetic and live `assert`s: a truncated or corrupt file can read out of bounds, divide
//! by zero or abort the process. This walk reads the same layout with every length checked
//! against the file size, so MLX only ever sees headers it can parse. It also yields the
//! metadata keys, which mlx-c has no call to list.
//!
//! Tensor names are checked too: MLX reports a repeated name by printing the array instead of
//! the name (and silently keeps the first copy of a repeated quantized tensor), and mlx-c hands
//! names out as C strings, so a NUL byte would merge two names.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use super::GgmlType;
use crate::{Error, Result};

/// gguflib's `GGUF_TENSOR_MAX_DIM`.
const MAX_DIMS: u32 = 8;
const VALUE_TYPE_STRING: u32 = 8;
const VALUE_TYPE_ARRAY: u32 = 9;

struct Walker<R> {
    r: R,
    pos: u64,
    len: u64,
    path: String,
}

impl<R: Read> Walker<R> {
    fn fail(&self, what: impl std::fmt::Display) -> Error {
        Error::invalid_data(
            format!("[load_gguf] {}", self.path),
            format!(
                "corrupt or truncated GGUF file: {what} (at byte {})",
                self.pos
            ),
        )
    }

    fn need(&self, n: u64, what: &str) -> Result<()> {
        if self.len.saturating_sub(self.pos) < n {
            return Err(self.fail(format!(
                "{what} needs {n} bytes but the file ends at byte {}",
                self.len
            )));
        }
        Ok(())
    }

    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>> {
        self.need(n, what)?;
        let mut buf = vec![0u8; n as usize];
        self.r
            .read_exact(&mut buf)
            .map_err(|e| Error::io(format!("[load_gguf] {}", self.path), e))?;
        self.pos += n;
        Ok(buf)
    }

    fn skip(&mut self, n: u64, what: &str) -> Result<()> {
        self.need(n, what)?;
        let copied = std::io::copy(&mut (&mut self.r).take(n), &mut std::io::sink())
            .map_err(|e| Error::io(format!("[load_gguf] {}", self.path), e))?;
        if copied != n {
            return Err(self.fail(format!("{what} is cut short")));
        }
        self.pos += n;
        Ok(())
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        let b = self.bytes(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let n = self.u64(what)?;
        let b = self.bytes(n, what)?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    /// A string's bytes as written, for names compared the way MLX compares them.
    fn raw_string(&mut self, what: &str) -> Result<Vec<u8>> {
        let n = self.u64(what)?;
        self.bytes(n, what)
    }

    fn skip_string(&mut self, what: &str) -> Result<()> {
        let n = self.u64(what)?;
        self.skip(n, what)
    }

    /// Skips one metadata value; returns a `u32` scalar's value (for `general.alignment`).
    fn value(&mut self, ty: u32, key: &str) -> Result<Option<u32>> {
        if ty == 4 {
            return Ok(Some(self.u32(key)?));
        }
        if let Some(size) = fixed_size(ty) {
            self.skip(size, key)?;
            return Ok(None);
        }
        match ty {
            VALUE_TYPE_STRING => self.skip_string(key)?,
            VALUE_TYPE_ARRAY => {
                let elem = self.u32(key)?;
                let count = self.u64(key)?;
                if count > i32::MAX as u64 {
                    return Err(self.fail(format!("metadata array {key:?} has {count} entries")));
                }
                if let Some(size) = fixed_size(elem).or((elem == 4).then_some(4)) {
                    let total = count
                        .checked_mul(size)
                        .ok_or_else(|| self.fail(format!("metadata array {key:?} is too large")))?;
                    self.skip(total, key)?;
                } else if elem == VALUE_TYPE_STRING {
                    for _ in 0..count {
                        self.skip_string(key)?;
                    }
                } else if elem == VALUE_TYPE_ARRAY {
                    return Err(self.fail(format!(
                        "metadata {key:?} nests arrays, which MLX does not load"
                    )));
                } else {
                    return Err(self.fail(format!(
                        "metadata array {key:?} has unknown element type {elem}"
                    )));
                }
            }
            other => {
                return Err(self.fail(format!("metadata {key:?} has unknown value type {other}")))
            }
        }
        Ok(None)
    }
}

/// Bytes of a fixed-size GGUF value type other than `uint32` (handled by the caller).
fn fixed_size(ty: u32) -> Option<u64> {
    match ty {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        5 | 6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

/// Tensor types MLX loads as a quantized triple (`Q4_0`, `Q4_1`, `Q8_0`).
fn mlx_quantized(ty: u32) -> bool {
    matches!(ty, 2 | 3 | 8)
}

/// The names MLX gives a tensor's arrays: the name itself and, for a quantized triple,
/// `.scales` and `.biases` after the name less its last 7 bytes (meant as `.weight`; MLX
/// strips them whatever they are, and keeps a shorter name whole).
fn mlx_names(name: &[u8], ty: u32) -> Vec<Vec<u8>> {
    let mut names = vec![name.to_vec()];
    if mlx_quantized(ty) {
        let prefix = name.len().checked_sub(7).map_or(name, |n| &name[..n]);
        for suffix in [&b".scales"[..], b".biases"] {
            names.push([prefix, suffix].concat());
        }
    }
    names
}

/// `(items per block, bytes per block)` of a tensor type (llama.cpp's sizes, [`GgmlType`]);
/// `None` for the removed types 4 and 5 and anything unknown.
fn block(ty: u32) -> Option<(u64, u64)> {
    GgmlType::from_id(ty).map(|t| (t.block_items, t.block_bytes))
}

/// Checks the whole header of the GGUF file at `path` and every tensor's extent; returns the
/// metadata keys in file order.
pub(super) fn validate(path: &Path) -> Result<Vec<String>> {
    let shown = path.display().to_string();
    let file = File::open(path).map_err(|e| Error::io(format!("[load_gguf] {shown}"), e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::io(format!("[load_gguf] {shown}"), e))?
        .len();
    let mut w = Walker {
        r: BufReader::new(file),
        pos: 0,
        len,
        path: shown,
    };

    let magic = w.bytes(4, "the magic number")?;
    if magic != b"GGUF" {
        return Err(w.fail("the file does not start with \"GGUF\""));
    }
    let version = w.u32("the version")?;
    if !(2..=3).contains(&version) {
        return Err(w.fail(format!(
            "unsupported GGUF version {version} (2 or 3 expected)"
        )));
    }
    let tensor_count = w.u64("the tensor count")?;
    let kv_count = w.u64("the metadata count")?;

    let mut alignment: u64 = 32;
    let mut keys = Vec::new();
    for _ in 0..kv_count {
        let key = w.string("a metadata key")?;
        let ty = w.u32("a metadata type")?;
        let scalar = w.value(ty, &key)?;
        if key == "general.alignment" {
            if let Some(a) = scalar {
                if a == 0 {
                    return Err(w.fail("general.alignment is 0"));
                }
                alignment = u64::from(a);
            }
        }
        keys.push(key);
    }

    let mut tensors = Vec::new();
    // Each array name MLX will make, and the tensor that makes it.
    let mut taken: HashMap<Vec<u8>, String> = HashMap::new();
    for _ in 0..tensor_count {
        let raw_name = w.raw_string("a tensor name")?;
        let name = String::from_utf8_lossy(&raw_name).into_owned();
        if raw_name.contains(&0) {
            return Err(w.fail(format!(
                "tensor name {name:?} contains a NUL byte, which MLX would cut the name at"
            )));
        }
        let ndim = w.u32("a tensor rank")?;
        if ndim > MAX_DIMS {
            return Err(w.fail(format!(
                "tensor {name:?} has {ndim} dimensions (at most {MAX_DIMS})"
            )));
        }
        let mut weights: u64 = 1;
        for _ in 0..ndim {
            let d = w.u64("a tensor dimension")?;
            if d > i32::MAX as u64 {
                return Err(w.fail(format!("tensor {name:?} has a dimension of {d}")));
            }
            weights = weights
                .checked_mul(d)
                .ok_or_else(|| w.fail(format!("tensor {name:?} is too large")))?;
        }
        let ty = w.u32("a tensor type")?;
        let (per_block, bytes_per_block) =
            block(ty).ok_or_else(|| w.fail(format!("tensor {name:?} has unknown type {ty}")))?;
        if mlx_quantized(ty) && ndim == 0 {
            // MLX reads the last dimension of a quantized tensor without checking there is one.
            return Err(w.fail(format!("quantized tensor {name:?} has no dimensions")));
        }
        for made in mlx_names(&raw_name, ty) {
            if let Some(first) = taken.get(&made) {
                let made = String::from_utf8_lossy(&made);
                let what = if *first == name && made == name {
                    format!("tensor name {name:?} appears more than once")
                } else {
                    format!(
                        "tensors {first:?} and {name:?} would both load as {made:?} (MLX names a quantized tensor's scales and biases after it)"
                    )
                };
                return Err(w.fail(what));
            }
            taken.insert(made, name.clone());
        }
        let offset = w.u64("a tensor offset")?;
        let blocks = weights.div_ceil(per_block);
        let size = blocks
            .checked_mul(bytes_per_block)
            .ok_or_else(|| w.fail(format!("tensor {name:?} is too large")))?;
        tensors.push((name, offset, size));
    }

    let data_start = w.pos.div_ceil(alignment) * alignment;
    for (name, offset, size) in tensors {
        let end = data_start
            .checked_add(offset)
            .and_then(|o| o.checked_add(size));
        match end {
            Some(end) if end <= len => {}
            _ => {
                return Err(w.fail(format!(
                    "tensor {name:?} ({size} bytes at data offset {offset}) extends past the end of the file ({len} bytes)"
                )))
            }
        }
    }
    Ok(keys)
}
