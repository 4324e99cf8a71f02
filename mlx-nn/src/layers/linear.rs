//! Python's `mlx.nn.layers.linear`: [`Identity`], [`Linear`] and [`Bilinear`].

use mlx_rs::ops::QuantizationMode;
use mlx_rs::{ops, Array, Error, Result};
use mlx_tree::TreeNode;

use super::base::Frozen;
use super::quantized::QuantizedLinear;
use super::{inv_sqrt, uniform_init};
use crate::kept_transpose::KeptTranspose;
use crate::Forward;

/// `y = x W^T + b` (Python: `nn.Linear(input_dims, output_dims, bias=True)`). Weights are
/// `(output_dims, input_dims)`, initialized uniformly in `±sqrt(1 / input_dims)`.
///
/// ```
/// use mlx_nn::Linear;
/// let with_bias = Linear::new(4, 2, None)?; // nn.Linear(4, 2)
/// let without = Linear::new(4, 2, false)?; // nn.Linear(4, 2, bias=False)
/// assert!(with_bias.bias.is_some() && without.bias.is_none());
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct Linear {
    pub weight: Array,
    pub bias: Option<Array>,
    #[tree(static)]
    pub frozen: Frozen,
    #[tree(skip)]
    kept: KeptTranspose,
}

/// Returns its input (Python: `nn.Identity()`), a placeholder where a layer is optional.
#[derive(Debug, Clone, Copy, Default, TreeNode)]
pub struct Identity;

impl Forward for Identity {
    fn forward(&self, x: &Array) -> Result<Array> {
        Ok(x.clone())
    }
}

impl Linear {
    /// A new layer with random weights (Python's initialization); `bias` `None` is `true`.
    pub fn new(input_dims: i32, output_dims: i32, bias: impl Into<Option<bool>>) -> Result<Linear> {
        let scale = inv_sqrt(f64::from(input_dims));
        Ok(Linear {
            weight: uniform_init(scale, &[output_dims, input_dims])?,
            bias: if bias.into().unwrap_or(true) {
                Some(uniform_init(scale, &[output_dims])?)
            } else {
                None
            },
            frozen: Frozen::default(),
            kept: KeptTranspose::default(),
        })
    }

    /// A layer from given arrays.
    pub fn from_weights(weight: Array, bias: Option<Array>) -> Linear {
        Linear {
            weight,
            bias,
            frozen: Frozen::default(),
            kept: KeptTranspose::default(),
        }
    }

    /// Evaluates `weight.T` once and keeps it, for a layer that will be applied many times
    /// with this weight (inference): its graphs then have no transpose primitive, which MLX
    /// would otherwise dispatch on every call. The kept view is used only while `weight` is
    /// the array it was made from; a new weight, or a layer rebuilt from a tree (`tree_map`,
    /// transforms, `update_parameters`), transposes as usual. Evaluates the weight; not for
    /// use inside a transform.
    ///
    /// ```
    /// use mlx_nn::{Forward, Linear};
    /// use mlx_rs::ops;
    /// let mut layer = Linear::new(4, 2, None)?;
    /// let x = ops::ones(&[3, 4], None)?;
    /// let before = layer.forward(&x)?;
    /// layer.keep_transposed_weight()?;
    /// assert!(ops::array_equal(&layer.forward(&x)?, &before, false)?.item::<bool>()?);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn keep_transposed_weight(&mut self) -> Result<()> {
        self.kept = KeptTranspose::of(&self.weight)?;
        Ok(())
    }

    /// The 4-bit (or `bits`) quantized equivalent (Python: `linear.to_quantized(group_size,
    /// bits, mode)`; `None`: the mode's default).
    pub fn to_quantized(
        &self,
        group_size: Option<i32>,
        bits: Option<i32>,
        mode: QuantizationMode,
    ) -> Result<QuantizedLinear> {
        QuantizedLinear::from_linear(self, group_size, bits, mode)
    }
}

impl Forward for Linear {
    /// Applies the layer (Python: `linear(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        match &self.bias {
            Some(b) => ops::addmm(b, x, &self.kept.of_weight(&self.weight)?, None, None),
            None => ops::matmul(x, &self.kept.of_weight(&self.weight)?),
        }
    }
}

/// `y[i] = x2ᵀ W[i] x1 + b[i]` (Python: `nn.Bilinear(input1_dims, input2_dims, output_dims,
/// bias=True)`). `weight` is `[output_dims, input2_dims, input1_dims]`, `bias` `[output_dims]`,
/// both initialized uniformly in `±sqrt(1 / input1_dims)`.
///
/// ```
/// use mlx_nn::{Bilinear, Module};
/// use mlx_rs::ops;
/// let layer = Bilinear::new(3, 5, 2, None)?; // nn.Bilinear(3, 5, 2)
/// assert_eq!(layer.weight.shape(), &[2, 5, 3]);
/// let (x1, x2) = (ops::ones(&[4, 3], None)?, ops::ones(&[4, 5], None)?);
/// assert_eq!(layer.forward(&x1, &x2)?.shape(), &[4, 2]);
/// assert!(layer.forward(&x2, &x1).is_err()); // the inputs' feature sizes are swapped
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct Bilinear {
    pub weight: Array,
    pub bias: Option<Array>,
    #[tree(static)]
    pub frozen: Frozen,
}

impl Bilinear {
    /// A new layer with Python's initialization (`weight`, then `bias`, uniform in
    /// `±sqrt(1 / input1_dims)`; the scale computed in f64 as Python's `math.sqrt(1.0 /
    /// input1_dims)` and rounded once); `bias` `None` is `true`.
    pub fn new(
        input1_dims: i32,
        input2_dims: i32,
        output_dims: i32,
        bias: impl Into<Option<bool>>,
    ) -> Result<Bilinear> {
        let scale = inv_sqrt(f64::from(input1_dims));
        let weight = uniform_init(scale, &[output_dims, input2_dims, input1_dims])?;
        let bias = if bias.into().unwrap_or(true) {
            Some(uniform_init(scale, &[output_dims])?)
        } else {
            None
        };
        Ok(Bilinear {
            weight,
            bias,
            frozen: Frozen::default(),
        })
    }

    /// A layer from given arrays (`weight` `[output_dims, input2_dims, input1_dims]`).
    pub fn from_weights(weight: Array, bias: Option<Array>) -> Bilinear {
        Bilinear {
            weight,
            bias,
            frozen: Frozen::default(),
        }
    }

    /// Applies the layer to `x1` (`[..., input1_dims]`) and `x2` (`[..., input2_dims]`), giving
    /// `[..., output_dims]` with `x1`'s leading shape (Python: `bilinear(x1, x2)`).
    pub fn forward(&self, x1: &Array, x2: &Array) -> Result<Array> {
        let &[out, in2, in1] = self.weight.shape() else {
            return Err(Error::InvalidArgument(format!(
                "[Bilinear] the weight must have shape [output_dims, input2_dims, input1_dims], \
                 got {:?}",
                self.weight.shape()
            )));
        };
        for (name, x, dims) in [("x1", x1, in1), ("x2", x2, in2)] {
            if x.shape().last() != Some(&dims) {
                return Err(Error::InvalidArgument(format!(
                    "[Bilinear] {name} must have {dims} features in its last axis, got shape \
                     {:?}",
                    x.shape()
                )));
            }
        }
        let xshape = &x1.shape()[..x1.ndim() - 1];
        let x1 = x1.reshape(&[-1, in1])?;
        let x2 = x2.reshape(&[-1, 1, in2])?;
        let w = self.weight.reshape(&[out * in2, in1])?;
        let y = ops::matmul(&x1, &w.t()?)?;
        let y = y.reshape(&[-1, out, in2])?.swapaxes(-2, -1)?;
        let y = ops::matmul(&x2, &y)?.squeeze(1)?;
        let shape: Vec<i32> = xshape.iter().copied().chain([out]).collect();
        let y = y.reshape(&shape)?;
        match &self.bias {
            Some(b) => ops::add(&y, b),
            None => Ok(y),
        }
    }
}
