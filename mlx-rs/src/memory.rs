//! MLX's allocator counters and limits (Python: `mx.get_active_memory()`, ...).

use mlx_sys as sys;

use std::sync::OnceLock;

use crate::error::{check, Result};
use crate::{Array, Error};

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

/// The most bytes any one array can take: this machine's physical memory plus its swap,
/// read once. MLX's CPU allocator returns null for a request beyond what the system can give,
/// and MLX then writes through it (SIGSEGV, in Python MLX too); an op whose result could
/// never be allocated is refused when it is built instead.
fn machine_memory() -> u64 {
    static BYTES: OnceLock<u64> = OnceLock::new();
    *BYTES.get_or_init(|| {
        // SAFETY: sysconf reads system constants; it has no preconditions.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        let ram = u64::try_from(pages)
            .unwrap_or(0)
            .saturating_mul(u64::try_from(page).unwrap_or(0));
        // Unknown (0): no limit rather than a wrong one.
        if ram == 0 {
            return u64::MAX;
        }
        ram.saturating_add(swap_bytes())
    })
}

/// Linux's `SwapTotal`; 0 where there is no /proc/meminfo.
fn swap_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("SwapTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib.saturating_mul(1024))
        })
        .unwrap_or(0)
}

/// What one array of an op's result list costs at least, whatever its data: MLX's array
/// object and its shared state, and our handle (measured: about 730 bytes for each part of a
/// `split`, 1.3 KiB for `unstack`).
const BYTES_PER_RESULT_ARRAY: u64 = 1024;

/// Errs for an op that would return more arrays than the machine's memory can hold, counting
/// only what each array costs beyond its data (`split(x, n)` of a long axis into `n` parts).
pub(crate) fn check_array_count(n: u64, op: &str) -> Result<()> {
    let need = n.saturating_mul(BYTES_PER_RESULT_ARRAY);
    let have = machine_memory();
    if need > have {
        return Err(Error::invalid(format!(
            "[{op}] {n} result arrays need at least {need} bytes, more than this machine's \
             memory ({have} bytes of RAM and swap)"
        )));
    }
    Ok(())
}

/// Errs for an op result that needs more memory than the machine has (see
/// [`machine_memory`]). Views that allocate nothing (`broadcast_to`) are not checked.
pub(crate) fn check_fits(a: &Array) -> Result<()> {
    let need = a.nbytes() as u64;
    let have = machine_memory();
    if need > have {
        return Err(Error::invalid(format!(
            "an array of shape {:?} and dtype {} needs {need} bytes, more than this machine's \
             memory ({have} bytes of RAM and swap)",
            a.shape(),
            a.dtype()
        )));
    }
    Ok(())
}
