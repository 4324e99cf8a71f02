//! Compiled functions (Python: `mx.compile`, `mx.enable_compile`, `mx.disable_compile`).
//!
//! [`compile`] returns a persistent [`Compiled`] object. Its first call with a given input
//! signature — shapes and dtypes of the inputs (only ranks and dtypes when `shapeless`), plus
//! optional caller-supplied constants — runs the Rust function once on placeholder arrays
//! ("traces" it); MLX simplifies and fuses the traced graph and caches it, and later calls
//! with the same signature replay the cached graph without running the Rust function. The
//! counters [`Compiled::traces`] and [`Compiled::calls`] show what happened: a function that
//! is really compiled has `traces() < calls()`.
//!
//! ```
//! use mlx_rs::{compile::compile, Array};
//! let f = compile(|x: &[Array]| Ok(vec![(&x[0] * 2.0 + 1.0).exp()?]), None);
//! for i in 0..3 {
//!     f.call(&[Array::from_slice(&[i as f32, 1.0], &[2])?])?;
//! }
//! # if std::env::var_os("MLX_DISABLE_COMPILE").is_none() {
//! assert_eq!((f.traces(), f.calls()), (1, 3)); // same shapes: traced once
//! # }
//! # Ok::<(), mlx_rs::Error>(())
//! ```
//!
//! # When the Rust function runs
//! [`Compiled::traces`] counts every time MLX ran the Rust function through this object:
//! - once per new input signature, per thread (see below);
//! - on every call made under another transform (`grad`, `vmap`, an outer `compile`): MLX
//!   traces through the compiled function there, as Python does;
//! - on every call while compilation is off ([`disable_compile`], `MLX_DISABLE_COMPILE`, or
//!   a CPU-only machine without a C++ compiler, where MLX cannot JIT CPU kernels and runs
//!   functions uncompiled).
//!
//! Compilation is decided per call, as in Python: [`disable_compile`] affects existing
//! [`Compiled`] objects too.
//!
//! # `MLX_DISABLE_COMPILE`
//! MLX reads this environment variable once, the first time anything asks for the compile
//! mode; if it is set (to any value, even `0` or empty) compilation starts disabled.
//! [`enable_compile`] / [`set_compile_mode`] still override it afterwards.
//!
//! # Threads
//! MLX 0.32 keeps one compile cache per thread (and keys entries by the thread's default
//! stream). [`Compiled<F>`] is `Send` when `F: Send` and `Sync` when `F: Sync`, so it can be
//! shared (e.g. in an `Arc`) and called from several threads at once; the first call with a
//! signature on each thread traces again there (`traces()` counts it), later calls on that
//! thread reuse that thread's entry. Dropping the object — on any thread — erases its entries
//! from the cache of every thread that called it (MLX's cache is guarded by a mutex and
//! allows erasure from another thread); entries of threads that have exited were already
//! freed with those threads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread::{self, ThreadId};

use mlx_sys as sys;

use crate::closure::Closure;
use crate::error::check;
use crate::{Array, Result};

/// Compilation modes (Python has only on/off; C++ `mx::CompileMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompileMode {
    /// Functions run uncompiled.
    Disabled,
    /// Compile without graph simplification.
    NoSimplify,
    /// Compile without kernel fusion.
    NoFuse,
    /// Full compilation (the default).
    Enabled,
}

/// Sets the process-wide compile mode.
pub fn set_compile_mode(mode: CompileMode) -> Result<()> {
    let raw = match mode {
        CompileMode::Disabled => sys::MLX_COMPILE_MODE_DISABLED,
        CompileMode::NoSimplify => sys::MLX_COMPILE_MODE_NO_SIMPLIFY,
        CompileMode::NoFuse => sys::MLX_COMPILE_MODE_NO_FUSE,
        CompileMode::Enabled => sys::MLX_COMPILE_MODE_ENABLED,
    };
    // SAFETY: plain enum argument.
    check(|| unsafe { sys::mlx_set_compile_mode(raw) })
}

/// Turns compilation off for the whole process (Python: `mx.disable_compile`); compiled
/// functions then run their Rust function on every call.
pub fn disable_compile() -> Result<()> {
    // SAFETY: no arguments.
    check(|| unsafe { sys::mlx_disable_compile() })
}

/// Turns compilation back on (Python: `mx.enable_compile`).
pub fn enable_compile() -> Result<()> {
    // SAFETY: no arguments.
    check(|| unsafe { sys::mlx_enable_compile() })
}

/// Forgets every compiled trace in the calling thread's compile cache, for all compiled
/// functions (C++: `mlx::core::detail::compile_clear_cache`). Each compiled function traces
/// again on its next call from this thread; its counters keep counting.
pub fn clear_compile_cache() -> Result<()> {
    let mut cache = ThreadCache {
        thread: thread::current().id(),
        // SAFETY: an empty handle for mlx-c to fill, freed by ThreadCache's Drop.
        handle: unsafe { sys::mlx_compile_cache_new() },
    };
    // SAFETY: writes this thread's cache into our handle, then clears it.
    check(|| unsafe { sys::mlx_detail_compile_cache(&mut cache.handle) })?;
    // SAFETY: valid cache handle.
    check(|| unsafe { sys::mlx_detail_compile_clear_cache(cache.handle) })
}

/// A weak handle to one thread's compile cache.
struct ThreadCache {
    thread: ThreadId,
    handle: sys::mlx_compile_cache,
}

// SAFETY: the handle wraps a `std::weak_ptr<CompileCache>`; locking it and calling
// `CompileCache::erase` (which takes the cache's own mutex) are safe from any thread.
unsafe impl Send for ThreadCache {}

impl Drop for ThreadCache {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_compile_cache_free(self.handle) };
    }
}

/// The engine behind [`Compiled`], without a fixed function: each call passes the function
/// to trace, plus `constants` that become part of the cache key. This is what tree-aware
/// compile builds on (constants = a hash of the input tree structure and static data; the
/// function = "unflatten, call the user function, flatten").
///
/// Contract: for the same `constants` (and input signature) the function passed must compute
/// the same thing, because a cache hit replays the earlier trace without calling it.
pub struct CompiledFn {
    // Its address is the function id in MLX's caches: unique while this object lives, and
    // erased from the caches before the allocation can be reused.
    anchor: Box<u8>,
    shapeless: bool,
    traces: AtomicU64,
    calls: AtomicU64,
    caches: Mutex<Vec<ThreadCache>>,
}

impl CompiledFn {
    /// A new, empty compiled-function slot.
    pub fn new(shapeless: bool) -> CompiledFn {
        CompiledFn {
            anchor: Box::new(0),
            shapeless,
            traces: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            caches: Mutex::new(Vec::new()),
        }
    }

    fn id(&self) -> usize {
        &*self.anchor as *const u8 as usize
    }

    /// Calls `fun` compiled: traced on a cache miss for (`constants`, input signature,
    /// thread), replayed otherwise.
    pub fn call_with(
        &self,
        inputs: &[Array],
        constants: &[u64],
        fun: &dyn Fn(&[Array]) -> Result<Vec<Array>>,
    ) -> Result<Vec<Array>> {
        self.call_with_iter(inputs, constants, fun)
    }

    /// [`call_with`](Self::call_with) for borrowed inputs (leaves borrowed from a flattened
    /// tree), so callers need not clone array handles to make a slice.
    pub fn call_with_refs(
        &self,
        inputs: &[&Array],
        constants: &[u64],
        fun: &dyn Fn(&[Array]) -> Result<Vec<Array>>,
    ) -> Result<Vec<Array>> {
        self.call_with_iter(inputs.iter().copied(), constants, fun)
    }

    fn call_with_iter<'a>(
        &self,
        inputs: impl IntoIterator<Item = &'a Array>,
        constants: &[u64],
        fun: &dyn Fn(&[Array]) -> Result<Vec<Array>>,
    ) -> Result<Vec<Array>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.register_thread()?;
        let counted = |xs: &[Array]| {
            self.traces.fetch_add(1, Ordering::Relaxed);
            fun(xs)
        };
        let base = Closure::borrowed(counted)?;
        // SAFETY: valid closure handle; `constants` outlives the call. MLX's compiled closure
        // keeps `base`'s payload only inside the returned closure (the cache holds the traced
        // graph, not the function), which is dropped below before `base`.
        let compiled = Closure::from_op(|res| unsafe {
            sys::mlx_detail_compile(
                res,
                base.as_raw(),
                self.id(),
                self.shapeless,
                constants.as_ptr(),
                constants.len(),
            )
        })?;
        let out = compiled.apply_iter(inputs);
        drop(compiled);
        out
    }

    /// Remembers this thread's cache so drop can erase our entries from it.
    fn register_thread(&self) -> Result<()> {
        let me = thread::current().id();
        let mut caches = self.caches.lock().unwrap_or_else(PoisonError::into_inner);
        if caches.iter().any(|c| c.thread == me) {
            return Ok(());
        }
        let mut cache = ThreadCache {
            thread: me,
            // SAFETY: an empty handle for mlx-c to fill, freed by ThreadCache's Drop.
            handle: unsafe { sys::mlx_compile_cache_new() },
        };
        // SAFETY: writes this thread's cache (a weak pointer) into our handle.
        check(|| unsafe { sys::mlx_detail_compile_cache(&mut cache.handle) })?;
        caches.push(cache);
        Ok(())
    }

    /// Whether traces ignore shapes (only ranks and dtypes key the cache).
    pub fn shapeless(&self) -> bool {
        self.shapeless
    }

    /// How many times MLX ran the function through this object (see the module docs).
    pub fn traces(&self) -> u64 {
        self.traces.load(Ordering::Relaxed)
    }

    /// How many calls were made.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Forgets every cached trace (on all threads); the next call traces again.
    pub fn clear_cache(&self) {
        let caches = self.caches.lock().unwrap_or_else(PoisonError::into_inner);
        for cache in caches.iter() {
            // SAFETY: valid cache handle; erasing a missing id or from an expired cache is a
            // no-op.
            let _ = check(|| unsafe { sys::mlx_detail_compile_erase(cache.handle, self.id()) });
        }
    }
}

impl Drop for CompiledFn {
    fn drop(&mut self) {
        self.clear_cache();
    }
}

impl std::fmt::Debug for CompiledFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledFn")
            .field("shapeless", &self.shapeless)
            .field("traces", &self.traces())
            .field("calls", &self.calls())
            .finish()
    }
}

/// A compiled function (Python: the result of `mx.compile(fun)`); see the module docs.
pub struct Compiled<F> {
    fun: F,
    engine: CompiledFn,
}

/// Compiles `fun` (Python: `mx.compile(fun, shapeless=False)`). `shapeless` defaults to
/// `false`; with `true`, one trace serves all input shapes of the same ranks and dtypes
/// (only valid for functions whose graph does not depend on shapes).
///
/// Python's `inputs=`/`outputs=` (implicit state captured by the function) have no
/// counterpart here: pass state as inputs and return it as outputs; `mlx-tree`'s compile
/// does this for `&mut` state.
pub fn compile<F>(fun: F, shapeless: impl Into<Option<bool>>) -> Compiled<F>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    Compiled {
        fun,
        engine: CompiledFn::new(shapeless.into().unwrap_or(false)),
    }
}

impl<F> Compiled<F>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    /// Calls the compiled function.
    pub fn call(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        self.engine.call_with(inputs, &[], &self.fun)
    }

    /// Calls with extra cache-key constants (traces separately per distinct `constants`).
    pub fn call_with_constants(&self, inputs: &[Array], constants: &[u64]) -> Result<Vec<Array>> {
        self.engine.call_with(inputs, constants, &self.fun)
    }
}

impl<F> Compiled<F> {
    /// How many times MLX ran the Rust function (see the module docs).
    pub fn traces(&self) -> u64 {
        self.engine.traces()
    }

    /// How many calls were made.
    pub fn calls(&self) -> u64 {
        self.engine.calls()
    }

    /// Whether the function was compiled shapeless.
    pub fn shapeless(&self) -> bool {
        self.engine.shapeless()
    }

    /// Forgets every cached trace; the next call traces again.
    pub fn clear_cache(&self) {
        self.engine.clear_cache()
    }

    /// The engine (for wrappers that add their own keying).
    pub fn engine(&self) -> &CompiledFn {
        &self.engine
    }
}

impl<F> std::fmt::Debug for Compiled<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("shapeless", &self.shapeless())
            .field("traces", &self.traces())
            .field("calls", &self.calls())
            .finish()
    }
}
