//! Attention residuals (Python: kimi_k3's `ResidualBlocks` and `_attn_res_mix`): instead of one
//! running sum, the stack keeps the hidden state at the start of every block of
//! `attn_res_block_size` layers, and each sub-layer reads a softmax-weighted mix of those and
//! the sum within the current block. The mix's logits are `x @ w_eff` over the RMS of `x`
//! (`w_eff`: a learned norm weight times a learned `hidden -> 1` projection), one per stored
//! block and one for the current sum; the softmax runs across the blocks, per position.
//!
//! The stored blocks are what one layer hands the next ([`Layer::Carry`](crate::blocks::Layer)),
//! rebuilt on every call as in mlx_lm (they are not state: no cache entry).

use mlx_nn::Frozen;
use std::sync::OnceLock;

use mlx_nn::RMSNorm;
use mlx_rs::compile::CompiledFn;
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::checkpoint::Checkpoint;

/// Python: `ResidualBlocks`: the hidden states at the blocks' starts stacked, `raw [K, ...,
/// hidden]` in the model's dtype, and their float32 inverse RMS `inv_rms [K, ...]`; empty
/// before the first block starts.
#[derive(Debug, Clone, Default)]
pub struct ResidualBlocks {
    pub raw: Option<Array>,
    pub inv_rms: Option<Array>,
}

impl ResidualBlocks {
    /// Python: `ResidualBlocks.append(x)`: stores `x` and `rsqrt(mean(x² in float32) + eps)`.
    pub fn append(&mut self, x: &Array, eps: f32) -> Result<()> {
        let xf = x.astype(Dtype::Float32)?;
        let n = ops::rsqrt(&ops::add(&ops::multiply(&xf, &xf)?.mean(-1, false)?, eps)?)?;
        let n = ops::expand_dims(&n, 0)?;
        let r = ops::expand_dims(x, 0)?;
        let (raw, inv_rms) = match (&self.raw, &self.inv_rms) {
            (Some(raw), Some(inv)) => (
                ops::concatenate([raw, &r], 0)?,
                ops::concatenate([inv, &n], 0)?,
            ),
            _ => (r, n),
        };
        self.raw = Some(raw);
        self.inv_rms = Some(inv_rms);
        Ok(())
    }

    /// Python: `_attn_res_mix(blocks, partial_sum, w_eff, eps)` off Metal: `partial_sum` as
    /// it is while no block is stored, else `_attn_res_combine`, compiled (shapes part of the
    /// trace, `eps` a constant) as mlx_lm compiles it.
    pub fn mix(&self, partial_sum: &Array, w_eff: &Array, eps: f32) -> Result<Array> {
        let (Some(raw), Some(inv_rms)) = (&self.raw, &self.inv_rms) else {
            return Ok(partial_sum.clone());
        };
        static SLOT: OnceLock<CompiledFn> = OnceLock::new();
        let out = SLOT.get_or_init(|| CompiledFn::new(false)).call_with_refs(
            &[raw, inv_rms, partial_sum, w_eff],
            &[u64::from(eps.to_bits())],
            &|xs| {
                let (raw, inv_rms, partial, w_eff) = (&xs[0], &xs[1], &xs[2], &xs[3]);
                let pf = partial.astype(Dtype::Float32)?;
                let p_logit = ops::multiply(
                    &ops::matmul(&pf, w_eff)?,
                    &ops::rsqrt(&ops::add(&ops::multiply(&pf, &pf)?.mean(-1, false)?, eps)?)?,
                )?;
                let logits = ops::concatenate(
                    [
                        &ops::multiply(
                            &ops::matmul(&raw.astype(Dtype::Float32)?, w_eff)?,
                            inv_rms,
                        )?,
                        &ops::expand_dims(&p_logit, 0)?,
                    ],
                    0,
                )?;
                let p = ops::softmax(&logits, &[0][..], true)?;
                let k = raw.shape()[0];
                let blocks = ops::expand_dims(&p.index(..k)?, -1)?;
                let current = ops::expand_dims(&p.index(k)?, -1)?;
                let out = ops::add(
                    &ops::multiply(&blocks, raw)?.sum(0, false)?,
                    &ops::multiply(&current, partial)?,
                )?;
                Ok(vec![out.astype(partial.dtype())?])
            },
        )?;
        Ok(out.into_iter().next().expect("the mix returns one array"))
    }
}

/// Python: an attention residual's `nn.Linear(hidden, 1, bias=False)` (`*_res_proj`): never
/// quantized (mlx_lm's quant_predicate keeps `res_proj` float), read as a weight only.
#[derive(Debug, Clone, TreeNode)]
pub struct ResidualProjection {
    /// `[1, hidden]`.
    pub weight: Array,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl ResidualProjection {
    pub fn load(ck: &mut Checkpoint, path: &str, hidden: i32) -> crate::Result<Self> {
        Ok(ResidualProjection {
            frozen: Frozen::default(),
            weight: ck.array(&format!("{path}.weight"), &[1, hidden])?,
        })
    }
}

/// Python: `w_eff = norm.weight.astype(float32) * proj.weight.reshape(-1)`: the norm's weight
/// folded into the projection (mlx_lm caches it after the first call; the same values).
pub fn effective_weight(proj: &ResidualProjection, norm: &RMSNorm) -> Result<Array> {
    ops::multiply(
        &norm.weight.astype(Dtype::Float32)?,
        &ops::reshape(&proj.weight, &[-1])?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With blocks stored, the mix is the softmax (over blocks and the current sum) of their
    /// RMS-normalized projections, weighting them: checked against the formula in f64.
    #[test]
    fn the_mix_weights_blocks_and_sum_by_their_softmax() {
        let d = 4;
        let b1: Vec<f32> = vec![1.0, -2.0, 0.5, 3.0];
        let b2: Vec<f32> = vec![0.2, 0.1, -1.0, 0.4];
        let s: Vec<f32> = vec![-0.3, 0.9, 2.0, -1.5];
        let w: Vec<f32> = vec![0.5, -0.25, 1.0, 0.75];
        let eps = 1e-5f32;
        let mut blocks = ResidualBlocks::default();
        let partial = Array::from_slice(&s, &[1, d]).unwrap();
        let w_eff = Array::from_slice(&w, &[d]).unwrap();
        assert_eq!(
            blocks
                .mix(&partial, &w_eff, eps)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            s
        );
        blocks
            .append(&Array::from_slice(&b1, &[1, d]).unwrap(), eps)
            .unwrap();
        blocks
            .append(&Array::from_slice(&b2, &[1, d]).unwrap(), eps)
            .unwrap();
        let got = blocks
            .mix(&partial, &w_eff, eps)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let logit = |x: &[f32]| {
            let dot: f64 = x.iter().zip(&w).map(|(a, b)| *a as f64 * *b as f64).sum();
            let ms: f64 = x.iter().map(|a| (*a as f64).powi(2)).sum::<f64>() / d as f64;
            dot / (ms + eps as f64).sqrt()
        };
        let l = [logit(&b1), logit(&b2), logit(&s)];
        let m = l.iter().cloned().fold(f64::MIN, f64::max);
        let e: Vec<f64> = l.iter().map(|x| (x - m).exp()).collect();
        let z: f64 = e.iter().sum();
        for i in 0..d as usize {
            let want = (e[0] * b1[i] as f64 + e[1] * b2[i] as f64 + e[2] * s[i] as f64) / z;
            assert!(
                (got[i] as f64 - want).abs() < 1e-5,
                "{i}: {} vs {want}",
                got[i]
            );
        }
    }
}
