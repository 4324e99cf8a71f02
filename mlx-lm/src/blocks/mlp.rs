//! The feed-forward (channel-mixing) layers.

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Result};
use mlx_tree::TreeNode;

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

/// Python: `MLP` of llama / qwen2 / qwen3 / Qwen3.5: SwiGLU,
/// `down_proj(silu(gate_proj(x)) * up_proj(x))`.
#[derive(Debug, Clone, TreeNode)]
pub struct Mlp {
    pub gate_proj: MaybeQuantizedLinear,
    pub down_proj: MaybeQuantizedLinear,
    pub up_proj: MaybeQuantizedLinear,
}

impl Mlp {
    /// Takes the layer's tensors under `path`: `dim` features in and out, `hidden` between.
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
        })
    }
}

impl Forward for Mlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        let hidden = swiglu(&self.gate_proj.forward(x)?, &self.up_proj.forward(x)?)?;
        self.down_proj.forward(&hidden)
    }
}
