//! Tensor-parallel linear layers (Python: `AllToShardedLinear`, `ShardedToAllLinear`, their
//! quantized forms, and `shard_linear`).

use mlx_rs::distributed::{self, Group};
use mlx_rs::ops::{self, QuantizationMode, QuantizeOptions, QuantizedMatmulOptions};
use mlx_rs::{Array, Result};
use mlx_tree::{Flattener, NodeKind, TreeNode, Unflattener};

use super::{invalid, resolve_group, shard_parameters, Segments, ShardGroup, Sharding};
use crate::layers::{inv_sqrt, uniform_init, with_bias};
use crate::{Forward, Frozen, Linear, MaybeQuantizedLinear, Module, QuantizedLinear};

/// The arrays of a sharded layer, by Python's parameter names, after [`shard_parameters`].
struct Parts(Vec<(String, Array)>);

impl Parts {
    fn take(&mut self, name: &str) -> Option<Array> {
        let i = self.0.iter().position(|(p, _)| p == name)?;
        Some(self.0.remove(i).1)
    }

    fn require(&mut self, name: &str) -> Result<Array> {
        self.take(name)
            .ok_or_else(|| invalid(format!("[shard_linear] the layer has no `{name}`")))
    }
}

/// `(output_dims, input_dims)` of a weight, which must be a matrix.
fn weight_dims(what: &str, weight: &Array) -> Result<(i32, i32)> {
    match *weight.shape() {
        [out, inp] => Ok((out, inp)),
        _ => Err(invalid(format!(
            "[{what}] the weight must be a matrix, got shape {:?}",
            weight.shape()
        ))),
    }
}

/// Python's check in the all-to-sharded constructors.
fn check_output(output_dims: i32, n: i32) -> Result<()> {
    if output_dims % n != 0 {
        return Err(invalid(format!(
            "Cannot shard the output of size {output_dims} across {n} devices."
        )));
    }
    Ok(())
}

/// Python's check in the sharded-to-all constructors.
fn check_input(input_dims: i32, n: i32) -> Result<()> {
    if input_dims % n != 0 {
        return Err(invalid(format!(
            "The input of size {input_dims} cannot be sharded across {n} devices."
        )));
    }
    Ok(())
}

/// Every parameter of a quantized layer is frozen (Python: `self.freeze()` at the end of the
/// constructor, after the bias exists, so the bias is frozen too).
fn quantized_frozen() -> Frozen {
    Frozen(
        ["weight", "scales", "biases", "bias"]
            .into_iter()
            .map(String::from)
            .collect(),
    )
}

// ---------------------------------------------------------------------------------------------
// AllToShardedLinear

/// A linear layer whose output features are split over a group (Python:
/// `nn.AllToShardedLinear(input_dims, output_dims, bias=True, group=None)`): every process
/// takes the full input and computes its slice of the output, `x @ weight.T + bias` with
/// `weight` of shape `(output_dims / N, input_dims)` for a group of `N` processes.
///
/// The input goes through [`sum_gradients`](crate::sum_gradients) first, so the gradient with
/// respect to the input is summed over the group: each process's slice of the output sees
/// only part of the input's influence, and the layers before this one, replicated on every
/// process, need the whole of it.
///
/// ```
/// use mlx_nn::{AllToShardedLinear, Forward, Linear};
/// use mlx_rs::{distributed, ops};
/// let group = distributed::init(false, None)?;
/// let up = Linear::new(8, 16, true)?;
/// let sharded = AllToShardedLinear::from_linear(&up, None, &group)?;
/// let y = sharded.forward(&ops::ones(&[2, 8], None)?)?;
/// assert_eq!(y.shape(), &[2, 16 / group.size()]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct AllToShardedLinear {
    pub weight: Array,
    pub bias: Option<Array>,
    #[tree(static)]
    pub frozen: Frozen,
    #[tree(static)]
    group: ShardGroup,
}

impl AllToShardedLinear {
    /// A new layer with random weights, initialized as Python's (uniform in
    /// `±sqrt(1 / input_dims)`); `bias` `None` is `true`, `group` `None` the global group.
    /// Errors unless `output_dims` divides by the group size.
    pub fn new<'g>(
        input_dims: i32,
        output_dims: i32,
        bias: impl Into<Option<bool>>,
        group: impl Into<Option<&'g Group>>,
    ) -> Result<AllToShardedLinear> {
        let group = resolve_group(group.into())?;
        check_output(output_dims, group.size())?;
        let scale = inv_sqrt(f64::from(input_dims));
        let rows = output_dims / group.size();
        Ok(AllToShardedLinear {
            weight: uniform_init(scale, &[rows, input_dims])?,
            bias: if bias.into().unwrap_or(true) {
                Some(uniform_init(scale, &[rows])?)
            } else {
                None
            },
            frozen: Frozen::default(),
            group: ShardGroup::new(group),
        })
    }

    /// This process's slice of `linear` (Python:
    /// `AllToShardedLinear.from_linear(linear, *, segments=1, group=None)`): the weight's rows
    /// and the bias, each segment sliced on its own (`segments = 3` for a fused QKV
    /// projection). Unlike Python, which builds a random layer first and then replaces its
    /// arrays, nothing is drawn from the global random state.
    pub fn from_linear<'g>(
        linear: &Linear,
        segments: impl Into<Segments>,
        group: impl Into<Option<&'g Group>>,
    ) -> Result<AllToShardedLinear> {
        let group = resolve_group(group.into())?;
        let (output_dims, _) = weight_dims("AllToShardedLinear", &linear.weight)?;
        check_output(output_dims, group.size())?;
        let mut parts = Parts(shard_parameters(
            linear.named_parameters()?,
            Sharding::AllToSharded.into(),
            &segments.into(),
            &group,
        )?);
        Ok(AllToShardedLinear {
            weight: parts.require("weight")?,
            bias: parts.take("bias"),
            frozen: Frozen::default(),
            group: ShardGroup::new(group),
        })
    }

    /// The group the layer is sharded over (Python: `layer.group`).
    pub fn group(&self) -> &Group {
        self.group.group()
    }
}

impl Forward for AllToShardedLinear {
    /// Applies the layer (Python: `layer(x)`): this process's slice of the output features.
    fn forward(&self, x: &Array) -> Result<Array> {
        let x = self.group.sum_gradients()?.call(x)?;
        let w = self.weight.t()?;
        match &self.bias {
            Some(b) => ops::addmm(b, &x, &w, None, None),
            None => ops::matmul(&x, &w),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ShardedToAllLinear

/// A linear layer whose input features are split over a group (Python:
/// `nn.ShardedToAllLinear(input_dims, output_dims, bias=True, group=None)`): every process
/// takes its slice of the input, computes `x @ weight.T` with `weight` of shape
/// `(output_dims, input_dims / N)`, and the partial products are summed over the group
/// (`all_sum`) before the bias is added, so every process ends with the same full output.
///
/// ```
/// use mlx_nn::{Forward, Linear, ShardedToAllLinear};
/// use mlx_rs::{distributed, ops};
/// let group = distributed::init(false, None)?;
/// let down = Linear::new(16, 8, true)?;
/// let sharded = ShardedToAllLinear::from_linear(&down, None, &group)?;
/// let y = sharded.forward(&ops::ones(&[2, 16 / group.size()], None)?)?;
/// assert_eq!(y.shape(), &[2, 8]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct ShardedToAllLinear {
    pub weight: Array,
    pub bias: Option<Array>,
    #[tree(static)]
    pub frozen: Frozen,
    #[tree(static)]
    group: ShardGroup,
}

impl ShardedToAllLinear {
    /// A new layer with random weights, initialized as Python's (uniform in
    /// `±sqrt(1 / input_dims)`, the full input's size); `bias` `None` is `true`, `group`
    /// `None` the global group. Errors unless `input_dims` divides by the group size.
    pub fn new<'g>(
        input_dims: i32,
        output_dims: i32,
        bias: impl Into<Option<bool>>,
        group: impl Into<Option<&'g Group>>,
    ) -> Result<ShardedToAllLinear> {
        let group = resolve_group(group.into())?;
        check_input(input_dims, group.size())?;
        let scale = inv_sqrt(f64::from(input_dims));
        Ok(ShardedToAllLinear {
            weight: uniform_init(scale, &[output_dims, input_dims / group.size()])?,
            bias: if bias.into().unwrap_or(true) {
                Some(uniform_init(scale, &[output_dims])?)
            } else {
                None
            },
            frozen: Frozen::default(),
            group: ShardGroup::new(group),
        })
    }

    /// This process's slice of `linear` (Python:
    /// `ShardedToAllLinear.from_linear(linear, *, segments=1, group=None)`): the weight's
    /// columns, each segment sliced on its own; the bias whole. Nothing is drawn from the
    /// global random state (Python draws a random layer first).
    pub fn from_linear<'g>(
        linear: &Linear,
        segments: impl Into<Segments>,
        group: impl Into<Option<&'g Group>>,
    ) -> Result<ShardedToAllLinear> {
        let group = resolve_group(group.into())?;
        let (_, input_dims) = weight_dims("ShardedToAllLinear", &linear.weight)?;
        check_input(input_dims, group.size())?;
        let mut parts = Parts(shard_parameters(
            linear.named_parameters()?,
            Sharding::ShardedToAll.into(),
            &segments.into(),
            &group,
        )?);
        Ok(ShardedToAllLinear {
            weight: parts.require("weight")?,
            bias: parts.take("bias"),
            frozen: Frozen::default(),
            group: ShardGroup::new(group),
        })
    }

    /// The group the layer is sharded over (Python: `layer.group`).
    pub fn group(&self) -> &Group {
        self.group.group()
    }
}

impl Forward for ShardedToAllLinear {
    /// Applies the layer (Python: `layer(x)`): the full output, the same on every process.
    fn forward(&self, x: &Array) -> Result<Array> {
        let y = ops::matmul(x, &self.weight.t()?)?;
        let y = distributed::all_sum(&y, Some(self.group.group()))?;
        with_bias(y, self.bias.as_ref())
    }
}

// ---------------------------------------------------------------------------------------------
// The quantized forms

mlx_rs::options! {
    /// The keyword arguments of [`QuantizedAllToShardedLinear::new`] and
    /// [`QuantizedShardedToAllLinear::new`], with Python's defaults (`bias=True`,
    /// `group_size=64`, `bits=4`, `mode="affine"`, `group=None`). `bias` decides which
    /// parameters exist, so it is given before the layer is built.
    #[derive(Debug, Clone, Copy)]
    pub struct QuantizedAllToShardedLinearOptions<'a> {
        bias: plain bool = true,
        /// Elements per group sharing one scale.
        group_size: plain i32 = 64,
        /// Bits per element.
        bits: plain i32 = 4,
        /// The quantization format.
        mode: plain QuantizationMode = QuantizationMode::Affine,
        /// The processes to shard over; `None` is the global group.
        group: opt &'a Group = None,
    }
}

/// The same keywords as [`QuantizedAllToShardedLinearOptions`].
pub type QuantizedShardedToAllLinearOptions<'a> = QuantizedAllToShardedLinearOptions<'a>;

/// `weight` quantized as the constructors do (Python: `mx.quantize(weight, group_size, bits,
/// mode=mode)`).
fn quantize_weight(
    weight: &Array,
    group_size: i32,
    bits: i32,
    mode: QuantizationMode,
) -> Result<(Array, Array, Option<Array>)> {
    ops::quantize(
        weight,
        QuantizeOptions::default()
            .group_size(group_size)
            .bits(bits)
            .mode(mode),
    )
}

/// `x @ dequantize(weight).T` (Python: `mx.quantized_matmul(x, weight, scales, biases,
/// transpose=True, group_size, bits, mode)`).
fn quantized_product(
    x: &Array,
    weight: &Array,
    scales: &Array,
    biases: Option<&Array>,
    group_size: i32,
    bits: i32,
    mode: QuantizationMode,
) -> Result<Array> {
    let options = QuantizedMatmulOptions {
        biases,
        transpose: true,
        group_size: Some(group_size),
        bits: Some(bits),
        mode,
    };
    ops::quantized_matmul(x, weight, scales, options)
}

/// `(output_dims, input_dims)` of a quantized layer (Python: `input_dims = (packed * 32) //
/// bits`), in `i64` so that no packed width overflows.
fn quantized_dims(what: &str, layer: &QuantizedLinear) -> Result<(i32, i32)> {
    let (output_dims, packed) = weight_dims(what, &layer.weight)?;
    if layer.bits <= 0 {
        return Err(invalid(format!(
            "[{what}] bits must be positive, got {}",
            layer.bits
        )));
    }
    let input_dims = i64::from(packed) * 32 / i64::from(layer.bits);
    let input_dims = i32::try_from(input_dims)
        .map_err(|_| invalid(format!("[{what}] {input_dims} input features is too many")))?;
    Ok((output_dims, input_dims))
}

/// The quantized form of [`AllToShardedLinear`] (Python: `nn.QuantizedAllToShardedLinear(
/// input_dims, output_dims, bias=True, group_size=64, bits=4, mode="affine", group=None)`):
/// this process's rows of a quantized weight (`weight`, packed; `scales`; `biases`, absent
/// for the floating-point modes) and its slice of `bias`.
///
/// As in Python, every parameter is frozen, the bias included; Python's override of
/// `unfreeze`, which keeps them frozen whatever is unfrozen, has no counterpart here
/// ([`Module::unfreeze`] is one method for every tree), so do not unfreeze them.
#[derive(Debug, Clone, TreeNode)]
pub struct QuantizedAllToShardedLinear {
    pub weight: Array,
    pub scales: Array,
    pub biases: Option<Array>,
    pub bias: Option<Array>,
    #[tree(static)]
    pub group_size: i32,
    #[tree(static)]
    pub bits: i32,
    #[tree(static)]
    pub mode: QuantizationMode,
    #[tree(static)]
    pub frozen: Frozen,
    #[tree(static)]
    group: ShardGroup,
}

impl QuantizedAllToShardedLinear {
    /// A new layer with random weights (uniform in `±sqrt(1 / input_dims)`, then quantized)
    /// and a zero bias, as Python builds it. Errors unless `output_dims` divides by the group
    /// size.
    pub fn new(
        input_dims: i32,
        output_dims: i32,
        options: QuantizedAllToShardedLinearOptions<'_>,
    ) -> Result<QuantizedAllToShardedLinear> {
        let group = resolve_group(options.group)?;
        check_output(output_dims, group.size())?;
        let rows = output_dims / group.size();
        let scale = inv_sqrt(f64::from(input_dims));
        let weight = uniform_init(scale, &[rows, input_dims])?;
        let (weight, scales, biases) =
            quantize_weight(&weight, options.group_size, options.bits, options.mode)?;
        Ok(QuantizedAllToShardedLinear {
            weight,
            scales,
            biases,
            bias: options
                .bias
                .then(|| ops::zeros(&[rows], None))
                .transpose()?,
            group_size: options.group_size,
            bits: options.bits,
            mode: options.mode,
            frozen: quantized_frozen(),
            group: ShardGroup::new(group),
        })
    }

    /// This process's rows of `layer` (Python: `QuantizedAllToShardedLinear.
    /// from_quantized_linear(layer, *, segments=1, group=None)`): `weight`, `scales`,
    /// `biases` and `bias`, each segment sliced on its own. Nothing is drawn from the global
    /// random state (Python draws and quantizes a random layer first).
    pub fn from_quantized_linear<'g>(
        layer: &QuantizedLinear,
        segments: impl Into<Segments>,
        group: impl Into<Option<&'g Group>>,
    ) -> Result<QuantizedAllToShardedLinear> {
        let group = resolve_group(group.into())?;
        let (output_dims, _) = quantized_dims("QuantizedAllToShardedLinear", layer)?;
        check_output(output_dims, group.size())?;
        let mut parts = Parts(shard_parameters(
            layer.named_parameters()?,
            Sharding::AllToSharded.into(),
            &segments.into(),
            &group,
        )?);
        Ok(QuantizedAllToShardedLinear {
            weight: parts.require("weight")?,
            scales: parts.require("scales")?,
            biases: parts.take("biases"),
            bias: parts.take("bias"),
            group_size: layer.group_size,
            bits: layer.bits,
            mode: layer.mode,
            frozen: quantized_frozen(),
            group: ShardGroup::new(group),
        })
    }

    /// The group the layer is sharded over (Python: `layer.group`).
    pub fn group(&self) -> &Group {
        self.group.group()
    }
}

impl Forward for QuantizedAllToShardedLinear {
    /// Applies the layer (Python: `layer(x)`): this process's slice of the output features.
    fn forward(&self, x: &Array) -> Result<Array> {
        let x = self.group.sum_gradients()?.call(x)?;
        let y = quantized_product(
            &x,
            &self.weight,
            &self.scales,
            self.biases.as_ref(),
            self.group_size,
            self.bits,
            self.mode,
        )?;
        with_bias(y, self.bias.as_ref())
    }
}

/// The quantized form of [`ShardedToAllLinear`] (Python: `nn.QuantizedShardedToAllLinear(
/// input_dims, output_dims, bias=True, group_size=64, bits=4, mode="affine", group=None)`):
/// this process's columns of a quantized weight (whole quantization groups: `input_dims / N`
/// must be a multiple of `group_size`), the partial products summed over the group, then the
/// whole `bias` added.
///
/// Every parameter is frozen, as in [`QuantizedAllToShardedLinear`].
#[derive(Debug, Clone, TreeNode)]
pub struct QuantizedShardedToAllLinear {
    pub weight: Array,
    pub scales: Array,
    pub biases: Option<Array>,
    pub bias: Option<Array>,
    #[tree(static)]
    pub group_size: i32,
    #[tree(static)]
    pub bits: i32,
    #[tree(static)]
    pub mode: QuantizationMode,
    #[tree(static)]
    pub frozen: Frozen,
    #[tree(static)]
    group: ShardGroup,
}

/// Python's constructor quantizes an `(output_dims, input_dims / N)` weight, which needs
/// whole quantization groups in each process's slice.
fn check_quantized_input(input_dims: i32, n: i32, group_size: i32) -> Result<()> {
    check_input(input_dims, n)?;
    let per_process = input_dims / n;
    if group_size <= 0 || per_process % group_size != 0 {
        return Err(invalid(format!(
            "The input of size {input_dims} cannot be sharded across {n} devices in whole \
             quantization groups: each device's {per_process} features are not a multiple of \
             group_size {group_size}."
        )));
    }
    Ok(())
}

impl QuantizedShardedToAllLinear {
    /// A new layer with random weights (uniform in `±sqrt(1 / input_dims)`, then quantized)
    /// and a zero bias, as Python builds it. Errors unless `input_dims / N` is a whole number
    /// of quantization groups.
    pub fn new(
        input_dims: i32,
        output_dims: i32,
        options: QuantizedShardedToAllLinearOptions<'_>,
    ) -> Result<QuantizedShardedToAllLinear> {
        let group = resolve_group(options.group)?;
        check_quantized_input(input_dims, group.size(), options.group_size)?;
        let scale = inv_sqrt(f64::from(input_dims));
        let weight = uniform_init(scale, &[output_dims, input_dims / group.size()])?;
        let (weight, scales, biases) =
            quantize_weight(&weight, options.group_size, options.bits, options.mode)?;
        Ok(QuantizedShardedToAllLinear {
            weight,
            scales,
            biases,
            bias: options
                .bias
                .then(|| ops::zeros(&[output_dims], None))
                .transpose()?,
            group_size: options.group_size,
            bits: options.bits,
            mode: options.mode,
            frozen: quantized_frozen(),
            group: ShardGroup::new(group),
        })
    }

    /// This process's columns of `layer` (Python: `QuantizedShardedToAllLinear.
    /// from_quantized_linear(layer, *, segments=1, group=None)`): `weight`, `scales` and
    /// `biases` along their last axis, each segment sliced on its own; `bias` whole. Nothing
    /// is drawn from the global random state.
    pub fn from_quantized_linear<'g>(
        layer: &QuantizedLinear,
        segments: impl Into<Segments>,
        group: impl Into<Option<&'g Group>>,
    ) -> Result<QuantizedShardedToAllLinear> {
        let group = resolve_group(group.into())?;
        let (_, input_dims) = quantized_dims("QuantizedShardedToAllLinear", layer)?;
        check_quantized_input(input_dims, group.size(), layer.group_size)?;
        let mut parts = Parts(shard_parameters(
            layer.named_parameters()?,
            Sharding::ShardedToAll.into(),
            &segments.into(),
            &group,
        )?);
        Ok(QuantizedShardedToAllLinear {
            weight: parts.require("weight")?,
            scales: parts.require("scales")?,
            biases: parts.take("biases"),
            bias: parts.take("bias"),
            group_size: layer.group_size,
            bits: layer.bits,
            mode: layer.mode,
            frozen: quantized_frozen(),
            group: ShardGroup::new(group),
        })
    }

    /// The group the layer is sharded over (Python: `layer.group`).
    pub fn group(&self) -> &Group {
        self.group.group()
    }
}

impl Forward for QuantizedShardedToAllLinear {
    /// Applies the layer (Python: `layer(x)`): the full output, the same on every process.
    fn forward(&self, x: &Array) -> Result<Array> {
        let y = quantized_product(
            x,
            &self.weight,
            &self.scales,
            self.biases.as_ref(),
            self.group_size,
            self.bits,
            self.mode,
        )?;
        let y = distributed::all_sum(&y, Some(self.group.group()))?;
        with_bias(y, self.bias.as_ref())
    }
}

// ---------------------------------------------------------------------------------------------
// shard_linear

/// One of the four sharded linear layers, as [`shard_linear`] returns it: Python returns a
/// different class by the sharding and by whether the layer was quantized; a Rust function
/// has one return type, so it is this enum. Transparent in the tree: its parameters are the
/// held layer's, under the same paths (`weight`, `bias`, ... as Python names them).
#[derive(Debug, Clone)]
pub enum ShardedLinear {
    AllToSharded(AllToShardedLinear),
    ShardedToAll(ShardedToAllLinear),
    QuantizedAllToSharded(QuantizedAllToShardedLinear),
    QuantizedShardedToAll(QuantizedShardedToAllLinear),
}

impl ShardedLinear {
    /// The group the layer is sharded over.
    pub fn group(&self) -> &Group {
        match self {
            ShardedLinear::AllToSharded(l) => l.group(),
            ShardedLinear::ShardedToAll(l) => l.group(),
            ShardedLinear::QuantizedAllToSharded(l) => l.group(),
            ShardedLinear::QuantizedShardedToAll(l) => l.group(),
        }
    }

    /// How the layer is sharded.
    pub fn sharding(&self) -> Sharding {
        match self {
            ShardedLinear::AllToSharded(_) | ShardedLinear::QuantizedAllToSharded(_) => {
                Sharding::AllToSharded
            }
            ShardedLinear::ShardedToAll(_) | ShardedLinear::QuantizedShardedToAll(_) => {
                Sharding::ShardedToAll
            }
        }
    }

    /// Whether the layer is quantized.
    pub fn is_quantized(&self) -> bool {
        matches!(
            self,
            ShardedLinear::QuantizedAllToSharded(_) | ShardedLinear::QuantizedShardedToAll(_)
        )
    }
}

macro_rules! sharded_from {
    ($($variant:ident($layer:ident);)*) => {$(
        impl From<$layer> for ShardedLinear {
            fn from(layer: $layer) -> Self {
                ShardedLinear::$variant(layer)
            }
        }
    )*};
}

sharded_from! {
    AllToSharded(AllToShardedLinear);
    ShardedToAll(ShardedToAllLinear);
    QuantizedAllToSharded(QuantizedAllToShardedLinear);
    QuantizedShardedToAll(QuantizedShardedToAllLinear);
}

impl TreeNode for ShardedLinear {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        match self {
            ShardedLinear::AllToSharded(l) => l.flatten(f),
            ShardedLinear::ShardedToAll(l) => l.flatten(f),
            ShardedLinear::QuantizedAllToSharded(l) => l.flatten(f),
            ShardedLinear::QuantizedShardedToAll(l) => l.flatten(f),
        }
    }

    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        // The variants are told apart by the struct each one holds.
        match u.peek_kind()? {
            NodeKind::Struct("ShardedToAllLinear") => {
                ShardedToAllLinear::unflatten(u).map(ShardedLinear::ShardedToAll)
            }
            NodeKind::Struct("QuantizedAllToShardedLinear") => {
                QuantizedAllToShardedLinear::unflatten(u).map(ShardedLinear::QuantizedAllToSharded)
            }
            NodeKind::Struct("QuantizedShardedToAllLinear") => {
                QuantizedShardedToAllLinear::unflatten(u).map(ShardedLinear::QuantizedShardedToAll)
            }
            _ => AllToShardedLinear::unflatten(u).map(ShardedLinear::AllToSharded),
        }
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        match self {
            ShardedLinear::AllToSharded(l) => l.leaves_mut(f),
            ShardedLinear::ShardedToAll(l) => l.leaves_mut(f),
            ShardedLinear::QuantizedAllToSharded(l) => l.leaves_mut(f),
            ShardedLinear::QuantizedShardedToAll(l) => l.leaves_mut(f),
        }
    }
}

impl Forward for ShardedLinear {
    fn forward(&self, x: &Array) -> Result<Array> {
        match self {
            ShardedLinear::AllToSharded(l) => l.forward(x),
            ShardedLinear::ShardedToAll(l) => l.forward(x),
            ShardedLinear::QuantizedAllToSharded(l) => l.forward(x),
            ShardedLinear::QuantizedShardedToAll(l) => l.forward(x),
        }
    }
}

/// A linear layer that [`shard_linear`] can shard: [`Linear`], [`QuantizedLinear`], or a
/// [`MaybeQuantizedLinear`] holding either (Python's `shard_linear` takes a `Linear` or a
/// quantized linear module).
pub trait ShardableLinear {
    /// This process's sharded form of the layer over `group`.
    fn shard(&self, sharding: Sharding, segments: Segments, group: &Group)
        -> Result<ShardedLinear>;
}

impl ShardableLinear for Linear {
    fn shard(
        &self,
        sharding: Sharding,
        segments: Segments,
        group: &Group,
    ) -> Result<ShardedLinear> {
        Ok(match sharding {
            Sharding::AllToSharded => {
                AllToShardedLinear::from_linear(self, segments, group)?.into()
            }
            Sharding::ShardedToAll => {
                ShardedToAllLinear::from_linear(self, segments, group)?.into()
            }
        })
    }
}

impl ShardableLinear for QuantizedLinear {
    fn shard(
        &self,
        sharding: Sharding,
        segments: Segments,
        group: &Group,
    ) -> Result<ShardedLinear> {
        Ok(match sharding {
            Sharding::AllToSharded => {
                QuantizedAllToShardedLinear::from_quantized_linear(self, segments, group)?.into()
            }
            Sharding::ShardedToAll => {
                QuantizedShardedToAllLinear::from_quantized_linear(self, segments, group)?.into()
            }
        })
    }
}

impl ShardableLinear for MaybeQuantizedLinear {
    fn shard(
        &self,
        sharding: Sharding,
        segments: Segments,
        group: &Group,
    ) -> Result<ShardedLinear> {
        match self {
            MaybeQuantizedLinear::Float(l) => l.shard(sharding, segments, group),
            MaybeQuantizedLinear::Quantized(l) => l.shard(sharding, segments, group),
            MaybeQuantizedLinear::Adapted(_) => Err(mlx_rs::Error::InvalidArgument(
                "[shard_linear] a layer with an adapter cannot be sharded; fuse it first".into(),
            )),
            MaybeQuantizedLinear::Sharded(_) => Err(mlx_rs::Error::InvalidArgument(
                "[shard_linear] the layer is already sharded".into(),
            )),
        }
    }
}

/// A new layer holding this process's slice of `module`, which communicates over `group`
/// in its forward pass (sharded-to-all) or its backward pass (all-to-sharded) (Python:
/// `shard_linear(module, sharding, *, segments=1, group=None)`). `module` is not changed.
///
/// A [`Linear`] becomes an [`AllToShardedLinear`] or [`ShardedToAllLinear`], a
/// [`QuantizedLinear`] their quantized forms, held in a [`ShardedLinear`]. Python's string
/// argument is a [`Sharding`] (`"all-to-sharded".parse()?` reads Python's names).
///
/// ```
/// use mlx_nn::{shard_linear, Forward, Linear, Sharding};
/// use mlx_rs::{distributed, ops};
/// let group = distributed::init(false, None)?;
/// let qkv = Linear::new(8, 3 * 8, false)?;
/// // A fused projection: queries, keys and values are sharded each on its own.
/// let sharded = shard_linear(&qkv, Sharding::AllToSharded, 3, &group)?;
/// assert_eq!(sharded.forward(&ops::ones(&[1, 8], None)?)?.shape(), &[1, 24 / group.size()]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn shard_linear<'g, L: ShardableLinear + ?Sized>(
    module: &L,
    sharding: Sharding,
    segments: impl Into<Segments>,
    group: impl Into<Option<&'g Group>>,
) -> Result<ShardedLinear> {
    let group = resolve_group(group.into())?;
    module.shard(sharding, segments.into(), &group)
}
