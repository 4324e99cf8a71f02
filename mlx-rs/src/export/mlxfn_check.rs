//! Structural and semantic validation of an `.mlxfn` file before MLX parses it.
//!
//! MLX 0.32.2's reader (`ImportedFunction::ImportedFunction` in `export.cpp`) trusts the file:
//! it reserves vectors for any element count the file names, indexes the list of input ids and
//! the list of sibling ids and dtypes by the length of *another* list, and builds arrays with
//! whatever shape, dtype and primitive state the file holds. The imported graph is later run
//! as is: in a non-shapeless function every primitive gets the output shape stored in the
//! file, and MLX's CPU kernels size their loops from those shapes and dispatch on those
//! dtypes on a worker thread, where an unsupported dtype is an uncaught exception. So a
//! single flipped bit can double-free, write past a buffer, make BLAS call `exit` or abort the
//! process, either at import or at the first call.
//!
//! This walk reads the same layout with every length checked against the file size, mirrors
//! how MLX resolves array ids (function inputs, constants shared between functions, sibling
//! outputs), and checks every primitive against the invariants MLX's ops establish and its
//! kernels rely on: input and output counts, output shapes and dtypes, axes, enum values and
//! the other state fields (see `prims`). Constants that reach a gather, scatter or dynamic
//! slice as indices, or an integer division as divisors, are read and their values checked
//! too, as are small integer arrays the graph computes from constants alone (mlx-rs's `take`
//! clamps constant indices that way) and indices it computes within bounds of its own (from an
//! `argsort`, an `argmax`, an `arange`, a remainder by a constant): MLX's kernels do not
//! bound-check indices, and a zero divisor traps. A file that passes imports, and a call with arguments
//! of one of its signatures runs the graph it holds without crashing, but for what follows.
//!
//! Not covered, because the file does not hold them: index values and integer divisors that
//! are computed from the call's arguments (MLX checks neither, in an imported graph as in
//! Python), and, for shapeless functions, argument shapes for which MLX's own shape inference
//! of the replayed graph goes wrong. `CustomKernel` primitives are refused: their source code
//! is arbitrary and cannot be checked.

mod format;
mod prims;
mod tape;
mod value_checks;
mod walker;

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use crate::Result;

use format::{Dt, Field, Meta, Val};
use tape::{read_function, ConstLoc};
use value_checks::Values;
use walker::{io_err, Walker};

/// Everything about the devices the file's streams name that MLX does not check itself.
#[derive(Clone, Copy, Debug)]
pub(super) struct Devices {
    /// GPUs this MLX build can use (0 on the CPU-only build).
    pub(super) gpus: i32,
}

/// Checks the whole `.mlxfn` file at `path` against MLX 0.32.2's reader and the primitives'
/// invariants; `devices` says which stream devices MLX can resolve.
pub(super) fn validate(path: &Path, devices: Devices) -> Result<()> {
    let shown = path.display().to_string();
    let file = File::open(path).map_err(|e| io_err(&shown, e))?;
    let len = file.metadata().map_err(|e| io_err(&shown, e))?.len();
    let mut w = Walker {
        r: BufReader::new(file),
        pos: 0,
        len,
        path: shown,
    };

    w.string("the MLX version")?;
    let at = w.pos;
    let function_count = w.i32("the function count")?;
    if function_count < 0 {
        return Err(w.fail_at(at, format!("negative function count {function_count}")));
    }
    w.bool("the shapeless flag")?;
    w.string("the metadata")?;

    // MLX shares constants between the functions of one file by id.
    let mut constants: HashMap<u64, (Meta, ConstLoc)> = HashMap::new();
    let mut functions = Vec::new();
    for f in 0..function_count {
        functions.push(read_function(&mut w, f, devices, &mut constants)?);
    }
    if w.pos != w.len {
        return Err(w.fail(format!(
            "{} bytes follow the last of the {function_count} functions",
            w.len - w.pos
        )));
    }
    let mut values = Values {
        path: &w.path,
        file: w.r.into_inner(),
        constants: HashMap::new(),
        small_constants: HashMap::new(),
    };
    for f in &functions {
        values.check(f)?;
    }
    Ok(())
}
