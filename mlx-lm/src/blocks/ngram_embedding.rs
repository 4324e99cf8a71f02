//! LongCat-Flash-Lite's n-gram embedding, op for op as mlx_lm's `NgramEmbedding`
//! (longcat_flash_ngram.py): each token's embedding (`word_embeddings`) plus, for every
//! n-gram order `i` in `2..=n` (`emb_neighbor_num`) and each of `k` (`emb_split_num`) hashes
//! of it, the embedding of the n-gram ending at the token, hashed into a table of
//! `m + 2 * index + 1` rows (`m = ngram_vocab_size_ratio * vocab_size`) and projected to the
//! hidden width (`embedders.index`, `post_projs.index`); the sum divided by
//! `1 + k * (n - 1)`. An n-gram's id is `t_0 + t_1 * V^1 + ... + t_{i-1} * V^{i-1}`
//! (`t_j` the token `j` places back, 0 before the first), each power of the vocabulary taken
//! modulo the table's size, all in int64 (the ids outgrow int32 at the real sizes), then the
//! sum modulo the table's size.
//!
//! The state is the last `n - 1` token ids (int64), an [`ArraysCache`] of one slot: where
//! mlx_lm starts it empty and keeps at most `n - 1`, here it is `n - 1` zeros from the start,
//! which gives the same ids (a missing token counts as id 0 in mlx_lm's shifts too) at one
//! shape for the compiled step. While a right-padded batch is prefilled, each sequence keeps
//! its last `n - 1` real tokens, never the padding (mlx_lm's keeps the padding's).

use mlx_nn::{Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear};
use mlx_rs::ops::{self, Ellipsis};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::conv::keep_last;
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::Checkpoint;

/// What an [`NgramEmbedding`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NgramConfig {
    pub vocab_size: i32,
    pub hidden_size: i32,
    /// `ngram_vocab_size_ratio`: the hashed tables have `ratio * vocab_size` rows and more.
    pub ratio: i64,
    /// `emb_neighbor_num`: the longest n-gram (at least 2).
    pub n: i32,
    /// `emb_split_num`: hashes per n-gram order (at least 1).
    pub k: i32,
}

impl NgramConfig {
    /// The hashed tables: `k * (n - 1)`.
    pub fn num_embedders(&self) -> i32 {
        self.k * (self.n - 1)
    }

    /// Each hashed table's width: `hidden_size // num_embedders` (Python's floor division).
    pub fn emb_dim(&self) -> i32 {
        self.hidden_size / self.num_embedders()
    }

    /// Table `index`'s rows: `m + 2 * index + 1`.
    pub fn emb_vocab_size(&self, index: i32) -> i64 {
        self.ratio * self.vocab_size as i64 + 2 * index as i64 + 1
    }
}

/// Python: `NgramEmbedding`.
#[derive(Debug, Clone, TreeNode)]
pub struct NgramEmbedding {
    pub word_embeddings: MaybeQuantizedEmbedding,
    pub embedders: Vec<MaybeQuantizedEmbedding>,
    pub post_projs: Vec<MaybeQuantizedLinear>,
    /// Per table: `V^1 .. V^{i-1}` modulo its size (Python: `_vocab_mods[(i, j)]`).
    #[tree(static)]
    pub vocab_mods: Vec<Vec<i64>>,
    /// Per table: its rows.
    #[tree(static)]
    pub table_sizes: Vec<i64>,
    #[tree(static)]
    pub n: i32,
    #[tree(static)]
    pub k: i32,
}

impl NgramEmbedding {
    /// Takes the tensors under `path` (`model.ngram_embeddings`).
    pub fn load(ck: &mut Checkpoint, path: &str, c: &NgramConfig) -> crate::Result<NgramEmbedding> {
        if c.n < 2 || c.k < 1 || c.ratio < 1 || c.emb_dim() < 1 {
            return Err(crate::Error::InvalidArgument(format!(
                "{path}: an n-gram embedding needs emb_neighbor_num >= 2, emb_split_num >= 1, \
                 ngram_vocab_size_ratio >= 1 and hidden_size >= emb_split_num * \
                 (emb_neighbor_num - 1); got {}, {}, {} and {}",
                c.n, c.k, c.ratio, c.hidden_size
            )));
        }
        let (mut embedders, mut post_projs) = (Vec::new(), Vec::new());
        let (mut vocab_mods, mut table_sizes) = (Vec::new(), Vec::new());
        for i in 2..=c.n {
            for j in 0..c.k {
                let index = (i - 2) * c.k + j;
                let size = c.emb_vocab_size(index);
                let rows = i32::try_from(size).map_err(|_| {
                    crate::Error::InvalidArgument(format!(
                        "{path}: an n-gram table of {size} rows does not fit an i32"
                    ))
                })?;
                embedders.push(ck.embedding(
                    &format!("{path}.embedders.{index}"),
                    rows,
                    c.emb_dim(),
                )?);
                post_projs.push(ck.linear(
                    &format!("{path}.post_projs.{index}"),
                    c.emb_dim(),
                    c.hidden_size,
                    false,
                )?);
                let mut mods = Vec::new();
                let mut power = 1i64;
                for _ in 0..i - 1 {
                    power = (power * c.vocab_size as i64) % size;
                    mods.push(power);
                }
                vocab_mods.push(mods);
                table_sizes.push(size);
            }
        }
        Ok(NgramEmbedding {
            word_embeddings: ck.embedding(
                &format!("{path}.word_embeddings"),
                c.vocab_size,
                c.hidden_size,
            )?,
            embedders,
            post_projs,
            vocab_mods,
            table_sizes,
            n: c.n,
            k: c.k,
        })
    }

    /// The state of `batch` sequences: `n - 1` zero ids (Python: `ArraysCache(size=1)`).
    pub fn make_cache(&self, batch: i32) -> Result<LayerCache> {
        Ok(LayerCache::Arrays(ArraysCache::new(vec![ops::zeros(
            &[batch, self.n - 1],
            Dtype::Int64,
        )?])))
    }

    /// The embeddings `[B, L, hidden]` of token ids `[B, L]` continuing what `cache` holds
    /// (written back: each sequence's last `n - 1` real ids).
    pub fn forward(&self, input_ids: &Array, cache: Option<&mut ArraysCache>) -> Result<Array> {
        let seq_len = *input_ids.shape().last().unwrap_or(&0);
        let input_ids = input_ids.astype(Dtype::Int64)?;
        let context = match cache {
            Some(c) => {
                let keep = self.n - 1;
                let state = &c[0];
                let have = *state.shape().last().unwrap_or(&0);
                // A state mlx_lm saved after fewer than n - 1 tokens: its missing ids are the
                // zeros its shifts would put there.
                let state = if have < keep {
                    let batch = state.shape()[0];
                    let zeros = ops::zeros(&[batch, keep - have], Dtype::Int64)?;
                    ops::concatenate([&zeros, &state.astype(Dtype::Int64)?], -1)?
                } else {
                    state.clone()
                };
                let context = ops::concatenate([&state, &input_ids], -1)?;
                let kept = keep_last(
                    &ops::expand_dims(&context, -1)?,
                    c.lengths.as_ref(),
                    seq_len,
                    keep,
                )?;
                c[0] = ops::squeeze(&kept, -1)?;
                c.advance(seq_len)?;
                context
            }
            None => input_ids.clone(),
        };
        let shifted = (1..self.n)
            .map(|s| shift_right(&context, s))
            .collect::<Result<Vec<_>>>()?;
        let mut x = self.word_embeddings.forward(&input_ids)?;
        for (index, (embedder, proj)) in self.embedders.iter().zip(&self.post_projs).enumerate() {
            let mut ids = context.clone();
            for (s, &m) in shifted.iter().zip(&self.vocab_mods[index]) {
                ids = ops::add(&ids, &ops::multiply(s, m)?)?;
            }
            let ids =
                ops::remainder(&ids, self.table_sizes[index])?.index((Ellipsis, -seq_len..))?;
            x = ops::add(&x, &proj.forward(&embedder.forward(&ids)?)?)?;
        }
        ops::divide(&x, 1 + self.k * (self.n - 1))
    }
}

/// Python: `_shift_right(x, n)`: `x` `[B, T]` moved `n` places right, zeros coming in (all
/// zeros where `T <= n`).
fn shift_right(x: &Array, n: i32) -> Result<Array> {
    let (batch, len) = (x.shape()[0], x.shape()[1]);
    if len <= n {
        return ops::zeros_like(x, None);
    }
    let zeros = ops::zeros(&[batch, n], x.dtype())?;
    ops::concatenate([&zeros, &x.index((.., ..len - n))?], -1)
}
