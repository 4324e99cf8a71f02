//! Max and average pooling over channels-last inputs (Python: `mlx.nn.layers.pooling`):
//! `MaxPool1d/2d/3d`, `AvgPool1d/2d/3d`.
//!
//! The computation is Python's op for op — pad (with `-inf` for max, `0` for average), take
//! the sliding windows (a reshape and transpose when the windows tile the input exactly, else
//! an `as_strided` view), reduce over the window axes — so on the same MLX library the
//! results are Python's bit for bit (the two ways of taking windows reduce in different memory
//! orders, so the choice between them is Python's too).

use mlx_rs::ops::{self, AsStridedOptions, Spatial};
use mlx_rs::{Array, Error, Result};
use mlx_tree::TreeNode;

use super::PerAxis;
use crate::Forward;

/// The keyword arguments of the pooling layers (Python: `stride=None, padding=0`). Each takes
/// one value or one per spatial axis.
///
/// ```
/// use mlx_nn::PoolOptions;
/// // stride=(1, 2), padding=1
/// let opts = PoolOptions::default().stride((1, 2)).padding(1);
/// assert!(opts.stride.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOptions {
    /// The step of the window over each spatial axis; `None` (Python's default) is the
    /// kernel size, so windows do not overlap.
    pub stride: Option<Spatial>,
    /// Padding added on both sides of each spatial axis: `-inf` for max pooling, `0` for
    /// average pooling (which counts it in the mean, as Python does).
    pub padding: Spatial,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            stride: None,
            padding: 0.into(),
        }
    }
}

impl PoolOptions {
    /// Sets `stride`.
    pub fn stride(mut self, stride: impl Into<Spatial>) -> Self {
        self.stride = Some(stride.into());
        self
    }

    /// Sets `padding`.
    pub fn padding(mut self, padding: impl Into<Spatial>) -> Self {
        self.padding = padding.into();
        self
    }
}

/// What a pooling layer reduces its windows with.
#[derive(Debug, Clone, Copy)]
enum Reduce {
    Max,
    Mean,
}

/// Python's `_value_or_list` plus `_Pool`'s checks: kernel size, stride and padding with one
/// value per spatial axis, the first two positive, the last non-negative.
fn pool_args<const N: usize>(
    layer: &str,
    kernel_size: Spatial,
    options: PoolOptions,
) -> Result<[[i32; N]; 3]> {
    let plural = if N == 1 { "" } else { "s" };
    let per_axis = |value: &Spatial, what: &str| {
        value
            .per_axis(N)
            .and_then(|v| <[i32; N]>::try_from(v).ok())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "[{layer}] '{what}' must be an integer or a tuple containing {N} \
                     integer{plural}"
                ))
            })
    };
    let kernel_size = per_axis(&kernel_size, "kernel_size")?;
    let stride = match &options.stride {
        Some(s) => per_axis(s, "stride")?,
        None => kernel_size,
    };
    let padding = per_axis(&options.padding, "padding")?;
    for (what, values) in [("kernel_size", kernel_size), ("stride", stride)] {
        if values.iter().any(|&v| v <= 0) {
            return Err(Error::InvalidArgument(format!(
                "[{layer}] '{what}' must be positive but got {values:?}."
            )));
        }
    }
    if padding.iter().any(|&p| p < 0) {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] 'padding' must be non-negative but got {padding:?}."
        )));
    }
    Ok([kernel_size, stride, padding])
}

/// Python's `_sliding_windows`: `(B, *spatial, C)` to `(B, *windows, *window_shape, C)`.
fn sliding_windows(layer: &str, x: &Array, window: &[i32], stride: &[i32]) -> Result<Array> {
    let shape = x.shape();
    let n = window.len();
    let spatial = &shape[1..=n];
    let tiles = spatial
        .iter()
        .zip(window)
        .zip(stride)
        .all(|((&size, &w), &s)| w == s && size % w == 0);
    if tiles {
        // Python's `_non_overlapping_sliding_windows`: split each axis into (count, window)
        // and move the window axes after the count axes.
        let mut split = vec![shape[0]];
        for (&size, &w) in spatial.iter().zip(window) {
            split.extend([size / w, w]);
        }
        split.push(shape[n + 1]);
        let last = (2 * n + 1) as i32;
        let mut order = vec![0];
        order.extend((1..last).step_by(2));
        order.extend((2..last).step_by(2));
        order.push(last);
        return ops::transpose(&ops::reshape(x, &split)?, &order);
    }

    // Row-major element strides of `x` (`as_strided` reads a contiguous copy, as in Python).
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len() - 1).rev() {
        strides[i] = strides[i + 1] * i64::from(shape[i + 1]);
    }
    let mut final_shape = vec![shape[0]];
    for ((&size, &w), &s) in spatial.iter().zip(window).zip(stride) {
        // Python's floor division: a window longer than the axis by less than a stride gives
        // no windows (an empty result), by more an error (here before MLX sees it).
        let count = (size - w).div_euclid(s) + 1;
        if count < 0 {
            return Err(Error::InvalidArgument(format!(
                "[{layer}] the window {window:?} does not fit the padded input of spatial shape \
                 {spatial:?}"
            )));
        }
        final_shape.push(count);
    }
    final_shape.extend_from_slice(window);
    final_shape.push(shape[n + 1]);
    let mut final_strides = vec![strides[0]];
    final_strides.extend(
        strides[1..=n]
            .iter()
            .zip(stride)
            .map(|(&st, &s)| st * i64::from(s)),
    );
    final_strides.extend_from_slice(&strides[1..=n]);
    final_strides.push(strides[n + 1]);
    ops::as_strided(
        x,
        AsStridedOptions::default()
            .shape(&final_shape)
            .strides(&final_strides),
    )
}

/// Python's `_Pool.__call__`.
fn pool(
    layer: &str,
    x: &Array,
    [kernel_size, stride, padding]: [&[i32]; 3],
    reduce: Reduce,
) -> Result<Array> {
    let n = kernel_size.len();
    if x.ndim() != n + 2 {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] expected an input of {} dimensions (batch, {n} spatial, channels), got \
             shape {:?}",
            n + 2,
            x.shape()
        )));
    }
    let fits = x.shape()[1..=n].iter().zip(padding).all(|(&size, &p)| {
        p.checked_mul(2)
            .and_then(|p2| size.checked_add(p2))
            .is_some()
    });
    if !fits {
        return Err(Error::InvalidArgument(format!(
            "[{layer}] padding {padding:?} is too large for an input of shape {:?}",
            x.shape()
        )));
    }
    let padded;
    let x = if padding.iter().any(|&p| p > 0) {
        let mut widths = vec![(0, 0)];
        widths.extend(padding.iter().map(|&p| (p, p)));
        widths.push((0, 0));
        padded = match reduce {
            Reduce::Max => ops::pad(x, widths, None, f64::NEG_INFINITY)?,
            Reduce::Mean => ops::pad(x, widths, None, 0)?,
        };
        &padded
    } else {
        x
    };
    let windows = sliding_windows(layer, x, kernel_size, stride)?;
    // The window axes: `range(-n - 1, -1)`.
    let axes: Vec<i32> = (-(n as i32) - 1..-1).collect();
    match reduce {
        Reduce::Max => ops::max(&windows, &axes, false),
        Reduce::Mean => ops::mean(&windows, &axes, false),
    }
}

/// One pooling layer per row: `Name(reduction, spatial axes) => per-axis field type;`.
macro_rules! pooling_layers {
    ($( $(#[$doc:meta])* $name:ident($reduce:ident, $n:literal) => $ty:ty; )+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, TreeNode)]
        pub struct $name {
            /// The window size on each spatial axis.
            #[tree(static)]
            pub kernel_size: $ty,
            /// The window step on each spatial axis.
            #[tree(static)]
            pub stride: $ty,
            /// The padding on both sides of each spatial axis.
            #[tree(static)]
            pub padding: $ty,
        }

        impl $name {
            /// A new layer; `kernel_size` and the `options` take one value or one per spatial
            /// axis. Errors for a kernel size or stride that is not positive, a negative
            /// padding, or a wrong number of values (Python's `ValueError`s).
            pub fn new(kernel_size: impl Into<Spatial>, options: PoolOptions) -> Result<$name> {
                let [kernel_size, stride, padding] =
                    pool_args::<$n>(stringify!($name), kernel_size.into(), options)?;
                Ok($name {
                    kernel_size: PerAxis::from_array(kernel_size),
                    stride: PerAxis::from_array(stride),
                    padding: PerAxis::from_array(padding),
                })
            }
        }

        impl Forward for $name {
            /// Applies the layer (Python: `pool(x)`); errors unless `x` has one batch, the
            /// layer's spatial and one channel axis, or if a window does not fit.
            fn forward(&self, x: &Array) -> Result<Array> {
                let args = [
                    self.kernel_size.to_array(),
                    self.stride.to_array(),
                    self.padding.to_array(),
                ];
                pool(
                    stringify!($name),
                    x,
                    [&args[0][..], &args[1][..], &args[2][..]],
                    Reduce::$reduce,
                )
            }
        }
    )+};
}

pooling_layers! {
    /// 1-D max pooling over `(N, L, C)` (Python: `nn.MaxPool1d(kernel_size, stride=None,
    /// padding=0)`): the maximum of each window, the input padded with `-inf`.
    ///
    /// ```
    /// use mlx_nn::{Forward, MaxPool1d, PoolOptions};
    /// use mlx_rs::{ops, Array};
    /// let x = Array::from_slice(&[1.0f32, 5.0, 2.0, 4.0, 3.0, 0.0], &[1, 6, 1])?;
    /// // nn.MaxPool1d(2)
    /// let y = MaxPool1d::new(2, PoolOptions::default())?.forward(&x)?;
    /// assert_eq!(y.to_vec::<f32>()?, [5.0, 4.0, 3.0]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    MaxPool1d(Max, 1) => i32;
    /// 2-D max pooling over `(N, H, W, C)` (Python: `nn.MaxPool2d(kernel_size, stride=None,
    /// padding=0)`): the maximum of each window, the input padded with `-inf`.
    ///
    /// ```
    /// use mlx_nn::{Forward, MaxPool2d, PoolOptions};
    /// use mlx_rs::ops;
    /// // nn.MaxPool2d(3, stride=2, padding=1)
    /// let pool = MaxPool2d::new(3, PoolOptions::default().stride(2).padding(1))?;
    /// let y = pool.forward(&ops::zeros(&[2, 8, 8, 4], None)?)?;
    /// assert_eq!(y.shape(), &[2, 4, 4, 4]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    MaxPool2d(Max, 2) => (i32, i32);
    /// 3-D max pooling over `(N, D, H, W, C)` (Python: `nn.MaxPool3d(kernel_size, stride=None,
    /// padding=0)`): the maximum of each window, the input padded with `-inf`.
    MaxPool3d(Max, 3) => (i32, i32, i32);
    /// 1-D average pooling over `(N, L, C)` (Python: `nn.AvgPool1d(kernel_size, stride=None,
    /// padding=0)`): the mean of each window, the input padded with zeros (counted in the
    /// mean).
    ///
    /// ```
    /// use mlx_nn::{AvgPool1d, Forward, PoolOptions};
    /// use mlx_rs::Array;
    /// let x = Array::from_slice(&[1.0f32, 3.0, 2.0, 4.0], &[1, 4, 1])?;
    /// // nn.AvgPool1d(2, stride=1)
    /// let y = AvgPool1d::new(2, PoolOptions::default().stride(1))?.forward(&x)?;
    /// assert_eq!(y.to_vec::<f32>()?, [2.0, 2.5, 3.0]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    AvgPool1d(Mean, 1) => i32;
    /// 2-D average pooling over `(N, H, W, C)` (Python: `nn.AvgPool2d(kernel_size,
    /// stride=None, padding=0)`): the mean of each window, the input padded with zeros
    /// (counted in the mean).
    AvgPool2d(Mean, 2) => (i32, i32);
    /// 3-D average pooling over `(N, D, H, W, C)` (Python: `nn.AvgPool3d(kernel_size,
    /// stride=None, padding=0)`): the mean of each window, the input padded with zeros
    /// (counted in the mean).
    AvgPool3d(Mean, 3) => (i32, i32, i32);
}
