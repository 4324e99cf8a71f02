//! One thread at a time encodes a graph for MLX's CUDA backend.
//!
//! MLX 0.32.2's CUDA backend keeps state shared by every stream without a lock while it turns
//! a graph into GPU work: the cuFFT plan cache is a plain LRU map, and a cached plan's stream
//! and work area are set and then used by whichever thread encodes an FFT of that size. With
//! per-thread default streams, two threads doing FFTs interleave and one computes with the
//! other's work area: wrong values, no error. Python MLX does the same (two threads, 2,000
//! FFTs of shape [3, 4, 5]: 8 wrong results on an H100). This crate promises that arrays work
//! from any thread, so on a CUDA build every evaluation is encoded under one process-wide
//! lock; waiting for the results is not, so threads still overlap on the GPU. CPU and Metal
//! builds take no lock.

use std::sync::{Mutex, OnceLock};

use crate::backends::cuda;

static ENCODING: Mutex<()> = Mutex::new(());

/// Whether evaluations must be encoded one at a time: MLX was built with CUDA.
pub(crate) fn serialized() -> bool {
    static CUDA: OnceLock<bool> = OnceLock::new();
    *CUDA.get_or_init(|| cuda::is_available().unwrap_or(false))
}

/// Runs `f`, which encodes a graph (an `async_eval`): under the encoding lock on a CUDA build,
/// directly elsewhere.
pub(crate) fn encoding<R>(f: impl FnOnce() -> R) -> R {
    if !serialized() {
        return f();
    }
    // A panic while holding it poisons nothing of MLX's: the lock guards no Rust data.
    let _turn = ENCODING.lock().unwrap_or_else(|p| p.into_inner());
    f()
}
