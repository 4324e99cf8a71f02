//! The rows of a batch's cache: each row a sequence of its own, at its own position. A
//! sequence's one-row cache is written into a row of a batch ([`write_row`]) and read back out
//! of it ([`read_row`]); a batch whose rows start at different positions keeps an offset per
//! row ([`set_row_offsets`]). The serving engine's slots and a static batch of prompts of
//! different lengths over sliding-window layers both join rows this way.

use mlx_rs::ops;
use mlx_rs::Array;
use mlx_tree::{tree_leaves, TreeNode};

use crate::cache::{Cache, LayerCache};
use crate::error::{Error, Result};

/// Gives every key/value and sliding-window layer an offset per row (their
/// `set_row_offsets`), so rows at different positions and ring phases share one step.
pub fn set_row_offsets(cache: &mut Cache) -> Result<()> {
    for layer in cache.iter_mut() {
        layer.try_for_each_mut(&mut |c| match c {
            LayerCache::Kv(kv) => kv.set_row_offsets(),
            LayerCache::Rotating(ring) => ring.set_row_offsets(),
            _ => Ok(()),
        })?;
    }
    Ok(())
}

/// Writes a one-sequence cache (`single`, of the layout `model.make_cache(1, capacity)`
/// gives, buffers of the slot's capacity) into row `row` of a slot batch's cache: every
/// leaf, so keys, values, offset and a recurrent layer's state all become the sequence's,
/// and nothing of the row's earlier request survives. The shapes are checked leaf by leaf.
pub fn write_row(batch: &mut Cache, row: usize, single: &Cache) -> Result<()> {
    let start = Array::from_slice(&[row as i32], &[1])?;
    map_leaves(
        batch,
        single,
        "the slot batch's",
        "the sequence's",
        |i, dst, src| {
            let update = if src.ndim() + 1 == dst.ndim() {
                ops::expand_dims(src, 0)?
            } else {
                src.clone()
            };
            let (u, d) = (update.shape(), dst.shape());
            if u.len() != d.len() || u.first() != Some(&1) || u[1..] != d[1..] {
                return Err(Error::InvalidArgument(format!(
                    "cache leaf {i}: a sequence's {:?} does not fit a row of the slot batch's {:?}",
                    src.shape(),
                    d
                )));
            }
            Ok(ops::slice_update(
                dst,
                &update.astype(dst.dtype())?,
                &start,
                &[0],
            )?)
        },
    )
}

/// Reads row `row` of a slot batch's cache into `single`, a one-sequence cache of the
/// model's layout (`make_cache(1, positions)`): every leaf, cut to `single`'s shape, so a
/// key/value buffer keeps its first positions (a row holds position `i` at index `i`) and
/// the sequence continues from `single` as from a prefill. The inverse of [`write_row`];
/// `single`'s positions must cover the row's offset.
pub fn read_row(batch: &Cache, row: usize, single: &mut Cache) -> Result<()> {
    map_leaves(
        single,
        batch,
        "the sequence's",
        "the slot batch's",
        |i, dst, src| {
            let r = if dst.ndim() + 1 == src.ndim() {
                src.index(row as i32)?
            } else {
                src.index(row as i32..row as i32 + 1)?
            };
            let (r_shape, d) = (r.shape(), dst.shape());
            if r_shape.len() != d.len() || r_shape.iter().zip(d).any(|(n, k)| n < k) {
                return Err(Error::InvalidArgument(format!(
                "cache leaf {i}: a row of the slot batch's {:?} does not cover a sequence's {d:?}",
                src.shape()
            )));
            }
            let r = if r_shape == d {
                r
            } else {
                let axes: Vec<i32> = (0..d.len() as i32).collect();
                let start = Array::from_slice(&vec![0i32; d.len()], &[d.len() as i32])?;
                ops::slice(&r, &start, &axes, d)?
            };
            Ok(r.astype(dst.dtype())?)
        },
    )
}

/// Replaces each leaf of `dst` with `f(i, leaf, the i-th leaf of src)`, the two caches'
/// leaves paired in flatten order; the first error stops it, and caches of different leaf
/// counts (named `dst_name` and `src_name` in the message) are an error.
fn map_leaves(
    dst: &mut Cache,
    src: &Cache,
    dst_name: &str,
    src_name: &str,
    mut f: impl FnMut(usize, &Array, &Array) -> Result<Array>,
) -> Result<()> {
    let sources = tree_leaves(src);
    let mut count = 0usize;
    let mut failure: Option<Error> = None;
    dst.leaves_mut(&mut |leaf: &mut Array| {
        let i = count;
        count += 1;
        if failure.is_some() {
            return;
        }
        let Some(source) = sources.get(i) else {
            return;
        };
        match f(i, leaf, source) {
            Ok(a) => *leaf = a,
            Err(e) => failure = Some(e),
        }
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    if count != sources.len() {
        return Err(Error::InvalidArgument(format!(
            "{src_name} cache has {} arrays but {dst_name} {count}",
            sources.len()
        )));
    }
    Ok(())
}
