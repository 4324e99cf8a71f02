//! Devices: where computations run.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use mlx_sys as sys;

use crate::error::{check, Result};
use crate::handles::MlxString;

/// The kind of a [`Device`] (Python: `mx.cpu`, `mx.gpu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceType {
    Cpu,
    Gpu,
}

impl DeviceType {
    fn to_raw(self) -> sys::mlx_device_type {
        match self {
            DeviceType::Cpu => sys::MLX_CPU,
            DeviceType::Gpu => sys::MLX_GPU,
        }
    }
}

/// A compute device (Python: `mx.Device`). Cheap to clone.
pub struct Device {
    raw: sys::mlx_device,
}

// SAFETY: an mlx_device is an immutable (type, index) value behind a pointer; nothing in it is
// tied to a thread.
unsafe impl Send for Device {}
// SAFETY: as above; shared references only read it.
unsafe impl Sync for Device {}

impl Device {
    /// A device of the given type and index (Python: `mx.Device(mx.gpu, 0)`). Errors unless
    /// `0 <= index < Device::count(kind)`: Python accepts any index and fails at first use,
    /// with a message from inside the C++ standard library.
    ///
    /// ```
    /// use mlx_rs::{Device, DeviceType};
    /// assert_eq!(Device::new(DeviceType::Cpu, 0)?.index(), 0);
    /// assert!(Device::new(DeviceType::Cpu, -1).is_err());
    /// assert!(Device::new(DeviceType::Cpu, 7).is_err());
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn new(kind: DeviceType, index: i32) -> Result<Device> {
        let count = Device::count(kind)?;
        if !(0..count).contains(&index) {
            return Err(crate::Error::invalid(format!(
                "[Device] there is no {kind:?} device {index}: this machine has {count}"
            )));
        }
        Ok(Device::of(kind, index))
    }

    fn of(kind: DeviceType, index: i32) -> Device {
        crate::error::init();
        Device {
            // SAFETY: plain constructor; the handle is owned by the returned value.
            raw: unsafe { sys::mlx_device_new_type(kind.to_raw(), index) },
        }
    }

    /// The first CPU (Python: `mx.cpu`).
    pub fn cpu() -> Device {
        Device::of(DeviceType::Cpu, 0)
    }

    /// The first GPU (Python: `mx.gpu`), which exists as a value on every build; check
    /// [`Device::is_available`] before using it.
    pub fn gpu() -> Device {
        Device::of(DeviceType::Gpu, 0)
    }

    /// The process-wide default device (Python: `mx.default_device()`).
    pub fn default_device() -> Result<Device> {
        let mut dev = Device::empty();
        // SAFETY: writes a valid device into our owned handle.
        check(|| unsafe { sys::mlx_get_default_device(&mut dev.raw) })?;
        Ok(dev)
    }

    /// Sets the process-wide default device (Python: `mx.set_default_device`). This is
    /// global state shared by all threads; prefer [`crate::with_device`] for a scoped change.
    pub fn set_default(device: &Device) -> Result<()> {
        // SAFETY: valid handle.
        check(|| unsafe { sys::mlx_set_default_device(device.raw) })?;
        defaults_changed();
        Ok(())
    }

    /// CPU or GPU.
    pub fn device_type(&self) -> DeviceType {
        let mut raw = sys::MLX_CPU;
        // SAFETY: valid handle; writes one enum value. Cannot fail for a constructed device.
        check(|| unsafe { sys::mlx_device_get_type(&mut raw, self.raw) })
            .expect("mlx_device_get_type on a valid device");
        if raw == sys::MLX_GPU {
            DeviceType::Gpu
        } else {
            DeviceType::Cpu
        }
    }

    /// The device index within its type.
    pub fn index(&self) -> i32 {
        let mut index = 0;
        // SAFETY: valid handle; writes one int.
        check(|| unsafe { sys::mlx_device_get_index(&mut index, self.raw) })
            .expect("mlx_device_get_index on a valid device");
        index
    }

    /// Whether this build of MLX can run on this device (Python: `mx.is_available(d)`).
    pub fn is_available(&self) -> bool {
        let mut avail = false;
        // SAFETY: valid handle; writes one bool.
        check(|| unsafe { sys::mlx_device_is_available(&mut avail, self.raw) }).is_ok() && avail
    }

    /// How many devices of a type exist (Python: `mx.device_count`).
    pub fn count(kind: DeviceType) -> Result<i32> {
        let mut n = 0;
        // SAFETY: writes one int.
        check(|| unsafe { sys::mlx_device_count(&mut n, kind.to_raw()) })?;
        Ok(n)
    }

    pub(crate) fn empty() -> Device {
        crate::error::init();
        Device {
            // SAFETY: an empty handle, filled by a later mlx-c call, freed in Drop.
            raw: unsafe { sys::mlx_device_new() },
        }
    }

    pub(crate) fn raw_mut(&mut self) -> *mut sys::mlx_device {
        &mut self.raw
    }

    /// Wraps a raw handle, taking ownership of it.
    ///
    /// # Safety
    /// `raw` must be a valid `mlx_device` handle that nothing else will free: the returned
    /// `Device` frees it on drop.
    pub unsafe fn from_raw(raw: sys::mlx_device) -> Device {
        Device { raw }
    }

    /// The raw handle, still owned by `self`, for calling `mlx_sys` directly (see
    /// [`Array::as_raw`](crate::Array::as_raw) for the rule).
    pub fn as_raw(&self) -> sys::mlx_device {
        self.raw
    }
}

impl Clone for Device {
    fn clone(&self) -> Device {
        let mut dev = Device::empty();
        // SAFETY: copies a valid device into our owned handle.
        check(|| unsafe { sys::mlx_device_set(&mut dev.raw, self.raw) })
            .expect("copying a device cannot fail");
        dev
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_device_free(self.raw) };
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Device) -> bool {
        // SAFETY: both handles are valid.
        unsafe { sys::mlx_device_equal(self.raw, other.raw) }
    }
}

impl Eq for Device {}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: valid handle; mlx-c writes into the string we own.
        match MlxString::fill(|s| unsafe { sys::mlx_device_tostring(s, self.raw) }) {
            Ok(text) => f.write_str(&text),
            Err(_) => write!(f, "Device({:?}, {})", self.device_type(), self.index()),
        }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// One value of [`Device::info`]: MLX reports strings and sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceInfoValue {
    String(String),
    Size(usize),
}

/// An owned `mlx_device_info`.
struct DeviceInfoHandle(sys::mlx_device_info);

impl Drop for DeviceInfoHandle {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_device_info_free(self.0) };
    }
}

impl Device {
    /// Properties of the device as a map; keys depend on the backend (`device_name`,
    /// `architecture`, memory sizes, ...) (Python: `mx.device_info(d)`).
    pub fn info(&self) -> Result<std::collections::HashMap<String, DeviceInfoValue>> {
        crate::error::init();
        // SAFETY: creates an empty handle, owned by the guard.
        let mut info = DeviceInfoHandle(unsafe { sys::mlx_device_info_new() });
        // SAFETY: valid device; mlx-c fills the handle we own.
        check(|| unsafe { sys::mlx_device_info_get(&mut info.0, self.raw) })?;
        let mut keys = crate::handles::VectorString::new();
        // SAFETY: valid handles; mlx-c fills the vector we own.
        check(|| unsafe { sys::mlx_device_info_get_keys(&mut keys.0, info.0) })?;
        let mut out = std::collections::HashMap::new();
        for key in keys.to_vec()? {
            let c = crate::handles::c_string(&key, "device info key")?;
            let mut is_string = false;
            // SAFETY: valid handle and key; writes one bool.
            check(|| unsafe {
                sys::mlx_device_info_is_string(&mut is_string, info.0, c.as_ptr())
            })?;
            let value = if is_string {
                let mut ptr: *const std::ffi::c_char = std::ptr::null();
                // SAFETY: valid handle and key; mlx-c points `ptr` at a string owned by `info`.
                check(|| unsafe { sys::mlx_device_info_get_string(&mut ptr, info.0, c.as_ptr()) })?;
                // SAFETY: non-null, NUL-terminated, alive while `info` lives; copied now.
                DeviceInfoValue::String(
                    unsafe { std::ffi::CStr::from_ptr(ptr) }
                        .to_string_lossy()
                        .into_owned(),
                )
            } else {
                let mut size = 0usize;
                // SAFETY: valid handle and key; writes one size_t.
                check(|| unsafe { sys::mlx_device_info_get_size(&mut size, info.0, c.as_ptr()) })?;
                DeviceInfoValue::Size(size)
            };
            out.insert(key, value);
        }
        Ok(out)
    }
}

/// Properties of `device`, or of the default device when `None` (Python: `mx.device_info(d=None)`).
pub fn device_info(
    device: Option<&Device>,
) -> Result<std::collections::HashMap<String, DeviceInfoValue>> {
    match device {
        Some(d) => d.info(),
        None => Device::default_device()?.info(),
    }
}

/// Bumped whenever a default device or stream changes anywhere; the per-thread stream caches
/// (`stream.rs`) compare it. It lives here, below streams, so that streams depend on devices
/// and not the other way round.
static DEFAULTS_EPOCH: AtomicU64 = AtomicU64::new(0);

pub(crate) fn defaults_changed() {
    DEFAULTS_EPOCH.fetch_add(1, Ordering::Release);
}

pub(crate) fn defaults_epoch() -> u64 {
    DEFAULTS_EPOCH.load(Ordering::Acquire)
}
