//! The feed-forward (channel-mixing) layers.

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::checkpoint::Checkpoint;

/// Python: `x * sigmoid(x)` (`nn.silu`).
pub fn silu(x: &Array) -> Result<Array> {
    ops::multiply(x, &ops::sigmoid(x)?)
}

/// Python: `swiglu(gate, x)`: `silu(gate) * x` (mlx_lm compiles it; on the same libmlx the
/// separate ops give the same values).
pub fn swiglu(gate: &Array, x: &Array) -> Result<Array> {
    ops::multiply(&silu(gate)?, x)
}

/// Python: `nn.relu2`, `square(maximum(x, 0))` (the 0 takes x's dtype).
pub fn relu2(x: &Array) -> Result<Array> {
    ops::square(&ops::maximum(x, &ops::zeros(&[], x.dtype())?)?)
}

/// The activation of an MLP's gate (or of its one hidden layer), as mlx_lm's files call it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, StaticData)]
pub enum Activation {
    /// `nn.silu` (in a gated MLP: `swiglu`).
    #[default]
    Silu,
    /// `nn.gelu`: the exact, erf-based GELU.
    Gelu,
    /// `nn.gelu_approx`: the tanh approximation (transformers' `gelu_pytorch_tanh`,
    /// `gelu_new`).
    GeluApprox,
}

impl Activation {
    pub fn apply(self, x: &Array) -> Result<Array> {
        match self {
            Activation::Silu => silu(x),
            Activation::Gelu => mlx_nn::gelu(x),
            Activation::GeluApprox => mlx_nn::gelu_approx(x),
        }
    }

    /// `act(gate) * x`, as mlx_lm writes each family's gated MLP (`swiglu` for silu).
    pub fn gated(self, gate: &Array, x: &Array) -> Result<Array> {
        match self {
            Activation::Silu => swiglu(gate, x),
            act => ops::multiply(&act.apply(gate)?, x),
        }
    }
}

/// Python: `MLP` of llama / qwen2 / qwen3 / Qwen3.5 (SwiGLU,
/// `down_proj(silu(gate_proj(x)) * up_proj(x))`) and of the Gemmas (GeGLU: another
/// [`Activation`]).
#[derive(Debug, Clone, TreeNode)]
pub struct Mlp {
    pub gate_proj: MaybeQuantizedLinear,
    pub down_proj: MaybeQuantizedLinear,
    pub up_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub activation: Activation,
}

impl Mlp {
    /// Takes the layer's tensors under `path`: `dim` features in and out, `hidden` between;
    /// SwiGLU.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        dim: i32,
        hidden: i32,
        bias: bool,
    ) -> crate::Result<Mlp> {
        Ok(Mlp {
            gate_proj: ck.linear(&format!("{path}.gate_proj"), dim, hidden, bias)?,
            down_proj: ck.linear(&format!("{path}.down_proj"), hidden, dim, bias)?,
            up_proj: ck.linear(&format!("{path}.up_proj"), dim, hidden, bias)?,
            activation: Activation::Silu,
        })
    }

    /// The same MLP with another gate activation.
    pub fn with_activation(self, activation: Activation) -> Mlp {
        Mlp { activation, ..self }
    }
}

impl Forward for Mlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        let gate = self.gate_proj.forward(x)?;
        let hidden = self.activation.gated(&gate, &self.up_proj.forward(x)?)?;
        self.down_proj.forward(&hidden)
    }
}
