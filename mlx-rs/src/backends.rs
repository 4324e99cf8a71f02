//! Backend availability queries (Python: `mx.metal`, `mx.cuda`).

/// The Metal backend (Python: `mx.metal`).
pub mod metal {
    use mlx_sys as sys;

    use crate::error::{check, Result};
    use crate::handles::{c_string, MlxString};

    /// Whether MLX was built with Metal and a Metal device is present
    /// (Python: `mx.metal.is_available()`).
    pub fn is_available() -> Result<bool> {
        let mut avail = false;
        // SAFETY: writes one bool.
        check(|| unsafe { sys::mlx_metal_is_available(&mut avail) })?;
        Ok(avail)
    }

    /// Starts a Metal GPU capture written to `path` (a `.gputrace` file); needs
    /// `MTL_CAPTURE_ENABLED=1` (Python: `mx.metal.start_capture(path)`). `Err` without Metal.
    pub fn start_capture(path: &str) -> Result<()> {
        let c = c_string(path, "capture path")?;
        // SAFETY: NUL-terminated path.
        check(|| unsafe { sys::mlx_metal_start_capture(c.as_ptr()) })
    }

    /// Stops a capture begun by [`start_capture`] (Python: `mx.metal.stop_capture()`).
    pub fn stop_capture() -> Result<()> {
        // SAFETY: no arguments.
        check(|| unsafe { sys::mlx_metal_stop_capture() })
    }

    /// Where MLX looks for its compiled Metal kernels (`mlx.metallib`).
    pub fn metallib_path() -> Result<String> {
        // SAFETY: mlx-c writes into a string we own.
        MlxString::fill(|s| unsafe { sys::mlx_metal_get_metallib_path(s) })
    }

    /// Points MLX at a `mlx.metallib`; must run before the first Metal use.
    pub fn set_metallib_path(path: &str) -> Result<()> {
        let c = c_string(path, "metallib path")?;
        // SAFETY: NUL-terminated path.
        check(|| unsafe { sys::mlx_metal_set_metallib_path(c.as_ptr()) })
    }
}

/// The CUDA backend (Python: `mx.cuda`).
pub mod cuda {
    use std::sync::OnceLock;

    use mlx_sys as sys;

    use crate::error::{check, Result};

    /// Whether MLX was built with CUDA and a CUDA device is present
    /// (Python: `mx.cuda.is_available()`).
    pub fn is_available() -> Result<bool> {
        let mut avail = false;
        // SAFETY: writes one bool.
        check(|| unsafe { sys::mlx_cuda_is_available(&mut avail) })?;
        Ok(avail)
    }

    /// Whether MLX's current stream runs on a CUDA GPU: MLX has CUDA, a CUDA device is present
    /// and the thread's stream is on the GPU. Availability is asked once (it does not change
    /// while a process runs); the stream each call.
    pub fn is_current_device() -> Result<bool> {
        static AVAILABLE: OnceLock<bool> = OnceLock::new();
        let available = *AVAILABLE.get_or_init(|| is_available().unwrap_or(false));
        Ok(available && crate::Stream::current()?.device().device_type() == crate::DeviceType::Gpu)
    }

    /// How many GPUs MLX sees, where it has a CUDA backend (`None` elsewhere); a failed count,
    /// as with no CUDA device at all, is none. An NCCL rank and its launcher check it before
    /// MLX's NCCL backend would `exit(1)`.
    pub fn visible_gpus() -> Option<usize> {
        if !is_available().unwrap_or(false) {
            return None;
        }
        let n = crate::Device::count(crate::DeviceType::Gpu).unwrap_or(0);
        Some(usize::try_from(n).unwrap_or(0))
    }
}
