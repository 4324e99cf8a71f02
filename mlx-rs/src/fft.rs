//! Fast Fourier transforms (Python: `mlx.core.fft`).
//!
//! Arguments mirror Python: `n` (1-D size) and `s` (n-D sizes) are `None` for "the input's
//! size along the axes"; `axis`/`axes` are `None` for Python's default (`-1` for the 1-D
//! transforms, `[-2, -1]` for the `*2` transforms, every axis for the `*n` transforms); `norm`
//! is `None` for `"backward"`.
//!
//! ```
//! use mlx_rs::{fft, Array};
//! let x = Array::from_slice(&[1.0f32, 0.0, -1.0, 0.0], &[4])?;
//! let spectrum = fft::rfft(&x, None, None, None)?; // Python: mx.fft.rfft(x)
//! let back = fft::irfft(&spectrum, 4, None, fft::FftNorm::Backward)?;
//! assert_eq!(back.shape(), &[4]);
//! # Ok::<(), mlx_rs::Error>(())
//! ```

use mlx_sys as sys;

use crate::ops::Axes;
use crate::{Array, Result};

/// FFT normalization (Python: `norm="backward" | "ortho" | "forward"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FftNorm {
    /// No scaling forward, `1/n` on the inverse (Python's default).
    #[default]
    Backward,
    /// `1/sqrt(n)` both ways.
    Ortho,
    /// `1/n` forward, no scaling on the inverse.
    Forward,
}

impl FftNorm {
    fn to_raw(self) -> sys::mlx_fft_norm {
        match self {
            FftNorm::Backward => sys::MLX_FFT_NORM_BACKWARD,
            FftNorm::Ortho => sys::MLX_FFT_NORM_ORTHO,
            FftNorm::Forward => sys::MLX_FFT_NORM_FORWARD,
        }
    }
}

/// The size MLX uses along `axis` when Python's `n`/`s` is `None`: the input's size, or
/// `2 * (size - 1)` for the last axis of an inverse real transform. An out-of-range axis gets
/// a placeholder so that MLX itself reports the bad axis with its own message.
fn default_size(a: &Array, axis: i32, inverse_real_last: bool) -> i32 {
    let ndim = a.ndim() as i32;
    let idx = if axis < 0 { axis + ndim } else { axis };
    if idx < 0 || idx >= ndim {
        return 1;
    }
    let size = a.shape()[idx as usize];
    if inverse_real_last {
        (size - 1) * 2
    } else {
        size
    }
}

/// `axes` resolved against Python's default for the transform family.
fn resolve_axes(a: &Array, axes: Axes<'_>, default_last_two: bool) -> Vec<i32> {
    match axes.as_slice() {
        Some(axes) => axes.to_vec(),
        None if default_last_two => vec![-2, -1],
        None => (0..a.ndim() as i32).collect(),
    }
}

/// One-dimensional transforms: `(a, n=None, axis=-1, norm="backward")`.
macro_rules! fft_1d {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident, inverse_real = $ir:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name(
            a: &Array,
            n: impl Into<Option<i32>>,
            axis: impl Into<Option<i32>>,
            norm: impl Into<Option<FftNorm>>,
        ) -> Result<Array> {
            let axis = axis.into().unwrap_or(-1);
            let n = n.into().unwrap_or_else(|| default_size(a, axis, $ir));
            let norm = norm.into().unwrap_or_default().to_raw();
            // SAFETY: valid handle; mlx-c writes a new array into res.
            Array::try_from_stream_op(|res, s| unsafe {
                sys::$ffi(res, a.as_raw(), n, axis, norm, s)
            })
        }
    )*};
}

/// Multi-dimensional transforms: `(a, s=None, axes=<family default>, norm="backward")`.
macro_rules! fft_nd {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident, last_two = $two:expr, inverse_real = $ir:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name<'x>(
            a: &Array,
            s: Option<&[i32]>,
            axes: impl Into<Axes<'x>>,
            norm: impl Into<Option<FftNorm>>,
        ) -> Result<Array> {
            let axes = resolve_axes(a, axes.into(), $two);
            let sizes: Vec<i32> = match s {
                Some(s) => s.to_vec(),
                None => axes
                    .iter()
                    .enumerate()
                    .map(|(i, &ax)| default_size(a, ax, $ir && i + 1 == axes.len()))
                    .collect(),
            };
            let norm = norm.into().unwrap_or_default().to_raw();
            // SAFETY: valid handle; both slices outlive the call; mlx-c writes into res.
            Array::try_from_stream_op(|res, st| unsafe {
                sys::$ffi(
                    res,
                    a.as_raw(),
                    sizes.as_ptr(),
                    sizes.len(),
                    axes.as_ptr(),
                    axes.len(),
                    norm,
                    st,
                )
            })
        }
    )*};
}

fft_1d! {
    /// One-dimensional DFT (Python: `mx.fft.fft(a, n=None, axis=-1, norm="backward")`).
    fft => mlx_fft_fft, inverse_real = false;
    /// One-dimensional inverse DFT (Python: `mx.fft.ifft`).
    ifft => mlx_fft_ifft, inverse_real = false;
    /// DFT of a real input; the last axis keeps `n / 2 + 1` entries (Python: `mx.fft.rfft`).
    rfft => mlx_fft_rfft, inverse_real = false;
    /// Inverse of [`rfft`]; `n` defaults to `2 * (a.shape[axis] - 1)` (Python: `mx.fft.irfft`).
    irfft => mlx_fft_irfft, inverse_real = true;
}

fft_nd! {
    /// Two-dimensional DFT; `axes` defaults to `[-2, -1]` (Python: `mx.fft.fft2`).
    fft2 => mlx_fft_fft2, last_two = true, inverse_real = false;
    /// Two-dimensional inverse DFT (Python: `mx.fft.ifft2`).
    ifft2 => mlx_fft_ifft2, last_two = true, inverse_real = false;
    /// Two-dimensional DFT of a real input (Python: `mx.fft.rfft2`).
    rfft2 => mlx_fft_rfft2, last_two = true, inverse_real = false;
    /// Inverse of [`rfft2`] (Python: `mx.fft.irfft2`).
    irfft2 => mlx_fft_irfft2, last_two = true, inverse_real = true;
    /// n-dimensional DFT; `axes` defaults to every axis (Python: `mx.fft.fftn`).
    fftn => mlx_fft_fftn, last_two = false, inverse_real = false;
    /// n-dimensional inverse DFT (Python: `mx.fft.ifftn`).
    ifftn => mlx_fft_ifftn, last_two = false, inverse_real = false;
    /// n-dimensional DFT of a real input (Python: `mx.fft.rfftn`).
    rfftn => mlx_fft_rfftn, last_two = false, inverse_real = false;
    /// Inverse of [`rfftn`] (Python: `mx.fft.irfftn`).
    irfftn => mlx_fft_irfftn, last_two = false, inverse_real = true;
}

macro_rules! fft_shift {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name<'x>(a: &Array, axes: impl Into<Axes<'x>>) -> Result<Array> {
            let axes = resolve_axes(a, axes.into(), false);
            // SAFETY: valid handle; `axes` outlives the call; mlx-c writes into res.
            Array::try_from_stream_op(|res, s| unsafe {
                sys::$ffi(res, a.as_raw(), axes.as_ptr(), axes.len(), s)
            })
        }
    )*};
}

fft_shift! {
    /// Moves the zero-frequency term to the center; `axes` defaults to every axis
    /// (Python: `mx.fft.fftshift(a, axes=None)`).
    fftshift => mlx_fft_fftshift;
    /// Inverse of [`fftshift`] (Python: `mx.fft.ifftshift(a, axes=None)`).
    ifftshift => mlx_fft_ifftshift;
}

/// Sample frequencies of a length-`n` DFT with sample spacing `d` (default 1.0)
/// (Python: `mx.fft.fftfreq(n, d=1.0)`).
pub fn fftfreq(n: i32, d: impl Into<Option<f64>>) -> Result<Array> {
    let d = d.into().unwrap_or(1.0);
    // SAFETY: plain values; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_fft_fftfreq(res, n, d, s) })
}

/// Sample frequencies of a length-`n` [`rfft`] (Python: `mx.fft.rfftfreq(n, d=1.0)`).
pub fn rfftfreq(n: i32, d: impl Into<Option<f64>>) -> Result<Array> {
    let d = d.into().unwrap_or(1.0);
    // SAFETY: plain values; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_fft_rfftfreq(res, n, d, s) })
}
