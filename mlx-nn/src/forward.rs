//! [`Forward`]: calling a layer or a model (Python: `module(x)`, i.e. `__call__`).

use mlx_rs::{Array, Result};

/// A layer or model with one array in and one array out (Python: `y = module(x)`). Every
/// single-input layer of this crate implements it, [`Sequential`](crate::Sequential) chains
/// it, and a user model implements it to be used the same way (`model.forward(&x)`).
///
/// The parameter-side methods (`parameters`, `freeze`, `train`, `load_weights`, ...) are
/// [`Module`](crate::Module), which every tree has; `Forward` is only the call.
///
/// Layers whose Python `__call__` takes more than one input keep that signature as an
/// inherent `forward` and do not implement this trait: [`RoPE::forward(x,
/// offset)`](crate::RoPE::forward), [`MultiHeadAttention::forward(q, k, v,
/// mask)`](crate::MultiHeadAttention::forward), [`Dropout::forward_with_key(x,
/// key)`](crate::Dropout::forward_with_key). Write your own multi-input blocks (attention with a
/// mask and a KV cache) the same way: a plain method with the inputs it needs.
///
/// The trait is object safe: `Vec<Box<dyn Forward>>` works.
///
/// ```
/// use mlx_nn::{Forward, Linear, Module, RMSNorm};
/// use mlx_rs::{ops, Array, Result};
/// use mlx_tree::TreeNode;
///
/// #[derive(TreeNode)]
/// struct Block {
///     norm: RMSNorm,
///     proj: Linear,
/// }
///
/// impl Forward for Block {
///     fn forward(&self, x: &Array) -> Result<Array> {
///         self.proj.forward(&self.norm.forward(x)?)
///     }
/// }
///
/// let block = Block { norm: RMSNorm::new(8, None)?, proj: Linear::new(8, 4, false)? };
/// let y = block.forward(&ops::ones(&[2, 8], None)?)?;
/// assert_eq!(y.shape(), &[2, 4]);
/// assert_eq!(block.num_parameters()?, 8 + 8 * 4);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub trait Forward {
    /// Applies the layer to `x`.
    fn forward(&self, x: &Array) -> Result<Array>;
}

impl<F: Forward + ?Sized> Forward for &F {
    fn forward(&self, x: &Array) -> Result<Array> {
        (**self).forward(x)
    }
}

impl<F: Forward + ?Sized> Forward for Box<F> {
    fn forward(&self, x: &Array) -> Result<Array> {
        (**self).forward(x)
    }
}

/// `x.apply(&layer)`: [`Forward::forward`] written left to right, for chains
/// (`x.apply(&self.norm)?.apply(&self.proj)`), as candle's `xs.apply(&m)`.
pub trait Apply {
    /// `layer.forward(self)`.
    fn apply<F: Forward + ?Sized>(&self, layer: &F) -> Result<Array>;
}

impl Apply for Array {
    fn apply<F: Forward + ?Sized>(&self, layer: &F) -> Result<Array> {
        layer.forward(self)
    }
}
