//! `export_function` / `import_function` for functions of trees: the graph goes to an
//! `.mlxfn` file (MLX's format, as [`mlx_rs::export`]), and the input and output
//! [`TreeDef`]s to a JSON file beside it (`<file>.tree.json`), so the imported function
//! takes and returns the same types.
//!
//! The MLX 0.32.2 threading limitation of [`mlx_rs::export`] applies: an imported function's
//! results can only be evaluated on the thread that first used MLX.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::def::TreeDef;
use crate::error::{self, Error, Result};
use crate::pair::unflatten_rest;
use crate::{tree_flatten, tree_unflatten, Array, TreeNode};

const FORMAT: &str = "mlx-tree.export";
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Signature {
    format: String,
    version: u32,
    shapeless: bool,
    input: TreeDef,
    output: TreeDef,
}

/// Where the structures of an exported function are kept: `<file>.tree.json`.
pub fn tree_signature_path(file: impl AsRef<Path>) -> PathBuf {
    let mut s = file.as_ref().as_os_str().to_owned();
    s.push(".tree.json");
    PathBuf::from(s)
}

/// Traces `fun` on `example` and writes the graph to `file` and the input/output structures
/// to `<file>.tree.json` (Python: `mx.export_function(file, fun, *args, shapeless=False)`).
/// With `shapeless`, the imported function accepts leaves of other shapes (same ranks).
/// Static data of the input is baked into the graph: the imported function accepts only
/// inputs with the same structure and static data.
pub fn export_function<I, O, F>(
    file: impl AsRef<Path>,
    fun: F,
    example: &I,
    shapeless: impl Into<Option<bool>>,
) -> Result<()>
where
    I: TreeNode,
    O: TreeNode,
    F: Fn(&I) -> Result<O>,
{
    let shapeless = shapeless.into().unwrap_or(false);
    let (leaves, def) = tree_flatten(example)?;
    let out_def = RefCell::new(None);
    let traced = |xs: &[Array]| -> Result<Vec<Array>> {
        let x: I = tree_unflatten(&def, xs.to_vec())?;
        let out = fun(&x)?;
        let (out_leaves, od) = tree_flatten(&out)?;
        let out_leaves = out_leaves.into_iter().cloned().collect();
        *out_def.borrow_mut() = Some(od);
        Ok(out_leaves)
    };
    let inputs: Vec<Array> = leaves.iter().map(|a| (*a).clone()).collect();
    mlx_rs::export::export_function(file.as_ref(), traced, &inputs, shapeless)?;
    let output = out_def
        .into_inner()
        .ok_or_else(|| error::invalid("export_function: the function was not traced"))?;
    let sig = Signature {
        format: FORMAT.into(),
        version: VERSION,
        shapeless,
        input: def,
        output,
    };
    let json = serde_json::to_string_pretty(&sig)
        .map_err(|e| error::invalid(format!("export_function: {e}")))?;
    let sig_path = tree_signature_path(file);
    std::fs::write(&sig_path, json).map_err(|e| {
        Error::io(
            format!("[export_function] cannot write {}", sig_path.display()),
            e,
        )
    })
}

/// A function of trees loaded by [`import_function`].
pub struct ImportedTreeFunction<I, O> {
    inner: mlx_rs::export::ImportedFunction,
    input: TreeDef,
    output: TreeDef,
    shapeless: bool,
    _types: PhantomData<fn(&I) -> O>,
}

/// Loads a function written by [`export_function`], with its structures (Python:
/// `mx.import_function(file)`). The types `I` and `O` are checked against the saved
/// structures here, so a wrong type is an error now rather than at the first call.
pub fn import_function<I: TreeNode, O: TreeNode>(
    file: impl AsRef<Path>,
) -> Result<ImportedTreeFunction<I, O>> {
    let sig_path = tree_signature_path(file.as_ref());
    let text = std::fs::read_to_string(&sig_path).map_err(|e| {
        Error::io(
            format!(
                "[import_function] cannot read the tree signature {}",
                sig_path.display()
            ),
            e,
        )
    })?;
    let sig: Signature = serde_json::from_str(&text).map_err(|e| {
        Error::invalid_data(
            format!(
                "[import_function] {} is not a tree signature",
                sig_path.display()
            ),
            e,
        )
    })?;
    if sig.format != FORMAT || sig.version != VERSION {
        return Err(error::invalid(format!(
            "[import_function] {}: unsupported format {} version {}",
            sig_path.display(),
            sig.format,
            sig.version
        )));
    }
    check_type::<I>(&sig.input, "input")?;
    check_type::<O>(&sig.output, "output")?;
    let inner = mlx_rs::export::import_function(file)?;
    Ok(ImportedTreeFunction {
        inner,
        input: sig.input,
        output: sig.output,
        shapeless: sig.shapeless,
        _types: PhantomData,
    })
}

/// Whether a `T` can be built from `def` (with placeholder leaves).
fn check_type<T: TreeNode>(def: &TreeDef, what: &str) -> Result<()> {
    let leaves = vec![Array::from_scalar(0.0f32); def.num_leaves()];
    tree_unflatten::<T>(def, leaves).map(drop).map_err(|e| {
        error::invalid(format!(
            "[import_function] the exported {what} structure does not fit the type `{}`: {e}",
            std::any::type_name::<T>()
        ))
    })
}

impl<I: TreeNode, O: TreeNode> ImportedTreeFunction<I, O> {
    /// Runs the imported graph. Errors, naming where, if `input`'s structure or static data
    /// differs from the exported one.
    pub fn call(&self, input: &I) -> Result<O> {
        let (leaves, def) = tree_flatten(input)?;
        let mismatch = |diff: String| {
            error::invalid(format!(
                "imported function: the input does not match the exported structure: {diff}"
            ))
        };
        // Dict entries pair by key: the graph takes the leaves in the exported order.
        let ranges = crate::prefix::match_prefix(&self.input, &def).map_err(mismatch)?;
        let mut args = Vec::with_capacity(ranges.len());
        for (i, r) in ranges.into_iter().enumerate() {
            if r.len() != 1 {
                let path = self.input.leaf_paths().swap_remove(i);
                return Err(mismatch(format!(
                    "at `{path}` the input holds a subtree of {} leaves, not one array",
                    r.len()
                )));
            }
            args.push(leaves[r.start].clone());
        }
        let outs = self.inner.call(&args)?;
        unflatten_rest(&self.output, outs.into_iter())
    }

    /// The structure the function takes.
    pub fn input_structure(&self) -> &TreeDef {
        &self.input
    }

    /// The structure the function returns.
    pub fn output_structure(&self) -> &TreeDef {
        &self.output
    }

    /// Whether it was exported shapeless.
    pub fn shapeless(&self) -> bool {
        self.shapeless
    }
}
