//! Low-rank adapters over expert layers (Python: `mlx_lm.tuner.lora.LoRASwitchLinear`): one
//! adapter per expert, stacked as the experts' weights are (`lora_a [E, r, in]`,
//! `lora_b [E, out, r]`), each token's update through its routed experts' adapters only
//! (`gather_mm` with the layer's indices). The adapted form of a
//! [`MaybeQuantizedSwitchLinear`], with Python's parameter paths (`gate_proj.linear.weight`,
//! `gate_proj.lora_a`, `gate_proj.lora_b`). mlx_lm has no DoRA form of it.

use mlx_nn::{Dropout, Forward, Frozen, LoRAOptions, MaybeQuantized, Quantizable};
use mlx_rs::ops::{self, DequantizeOptions, GatherMmOptions};
use mlx_rs::random::{self, UniformOptions};
use mlx_rs::{Array, Error, Result};
use mlx_tree::TreeNode;

use super::switch::{MaybeQuantizedSwitchLinear, SwitchForward, SwitchLinear};

/// Expert layers plus a trained low-rank update per expert,
/// `y = linear(x, indices) + scale * (x A_e^T) B_e^T` for each routed expert `e`.
#[derive(Debug, Clone, TreeNode)]
pub struct LoRASwitchLinear {
    /// The base experts (float or quantized; never themselves adapted).
    pub linear: MaybeQuantizedSwitchLinear,
    pub dropout: Dropout,
    /// The factor of the update (a Python float: f64).
    #[tree(static)]
    pub scale: f64,
    /// `[num_experts, r, input_dims]`.
    pub lora_a: Array,
    /// `[num_experts, output_dims, r]`.
    pub lora_b: Array,
    #[tree(static)]
    pub frozen: Frozen,
}

/// `(num_experts, output_dims, input_dims)` of the base, as Python's properties read them
/// (a quantized layer's `input_dims` is `scales.shape[2] * group_size`).
fn dims(linear: &MaybeQuantizedSwitchLinear) -> Result<(i32, i32, i32)> {
    let (weight, input_dims) = match linear {
        MaybeQuantized::Float(l) => (&l.weight, l.weight.shape().get(2).copied()),
        MaybeQuantized::Quantized(q) => (
            &q.weight,
            q.scales.shape().get(2).map(|groups| groups * q.group_size),
        ),
        MaybeQuantized::Adapted(_) => {
            return Err(Error::InvalidArgument(
                "[LoRASwitchLinear] the experts already have an adapter".into(),
            ))
        }
        MaybeQuantized::Sharded(s) => match **s {},
    };
    match (weight.shape(), input_dims) {
        (&[experts, output_dims, _], Some(input_dims)) => Ok((experts, output_dims, input_dims)),
        _ => Err(Error::InvalidArgument(format!(
            "[LoRASwitchLinear] expert weights are 3-D; got shape {:?}",
            weight.shape()
        ))),
    }
}

/// The experts' weights as floats and their bias.
fn dequantized(linear: &MaybeQuantizedSwitchLinear) -> Result<(Array, Option<Array>)> {
    match linear {
        MaybeQuantized::Float(l) => Ok((l.weight.clone(), l.bias.clone())),
        MaybeQuantized::Quantized(q) => {
            let mut options = DequantizeOptions::default()
                .group_size(q.group_size)
                .bits(q.bits)
                .mode(q.mode);
            if let Some(b) = &q.biases {
                options = options.biases(b);
            }
            Ok((
                ops::dequantize(&q.weight, &q.scales, options)?,
                q.bias.clone(),
            ))
        }
        MaybeQuantized::Adapted(_) => Err(Error::InvalidArgument(
            "[LoRASwitchLinear] the base experts are themselves adapted".into(),
        )),
        MaybeQuantized::Sharded(s) => match **s {},
    }
}

impl LoRASwitchLinear {
    /// Wraps `linear` with new adapters (Python: `LoRASwitchLinear.from_base(linear, r,
    /// dropout, scale)`), drawing from MLX's global random state as Python does: its
    /// constructor first makes a throwaway `SwitchLinear(input_dims, output_dims,
    /// num_experts)` (one uniform draw), then `lora_a` uniform in `±1/sqrt(input_dims)`;
    /// `lora_b` is zero. DoRA is an error, as in mlx_lm.
    pub fn from_base(
        linear: MaybeQuantizedSwitchLinear,
        options: LoRAOptions,
    ) -> Result<LoRASwitchLinear> {
        if options.dora {
            let kind = if linear.is_quantized() {
                "QuantizedSwitchLinear"
            } else {
                "SwitchLinear"
            };
            // mlx_lm's words.
            return Err(Error::InvalidArgument(format!(
                "{kind} doesn't support DoRA yet."
            )));
        }
        let (num_experts, output_dims, input_dims) = dims(&linear)?;
        if options.rank <= 0 {
            return Err(Error::InvalidArgument(format!(
                "[LoRASwitchLinear] the rank must be positive; got {}",
                options.rank
            )));
        }
        // The throwaway experts of Python's constructor (bias=False): only their draw from
        // the key chain matters (never evaluated).
        let _ = uniform(&[num_experts, output_dims, input_dims], input_dims)?;
        let lora_a = uniform(&[num_experts, options.rank, input_dims], input_dims)?;
        let lora_b = ops::zeros(&[num_experts, output_dims, options.rank], None)?;
        Ok(LoRASwitchLinear {
            linear,
            dropout: Dropout::new(options.dropout)?,
            scale: options.scale,
            lora_a,
            lora_b,
            frozen: Frozen::default(),
        })
    }

    /// The base experts with the update merged into their weights (Python:
    /// `layer.fuse(dequantize)`): quantized experts are requantized with their own settings
    /// unless `dequantize`.
    pub fn fuse(&self, dequantize: bool) -> Result<MaybeQuantizedSwitchLinear> {
        let (weight, bias) = dequantized(&self.linear)?;
        let &[num_experts, _, input_dims] = weight.shape() else {
            return Err(Error::InvalidArgument(format!(
                "[LoRASwitchLinear] expert weights are 3-D; got shape {:?}",
                weight.shape()
            )));
        };
        let lora_b = ops::multiply(self.scale, &self.lora_b)?;
        let lora_a = self.lora_a.reshape(&[num_experts, -1, input_dims])?;
        let delta = ops::astype(&ops::matmul(&lora_b, &lora_a)?, weight.dtype())?;
        let fused = SwitchLinear {
            weight: ops::add(&weight, &delta)?,
            bias,
            frozen: Frozen::default(),
        };
        match &self.linear {
            MaybeQuantized::Quantized(q) if !dequantize => Ok(MaybeQuantized::Quantized(
                fused.to_quantized(q.group_size, q.bits, q.mode)?,
            )),
            _ => Ok(MaybeQuantized::Float(fused)),
        }
    }
}

/// Python's `mx.random.uniform(-1/sqrt(input_dims), 1/sqrt(input_dims), shape)` from the
/// global key chain.
fn uniform(shape: &[i32], input_dims: i32) -> Result<Array> {
    let bound = 1.0 / f64::from(input_dims).sqrt();
    random::uniform(
        shape,
        UniformOptions::default().low(-bound).high(bound),
        None,
    )
}

impl SwitchForward for LoRASwitchLinear {
    /// Python: `LoRASwitchLinear.__call__(x, indices, sorted_indices)`.
    fn forward_experts(&self, x: &Array, indices: &Array, sorted: bool) -> Result<Array> {
        let y = self.linear.forward_experts(x, indices, sorted)?;
        let through = |x: &Array, w: &Array| {
            let options = GatherMmOptions::default()
                .rhs_indices(indices)
                .sorted_indices(sorted);
            ops::gather_mm(x, &w.swapaxes(-1, -2)?, options)
        };
        let z = through(&self.dropout.forward(x)?, &self.lora_a)?;
        let z = through(&z, &self.lora_b)?;
        ops::add(
            &y,
            &ops::astype(&ops::multiply(self.scale, &z)?, x.dtype())?,
        )
    }
}
