//! Collective communication between processes (Python: `mlx.core.distributed`).
//!
//! [`init`] joins the process group that a launcher set up: `mlx.launch` (Python's), or
//! `mlx_launch::Launch` / `cargo run --example launch` for processes on this machine, both
//! of which describe the group in the environment [`config`] documents (or, for MPI, have
//! Open MPI's `mpirun` start it). Run alone, it returns a group of size 1 in which every collective is
//! the identity, so code written for many processes also runs on one. Operations take
//! `None` for the global group.
//!
//! Like MLX's, the collectives are lazy ops, differentiable where MLX's are (the gradient of
//! [`all_sum`] is the [`all_sum`] of the cotangent). A peer that dies makes the ring
//! backend's pending operations fail ("connection to a peer was lost") instead of waiting,
//! and every collective after that is an `Err` too: MLX's ring cannot run one again, and
//! would wait forever. Under MPI, `mpirun` ends the whole group instead.
//!
//! ```
//! use mlx_rs::{distributed, Array};
//! let group = distributed::init(false, None)?;
//! let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
//! let total = distributed::all_sum(&x, Some(&group))?;
//! assert_eq!(total.to_vec::<f32>()?.len(), 2);
//! # Ok::<(), mlx_rs::Error>(())
//! ```

use std::sync::Arc;

use mlx_sys as sys;

use crate::error::{check, Result};
use crate::handles::c_string;
use crate::{Array, Dtype, Error, Stream};

pub mod config;
pub(crate) mod lost;

pub use config::RingHostfile;

/// A distributed backend (Python: the `backend` argument's strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// `"any"`: the first available that a launcher configured.
    #[default]
    Any,
    /// `"ring"`: TCP sockets in a ring (`MLX_RANK`, `MLX_HOSTFILE`).
    Ring,
    /// `"mpi"`: an MPI library found at run time.
    Mpi,
    /// `"nccl"`: NVIDIA's collectives, between GPUs (`MLX_RANK`, `MLX_WORLD_SIZE`,
    /// `NCCL_HOST_IP`, `NCCL_PORT`).
    Nccl,
    /// `"jaccl"`: RDMA over Thunderbolt (macOS).
    Jaccl,
}

impl Backend {
    /// The name MLX uses.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Any => "any",
            Backend::Ring => "ring",
            Backend::Mpi => "mpi",
            Backend::Nccl => "nccl",
            Backend::Jaccl => "jaccl",
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = Error;

    fn from_str(s: &str) -> Result<Backend> {
        Ok(match s {
            "any" => Backend::Any,
            "ring" => Backend::Ring,
            "mpi" => Backend::Mpi,
            "nccl" => Backend::Nccl,
            "jaccl" => Backend::Jaccl,
            _ => {
                return Err(Error::invalid(format!(
                    "[distributed] unknown backend {s:?} (any, ring, mpi, nccl, jaccl)"
                )))
            }
        })
    }
}

/// A group of processes (Python: `mx.distributed.Group`).
///
/// `Clone` copies the handle, not the group: clones are the same communicator, as every
/// Python reference to a `Group` is. Layers that communicate keep a clone of the group they
/// were built for (Python: `self.group`).
#[derive(Clone)]
pub struct Group {
    handle: Arc<GroupHandle>,
}

/// The mlx-c handle, freed once, when the last clone of its [`Group`] is dropped.
struct GroupHandle(sys::mlx_distributed_group);

// SAFETY: a group is an immutable communicator handle shared by reference counting in MLX;
// collectives on it are issued through streams, which enforce their own thread rules.
unsafe impl Send for GroupHandle {}
// SAFETY: as above; `&GroupHandle` only reads rank/size or passes the handle to a collective.
unsafe impl Sync for GroupHandle {}

impl Drop for GroupHandle {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { sys::mlx_distributed_group_free(self.0) };
    }
}

impl Group {
    /// This process's rank in the group (Python: `group.rank()`).
    pub fn rank(&self) -> i32 {
        // SAFETY: valid handle.
        unsafe { sys::mlx_distributed_group_rank(self.raw()) }
    }

    /// The number of processes in the group (Python: `group.size()`).
    pub fn size(&self) -> i32 {
        // SAFETY: valid handle.
        unsafe { sys::mlx_distributed_group_size(self.raw()) }
    }

    /// Splits the group: processes with the same `color` form a new group, ordered by `key`
    /// (`None` = current rank) (Python: `group.split(color, key=-1)`).
    pub fn split(&self, color: i32, key: impl Into<Option<i32>>) -> Result<Group> {
        let key = key.into().unwrap_or(-1);
        Group::fill(|out| {
            // SAFETY: valid handle; mlx-c fills the group we own.
            check(|| unsafe { sys::mlx_distributed_group_split(out, self.raw(), color, key) })
        })
    }

    /// Whether `a` and `b` are clones of one handle (like `Arc::ptr_eq`). Handles from
    /// separate [`init`] calls are different even when they reach the same processes: this
    /// is identity, not equality of membership.
    pub fn ptr_eq(a: &Group, b: &Group) -> bool {
        Arc::ptr_eq(&a.handle, &b.handle)
    }

    fn raw(&self) -> sys::mlx_distributed_group {
        self.handle.0
    }

    /// A group that `op` fills from an empty handle; the handle is freed on every path.
    fn fill(op: impl FnOnce(&mut sys::mlx_distributed_group) -> Result<()>) -> Result<Group> {
        crate::error::init();
        // SAFETY: an empty handle, filled by `op`, freed by GroupHandle's Drop.
        let mut handle = GroupHandle(unsafe { sys::mlx_distributed_group_new() });
        op(&mut handle.0)?;
        Ok(Group {
            handle: Arc::new(handle),
        })
    }
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Group(rank={}, size={})", self.rank(), self.size())
    }
}

/// Whether a distributed backend is compiled in; `None` for any
/// (Python: `mx.distributed.is_available(backend="any")`).
pub fn is_available(backend: impl Into<Option<Backend>>) -> Result<bool> {
    let name = c_string(backend.into().unwrap_or_default().name(), "backend")?;
    // SAFETY: a NUL-terminated string that outlives the call.
    crate::error::check_handler(|| unsafe { sys::mlx_distributed_is_available(name.as_ptr()) })
}

/// Initializes (once) and returns the global group (Python:
/// `mx.distributed.init(strict=False, backend="any")`; `None` is `"any"`). With `strict`
/// false and no launcher, the group has size 1; with `strict` true that is an `Err`.
///
/// The launcher's environment is checked first ([`config`]): a malformed hostfile, or a
/// rank that is not one of the group's, is an `Err` where MLX would read out of bounds or
/// wait forever.
pub fn init(strict: bool, backend: impl Into<Option<Backend>>) -> Result<Group> {
    lost::watch();
    let backend = backend.into().unwrap_or_default();
    let mut configured = false;
    if matches!(backend, Backend::Any | Backend::Ring) {
        configured |= config::check_ring_env()?;
    }
    if matches!(backend, Backend::Any | Backend::Nccl) {
        // "any" tries NCCL first wherever CUDA is available.
        if let Some(rank) = config::check_nccl_env()? {
            configured = true;
            if let Some(gpus) = crate::cuda::visible_gpus() {
                config::check_nccl_gpu(rank, gpus)?;
            }
        }
    }
    let mpi = backend == Backend::Mpi || (backend == Backend::Any && !configured);
    if let Some(ranks) = config::mpirun_world_size().filter(|&n| mpi && n > 1) {
        // Without its library MLX's MPI backend gives every rank a group of one, and the
        // ranks would each go on alone.
        if !is_available(Backend::Mpi)? {
            return Err(Error::invalid(format!(
                "[distributed] mpirun started this process as one of {ranks} ranks, but MLX \
                 could not load Open MPI's libmpi ({}): set {} to its path, as \
                 `launch --backend mpi` and `mlx.launch` do",
                std::env::var(config::MPI_LIBNAME).map_or(
                    "MLX tries libmpi.so".to_string(),
                    |v| format!("{}={v:?}", config::MPI_LIBNAME)
                ),
                config::MPI_LIBNAME
            )));
        }
    }
    let name = c_string(backend.name(), "backend")?;
    Group::fill(|g| {
        // SAFETY: NUL-terminated backend name; mlx-c fills the group we own.
        check(|| unsafe { sys::mlx_distributed_init(g, strict, name.as_ptr()) })
    })
}

/// The rank and size of `group`, or of the global group for `None` (initialized as [`init`]
/// does, as MLX does).
fn rank_and_size(group: Option<&Group>) -> Result<(i32, i32)> {
    match group {
        Some(g) => Ok((g.rank(), g.size())),
        None => init(false, None).map(|g| (g.rank(), g.size())),
    }
}

/// `Err` unless `peer` is another rank of `group`: MLX's ring backend indexes its sockets
/// with it and would wait forever on a message to itself.
fn check_peer(op: &str, role: &str, peer: i32, group: Option<&Group>) -> Result<()> {
    let (rank, size) = rank_and_size(group)?;
    if peer < 0 || peer >= size || peer == rank {
        return Err(Error::invalid(format!(
            "[{op}] {role} {peer} is not another rank of a group of {size} (this is rank {rank})"
        )));
    }
    Ok(())
}

/// The group's communication stream on this thread (MLX's default when no stream is given:
/// the thread's default CPU stream for ring, MPI and JACCL, its GPU stream for NCCL).
fn communication_stream(group: Option<&Group>) -> Result<Stream> {
    let g = group_raw(group);
    // SAFETY: valid (or null = global) group handle; mlx-c fills the stream we own.
    Stream::fill(|out| unsafe { sys::_mlx_distributed_group_communication_stream(out, g) })
}

/// Runs a collective (an mlx-c op) on the stream Python would use: a `with_stream` /
/// `with_device` override, or else the group's communication stream. The default device's
/// stream would be wrong on a CUDA build: the ring backend runs on the CPU only.
fn collective_op(
    group: Option<&Group>,
    op: impl FnOnce(*mut sys::mlx_array, sys::mlx_stream) -> i32,
) -> Result<Array> {
    crate::stream::with_override_or_raw(
        || communication_stream(group),
        |s| Array::try_from_op(|res| op(res, s)),
    )?
}

fn group_raw(group: Option<&Group>) -> sys::mlx_distributed_group {
    // A null group means "the global group" to mlx-c.
    group.map_or(
        sys::mlx_distributed_group {
            ctx: std::ptr::null_mut(),
        },
        |g| g.raw(),
    )
}

macro_rules! collectives {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(x: &Array, group: Option<&Group>) -> Result<Array> {
            lost::check_new(stringify!($name))?;
            let g = group_raw(group);
            // SAFETY: valid handles (a null group = global); mlx-c writes into res.
            collective_op(group, |res, s| unsafe { sys::$ffi(res, x.as_raw(), g, s) })
        }
    )*};
}

collectives! {
    /// Element-wise sum over all processes (Python: `mx.distributed.all_sum(x, group=None)`).
    all_sum => mlx_distributed_all_sum;
    /// Element-wise maximum over all processes (Python: `mx.distributed.all_max`).
    all_max => mlx_distributed_all_max;
    /// Element-wise minimum over all processes (Python: `mx.distributed.all_min`).
    all_min => mlx_distributed_all_min;
    /// Concatenation along axis 0 of every process's `x` (Python: `mx.distributed.all_gather`).
    all_gather => mlx_distributed_all_gather;
    /// Sum over processes, then each keeps its slice of axis 0
    /// (Python: `mx.distributed.sum_scatter`).
    sum_scatter => mlx_distributed_sum_scatter;
}

/// Sends `x` to rank `dst`; the result must be evaluated for the send to happen
/// (Python: `mx.distributed.send(x, dst, group=None)`).
pub fn send(x: &Array, dst: i32, group: Option<&Group>) -> Result<Array> {
    lost::check_new("send")?;
    check_peer("send", "destination", dst, group)?;
    let g = group_raw(group);
    // SAFETY: valid handles (a null group = global); mlx-c writes into res.
    collective_op(group, |res, s| unsafe {
        sys::mlx_distributed_send(res, x.as_raw(), dst, g, s)
    })
}

/// Receives an array of `shape` and `dtype` from rank `src`
/// (Python: `mx.distributed.recv(shape, dtype, src, group=None)`).
pub fn recv(shape: &[i32], dtype: Dtype, src: i32, group: Option<&Group>) -> Result<Array> {
    lost::check_new("recv")?;
    check_peer("recv", "source", src, group)?;
    crate::ops::check_shape(shape, dtype, false, "recv")?;
    let g = group_raw(group);
    // SAFETY: `shape` outlives the call; mlx-c writes into res.
    collective_op(group, |res, s| unsafe {
        sys::mlx_distributed_recv(res, shape.as_ptr(), shape.len(), dtype.to_raw(), src, g, s)
    })
}

/// Receives an array shaped like `x` from rank `src`
/// (Python: `mx.distributed.recv_like(x, src, group=None)`).
pub fn recv_like(x: &Array, src: i32, group: Option<&Group>) -> Result<Array> {
    lost::check_new("recv_like")?;
    check_peer("recv_like", "source", src, group)?;
    let g = group_raw(group);
    // SAFETY: valid handles; mlx-c writes into res.
    collective_op(group, |res, s| unsafe {
        sys::mlx_distributed_recv_like(res, x.as_raw(), src, g, s)
    })
}
