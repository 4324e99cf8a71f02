//! Initializers (Python: `mlx.nn.init`): each returns a new array of `a`'s shape, drawn from
//! MLX's global random state like Python's (Python returns a closure; here the dtype and the
//! array are both arguments).

use mlx_rs::{ops, random, Array, Dtype, Error, Result};

fn fans(a: &Array) -> Result<(f32, f32)> {
    let shape = a.shape();
    if shape.len() < 2 {
        return Err(Error::InvalidArgument(format!(
            "Glorot / He initialization requires at least 2 dimensional input but input with {} dimensions.",
            shape.len()
        )));
    }
    let receptive: i32 = shape[1..shape.len() - 1].iter().product();
    Ok((
        (shape[shape.len() - 1] * receptive) as f32,
        (shape[0] * receptive) as f32,
    ))
}

/// Every entry `value` (Python: `nn.init.constant(value, dtype)(a)`).
pub fn constant(a: &Array, value: f32, dtype: impl Into<Option<Dtype>>) -> Result<Array> {
    ops::full(a.shape(), value, dtype.into().unwrap_or(Dtype::Float32))
}

/// Normal samples (Python: `nn.init.normal(mean=0, std=1, dtype)(a)`).
pub fn normal(a: &Array, mean: f32, std: f32, dtype: impl Into<Option<Dtype>>) -> Result<Array> {
    random::normal(a.shape(), dtype.into(), mean, std, None)
}

/// Uniform samples in `[low, high)` (Python: `nn.init.uniform(low=0, high=1, dtype)(a)`).
pub fn uniform(a: &Array, low: f32, high: f32, dtype: impl Into<Option<Dtype>>) -> Result<Array> {
    random::uniform(low, high, a.shape(), dtype.into(), None)
}

/// Glorot/Xavier normal: std `gain * sqrt(2 / (fan_in + fan_out))` (Python:
/// `nn.init.glorot_normal(dtype)(a, gain=1.0)`).
pub fn glorot_normal(a: &Array, gain: f32, dtype: impl Into<Option<Dtype>>) -> Result<Array> {
    let (fi, fo) = fans(a)?;
    random::normal(
        a.shape(),
        dtype.into(),
        0.0,
        gain * (2.0 / (fi + fo)).sqrt(),
        None,
    )
}

/// Glorot/Xavier uniform: limit `gain * sqrt(6 / (fan_in + fan_out))`.
pub fn glorot_uniform(a: &Array, gain: f32, dtype: impl Into<Option<Dtype>>) -> Result<Array> {
    let (fi, fo) = fans(a)?;
    let limit = gain * (6.0 / (fi + fo)).sqrt();
    random::uniform(-limit, limit, a.shape(), dtype.into(), None)
}

/// He/Kaiming normal with `fan_in` (`fan_out = false`) or `fan_out`: std `gain / sqrt(fan)`.
pub fn he_normal(
    a: &Array,
    fan_out: bool,
    gain: f32,
    dtype: impl Into<Option<Dtype>>,
) -> Result<Array> {
    let (fi, fo) = fans(a)?;
    let fan = if fan_out { fo } else { fi };
    random::normal(a.shape(), dtype.into(), 0.0, gain / fan.sqrt(), None)
}

/// He/Kaiming uniform: limit `gain * sqrt(3 / fan)`.
pub fn he_uniform(
    a: &Array,
    fan_out: bool,
    gain: f32,
    dtype: impl Into<Option<Dtype>>,
) -> Result<Array> {
    let (fi, fo) = fans(a)?;
    let fan = if fan_out { fo } else { fi };
    let limit = gain * (3.0 / fan).sqrt();
    random::uniform(-limit, limit, a.shape(), dtype.into(), None)
}
