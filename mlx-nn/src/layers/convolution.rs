//! Python's `mlx.nn.layers.convolution`: [`Conv1d`], [`Conv2d`] and [`Conv3d`], with Python's
//! constructor arguments, weight layouts, parameter names (`weight`, `bias`) and
//! initialization.
//!
//! The three differ only in their number of spatial axes, the op they call and whether Python
//! gives them a `groups` argument (`Conv3d` has none), so one macro writes them from a row
//! each; the checks and the initialization are the functions here, which
//! [`convolution_transpose`](super::convolution_transpose) shares.

use mlx_rs::ops::{self, ConvOptions, Spatial};
use mlx_rs::{Array, Error, Result};
use mlx_tree::TreeNode;

use super::base::Frozen;
use super::{inv_sqrt, uniform_init, with_bias, zero_bias, PerAxis};
use crate::Forward;

/// One value per spatial axis (a single value repeats, as a Python `int` does), or an error
/// naming the layer and the argument.
pub(super) fn per_axis<const N: usize>(
    value: &Spatial,
    layer: &str,
    what: &str,
) -> Result<[i32; N]> {
    value
        .per_axis(N)
        .and_then(|v| <[i32; N]>::try_from(v).ok())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "[{layer}] '{what}' takes one value or {N} (one per spatial axis), got {value:?}"
            ))
        })
}

/// Rejects values MLX would reject later (or, for shapes, abort on): caught at construction
/// so a bad layer is never built.
pub(super) fn check_positive(layer: &str, what: &str, values: &[i32]) -> Result<()> {
    if values.iter().any(|&v| v <= 0) {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] '{what}' must be positive but got {values:?}"
        )));
    }
    Ok(())
}

/// For a layer Python gives no `groups` argument: a value other than 1 from the shared
/// options struct is an error instead of silently ignored.
pub(super) fn check_no_groups(layer: &str, groups: i32) -> Result<()> {
    if groups != 1 {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] Python's nn.{layer} has no 'groups' argument (got groups={groups}); \
             call the op (mlx_rs::ops) for grouped convolutions"
        )));
    }
    Ok(())
}

/// Python's check of `groups` (the output channels too, which the op needs divisible).
fn check_groups(in_channels: i32, out_channels: i32, groups: i32) -> Result<()> {
    if groups <= 0 || in_channels % groups != 0 || out_channels % groups != 0 {
        return Err(Error::InvalidArgument(format!(
            "The number of input channels ({in_channels}) and output channels ({out_channels}) must be divisible by the number of groups ({groups})"
        )));
    }
    Ok(())
}

/// Checks `x` is `(N, <spatial axes>, C_in)` with the layer's `C_in` (the weight's last axis
/// times `groups`), so a wrong input is a layer-named error before MLX sees it.
pub(super) fn check_input(
    layer: &str,
    x: &Array,
    spatial: usize,
    weight: &Array,
    groups: i32,
) -> Result<()> {
    let in_channels = weight.shape().last().map(|c| c * groups);
    if x.ndim() != spatial + 2 || x.shape().last().copied() != in_channels {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] expected an input of {} dimensions (batch, {spatial} spatial, {} channels), \
             got shape {:?}",
            spatial + 2,
            in_channels.unwrap_or(0),
            x.shape()
        )));
    }
    Ok(())
}

/// Python's initial parameters of every convolution layer: `weight` uniform in
/// `±sqrt(1 / (in_channels * prod(kernel_size)))` of shape `(out_channels, *kernel_size,
/// in_channels / groups)`, and `bias` zeros when asked for.
pub(super) fn init_params(
    layer: &str,
    in_channels: i32,
    out_channels: i32,
    kernel_size: &[i32],
    groups: i32,
    bias: bool,
) -> Result<(Array, Option<Array>)> {
    check_positive(layer, "in_channels", &[in_channels])?;
    check_positive(layer, "out_channels", &[out_channels])?;
    check_positive(layer, "kernel_size", kernel_size)?;
    let fan_in = kernel_size
        .iter()
        .fold(f64::from(in_channels), |n, &k| n * f64::from(k));
    let mut shape = vec![out_channels];
    shape.extend_from_slice(kernel_size);
    shape.push(in_channels / groups);
    let weight = uniform_init(inv_sqrt(fan_in), &shape)?;
    Ok((weight, zero_bias(bias, out_channels)?))
}

/// Everything a convolution layer's constructor computes, for `N` spatial axes: the checked
/// `[stride, padding, dilation]` and the initial `weight` and `bias`. `grouped` says whether
/// Python's layer has a `groups` argument.
fn conv_args<const N: usize>(
    layer: &str,
    (in_channels, out_channels): (i32, i32),
    kernel_size: Spatial,
    options: &ConvOptions,
    grouped: bool,
    bias: bool,
) -> Result<([[i32; N]; 3], Array, Option<Array>)> {
    let groups = options.groups;
    match grouped {
        true => check_groups(in_channels, out_channels, groups)?,
        false => check_no_groups(layer, groups)?,
    }
    let kernel_size: [i32; N] = per_axis(&kernel_size, layer, "kernel_size")?;
    let stride = per_axis(&options.stride, layer, "stride")?;
    let padding = per_axis(&options.padding, layer, "padding")?;
    let dilation = per_axis(&options.dilation, layer, "dilation")?;
    check_positive(layer, "stride", &stride)?;
    check_positive(layer, "dilation", &dilation)?;
    let (weight, bias) = init_params(layer, in_channels, out_channels, &kernel_size, groups, bias)?;
    Ok(([stride, padding, dilation], weight, bias))
}

/// One layer per row: `Name(spatial axes, op) => per-axis field type, kernel: argument type`,
/// and `, groups` where Python's layer has that argument.
macro_rules! conv_layers {
    (@grouped) => { false };
    (@grouped $groups:ident) => { true };
    ($(
        $(#[$doc:meta])*
        $name:ident($n:literal, $op:path) => $axes:ty, kernel: $kernel:ty $(, $groups:ident)?;
    )+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, TreeNode)]
        pub struct $name {
            pub weight: Array,
            pub bias: Option<Array>,
            #[tree(static)]
            pub stride: $axes,
            #[tree(static)]
            pub padding: $axes,
            #[tree(static)]
            pub dilation: $axes,
            $(
                #[tree(static)]
                pub $groups: i32,
            )?
            #[tree(static)]
            pub frozen: Frozen,
        }

        impl $name {
            /// A new layer with Python's initialization (uniform in `±sqrt(1 / (C_in *
            /// prod(kernel_size)))`); `kernel_size` and the `options` `stride`, `padding`,
            /// `dilation` take one value or one per spatial axis, `bias` `None` is `true`.
            /// Errors for sizes, strides or dilations that are not positive, and for `groups`
            /// that do not divide the channels (or other than 1 where Python's layer has no
            /// `groups`).
            pub fn new(
                in_channels: i32,
                out_channels: i32,
                kernel_size: $kernel,
                options: ConvOptions,
                bias: impl Into<Option<bool>>,
            ) -> Result<$name> {
                let ([stride, padding, dilation], weight, bias) = conv_args::<$n>(
                    stringify!($name),
                    (in_channels, out_channels),
                    kernel_size.into(),
                    &options,
                    conv_layers!(@grouped $($groups)?),
                    bias.into().unwrap_or(true),
                )?;
                Ok($name {
                    weight,
                    bias,
                    stride: PerAxis::from_array(stride),
                    padding: PerAxis::from_array(padding),
                    dilation: PerAxis::from_array(dilation),
                    $($groups: options.$groups,)?
                    frozen: Frozen::default(),
                })
            }
        }

        impl Forward for $name {
            /// Applies the layer (Python: `conv(x)`); errors unless `x` is `(N, <spatial
            /// axes>, C_in)`.
            fn forward(&self, x: &Array) -> Result<Array> {
                let options = ConvOptions::default()
                    .stride(self.stride)
                    .padding(self.padding)
                    .dilation(self.dilation);
                $(let options = options.groups(self.$groups);)?
                check_input(stringify!($name), x, $n, &self.weight, options.groups)?;
                with_bias($op(x, &self.weight, options)?, self.bias.as_ref())
            }
        }
    )+};
}

conv_layers! {
    /// 1-D convolution over `(N, L, C_in)` (Python: `nn.Conv1d(in_channels, out_channels,
    /// kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True)`). Weights are
    /// `(C_out, K, C_in / groups)`.
    ///
    /// ```
    /// use mlx_nn::{Conv1d, ConvOptions};
    /// // nn.Conv1d(4, 8, 3, stride=2, bias=False)
    /// let conv = Conv1d::new(4, 8, 3, ConvOptions::default().stride(2), false)?;
    /// assert_eq!((conv.weight.shape(), conv.stride, conv.bias.is_none()), (&[8, 3, 4][..], 2, true));
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    Conv1d(1, ops::conv1d) => i32, kernel: i32, groups;
    /// 2-D convolution over `(N, H, W, C_in)` (Python: `nn.Conv2d(in_channels, out_channels,
    /// kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True)`). Weights are
    /// `(C_out, KH, KW, C_in / groups)`.
    ///
    /// ```
    /// use mlx_nn::{Conv2d, ConvOptions};
    /// // nn.Conv2d(3, 8, (3, 3), stride=(2, 1), padding=1)
    /// let conv = Conv2d::new(3, 8, (3, 3), ConvOptions::default().stride((2, 1)).padding(1), None)?;
    /// assert_eq!((conv.stride, conv.padding), ((2, 1), (1, 1)));
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    Conv2d(2, ops::conv2d) => (i32, i32), kernel: impl Into<Spatial>, groups;
    /// 3-D convolution over `(N, D, H, W, C_in)` (Python: `nn.Conv3d(in_channels, out_channels,
    /// kernel_size, stride=1, padding=0, dilation=1, bias=True)`; no `groups`). Weights are
    /// `(C_out, KD, KH, KW, C_in)`.
    ///
    /// ```
    /// use mlx_nn::{Conv3d, ConvOptions, Forward};
    /// use mlx_rs::ops;
    /// // nn.Conv3d(3, 8, 3, stride=(1, 2, 2), padding=1)
    /// let conv = Conv3d::new(3, 8, 3, ConvOptions::default().stride((1, 2, 2)).padding(1), None)?;
    /// assert_eq!(conv.weight.shape(), &[8, 3, 3, 3, 3]);
    /// let y = conv.forward(&ops::zeros(&[1, 4, 8, 8, 3], None)?)?;
    /// assert_eq!(y.shape(), &[1, 4, 4, 4, 8]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    Conv3d(3, ops::conv3d) => (i32, i32, i32), kernel: impl Into<Spatial>;
}
