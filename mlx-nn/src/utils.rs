//! Python's `mlx.nn.utils`: [`value_and_grad`] of a model with frozen parameters, gradient
//! [`checkpoint`]ing of a module, averaging gradients over a distributed group
//! ([`average_gradients`], data parallelism) and clipping gradients sharded over one
//! ([`clip_grad_norm_sharded`]). (`clip_grad_norm` is in `mlx-optimizers`, where Python's
//! `mlx.optimizers` has it too.) The crate root re-exports `value_and_grad` and
//! `average_gradients`, as `mlx.nn` does.

use mlx_rs::distributed::{self, Group};
use mlx_rs::{ops, transforms, with_stream, Array, Error, Result, Stream};
use mlx_tree::{tree_flatten, tree_leaves, tree_map, tree_unflatten, TreeNode};

use crate::Module;

// ---------------------------------------------------------------------------------------------
// value_and_grad

/// `value_and_grad` with respect to the *trainable* parameters of a model (Python:
/// `nn.value_and_grad(model, fn)`): [`mlx_tree::value_and_grad`] — same call, same result —
/// except that frozen parameters are held constant and get zero gradients (optimizers skip
/// them anyway), broadcast views of one zero that hold no memory of their size.
///
/// `fun(&model, &args)` returns a tree whose first leaf is the scalar loss (`Array`, or
/// `(loss, aux)`); the returned function gives `(fun(model, args), grads)` with `grads` of the
/// model's own type. See the crate docs for which `value_and_grad` to use when.
///
/// ```
/// use mlx_nn::{value_and_grad, Forward, Linear, Module};
/// use mlx_rs::{ops, Array};
/// let mut model = Linear::new(3, 2, true)?;
/// model.freeze(Some(&["bias"]))?;
/// let x = ops::ones(&[4, 3], None)?;
/// let loss_fn = |m: &Linear, x: &Array| m.forward(x)?.square()?.mean(None, false);
/// let (loss, grads) = value_and_grad(loss_fn)(&model, &x)?;
/// assert_eq!(grads.weight.shape(), &[2, 3]);
/// assert_eq!(grads.bias.unwrap().abs()?.sum(None, false)?.item::<f32>()?, 0.0); // frozen
/// assert!(loss.item::<f32>()? >= 0.0);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
///
/// A frozen base's gradients take no memory when evaluated (a doc test runs in a process of
/// its own, so MLX's counter of live bytes sees this computation alone):
///
/// ```
/// use mlx_nn::{value_and_grad, Forward, Linear, Module};
/// use mlx_rs::{memory, ops, Array};
/// let mut model = Linear::new(1024, 1024, true)?; // a 4 MB float32 weight
/// model.freeze(Some(&["weight"]))?;
/// let x = ops::ones(&[1, 1024], None)?;
/// mlx_rs::eval([&model.weight, model.bias.as_ref().unwrap(), &x])?;
/// let before = memory::get_active_memory()?;
/// let loss_fn = |m: &Linear, x: &Array| m.forward(x)?.sum(None, false);
/// let (loss, grads) = value_and_grad(loss_fn)(&model, &x)?;
/// mlx_rs::eval([&loss, &grads.weight, grads.bias.as_ref().unwrap()])?;
/// assert!(memory::get_active_memory()?.saturating_sub(before) < 1 << 20);
/// assert_eq!(grads.weight.shape(), &[1024, 1024]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn value_and_grad<'f, M, A, O, F>(fun: F) -> impl Fn(&M, &A) -> Result<(O, M)> + 'f
where
    M: Module,
    A: TreeNode,
    O: TreeNode,
    F: Fn(&M, &A) -> Result<O> + 'f,
{
    move |model: &M, args: &A| {
        let mask = model.trainable_mask()?;
        if mask.iter().all(|t| *t) {
            return mlx_tree::value_and_grad(&fun)(model, args);
        }
        let (leaves, def) = tree_flatten(model)?;
        let leaves: Vec<Array> = leaves.into_iter().cloned().collect();
        let trainable: Vec<Array> = leaves
            .iter()
            .zip(&mask)
            .filter(|(_, t)| **t)
            .map(|(a, _)| a.clone())
            .collect();
        // Every leaf of the model, taking the trainable ones from `values` in order.
        let merge = |values: Vec<Array>, frozen: &dyn Fn(&Array) -> Result<Array>| {
            let mut it = values.into_iter();
            leaves
                .iter()
                .zip(&mask)
                .map(|(a, t)| match t {
                    true => it
                        .next()
                        .ok_or_else(|| Error::InvalidArgument("missing gradient".into())),
                    false => frozen(a),
                })
                .collect::<Result<Vec<Array>>>()
        };
        // A broadcast zero: a view of one element, so the gradients of a large frozen base
        // cost no memory when evaluated (Python leaves them out of the tree altogether).
        let zeros = |a: &Array| {
            let zero = Array::from_scalar(0.0f32).astype(a.dtype())?;
            ops::broadcast_to(&zero, a.shape())
        };
        if trainable.is_empty() {
            let out = fun(model, args)?;
            return Ok((out, tree_unflatten(&def, merge(Vec::new(), &zeros)?)?));
        }
        let (out, grads) = mlx_tree::value_and_grad(|t: &Vec<Array>, a: &A| {
            let m: M = tree_unflatten(&def, merge(t.clone(), &|a| Ok(a.clone()))?)?;
            fun(&m, a)
        })(&trainable, args)?;
        Ok((out, tree_unflatten(&def, merge(grads, &zeros)?)?))
    }
}

// ---------------------------------------------------------------------------------------------
// checkpoint

/// Calls `fun(module, inputs)` under MLX's `checkpoint` transform (Python:
/// `nn.utils.checkpoint(module, fn)(*inputs)`): a gradient through the call keeps none of its
/// intermediate values for the backward pass and recomputes them from the inputs instead,
/// trading compute for memory. The values are the plain call's.
///
/// The module's parameters are inputs of the checkpointed function, so gradients reach them,
/// and the module is rebuilt from them inside (Python passes its trainable parameters; here
/// every parameter goes, frozen ones too, whose gradients nobody reads).
///
/// ```
/// use mlx_nn::{utils, Forward, Linear};
/// use mlx_rs::ops;
/// let layer = Linear::new(4, 2, None)?;
/// let x = ops::ones(&[3, 4], None)?;
/// let y = utils::checkpoint(&layer, &[x.clone()], |l: &Linear, xs| Ok(vec![l.forward(&xs[0])?]))?;
/// assert!(ops::array_equal(&y[0], &layer.forward(&x)?, false)?.item::<bool>()?);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn checkpoint<M, F>(module: &M, inputs: &[Array], fun: F) -> Result<Vec<Array>>
where
    M: TreeNode,
    F: Fn(&M, &[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
{
    let (leaves, def) = tree_flatten(module)?;
    let num_params = leaves.len();
    let mut args: Vec<Array> = leaves.into_iter().cloned().collect();
    args.extend(inputs.iter().cloned());
    let checkpointed = transforms::checkpoint(move |args: &[Array]| {
        if args.len() < num_params {
            return Err(Error::InvalidArgument(format!(
                "[checkpoint] {} inputs for a module of {num_params} parameters",
                args.len()
            )));
        }
        let (params, rest) = args.split_at(num_params);
        let module: M = tree_unflatten(&def, params.to_vec())?;
        fun(&module, rest)
    })?;
    checkpointed.call(&args)
}

// ---------------------------------------------------------------------------------------------
// average_gradients
//
// Data parallelism: each process computes the gradients of its own share of a batch, and
// averaging them over the group gives every process the gradient of the whole batch.

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

// ---------------------------------------------------------------------------------------------
// clip_grad_norm_sharded

/// Clips gradients that are sharded over a group by their global L2 norm; returns the
/// clipped shards and the global norm (Python: `nn.utils.clip_grad_norm_sharded(gradients,
/// max_norm, group=None)`).
///
/// Each process holds a shard of the gradients (as [`fully_shard`](crate::fully_shard) leaves them), so the
/// squared norms of the local shards are summed over the group (`all_sum`) before the
/// square root; every process then scales its shard by `min(max_norm / (norm + 1e-6), 1)`,
/// the same factor on every process. It is `clip_grad_norm` of the whole gradients, computed
/// in pieces. As in Python, `max_norm` is not checked (Python's `clip_grad_norm` rejects a
/// negative one; this function does not).
///
/// ```
/// use mlx_nn::utils::clip_grad_norm_sharded;
/// use mlx_rs::Array;
/// let grads = vec![Array::from_slice(&[3.0f32, 4.0], &[2])?];
/// let (clipped, norm) = clip_grad_norm_sharded(&grads, 1.0, None)?; // one process
/// assert!((norm.item::<f32>()? - 5.0).abs() < 1e-6);
/// assert!((clipped[0].to_vec::<f32>()?[1] - 0.8).abs() < 1e-6);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn clip_grad_norm_sharded<'a, T: TreeNode>(
    gradients: &T,
    max_norm: f32,
    group: impl Into<Option<&'a Group>>,
) -> Result<(T, Array)> {
    // Python: tree_reduce(lambda acc, g: acc + g.square().sum(), gradients, 0.0), in flatten
    // order, as `clip_grad_norm` sums.
    let mut local = Array::from(0.0f32);
    for g in tree_leaves(gradients) {
        local = ops::add(&local, &ops::square(g)?.sum(None, false)?)?;
    }
    let global = distributed::all_sum(&local, group.into())?;
    let norm = ops::sqrt(&global)?;
    let normalizer = ops::minimum(&ops::divide(max_norm, &ops::add(&norm, 1e-6f32)?)?, 1.0f32)?;
    let clipped = tree_map(|g| ops::multiply(g, &normalizer), gradients)?;
    Ok((clipped, norm))
}
