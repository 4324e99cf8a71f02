//! MLX's allocator counters and limits (Python: `mx.get_active_memory()`, ...).

use mlx_sys as sys;

use crate::error::{check, Result};

macro_rules! memory_getters {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name() -> Result<usize> {
            let mut value = 0usize;
            // SAFETY: writes one size_t.
            check(|| unsafe { sys::$ffi(&mut value) })?;
            Ok(value)
        }
    )*};
}

macro_rules! memory_setters {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(limit: usize) -> Result<usize> {
            let mut previous = 0usize;
            // SAFETY: writes one size_t.
            check(|| unsafe { sys::$ffi(&mut previous, limit) })?;
            Ok(previous)
        }
    )*};
}

memory_getters! {
    /// Bytes held by live arrays (Python: `mx.get_active_memory()`).
    get_active_memory => mlx_get_active_memory;
    /// Highest active memory since start or [`reset_peak_memory`] (Python: `mx.get_peak_memory()`).
    get_peak_memory => mlx_get_peak_memory;
    /// Bytes freed but kept for reuse (Python: `mx.get_cache_memory()`).
    get_cache_memory => mlx_get_cache_memory;
    /// The memory limit in bytes (Python: `mx.get_memory_limit()`).
    get_memory_limit => mlx_get_memory_limit;
}

memory_setters! {
    /// Sets the cache limit; returns the previous one (Python: `mx.set_cache_limit`).
    set_cache_limit => mlx_set_cache_limit;
    /// Sets the memory limit; returns the previous one (Python: `mx.set_memory_limit`).
    set_memory_limit => mlx_set_memory_limit;
    /// Sets the wired memory limit; returns the previous one (Python: `mx.set_wired_limit`).
    set_wired_limit => mlx_set_wired_limit;
}

/// Resets the peak counter (Python: `mx.reset_peak_memory()`).
pub fn reset_peak_memory() -> Result<()> {
    // SAFETY: no arguments.
    check(|| unsafe { sys::mlx_reset_peak_memory() })
}

/// Releases cached buffers to the system (Python: `mx.clear_cache()`).
pub fn clear_cache() -> Result<()> {
    // SAFETY: no arguments.
    check(|| unsafe { sys::mlx_clear_cache() })
}
