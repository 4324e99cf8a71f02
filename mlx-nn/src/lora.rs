//! Low-rank adapters over a linear layer (Python: `mlx_lm.tuner.lora.LoRALinear` and
//! `mlx_lm.tuner.dora.DoRALinear`). They live in mlx-nn, not in mlx-lm, because the adapted
//! layer is the third variant of [`MaybeQuantizedLinear`]: every model field that holds a
//! linear layer can hold its adapted form, so adapters are added to any model by replacing
//! modules in its tree ([`Module::update_modules`](crate::Module::update_modules)), with the
//! parameter paths Python gives (`q_proj.linear.weight`, `q_proj.lora_a`, `q_proj.lora_b`,
//! and `q_proj.m` for DoRA).

use mlx_rs::ops::{self, DequantizeOptions, QuantizationMode};
use mlx_rs::random::{self, UniformOptions};
use mlx_rs::{linalg, Array, Dtype, Error, Result};
use mlx_tree::{Flattener, TreeNode, Unflattener};

use crate::{
    Dropout, Forward, Frozen, Linear, MaybeQuantized, MaybeQuantizedLinear, QuantizedLinear,
};

/// A linear layer plus a trained low-rank update, `y = linear(x) + scale * (x A) B` (LoRA),
/// or DoRA's form of it when [`m`](Self::m) is set: the adapted weight's rows renormalized to
/// the learned magnitudes `m`.
#[derive(Debug, Clone, mlx_tree::TreeNode)]
pub struct LoRALinear {
    /// The base layer (float or quantized; never itself adapted).
    pub linear: MaybeQuantizedLinear,
    pub dropout: Dropout,
    /// The factor of the update (Python keeps it as a float attribute: a f64).
    #[tree(static)]
    pub scale: f64,
    /// `[input_dims, r]`.
    pub lora_a: Array,
    /// `[r, output_dims]`.
    pub lora_b: Array,
    /// DoRA's magnitude per output row, `[output_dims]` float32; `None` for LoRA.
    pub m: Option<Array>,
    #[tree(static)]
    pub frozen: Frozen,
}

/// The options of an adapter (Python: `lora_parameters`' `rank`, `scale`, `dropout`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoRAOptions {
    pub rank: i32,
    pub scale: f64,
    pub dropout: f64,
    /// DoRA instead of LoRA.
    pub dora: bool,
}

fn unadapted(linear: &MaybeQuantizedLinear) -> Result<()> {
    match linear {
        MaybeQuantized::Adapted(_) => Err(Error::InvalidArgument(
            "[LoRALinear] the layer already has an adapter".into(),
        )),
        MaybeQuantized::Sharded(_) => Err(Error::InvalidArgument(
            "[LoRALinear] the layer is sharded over a distributed group".into(),
        )),
        _ => Ok(()),
    }
}

/// The weight of a linear layer as floats (Python: `DoRALinear._dequantized_weight`).
fn dequantized_weight(linear: &MaybeQuantizedLinear) -> Result<Array> {
    match linear {
        MaybeQuantized::Float(l) => Ok(l.weight.clone()),
        MaybeQuantized::Quantized(q) => dequantize_linear(q),
        MaybeQuantized::Adapted(_) => Err(Error::InvalidArgument(
            "[LoRALinear] the base layer is itself adapted".into(),
        )),
        MaybeQuantized::Sharded(_) => Err(Error::InvalidArgument(
            "[LoRALinear] the base layer is sharded over a distributed group".into(),
        )),
    }
}

fn dequantize_linear(q: &QuantizedLinear) -> Result<Array> {
    dequantize(
        &q.weight,
        &q.scales,
        q.biases.as_ref(),
        q.group_size,
        q.bits,
        q.mode,
    )
}

/// Python's `mx.dequantize(weight, scales, biases, group_size=, bits=, mode=)`, which every
/// adapter's fuse (and DoRA's forward) applies to a quantized base.
pub(crate) fn dequantize(
    weight: &Array,
    scales: &Array,
    biases: Option<&Array>,
    group_size: i32,
    bits: i32,
    mode: QuantizationMode,
) -> Result<Array> {
    let mut options = DequantizeOptions::default()
        .group_size(group_size)
        .bits(bits)
        .mode(mode);
    if let Some(b) = biases {
        options = options.biases(b);
    }
    ops::dequantize(weight, scales, options)
}

/// `(output_dims, input_dims)` of a base layer, as Python's `from_base` reads them.
fn dims(linear: &MaybeQuantizedLinear) -> Result<(i32, i32)> {
    let (w, bits) = match linear {
        MaybeQuantized::Float(l) => (&l.weight, None),
        MaybeQuantized::Quantized(q) => (&q.weight, Some(q.bits)),
        MaybeQuantized::Adapted(_) | MaybeQuantized::Sharded(_) => {
            unreachable!("checked by unadapted")
        }
    };
    let &[output_dims, input_dims] = w.shape() else {
        return Err(Error::InvalidArgument(format!(
            "[LoRALinear] a linear weight is 2-D; got shape {:?}",
            w.shape()
        )));
    };
    // Python: `input_dims * 32 // linear.bits` (packed uint32 columns).
    Ok((
        output_dims,
        bits.map_or(input_dims, |b| input_dims * 32 / b),
    ))
}

fn bias(linear: &MaybeQuantizedLinear) -> Option<&Array> {
    match linear {
        MaybeQuantized::Float(l) => l.bias.as_ref(),
        MaybeQuantized::Quantized(q) => q.bias.as_ref(),
        MaybeQuantized::Adapted(_) | MaybeQuantized::Sharded(_) => None,
    }
}

impl LoRALinear {
    /// Wraps `linear` with a new adapter (Python: `LoRALinear.from_base(linear, r, dropout,
    /// scale)`, or `DoRALinear.from_base` with `options.dora`). Draws from MLX's global
    /// random state exactly as Python does: Python's constructor first makes a throwaway
    /// `nn.Linear(input_dims, output_dims, bias=False)` (one uniform draw, whose values are
    /// replaced by the base layer), then `lora_a` uniform in `±1/sqrt(input_dims)`; `lora_b`
    /// is zero. The same seed therefore gives the same adapters as mlx_lm.
    pub fn from_base(linear: MaybeQuantizedLinear, options: LoRAOptions) -> Result<LoRALinear> {
        unadapted(&linear)?;
        if options.rank <= 0 {
            return Err(Error::InvalidArgument(format!(
                "[LoRALinear] the rank must be positive; got {}",
                options.rank
            )));
        }
        let (output_dims, input_dims) = dims(&linear)?;
        // The throwaway base Python's constructor builds: only its draw from the key chain
        // matters (never evaluated).
        let _ = Linear::new(input_dims, output_dims, false)?;
        let m = if options.dora {
            let w = ops::astype(&dequantized_weight(&linear)?, Dtype::Float32)?;
            Some(linalg::norm(&w, None, 1, false)?)
        } else {
            None
        };
        let (lora_a, lora_b) = init_low_rank(input_dims, options.rank, output_dims)?;
        Ok(LoRALinear {
            linear,
            dropout: Dropout::new(options.dropout)?,
            scale: options.scale,
            lora_a,
            lora_b,
            m,
            frozen: Frozen::default(),
        })
    }

    /// Whether this is a DoRA adapter.
    pub fn is_dora(&self) -> bool {
        self.m.is_some()
    }

    /// `scale * (dropout(x) @ lora_a @ lora_b)` cast to `x`'s dtype.
    fn update(&self, x: &Array) -> Result<Array> {
        let z = ops::matmul(
            &ops::matmul(&self.dropout.forward(x)?, &self.lora_a)?,
            &self.lora_b,
        )?;
        ops::astype(&ops::multiply(self.scale, &z)?, x.dtype())
    }

    /// `w + (scale * lora_b.T) @ lora_a.T`, the adapted weight DoRA normalizes.
    fn adapted_weight(&self, w: &Array) -> Result<Array> {
        let delta = ops::matmul(
            &ops::multiply(self.scale, &self.lora_b.t()?)?,
            &self.lora_a.t()?,
        )?;
        ops::add(w, &delta)
    }

    /// The base layer with the update merged into its weight (Python: `layer.fuse(
    /// dequantize)`): a quantized base is requantized with its own settings unless
    /// `dequantize`.
    pub fn fuse(&self, dequantize: bool) -> Result<MaybeQuantizedLinear> {
        let weight = dequantized_weight(&self.linear)?;
        let fused_weight = match &self.m {
            None => {
                let delta = ops::matmul(
                    &ops::multiply(self.scale, &self.lora_b.t()?)?,
                    &self.lora_a.t()?,
                )?;
                ops::add(&weight, &ops::astype(&delta, weight.dtype())?)?
            }
            Some(m) => {
                let delta = ops::matmul(
                    &ops::multiply(self.scale, &self.lora_b.t()?)?,
                    &self.lora_a.t()?,
                )?;
                let w = ops::add(&weight, &ops::astype(&delta, weight.dtype())?)?;
                let norm_scale = ops::divide(m, &linalg::norm(&w, None, 1, false)?)?;
                ops::multiply(&ops::expand_dims(&norm_scale, -1)?, &w)?
            }
        };
        let fused = Linear::from_weights(fused_weight, bias(&self.linear).cloned());
        match &self.linear {
            MaybeQuantized::Quantized(q) if !dequantize => Ok(MaybeQuantized::Quantized(
                QuantizedLinear::from_linear(&fused, Some(q.group_size), Some(q.bits), q.mode)?,
            )),
            _ => Ok(MaybeQuantized::Float(fused)),
        }
    }
}

impl Forward for LoRALinear {
    /// Python: `LoRALinear.__call__` / `DoRALinear.__call__`.
    fn forward(&self, x: &Array) -> Result<Array> {
        let Some(m) = &self.m else {
            let y = self.linear.forward(x)?;
            return ops::add(&y, &self.update(x)?);
        };
        // DoRA: the base matmul without its bias, renormalized, then the bias.
        let w = dequantized_weight(&self.linear)?;
        let y = ops::matmul(x, &w.t()?)?;
        let out = ops::add(&y, &self.update(x)?)?;
        let denom = ops::stop_gradient(&linalg::norm(&self.adapted_weight(&w)?, None, 1, false)?)?;
        let out = ops::multiply(&ops::astype(&ops::divide(m, &denom)?, x.dtype())?, &out)?;
        match bias(&self.linear) {
            Some(b) => ops::add(&out, b),
            None => Ok(out),
        }
    }
}

/// A layer kind without an adapter (multi-head linears; mlx_lm adapts none) or without a
/// sharded form: that [`MaybeQuantized`] variant of such a layer cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoAdapter {}

impl TreeNode for NoAdapter {
    fn flatten<'a>(&'a self, _: &mut Flattener<'a>) {
        match *self {}
    }

    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        Err(u.mismatch("a layer kind that has an adapter"))
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, _: &mut F) -> mlx_tree::Result<()> {
        match *self {}
    }
}

impl Forward for NoAdapter {
    fn forward(&self, _: &Array) -> Result<Array> {
        match *self {}
    }
}

/// A fresh adapter's `lora_a` `[input_dims, rank]`, uniform in ±1/sqrt(input_dims) from the
/// global PRNG, and `lora_b` `[rank, output_dims]`, zeros: mlx_lm's `LoRALinear` and
/// `LoRAEmbedding` initialization, drawn in the same order.
pub(crate) fn init_low_rank(
    input_dims: i32,
    rank: i32,
    output_dims: i32,
) -> Result<(Array, Array)> {
    let bound = 1.0 / f64::from(input_dims).sqrt();
    let lora_a = random::uniform(
        &[input_dims, rank],
        UniformOptions::default().low(-bound).high(bound),
        None,
    )?;
    Ok((lora_a, ops::zeros(&[rank, output_dims], None)?))
}
