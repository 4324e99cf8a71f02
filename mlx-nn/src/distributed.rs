//! Data-parallel training (Python: `mlx.nn.average_gradients`): each process computes the
//! gradients of its own share of a batch, and averaging them over the group gives every
//! process the gradient of the whole batch.

use mlx_rs::distributed::{self, Group};
use mlx_rs::{ops, Array, Result};
use mlx_rs::{with_stream, Stream};
use mlx_tree::{tree_flatten, tree_map, tree_unflatten, TreeNode};

mlx_rs::options! {
    /// The keyword arguments of [`average_gradients`], with Python's defaults
    /// (`group=None`, `all_reduce_size=32 * 1024**2`, `communication_stream=None`).
    #[derive(Debug, Clone, Copy)]
    pub struct AverageGradientsOptions<'a> {
        /// The processes to average over; `None` is the global group.
        group: opt &'a Group = None,
        /// Gradients are packed into buffers of at least this many bytes, one `all_sum`
        /// each, which uses the network far better than one small message per array; 0 or
        /// less sends each array alone.
        all_reduce_size: plain i64 = 32 * 1024 * 1024,
        /// The stream the communication runs on; `None` is the current stream.
        communication_stream: opt &'a Stream = None,
    }
}

/// The mean of `gradients` over the processes of a group (Python:
/// `nn.average_gradients(gradients, group=None, all_reduce_size=32 * 1024**2,
/// communication_stream=None)`). Every process must pass a tree of the same structure,
/// shapes and dtypes. Alone in its group, a process gets its gradients back.
///
/// As in Python, arrays are packed in flattening order into groups of at least
/// `all_reduce_size` bytes, each group summed with one `all_sum` and divided by the group
/// size; trees of mixed dtypes are sent array by array.
///
/// ```
/// use mlx_nn::{average_gradients, AverageGradientsOptions, Linear};
/// let layer = Linear::new(4, 2, None)?;
/// let averaged = average_gradients(&layer, AverageGradientsOptions::default())?;
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn average_gradients<T: TreeNode>(
    gradients: &T,
    options: AverageGradientsOptions<'_>,
) -> Result<T> {
    let global;
    let group = match options.group {
        Some(g) => g,
        None => {
            global = distributed::init(false, None)?;
            &global
        }
    };
    let n = group.size();
    if n == 1 {
        return tree_map(|g| Ok(g.clone()), gradients);
    }
    let communicate = |x: &Array| -> Result<Array> {
        let summed = match options.communication_stream {
            Some(s) => with_stream(s, || distributed::all_sum(x, Some(group)))?,
            None => distributed::all_sum(x, Some(group))?,
        };
        ops::divide(&summed, n)
    };
    let (leaves, def) = tree_flatten(gradients)?;
    let Some(first) = leaves.first() else {
        return tree_map(|g| Ok(g.clone()), gradients);
    };
    let dtype = first.dtype();
    if options.all_reduce_size <= 0 || leaves.iter().any(|g| g.dtype() != dtype) {
        return tree_map(communicate, gradients);
    }
    let mut averaged = Vec::with_capacity(leaves.len());
    for pack in packs(&leaves, dtype.size() as i64, options.all_reduce_size) {
        let flat = pack
            .iter()
            .map(|g| g.reshape(&[-1]))
            .collect::<Result<Vec<_>>>()?;
        let big = communicate(&ops::concatenate(&flat, 0)?)?;
        let mut offsets = Vec::with_capacity(pack.len());
        let mut at = 0i64;
        for g in &pack[..pack.len() - 1] {
            at += g.size() as i64;
            offsets.push(i32::try_from(at).map_err(|_| {
                mlx_rs::Error::InvalidArgument(format!(
                    "[average_gradients] a pack of {at} elements is more than an all_sum takes; \
                     lower all_reduce_size"
                ))
            })?);
        }
        for (part, g) in ops::split(&big, offsets, 0)?.iter().zip(&pack) {
            averaged.push(part.reshape(g.shape())?);
        }
    }
    tree_unflatten(&def, averaged)
}

/// The arrays in order, cut after each array that brings a pack to `limit` bytes or more
/// (Python's `_group_by_size`).
fn packs<'a>(leaves: &[&'a Array], itemsize: i64, limit: i64) -> Vec<Vec<&'a Array>> {
    let mut out = Vec::new();
    let mut pack = Vec::new();
    let mut bytes = 0i64;
    for &g in leaves {
        pack.push(g);
        bytes = bytes.saturating_add((g.size() as i64).saturating_mul(itemsize));
        if bytes >= limit {
            out.push(std::mem::take(&mut pack));
            bytes = 0;
        }
    }
    if !pack.is_empty() {
        out.push(pack);
    }
    out
}
