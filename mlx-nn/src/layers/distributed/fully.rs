//! Fully sharded data parallelism (Python: `nn.FullyShardedModule` and `nn.fully_shard`).
//! [`FullyShardedModule`]'s docs say how Python's dynamic wrapper maps to Rust types.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use mlx_rs::distributed::{self, Group};
use mlx_rs::transforms::{custom_vjp, CustomFunction};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::serde_json::Value as Json;
use mlx_tree::{
    tree_flatten, tree_structure, tree_unflatten, Flattener, NodeKind, NodeRef, StaticData,
    TreeDef, TreeNode, Unflattener,
};

use super::{invalid, resolve_group, shard_array, ShardGroup, ShardSpec};
use crate::{Embedding, Forward, MaybeQuantizedEmbedding, QuantizedEmbedding};

/// The struct name a [`FullyShardedModule`] flattens to (Python's class name).
const NAME: &str = "FullyShardedModule";

/// The static field that tells a [`MaybeFullySharded::Sharded`] from a
/// [`MaybeFullySharded::Unsharded`] whose module is itself a `FullyShardedModule`: both
/// flatten to a `FullyShardedModule` node, and only this flag, set when the enum writes the
/// node, is different.
const HELD: &str = "held_by_maybe";

// ---------------------------------------------------------------------------------------------
// The layout: what was sharded, as static data

/// What a [`FullyShardedModule`] sharded: its group, the sharded parameters' paths (relative
/// to the module, Python's `_paths`) and full shapes, and the compute dtype. Static tree data
/// behind one `Arc`, so flattening the module copies none of it.
#[derive(Clone)]
struct Layout(Arc<LayoutData>);

struct LayoutData {
    group: ShardGroup,
    paths: Vec<String>,
    full_shapes: Vec<Vec<i32>>,
    compute_dtype: Option<Dtype>,
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Layout")
            .field("group", &self.0.group)
            .field("paths", &self.0.paths)
            .field("full_shapes", &self.0.full_shapes)
            .field("compute_dtype", &self.0.compute_dtype)
            .finish()
    }
}

impl StaticData for Layout {
    fn static_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.0.group.static_eq(&other.0.group)
                && self.0.paths == other.0.paths
                && self.0.full_shapes == other.0.full_shapes
                && self.0.compute_dtype == other.0.compute_dtype)
    }

    fn static_hash<H: Hasher>(&self, state: &mut H) {
        self.0.group.static_hash(state);
        self.0.paths.hash(state);
        self.0.full_shapes.hash(state);
        self.0.compute_dtype.hash(state);
    }

    fn to_json(&self) -> Result<Json> {
        self.0.group.to_json()
    }

    fn from_json(json: &Json) -> Result<Self> {
        Err(invalid(format!(
            "static data {json} cannot be read back as a FullyShardedModule's layout (it holds \
             a live communicator)"
        )))
    }
}

// ---------------------------------------------------------------------------------------------
// Gathering

/// The indices of `arrays` grouped by dtype, the groups in order of first appearance.
fn by_dtype(arrays: &[Array]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Dtype, Vec<usize>)> = Vec::new();
    for (i, a) in arrays.iter().enumerate() {
        match groups.iter_mut().find(|(d, _)| *d == a.dtype()) {
            Some((_, members)) => members.push(i),
            None => groups.push((a.dtype(), vec![i])),
        }
    }
    groups.into_iter().map(|(_, m)| m).collect()
}

/// The element count of `a` as the `i32` MLX's shapes take.
fn size_i32(a: &Array) -> Result<i32> {
    i32::try_from(a.size())
        .map_err(|_| invalid(format!("[fully_shard] {} elements is too many", a.size())))
}

/// Splits `a` along axis 1 into parts of the given widths.
fn split_widths(a: &Array, widths: &[i32]) -> Result<Vec<Array>> {
    if widths.len() == 1 {
        return Ok(vec![a.clone()]);
    }
    let mut at = 0i64;
    let mut indices = Vec::with_capacity(widths.len() - 1);
    for w in &widths[..widths.len() - 1] {
        at += i64::from(*w);
        indices.push(
            i32::try_from(at)
                .map_err(|_| invalid(format!("[fully_shard] {at} elements is too many")))?,
        );
    }
    ops::split(a, indices, 1)
}

/// Python's `_make_gather_fn`: a custom function from the shards (in `paths` order) to the
/// full parameters, whose vector-Jacobian product gives each shard the mean over the group
/// of its slice of the full gradient.
fn gather_function(layout: &Layout) -> Result<CustomFunction> {
    let forward_layout = layout.clone();
    let backward_layout = layout.clone();
    custom_vjp(
        move |shards: &[Array]| {
            let l = &forward_layout.0;
            let group = l.group.group();
            let cast: Vec<Array> = shards
                .iter()
                .map(|s| match l.compute_dtype {
                    Some(d) if s.dtype() != d && s.dtype().is_floating() => s.astype(d),
                    _ => Ok(s.clone()),
                })
                .collect::<Result<_>>()?;
            let mut fulls: Vec<Option<Array>> = vec![None; cast.len()];
            for members in by_dtype(&cast) {
                let widths = members
                    .iter()
                    .map(|&i| size_i32(&cast[i]))
                    .collect::<Result<Vec<i32>>>()?;
                let rows = members
                    .iter()
                    .zip(&widths)
                    .map(|(&i, &w)| cast[i].reshape(&[1, w]))
                    .collect::<Result<Vec<Array>>>()?;
                let gathered = distributed::all_gather(&ops::concatenate(&rows, 1)?, Some(group))?;
                for (part, &i) in split_widths(&gathered, &widths)?.iter().zip(&members) {
                    // Contiguous, as the unsharded parameter is: a part can be a strided view
                    // of the gathered buffer, and MLX's `addmm` with a strided weight rounds
                    // differently (Python's wrapper keeps the views, and its calls differ from
                    // the unsharded module's in the last bits).
                    fulls[i] = Some(ops::contiguous(&part.reshape(&l.full_shapes[i])?, None)?);
                }
            }
            fulls
                .into_iter()
                .map(|f| f.ok_or_else(|| invalid("[fully_shard] a shard was not gathered".into())))
                .collect()
        },
        move |shards: &[Array], cotangents: &[Array], _outputs: &[Array]| {
            let group = backward_layout.0.group.group();
            let (n, rank) = (group.size(), group.rank());
            let mut grads: Vec<Option<Array>> = vec![None; shards.len()];
            for members in by_dtype(cotangents) {
                let widths = members
                    .iter()
                    .map(|&i| size_i32(&shards[i]))
                    .collect::<Result<Vec<i32>>>()?;
                // Row r of each full cotangent, reshaped to (n, shard size), is rank r's slice.
                let rows = members
                    .iter()
                    .zip(&widths)
                    .map(|(&i, &w)| cotangents[i].reshape(&[n, w]))
                    .collect::<Result<Vec<Array>>>()?;
                let summed = distributed::all_sum(&ops::concatenate(&rows, 1)?, Some(group))?;
                let mine = ops::divide(&summed.index(rank..rank + 1)?, n)?;
                for (part, &i) in split_widths(&mine, &widths)?.iter().zip(&members) {
                    let shard = &shards[i];
                    grads[i] = Some(part.reshape(shard.shape())?.astype(shard.dtype())?);
                }
            }
            grads
                .into_iter()
                .map(|g| g.ok_or_else(|| invalid("[fully_shard] a shard got no gradient".into())))
                .collect()
        },
    )
}

// ---------------------------------------------------------------------------------------------
// FullyShardedModule

/// A module whose parameters are split over a group (Python: `nn.FullyShardedModule(module,
/// group=None, compute_dtype=None)`): each process holds a slice along axis 0 of every
/// parameter, gathers the full parameters (`all_gather`) for each call, and gets as
/// gradient of its slice the mean over the group of that slice of the full gradient. So
/// during training each process stores and updates only its own slice, and processes that
/// train on different data average their gradients as data-parallel training does.
///
/// Every parameter of the module is sharded, frozen ones included, except those of
/// `FullyShardedModule`s nested in it (they shard their own); each must have a first axis
/// that divides by the group size. With `compute_dtype`, the gathered floating-point
/// parameters are cast to it for the call (and their gradients back to the shards' dtype).
/// The module is held in [`module`](Self::module), under Python's paths (`module.<path>`).
///
/// [`fully_shard`] is the usual way to make one.
///
/// ```
/// use mlx_nn::{FullyShardedModule, Forward, Linear, Module};
/// use mlx_rs::{distributed, ops};
/// let group = distributed::init(false, None)?;
/// let layer = Linear::new(4, 8, true)?;
/// let full = layer.forward(&ops::ones(&[2, 4], None)?)?;
/// let sharded = FullyShardedModule::new(layer, &group, None)?;
/// assert_eq!(sharded.module.weight.shape(), &[8 / group.size(), 4]);
/// let names: Vec<String> = sharded.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names, ["module.weight", "module.bias"]);
/// let y = sharded.forward(&ops::ones(&[2, 4], None)?)?;
/// assert!(ops::array_equal(&y, &full, false)?.item::<bool>()?);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
///
/// # How Python's dynamic wrapper maps to Rust
///
/// Python's `FullyShardedModule` wraps any module object, shards its parameters in place,
/// and on every call swaps the gathered full parameters into the module, calls it, and swaps
/// the shards back (`try`/`finally`). A Rust module is a typed value, so:
///
/// - [`FullyShardedModule<M>`] takes the module by value and holds it with its shards in the
///   public field `module` (Python: `self.module`, under the same parameter paths
///   `module.<path>`). A call builds a separate gathered copy of `M` and calls that
///   ([`FullyShardedModule::gathered_call`]); the held module never holds full parameters, so
///   an error or a panic during the call cannot leave them behind.
/// - Python forwards `__call__(*args, **kwargs)` and `as_linear`; here [`Forward`] (one input)
///   and `as_linear` of embeddings are forwarded, and `gathered_call(|m| ...)` calls anything
///   else on the gathered module (a layer with several inputs, a method of your model).
/// - [`fully_shard`] returns either the wrapper or the module unchanged (a group of one
///   process, a module without parameters, a module already fully sharded), as Python does;
///   one Rust return type holds both: [`MaybeFullySharded<M>`], transparent in the tree, so
///   the parameter paths are Python's in either case. A model declares the fields it shards
///   as `MaybeFullySharded<Block>` (or `FullyShardedModule<Block>` when it always shards).
/// - Python leaves alone the parameters of `FullyShardedModule`s nested in the module (they
///   shard their own); here those are the struct nodes named `FullyShardedModule` below the
///   module's root, which is what these types flatten to.
///
/// Two differences in what is computed, both in the backward pass or in mixed dtypes only:
///
/// - The gradient of each shard is the mean over the group of the full gradient's slice, as
///   in Python; Python gets it with `sum_scatter`, which MLX 0.32.2's ring and MPI backends do
///   not implement (`[ring] sum_scatter not supported.`), so Python cannot train a
///   `fully_shard`ed model over them. Here the full gradients are summed with `all_sum` and
///   each process keeps its slice: the same values on every backend, for about twice the
///   bytes of a reduce-scatter.
/// - Python concatenates every shard into one buffer for a single `all_gather`, which
///   promotes mixed dtypes to a common one (a bfloat16 parameter next to a float32 one comes
///   back float32; packed `uint32` quantized weights come back as floats, which
///   `quantized_matmul` rejects), and `compute_dtype` casts every shard, integer ones
///   included. Here each dtype is gathered with its own `all_gather` (in order of first
///   appearance), so every parameter keeps its dtype, and `compute_dtype` casts the
///   floating-point shards only. For a model of one floating-point dtype, the usual case,
///   the two are the same.
#[derive(Debug, Clone)]
pub struct FullyShardedModule<M> {
    /// The module, holding this process's shards (Python: `self.module`).
    pub module: M,
    layout: Layout,
}

/// The leaf ranges of the `FullyShardedModule` nodes strictly below the root: parameters a
/// nested wrapper shards itself (Python's `_maybe_shard`).
fn nested_ranges(def: &TreeDef) -> Vec<std::ops::Range<usize>> {
    def.nodes()
        .skip(1)
        .filter(|n| matches!(n.kind(), NodeKind::Struct(NAME)))
        .map(|n| n.leaf_range())
        .collect()
}

impl<M: TreeNode> FullyShardedModule<M> {
    /// Shards `module` over `group` (`None`: the global group) (Python:
    /// `nn.FullyShardedModule(module, group=None, compute_dtype=None)`). Errors, before
    /// anything is sliced, for a scalar parameter or one whose first axis does not divide
    /// by the group size.
    pub fn new<'g>(
        module: M,
        group: impl Into<Option<&'g Group>>,
        compute_dtype: impl Into<Option<Dtype>>,
    ) -> Result<FullyShardedModule<M>> {
        let group = resolve_group(group.into())?;
        let (n, rank) = (group.size(), group.rank());
        let (leaves, def) = tree_flatten(&module)?;
        let nested = nested_ranges(&def);
        let leaf_paths = def.leaf_paths();
        let sharded: Vec<bool> = (0..leaves.len())
            .map(|i| !nested.iter().any(|r| r.contains(&i)))
            .collect();
        // Python checks every parameter before it slices any.
        for ((a, path), _) in leaves
            .iter()
            .zip(&leaf_paths)
            .zip(&sharded)
            .filter(|(_, s)| **s)
        {
            if a.ndim() == 0 {
                return Err(invalid(format!(
                    "Cannot shard parameter '{path}' because it is a scalar."
                )));
            }
            if a.shape()[0] % n != 0 {
                return Err(invalid(format!(
                    "Cannot shard parameter '{path}' with shape {:?} across {n} devices: axis 0 \
                     must be divisible by {n}.",
                    a.shape()
                )));
            }
        }
        let mut paths = Vec::new();
        let mut full_shapes = Vec::new();
        let mut new_leaves = Vec::with_capacity(leaves.len());
        for ((a, path), &shard) in leaves.iter().zip(&leaf_paths).zip(&sharded) {
            if !shard {
                new_leaves.push((*a).clone());
                continue;
            }
            new_leaves.push(shard_array(path, a, &ShardSpec::from(0), n, rank)?);
            paths.push(path.clone());
            full_shapes.push(a.shape().to_vec());
        }
        Ok(FullyShardedModule {
            module: tree_unflatten(&def, new_leaves)?,
            layout: Layout(Arc::new(LayoutData {
                group: ShardGroup::new(group),
                paths,
                full_shapes,
                compute_dtype: compute_dtype.into(),
            })),
        })
    }

    /// The module with its full parameters, gathered from the group (an `all_gather` per
    /// dtype; lazily, like every op).
    fn gathered(&self) -> Result<M> {
        let (leaves, def) = tree_flatten(&self.module)?;
        let mut leaves: Vec<Array> = leaves.into_iter().cloned().collect();
        let layout = &self.layout.0;
        if layout.paths.is_empty() {
            return tree_unflatten(&def, leaves);
        }
        let leaf_paths = def.leaf_paths();
        let index: HashMap<&str, usize> = leaf_paths
            .iter()
            .enumerate()
            .map(|(i, p)| (p.as_str(), i))
            .collect();
        let positions = layout
            .paths
            .iter()
            .map(|p| {
                index.get(p.as_str()).copied().ok_or_else(|| {
                    invalid(format!(
                        "[FullyShardedModule] the module has no parameter `{p}` any more"
                    ))
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        let shards: Vec<Array> = positions.iter().map(|&i| leaves[i].clone()).collect();
        let fulls = gather_function(&self.layout)?.call(&shards)?;
        for (&i, full) in positions.iter().zip(fulls) {
            leaves[i] = full;
        }
        tree_unflatten(&def, leaves)
    }

    /// Calls `f` with the module holding its full parameters, gathered from the group
    /// (Python: `_gathered_call(fn, ...)`, which `__call__` and `as_linear` use). Gradients
    /// through the call reach the shards.
    pub fn gathered_call<R>(&self, f: impl FnOnce(&M) -> Result<R>) -> Result<R> {
        f(&self.gathered()?)
    }

    /// The group the parameters are sharded over.
    pub fn group(&self) -> &Group {
        self.layout.0.group.group()
    }

    /// The dtype the gathered parameters are cast to, if any.
    pub fn compute_dtype(&self) -> Option<Dtype> {
        self.layout.0.compute_dtype
    }

    /// The paths (relative to [`module`](Self::module)) of the sharded parameters, in
    /// flatten order (Python: `_paths`).
    pub fn sharded_paths(&self) -> &[String] {
        &self.layout.0.paths
    }

    /// How many parameters are sharded (Python's `num_sharded_params` in the module's repr).
    pub fn num_sharded_params(&self) -> usize {
        self.layout.0.paths.len()
    }

    fn flatten_as<'a>(&'a self, f: &mut Flattener<'a>, held: bool) {
        f.struct_node(NAME, |f| {
            f.field("module", &self.module);
            f.static_field("layout", &self.layout);
            f.static_field(HELD, &held);
        });
    }
}

impl<M: TreeNode> TreeNode for FullyShardedModule<M> {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        self.flatten_as(f, false);
    }

    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        u.struct_node(NAME, |u| {
            let module = u.field("module")?;
            let layout = u.static_field("layout")?;
            // Either value: a wrapper reads back whoever held it.
            let _held: bool = u.static_field(HELD)?;
            Ok(FullyShardedModule { module, layout })
        })
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        self.module.leaves_mut(f)
    }
}

impl<M: TreeNode + Forward> Forward for FullyShardedModule<M> {
    /// Calls the module with its gathered parameters (Python: `fsdp(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        self.gathered_call(|m| m.forward(x))
    }
}

// ---------------------------------------------------------------------------------------------
// MaybeFullySharded and fully_shard

/// What [`fully_shard`] returns: the module wrapped in a [`FullyShardedModule`], or the
/// module unchanged where Python returns it unchanged. Transparent in the tree, so the
/// parameter paths are Python's either way (`module.<path>` when sharded, `<path>` when not).
#[derive(Debug, Clone)]
pub enum MaybeFullySharded<M> {
    Sharded(FullyShardedModule<M>),
    Unsharded(M),
}

impl<M: TreeNode> MaybeFullySharded<M> {
    /// Calls `f` with the module holding its full parameters: gathered when sharded, the
    /// module itself when not.
    pub fn gathered_call<R>(&self, f: impl FnOnce(&M) -> Result<R>) -> Result<R> {
        match self {
            MaybeFullySharded::Sharded(s) => s.gathered_call(f),
            MaybeFullySharded::Unsharded(m) => f(m),
        }
    }

    /// Whether the module is sharded.
    pub fn is_sharded(&self) -> bool {
        matches!(self, MaybeFullySharded::Sharded(_))
    }
}

/// Whether `node` is a `FullyShardedModule` written by [`MaybeFullySharded::Sharded`].
fn held_by_maybe(node: NodeRef<'_>) -> bool {
    matches!(node.kind(), NodeKind::Struct(NAME)) && node.children().any(|c| {
        c.key() == Some(HELD)
            && matches!(c.kind(), NodeKind::Static(v) if matches!(v.get::<bool>(), Ok(Some(true))))
    })
}

impl<M: TreeNode> TreeNode for MaybeFullySharded<M> {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        match self {
            MaybeFullySharded::Sharded(s) => s.flatten_as(f, true),
            MaybeFullySharded::Unsharded(m) => m.flatten(f),
        }
    }

    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        if held_by_maybe(u.peek_node()?) {
            FullyShardedModule::unflatten(u).map(MaybeFullySharded::Sharded)
        } else {
            M::unflatten(u).map(MaybeFullySharded::Unsharded)
        }
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        match self {
            MaybeFullySharded::Sharded(s) => s.leaves_mut(f),
            MaybeFullySharded::Unsharded(m) => m.leaves_mut(f),
        }
    }
}

impl<M: TreeNode + Forward> Forward for MaybeFullySharded<M> {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.gathered_call(|m| m.forward(x))
    }
}

macro_rules! as_linear {
    ($($table:ty),*) => {$(
        impl FullyShardedModule<$table> {
            /// The table used as a linear layer with its gathered parameters (Python:
            /// `fsdp.as_linear(x)`).
            pub fn as_linear(&self, x: &Array) -> Result<Array> {
                self.gathered_call(|e| e.as_linear(x))
            }
        }

        impl MaybeFullySharded<$table> {
            /// The table used as a linear layer (Python: `module.as_linear(x)`).
            pub fn as_linear(&self, x: &Array) -> Result<Array> {
                self.gathered_call(|e| e.as_linear(x))
            }
        }
    )*};
}

as_linear!(Embedding, QuantizedEmbedding, MaybeQuantizedEmbedding);

/// Shards `module` over `group` (`None`: the global group) as a [`FullyShardedModule`]
/// (Python: `nn.fully_shard(module, *, group=None, compute_dtype=None)`); the module comes
/// back unchanged, as in Python, for a group of one process, a module that is already a
/// `FullyShardedModule`, or one without parameters to shard.
///
/// A training step is the usual one: the loss of the sharded model, its gradients (of the
/// shards, averaged over the group), an optimizer update of the shards.
///
/// ```
/// use mlx_nn::{fully_shard, value_and_grad, Forward, Linear, Module};
/// use mlx_rs::{distributed, ops, Array};
/// let group = distributed::init(false, None)?;
/// let model = fully_shard(Linear::new(4, 8, true)?, &group, None)?;
/// assert_eq!(model.is_sharded(), group.size() > 1);
/// let x = ops::ones(&[2, 4], None)?;
/// let loss = |m: &_, x: &Array| Forward::forward(m, x)?.square()?.mean(None, false);
/// let (_, grads) = value_and_grad(loss)(&model, &x)?;
/// assert_eq!(grads.num_parameters()?, model.num_parameters()?);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn fully_shard<'g, M: TreeNode>(
    module: M,
    group: impl Into<Option<&'g Group>>,
    compute_dtype: impl Into<Option<Dtype>>,
) -> Result<MaybeFullySharded<M>> {
    let group = resolve_group(group.into())?;
    if group.size() == 1 {
        return Ok(MaybeFullySharded::Unsharded(module));
    }
    let def = tree_structure(&module)?;
    if def.num_nodes() > 0 && matches!(def.root().kind(), NodeKind::Struct(NAME)) {
        return Ok(MaybeFullySharded::Unsharded(module));
    }
    let wrapped = FullyShardedModule::new(module, &group, compute_dtype)?;
    Ok(if wrapped.num_sharded_params() == 0 {
        MaybeFullySharded::Unsharded(wrapped.module)
    } else {
        MaybeFullySharded::Sharded(wrapped)
    })
}
