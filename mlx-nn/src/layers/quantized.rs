//! Python's `mlx.nn.layers.quantized`: the quantized layers [`QuantizedLinear`],
//! [`QuantizedEmbedding`] and [`QQLinear`], and [`quantize`], which swaps a model's layers for
//! them in place.

use mlx_rs::ops::{self, DequantizeOptions, QqmmOptions, QuantizationMode, QuantizedMatmulOptions};
use mlx_rs::{Array, Error, Result};
use mlx_tree::{tree_flatten, tree_unflatten, NodeKind, StaticData, TreeDef, TreeNode};

use super::base::any_module::AnyModule;
use super::base::{Frozen, Module};
use super::{inv_sqrt, uniform_init, with_bias};
use crate::maybe_quantized::Quantizable;
use crate::{Embedding, Forward, Linear};

/// The group size and bits a mode uses when not given (Python: `_defaults_for_mode`; as
/// there, 0 counts as not given).
pub(crate) fn defaults_for_mode(
    mode: QuantizationMode,
    group_size: Option<i32>,
    bits: Option<i32>,
) -> (i32, i32) {
    let (g, b) = match mode {
        QuantizationMode::Affine => (64, 4),
        QuantizationMode::Mxfp4 => (32, 4),
        QuantizationMode::Nvfp4 => (16, 4),
        QuantizationMode::Mxfp8 => (32, 8),
    };
    (
        group_size.filter(|&g| g != 0).unwrap_or(g),
        bits.filter(|&b| b != 0).unwrap_or(b),
    )
}

// ---------------------------------------------------------------------------------------------
// quantize

/// Which modules [`quantize`] quantizes: given a module's path and the module.
pub type ClassPredicate<'a> = &'a dyn Fn(&str, &AnyModule) -> bool;

/// The keyword arguments of [`quantize`] (Python: `nn.quantize(model, ...)`), with Python's
/// defaults (`group_size=None`, `bits=None`: the mode's; `mode="affine"`;
/// `class_predicate=None`: every layer that has a quantized form).
///
/// Not [`mlx_rs::ops::QuantizeOptions`], which configures the array op `mx.quantize`: this one
/// says which layers of a model to quantize, and how.
#[derive(Clone, Copy)]
pub struct QuantizeModelOptions<'a> {
    pub group_size: Option<i32>,
    pub bits: Option<i32>,
    /// The quantization format (affine, or one of the floating-point modes).
    pub mode: QuantizationMode,
    /// Which leaf modules to quantize, by path and module (Python: `class_predicate`
    /// returning a bool). With a predicate, a chosen layer that the model's type cannot
    /// hold quantized is an error; without one, such layers stay as they are.
    pub class_predicate: Option<ClassPredicate<'a>>,
}

impl Default for QuantizeModelOptions<'_> {
    fn default() -> Self {
        QuantizeModelOptions {
            group_size: None,
            bits: None,
            mode: QuantizationMode::Affine,
            class_predicate: None,
        }
    }
}

impl<'a> QuantizeModelOptions<'a> {
    pub fn group_size(mut self, group_size: i32) -> Self {
        self.group_size = Some(group_size);
        self
    }
    pub fn bits(mut self, bits: i32) -> Self {
        self.bits = Some(bits);
        self
    }
    pub fn mode(mut self, mode: QuantizationMode) -> Self {
        self.mode = mode;
        self
    }
    pub fn class_predicate(mut self, predicate: ClassPredicate<'a>) -> Self {
        self.class_predicate = Some(predicate);
        self
    }
}

/// Replaces the model's [`Linear`] and [`Embedding`] leaf modules by their quantized forms
/// (Python: `nn.quantize(model, group_size, bits, mode=..., class_predicate=...)`), and
/// returns the paths of the layers it quantized, in flatten order.
///
/// Python replaces modules in place whatever their attribute; a Rust field has one type, so
/// a layer can become quantized only where the model's type can hold both forms: a
/// [`MaybeQuantized`](crate::MaybeQuantized) field (`MaybeQuantizedLinear`,
/// `MaybeQuantizedEmbedding`). A plain `Linear` field stays in floating point, as a Python
/// module without `to_quantized` does, unless `class_predicate` chose it (then it is an
/// error naming the path). Python's `quantize_input=True` (turning `Linear` into
/// [`QQLinear`](crate::QQLinear)) has no equivalent here: build `QQLinear` layers with
/// [`QQLinear::from_linear`](crate::QQLinear::from_linear).
///
/// ```
/// use mlx_nn::{quantize, Linear, MaybeQuantizedLinear, Module, QuantizeModelOptions};
/// use mlx_tree::TreeNode;
///
/// #[derive(Clone, TreeNode)]
/// struct Mlp {
///     up: MaybeQuantizedLinear,
///     down: MaybeQuantizedLinear,
///     gate: Linear, // stays in floating point
/// }
/// let mut mlp = Mlp {
///     up: Linear::new(64, 128, false)?.into(),
///     down: Linear::new(128, 64, false)?.into(),
///     gate: Linear::new(64, 2, false)?,
/// };
/// let done = quantize(&mut mlp, QuantizeModelOptions::default().group_size(32).bits(4))?;
/// assert_eq!(done, ["up", "down"]);
/// assert!(mlp.up.is_quantized() && mlp.down.is_quantized());
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn quantize<M: Module>(
    model: &mut M,
    options: QuantizeModelOptions<'_>,
) -> Result<Vec<String>> {
    let mode = options.mode;
    let (group_size, bits) = defaults_for_mode(options.mode, options.group_size, options.bits);
    let (leaves, def) = tree_flatten(model)?;
    let mut leaves: Vec<Array> = leaves.into_iter().cloned().collect();
    let mut def = def;
    let mut done = Vec::new();
    // Leaf modules in flatten order; replaced from the last, so the indices of those before
    // stay valid.
    let candidates: Vec<(usize, String)> = model
        .leaf_modules()?
        .into_iter()
        .filter(|(_, m)| matches!(m.type_name(), "Linear" | "Embedding"))
        .filter(|(path, m)| options.class_predicate.map_or(true, |p| p(path, m)))
        .map(|(path, _)| {
            let index = def.node_at(&path).map(|n| n.index());
            (index.expect("a module path of this model"), path)
        })
        .collect();
    for (index, path) in candidates.into_iter().rev() {
        let node = def.node(index).expect("a node of this structure");
        let range = node.leaf_range();
        let part = leaves[range.clone()].to_vec();
        let (q_leaves, q_def) = match node.kind() {
            NodeKind::Struct("Linear") => {
                quantized::<Linear>(&node.subtree(), part, group_size, bits, mode)?
            }
            _ => quantized::<Embedding>(&node.subtree(), part, group_size, bits, mode)?,
        };
        let new_def = def.replace_subtree(index, &q_def)?;
        let mut new_leaves = leaves.clone();
        new_leaves.splice(range, q_leaves);
        // Only where the model's type can hold the quantized layer.
        match tree_unflatten::<M>(&new_def, new_leaves.clone()) {
            Ok(_) => {
                def = new_def;
                leaves = new_leaves;
                done.push(path);
            }
            Err(e) if options.class_predicate.is_some() => {
                return Err(Error::InvalidArgument(format!(
                    "[quantize] `{path}` cannot be quantized in place: its field is not a \
                     MaybeQuantized ({e})"
                )))
            }
            Err(_) => {}
        }
    }
    *model = tree_unflatten(&def, leaves)?;
    done.reverse();
    Ok(done)
}

/// The quantized form of the layer of type `T` in `def` / `leaves`, flattened.
fn quantized<T: Quantizable>(
    def: &TreeDef,
    leaves: Vec<Array>,
    group_size: i32,
    bits: i32,
    mode: QuantizationMode,
) -> Result<(Vec<Array>, TreeDef)> {
    let layer: T = tree_unflatten(def, leaves)?;
    let q = layer.to_quantized(group_size, bits, mode)?;
    let (leaves, def) = tree_flatten(&q)?;
    Ok((leaves.into_iter().cloned().collect(), def))
}

// ---------------------------------------------------------------------------------------------
// QuantizedLinear and QuantizedEmbedding

/// The quantization the quantized layers use, as [`ops::quantize`] options.
fn quant_options(
    group_size: i32,
    bits: i32,
    mode: QuantizationMode,
) -> ops::QuantizeOptions<'static> {
    ops::QuantizeOptions::default()
        .group_size(group_size)
        .bits(bits)
        .mode(mode)
}

/// Whether a quantized layer multiplies 2 to 7 rows as 8, the rows after its own zeros (not a
/// Python option: Python's layers never pad).
///
/// MLX 0.32.2's CUDA quantized product of fewer than 8 rows runs its one-row kernel once per
/// row, reading the weights again each time, while 8 rows or more take its matrix kernel,
/// which reads them once: on an H200, a 4096 -> 12288 4-bit product took 61 us for 2 rows and
/// 197 us for 7, 28 us for 8 (docs/performance.md). Padded, a row's values are what MLX's
/// matrix kernel gives it, not bit-equal to the one-row kernel's. Only the affine mode pads
/// (the floating-point modes were not measured).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, StaticData)]
pub enum PadRows {
    /// MLX's own choice of kernel, as Python runs.
    #[default]
    Never,
    /// Where MLX's current stream is on a CUDA GPU ([`mlx_rs::cuda::is_current_device`]).
    OnCuda,
    /// On every device (on a CPU each row's values are the unpadded product's).
    Always,
}

/// The fewest rows for which MLX's CUDA quantized product reads the weights once.
const MATRIX_KERNEL_ROWS: i32 = 8;

impl PadRows {
    fn applies(self, rows: i32, mode: QuantizationMode) -> Result<bool> {
        if !(2..MATRIX_KERNEL_ROWS).contains(&rows) || mode != QuantizationMode::Affine {
            return Ok(false);
        }
        match self {
            PadRows::Never => Ok(false),
            PadRows::OnCuda => mlx_rs::cuda::is_current_device(),
            PadRows::Always => Ok(true),
        }
    }
}

/// The [`QuantizedWeight`] of a layer with the fields of that name (`QuantizedLinear`,
/// `QuantizedEmbedding`).
macro_rules! quantized_weight {
    ($layer:expr) => {
        QuantizedWeight {
            weight: &$layer.weight,
            scales: &$layer.scales,
            biases: $layer.biases.as_ref(),
            group_size: $layer.group_size,
            bits: $layer.bits,
            mode: $layer.mode,
            pad_rows: $layer.pad_rows,
        }
    };
}

/// The quantized weight of a layer, as [`ops::quantized_matmul`] takes it.
struct QuantizedWeight<'a> {
    weight: &'a Array,
    scales: &'a Array,
    biases: Option<&'a Array>,
    group_size: i32,
    bits: i32,
    mode: QuantizationMode,
    pad_rows: PadRows,
}

impl QuantizedWeight<'_> {
    /// `x` times the weight transposed (as the layers store it), over `x`'s last axis.
    fn apply(&self, x: &Array) -> Result<Array> {
        let options = QuantizedMatmulOptions {
            biases: self.biases,
            transpose: true,
            group_size: Some(self.group_size),
            bits: Some(self.bits),
            mode: self.mode,
        };
        let shape = x.shape();
        let Some((&k, lead)) = shape.split_last() else {
            return ops::quantized_matmul(x, self.weight, self.scales, options);
        };
        let rows = lead.iter().product::<i32>();
        if !self.pad_rows.applies(rows, self.mode)? {
            return ops::quantized_matmul(x, self.weight, self.scales, options);
        }
        let padded = ops::pad(
            &x.reshape(&[rows, k])?,
            [(0, MATRIX_KERNEL_ROWS - rows), (0, 0)],
            None,
            0.0f32,
        )?;
        let y = ops::quantized_matmul(&padded, self.weight, self.scales, options)?;
        let y = y.index(..rows)?;
        let mut out = lead.to_vec();
        out.push(y.dim(-1)?);
        y.reshape(&out)
    }
}

fn all_frozen(names: &[&str]) -> Frozen {
    Frozen(names.iter().map(|s| s.to_string()).collect())
}

/// A linear layer with quantized weights (Python: `nn.QuantizedLinear(input_dims,
/// output_dims, bias=True, group_size=None, bits=None, mode="affine")`): parameters `weight`
/// (packed `uint32`), `scales`, `biases` (the affine mode's; `None` in the floating-point
/// modes), and `bias`. Frozen, as in Python.
#[derive(Debug, Clone, TreeNode)]
pub struct QuantizedLinear {
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
    /// Whether products of 2 to 7 rows go through MLX's 8-row kernel ([`PadRows`]).
    #[tree(static)]
    pub pad_rows: PadRows,
    #[tree(static)]
    pub frozen: Frozen,
}

impl QuantizedLinear {
    /// Quantizes a [`Linear`] (Python: `nn.QuantizedLinear.from_linear(linear,
    /// group_size=None, bits=None, mode="affine")`; `None`: the mode's default).
    pub fn from_linear(
        linear: &Linear,
        group_size: Option<i32>,
        bits: Option<i32>,
        mode: QuantizationMode,
    ) -> Result<QuantizedLinear> {
        let (gs, bits) = defaults_for_mode(mode, group_size, bits);
        let (weight, scales, biases) =
            ops::quantize(&linear.weight, quant_options(gs, bits, mode))?;
        Ok(QuantizedLinear {
            weight,
            scales,
            biases,
            bias: linear.bias.clone(),
            group_size: gs,
            bits,
            mode,
            pad_rows: PadRows::Never,
            // As in Python: the bias, set after the layer froze itself, stays trainable.
            frozen: all_frozen(&["weight", "scales", "biases"]),
        })
    }
}

impl QuantizedLinear {
    /// A layer from already quantized arrays, as a checkpoint stores them (Python: an
    /// `nn.QuantizedLinear` whose parameters `load_weights` replaced). Frozen, as in Python.
    pub fn from_parts(
        weight: Array,
        scales: Array,
        biases: Option<Array>,
        bias: Option<Array>,
        group_size: i32,
        bits: i32,
        mode: QuantizationMode,
    ) -> QuantizedLinear {
        QuantizedLinear {
            weight,
            scales,
            biases,
            bias,
            group_size,
            bits,
            mode,
            pad_rows: PadRows::Never,
            frozen: all_frozen(&["weight", "scales", "biases"]),
        }
    }
}

impl Forward for QuantizedLinear {
    /// Applies the layer (Python: `qlinear(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        let y = quantized_weight!(self).apply(x)?;
        with_bias(y, self.bias.as_ref())
    }
}

/// An embedding table with quantized rows (Python: `nn.QuantizedEmbedding(num_embeddings,
/// dims, group_size=None, bits=None, mode="affine")`). Frozen.
#[derive(Debug, Clone, TreeNode)]
pub struct QuantizedEmbedding {
    pub weight: Array,
    pub scales: Array,
    pub biases: Option<Array>,
    #[tree(static)]
    pub group_size: i32,
    #[tree(static)]
    pub bits: i32,
    #[tree(static)]
    pub mode: QuantizationMode,
    /// Whether [`as_linear`](Self::as_linear) multiplies 2 to 7 rows through MLX's 8-row
    /// kernel ([`PadRows`]).
    #[tree(static)]
    pub pad_rows: PadRows,
    #[tree(static)]
    pub frozen: Frozen,
}

impl QuantizedEmbedding {
    /// Quantizes an [`Embedding`] (Python: `nn.QuantizedEmbedding.from_embedding(emb,
    /// group_size=None, bits=None, mode="affine")`; `None`: the mode's default).
    pub fn from_embedding(
        embedding: &Embedding,
        group_size: Option<i32>,
        bits: Option<i32>,
        mode: QuantizationMode,
    ) -> Result<QuantizedEmbedding> {
        let (gs, bits) = defaults_for_mode(mode, group_size, bits);
        let (weight, scales, biases) =
            ops::quantize(&embedding.weight, quant_options(gs, bits, mode))?;
        Ok(QuantizedEmbedding {
            weight,
            scales,
            biases,
            group_size: gs,
            bits,
            mode,
            pad_rows: PadRows::Never,
            frozen: all_frozen(&["weight", "scales", "biases"]),
        })
    }

    /// A table from already quantized arrays, as a checkpoint stores them. Frozen.
    pub fn from_parts(
        weight: Array,
        scales: Array,
        biases: Option<Array>,
        group_size: i32,
        bits: i32,
        mode: QuantizationMode,
    ) -> QuantizedEmbedding {
        QuantizedEmbedding {
            weight,
            scales,
            biases,
            group_size,
            bits,
            mode,
            pad_rows: PadRows::Never,
            frozen: all_frozen(&["weight", "scales", "biases"]),
        }
    }

    /// Uses the table as a linear layer (Python: `qembedding.as_linear(x)`).
    pub fn as_linear(&self, x: &Array) -> Result<Array> {
        quantized_weight!(self).apply(x)
    }
}

impl Forward for QuantizedEmbedding {
    /// The dequantized rows for indices `x` (Python: `qembedding(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        let biases = match &self.biases {
            Some(b) => Some(ops::take(b, x, 0)?),
            None => None,
        };
        let options = DequantizeOptions {
            biases: biases.as_ref(),
            group_size: Some(self.group_size),
            bits: Some(self.bits),
            mode: self.mode,
            ..Default::default()
        };
        ops::dequantize(
            &ops::take(&self.weight, x, 0)?,
            &ops::take(&self.scales, x, 0)?,
            options,
        )
    }
}

// ---------------------------------------------------------------------------------------------
// QQLinear

/// A linear layer without bias whose matmul quantizes both operands (Python:
/// `nn.QQLinear(input_dims, output_dims, group_size=None, bits=None, mode="nvfp4")`), with
/// MLX's `qqmm`.
///
/// As in Python it has two states, switched by [`Module::train`](crate::Module::train) /
/// [`Module::eval_mode`](crate::Module::eval_mode):
/// - training (a new layer): `weight` is in floating point, quantized on the fly in every
///   call, so gradients reach it;
/// - evaluation: `weight` is stored quantized (packed `uint32`) with its `scales`.
///
/// MLX 0.32.2 implements `qqmm` on CUDA GPUs only (modes `nvfp4` and `mxfp8`); elsewhere
/// [`forward`](Forward::forward) returns MLX's error.
///
/// ```
/// use mlx_nn::{Module, QQLinear};
/// use mlx_rs::Dtype;
/// let mut layer = QQLinear::new(64, 32, Default::default())?;
/// assert_eq!(layer.weight.dtype(), Dtype::Float32);
/// layer.eval_mode()?; // quantizes the weight (Python: layer.eval())
/// assert_eq!(layer.weight.dtype(), Dtype::Uint32);
/// assert!(layer.scales.is_some());
/// layer.train(true)?; // back to floating point
/// assert!(layer.scales.is_none());
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct QQLinear {
    /// `(output_dims, input_dims)` in floating point, or packed when quantized.
    pub weight: Array,
    /// The weight's scales while it is quantized.
    pub scales: Option<Array>,
    #[tree(static)]
    pub group_size: i32,
    #[tree(static)]
    pub bits: i32,
    #[tree(static)]
    pub mode: QuantizationMode,
    #[tree(static)]
    training: bool,
    #[tree(static)]
    pub frozen: Frozen,
}

/// The keyword arguments of [`QQLinear::new`] and [`QQLinear::from_linear`], with Python's
/// defaults (`group_size=None`, `bits=None`: the mode's; `mode="nvfp4"`).
#[derive(Debug, Clone, Copy)]
pub struct QQLinearOptions {
    pub group_size: Option<i32>,
    pub bits: Option<i32>,
    pub mode: QuantizationMode,
}

impl Default for QQLinearOptions {
    fn default() -> Self {
        QQLinearOptions {
            group_size: None,
            bits: None,
            mode: QuantizationMode::Nvfp4,
        }
    }
}

impl QQLinear {
    /// Its type name in a tree.
    pub(crate) const NAME: &'static str = "QQLinear";

    /// A new layer in training mode, with weights initialized as Python's (uniform in
    /// `±sqrt(1 / input_dims)`).
    pub fn new(input_dims: i32, output_dims: i32, options: QQLinearOptions) -> Result<QQLinear> {
        let weight = uniform_init(inv_sqrt(f64::from(input_dims)), &[output_dims, input_dims])?;
        Ok(QQLinear::with_weight(weight, options))
    }

    fn with_weight(weight: Array, options: QQLinearOptions) -> QQLinear {
        let (group_size, bits) = defaults_for_mode(options.mode, options.group_size, options.bits);
        QQLinear {
            weight,
            scales: None,
            group_size,
            bits,
            mode: options.mode,
            training: true,
            frozen: Frozen::default(),
        }
    }

    /// The layer with `linear`'s weight, in training mode (Python:
    /// `nn.QQLinear.from_linear(linear, group_size=None, bits=None, mode="nvfp4")`; a Rust
    /// `Linear` has no training flag, and a new Python one is in training mode). Errors for
    /// a layer with a bias, as Python does.
    pub fn from_linear(linear: &Linear, options: QQLinearOptions) -> Result<QQLinear> {
        if linear.bias.is_some() {
            return Err(Error::InvalidArgument(
                "[QQLinear] QQLinear does not support bias yet.".into(),
            ));
        }
        Ok(QQLinear::with_weight(linear.weight.clone(), options))
    }

    /// Whether the weight is stored quantized.
    pub fn is_quantized(&self) -> bool {
        self.scales.is_some()
    }

    /// Whether the layer is in training mode.
    pub fn training(&self) -> bool {
        self.training
    }

    /// Quantizes the weight if it is not (Python: `layer.quantize()`).
    pub fn quantize(&mut self) -> Result<()> {
        if self.scales.is_none() {
            let options = ops::QuantizeOptions::default()
                .group_size(self.group_size)
                .bits(self.bits)
                .mode(self.mode);
            let (weight, scales, _) = ops::quantize(&self.weight, options)?;
            self.weight = weight;
            self.scales = Some(scales);
        }
        Ok(())
    }

    /// Brings the weight back to floating point if it is quantized (Python:
    /// `layer.dequantize()`).
    pub fn dequantize(&mut self) -> Result<()> {
        if let Some(scales) = &self.scales {
            let options = DequantizeOptions::default()
                .group_size(self.group_size)
                .bits(self.bits)
                .mode(self.mode);
            self.weight = ops::dequantize(&self.weight, scales, options)?;
            self.scales = None;
        }
        Ok(())
    }

    /// What `Module::train` does besides setting the flag (Python: `_set_training_mode`).
    pub(crate) fn set_training_mode(&mut self, mode: bool) -> Result<()> {
        self.training = mode;
        if mode {
            self.dequantize()
        } else {
            self.quantize()
        }
    }
}

impl Forward for QQLinear {
    fn forward(&self, x: &Array) -> Result<Array> {
        let options = QqmmOptions {
            scales: self.scales.as_ref(),
            group_size: Some(self.group_size),
            bits: Some(self.bits),
            mode: self.mode,
            ..Default::default()
        };
        ops::qqmm(x, &self.weight, options)
    }
}
