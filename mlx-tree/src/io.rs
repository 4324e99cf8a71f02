//! Weights IO by key path: a tree to `.safetensors` and a `.safetensors` file into an
//! existing tree (Python: `nn.Module.save_weights` / `load_weights`).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use crate::error::{self, Result};
use crate::{tree_flatten_with_path, tree_structure, Array, TreeNode};

/// Saves the leaves of `tree` to a `.safetensors` file, each under its key path
/// (`layers.0.attn.wq.weight`) — what Python's
/// `mx.save_safetensors(file, dict(tree_flatten(model.parameters())), metadata)` writes, and
/// so loadable by Python's `model.load_weights(file)`. Evaluates the leaves.
pub fn save_weights<T: TreeNode>(
    path: impl AsRef<Path>,
    tree: &T,
    metadata: Option<&HashMap<String, String>>,
) -> Result<()> {
    let pairs = tree_flatten_with_path(tree)?;
    mlx_rs::io::save_safetensors(path, pairs.iter().map(|(k, v)| (k, *v)), metadata)
}

/// How strictly [`load_weights`] (and [`assign_weights`]) match file keys to tree paths. The
/// default is strict, as Python's `load_weights(file, strict=True)`: every leaf of the tree must
/// be in the file and every array of the file must have a leaf.
///
/// Named after the function it configures: `mlx_lm::LoadOptions` is for loading a whole model
/// directory (Python: `mlx_lm.load`), which is a different call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadWeightsOptions {
    /// Leaves without an array in the file keep their value.
    pub allow_missing: bool,
    /// Arrays of the file without a leaf in the tree are ignored.
    pub allow_unexpected: bool,
}

/// Loads a `.safetensors` file into `tree`, matching file keys to leaf key paths (Python:
/// `model.load_weights(file, strict)`); returns the file's metadata.
///
/// A leaf and its array must have the same shape; the array's dtype is kept, as in Python.
/// Missing keys (paths of the tree not in the file), unexpected keys (in the file, not in the
/// tree) and wrong shapes are one `Err` listing all of them, and `tree` is left unchanged;
/// `options` can allow missing and/or unexpected keys.
pub fn load_weights<T: TreeNode>(
    tree: &mut T,
    path: impl AsRef<Path>,
    options: LoadWeightsOptions,
) -> Result<HashMap<String, String>> {
    let (arrays, metadata) = mlx_rs::io::load_safetensors(path)?;
    assign_weights(tree, arrays, options)?;
    Ok(metadata)
}

/// [`load_weights`] from arrays already in memory, by key path (Python:
/// `model.load_weights(list_of_pairs, strict)`).
pub fn assign_weights<T: TreeNode>(
    tree: &mut T,
    mut weights: HashMap<String, Array>,
    options: LoadWeightsOptions,
) -> Result<()> {
    let paths = tree_structure(&*tree)?.leaf_paths();
    let mut missing = Vec::new();
    let mut wrong_shape = Vec::new();
    let mut new_leaves: Vec<Option<Array>> = Vec::with_capacity(paths.len());
    {
        let leaves = crate::tree_leaves(&*tree);
        for (path, leaf) in paths.iter().zip(leaves) {
            match weights.remove(path) {
                None => {
                    missing.push(path.as_str());
                    new_leaves.push(None);
                }
                Some(w) => {
                    if w.shape() != leaf.shape() {
                        wrong_shape.push(format!(
                            "{path}: file {:?} vs tree {:?}",
                            w.shape(),
                            leaf.shape()
                        ));
                    }
                    new_leaves.push(Some(w));
                }
            }
        }
    }
    let unexpected: BTreeSet<&String> = weights.keys().collect();
    let mut problems = Vec::new();
    if !missing.is_empty() && !options.allow_missing {
        problems.push(format!(
            "missing (in the tree, not in the file): {}",
            missing.join(", ")
        ));
    }
    if !unexpected.is_empty() && !options.allow_unexpected {
        let keys: Vec<&str> = unexpected.iter().map(|k| k.as_str()).collect();
        problems.push(format!(
            "unexpected (in the file, not in the tree): {}",
            keys.join(", ")
        ));
    }
    if !wrong_shape.is_empty() {
        problems.push(format!("wrong shape: {}", wrong_shape.join("; ")));
    }
    if !problems.is_empty() {
        return Err(error::invalid(format!(
            "load_weights: the weights do not match the tree: {}",
            problems.join("; ")
        )));
    }
    let mut it = new_leaves.into_iter();
    tree.leaves_mut(&mut |leaf: &mut Array| {
        if let Some(Some(w)) = it.next() {
            *leaf = w;
        }
    })
}
