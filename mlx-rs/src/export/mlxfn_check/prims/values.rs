//! What the value checks need: how a kernel uses an integer input's values (`ValueUse`),
//! bounds on integer values (`Range`), and integer element values as C++ converts them.

use super::Dt;

/// How a primitive's kernel uses the values of one of its integer inputs (as offsets, or as
/// divisors), so that the values can be checked when the input is a constant of the file.
#[derive(Debug)]
pub(in crate::export::mlxfn_check) struct ValueUse {
    /// Position of the index array among the primitive's inputs.
    pub(in crate::export::mlxfn_check) input: usize,
    /// The index array's dtype, as the primitive sees it.
    dtype: Dt,
    kind: ValueKind,
}

#[derive(Debug)]
enum ValueKind {
    /// Gather/scatter along an axis (MLX's `offset_neg_idx`): a negative value of a signed
    /// type counts from the end, and the slice taken from there must fit the axis.
    Axis { size: i64, slice: i64 },
    /// A matrix of a batch, read as `uint32`.
    Batch { count: i64 },
    /// Dynamic slice starts: element `k` is read as the unsigned type of its width and is the
    /// start along an axis whose slice may begin at most at `max[k]`.
    Start { max: Vec<i64> },
    /// An integer divisor: the CPU divides with the machine instruction, which traps on 0.
    Divisor,
}

impl ValueUse {
    /// Input `input` (of dtype `dtype`) indexes an axis of `size` elements, taking `slice`
    /// elements from each index.
    pub(super) fn axis(input: usize, dtype: Dt, size: i64, slice: i64) -> ValueUse {
        ValueUse {
            input,
            dtype,
            kind: ValueKind::Axis { size, slice },
        }
    }

    /// Input `input` picks matrices of a batch of `count`, read as `uint32`.
    pub(super) fn batch(input: usize, count: i64) -> ValueUse {
        ValueUse {
            input,
            dtype: Dt::U32,
            kind: ValueKind::Batch { count },
        }
    }

    /// Input `input` holds dynamic slice starts, the one for axis `k` at most `max[k]`.
    pub(super) fn start(input: usize, dtype: Dt, max: Vec<i64>) -> ValueUse {
        ValueUse {
            input,
            dtype,
            kind: ValueKind::Start { max },
        }
    }

    /// Input `input` divides an integer array of dtype `dtype`.
    pub(super) fn divisor(input: usize, dtype: Dt) -> ValueUse {
        ValueUse {
            input,
            dtype,
            kind: ValueKind::Divisor,
        }
    }

    /// Checks element `k`, whose value (in the index array's dtype) is `v`.
    pub(in crate::export::mlxfn_check) fn check(
        &self,
        k: u64,
        v: i128,
    ) -> std::result::Result<(), String> {
        match &self.kind {
            ValueKind::Axis { size, slice } => {
                let (size, slice) = (i128::from(*size), i128::from(*slice));
                let n = if self.dtype.is_signed_int() && v < 0 {
                    v + size
                } else {
                    v
                };
                if n < 0 || n + slice > size {
                    return Err(format!(
                        "{v}, out of range for an axis of size {size} (slice of {slice})"
                    ));
                }
            }
            ValueKind::Batch { count } => {
                if v < 0 || v >= i128::from(*count) {
                    return Err(format!("{v}, out of range for a batch of {count} matrices"));
                }
            }
            ValueKind::Divisor => {
                if v == 0 {
                    return Err("0, an integer division by zero (which kills the process)".into());
                }
            }
            ValueKind::Start { max } => {
                let u = if v < 0 {
                    v + (1i128 << (8 * u32::from(self.dtype.size())))
                } else {
                    v
                };
                let max = max.get(k as usize).copied().unwrap_or(0);
                if u > i128::from(max) {
                    return Err(format!(
                        "{v}, a slice start past {max}, the last start that fits"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Elements MLX reads from the array: it takes dynamic slice starts from the start of the
    /// buffer, whatever the array's strides, so a broadcast of fewer values would be read past.
    pub(in crate::export::mlxfn_check) fn elements_read(&self) -> u64 {
        match &self.kind {
            ValueKind::Start { max } => max.len() as u64,
            _ => 0,
        }
    }

    /// Checks the bounds of values computed in the graph. Only the bounds are sure to occur,
    /// so only they are checked, and only for offsets: a divisor's bounds say nothing about 0,
    /// and slice starts are checked where they are constants.
    pub(in crate::export::mlxfn_check) fn check_range(
        &self,
        r: Range,
    ) -> std::result::Result<(), String> {
        match self.kind {
            ValueKind::Axis { .. } | ValueKind::Batch { .. } => {
                self.check(0, r.lo)?;
                self.check(0, r.hi)
            }
            ValueKind::Start { .. } | ValueKind::Divisor => Ok(()),
        }
    }
}

/// Bounds on an integer array's values, in its dtype.
#[derive(Clone, Copy, Debug)]
pub(in crate::export::mlxfn_check) struct Range {
    /// The smallest and largest value some data can give (both can occur).
    pub(in crate::export::mlxfn_check) lo: i128,
    pub(in crate::export::mlxfn_check) hi: i128,
    /// Whether any element can hold any value in between, depending on the data. Otherwise
    /// the values are fixed (a constant, an `arange`), so a part of the array may not reach
    /// the bounds.
    pub(in crate::export::mlxfn_check) free: bool,
}

/// The smallest and largest value of an integer or bool dtype.
pub(super) fn int_bounds(d: Dt) -> Option<(i128, i128)> {
    let bits = 8 * u32::from(d.size());
    if d.is_signed_int() {
        Some((-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1))
    } else if d.is_int() {
        Some((0, (1i128 << bits) - 1))
    } else if d == Dt::Bool {
        Some((0, 1))
    } else {
        None
    }
}

/// The value of one little-endian element of an integer (or bool) dtype.
pub(in crate::export::mlxfn_check) fn int_value(dt: Dt, b: &[u8]) -> i128 {
    let mut raw = [0u8; 8];
    raw[..b.len()].copy_from_slice(b);
    let u = u64::from_le_bytes(raw);
    match dt {
        Dt::I8 => i128::from(u as u8 as i8),
        Dt::I16 => i128::from(u as u16 as i16),
        Dt::I32 => i128::from(u as u32 as i32),
        Dt::I64 => i128::from(u as i64),
        Dt::Bool => i128::from(u != 0),
        _ => i128::from(u),
    }
}

/// `v` converted to the integer type `to` as C++'s `static_cast` does (two's complement).
pub(in crate::export::mlxfn_check) fn wrap(v: i128, to: Dt) -> i128 {
    let bits = 8 * u32::from(to.size());
    let m = v & ((1i128 << bits) - 1);
    if to.is_signed_int() && m >= (1i128 << (bits - 1)) {
        m - (1i128 << bits)
    } else {
        m
    }
}

/// `v` as a value of dtype `d`: C++'s conversion to an integer type, or to `bool`.
pub(super) fn to_dtype(v: i128, d: Dt) -> i128 {
    if d == Dt::Bool {
        i128::from(v != 0)
    } else {
        wrap(v, d)
    }
}
