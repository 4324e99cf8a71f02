//! A primitive's decoded state and typed access to its fields.

use super::super::Val;
use super::Dt;

/// A primitive's decoded state, in `state()` order.
///
/// The accessors panic on a field of another type: the walker decodes the state from the
/// primitive's own layout, so a mismatch is a bug in the descriptor, never bad input (the
/// table tests run every check against its layout).
#[derive(Debug)]
pub(in crate::export) struct State(pub(in crate::export::mlxfn_check) Vec<Val>);

impl State {
    pub(super) fn int(&self, k: usize) -> i32 {
        match &self.0[k] {
            Val::I(v) => *v,
            v => unreachable!("state field {k} is {v:?}, not an int"),
        }
    }

    pub(super) fn flag(&self, k: usize) -> bool {
        match &self.0[k] {
            Val::B(v) => *v,
            v => unreachable!("state field {k} is {v:?}, not a bool"),
        }
    }

    pub(super) fn float(&self, k: usize) -> f64 {
        match &self.0[k] {
            Val::F(v) => *v,
            v => unreachable!("state field {k} is {v:?}, not a float"),
        }
    }

    pub(super) fn uint(&self, k: usize) -> u64 {
        match &self.0[k] {
            Val::U(v) => *v,
            v => unreachable!("state field {k} is {v:?}, not a size_t"),
        }
    }

    pub(super) fn dtype(&self, k: usize) -> Dt {
        match &self.0[k] {
            Val::D(v) => *v,
            v => unreachable!("state field {k} is {v:?}, not a dtype"),
        }
    }

    pub(super) fn ints(&self, k: usize) -> &[i32] {
        match &self.0[k] {
            Val::Is(v) => v,
            v => unreachable!("state field {k} is {v:?}, not a vector of int"),
        }
    }

    pub(super) fn longs(&self, k: usize) -> &[i64] {
        match &self.0[k] {
            Val::Ls(v) => v,
            v => unreachable!("state field {k} is {v:?}, not a vector of int64"),
        }
    }

    pub(super) fn uints(&self, k: usize) -> &[u64] {
        match &self.0[k] {
            Val::Us(v) => v,
            v => unreachable!("state field {k} is {v:?}, not a vector of size_t"),
        }
    }

    pub(super) fn bytes(&self, k: usize) -> &[u8] {
        match &self.0[k] {
            Val::S(v) => v,
            v => unreachable!("state field {k} is {v:?}, not a string"),
        }
    }
}
