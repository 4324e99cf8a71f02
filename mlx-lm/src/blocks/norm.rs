//! Norms beyond `mlx_nn`'s: the gated RMSNorm of linear-attention outputs, and the Gemma
//! families' RMSNorm whose weight is an offset from one.

use mlx_nn::Frozen;
use mlx_nn::{Forward, LayerNorm};
use mlx_rs::{fast, ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::mlp::silu;
use crate::blocks::rows::{heads, heads_first, Rows};
use crate::checkpoint::Checkpoint;

/// Python: `Qwen3NextRMSNormGated`.
#[derive(Debug, Clone, TreeNode)]
pub struct RmsNormGated {
    pub weight: Array,
    #[tree(static)]
    pub eps: f32,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
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
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl GemmaRmsNorm {
    pub fn load(ck: &mut Checkpoint, path: &str, dims: i32, eps: f32) -> crate::Result<Self> {
        Ok(GemmaRmsNorm {
            frozen: Frozen::default(),
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

/// Python: stablelm's `LayerNormPerHead`: one bias-free LayerNorm per head (parameters
/// `norms.{i}.weight`), applied to `x` `[..., heads, head_dim]` as `stack(weights) *
/// layer_norm(x)` (the weight multiplied after the plain norm, not fused into it).
#[derive(Debug, Clone, TreeNode)]
pub struct PerHeadLayerNorm {
    pub norms: Vec<LayerNorm>,
    #[tree(static)]
    pub eps: f32,
}

/// A norm of each query and key head that a checkpoint holds: `heads` norms of `head_dim`
/// features under `path`.
pub trait LoadHeadNorm: Sized {
    fn load(
        ck: &mut Checkpoint,
        path: &str,
        heads: i32,
        head_dim: i32,
        eps: f32,
    ) -> crate::Result<Self>;
}

/// Its `heads` norms sit under `path.norms`.
impl LoadHeadNorm for PerHeadLayerNorm {
    fn load(
        ck: &mut Checkpoint,
        path: &str,
        heads: i32,
        head_dim: i32,
        eps: f32,
    ) -> crate::Result<Self> {
        let norms = (0..heads)
            .map(|i| ck.layer_norm(&format!("{path}.norms.{i}"), head_dim, eps, false))
            .collect::<crate::Result<Vec<_>>>()?;
        Ok(PerHeadLayerNorm { norms, eps })
    }
}

impl Forward for PerHeadLayerNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        let weights = self
            .norms
            .iter()
            .map(|n| {
                n.weight.as_ref().ok_or_else(|| {
                    mlx_rs::Error::InvalidArgument("a per-head norm without its weight".into())
                })
            })
            .collect::<Result<Vec<&Array>>>()?;
        let w = ops::stack(weights, 0)?;
        ops::multiply(&w, &fast::layer_norm(x, None, None, self.eps)?)
    }
}

/// Python: cohere's `LayerNorm2D`: one weight `[heads, head_dim]` applied to `x` `[...,
/// heads, head_dim]` as `weight * layer_norm(x)` (the per-head norm of Command-R's queries
/// and keys; transformers' `CohereLayerNorm` of shape `(heads, head_dim)`).
#[derive(Debug, Clone, TreeNode)]
pub struct LayerNorm2D {
    pub weight: Array,
    #[tree(static)]
    pub eps: f32,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl LoadHeadNorm for LayerNorm2D {
    fn load(
        ck: &mut Checkpoint,
        path: &str,
        heads: i32,
        head_dim: i32,
        eps: f32,
    ) -> crate::Result<Self> {
        Ok(LayerNorm2D {
            frozen: Frozen::default(),
            weight: ck.array(&format!("{path}.weight"), &[heads, head_dim])?,
            eps,
        })
    }
}

impl Forward for LayerNorm2D {
    fn forward(&self, x: &Array) -> Result<Array> {
        ops::multiply(&self.weight, &fast::layer_norm(x, None, None, self.eps)?)
    }
}

/// Projected rows `y` `[B * L, n * head_dim]` as `n` heads `[B, n, L, head_dim]`, each
/// position's heads normalized by `norm` (a norm whose weights are per head, over `[B, L, n,
/// head_dim]`) before the transpose, as mlx_lm orders it.
pub fn heads_normed<N: Forward + ?Sized>(
    y: &Array,
    rows: Rows,
    n: i32,
    norm: Option<&N>,
) -> Result<Array> {
    match norm {
        None => heads(y, rows, n, None),
        Some(norm) => {
            let y = ops::reshape(y, &[rows.batch, rows.len, n, -1])?;
            heads_first(&norm.forward(&y)?)
        }
    }
}
