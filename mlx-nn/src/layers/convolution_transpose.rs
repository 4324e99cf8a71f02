//! The 3-D and transposed convolution layers (Python: `mlx.nn.layers.convolution.Conv3d` and
//! `mlx.nn.layers.convolution_transpose`): Python's constructor arguments, weight layouts,
//! parameter names (`weight`, `bias`) and initialization.
//!
//! Python's `Conv3d` and `ConvTranspose*d` layers have no `groups` argument (the ops do): the
//! options structs carry one, and these layers reject any value but 1 rather than build a layer
//! Python cannot.

use mlx_rs::ops::{self, ConvOptions, Spatial};
use mlx_rs::{Array, Error, Result};
use mlx_tree::TreeNode;

use crate::layers::{inv_sqrt, uniform_init, with_bias};
use crate::module::Frozen;
use crate::Forward;

pub use mlx_rs::ops::ConvTransposeOptions;

/// One value per spatial axis (a single value repeats, as a Python `int` does), or an error
/// naming the layer and the argument.
fn per_axis<const N: usize>(value: &Spatial, layer: &str, what: &str) -> Result<[i32; N]> {
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
fn check_positive(layer: &str, what: &str, values: &[i32]) -> Result<()> {
    if values.iter().any(|&v| v <= 0) {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] '{what}' must be positive but got {values:?}"
        )));
    }
    Ok(())
}

/// The layer has no `groups` in Python; a value other than 1 from the shared options is an
/// error instead of silently ignored.
fn check_no_groups(layer: &str, groups: i32) -> Result<()> {
    if groups != 1 {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] Python's nn.{layer} has no 'groups' argument (got groups={groups}); \
             call the op (mlx_rs::ops) for grouped convolutions"
        )));
    }
    Ok(())
}

/// Checks `x` is `(N, <N spatial axes>, C_in)` with the weight's `C_in`, so a wrong input is a
/// layer-named error before MLX sees it.
fn check_input(layer: &str, x: &Array, spatial: usize, weight: &Array) -> Result<()> {
    let in_channels = weight.shape().last().copied();
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

/// The parameters every layer here has, from Python's initialization: `weight` uniform in
/// `±sqrt(1 / (in_channels * prod(kernel_size)))` of shape `(out_channels, *kernel_size,
/// in_channels)`, and `bias` zeros when asked for.
fn init_params(
    layer: &str,
    in_channels: i32,
    out_channels: i32,
    kernel_size: &[i32],
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
    shape.push(in_channels);
    let weight = uniform_init(inv_sqrt(fan_in), &shape)?;
    let bias = bias
        .then(|| ops::zeros(&[out_channels], None))
        .transpose()?;
    Ok((weight, bias))
}

// ---------------------------------------------------------------------------------------------
// Conv3d

/// 3-D convolution over `(N, D, H, W, C_in)` (Python: `nn.Conv3d(in_channels, out_channels,
/// kernel_size, stride=1, padding=0, dilation=1, bias=True)`). Weights are
/// `(C_out, KD, KH, KW, C_in)`.
#[derive(Debug, Clone, TreeNode)]
pub struct Conv3d {
    pub weight: Array,
    pub bias: Option<Array>,
    #[tree(static)]
    pub stride: (i32, i32, i32),
    #[tree(static)]
    pub padding: (i32, i32, i32),
    #[tree(static)]
    pub dilation: (i32, i32, i32),
    #[tree(static)]
    pub frozen: Frozen,
}

impl Conv3d {
    /// A new layer with Python's initialization (uniform in `±sqrt(1 / (C_in * KD * KH *
    /// KW))`); `kernel_size` and the `options` `stride`, `padding`, `dilation` take one value
    /// or one per spatial axis, `bias` `None` is `true`. Errors for sizes, strides or
    /// dilations that are not positive, and for `groups` other than 1 (Python's layer has
    /// none).
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
    pub fn new(
        in_channels: i32,
        out_channels: i32,
        kernel_size: impl Into<Spatial>,
        options: ConvOptions,
        bias: impl Into<Option<bool>>,
    ) -> Result<Conv3d> {
        const LAYER: &str = "Conv3d";
        check_no_groups(LAYER, options.groups)?;
        let kernel_size: [i32; 3] = per_axis(&kernel_size.into(), LAYER, "kernel_size")?;
        let stride: [i32; 3] = per_axis(&options.stride, LAYER, "stride")?;
        let padding: [i32; 3] = per_axis(&options.padding, LAYER, "padding")?;
        let dilation: [i32; 3] = per_axis(&options.dilation, LAYER, "dilation")?;
        check_positive(LAYER, "stride", &stride)?;
        check_positive(LAYER, "dilation", &dilation)?;
        let bias = bias.into().unwrap_or(true);
        let (weight, bias) = init_params(LAYER, in_channels, out_channels, &kernel_size, bias)?;
        Ok(Conv3d {
            weight,
            bias,
            stride: stride.into(),
            padding: padding.into(),
            dilation: dilation.into(),
            frozen: Frozen::default(),
        })
    }
}

impl Forward for Conv3d {
    /// Applies the layer (Python: `conv(x)`); errors unless `x` is `(N, D, H, W, C_in)`.
    fn forward(&self, x: &Array) -> Result<Array> {
        check_input("Conv3d", x, 3, &self.weight)?;
        let opts = ConvOptions::default()
            .stride(self.stride)
            .padding(self.padding)
            .dilation(self.dilation);
        let y = ops::conv3d(x, &self.weight, opts)?;
        with_bias(y, self.bias.as_ref())
    }
}

// ---------------------------------------------------------------------------------------------
// Transposed convolutions

/// `kernel_size` and the options of a transposed convolution with `N` spatial axes, checked:
/// `[kernel_size, stride, padding, dilation, output_padding]`.
fn transpose_args<const N: usize>(
    layer: &str,
    kernel_size: Spatial,
    options: &ConvTransposeOptions,
) -> Result<[[i32; N]; 5]> {
    check_no_groups(layer, options.groups)?;
    let kernel_size = per_axis(&kernel_size, layer, "kernel_size")?;
    let stride = per_axis(&options.stride, layer, "stride")?;
    let padding = per_axis(&options.padding, layer, "padding")?;
    let dilation = per_axis(&options.dilation, layer, "dilation")?;
    let output_padding = per_axis(&options.output_padding, layer, "output_padding")?;
    check_positive(layer, "stride", &stride)?;
    check_positive(layer, "dilation", &dilation)?;
    Ok([kernel_size, stride, padding, dilation, output_padding])
}

/// 1-D transposed convolution over `(N, L, C_in)` (Python: `nn.ConvTranspose1d(in_channels,
/// out_channels, kernel_size, stride=1, padding=0, dilation=1, output_padding=0, bias=True)`).
/// Weights are `(C_out, K, C_in)`.
#[derive(Debug, Clone, TreeNode)]
pub struct ConvTranspose1d {
    pub weight: Array,
    pub bias: Option<Array>,
    #[tree(static)]
    pub stride: i32,
    #[tree(static)]
    pub padding: i32,
    #[tree(static)]
    pub dilation: i32,
    #[tree(static)]
    pub output_padding: i32,
    #[tree(static)]
    pub frozen: Frozen,
}

impl ConvTranspose1d {
    /// A new layer with Python's initialization (uniform in `±sqrt(1 / (C_in * K))`);
    /// `options` holds `stride`, `padding`, `dilation` and `output_padding` (one value each),
    /// `bias` `None` is `true`. Errors for a size, stride or dilation that is not positive, and
    /// for `groups` other than 1 (Python's layer has none).
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
    pub fn new(
        in_channels: i32,
        out_channels: i32,
        kernel_size: i32,
        options: ConvTransposeOptions,
        bias: impl Into<Option<bool>>,
    ) -> Result<ConvTranspose1d> {
        const LAYER: &str = "ConvTranspose1d";
        let [k, [stride], [padding], [dilation], [output_padding]] =
            transpose_args::<1>(LAYER, kernel_size.into(), &options)?;
        let bias = bias.into().unwrap_or(true);
        let (weight, bias) = init_params(LAYER, in_channels, out_channels, &k, bias)?;
        Ok(ConvTranspose1d {
            weight,
            bias,
            stride,
            padding,
            dilation,
            output_padding,
            frozen: Frozen::default(),
        })
    }
}

impl Forward for ConvTranspose1d {
    /// Applies the layer (Python: `conv(x)`); errors unless `x` is `(N, L, C_in)`.
    fn forward(&self, x: &Array) -> Result<Array> {
        check_input("ConvTranspose1d", x, 1, &self.weight)?;
        let opts = ConvTransposeOptions::default()
            .stride(self.stride)
            .padding(self.padding)
            .dilation(self.dilation)
            .output_padding(self.output_padding);
        let y = ops::conv_transpose1d(x, &self.weight, opts)?;
        with_bias(y, self.bias.as_ref())
    }
}

/// 2-D transposed convolution over `(N, H, W, C_in)` (Python: `nn.ConvTranspose2d(in_channels,
/// out_channels, kernel_size, stride=1, padding=0, dilation=1, output_padding=0, bias=True)`).
/// Weights are `(C_out, KH, KW, C_in)`.
#[derive(Debug, Clone, TreeNode)]
pub struct ConvTranspose2d {
    pub weight: Array,
    pub bias: Option<Array>,
    #[tree(static)]
    pub stride: (i32, i32),
    #[tree(static)]
    pub padding: (i32, i32),
    #[tree(static)]
    pub dilation: (i32, i32),
    #[tree(static)]
    pub output_padding: (i32, i32),
    #[tree(static)]
    pub frozen: Frozen,
}

impl ConvTranspose2d {
    /// A new layer with Python's initialization (uniform in `±sqrt(1 / (C_in * KH * KW))`);
    /// `kernel_size` and the `options` `stride`, `padding`, `dilation`, `output_padding` take
    /// one value or one per spatial axis, `bias` `None` is `true`. Errors as
    /// [`ConvTranspose1d::new`].
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
    pub fn new(
        in_channels: i32,
        out_channels: i32,
        kernel_size: impl Into<Spatial>,
        options: ConvTransposeOptions,
        bias: impl Into<Option<bool>>,
    ) -> Result<ConvTranspose2d> {
        const LAYER: &str = "ConvTranspose2d";
        let [k, stride, padding, dilation, output_padding] =
            transpose_args::<2>(LAYER, kernel_size.into(), &options)?;
        let bias = bias.into().unwrap_or(true);
        let (weight, bias) = init_params(LAYER, in_channels, out_channels, &k, bias)?;
        Ok(ConvTranspose2d {
            weight,
            bias,
            stride: stride.into(),
            padding: padding.into(),
            dilation: dilation.into(),
            output_padding: output_padding.into(),
            frozen: Frozen::default(),
        })
    }
}

impl Forward for ConvTranspose2d {
    /// Applies the layer (Python: `conv(x)`); errors unless `x` is `(N, H, W, C_in)`.
    fn forward(&self, x: &Array) -> Result<Array> {
        check_input("ConvTranspose2d", x, 2, &self.weight)?;
        let opts = ConvTransposeOptions::default()
            .stride(self.stride)
            .padding(self.padding)
            .dilation(self.dilation)
            .output_padding(self.output_padding);
        let y = ops::conv_transpose2d(x, &self.weight, opts)?;
        with_bias(y, self.bias.as_ref())
    }
}

/// 3-D transposed convolution over `(N, D, H, W, C_in)` (Python:
/// `nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=1, padding=0,
/// dilation=1, output_padding=0, bias=True)`). Weights are `(C_out, KD, KH, KW, C_in)`.
#[derive(Debug, Clone, TreeNode)]
pub struct ConvTranspose3d {
    pub weight: Array,
    pub bias: Option<Array>,
    #[tree(static)]
    pub stride: (i32, i32, i32),
    #[tree(static)]
    pub padding: (i32, i32, i32),
    #[tree(static)]
    pub dilation: (i32, i32, i32),
    #[tree(static)]
    pub output_padding: (i32, i32, i32),
    #[tree(static)]
    pub frozen: Frozen,
}

impl ConvTranspose3d {
    /// A new layer with Python's initialization (uniform in `±sqrt(1 / (C_in * KD * KH *
    /// KW))`); arguments as [`ConvTranspose2d::new`], with three spatial axes.
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
    pub fn new(
        in_channels: i32,
        out_channels: i32,
        kernel_size: impl Into<Spatial>,
        options: ConvTransposeOptions,
        bias: impl Into<Option<bool>>,
    ) -> Result<ConvTranspose3d> {
        const LAYER: &str = "ConvTranspose3d";
        let [k, stride, padding, dilation, output_padding] =
            transpose_args::<3>(LAYER, kernel_size.into(), &options)?;
        let bias = bias.into().unwrap_or(true);
        let (weight, bias) = init_params(LAYER, in_channels, out_channels, &k, bias)?;
        Ok(ConvTranspose3d {
            weight,
            bias,
            stride: stride.into(),
            padding: padding.into(),
            dilation: dilation.into(),
            output_padding: output_padding.into(),
            frozen: Frozen::default(),
        })
    }
}

impl Forward for ConvTranspose3d {
    /// Applies the layer (Python: `conv(x)`); errors unless `x` is `(N, D, H, W, C_in)`.
    fn forward(&self, x: &Array) -> Result<Array> {
        check_input("ConvTranspose3d", x, 3, &self.weight)?;
        let opts = ConvTransposeOptions::default()
            .stride(self.stride)
            .padding(self.padding)
            .dilation(self.dilation)
            .output_padding(self.output_padding);
        let y = ops::conv_transpose3d(x, &self.weight, opts)?;
        with_bias(y, self.bias.as_ref())
    }
}
