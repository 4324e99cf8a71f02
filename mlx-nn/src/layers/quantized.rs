//! [`QQLinear`]: a linear layer that quantizes its input as well as its weight (Python:
//! `nn.QQLinear`), and the quantization defaults of each mode.

use mlx_rs::ops::{self, DequantizeOptions, QqmmOptions, QuantizationMode, QuantizeOptions};
use mlx_rs::{Array, Error, Result};
use mlx_tree::TreeNode;

use crate::layers::{inv_sqrt, uniform_init};
use crate::{Forward, Frozen, Linear};

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

/// A linear layer without bias whose matmul quantizes both operands (Python:
/// `nn.QQLinear(input_dims, output_dims, group_size=None, bits=None, mode="nvfp4")`), with
/// MLX's `qqmm`.
///
/// As in Python it has two states, switched by [`Module::train`](crate::Module::train) /
/// [`Module::eval`](crate::Module::eval):
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
/// layer.eval()?; // quantizes the weight
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
            let options = QuantizeOptions::default()
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
