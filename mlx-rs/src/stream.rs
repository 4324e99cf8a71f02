//! Streams: ordered queues of work on a device.
//!
//! MLX 0.32 makes streams thread-affine: each thread has its own default stream per device,
//! and a stream made with [`Stream::new`] can only run work on the thread that made it (work
//! for it evaluated elsewhere fails with "There is no Stream(cpu, N) in current thread").
//! [`Stream`] is therefore neither `Send` nor `Sync`.
//!
//! Every op runs on the *current* stream: the innermost [`with_stream`] / [`with_device`]
//! override on this thread, or else this thread's default stream for the default device.
//! The default is looked up once and cached per thread; [`Device::set_default`] and
//! [`Stream::set_default`] invalidate every thread's cache.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

use mlx_sys as sys;

use crate::device::{defaults_changed, defaults_epoch};
use crate::error::{check, Result};
use crate::handles::{MlxString, VectorArray};
use crate::{Array, Device};

/// A stream of work on one device (Python: `mx.Stream`).
pub struct Stream {
    raw: sys::mlx_stream,
    // Thread-affine: see the module docs.
    _not_send: PhantomData<*const ()>,
}

impl Stream {
    /// Wraps a raw handle, taking ownership of it.
    ///
    /// # Safety
    /// `raw` must be a valid `mlx_stream` handle that nothing else will free (the returned
    /// `Stream` frees it on drop), of a stream owned by the calling thread.
    pub unsafe fn from_raw(raw: sys::mlx_stream) -> Stream {
        Stream {
            raw,
            _not_send: PhantomData,
        }
    }

    fn empty() -> Stream {
        crate::error::init();
        // SAFETY: mlx_stream_new makes an empty handle that only this value owns.
        unsafe { Stream::from_raw(sys::mlx_stream_new()) }
    }

    /// A stream that the mlx-c call `op` writes (a stream of the calling thread).
    pub(crate) fn fill(op: impl FnOnce(*mut sys::mlx_stream) -> i32) -> Result<Stream> {
        let mut s = Stream::empty();
        check(|| op(&mut s.raw))?;
        Ok(s)
    }

    /// A new stream on `device`, owned by the calling thread (Python: `mx.new_stream`).
    pub fn new(device: &Device) -> Result<Stream> {
        // SAFETY: valid device handle; on failure mlx-c reports through the handler.
        let raw =
            crate::error::check_handler(|| unsafe { sys::mlx_stream_new_device(device.as_raw()) })?;
        // SAFETY: a new stream of this thread; only the returned value owns it.
        Ok(unsafe { Stream::from_raw(raw) })
    }

    /// This thread's default stream for `device` (Python: `mx.default_stream`).
    pub fn default_for(device: &Device) -> Result<Stream> {
        // SAFETY: valid device handle; writes into our owned stream handle.
        Stream::fill(|out| unsafe { sys::mlx_get_default_stream(out, device.as_raw()) })
    }

    /// The stream ops on this thread run on now (see the module docs).
    pub fn current() -> Result<Stream> {
        // SAFETY: both handles are valid; copies the stream value.
        with_current_raw(|raw| Stream::fill(|out| unsafe { sys::mlx_stream_set(out, raw) }))?
    }

    /// Makes this stream the calling thread's default for its device
    /// (Python: `mx.set_default_stream`).
    pub fn set_default(&self) -> Result<()> {
        // SAFETY: valid handle.
        check(|| unsafe { sys::mlx_set_default_stream(self.raw) })?;
        defaults_changed();
        Ok(())
    }

    /// The device this stream runs on.
    pub fn device(&self) -> Device {
        let mut dev = Device::empty();
        // SAFETY: valid handles; cannot fail for a constructed stream.
        check(|| unsafe { sys::mlx_stream_get_device(dev.raw_mut(), self.raw) })
            .expect("mlx_stream_get_device on a valid stream");
        dev
    }

    /// The stream's index (unique in the process).
    pub fn index(&self) -> i32 {
        let mut index = 0;
        // SAFETY: valid handle; writes one int.
        check(|| unsafe { sys::mlx_stream_get_index(&mut index, self.raw) })
            .expect("mlx_stream_get_index on a valid stream");
        index
    }

    /// Waits until all work queued on this stream has finished (Python: `mx.synchronize(s)`).
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: valid handle.
        check(|| unsafe { sys::mlx_synchronize(self.raw) })
    }

    /// The raw handle, still owned by `self`, for calling `mlx_sys` directly (see
    /// [`Array::as_raw`](crate::Array::as_raw) for the rule).
    pub fn as_raw(&self) -> sys::mlx_stream {
        self.raw
    }
}

impl Clone for Stream {
    fn clone(&self) -> Stream {
        let mut s = Stream::empty();
        // SAFETY: copies a valid stream value into our owned handle.
        check(|| unsafe { sys::mlx_stream_set(&mut s.raw, self.raw) })
            .expect("copying a stream cannot fail");
        s
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_stream_free(self.raw) };
    }
}

impl PartialEq for Stream {
    fn eq(&self, other: &Stream) -> bool {
        // SAFETY: both handles are valid.
        unsafe { sys::mlx_stream_equal(self.raw, other.raw) }
    }
}

impl Eq for Stream {}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: valid handle; mlx-c writes into the string we own.
        match MlxString::fill(|s| unsafe { sys::mlx_stream_tostring(s, self.raw) }) {
            Ok(text) => f.write_str(&text),
            Err(_) => write!(f, "Stream({})", self.index()),
        }
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Stream {
    /// Every stream MLX knows of (the defaults and those made with [`Stream::new`]).
    pub fn all() -> Result<Vec<Stream>> {
        let mut v = crate::handles::VectorStream::new();
        // SAFETY: mlx-c fills the vector we own.
        check(|| unsafe { sys::mlx_get_streams(&mut v.0) })?;
        (0..v.len())
            // SAFETY: `i` is in bounds; copies the stream into our owned handle.
            .map(|i| Stream::fill(|out| unsafe { sys::mlx_vector_stream_get(out, v.0, i) }))
            .collect()
    }
}

/// Destroys every stream the calling thread created, its default streams included; the next
/// op makes fresh defaults (Python: `mx.clear_streams()`). Streams held in [`Stream`] values
/// from this thread become unusable.
pub fn clear_streams() -> Result<()> {
    // SAFETY: no arguments.
    check(|| unsafe { sys::mlx_clear_streams() })?;
    // Cached defaults on this thread refer to the destroyed streams.
    defaults_changed();
    // MLX still names the destroyed streams as this thread's defaults, and every later op
    // would fail ("There is no Stream(cpu, 0) in current thread"): give each device a fresh
    // default stream, as the docs promise.
    for device in [Device::cpu(), Device::gpu()] {
        if device.is_available() {
            Stream::new(&device)?.set_default()?;
        }
    }
    Ok(())
}

/// A stream per thread behind one handle (Python: `mx.new_thread_local_stream(device)`):
/// `Send` and `Sync`, so one value can be shared by many threads, each of which gets its own
/// concrete stream from [`ThreadLocalStream::get`].
///
/// ```
/// use mlx_rs::{ops, with_stream, Device, ThreadLocalStream};
/// let tls = ThreadLocalStream::new(&Device::cpu())?;
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         let stream = tls.get()?;
///         with_stream(&stream, || ops::ones(&[2], None)?.sum(None, false)?.item::<f32>())
///     });
/// });
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub struct ThreadLocalStream {
    raw: sys::mlx_stream_thread_local,
}

// SAFETY: mlx-c documents a thread-local stream as usable from any number of threads: each
// thread resolves it to its own stream. The handle itself is immutable after creation.
unsafe impl Send for ThreadLocalStream {}
// SAFETY: as above; shared references only resolve it.
unsafe impl Sync for ThreadLocalStream {}

impl ThreadLocalStream {
    /// A new per-thread stream on `device`.
    pub fn new(device: &Device) -> Result<ThreadLocalStream> {
        // SAFETY: valid device; on failure mlx-c reports through the handler.
        let raw = crate::error::check_handler(|| unsafe {
            sys::mlx_stream_thread_local_new(device.as_raw())
        })?;
        Ok(ThreadLocalStream { raw })
    }

    /// The calling thread's stream behind this handle (made on first use per thread).
    pub fn get(&self) -> Result<Stream> {
        // SAFETY: valid handle; writes into our owned stream.
        Stream::fill(|out| unsafe { sys::mlx_stream_from_thread_local(out, self.raw) })
    }

    /// Waits for the work queued on the calling thread's stream.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: valid handle.
        check(|| unsafe { sys::mlx_synchronize_thread_local(self.raw) })
    }
}

impl Clone for ThreadLocalStream {
    fn clone(&self) -> ThreadLocalStream {
        // An empty (null) handle: mlx-c allocates on the first set.
        let mut raw = sys::mlx_stream_thread_local {
            ctx: std::ptr::null_mut(),
        };
        // SAFETY: `self.raw` is valid; mlx-c fills `raw`, which the new value owns and frees.
        check(|| unsafe { sys::mlx_stream_thread_local_set(&mut raw, self.raw) })
            .expect("copying a thread-local stream cannot fail");
        ThreadLocalStream { raw }
    }
}

impl Drop for ThreadLocalStream {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_stream_thread_local_free(self.raw) };
    }
}

/// Waits for all work on the current stream (Python: `mx.synchronize()`).
pub fn synchronize() -> Result<()> {
    with_current_raw(|raw| {
        // SAFETY: valid handle.
        check(|| unsafe { sys::mlx_synchronize(raw) })
    })?
}

/// Runs `f` with `stream` as the current stream on this thread (Python: `with mx.stream(s):`).
/// The previous stream is restored when `f` returns or panics.
pub fn with_stream<R>(stream: &Stream, f: impl FnOnce() -> R) -> R {
    CURRENT.with(|c| c.borrow_mut().overrides.push(stream.clone()));
    let _restore = PopOverride;
    f()
}

/// Runs `f` with this thread's default stream of `device` as the current stream
/// (Python: `with mx.stream(mx.cpu):`). Fails if the device is not available.
pub fn with_device<R>(device: &Device, f: impl FnOnce() -> R) -> Result<R> {
    let stream = Stream::default_for(device)?;
    Ok(with_stream(&stream, f))
}

struct PopOverride;

impl Drop for PopOverride {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.borrow_mut().overrides.pop());
    }
}

#[derive(Default)]
struct Current {
    overrides: Vec<Stream>,
    cached_default: Option<(u64, Stream)>,
}

thread_local! {
    static CURRENT: RefCell<Current> = RefCell::new(Current::default());
}

/// Runs an mlx-c op that writes a vector of arrays, on the current stream.
pub(crate) fn vector_op(
    op: impl FnOnce(*mut sys::mlx_vector_array, sys::mlx_stream) -> i32,
) -> Result<Vec<Array>> {
    let arrays = vector_view_op(op)?;
    arrays.iter().try_for_each(crate::memory::check_fits)?;
    Ok(arrays)
}

/// [`vector_op`] for ops whose results are views (`broadcast_arrays`): their sizes are not
/// checked against the machine's memory, as they allocate nothing of that size.
pub(crate) fn vector_view_op(
    op: impl FnOnce(*mut sys::mlx_vector_array, sys::mlx_stream) -> i32,
) -> Result<Vec<Array>> {
    with_current_raw(|s| {
        let mut out = VectorArray::new();
        check(|| op(&mut out.0, s))?;
        out.to_vec()
    })?
}

/// Calls `f` with the raw handle of the innermost [`with_stream`] / [`with_device`] override
/// on this thread, or with `default()`'s stream when there is none (ops whose stream Python
/// picks from something other than the default device: the collectives).
pub(crate) fn with_override_or_raw<R>(
    default: impl FnOnce() -> Result<Stream>,
    f: impl FnOnce(sys::mlx_stream) -> R,
) -> Result<R> {
    let top = CURRENT.with(|c| c.borrow().overrides.last().map(|s| s.raw));
    match top {
        // The override stays on the stack while `f` (an mlx-c call) runs.
        Some(raw) => Ok(f(raw)),
        None => {
            let stream = default()?;
            Ok(f(stream.raw))
        }
    }
}

/// Calls `f` with the raw handle of the current stream, without copying it. This is the
/// per-op fast path: a thread-local borrow and one atomic load.
#[inline]
pub(crate) fn with_current_raw<R>(f: impl FnOnce(sys::mlx_stream) -> R) -> Result<R> {
    CURRENT.with(|c| {
        let raw = {
            let mut cur = c.borrow_mut();
            if let Some(top) = cur.overrides.last() {
                top.raw
            } else {
                let epoch = defaults_epoch();
                match &cur.cached_default {
                    Some((e, s)) if *e == epoch => s.raw,
                    _ => {
                        let stream = Stream::default_for(&Device::default_device()?)?;
                        let raw = stream.raw;
                        cur.cached_default = Some((epoch, stream));
                        raw
                    }
                }
            }
        };
        // The borrow ends before `f` runs. `f` is always an mlx-c call made by this crate that
        // never changes defaults, so the handle it receives stays alive for the call.
        Ok(f(raw))
    })
}
