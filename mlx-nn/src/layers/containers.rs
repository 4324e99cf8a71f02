//! Python's `mlx.nn.layers.containers`: [`Sequential`].

use mlx_rs::{Array, Result};
use mlx_tree::TreeNode;

use crate::Forward;

/// Layers applied in order (Python: `nn.Sequential(*modules)`); its parameters are under
/// `layers.0`, `layers.1`, ... as in Python. `L` is a tuple of layers (different types) or a
/// `Vec` of one layer type.
///
/// ```
/// use mlx_nn::{Forward, Linear, Module, ReLU, Sequential};
/// use mlx_rs::ops;
/// let mlp = Sequential::new((Linear::new(4, 8, true)?, ReLU, Linear::new(8, 2, true)?));
/// let y = mlp.forward(&ops::ones(&[3, 4], None)?)?;
/// assert_eq!(y.shape(), &[3, 2]);
/// let names: Vec<String> = mlp.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names, ["layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct Sequential<L: TreeNode> {
    pub layers: L,
}

impl<L: TreeNode> Sequential<L> {
    /// Chains `layers`.
    pub fn new(layers: L) -> Self {
        Sequential { layers }
    }
}

impl<T: TreeNode + Forward> Forward for Sequential<Vec<T>> {
    fn forward(&self, x: &Array) -> Result<Array> {
        let mut x = x.clone();
        for l in &self.layers {
            x = l.forward(&x)?;
        }
        Ok(x)
    }
}

macro_rules! sequential_tuples {
    ($( ($($name:ident $idx:tt),+) )+) => {$(
        impl<$($name: TreeNode + Forward),+> Forward for Sequential<($($name,)+)> {
            fn forward(&self, x: &Array) -> Result<Array> {
                let x = x.clone();
                $( let x = self.layers.$idx.forward(&x)?; )+
                Ok(x)
            }
        }
    )+};
}

sequential_tuples! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, G 5)
    (A 0, B 1, C 2, D 3, E 4, G 5, H 6)
    (A 0, B 1, C 2, D 3, E 4, G 5, H 6, I 7)
}
