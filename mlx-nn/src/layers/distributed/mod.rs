//! Models split over the processes of a distributed group (Python:
//! `mlx.nn.layers.distributed`; `clip_grad_norm_sharded` is in [`utils`](crate::utils), as in
//! Python).
//!
//! Two ways to split a model over a [`Group`]:
//!
//! - **Tensor parallelism**: each process holds a slice of a linear layer's weight and
//!   computes that slice of the product. [`AllToShardedLinear`] takes the full input and gives
//!   this process's slice of the output features; [`ShardedToAllLinear`] takes a slice of the
//!   input features and sums the partial products over the group, so every process ends with
//!   the full output. A pair of them (up projection, activation, down projection) is one
//!   `all_sum` per block in the forward pass. [`shard_linear`] builds either from a
//!   [`Linear`](crate::Linear) or [`QuantizedLinear`](crate::QuantizedLinear);
//!   [`shard_inplace`] slices the parameters of any module without changing its type.
//! - **Fully sharded data parallelism**: [`fully_shard`] / [`FullyShardedModule`] keep a slice
//!   (along axis 0) of every parameter on each process, gather the full parameters for each
//!   call and hand each process the gradient of its slice, averaged over the group, so each
//!   process stores and updates only its own slice. [`clip_grad_norm_sharded`](crate::utils::clip_grad_norm_sharded) clips such
//!   gradients by their global norm.
//!
//! Where Python takes `group=None` for the global group, these functions take
//! `Option<&Group>` and, for `None`, join the global group with
//! [`distributed::init`](mlx_rs::distributed::init)`(false, None)`, as Python's
//! `mx.distributed.init()` does. A layer keeps a clone of its group (Python: `self.group`).
//!
//! Sharding is decided from shapes alone, so bad input (a dimension that does not divide by
//! the group size, segments that do not divide their axis) is an `Err` naming the parameter,
//! from the call that shards, and leaves its input as it was.

mod fully;
mod linear;

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use mlx_rs::distributed::{self, Group};
use mlx_rs::transforms::{custom_vjp, CustomFunction};
use mlx_rs::{ops, Array, Error, Result};
use mlx_tree::serde_json::Value as Json;
use mlx_tree::StaticData;

use crate::{Forward, Module};

pub use fully::{fully_shard, FullyShardedModule, MaybeFullySharded};
pub use linear::{
    shard_linear, AllToShardedLinear, QuantizedAllToShardedLinear,
    QuantizedAllToShardedLinearOptions, QuantizedShardedToAllLinear,
    QuantizedShardedToAllLinearOptions, ShardableLinear, ShardedLinear, ShardedToAllLinear,
};

/// `group`, or the global group for `None` (Python: `group or mx.distributed.init()`).
fn resolve_group(group: Option<&Group>) -> Result<Group> {
    match group {
        Some(g) => Ok(g.clone()),
        None => distributed::init(false, None),
    }
}

fn invalid(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

// ---------------------------------------------------------------------------------------------
// The group as static tree data

/// The group a sharded layer communicates over, held as static tree data. Two layers have
/// the same structure only when they hold clones of one group handle, so a compiled step
/// traced for one communicator is never replayed for another (a trace bakes the group into
/// its collectives). It also keeps the layer's [`sum_gradients`] function, built on first use
/// and shared by the layer's clones, as Python caches one per group.
///
/// Public for modules sharded in place ([`shard_inplace`]) that make their slices add up
/// themselves (Python: a mixture-of-experts block's `sharding_group`).
#[derive(Clone)]
pub struct ShardGroup {
    group: Group,
    sum_gradients: Arc<OnceLock<SumGradients>>,
}

impl ShardGroup {
    /// Holds `group` (a handle: clones share the communicator).
    pub fn new(group: Group) -> ShardGroup {
        ShardGroup {
            group,
            sum_gradients: Arc::new(OnceLock::new()),
        }
    }

    /// The group.
    pub fn group(&self) -> &Group {
        &self.group
    }

    /// `all_sum(x)` over the group (Python: `mx.distributed.all_sum(x, group=group)`).
    pub fn all_sum(&self, x: &Array) -> Result<Array> {
        distributed::all_sum(x, Some(&self.group))
    }

    /// This group's [`sum_gradients`], built once.
    pub fn sum_gradients(&self) -> Result<&SumGradients> {
        if let Some(f) = self.sum_gradients.get() {
            return Ok(f);
        }
        let f = sum_gradients(&self.group)?;
        // Another thread may have set it meanwhile: either function is the same rule.
        Ok(self.sum_gradients.get_or_init(|| f))
    }
}

impl fmt::Debug for ShardGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.group.fmt(f)
    }
}

impl StaticData for ShardGroup {
    fn static_eq(&self, other: &Self) -> bool {
        Group::ptr_eq(&self.group, &other.group)
    }

    fn static_hash<H: Hasher>(&self, state: &mut H) {
        // Equal values are clones of one handle, so they agree on rank and size.
        (self.group.rank(), self.group.size()).hash(state);
    }

    fn to_json(&self) -> Result<Json> {
        Err(invalid(
            "a distributed group is a live communicator and cannot be written".into(),
        ))
    }

    fn from_json(json: &Json) -> Result<Self> {
        Err(invalid(format!(
            "static data {json} cannot be read back as a distributed group (a live communicator)"
        )))
    }
}

// ---------------------------------------------------------------------------------------------
// sum_gradients

/// The identity whose gradient is summed over a group (Python: `sum_gradients(group)`, in
/// `mlx.nn.layers.distributed`): made by [`sum_gradients`].
///
/// [`AllToShardedLinear`] applies it to its input. Each process's slice of the output depends
/// on the whole input, so each process's gradient with respect to the input is only its
/// slice's share; summing the shares over the group gives every process the full gradient,
/// which the layers before it (replicated on every process) need.
#[derive(Clone)]
pub struct SumGradients {
    /// `None` for a group of one process, where the sum is the identity.
    function: Option<Arc<CustomFunction>>,
}

/// The identity with a vector-Jacobian product that is the `all_sum` of the cotangent over
/// `group` (Python: `sum_gradients(group)`, a function of `x`); for a group of one process
/// the plain identity.
///
/// ```
/// use mlx_nn::sum_gradients;
/// use mlx_rs::{distributed, Array};
/// let group = distributed::init(false, None)?;
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let y = sum_gradients(&group)?.call(&x)?;
/// assert_eq!(y.to_vec::<f32>()?, [1.0, 2.0]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn sum_gradients(group: &Group) -> Result<SumGradients> {
    if group.size() == 1 {
        return Ok(SumGradients { function: None });
    }
    let group = group.clone();
    let function = custom_vjp(
        |x: &[Array]| Ok(x.to_vec()),
        move |_primals: &[Array], cotangents: &[Array], _outputs: &[Array]| {
            cotangents
                .iter()
                .map(|c| distributed::all_sum(c, Some(&group)))
                .collect()
        },
    )?;
    Ok(SumGradients {
        function: Some(Arc::new(function)),
    })
}

impl SumGradients {
    /// Applies the identity (Python: `sum_gradients(group)(x)`).
    pub fn call(&self, x: &Array) -> Result<Array> {
        match &self.function {
            None => Ok(x.clone()),
            Some(f) => f.call(std::slice::from_ref(x))?.pop().ok_or_else(|| {
                invalid("[sum_gradients] the custom function returned no output".into())
            }),
        }
    }
}

impl Forward for SumGradients {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.call(x)
    }
}

impl fmt::Debug for SumGradients {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SumGradients")
            .field("identity", &self.function.is_none())
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Segments and sharding rules

/// The parts a weight is made of along its sharding axis (Python: `segments`, an `int` or a
/// `list`): each part is sharded on its own and this process's slices are concatenated, so a
/// fused weight (queries, keys and values stacked in one matrix: 3 segments) is split into
/// slices that each hold matching rows of every part.
///
/// Converts from an `i32` (`3`), integer indices (`[8, 16]`, `vec![..]`) or fractions of the
/// axis (`[0.25, 0.5]`); `None` is Python's default, 1.
#[derive(Debug, Clone, PartialEq)]
pub enum Segments {
    /// `k` equal parts (Python: `segments=k`).
    Count(i32),
    /// Split before each of these indices, as `mx.split` does (Python: a list of ints).
    Indices(Vec<i32>),
    /// Split before each of these fractions of the axis, `int(f * size)` as Python computes
    /// it (Python: a list of floats).
    Fractions(Vec<f64>),
}

impl Default for Segments {
    fn default() -> Self {
        Segments::Count(1)
    }
}

impl From<i32> for Segments {
    fn from(k: i32) -> Self {
        Segments::Count(k)
    }
}

impl From<Vec<i32>> for Segments {
    fn from(v: Vec<i32>) -> Self {
        Segments::Indices(v)
    }
}

impl From<&[i32]> for Segments {
    fn from(v: &[i32]) -> Self {
        Segments::Indices(v.to_vec())
    }
}

impl<const N: usize> From<[i32; N]> for Segments {
    fn from(v: [i32; N]) -> Self {
        Segments::Indices(v.to_vec())
    }
}

impl From<Vec<f64>> for Segments {
    fn from(v: Vec<f64>) -> Self {
        Segments::Fractions(v)
    }
}

impl From<&[f64]> for Segments {
    fn from(v: &[f64]) -> Self {
        Segments::Fractions(v.to_vec())
    }
}

impl<const N: usize> From<[f64; N]> for Segments {
    fn from(v: [f64; N]) -> Self {
        Segments::Fractions(v.to_vec())
    }
}

/// `None` is Python's default, one segment.
impl From<Option<Segments>> for Segments {
    fn from(s: Option<Segments>) -> Self {
        s.unwrap_or_default()
    }
}

/// How one parameter is sharded: the axis it is split along and the segments it is made of
/// (what Python's sharding callables return: an `int` axis, or `(axis, segments)`).
#[derive(Debug, Clone, PartialEq)]
pub struct ShardSpec {
    pub axis: i32,
    pub segments: Segments,
}

impl From<i32> for ShardSpec {
    /// An axis, one segment.
    fn from(axis: i32) -> Self {
        ShardSpec {
            axis,
            segments: Segments::default(),
        }
    }
}

impl<S: Into<Segments>> From<(i32, S)> for ShardSpec {
    fn from((axis, segments): (i32, S)) -> Self {
        ShardSpec {
            axis,
            segments: segments.into(),
        }
    }
}

/// The two ways of sharding a linear layer (Python's strings `"all-to-sharded"` and
/// `"sharded-to-all"`; `str::parse` reads them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharding {
    /// The full input in, this process's slice of the output features out: the weight's
    /// rows (its second-to-last axis) and the bias are sliced.
    AllToSharded,
    /// A slice of the input features in, the full output out (summed over the group): the
    /// weight's columns (its last axis) are sliced, the bias is kept whole.
    ShardedToAll,
}

impl Sharding {
    /// Python's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Sharding::AllToSharded => "all-to-sharded",
            Sharding::ShardedToAll => "sharded-to-all",
        }
    }

    /// Python's predicates `_all_to_sharded(segments)` and `_sharded_to_all(segments)`: the
    /// sharding of the parameter at `path` (a path ending in `bias` is a bias; `biases`, the
    /// quantization offsets, is not).
    fn spec(self, path: &str, weight: &Array, segments: &Segments) -> Option<ShardSpec> {
        let bias = path.ends_with("bias");
        let axis = match (self, bias) {
            (Sharding::AllToSharded, true) => -1,
            (Sharding::AllToSharded, false) => weight.ndim().saturating_sub(2) as i32,
            (Sharding::ShardedToAll, true) => return None,
            (Sharding::ShardedToAll, false) => -1,
        };
        Some(ShardSpec {
            axis,
            segments: segments.clone(),
        })
    }
}

impl FromStr for Sharding {
    type Err = Error;

    fn from_str(s: &str) -> Result<Sharding> {
        match s {
            "all-to-sharded" => Ok(Sharding::AllToSharded),
            "sharded-to-all" => Ok(Sharding::ShardedToAll),
            _ => {
                // Python's f"{sharding=}" writes the repr: single quotes unless the string
                // holds one.
                let escaped = s.replace('\\', "\\\\");
                let repr = if s.contains('\'') && !s.contains('"') {
                    format!("\"{escaped}\"")
                } else {
                    format!("'{}'", escaped.replace('\'', "\\'"))
                };
                Err(invalid(format!(
                    "Sharding type sharding={repr} not supported, choose one of \
                     'all-to-sharded' or 'sharded-to-all'"
                )))
            }
        }
    }
}

/// A sharding predicate of your own: given a parameter's path and value, how to shard it, or
/// `None` to keep it whole (Python: a callable `sharding(path, weight)`).
pub type ShardPredicate<'a> = &'a dyn Fn(&str, &Array) -> Option<ShardSpec>;

/// What [`shard_inplace`] shards by (Python: `sharding`, a string or a callable).
#[derive(Clone, Copy)]
pub enum ShardingRule<'a> {
    /// One of the two linear-layer shardings, with the call's `segments`.
    Preset(Sharding),
    /// Your own predicate (the call's `segments` are then unused, as in Python).
    Custom(ShardPredicate<'a>),
}

impl From<Sharding> for ShardingRule<'_> {
    fn from(s: Sharding) -> Self {
        ShardingRule::Preset(s)
    }
}

impl<'a, F: Fn(&str, &Array) -> Option<ShardSpec>> From<&'a F> for ShardingRule<'a> {
    fn from(f: &'a F) -> Self {
        ShardingRule::Custom(f)
    }
}

impl fmt::Debug for ShardingRule<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShardingRule::Preset(s) => write!(f, "Preset({s:?})"),
            ShardingRule::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Slicing

/// `axis` counted from the end when negative, checked against `ndim`.
fn normalize_axis(path: &str, a: &Array, axis: i32) -> Result<i32> {
    let ndim = a.ndim() as i32;
    let ax = if axis < 0 { axis + ndim } else { axis };
    if ax < 0 || ax >= ndim {
        return Err(invalid(format!(
            "[shard] cannot shard `{path}` of shape {:?} along axis {axis}",
            a.shape()
        )));
    }
    Ok(ax)
}

/// Python's `_split`: `mx.split` by a count or indices, or at fractions of the axis.
fn split_segments(path: &str, a: &Array, segments: &Segments, axis: i32) -> Result<Vec<Array>> {
    let size = a.shape()[axis as usize];
    match segments {
        Segments::Count(k) => {
            if *k <= 0 || size % k != 0 {
                return Err(invalid(format!(
                    "[shard] cannot split `{path}` of shape {:?} into {k} segments: its axis \
                     {axis} has {size} entries",
                    a.shape()
                )));
            }
            ops::split(a, *k, axis)
        }
        Segments::Indices(indices) => ops::split(a, indices.clone(), axis),
        Segments::Fractions(fractions) => {
            let indices = fractions
                .iter()
                .map(|f| {
                    let at = f * f64::from(size);
                    // Python's int(): toward zero; a NaN or infinity is an error there too.
                    if !at.is_finite() || at.abs() > f64::from(i32::MAX) {
                        return Err(invalid(format!(
                            "[shard] the segment fraction {f} of `{path}` is not a position \
                             along its axis of {size} entries"
                        )));
                    }
                    Ok(at.trunc() as i32)
                })
                .collect::<Result<Vec<i32>>>()?;
            ops::split(a, indices, axis)
        }
    }
}

/// This process's slice of `a` (Python: `_shard`'s `_shard_fn`): `a` is split into its
/// segments along `axis`, each segment into `n` equal slices, and slice `rank` of every
/// segment is concatenated back, contiguous.
pub(crate) fn shard_array(
    path: &str,
    a: &Array,
    spec: &ShardSpec,
    n: i32,
    rank: i32,
) -> Result<Array> {
    let axis = normalize_axis(path, a, spec.axis)?;
    let parts = split_segments(path, a, &spec.segments, axis)?;
    let mut mine = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let size = part.shape()[axis as usize];
        if size % n != 0 {
            return Err(invalid(format!(
                "[shard] cannot shard `{path}` of shape {:?} across {n} processes: segment {i} \
                 has {size} entries along axis {axis}, not a multiple of {n}",
                a.shape()
            )));
        }
        let mut slices = ops::split(part, n, axis)?;
        mine.push(slices.swap_remove(rank as usize));
    }
    ops::contiguous(&ops::concatenate(&mine, axis)?, None)
}

/// Python's `_shard(parameters, sharding_predicate, group)`: every parameter, sliced where
/// the rule says.
fn shard_parameters(
    parameters: Vec<(String, Array)>,
    rule: ShardingRule<'_>,
    segments: &Segments,
    group: &Group,
) -> Result<Vec<(String, Array)>> {
    let (n, rank) = (group.size(), group.rank());
    parameters
        .into_iter()
        .map(|(path, a)| {
            let spec = match rule {
                ShardingRule::Preset(s) => s.spec(&path, &a, segments),
                ShardingRule::Custom(f) => f(&path, &a),
            };
            let sharded = match spec {
                Some(spec) => shard_array(&path, &a, &spec, n, rank)?,
                None => a,
            };
            Ok((path, sharded))
        })
        .collect()
}

/// Replaces the parameters of `module` by this process's slices (Python:
/// `shard_inplace(module, sharding, *, segments=1, group=None)`).
///
/// `sharding` is a [`Sharding`] (Python's strings), applied with `segments`, or a predicate
/// of your own (`&|path: &str, w: &Array| -> Option<ShardSpec>`), which gives each
/// parameter's axis and segments itself. Every parameter is offered to the rule, frozen ones
/// too. The module's type does not change, so it computes with its slices as it would with
/// whole parameters: the communication that makes the slices add up must be in the module's
/// own code (Python's note: the module "needs to natively support it"). On an error the
/// module is left as it was.
///
/// ```
/// use mlx_nn::{shard_inplace, Linear, Sharding};
/// use mlx_rs::distributed;
/// let group = distributed::init(false, None)?; // one process: every slice is whole
/// let mut qkv = Linear::new(8, 3 * 8, true)?;
/// shard_inplace(&mut qkv, Sharding::AllToSharded, 3, &group)?;
/// assert_eq!(qkv.weight.shape(), &[24 / group.size(), 8]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn shard_inplace<'a, M: Module>(
    module: &mut M,
    sharding: impl Into<ShardingRule<'a>>,
    segments: impl Into<Segments>,
    group: impl Into<Option<&'a Group>>,
) -> Result<()> {
    let group = resolve_group(group.into())?;
    let sharded = shard_parameters(
        module.named_parameters()?,
        sharding.into(),
        &segments.into(),
        &group,
    )?;
    module.update_named_parameters(sharded)
}
