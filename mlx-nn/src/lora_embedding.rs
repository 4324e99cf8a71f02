//! Low-rank adapters over an embedding table (Python: `mlx_lm.tuner.lora.LoRAEmbedding` and
//! `mlx_lm.tuner.dora.DoRAEmbedding`): the adapted form of a [`MaybeQuantizedEmbedding`], with
//! Python's parameter paths (`embed_tokens.embedding.weight`, `embed_tokens.lora_a`,
//! `embed_tokens.lora_b`, and `embed_tokens.m` for DoRA). The update is `scale * A[x] B`:
//! `lora_a` has one row per token, so a tied output projection ([`as_linear`](
//! LoRAEmbedding::as_linear)) gets the transposed update.

use mlx_rs::ops;
use mlx_rs::{linalg, Array, Error, Result};
use mlx_tree::TreeNode;

use crate::lora::{dequantize, init_low_rank};
use crate::{
    Dropout, Embedding, Forward, Frozen, LoRAOptions, MaybeQuantized, MaybeQuantizedEmbedding,
    QuantizedEmbedding,
};

/// An embedding table plus a trained low-rank update of its rows (LoRA), or DoRA's form of it
/// when [`m`](Self::m) is set: each looked-up row renormalized to its learned magnitude.
#[derive(Debug, Clone, TreeNode)]
pub struct LoRAEmbedding {
    /// The base table (float or quantized; never itself adapted).
    pub embedding: MaybeQuantizedEmbedding,
    pub dropout: Dropout,
    /// The factor of the update (a Python float: f64).
    #[tree(static)]
    pub scale: f64,
    /// `[num_embeddings, r]`.
    pub lora_a: Array,
    /// `[r, dims]`.
    pub lora_b: Array,
    /// DoRA's magnitude per row, `[num_embeddings]` in the table's dtype; `None` for LoRA.
    pub m: Option<Array>,
    #[tree(static)]
    pub frozen: Frozen,
}

fn table_weight(embedding: &MaybeQuantizedEmbedding) -> Result<Array> {
    match embedding {
        MaybeQuantized::Float(e) => Ok(e.weight.clone()),
        MaybeQuantized::Quantized(q) => dequantize_table(q),
        MaybeQuantized::Adapted(_) => Err(Error::InvalidArgument(
            "[LoRAEmbedding] the base table is itself adapted".into(),
        )),
        MaybeQuantized::Sharded(s) => match **s {},
    }
}

fn dequantize_table(q: &QuantizedEmbedding) -> Result<Array> {
    dequantize(
        &q.weight,
        &q.scales,
        q.biases.as_ref(),
        q.group_size,
        q.bits,
        q.mode,
    )
}

/// `(rows, columns)` of a 2-D table.
fn table_shape(weight: &Array) -> Result<(i32, i32)> {
    match weight.shape() {
        &[rows, columns] => Ok((rows, columns)),
        shape => Err(Error::InvalidArgument(format!(
            "[LoRAEmbedding] an embedding table is 2-D; got shape {shape:?}"
        ))),
    }
}

impl LoRAEmbedding {
    /// Wraps `embedding` with a new adapter (Python: `LoRAEmbedding.from_base(embedding, r,
    /// dropout, scale)`, or `DoRAEmbedding.from_base` with `options.dora`), drawing from MLX's
    /// global random state as Python does: its constructor first makes a throwaway
    /// `nn.Embedding(num_embeddings, dims)` (one normal draw), then `lora_a` uniform in
    /// `±1/sqrt(num_embeddings)`; `lora_b` is zero.
    ///
    /// DoRA on a quantized table is an error: mlx_lm 0.32.2's `DoRAEmbedding.from_base` checks
    /// for a `QuantizedLinear` instead, so it builds the adapter on the packed `uint32` table
    /// (the packed width as `dims`, the norms of the packed words as `m`) and fails at its
    /// first call.
    pub fn from_base(
        embedding: MaybeQuantizedEmbedding,
        options: LoRAOptions,
    ) -> Result<LoRAEmbedding> {
        let (num_embeddings, dims) = match &embedding {
            MaybeQuantized::Float(e) => table_shape(&e.weight)?,
            MaybeQuantized::Quantized(_) if options.dora => {
                return Err(Error::InvalidArgument(
                    "[DoRAEmbedding] DoRA on a quantized embedding is not supported \
                     (mlx_lm 0.32.2's fails at its first call); use LoRA or a float table"
                        .into(),
                ))
            }
            // Python: `dims * 32 // embedding.bits` (packed uint32 columns).
            MaybeQuantized::Quantized(q) => {
                let (rows, words) = table_shape(&q.weight)?;
                (rows, words * 32 / q.bits)
            }
            MaybeQuantized::Adapted(_) => {
                return Err(Error::InvalidArgument(
                    "[LoRAEmbedding] the table already has an adapter".into(),
                ))
            }
            MaybeQuantized::Sharded(s) => match **s {},
        };
        if options.rank <= 0 {
            return Err(Error::InvalidArgument(format!(
                "[LoRAEmbedding] the rank must be positive; got {}",
                options.rank
            )));
        }
        // The throwaway table of Python's constructor: only its draw from the key chain
        // matters (never evaluated).
        let _ = Embedding::new(num_embeddings, dims)?;
        // DoRA: the norms of the table's rows, in its dtype (Python's `set_embedding` does
        // not cast, unlike DoRALinear's).
        let m = match (&embedding, options.dora) {
            (MaybeQuantized::Float(e), true) => Some(linalg::norm(&e.weight, None, 1, false)?),
            _ => None,
        };
        let (lora_a, lora_b) = init_low_rank(num_embeddings, options.rank, dims)?;
        Ok(LoRAEmbedding {
            embedding,
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

    /// `weight + (scale * lora_a) @ lora_b` in the weight's dtype.
    fn adapted_table(&self, weight: &Array) -> Result<Array> {
        let delta = ops::matmul(&ops::multiply(self.scale, &self.lora_a)?, &self.lora_b)?;
        ops::add(weight, &ops::astype(&delta, weight.dtype())?)
    }

    /// The base table with the update merged into it (Python: `layer.fuse(dequantize)`): a
    /// quantized table is requantized with its own settings unless `dequantize`.
    pub fn fuse(&self, dequantize: bool) -> Result<MaybeQuantizedEmbedding> {
        let weight = self.adapted_table(&table_weight(&self.embedding)?)?;
        let weight = match &self.m {
            None => weight,
            Some(m) => {
                let norm_scale = ops::divide(m, &linalg::norm(&weight, None, 1, false)?)?;
                ops::multiply(&ops::expand_dims(&norm_scale, -1)?, &weight)?
            }
        };
        let fused = Embedding::from_weights(weight);
        match &self.embedding {
            MaybeQuantized::Quantized(q) if !dequantize => Ok(MaybeQuantized::Quantized(
                QuantizedEmbedding::from_embedding(
                    &fused,
                    Some(q.group_size),
                    Some(q.bits),
                    q.mode,
                )?,
            )),
            _ => Ok(MaybeQuantized::Float(fused)),
        }
    }

    /// The table as a linear layer with the update (a tied output projection) (Python:
    /// `LoRAEmbedding.as_linear` / `DoRAEmbedding.as_linear`).
    pub fn as_linear(&self, x: &Array) -> Result<Array> {
        let y = self.embedding.as_linear(x)?;
        let z = ops::matmul(
            &ops::matmul(&self.dropout.forward(x)?, &self.lora_b.t()?)?,
            &self.lora_a.t()?,
        )?;
        let out = ops::add(
            &y,
            &ops::astype(&ops::multiply(self.scale, &z)?, x.dtype())?,
        )?;
        let Some(m) = &self.m else {
            return Ok(out);
        };
        // Python reads `embedding.weight` here as it is (a float table: DoRA is not built on
        // a quantized one).
        let weight = table_weight(&self.embedding)?;
        let delta = ops::matmul(&ops::multiply(self.scale, &self.lora_a)?, &self.lora_b)?;
        let adapted = ops::add(&weight, &delta)?;
        let denom = ops::stop_gradient(&linalg::norm(&adapted, None, 1, false)?)?;
        ops::multiply(&ops::divide(m, &denom)?, &out)
    }
}

impl Forward for LoRAEmbedding {
    /// The adapted rows for integer indices `x` (Python: `LoRAEmbedding.__call__` /
    /// `DoRAEmbedding.__call__`, which apply the dropout and the scale in different places).
    fn forward(&self, x: &Array) -> Result<Array> {
        let y = self.embedding.forward(x)?;
        let rows = ops::take(&self.lora_a, x, 0)?;
        let Some(m) = &self.m else {
            let z = self.dropout.forward(&ops::matmul(&rows, &self.lora_b)?)?;
            return ops::add(
                &y,
                &ops::astype(&ops::multiply(self.scale, &z)?, y.dtype())?,
            );
        };
        let z = ops::matmul(&ops::multiply(self.scale, &rows)?, &self.lora_b)?;
        let out = ops::add(&y, &ops::astype(&self.dropout.forward(&z)?, y.dtype())?)?;
        let adapted = ops::add(&y, &z)?;
        let denom = ops::stop_gradient(&linalg::norm(&adapted, None, -1, false)?)?;
        let factor = ops::divide(&ops::take(m, x, 0)?, &denom)?;
        ops::multiply(&ops::expand_dims(&factor, -1)?, &out)
    }
}
