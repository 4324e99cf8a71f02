//! Initializers (Python: `mlx.nn.init`): each returns a new array of `a`'s shape, drawn from
//! MLX's global random state like Python's (Python returns a closure; here the dtype and the
//! array are both arguments).

use mlx_rs::random;
use mlx_rs::{ops, Array, Dtype, Error, Result};

// Scales are computed in f64 and rounded to f32 once, as Python computes them from Python
// floats (`gain * math.sqrt(2.0 / (fan_in + fan_out))`).
fn fans(a: &Array) -> Result<(f64, f64)> {
    let shape = a.shape();
    if shape.len() < 2 {
        return Err(Error::InvalidArgument(format!(
            "Glorot / He initialization requires at least 2 dimensional input but input with {} dimensions.",
            shape.len()
        )));
    }
    let receptive: i32 = shape[1..shape.len() - 1].iter().product();
    Ok((
        f64::from(shape[shape.len() - 1]) * f64::from(receptive),
        f64::from(shape[0]) * f64::from(receptive),
    ))
}

/// Every entry `value` (Python: `nn.init.constant(value, dtype)(a)`).
pub fn constant(a: &Array, value: f32, dtype: impl Into<Option<Dtype>>) -> Result<Array> {
    ops::full(a.shape(), value, dtype.into().unwrap_or(Dtype::Float32))
}

mlx_rs::options! {
    /// The keywords of [`normal`], with Python's defaults (`mean=0.0`, `std=1.0`,
    /// `dtype=float32`).
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct NormalOptions {
        /// The mean.
        mean: plain f32 = 0.0,
        /// The standard deviation.
        std: plain f32 = 1.0,
        /// The dtype of the samples.
        dtype: plain Dtype = Dtype::Float32,
    }
}

/// Normal samples of `a`'s shape (Python: `nn.init.normal(mean=0.0, std=1.0,
/// dtype=mx.float32)(a)`).
///
/// ```
/// use mlx_nn::init::{self, NormalOptions};
/// let w = mlx_rs::ops::zeros(&[64, 32], None)?;
/// let w = init::normal(&w, NormalOptions::default().std(0.02))?; // nn.init.normal(std=0.02)(w)
/// assert_eq!(w.shape(), &[64, 32]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn normal(a: &Array, options: NormalOptions) -> Result<Array> {
    normal_samples(a, options.mean, options.std, Some(options.dtype))
}

mlx_rs::options! {
    /// The keywords of [`uniform`], with Python's defaults (`low=0.0`, `high=1.0`,
    /// `dtype=float32`).
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct UniformOptions {
        /// The lower bound (inclusive).
        low: plain f32 = 0.0,
        /// The upper bound (exclusive).
        high: plain f32 = 1.0,
        /// The dtype of the samples.
        dtype: plain Dtype = Dtype::Float32,
    }
}

/// Uniform samples of `a`'s shape in `[low, high)` (Python: `nn.init.uniform(low=0.0,
/// high=1.0, dtype=mx.float32)(a)`).
pub fn uniform(a: &Array, options: UniformOptions) -> Result<Array> {
    uniform_samples(a, options.low, options.high, Some(options.dtype))
}

/// Glorot/Xavier normal: std `gain * sqrt(2 / (fan_in + fan_out))`; `gain` `None` is 1.0
/// (Python: `nn.init.glorot_normal(dtype=mx.float32)(a, gain=1.0)`).
pub fn glorot_normal(
    a: &Array,
    gain: impl Into<Option<f32>>,
    dtype: impl Into<Option<Dtype>>,
) -> Result<Array> {
    let (fi, fo) = fans(a)?;
    let std = (f64::from(gain.into().unwrap_or(1.0)) * (2.0 / (fi + fo)).sqrt()) as f32;
    normal_samples(a, 0.0, std, dtype.into())
}

/// Glorot/Xavier uniform: limit `gain * sqrt(6 / (fan_in + fan_out))`; `gain` `None` is 1.0
/// (Python: `nn.init.glorot_uniform(dtype=mx.float32)(a, gain=1.0)`).
pub fn glorot_uniform(
    a: &Array,
    gain: impl Into<Option<f32>>,
    dtype: impl Into<Option<Dtype>>,
) -> Result<Array> {
    let (fi, fo) = fans(a)?;
    let limit = (f64::from(gain.into().unwrap_or(1.0)) * (6.0 / (fi + fo)).sqrt()) as f32;
    uniform_samples(a, -limit, limit, dtype.into())
}

/// Which fan [`he_normal`] and [`he_uniform`] scale by (Python: `mode="fan_in" | "fan_out"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FanMode {
    /// `"fan_in"`: the input features times the receptive field.
    #[default]
    FanIn,
    /// `"fan_out"`: the output features times the receptive field.
    FanOut,
}

mlx_rs::options! {
    /// The keyword arguments of [`he_normal`] and [`he_uniform`] (also named
    /// [`HeUniformOptions`]), with Python's defaults (`mode="fan_in"`, `gain=1.0`,
    /// `dtype=mx.float32`).
    ///
    /// ```
    /// use mlx_nn::init::{self, FanMode, HeNormalOptions};
    /// use mlx_rs::ops;
    /// let a = ops::zeros(&[16, 8], None)?;
    /// // nn.init.he_normal()(a, mode="fan_out", gain=2.0)
    /// let w = init::he_normal(&a, HeNormalOptions::default().mode(FanMode::FanOut).gain(2.0))?;
    /// assert_eq!(w.shape(), &[16, 8]);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct HeNormalOptions {
        /// The fan the standard deviation (or limit) is scaled by.
        mode: plain FanMode = FanMode::FanIn,
        /// The scale factor.
        gain: plain f32 = 1.0,
        /// The dtype of the result.
        dtype: plain Dtype = Dtype::Float32,
    }
}

impl HeNormalOptions {
    /// The fan `mode` picks for `a`.
    fn fan(&self, a: &Array) -> Result<f64> {
        let (fan_in, fan_out) = fans(a)?;
        Ok(match self.mode {
            FanMode::FanIn => fan_in,
            FanMode::FanOut => fan_out,
        })
    }
}

/// The options of [`he_uniform`]: the same keywords as [`he_normal`].
pub type HeUniformOptions = HeNormalOptions;

/// He/Kaiming normal: std `gain / sqrt(fan)` (Python: `nn.init.he_normal(dtype=mx.float32)(a,
/// mode="fan_in", gain=1.0)`).
pub fn he_normal(a: &Array, options: HeNormalOptions) -> Result<Array> {
    let fan = options.fan(a)?;
    let std = (f64::from(options.gain) / fan.sqrt()) as f32;
    normal_samples(a, 0.0, std, Some(options.dtype))
}

/// He/Kaiming uniform: limit `gain * sqrt(3 / fan)` (Python:
/// `nn.init.he_uniform(dtype=mx.float32)(a, mode="fan_in", gain=1.0)`).
pub fn he_uniform(a: &Array, options: HeUniformOptions) -> Result<Array> {
    let limit = (f64::from(options.gain) * (3.0 / options.fan(a)?).sqrt()) as f32;
    uniform_samples(a, -limit, limit, Some(options.dtype))
}

/// Normal samples of `a`'s shape from MLX's global random state.
fn normal_samples(a: &Array, loc: f32, scale: f32, dtype: Option<Dtype>) -> Result<Array> {
    let mut options = random::NormalOptions::default().loc(loc).scale(scale);
    if let Some(dtype) = dtype {
        options = options.dtype(dtype);
    }
    random::normal(a.shape(), options, None)
}

/// Uniform samples of `a`'s shape in `[low, high)` from MLX's global random state.
fn uniform_samples(a: &Array, low: f32, high: f32, dtype: Option<Dtype>) -> Result<Array> {
    let mut options = random::UniformOptions::default().low(low).high(high);
    if let Some(dtype) = dtype {
        options = options.dtype(dtype);
    }
    random::uniform(a.shape(), options, None)
}

/// The identity matrix shaped like the square 2-D `a` (Python:
/// `nn.init.identity(dtype=mx.float32)(a)`); `dtype` `None` is float32.
///
/// ```
/// use mlx_nn::init;
/// use mlx_rs::ops;
/// let w = init::identity(&ops::zeros(&[3, 3], None)?, None)?;
/// assert_eq!(w.to_vec::<f32>()?, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
/// assert!(init::identity(&ops::zeros(&[3, 2], None)?, None).is_err());
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn identity(a: &Array, dtype: impl Into<Option<Dtype>>) -> Result<Array> {
    let shape = a.shape();
    if shape.len() != 2 || shape[0] != shape[1] {
        return Err(Error::InvalidArgument(format!(
            "The input array must be a square matrix but got shape {shape:?}."
        )));
    }
    let options = ops::EyeOptions::default().dtype(dtype.into().unwrap_or(Dtype::Float32));
    ops::eye(shape[0], options)
}

/// A matrix with orthonormal rows or columns shaped like the 2-D `a`, times `gain` (default
/// 1.0) (Python: `nn.init.orthogonal(gain=1.0, dtype=mx.float32)(a)`): the Q of a QR
/// factorization of an `n x n` normal sample (`n` the larger side, QR on the CPU as in
/// Python), its columns' signs fixed by R's diagonal, cut to `a`'s shape.
pub fn orthogonal(
    a: &Array,
    gain: impl Into<Option<f64>>,
    dtype: impl Into<Option<Dtype>>,
) -> Result<Array> {
    let shape = a.shape();
    if shape.len() != 2 {
        return Err(Error::InvalidArgument(format!(
            "Orthogonal initialization requires a 2D array but got a {}D array.",
            shape.len()
        )));
    }
    let (rows, cols) = (shape[0], shape[1]);
    let n = rows.max(cols);
    let rmat = random::normal(&[n, n], random::NormalOptions::default(), None)?;
    // Python: `mx.linalg.qr(rmat, stream=mx.cpu)`; MLX has QR on the CPU only.
    let (q, r) = mlx_rs::with_device(&mlx_rs::Device::cpu(), || mlx_rs::linalg::qr(&rmat))??;
    let q = &q * &ops::sign(&ops::diag(&r, None)?)?;
    let q = q.index((..rows, ..cols))?;
    // `q * gain` with Python's float: rounded to f32 where it meets the array.
    let q = q * gain.into().unwrap_or(1.0) as f32;
    q.astype(dtype.into().unwrap_or(Dtype::Float32))
}

mlx_rs::options! {
    /// The keywords of [`sparse`] after `sparsity`, with Python's defaults (`mean=0.0`,
    /// `std=1.0`, `dtype=mx.float32`).
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct SparseOptions {
        /// The mean of the nonzero entries.
        mean: plain f32 = 0.0,
        /// Their standard deviation.
        std: plain f32 = 1.0,
        /// The result's dtype.
        dtype: plain Dtype = Dtype::Float32,
    }
}

/// Normal samples shaped like the 2-D `a` with `ceil(sparsity * columns)` entries of every row
/// zeroed, at columns drawn at random per row (Python: `nn.init.sparse(sparsity, mean=0.0,
/// std=1.0, dtype=mx.float32)(a)`). `sparsity` outside `[0, 1]` is an `Err` (Python slices
/// with whatever `ceil` gives, negative counts included).
pub fn sparse(a: &Array, sparsity: f64, options: SparseOptions) -> Result<Array> {
    let shape = a.shape();
    if shape.len() != 2 {
        return Err(Error::InvalidArgument(
            "Only tensors with 2 dimensions are supported".into(),
        ));
    }
    if !(0.0..=1.0).contains(&sparsity) {
        return Err(Error::InvalidArgument(format!(
            "sparsity must be in [0, 1], got {sparsity}"
        )));
    }
    // Python's `int(math.ceil(sparsity * cols))`, in f64.
    let num_zeros = (sparsity * f64::from(shape[1])).ceil() as i32;
    // Python's draw order: the column order first, then the values.
    let order = ops::argsort(&random::uniform(shape, Default::default(), None)?, 1)?;
    let options = random::NormalOptions::default()
        .scale(options.std)
        .loc(options.mean)
        .dtype(options.dtype);
    let values = random::normal(shape, options, None)?;
    if num_zeros == 0 {
        return Ok(values);
    }
    ops::put_along_axis(&values, &order.index((.., ..num_zeros))?, 0.0, 1)
}
