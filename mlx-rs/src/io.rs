//! Loading and saving arrays: `.npy`, `.safetensors` and `.gguf` (Python: `mx.load`,
//! `mx.save`, `mx.save_safetensors`, `mx.save_gguf`).
//!
//! Files are read lazily, as in Python: loading parses the header and returns arrays whose
//! data is read when they are evaluated. A read that fails then (the file was truncated or
//! rewritten since the load, the reader returned an error) is an `Err` from that eval and
//! from every later eval of those arrays or of anything computed from them
//! (`io/failed_reads.rs` keeps that record; MLX itself would hand back unread buffers).
//!
//! Besides paths, `.npy` and `.safetensors` load from any [`Read`] + [`Seek`] source and save
//! to any [`Write`] + [`Seek`] sink, through mlx-c's reader/writer vtable.
//!
//! | Python | Rust |
//! |---|---|
//! | `mx.load("a.npy")` | [`load_npy`] |
//! | `mx.load("w.safetensors", return_metadata=True)` | [`load_safetensors`] |
//! | `mx.load("m.gguf", return_metadata=True)` | [`load_gguf`] |
//! | `mx.load(file_object)` | [`load_npy_from_reader`], [`load_safetensors_from_reader`] |
//! | `mx.save("a.npy", a)` | [`save`] |
//! | `mx.save_safetensors(f, arrays, metadata)` | [`save_safetensors`], [`save_safetensors_to_writer`] |
//! | `mx.save_gguf(f, arrays, metadata)` | [`save_gguf`] |
//!
//! ```
//! use std::collections::HashMap;
//! use mlx_rs::{io, Array};
//! let mut arrays = HashMap::new();
//! arrays.insert("w".to_string(), Array::from_slice(&[1.0f32, 2.0], &[2])?);
//! let meta = HashMap::from([("format".to_string(), "mlx".to_string())]);
//! let buffer = io::save_safetensors_to_writer(std::io::Cursor::new(Vec::new()), &arrays, Some(&meta))?;
//! let (loaded, metadata) = io::load_safetensors_from_reader(std::io::Cursor::new(buffer.into_inner()))?;
//! assert_eq!(loaded["w"].to_vec::<f32>()?, vec![1.0, 2.0]);
//! assert_eq!(metadata["format"], "mlx");
//! # Ok::<(), mlx_rs::Error>(())
//! ```
//!
//! Corrupt input gives `Err`: every header is validated in Rust, with checked arithmetic,
//! before MLX's arrays reach the caller. MLX's own parsers would otherwise abort the process
//! on some malformed `.gguf` headers, and load `.npy` and `.safetensors` headers with
//! negative, wrapped-around or truncated shapes as arrays that read garbage or out of bounds
//! when evaluated.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CString};
use std::io::{Read, Seek, SeekFrom, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mlx_sys as sys;

use crate::error::{check, Error, Result};
use crate::handles::{c_string, MapStringToArray, MapStringToString, MlxString, VectorString};
use crate::{Array, Dtype};
use failed_reads::LoadWatch;

pub(crate) mod failed_reads;
mod ggml_type;
mod gguf_check;
mod json;
mod npy_check;
mod safetensors_check;

pub use ggml_type::GgmlType;

// ---------------------------------------------------------------------------------------------
// Paths

fn path_cstring(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::invalid(format!("path {path:?} is not valid UTF-8")))?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| Error::invalid(format!("path {path:?} contains a NUL byte")))
}

// ---------------------------------------------------------------------------------------------
// .npy

/// Loads one array from a `.npy` file (Python: `mx.load("a.npy")`).
pub fn load_npy(path: impl AsRef<Path>) -> Result<Array> {
    let path = path.as_ref();
    let label = path.display().to_string();
    let file = CheckedFile::open(path).map_err(|e| Error::io(format!("[load] {label}"), e))?;
    npy_check::validate_file(&file.file, &label)?;
    let watch = LoadWatch::new(&label);
    let (io, _) = RawReader::new(file, &label, Some(Arc::clone(&watch)))?;
    // SAFETY: valid reader handle; mlx-c writes a new array into res.
    let a = Array::try_from_stream_op(|res, s| unsafe { sys::mlx_load_reader(res, io.0, s) })?;
    watch.arm([&a])?;
    Ok(a)
}

/// Loads one `.npy` array from a reader (Python: `mx.load(file_object, format="npy")`).
///
/// The reader moves into MLX: the data is read when the array is evaluated, possibly from
/// MLX's I/O threads, hence `Send + 'static`. It is dropped when the last array that reads
/// from it is dropped. The array is read from the reader's current position on.
pub fn load_npy_from_reader<R: Read + Seek + Send + 'static>(reader: R) -> Result<Array> {
    let mut reader = FromHere::new(reader)?;
    npy_check::validate_stream(&mut reader, "<reader>")?;
    let watch = LoadWatch::new("<reader>");
    let (io, _) = RawReader::new(reader, "rust reader", Some(Arc::clone(&watch)))?;
    // SAFETY: valid reader handle; mlx-c writes a new array into res.
    let a = Array::try_from_stream_op(|res, s| unsafe { sys::mlx_load_reader(res, io.0, s) })?;
    watch.arm([&a])?;
    Ok(a)
}

/// Saves an array as `.npy`; like Python, `.npy` is appended when the path lacks it
/// (Python: `mx.save(file, arr)`). Evaluates the array.
pub fn save(path: impl AsRef<Path>, a: &Array) -> Result<()> {
    let c = path_cstring(path.as_ref())?;
    // Evaluated here, so a CUDA build encodes it under the lock (`evaluation/encode.rs`).
    a.eval()?;
    // SAFETY: NUL-terminated path; valid array handle.
    check(|| unsafe { sys::mlx_save(c.as_ptr(), a.as_raw()) })
}

/// Writes an array in `.npy` format to `writer` and hands the writer back
/// (Python: `mx.save(file_object, arr)`). Evaluates the array.
pub fn save_npy_to_writer<W: Write + Seek + Send + 'static>(writer: W, a: &Array) -> Result<W> {
    a.eval()?;
    let (io, shared) = RawWriter::new(writer, "rust writer")?;
    // SAFETY: valid writer and array handles; the write is synchronous.
    let status = check(|| unsafe { sys::mlx_save_writer(io.0, a.as_raw()) });
    finish_writer(io, shared, status)
}

// ---------------------------------------------------------------------------------------------
// .safetensors

/// Arrays by name, and the string metadata of a `.safetensors` file.
pub type Safetensors = (HashMap<String, Array>, HashMap<String, String>);

/// Loads a `.safetensors` file: arrays by name and the `__metadata__` strings
/// (Python: `mx.load("w.safetensors", return_metadata=True)`).
pub fn load_safetensors(path: impl AsRef<Path>) -> Result<Safetensors> {
    let path = path.as_ref();
    let label = path.display().to_string();
    // "Failed to open" is MLX's wording for a missing file, kept for callers matching it.
    let file = CheckedFile::open(path)
        .map_err(|e| Error::io(format!("[load_safetensors] Failed to open {label}"), e))?;
    safetensors_check::validate_file(&file.file, &label)?;
    let watch = LoadWatch::new(&label);
    let (io, _) = RawReader::new(file, &label, Some(Arc::clone(&watch)))?;
    let (mut a, mut m) = (MapStringToArray::new(), MapStringToString::new());
    crate::stream::with_current_raw(|s| {
        // SAFETY: valid reader handle; mlx-c fills the two maps we own.
        check(|| unsafe { sys::mlx_load_safetensors_reader(&mut a.0, &mut m.0, io.0, s) })
    })??;
    let arrays = a.to_hash_map()?;
    watch.arm(arrays.values())?;
    Ok((arrays, m.to_hash_map()?))
}

/// Loads `.safetensors` data from a reader (Python: `mx.load(file_object, format="safetensors",
/// return_metadata=True)`). The reader moves into MLX, as for [`load_npy_from_reader`].
pub fn load_safetensors_from_reader<R: Read + Seek + Send + 'static>(
    reader: R,
) -> Result<Safetensors> {
    let watch = LoadWatch::new("<reader>");
    let (io, shared) = RawReader::new(
        FromHere::new(reader)?,
        "rust reader",
        Some(Arc::clone(&watch)),
    )?;
    let (mut a, mut m) = (MapStringToArray::new(), MapStringToString::new());
    crate::stream::with_current_raw(|s| {
        // SAFETY: valid reader handle; mlx-c fills the two maps we own.
        check(|| unsafe { sys::mlx_load_safetensors_reader(&mut a.0, &mut m.0, io.0, s) })
    })??;
    // Checked after MLX's parse rather than before: that parse only builds arrays (nothing is
    // read until they are evaluated, and they are dropped here on failure), and letting MLX
    // read the stream first keeps its reader errors, panics caught at the FFI boundary
    // included, as they were.
    {
        let mut stream = shared
            .lock()
            .map_err(|_| Error::io("loading", std::io::Error::other("the reader panicked")))?;
        safetensors_check::validate_stream(&mut *stream, "<reader>")?;
    }
    let arrays = a.to_hash_map()?;
    watch.arm(arrays.values())?;
    Ok((arrays, m.to_hash_map()?))
}

/// Saves arrays (any map or list of `(name, &Array)`) and optional string metadata as
/// `.safetensors` (Python: `mx.save_safetensors(file, arrays, metadata=None)`). Like Python,
/// `.safetensors` is appended when the path lacks it. Evaluates the arrays.
pub fn save_safetensors<'a, K: AsRef<str> + 'a>(
    path: impl AsRef<Path>,
    arrays: impl IntoIterator<Item = (&'a K, &'a Array)>,
    metadata: Option<&HashMap<String, String>>,
) -> Result<()> {
    let c = path_cstring(path.as_ref())?;
    let arrays: Vec<_> = arrays.into_iter().collect();
    crate::eval(arrays.iter().map(|(_, a)| *a))?;
    let arrays = MapStringToArray::from_pairs(arrays)?;
    let metadata = MapStringToString::from_pairs(metadata.into_iter().flatten())?;
    // SAFETY: NUL-terminated path; valid map handles.
    check(|| unsafe { sys::mlx_save_safetensors(c.as_ptr(), arrays.0, metadata.0) })
}

/// Writes `.safetensors` data to `writer` and hands the writer back
/// (Python: `mx.save_safetensors(file_object, arrays, metadata)`). Evaluates the arrays.
pub fn save_safetensors_to_writer<'a, W, K>(
    writer: W,
    arrays: impl IntoIterator<Item = (&'a K, &'a Array)>,
    metadata: Option<&HashMap<String, String>>,
) -> Result<W>
where
    W: Write + Seek + Send + 'static,
    K: AsRef<str> + 'a,
{
    let arrays: Vec<_> = arrays.into_iter().collect();
    crate::eval(arrays.iter().map(|(_, a)| *a))?;
    let arrays = MapStringToArray::from_pairs(arrays)?;
    let metadata = MapStringToString::from_pairs(metadata.into_iter().flatten())?;
    let (io, shared) = RawWriter::new(writer, "rust writer")?;
    // SAFETY: valid writer and map handles; the write is synchronous.
    let status = check(|| unsafe { sys::mlx_save_safetensors_writer(io.0, arrays.0, metadata.0) });
    finish_writer(io, shared, status)
}

// ---------------------------------------------------------------------------------------------
// .gguf

/// One GGUF metadata value, as Python MLX returns it: an array (numbers, scalars as 0-d
/// arrays), a string, or a list of strings.
#[derive(Debug, Clone)]
pub enum GgufMetadata {
    Array(Array),
    String(String),
    Strings(Vec<String>),
}

/// Arrays by name, and the metadata of a `.gguf` file.
pub type Gguf = (HashMap<String, Array>, HashMap<String, GgufMetadata>);

/// An owned `mlx_io_gguf`.
struct GgufHandle(sys::mlx_io_gguf);

impl Drop for GgufHandle {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_io_gguf_free(self.0) };
    }
}

/// Loads a `.gguf` file (Python: `mx.load("m.gguf", return_metadata=True)`). Quantized
/// `Q4_0`/`Q4_1`/`Q8_0` tensors come back as MLX quantized triples (`name`, `name.scales`,
/// `name.biases`) and other quantized types are converted to float16, as in Python.
///
/// The header is checked in Rust first, so a truncated or corrupt file is an `Err` rather
/// than a crash inside MLX's GGUF parser. MLX memory-maps the file read-write, so the file
/// must be writable.
pub fn load_gguf(path: impl AsRef<Path>) -> Result<Gguf> {
    let path = path.as_ref();
    let metadata_keys = gguf_check::validate(path)?;
    let c = path_cstring(path)?;
    crate::error::init();
    // SAFETY: creates an empty handle, owned by the guard.
    let mut gguf = GgufHandle(unsafe { sys::mlx_io_gguf_new() });
    crate::stream::with_current_raw(|s| {
        // SAFETY: NUL-terminated path; mlx-c fills the handle we own.
        check(|| unsafe { sys::mlx_load_gguf(&mut gguf.0, c.as_ptr(), s) })
    })??;

    let mut keys = VectorString::new();
    // SAFETY: valid handles; mlx-c fills the vector we own.
    check(|| unsafe { sys::mlx_io_gguf_get_keys(&mut keys.0, gguf.0) })?;
    let mut arrays = HashMap::new();
    for name in keys.to_vec()? {
        let key = c_string(&name, "array name")?;
        // SAFETY: valid handle and key; mlx-c writes a new array into res.
        let a = Array::try_from_op(|res| unsafe {
            sys::mlx_io_gguf_get_array(res, gguf.0, key.as_ptr())
        })?;
        arrays.insert(name, a);
    }

    let mut metadata = HashMap::new();
    for name in metadata_keys {
        let key = c_string(&name, "metadata key")?;
        if let Some(value) = gguf_metadata(&gguf, &key)? {
            metadata.insert(name, value);
        }
    }
    Ok((arrays, metadata))
}

/// Reads one metadata value by trying the three kinds mlx-c can hold.
fn gguf_metadata(gguf: &GgufHandle, key: &CString) -> Result<Option<GgufMetadata>> {
    let has = |f: unsafe extern "C" fn(*mut bool, sys::mlx_io_gguf, *const c_char) -> c_int| {
        let mut flag = false;
        crate::error::init();
        // SAFETY: valid handle and key; writes one bool. Status 2 means "no such key".
        let status = unsafe { f(&mut flag, gguf.0, key.as_ptr()) };
        match status {
            0 | 2 => Ok(flag),
            _ => Err(crate::error::last_error_or("reading GGUF metadata")),
        }
    };
    if has(sys::mlx_io_gguf_has_metadata_array)? {
        // SAFETY: valid handle and key; mlx-c writes a new array into res.
        let a = Array::try_from_op(|res| unsafe {
            sys::mlx_io_gguf_get_metadata_array(res, gguf.0, key.as_ptr())
        })?;
        return Ok(Some(GgufMetadata::Array(a)));
    }
    if has(sys::mlx_io_gguf_has_metadata_string)? {
        // SAFETY: valid handle and key; mlx-c fills the string we own.
        let s = MlxString::fill(|s| unsafe {
            sys::mlx_io_gguf_get_metadata_string(s, gguf.0, key.as_ptr())
        })?;
        return Ok(Some(GgufMetadata::String(s)));
    }
    if has(sys::mlx_io_gguf_has_metadata_vector_string)? {
        let mut v = VectorString::new();
        // SAFETY: valid handle and key; mlx-c fills the vector we own.
        check(|| unsafe {
            sys::mlx_io_gguf_get_metadata_vector_string(&mut v.0, gguf.0, key.as_ptr())
        })?;
        return Ok(Some(GgufMetadata::Strings(v.to_vec()?)));
    }
    Ok(None)
}

/// Saves arrays and metadata as `.gguf` (Python: `mx.save_gguf(file, arrays, metadata)`).
/// Like Python, `.gguf` is appended when the path lacks it. Evaluates the arrays.
///
/// `general.alignment`, if given, must be a uint32 scalar between 1 and 1024 (MLX's GGUF
/// writer cannot pad beyond that).
pub fn save_gguf<'a, K: AsRef<str> + 'a, M: AsRef<str> + 'a>(
    path: impl AsRef<Path>,
    arrays: impl IntoIterator<Item = (&'a K, &'a Array)>,
    metadata: impl IntoIterator<Item = (&'a M, &'a GgufMetadata)>,
) -> Result<()> {
    let c = path_cstring(path.as_ref())?;
    crate::error::init();
    // SAFETY: creates an empty handle, owned by the guard.
    let gguf = GgufHandle(unsafe { sys::mlx_io_gguf_new() });
    let arrays: Vec<_> = arrays.into_iter().collect();
    crate::eval(arrays.iter().map(|(_, a)| *a))?;
    for (k, a) in arrays {
        let key = c_string(k.as_ref(), "array name")?;
        // SAFETY: valid handles; mlx-c copies the key and shares the array.
        check(|| unsafe { sys::mlx_io_gguf_set_array(gguf.0, key.as_ptr(), a.as_raw()) })?;
    }
    for (k, v) in metadata {
        let name = k.as_ref();
        let key = c_string(name, "metadata key")?;
        match v {
            GgufMetadata::Array(a) => {
                if name == "general.alignment" {
                    check_alignment(a)?;
                }
                a.eval()?;
                // SAFETY: valid handles; mlx-c copies the key and shares the array.
                check(|| unsafe {
                    sys::mlx_io_gguf_set_metadata_array(gguf.0, key.as_ptr(), a.as_raw())
                })?;
            }
            GgufMetadata::String(s) => {
                let value = c_string(s, "metadata value")?;
                // SAFETY: valid handle; mlx-c copies both strings.
                check(|| unsafe {
                    sys::mlx_io_gguf_set_metadata_string(gguf.0, key.as_ptr(), value.as_ptr())
                })?;
            }
            GgufMetadata::Strings(list) => {
                let v = VectorString::from_strs(list, "metadata value")?;
                // SAFETY: valid handles; mlx-c copies the key and the strings.
                check(|| unsafe {
                    sys::mlx_io_gguf_set_metadata_vector_string(gguf.0, key.as_ptr(), v.0)
                })?;
            }
        }
    }
    // SAFETY: NUL-terminated path; valid handle.
    check(|| unsafe { sys::mlx_save_gguf(c.as_ptr(), gguf.0) })
}

fn check_alignment(a: &Array) -> Result<()> {
    let ok = a.dtype() == Dtype::Uint32
        && a.size() == 1
        && matches!(a.reshape(&[])?.item::<u32>()?, 1..=1024);
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "[save_gguf] general.alignment must be a uint32 scalar between 1 and 1024",
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// The reader/writer vtable: mlx-c calls these with the descriptor we handed it.

/// What mlx-c's descriptor points to. `stream` is shared with the Rust caller for writers, so
/// the writer can be handed back after a synchronous save.
struct Desc<T> {
    stream: Arc<Mutex<T>>,
    label: CString,
    failed: AtomicBool,
    /// For a lazy load: told about every positional read (MLX reads each array with one).
    watch: Option<Arc<LoadWatch>>,
}

/// Runs one callback on the descriptor: locks the stream, catches panics (unwinding into C++
/// is undefined behaviour), and marks the stream failed on any error so `good()` reports it.
///
/// # Safety
/// `desc` must be the pointer made by [`RawReader::new`]/[`RawWriter::new`] for this `T`,
/// not yet freed.
unsafe fn with_desc<T, R>(
    desc: *mut c_void,
    on_error: R,
    f: impl FnOnce(&mut T) -> std::io::Result<R>,
) -> R {
    // SAFETY: guaranteed by the caller.
    let desc = unsafe { &*(desc as *const Desc<T>) };
    let result = catch_unwind(AssertUnwindSafe(|| {
        // A poisoned lock means an earlier callback panicked; the stream is unusable.
        let mut guard = desc
            .stream
            .lock()
            .map_err(|_| std::io::Error::other("stream poisoned by a panic"))?;
        f(&mut guard)
    }));
    match result {
        Ok(Ok(v)) => v,
        _ => {
            desc.failed.store(true, Ordering::Relaxed);
            on_error
        }
    }
}

unsafe extern "C" fn cb_is_open(_desc: *mut c_void) -> bool {
    true
}

unsafe extern "C" fn cb_good<T>(desc: *mut c_void) -> bool {
    // SAFETY: mlx-c passes back the descriptor it was given.
    let desc = unsafe { &*(desc as *const Desc<T>) };
    !desc.failed.load(Ordering::Relaxed)
}

unsafe extern "C" fn cb_tell<T: Seek>(desc: *mut c_void) -> usize {
    // SAFETY: mlx-c passes back the descriptor it was given.
    unsafe { with_desc::<T, _>(desc, 0, |s| Ok(s.stream_position()? as usize)) }
}

unsafe extern "C" fn cb_seek<T: Seek>(desc: *mut c_void, off: i64, whence: c_int) -> c_int {
    let pos = match whence {
        0 if off >= 0 => SeekFrom::Start(off as u64),
        1 => SeekFrom::Current(off),
        2 => SeekFrom::End(off),
        _ => return -1,
    };
    // SAFETY: mlx-c passes back the descriptor it was given.
    unsafe { with_desc::<T, _>(desc, -1, |s| s.seek(pos).map(|_| 0)) }
}

/// Reads until `buf` is full or the stream ends; returns the count (mlx-c treats a short
/// count as an error and says how many bytes it got).
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

unsafe extern "C" fn cb_read<T: Read>(desc: *mut c_void, data: *mut c_char, n: usize) -> usize {
    // SAFETY: mlx-c hands a writable buffer of `n` bytes and its own descriptor.
    unsafe {
        let buf = std::slice::from_raw_parts_mut(data.cast::<u8>(), n);
        with_desc::<T, _>(desc, 0, |s| read_full(s, buf))
    }
}

unsafe extern "C" fn cb_read_at<T: LoadSource>(
    desc: *mut c_void,
    data: *mut c_char,
    n: usize,
    off: usize,
) -> usize {
    // SAFETY: mlx-c passes back the descriptor it was given.
    let watch = unsafe { &*(desc as *const Desc<T>) }.watch.as_ref();
    let mut why = None;
    // SAFETY: mlx-c hands a writable buffer of `n` bytes and its own descriptor.
    let got = unsafe {
        let buf = std::slice::from_raw_parts_mut(data.cast::<u8>(), n);
        with_desc::<T, _>(desc, 0, |s| {
            s.read_at(buf, off as u64).inspect_err(|e| {
                why = Some(format!("reading {n} bytes at offset {off}: {e}"));
            })
        })
    };
    if let Some(watch) = watch {
        if why.is_none() && got != n {
            why = Some(format!("reading {n} bytes at offset {off}: got {got}"));
        }
        // A panic in the stream is reported by `with_desc` as a read of 0 bytes.
        watch.read_done(why);
    }
    got
}

unsafe extern "C" fn cb_write<T: Write>(desc: *mut c_void, data: *const c_char, n: usize) -> usize {
    // SAFETY: mlx-c hands a readable buffer of `n` bytes and its own descriptor.
    unsafe {
        let buf = std::slice::from_raw_parts(data.cast::<u8>(), n);
        with_desc::<T, _>(desc, 0, |s| s.write_all(buf).map(|_| n))
    }
}

unsafe extern "C" fn cb_no_read(_: *mut c_void, _: *mut c_char, _: usize) -> usize {
    0
}

unsafe extern "C" fn cb_no_read_at(_: *mut c_void, _: *mut c_char, _: usize, _: usize) -> usize {
    0
}

unsafe extern "C" fn cb_no_write(_: *mut c_void, _: *const c_char, _: usize) -> usize {
    0
}

unsafe extern "C" fn cb_label<T>(desc: *mut c_void) -> *const c_char {
    // SAFETY: mlx-c passes back the descriptor it was given; the label lives as long.
    let desc = unsafe { &*(desc as *const Desc<T>) };
    desc.label.as_ptr()
}

unsafe extern "C" fn cb_free<T>(desc: *mut c_void) {
    // mlx-c calls this exactly once, when the last owner of the reader/writer goes away.
    // SAFETY: the pointer came from Box::into_raw in `new_desc` and is not used afterwards.
    let boxed = unsafe { Box::from_raw(desc as *mut Desc<T>) };
    // Dropping user code (the stream) must not unwind into C++.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(boxed)));
}

fn new_desc<T>(
    stream: T,
    label: &str,
    watch: Option<Arc<LoadWatch>>,
) -> Result<(*mut c_void, Arc<Mutex<T>>)> {
    let shared = Arc::new(Mutex::new(stream));
    let desc = Box::new(Desc {
        stream: Arc::clone(&shared),
        label: c_string(label, "stream label")?,
        failed: AtomicBool::new(false),
        watch,
    });
    Ok((Box::into_raw(desc).cast(), shared))
}

/// An owned `mlx_io_reader` over a Rust stream.
struct RawReader(sys::mlx_io_reader);

impl RawReader {
    /// Also returns the stream, shared with MLX, for reads of our own.
    fn new<R: LoadSource>(
        reader: R,
        label: &str,
        watch: Option<Arc<LoadWatch>>,
    ) -> Result<(RawReader, Arc<Mutex<R>>)> {
        let (desc, shared) = new_desc(reader, label, watch)?;
        let vtable = sys::mlx_io_vtable {
            is_open: Some(cb_is_open),
            good: Some(cb_good::<R>),
            tell: Some(cb_tell::<R>),
            seek: Some(cb_seek::<R>),
            read: Some(cb_read::<R>),
            read_at_offset: Some(cb_read_at::<R>),
            write: Some(cb_no_write),
            label: Some(cb_label::<R>),
            free: Some(cb_free::<R>),
        };
        crate::error::init();
        // SAFETY: `desc` is a live Desc<R>; from here mlx-c owns it and frees it through
        // `cb_free` when the reader's last owner (this handle or a lazy array) goes away.
        let raw = unsafe { sys::mlx_io_reader_new(desc, vtable) };
        if raw.ctx.is_null() {
            // Only an allocation failure gets here; whether mlx-c already freed `desc` is
            // unknown, so it is leaked rather than risk freeing it twice.
            return Err(crate::error::last_error_or("creating an I/O reader"));
        }
        Ok((RawReader(raw), shared))
    }
}

impl Drop for RawReader {
    fn drop(&mut self) {
        // SAFETY: we own this reference to the reader and release it once.
        unsafe { sys::mlx_io_reader_free(self.0) };
    }
}

/// An owned `mlx_io_writer` over a Rust stream.
struct RawWriter(sys::mlx_io_writer);

impl RawWriter {
    fn new<W: Write + Seek + Send + 'static>(
        writer: W,
        label: &str,
    ) -> Result<(RawWriter, Arc<Mutex<W>>)> {
        let (desc, shared) = new_desc(writer, label, None)?;
        let vtable = sys::mlx_io_vtable {
            is_open: Some(cb_is_open),
            good: Some(cb_good::<W>),
            tell: Some(cb_tell::<W>),
            seek: Some(cb_seek::<W>),
            read: Some(cb_no_read),
            read_at_offset: Some(cb_no_read_at),
            write: Some(cb_write::<W>),
            label: Some(cb_label::<W>),
            free: Some(cb_free::<W>),
        };
        crate::error::init();
        // SAFETY: as in RawReader::new.
        let raw = unsafe { sys::mlx_io_writer_new(desc, vtable) };
        if raw.ctx.is_null() {
            return Err(crate::error::last_error_or("creating an I/O writer"));
        }
        Ok((RawWriter(raw), shared))
    }
}

impl Drop for RawWriter {
    fn drop(&mut self) {
        // SAFETY: we own this reference to the writer and release it once.
        unsafe { sys::mlx_io_writer_free(self.0) };
    }
}

/// Releases mlx-c's writer (which frees the descriptor) and hands the user's writer back.
fn finish_writer<W: Write>(io: RawWriter, shared: Arc<Mutex<W>>, status: Result<()>) -> Result<W> {
    drop(io);
    status?;
    let mutex = Arc::try_unwrap(shared).map_err(|_| {
        Error::io(
            "saving",
            std::io::Error::other("MLX still holds the writer"),
        )
    })?;
    let mut writer = mutex
        .into_inner()
        .map_err(|_| Error::io("saving", std::io::Error::other("the writer panicked")))?;
    // Flush errors surface here rather than being lost when the writer is dropped.
    writer
        .flush()
        .map_err(|e| Error::io("flushing the writer", e))?;
    Ok(writer)
}

fn reader_err(e: std::io::Error) -> Error {
    Error::io("reading the source", e)
}

/// A stream whose position 0 is where the wrapped stream was when handed over.
///
/// MLX addresses a reader by absolute offsets (it seeks to byte 8 for a safetensors header
/// and reads `.npy` data at the header's length), so a reader positioned past its start would
/// otherwise have its data read from the wrong bytes.
struct FromHere<R> {
    inner: R,
    start: u64,
}

impl<R: Seek> FromHere<R> {
    fn new(mut inner: R) -> Result<Self> {
        let start = inner.stream_position().map_err(reader_err)?;
        Ok(FromHere { inner, start })
    }
}

impl<R: Read> Read for FromHere<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf)
    }
}

impl<R: Seek> Seek for FromHere<R> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        let pos = match pos {
            SeekFrom::Start(n) => SeekFrom::Start(self.start.checked_add(n).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek offset overflows")
            })?),
            other => other,
        };
        let at = self.inner.seek(pos)?;
        at.checked_sub(self.start).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the position the reader was handed over at",
            )
        })
    }
}

/// A stream that lazily loaded arrays are read from.
trait LoadSource: Read + Seek + Send + Sized + 'static {
    /// Reads up to `buf.len()` bytes at `off` (fewer only at the end of the data), without
    /// moving the cursor that sequential reads use.
    fn read_at(&mut self, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
        let saved = self.stream_position()?;
        self.seek(SeekFrom::Start(off))?;
        let got = read_full(self, buf)?;
        self.seek(SeekFrom::Start(saved))?;
        Ok(got)
    }
}

impl<R: Read + Seek + Send + 'static> LoadSource for FromHere<R> {}

/// A file opened by a path load, and what it looked like when its header was read: a lazy
/// read finds a file that was truncated, extended or rewritten since (its length or
/// modification time changed) and fails instead of reading bytes the header does not
/// describe. (A file replaced by a rename is no change: the open file is the old one.)
struct CheckedFile {
    file: std::fs::File,
    seen: (u64, Option<std::time::SystemTime>),
}

impl CheckedFile {
    fn open(path: &Path) -> std::io::Result<CheckedFile> {
        let file = std::fs::File::open(path)?;
        let seen = Self::look(&file)?;
        Ok(CheckedFile { file, seen })
    }

    fn look(file: &std::fs::File) -> std::io::Result<(u64, Option<std::time::SystemTime>)> {
        let meta = file.metadata()?;
        Ok((meta.len(), meta.modified().ok()))
    }

    fn unchanged(&self) -> std::io::Result<()> {
        let now = Self::look(&self.file)?;
        if now == self.seen {
            return Ok(());
        }
        Err(std::io::Error::other(if now.0 == self.seen.0 {
            "the file was modified since it was loaded".to_string()
        } else {
            format!(
                "the file changed size since it was loaded ({} bytes, now {})",
                self.seen.0, now.0
            )
        }))
    }
}

impl Read for CheckedFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.file.read(buf)
    }
}

impl Seek for CheckedFile {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.file.seek(pos)
    }
}

impl LoadSource for CheckedFile {
    fn read_at(&mut self, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
        self.unchanged()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            let mut got = 0;
            while got < buf.len() {
                match self.file.read_at(&mut buf[got..], off + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(got)
        }
        #[cfg(not(unix))]
        {
            let saved = self.file.stream_position()?;
            self.file.seek(SeekFrom::Start(off))?;
            let got = read_full(&mut self.file, buf)?;
            self.file.seek(SeekFrom::Start(saved))?;
            Ok(got)
        }
    }
}
