//! Constant folding: the element values of a small integer output whose inputs' values the
//! file fixes, as MLX's CPU kernels compute them. This makes index arrays that the graph
//! derives from constants alone (clamping, wrapping negative indices) as checkable as the
//! constants. Each primitive that folds names its rule in its descriptor (`Prim::fold`).

use super::values::to_dtype;
use super::{Dt, Meta, State};

/// Largest integer array whose values are worked out from the file (`fold`).
pub(in crate::export::mlxfn_check) const MAX_FOLD: u64 = 1 << 16;

/// A primitive whose single integer output is small enough to fold, with its inputs' values
/// where the file fixes them (`vals[i]`, row-major).
pub(super) struct Known<'a> {
    pub(super) st: &'a State,
    pub(super) ins: &'a [&'a Meta],
    pub(super) vals: &'a [Option<&'a [i128]>],
    pub(super) out: &'a Meta,
}

impl<'a> Known<'a> {
    pub(super) fn first(&self) -> Option<&'a [i128]> {
        self.vals.first().copied().flatten()
    }

    pub(super) fn at(&self, i: usize) -> Option<&'a [i128]> {
        self.vals.get(i).copied().flatten()
    }

    pub(super) fn signed(&self) -> bool {
        self.ins.first().is_some_and(|m| m.dtype.is_signed_int())
    }

    pub(super) fn dtype(&self) -> Dt {
        self.out.dtype
    }

    /// The first input's values, each mapped by `f`.
    pub(super) fn map(&self, f: impl Fn(i128) -> i128) -> Option<Vec<i128>> {
        Some(self.first()?.iter().map(|&v| f(v)).collect())
    }

    /// An elementwise op of the first two inputs (of one shape: `binary_same` checked it),
    /// converted to the output dtype; `f` gives `None` where the result is left unknown.
    pub(super) fn binary(&self, f: impl Fn(i128, i128) -> Option<i128>) -> Option<Vec<i128>> {
        let (b, a) = (self.at(1)?, self.first()?);
        let d = self.out.dtype;
        a.iter()
            .zip(b)
            .map(|(&x, &y)| f(x, y).map(|v| to_dtype(v, d)))
            .collect()
    }
}

pub(super) fn elems(shape: &[i32]) -> usize {
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

/// The first input's values, unchanged in row-major order (a reshape, a copy).
pub(super) fn same(k: &Known) -> Option<Vec<i128>> {
    Some(k.first()?.to_vec())
}

pub(super) fn broadcast(k: &Known) -> Option<Vec<i128>> {
    let a = k.first()?;
    Some(
        broadcast_map(&k.ins[0].shape, &k.out.shape)
            .into_iter()
            .map(|i| a[i])
            .collect(),
    )
}

pub(super) fn transpose(k: &Known) -> Option<Vec<i128>> {
    let a = k.first()?;
    let mut strides = vec![0usize; k.ins[0].ndim()];
    let mut stride = 1;
    for (d, &n) in k.ins[0].shape.iter().enumerate().rev() {
        strides[d] = stride;
        stride *= n as usize;
    }
    let strides: Vec<usize> =
        k.st.ints(0)
            .iter()
            .map(|&ax| strides[ax as usize])
            .collect();
    Some(
        gather_map(&k.out.shape, &strides)
            .into_iter()
            .map(|i| a[i])
            .collect(),
    )
}
