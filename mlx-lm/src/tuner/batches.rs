//! mlx_lm's `iterate_batches`: examples sorted by length, cut into batches, the batches visited
//! in an order drawn from NumPy's generator, each padded to one more than a multiple of 32.

use mlx_rs::Array;

use super::mt19937::RandomState;
use crate::{Error, Result};

/// mlx_lm pads each batch to one plus the next multiple of this (the extra token is the
/// shifted target of the last input).
const PAD_TO: usize = 32;

/// One tokenized example: its tokens and where its completion starts (0 unless the prompt is
/// masked), as mlx_lm's datasets' `process` returns them, and the length batching sorts by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Example {
    pub tokens: Vec<u32>,
    pub offset: usize,
    /// What `iterate_batches` sorts by. mlx_lm's trainer wraps its datasets in `CacheDataset`,
    /// whose `itemlen` is the length of the raw record, a dict: the number of its keys, not of
    /// its tokens. [`Dataset::tokenize`](super::Dataset::tokenize) sets that, so the batches
    /// are mlx_lm's; [`Example::new`] sets the token count (what a plain list gives mlx_lm).
    pub sort_len: usize,
}

impl Example {
    /// An example sorted by its token count.
    pub fn new(tokens: Vec<u32>, offset: usize) -> Self {
        let sort_len = tokens.len();
        Example {
            tokens,
            offset,
            sort_len,
        }
    }
}

/// One padded batch (Python: the pair `iterate_batches` yields).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    /// Row-major `[rows, width]`, zero-padded.
    pub tokens: Vec<i32>,
    pub rows: usize,
    pub width: usize,
    /// Per row: where its completion starts.
    pub offsets: Vec<usize>,
    /// Per row: its length after truncation to `max_seq_length`.
    pub lengths: Vec<usize>,
    /// The longest example before truncation; above `max_seq_length` mlx_lm warns.
    pub longest: usize,
}

impl Batch {
    /// The tokens as an `int32` array `[rows, width]`.
    pub fn tokens_array(&self) -> Result<Array> {
        Array::from_slice(&self.tokens, &[self.rows as i32, self.width as i32]).map_err(Error::Run)
    }

    /// `[rows, 2]` `int32` pairs `(offset, length)`, mlx_lm's second array.
    pub fn lengths_array(&self) -> Result<Array> {
        let mut pairs = Vec::with_capacity(self.rows * 2);
        for (&offset, &length) in self.offsets.iter().zip(&self.lengths) {
            pairs.push(to_i32(offset)?);
            pairs.push(to_i32(length)?);
        }
        Array::from_slice(&pairs, &[self.rows as i32, 2]).map_err(Error::Run)
    }
}

fn to_i32(value: usize) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| Error::InvalidArgument(format!("{value} does not fit an int32 array")))
}

/// Batches over `examples` (Python: `iterate_batches(dataset, batch_size, max_seq_length,
/// loop, seed)`). With `seed`, the generator is reseeded as mlx_lm's `np.random.seed(seed)`;
/// without, `rng` carries on from where the caller left it (mlx_lm's trainer relies on the
/// global generator seeded once by `lora.py`).
#[derive(Debug)]
pub struct BatchIterator<'a> {
    examples: &'a [Example],
    batches: Vec<Vec<usize>>,
    batch_size: usize,
    max_seq_length: usize,
    looping: bool,
    rng: RandomState,
    order: Vec<usize>,
    next: usize,
}

/// Batches over `examples`, drawing the order from `rng` (a fresh `RandomState::new(seed)` for
/// mlx_lm's `seed=` argument).
pub fn iterate_batches(
    examples: &[Example],
    batch_size: usize,
    max_seq_length: usize,
    looping: bool,
    rng: RandomState,
) -> Result<BatchIterator<'_>> {
    if batch_size == 0 || max_seq_length == 0 {
        return Err(Error::InvalidArgument(
            "batch_size and max_seq_length must be positive".into(),
        ));
    }
    if examples.len() < batch_size {
        return Err(Error::InvalidArgument(format!(
            "Dataset must have at least batch_size={batch_size} examples but only has {}.",
            examples.len()
        )));
    }
    // A stable sort, as Python's `sorted`: equal lengths keep the file's order.
    let mut idx: Vec<usize> = (0..examples.len()).collect();
    idx.sort_by_key(|&i| examples[i].sort_len);
    let batches = idx
        .chunks_exact(batch_size)
        .map(<[usize]>::to_vec)
        .collect();
    Ok(BatchIterator {
        examples,
        batches,
        batch_size,
        max_seq_length,
        looping,
        rng,
        order: Vec::new(),
        next: 0,
    })
}

impl BatchIterator<'_> {
    /// The generator's state, to carry on with in the next call (as NumPy's global state).
    pub fn into_rng(self) -> RandomState {
        self.rng
    }

    /// The generator the next epoch's order is drawn from, for other draws between batches:
    /// mlx_lm's validation batches come from NumPy's global state, the one training's order
    /// comes from (see [`evaluate`](super::evaluate)).
    pub fn rng_mut(&mut self) -> &mut RandomState {
        &mut self.rng
    }

    fn make(&self, members: &[usize]) -> Batch {
        let longest = members
            .iter()
            .map(|&j| self.examples[j].tokens.len())
            .max()
            .unwrap_or(0);
        let width = (1 + PAD_TO * longest.div_ceil(PAD_TO)).min(self.max_seq_length);
        let mut tokens = vec![0i32; self.batch_size * width];
        let mut offsets = Vec::with_capacity(self.batch_size);
        let mut lengths = Vec::with_capacity(self.batch_size);
        for (row, &j) in members.iter().enumerate() {
            let example = &self.examples[j];
            let length = example.tokens.len().min(self.max_seq_length);
            for (dst, &src) in tokens[row * width..row * width + length]
                .iter_mut()
                .zip(&example.tokens)
            {
                // np.int32 assignment wraps ids past i32::MAX; no vocabulary is that large.
                *dst = src as i32;
            }
            offsets.push(example.offset);
            lengths.push(length);
        }
        Batch {
            tokens,
            rows: self.batch_size,
            width,
            offsets,
            lengths,
            longest,
        }
    }
}

impl Iterator for BatchIterator<'_> {
    type Item = Batch;

    fn next(&mut self) -> Option<Batch> {
        if self.next == self.order.len() {
            if !self.order.is_empty() && !self.looping {
                return None;
            }
            self.order = self.rng.permutation(self.batches.len());
            self.next = 0;
        }
        let i = self.order[self.next];
        self.next += 1;
        Some(self.make(&self.batches[i]))
    }
}
