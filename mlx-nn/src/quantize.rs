//! [`quantize`]: quantizing a model's layers in place (Python: `nn.quantize`).

use mlx_rs::ops::QuantizationMode;
use mlx_rs::{Array, Error, Result};
use mlx_tree::{tree_flatten, tree_unflatten, NodeKind, TreeDef};

use crate::maybe_quantized::Quantizable;
use crate::modules::AnyModule;
use crate::qq_linear::defaults_for_mode;
use crate::{Embedding, Linear, Module};

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
    /// Only `Affine`: the quantized layers of this crate hold affine quantization.
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
    if options.mode != QuantizationMode::Affine {
        return Err(Error::InvalidArgument(format!(
            "[quantize] mode {:?}: mlx_nn's QuantizedLinear and QuantizedEmbedding hold affine \
             quantization only",
            options.mode.as_str()
        )));
    }
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
                quantized::<Linear>(&node.subtree(), part, group_size, bits)?
            }
            _ => quantized::<Embedding>(&node.subtree(), part, group_size, bits)?,
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
) -> Result<(Vec<Array>, TreeDef)> {
    let layer: T = tree_unflatten(def, leaves)?;
    let q = layer.to_quantized(group_size, bits)?;
    let (leaves, def) = tree_flatten(&q)?;
    Ok((leaves.into_iter().cloned().collect(), def))
}
