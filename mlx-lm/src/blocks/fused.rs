//! Fused projections: one matmul whose output is several projections laid side by side,
//! split after it. Queries, keys and values contiguous (phi3's `qkv_proj`, gpt2's `c_attn`:
//! `[q | k | v]`, not gpt_neox's per-head interleaving), and the gated MLP's gate and up
//! projections (phi3's and glm4's `gate_up_proj`: `[gate | up]`).

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Result};
use mlx_tree::TreeNode;

use crate::blocks::mlp::Activation;
use crate::blocks::rows::{heads, Rows};
use crate::checkpoint::Checkpoint;

/// Splits a fused projection's rows `[B * L, (n_heads + 2 * n_kv_heads) * head_dim]` into
/// queries, keys and values as heads `[B, heads, L, head_dim]` (Python: `mx.split(qkv,
/// [q, q + kv], axis=-1)`, then each reshaped and transposed).
pub fn split_qkv(
    qkv: &Array,
    rows: Rows,
    n_heads: i32,
    n_kv_heads: i32,
    head_dim: i32,
) -> Result<(Array, Array, Array)> {
    let q = n_heads * head_dim;
    let parts = ops::split(qkv, vec![q, q + n_kv_heads * head_dim], -1)?;
    Ok((
        heads(&parts[0], rows, n_heads, None)?,
        heads(&parts[1], rows, n_kv_heads, None)?,
        heads(&parts[2], rows, n_kv_heads, None)?,
    ))
}

/// Python: phi3's and glm4's `MLP`: `down_proj(act(gate) * up)` with `gate, up =
/// split(gate_up_proj(x), 2, axis=-1)` (SwiGLU: `swiglu(gate, up)`).
#[derive(Debug, Clone, TreeNode)]
pub struct FusedGateUpMlp {
    pub gate_up_proj: MaybeQuantizedLinear,
    pub down_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub activation: Activation,
}

impl FusedGateUpMlp {
    /// Takes the layer's tensors under `path`: `dim` features in and out, `hidden` between
    /// (the fused projection is `2 * hidden` wide), no biases, SwiGLU.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        dim: i32,
        hidden: i32,
    ) -> crate::Result<FusedGateUpMlp> {
        Ok(FusedGateUpMlp {
            gate_up_proj: ck.linear(&format!("{path}.gate_up_proj"), dim, 2 * hidden, false)?,
            down_proj: ck.linear(&format!("{path}.down_proj"), hidden, dim, false)?,
            activation: Activation::Silu,
        })
    }
}

impl Forward for FusedGateUpMlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        let halves = ops::split(&self.gate_up_proj.forward(x)?, 2, -1)?;
        self.down_proj
            .forward(&self.activation.gated(&halves[0], &halves[1])?)
    }
}

impl crate::blocks::ChannelMixer for FusedGateUpMlp {}
