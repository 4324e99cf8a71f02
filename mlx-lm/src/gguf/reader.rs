//! A GGUF file's header (metadata and tensor table) and the bytes of each tensor, read with
//! every length checked against the file, so a truncated or corrupt file is an error naming
//! what is wrong, never an out-of-bounds read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mlx_rs::io::GgmlType;

use crate::config::invalid;
use crate::error::{Error, Result};

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    /// Any integer type (u8 ... i64), widened.
    Int(i64),
    /// `uint64` values above `i64::MAX`.
    UInt(u64),
    /// `float32` or `float64`, widened.
    Float(f64),
    Bool(bool),
    String(String),
    Array(Vec<MetaValue>),
}

impl MetaValue {
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            MetaValue::Int(i) => Some(*i),
            MetaValue::UInt(u) => i64::try_from(*u).ok(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            MetaValue::Float(f) => Some(*f),
            _ => self.as_i64().map(|i| i as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            MetaValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[MetaValue]> {
        match self {
            MetaValue::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// A tensor's entry in the table.
#[derive(Debug, Clone)]
pub struct TensorInfo {
    pub name: String,
    /// ggml's order: the fastest-varying dimension first (MLX's shape reversed).
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    /// Where its bytes start in the file.
    start: usize,
    len: usize,
}

impl TensorInfo {
    /// The shape as MLX (and PyTorch) write it: slowest dimension first.
    pub fn shape(&self) -> Vec<i32> {
        // Each dimension was checked to fit an i32.
        self.dims.iter().rev().map(|&d| d as i32).collect()
    }

    /// How many values it holds.
    pub fn items(&self) -> u64 {
        self.dims.iter().product()
    }
}

/// A GGUF file, read whole.
#[derive(Debug)]
pub struct GgufFile {
    pub path: PathBuf,
    pub metadata: BTreeMap<String, MetaValue>,
    pub tensors: Vec<TensorInfo>,
    bytes: Vec<u8>,
}

impl GgufFile {
    /// Reads and checks `path`: magic, version 2 or 3, metadata, tensor table, and that each
    /// tensor's bytes (its type's block size times its blocks) lie inside the file.
    pub fn open(path: impl AsRef<Path>) -> Result<GgufFile> {
        let path = path.as_ref().to_path_buf();
        let bytes = std::fs::read(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let mut c = Cursor {
            bytes: &bytes,
            pos: 0,
            path: &path,
        };
        if c.take(4, "the magic number")? != b"GGUF" {
            return Err(c.fail("header", "the file does not start with \"GGUF\""));
        }
        let version = c.u32("the version")?;
        if !(2..=3).contains(&version) {
            return Err(c.fail(
                "header",
                &format!("unsupported GGUF version {version} (2 or 3 expected)"),
            ));
        }
        let tensor_count = c.u64("the tensor count")?;
        let kv_count = c.u64("the metadata count")?;
        let mut metadata = BTreeMap::new();
        for _ in 0..kv_count {
            let key = c.string("a metadata key")?;
            let ty = c.u32(&key)?;
            let value = c.value(ty, &key, 0)?;
            metadata.insert(key, value);
        }
        let alignment = match metadata.get("general.alignment") {
            None => 32,
            Some(v) => match v.as_i64() {
                Some(a) if a > 0 => a as usize,
                _ => return Err(c.fail("general.alignment", "not a positive integer")),
            },
        };
        let mut tensors = Vec::new();
        for _ in 0..tensor_count {
            let name = c.string("a tensor name")?;
            let ndim = c.u32(&name)?;
            if ndim > 8 {
                return Err(c.fail(&name, &format!("{ndim} dimensions (at most 8)")));
            }
            let mut dims = Vec::new();
            for _ in 0..ndim {
                let d = c.u64(&name)?;
                if d > i32::MAX as u64 {
                    return Err(c.fail(&name, &format!("a dimension of {d}")));
                }
                dims.push(d);
            }
            let id = c.u32(&name)?;
            let ty = GgmlType::from_id(id)
                .ok_or_else(|| c.fail(&name, &format!("unknown ggml tensor type {id}")))?;
            let offset = c.u64(&name)?;
            tensors.push((name, dims, ty, offset));
        }
        let data_start = c.pos.div_ceil(alignment) * alignment;
        let mut table = Vec::new();
        for (name, dims, ty, offset) in tensors {
            let items = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
            let Some(len) = items.and_then(|n| ty.bytes_for(n)) else {
                return Err(invalid(
                    &path,
                    &name,
                    &format!(
                        "{dims:?} is not a whole number of {} blocks of {} values",
                        ty.name, ty.block_items
                    ),
                ));
            };
            let start = (data_start as u64).checked_add(offset);
            match start.and_then(|s| s.checked_add(len)) {
                Some(end) if end <= bytes.len() as u64 => {}
                _ => {
                    return Err(invalid(
                        &path,
                        &name,
                        &format!(
                            "{len} bytes at data offset {offset} extend past the end of the \
                             file ({} bytes)",
                            bytes.len()
                        ),
                    ))
                }
            }
            if table.iter().any(|t: &TensorInfo| t.name == name) {
                return Err(invalid(&path, &name, "the tensor name appears twice"));
            }
            table.push(TensorInfo {
                name,
                dims,
                ty,
                start: data_start + offset as usize,
                len: len as usize,
            });
        }
        Ok(GgufFile {
            path,
            metadata,
            tensors: table,
            bytes,
        })
    }

    /// The bytes of `tensor` (one of this file's).
    pub fn data(&self, tensor: &TensorInfo) -> &[u8] {
        &self.bytes[tensor.start..tensor.start + tensor.len]
    }

    /// The tensor named `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl<'a> Cursor<'a> {
    fn fail(&self, key: &str, what: &str) -> Error {
        invalid(
            self.path,
            key,
            &format!(
                "corrupt or truncated GGUF file: {what} (at byte {})",
                self.pos
            ),
        )
    }

    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        let left = (self.bytes.len() - self.pos) as u64;
        if n > left {
            return Err(self.fail(
                what,
                &format!("needs {n} bytes, the file ends {left} bytes on"),
            ));
        }
        let s = &self.bytes[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N as u64, what)?);
        Ok(a)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let n = self.u64(what)?;
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.fail(what, "a string is not UTF-8"))
    }

    fn value(&mut self, ty: u32, key: &str, depth: u32) -> Result<MetaValue> {
        Ok(match ty {
            0 => MetaValue::Int(i64::from(self.array::<1>(key)?[0])),
            1 => MetaValue::Int(i64::from(self.array::<1>(key)?[0] as i8)),
            2 => MetaValue::Int(i64::from(u16::from_le_bytes(self.array(key)?))),
            3 => MetaValue::Int(i64::from(i16::from_le_bytes(self.array(key)?))),
            4 => MetaValue::Int(i64::from(self.u32(key)?)),
            5 => MetaValue::Int(i64::from(i32::from_le_bytes(self.array(key)?))),
            6 => MetaValue::Float(f64::from(f32::from_le_bytes(self.array(key)?))),
            7 => match self.array::<1>(key)?[0] {
                0 => MetaValue::Bool(false),
                1 => MetaValue::Bool(true),
                b => return Err(self.fail(key, &format!("bool value {b}"))),
            },
            8 => MetaValue::String(self.string(key)?),
            9 => {
                if depth > 2 {
                    return Err(self.fail(key, "arrays nested too deep"));
                }
                let elem = self.u32(key)?;
                let count = self.u64(key)?;
                // Every element takes at least a byte: a count beyond the bytes left is a
                // corrupt file, not a reason to allocate.
                if count > (self.bytes.len() - self.pos) as u64 {
                    return Err(self.fail(key, &format!("an array of {count} entries")));
                }
                let mut items = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    items.push(self.value(elem, key, depth + 1)?);
                }
                MetaValue::Array(items)
            }
            10 => {
                let u = self.u64(key)?;
                i64::try_from(u).map_or(MetaValue::UInt(u), MetaValue::Int)
            }
            11 => MetaValue::Int(i64::from_le_bytes(self.array(key)?)),
            12 => MetaValue::Float(f64::from_le_bytes(self.array(key)?)),
            other => return Err(self.fail(key, &format!("unknown metadata value type {other}"))),
        })
    }
}
