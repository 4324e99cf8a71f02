//! Errors, and the bridge from mlx-c's error handler to `Result`.
//!
//! mlx-c reports failure in two steps: it calls a process-wide error handler with the message,
//! then returns a non-zero code. The default handler prints and calls `exit`, so we install our
//! own handler once, before the first call into mlx-c; it stores the message in a thread-local
//! slot (the handler runs on the thread that made the failing call), and [`check`] turns the
//! return code plus that message into an [`Error`].

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr};
use std::fmt;
use std::sync::{Arc, Once, OnceLock};

use crate::Dtype;

/// The result type of every fallible mlx-rs function.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in mlx-rs.
///
/// Where an error wraps another (an OS error, a user closure's own error), the wrapped error
/// is its [`source`](std::error::Error::source), and `source()` hands out that error itself, so
/// `downcast_ref::<std::io::Error>()` finds it. The wrapped errors sit behind `Arc` so `Error`
/// stays `Clone`: an exporter keeps the error of its failed trace and reports it on every later
/// call, and callers that cache a `Result` (an array or its error) hand it to several readers.
/// Errors are not `PartialEq` (an `io::Error` is not): match on the variant, or compare
/// messages.
// `Display` and `Error` are written out rather than derived with thiserror: its `#[source]`
// on an `Arc<E>` field returns the `Arc` as the source, which hides `E` from `downcast_ref`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// MLX rejected the call; the message is MLX's own (MLX reports nothing but a string).
    Mlx(String),
    /// An element type was requested that does not match the array's dtype.
    DtypeMismatch { actual: Dtype, requested: Dtype },
    /// Borrowing data requires an evaluated array.
    NotEvaluated,
    /// Borrowing data as a slice requires a row-contiguous array.
    NotContiguous { shape: Vec<i32>, strides: Vec<i64> },
    /// An argument was invalid before reaching MLX.
    InvalidArgument(String),
    /// A user closure inside a transform failed or panicked. `source` is the closure's own
    /// error when it returned one through [`Error::closure`]; a panic has none (its message
    /// is in `message`).
    Closure {
        message: String,
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },
    /// Reading or writing a file or stream failed. `context` says what was being done (and on
    /// which file); `source` is the OS error, or for a file that opened but is truncated or
    /// corrupt, an error of kind [`InvalidData`](std::io::ErrorKind::InvalidData) or
    /// [`UnexpectedEof`](std::io::ErrorKind::UnexpectedEof) saying what is wrong.
    Io {
        context: String,
        source: Arc<std::io::Error>,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Mlx(msg) | Error::InvalidArgument(msg) => f.write_str(msg),
            Error::DtypeMismatch { actual, requested } => write!(
                f,
                "dtype mismatch: the array holds {actual}, but {requested} was requested"
            ),
            Error::NotEvaluated => {
                f.write_str("the array is not evaluated: call eval() before borrowing its data")
            }
            Error::NotContiguous { shape, strides } => write!(
                f,
                "the array is not row-contiguous (shape {shape:?}, strides {strides:?}): use \
                 to_vec(), which follows the strides"
            ),
            Error::Closure { message, .. } => f.write_str(message),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(&**source),
            Error::Closure {
                source: Some(source),
                ..
            } => Some(&**source),
            _ => None,
        }
    }
}

impl Error {
    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }

    /// [`Error::Io`]: `context` says what was being done, `source` what went wrong.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source: Arc::new(source),
        }
    }

    /// [`Error::Io`] for a file that is readable but whose content is wrong (truncated,
    /// corrupt, not the format it claims): the source is an `InvalidData` error saying what,
    /// which holds `what` (a message, or the parser's error, reachable by `get_ref`).
    pub fn invalid_data(
        context: impl Into<String>,
        what: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::io(
            context,
            std::io::Error::new(std::io::ErrorKind::InvalidData, what),
        )
    }

    /// [`Error::Closure`] carrying a closure's own error as its source, so code inside a
    /// transform (`value_and_grad`, `compile`, ...) that fails with another error type can
    /// return it: `.map_err(Error::closure)?`.
    pub fn closure(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        let source: Arc<dyn std::error::Error + Send + Sync> = Arc::from(source.into());
        Error::Closure {
            message: format!("a Rust closure called by MLX failed: {source}"),
            source: Some(source),
        }
    }

    /// [`Error::Closure`] for a panic inside a closure: there is no error value, only the
    /// panic's message.
    pub(crate) fn closure_panicked(message: &str) -> Self {
        Error::Closure {
            message: format!("a Rust closure called by MLX panicked: {message}"),
            source: None,
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
}

static INSTALL_HANDLER: Once = Once::new();

/// Installs the error handler. Cheap after the first call (one atomic load); every path into
/// mlx-c goes through it.
#[inline]
pub(crate) fn init() {
    INSTALL_HANDLER.call_once(|| {
        // SAFETY: `record_error` matches mlx_error_handler_func, never unwinds, and uses no
        // data pointer, so passing null data and no destructor is valid.
        unsafe { mlx_sys::mlx_set_error_handler(Some(record_error), std::ptr::null_mut(), None) };
    });
}

extern "C" fn record_error(msg: *const c_char, _data: *mut c_void) {
    let text = if msg.is_null() {
        "unknown MLX error".to_string()
    } else {
        // SAFETY: mlx-c passes a NUL-terminated buffer that lives for the duration of the call.
        unsafe { CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned()
    };
    let text = strip_location(&text).to_string();
    for observer in OBSERVERS.iter().map_while(OnceLock::get) {
        observer(&text);
    }
    // `try_with`: during thread teardown the slot may be gone; losing the message then is fine.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = Some(text));
}

/// More than the crate's subsystems need (one), so registering never fails.
const OBSERVER_SLOTS: usize = 4;

static OBSERVERS: [OnceLock<fn(&str)>; OBSERVER_SLOTS] =
    [const { OnceLock::new() }; OBSERVER_SLOTS];

/// Hands `observer` every message MLX reports from now on, on the thread that made the
/// failing call, before the call returns its `Err`. For subsystems that must learn of a
/// failure whoever made the call (a ring group that lost a peer); call it once per observer.
/// An observer must not panic: it runs inside the error handler, which cannot unwind. The
/// list lives here, below every module, because the error handler calls it.
pub(crate) fn observe(observer: fn(&str)) {
    // Slots fill in order (see `evaluation::guard::register`).
    let free = OBSERVERS.iter().any(|slot| slot.set(observer).is_ok());
    assert!(
        free,
        "more than {OBSERVER_SLOTS} error observers registered"
    );
}

/// mlx-c appends " at <source file>:<line>" (a path on the machine that built MLX); the
/// location says nothing to the user, the message does.
fn strip_location(msg: &str) -> &str {
    if let Some(pos) = msg.rfind(" at ") {
        let tail = &msg[pos + 4..];
        if let Some((_, line)) = tail.rsplit_once(':') {
            if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) {
                return &msg[..pos];
            }
        }
    }
    msg
}

/// Takes the message the handler stored for this thread, if any.
pub(crate) fn take_last_error() -> Option<String> {
    LAST_ERROR.with(|slot| slot.borrow_mut().take())
}

/// The message the handler stored for this thread, or a generic one naming `context` for
/// calls that failed without reporting through the handler.
pub(crate) fn last_error_or(context: &str) -> Error {
    Error::Mlx(take_last_error().unwrap_or_else(|| format!("MLX failed while {context}")))
}

/// Runs one mlx-c call that returns a status code, and turns failure into `Err`.
#[inline]
pub(crate) fn check(call: impl FnOnce() -> i32) -> Result<()> {
    init();
    let status = call();
    if status == 0 {
        Ok(())
    } else {
        Err(Error::Mlx(take_last_error().unwrap_or_else(|| {
            format!("MLX call failed with status {status} and no message")
        })))
    }
}

/// For mlx-c calls that signal failure only through the handler (constructors returning a
/// handle, data pointers): clears the slot, runs the call, and reports what the handler stored.
#[inline]
pub(crate) fn check_handler<T>(call: impl FnOnce() -> T) -> Result<T> {
    init();
    let _ = take_last_error();
    let value = call();
    match take_last_error() {
        None => Ok(value),
        Some(msg) => Err(Error::Mlx(msg)),
    }
}

#[cfg(test)]
mod tests {
    use super::strip_location;

    #[test]
    fn strips_only_a_trailing_source_location() {
        assert_eq!(
            strip_location("[reshape] bad shape at /src/mlx/ops.cpp:123"),
            "[reshape] bad shape"
        );
        assert_eq!(strip_location("look at this"), "look at this");
        assert_eq!(strip_location("at x: y"), "at x: y");
    }
}
