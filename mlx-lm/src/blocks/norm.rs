//! Norms beyond `mlx_nn`'s: the gated RMSNorm of linear-attention outputs, and the Gemma
//! families' RMSNorm whose weight is an offset from one.

use mlx_nn::Forward;
use mlx_rs::{fast, ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::mlp::silu;
use crate::checkpoint::Checkpoint;

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

/// Python: the Gemma families' `RMSNorm` (gemma, gemma2, gemma3_text, recurrent_gemma):
/// `rms_norm(x, 1 + weight, eps)`, the `1 + weight` computed in the weight's dtype (rounded
/// to bfloat16 in a bfloat16 model, as mlx_lm; transformers adds in float32).
#[derive(Debug, Clone, TreeNode)]
pub struct GemmaRmsNorm {
    pub weight: Array,
    #[tree(static)]
    pub eps: f32,
}

impl GemmaRmsNorm {
    pub fn load(ck: &mut Checkpoint, path: &str, dims: i32, eps: f32) -> crate::Result<Self> {
        Ok(GemmaRmsNorm {
            weight: ck.array(&format!("{path}.weight"), &[dims])?,
            eps,
        })
    }
}

impl Forward for GemmaRmsNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        fast::rms_norm(x, Some(&ops::add(1.0f32, &self.weight)?), self.eps)
    }
}
