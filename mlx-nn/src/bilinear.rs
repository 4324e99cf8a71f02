//! [`Bilinear`] (Python: `mlx.nn.layers.linear.Bilinear`).

use mlx_rs::{ops, Array, Error, Result};
use mlx_tree::TreeNode;

use crate::layers::{inv_sqrt, uniform_init};
use crate::module::Frozen;

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
