//! Reading the file: every length checked against the bytes left, every value MLX would
//! trust checked where it is read.

use std::fs::File;
use std::io::{BufReader, Read};

use crate::{Error, Result};

use super::format::MAX_BYTES;
use super::prims::State;
use super::{Dt, Field, Meta, Val};

pub(super) struct Walker {
    pub(super) r: BufReader<File>,
    pub(super) pos: u64,
    pub(super) len: u64,
    pub(super) path: String,
}

pub(super) fn io_err(path: &str, e: std::io::Error) -> Error {
    Error::io(format!("[import_function] {path}"), e)
}

impl Walker {
    pub(super) fn fail_at(&self, pos: u64, what: impl std::fmt::Display) -> Error {
        Error::invalid_data(
            format!("[import_function] {}", self.path),
            format!("corrupt or truncated .mlxfn file: {what} (at byte {pos})"),
        )
    }

    pub(super) fn fail(&self, what: impl std::fmt::Display) -> Error {
        self.fail_at(self.pos, what)
    }

    fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    fn need(&self, n: u64, what: &str) -> Result<()> {
        if self.remaining() < n {
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
            .map_err(|e| io_err(&self.path, e))?;
        self.pos += n;
        Ok(buf)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        self.need(N as u64, what)?;
        let mut buf = [0u8; N];
        self.r
            .read_exact(&mut buf)
            .map_err(|e| io_err(&self.path, e))?;
        self.pos += N as u64;
        Ok(buf)
    }

    /// Skips `n` bytes that `need` found in the file (a constant's data, which can be large:
    /// the values that matter are read later).
    pub(super) fn skip(&mut self, n: u64, what: &str) -> Result<()> {
        self.need(n, what)?;
        let n = i64::try_from(n).map_err(|_| self.fail(format!("{what} is too large")))?;
        self.r.seek_relative(n).map_err(|e| io_err(&self.path, e))?;
        self.pos += n as u64;
        Ok(())
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    /// MLX reads a `bool` as one byte into a C++ `bool`; any value but 0 and 1 is undefined
    /// behaviour there, and MLX never writes one.
    pub(super) fn bool(&mut self, what: &str) -> Result<bool> {
        let at = self.pos;
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.fail_at(
                at,
                format!("{what} is a bool stored as {b} (0 or 1 expected)"),
            )),
        }
    }

    pub(super) fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array(what)?))
    }

    fn i64(&mut self, what: &str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }

    pub(super) fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn f32(&mut self, what: &str) -> Result<f32> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }

    fn f64(&mut self, what: &str) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array(what)?))
    }

    /// The element count of a vector whose elements take at least `min_elem` bytes each:
    /// MLX reserves that many elements before reading any, and counts them in an `int`.
    pub(super) fn count(&mut self, min_elem: u64, what: &str) -> Result<usize> {
        let at = self.pos;
        let n = self.u64(what)?;
        let fits = n
            .checked_mul(min_elem)
            .is_some_and(|bytes| bytes <= self.remaining());
        if !fits || n > i32::MAX as u64 {
            return Err(self.fail_at(
                at,
                format!(
                    "{what} has {n} elements, more than the {} bytes left in the file can hold",
                    self.remaining()
                ),
            ));
        }
        Ok(n as usize)
    }

    pub(super) fn string(&mut self, what: &str) -> Result<Vec<u8>> {
        let n = self.count(1, what)?;
        self.bytes(n as u64, what)
    }

    fn vec_i32(&mut self, what: &str) -> Result<Vec<i32>> {
        let n = self.count(4, what)?;
        (0..n).map(|_| self.i32(what)).collect()
    }

    fn vec_i64(&mut self, what: &str) -> Result<Vec<i64>> {
        let n = self.count(8, what)?;
        (0..n).map(|_| self.i64(what)).collect()
    }

    pub(super) fn vec_u64(&mut self, what: &str) -> Result<Vec<u64>> {
        let n = self.count(8, what)?;
        (0..n).map(|_| self.u64(what)).collect()
    }

    /// A `Dtype`: MLX writes its `Val` and its size, and trusts both.
    pub(super) fn dtype(&mut self, what: &str) -> Result<Dt> {
        let at = self.pos;
        let val = self.i32(what)?;
        let size = self.u8(what)?;
        let dt = Dt::from_val(val)
            .ok_or_else(|| self.fail_at(at, format!("{what} has unknown dtype value {val}")))?;
        if size != dt.size() {
            return Err(self.fail_at(
                at,
                format!(
                    "{what} is {dt} with an element size of {size} bytes ({} expected)",
                    dt.size()
                ),
            ));
        }
        Ok(dt)
    }

    /// An array's shape: no negative dimension, and a byte size that fits `i64`.
    pub(super) fn shape(&mut self, what: &str) -> Result<Vec<i32>> {
        let at = self.pos;
        let shape = self.vec_i32(what)?;
        if let Some(d) = shape.iter().find(|&&d| d < 0) {
            return Err(self.fail_at(at, format!("{what} {shape:?} has a negative dimension {d}")));
        }
        let mut elems: u128 = 1;
        for &d in &shape {
            elems = elems.saturating_mul(d as u128);
        }
        if elems.saturating_mul(8) > MAX_BYTES {
            return Err(self.fail_at(at, format!("{what} {shape:?} has too many elements")));
        }
        Ok(shape)
    }

    pub(super) fn meta(&mut self, what: &str) -> Result<Meta> {
        let shape = self.shape(&format!("{what} shape"))?;
        let dtype = self.dtype(&format!("{what} dtype"))?;
        Ok(Meta { shape, dtype })
    }

    pub(super) fn state(&mut self, name: &str, fields: &[Field]) -> Result<State> {
        let what = format!("the state of {name}");
        let mut vals = Vec::with_capacity(fields.len());
        for f in fields {
            vals.push(match f {
                Field::I32 => Val::I(self.i32(&what)?),
                Field::Bool => Val::B(self.bool(&what)?),
                Field::F32 => Val::F(f64::from(self.f32(&what)?)),
                Field::F64 => Val::F(self.f64(&what)?),
                Field::U64 => Val::U(self.u64(&what)?),
                Field::Dtype => Val::D(self.dtype(&what)?),
                Field::VecI32 => Val::Is(self.vec_i32(&what)?),
                Field::VecI64 => Val::Ls(self.vec_i64(&what)?),
                Field::VecU64 => Val::Us(self.vec_u64(&what)?),
                Field::Str => Val::S(self.string(&what)?),
                Field::Null => Val::Nil,
                Field::OptF32 => {
                    if self.bool(&what)? {
                        self.f32(&what)?;
                    }
                    Val::Walked
                }
                Field::I32x3 => {
                    for _ in 0..3 {
                        self.i32(&what)?;
                    }
                    Val::Walked
                }
                Field::VecBool3 => {
                    let n = self.count(3, &what)?;
                    for _ in 0..n * 3 {
                        self.bool(&what)?;
                    }
                    Val::Walked
                }
                Field::VecScalar => {
                    let n = self.count(5, &what)?;
                    for _ in 0..n {
                        let at = self.pos;
                        match self.i32(&what)? {
                            0 => {
                                self.i32(&what)?;
                            }
                            1 => {
                                self.f32(&what)?;
                            }
                            2 => {
                                self.bool(&what)?;
                            }
                            t => {
                                return Err(self.fail_at(
                                    at,
                                    format!("{what}: unknown scalar argument type {t}"),
                                ))
                            }
                        }
                    }
                    Val::Walked
                }
            });
        }
        Ok(State(vals))
    }
}
