//! Norms beyond `mlx_nn`'s: the gated RMSNorm of linear-attention outputs.

use mlx_rs::{fast, ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::mlp::silu;

/// Python: `Qwen3NextRMSNormGated`.
#[derive(Debug, Clone, TreeNode)]
pub struct RmsNormGated {
    pub weight: Array,
    #[tree(static)]
    pub eps: f32,
}

impl RmsNormGated {
    /// `silu(gate) * rms_norm(x)` in float32, cast back to `x`'s dtype (Python:
    /// `precise_swiglu`).
    pub fn forward(&self, x: &Array, gate: &Array) -> Result<Array> {
        let normed = fast::rms_norm(x, Some(&self.weight), self.eps)?;
        let gate = silu(&gate.astype(Dtype::Float32)?)?;
        ops::multiply(&gate, &normed.astype(Dtype::Float32)?)?.astype(x.dtype())
    }
}
