//! Python's `mlx.nn.utils`: gradient checkpointing of a module, averaging gradients over a
//! distributed group, and clipping gradients sharded over one. (`clip_grad_norm` is in
//! `mlx-optimizers`, where Python's `mlx.optimizers` has it too.)

use mlx_rs::{transforms, Array, Error, Result};
use mlx_tree::{tree_flatten, tree_unflatten, TreeNode};

pub use crate::distributed::{average_gradients, AverageGradientsOptions};
pub use crate::sharded::clip_grad_norm_sharded;

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
