//! Convolutions: `conv1d`, `conv2d`, `conv3d`, `conv_transpose{1,2,3}d`, `conv_general`.
//!
//! Python's many keyword arguments become options structs with `Default` (Python's defaults)
//! and builder methods; each spatial argument takes an `int` or one value per spatial axis:
//!
//! ```
//! use mlx_rs::ops::{conv2d, zeros, ConvOptions};
//! // Python: mx.conv2d(x, w, stride=2, padding=(1, 0))
//! let x = zeros(&[1, 8, 8, 3], None)?;
//! let w = zeros(&[4, 3, 3, 3], None)?;
//! let y = conv2d(&x, &w, ConvOptions::default().stride(2).padding((1, 0)))?;
//! assert_eq!(y.shape(), &[1, 4, 3, 4]);
//! # Ok::<(), mlx_rs::Error>(())
//! ```

use mlx_sys as sys;

use crate::{Array, Error, Result};

/// A spatial argument: one value for every spatial axis (Python `int`) or one per axis
/// (Python tuple).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spatial(Vec<i32>);

impl Spatial {
    /// One value for each of `n` spatial axes: a single value repeats, `n` values are used as
    /// given; `None` for any other count.
    pub fn per_axis(&self, n: usize) -> Option<Vec<i32>> {
        match self.0.len() {
            1 => Some(vec![self.0[0]; n]),
            len if len == n => Some(self.0.clone()),
            _ => None,
        }
    }

    /// [`Spatial::per_axis`], or an error naming `op` and the argument.
    fn expand(&self, n: usize, op: &str, what: &str) -> Result<Vec<i32>> {
        self.per_axis(n).ok_or_else(|| {
            Error::invalid(format!(
                "[{op}] {what} has {} values but the input has {n} spatial dimensions",
                self.0.len()
            ))
        })
    }
}

impl From<i32> for Spatial {
    fn from(v: i32) -> Self {
        Spatial(vec![v])
    }
}
impl From<(i32, i32)> for Spatial {
    fn from(v: (i32, i32)) -> Self {
        Spatial(vec![v.0, v.1])
    }
}
impl From<(i32, i32, i32)> for Spatial {
    fn from(v: (i32, i32, i32)) -> Self {
        Spatial(vec![v.0, v.1, v.2])
    }
}
impl<const N: usize> From<[i32; N]> for Spatial {
    fn from(v: [i32; N]) -> Self {
        Spatial(v.to_vec())
    }
}
impl From<&[i32]> for Spatial {
    fn from(v: &[i32]) -> Self {
        Spatial(v.to_vec())
    }
}
impl From<Vec<i32>> for Spatial {
    fn from(v: Vec<i32>) -> Self {
        Spatial(v)
    }
}

crate::options! {
    /// Options of [`conv1d`], [`conv2d`], [`conv3d`] (Python's `stride=1, padding=0,
    /// dilation=1, groups=1`), and of the layers with the same keywords, `mlx_nn::Conv1d` and
    /// `Conv2d`. The spatial ones take one value, or one per spatial axis.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ConvOptions {
        /// The step of the kernel over each spatial axis.
        stride: into Spatial = 1.into(),
        /// Zeros added on both sides of each spatial axis.
        padding: into Spatial = 0.into(),
        /// The spacing of the kernel elements on each spatial axis.
        dilation: into Spatial = 1.into(),
        /// Input channel groups, each convolved with its own slice of the output channels.
        groups: plain i32 = 1,
    }
}

crate::options! {
    /// Options of [`conv_transpose1d`], [`conv_transpose2d`], [`conv_transpose3d`] (Python's
    /// `stride=1, padding=0, dilation=1, output_padding=0, groups=1`).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ConvTransposeOptions {
        /// The step of the kernel over each spatial axis.
        stride: into Spatial = 1.into(),
        /// Zeros added on both sides of each spatial axis.
        padding: into Spatial = 0.into(),
        /// The spacing of the kernel elements on each spatial axis.
        dilation: into Spatial = 1.into(),
        /// Zeros added to one side of each spatial axis of the output.
        output_padding: into Spatial = 0.into(),
        /// Input channel groups.
        groups: plain i32 = 1,
    }
}

crate::options! {
    /// Options of [`conv_general`] (Python's `stride=1, padding=0, kernel_dilation=1,
    /// input_dilation=1, groups=1, flip=False`; `padding` may differ low/high).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ConvGeneralOptions {
        /// The step of the kernel over each spatial axis.
        stride: into Spatial = 1.into(),
        /// Zeros added before each spatial axis.
        padding_lo: into Spatial = 0.into(),
        /// Zeros added after each spatial axis.
        padding_hi: into Spatial = 0.into(),
        /// The spacing of the kernel elements on each spatial axis.
        kernel_dilation: into Spatial = 1.into(),
        /// The spacing of the input elements on each spatial axis.
        input_dilation: into Spatial = 1.into(),
        /// Input channel groups.
        groups: plain i32 = 1,
        /// Whether to flip the kernel (a true convolution rather than a cross-correlation).
        flip: plain bool = false,
    }
}

// Padding is one Python argument over two fields: these set both at once.
impl ConvGeneralOptions {
    /// The same padding before and after (Python `padding=int | Sequence[int]`).
    pub fn padding(mut self, v: impl Into<Spatial>) -> Self {
        let v = v.into();
        self.padding_lo = v.clone();
        self.padding_hi = v;
        self
    }
    /// Different padding before and after (Python `padding=(lo, hi)` of sequences).
    pub fn padding_lo_hi(mut self, lo: impl Into<Spatial>, hi: impl Into<Spatial>) -> Self {
        self.padding_lo = lo.into();
        self.padding_hi = hi.into();
        self
    }
}

/// Checks that `input` is `(N, <dims spatial axes>, C)`, as `op` needs.
fn check_spatial_dims(input: &Array, dims: usize, op: &str) -> Result<()> {
    if input.ndim() != dims + 2 {
        return Err(Error::invalid(format!(
            "[{op}] expected a {}-dimensional input (batch, {dims} spatial, channels), got shape {:?}",
            dims + 2,
            input.shape()
        )));
    }
    Ok(())
}

/// `groups` must be positive: MLX divides the channels by it, and 0 kills the process
/// (SIGFPE) instead of raising.
fn check_groups(groups: i32, op: &str) -> Result<()> {
    if groups < 1 {
        return Err(Error::invalid(format!(
            "[{op}] groups must be positive, got {groups}"
        )));
    }
    Ok(())
}

impl ConvOptions {
    /// Stride, padding and dilation with one value per spatial axis of a checked input.
    fn per_axis(&self, input: &Array, dims: usize, op: &str) -> Result<[Vec<i32>; 3]> {
        check_spatial_dims(input, dims, op)?;
        Ok([
            self.stride.expand(dims, op, "stride")?,
            self.padding.expand(dims, op, "padding")?,
            self.dilation.expand(dims, op, "dilation")?,
        ])
    }
}

impl ConvTransposeOptions {
    /// Stride, padding, dilation and output padding with one value per spatial axis of a
    /// checked input.
    fn per_axis(&self, input: &Array, dims: usize, op: &str) -> Result<[Vec<i32>; 4]> {
        check_spatial_dims(input, dims, op)?;
        Ok([
            self.stride.expand(dims, op, "stride")?,
            self.padding.expand(dims, op, "padding")?,
            self.dilation.expand(dims, op, "dilation")?,
            self.output_padding.expand(dims, op, "output_padding")?,
        ])
    }
}

/// `fn name(input, weight, ConvOptions)` over mlx-c's fixed-rank convolutions, which take
/// each spatial argument as one scalar per axis; `[0, 1]` lists the axes (here 2-D).
macro_rules! conv_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:path, [$($i:literal),+];)*) => {$(
        $(#[$doc])*
        pub fn $name(input: &Array, weight: &Array, options: ConvOptions) -> Result<Array> {
            let dims = [$($i),+].len();
            check_groups(options.groups, stringify!($name))?;
            let [st, pd, dl] = options.per_axis(input, dims, stringify!($name))?;
            // SAFETY: valid handles; plain values.
            Array::try_from_stream_op(|res, s| unsafe {
                $ffi(
                    res,
                    input.as_raw(),
                    weight.as_raw(),
                    $(st[$i],)+
                    $(pd[$i],)+
                    $(dl[$i],)+
                    options.groups,
                    s,
                )
            })
        }
    )*};
}

/// Like `conv_ops!`, for the transposed convolutions (one more spatial argument).
macro_rules! conv_transpose_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:path, [$($i:literal),+];)*) => {$(
        $(#[$doc])*
        pub fn $name(
            input: &Array,
            weight: &Array,
            options: ConvTransposeOptions,
        ) -> Result<Array> {
            let dims = [$($i),+].len();
            check_groups(options.groups, stringify!($name))?;
            let [st, pd, dl, out_pd] = options.per_axis(input, dims, stringify!($name))?;
            // SAFETY: valid handles; plain values.
            Array::try_from_stream_op(|res, s| unsafe {
                $ffi(
                    res,
                    input.as_raw(),
                    weight.as_raw(),
                    $(st[$i],)+
                    $(pd[$i],)+
                    $(dl[$i],)+
                    $(out_pd[$i],)+
                    options.groups,
                    s,
                )
            })
        }
    )*};
}

conv_ops! {
    /// 1-D convolution of `(N, L, C_in)` by `(C_out, K, C_in / groups)`
    /// (Python: `mx.conv1d(input, weight, stride=1, padding=0, dilation=1, groups=1)`).
    conv1d => sys::mlx_conv1d, [0];
    /// 2-D convolution of `(N, H, W, C_in)` by `(C_out, KH, KW, C_in / groups)`
    /// (Python: `mx.conv2d(input, weight, stride=1, padding=0, dilation=1, groups=1)`).
    conv2d => sys::mlx_conv2d, [0, 1];
    /// 3-D convolution of `(N, D, H, W, C_in)` by `(C_out, KD, KH, KW, C_in / groups)`
    /// (Python: `mx.conv3d(input, weight, stride=1, padding=0, dilation=1, groups=1)`).
    conv3d => sys::mlx_conv3d, [0, 1, 2];
}

conv_transpose_ops! {
    /// 1-D transposed convolution (Python: `mx.conv_transpose1d(input, weight, stride=1,
    /// padding=0, dilation=1, output_padding=0, groups=1)`).
    conv_transpose1d => sys::mlx_conv_transpose1d, [0];
    /// 2-D transposed convolution (Python: `mx.conv_transpose2d(...)`, same options as 1-D).
    conv_transpose2d => sys::mlx_conv_transpose2d, [0, 1];
    /// 3-D transposed convolution (Python: `mx.conv_transpose3d(...)`, same options as 1-D).
    conv_transpose3d => sys::mlx_conv_transpose3d, [0, 1, 2];
}

/// N-D convolution with input dilation and optional kernel flip (Python:
/// `mx.conv_general(input, weight, stride=1, padding=0, kernel_dilation=1, input_dilation=1,
/// groups=1, flip=False)`).
pub fn conv_general(input: &Array, weight: &Array, options: ConvGeneralOptions) -> Result<Array> {
    let op = "conv_general";
    let n = input
        .ndim()
        .checked_sub(2)
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            Error::invalid(format!(
                "[conv_general] the input needs batch, spatial and channel axes, got shape {:?}",
                input.shape()
            ))
        })?;
    check_groups(options.groups, op)?;
    let st = options.stride.expand(n, op, "stride")?;
    let lo = options.padding_lo.expand(n, op, "padding")?;
    let hi = options.padding_hi.expand(n, op, "padding")?;
    let kd = options.kernel_dilation.expand(n, op, "kernel_dilation")?;
    let id = options.input_dilation.expand(n, op, "input_dilation")?;
    // SAFETY: valid handles; the vectors outlive the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_conv_general(
            res,
            input.as_raw(),
            weight.as_raw(),
            st.as_ptr(),
            st.len(),
            lo.as_ptr(),
            lo.len(),
            hi.as_ptr(),
            hi.len(),
            kd.as_ptr(),
            kd.len(),
            id.as_ptr(),
            id.len(),
            options.groups,
            options.flip,
            s,
        )
    })
}
