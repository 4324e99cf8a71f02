//! Structural and semantic validation of an `.mlxfn` file before MLX parses it.
//!
//! MLX 0.32.2's reader (`ImportedFunction::ImportedFunction` in `export.cpp`) trusts the file:
//! it reserves vectors for any element count the file names, indexes the list of input ids and
//! the list of sibling ids and dtypes by the length of *another* list, and builds arrays with
//! whatever shape, dtype and primitive state the file holds. The imported graph is later run
//! as is: in a non-shapeless function every primitive gets the output shape stored in the
//! file, and MLX's CPU kernels size their loops from those shapes and dispatch on those
//! dtypes on a worker thread, where an unsupported dtype is an uncaught exception. So a
//! single flipped bit can double-free, write past a buffer, make BLAS call `exit` or abort the
//! process, either at import or at the first call.
//!
//! This walk reads the same layout with every length checked against the file size, mirrors
//! how MLX resolves array ids (function inputs, constants shared between functions, sibling
//! outputs), and checks every primitive against the invariants MLX's ops establish and its
//! kernels rely on: input and output counts, output shapes and dtypes, axes, enum values and
//! the other state fields (see `prims`). Constants that reach a gather, scatter or dynamic
//! slice as indices, or an integer division as divisors, are read and their values checked
//! too, as are small integer arrays the graph computes from constants alone (mlx-rs's `take`
//! clamps constant indices that way) and indices it computes within bounds of its own (from an
//! `argsort`, an `argmax`, an `arange`, a remainder by a constant): MLX's kernels do not
//! bound-check indices, and a zero divisor traps. A file that passes imports, and a call with arguments
//! of one of its signatures runs the graph it holds without crashing, but for what follows.
//!
//! Not covered, because the file does not hold them: index values and integer divisors that
//! are computed from the call's arguments (MLX checks neither, in an imported graph as in
//! Python), and, for shapeless functions, argument shapes for which MLX's own shape inference
//! of the replayed graph goes wrong. `CustomKernel` primitives are refused: their source code
//! is arbitrary and cannot be checked.

mod prims;

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::rc::Rc;

use crate::{Error, Result};

use prims::{Range, State, ValueUse};

/// Element types, numbered as MLX's `Dtype::Val`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Dt {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    F32,
    F64,
    Bf16,
    C64,
}

impl Dt {
    fn from_val(v: i32) -> Option<Dt> {
        use Dt::*;
        Some(match v {
            0 => Bool,
            1 => U8,
            2 => U16,
            3 => U32,
            4 => U64,
            5 => I8,
            6 => I16,
            7 => I32,
            8 => I64,
            9 => F16,
            10 => F32,
            11 => F64,
            12 => Bf16,
            13 => C64,
            _ => return None,
        })
    }

    pub(super) fn size(self) -> u8 {
        use Dt::*;
        match self {
            Bool | U8 | I8 => 1,
            U16 | I16 | F16 | Bf16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 | C64 => 8,
        }
    }

    pub(super) fn name(self) -> &'static str {
        use Dt::*;
        match self {
            Bool => "bool",
            U8 => "uint8",
            U16 => "uint16",
            U32 => "uint32",
            U64 => "uint64",
            I8 => "int8",
            I16 => "int16",
            I32 => "int32",
            I64 => "int64",
            F16 => "float16",
            F32 => "float32",
            F64 => "float64",
            Bf16 => "bfloat16",
            C64 => "complex64",
        }
    }

    pub(super) fn is_int(self) -> bool {
        use Dt::*;
        matches!(self, U8 | U16 | U32 | U64 | I8 | I16 | I32 | I64)
    }

    pub(super) fn is_signed_int(self) -> bool {
        matches!(self, Dt::I8 | Dt::I16 | Dt::I32 | Dt::I64)
    }

    /// MLX's `floating`: the real floating types.
    pub(super) fn is_float(self) -> bool {
        matches!(self, Dt::F16 | Dt::F32 | Dt::F64 | Dt::Bf16)
    }

    /// MLX's `inexact`: floating or complex.
    pub(super) fn is_inexact(self) -> bool {
        self.is_float() || self == Dt::C64
    }
}

impl std::fmt::Display for Dt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Largest byte size of an array: MLX computes byte offsets as `int64` in places (`seek`,
/// strides), so a larger array would wrap them.
const MAX_BYTES: u128 = i64::MAX as u128;

/// The field types of a primitive's serialized state (see `prims::layout`), named by the C++
/// type MLX writes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Field {
    /// `int` and every enum (MLX writes enums as `int`).
    I32,
    Bool,
    F32,
    F64,
    /// `size_t`.
    U64,
    Dtype,
    /// `std::vector<int>` and `Shape`.
    VecI32,
    /// `Strides`.
    VecI64,
    /// `std::vector<size_t>`.
    VecU64,
    Str,
    /// `nullptr` (the fallback function of fast primitives): nothing is written.
    Null,
    /// `std::optional<float>`.
    OptF32,
    /// `std::tuple<int, int, int>`.
    I32x3,
    /// `std::vector<std::tuple<bool, bool, bool>>`.
    VecBool3,
    /// `std::vector<std::variant<bool, int, float>>`.
    VecScalar,
}

/// One decoded state field.
#[derive(Clone, Debug)]
pub(super) enum Val {
    I(i32),
    B(bool),
    F(f64),
    U(u64),
    D(Dt),
    Is(Vec<i32>),
    Ls(Vec<i64>),
    Us(Vec<u64>),
    S(Vec<u8>),
    Nil,
    /// A field only `CustomKernel` has, which is refused whatever it holds.
    Walked,
}

/// Shape and dtype of one array.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Meta {
    pub(super) shape: Vec<i32>,
    pub(super) dtype: Dt,
}

impl Meta {
    pub(super) fn ndim(&self) -> usize {
        self.shape.len()
    }

    pub(super) fn size(&self) -> i64 {
        self.shape.iter().map(|&d| i64::from(d)).product()
    }
}

/// Where a constant's data lies in the file.
#[derive(Clone, Copy, Debug)]
struct ConstLoc {
    offset: u64,
    count: u64,
    dtype: Dt,
}

/// What an array id of a function resolves to, mirroring MLX's `array_map`.
#[derive(Clone, Debug)]
enum Src {
    Input,
    Const(ConstLoc),
    /// Output of a primitive: its name and its first input, so that value checks can follow
    /// value-preserving ops back to a constant.
    Op {
        name: &'static str,
        input: Option<u64>,
    },
}

#[derive(Clone, Debug)]
struct Node {
    meta: Meta,
    src: Src,
}

struct Walker {
    r: BufReader<File>,
    pos: u64,
    len: u64,
    path: String,
}

fn io_err(path: &str, e: std::io::Error) -> Error {
    Error::io(format!("[import_function] {path}"), e)
}

impl Walker {
    fn fail_at(&self, pos: u64, what: impl std::fmt::Display) -> Error {
        Error::invalid_data(
            format!("[import_function] {}", self.path),
            format!("corrupt or truncated .mlxfn file: {what} (at byte {pos})"),
        )
    }

    fn fail(&self, what: impl std::fmt::Display) -> Error {
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
    fn skip(&mut self, n: u64, what: &str) -> Result<()> {
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
    fn bool(&mut self, what: &str) -> Result<bool> {
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

    fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array(what)?))
    }

    fn i64(&mut self, what: &str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
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
    fn count(&mut self, min_elem: u64, what: &str) -> Result<usize> {
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

    fn string(&mut self, what: &str) -> Result<Vec<u8>> {
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

    fn vec_u64(&mut self, what: &str) -> Result<Vec<u64>> {
        let n = self.count(8, what)?;
        (0..n).map(|_| self.u64(what)).collect()
    }

    /// A `Dtype`: MLX writes its `Val` and its size, and trusts both.
    fn dtype(&mut self, what: &str) -> Result<Dt> {
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
    fn shape(&mut self, what: &str) -> Result<Vec<i32>> {
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

    fn meta(&mut self, what: &str) -> Result<Meta> {
        let shape = self.shape(&format!("{what} shape"))?;
        let dtype = self.dtype(&format!("{what} dtype"))?;
        Ok(Meta { shape, dtype })
    }

    fn state(&mut self, name: &str, fields: &[Field]) -> Result<State> {
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

/// A primitive of the tape, kept for the value checks, which run once the whole file is read.
struct Op {
    entry: u64,
    name: &'static str,
    state: State,
    inputs: Vec<u64>,
    outputs: Vec<u64>,
    uses: Vec<ValueUse>,
}

/// Everything about the devices the file's streams name that MLX does not check itself.
#[derive(Clone, Copy, Debug)]
pub(super) struct Devices {
    /// GPUs this MLX build can use (0 on the CPU-only build).
    pub(super) gpus: i32,
}

/// One function being read: MLX's `array_map`, the ids of its inputs and its primitives.
struct Function {
    nodes: HashMap<u64, Node>,
    inputs: HashSet<u64>,
    ops: Vec<Op>,
}

/// Ops whose output holds their first input's values, moved or repeated.
fn moves_values(name: &str) -> bool {
    // A broadcast's value is its first input's; in a shapeless trace the other inputs only
    // give the shape.
    matches!(
        name,
        "Broadcast"
            | "BroadcastAxes"
            | "Reshape"
            | "ExpandDims"
            | "Squeeze"
            | "Flatten"
            | "Unflatten"
            | "Transpose"
            | "Copy"
            | "StopGradient"
    )
}

impl Function {
    /// Whether array `id` is a function argument, moved or reshaped.
    fn is_argument(&self, mut id: u64) -> bool {
        for _ in 0..64 {
            match self.nodes.get(&id).map(|n| &n.src) {
                Some(Src::Input) => return true,
                Some(Src::Op {
                    name,
                    input: Some(input),
                }) if moves_values(name) => id = *input,
                _ => return false,
            }
        }
        false
    }

    /// Follows value-preserving single-input ops from `id` back to a constant; the casts met
    /// on the way are returned in the order they apply.
    fn constant_source(&self, mut id: u64) -> Option<(ConstLoc, Vec<Dt>)> {
        let mut casts = Vec::new();
        for _ in 0..64 {
            let node = self.nodes.get(&id)?;
            match &node.src {
                Src::Const(loc) => {
                    casts.reverse();
                    return Some((*loc, casts));
                }
                Src::Input => return None,
                Src::Op { name, input } => {
                    let input = (*input)?;
                    match *name {
                        name if moves_values(name) => {}
                        "AsType" => {
                            let from = self.nodes.get(&input)?.meta.dtype;
                            if !(from.is_int() || from == Dt::Bool) || !node.meta.dtype.is_int() {
                                return None;
                            }
                            casts.push(node.meta.dtype);
                        }
                        _ => return None,
                    }
                    id = input;
                }
            }
        }
        None
    }
}

/// Checks the whole `.mlxfn` file at `path` against MLX 0.32.2's reader and the primitives'
/// invariants; `devices` says which stream devices MLX can resolve.
pub(super) fn validate(path: &Path, devices: Devices) -> Result<()> {
    let shown = path.display().to_string();
    let file = File::open(path).map_err(|e| io_err(&shown, e))?;
    let len = file.metadata().map_err(|e| io_err(&shown, e))?.len();
    let mut w = Walker {
        r: BufReader::new(file),
        pos: 0,
        len,
        path: shown,
    };

    w.string("the MLX version")?;
    let at = w.pos;
    let function_count = w.i32("the function count")?;
    if function_count < 0 {
        return Err(w.fail_at(at, format!("negative function count {function_count}")));
    }
    w.bool("the shapeless flag")?;
    w.string("the metadata")?;

    // MLX shares constants between the functions of one file by id.
    let mut constants: HashMap<u64, (Meta, ConstLoc)> = HashMap::new();
    let mut functions = Vec::new();
    for f in 0..function_count {
        functions.push(read_function(&mut w, f, devices, &mut constants)?);
    }
    if w.pos != w.len {
        return Err(w.fail(format!(
            "{} bytes follow the last of the {function_count} functions",
            w.len - w.pos
        )));
    }
    let mut values = Values {
        path: &w.path,
        file: w.r.into_inner(),
        constants: HashMap::new(),
        small_constants: HashMap::new(),
    };
    for f in &functions {
        values.check(f)?;
    }
    Ok(())
}

fn read_function(
    w: &mut Walker,
    f: i32,
    devices: Devices,
    constants: &mut HashMap<u64, (Meta, ConstLoc)>,
) -> Result<Function> {
    let fname = format!("function {}", f + 1);
    let at = w.pos;
    let n = w.count(8, &format!("{fname}'s keyword names"))?;
    let mut kwarg_keys = Vec::with_capacity(n);
    for _ in 0..n {
        kwarg_keys.push(w.string(&format!("{fname}'s keyword names"))?);
    }
    // MLX binds keyword arguments to the inputs in sorted key order, the order it writes them.
    if kwarg_keys.windows(2).any(|k| k[0] >= k[1]) {
        return Err(w.fail_at(
            at,
            format!("{fname}'s keyword names are not sorted and unique"),
        ));
    }

    let at = w.pos;
    let input_ids = w.vec_u64(&format!("{fname}'s input ids"))?;
    let n = w.count(13, &format!("{fname}'s inputs"))?;
    // MLX pairs `input_ids[i]` with `inputs[i]` for every input, without comparing the counts.
    if n != input_ids.len() {
        return Err(w.fail_at(
            at,
            format!("{fname} has {} input ids for {n} inputs", input_ids.len()),
        ));
    }
    if kwarg_keys.len() > n {
        return Err(w.fail_at(
            at,
            format!(
                "{fname} has {} keyword names for {n} inputs",
                kwarg_keys.len()
            ),
        ));
    }
    let mut func = Function {
        nodes: HashMap::new(),
        inputs: HashSet::new(),
        ops: Vec::new(),
    };
    for &id in &input_ids {
        let meta = w.meta(&format!("{fname}'s input"))?;
        if func
            .nodes
            .insert(
                id,
                Node {
                    meta,
                    src: Src::Input,
                },
            )
            .is_some()
        {
            return Err(w.fail_at(at, format!("{fname} lists input id {id} twice")));
        }
        func.inputs.insert(id);
    }
    let outputs_at = w.pos;
    let output_ids = w.vec_u64(&format!("{fname}'s output ids"))?;

    // Smallest tape entry: an id and two flags.
    let tape_len = w.count(10, &format!("{fname}'s tape"))?;
    for _ in 0..tape_len {
        read_tape_entry(w, &fname, devices, &mut func, constants)?;
    }

    for id in &output_ids {
        if !func.nodes.contains_key(id) {
            return Err(w.fail_at(
                outputs_at,
                format!("{fname}'s output id {id} is not defined by its inputs or tape"),
            ));
        }
    }
    Ok(func)
}

fn read_tape_entry(
    w: &mut Walker,
    fname: &str,
    devices: Devices,
    func: &mut Function,
    constants: &mut HashMap<u64, (Meta, ConstLoc)>,
) -> Result<()> {
    let entry = w.pos;
    let id = w.u64(&format!("{fname}'s tape entry id"))?;
    if !w.bool("the primitive flag")? {
        if w.bool("the constant flag")? {
            let (meta, loc) = match constants.get(&id) {
                // MLX reuses a constant an earlier function of the file defined.
                Some(known) => known.clone(),
                None => {
                    let meta = w.meta(&format!("constant {id}"))?;
                    let count = meta.size() as u64;
                    let bytes = count * u64::from(meta.dtype.size());
                    let offset = w.pos;
                    w.skip(bytes, &format!("the data of constant {id}"))?;
                    let loc = ConstLoc {
                        offset,
                        count,
                        dtype: meta.dtype,
                    };
                    constants.insert(id, (meta.clone(), loc));
                    (meta, loc)
                }
            };
            if func.nodes.contains_key(&id) {
                return Err(w.fail_at(entry, format!("{fname} defines array id {id} twice")));
            }
            func.nodes.insert(
                id,
                Node {
                    meta,
                    src: Src::Const(loc),
                },
            );
        } else if !func.inputs.contains(&id) {
            // MLX looks the id up with `at` and would take any array defined so far.
            return Err(w.fail_at(
                entry,
                format!("{fname}'s tape refers to input id {id}, which is not one of its inputs"),
            ));
        }
        return Ok(());
    }

    let input_ids = w.vec_u64("a primitive's input ids")?;
    let mut ins = Vec::with_capacity(input_ids.len());
    for iid in &input_ids {
        let node = func.nodes.get(iid).ok_or_else(|| {
            w.fail_at(
                entry,
                format!("a primitive's input id {iid} is not defined earlier in {fname}"),
            )
        })?;
        ins.push(node.meta.clone());
    }

    let stream_at = w.pos;
    w.i32("a stream index")?;
    let device_type = w.i32("a stream's device type")?;
    let device_index = w.i32("a stream's device index")?;
    let gpu = match (device_type, device_index) {
        (0, 0) => false,
        (1, i) if i >= 0 && i < devices.gpus => true,
        (1, i) if devices.gpus == 0 => {
            return Err(w.fail_at(
                stream_at,
                format!("a primitive runs on gpu {i}, but this MLX build has no GPU backend"),
            ))
        }
        (t, i) => {
            return Err(w.fail_at(
                stream_at,
                format!("a primitive's stream names device type {t}, index {i}"),
            ))
        }
    };

    let name_at = w.pos;
    let raw_name = w.string("a primitive name")?;
    let (name, fields) = prims::layout(&raw_name).ok_or_else(|| {
        w.fail_at(
            name_at,
            format!("unknown primitive {:?}", String::from_utf8_lossy(&raw_name)),
        )
    })?;
    let state = w.state(name, fields)?;

    let sib_at = w.pos;
    let num_siblings = w.u64("a primitive's sibling count")?;
    let (out_ids, outs) = if num_siblings == 0 {
        (vec![id], vec![w.meta(&format!("{name}'s output"))?])
    } else {
        let ids = w.vec_u64(&format!("{name}'s output ids"))?;
        let n = w.count(8, &format!("{name}'s output shapes"))?;
        let mut shapes = Vec::with_capacity(n);
        for _ in 0..n {
            shapes.push(w.shape(&format!("{name}'s output shape"))?);
        }
        let n = w.count(5, &format!("{name}'s output dtypes"))?;
        let mut dtypes = Vec::with_capacity(n);
        for _ in 0..n {
            dtypes.push(w.dtype(&format!("{name}'s output dtype"))?);
        }
        // MLX makes one array per shape, taking `dtypes[i]` and `ids[i]` without checking
        // that those lists are as long; the sibling count it ignores beyond zero.
        if dtypes.len() != shapes.len()
            || ids.len() != shapes.len()
            || shapes.len() as u64 != num_siblings.saturating_add(1)
        {
            return Err(w.fail_at(
                sib_at,
                format!(
                    "{name} has {num_siblings} siblings, {} output ids, {} shapes and {} dtypes",
                    ids.len(),
                    shapes.len(),
                    dtypes.len()
                ),
            ));
        }
        if ids.iter().filter(|&&s| s == id).count() != 1 {
            return Err(w.fail_at(
                sib_at,
                format!("{name}'s output ids do not list its tape id {id} once"),
            ));
        }
        let outs = shapes
            .into_iter()
            .zip(dtypes)
            .map(|(shape, dtype)| Meta { shape, dtype })
            .collect();
        (ids, outs)
    };

    let in_refs: Vec<&Meta> = ins.iter().collect();
    let uses = prims::check(name, &state, &in_refs, &outs, gpu)
        .map_err(|what| w.fail_at(entry, format!("{name} (array id {id}): {what}")))?;

    for (oid, meta) in out_ids.iter().zip(outs) {
        let node = Node {
            meta,
            src: Src::Op {
                name,
                input: input_ids.first().copied(),
            },
        };
        if func.nodes.insert(*oid, node).is_some() {
            return Err(w.fail_at(entry, format!("{fname} defines array id {oid} twice")));
        }
    }
    func.ops.push(Op {
        entry,
        name,
        state,
        inputs: input_ids,
        outputs: out_ids,
        uses,
    });
    Ok(())
}

/// The value checks: integer arrays that reach a primitive as indices or divisors, when the
/// file fixes their values (constants, and what the graph computes from constants alone:
/// `prims::fold`) or their bounds (`prims::value_range`).
struct Values<'a> {
    path: &'a str,
    file: File,
    /// Bounds of each integer constant read so far, by data offset (functions share them).
    constants: HashMap<u64, Option<Range>>,
    /// Values of each small integer constant read so far, by data offset.
    small_constants: HashMap<u64, Rc<[i128]>>,
}

impl Values<'_> {
    fn fail(&self, op: &Op, what: impl std::fmt::Display) -> Error {
        Error::invalid_data(
            format!("[import_function] {}", self.path),
            format!(
                "corrupt or truncated .mlxfn file: {} (tape entry at byte {}) {what}",
                op.name, op.entry
            ),
        )
    }

    fn check(&mut self, f: &Function) -> Result<()> {
        let mut ranges: HashMap<u64, Range> = HashMap::new();
        let mut exact: HashMap<u64, Rc<[i128]>> = HashMap::new();
        for op in &f.ops {
            for u in &op.uses {
                let id = op.inputs[u.input];
                if let Some((loc, casts)) = f.constant_source(id) {
                    self.check_elements(op, u, loc, &casts)?;
                } else if let Some(vals) = self.exact(f, &exact, id)? {
                    if (vals.len() as u64) < u.elements_read() {
                        return Err(self.fail(
                            op,
                            format!(
                                "reads {} slice starts from {} values",
                                u.elements_read(),
                                vals.len()
                            ),
                        ));
                    }
                    for (k, &v) in vals.iter().enumerate() {
                        u.check(k as u64, v).map_err(|what| {
                            self.fail(
                                op,
                                format!("takes values the file fixes, whose element {k} is {what}"),
                            )
                        })?;
                    }
                } else if let Some(r) = self.range(f, &ranges, &exact, id)? {
                    u.check_range(r).map_err(|what| {
                        self.fail(
                            op,
                            format!("takes values computed in the graph that can be {what}"),
                        )
                    })?;
                }
            }
            let meta = |id: &u64| &f.nodes[id].meta;
            let ins: Vec<&Meta> = op.inputs.iter().map(meta).collect();
            let outs: Vec<&Meta> = op.outputs.iter().map(meta).collect();
            let mut in_vals = Vec::with_capacity(op.inputs.len());
            for &id in &op.inputs {
                in_vals.push(self.exact(f, &exact, id)?);
            }
            let in_slices: Vec<Option<&[i128]>> = in_vals.iter().map(|v| v.as_deref()).collect();
            if let Some(vals) = prims::fold(op.name, &op.state, &ins, &in_slices, &outs) {
                exact.insert(op.outputs[0], vals.into());
            }
            if !prims::propagates_range(op.name) {
                continue;
            }
            let mut in_ranges = Vec::with_capacity(op.inputs.len());
            for &id in &op.inputs {
                in_ranges.push(self.range(f, &ranges, &exact, id)?);
            }
            let args: Vec<bool> = op.inputs.iter().map(|&id| f.is_argument(id)).collect();
            let out_ranges = prims::value_range(op.name, &op.state, &ins, &in_ranges, &args, &outs);
            for (&id, r) in op.outputs.iter().zip(out_ranges) {
                if let Some(r) = r {
                    ranges.insert(id, r);
                }
            }
        }
        Ok(())
    }

    /// The values of array `id` when the file fixes them: a small integer constant, or what
    /// the graph computes from such constants alone (`prims::fold`).
    fn exact(
        &mut self,
        f: &Function,
        exact: &HashMap<u64, Rc<[i128]>>,
        id: u64,
    ) -> Result<Option<Rc<[i128]>>> {
        let Some(node) = f.nodes.get(&id) else {
            return Ok(None);
        };
        let Src::Const(loc) = node.src else {
            return Ok(exact.get(&id).cloned());
        };
        if !(loc.dtype.is_int() || loc.dtype == Dt::Bool) || loc.count > prims::MAX_FOLD {
            return Ok(None);
        }
        if let Some(v) = self.small_constants.get(&loc.offset) {
            return Ok(Some(v.clone()));
        }
        let mut vals = Vec::with_capacity(loc.count as usize);
        self.each_element(loc, |_, v| {
            vals.push(v);
            Ok(())
        })?;
        let vals: Rc<[i128]> = vals.into();
        self.small_constants.insert(loc.offset, vals.clone());
        Ok(Some(vals))
    }

    /// The bounds of array `id`'s values, when they are known.
    fn range(
        &mut self,
        f: &Function,
        ranges: &HashMap<u64, Range>,
        exact: &HashMap<u64, Rc<[i128]>>,
        id: u64,
    ) -> Result<Option<Range>> {
        let Some(node) = f.nodes.get(&id) else {
            return Ok(None);
        };
        let Src::Const(loc) = node.src else {
            let bounds = exact.get(&id).and_then(|v| {
                Some(Range {
                    lo: *v.iter().min()?,
                    hi: *v.iter().max()?,
                    free: false,
                })
            });
            return Ok(ranges.get(&id).copied().or(bounds));
        };
        if !(loc.dtype.is_int() || loc.dtype == Dt::Bool) {
            return Ok(None);
        }
        if let Some(r) = self.constants.get(&loc.offset) {
            return Ok(*r);
        }
        let mut r: Option<Range> = None;
        self.each_element(loc, |_, v| {
            r = Some(match r {
                None => Range {
                    lo: v,
                    hi: v,
                    free: false,
                },
                Some(r) => Range {
                    lo: r.lo.min(v),
                    hi: r.hi.max(v),
                    free: false,
                },
            });
            Ok(())
        })?;
        self.constants.insert(loc.offset, r);
        Ok(r)
    }

    /// Checks every element of a constant that reaches `op` as input `u.input`.
    fn check_elements(&mut self, op: &Op, u: &ValueUse, loc: ConstLoc, casts: &[Dt]) -> Result<()> {
        if loc.count < u.elements_read() {
            return Err(self.fail(
                op,
                format!(
                    "reads {} slice starts from a constant of {} (constant data at byte {})",
                    u.elements_read(),
                    loc.count,
                    loc.offset
                ),
            ));
        }
        let mut bad = None;
        self.each_element(loc, |k, mut v| {
            for &to in casts {
                v = prims::wrap(v, to);
            }
            if bad.is_none() {
                if let Err(what) = u.check(k, v) {
                    bad = Some((k, what));
                }
            }
            Ok(())
        })?;
        match bad {
            Some((k, what)) => Err(self.fail(
                op,
                format!(
                    "takes a constant whose element {k} is {what} (constant data at byte {})",
                    loc.offset
                ),
            )),
            None => Ok(()),
        }
    }

    fn each_element(
        &mut self,
        loc: ConstLoc,
        mut f: impl FnMut(u64, i128) -> Result<()>,
    ) -> Result<()> {
        let path = self.path;
        self.file
            .seek(SeekFrom::Start(loc.offset))
            .map_err(|e| io_err(path, e))?;
        let mut r = BufReader::new(&mut self.file);
        let size = usize::from(loc.dtype.size());
        let mut buf = [0u8; 8];
        for k in 0..loc.count {
            r.read_exact(&mut buf[..size])
                .map_err(|e| io_err(path, e))?;
            f(k, prims::int_value(loc.dtype, &buf[..size]))?;
        }
        Ok(())
    }
}
