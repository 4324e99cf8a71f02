//! Python's `mlx.nn.layers.convolution_transpose`: [`ConvTranspose1d`], [`ConvTranspose2d`] and
//! [`ConvTranspose3d`], with Python's constructor arguments, weight layouts, parameter names
//! (`weight`, `bias`) and initialization.
//!
//! As with the convolutions, one macro writes the three from a row each (spatial axes, op,
//! field type). Python's layers have no `groups` argument (the ops do): the options struct
//! carries one, and these layers reject any value but 1 rather than build a layer Python
//! cannot.

use mlx_rs::ops::{self, Spatial};
use mlx_rs::{Array, Result};
use mlx_tree::TreeNode;

use super::base::Frozen;
use super::convolution::{check_input, check_no_groups, check_positive, init_params, per_axis};
use super::{with_bias, PerAxis};
use crate::Forward;

pub use mlx_rs::ops::ConvTransposeOptions;

/// Everything a transposed convolution layer's constructor computes, for `N` spatial axes: the
/// checked `[stride, padding, dilation, output_padding]` and the initial `weight` and `bias`.
fn transpose_args<const N: usize>(
    layer: &str,
    (in_channels, out_channels): (i32, i32),
    kernel_size: Spatial,
    options: &ConvTransposeOptions,
    bias: bool,
) -> Result<([[i32; N]; 4], Array, Option<Array>)> {
    check_no_groups(layer, options.groups)?;
    let kernel_size: [i32; N] = per_axis(&kernel_size, layer, "kernel_size")?;
    let stride = per_axis(&options.stride, layer, "stride")?;
    let padding = per_axis(&options.padding, layer, "padding")?;
    let dilation = per_axis(&options.dilation, layer, "dilation")?;
    let output_padding = per_axis(&options.output_padding, layer, "output_padding")?;
    check_positive(layer, "stride", &stride)?;
    check_positive(layer, "dilation", &dilation)?;
    let (weight, bias) = init_params(layer, in_channels, out_channels, &kernel_size, 1, bias)?;
    Ok(([stride, padding, dilation, output_padding], weight, bias))
}

/// One layer per row: `Name(spatial axes, op) => per-axis field type, kernel: argument type`.
macro_rules! conv_transpose_layers {
    ($(
        $(#[$doc:meta])*
        $name:ident($n:literal, $op:path) => $axes:ty, kernel: $kernel:ty;
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
            #[tree(static)]
            pub output_padding: $axes,
            #[tree(static)]
            pub frozen: Frozen,
        }

        impl $name {
            /// A new layer with Python's initialization (uniform in `±sqrt(1 / (C_in *
            /// prod(kernel_size)))`); `kernel_size` and the `options` `stride`, `padding`,
            /// `dilation`, `output_padding` take one value or one per spatial axis, `bias`
            /// `None` is `true`. Errors for a size, stride or dilation that is not positive,
            /// and for `groups` other than 1 (Python's layer has none).
            pub fn new(
                in_channels: i32,
                out_channels: i32,
                kernel_size: $kernel,
                options: ConvTransposeOptions,
                bias: impl Into<Option<bool>>,
            ) -> Result<$name> {
                let ([stride, padding, dilation, output_padding], weight, bias) =
                    transpose_args::<$n>(
                        stringify!($name),
                        (in_channels, out_channels),
                        kernel_size.into(),
                        &options,
                        bias.into().unwrap_or(true),
                    )?;
                Ok($name {
                    weight,
                    bias,
                    stride: PerAxis::from_array(stride),
                    padding: PerAxis::from_array(padding),
                    dilation: PerAxis::from_array(dilation),
                    output_padding: PerAxis::from_array(output_padding),
                    frozen: Frozen::default(),
                })
            }
        }

        impl Forward for $name {
            /// Applies the layer (Python: `conv(x)`); errors unless `x` is `(N, <spatial
            /// axes>, C_in)`.
            fn forward(&self, x: &Array) -> Result<Array> {
                check_input(stringify!($name), x, $n, &self.weight, 1)?;
                let options = ConvTransposeOptions::default()
                    .stride(self.stride)
                    .padding(self.padding)
                    .dilation(self.dilation)
                    .output_padding(self.output_padding);
                with_bias($op(x, &self.weight, options)?, self.bias.as_ref())
            }
        }
    )+};
}

conv_transpose_layers! {
    /// 1-D transposed convolution over `(N, L, C_in)` (Python: `nn.ConvTranspose1d(in_channels,
    /// out_channels, kernel_size, stride=1, padding=0, dilation=1, output_padding=0,
    /// bias=True)`). Weights are `(C_out, K, C_in)`.
    ///
    /// ```
    /// use mlx_nn::{ConvTranspose1d, ConvTransposeOptions, Forward};
    /// use mlx_rs::ops;
    /// // nn.ConvTranspose1d(4, 2, 3, stride=2, output_padding=1)
    /// let opts = ConvTransposeOptions::default().stride(2).output_padding(1);
    /// let conv = ConvTranspose1d::new(4, 2, 3, opts, None)?;
    /// assert_eq!(conv.weight.shape(), &[2, 3, 4]);
    /// let y = conv.forward(&ops::zeros(&[1, 5, 4], None)?)?;
    /// assert_eq!(y.shape(), &[1, 12, 2]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    ConvTranspose1d(1, ops::conv_transpose1d) => i32, kernel: i32;
    /// 2-D transposed convolution over `(N, H, W, C_in)` (Python:
    /// `nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=1, padding=0,
    /// dilation=1, output_padding=0, bias=True)`). Weights are `(C_out, KH, KW, C_in)`.
    ///
    /// ```
    /// use mlx_nn::{ConvTranspose2d, ConvTransposeOptions, Forward};
    /// use mlx_rs::ops;
    /// // nn.ConvTranspose2d(3, 6, (3, 2), stride=2, padding=(1, 0))
    /// let opts = ConvTransposeOptions::default().stride(2).padding((1, 0));
    /// let conv = ConvTranspose2d::new(3, 6, (3, 2), opts, None)?;
    /// assert_eq!(conv.weight.shape(), &[6, 3, 2, 3]);
    /// let y = conv.forward(&ops::zeros(&[1, 4, 4, 3], None)?)?;
    /// assert_eq!(y.shape(), &[1, 7, 8, 6]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    ConvTranspose2d(2, ops::conv_transpose2d) => (i32, i32), kernel: impl Into<Spatial>;
    /// 3-D transposed convolution over `(N, D, H, W, C_in)` (Python:
    /// `nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=1, padding=0,
    /// dilation=1, output_padding=0, bias=True)`). Weights are `(C_out, KD, KH, KW, C_in)`.
    ///
    /// ```
    /// use mlx_nn::{ConvTranspose3d, ConvTransposeOptions, Forward};
    /// use mlx_rs::ops;
    /// // nn.ConvTranspose3d(2, 4, 2, stride=2, bias=False)
    /// let conv = ConvTranspose3d::new(2, 4, 2, ConvTransposeOptions::default().stride(2), false)?;
    /// assert!(conv.bias.is_none());
    /// let y = conv.forward(&ops::zeros(&[1, 3, 3, 3, 2], None)?)?;
    /// assert_eq!(y.shape(), &[1, 6, 6, 6, 4]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    ConvTranspose3d(3, ops::conv_transpose3d) => (i32, i32, i32), kernel: impl Into<Spatial>;
}
