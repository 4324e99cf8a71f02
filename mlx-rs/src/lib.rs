//! Safe Rust bindings to [MLX](https://github.com/ml-explore/mlx) through mlx-c.
//!
//! Names follow Python's `mlx.core`: `mx.zeros` is [`ops::zeros`], `mx.random.normal` is
//! [`random::normal`], `a.sum(axis=1)` is `a.sum(1, false)`. Every fallible call returns
//! [`Result`]; bad input never aborts the process.
//!
//! ```
//! use mlx_rs::{ops, random, Array};
//! let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let b = ops::matmul(&a, &a.t()?)?;
//! let noise = random::normal(&[2, 2], Default::default(), &random::key(0)?)?;
//! let total = (&b + &noise).sum(None, false)?;
//! println!("{total}");
//! # Ok::<(), mlx_rs::Error>(())
//! ```
//!
//! # Raw handles
//! Every handle type follows one rule (git2's): `as_raw()` hands out the raw mlx-sys handle,
//! still owned by the Rust value, and is safe to call, because doing anything with it needs
//! `unsafe` mlx-sys calls; `from_raw()` takes ownership of a handle and is `unsafe`.

// Every unsafe operation sits in its own `unsafe` block with a `// SAFETY:` argument, even
// inside an `unsafe fn`. The arguments share one invariant, so they can be short: every
// owning type here (Array, Device, Stream, the handles.rs and closure.rs wrappers) holds a
// handle that is valid from its constructor to its Drop and is freed only there. "valid
// handle" in a SAFETY comment means: borrowed from such a live owner for the duration of the
// call, which mlx-c neither frees nor keeps (it copies or refcounts what it keeps); "writes
// one int/bool" means: the out-pointer is a live local of that type.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod array;
mod backends;
mod closure;
pub mod compile;
mod data;
mod device;
pub mod distributed;
mod dtype;
mod error;
mod evaluation;
pub mod export;
pub mod fast;
pub mod fft;
pub mod graph;
mod handles;
pub mod io;
mod item;
pub mod linalg;
pub mod memory;
mod op_call;
pub mod ops;
pub mod random;
mod stream;
pub mod transforms;

pub use array::Array;
pub use backends::{cuda, metal};
pub use device::{device_info, Device, DeviceInfoValue, DeviceType};
pub use dtype::{ArrayElement, Dtype};
pub use error::{Error, Result};
pub use evaluation::{async_eval, eval};
pub use item::ItemType;
pub use stream::{clear_streams, synchronize, with_device, with_stream, Stream, ThreadLocalStream};

/// Re-exported so `f16`/`bf16` and `Complex32` elements need no extra dependency.
pub use half;
pub use num_complex;

/// The raw bindings, for what the safe API does not cover yet.
pub use mlx_sys as sys;

/// The version of the MLX library in use (Python: `mx.__version__`).
pub fn version() -> Result<String> {
    // SAFETY: mlx-c writes into a string we own.
    handles::MlxString::fill(|s| unsafe { sys::mlx_version(s) })
}
