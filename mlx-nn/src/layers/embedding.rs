//! Python's `mlx.nn.layers.embedding`: [`Embedding`].

use mlx_rs::ops::QuantizationMode;
use mlx_rs::random::{self, NormalOptions};
use mlx_rs::{ops, Array, Result};
use mlx_tree::TreeNode;

use super::base::Frozen;
use super::inv_sqrt;
use super::quantized::QuantizedEmbedding;
use crate::kept_transpose::KeptTranspose;
use crate::Forward;

/// A lookup table of `dims`-vectors (Python: `nn.Embedding(num_embeddings, dims)`),
/// initialized from a normal with scale `sqrt(1 / dims)`.
#[derive(Debug, Clone, TreeNode)]
pub struct Embedding {
    pub weight: Array,
    #[tree(static)]
    pub frozen: Frozen,
    #[tree(skip)]
    kept: KeptTranspose,
}

impl Embedding {
    /// A new table with random entries.
    pub fn new(num_embeddings: i32, dims: i32) -> Result<Embedding> {
        let scale = inv_sqrt(f64::from(dims));
        Ok(Embedding {
            weight: random::normal(
                &[num_embeddings, dims],
                NormalOptions::default().scale(scale),
                None,
            )?,
            frozen: Frozen::default(),
            kept: KeptTranspose::default(),
        })
    }

    /// A table from a given array.
    pub fn from_weights(weight: Array) -> Embedding {
        Embedding {
            weight,
            frozen: Frozen::default(),
            kept: KeptTranspose::default(),
        }
    }

    /// Keeps the table's transpose for [`as_linear`](Self::as_linear), as
    /// [`Linear::keep_transposed_weight`](crate::Linear::keep_transposed_weight) does.
    pub fn keep_transposed_weight(&mut self) -> Result<()> {
        self.kept = KeptTranspose::of(&self.weight)?;
        Ok(())
    }

    /// Uses the table as a linear layer (tied output projection) (Python:
    /// `embedding.as_linear(x)`).
    pub fn as_linear(&self, x: &Array) -> Result<Array> {
        ops::matmul(x, &self.kept.of_weight(&self.weight)?)
    }

    /// The quantized equivalent (Python: `embedding.to_quantized(group_size, bits, mode)`; `None`:
    /// the mode's default).
    pub fn to_quantized(
        &self,
        group_size: Option<i32>,
        bits: Option<i32>,
        mode: QuantizationMode,
    ) -> Result<QuantizedEmbedding> {
        QuantizedEmbedding::from_embedding(self, group_size, bits, mode)
    }
}

impl Forward for Embedding {
    /// The rows for integer indices `x` (Python: `embedding(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        ops::take(&self.weight, x, 0)
    }
}
