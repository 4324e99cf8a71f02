//! Random numbers with explicit keys (Python: `mlx.core.random`).
//!
//! Passing a key makes results reproducible and identical to Python MLX for the same key.
//! `None` uses MLX's global key (seeded by [`seed`]).

use mlx_sys as sys;

use crate::array::OutArray;
use crate::ops::{IntoOperand, Operand, Scalar};
use crate::{Array, Dtype, Result};

/// A PRNG key from a seed (Python: `mx.random.key(seed)`).
pub fn key(seed: u64) -> Result<Array> {
    // SAFETY: mlx-c writes a new array into res.
    Array::try_from_op(|res| unsafe { sys::mlx_random_key(res, seed) })
}

/// Seeds the global PRNG (Python: `mx.random.seed`).
pub fn seed(seed: u64) -> Result<()> {
    // SAFETY: plain value.
    crate::error::check(|| unsafe { sys::mlx_random_seed(seed) })
}

/// Splits a key into `num` new keys (default 2), stacked on axis 0
/// (Python: `mx.random.split(key, num=2)`).
pub fn split(key: &Array, num: impl Into<Option<i32>>) -> Result<Array> {
    let num = num.into().unwrap_or(2);
    // SAFETY: valid handle; mlx-c writes a new array into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_random_split_num(res, key.as_raw(), num, s)
    })
}

/// Splits a key into two keys of shape `[2]` (C++: `mx::random::split(key)`); the same keys
/// as the two rows of `split(key, 2)`.
pub fn split_pair(key: &Array) -> Result<(Array, Array)> {
    let mut second = OutArray::new();
    let first = Array::try_from_stream_op(|res, s| {
        // SAFETY: valid handle; mlx-c writes into the two handles we own.
        unsafe { sys::mlx_random_split(res, second.as_mut_ptr(), key.as_raw(), s) }
    })?;
    Ok((first, second.into_array()))
}

crate::options! {
    /// The keyword arguments of [`normal`], with Python's defaults (`dtype=float32`, `loc=None`
    /// (0), `scale=None` (1)).
    ///
    /// `loc` and `scale` are scalars or arrays broadcastable to the sample shape, as in Python:
    ///
    /// ```
    /// use mlx_rs::random::NormalOptions;
    /// use mlx_rs::{ops, Dtype};
    /// let loc = ops::zeros(&[3], None)?;
    /// let o = NormalOptions::default().loc(&loc).scale(2.0).dtype(Dtype::Float16);
    /// assert_eq!(o.dtype, Dtype::Float16);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    #[derive(Debug, Clone)]
    pub struct NormalOptions<'a> {
        /// The dtype of the samples.
        dtype: plain Dtype = Dtype::Float32,
        /// The mean: a scalar or an array.
        loc: operand = Operand::Scalar(Scalar::Float(0.0)),
        /// The standard deviation: a scalar or an array.
        scale: operand = Operand::Scalar(Scalar::Float(1.0)),
    }
}

/// Normally distributed samples of `shape` (Python:
/// `mx.random.normal(shape=[], dtype=float32, loc=None, scale=None, key=None)`).
///
/// ```
/// use mlx_rs::random::{self, NormalOptions};
/// let k = random::key(0)?;
/// let x = random::normal(&[2, 3], Default::default(), &k)?; // mx.random.normal((2, 3), key=k)
/// assert_eq!(x.shape(), &[2, 3]);
/// // mx.random.normal((2, 3), loc=1.0, scale=0.5, key=k)
/// let y = random::normal(&[2, 3], NormalOptions::default().loc(1.0).scale(0.5), &k)?;
/// let (x, y) = (x.to_vec::<f32>()?, y.to_vec::<f32>()?);
/// assert!(x.iter().zip(&y).all(|(x, y)| (1.0 + 0.5 * x - y).abs() < 1e-6));
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn normal<'k>(
    shape: &[i32],
    options: NormalOptions<'_>,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let NormalOptions { dtype, loc, scale } = options;
    let key = crate::handles::opt_array(key.into());
    match (loc, scale) {
        (Operand::Scalar(loc), Operand::Scalar(scale)) => {
            let (loc, scale) = (scalar_f32(loc), scalar_f32(scale));
            // SAFETY: `shape` outlives the call; `key` is valid or null; mlx-c writes into res.
            Array::try_from_stream_op(|res, s| unsafe {
                sys::mlx_random_normal(
                    res,
                    shape.as_ptr(),
                    shape.len(),
                    dtype.to_raw(),
                    loc,
                    scale,
                    key,
                    s,
                )
            })
        }
        (loc, scale) => {
            let (loc, scale) = (
                loc.resolve(Some(dtype), None),
                scale.resolve(Some(dtype), None),
            );
            // SAFETY: all handles valid (key may be null); `shape` outlives the call.
            Array::try_from_stream_op(|res, s| unsafe {
                sys::mlx_random_normal_broadcast(
                    res,
                    shape.as_ptr(),
                    shape.len(),
                    dtype.to_raw(),
                    loc.as_raw(),
                    scale.as_raw(),
                    key,
                    s,
                )
            })
        }
    }
}

fn scalar_f32(s: Scalar) -> f32 {
    match s {
        Scalar::Bool(b) => f32::from(u8::from(b)),
        Scalar::Int(i) => i as f32,
        Scalar::Float(f) => f as f32,
        Scalar::Complex(c) => c.re,
    }
}

/// The signature mlx-c's samplers between two bounds share:
/// `f(res, a, b, shape, shape_len, dtype, key, stream)`.
type BoundedSampler = unsafe extern "C" fn(
    *mut sys::mlx_array,
    sys::mlx_array,
    sys::mlx_array,
    *const i32,
    usize,
    sys::mlx_dtype,
    sys::mlx_array,
    sys::mlx_stream,
) -> std::ffi::c_int;

/// Runs a [`BoundedSampler`]; `key` `None` uses MLX's global key.
fn sample_between(
    sampler: BoundedSampler,
    a: &Array,
    b: &Array,
    shape: &[i32],
    dtype: Dtype,
    key: Option<&Array>,
) -> Result<Array> {
    let key = crate::handles::opt_array(key);
    // SAFETY: valid handles (key may be null); `shape` outlives the call; mlx-c writes into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sampler(
            res,
            a.as_raw(),
            b.as_raw(),
            shape.as_ptr(),
            shape.len(),
            dtype.to_raw(),
            key,
            s,
        )
    })
}

crate::options! {
    /// The keyword arguments of [`uniform`], with Python's defaults (`low=0`, `high=1`,
    /// `dtype=float32`). `low` and `high` are scalars or arrays broadcastable to the sample shape.
    #[derive(Debug, Clone)]
    pub struct UniformOptions<'a> {
        /// The lower bound (inclusive): a scalar or an array.
        low: operand = Operand::Scalar(Scalar::Int(0)),
        /// The upper bound (exclusive): a scalar or an array.
        high: operand = Operand::Scalar(Scalar::Int(1)),
        /// The dtype of the samples.
        dtype: plain Dtype = Dtype::Float32,
    }
}

/// Uniform samples of `shape` in `[low, high)` (Python:
/// `mx.random.uniform(low=0, high=1, shape=[], dtype=float32, key=None)`).
///
/// Python's first two positional parameters, `low` and `high`, are in [`UniformOptions`]:
/// `mx.random.uniform(-1, 1, (2, 3), key=k)` is
/// `uniform(&[2, 3], UniformOptions::default().low(-1.0).high(1.0), &k)`.
///
/// ```
/// use mlx_rs::random::{self, UniformOptions};
/// let k = random::key(0)?;
/// let u = random::uniform(&[4], UniformOptions::default().low(-1.0).high(1.0), &k)?;
/// assert!(u.to_vec::<f32>()?.iter().all(|v| (-1.0..1.0).contains(v)));
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn uniform<'k>(
    shape: &[i32],
    options: UniformOptions<'_>,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let UniformOptions { low, high, dtype } = options;
    // Scalar bounds take the sample dtype, as in Python.
    let low = low.resolve(Some(dtype), None);
    let high = high.resolve(Some(dtype), None);
    sample_between(
        sys::mlx_random_uniform,
        &low,
        &high,
        shape,
        dtype,
        key.into(),
    )
}

/// Raw random bits: `width` bytes per element (1, 2 or 4, default 4) as uint8/uint16/uint32
/// (C++: `mx::random::bits(shape, width, key)`; Python uses it inside `split` and `uniform`).
pub fn bits<'k>(
    shape: &[i32],
    width: impl Into<Option<i32>>,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let width = width.into().unwrap_or(4);
    let key = crate::handles::opt_array(key.into());
    // SAFETY: `shape` outlives the call; `key` is valid or null; mlx-c writes into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_random_bits(res, shape.as_ptr(), shape.len(), width, key, s)
    })
}

/// Bernoulli samples with probability `p` (Python's default is `0.5`); `shape` defaults to
/// `p`'s shape (Python: `mx.random.bernoulli(p=0.5, shape=None, key=None)`).
pub fn bernoulli<'a, 'k>(
    p: impl IntoOperand<'a>,
    shape: Option<&[i32]>,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let p = p.into_operand().resolve(None, None);
    let shape = shape.unwrap_or_else(|| p.shape());
    let key = crate::handles::opt_array(key.into());
    // SAFETY: valid handles (key may be null); `shape` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_random_bernoulli(res, p.as_raw(), shape.as_ptr(), shape.len(), key, s)
    })
}

/// Samples one category index per distribution from unnormalized log-probabilities along
/// `axis` (`None`: -1) (Python: `mx.random.categorical(logits, axis=-1, key=None)`).
///
/// Python's mutually exclusive `shape=` and `num_samples=` are the overloads
/// [`categorical_shape`] and [`categorical_num_samples`].
///
/// ```
/// use mlx_rs::{random, Array};
/// let logits = Array::from_slice(&[0.0f32, 100.0, 0.0], &[1, 3])?;
/// let i = random::categorical(&logits, -1, &random::key(0)?)?;
/// assert_eq!(i.item::<usize>()?, 1);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn categorical<'k>(
    logits: &Array,
    axis: impl Into<Option<i32>>,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let axis = axis.into().unwrap_or(-1);
    let key = crate::handles::opt_array(key.into());
    // SAFETY: valid handles (key may be null).
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_random_categorical(res, logits.as_raw(), axis, key, s)
    })
}

/// [`categorical`] samples of the given output `shape` (Python:
/// `mx.random.categorical(logits, axis, shape=shape)`).
pub fn categorical_shape<'k>(
    logits: &Array,
    axis: impl Into<Option<i32>>,
    shape: &[i32],
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let axis = axis.into().unwrap_or(-1);
    let key = crate::handles::opt_array(key.into());
    // SAFETY: valid handles (key may be null); `shape` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_random_categorical_shape(
            res,
            logits.as_raw(),
            axis,
            shape.as_ptr(),
            shape.len(),
            key,
            s,
        )
    })
}

/// `num_samples` [`categorical`] samples per distribution (Python:
/// `mx.random.categorical(logits, axis, num_samples=n)`).
pub fn categorical_num_samples<'k>(
    logits: &Array,
    axis: impl Into<Option<i32>>,
    num_samples: i32,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let axis = axis.into().unwrap_or(-1);
    let key = crate::handles::opt_array(key.into());
    // SAFETY: valid handles (key may be null).
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_random_categorical_num_samples(res, logits.as_raw(), axis, num_samples, key, s)
    })
}

/// Samples from the standard Gumbel distribution
/// (Python: `mx.random.gumbel(shape=[], dtype=float32, key=None)`).
pub fn gumbel<'k>(
    shape: &[i32],
    dtype: impl Into<Option<Dtype>>,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let dtype = dtype.into().unwrap_or(Dtype::Float32);
    let key = crate::handles::opt_array(key.into());
    // SAFETY: `shape` outlives the call; `key` is valid or null; mlx-c writes into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_random_gumbel(res, shape.as_ptr(), shape.len(), dtype.to_raw(), key, s)
    })
}

crate::options! {
    /// The keyword arguments of [`laplace`], with Python's defaults (`dtype=float32`, `loc=0.0`,
    /// `scale=1.0`).
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct LaplaceOptions {
        /// The dtype of the samples.
        dtype: plain Dtype = Dtype::Float32,
        /// The location (mean).
        loc: plain f32 = 0.0,
        /// The scale.
        scale: plain f32 = 1.0,
    }
}

/// Samples of `shape` from a Laplace distribution (Python:
/// `mx.random.laplace(shape=[], dtype=float32, loc=0.0, scale=1.0, key=None)`).
pub fn laplace<'k>(
    shape: &[i32],
    options: LaplaceOptions,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let LaplaceOptions { dtype, loc, scale } = options;
    let key = crate::handles::opt_array(key.into());
    // SAFETY: `shape` outlives the call; `key` is valid or null; mlx-c writes into res.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_random_laplace(
            res,
            shape.as_ptr(),
            shape.len(),
            dtype.to_raw(),
            loc,
            scale,
            key,
            s,
        )
    })
}

/// Jointly normal samples with the given mean and covariance
/// (Python: `mx.random.multivariate_normal(mean, cov, shape=[], dtype=float32, key=None)`).
/// CPU only (it factors `cov` with an SVD): see [`crate::linalg`].
pub fn multivariate_normal<'k>(
    mean: &Array,
    cov: &Array,
    shape: &[i32],
    dtype: impl Into<Option<Dtype>>,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let dtype = dtype.into().unwrap_or(Dtype::Float32);
    sample_between(
        sys::mlx_random_multivariate_normal,
        mean,
        cov,
        shape,
        dtype,
        key.into(),
    )
}

/// What [`permutation`] permutes: `arange(n)` or an array's entries (Python: `x: int | array`).
#[derive(Debug)]
pub enum Permute<'a> {
    /// A random permutation of `0..n`.
    Range(i32),
    /// The entries of the array along the given axis.
    Array(&'a Array),
}

impl From<i32> for Permute<'_> {
    fn from(n: i32) -> Self {
        Permute::Range(n)
    }
}

impl<'a> From<&'a Array> for Permute<'a> {
    fn from(a: &'a Array) -> Self {
        Permute::Array(a)
    }
}

/// A random permutation of `arange(x)` (integer `x`) or of `x`'s entries along `axis`
/// (default 0) (Python: `mx.random.permutation(x, axis=0, key=None)`).
pub fn permutation<'a, 'k>(
    x: impl Into<Permute<'a>>,
    axis: impl Into<Option<i32>>,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let axis = axis.into().unwrap_or(0);
    let key = crate::handles::opt_array(key.into());
    match x.into() {
        // SAFETY: `key` is valid or null; mlx-c writes into res.
        Permute::Range(n) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_random_permutation_arange(res, n, key, s)
        }),
        // SAFETY: valid handles (key may be null); mlx-c writes into res.
        Permute::Array(a) => Array::try_from_stream_op(|res, s| unsafe {
            sys::mlx_random_permutation(res, a.as_raw(), axis, key, s)
        }),
    }
}

/// Random integers in `[low, high)` (Python:
/// `mx.random.randint(low, high, shape=[], dtype=int32, key=None)`).
pub fn randint<'a, 'k>(
    low: impl IntoOperand<'a>,
    high: impl IntoOperand<'a>,
    shape: &[i32],
    dtype: impl Into<Option<Dtype>>,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let dtype = dtype.into().unwrap_or(Dtype::Int32);
    let low = low.into_operand().resolve(None, None);
    let high = high.into_operand().resolve(None, None);
    sample_between(
        sys::mlx_random_randint,
        &low,
        &high,
        shape,
        dtype,
        key.into(),
    )
}

/// Normal samples truncated to `[lower, upper]`; `shape` defaults to the broadcast shape of
/// the bounds (Python:
/// `mx.random.truncated_normal(lower, upper, shape=None, dtype=float32, key=None)`).
pub fn truncated_normal<'a, 'k>(
    lower: impl IntoOperand<'a>,
    upper: impl IntoOperand<'a>,
    shape: Option<&[i32]>,
    dtype: impl Into<Option<Dtype>>,
    key: impl Into<Option<&'k Array>>,
) -> Result<Array> {
    let dtype = dtype.into().unwrap_or(Dtype::Float32);
    let lower = lower.into_operand().resolve(None, None);
    let upper = upper.into_operand().resolve(None, None);
    let shape = match shape {
        Some(shape) => shape.to_vec(),
        None => broadcast_shape(lower.shape(), upper.shape())?,
    };
    sample_between(
        sys::mlx_random_truncated_normal,
        &lower,
        &upper,
        &shape,
        dtype,
        key.into(),
    )
}

/// NumPy broadcasting of two shapes, for shapes that Python derives from the arguments.
fn broadcast_shape(a: &[i32], b: &[i32]) -> Result<Vec<i32>> {
    let n = a.len().max(b.len());
    let dim = |s: &[i32], i: usize| {
        if i < n - s.len() {
            1
        } else {
            s[i - (n - s.len())]
        }
    };
    (0..n)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            _ => Err(crate::Error::invalid(format!(
                "Shapes {a:?} and {b:?} cannot be broadcast."
            ))),
        })
        .collect()
}
