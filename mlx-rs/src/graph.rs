//! Printing computation graphs: Graphviz DOT (Python: `mx.export_to_dot`) and MLX's text
//! listing, with optional names for arrays.

use std::collections::HashSet;
use std::ffi::CStr;

use mlx_sys as sys;

use crate::error::{check, Result};
use crate::handles::{c_string, MlxString, VectorArray};
use crate::{Array, Error};

/// What the evaluation guards (`distributed::lost`, `io::failed_reads`) read of a graph.
impl Array {
    /// Whether MLX has not scheduled the array for evaluation yet (it is part of a graph that
    /// no eval has reached).
    pub(crate) fn is_unscheduled(&self) -> Result<bool> {
        let mut status = 0;
        // SAFETY: valid handle; writes one integer.
        check(|| unsafe { sys::_mlx_array_status(&mut status, self.as_raw()) })?;
        Ok(status == 0)
    }

    /// The arrays this one is computed from and its sibling outputs (empty once it is
    /// evaluated and detached from its graph).
    pub(crate) fn graph_neighbours(&self) -> Result<Vec<Array>> {
        let mut inputs = VectorArray::new();
        // SAFETY: valid handles; mlx-c fills the vector we own.
        check(|| unsafe { sys::_mlx_array_inputs(&mut inputs.0, self.as_raw()) })?;
        let mut siblings = VectorArray::new();
        // SAFETY: as above.
        check(|| unsafe { sys::_mlx_array_siblings(&mut siblings.0, self.as_raw()) })?;
        let mut out = inputs.to_vec()?;
        out.extend(siblings.to_vec()?);
        Ok(out)
    }

    /// The name of the primitive that computes the array (MLX's `primitive().name()`, e.g.
    /// `"Sum AllReduce"`); empty once it is evaluated and detached, or for data.
    pub(crate) fn primitive_name(&self) -> Result<String> {
        // SAFETY: valid handle; mlx-c fills the string MlxString owns.
        MlxString::fill(|out| unsafe { sys::_mlx_array_primitive_name(out, self.as_raw()) })
    }

    /// Drops the array's primitive, inputs and siblings (MLX's `array::detach()`). Only for an
    /// unscheduled array of this thread's graph: no evaluation is using it.
    pub(crate) fn detach_unscheduled(&self) -> Result<()> {
        // SAFETY: valid handle; MLX only resets the array's own graph links.
        check(|| unsafe { sys::_mlx_array_detach(self.as_raw()) })
    }
}

/// Names for arrays in a printed graph (Python: the keyword arguments of `mx.export_to_dot`).
pub struct NodeNamer {
    raw: sys::mlx_node_namer,
}

impl NodeNamer {
    /// A namer with no names; unnamed arrays get generated labels.
    pub fn new() -> NodeNamer {
        crate::error::init();
        NodeNamer {
            // SAFETY: creates an empty namer, freed in Drop.
            raw: unsafe { sys::mlx_node_namer_new() },
        }
    }

    /// Gives `array` a label in printed graphs.
    pub fn set_name(&mut self, array: &Array, name: &str) -> Result<()> {
        let name = c_string(name, "node name")?;
        // SAFETY: valid handles; mlx-c copies the string.
        check(|| unsafe { sys::mlx_node_namer_set_name(self.raw, array.as_raw(), name.as_ptr()) })
    }

    /// The label `array` gets (the given name, or a generated one).
    pub fn name(&self, array: &Array) -> Result<String> {
        let mut ptr = std::ptr::null();
        // SAFETY: valid handles; mlx-c points `ptr` at a string owned by the namer.
        check(|| unsafe { sys::mlx_node_namer_get_name(&mut ptr, self.raw, array.as_raw()) })?;
        if ptr.is_null() {
            return Err(Error::Mlx("[node_namer] no name returned".into()));
        }
        // SAFETY: NUL-terminated and alive while the namer is borrowed.
        Ok(unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned())
    }
}

impl Default for NodeNamer {
    fn default() -> Self {
        NodeNamer::new()
    }
}

impl Drop for NodeNamer {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_node_namer_free(self.raw) };
    }
}

/// The graph that computes `outputs`, in Graphviz DOT (Python: `mx.export_to_dot`).
///
/// ```
/// use mlx_rs::{graph, ops, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let y = ops::exp(&(&x * 2.0))?;
/// let dot = graph::export_to_dot(&[y], None)?;
/// assert!(dot.starts_with("digraph"));
/// assert!(dot.contains("Exp"));
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn export_to_dot(outputs: &[Array], namer: Option<&NodeNamer>) -> Result<String> {
    render(outputs, namer, |file, namer, outputs| {
        // SAFETY: valid stream, namer and vector handles for the call.
        unsafe { sys::mlx_export_to_dot(file, namer, outputs) }
    })
}

/// The graph that computes `outputs`, as MLX's plain-text listing (C++: `print_graph`).
pub fn print_graph(outputs: &[Array], namer: Option<&NodeNamer>) -> Result<String> {
    render(outputs, namer, |file, namer, outputs| {
        // SAFETY: valid stream, namer and vector handles for the call.
        unsafe { sys::mlx_print_graph(file, namer, outputs) }
    })
}

/// mlx-c writes graphs to a C `FILE*`; an in-memory stream collects the text.
fn render(
    outputs: &[Array],
    namer: Option<&NodeNamer>,
    write: impl FnOnce(*mut sys::FILE, sys::mlx_node_namer, sys::mlx_vector_array) -> i32,
) -> Result<String> {
    let vec = VectorArray::from_arrays(outputs);
    let local;
    let namer = match namer {
        Some(n) => n,
        None => {
            local = NodeNamer::new();
            &local
        }
    };
    let mut buf: *mut libc::c_char = std::ptr::null_mut();
    let mut len: libc::size_t = 0;
    // SAFETY: open_memstream allocates a growing buffer and reports it through `buf`/`len`
    // after fflush/fclose.
    let file = unsafe { libc::open_memstream(&mut buf, &mut len) };
    if file.is_null() {
        return Err(Error::io(
            "opening an in-memory stream",
            std::io::Error::last_os_error(),
        ));
    }
    let status = check(|| write(file.cast(), namer.raw, vec.0));
    // SAFETY: `file` is the stream opened above, closed exactly once; after fclose `buf`
    // holds `len` bytes that we own and must free.
    let text = unsafe {
        libc::fclose(file);
        let text = if buf.is_null() {
            String::new()
        } else {
            String::from_utf8_lossy(std::slice::from_raw_parts(buf.cast::<u8>(), len)).into_owned()
        };
        libc::free(buf.cast());
        text
    };
    status.map(|()| text)
}

/// Visits `targets` and the unevaluated arrays they are computed from (inputs and sibling
/// outputs), once each, with each array's id. Iterative: a graph of any depth is fine.
pub(crate) fn walk(
    targets: &[&Array],
    mut visit: impl FnMut(&Array, usize) -> Result<()>,
) -> Result<()> {
    let mut seen = HashSet::new();
    let mut stack: Vec<Array> = targets.iter().map(|&a| a.clone()).collect();
    while let Some(a) = stack.pop() {
        let id = a.id()?;
        if !seen.insert(id) {
            continue;
        }
        visit(&a, id)?;
        if a.is_unscheduled()? {
            stack.extend(a.graph_neighbours()?);
        }
    }
    Ok(())
}
