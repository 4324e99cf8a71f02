//! Generation (Python: `mlx_lm.generate`): the prompt is prefilled in chunks, then one decode
//! step — model, logits processors, log-softmax and sampling — runs compiled with the cache,
//! the random key and the recent tokens as `&mut` state. It is traced once per generation
//! ([`TokenGenerator::traces`]), and each next step is queued (`async_eval`) before the
//! current token is read back, as mlx_lm pipelines it.

use std::collections::HashSet;
use std::time::Instant;

use mlx_rs::{memory, ops, random, Array};
use mlx_tree::{async_eval, compile_mut, eval, CompiledMut, TreeNode};

use crate::cache::{
    bound_kv_cache, cache_slots, check_quantizable, quantize_kv_cache, reserve,
    set_prefix_attention, write_in_place, Cache, LayerCache,
};
use crate::error::{Error, Result};
use crate::model::LanguageModel;
use crate::sample::{LogitsProcessors, SamplerOptions, Xtc};
use crate::structured::Constraint;
use crate::text_assembler::TextAssembler;
use crate::tokenizer::Tokenizer;

/// How to generate (Python: the keyword arguments of `generate_step` / `stream_generate`).
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// The most tokens to generate (Python's default: 256). [`UNLIMITED`]: no limit, until a
    /// stop token (Python: `-1`); the cache's buffers then grow as the generation needs them,
    /// each time to twice their size, and the compiled step traces once more at each growth.
    pub max_tokens: usize,
    pub sampler: SamplerOptions,
    pub processors: LogitsProcessors,
    /// The seed of the sampling key (Python: `mx.random.seed(seed)`); `None`: from the clock.
    pub seed: Option<u64>,
    /// Prompt tokens per prefill chunk (Python's default: 2048).
    pub prefill_step_size: usize,
    /// Tokens that end the generation (not included in the text); the model's
    /// `eos_token_id`s are the usual choice.
    pub stop_tokens: Vec<u32>,
    /// Text that ends the generation (cut from the output).
    pub stop_strings: Vec<String>,
    /// Whether the generation's key/value caches write each decode step into their buffers
    /// in place (default: on; see
    /// [`KvCache::set_writes_in_place`](crate::cache::KvCache::set_writes_in_place)); off,
    /// every step updates them functionally, to measure the difference. Matters on a CUDA
    /// GPU only, where the one-kernel decode attention runs.
    pub cache_writes_in_place: bool,
    /// Whether the decode step runs compiled (default: on). Off, the step runs op by op,
    /// with the key/value caches attending over their written prefix
    /// ([`KvCache::set_prefix_attention`](crate::cache::KvCache::set_prefix_attention)):
    /// the ops of mlx_lm's `generate_step`, so tokens and log-probabilities equal mlx_lm's
    /// bit for bit when linked to the same libmlx (with the model's kernels off,
    /// [`KernelOptions`](crate::KernelOptions), on a CUDA GPU). It matters in bfloat16, where
    /// the compiled step's fused kernels round fewer intermediates than mlx_lm's separate
    /// ops, and near-ties may then pick other tokens; `docs/language-models.md` says by how
    /// much, which side is closer to float32, and what the eager step costs.
    pub compile: bool,
    /// A grammar the output must follow (structured output,
    /// [`structured`](crate::structured)); the generation starts from a clone of it and
    /// stops ([`FinishReason::Stop`]) once the grammar is complete. Its mask is an input of
    /// the compiled step, which then reads each token back before queueing the next (the
    /// next mask depends on it).
    pub constraint: Option<Constraint>,
    /// Bits per element of a quantized key/value cache (Python: `kv_bits`: 2, 3, 4, 5, 6 or
    /// 8): once the cache holds `quantized_kv_start` positions, its key/value layers become
    /// [`QuantizedKvCache`](crate::cache::QuantizedKvCache)s and attention runs on the
    /// quantized keys and values; recurrent layers stay. `None` (the default): float
    /// throughout. Sliding-window layers cannot be quantized (an error, as in mlx_lm).
    pub kv_bits: Option<i32>,
    /// Features per quantization group of the key/value cache (Python: `kv_group_size`,
    /// default 64; 32, 64 or 128, dividing the heads' features).
    pub kv_group_size: i32,
    /// The number of cached positions from which the key/value cache is quantized (Python:
    /// `quantized_kv_start`, default 5000), checked after each prefill chunk and each step as
    /// mlx_lm does; 0 quantizes after the first prefill chunk. The compiled step traces once
    /// more at the switch.
    pub quantized_kv_start: usize,
    /// A bound on the positions each key/value layer holds (Python: `max_kv_size`): a fresh
    /// cache's key/value layers become rotating caches of this many slots that keep the first
    /// 4 positions and evict the oldest of the rest (mlx_lm's `make_prompt_cache(model,
    /// max_kv_size)`, [`bound_kv_cache`](crate::cache::bound_kv_cache)), for the model types
    /// mlx_lm bounds: not those whose mlx_lm class makes its own cache (llama, the hybrids,
    /// the sliding-window families: [`OWN_CACHE_MODEL_TYPES`](crate::cache::OWN_CACHE_MODEL_TYPES)),
    /// which mlx_lm leaves unbounded. A given cache (a prompt cache, an earlier turn's) is
    /// used as it is, as in mlx_lm. `None` (the default): unbounded.
    pub max_kv_size: Option<usize>,
    /// XTC sampling (Python: `make_sampler(..., xtc_probability, xtc_threshold,
    /// xtc_special_tokens)`); off by default. It needs a temperature above 0.
    pub xtc: Xtc,
}

/// [`GenerateOptions::max_tokens`] without a limit (Python: `max_tokens=-1`): generation
/// runs until a stop token (or a stop string, or a completed grammar).
pub const UNLIMITED: usize = usize::MAX;

/// mlx_lm's `DEFAULT_QUANTIZED_KV_START`.
pub const DEFAULT_QUANTIZED_KV_START: usize = 5000;

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_tokens: 256,
            sampler: SamplerOptions::default(),
            processors: LogitsProcessors::none(),
            seed: None,
            prefill_step_size: 2048,
            stop_tokens: Vec::new(),
            stop_strings: Vec::new(),
            cache_writes_in_place: true,
            compile: true,
            constraint: None,
            kv_bits: None,
            kv_group_size: 64,
            quantized_kv_start: DEFAULT_QUANTIZED_KV_START,
            max_kv_size: None,
            xtc: Xtc::default(),
        }
    }
}

/// The key/value cache quantization of a generation ([`GenerateOptions::kv_bits`]).
#[derive(Debug, Clone, Copy)]
struct KvQuantization {
    bits: i32,
    group_size: i32,
    start: usize,
}

impl KvQuantization {
    fn of(options: &GenerateOptions) -> Option<KvQuantization> {
        options.kv_bits.map(|bits| KvQuantization {
            bits,
            group_size: options.kv_group_size,
            start: options.quantized_kv_start,
        })
    }

    /// Python: `maybe_quantize_kv_cache`: quantizes the key/value layers of `cache`, which
    /// holds `positions` positions, once they reach `quantized_kv_start`. Returns whether it
    /// did.
    fn maybe_quantize(self, cache: &mut [LayerCache], positions: usize) -> Result<bool> {
        if positions < self.start {
            return Ok(false);
        }
        quantize_kv_cache(cache, self.group_size, self.bits)?;
        Ok(true)
    }
}

/// The state the compiled decode step reads and writes.
#[derive(Debug, Clone, TreeNode)]
pub struct DecodeState {
    pub cache: Vec<LayerCache>,
    /// The sampling key (random sampling only).
    pub key: Option<Array>,
    /// The last tokens, for the repetition penalty.
    pub history: Option<Array>,
    /// The grammar's additive mask of the next logits (`[1, vocab]`: `0` or `-inf`).
    pub mask: Option<Array>,
}

type StepFn<'m> = Box<dyn Fn(&mut DecodeState, &Array) -> mlx_rs::Result<(Array, Array)> + 'm>;

/// The decode step: tokens `[L]` in, the next token `[1]` and its log-probabilities `[vocab]`
/// out (Python: `generate_step`'s `_step`).
fn decode_step<'m, M: LanguageModel + ?Sized>(
    model: &'m M,
    sampler: SamplerOptions,
    processors: LogitsProcessors,
    xtc: Xtc,
) -> StepFn<'m> {
    Box::new(move |s: &mut DecodeState, tokens: &Array| {
        let inputs = ops::expand_dims(tokens, 0)?;
        let logits = model.forward(&inputs, Some(&mut s.cache))?;
        let logits = logits.index((.., -1, ..))?;
        if let Some(history) = &mut s.history {
            let keep = history.shape()[0] - tokens.shape()[0];
            let recent = history.index(-keep.max(0)..)?;
            *history = ops::concatenate(&[recent, tokens.clone()], 0)?;
        }
        let logits = processors.apply(&logits, s.history.as_ref())?;
        let logits = match &s.mask {
            Some(mask) => ops::add(&logits, &mask.astype(logits.dtype())?)?,
            None => logits,
        };
        let logprobs = ops::subtract(&logits, &ops::logsumexp(&logits, None, true)?)?;
        let (key, coin) = match &s.key {
            Some(k) if sampler.is_random() => {
                let (next, now) = random::split_pair(k)?;
                if xtc.is_on() {
                    // mlx_lm's XTC draws its coin from the random state first, then the
                    // token is drawn from the state after it.
                    let (after, draw) = random::split_pair(&next)?;
                    s.key = Some(after);
                    (Some(draw), Some(now))
                } else {
                    s.key = Some(next);
                    (Some(now), None)
                }
            }
            _ => (None, None),
        };
        let token =
            sampler.sample_xtc(&logprobs, coin.as_ref().map(|c| (&xtc, c)), key.as_ref())?;
        Ok((token, ops::squeeze(&logprobs, 0)?))
    })
}

/// Timing and memory of a generation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GenerationStats {
    pub prompt_tokens: usize,
    /// Prompt tokens per second (prefill and the first step).
    pub prompt_tps: f64,
    pub generation_tokens: usize,
    /// Generated tokens per second after the first.
    pub generation_tps: f64,
    /// MLX's peak memory in bytes.
    pub peak_memory: usize,
    /// Generated tokens the draft model proposed and the model accepted (speculative
    /// decoding; 0 otherwise).
    pub accepted_draft_tokens: usize,
}

/// When a generation started and when it handed out its first token: the rates of its
/// [`GenerationStats`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct TokenClock {
    started: Instant,
    first_token_at: Option<Instant>,
}

impl TokenClock {
    pub(crate) fn new(started: Instant) -> TokenClock {
        TokenClock {
            started,
            first_token_at: None,
        }
    }

    /// Counts a token handed out now, after `produced` others: the prompt's rate at the
    /// first, the generation's (the tokens after the first) from then on.
    pub(crate) fn count(&mut self, stats: &mut GenerationStats, produced: &mut usize) {
        let now = Instant::now();
        match self.first_token_at {
            None => {
                self.first_token_at = Some(now);
                let secs = (now - self.started).as_secs_f64();
                stats.prompt_tps = stats.prompt_tokens as f64 / secs.max(1e-9);
            }
            Some(first) => {
                let secs = (now - first).as_secs_f64();
                stats.generation_tps = *produced as f64 / secs.max(1e-9);
            }
        }
        *produced += 1;
        stats.generation_tokens = *produced;
    }
}

/// The decode step, compiled (traced once per generation) or op by op as mlx_lm runs it.
enum Step<'m> {
    // Boxed: the compiled function is some 300 bytes, the eager one a pointer.
    Compiled(Box<CompiledMut<DecodeState, Array, (Array, Array), StepFn<'m>>>),
    Eager(StepFn<'m>),
}

/// Generated tokens with their log-probabilities (Python: the generator `generate_step`).
pub struct TokenGenerator<'m> {
    step: Step<'m>,
    state: DecodeState,
    pending: Option<(Array, Array)>,
    produced: usize,
    max_tokens: usize,
    clock: TokenClock,
    stats: GenerationStats,
    failed: bool,
    constraint: Option<Constraint>,
    /// The grammar is complete: the last token ended the generation.
    grammar_done: bool,
    /// How the key/value cache is quantized (`kv_bits`).
    kv_quantization: Option<KvQuantization>,
    /// The positions the cache holds (fed tokens, the step queued last included).
    positions: usize,
    /// Whether the key/value cache was quantized.
    kv_quantized: bool,
    /// The positions the cache's key/value buffers hold (at least): past them, with
    /// [`UNLIMITED`] tokens, they grow.
    capacity: usize,
}

/// Starts generating from `prompt` (Python: `generate_step(prompt, model, ...)`): prefills all
/// but the last prompt token in chunks, then queues the first decode step.
pub fn generate_step<'m, M: LanguageModel + ?Sized>(
    model: &'m M,
    prompt: &[u32],
    options: &GenerateOptions,
) -> Result<TokenGenerator<'m>> {
    generate_step_inner(model, prompt, None, options)
}

/// [`generate_step`] continuing from a cache that already holds earlier tokens (Python:
/// `generate_step(prompt, model, prompt_cache=cache)`): one from
/// [`load_prompt_cache`](crate::load_prompt_cache), or the cache of an earlier generation
/// ([`TokenGenerator::into_cache`]), for the next turn of a chat. `prompt` holds only the new
/// tokens. The cache must fit the model (checked); its buffers grow as the generation needs.
pub fn generate_step_with_cache<'m, M: LanguageModel + ?Sized>(
    model: &'m M,
    prompt: &[u32],
    cache: Cache,
    options: &GenerateOptions,
) -> Result<TokenGenerator<'m>> {
    generate_step_inner(model, prompt, Some(cache), options)
}

fn generate_step_inner<'m, M: LanguageModel + ?Sized>(
    model: &'m M,
    prompt: &[u32],
    cache: Option<Cache>,
    options: &GenerateOptions,
) -> Result<TokenGenerator<'m>> {
    let invalid = Error::InvalidArgument;
    let vocab = model.vocab_size();
    check_prompt(prompt, vocab)?;
    options.sampler.validate(vocab)?;
    options.processors.validate(vocab)?;
    if options.sampler.is_random() {
        options.xtc.validate(vocab)?;
    }
    if options.prefill_step_size == 0 {
        return Err(invalid("prefill_step_size must be positive".into()));
    }
    let started = Instant::now();
    memory::reset_peak_memory()?;
    // Positions a given cache holds already.
    let held = match &cache {
        Some(c) => c
            .iter()
            .filter_map(LayerCache::offset)
            .next()
            .map(|o| o.item::<i32>())
            .transpose()?
            .unwrap_or(0)
            .max(0) as usize,
        None => 0,
    };
    // The prefill attends over a buffer of the prompt's size, as mlx_lm's grows; the buffer
    // then grows once to every position the decode steps write (the pipelined step after the
    // last token too), so that one compiled step serves them all. Both in steps of 256.
    // Without a limit, the buffers hold the prompt and grow as the decode steps need
    // (`TokenGenerator::call`).
    let prefill_capacity = cache_slots(held + prompt.len())?;
    let capacity = match options.max_tokens {
        UNLIMITED => prefill_capacity,
        n => cache_slots((held + prompt.len()).saturating_add(n).saturating_add(1))?,
    };
    let mut fresh = model.make_cache(1, prefill_capacity)?;
    if let (None, Some(n)) = (&cache, options.max_kv_size) {
        bound_kv_cache(&mut fresh, model.model_type(), n)?;
    }
    let mut cache = match cache {
        None => fresh,
        Some(cache) => {
            if cache.len() != fresh.len() {
                return Err(invalid(format!(
                    "the cache has {} layers but the model {}",
                    cache.len(),
                    fresh.len()
                )));
            }
            for (i, (layer, fresh)) in cache.iter().zip(&fresh).enumerate() {
                layer.check_fits(fresh, i)?;
            }
            cache
        }
    };
    if let Some(bits) = options.kv_bits {
        check_quantizable(&cache, options.kv_group_size, bits)?;
    }
    reserve(&mut cache, prefill_capacity)?;
    set_prefix_attention(&mut cache, !options.compile);

    let (head, tail) = prompt.split_at(prompt.len() - 1);
    let mut positions = held;
    let mut kv_quantized = false;
    for chunk in head.chunks(options.prefill_step_size) {
        let ids = Array::from_slice(chunk, &[1, chunk.len() as i32])?;
        model.forward(&ids, Some(&mut cache))?;
        positions += chunk.len();
        if let (Some(q), false) = (KvQuantization::of(options), kv_quantized) {
            kv_quantized = q.maybe_quantize(&mut cache, positions)?;
        }
        eval(&cache)?;
    }
    reserve(&mut cache, capacity)?;
    if options.cache_writes_in_place && options.compile {
        write_in_place(&mut cache)?;
    }
    let history = if options.processors.needs_history() {
        let n = options.processors.repetition_context_size;
        let recent = &head[head.len().saturating_sub(n)..];
        let pad = n - recent.len();
        let filled: Vec<u32> = std::iter::repeat(prompt[0])
            .take(pad)
            .chain(recent.iter().copied())
            .collect();
        Some(Array::from_slice(&filled, &[n as i32])?)
    } else {
        None
    };
    let key = sampling_key(options)?;
    let mut constraint = options.constraint.clone();
    let mask = match &mut constraint {
        Some(c) => {
            if c.vocab_size() != vocab as usize {
                return Err(invalid(format!(
                    "the constraint masks {} logits but the model has {vocab}",
                    c.vocab_size()
                )));
            }
            Some(grammar_mask(c)?)
        }
        None => None,
    };
    let mut generator = TokenGenerator {
        step: {
            let step = decode_step(
                model,
                options.sampler,
                options.processors.clone(),
                options.xtc.clone(),
            );
            if options.compile {
                Step::Compiled(Box::new(compile_mut(step, None)))
            } else {
                Step::Eager(step)
            }
        },
        state: DecodeState {
            cache,
            key,
            history,
            mask,
        },
        pending: None,
        produced: 0,
        max_tokens: options.max_tokens,
        clock: TokenClock::new(started),
        stats: GenerationStats {
            prompt_tokens: prompt.len(),
            ..Default::default()
        },
        failed: false,
        constraint,
        grammar_done: false,
        kv_quantization: KvQuantization::of(options),
        positions,
        kv_quantized,
        capacity: capacity as usize,
    };
    let first = generator.call(&Array::from_slice(tail, &[1])?)?;
    generator.pending = Some(first);
    Ok(generator)
}

/// The additive mask of the tokens `constraint` allows next (`[1, vocab]`); one that allows
/// only the end-of-sequence tokens when the grammar failed.
fn grammar_mask(constraint: &mut Constraint) -> Result<Array> {
    let mut row = vec![0.0f32; constraint.vocab_size()];
    if constraint.write_mask(&mut row).is_err() {
        constraint.write_end_mask(&mut row);
    }
    Ok(Array::from_slice(&row, &[1, row.len() as i32])?)
}

/// An error unless `prompt` can be generated from: not empty, every token in the vocabulary.
pub(crate) fn check_prompt(prompt: &[u32], vocab: i32) -> Result<()> {
    if prompt.is_empty() {
        return Err(Error::InvalidArgument("the prompt is empty".into()));
    }
    match prompt.iter().find(|t| **t as i64 >= vocab as i64) {
        Some(t) => Err(Error::InvalidArgument(format!(
            "prompt token {t} is outside the vocabulary of {vocab}"
        ))),
        None => Ok(()),
    }
}

/// The key a random sampler starts from: the seed's, or the clock's without one.
pub(crate) fn sampling_key(options: &GenerateOptions) -> Result<Option<Array>> {
    if !options.sampler.is_random() {
        return Ok(None);
    }
    let seed = options.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    Ok(Some(random::key(seed)?))
}

impl TokenGenerator<'_> {
    fn call(&mut self, tokens: &Array) -> Result<(Array, Array)> {
        let needed = self.positions + tokens.size();
        if needed > self.capacity {
            self.grow(needed)?;
        }
        let out = match &self.step {
            Step::Compiled(step) => step.call(&mut self.state, tokens)?,
            Step::Eager(step) => step(&mut self.state, tokens)?,
        };
        // Python quantizes inside the step, after the model: the step's own attention ran on
        // the cache as it was, the next one runs on the quantized cache (a new tree: the
        // compiled step traces once more).
        self.positions += tokens.size();
        if let (Some(q), false) = (self.kv_quantization, self.kv_quantized) {
            self.kv_quantized = q.maybe_quantize(&mut self.state.cache, self.positions)?;
        }
        async_eval(&out)?;
        Ok(out)
    }

    /// Grows the key/value buffers to hold `needed` positions, to twice their size at least
    /// (an unlimited generation's; rotating and recurrent layers keep their size). The
    /// buffers are new arrays, given to the cache alone again where it writes in place.
    fn grow(&mut self, needed: usize) -> Result<()> {
        let capacity = cache_slots(needed.max(self.capacity.saturating_mul(2)))?;
        let cache = &mut self.state.cache;
        // The queued step may still write its slot in place, which the copy below does not
        // depend on: wait for it (once per growth).
        eval(&*cache)?;
        reserve(cache, capacity)?;
        let mut in_place = false;
        for layer in cache.iter_mut() {
            layer.try_for_each_mut(&mut |c| -> mlx_rs::Result<()> {
                if let LayerCache::Kv(kv) = c {
                    if kv.writes_in_place() {
                        in_place = true;
                        kv.set_writes_in_place(false)?;
                    }
                }
                Ok(())
            })?;
        }
        if in_place {
            write_in_place(cache)?;
        }
        self.capacity = capacity as usize;
        Ok(())
    }

    /// How often the decode step was traced (compiled): 1 for a whole generation (2 when the
    /// key/value cache switches to a quantized one during it,
    /// [`GenerateOptions::kv_bits`]; once more each time an [`UNLIMITED`] generation's cache
    /// grows), 0 for an eager one ([`GenerateOptions::compile`] off).
    pub fn traces(&self) -> u64 {
        match &self.step {
            Step::Compiled(step) => step.stats().traces,
            Step::Eager(_) => 0,
        }
    }

    /// The statistics so far.
    pub fn stats(&self) -> GenerationStats {
        let mut stats = self.stats;
        stats.peak_memory = memory::get_peak_memory().unwrap_or(0);
        stats
    }

    /// The cache, as the generation left it.
    pub fn cache(&self) -> &[LayerCache] {
        &self.state.cache
    }

    /// The cache, to continue from (Python: the `prompt_cache` list, which generation
    /// updates in place). It holds the prompt and every generated token that was fed back:
    /// all but the last when the generation ran to `max_tokens`.
    pub fn into_cache(self) -> Cache {
        self.state.cache
    }

    fn advance(&mut self) -> Result<Option<(u32, Array)>> {
        if self.produced == self.max_tokens {
            return Ok(None);
        }
        let Some((token, logprobs)) = self.pending.take() else {
            return Ok(None);
        };
        let id = if let Some(mut constraint) = self.constraint.take() {
            // The next mask depends on this token: read it back first.
            let id = token.item::<u32>()?;
            self.grammar_done = constraint.commit(id).is_err() || constraint.is_finished();
            if self.produced + 1 < self.max_tokens && !self.grammar_done {
                self.state.mask = Some(grammar_mask(&mut constraint)?);
                self.pending = Some(self.call(&token)?);
            }
            self.constraint = Some(constraint);
            id
        } else {
            // Queue the next step before reading this token back.
            if self.produced + 1 < self.max_tokens {
                self.pending = Some(self.call(&token)?);
            }
            token.item::<u32>()?
        };
        self.clock.count(&mut self.stats, &mut self.produced);
        Ok(Some((id, logprobs)))
    }
}

impl Iterator for TokenGenerator<'_> {
    type Item = Result<(u32, Array)>;

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

/// Why a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// A stop token or a stop string.
    Stop,
    /// `max_tokens` were generated.
    Length,
}

/// One step of a text generation (Python: `GenerationResponse`).
#[derive(Debug, Clone)]
pub struct GenerationResponse {
    /// The text this token completed (may be empty while a character is incomplete).
    pub text: String,
    pub token: u32,
    /// Log-probabilities of the distribution the token was drawn from (`[vocab]`).
    pub logprobs: Array,
    /// Whether the draft model proposed the token (speculative decoding; Python:
    /// `from_draft`).
    pub from_draft: bool,
    pub finish_reason: Option<FinishReason>,
    pub stats: GenerationStats,
}

/// Streams text (Python: `stream_generate`): tokens from [`generate_step`], decoded as they
/// complete characters, ending at a stop token, a stop string (cut from the text) or
/// `max_tokens`. Text that may be the start of a stop string is held back until it is known
/// not to be, so the pieces joined never contain a stop string.
pub struct TextStream<'m, 't> {
    tokens: TokenGenerator<'m>,
    end: TextEnd<'t>,
}

/// What ends a stream's text, the same for every stream (plain and speculative): a stop
/// token, a stop string (cut by the assembler), the last token or a completed grammar.
pub(crate) struct TextEnd<'t> {
    text: TextAssembler<'t>,
    stop_tokens: HashSet<u32>,
    done: bool,
}

impl<'t> TextEnd<'t> {
    pub(crate) fn new(tokenizer: &'t Tokenizer, options: &GenerateOptions) -> Self {
        TextEnd {
            text: TextAssembler::new(tokenizer, &options.stop_strings),
            stop_tokens: options.stop_tokens.iter().copied().collect(),
            done: false,
        }
    }

    /// One step of an iterator over responses: nothing after the end or after an error.
    pub(crate) fn next(
        &mut self,
        step: impl FnOnce(&mut Self) -> Result<Option<GenerationResponse>>,
    ) -> Option<Result<GenerationResponse>> {
        if self.done {
            return None;
        }
        match step(self) {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    /// Turns one generated token into a response. `last`: the generator produces no more;
    /// `grammar_done`: a grammar completed with this token, which ends the text as a stop
    /// token would, the token kept.
    pub(crate) fn respond(
        &mut self,
        token: u32,
        logprobs: Array,
        from_draft: bool,
        (last, grammar_done): (bool, bool),
        stats: GenerationStats,
    ) -> Result<GenerationResponse> {
        let (piece, mut finish) = if self.stop_tokens.contains(&token) {
            (self.text.push(None, true)?, Some(FinishReason::Stop))
        } else {
            let last = grammar_done || last;
            let piece = self.text.push(Some(token), last)?;
            let finish = if grammar_done {
                Some(FinishReason::Stop)
            } else {
                last.then_some(FinishReason::Length)
            };
            (piece, finish)
        };
        if piece.stop.is_some() {
            finish = Some(FinishReason::Stop);
        }
        if finish.is_some() {
            self.done = true;
        }
        Ok(GenerationResponse {
            text: piece.text,
            token,
            logprobs,
            from_draft,
            finish_reason: finish,
            stats,
        })
    }
}

/// Starts a text generation from prompt token ids.
pub fn stream_generate<'m, 't, M: LanguageModel + ?Sized>(
    model: &'m M,
    tokenizer: &'t Tokenizer,
    prompt: &[u32],
    options: &GenerateOptions,
) -> Result<TextStream<'m, 't>> {
    Ok(TextStream::new(
        generate_step(model, prompt, options)?,
        tokenizer,
        options,
    ))
}

/// [`stream_generate`] continuing from a cache (see [`generate_step_with_cache`]).
pub fn stream_generate_with_cache<'m, 't, M: LanguageModel + ?Sized>(
    model: &'m M,
    tokenizer: &'t Tokenizer,
    prompt: &[u32],
    cache: Cache,
    options: &GenerateOptions,
) -> Result<TextStream<'m, 't>> {
    let tokens = generate_step_with_cache(model, prompt, cache, options)?;
    Ok(TextStream::new(tokens, tokenizer, options))
}

impl<'m, 't> TextStream<'m, 't> {
    fn new(
        tokens: TokenGenerator<'m>,
        tokenizer: &'t Tokenizer,
        options: &GenerateOptions,
    ) -> Self {
        TextStream {
            tokens,
            end: TextEnd::new(tokenizer, options),
        }
    }
}

impl TextStream<'_, '_> {
    /// The token generator underneath (trace count, cache).
    pub fn tokens(&self) -> &TokenGenerator<'_> {
        &self.tokens
    }

    /// The cache, to continue from (see [`TokenGenerator::into_cache`]).
    pub fn into_cache(self) -> Cache {
        self.tokens.into_cache()
    }
}

impl Iterator for TextStream<'_, '_> {
    type Item = Result<GenerationResponse>;

    fn next(&mut self) -> Option<Self::Item> {
        let tokens = &mut self.tokens;
        self.end.next(|end| {
            let Some((token, logprobs)) = tokens.advance()? else {
                return Ok(None);
            };
            let last = tokens.produced == tokens.max_tokens;
            let ends = (last, tokens.grammar_done);
            end.respond(token, logprobs, false, ends, tokens.stats())
                .map(Some)
        })
    }
}

/// Generates and returns the whole text (Python: `mlx_lm.generate`).
pub fn generate<M: LanguageModel + ?Sized>(
    model: &M,
    tokenizer: &Tokenizer,
    prompt: &[u32],
    options: &GenerateOptions,
) -> Result<String> {
    let mut text = String::new();
    for response in stream_generate(model, tokenizer, prompt, options)? {
        text.push_str(&response?.text);
    }
    Ok(text)
}
