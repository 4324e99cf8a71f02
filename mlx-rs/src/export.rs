//! Saving traced functions to `.mlxfn` files and loading them back (Python:
//! `mx.export_function`, `mx.exporter`, `mx.import_function`).
//!
//! The file format is MLX's own, so a function exported here imports in Python MLX 0.32 and
//! the reverse. Arguments are the function's flat positional arrays (Python flattens its
//! positional argument trees the same way).
//!
//! ```no_run
//! use mlx_rs::{export, Array};
//! let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
//! export::export_function("double.mlxfn", |a: &[Array]| Ok(vec![&a[0] * 2.0]), &[x.clone()], None)?;
//! let double = export::import_function("double.mlxfn")?;
//! assert_eq!(double.call(&[x])?[0].to_vec::<f32>()?, vec![2.0, 4.0]);
//! # Ok::<(), mlx_rs::Error>(())
//! ```
//!
//! # Corrupt files
//! [`import_function`] checks the whole file before MLX reads it (MLX 0.32.2's reader trusts
//! every length, id and shape in it, and a corrupt file could crash the process there or in a
//! later call): a truncated or corrupt file, or one whose graph MLX could not run safely, is an
//! [`Error::Io`] naming the byte where it goes wrong. The file has no checksum, so a change that
//! leaves a consistent graph (a constant's value, say) is not detected. Index values and integer
//! divisors computed from the arguments at call time are not checked, by MLX or here.
//!
//! # Threads
//! [`ImportedFunction`] is `Send` (it may move to another thread) but not `Sync`.
//! [`FunctionExporter`] is neither: it borrows its function and traces on the calling thread.
//!
//! **MLX 0.32.2 limitation:** an imported graph is bound to the *first* stream MLX ever
//! created for the device in this process (`import_function` picks the first existing stream
//! of the device), and MLX 0.32 streams belong to the thread that created them. So the
//! results of [`ImportedFunction::call`] can only be evaluated on the thread that first used
//! MLX for that device (usually the main thread); on any other thread evaluating them fails
//! with MLX's "There is no Stream(cpu, 0) in current thread" error (an `Err`, not a crash).
//! If that thread has exited, imported functions cannot be evaluated at all.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::CString;
use std::marker::PhantomData;
use std::path::Path;

use mlx_sys as sys;

use crate::closure::{check_transform, fill_arrays, Closure};
use crate::error::check_handler;
use crate::handles::{MapStringToArray, VectorArray};
use crate::{Array, Device, DeviceType, Error, Result};

mod mlxfn_check;

fn c_path(file: &Path) -> Result<CString> {
    let s = file
        .to_str()
        .ok_or_else(|| Error::invalid(format!("[export] path {file:?} is not valid UTF-8")))?;
    CString::new(s).map_err(|_| Error::invalid(format!("[export] path {s:?} contains a NUL byte")))
}

/// Traces `fun` on `args` and writes the graph to `file` (Python:
/// `mx.export_function(file, fun, *args, shapeless=False)`). `shapeless` defaults to `false`;
/// with `true` the imported function accepts other shapes of the same ranks.
pub fn export_function<F>(
    file: impl AsRef<Path>,
    fun: F,
    args: &[Array],
    shapeless: impl Into<Option<bool>>,
) -> Result<()>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let path = c_path(file.as_ref())?;
    let args = VectorArray::from_arrays(args);
    let closure = Closure::borrowed(fun)?;
    // SAFETY: valid path, closure and vector handles; mlx-c traces the closure during the
    // call and does not keep it.
    check_transform(|| unsafe {
        sys::mlx_export_function(
            path.as_ptr(),
            closure.as_raw(),
            args.0,
            shapeless.into().unwrap_or(false),
        )
    })
}

/// Writes several traces of one function (e.g. for different shapes) to one file (Python:
/// `mx.exporter(file, fun, shapeless=False)`). Each [`FunctionExporter::call`] adds one
/// trace; the file is complete when the exporter is dropped or [`FunctionExporter::close`]d.
pub fn exporter<'a, F>(
    file: impl AsRef<Path>,
    fun: F,
    shapeless: impl Into<Option<bool>>,
) -> Result<FunctionExporter<'a>>
where
    F: Fn(&[Array]) -> Result<Vec<Array>> + 'a,
{
    let path = c_path(file.as_ref())?;
    let closure = Closure::borrowed(fun)?;
    // SAFETY: valid path and closure; the exporter keeps a copy of the closure until it is
    // freed, which `FunctionExporter` does before dropping `closure` (field order).
    let raw = check_handler(|| unsafe {
        sys::mlx_function_exporter_new(
            path.as_ptr(),
            closure.as_raw(),
            shapeless.into().unwrap_or(false),
        )
    })?;
    if raw.ctx.is_null() {
        return Err(Error::Mlx(
            "[export_function] could not create the exporter".into(),
        ));
    }
    Ok(FunctionExporter {
        raw,
        failed: Cell::new(None),
        _closure: closure,
        _not_send: PhantomData,
    })
}

/// A multi-trace exporter; see [`exporter`].
pub struct FunctionExporter<'a> {
    raw: sys::mlx_function_exporter,
    // Set once a trace failed; see `call`.
    failed: Cell<Option<Error>>,
    // Dropped after `raw` (declaration order), so MLX releases its copy first.
    _closure: Closure<'a>,
    _not_send: PhantomData<*const ()>,
}

impl FunctionExporter<'_> {
    /// Traces the function on `args` and appends the trace to the file. Each signature may be
    /// exported once.
    ///
    /// After a failed call (the function returned `Err` or panicked, or MLX refused the
    /// graph) the exporter refuses further calls: MLX 0.32.2 leaves a half-made entry in its
    /// signature table after a failed trace, and the next trace would read past it (a crash
    /// in MLX). Make a new exporter (a new file) instead.
    pub fn call(&self, args: &[Array]) -> Result<()> {
        if let Some(e) = self.failed.take() {
            self.failed.set(Some(e.clone()));
            return Err(Error::InvalidArgument(format!(
                "[export_function] this exporter cannot be used after a failed trace ({e}); \
                 create a new exporter"
            )));
        }
        let args = VectorArray::from_arrays(args);
        // SAFETY: valid exporter and vector handles.
        let result =
            check_transform(|| unsafe { sys::mlx_function_exporter_apply(self.raw, args.0) });
        if let Err(e) = &result {
            self.failed.set(Some(e.clone()));
        }
        result
    }

    /// Finishes the file (the same as dropping the exporter).
    pub fn close(self) {}
}

impl Drop for FunctionExporter<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once; this closes the file.
        unsafe { sys::mlx_function_exporter_free(self.raw) };
    }
}

/// A function loaded from an `.mlxfn` file (Python: `mx.import_function(file)`).
pub struct ImportedFunction {
    raw: sys::mlx_imported_function,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

// SAFETY: the handle owns MLX's ImportedFunction (a graph description plus arrays with
// atomic refcounts); nothing in it is tied to the thread that loaded it.
unsafe impl Send for ImportedFunction {}

/// Loads a function written by [`export_function`], [`exporter`] or Python MLX.
///
/// The whole file is checked in Rust first (its layout, every array id, and each primitive's
/// state, inputs and outputs), so a truncated or corrupt file is an [`Error::Io`] naming the
/// byte where it goes wrong, rather than a crash inside MLX's reader or, later, in a call.
pub fn import_function(file: impl AsRef<Path>) -> Result<ImportedFunction> {
    let path = c_path(file.as_ref())?;
    crate::error::init();
    // A build without a GPU backend reports an error or zero; either way no GPU stream resolves.
    let gpus = Device::count(DeviceType::Gpu).unwrap_or(0);
    mlxfn_check::validate(file.as_ref(), mlxfn_check::Devices { gpus })?;
    // SAFETY: valid NUL-terminated path; failure is reported through the error handler.
    let raw = check_handler(|| unsafe { sys::mlx_imported_function_new(path.as_ptr()) })?;
    if raw.ctx.is_null() {
        return Err(Error::Mlx(format!(
            "[import_function] could not load {}",
            file.as_ref().display()
        )));
    }
    Ok(ImportedFunction {
        raw,
        _not_sync: PhantomData,
    })
}

impl ImportedFunction {
    /// Runs the imported graph on `args` (positional arrays, as exported).
    pub fn call(&self, args: &[Array]) -> Result<Vec<Array>> {
        let args = VectorArray::from_arrays(args);
        // SAFETY: valid handles; mlx-c writes the outputs into `res`.
        fill_arrays(|res| unsafe { sys::mlx_imported_function_apply(res, self.raw, args.0) })
    }

    /// Runs the imported graph on positional `args` and keyword arguments `kwargs` (Python:
    /// `f(*args, **kwargs)` for a function exported with keyword arguments).
    pub fn call_kwargs(
        &self,
        args: &[Array],
        kwargs: &HashMap<String, Array>,
    ) -> Result<Vec<Array>> {
        let args = VectorArray::from_arrays(args);
        let kwargs = MapStringToArray::from_pairs(kwargs)?;
        // SAFETY: valid handles; mlx-c writes the outputs into `res`.
        fill_arrays(|res| unsafe {
            sys::mlx_imported_function_apply_kwargs(res, self.raw, args.0, kwargs.0)
        })
    }
}

impl Drop for ImportedFunction {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_imported_function_free(self.raw) };
    }
}

impl std::fmt::Debug for ImportedFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ImportedFunction")
    }
}
