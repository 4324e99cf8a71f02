//! Sampling and logits processors (Python: `mlx_lm.sample_utils`), written as array ops so
//! they run inside the compiled decode step. Randomness comes from an explicit key that is
//! state of the step: the key is split each step exactly as MLX's global random state is
//! (`state, use = split(state)`), so with the same seed the draws equal Python's
//! `mx.random.seed(seed)` + `mlx_lm` sampling.

use mlx_rs::ops::{self, CumsumOptions};
use mlx_rs::{random, Array, Dtype, Result};

/// How the next token is picked (Python: `make_sampler(temp, top_p, min_p,
/// min_tokens_to_keep, top_k)`). The default is greedy.
///
/// The probabilities are `f64`, Python floats: what Python derives from them (`1 / temp`,
/// `log(min_p)`) is computed in `f64` and rounded once to the logits' dtype, as there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplerOptions {
    /// `0`: the most likely token (greedy); else sample from `softmax(logprobs / temperature)`.
    pub temperature: f64,
    /// Keep the smallest set of tokens whose probability reaches `top_p` (`0` or `1`: off).
    pub top_p: f64,
    /// Drop tokens less likely than `min_p` times the most likely one (`0`: off).
    pub min_p: f64,
    /// Tokens `min_p` keeps at least.
    pub min_tokens_to_keep: i32,
    /// Keep only the `top_k` most likely tokens (`0`: off).
    pub top_k: i32,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        SamplerOptions {
            temperature: 0.0,
            top_p: 0.0,
            min_p: 0.0,
            min_tokens_to_keep: 1,
            top_k: 0,
        }
    }
}

impl SamplerOptions {
    /// Whether a token is drawn at random (and so a key is needed).
    pub fn is_random(&self) -> bool {
        self.temperature != 0.0
    }

    /// Checks the values as mlx_lm does, before anything is traced.
    pub fn validate(&self, vocab_size: i32) -> crate::Result<()> {
        let bad = |m: String| Err(crate::Error::InvalidArgument(m));
        if !self.temperature.is_finite() || self.temperature < 0.0 {
            return bad(format!(
                "temperature must be a finite number >= 0, got {}",
                self.temperature
            ));
        }
        if !(0.0..=1.0).contains(&self.top_p) {
            return bad(format!("top_p must be in [0, 1], got {}", self.top_p));
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return bad(format!(
                "`min_p` has to be a float in the [0, 1] interval, but is {}",
                self.min_p
            ));
        }
        if self.min_tokens_to_keep < 1 {
            return bad(format!(
                "`min_tokens_to_keep` has to be a positive integer, but is {}",
                self.min_tokens_to_keep
            ));
        }
        if self.top_k < 0 || (self.top_k > 0 && self.top_k >= vocab_size) {
            return bad(format!(
                "`top_k` has to be an integer in the (0, {vocab_size}) interval, but is {}",
                self.top_k
            ));
        }
        Ok(())
    }

    /// Picks tokens `[batch]` from log-probabilities `[batch, vocab]` (Python: the sampler
    /// `make_sampler` returns). `key` is required when [`is_random`](Self::is_random).
    pub fn sample(&self, logprobs: &Array, key: Option<&Array>) -> Result<Array> {
        self.sample_xtc(logprobs, None, key)
    }

    /// [`sample`](Self::sample) with XTC in the chain (Python: `make_sampler(...,
    /// xtc_probability, xtc_threshold, xtc_special_tokens)`): `xtc` is `(its options, the
    /// key of its coin)`, used when the sampling is random and XTC [on](Xtc::is_on).
    pub fn sample_xtc(
        &self,
        logprobs: &Array,
        xtc: Option<(&Xtc, &Array)>,
        key: Option<&Array>,
    ) -> Result<Array> {
        if !self.is_random() {
            return ops::argmax(logprobs, -1, false);
        }
        let mut x = logprobs.clone();
        if 0.0 < self.top_p && self.top_p < 1.0 {
            x = apply_top_p(&x, self.top_p)?;
        }
        if self.min_p != 0.0 {
            x = apply_min_p(&x, self.min_p, self.min_tokens_to_keep)?;
        }
        if let Some((xtc, coin_key)) = xtc.filter(|(x, _)| x.is_on()) {
            x = xtc.apply(&x, coin_key)?;
        }
        if self.top_k > 0 {
            x = apply_top_k(&x, self.top_k)?;
        }
        // Python: logits * (1 / temp), the reciprocal a Python float (weakly typed).
        let scaled = ops::multiply(&x, 1.0 / self.temperature)?;
        random::categorical(&scaled, -1, key)
    }
}

/// XTC sampling, "exclude top choices" (Python: `make_sampler`'s `xtc_probability`,
/// `xtc_threshold` and `xtc_special_tokens`, and its `apply_xtc`): at each random step, with
/// probability `probability`, every token more likely than the least likely token above
/// `threshold` is dropped, so that the least likely of the likely ones stays; the special
/// tokens are never dropped. It runs in the sampler's chain after top-p and min-p, before
/// top-k, and draws its coin from the sampling key before the token is drawn, as mlx_lm's
/// compiled `apply_xtc` draws from the global random state.
#[derive(Debug, Clone, PartialEq)]
pub struct Xtc {
    /// The probability of applying it at a step (`0`: off; mlx_lm's default).
    pub probability: f64,
    /// The probability a token needs to count as a top choice (mlx_lm's default: `0.1`).
    pub threshold: f64,
    /// Tokens never excluded (mlx_lm's commands pass the tokenizer's `encode("\n")` and
    /// its end-of-sequence ids).
    pub special_tokens: Vec<u32>,
}

/// mlx_lm's default `xtc_threshold`.
pub const DEFAULT_XTC_THRESHOLD: f64 = 0.1;

impl Default for Xtc {
    fn default() -> Self {
        Xtc {
            probability: 0.0,
            threshold: DEFAULT_XTC_THRESHOLD,
            special_tokens: Vec::new(),
        }
    }
}

impl Xtc {
    /// Whether it is in the sampler's chain (Python: `xtc_probability > 0.0`); it then runs
    /// at random steps only (a temperature above 0).
    pub fn is_on(&self) -> bool {
        self.probability > 0.0
    }

    /// Checks the values as `apply_xtc` does when it runs, and the special tokens against
    /// the vocabulary.
    pub fn validate(&self, vocab_size: i32) -> crate::Result<()> {
        let bad = |m: String| Err(crate::Error::InvalidArgument(m));
        if !self.is_on() {
            return Ok(());
        }
        if !(0.0..=0.5).contains(&self.threshold) {
            return bad(format!(
                "`threshold` has to be a float in the [0, 0.5] interval, but is {}",
                self.threshold
            ));
        }
        if !(0.0..=1.0).contains(&self.probability) {
            return bad(format!(
                "`probability` has to be a float in the [0, 1] interval, but is {}",
                self.probability
            ));
        }
        if let Some(t) = self
            .special_tokens
            .iter()
            .find(|t| **t as i64 >= vocab_size as i64)
        {
            return bad(format!(
                "xtc_special_tokens names token {t}, but the vocabulary has {vocab_size}"
            ));
        }
        Ok(())
    }

    /// Python: `apply_xtc(logits, probability, threshold, special_tokens)`, its coin drawn
    /// with `key` (`mx.random.uniform(0, 1)`).
    pub fn apply(&self, logits: &Array, key: &Array) -> Result<Array> {
        let probs = ops::softmax(logits, -1, false)?;
        // Python floats next to the probabilities: weakly typed, so in their dtype.
        let above = ops::where_(
            &ops::greater(&probs, self.threshold)?,
            &probs,
            f64::INFINITY,
        )?;
        let least = ops::min(&above, -1, true)?;
        let mut mask = ops::greater(&probs, &least)?;
        if !self.special_tokens.is_empty() {
            let ids = Array::from_slice(&self.special_tokens, &[self.special_tokens.len() as i32])?;
            mask = mask.index_put((.., &ids), Array::from_scalar(false))?;
        }
        let coin = random::uniform(&[], random::UniformOptions::default(), key)?;
        ops::where_(
            &ops::greater(&coin, self.probability)?,
            logits,
            &ops::where_(&mask, f64::NEG_INFINITY, logits)?,
        )
    }
}

/// Python: `apply_top_p`.
fn apply_top_p(logprobs: &Array, top_p: f64) -> Result<Array> {
    let sorted = ops::sort(logprobs, -1)?;
    let probs = ops::exp(&sorted.astype(Dtype::Float32)?)?;
    let above = ops::cumsum(
        &probs,
        -1,
        CumsumOptions::default().reverse(true).inclusive(false),
    )?;
    let total = ops::add(
        &above.index((mlx_rs::ops::Ellipsis, ..1))?,
        &probs.index((mlx_rs::ops::Ellipsis, ..1))?,
    )?;
    let dropped = ops::sum(
        &ops::greater_equal(&above, &ops::multiply(&total, top_p)?)?,
        -1,
        true,
    )?;
    let threshold = ops::take_along_axis(&sorted, &dropped, -1)?;
    ops::where_(
        &ops::less(logprobs, &threshold)?,
        f32::NEG_INFINITY,
        logprobs,
    )
}

/// Python: `apply_min_p`.
fn apply_min_p(logprobs: &Array, min_p: f64, min_tokens_to_keep: i32) -> Result<Array> {
    let top = ops::max(logprobs, -1, true)?;
    // Python: top_logprobs + math.log(min_p), the log a Python float.
    let scaled = ops::add(&top, min_p.ln())?;
    let mut remove = ops::less(logprobs, &scaled)?;
    if min_tokens_to_keep > 1 {
        let top_indices = ops::argpartition(logprobs, -min_tokens_to_keep, -1)?
            .index((mlx_rs::ops::Ellipsis, -min_tokens_to_keep..))?;
        remove = ops::put_along_axis(&remove, &top_indices, Array::from_scalar(false), -1)?;
    }
    ops::where_(&remove, f32::NEG_INFINITY, logprobs)
}

/// Python: `apply_top_k`.
fn apply_top_k(logprobs: &Array, top_k: i32) -> Result<Array> {
    let mask = ops::argpartition(&ops::negative(logprobs)?, top_k - 1, -1)?
        .index((mlx_rs::ops::Ellipsis, top_k..))?;
    let inf = Array::from_scalar(f32::NEG_INFINITY).astype(logprobs.dtype())?;
    ops::put_along_axis(logprobs, &mask, &inf, -1)
}

/// Adjustments of the logits before sampling (Python: `make_logits_processors(logit_bias,
/// repetition_penalty, repetition_context_size)`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogitsProcessors {
    /// Added to the logits of these tokens.
    pub logit_bias: Vec<(u32, f64)>,
    /// Logits of tokens among the last `repetition_context_size` are divided by it (multiplied
    /// when negative).
    pub repetition_penalty: Option<f64>,
    /// How many recent tokens the penalty looks at (Python's default: 20).
    pub repetition_context_size: usize,
}

impl LogitsProcessors {
    /// No processing.
    pub fn none() -> LogitsProcessors {
        LogitsProcessors {
            repetition_context_size: 20,
            ..Default::default()
        }
    }

    /// Whether the processors need the recent tokens.
    pub fn needs_history(&self) -> bool {
        self.repetition_penalty.is_some_and(|p| p != 0.0) && self.repetition_context_size > 0
    }

    /// Checks the values as mlx_lm does.
    pub fn validate(&self, vocab_size: i32) -> crate::Result<()> {
        if let Some(p) = self.repetition_penalty {
            if p.is_nan() || p < 0.0 {
                return Err(crate::Error::InvalidArgument(format!(
                    "penalty must be a non-negative float, got {p}"
                )));
            }
        }
        if let Some((t, _)) = self
            .logit_bias
            .iter()
            .find(|(t, _)| *t as i64 >= vocab_size as i64)
        {
            return Err(crate::Error::InvalidArgument(format!(
                "logit_bias names token {t}, but the vocabulary has {vocab_size}"
            )));
        }
        Ok(())
    }

    /// Applies the processors to logits `[1, vocab]`. `history` holds the last
    /// `repetition_context_size` tokens (padded with repeats of the first, which change
    /// nothing: a token penalized twice is written with the same value twice).
    pub fn apply(&self, logits: &Array, history: Option<&Array>) -> Result<Array> {
        let mut logits = logits.clone();
        if !self.logit_bias.is_empty() {
            let ids: Vec<u32> = self.logit_bias.iter().map(|(t, _)| *t).collect();
            // Python: mx.array of Python floats, float32.
            let values: Vec<f32> = self.logit_bias.iter().map(|(_, v)| *v as f32).collect();
            let ids = Array::from_slice(&ids, &[ids.len() as i32])?;
            let values = Array::from_slice(&values, &[values.len() as i32])?;
            logits = logits.at((.., &ids)).add(&values)?;
        }
        if let (Some(penalty), Some(tokens)) =
            (self.repetition_penalty.filter(|p| *p != 0.0), history)
        {
            let selected = logits.index((.., tokens))?;
            let selected = ops::where_(
                &ops::less(&selected, 0.0f32)?,
                &ops::multiply(&selected, penalty)?,
                &ops::divide(&selected, penalty)?,
            )?;
            logits = logits.index_put((.., tokens), &selected)?;
        }
        Ok(logits)
    }
}
