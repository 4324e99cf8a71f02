//! SiTU, kimi_k3's gated activation (Python: `mlx_lm.models.kimi_k3._situ`): the gate through
//! a tanh-bounded SiLU, `beta * tanh(gate / beta) * sigmoid(gate)`, times the linear part,
//! optionally soft-capped as `linear_beta * tanh(x / linear_beta)`; computed in float32 and
//! cast back to the input's dtype. mlx_lm compiles it shapeless with the two betas as
//! constants, and so does this (one trace per pair of betas).

use std::sync::OnceLock;

use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::compile::CompiledFn;
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::checkpoint::Checkpoint;

/// The betas of a SiTU (Python floats: `activation_situ_beta or 1.0`,
/// `activation_situ_linear_beta`).
#[derive(Debug, Clone, Copy, PartialEq, StaticData)]
pub struct Situ {
    pub beta: f64,
    pub linear_beta: Option<f64>,
}

impl Situ {
    /// `situ(x, gate)` (Python: `_situ(x, gate, beta, linear_beta)`; `SwitchGLU` calls its
    /// activation as `activation(x_up, x_gate)`, the same order).
    pub fn apply(self, x: &Array, gate: &Array) -> Result<Array> {
        static SLOT: OnceLock<CompiledFn> = OnceLock::new();
        let (beta, linear_beta) = (self.beta, self.linear_beta);
        // The betas are the trace's constants (Python's non-array arguments): they key it.
        let keys = [beta.to_bits(), linear_beta.map_or(u64::MAX, f64::to_bits)];
        let out = SLOT.get_or_init(|| CompiledFn::new(true)).call_with_refs(
            &[x, gate],
            &keys,
            &|xs| {
                let dtype = xs[0].dtype();
                let gate = xs[1].astype(Dtype::Float32)?;
                let x = xs[0].astype(Dtype::Float32)?;
                // Python floats against float32 arrays: weakly typed, float32 products.
                let beta = beta as f32;
                let a = ops::multiply(
                    &ops::multiply(beta, &ops::tanh(&ops::divide(&gate, beta)?)?)?,
                    &ops::sigmoid(&gate)?,
                )?;
                let x = match linear_beta {
                    Some(lb) => {
                        let lb = lb as f32;
                        ops::multiply(lb, &ops::tanh(&ops::divide(&x, lb)?)?)?
                    }
                    None => x,
                };
                Ok(vec![ops::multiply(&a, &x)?.astype(dtype)?])
            },
        )?;
        Ok(out.into_iter().next().expect("situ returns one array"))
    }
}

/// Python: `KimiK3MLP`: `down_proj(situ(up_proj(x), gate_proj(x)))`, the dense MLP and the
/// shared experts of kimi_k3.
#[derive(Debug, Clone, TreeNode)]
pub struct SituMlp {
    pub gate_proj: MaybeQuantizedLinear,
    pub up_proj: MaybeQuantizedLinear,
    pub down_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub situ: Situ,
}

impl SituMlp {
    /// Takes the layer's tensors under `path`: `dim` features in and out, `hidden` between.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        dim: i32,
        hidden: i32,
        situ: Situ,
    ) -> crate::Result<SituMlp> {
        Ok(SituMlp {
            gate_proj: ck.linear(&format!("{path}.gate_proj"), dim, hidden, false)?,
            up_proj: ck.linear(&format!("{path}.up_proj"), dim, hidden, false)?,
            down_proj: ck.linear(&format!("{path}.down_proj"), hidden, dim, false)?,
            situ,
        })
    }
}

impl Forward for SituMlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        let up = self.up_proj.forward(x)?;
        let gate = self.gate_proj.forward(x)?;
        self.down_proj.forward(&self.situ.apply(&up, &gate)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formula at a few points, in f64 against float32 (the activation's own precision),
    /// with and without the soft cap of the linear part.
    #[test]
    fn situ_is_the_bounded_silu_times_the_capped_input() {
        let xs = [-3.0f32, -0.5, 0.0, 0.7, 5.0];
        let gates = [2.0f32, -1.0, 0.3, 4.0, -6.0];
        let x = Array::from_slice(&xs, &[5]).unwrap();
        let g = Array::from_slice(&gates, &[5]).unwrap();
        for situ in [
            Situ {
                beta: 2.0,
                linear_beta: Some(4.0),
            },
            Situ {
                beta: 1.0,
                linear_beta: None,
            },
        ] {
            let got = situ.apply(&x, &g).unwrap().to_vec::<f32>().unwrap();
            for i in 0..5 {
                let (x, g) = (xs[i] as f64, gates[i] as f64);
                let a = situ.beta * (g / situ.beta).tanh() / (1.0 + (-g).exp());
                let l = situ.linear_beta.map_or(x, |lb| lb * (x / lb).tanh());
                let want = a * l;
                assert!(
                    (got[i] as f64 - want).abs() <= 1e-6 * want.abs().max(1.0),
                    "{situ:?} at {i}: {} vs {want}",
                    got[i]
                );
            }
        }
    }

    /// A bfloat16 input comes back in bfloat16 (the float32 inside is cast back).
    #[test]
    fn situ_keeps_the_input_dtype() {
        let x = Array::from_slice(&[1.0f32, 2.0], &[2])
            .unwrap()
            .astype(Dtype::Bfloat16)
            .unwrap();
        let situ = Situ {
            beta: 1.0,
            linear_beta: None,
        };
        assert_eq!(situ.apply(&x, &x).unwrap().dtype(), Dtype::Bfloat16);
    }
}
