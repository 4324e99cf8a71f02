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
    /// Exactly `n` values: a single value repeats, `n` values are used as given.
    fn expand(&self, n: usize, op: &str, what: &str) -> Result<Vec<i32>> {
        match self.0.len() {
            1 => Ok(vec![self.0[0]; n]),
            len if len == n => Ok(self.0.clone()),
            len => Err(Error::invalid(format!(
                "[{op}] {what} has {len} values but the input has {n} spatial dimensions"
            ))),
        }
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

/// Options of [`conv1d`], [`conv2d`], [`conv3d`] (Python's `stride=1, padding=0,
/// dilation=1, groups=1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvOptions {
    pub stride: Spatial,
    pub padding: Spatial,
    pub dilation: Spatial,
    pub groups: i32,
}

impl Default for ConvOptions {
    fn default() -> Self {
        ConvOptions {
            stride: 1.into(),
            padding: 0.into(),
            dilation: 1.into(),
            groups: 1,
        }
    }
}

impl ConvOptions {
    pub fn stride(mut self, v: impl Into<Spatial>) -> Self {
        self.stride = v.into();
        self
    }
    pub fn padding(mut self, v: impl Into<Spatial>) -> Self {
        self.padding = v.into();
        self
    }
    pub fn dilation(mut self, v: impl Into<Spatial>) -> Self {
        self.dilation = v.into();
        self
    }
    pub fn groups(mut self, groups: i32) -> Self {
        self.groups = groups;
        self
    }
}

/// Options of [`conv_transpose1d`], [`conv_transpose2d`], [`conv_transpose3d`] (Python's
/// `stride=1, padding=0, dilation=1, output_padding=0, groups=1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvTransposeOptions {
    pub stride: Spatial,
    pub padding: Spatial,
    pub dilation: Spatial,
    pub output_padding: Spatial,
    pub groups: i32,
}

impl Default for ConvTransposeOptions {
    fn default() -> Self {
        ConvTransposeOptions {
            stride: 1.into(),
            padding: 0.into(),
            dilation: 1.into(),
            output_padding: 0.into(),
            groups: 1,
        }
    }
}

impl ConvTransposeOptions {
    pub fn stride(mut self, v: impl Into<Spatial>) -> Self {
        self.stride = v.into();
        self
    }
    pub fn padding(mut self, v: impl Into<Spatial>) -> Self {
        self.padding = v.into();
        self
    }
    pub fn dilation(mut self, v: impl Into<Spatial>) -> Self {
        self.dilation = v.into();
        self
    }
    pub fn output_padding(mut self, v: impl Into<Spatial>) -> Self {
        self.output_padding = v.into();
        self
    }
    pub fn groups(mut self, groups: i32) -> Self {
        self.groups = groups;
        self
    }
}

/// Options of [`conv_general`] (Python's `stride=1, padding=0, kernel_dilation=1,
/// input_dilation=1, groups=1, flip=False`; `padding` may differ low/high).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvGeneralOptions {
    pub stride: Spatial,
    pub padding_lo: Spatial,
    pub padding_hi: Spatial,
    pub kernel_dilation: Spatial,
    pub input_dilation: Spatial,
    pub groups: i32,
    pub flip: bool,
}

impl Default for ConvGeneralOptions {
    fn default() -> Self {
        ConvGeneralOptions {
            stride: 1.into(),
            padding_lo: 0.into(),
            padding_hi: 0.into(),
            kernel_dilation: 1.into(),
            input_dilation: 1.into(),
            groups: 1,
            flip: false,
        }
    }
}

impl ConvGeneralOptions {
    pub fn stride(mut self, v: impl Into<Spatial>) -> Self {
        self.stride = v.into();
        self
    }
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
    pub fn kernel_dilation(mut self, v: impl Into<Spatial>) -> Self {
        self.kernel_dilation = v.into();
        self
    }
    pub fn input_dilation(mut self, v: impl Into<Spatial>) -> Self {
        self.input_dilation = v.into();
        self
    }
    pub fn groups(mut self, groups: i32) -> Self {
        self.groups = groups;
        self
    }
    pub fn flip(mut self, flip: bool) -> Self {
        self.flip = flip;
        self
    }
}

/// The number of spatial axes of an `(N, ..., C)` input, checked against what the op needs.
fn spatial_dims(input: &Array, want: usize, op: &str) -> Result<usize> {
    let n = input.ndim();
    if n != want + 2 {
        return Err(Error::invalid(format!(
            "[{op}] expected a {}-dimensional input (batch, {want} spatial, channels), got shape {:?}",
            want + 2,
            input.shape()
        )));
    }
    Ok(want)
}

/// 1-D convolution of `(N, L, C_in)` by `(C_out, K, C_in / groups)`
/// (Python: `mx.conv1d(input, weight, stride=1, padding=0, dilation=1, groups=1)`).
pub fn conv1d(input: &Array, weight: &Array, options: ConvOptions) -> Result<Array> {
    let n = spatial_dims(input, 1, "conv1d")?;
    let st = options.stride.expand(n, "conv1d", "stride")?;
    let pd = options.padding.expand(n, "conv1d", "padding")?;
    let dl = options.dilation.expand(n, "conv1d", "dilation")?;
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_conv1d(
            res,
            input.as_raw(),
            weight.as_raw(),
            st[0],
            pd[0],
            dl[0],
            options.groups,
            s,
        )
    })
}

/// 2-D convolution of `(N, H, W, C_in)` by `(C_out, KH, KW, C_in / groups)`
/// (Python: `mx.conv2d(input, weight, stride=1, padding=0, dilation=1, groups=1)`).
pub fn conv2d(input: &Array, weight: &Array, options: ConvOptions) -> Result<Array> {
    let n = spatial_dims(input, 2, "conv2d")?;
    let st = options.stride.expand(n, "conv2d", "stride")?;
    let pd = options.padding.expand(n, "conv2d", "padding")?;
    let dl = options.dilation.expand(n, "conv2d", "dilation")?;
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_conv2d(
            res,
            input.as_raw(),
            weight.as_raw(),
            st[0],
            st[1],
            pd[0],
            pd[1],
            dl[0],
            dl[1],
            options.groups,
            s,
        )
    })
}

/// 3-D convolution of `(N, D, H, W, C_in)` by `(C_out, KD, KH, KW, C_in / groups)`
/// (Python: `mx.conv3d(input, weight, stride=1, padding=0, dilation=1, groups=1)`).
pub fn conv3d(input: &Array, weight: &Array, options: ConvOptions) -> Result<Array> {
    let n = spatial_dims(input, 3, "conv3d")?;
    let st = options.stride.expand(n, "conv3d", "stride")?;
    let pd = options.padding.expand(n, "conv3d", "padding")?;
    let dl = options.dilation.expand(n, "conv3d", "dilation")?;
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_conv3d(
            res,
            input.as_raw(),
            weight.as_raw(),
            st[0],
            st[1],
            st[2],
            pd[0],
            pd[1],
            pd[2],
            dl[0],
            dl[1],
            dl[2],
            options.groups,
            s,
        )
    })
}

/// 1-D transposed convolution (Python: `mx.conv_transpose1d(input, weight, stride=1,
/// padding=0, dilation=1, output_padding=0, groups=1)`).
pub fn conv_transpose1d(
    input: &Array,
    weight: &Array,
    options: ConvTransposeOptions,
) -> Result<Array> {
    let op = "conv_transpose1d";
    let n = spatial_dims(input, 1, op)?;
    let st = options.stride.expand(n, op, "stride")?;
    let pd = options.padding.expand(n, op, "padding")?;
    let dl = options.dilation.expand(n, op, "dilation")?;
    let op_ = options.output_padding.expand(n, op, "output_padding")?;
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_conv_transpose1d(
            res,
            input.as_raw(),
            weight.as_raw(),
            st[0],
            pd[0],
            dl[0],
            op_[0],
            options.groups,
            s,
        )
    })
}

/// 2-D transposed convolution (Python: `mx.conv_transpose2d(...)`, same options as 1-D).
pub fn conv_transpose2d(
    input: &Array,
    weight: &Array,
    options: ConvTransposeOptions,
) -> Result<Array> {
    let op = "conv_transpose2d";
    let n = spatial_dims(input, 2, op)?;
    let st = options.stride.expand(n, op, "stride")?;
    let pd = options.padding.expand(n, op, "padding")?;
    let dl = options.dilation.expand(n, op, "dilation")?;
    let op_ = options.output_padding.expand(n, op, "output_padding")?;
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_conv_transpose2d(
            res,
            input.as_raw(),
            weight.as_raw(),
            st[0],
            st[1],
            pd[0],
            pd[1],
            dl[0],
            dl[1],
            op_[0],
            op_[1],
            options.groups,
            s,
        )
    })
}

/// 3-D transposed convolution (Python: `mx.conv_transpose3d(...)`, same options as 1-D).
pub fn conv_transpose3d(
    input: &Array,
    weight: &Array,
    options: ConvTransposeOptions,
) -> Result<Array> {
    let op = "conv_transpose3d";
    let n = spatial_dims(input, 3, op)?;
    let st = options.stride.expand(n, op, "stride")?;
    let pd = options.padding.expand(n, op, "padding")?;
    let dl = options.dilation.expand(n, op, "dilation")?;
    let op_ = options.output_padding.expand(n, op, "output_padding")?;
    // SAFETY: valid handles; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_conv_transpose3d(
            res,
            input.as_raw(),
            weight.as_raw(),
            st[0],
            st[1],
            st[2],
            pd[0],
            pd[1],
            pd[2],
            dl[0],
            dl[1],
            dl[2],
            op_[0],
            op_[1],
            op_[2],
            options.groups,
            s,
        )
    })
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
