//! Spatial upsampling of channels-last inputs (Python: `mlx.nn.layers.upsample`): the
//! [`Upsample`] layer (Python: `nn.Upsample`) and the functions it calls, which Python's
//! module also makes public ([`upsample_nearest`], [`upsample_linear`], [`upsample_cubic`]; not
//! re-exported by `mlx.nn`).
//!
//! Every function follows Python's computation op for op — the same sampling grid rounded
//! where Python's floats meet float32 arrays, the same taps in the same order, the same sums
//! starting from `0` as Python's `sum()` does, and the cubic weights through a shapeless
//! compiled function as Python's `_get_weight` — so on the same MLX library the results are
//! Python's bit for bit.

use std::str::FromStr;
use std::sync::OnceLock;

use mlx_rs::compile::{compile, Compiled};
use mlx_rs::{ops, Array, Dtype, Error, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::Forward;

/// The interpolation of [`Upsample`] (Python: `mode="nearest" | "linear" | "cubic"`);
/// `"linear".parse()` gives [`UpsampleMode::Linear`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, StaticData)]
pub enum UpsampleMode {
    /// Nearest neighbour ([`upsample_nearest`]).
    #[default]
    Nearest,
    /// Linear interpolation on each spatial axis: bilinear, trilinear, ...
    /// ([`upsample_linear`]).
    Linear,
    /// Cubic interpolation on each spatial axis: bicubic for images ([`upsample_cubic`]).
    Cubic,
}

impl FromStr for UpsampleMode {
    type Err = Error;

    /// Python's mode names.
    fn from_str(mode: &str) -> Result<Self> {
        match mode {
            "nearest" => Ok(UpsampleMode::Nearest),
            "linear" => Ok(UpsampleMode::Linear),
            "cubic" => Ok(UpsampleMode::Cubic),
            _ => Err(Error::InvalidArgument(format!(
                "[Upsample] Got unsupported upsampling algorithm: {mode}"
            ))),
        }
    }
}

/// The multiplier of the spatial sizes (Python's `scale_factor`: a float for every spatial
/// axis, or a tuple with one per axis). Kept in f64 as Python's floats: the output sizes and
/// sampling grid are computed from them before they meet an array.
///
/// ```
/// use mlx_nn::ScaleFactor;
/// assert_eq!(ScaleFactor::from(2), ScaleFactor::All(2.0));
/// assert_eq!(ScaleFactor::from((2.0, 1.5)), ScaleFactor::PerAxis(vec![2.0, 1.5]));
/// ```
#[derive(Debug, Clone, PartialEq, StaticData)]
pub enum ScaleFactor {
    /// One factor for every spatial axis (Python: `scale_factor=2.0`).
    All(f64),
    /// One factor per spatial axis (Python: `scale_factor=(2.0, 1.5)`); the input must have
    /// that many spatial axes.
    PerAxis(Vec<f64>),
}

impl From<f64> for ScaleFactor {
    fn from(s: f64) -> Self {
        ScaleFactor::All(s)
    }
}

impl From<i32> for ScaleFactor {
    fn from(s: i32) -> Self {
        ScaleFactor::All(f64::from(s))
    }
}

impl From<(f64, f64)> for ScaleFactor {
    fn from(s: (f64, f64)) -> Self {
        ScaleFactor::PerAxis(vec![s.0, s.1])
    }
}

impl From<(f64, f64, f64)> for ScaleFactor {
    fn from(s: (f64, f64, f64)) -> Self {
        ScaleFactor::PerAxis(vec![s.0, s.1, s.2])
    }
}

impl<const N: usize> From<[f64; N]> for ScaleFactor {
    fn from(s: [f64; N]) -> Self {
        ScaleFactor::PerAxis(s.to_vec())
    }
}

impl From<&[f64]> for ScaleFactor {
    fn from(s: &[f64]) -> Self {
        ScaleFactor::PerAxis(s.to_vec())
    }
}

impl From<Vec<f64>> for ScaleFactor {
    fn from(s: Vec<f64>) -> Self {
        ScaleFactor::PerAxis(s)
    }
}

mlx_rs::options! {
    /// The keyword arguments of [`Upsample::new`], with Python's defaults (`mode="nearest"`,
    /// `align_corners=False`, `antialias=False`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct UpsampleOptions {
        /// The interpolation.
        mode: plain UpsampleMode = UpsampleMode::Nearest,
        /// For `Linear` and `Cubic`: map the corner pixels of the input onto those of the
        /// output (else the pixel centres are scaled).
        align_corners: plain bool = false,
        /// For `Linear` and `Cubic`: widen the filter by `1 / scale` when downsampling (scale
        /// below 1); `Cubic` then uses the kernel coefficient `a = -0.5` instead of `-0.75`.
        /// Not with `align_corners`.
        antialias: plain bool = false,
    }
}

/// Upsamples the spatial axes of `(N, *spatial, C)` inputs (Python: `nn.Upsample(scale_factor,
/// mode="nearest", align_corners=False, antialias=False)`); no parameters.
///
/// ```
/// use mlx_nn::{Forward, Upsample, UpsampleMode, UpsampleOptions};
/// use mlx_rs::Array;
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[1, 2, 2, 1])?;
/// // nn.Upsample(scale_factor=2, mode="nearest")
/// let nearest = Upsample::new(2, UpsampleOptions::default())?;
/// let y = nearest.forward(&x)?;
/// assert_eq!(y.shape(), &[1, 4, 4, 1]);
/// assert_eq!(y.to_vec::<f32>()?[..4], [1.0, 1.0, 2.0, 2.0]);
/// // nn.Upsample(scale_factor=2, mode="linear", align_corners=True)
/// let opts = UpsampleOptions::default().mode("linear".parse()?).align_corners(true);
/// let y = Upsample::new(2, opts)?.forward(&x)?;
/// assert_eq!((y.shape(), y.to_vec::<f32>()?[3]), (&[1, 4, 4, 1][..], 2.0));
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, TreeNode)]
pub struct Upsample {
    #[tree(static)]
    pub scale_factor: ScaleFactor,
    #[tree(static)]
    pub mode: UpsampleMode,
    #[tree(static)]
    pub align_corners: bool,
    #[tree(static)]
    pub antialias: bool,
}

impl Upsample {
    /// A new layer. Errors, as Python's, for `antialias` with `Nearest` or with
    /// `align_corners`; and for a scale factor that is not a positive finite number (Python
    /// fails on those only when called, or returns an empty array).
    pub fn new(scale_factor: impl Into<ScaleFactor>, options: UpsampleOptions) -> Result<Upsample> {
        let scale_factor = scale_factor.into();
        let UpsampleOptions {
            mode,
            align_corners,
            antialias,
        } = options;
        if antialias && mode == UpsampleMode::Nearest {
            return Err(Error::InvalidArgument(
                "[Upsample] Antialiasing is not supported for nearest neighbor upsampling".into(),
            ));
        }
        check_antialias_align_corners(align_corners, antialias)?;
        match &scale_factor {
            ScaleFactor::All(s) => check_scales("Upsample", &[*s])?,
            ScaleFactor::PerAxis(s) if s.is_empty() => {
                return Err(Error::InvalidArgument(
                    "[Upsample] scale_factor needs one value per spatial dimension, got none"
                        .into(),
                ))
            }
            ScaleFactor::PerAxis(s) => check_scales("Upsample", s)?,
        }
        Ok(Upsample {
            scale_factor,
            mode,
            align_corners,
            antialias,
        })
    }
}

impl Forward for Upsample {
    /// Applies the layer (Python: `upsample(x)`); errors unless `x` has a batch, at least one
    /// spatial and a channel axis, and as many spatial axes as a per-axis scale factor has
    /// values.
    fn forward(&self, x: &Array) -> Result<Array> {
        let dims = x.ndim().saturating_sub(2);
        if dims == 0 {
            return Err(Error::InvalidArgument(format!(
                "[Upsample] The input should have at least 1 spatial dimension which means it \
                 should be at least 3D but {}D was provided",
                x.ndim()
            )));
        }
        let scale_factor = match &self.scale_factor {
            ScaleFactor::All(s) => vec![*s; dims],
            ScaleFactor::PerAxis(s) if s.len() != dims => {
                return Err(Error::InvalidArgument(format!(
                    "[Upsample] One scale per spatial dimension is required but \
                     scale_factor={s:?} and the number of spatial dimensions were {dims}"
                )))
            }
            ScaleFactor::PerAxis(s) => s.clone(),
        };
        match self.mode {
            UpsampleMode::Nearest => upsample_nearest(x, &scale_factor),
            UpsampleMode::Linear => {
                upsample_linear(x, &scale_factor, self.align_corners, self.antialias)
            }
            UpsampleMode::Cubic => {
                upsample_cubic(x, &scale_factor, self.align_corners, self.antialias)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checks

/// Python's `_validate_antialias_align_corners`.
fn check_antialias_align_corners(align_corners: bool, antialias: bool) -> Result<()> {
    if antialias && align_corners {
        return Err(Error::InvalidArgument(
            "[Upsample] antialias=True with align_corners=True is not supported. Use \
             align_corners=False for antialiased interpolation."
                .into(),
        ));
    }
    Ok(())
}

/// Scale factors Python can use: a zero, negative or non-finite one fails somewhere inside
/// Python's computation (a division by zero, a negative `arange`), here up front.
fn check_scales(what: &str, scale_factor: &[f64]) -> Result<()> {
    if scale_factor.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
        return Err(Error::InvalidArgument(format!(
            "[{what}] scale factors must be positive and finite, got {scale_factor:?}"
        )));
    }
    Ok(())
}

/// The spatial sizes of `x`, after checking there is one scale factor per spatial axis.
fn spatial_sizes(what: &str, x: &Array, scale_factor: &[f64]) -> Result<Vec<i32>> {
    let shape = x.shape();
    if shape.len() < 3 || shape.len() - 2 != scale_factor.len() {
        return Err(Error::InvalidArgument(format!(
            "[{what}] A scale needs to be provided for each spatial dimension: input of shape \
             {shape:?} (batch, spatial..., channels), scale_factor {scale_factor:?}"
        )));
    }
    check_scales(what, scale_factor)?;
    Ok(shape[1..shape.len() - 1].to_vec())
}

/// Python's `M = int(scale * N)`, checked to be a size MLX can hold.
fn output_size(n: i32, scale: f64) -> Result<i32> {
    let m = scale * f64::from(n);
    if m >= f64::from(i32::MAX) {
        return Err(Error::InvalidArgument(format!(
            "[Upsample] the output size {m} of an axis of size {n} is too large"
        )));
    }
    // Truncation toward zero, as Python's `int()` of a non-negative float.
    Ok(m as i32)
}

// ---------------------------------------------------------------------------------------------
// Sampling grids: per spatial axis, the (indices, weights) taps Python computes

/// `[1] * ndims` with `-1` at `dim`: the shape Python gives one axis' grid so the axes
/// broadcast against each other.
fn axis_shape(dim: usize, ndims: usize) -> Vec<i32> {
    let mut shape = vec![1; ndims];
    shape[dim] = -1;
    shape
}

/// `mx.arange(M, dtype=mx.float32)`.
fn arange_f32(m: i32) -> Result<Array> {
    ops::arange(0.0, f64::from(m), None, Dtype::Float32)
}

/// Python's `_scaled_indices`: the input coordinate of each output position.
fn scaled_indices(
    n: i32,
    scale: f64,
    align_corners: bool,
    dim: usize,
    ndims: usize,
) -> Result<Array> {
    let m = output_size(n, scale)?;
    let positions = arange_f32(m)?;
    let indices = if align_corners {
        ops::multiply(&positions, f64::from(n - 1) / f64::from((m - 1).max(1)))?
    } else {
        let step = 1.0 / scale;
        let start = (f64::from(m - 1) * step - f64::from(n) + 1.0) / 2.0;
        ops::subtract(&ops::multiply(&positions, step)?, start)?
    };
    ops::reshape(&indices, &axis_shape(dim, ndims))
}

/// Python's `_nearest_indices`, flat (only gathered with, so the shape does not matter).
fn nearest_indices(n: i32, scale: f64) -> Result<Array> {
    let m = output_size(n, scale)?;
    if m == 0 {
        // Python divides by M here (ZeroDivisionError).
        return Err(Error::InvalidArgument(format!(
            "[upsample_nearest] scale factor {scale} leaves no output of an axis of size {n}"
        )));
    }
    let ratio = f64::from(n) / f64::from(m);
    let indices = arange_f32(m)?;
    let indices = if m > n {
        let centres = ops::subtract(&ops::multiply(&ops::add(&indices, 0.5)?, ratio)?, 0.5)?;
        ops::round(&centres, None)?
    } else {
        ops::multiply(&indices, ratio)?
    };
    indices.astype(Dtype::Uint32)
}

/// One tap of one axis: input indices (uint32, flat) and their weights (shaped as Python's,
/// `axis_shape + [1]`, to broadcast over the output).
type Tap = (Array, Array);

/// Python's `_linear_indices`.
fn linear_indices(
    n: i32,
    scale: f64,
    align_corners: bool,
    dim: usize,
    ndims: usize,
) -> Result<Vec<Tap>> {
    let indices = scaled_indices(n, scale, align_corners, dim, ndims)?;
    let indices = ops::clip(&indices, 0, n - 1)?;
    let left = ops::floor(&indices)?;
    let right = ops::ceil(&indices)?;
    let weight = ops::expand_dims(&ops::subtract(&indices, &left)?, -1)?;
    Ok(vec![
        (flat_u32(&left)?, ops::subtract(1, &weight)?),
        (flat_u32(&right)?, weight),
    ])
}

/// Indices as Python gathers with them: uint32, flattened.
fn flat_u32(indices: &Array) -> Result<Array> {
    ops::reshape(&indices.astype(Dtype::Uint32)?, &[-1])
}

/// Python clips tap indices to the input (border padding) before gathering.
fn clipped_u32(indices: &Array, n: i32) -> Result<Array> {
    flat_u32(&ops::clip(indices, 0, n - 1)?)
}

type WeightFn = fn(&[Array]) -> Result<Vec<Array>>;

/// The `(ind, grid)` inputs of a compiled weight function.
fn weight_inputs(inputs: &[Array]) -> Result<(&Array, &Array)> {
    match inputs {
        [ind, grid] => Ok((ind, grid)),
        _ => Err(Error::InvalidArgument(format!(
            "[upsample_cubic] the weight function takes 2 arrays, got {}",
            inputs.len()
        ))),
    }
}

/// Python's `_get_weight(ind, grid, dist=1)` (Keys cubic, `a = -0.75`, inner part):
/// `((a + 2) x - (a + 3)) x x + 1` with `x = |ind - grid|`.
fn cubic_weight_inner(inputs: &[Array]) -> Result<Vec<Array>> {
    const A: f64 = -0.75;
    let (ind, grid) = weight_inputs(inputs)?;
    let x = ops::abs(&ops::subtract(ind, grid)?)?;
    let w = ops::subtract(&ops::multiply(A + 2.0, &x)?, A + 3.0)?;
    let w = ops::multiply(&ops::multiply(&w, &x)?, &x)?;
    Ok(vec![ops::add(&w, 1)?])
}

/// Python's `_get_weight(ind, grid, dist=2)` (outer part): `(((x - 5) x + 8) x - 4) a`.
fn cubic_weight_outer(inputs: &[Array]) -> Result<Vec<Array>> {
    const A: f64 = -0.75;
    let (ind, grid) = weight_inputs(inputs)?;
    let x = ops::abs(&ops::subtract(ind, grid)?)?;
    let w = ops::add(&ops::multiply(&ops::subtract(&x, 5)?, &x)?, 8)?;
    let w = ops::subtract(&ops::multiply(&w, &x)?, 4)?;
    Ok(vec![ops::multiply(&w, A)?])
}

/// The cubic weight of `grid` for the coordinates `ind`, `[..., None]`. Python compiles
/// `_get_weight` shapeless, and so do we: a fused kernel may round differently from the same
/// ops run one by one (a backend may contract a multiply and an add), so only the same
/// compiled graph is sure to give Python's bits on every device.
fn cubic_weight(inner: bool, ind: &Array, grid: &Array) -> Result<Array> {
    static INNER: OnceLock<Compiled<WeightFn>> = OnceLock::new();
    static OUTER: OnceLock<Compiled<WeightFn>> = OnceLock::new();
    let f = if inner {
        INNER.get_or_init(|| compile(cubic_weight_inner as WeightFn, true))
    } else {
        OUTER.get_or_init(|| compile(cubic_weight_outer as WeightFn, true))
    };
    let weight = f
        .call(&[ind.clone(), grid.clone()])?
        .into_iter()
        .next()
        .ok_or_else(|| Error::InvalidArgument("[upsample_cubic] no weight computed".into()))?;
    ops::expand_dims(&weight, -1)
}

/// Python's `_cubic_indices`: taps at `floor(i)`, `floor(i + 1)`, `floor(i) - 1`,
/// `floor(i + 1) + 1`, in that order.
fn cubic_indices(
    n: i32,
    scale: f64,
    align_corners: bool,
    dim: usize,
    ndims: usize,
) -> Result<Vec<Tap>> {
    let indices = scaled_indices(n, scale, align_corners, dim, ndims)?;
    let l1 = ops::floor(&indices)?;
    let r1 = ops::floor(&ops::add(&indices, 1)?)?;
    let l2 = ops::subtract(&l1, 1)?;
    let r2 = ops::add(&r1, 1)?;
    Ok(vec![
        (clipped_u32(&l1, n)?, cubic_weight(true, &indices, &l1)?),
        (clipped_u32(&r1, n)?, cubic_weight(true, &indices, &r1)?),
        (clipped_u32(&l2, n)?, cubic_weight(false, &indices, &l2)?),
        (clipped_u32(&r2, n)?, cubic_weight(false, &indices, &r2)?),
    ])
}

/// The filters of the antialiased paths (Python's `_triangle_kernel`, `_cubic_kernel`) and
/// their support radius.
#[derive(Debug, Clone, Copy)]
enum AaKernel {
    Triangle,
    Cubic,
}

impl AaKernel {
    fn radius(self) -> f64 {
        match self {
            AaKernel::Triangle => 1.0,
            AaKernel::Cubic => 2.0,
        }
    }

    fn weight(self, x: &Array) -> Result<Array> {
        match self {
            AaKernel::Triangle => ops::maximum(&ops::subtract(1.0, x)?, 0.0),
            AaKernel::Cubic => {
                // Keys cubic with a = -0.5 (Pillow's), uncompiled as in Python.
                const A: f64 = -0.5;
                let inner = ops::subtract(&ops::multiply(A + 2.0, x)?, A + 3.0)?;
                let inner = ops::add(&ops::multiply(&ops::multiply(&inner, x)?, x)?, 1)?;
                let outer = ops::add(&ops::multiply(&ops::subtract(x, 5)?, x)?, 8)?;
                let outer = ops::multiply(&ops::subtract(&ops::multiply(&outer, x)?, 4)?, A)?;
                let far = ops::where_(&ops::less_equal(x, 2.0)?, &outer, 0.0)?;
                ops::where_(&ops::less_equal(x, 1.0)?, &inner, &far)
            }
        }
    }
}

/// Python's `_aa_indices`: every tap within the (widened) support, out-of-range taps zeroed,
/// the weights normalized to sum to one.
fn aa_indices(
    n: i32,
    scale: f64,
    align_corners: bool,
    dim: usize,
    ndims: usize,
    kernel: AaKernel,
) -> Result<Vec<Tap>> {
    let indices = scaled_indices(n, scale, align_corners, dim, ndims)?;
    let inv_scale = if scale < 1.0 { 1.0 / scale } else { 1.0 };
    let support = kernel.radius() * inv_scale;
    // With no output (`M = 0`: scale below `1 / N`) every tap is empty and so is the result,
    // however many taps; one keeps a tiny scale from looping over billions of them. With an
    // output, `scale >= 1 / N` bounds the taps by the input size.
    let num_taps = if output_size(n, scale)? == 0 {
        1
    } else {
        support.ceil() as i32 + 1
    };
    let mut taps = Vec::new();
    for k in -num_taps + 1..num_taps {
        let idx = ops::add(&ops::floor(&indices)?, k)?;
        let dist = ops::divide(&ops::abs(&ops::subtract(&indices, &idx)?)?, inv_scale)?;
        let w = kernel.weight(&dist)?;
        let inside = ops::logical_and(&ops::greater_equal(&idx, 0)?, &ops::less(&idx, n)?)?;
        taps.push((idx, ops::where_(&inside, &w, 0.0)?));
    }
    let w_sum = python_sum(taps.iter().map(|(_, w)| Ok(w.clone())))?;
    let w_sum = ops::where_(&ops::greater(&w_sum, 0)?, &w_sum, 1.0)?;
    taps.iter()
        .map(|(idx, w)| {
            let w = ops::expand_dims(&ops::divide(w, &w_sum)?, -1)?;
            Ok((clipped_u32(idx, n)?, w))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Interpolation

/// Python's `sum(terms)`: `0 + t0 + t1 + ...`, left to right (the `0 +` turns a `-0.0` first
/// term into `+0.0`, so it is kept).
fn python_sum(terms: impl IntoIterator<Item = Result<Array>>) -> Result<Array> {
    let mut total: Option<Array> = None;
    for term in terms {
        let term = term?;
        total = Some(match total {
            None => ops::add(0, &term)?,
            Some(t) => ops::add(&t, &term)?,
        });
    }
    total.ok_or_else(|| Error::InvalidArgument("[Upsample] no interpolation taps".into()))
}

/// Python's `_interpolate`: for every combination of one tap per axis (itertools.product
/// order, the last axis fastest), the gathered input times the product of the taps' weights,
/// summed.
fn interpolate(x: &Array, taps: &[Vec<Tap>]) -> Result<Array> {
    let counts: Vec<usize> = taps.iter().map(Vec::len).collect();
    let combinations: usize = counts.iter().product();
    let term = |mut flat: usize| -> Result<Array> {
        let mut choice = vec![0; counts.len()];
        for (c, &count) in choice.iter_mut().zip(&counts).rev() {
            *c = flat % count;
            flat /= count;
        }
        // Python gathers all axes at once (`x[:, i0, i1, ...]`); gathering one axis at a time
        // moves the same elements.
        let mut sample = x.clone();
        let mut weight: Option<Array> = None;
        for (axis, (axis_taps, &c)) in taps.iter().zip(&choice).enumerate() {
            let (idx, w) = &axis_taps[c];
            sample = ops::take(&sample, idx, axis as i32 + 1)?;
            weight = Some(match weight {
                None => w.clone(),
                Some(acc) => ops::multiply(&acc, w)?,
            });
        }
        match weight {
            Some(w) => ops::multiply(&w, &sample),
            None => Ok(sample),
        }
    };
    python_sum((0..combinations).map(term))
}

/// Python's `_interpolate_separable`: one axis at a time, each a weighted sum of its taps.
fn interpolate_separable(x: &Array, taps_of: impl Fn(usize) -> Result<Vec<Tap>>) -> Result<Array> {
    let mut out = x.clone();
    for axis in 0..x.ndim() - 2 {
        let taps = taps_of(axis)?;
        out = python_sum(
            taps.iter()
                .map(|(idx, w)| ops::multiply(&ops::take(&out, idx, axis as i32 + 1)?, w)),
        )?;
    }
    Ok(out)
}

/// Nearest-neighbour upsampling of `(N, *spatial, C)` by one factor per spatial axis
/// (Python: `mlx.nn.layers.upsample.upsample_nearest(x, scale_factor)`). Integer factors
/// repeat each element; others pick the nearest input element of each output position.
///
/// ```
/// use mlx_nn::upsample_nearest;
/// use mlx_rs::Array;
/// let x = Array::from_slice(&[1i32, 2, 3], &[1, 3, 1])?;
/// assert_eq!(upsample_nearest(&x, &[2.0])?.to_vec::<i32>()?, [1, 1, 2, 2, 3, 3]);
/// assert_eq!(upsample_nearest(&x, &[1.5])?.to_vec::<i32>()?, [1, 2, 2, 3]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn upsample_nearest(x: &Array, scale_factor: &[f64]) -> Result<Array> {
    // An empty result is made without MLX's kernels: MLX 0.32.2's CUDA backend dies with
    // SIGFPE evaluating some of these graphs when the result is empty (antialiased
    // upsampling by a factor below 1 / size; Python MLX dies the same way on an H100).
    upsample_nearest_graph(x, scale_factor).and_then(ops::unless_empty)
}

fn upsample_nearest_graph(x: &Array, scale_factor: &[f64]) -> Result<Array> {
    let sizes = spatial_sizes("upsample_nearest", x, scale_factor)?;
    let dims = sizes.len();
    if scale_factor.iter().all(|s| s.fract() == 0.0) {
        // Integer factors: broadcast each spatial axis against a new axis of the factor's
        // size and merge the two.
        let too_large = || {
            Error::InvalidArgument(format!(
                "[upsample_nearest] scale factors {scale_factor:?} give too large an output for \
                 an input of shape {:?}",
                x.shape()
            ))
        };
        let mut shape = x.shape().to_vec();
        for d in 0..dims {
            shape.insert(2 + 2 * d, 1);
        }
        let y = ops::reshape(x, &shape)?;
        for (d, &s) in scale_factor.iter().enumerate() {
            if s >= f64::from(i32::MAX) {
                return Err(too_large());
            }
            shape[2 + 2 * d] = s as i32;
        }
        let y = ops::broadcast_to(&y, &shape)?;
        for d in 0..dims {
            shape[d + 1] = shape[d + 1]
                .checked_mul(shape[d + 2])
                .ok_or_else(too_large)?;
            shape.remove(d + 2);
        }
        return ops::reshape(&y, &shape);
    }
    let mut y = x.clone();
    for (d, (&n, &s)) in sizes.iter().zip(scale_factor).enumerate() {
        y = ops::take(&y, &nearest_indices(n, s)?, d as i32 + 1)?;
    }
    Ok(y)
}

/// Linear (bilinear, trilinear, ...) upsampling of `(N, *spatial, C)` by one factor per
/// spatial axis (Python: `mlx.nn.layers.upsample.upsample_linear(x, scale_factor,
/// align_corners=False, antialias=False)`). The result is float32 for float32, float16,
/// bfloat16 and integer inputs (the weights are float32), as in Python.
///
/// ```
/// use mlx_nn::upsample_linear;
/// use mlx_rs::Array;
/// let x = Array::from_slice(&[0.0f32, 3.0], &[1, 2, 1])?;
/// let y = upsample_linear(&x, &[2.0], true, false)?;
/// assert_eq!(y.to_vec::<f32>()?, [0.0, 1.0, 2.0, 3.0]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn upsample_linear(
    x: &Array,
    scale_factor: &[f64],
    align_corners: bool,
    antialias: bool,
) -> Result<Array> {
    interpolating_upsample(
        "upsample_linear",
        x,
        scale_factor,
        align_corners,
        antialias,
        AaKernel::Triangle,
        linear_indices,
    )
}

/// Cubic (bicubic, ...) upsampling of `(N, *spatial, C)` by one factor per spatial axis
/// (Python: `mlx.nn.layers.upsample.upsample_cubic(x, scale_factor, align_corners=False,
/// antialias=False)`): Keys' cubic with `a = -0.75`, or `a = -0.5` with `antialias`. Float32
/// results as [`upsample_linear`].
///
/// ```
/// use mlx_nn::upsample_cubic;
/// use mlx_rs::Array;
/// let x = Array::from_slice(&[1.0f32, 1.0, 1.0], &[1, 3, 1])?;
/// let y = upsample_cubic(&x, &[2.0], false, false)?;
/// assert_eq!(y.shape(), &[1, 6, 1]);
/// assert!(y.to_vec::<f32>()?.iter().all(|v| (v - 1.0).abs() < 1e-6));
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn upsample_cubic(
    x: &Array,
    scale_factor: &[f64],
    align_corners: bool,
    antialias: bool,
) -> Result<Array> {
    interpolating_upsample(
        "upsample_cubic",
        x,
        scale_factor,
        align_corners,
        antialias,
        AaKernel::Cubic,
        cubic_indices,
    )
}

/// The body of [`upsample_linear`] and [`upsample_cubic`]: antialiased, one axis at a time
/// with `kernel`; otherwise every axis's taps from `indices` (Python's `_linear_indices` or
/// `_cubic_indices`) at once. An empty result is made without MLX's kernels, as in
/// [`upsample_nearest`].
fn interpolating_upsample(
    what: &str,
    x: &Array,
    scale_factor: &[f64],
    align_corners: bool,
    antialias: bool,
    kernel: AaKernel,
    indices: fn(i32, f64, bool, usize, usize) -> Result<Vec<Tap>>,
) -> Result<Array> {
    check_antialias_align_corners(align_corners, antialias)?;
    let sizes = spatial_sizes(what, x, scale_factor)?;
    let dims = sizes.len();
    let out = if antialias {
        interpolate_separable(x, |d| {
            aa_indices(sizes[d], scale_factor[d], align_corners, d, dims, kernel)
        })?
    } else {
        let taps = sizes
            .iter()
            .zip(scale_factor)
            .enumerate()
            .map(|(d, (&n, &s))| indices(n, s, align_corners, d, dims))
            .collect::<Result<Vec<_>>>()?;
        interpolate(x, &taps)?
    };
    ops::unless_empty(out)
}
