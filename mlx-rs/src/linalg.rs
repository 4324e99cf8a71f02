//! Linear algebra (Python: `mlx.core.linalg`).
//!
//! # CPU-only ops
//! Most factorizations (`inv`, `qr`, `svd`, `eig*`, `cholesky*`, `lu*`, `solve*`, `pinv`,
//! `det`, ...) are implemented by MLX on the CPU only. Python code passes `stream=mx.cpu`;
//! in Rust run the call inside [`crate::with_device`]:
//!
//! ```
//! use mlx_rs::{linalg, with_device, Array, Device};
//! let a = Array::from_slice(&[4.0f32, 1.0, 1.0, 3.0], &[2, 2])?;
//! // Python: mx.linalg.inv(a, stream=mx.cpu)
//! let inv = with_device(&Device::cpu(), || linalg::inv(&a))??;
//! assert_eq!(inv.shape(), &[2, 2]);
//! # Ok::<(), mlx_rs::Error>(())
//! ```
//!
//! On a CPU-only build every stream is a CPU stream, so the wrapper changes nothing there; on
//! a GPU build, calling these on the GPU stream returns MLX's error as an `Err`.

use mlx_sys as sys;

use crate::array::OutArray;
use crate::handles::VectorArray;
use crate::ops::unless_empty;
use crate::ops::Axes;
use crate::{Array, Result};

/// The `ord` of [`norm`] (Python: `ord=None | int | float | "fro" | "nuc"`).
///
/// Numbers convert directly: `2`, `1.0`, `f64::INFINITY`, `f64::NEG_INFINITY`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NormOrd {
    /// A numeric order: a vector p-norm, or for matrices `1`, `-1`, `2`, `-2`, `inf`, `-inf`.
    P(f64),
    /// The Frobenius norm (Python: `"fro"`).
    Fro,
    /// The nuclear norm (Python: `"nuc"`).
    Nuc,
}

impl From<f64> for NormOrd {
    fn from(p: f64) -> Self {
        NormOrd::P(p)
    }
}

impl From<i32> for NormOrd {
    fn from(p: i32) -> Self {
        NormOrd::P(f64::from(p))
    }
}

/// Which triangle of a symmetric matrix [`eigh`]/[`eigvalsh`] read (Python: `UPLO="L" | "U"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Uplo {
    /// The lower triangle (Python's default `"L"`).
    #[default]
    L,
    /// The upper triangle (`"U"`).
    U,
}

impl Uplo {
    fn as_cstr(self) -> &'static std::ffi::CStr {
        match self {
            Uplo::L => c"L",
            Uplo::U => c"U",
        }
    }
}

/// Matrix or vector norm (Python: `mx.linalg.norm(a, ord=None, axis=None, keepdims=False)`).
///
/// `ord = None` with `axis = None` is the 2-norm of the flattened array; `axis` is one axis
/// (vector norm) or two axes (matrix norm), as in Python.
pub fn norm<'x>(
    a: &Array,
    ord: impl Into<Option<NormOrd>>,
    axis: impl Into<Axes<'x>>,
    keepdims: bool,
) -> Result<Array> {
    let axis = axis.into();
    let (axis_ptr, axis_len) = match axis.as_slice() {
        None => (std::ptr::null(), 0),
        Some(axes) => (axes.as_ptr(), axes.len()),
    };
    match ord.into() {
        // SAFETY: valid handle; the axis slice (or null for "all") outlives the call.
        None => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_linalg_norm_l2(res, a.as_raw(), axis_ptr, axis_len, keepdims, s)
        }),
        // SAFETY: as above.
        Some(NormOrd::P(p)) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_linalg_norm(res, a.as_raw(), p, axis_ptr, axis_len, keepdims, s)
        }),
        Some(ord @ (NormOrd::Fro | NormOrd::Nuc)) => {
            let name = if ord == NormOrd::Fro { c"fro" } else { c"nuc" };
            // SAFETY: as above; `name` is a static C string.
            Array::try_from_stream_op(|res, s| unsafe {
                sys::mlx_linalg_norm_matrix(
                    res,
                    a.as_raw(),
                    name.as_ptr(),
                    axis_ptr,
                    axis_len,
                    keepdims,
                    s,
                )
            })
        }
    }
}

macro_rules! linalg_unary {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array) -> Result<Array> {
            // SAFETY: valid handle; mlx-c writes a new array into res.
            unless_empty(Array::try_from_stream_op(|res, s| unsafe { sys::$ffi(res, a.as_raw(), s) })?)
        }
    )*};
}

macro_rules! linalg_upper {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array, upper: impl Into<Option<bool>>) -> Result<Array> {
            let upper = upper.into().unwrap_or(false);
            // SAFETY: valid handle; mlx-c writes a new array into res.
            unless_empty(Array::try_from_stream_op(|res, s| unsafe {
                sys::$ffi(res, a.as_raw(), upper, s)
            })?)
        }
    )*};
}

macro_rules! linalg_pair {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Array) -> Result<(Array, Array)> {
            let mut second = OutArray::new();
            let first = Array::try_from_stream_op(|res, s| {
                // SAFETY: valid handle; mlx-c writes two new arrays into the handles we own.
                unsafe { sys::$ffi(res, second.as_mut_ptr(), a.as_raw(), s) }
            })?;
            Ok((first, second.into_array()))
        }
    )*};
}

linalg_unary! {
    /// Matrix inverse (Python: `mx.linalg.inv`). CPU only.
    inv => mlx_linalg_inv;
    /// Moore-Penrose pseudo-inverse (Python: `mx.linalg.pinv`). CPU only.
    pinv => mlx_linalg_pinv;
    /// Determinant (Python: `mx.linalg.det`). CPU only.
    det => mlx_linalg_det;
    /// Eigenvalues of a general square matrix, complex64 (Python: `mx.linalg.eigvals`). CPU only.
    eigvals => mlx_linalg_eigvals;
}

linalg_upper! {
    /// Inverse of a triangular matrix (Python: `mx.linalg.tri_inv(a, upper=False)`). CPU only.
    tri_inv => mlx_linalg_tri_inv;
    /// Cholesky factor of a symmetric positive definite matrix
    /// (Python: `mx.linalg.cholesky(a, upper=False)`). CPU only.
    cholesky => mlx_linalg_cholesky;
    /// Inverse of a matrix from its Cholesky factor
    /// (Python: `mx.linalg.cholesky_inv(L, upper=False)`). CPU only.
    cholesky_inv => mlx_linalg_cholesky_inv;
}

linalg_pair! {
    /// QR factorization, returns `(Q, R)` (Python: `mx.linalg.qr`). CPU only.
    qr => mlx_linalg_qr;
    /// Eigen decomposition of a general square matrix, returns complex64
    /// `(eigenvalues, eigenvectors)` (Python: `mx.linalg.eig`). CPU only.
    eig => mlx_linalg_eig;
    /// LU factorization in LAPACK's compact form, returns `(LU, pivots)`
    /// (Python: `mx.linalg.lu_factor`). CPU only.
    lu_factor => mlx_linalg_lu_factor;
    /// Sign and natural log of the absolute determinant, returns `(sign, logabsdet)`
    /// (Python: `mx.linalg.slogdet`). CPU only.
    slogdet => mlx_linalg_slogdet;
}

/// Eigenvalues and eigenvectors of a symmetric (Hermitian) matrix, returns
/// `(eigenvalues, eigenvectors)` (Python: `mx.linalg.eigh(a, UPLO="L")`). CPU only.
pub fn eigh(a: &Array, uplo: impl Into<Option<Uplo>>) -> Result<(Array, Array)> {
    let uplo = uplo.into().unwrap_or_default().as_cstr();
    let mut vectors = OutArray::new();
    let values = Array::try_from_stream_op(|res, s| {
        // SAFETY: valid handle; static C string; mlx-c writes into handles we own.
        unsafe { sys::mlx_linalg_eigh(res, vectors.as_mut_ptr(), a.as_raw(), uplo.as_ptr(), s) }
    })?;
    Ok((values, vectors.into_array()))
}

/// Eigenvalues of a symmetric (Hermitian) matrix (Python: `mx.linalg.eigvalsh(a, UPLO="L")`).
/// CPU only.
pub fn eigvalsh(a: &Array, uplo: impl Into<Option<Uplo>>) -> Result<Array> {
    let uplo = uplo.into().unwrap_or_default().as_cstr();
    // SAFETY: valid handle; static C string; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_linalg_eigvalsh(res, a.as_raw(), uplo.as_ptr(), s)
    })
}

/// Singular value decomposition (Python: `mx.linalg.svd(a, compute_uv=True)`). CPU only.
///
/// As in Python, the result is `[U, S, Vt]` when `compute_uv` is true (the default) and `[S]`
/// otherwise.
pub fn svd(a: &Array, compute_uv: impl Into<Option<bool>>) -> Result<Vec<Array>> {
    let compute_uv = compute_uv.into().unwrap_or(true);
    let mut out = VectorArray::new();
    crate::stream::with_current_raw(|s| {
        // SAFETY: valid handles; mlx-c fills the vector we own.
        crate::error::check(|| unsafe {
            sys::mlx_linalg_svd(&mut out.0, a.as_raw(), compute_uv, s)
        })
    })??;
    out.to_vec()
}

/// LU factorization with partial pivoting, returns `(P, L, U)` with `A = P @ L @ U`
/// (Python: `mx.linalg.lu`). CPU only.
pub fn lu(a: &Array) -> Result<(Array, Array, Array)> {
    let mut out = VectorArray::new();
    crate::stream::with_current_raw(|s| {
        // SAFETY: valid handles; mlx-c fills the vector we own.
        crate::error::check(|| unsafe { sys::mlx_linalg_lu(&mut out.0, a.as_raw(), s) })
    })??;
    let mut parts = out.to_vec()?.into_iter();
    match (parts.next(), parts.next(), parts.next()) {
        (Some(p), Some(l), Some(u)) => Ok((unless_empty(p)?, unless_empty(l)?, unless_empty(u)?)),
        _ => Err(crate::Error::Mlx(
            "[linalg::lu] MLX returned fewer than three factors".into(),
        )),
    }
}

/// Cross product of 3-vectors along `axis` (default -1)
/// (Python: `mx.linalg.cross(a, b, axis=-1)`).
pub fn cross(a: &Array, b: &Array, axis: impl Into<Option<i32>>) -> Result<Array> {
    let axis = axis.into().unwrap_or(-1);
    // SAFETY: valid handles; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_linalg_cross(res, a.as_raw(), b.as_raw(), axis, s)
    })
}

/// Solves `a @ x = b` for `x` (Python: `mx.linalg.solve(a, b)`). CPU only.
pub fn solve(a: &Array, b: &Array) -> Result<Array> {
    // SAFETY: valid handles; mlx-c writes a new array into res.
    unless_empty(Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_linalg_solve(res, a.as_raw(), b.as_raw(), s)
    })?)
}

/// Solves `a @ x = b` for triangular `a` (Python:
/// `mx.linalg.solve_triangular(a, b, upper=False)`). CPU only.
pub fn solve_triangular(a: &Array, b: &Array, upper: impl Into<Option<bool>>) -> Result<Array> {
    let upper = upper.into().unwrap_or(false);
    // SAFETY: valid handles; mlx-c writes a new array into res.
    unless_empty(Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_linalg_solve_triangular(res, a.as_raw(), b.as_raw(), upper, s)
    })?)
}
