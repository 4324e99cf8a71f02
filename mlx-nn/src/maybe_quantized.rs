//! A layer that is either in floating point or quantized, decided at run time: what Python
//! gets by `nn.quantize(model)` replacing a module in place, for a typed struct whose field
//! cannot change type.

use mlx_rs::ops::QuantizationMode;
use mlx_rs::{Array, Result};
use mlx_tree::{Flattener, NodeKind, TreeNode, Unflattener};

use crate::{
    Embedding, Forward, Linear, LoRAEmbedding, LoRALinear, NoAdapter, QuantizedEmbedding,
    QuantizedLinear, ShardedLinear,
};

/// A float layer that has a quantized counterpart (Python: a module with `to_quantized`).
pub trait Quantizable: TreeNode {
    /// The quantized layer type.
    type Quantized: TreeNode;
    /// The name the quantized type's node carries in a `TreeDef` (its type name), which tells
    /// the two variants apart when a [`MaybeQuantized`] is rebuilt from its structure.
    const QUANTIZED_NAME: &'static str;
    /// The layer with a low-rank adapter ([`LoRALinear`](crate::LoRALinear) for a linear
    /// layer, [`LoRAEmbedding`](crate::LoRAEmbedding) for a table; [`NoAdapter`](
    /// crate::NoAdapter) for the kinds without one).
    type Adapted: TreeNode;
    /// The name of the adapted type's node in a `TreeDef`.
    const ADAPTED_NAME: &'static str;
    /// The layer split over a distributed group ([`ShardedLinear`](crate::ShardedLinear) for
    /// a linear layer; [`NoAdapter`](crate::NoAdapter) for the kinds that are not split so).
    type Sharded: TreeNode;
    /// The names the sharded type's nodes carry in a `TreeDef` (one per form it takes).
    const SHARDED_NAMES: &'static [&'static str];

    /// The quantized equivalent (Python: `layer.to_quantized(group_size, bits, mode)`).
    fn to_quantized(
        &self,
        group_size: i32,
        bits: i32,
        mode: QuantizationMode,
    ) -> Result<Self::Quantized>;
}

impl Quantizable for Linear {
    type Quantized = QuantizedLinear;
    const QUANTIZED_NAME: &'static str = "QuantizedLinear";
    type Adapted = LoRALinear;
    const ADAPTED_NAME: &'static str = "LoRALinear";
    type Sharded = ShardedLinear;
    const SHARDED_NAMES: &'static [&'static str] = &[
        "AllToShardedLinear",
        "ShardedToAllLinear",
        "QuantizedAllToShardedLinear",
        "QuantizedShardedToAllLinear",
    ];

    fn to_quantized(
        &self,
        group_size: i32,
        bits: i32,
        mode: QuantizationMode,
    ) -> Result<QuantizedLinear> {
        QuantizedLinear::from_linear(self, Some(group_size), Some(bits), mode)
    }
}

impl Quantizable for Embedding {
    type Quantized = QuantizedEmbedding;
    const QUANTIZED_NAME: &'static str = "QuantizedEmbedding";
    type Adapted = LoRAEmbedding;
    const ADAPTED_NAME: &'static str = "LoRAEmbedding";
    type Sharded = NoAdapter;
    const SHARDED_NAMES: &'static [&'static str] = &[];

    fn to_quantized(
        &self,
        group_size: i32,
        bits: i32,
        mode: QuantizationMode,
    ) -> Result<QuantizedEmbedding> {
        QuantizedEmbedding::from_embedding(self, Some(group_size), Some(bits), mode)
    }
}

/// `T`, its quantized form, or either with a low-rank adapter. Transparent in the tree: its
/// parameters are the held layer's, under the same path (`q_proj.weight`, or
/// `q_proj.weight`, `q_proj.scales`, `q_proj.biases`, or `q_proj.linear.weight`,
/// `q_proj.lora_a`, `q_proj.lora_b`), exactly as Python names a module before and after
/// `nn.quantize` and mlx_lm's `linear_to_lora_layers`.
///
/// ```
/// use mlx_nn::{Forward, Linear, MaybeQuantized, Module};
/// use mlx_rs::ops::{self, QuantizationMode};
///
/// let mut proj = MaybeQuantized::Float(Linear::new(64, 8, false)?);
/// proj.quantize(32, 4, QuantizationMode::Affine)?; // nn.quantize(proj, group_size=32, bits=4)
/// let names: Vec<String> = proj.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names, ["weight", "scales", "biases"]);
/// assert_eq!(proj.forward(&ops::ones(&[1, 64], None)?)?.shape(), &[1, 8]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone)]
pub enum MaybeQuantized<T: Quantizable> {
    Float(T),
    Quantized(T::Quantized),
    /// With an adapter (Python: what `linear_to_lora_layers` puts in the layer's place).
    Adapted(Box<T::Adapted>),
    /// This process's slice of the layer, split over a distributed group (Python: what a
    /// model's `shard` puts in the layer's place with `shard_linear`).
    Sharded(Box<T::Sharded>),
}

/// A linear layer, float or quantized.
pub type MaybeQuantizedLinear = MaybeQuantized<Linear>;
/// An embedding table, float or quantized.
pub type MaybeQuantizedEmbedding = MaybeQuantized<Embedding>;

impl<T: Quantizable> MaybeQuantized<T> {
    /// Quantizes the layer in place; an already quantized or adapted layer is left as it is
    /// (Python: `nn.quantize` skips modules without `to_quantized`).
    pub fn quantize(&mut self, group_size: i32, bits: i32, mode: QuantizationMode) -> Result<()> {
        if let MaybeQuantized::Float(layer) = self {
            *self = MaybeQuantized::Quantized(layer.to_quantized(group_size, bits, mode)?);
        }
        Ok(())
    }

    /// Whether the layer is quantized.
    pub fn is_quantized(&self) -> bool {
        matches!(self, MaybeQuantized::Quantized(_))
    }
}

impl<T: Quantizable> From<T> for MaybeQuantized<T> {
    fn from(layer: T) -> Self {
        MaybeQuantized::Float(layer)
    }
}

impl<T: Quantizable> TreeNode for MaybeQuantized<T> {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        match self {
            MaybeQuantized::Float(layer) => layer.flatten(f),
            MaybeQuantized::Quantized(layer) => layer.flatten(f),
            MaybeQuantized::Adapted(layer) => layer.flatten(f),
            MaybeQuantized::Sharded(layer) => layer.flatten(f),
        }
    }

    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        match u.peek_kind()? {
            NodeKind::Struct(name) if name == T::QUANTIZED_NAME => {
                T::Quantized::unflatten(u).map(MaybeQuantized::Quantized)
            }
            NodeKind::Struct(name) if name == T::ADAPTED_NAME => {
                T::Adapted::unflatten(u).map(|a| MaybeQuantized::Adapted(Box::new(a)))
            }
            NodeKind::Struct(name) if T::SHARDED_NAMES.contains(&name) => {
                T::Sharded::unflatten(u).map(|s| MaybeQuantized::Sharded(Box::new(s)))
            }
            _ => T::unflatten(u).map(MaybeQuantized::Float),
        }
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        match self {
            MaybeQuantized::Float(layer) => layer.leaves_mut(f),
            MaybeQuantized::Quantized(layer) => layer.leaves_mut(f),
            MaybeQuantized::Adapted(layer) => layer.leaves_mut(f),
            MaybeQuantized::Sharded(layer) => layer.leaves_mut(f),
        }
    }
}

impl<T> Forward for MaybeQuantized<T>
where
    T: Quantizable + Forward,
    T::Quantized: Forward,
    T::Adapted: Forward,
    T::Sharded: Forward,
{
    fn forward(&self, x: &Array) -> Result<Array> {
        match self {
            MaybeQuantized::Float(layer) => layer.forward(x),
            MaybeQuantized::Quantized(layer) => layer.forward(x),
            MaybeQuantized::Adapted(layer) => layer.forward(x),
            MaybeQuantized::Sharded(layer) => layer.forward(x),
        }
    }
}

impl MaybeQuantized<Linear> {
    /// [`Linear::keep_transposed_weight`] for a float layer; a quantized one has nothing to
    /// keep (its matmul reads the packed weight as it is stored).
    pub fn keep_transposed_weight(&mut self) -> Result<()> {
        match self {
            MaybeQuantized::Float(layer) => layer.keep_transposed_weight(),
            MaybeQuantized::Quantized(_) => Ok(()),
            MaybeQuantized::Adapted(a) => a.linear.keep_transposed_weight(),
            // The sharded layers multiply by `weight.T` as they are written.
            MaybeQuantized::Sharded(_) => Ok(()),
        }
    }
}

impl MaybeQuantized<Embedding> {
    /// [`Embedding::keep_transposed_weight`] for a float table.
    pub fn keep_transposed_weight(&mut self) -> Result<()> {
        match self {
            MaybeQuantized::Float(table) => table.keep_transposed_weight(),
            MaybeQuantized::Quantized(_) => Ok(()),
            MaybeQuantized::Adapted(a) => a.embedding.keep_transposed_weight(),
            MaybeQuantized::Sharded(s) => match **s {},
        }
    }

    /// Uses the table as a linear layer (tied output projection) (Python:
    /// `embedding.as_linear(x)`).
    pub fn as_linear(&self, x: &Array) -> Result<Array> {
        match self {
            MaybeQuantized::Float(e) => e.as_linear(x),
            MaybeQuantized::Quantized(e) => e.as_linear(x),
            MaybeQuantized::Adapted(a) => a.as_linear(x),
            MaybeQuantized::Sharded(s) => match **s {},
        }
    }
}
