//! The primitives MLX 0.32.2 can import: the layout of each one's serialized state (its
//! `state()` tuple, in `primitives.h` and `fast_primitives.h`) and the invariants the op that
//! builds it establishes and its kernel relies on.
//!
//! In a non-shapeless function MLX replays every primitive with the output shapes and dtypes
//! stored in the file, and the CPU kernels take their loop bounds from those shapes, read the
//! inputs as the output's element type, and dispatch on dtypes inside a task on the stream's
//! worker thread, where an unsupported dtype is an uncaught exception (`std::terminate`). So
//! each check pins the output metadata to what MLX's op would have produced from the inputs
//! and the state, and rejects dtypes the kernel cannot take.
//!
//! Everything known about one primitive is one [`Prim`] descriptor, found by its name once per
//! tape entry: its state layout, its check, and, for the value checks, how its integer
//! outputs' bounds and values follow from its inputs'. The descriptors live in one file per
//! family of ops; the table tests hold them to MLX's own list of importable primitives.

use super::{Dt, Field, Meta};

type Check = std::result::Result<(), String>;

macro_rules! bail {
    ($($t:tt)*) => { return Err(format!($($t)*)) };
}

mod fold;
mod helpers;
mod range;
mod state;
mod values;

mod binary;
mod conv;
mod creation;
mod fast;
mod fft;
mod indexing;
mod linalg;
mod quantized;
mod random;
mod reduce;
mod shape;
mod slicing;
mod unary;

pub(super) use fold::MAX_FOLD;
pub(in crate::export) use state::State;
pub(super) use values::{int_value, wrap, Range, ValueUse};

use fold::Known;
use range::Bounds;
use values::int_bounds;

/// One tape entry's primitive as its check sees it.
pub(super) struct Call<'a> {
    st: &'a State,
    ins: &'a [&'a Meta],
    outs: &'a [Meta],
    /// Whether it runs on a GPU stream.
    gpu: bool,
}

/// What a check returns: how the primitive uses integer inputs as offsets or divisors, for the
/// value checks, or what is wrong with it.
type Uses = std::result::Result<Vec<ValueUse>, String>;

type CheckFn = fn(&Call) -> Uses;
type RangeFn = fn(&Bounds) -> Vec<Option<Range>>;
type FoldFn = fn(&Known) -> Option<Vec<i128>>;

/// How a primitive's output values relate to its first input's, for following an index array
/// back to the constant it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flow {
    /// The output holds the first input's values, moved or repeated. (A broadcast's value is
    /// its first input's; in a shapeless trace the other inputs only give the shape.)
    Moves,
    /// The output holds the first input's values converted to the output dtype.
    Casts,
    /// Anything else.
    Computes,
}

/// One primitive MLX can import.
pub(super) struct Prim {
    /// The name MLX writes for it (`PrimitiveFactory` in `export.cpp`).
    pub(super) name: &'static str,
    /// The fields of its `state()`, in order.
    pub(super) layout: &'static [Field],
    check: CheckFn,
    /// Bounds on its integer outputs from its inputs' (`value_range`), if it has a rule.
    range: Option<RangeFn>,
    /// Its integer output's values from its inputs' (`fold`), if it has a rule.
    fold: Option<FoldFn>,
    pub(super) flow: Flow,
}

impl Prim {
    const fn new(name: &'static str, layout: &'static [Field], check: CheckFn) -> Prim {
        Prim {
            name,
            layout,
            check,
            range: None,
            fold: None,
            flow: Flow::Computes,
        }
    }

    const fn with_range(mut self, f: RangeFn) -> Prim {
        self.range = Some(f);
        self
    }

    const fn with_fold(mut self, f: FoldFn) -> Prim {
        self.fold = Some(f);
        self
    }

    /// Its output holds its first input's values (`Flow::Moves`).
    const fn moves(mut self) -> Prim {
        self.flow = Flow::Moves;
        self
    }

    const fn casts(mut self) -> Prim {
        self.flow = Flow::Casts;
        self
    }

    /// Whether `value_range` can bound an output of this primitive.
    pub(super) fn propagates_range(&self) -> bool {
        self.range.is_some()
    }
}

impl std::fmt::Debug for Prim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every family's descriptors: together, the factory table of MLX 0.32.2's `export.cpp`.
static FAMILIES: [&[Prim]; 13] = [
    unary::PRIMS,
    binary::PRIMS,
    shape::PRIMS,
    slicing::PRIMS,
    indexing::PRIMS,
    reduce::PRIMS,
    linalg::PRIMS,
    quantized::PRIMS,
    conv::PRIMS,
    fft::PRIMS,
    creation::PRIMS,
    random::PRIMS,
    fast::PRIMS,
];

fn all() -> impl Iterator<Item = &'static Prim> {
    FAMILIES.iter().flat_map(|&f| f.iter())
}

/// The primitive MLX deserializes for `name`, if it knows one.
pub(super) fn lookup(name: &[u8]) -> Option<&'static Prim> {
    let name = std::str::from_utf8(name).ok()?;
    all().find(|p| p.name == name)
}

/// Checks primitive `prim` with its state, input and output metadata; returns how it uses
/// integer inputs as offsets or divisors, for the value checks.
pub(super) fn check(prim: &Prim, st: &State, ins: &[&Meta], outs: &[Meta], gpu: bool) -> Uses {
    (prim.check)(&Call { st, ins, outs, gpu })
}

/// Bounds on the integer outputs of `prim`, from bounds on its inputs where known (one entry
/// per output); see `range`.
///
/// `args[i]` says whether input `i` is a function argument, moved or reshaped: its values can
/// be anything.
pub(super) fn value_range(
    prim: &Prim,
    st: &State,
    ins: &[&Meta],
    ranges: &[Option<Range>],
    args: &[bool],
    outs: &[&Meta],
) -> Vec<Option<Range>> {
    match prim.range {
        Some(f) if outs.iter().all(|o| int_bounds(o.dtype).is_some()) => f(&Bounds {
            st,
            ins,
            ranges,
            args,
            outs,
        }),
        _ => vec![None; outs.len()],
    }
}

/// The element values of the output of a single-output integer primitive whose inputs' values
/// are known (`vals[i]`, row-major), as MLX's CPU kernels compute them; `None` where this does
/// not work them out (see `fold`).
pub(super) fn fold(
    prim: &Prim,
    st: &State,
    ins: &[&Meta],
    vals: &[Option<&[i128]>],
    outs: &[&Meta],
) -> Option<Vec<i128>> {
    let f = prim.fold?;
    let out = outs.first()?;
    if outs.len() != 1
        || int_bounds(out.dtype).is_none()
        || fold::elems(&out.shape) as u64 > MAX_FOLD
    {
        return None;
    }
    f(&Known { st, ins, vals, out })
}

#[cfg(test)]
mod tests;
