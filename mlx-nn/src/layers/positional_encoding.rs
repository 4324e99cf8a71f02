//! Positional encodings without parameters (Python: `mlx.nn.layers.positional_encoding`):
//! [`RoPE`], [`SinusoidalPositionalEncoding`] and [`ALiBi`].
//!
//! The constants Python derives from its floats (log frequencies, `2π`, the default scale,
//! ALiBi's slopes) are computed in f64 as Python computes them and rounded to f32 once, so
//! the results are Python's bit for bit.

use mlx_rs::fast::{self, RopeOffset};
use mlx_rs::{ops, Array, Dtype, Error, Result};
use mlx_tree::TreeNode;

use crate::Forward;

// ---------------------------------------------------------------------------------------------
// RoPE

/// Rotary positional encoding (Python: `nn.RoPE(dims, traditional=False, base=10000,
/// scale=1.0)`); no parameters.
#[derive(Debug, Clone, TreeNode)]
pub struct RoPE {
    #[tree(static)]
    pub dims: i32,
    #[tree(static)]
    pub traditional: bool,
    #[tree(static)]
    pub base: f32,
    #[tree(static)]
    pub scale: f32,
}

impl RoPE {
    /// Python's defaults (`traditional=False`, `base=10000`, `scale=1.0`); change them with
    /// the builder methods: `RoPE::new(64).traditional(true).base(500_000.0)`.
    pub fn new(dims: i32) -> RoPE {
        RoPE {
            dims,
            traditional: false,
            base: 10000.0,
            scale: 1.0,
        }
    }

    /// Rotates consecutive pairs instead of the two halves (Python: `traditional=False`).
    pub fn traditional(mut self, traditional: bool) -> Self {
        self.traditional = traditional;
        self
    }

    /// The base of the frequencies (Python: `base=10000`).
    pub fn base(mut self, base: f32) -> Self {
        self.base = base;
        self
    }

    /// The scale of the positions (Python: `scale=1.0`).
    pub fn scale(mut self, scale: f32) -> Self {
        self.scale = scale;
        self
    }

    /// Rotates `x` (`[..., length, dims]`) for positions starting at `offset` (an integer, or
    /// an array so a compiled decode step does not retrace as the position moves).
    pub fn forward<'o>(&self, x: &Array, offset: impl Into<RopeOffset<'o>>) -> Result<Array> {
        fast::rope(
            x,
            self.dims,
            self.traditional,
            Some(self.base),
            self.scale,
            offset,
            None,
        )
    }
}

// ---------------------------------------------------------------------------------------------
// SinusoidalPositionalEncoding

/// Sinusoidal positional encoding (Python: `nn.SinusoidalPositionalEncoding(dims,
/// min_freq=0.0001, max_freq=1, scale=None, cos_first=False, full_turns=False)`): each value
/// `x` becomes `scale * [sin(x σ), cos(x σ)]` over `dims / 2` frequencies `σ` spaced
/// geometrically from `max_freq` down to `min_freq`, a new last axis of `dims`.
///
/// The frequencies are not a parameter (Python keeps them in the private `_sigmas`): the
/// layer keeps its configuration and computes them in [`forward`](Forward::forward) with the
/// ops Python runs at construction, so they survive every rebuild of the tree (`tree_map`,
/// transforms) and are never saved.
///
/// ```
/// use mlx_nn::{Forward, Module, SinusoidalPositionalEncoding};
/// use mlx_rs::ops;
/// // nn.SinusoidalPositionalEncoding(8, cos_first=True)
/// let pe = SinusoidalPositionalEncoding::new(8)?.cos_first(true);
/// assert_eq!(pe.num_parameters()?, 0);
/// assert_eq!(pe.scale, 0.5); // Python's default, sqrt(2 / dims)
/// let positions = ops::arange(0.0f32, 5.0, None, None)?;
/// assert_eq!(pe.forward(&positions)?.shape(), &[5, 8]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct SinusoidalPositionalEncoding {
    #[tree(static)]
    pub dims: i32,
    /// The lowest frequency (a Python float).
    #[tree(static)]
    pub min_freq: f64,
    /// The highest frequency (a Python float).
    #[tree(static)]
    pub max_freq: f64,
    /// The factor the embeddings are multiplied by (a Python float; not applied when 1).
    #[tree(static)]
    pub scale: f64,
    /// `[cos, sin]` instead of `[sin, cos]`.
    #[tree(static)]
    pub cos_first: bool,
    /// Frequencies multiplied by `2π`.
    #[tree(static)]
    pub full_turns: bool,
}

impl SinusoidalPositionalEncoding {
    /// Python's defaults (`min_freq=0.0001`, `max_freq=1`, `scale=sqrt(2 / dims)`,
    /// `cos_first=False`, `full_turns=False`); change them with the builder methods. Errors,
    /// as Python, unless `dims` is positive and even.
    pub fn new(dims: i32) -> Result<SinusoidalPositionalEncoding> {
        if dims <= 0 || dims % 2 != 0 {
            return Err(Error::InvalidArgument(format!(
                "[SinusoidalPositionalEncoding] dims must be positive and even but got {dims}."
            )));
        }
        Ok(SinusoidalPositionalEncoding {
            dims,
            min_freq: 0.0001,
            max_freq: 1.0,
            // Python's `(2 / dims) ** 0.5`, in f64.
            scale: (2.0 / f64::from(dims)).powf(0.5),
            cos_first: false,
            full_turns: false,
        })
    }

    /// The lowest frequency (Python: `min_freq=0.0001`); must be positive.
    pub fn min_freq(mut self, min_freq: f64) -> Self {
        self.min_freq = min_freq;
        self
    }

    /// The highest frequency (Python: `max_freq=1`); must be positive.
    pub fn max_freq(mut self, max_freq: f64) -> Self {
        self.max_freq = max_freq;
        self
    }

    /// The factor the embeddings are multiplied by (Python: `scale=None`, `sqrt(2 / dims)`).
    pub fn scale(mut self, scale: f64) -> Self {
        self.scale = scale;
        self
    }

    /// `[cos, sin]` instead of `[sin, cos]` (Python: `cos_first=False`).
    pub fn cos_first(mut self, cos_first: bool) -> Self {
        self.cos_first = cos_first;
        self
    }

    /// Multiplies the frequencies by `2π` (Python: `full_turns=False`).
    pub fn full_turns(mut self, full_turns: bool) -> Self {
        self.full_turns = full_turns;
        self
    }

    /// The `dims / 2` frequencies, float32: Python's private `_sigmas`, computed with the ops
    /// Python's constructor runs. Errors where Python's `math.log` does: a frequency that is
    /// not positive.
    pub fn sigmas(&self) -> Result<Array> {
        for (name, f) in [("min_freq", self.min_freq), ("max_freq", self.max_freq)] {
            if f <= 0.0 {
                return Err(Error::InvalidArgument(format!(
                    "[SinusoidalPositionalEncoding] {name} must be positive but got {f}"
                )));
            }
        }
        let half = self.dims / 2;
        // Python divides by `dims // 2 - 1`, which is zero for two dims.
        let one_zero = if half == 1 {
            Array::from_slice(&[1.0f32], &[1])?
        } else {
            let positions = ops::arange(0, half, None, None)?;
            ops::subtract(1i32, &ops::divide(&positions, half - 1)?)?
        };
        let (min_freq, max_freq) = (self.min_freq.ln(), self.max_freq.ln());
        let log_sigmas = ops::add(
            &ops::multiply(&one_zero, (max_freq - min_freq) as f32)?,
            min_freq as f32,
        )?;
        let sigmas = ops::exp(&log_sigmas)?;
        if self.full_turns {
            ops::multiply(&sigmas, (2.0 * std::f64::consts::PI) as f32)
        } else {
            Ok(sigmas)
        }
    }
}

impl Forward for SinusoidalPositionalEncoding {
    /// The encodings of `x` (any shape; usually positions), with a new last axis of `dims`
    /// (Python: `pe(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        let y = ops::multiply(&ops::expand_dims(x, -1)?, &self.sigmas()?)?;
        let (cosy, siny) = (ops::cos(&y)?, ops::sin(&y)?);
        let y = if self.cos_first {
            ops::concatenate([&cosy, &siny], -1)?
        } else {
            ops::concatenate([&siny, &cosy], -1)?
        };
        if self.scale != 1.0 {
            ops::multiply(&y, self.scale as f32)
        } else {
            Ok(y)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ALiBi

/// Attention with linear biases (Python: `nn.ALiBi()`): adds `-slope[h] * |i - j|` to the
/// attention scores of head `h`, query position `i` and key position `j`. No parameters.
///
/// ```
/// use mlx_nn::ALiBi;
/// use mlx_rs::ops;
/// let scores = ops::zeros(&[1, 8, 3, 3], None)?; // [B, heads, L, S]
/// let biased = ALiBi.forward(&scores, None, None)?;
/// // Head 0's slope is 1/2 with 8 heads: one position apart costs 0.5.
/// assert_eq!(biased.index((0, 0, 0))?.to_vec::<f32>()?, [0.0, -0.5, -1.0]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, TreeNode)]
pub struct ALiBi;

/// Python's `get_slopes(n)` in f64: geometric from `2^(-8 / n)` for a power of two `n`, else
/// those of the power below, then every other slope of the power above.
fn alibi_slopes(n: i32) -> Vec<f64> {
    let nf = f64::from(n);
    if n > 0 && (n & (n - 1)) == 0 {
        let start = 2f64.powf(-(2f64.powf(-(nf.log2() - 3.0))));
        // Python's `start**i` with an int `i` is the float power, not repeated products.
        (0..n).map(|i| start * start.powf(f64::from(i))).collect()
    } else {
        let closest = 1i32 << nf.log2().floor() as u32;
        let mut slopes = alibi_slopes(closest);
        slopes.extend(
            alibi_slopes(2 * closest)
                .into_iter()
                .step_by(2)
                .take((n - closest) as usize),
        );
        slopes
    }
}

impl ALiBi {
    /// The slopes, `[num_heads, 1, 1]` of `dtype` (Python:
    /// `nn.ALiBi.create_alibi_slope(num_heads, dtype)`).
    pub fn create_alibi_slope(num_heads: i32, dtype: Dtype) -> Result<Array> {
        if num_heads <= 0 {
            return Err(Error::InvalidArgument(format!(
                "[ALiBi] the number of heads must be positive, got {num_heads}"
            )));
        }
        let slopes = alibi_slopes(num_heads);
        // Python's `mx.array(list_of_floats, dtype)` reads the floats as float32 first (as
        // float64 only for float64), then converts.
        let out = if dtype == Dtype::Float64 {
            Array::from_slice(&slopes, &[num_heads])?
        } else {
            let as_f32: Vec<f32> = slopes.iter().map(|&s| s as f32).collect();
            Array::from_slice(&as_f32, &[num_heads])?.astype(dtype)?
        };
        ops::expand_dims(&out, [-1, -2])
    }

    /// The additive bias, `[1, num_heads, q_sequence_length - offset, k_sequence_length]` of
    /// `dtype` (`None`: float32) (Python: `nn.ALiBi.create_alibi_matrix(q_sequence_length,
    /// k_sequence_length, num_heads, offset, dtype=mx.float32)`).
    pub fn create_alibi_matrix(
        q_sequence_length: i32,
        k_sequence_length: i32,
        num_heads: i32,
        offset: i32,
        dtype: impl Into<Option<Dtype>>,
    ) -> Result<Array> {
        let dtype = dtype.into().unwrap_or(Dtype::Float32);
        let x1 = ops::arange(offset, q_sequence_length, None, None)?;
        let x2 = ops::arange(0, k_sequence_length, None, None)?;
        let distance = ops::subtract(&x1.reshape(&[-1, 1])?, &x2.reshape(&[1, -1])?)?;
        let distance = ops::negative(&ops::abs(&ops::expand_dims(&distance, [0, 1])?)?)?;
        let slope = Self::create_alibi_slope(num_heads, dtype)?;
        ops::multiply(&distance, &slope)?.astype(dtype)
    }

    /// Adds the bias to `attention_scores` (`[B, num_heads, L, S]`) for queries at positions
    /// `offset..offset + L` (`None`: 0), plus `mask` if given (Python: `alibi(attention_scores,
    /// offset=0, mask=None)`).
    pub fn forward<'m>(
        &self,
        attention_scores: &Array,
        offset: impl Into<Option<i32>>,
        mask: impl Into<Option<&'m Array>>,
    ) -> Result<Array> {
        // Python reads the head count from axis 1 and broadcasts a `[1, heads, L, S]` bias:
        // only four axes give a meaningful result.
        let &[_, num_heads, q_len, k_len] = attention_scores.shape() else {
            return Err(Error::InvalidArgument(format!(
                "[ALiBi] expects attention scores of shape [B, num_heads, L, S], got {:?}",
                attention_scores.shape()
            )));
        };
        let offset = offset.into().unwrap_or(0);
        let mut alibi_mask = Self::create_alibi_matrix(
            q_len + offset,
            k_len,
            num_heads,
            offset,
            attention_scores.dtype(),
        )?;
        if let Some(mask) = mask.into() {
            alibi_mask = ops::add(&alibi_mask, mask)?;
        }
        ops::add(attention_scores, &alibi_mask)
    }
}
