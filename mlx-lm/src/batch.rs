//! Batched generation (Python: `mlx_lm.generate.batch_generate` and its `BatchGenerator`):
//! several prompts decoded together, one compiled step for the whole batch.
//!
//! Prompts of different lengths are prefilled as mlx_lm prefills them: right-padded, so every
//! sequence's tokens sit at their own positions, with the padding kept out of the
//! linear-attention state; afterwards each key/value buffer rolls right by its sequence's
//! padding, which turns it into left padding that the attention masks from then on.
//!
//! Unlike mlx_lm, whose batch shrinks as sequences finish, a finished sequence keeps its row
//! until the whole batch is done: the step keeps its shapes, so it is traced once per
//! generation ([`BatchTokenGenerator::traces`]). The finished rows' tokens are not reported.

use std::collections::HashSet;
use std::time::Instant;

use mlx_rs::{memory, ops, random, Array};
use mlx_tree::{async_eval, compile_mut, eval, CompiledMut, TreeNode};

use crate::cache::{cache_slots, reserve, write_in_place, Cache, LayerCache};
use crate::cache_rows::{set_row_offsets, write_row};
use crate::error::{Error, Result};
use crate::generate::{check_prompt, sampling_key, FinishReason, GenerateOptions};
use crate::model::LanguageModel;
use crate::sample::{LogitsProcessors, SamplerOptions};
use crate::tokenizer::Tokenizer;

/// The state the compiled batch step reads and writes.
#[derive(Debug, Clone, TreeNode)]
pub struct BatchDecodeState {
    pub cache: Vec<LayerCache>,
    /// The sampling key (random sampling only).
    pub key: Option<Array>,
}

type BatchStepFn<'m> =
    Box<dyn Fn(&mut BatchDecodeState, &Array) -> mlx_rs::Result<(Array, Array)> + 'm>;

/// Tokens `[batch]` in, the next tokens `[batch]` and their log-probabilities `[batch,
/// vocab]` out (Python: `GenerationBatch._step`).
fn batch_step<'m, M: LanguageModel + ?Sized>(
    model: &'m M,
    sampler: SamplerOptions,
    processors: LogitsProcessors,
) -> BatchStepFn<'m> {
    Box::new(move |s: &mut BatchDecodeState, tokens: &Array| {
        let inputs = ops::expand_dims(tokens, 1)?;
        let logits = model.forward(&inputs, Some(&mut s.cache))?;
        let logits = logits.index((.., -1, ..))?;
        let logits = processors.apply(&logits, None)?;
        let logprobs = ops::subtract(&logits, &ops::logsumexp(&logits, -1, true)?)?;
        let key = match &s.key {
            Some(k) if sampler.is_random() => {
                let (next, now) = random::split_pair(k)?;
                s.key = Some(next);
                Some(now)
            }
            _ => None,
        };
        Ok((sampler.sample(&logprobs, key.as_ref())?, logprobs))
    })
}

/// One decode step of a batch.
#[derive(Debug, Clone)]
pub struct BatchStep {
    /// Each sequence's token, `None` for a sequence that had finished before this step.
    pub tokens: Vec<Option<u32>>,
    /// Why each sequence finished at this step, if it did.
    pub finish_reasons: Vec<Option<FinishReason>>,
    /// The log-probabilities every row was sampled from (`[batch, vocab]`).
    pub logprobs: Array,
}

/// Timing and memory of a batch generation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchStats {
    /// Prompt tokens of every sequence.
    pub prompt_tokens: usize,
    /// Prompt tokens per second (the prefill and the first step).
    pub prompt_tps: f64,
    /// Tokens reported so far, over every sequence.
    pub generation_tokens: usize,
    /// Tokens per second after the first step, over every sequence.
    pub generation_tps: f64,
    /// MLX's peak memory in bytes.
    pub peak_memory: usize,
}

/// Tokens of several sequences, one step at a time (Python: `BatchGenerator`, with all the
/// prompts inserted at once).
pub struct BatchTokenGenerator<'m> {
    step: CompiledMut<BatchDecodeState, Array, (Array, Array), BatchStepFn<'m>>,
    state: BatchDecodeState,
    pending: Option<(Array, Array)>,
    max_tokens: Vec<usize>,
    stop_tokens: HashSet<u32>,
    produced: Vec<usize>,
    finished: Vec<bool>,
    steps: usize,
    started: Instant,
    first_step_at: Option<Instant>,
    stats: BatchStats,
    failed: bool,
}

/// Starts generating from every prompt at once (Python: `BatchGenerator.insert(prompts)`
/// then `next()`): prefills all but each prompt's last token, then queues the first step.
/// Every sequence generates up to `options.max_tokens` (per sequence:
/// [`BatchTokenGenerator::set_max_tokens`]) and ends at a token of `options.stop_tokens`.
///
/// Per-token processors that need each sequence's history (the repetition penalty), stop
/// strings and a quantized key/value cache (`kv_bits`) are not supported in a batch (an
/// error); logit bias and every sampler are.
/// Prompts of different lengths are right-padded and prefilled together, the padding then
/// rolled out of each row; with sliding-window layers (whose rings cannot roll) each prompt
/// is prefilled alone instead and written into its row of a cache that keeps a position per
/// row, as the serving engine's slots do.
pub fn batch_generate_step<'m, M: LanguageModel + ?Sized, P: AsRef<[u32]>>(
    model: &'m M,
    prompts: &[P],
    options: &GenerateOptions,
) -> Result<BatchTokenGenerator<'m>> {
    let invalid = Error::InvalidArgument;
    if prompts.is_empty() {
        return Err(invalid("the batch has no prompts".into()));
    }
    for (i, p) in prompts.iter().enumerate() {
        check_prompt(p.as_ref(), model.vocab_size())
            .map_err(|e| invalid(format!("prompt {i}: {e}")))?;
    }
    options.sampler.validate(model.vocab_size())?;
    options.processors.validate(model.vocab_size())?;
    if options.xtc.is_on() && options.sampler.is_random() {
        return Err(invalid(
            "XTC sampling is not supported in a batch generation".into(),
        ));
    }
    if options.max_kv_size.is_some() {
        return Err(invalid(
            "max_kv_size (mlx_lm's BatchRotatingKVCache) is not supported in a batch generation"
                .into(),
        ));
    }
    if options.processors.needs_history() {
        return Err(invalid(
            "the repetition penalty is not supported in a batch generation".into(),
        ));
    }
    if !options.stop_strings.is_empty() {
        return Err(invalid(
            "stop strings are not supported in a batch generation".into(),
        ));
    }
    if options.kv_bits.is_some() {
        // mlx_lm's batch caches (`BatchKVCache`) have no quantized form either.
        return Err(invalid(
            "a quantized key/value cache (kv_bits) is not supported in a batch generation".into(),
        ));
    }
    if options.max_tokens == crate::UNLIMITED {
        return Err(invalid(
            "a batch generation needs a limit on max_tokens (the caches are sized for it)".into(),
        ));
    }
    if options.prefill_step_size == 0 {
        return Err(invalid("prefill_step_size must be positive".into()));
    }
    let batch = i32::try_from(prompts.len())
        .map_err(|_| invalid(format!("{} prompts do not fit a batch", prompts.len())))?;
    let started = Instant::now();
    memory::reset_peak_memory()?;

    // Everything but each prompt's last token, right-padded with 0 (Python:
    // `_right_pad_prompts`).
    let heads: Vec<&[u32]> = prompts
        .iter()
        .map(|p| &p.as_ref()[..p.as_ref().len() - 1])
        .collect();
    let longest = heads.iter().map(|h| h.len()).max().unwrap_or(0);
    let padding: Vec<i32> = heads.iter().map(|h| (longest - h.len()) as i32).collect();
    let padded = padding.iter().any(|p| *p > 0);
    let max_tokens = options.max_tokens;
    let mut cache = model.make_cache(batch, cache_slots(longest + 1)?)?;
    let per_row = padded && cache.iter().any(LayerCache::has_rotating);
    if per_row {
        cache = prefill_rows(
            model,
            &heads,
            options.prefill_step_size,
            longest + max_tokens,
        )?;
    } else if longest > 0 {
        let ids: Vec<u32> = heads
            .iter()
            .flat_map(|h| {
                h.iter()
                    .copied()
                    .chain(std::iter::repeat(0).take(longest - h.len()))
            })
            .collect();
        let ids = Array::from_slice(&ids, &[batch, longest as i32])?;
        if padded {
            let lengths: Vec<i32> = heads.iter().map(|h| h.len() as i32).collect();
            let lengths = Array::from_slice(&lengths, &[batch])?;
            for layer in cache.iter_mut() {
                layer.prepare(&lengths);
            }
        }
        let mut start = 0;
        while start < longest {
            let end = (start + options.prefill_step_size).min(longest);
            let chunk = ids.index((.., start as i32..end as i32))?;
            model.forward(&chunk, Some(&mut cache))?;
            eval(&cache)?;
            start = end;
        }
        if padded {
            let padding = Array::from_slice(&padding, &[batch])?;
            for layer in cache.iter_mut() {
                layer.finalize(&padding)?;
            }
        }
    }
    // As in `generate_step`: the buffers grow once to every position the steps write.
    reserve(&mut cache, cache_slots(longest + 1 + max_tokens + 1)?)?;
    if options.cache_writes_in_place {
        write_in_place(&mut cache)?;
    }
    let key = sampling_key(options)?;
    let last: Vec<u32> = prompts
        .iter()
        .map(|p| p.as_ref()[p.as_ref().len() - 1])
        .collect();
    let mut generator = BatchTokenGenerator {
        step: compile_mut(
            batch_step(model, options.sampler, options.processors.clone()),
            None,
        ),
        state: BatchDecodeState { cache, key },
        pending: None,
        max_tokens: vec![max_tokens; prompts.len()],
        stop_tokens: options.stop_tokens.iter().copied().collect(),
        produced: vec![0; prompts.len()],
        finished: vec![max_tokens == 0; prompts.len()],
        steps: 0,
        started,
        first_step_at: None,
        stats: BatchStats {
            prompt_tokens: prompts.iter().map(|p| p.as_ref().len()).sum(),
            ..Default::default()
        },
        failed: false,
    };
    let first = generator.call(&Array::from_slice(&last, &[batch])?)?;
    generator.pending = Some(first);
    Ok(generator)
}

/// A batch cache of `positions` per row whose row `i` holds `heads[i]` prefilled alone (in
/// chunks of `step` tokens): no padding enters a sliding window's ring, and each row keeps its
/// own position.
fn prefill_rows<M: LanguageModel + ?Sized>(
    model: &M,
    heads: &[&[u32]],
    step: usize,
    positions: usize,
) -> Result<Cache> {
    let capacity = cache_slots(positions + 1)?;
    let mut cache = model.make_cache(heads.len() as i32, capacity)?;
    set_row_offsets(&mut cache)?;
    for (row, head) in heads.iter().enumerate() {
        let mut single = model.make_cache(1, cache_slots(head.len() + 1)?)?;
        for chunk in head.chunks(step) {
            let ids = Array::from_slice(chunk, &[1, chunk.len() as i32])?;
            model.forward(&ids, Some(&mut single))?;
            eval(&single)?;
        }
        reserve(&mut single, capacity)?;
        write_row(&mut cache, row, &single)?;
    }
    eval(&cache)?;
    Ok(cache)
}

impl BatchTokenGenerator<'_> {
    fn call(&mut self, tokens: &Array) -> Result<(Array, Array)> {
        let out = self.step.call(&mut self.state, tokens)?;
        async_eval(&out)?;
        Ok(out)
    }

    /// Sets each sequence's token limit (Python: `batch_generate(max_tokens=[...])`); none
    /// may exceed the `max_tokens` the generation started with, which sized the cache.
    pub fn set_max_tokens(&mut self, max_tokens: &[usize]) -> Result<()> {
        let invalid = Error::InvalidArgument;
        if max_tokens.len() != self.max_tokens.len() {
            return Err(invalid(format!(
                "{} limits for a batch of {}",
                max_tokens.len(),
                self.max_tokens.len()
            )));
        }
        let cap = self.max_tokens.iter().copied().max().unwrap_or(0);
        if self.steps > 0 {
            return Err(invalid(
                "the limits must be set before the first step".into(),
            ));
        }
        if let Some(m) = max_tokens.iter().find(|m| **m > cap) {
            return Err(invalid(format!(
                "a limit of {m} tokens exceeds the generation's max_tokens of {cap}"
            )));
        }
        self.max_tokens = max_tokens.to_vec();
        self.finished = max_tokens.iter().map(|m| *m == 0).collect();
        Ok(())
    }

    /// How often the batch step was traced (compiled): 1 for a whole generation.
    pub fn traces(&self) -> u64 {
        self.step.stats().traces
    }

    /// The statistics so far.
    pub fn stats(&self) -> BatchStats {
        let mut stats = self.stats;
        stats.peak_memory = memory::get_peak_memory().unwrap_or(0);
        stats
    }

    /// The batch's cache (one row per sequence, left-padded when the prompts differed).
    pub fn cache(&self) -> &[LayerCache] {
        &self.state.cache
    }

    fn advance(&mut self) -> Result<Option<BatchStep>> {
        if self.finished.iter().all(|f| *f) {
            return Ok(None);
        }
        let Some((tokens, logprobs)) = self.pending.take() else {
            return Ok(None);
        };
        // The last step any sequence may need: queue the next one before reading this one.
        let left = self
            .max_tokens
            .iter()
            .zip(&self.produced)
            .zip(&self.finished)
            .filter(|(_, f)| !**f)
            .map(|((m, p), _)| m - p)
            .max()
            .unwrap_or(0);
        if left > 1 {
            self.pending = Some(self.call(&tokens)?);
        }
        let ids = tokens.to_vec::<u32>()?;
        let mut step = BatchStep {
            tokens: vec![None; ids.len()],
            finish_reasons: vec![None; ids.len()],
            logprobs,
        };
        for (i, id) in ids.into_iter().enumerate() {
            if self.finished[i] {
                continue;
            }
            step.tokens[i] = Some(id);
            self.produced[i] += 1;
            if self.stop_tokens.contains(&id) {
                step.finish_reasons[i] = Some(FinishReason::Stop);
            } else if self.produced[i] >= self.max_tokens[i] {
                step.finish_reasons[i] = Some(FinishReason::Length);
            }
            self.finished[i] = step.finish_reasons[i].is_some();
        }
        self.steps += 1;
        let now = Instant::now();
        let reported = step.tokens.iter().flatten().count();
        self.stats.generation_tokens += reported;
        match self.first_step_at {
            None => {
                self.first_step_at = Some(now);
                let secs = (now - self.started).as_secs_f64();
                self.stats.prompt_tps = self.stats.prompt_tokens as f64 / secs.max(1e-9);
                self.stats.generation_tokens -= reported;
            }
            Some(first) => {
                let secs = (now - first).as_secs_f64();
                self.stats.generation_tps = self.stats.generation_tokens as f64 / secs.max(1e-9);
            }
        }
        Ok(Some(step))
    }
}

impl Iterator for BatchTokenGenerator<'_> {
    type Item = Result<BatchStep>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.advance() {
            Ok(item) => item.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// The result of [`batch_generate`] (Python: `BatchResponse`).
#[derive(Debug, Clone)]
pub struct BatchResponse {
    /// Each sequence's text.
    pub texts: Vec<String>,
    /// Each sequence's tokens (a stop token not included).
    pub token_ids: Vec<Vec<u32>>,
    /// Why each sequence ended.
    pub finish_reasons: Vec<FinishReason>,
    pub stats: BatchStats,
}

/// Generates from every prompt at once and returns each sequence's text (Python:
/// `batch_generate(model, tokenizer, prompts, return_token_ids=True)`). See
/// [`batch_generate_step`] for what a batch supports.
pub fn batch_generate<M: LanguageModel + ?Sized, P: AsRef<[u32]>>(
    model: &M,
    tokenizer: &Tokenizer,
    prompts: &[P],
    options: &GenerateOptions,
) -> Result<BatchResponse> {
    let mut generator = batch_generate_step(model, prompts, options)?;
    let mut token_ids = vec![Vec::new(); prompts.len()];
    let mut finish_reasons = vec![FinishReason::Length; prompts.len()];
    for step in generator.by_ref() {
        let step = step?;
        for (i, (token, reason)) in step.tokens.iter().zip(&step.finish_reasons).enumerate() {
            if let Some(reason) = reason {
                finish_reasons[i] = *reason;
            }
            match (token, reason) {
                (Some(_), Some(FinishReason::Stop)) | (None, _) => {}
                (Some(t), _) => token_ids[i].push(*t),
            }
        }
    }
    let texts = token_ids
        .iter()
        .map(|ids| tokenizer.decode(ids, false))
        .collect::<Result<Vec<_>>>()?;
    Ok(BatchResponse {
        texts,
        token_ids,
        finish_reasons,
        stats: generator.stats(),
    })
}
