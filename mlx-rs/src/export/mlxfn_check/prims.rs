//! The primitives MLX 0.32.2 can import: the layout of each one's serialized state (its
//! `state()` tuple, in `primitives.h` and `fast_primitives.h`) and the invariants the op that
//! builds it establishes and its kernel relies on.
//!
//! In a non-shapeless function MLX replays every primitive with the output shapes and dtypes
//! stored in the file, and the CPU kernels take their loop bounds from those shapes, read the
//! inputs as the output's element type, and dispatch on dtypes inside a task on the stream's
//! worker thread, where an unsupported dtype is an uncaught exception (`std::terminate`). So
//! each check below pins the output metadata to what MLX's op would have produced from the
//! inputs and the state, and rejects dtypes the kernel cannot take.

use super::{Dt, Field, Meta, Val};

/// A primitive's decoded state, in `state()` order.
#[derive(Debug)]
pub(in crate::export) struct State(pub(super) Vec<Val>);

impl State {
    fn int(&self, k: usize) -> i32 {
        match &self.0[k] {
            Val::I(v) => *v,
            v => unreachable!("state field {k} is {v:?}, not an int"),
        }
    }

    fn flag(&self, k: usize) -> bool {
        match &self.0[k] {
            Val::B(v) => *v,
            v => unreachable!("state field {k} is {v:?}, not a bool"),
        }
    }

    fn float(&self, k: usize) -> f64 {
        match &self.0[k] {
            Val::F(v) => *v,
            v => unreachable!("state field {k} is {v:?}, not a float"),
        }
    }

    fn uint(&self, k: usize) -> u64 {
        match &self.0[k] {
            Val::U(v) => *v,
            v => unreachable!("state field {k} is {v:?}, not a size_t"),
        }
    }

    fn dtype(&self, k: usize) -> Dt {
        match &self.0[k] {
            Val::D(v) => *v,
            v => unreachable!("state field {k} is {v:?}, not a dtype"),
        }
    }

    fn ints(&self, k: usize) -> &[i32] {
        match &self.0[k] {
            Val::Is(v) => v,
            v => unreachable!("state field {k} is {v:?}, not a vector of int"),
        }
    }

    fn longs(&self, k: usize) -> &[i64] {
        match &self.0[k] {
            Val::Ls(v) => v,
            v => unreachable!("state field {k} is {v:?}, not a vector of int64"),
        }
    }

    fn uints(&self, k: usize) -> &[u64] {
        match &self.0[k] {
            Val::Us(v) => v,
            v => unreachable!("state field {k} is {v:?}, not a vector of size_t"),
        }
    }

    fn bytes(&self, k: usize) -> &[u8] {
        match &self.0[k] {
            Val::S(v) => v,
            v => unreachable!("state field {k} is {v:?}, not a string"),
        }
    }
}

/// Match arms `name => (name, &fields)` for each name of each state layout.
macro_rules! factory {
    ($name:expr; $($fields:tt => $($n:literal)|+,)*) => {
        match $name {
            $($($n => ($n, &$fields as &'static [Field]),)+)*
            _ => return None,
        }
    };
}

/// The factory table of MLX 0.32.2's `export.cpp` (`PrimitiveFactory`): each primitive name
/// MLX can deserialize, and the fields of its `state()` in order.
pub(super) fn layout(name: &[u8]) -> Option<(&'static str, &'static [Field])> {
    use Field::*;
    let name = std::str::from_utf8(name).ok()?;
    Some(factory! { name;
        [] => "Abs" | "Add" | "ArcCos" | "ArcCosh" | "ArcSin" | "ArcSinh" | "ArcTan" | "ArcTan2"
            | "ArcTanh" | "Ceil" | "Conjugate" | "Copy" | "Cos" | "Cosh" | "Depends" | "Divide"
            | "DivMod" | "Erf" | "ErfInv" | "Exp" | "Expm1" | "Floor" | "Full" | "Greater"
            | "GreaterEqual" | "Imag" | "Less" | "LessEqual" | "Log1p" | "LogicalNot"
            | "LogicalAnd" | "LogicalOr" | "LogAddExp" | "LogSumExp" | "MaskedScatter"
            | "Matmul" | "Maximum" | "Minimum" | "Multiply" | "Negative" | "NotEqual" | "Power"
            | "Real" | "Remainder" | "Round" | "Select" | "Sigmoid" | "Sign" | "Sin" | "Sinh"
            | "Square" | "StopGradient" | "Subtract" | "Tan" | "Tanh" | "QRF",
        [F32, F32] => "AddMM",
        [F64, F64, F64] => "Arange",
        [I32, I32] => "ArgPartition" | "Partition" | "ArgReduce" | "Flatten" | "ScatterAxis",
        [I32] => "ArgSort" | "Sort" | "Concatenate" | "GatherAxis" | "BitwiseBinary"
            | "BlockMaskedMM" | "Log",
        [Dtype] => "AsType" | "View",
        [VecI32, VecI64, U64] => "AsStrided",
        [VecI32] => "Broadcast" | "BroadcastAxes" | "Reshape" | "ExpandDims" | "Squeeze"
            | "Transpose" | "DynamicSliceUpdate",
        [VecI32, VecI32, VecI32, VecI32, VecI32, I32, Bool] => "Convolution",
        [VecI32, VecI32] => "DynamicSlice" | "Gather",
        [Bool] => "Equal" | "SearchSorted" | "Softmax" | "Sqrt" | "SVD" | "Cholesky" | "Eig",
        [VecU64, Bool, Bool] => "FFT",
        [Bool, Bool] => "GatherMM" | "Inverse",
        [F32] => "Hadamard",
        [VecI32, Bool, Dtype] => "NumberOfElements",
        [VecI32, VecI32, VecI32] => "Pad" | "Slice",
        [I32, I32, I32, Bool] => "QuantizedMatmul",
        [I32, I32, I32, Bool, Bool, Bool] => "GatherQMM",
        [VecI32, I32] => "RandomBits" | "Split",
        [I32, VecI32] => "Reduce" | "Scatter" | "Unflatten",
        [I32, I32, Bool, Bool] => "Scan",
        [I32, VecI32, VecI32, VecI32] => "SliceUpdate",
        [Str, Bool] => "Eigh",
        [Null, I32, I32, I32, Bool] => "Quantize",
        [Null, F32] => "RMSNorm" | "RMSNormVJP" | "LayerNorm" | "LayerNormVJP",
        [Null, I32, Bool, F32, F32, Bool] => "RoPE",
        [Null, F32, Bool, Bool, Bool, Bool] => "ScaledDotProductAttention",
        [Str, Str, I32x3, I32x3, VecBool3, Bool, OptF32, VecScalar, Bool, I32, I32] => "CustomKernel",
    })
}

/// How a primitive's kernel uses the values of one of its integer inputs (as offsets, or as
/// divisors), so that the values can be checked when the input is a constant of the file.
#[derive(Debug)]
pub(super) struct ValueUse {
    /// Position of the index array among the primitive's inputs.
    pub(super) input: usize,
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
    /// Checks element `k`, whose value (in the index array's dtype) is `v`.
    pub(super) fn check(&self, k: u64, v: i128) -> std::result::Result<(), String> {
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
}

/// Bounds on an integer array's values, in its dtype.
#[derive(Clone, Copy, Debug)]
pub(super) struct Range {
    /// The smallest and largest value some data can give (both can occur).
    pub(super) lo: i128,
    pub(super) hi: i128,
    /// Whether any element can hold any value in between, depending on the data. Otherwise
    /// the values are fixed (a constant, an `arange`), so a part of the array may not reach
    /// the bounds.
    pub(super) free: bool,
}

impl ValueUse {
    /// Elements MLX reads from the array: it takes dynamic slice starts from the start of the
    /// buffer, whatever the array's strides, so a broadcast of fewer values would be read past.
    pub(super) fn elements_read(&self) -> u64 {
        match &self.kind {
            ValueKind::Start { max } => max.len() as u64,
            _ => 0,
        }
    }

    /// Checks the bounds of values computed in the graph. Only the bounds are sure to occur,
    /// so only they are checked, and only for offsets: a divisor's bounds say nothing about 0,
    /// and slice starts are checked where they are constants.
    pub(super) fn check_range(&self, r: Range) -> std::result::Result<(), String> {
        match self.kind {
            ValueKind::Axis { .. } | ValueKind::Batch { .. } => {
                self.check(0, r.lo)?;
                self.check(0, r.hi)
            }
            ValueKind::Start { .. } | ValueKind::Divisor => Ok(()),
        }
    }
}

/// Whether `value_range` can bound an output of primitive `name`.
pub(super) fn propagates_range(name: &str) -> bool {
    matches!(
        name,
        "ArgSort"
            | "ArgPartition"
            | "ArgReduce"
            | "Arange"
            | "Broadcast"
            | "BroadcastAxes"
            | "Reshape"
            | "ExpandDims"
            | "Squeeze"
            | "Flatten"
            | "Unflatten"
            | "Transpose"
            | "Copy"
            | "StopGradient"
            | "Sort"
            | "Partition"
            | "AsType"
            | "Slice"
            | "DynamicSlice"
            | "Gather"
            | "GatherAxis"
            | "Split"
            | "Concatenate"
            | "Remainder"
    )
}

/// The smallest and largest value of an integer or bool dtype.
fn int_bounds(d: Dt) -> Option<(i128, i128)> {
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

/// Bounds on the integer outputs of a primitive, from bounds on its inputs where known (one
/// entry per output). Only ops whose bounds are sure to occur give any: indices that sort or
/// reduce an axis, `arange`, constants, and what moves, selects or joins such values.
///
/// `args[i]` says whether input `i` is a function argument, moved or reshaped: its values can
/// be anything.
pub(super) fn value_range(
    name: &str,
    st: &State,
    ins: &[&Meta],
    in_ranges: &[Option<Range>],
    args: &[bool],
    outs: &[&Meta],
) -> Vec<Option<Range>> {
    let first = in_ranges.first().copied().flatten();
    // A part of an array reaches the bounds only if any element can.
    let part = first.filter(|r| r.free);
    let one = |r: Option<Range>| {
        let mut v = vec![r];
        v.resize(outs.len(), None);
        v
    };
    if !outs.iter().all(|o| int_bounds(o.dtype).is_some()) {
        return vec![None; outs.len()];
    }
    let axis_len = |ax: i32| {
        let n = ins.first()?.shape.get(usize::try_from(ax).ok()?).copied()?;
        (n > 0).then_some(Range {
            lo: 0,
            hi: i128::from(n) - 1,
            free: true,
        })
    };
    match name {
        "ArgSort" => one(axis_len(st.int(0))),
        "ArgPartition" | "ArgReduce" => one(axis_len(st.int(1))),
        "Arange" => one(arange_range(st, outs[0])),
        "Broadcast" | "BroadcastAxes" | "Reshape" | "ExpandDims" | "Squeeze" | "Flatten"
        | "Unflatten" | "Transpose" | "Copy" | "StopGradient" | "Sort" | "Partition" => one(first),
        "AsType" => {
            let fits = first.filter(|r| {
                int_bounds(ins[0].dtype).is_some()
                    && int_bounds(outs[0].dtype).is_some_and(|(lo, hi)| lo <= r.lo && r.hi <= hi)
            });
            one(fits)
        }
        "Slice" | "DynamicSlice" | "Gather" | "GatherAxis" => one(part),
        "Split" => vec![part; outs.len()],
        "Concatenate" => {
            let all: Option<Vec<Range>> = in_ranges.iter().copied().collect();
            one(all.and_then(|rs| {
                rs.iter().copied().reduce(|a, b| Range {
                    lo: a.lo.min(b.lo),
                    hi: a.hi.max(b.hi),
                    free: a.free && b.free,
                })
            }))
        }
        // MLX's integer remainder takes the divisor's sign: a dividend that can be anything
        // (an argument) leaves every value from 0 to the divisor's bound, exclusive.
        "Remainder" => one(match in_ranges.get(1).copied().flatten() {
            Some(_) if !args[0] => None,
            Some(d) if d.lo >= 1 => Some(Range {
                lo: 0,
                hi: d.hi - 1,
                free: true,
            }),
            Some(d) if d.hi <= -1 && ins[0].dtype.is_signed_int() => Some(Range {
                lo: d.lo + 1,
                hi: 0,
                free: true,
            }),
            _ => None,
        }),
        _ => vec![None; outs.len()],
    }
}

/// Largest integer array whose values are worked out from the file (`fold`).
pub(super) const MAX_FOLD: u64 = 1 << 16;

fn elems(shape: &[i32]) -> usize {
    shape.iter().map(|&d| d as usize).product()
}

/// For each element of `out` (row-major), the element of `input` a broadcast reads.
fn broadcast_map(input: &[i32], out: &[i32]) -> Vec<usize> {
    let lead = out.len() - input.len();
    let mut strides = vec![0usize; out.len()];
    let mut stride = 1;
    for (d, &n) in input.iter().enumerate().rev() {
        strides[lead + d] = if n == 1 { 0 } else { stride };
        stride *= n as usize;
    }
    gather_map(out, &strides)
}

/// For each element of an array of shape `out` (row-major), the offset `strides` give it.
fn gather_map(out: &[i32], strides: &[usize]) -> Vec<usize> {
    let mut map = Vec::with_capacity(elems(out));
    let mut index = vec![0i32; out.len()];
    for _ in 0..elems(out) {
        map.push(
            index
                .iter()
                .zip(strides)
                .map(|(&i, &s)| i as usize * s)
                .sum(),
        );
        for d in (0..out.len()).rev() {
            index[d] += 1;
            if index[d] < out[d] {
                break;
            }
            index[d] = 0;
        }
    }
    map
}

/// `v` as a value of dtype `d`: C++'s conversion to an integer type, or to `bool`.
fn to_dtype(v: i128, d: Dt) -> i128 {
    if d == Dt::Bool {
        i128::from(v != 0)
    } else {
        wrap(v, d)
    }
}

/// The element values of the output of a single-output integer primitive whose inputs' values
/// are known (`vals[i]`, row-major), as MLX's CPU kernels compute them; `None` where this does
/// not work them out. This makes index arrays that the graph derives from constants alone
/// (clamping, wrapping negative indices) as checkable as the constants.
pub(super) fn fold(
    name: &str,
    st: &State,
    ins: &[&Meta],
    vals: &[Option<&[i128]>],
    outs: &[&Meta],
) -> Option<Vec<i128>> {
    let out = outs.first()?;
    if outs.len() != 1 || int_bounds(out.dtype).is_none() || elems(&out.shape) as u64 > MAX_FOLD {
        return None;
    }
    let d = out.dtype;
    let first = vals.first().copied().flatten();
    let pair = || Some((vals.get(1).copied().flatten()?, first?));
    let binary = |f: &dyn Fn(i128, i128) -> Option<i128>| -> Option<Vec<i128>> {
        let (b, a) = pair()?;
        a.iter()
            .zip(b)
            .map(|(&x, &y)| f(x, y).map(|v| to_dtype(v, d)))
            .collect()
    };
    let signed = ins.first().is_some_and(|m| m.dtype.is_signed_int());
    match name {
        "Broadcast" | "BroadcastAxes" => {
            let a = first?;
            Some(
                broadcast_map(&ins[0].shape, &out.shape)
                    .into_iter()
                    .map(|i| a[i])
                    .collect(),
            )
        }
        "Reshape" | "ExpandDims" | "Squeeze" | "Flatten" | "Unflatten" | "Copy"
        | "StopGradient" | "Full" => Some(first?.to_vec()),
        "Transpose" => {
            let a = first?;
            let mut strides = vec![0usize; ins[0].ndim()];
            let mut stride = 1;
            for (k, &n) in ins[0].shape.iter().enumerate().rev() {
                strides[k] = stride;
                stride *= n as usize;
            }
            let strides: Vec<usize> = st.ints(0).iter().map(|&ax| strides[ax as usize]).collect();
            Some(
                gather_map(&out.shape, &strides)
                    .into_iter()
                    .map(|i| a[i])
                    .collect(),
            )
        }
        "AsType" => Some(first?.iter().map(|&v| to_dtype(v, d)).collect()),
        "Negative" => Some(first?.iter().map(|&v| to_dtype(-v, d)).collect()),
        "Abs" => Some(first?.iter().map(|&v| to_dtype(v.abs(), d)).collect()),
        "LogicalNot" => Some(first?.iter().map(|&v| i128::from(v == 0)).collect()),
        "Add" => binary(&|x, y| Some(x + y)),
        "Subtract" => binary(&|x, y| Some(x - y)),
        "Multiply" => binary(&|x, y| Some(x.wrapping_mul(y))),
        "Maximum" => binary(&|x, y| Some(x.max(y))),
        "Minimum" => binary(&|x, y| Some(x.min(y))),
        "Less" => binary(&|x, y| Some(i128::from(x < y))),
        "LessEqual" => binary(&|x, y| Some(i128::from(x <= y))),
        "Greater" => binary(&|x, y| Some(i128::from(x > y))),
        "GreaterEqual" => binary(&|x, y| Some(i128::from(x >= y))),
        "Equal" => binary(&|x, y| Some(i128::from(x == y))),
        "NotEqual" => binary(&|x, y| Some(i128::from(x != y))),
        "LogicalAnd" => binary(&|x, y| Some(i128::from(x != 0 && y != 0))),
        "LogicalOr" => binary(&|x, y| Some(i128::from(x != 0 || y != 0))),
        // MLX's integer division floors (for signed types); a zero divisor is reported by the
        // divisor check, so the values are left unknown here.
        "Divide" | "Remainder" => binary(&|x, y| {
            if y == 0 {
                return None;
            }
            let (mut q, mut r) = (x / y, x % y);
            if signed && r != 0 && (r < 0) != (y < 0) {
                q -= 1;
                r += y;
            }
            Some(if name == "Divide" { q } else { r })
        }),
        "Select" => {
            let (c, a, b) = (
                first?,
                vals.get(1).copied().flatten()?,
                vals.get(2).copied().flatten()?,
            );
            Some(
                c.iter()
                    .zip(a.iter().zip(b))
                    .map(|(&c, (&x, &y))| if c != 0 { x } else { y })
                    .collect(),
            )
        }
        _ => None,
    }
}

/// The values MLX's CPU `arange` writes for an integer dtype: the start and the step are
/// converted to the dtype first (toward zero), then added up.
fn arange_range(st: &State, out: &Meta) -> Option<Range> {
    let (lo, hi) = int_bounds(out.dtype)?;
    let n = i128::from(*out.shape.first()?);
    let (start, step) = (st.float(0), st.float(2));
    let convert = |x: f64| {
        let t = x.trunc();
        (t >= lo as f64 && t <= hi as f64).then_some(t as i128)
    };
    let first = convert(start)?;
    let step = convert(start + step)? - first;
    let last = first + (n - 1) * step;
    if n < 1 || last < lo || last > hi {
        return None;
    }
    Some(Range {
        lo: first.min(last),
        hi: first.max(last),
        free: false,
    })
}

/// The value of one little-endian element of an integer (or bool) dtype.
pub(super) fn int_value(dt: Dt, b: &[u8]) -> i128 {
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
pub(super) fn wrap(v: i128, to: Dt) -> i128 {
    let bits = 8 * u32::from(to.size());
    let m = v & ((1i128 << bits) - 1);
    if to.is_signed_int() && m >= (1i128 << (bits - 1)) {
        m - (1i128 << bits)
    } else {
        m
    }
}

type Check = std::result::Result<(), String>;

macro_rules! bail {
    ($($t:tt)*) => { return Err(format!($($t)*)) };
}

fn n_inputs(ins: &[&Meta], lo: usize, hi: usize) -> Check {
    if ins.len() < lo || ins.len() > hi {
        if lo == hi {
            bail!("has {} inputs ({lo} expected)", ins.len());
        }
        bail!("has {} inputs ({lo} to {hi} expected)", ins.len());
    }
    Ok(())
}

fn n_outputs(outs: &[Meta], n: usize) -> Check {
    if outs.len() != n {
        bail!("has {} outputs ({n} expected)", outs.len());
    }
    Ok(())
}

fn out_is(out: &Meta, shape: &[i32], dtype: Dt) -> Check {
    if out.shape != shape || out.dtype != dtype {
        bail!(
            "output is {:?} {}, but its inputs and state make {shape:?} {dtype}",
            out.shape,
            out.dtype
        );
    }
    Ok(())
}

fn same_shape(a: &Meta, b: &Meta, what: &str) -> Check {
    if a.shape != b.shape {
        bail!(
            "{what} have different shapes {:?} and {:?}",
            a.shape,
            b.shape
        );
    }
    Ok(())
}

fn same_dtype(a: &Meta, b: &Meta, what: &str) -> Check {
    if a.dtype != b.dtype {
        bail!("{what} have different dtypes {} and {}", a.dtype, b.dtype);
    }
    Ok(())
}

fn dtype_in(d: Dt, ok: bool, what: &str, allowed: &str) -> Check {
    if !ok {
        bail!("{what} is {d}, but only {allowed} is supported");
    }
    Ok(())
}

fn enum_in(v: i32, count: i32, what: &str) -> Check {
    if !(0..count).contains(&v) {
        bail!("unknown {what} {v}");
    }
    Ok(())
}

/// An axis MLX stored already normalized.
fn axis(a: i32, ndim: usize, what: &str) -> std::result::Result<usize, String> {
    if a < 0 || a as usize >= ndim {
        bail!("{what} {a} is out of range for {ndim} dimensions");
    }
    Ok(a as usize)
}

/// Normalized axes that MLX keeps sorted and unique.
fn sorted_axes(axes: &[i32], ndim: usize, what: &str) -> Check {
    for &a in axes {
        axis(a, ndim, "axis")?;
    }
    if axes.windows(2).any(|w| w[0] >= w[1]) {
        bail!("{what} {axes:?} are not sorted and unique");
    }
    Ok(())
}

fn unique_axes(axes: &[i32], ndim: usize, what: &str) -> Check {
    for (i, &a) in axes.iter().enumerate() {
        axis(a, ndim, "axis")?;
        if axes[..i].contains(&a) {
            bail!("{what} {axes:?} repeat axis {a}");
        }
    }
    Ok(())
}

fn to_dim(v: i64, what: &str) -> std::result::Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("{what} has a dimension of {v}"))
}

/// The element count of a shape; saturating, since state fields are not checked shapes.
fn prod(shape: &[i32]) -> i64 {
    shape
        .iter()
        .fold(1i64, |n, &d| n.saturating_mul(i64::from(d)))
}

/// `broadcast_shapes` of MLX's `utils.cpp`.
fn broadcast_shapes(a: &[i32], b: &[i32]) -> std::result::Result<Vec<i32>, String> {
    let (big, small) = if a.len() > b.len() { (a, b) } else { (b, a) };
    let diff = big.len() - small.len();
    let mut out = big.to_vec();
    for i in diff..big.len() {
        let (x, y) = (big[i], small[i - diff]);
        out[i] = if x == y {
            x
        } else if x == 1 || y == 1 {
            x * y
        } else {
            bail!("shapes {a:?} and {b:?} do not broadcast");
        };
    }
    Ok(out)
}

/// Whether the broadcast kernel can view `from` as `to` (stride 0 on size-1 dimensions).
fn broadcasts_to(from: &[i32], to: &[i32]) -> bool {
    from.len() <= to.len()
        && from
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(&f, &t)| f == t || f == 1)
}

/// A unary elementwise op: one input, and one output of its shape and dtype.
fn unary_same(ins: &[&Meta], outs: &[Meta]) -> Check {
    n_inputs(ins, 1, 1)?;
    n_outputs(outs, 1)?;
    out_is(&outs[0], &ins[0].shape, ins[0].dtype)
}

/// A binary elementwise op: two inputs of one shape and dtype (MLX's ops broadcast and cast
/// them first), and one output of that shape and `out_dtype` (by default the inputs').
fn binary_same(ins: &[&Meta], outs: &[Meta], out_dtype: Option<Dt>) -> Check {
    n_inputs(ins, 2, 2)?;
    n_outputs(outs, 1)?;
    same_shape(ins[0], ins[1], "the inputs")?;
    same_dtype(ins[0], ins[1], "the inputs")?;
    out_is(&outs[0], &ins[0].shape, out_dtype.unwrap_or(ins[0].dtype))
}

/// Checks primitive `name` with its state, input and output metadata; returns how it uses
/// integer inputs as offsets or divisors, for the value checks.
pub(super) fn check(
    name: &str,
    st: &State,
    ins: &[&Meta],
    outs: &[Meta],
    gpu: bool,
) -> std::result::Result<Vec<ValueUse>, String> {
    let mut uses = Vec::new();
    match name {
        "Abs" | "Ceil" | "Copy" | "Floor" | "LogicalNot" | "Negative" | "Round" | "Sign"
        | "Square" | "StopGradient" | "Full" => unary_same(ins, outs)?,
        "ArcCos" | "ArcCosh" | "ArcSin" | "ArcSinh" | "ArcTan" | "ArcTanh" | "Cos" | "Cosh"
        | "Exp" | "Expm1" | "Log1p" | "Sigmoid" | "Sin" | "Sinh" | "Tan" | "Tanh" | "Log"
        | "Sqrt" => {
            if name == "Log" {
                enum_in(st.int(0), 3, "logarithm base")?;
            }
            unary_same(ins, outs)?;
            let d = ins[0].dtype;
            dtype_in(d, d.is_inexact(), "the input", "a float or complex type")?;
        }
        "Erf" | "ErfInv" => {
            unary_same(ins, outs)?;
            let d = ins[0].dtype;
            dtype_in(d, d.is_float(), "the input", "a real floating type")?;
        }
        "Conjugate" => {
            unary_same(ins, outs)?;
            dtype_in(
                ins[0].dtype,
                ins[0].dtype == Dt::C64,
                "the input",
                "complex64",
            )?;
        }
        "Real" | "Imag" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            dtype_in(
                ins[0].dtype,
                ins[0].dtype == Dt::C64,
                "the input",
                "complex64",
            )?;
            out_is(&outs[0], &ins[0].shape, Dt::F32)?;
        }
        "AsType" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            out_is(&outs[0], &ins[0].shape, st.dtype(0))?;
        }
        "Hadamard" => {
            unary_same(ins, outs)?;
            let d = ins[0].dtype;
            dtype_in(d, d.is_float(), "the input", "a real floating type")?;
            if ins[0].size() == 0 {
                bail!("the input is empty");
            }
            let n = ins[0].shape.last().copied().unwrap_or(1);
            let m = [1, 12, 20, 28]
                .into_iter()
                .find(|&m| n % m == 0 && (n / m).count_ones() == 1 && n / m <= 1 << 26);
            if m.is_none() {
                bail!("the last dimension {n} is not m*2^k with m in (1, 12, 20, 28), k <= 26");
            }
        }
        "Add" | "Subtract" | "Multiply" | "Maximum" | "Minimum" | "Power" | "LogicalAnd"
        | "LogicalOr" => binary_same(ins, outs, None)?,
        "Divide" | "Remainder" => {
            binary_same(ins, outs, None)?;
            let d = ins[0].dtype;
            if name == "Remainder" {
                dtype_in(d, d != Dt::C64, "the input", "a non-complex type")?;
            }
            if d.is_int() {
                uses.push(ValueUse {
                    input: 1,
                    dtype: d,
                    kind: ValueKind::Divisor,
                });
            }
        }
        "LogAddExp" | "ArcTan2" => {
            binary_same(ins, outs, None)?;
            let d = ins[0].dtype;
            dtype_in(d, d.is_inexact(), "the input", "a float or complex type")?;
        }
        "Equal" | "NotEqual" | "Greater" | "GreaterEqual" | "Less" | "LessEqual" => {
            binary_same(ins, outs, Some(Dt::Bool))?;
            if name == "Equal" && st.flag(0) {
                let d = ins[0].dtype;
                dtype_in(d, d.is_inexact(), "the input", "a float or complex type")?;
            }
        }
        "BitwiseBinary" => {
            enum_in(st.int(0), 5, "bitwise operation")?;
            binary_same(ins, outs, None)?;
            let d = ins[0].dtype;
            dtype_in(
                d,
                d.is_int() || d == Dt::Bool,
                "the input",
                "an integer or bool type",
            )?;
        }
        "DivMod" => {
            n_inputs(ins, 2, 2)?;
            n_outputs(outs, 2)?;
            same_shape(ins[0], ins[1], "the inputs")?;
            same_dtype(ins[0], ins[1], "the inputs")?;
            let d = ins[0].dtype;
            dtype_in(d, d != Dt::C64, "the input", "a non-complex type")?;
            out_is(&outs[0], &ins[0].shape, d)?;
            out_is(&outs[1], &ins[0].shape, d)?;
            if d.is_int() {
                uses.push(ValueUse {
                    input: 1,
                    dtype: d,
                    kind: ValueKind::Divisor,
                });
            }
        }
        "Select" => {
            n_inputs(ins, 3, 3)?;
            n_outputs(outs, 1)?;
            same_shape(ins[0], ins[1], "the inputs")?;
            same_shape(ins[0], ins[2], "the inputs")?;
            same_dtype(ins[1], ins[2], "the values")?;
            dtype_in(
                ins[0].dtype,
                ins[0].dtype == Dt::Bool,
                "the condition",
                "bool",
            )?;
            out_is(&outs[0], &ins[0].shape, ins[1].dtype)?;
        }
        "Broadcast" => {
            n_inputs(ins, 1, usize::MAX)?;
            n_outputs(outs, 1)?;
            let shape = st.ints(0);
            out_is(&outs[0], shape, ins[0].dtype)?;
            if !broadcasts_to(&ins[0].shape, shape) {
                bail!("cannot broadcast {:?} to {shape:?}", ins[0].shape);
            }
            // In a shapeless trace MLX gives each broadcast the other operands as extra
            // inputs, and recomputes the shape from all of them when the function is called.
            if ins.len() > 1 {
                let mut all = ins[0].shape.clone();
                for i in &ins[1..] {
                    all = broadcast_shapes(&all, &i.shape)?;
                }
                if all != shape {
                    bail!("its inputs broadcast to {all:?}, not {shape:?}");
                }
            }
        }
        "BroadcastAxes" => {
            n_inputs(ins, 1, usize::MAX)?;
            n_outputs(outs, 1)?;
            let ignore = st.ints(0);
            if ignore.iter().any(|&a| a >= 0) || ignore.windows(2).any(|w| w[0] >= w[1]) {
                bail!("ignored axes {ignore:?} are not negative, sorted and unique");
            }
            let mut shape: Vec<i32> = Vec::new();
            for i in ins {
                let mut s = i.shape.clone();
                for &a in ignore.iter().rev() {
                    let Ok(p) = usize::try_from(i.ndim() as i64 + i64::from(a)) else {
                        bail!(
                            "ignored axis {a} is out of range for {} dimensions",
                            i.ndim()
                        );
                    };
                    s.remove(p);
                }
                shape = broadcast_shapes(&shape, &s)?;
            }
            let dims = ignore.len() + shape.len();
            let n0 = ins[0].ndim() as i64;
            for &a in ignore {
                let at = (dims as i64 + i64::from(a)) as usize;
                shape.insert(at, ins[0].shape[(n0 + i64::from(a)) as usize]);
            }
            out_is(&outs[0], &shape, ins[0].dtype)?;
            if !broadcasts_to(&ins[0].shape, &shape) {
                bail!("cannot broadcast {:?} to {shape:?}", ins[0].shape);
            }
        }
        "Reshape" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let shape = reshape_shape(ins[0], st.ints(0))?;
            out_is(&outs[0], &shape, ins[0].dtype)?;
        }
        "Flatten" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let (s, e) = (st.int(0), st.int(1));
            let n = ins[0].ndim();
            if s < 0 || e < s || e as usize >= n {
                bail!("axes {s} to {e} are out of range for {n} dimensions");
            }
            let (s, e) = (s as usize, e as usize);
            let mut shape = ins[0].shape[..s].to_vec();
            shape.push(to_dim(prod(&ins[0].shape[s..=e]), "the flattened array")?);
            shape.extend_from_slice(&ins[0].shape[e + 1..]);
            out_is(&outs[0], &shape, ins[0].dtype)?;
        }
        "Unflatten" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let ax = axis(st.int(0), ins[0].ndim(), "axis")?;
            let parts = st.ints(1);
            if parts.is_empty() || parts.iter().any(|&d| d < 0) {
                bail!("cannot unflatten into {parts:?}");
            }
            if prod(parts) != i64::from(ins[0].shape[ax]) {
                bail!("cannot unflatten {} into {parts:?}", ins[0].shape[ax]);
            }
            let mut shape = ins[0].shape[..ax].to_vec();
            shape.extend_from_slice(parts);
            shape.extend_from_slice(&ins[0].shape[ax + 1..]);
            out_is(&outs[0], &shape, ins[0].dtype)?;
        }
        "ExpandDims" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let axes = st.ints(0);
            sorted_axes(axes, ins[0].ndim() + axes.len(), "axes")?;
            let mut shape = ins[0].shape.clone();
            for &a in axes {
                shape.insert(a as usize, 1);
            }
            out_is(&outs[0], &shape, ins[0].dtype)?;
        }
        "Squeeze" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let axes = st.ints(0);
            sorted_axes(axes, ins[0].ndim(), "axes")?;
            if let Some(&a) = axes.iter().find(|&&a| ins[0].shape[a as usize] != 1) {
                bail!(
                    "cannot squeeze axis {a} of size {}",
                    ins[0].shape[a as usize]
                );
            }
            let shape: Vec<i32> = (0..ins[0].ndim())
                .filter(|i| !axes.contains(&(*i as i32)))
                .map(|i| ins[0].shape[i])
                .collect();
            out_is(&outs[0], &shape, ins[0].dtype)?;
        }
        "Transpose" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let axes = st.ints(0);
            if axes.len() != ins[0].ndim() {
                bail!("{} axes for {} dimensions", axes.len(), ins[0].ndim());
            }
            unique_axes(axes, ins[0].ndim(), "axes")?;
            let shape: Vec<i32> = axes.iter().map(|&a| ins[0].shape[a as usize]).collect();
            out_is(&outs[0], &shape, ins[0].dtype)?;
        }
        "Slice" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            if outs[0].dtype != ins[0].dtype || outs[0].ndim() != ins[0].ndim() {
                bail!(
                    "output {:?} {} does not match the input {:?} {}",
                    outs[0].shape,
                    outs[0].dtype,
                    ins[0].shape,
                    ins[0].dtype
                );
            }
            check_slice(
                &ins[0].shape,
                &outs[0].shape,
                st.ints(0),
                st.ints(1),
                st.ints(2),
            )?;
        }
        "SliceUpdate" => {
            enum_in(st.int(0), 5, "reduction")?;
            n_inputs(ins, 2, 2)?;
            n_outputs(outs, 1)?;
            out_is(&outs[0], &ins[0].shape, ins[0].dtype)?;
            same_dtype(ins[0], ins[1], "the array and its update")?;
            if ins[1].ndim() != ins[0].ndim() {
                bail!(
                    "the update has {} dimensions, the array {}",
                    ins[1].ndim(),
                    ins[0].ndim()
                );
            }
            check_slice(
                &ins[0].shape,
                &ins[1].shape,
                st.ints(1),
                st.ints(2),
                st.ints(3),
            )?;
        }
        "DynamicSlice" => {
            n_inputs(ins, 2, 2)?;
            n_outputs(outs, 1)?;
            let (axes, sizes) = (st.ints(0), st.ints(1));
            let a = ins[0];
            unique_axes(axes, a.ndim(), "axes")?;
            if sizes.len() != a.ndim() || sizes.iter().zip(&a.shape).any(|(&s, &d)| s < 0 || s > d)
            {
                bail!("slice size {sizes:?} does not fit the array {:?}", a.shape);
            }
            out_is(&outs[0], sizes, a.dtype)?;
            check_starts(ins[1], axes.len())?;
            uses.push(ValueUse {
                input: 1,
                dtype: ins[1].dtype,
                kind: ValueKind::Start {
                    max: axes
                        .iter()
                        .map(|&ax| i64::from(a.shape[ax as usize] - sizes[ax as usize]))
                        .collect(),
                },
            });
        }
        "DynamicSliceUpdate" => {
            n_inputs(ins, 3, 3)?;
            n_outputs(outs, 1)?;
            let (a, upd) = (ins[0], ins[1]);
            out_is(&outs[0], &a.shape, a.dtype)?;
            same_dtype(a, upd, "the array and its update")?;
            let axes = st.ints(0);
            unique_axes(axes, a.ndim(), "axes")?;
            if upd.ndim() != a.ndim() || upd.shape.iter().zip(&a.shape).any(|(&u, &d)| u > d) {
                bail!(
                    "the update {:?} does not fit the array {:?}",
                    upd.shape,
                    a.shape
                );
            }
            check_starts(ins[2], axes.len())?;
            uses.push(ValueUse {
                input: 2,
                dtype: ins[2].dtype,
                kind: ValueKind::Start {
                    max: axes
                        .iter()
                        .map(|&ax| i64::from(a.shape[ax as usize] - upd.shape[ax as usize]))
                        .collect(),
                },
            });
        }
        "Concatenate" => {
            n_inputs(ins, 1, usize::MAX)?;
            n_outputs(outs, 1)?;
            let ax = axis(st.int(0), ins[0].ndim(), "axis")?;
            let mut total = 0i64;
            for i in ins {
                same_dtype(ins[0], i, "the inputs")?;
                let mut a = i.shape.clone();
                let mut b = ins[0].shape.clone();
                if a.len() != b.len() {
                    bail!("inputs {:?} and {:?} differ in rank", ins[0].shape, i.shape);
                }
                total += i64::from(a[ax]);
                a[ax] = 0;
                b[ax] = 0;
                if a != b {
                    bail!(
                        "inputs {:?} and {:?} differ off axis {ax}",
                        ins[0].shape,
                        i.shape
                    );
                }
            }
            let mut shape = ins[0].shape.clone();
            shape[ax] = to_dim(total, "the result")?;
            out_is(&outs[0], &shape, ins[0].dtype)?;
        }
        "Pad" => {
            n_inputs(ins, 2, 2)?;
            n_outputs(outs, 1)?;
            let (axes, lo, hi) = (st.ints(0), st.ints(1), st.ints(2));
            let a = ins[0];
            same_dtype(a, ins[1], "the array and the padding value")?;
            if ins[1].size() != 1 {
                bail!("the padding value has {} elements", ins[1].size());
            }
            if lo.len() != axes.len() || hi.len() != axes.len() {
                bail!(
                    "{} axes with {} and {} padding sizes",
                    axes.len(),
                    lo.len(),
                    hi.len()
                );
            }
            let n = a.ndim() as i64;
            let mut shape: Vec<i64> = a.shape.iter().map(|&d| i64::from(d)).collect();
            for ((&ax, &l), &h) in axes.iter().zip(lo).zip(hi) {
                let ax = i64::from(ax);
                if ax < -n || ax >= n || l < 0 || h < 0 {
                    bail!("axis {ax} padded by ({l}, {h}) for {n} dimensions");
                }
                let ax = if ax < 0 { ax + n } else { ax } as usize;
                shape[ax] += i64::from(l) + i64::from(h);
            }
            let shape = shape
                .into_iter()
                .map(|d| to_dim(d, "the result"))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            out_is(&outs[0], &shape, a.dtype)?;
        }
        "Split" => {
            n_inputs(ins, 1, 1)?;
            let a = ins[0];
            let ax = axis(st.int(1), a.ndim(), "axis")?;
            let idx = st.ints(0);
            let n = a.shape[ax];
            let ok = !idx.is_empty()
                && idx.windows(2).all(|w| w[0] <= w[1])
                && idx[0] > 0
                && idx[idx.len() - 1] < n;
            if !ok {
                bail!("split indices {idx:?} do not split an axis of size {n}");
            }
            n_outputs(outs, idx.len() + 1)?;
            let mut bounds = vec![0];
            bounds.extend_from_slice(idx);
            bounds.push(n);
            for (o, w) in outs.iter().zip(bounds.windows(2)) {
                let mut shape = a.shape.clone();
                shape[ax] = w[1] - w[0];
                out_is(o, &shape, a.dtype)?;
            }
        }
        "AsStrided" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let (shape, strides, offset) = (st.ints(0), st.longs(1), st.uint(2));
            out_is(&outs[0], shape, ins[0].dtype)?;
            if strides.len() != shape.len() {
                bail!("{} strides for {} dimensions", strides.len(), shape.len());
            }
            if prod(shape) > 0 {
                let (mut low, mut high) = (i128::from(offset), i128::from(offset));
                for (&d, &s) in shape.iter().zip(strides) {
                    let delta = i128::from(s) * i128::from(d - 1);
                    if s < 0 {
                        low += delta;
                    } else {
                        high += delta;
                    }
                }
                if low < 0 || high >= i128::from(ins[0].size()) {
                    bail!(
                        "the view reaches elements {low} to {high} of an input of {}",
                        ins[0].size()
                    );
                }
            }
        }
        "View" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let (a, to) = (ins[0], st.dtype(0));
            let (ib, ob) = (i64::from(a.dtype.size()), i64::from(to.size()));
            let mut shape = a.shape.clone();
            if a.ndim() == 0 {
                if ib != ob {
                    bail!("a scalar cannot change its element size");
                }
            } else {
                let last = shape.last_mut().expect("ndim > 0");
                if ib < ob {
                    if i64::from(*last) % (ob / ib) != 0 {
                        bail!(
                            "the last dimension {} is not a multiple of {}",
                            *last,
                            ob / ib
                        );
                    }
                    *last /= (ob / ib) as i32;
                } else if ib > ob {
                    *last = to_dim(i64::from(*last) * (ib / ob), "the view")?;
                }
            }
            out_is(&outs[0], &shape, to)?;
        }
        "Depends" => {
            if outs.is_empty() || outs.len() > ins.len() {
                bail!("has {} outputs for {} inputs", outs.len(), ins.len());
            }
            for (o, i) in outs.iter().zip(ins) {
                out_is(o, &i.shape, i.dtype)?;
            }
        }
        "NumberOfElements" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            for &a in st.ints(0) {
                axis(a, ins[0].ndim(), "axis")?;
            }
            out_is(&outs[0], &[], st.dtype(2))?;
        }
        "Arange" => {
            n_inputs(ins, 0, 0)?;
            n_outputs(outs, 1)?;
            let (start, stop, step) = (st.float(0), st.float(1), st.float(2));
            if !start.is_finite() || !stop.is_finite() || step.is_nan() || step == 0.0 {
                bail!("cannot compute the length of ({start}, {stop}, {step})");
            }
            let real = ((stop - start) / step).ceil();
            if real > f64::from(i32::MAX) {
                bail!("({start}, {stop}, {step}) is too long");
            }
            let d = outs[0].dtype;
            dtype_in(d, d != Dt::Bool, "the output", "a non-bool type")?;
            out_is(&outs[0], &[(real as i32).max(0)], d)?;
        }
        "RandomBits" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let key = ins[0];
            if key.dtype != Dt::U32 || key.shape.last() != Some(&2) || key.size() < 2 {
                bail!(
                    "the key is {:?} {} (uint32 pairs expected)",
                    key.shape,
                    key.dtype
                );
            }
            let dtype = match st.int(1) {
                1 => Dt::U8,
                2 => Dt::U16,
                4 => Dt::U32,
                w => bail!("unsupported width {w}"),
            };
            out_is(&outs[0], st.ints(0), dtype)?;
        }
        "Reduce" => {
            let ty = st.int(0);
            enum_in(ty, 6, "reduction")?;
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let a = ins[0];
            let axes = st.ints(1);
            sorted_axes(axes, a.ndim(), "axes")?;
            let mut shape = a.shape.clone();
            for &ax in axes {
                if ty >= 4 && shape[ax as usize] == 0 {
                    bail!("min or max over axis {ax} of size 0");
                }
                shape[ax as usize] = 1;
            }
            let dtype = match ty {
                0 | 1 => Dt::Bool,
                2 | 3 => match a.dtype {
                    Dt::Bool | Dt::I8 | Dt::I16 | Dt::I32 => Dt::I32,
                    Dt::U8 | Dt::U16 | Dt::U32 => Dt::U32,
                    d => d,
                },
                _ => a.dtype,
            };
            out_is(&outs[0], &shape, dtype)?;
        }
        "ArgReduce" => {
            enum_in(st.int(0), 2, "reduction")?;
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let ax = axis(st.int(1), ins[0].ndim(), "axis")?;
            if ins[0].size() == 0 {
                bail!("the input is empty");
            }
            let mut shape = ins[0].shape.clone();
            shape[ax] = 1;
            out_is(&outs[0], &shape, Dt::U32)?;
        }
        "Scan" => {
            let ty = st.int(0);
            enum_in(ty, 5, "scan")?;
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let a = ins[0];
            let ax = axis(st.int(1), a.ndim(), "axis")?;
            // MLX 0.32.2's CPU scan divides by the axis size.
            if a.shape[ax] == 0 {
                bail!("scans an axis of size 0");
            }
            let dtype = if a.dtype == Dt::Bool && ty == 2 && outs[0].dtype == Dt::I32 {
                Dt::I32
            } else {
                a.dtype
            };
            out_is(&outs[0], &a.shape, dtype)?;
        }
        "Sort" | "ArgSort" | "Partition" | "ArgPartition" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let a = ins[0];
            let (ax_field, dtype) = match name {
                "Sort" => (0, a.dtype),
                "ArgSort" => (0, Dt::U32),
                "Partition" => (1, a.dtype),
                _ => (1, Dt::U32),
            };
            let ax = axis(st.int(ax_field), a.ndim(), "axis")?;
            if ax_field == 1 {
                let kth = st.int(0);
                if kth < 0 || kth >= a.shape[ax] {
                    bail!(
                        "kth {kth} is out of range for an axis of size {}",
                        a.shape[ax]
                    );
                }
            }
            out_is(&outs[0], &a.shape, dtype)?;
        }
        "Softmax" => {
            unary_same(ins, outs)?;
            let d = ins[0].dtype;
            dtype_in(d, d.is_float(), "the input", "a real floating type")?;
            if ins[0].ndim() == 0 || ins[0].size() == 0 {
                bail!("the input {:?} is a scalar or empty", ins[0].shape);
            }
        }
        "LogSumExp" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            let a = ins[0];
            dtype_in(
                a.dtype,
                a.dtype.is_float(),
                "the input",
                "a real floating type",
            )?;
            if a.ndim() == 0 || a.size() == 0 {
                bail!("the input {:?} is a scalar or empty", a.shape);
            }
            let mut shape = a.shape.clone();
            *shape.last_mut().expect("ndim > 0") = 1;
            out_is(&outs[0], &shape, a.dtype)?;
        }
        "Matmul" | "AddMM" => {
            let n = if name == "AddMM" { 3 } else { 2 };
            n_inputs(ins, n, n)?;
            n_outputs(outs, 1)?;
            let shape = matmul_shape(ins[0], ins[1], true)?;
            let d = ins[0].dtype;
            same_dtype(ins[0], ins[1], "the operands")?;
            if name == "AddMM" {
                dtype_in(d, d.is_float(), "the operands", "a real floating type")?;
                same_dtype(ins[0], ins[2], "the operands and the addend")?;
                if ins[2].shape != shape {
                    bail!(
                        "the addend {:?} is not the product's shape {shape:?}",
                        ins[2].shape
                    );
                }
            } else {
                dtype_in(d, d.is_inexact(), "the operands", "a float or complex type")?;
            }
            out_is(&outs[0], &shape, d)?;
        }
        "BlockMaskedMM" => {
            n_inputs(ins, 3, 5)?;
            n_outputs(outs, 1)?;
            let bs = st.int(0);
            if bs != 32 && bs != 64 {
                bail!("block size {bs} (32 or 64 expected)");
            }
            let shape = matmul_shape(ins[0], ins[1], true)?;
            let d = ins[0].dtype;
            same_dtype(ins[0], ins[1], "the operands")?;
            dtype_in(d, d.is_float(), "the operands", "a real floating type")?;
            out_is(&outs[0], &shape, d)?;
            let n = shape.len();
            let (m, k, nn) = (ins[0].shape[n - 2], ins[0].shape[n - 1], shape[n - 1]);
            let blocks = |x: i32| ((i64::from(x) + i64::from(bs) - 1) / i64::from(bs)) as i32;
            let (tm, tk, tn) = (blocks(m), blocks(k), blocks(nn));
            let mask = |i: usize, y: i32, x: i32| -> Check {
                let mut want = shape[..n - 2].to_vec();
                want.extend([y, x]);
                let mk = ins[i];
                if mk.shape != want || !(mk.dtype == Dt::Bool || mk.dtype == d) {
                    bail!(
                        "mask {:?} {} ({want:?} bool or {d} expected)",
                        mk.shape,
                        mk.dtype
                    );
                }
                Ok(())
            };
            if ins.len() != 4 {
                mask(2, tm, tn)?;
            }
            if ins.len() >= 4 {
                let l = ins.len();
                mask(l - 2, tm, tk)?;
                mask(l - 1, tk, tn)?;
                same_dtype(ins[l - 2], ins[l - 1], "the operand masks")?;
            }
        }
        "GatherMM" => {
            n_inputs(ins, 4, 4)?;
            n_outputs(outs, 1)?;
            let (a, b) = (ins[0], ins[1]);
            if a.ndim() < 2 || b.ndim() < 2 || a.shape[a.ndim() - 1] != b.shape[b.ndim() - 2] {
                bail!("cannot multiply {:?} by {:?}", a.shape, b.shape);
            }
            same_dtype(a, b, "the operands")?;
            dtype_in(
                a.dtype,
                a.dtype.is_float(),
                "the operands",
                "a real floating type",
            )?;
            let (li, ri) = (ins[2], ins[3]);
            for i in [li, ri] {
                dtype_in(i.dtype, i.dtype == Dt::U32, "the indices", "uint32")?;
            }
            same_shape(li, ri, "the indices")?;
            let mut shape = li.shape.clone();
            shape.extend([a.shape[a.ndim() - 2], b.shape[b.ndim() - 1]]);
            out_is(&outs[0], &shape, a.dtype)?;
            for (input, m) in [(2, a), (3, b)] {
                uses.push(ValueUse {
                    input,
                    dtype: Dt::U32,
                    kind: ValueKind::Batch {
                        count: prod(&m.shape[..m.ndim() - 2]),
                    },
                });
            }
        }
        "QuantizedMatmul" | "GatherQMM" => {
            let (group, bits, mode, transpose) = (st.int(0), st.int(1), st.int(2), st.flag(3));
            check_quant_params(group, bits, mode)?;
            let affine = mode == 0;
            let gather = name == "GatherQMM";
            let n = usize::from(affine) + 3 + if gather { 2 } else { 0 };
            n_inputs(ins, n, n)?;
            n_outputs(outs, 1)?;
            let (x, w, scales) = (ins[0], ins[1], ins[2]);
            let outer = check_quant_weights(w, scales, group, bits, affine)?;
            let d = x.dtype;
            dtype_in(
                d,
                matches!(d, Dt::F16 | Dt::Bf16 | Dt::F32),
                "x",
                "float16, bfloat16 or float32",
            )?;
            if affine {
                same_dtype(x, scales, "x and the scales")?;
                same_dtype(scales, ins[3], "the scales and biases")?;
                same_shape(scales, ins[3], "the scales and biases")?;
            }
            let nw = w.ndim();
            let (inner, outer) = if transpose {
                (outer, w.shape[nw - 2])
            } else {
                (w.shape[nw - 2], outer)
            };
            // MLX 0.32.2's CPU kernel divides by the rows and columns of x.
            if x.ndim() < if gather { 2 } else { 1 } || x.size() == 0 {
                bail!("x {:?} has too few dimensions or no elements", x.shape);
            }
            if x.shape[x.ndim() - 1] != inner {
                bail!(
                    "x {:?} does not match the expanded weights ({inner}, {outer})",
                    x.shape
                );
            }
            if gather {
                let (li, ri) = (ins[n - 2], ins[n - 1]);
                for i in [li, ri] {
                    dtype_in(i.dtype, i.dtype == Dt::U32, "the indices", "uint32")?;
                }
                same_shape(li, ri, "the indices")?;
                if w.ndim() < 2 {
                    bail!("the weights have {} dimensions", w.ndim());
                }
                let mut shape = li.shape.clone();
                shape.extend([x.shape[x.ndim() - 2], outer]);
                out_is(&outs[0], &shape, d)?;
                for (input, m) in [(n - 2, x), (n - 1, w)] {
                    uses.push(ValueUse {
                        input,
                        dtype: Dt::U32,
                        kind: ValueKind::Batch {
                            count: prod(&m.shape[..m.ndim() - 2]),
                        },
                    });
                }
            } else {
                if x.ndim() > 2 && w.ndim() > 2 && x.shape[..x.ndim() - 2] != w.shape[..nw - 2] {
                    bail!(
                        "x {:?} and weights {:?} differ in batch shape",
                        x.shape,
                        w.shape
                    );
                }
                let mut shape = x.shape.clone();
                *shape.last_mut().expect("ndim > 0") = outer;
                out_is(&outs[0], &shape, d)?;
            }
        }
        "Gather" => {
            let (axes, sizes) = (st.ints(0), st.ints(1));
            n_inputs(ins, 1 + axes.len(), 1 + axes.len())?;
            n_outputs(outs, 1)?;
            let a = ins[0];
            unique_axes(axes, a.ndim(), "axes")?;
            let idx = check_index_arrays(&ins[1..])?;
            if sizes.len() != a.ndim() {
                bail!("{} slice sizes for {} dimensions", sizes.len(), a.ndim());
            }
            if a.size() == 0 {
                let idx_size = idx.map_or(1, |i| i.size());
                if idx_size != 0 && prod(sizes) != 0 {
                    bail!("gathers from an empty array");
                }
            } else if sizes.iter().zip(&a.shape).any(|(&s, &d)| s < 0 || s > d) {
                bail!("slice sizes {sizes:?} do not fit {:?}", a.shape);
            }
            let mut shape = idx.map_or(Vec::new(), |i| i.shape.clone());
            shape.extend_from_slice(sizes);
            out_is(&outs[0], &shape, a.dtype)?;
            for (k, &ax) in axes.iter().enumerate() {
                uses.push(ValueUse {
                    input: 1 + k,
                    dtype: ins[1 + k].dtype,
                    kind: ValueKind::Axis {
                        size: i64::from(a.shape[ax as usize]),
                        slice: i64::from(sizes[ax as usize]),
                    },
                });
            }
        }
        "GatherAxis" => {
            n_inputs(ins, 2, 2)?;
            n_outputs(outs, 1)?;
            let (a, idx) = (ins[0], ins[1]);
            let ax = axis(st.int(0), a.ndim(), "axis")?;
            check_index_arrays(&ins[1..])?;
            same_off_axis(a, idx, ax)?;
            out_is(&outs[0], &idx.shape, a.dtype)?;
            uses.push(ValueUse {
                input: 1,
                dtype: idx.dtype,
                kind: ValueKind::Axis {
                    size: i64::from(a.shape[ax]),
                    slice: 1,
                },
            });
        }
        "Scatter" => {
            enum_in(st.int(0), 5, "reduction")?;
            let axes = st.ints(1);
            n_inputs(ins, 2 + axes.len(), 2 + axes.len())?;
            n_outputs(outs, 1)?;
            let a = ins[0];
            let upd = ins[ins.len() - 1];
            unique_axes(axes, a.ndim(), "axes")?;
            let idx = check_index_arrays(&ins[1..ins.len() - 1])?;
            let idx_shape = idx.map_or(&[][..], |i| &i.shape[..]);
            same_dtype(a, upd, "the array and the updates")?;
            let ok = upd.ndim() == a.ndim() + idx_shape.len()
                && upd.shape[..idx_shape.len()] == *idx_shape
                && upd.shape[idx_shape.len()..]
                    .iter()
                    .zip(&a.shape)
                    .all(|(&u, &d)| u <= d);
            if !ok {
                bail!(
                    "updates {:?} do not fit indices {idx_shape:?} into {:?}",
                    upd.shape,
                    a.shape
                );
            }
            out_is(&outs[0], &a.shape, a.dtype)?;
            for (k, &ax) in axes.iter().enumerate() {
                uses.push(ValueUse {
                    input: 1 + k,
                    dtype: ins[1 + k].dtype,
                    kind: ValueKind::Axis {
                        size: i64::from(a.shape[ax as usize]),
                        slice: i64::from(upd.shape[idx_shape.len() + ax as usize]),
                    },
                });
            }
        }
        "ScatterAxis" => {
            enum_in(st.int(0), 2, "reduction")?;
            n_inputs(ins, 3, 3)?;
            n_outputs(outs, 1)?;
            let (a, idx, upd) = (ins[0], ins[1], ins[2]);
            let ax = axis(st.int(1), a.ndim(), "axis")?;
            check_index_arrays(&ins[1..2])?;
            same_shape(idx, upd, "the indices and updates")?;
            same_dtype(a, upd, "the array and the updates")?;
            same_off_axis(a, idx, ax)?;
            out_is(&outs[0], &a.shape, a.dtype)?;
            uses.push(ValueUse {
                input: 1,
                dtype: idx.dtype,
                kind: ValueKind::Axis {
                    size: i64::from(a.shape[ax]),
                    slice: 1,
                },
            });
        }
        "MaskedScatter" => {
            n_inputs(ins, 3, 3)?;
            n_outputs(outs, 1)?;
            let (a, mask, src) = (ins[0], ins[1], ins[2]);
            out_is(&outs[0], &a.shape, a.dtype)?;
            dtype_in(mask.dtype, mask.dtype == Dt::Bool, "the mask", "bool")?;
            same_shape(a, mask, "the array and the mask")?;
            same_dtype(a, src, "the array and the source")?;
            if a.ndim() == 0 || src.ndim() == 0 || src.shape[0] != mask.shape[0] {
                bail!(
                    "source {:?} and mask {:?} differ in batch",
                    src.shape,
                    mask.shape
                );
            }
        }
        "SearchSorted" => {
            n_inputs(ins, 2, 2)?;
            n_outputs(outs, 1)?;
            let (a, v) = (ins[0], ins[1]);
            if a.ndim() != 1 || a.size() > i64::from(u32::MAX) {
                bail!("the sorted sequence is {:?}", a.shape);
            }
            same_dtype(a, v, "the sequence and the values")?;
            out_is(&outs[0], &v.shape, Dt::U32)?;
        }
        "Convolution" => {
            n_inputs(ins, 2, 2)?;
            n_outputs(outs, 1)?;
            let shape = conv_shape(st, ins[0], ins[1])?;
            out_is(&outs[0], &shape, ins[0].dtype)?;
        }
        "FFT" => {
            n_inputs(ins, 1, 1)?;
            n_outputs(outs, 1)?;
            check_fft(st, ins[0], &outs[0])?;
        }
        "QRF" | "SVD" | "Inverse" | "Cholesky" | "Eig" | "Eigh" => {
            if gpu {
                bail!("runs on a GPU stream; MLX has only CPU kernels for it");
            }
            n_inputs(ins, 1, 1)?;
            check_linalg(name, st, ins[0], outs)?;
        }
        "Quantize" => check_quantize(st, ins, outs, gpu)?,
        "RMSNorm"
        | "RMSNormVJP"
        | "LayerNorm"
        | "LayerNormVJP"
        | "RoPE"
        | "ScaledDotProductAttention" => {
            if !gpu {
                bail!("is on a CPU stream; MLX records it only for the GPU");
            }
            check_fast(name, st, ins, outs)?;
        }
        "CustomKernel" => {
            bail!("holds custom kernel source, which cannot be checked");
        }
        _ => unreachable!("{name} is in the layout table but has no check"),
    }
    Ok(uses)
}

/// `Reshape::output_shape`: one `-1` may be inferred; the element count must not change.
fn reshape_shape(a: &Meta, want: &[i32]) -> std::result::Result<Vec<i32>, String> {
    let mut shape = want.to_vec();
    let mut infer = None;
    let mut size: i128 = 1;
    for (i, &d) in want.iter().enumerate() {
        match d {
            -1 if infer.is_none() => infer = Some(i),
            d if d >= 0 => size = size.saturating_mul(i128::from(d)),
            _ => bail!("cannot reshape to {want:?}"),
        }
    }
    let n = i128::from(a.size());
    if let Some(i) = infer {
        if size == 0 {
            bail!("cannot infer a dimension of {want:?} for an empty array");
        }
        let d = i32::try_from(n / size).map_err(|_| format!("cannot reshape to {want:?}"))?;
        shape[i] = d;
        size *= i128::from(d);
    }
    if size != n {
        bail!("cannot reshape {:?} to {want:?}", a.shape);
    }
    Ok(shape)
}

/// A strided window of `input` with the shape `window`, as `normalize_slice` in MLX's `ops.cpp`
/// makes it: the window must be the one `start`, `stop` and `strides` select, and every
/// element it touches must be inside the input (the kernels read from `start` with `strides`
/// for the window's shape, ignoring `stop`).
fn check_slice(
    input: &[i32],
    window: &[i32],
    start: &[i32],
    stop: &[i32],
    strides: &[i32],
) -> Check {
    let n = input.len();
    if start.len() != n || stop.len() != n || strides.len() != n || window.len() != n {
        bail!(
            "{} starts, {} stops and {} strides for a window of {} dimensions into {n}",
            start.len(),
            stop.len(),
            strides.len(),
            window.len()
        );
    }
    for i in 0..n {
        let (len, w, s) = (
            i64::from(input[i]),
            i64::from(window[i]),
            i64::from(strides[i]),
        );
        let (st, sp) = (i64::from(start[i]), i64::from(stop[i]));
        if s == 0 {
            bail!("stride 0 on axis {i}");
        }
        if w > 0 {
            let last = st + (w - 1) * s;
            if st < 0 || st >= len || last < 0 || last >= len {
                bail!("axis {i} of size {len} is read from {st} to {last}");
            }
        }
        // MLX stores a stride of 1 wherever the window is one element long, so such an axis
        // no longer tells how many elements its original stride selected.
        if w == 1 && s == 1 {
            continue;
        }
        let e = if sp < 0 { sp + len } else { sp };
        let count = if s < 0 {
            let ed = e.max(-1).min(st);
            (st - ed + (-s) - 1) / (-s)
        } else {
            let ed = e.clamp(0, len).max(st);
            (ed - st + s - 1) / s
        };
        if w != count {
            bail!("axis {i} takes {w} elements, but ({st}, {sp}, {s}) selects {count}");
        }
    }
    Ok(())
}

/// A dynamic slice's start indices: integers, one per axis.
fn check_starts(start: &Meta, axes: usize) -> Check {
    dtype_in(
        start.dtype,
        start.dtype.is_int(),
        "the start indices",
        "an integer type",
    )?;
    if start.ndim() > 1 || start.size() != axes as i64 {
        bail!("start indices {:?} for {axes} axes", start.shape);
    }
    Ok(())
}

/// Index arrays of a gather or scatter: one integer dtype and one shape (MLX broadcasts and
/// casts them together, and its kernels read them all as the first one's type).
fn check_index_arrays<'a>(idx: &[&'a Meta]) -> std::result::Result<Option<&'a Meta>, String> {
    let Some(first) = idx.first() else {
        return Ok(None);
    };
    for i in idx {
        dtype_in(i.dtype, i.dtype.is_int(), "the indices", "an integer type")?;
        same_dtype(first, i, "the index arrays")?;
        same_shape(first, i, "the index arrays")?;
    }
    Ok(Some(first))
}

fn same_off_axis(a: &Meta, b: &Meta, ax: usize) -> Check {
    let ok = a.ndim() == b.ndim()
        && a.shape
            .iter()
            .zip(&b.shape)
            .enumerate()
            .all(|(i, (x, y))| i == ax || x == y);
    if !ok {
        bail!("{:?} and {:?} differ off axis {ax}", a.shape, b.shape);
    }
    Ok(())
}

/// The product shape of two matrices (or stacks of them with the same batch shape).
fn matmul_shape(a: &Meta, b: &Meta, same_batch: bool) -> std::result::Result<Vec<i32>, String> {
    let (na, nb) = (a.ndim(), b.ndim());
    let ok = na >= 2
        && nb >= 2
        && a.shape[na - 1] == b.shape[nb - 2]
        && (!same_batch || (na == nb && a.shape[..na - 2] == b.shape[..nb - 2]));
    if !ok {
        bail!("cannot multiply {:?} by {:?}", a.shape, b.shape);
    }
    let mut shape = a.shape.clone();
    shape[na - 1] = b.shape[nb - 1];
    Ok(shape)
}

/// `(group_size, bits)` each quantization mode accepts (`QuantizationMode` order: affine,
/// mxfp4, mxfp8, nvfp4).
fn check_quant_params(group: i32, bits: i32, mode: i32) -> Check {
    enum_in(mode, 4, "quantization mode")?;
    let ok = match mode {
        0 => matches!(group, 32 | 64 | 128) && matches!(bits, 2..=6 | 8),
        1 => (group, bits) == (32, 4),
        2 => (group, bits) == (32, 8),
        _ => (group, bits) == (16, 4),
    };
    if !ok {
        bail!("group size {group} and {bits} bits for quantization mode {mode}");
    }
    Ok(())
}

/// Packed weights and their scales; returns the unpacked length of the weights' last axis.
fn check_quant_weights(
    w: &Meta,
    scales: &Meta,
    group: i32,
    bits: i32,
    affine: bool,
) -> std::result::Result<i32, String> {
    dtype_in(w.dtype, w.dtype == Dt::U32, "the weights", "uint32")?;
    if affine {
        dtype_in(
            scales.dtype,
            scales.dtype.is_float(),
            "the scales",
            "a real floating type",
        )?;
    } else {
        dtype_in(scales.dtype, scales.dtype == Dt::U8, "the scales", "uint8")?;
    }
    let n = w.ndim();
    if n < 2 || scales.ndim() != n || w.shape[..n - 1] != scales.shape[..n - 1] {
        bail!(
            "weights {:?} and scales {:?} do not match",
            w.shape,
            scales.shape
        );
    }
    let unpacked = i64::from(w.shape[n - 1]) * 32 / i64::from(bits);
    if unpacked != i64::from(scales.shape[n - 1]) * i64::from(group) {
        bail!(
            "weights {:?} and scales {:?} do not match {bits} bits in groups of {group}",
            w.shape,
            scales.shape
        );
    }
    to_dim(unpacked, "the unpacked weights")
}

fn check_quantize(st: &State, ins: &[&Meta], outs: &[Meta], gpu: bool) -> Check {
    let (group, bits, mode, dequantize) = (st.int(1), st.int(2), st.int(3), st.flag(4));
    check_quant_params(group, bits, mode)?;
    // MLX 0.32.2's CPU kernel always does an affine quantization into three outputs.
    if !gpu && (mode != 0 || dequantize) {
        bail!("only affine quantization runs on the CPU");
    }
    let affine = mode == 0;
    if dequantize {
        // An fp dequantization may carry a global scale.
        n_inputs(ins, if affine { 3 } else { 2 }, 3)?;
        n_outputs(outs, 1)?;
        let (w, scales) = (ins[0], ins[1]);
        let unpacked = check_quant_weights(w, scales, group, bits, affine)?;
        if affine {
            same_dtype(scales, ins[2], "the scales and biases")?;
            same_shape(scales, ins[2], "the scales and biases")?;
        }
        let mut shape = w.shape.clone();
        *shape.last_mut().expect("ndim >= 2") = unpacked;
        let d = outs[0].dtype;
        dtype_in(d, d.is_float(), "the output", "a real floating type")?;
        if affine && d != scales.dtype {
            bail!("the output is {d}, the scales {}", scales.dtype);
        }
        return out_is(&outs[0], &shape, d);
    }
    n_inputs(ins, 1, if affine { 1 } else { 2 })?;
    let w = ins[0];
    dtype_in(
        w.dtype,
        matches!(w.dtype, Dt::F16 | Dt::Bf16 | Dt::F32),
        "the input",
        "float16, bfloat16 or float32",
    )?;
    let n = w.ndim();
    if n < 2 || w.shape[n - 1] % group != 0 {
        bail!("cannot quantize {:?} in groups of {group}", w.shape);
    }
    let mut packed = w.shape.clone();
    packed[n - 1] = (i64::from(w.shape[n - 1]) * i64::from(bits) / 32) as i32;
    let mut scales = w.shape.clone();
    scales[n - 1] = w.shape[n - 1] / group;
    if affine {
        n_outputs(outs, 3)?;
        out_is(&outs[0], &packed, Dt::U32)?;
        out_is(&outs[1], &scales, w.dtype)?;
        out_is(&outs[2], &scales, w.dtype)
    } else {
        n_outputs(outs, 2)?;
        out_is(&outs[0], &packed, Dt::U32)?;
        out_is(&outs[1], &scales, Dt::U8)
    }
}

/// `Convolution::conv_out_shape` and the checks of `conv_general`.
fn conv_shape(st: &State, a: &Meta, wt: &Meta) -> std::result::Result<Vec<i32>, String> {
    let (strides, lo, hi, kdil, idil) =
        (st.ints(0), st.ints(1), st.ints(2), st.ints(3), st.ints(4));
    let groups = st.int(5);
    let n = a.ndim();
    if !(3..=5).contains(&n) || wt.ndim() != n {
        bail!(
            "input {:?} and weight {:?} are not a 1-3D convolution",
            a.shape,
            wt.shape
        );
    }
    same_dtype(a, wt, "the input and weight")?;
    dtype_in(
        a.dtype,
        a.dtype.is_float(),
        "the input",
        "a real floating type",
    )?;
    let spatial = n - 2;
    for v in [strides, lo, hi, kdil, idil] {
        if v.len() != spatial {
            bail!(
                "convolution parameters of length {} for {spatial} spatial dimensions",
                v.len()
            );
        }
    }
    let (cin, wcin, cout) = (a.shape[n - 1], wt.shape[n - 1], wt.shape[0]);
    if groups < 1
        || (groups != 1 && n > 4)
        || cin % groups != 0
        || (groups > 1 && cout % groups != 0)
        || i64::from(cin) != i64::from(groups) * i64::from(wcin)
    {
        bail!(
            "{groups} groups for input {:?} and weight {:?}",
            a.shape,
            wt.shape
        );
    }
    let mut shape = vec![a.shape[0]];
    for i in 0..spatial {
        if kdil[i] <= 0 || idil[i] <= 0 || lo[i] < 0 || hi[i] < 0 || strides[i] <= 0 {
            bail!("invalid stride, padding or dilation on spatial axis {i}");
        }
        let kd = 1 + i64::from(kdil[i]) * (i64::from(wt.shape[i + 1]) - 1);
        let id = 1 + i64::from(idil[i]) * (i64::from(a.shape[i + 1]) - 1);
        let size = (id + i64::from(lo[i]) + i64::from(hi[i]) - kd) / i64::from(strides[i]) + 1;
        if size <= 0 {
            bail!("spatial axis {i} is smaller than the kernel");
        }
        shape.push(to_dim(size, "the convolution")?);
    }
    shape.push(cout);
    Ok(shape)
}

fn check_fft(st: &State, a: &Meta, out: &Meta) -> Check {
    let (axes, inverse, real) = (st.uints(0), st.flag(1), st.flag(2));
    let n = a.ndim();
    if axes.is_empty() {
        bail!("transforms no axes");
    }
    for (i, &ax) in axes.iter().enumerate() {
        if ax >= n as u64 || axes[..i].contains(&ax) {
            bail!("axes {axes:?} for {n} dimensions");
        }
    }
    let (din, dout) = match (real, inverse) {
        (true, false) => (Dt::F32, Dt::C64),
        (true, true) => (Dt::C64, Dt::F32),
        _ => (Dt::C64, Dt::C64),
    };
    dtype_in(a.dtype, a.dtype == din, "the input", din.name())?;
    let mut shape = a.shape.clone();
    if real {
        let last = *axes.last().expect("non-empty") as usize;
        if inverse {
            let m = out.shape.get(last).copied().unwrap_or(0);
            if out.ndim() != n || m / 2 + 1 != a.shape[last] {
                bail!(
                    "output {:?} is not an inverse real transform of {:?}",
                    out.shape,
                    a.shape
                );
            }
            shape[last] = m;
        } else {
            shape[last] = a.shape[last] / 2 + 1;
        }
    }
    out_is(out, &shape, dout)?;
    for &ax in axes {
        let ax = ax as usize;
        if a.shape[ax] == 0 || out.shape[ax] == 0 {
            bail!("transforms an axis of size 0");
        }
    }
    Ok(())
}

fn check_linalg(name: &str, st: &State, a: &Meta, outs: &[Meta]) -> Check {
    let n = a.ndim();
    if n < 2 {
        bail!("the input {:?} is not a matrix", a.shape);
    }
    let (m, k) = (a.shape[n - 2], a.shape[n - 1]);
    let floats = matches!(a.dtype, Dt::F32 | Dt::F64);
    let with_complex = floats || a.dtype == Dt::C64;
    let batch = &a.shape[..n - 2];
    let real_of = if a.dtype == Dt::C64 { Dt::F32 } else { a.dtype };
    let vec_of = |tail: &[i32]| [batch, tail].concat();
    match name {
        "QRF" => {
            dtype_in(a.dtype, floats, "the input", "float32 or float64")?;
            n_outputs(outs, 2)?;
            let r = m.min(k);
            out_is(&outs[0], &vec_of(&[m, r]), a.dtype)?;
            out_is(&outs[1], &vec_of(&[r, k]), a.dtype)
        }
        "SVD" => {
            dtype_in(
                a.dtype,
                with_complex,
                "the input",
                "float32, float64 or complex64",
            )?;
            let s = vec_of(&[m.min(k)]);
            if st.flag(0) {
                n_outputs(outs, 3)?;
                out_is(&outs[0], &vec_of(&[m, m]), a.dtype)?;
                out_is(&outs[1], &s, real_of)?;
                out_is(&outs[2], &vec_of(&[k, k]), a.dtype)
            } else {
                n_outputs(outs, 1)?;
                out_is(&outs[0], &s, real_of)
            }
        }
        _ => {
            if m != k {
                bail!("the input {:?} is not square", a.shape);
            }
            match name {
                "Inverse" | "Cholesky" => {
                    dtype_in(a.dtype, floats, "the input", "float32 or float64")?;
                    n_outputs(outs, 1)?;
                    out_is(&outs[0], &a.shape, a.dtype)
                }
                _ => {
                    dtype_in(
                        a.dtype,
                        with_complex,
                        "the input",
                        "float32, float64 or complex64",
                    )?;
                    let (vectors, vdt, vals_dt) = if name == "Eig" {
                        (st.flag(0), Dt::C64, Dt::C64)
                    } else {
                        let uplo = st.bytes(0);
                        if uplo != b"L" && uplo != b"U" {
                            bail!(
                                "UPLO {:?} (\"L\" or \"U\" expected)",
                                String::from_utf8_lossy(uplo)
                            );
                        }
                        (st.flag(1), a.dtype, real_of)
                    };
                    n_outputs(outs, if vectors { 2 } else { 1 })?;
                    out_is(&outs[0], &vec_of(&[m]), vals_dt)?;
                    if vectors {
                        out_is(&outs[1], &a.shape, vdt)?;
                    }
                    Ok(())
                }
            }
        }
    }
}

/// The GPU-only fast primitives: their input lists and output shapes as `mlx/fast.cpp` builds
/// them.
fn check_fast(name: &str, st: &State, ins: &[&Meta], outs: &[Meta]) -> Check {
    let x = ins.first().ok_or("has no inputs")?;
    dtype_in(
        x.dtype,
        x.dtype.is_float(),
        "the input",
        "a real floating type",
    )?;
    if x.ndim() == 0 {
        bail!("the input is a scalar");
    }
    let last = x.shape[x.ndim() - 1];
    // A weight or bias is the scalar 1 or 0 when the caller gave none.
    let param = |p: &Meta| -> Check {
        same_dtype(x, p, "the input and its parameters")?;
        if !(p.ndim() == 0 || p.shape == [last]) {
            bail!("parameter {:?} for an input {:?}", p.shape, x.shape);
        }
        Ok(())
    };
    match name {
        "RMSNorm" | "LayerNorm" => {
            let n = if name == "RMSNorm" { 2 } else { 3 };
            n_inputs(ins, n, n)?;
            n_outputs(outs, 1)?;
            for p in &ins[1..] {
                param(p)?;
            }
            out_is(&outs[0], &x.shape, x.dtype)
        }
        "RMSNormVJP" | "LayerNormVJP" => {
            let n = if name == "RMSNormVJP" { 3 } else { 4 };
            n_inputs(ins, n, n)?;
            n_outputs(outs, n - 1)?;
            for p in &ins[1..n - 1] {
                param(p)?;
            }
            same_shape(x, ins[n - 1], "the input and its cotangent")?;
            for (o, i) in outs.iter().zip(ins) {
                out_is(o, &i.shape, i.dtype)?;
            }
            Ok(())
        }
        "RoPE" => {
            n_inputs(ins, 2, 3)?;
            n_outputs(outs, 1)?;
            let dims = st.int(1);
            let off = ins[1];
            if x.ndim() < 3 || dims <= 0 || dims % 2 != 0 || dims > last {
                bail!("{dims} rotated dimensions of an input {:?}", x.shape);
            }
            let ok = off.dtype.is_int()
                && off.dtype.size() == 4
                && off.ndim() <= 1
                && (off.size() == 1 || off.size() == i64::from(x.shape[0]));
            if !ok {
                bail!(
                    "offset {:?} {} for an input {:?}",
                    off.shape,
                    off.dtype,
                    x.shape
                );
            }
            if let Some(f) = ins.get(2) {
                if f.dtype != Dt::F32 || f.shape != [dims / 2] {
                    bail!(
                        "frequencies {:?} {} for {dims} dimensions",
                        f.shape,
                        f.dtype
                    );
                }
            }
            out_is(&outs[0], &x.shape, x.dtype)
        }
        _ => {
            let (has_sinks, lse) = (st.flag(3), st.flag(4));
            n_inputs(ins, 3, 5)?;
            let (q, k, v) = (ins[0], ins[1], ins[2]);
            for t in [k, v] {
                same_dtype(q, t, "the queries, keys and values")?;
            }
            let ok = [q, k, v].iter().all(|t| t.ndim() == 4)
                && q.shape[0] == k.shape[0]
                && q.shape[0] == v.shape[0]
                && q.shape[3] == k.shape[3]
                && k.shape[1] == v.shape[1]
                && k.shape[2] == v.shape[2]
                && k.shape[1] >= 1
                && q.shape[1] % k.shape[1] == 0;
            if !ok {
                bail!(
                    "queries {:?}, keys {:?} and values {:?}",
                    q.shape,
                    k.shape,
                    v.shape
                );
            }
            let extra = ins.len() - 3;
            if extra < usize::from(has_sinks) {
                bail!("the sinks are missing");
            }
            if has_sinks {
                let s = ins[ins.len() - 1];
                if s.dtype != q.dtype || s.shape != [q.shape[1]] {
                    bail!("sinks {:?} {}", s.shape, s.dtype);
                }
            }
            if extra - usize::from(has_sinks) == 1 {
                let m = ins[3];
                let want = [q.shape[0], q.shape[1], q.shape[2], k.shape[2]];
                if m.shape != want || !(m.dtype == Dt::Bool || m.dtype == q.dtype) {
                    bail!("mask {:?} {} for scores {want:?}", m.shape, m.dtype);
                }
            }
            let out = [q.shape[0], q.shape[1], q.shape[2], v.shape[3]];
            n_outputs(outs, if lse { 2 } else { 1 })?;
            out_is(&outs[0], &out, q.dtype)?;
            if lse {
                out_is(&outs[1], &[q.shape[0], q.shape[1], q.shape[2], 1], Dt::F32)?;
            }
            Ok(())
        }
    }
}
