//! Range propagation: bounds on the integer outputs of a primitive, from bounds on its
//! inputs where known (one entry per output). Only ops whose bounds are sure to occur give
//! any: indices that sort or reduce an axis, `arange`, constants, and what moves, selects or
//! joins such values. Each primitive that propagates bounds names its rule in its descriptor
//! (`Prim::range`).

use super::{Meta, Range, State};

/// A primitive whose outputs are all of integer or bool dtypes, with what is known of its
/// inputs' values.
pub(super) struct Bounds<'a> {
    pub(super) st: &'a State,
    pub(super) ins: &'a [&'a Meta],
    pub(super) ranges: &'a [Option<Range>],
    /// `args[i]` says whether input `i` is a function argument, moved or reshaped: its values
    /// can be anything.
    pub(super) args: &'a [bool],
    pub(super) outs: &'a [&'a Meta],
}

impl Bounds<'_> {
    pub(super) fn first(&self) -> Option<Range> {
        self.ranges.first().copied().flatten()
    }

    /// The first input's bounds where a part of it keeps them: a part of an array reaches the
    /// bounds only if any element can.
    pub(super) fn part(&self) -> Option<Range> {
        self.first().filter(|r| r.free)
    }

    /// `r` for the first output, nothing for the others.
    pub(super) fn one(&self, r: Option<Range>) -> Vec<Option<Range>> {
        let mut v = vec![r];
        v.resize(self.outs.len(), None);
        v
    }

    /// Indices into axis `ax` of the first input.
    pub(super) fn axis_len(&self, ax: i32) -> Option<Range> {
        let n = self
            .ins
            .first()?
            .shape
            .get(usize::try_from(ax).ok()?)
            .copied()?;
        (n > 0).then_some(Range {
            lo: 0,
            hi: i128::from(n) - 1,
            free: true,
        })
    }
}

/// The first input's bounds, for ops that move, repeat or reorder all of its values.
pub(super) fn same(b: &Bounds) -> Vec<Option<Range>> {
    b.one(b.first())
}

/// The first input's bounds, for ops that take a part of its values.
pub(super) fn part(b: &Bounds) -> Vec<Option<Range>> {
    b.one(b.part())
}
