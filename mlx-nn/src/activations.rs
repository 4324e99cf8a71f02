//! Activation functions and their module forms (Python: `mlx.nn.layers.activations`). Each
//! function computes exactly Python's formula, so results match `mlx.nn` bit for bit up to
//! MLX's own op fusion.

use mlx_rs::ops;
use mlx_rs::{Array, Result};
use mlx_tree::TreeNode;

use crate::Forward;

/// `1 / (1 + exp(-x))` (Python: `nn.sigmoid`).
pub fn sigmoid(x: &Array) -> Result<Array> {
    ops::sigmoid(x)
}

/// `max(x, 0)` (Python: `nn.relu`).
pub fn relu(x: &Array) -> Result<Array> {
    ops::maximum(x, 0.0)
}

/// `min(max(x, 0), 6)` (Python: `nn.relu6`).
pub fn relu6(x: &Array) -> Result<Array> {
    ops::minimum(&ops::maximum(x, 0.0)?, 6.0)
}

/// `max(negative_slope * x, x)`; `negative_slope` defaults to 0.01 (Python: `nn.leaky_relu`).
pub fn leaky_relu(x: &Array, negative_slope: impl Into<Option<f32>>) -> Result<Array> {
    ops::maximum(&(x * negative_slope.into().unwrap_or(0.01)), x)
}

/// `x - logsumexp(x, axis)`; `axis` defaults to -1 (Python: `nn.log_softmax`).
pub fn log_softmax(x: &Array, axis: impl Into<Option<i32>>) -> Result<Array> {
    let axis = axis.into().unwrap_or(-1);
    Ok(x - ops::logsumexp(x, axis, true)?)
}

/// `softmax(x, axis)`; `axis` defaults to -1 (Python: `nn.softmax`).
pub fn softmax(x: &Array, axis: impl Into<Option<i32>>) -> Result<Array> {
    ops::softmax(x, axis.into().unwrap_or(-1), None)
}

/// `x if x > 0 else alpha * (exp(x) - 1)`; `alpha` defaults to 1 (Python: `nn.elu`).
pub fn elu(x: &Array, alpha: impl Into<Option<f32>>) -> Result<Array> {
    let alpha = alpha.into().unwrap_or(1.0);
    ops::where_(&ops::greater(x, 0.0)?, x, &((ops::exp(x)? - 1.0) * alpha))
}

/// `log(1 + exp(x))` (Python: `nn.softplus`).
pub fn softplus(x: &Array) -> Result<Array> {
    ops::logaddexp(x, 0.0)
}

/// `x / (1 + |x|)` (Python: `nn.softsign`).
pub fn softsign(x: &Array) -> Result<Array> {
    ops::divide(x, &(ops::abs(x)? + 1.0))
}

/// `x * sigmoid(x)` (Python: `nn.silu`).
pub fn silu(x: &Array) -> Result<Array> {
    Ok(x * ops::sigmoid(x)?)
}

/// `-softplus(-x)` (Python: `nn.log_sigmoid`).
pub fn log_sigmoid(x: &Array) -> Result<Array> {
    Ok(-softplus(&(-x))?)
}

/// The exact GELU, `x * (1 + erf(x / sqrt(2))) / 2` (Python: `nn.gelu`).
pub fn gelu(x: &Array) -> Result<Array> {
    Ok(x * (ops::erf(&(x / std::f32::consts::SQRT_2))? + 1.0) / 2.0)
}

/// The tanh approximation of GELU (Python: `nn.gelu_approx`).
pub fn gelu_approx(x: &Array) -> Result<Array> {
    // Python's math.sqrt(2 / math.pi): f64, rounded once.
    let c = (2.0 / std::f64::consts::PI).sqrt() as f32;
    let inner = (x + &(ops::power(x, 3.0)? * 0.044715)) * c;
    Ok((x * 0.5) * (ops::tanh(&inner)? + 1.0))
}

/// The sigmoid approximation of GELU, `x * sigmoid(1.702 x)` (Python: `nn.gelu_fast_approx`).
pub fn gelu_fast_approx(x: &Array) -> Result<Array> {
    Ok(x * ops::sigmoid(&(x * 1.702))?)
}

/// `x * tanh(softplus(x))` (Python: `nn.mish`).
pub fn mish(x: &Array) -> Result<Array> {
    Ok(x * ops::tanh(&softplus(x)?)?)
}

/// `tanh(x)` (Python: `nn.tanh`).
pub fn tanh(x: &Array) -> Result<Array> {
    ops::tanh(x)
}

/// `elu(x, 1.67326) * 1.0507` (Python: `nn.selu`).
pub fn selu(x: &Array) -> Result<Array> {
    Ok(elu(x, 1.67326)? * 1.0507)
}

/// `a * sigmoid(b)` for the two halves of `x` along `axis` (default -1) (Python: `nn.glu`).
pub fn glu(x: &Array, axis: impl Into<Option<i32>>) -> Result<Array> {
    let parts = x.split(2, axis.into().unwrap_or(-1))?;
    Ok(&parts[0] * ops::sigmoid(&parts[1])?)
}

/// `min(max(x, min_val), max_val)`, defaults -1 and 1 (Python: `nn.hard_tanh`).
pub fn hard_tanh(
    x: &Array,
    min_val: impl Into<Option<f32>>,
    max_val: impl Into<Option<f32>>,
) -> Result<Array> {
    let lo = min_val.into().unwrap_or(-1.0);
    let hi = max_val.into().unwrap_or(1.0);
    ops::minimum(&ops::maximum(x, lo)?, hi)
}

macro_rules! activation_modules {
    ($( $(#[$doc:meta])* $name:ident => $f:expr; )+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, TreeNode)]
        pub struct $name;

        impl Forward for $name {
            fn forward(&self, x: &Array) -> Result<Array> {
                ($f)(x)
            }
        }
    )+};
}

activation_modules! {
    /// [`relu`] as a layer (Python: `nn.ReLU()`).
    ReLU => relu;
    /// [`relu6`] as a layer (Python: `nn.ReLU6()`).
    ReLU6 => relu6;
    /// [`silu`] as a layer (Python: `nn.SiLU()`).
    SiLU => silu;
    /// [`sigmoid`] as a layer (Python: `nn.Sigmoid()`).
    Sigmoid => sigmoid;
    /// [`tanh`] as a layer (Python: `nn.Tanh()`).
    Tanh => tanh;
    /// [`softplus`] as a layer (Python: `nn.Softplus()`).
    Softplus => softplus;
    /// [`mish`] as a layer (Python: `nn.Mish()`).
    Mish => mish;
    /// [`log_sigmoid`] as a layer (Python: `nn.LogSigmoid()`).
    LogSigmoid => log_sigmoid;
    /// [`selu`] as a layer (Python: `nn.SELU()`).
    SELU => selu;
}

/// Which GELU formula [`GELU`] uses (Python: `nn.GELU(approx="none" | "precise" | "tanh" |
/// "fast")`; `"precise"` and `"tanh"` are the same formula).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, mlx_tree::StaticData)]
pub enum GeluApprox {
    /// [`gelu`].
    #[default]
    None,
    /// [`gelu_approx`].
    Tanh,
    /// [`gelu_fast_approx`].
    Fast,
}

/// GELU as a layer (Python: `nn.GELU(approx="none")`).
#[derive(Debug, Clone, Copy, Default, TreeNode)]
pub struct GELU {
    #[tree(static)]
    pub approx: GeluApprox,
}

impl Forward for GELU {
    fn forward(&self, x: &Array) -> Result<Array> {
        match self.approx {
            GeluApprox::None => gelu(x),
            GeluApprox::Tanh => gelu_approx(x),
            GeluApprox::Fast => gelu_fast_approx(x),
        }
    }
}
