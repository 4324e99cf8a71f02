//! One thread at a time encodes a graph for MLX's CUDA backend.
//!
//! MLX 0.32.2's CUDA backend keeps state shared by every stream without a lock while it turns
//! a graph into GPU work: the cuFFT plan cache is a plain LRU map, and a cached plan's stream
//! and work area are set and then used by whichever thread encodes an FFT of that size. With
//! per-thread default streams, two threads doing FFTs interleave and one computes with the
//! other's work area: wrong values, no error. Python MLX does the same (two threads, 2,000
//! FFTs of shape [3, 4, 5]: 8 wrong results on an H100). This crate promises that arrays work
//! from any thread, so on a CUDA build every evaluation is encoded under one process-wide
//! lock. CPU and Metal builds take no lock.
//!
//! How an evaluation holds the lock depends on who evaluates. While only one thread has,
//! nobody can be kept waiting, so it encodes and waits in one call under the lock, as
//! Python's `mx.eval` does: MLX's synchronous path. Once a second thread evaluates, every
//! evaluation is split: an `async_eval` under the lock, then the wait outside it, so threads
//! overlap on the GPU. The split costs the single thread time it need not pay: MLX's
//! asynchronous path gives every array of the graph an event and queries its inputs' events,
//! 8% of a small MLP training step on an H100 (W5 of `scripts/bench-compare`; Python's
//! `async_eval` then `eval` costs the same against its `eval`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::ThreadId;

use crate::backends::cuda;
use crate::Result;

static ENCODING: Mutex<()> = Mutex::new(());
static EVALUATORS: Evaluators = Evaluators::new();

/// Whether evaluations must be encoded one at a time: MLX was built with CUDA.
fn serialized() -> bool {
    static CUDA: OnceLock<bool> = OnceLock::new();
    *CUDA.get_or_init(|| cuda::is_available().unwrap_or(false))
}

fn turn() -> MutexGuard<'static, ()> {
    // A panic while holding it poisons nothing of MLX's: the lock guards no Rust data.
    ENCODING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f`, which encodes a graph (an `async_eval`): under the encoding lock on a CUDA build,
/// directly elsewhere.
pub(crate) fn encoding<R>(f: impl FnOnce() -> R) -> R {
    if !serialized() {
        return f();
    }
    let _turn = turn();
    f()
}

/// Evaluates: `wait` is MLX's `eval` of the arrays, `encode` their `async_eval` (neither
/// takes the lock). On a CUDA build, a lone evaluating thread runs `wait` under the lock;
/// otherwise `encode` runs under it and `wait` (which then only waits) outside it.
pub(crate) fn evaluate(
    encode: impl FnOnce() -> Result<()>,
    wait: impl FnOnce() -> Result<()>,
) -> Result<()> {
    if !serialized() {
        return wait();
    }
    if EVALUATORS.only(std::thread::current().id()) {
        let _turn = turn();
        return wait();
    }
    encoding(encode)?;
    wait()
}

/// Which threads have evaluated: the first one, and whether any other has since.
struct Evaluators {
    first: OnceLock<ThreadId>,
    shared: AtomicBool,
}

impl Evaluators {
    const fn new() -> Evaluators {
        Evaluators {
            first: OnceLock::new(),
            shared: AtomicBool::new(false),
        }
    }

    /// Records that `me` evaluates; whether it is the only thread that ever has. Once false,
    /// false for good: a thread that evaluated once may again at any time.
    fn only(&self, me: ThreadId) -> bool {
        if self.shared.load(Ordering::Relaxed) {
            return false;
        }
        if *self.first.get_or_init(|| me) == me {
            return true;
        }
        self.shared.store(true, Ordering::Relaxed);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::Evaluators;

    #[test]
    fn a_second_evaluating_thread_ends_the_single_thread_path_for_good() {
        let e = Evaluators::new();
        let main = std::thread::current().id();
        assert!(e.only(main));
        assert!(e.only(main));
        let other = std::thread::spawn(|| std::thread::current().id())
            .join()
            .unwrap();
        assert!(!e.only(other));
        assert!(!e.only(main));
        assert!(!e.only(other));
    }
}
