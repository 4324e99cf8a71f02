//! Speculative decoding (Python: `mlx_lm.generate.speculative_generate_step`): a small draft
//! model proposes `num_draft_tokens` tokens one by one, the target model scores them all in
//! one forward pass, and the longest prefix on which the target's own choices agree is
//! emitted, followed by the target's token at the first disagreement (or after the last
//! draft token). Both caches then rewind to what was accepted.
//!
//! A whole round — the draft steps, the target's verification, the accept count and both
//! rewinds — is one compiled function with the caches and the sampling key as `&mut` state.
//! The accept count is an array computed in the graph and the rewinds move the caches'
//! offsets by arrays, so no round's graph depends on how many tokens were accepted: a
//! generation traces at most `2 * num_draft_tokens` signatures (the draft's first input of
//! one token or two, times the tokens drafted: `num_draft_tokens`, or fewer in the last
//! rounds, as mlx_lm drafts no more than `max_tokens` leaves), whatever its length
//! ([`SpeculativeGenerator::traces`]).
//!
//! The acceptance rule is mlx_lm's: a draft token is accepted when the token the target
//! *samples* at its position is the same token — not the probability-ratio rule of the
//! speculative-sampling papers. With a random sampler both models draw from one key
//! sequence in mlx_lm's order (each draft step, then all target positions at once), so a
//! seeded generation draws mlx_lm's tokens. Greedy, the output is the target's plain greedy
//! output.

use std::time::Instant;

use mlx_rs::{memory, ops, random, Array};
use mlx_tree::{compile_mut, eval, CompiledMut, TreeNode};

use crate::cache::{cache_slots, reserve, set_prefix_attention, LayerCache};
use crate::error::{Error, Result};
use crate::generate::{
    check_prompt, sampling_key, GenerateOptions, GenerationResponse, GenerationStats, TextEnd,
    TokenClock,
};
use crate::model::LanguageModel;
use crate::sample::SamplerOptions;
use crate::tokenizer::Tokenizer;

/// What a round reads and writes: both caches and the sampling key they share.
#[derive(Debug, Clone, TreeNode)]
struct SpecState {
    target: Vec<LayerCache>,
    draft: Vec<LayerCache>,
    /// The sampling key (random sampling only).
    key: Option<Array>,
}

/// What a round returns: the target's tokens `[n + 1]` and their log-probabilities
/// `[n + 1, vocab]` for the `n` draft tokens `[n]`, and how many of those were accepted
/// (an `int32` scalar).
type Round = (Array, Array, Array, Array);

type RoundFn<'m> = Box<dyn Fn(&mut SpecState, &RoundInput) -> mlx_rs::Result<Round> + 'm>;

/// A round's input: the draft's first tokens (`[1]`, or `[2]` after a round that accepted
/// every draft token, whose last the draft has not seen yet), of which the last is the
/// target's first; and how many tokens to draft (static: it shapes the graph).
#[derive(Debug, Clone, TreeNode)]
struct RoundInput {
    draft_y: Array,
    #[tree(static)]
    num_draft: usize,
}

/// Log-probabilities of `logits` `[n, vocab]` and the tokens sampled from them `[n]`, the
/// key split once as mlx_lm's global key is per sampler call (Python: `_process_and_sample`).
fn sample_rows(
    logits: &Array,
    sampler: SamplerOptions,
    key: &mut Option<Array>,
) -> mlx_rs::Result<(Array, Array)> {
    let logprobs = ops::subtract(logits, &ops::logsumexp(logits, -1, true)?)?;
    let now = match key {
        Some(k) if sampler.is_random() => {
            let (next, now) = random::split_pair(k)?;
            *key = Some(next);
            Some(now)
        }
        _ => None,
    };
    let tokens = sampler.sample(&logprobs, now.as_ref())?;
    Ok((tokens, logprobs))
}

/// Moves every cache's offset back by `by` (an `int32` scalar array): the positions past it
/// are masked out and overwritten by the next writes (Python: `trim_prompt_cache`, with the
/// count an array). A sliding-window ring that has not wrapped (checked before the
/// generation starts: see [`untrimmable`]) holds position `p` in slot `p`; its slots past
/// the offset become empty again, so the next write takes the first of them.
fn rewind(cache: &mut [LayerCache], by: &Array) -> mlx_rs::Result<()> {
    for layer in cache {
        layer.try_for_each_mut(&mut |c| {
            match c {
                LayerCache::Kv(kv) => kv.offset = ops::subtract(&kv.offset, by)?,
                LayerCache::Rotating(ring) => {
                    ring.offset = ops::subtract(&ring.offset, by)?;
                    let past = ops::greater_equal(&ring.positions, &ring.offset)?;
                    ring.positions =
                        ops::where_(&past, Array::from_scalar(-1i32), &ring.positions)?;
                }
                _ => {}
            }
            Ok::<(), mlx_rs::Error>(())
        })?;
    }
    Ok(())
}

/// One round (Python: the body of `speculative_generate_step`'s loop, with `_draft_generate`,
/// `_step(model, ...)`, the comparison and `_rewind_cache`).
fn round<'m, M, D>(model: &'m M, draft: &'m D, sampler: SamplerOptions) -> RoundFn<'m>
where
    M: LanguageModel + ?Sized,
    D: LanguageModel + ?Sized,
{
    Box::new(move |s: &mut SpecState, input: &RoundInput| {
        let num_draft = input.num_draft;
        let mut drafted = Vec::with_capacity(num_draft);
        let mut y = input.draft_y.clone();
        for _ in 0..num_draft {
            let logits = draft.forward(&ops::expand_dims(&y, 0)?, Some(&mut s.draft))?;
            let last = logits.index((0, -1..))?;
            y = sample_rows(&last, sampler, &mut s.key)?.0;
            drafted.push(y.clone());
        }
        let drafts = ops::concatenate(&drafted, 0)?;
        let first = input.draft_y.index(-1..)?;
        let verify = ops::concatenate(&[first, drafts.clone()], 0)?;
        let logits = model.forward(&ops::expand_dims(&verify, 0)?, Some(&mut s.target))?;
        let (tokens, logprobs) = sample_rows(&logits.index(0)?, sampler, &mut s.key)?;
        // The accepted prefix: the leading positions where the target's token is the draft's.
        let same = ops::equal(&tokens.index(..num_draft as i32)?, &drafts)?;
        let accepted = ops::sum(
            &ops::cumprod(&same.astype(mlx_rs::Dtype::Int32)?, 0, Default::default())?,
            None,
            false,
        )?
        .astype(mlx_rs::Dtype::Int32)?;
        // The target wrote the first token and every draft token; it keeps the first and the
        // accepted ones. The draft wrote its first input and all but its last token; it keeps
        // the accepted ones (the token after them comes as the next round's input).
        let rejected = ops::subtract(Array::from_scalar(num_draft as i32), &accepted)?;
        rewind(&mut s.target, &rejected)?;
        rewind(
            &mut s.draft,
            &ops::maximum(&ops::subtract(&rejected, 1)?, 0)?,
        )?;
        Ok((tokens, logprobs, drafts, accepted))
    })
}

/// A round compiled, or op by op as mlx_lm runs it.
enum Step<'m> {
    // Boxed: the compiled function is some 300 bytes, the eager one a pointer.
    Compiled(Box<CompiledMut<SpecState, RoundInput, Round, RoundFn<'m>>>),
    Eager(RoundFn<'m>),
}

/// Generated tokens with their log-probabilities and whether the draft model proposed them
/// (Python: the generator `speculative_generate_step`).
pub struct SpeculativeGenerator<'m> {
    step: Step<'m>,
    state: SpecState,
    num_draft_tokens: usize,
    /// Tokens of the last round not handed out yet: (token, log-probabilities, from draft).
    queue: std::collections::VecDeque<(u32, Array, bool)>,
    /// The next round's draft input, `None` once the generation is complete.
    next: Option<Vec<u32>>,
    produced: usize,
    max_tokens: usize,
    clock: TokenClock,
    stats: GenerationStats,
    drafted: usize,
    rounds: usize,
    failed: bool,
}

/// Why a layer of `cache` could not be rewound during a generation that writes `positions`
/// positions, if one could not: recurrent state cannot forget tokens, and a sliding-window
/// ring that wraps overwrites positions a rewind would need again (mlx_lm checks its ring
/// once, before the generation, and rewinds it wrongly once it wraps).
fn untrimmable(cache: &[LayerCache], positions: usize) -> Option<String> {
    let mut found = None;
    for layer in cache {
        layer.for_each(&mut |c| {
            let why = match c {
                LayerCache::Kv(_) => None,
                LayerCache::Rotating(ring) if positions <= ring.window().max(0) as usize => None,
                LayerCache::Rotating(ring) => Some(format!(
                    "a RotatingKVCache of {} positions, which {positions} positions (the prompt \
                     and max_tokens) would wrap",
                    ring.window()
                )),
                other => Some(format!("a {}", other.class_name())),
            };
            if found.is_none() {
                found = why;
            }
        });
    }
    found
}

/// Starts a speculative generation from `prompt` (Python:
/// `speculative_generate_step(prompt, model, draft_model, num_draft_tokens=...)`): prefills
/// both models with all but the last prompt token, as [`generate_step`](crate::generate_step)
/// does.
///
/// Both models must use the same tokenizer; the draft's vocabulary may not be larger than the
/// target's (the target could not read the draft's extra tokens). Both caches must be
/// rewindable: a model with a recurrent layer is an error, and so is one with a
/// sliding-window layer whose window the prompt and `max_tokens` would overrun (mlx_lm
/// refuses a target whose cache cannot be trimmed). Logits processors and constraints are not
/// supported with a draft model (an error). Of the other options, `cache_writes_in_place`
/// does not apply: a round writes several positions per call, and the caches update
/// functionally.
pub fn speculative_generate_step<'m, M, D>(
    model: &'m M,
    draft_model: &'m D,
    prompt: &[u32],
    num_draft_tokens: usize,
    options: &GenerateOptions,
) -> Result<SpeculativeGenerator<'m>>
where
    M: LanguageModel + ?Sized,
    D: LanguageModel + ?Sized,
{
    let invalid = Error::InvalidArgument;
    let vocab = model.vocab_size();
    check_prompt(prompt, vocab)?;
    if draft_model.vocab_size() > vocab {
        return Err(invalid(format!(
            "the draft model's vocabulary ({}) is larger than the model's ({vocab}): they must \
             share a tokenizer",
            draft_model.vocab_size()
        )));
    }
    check_prompt(prompt, draft_model.vocab_size())?;
    options.sampler.validate(draft_model.vocab_size())?;
    // mlx_lm's speculative generation ignores max_kv_size (its caches are the models' own),
    // and so does this one; XTC it would apply, this one cannot.
    if options.xtc.is_on() && options.sampler.is_random() {
        return Err(invalid(
            "XTC sampling is not supported with a draft model".into(),
        ));
    }
    if num_draft_tokens == 0 {
        return Err(invalid("num_draft_tokens must be positive".into()));
    }
    if options.prefill_step_size == 0 {
        return Err(invalid("prefill_step_size must be positive".into()));
    }
    if !options.processors.logit_bias.is_empty() || options.processors.needs_history() {
        return Err(invalid(
            "logits processors are not supported with a draft model".into(),
        ));
    }
    if options.constraint.is_some() {
        return Err(invalid(
            "a constraint is not supported with a draft model".into(),
        ));
    }
    if options.max_tokens == crate::UNLIMITED {
        // mlx_lm fails here too (a negative draft count, then an empty concatenation).
        return Err(invalid(
            "speculative decoding needs a limit on max_tokens (the caches are sized for it)".into(),
        ));
    }
    let started = Instant::now();
    memory::reset_peak_memory()?;
    // A round writes at most up to the position of the last token it may emit, so the
    // buffers need the prompt and max_tokens positions (see `cache_slots` in generate.rs).
    let prefill_capacity = cache_slots(prompt.len())?;
    let capacity = cache_slots(prompt.len() + options.max_tokens + 1)?;
    let mut target_cache = model.make_cache(1, prefill_capacity)?;
    let mut draft_cache = draft_model.make_cache(1, prefill_capacity)?;
    for (which, cache) in [("model", &target_cache), ("draft model", &draft_cache)] {
        if let Some(why) = untrimmable(cache, prompt.len() + options.max_tokens) {
            return Err(invalid(format!(
                "speculative decoding requires a trimmable prompt cache: the {which}'s has {why}"
            )));
        }
    }
    let head = &prompt[..prompt.len() - 1];
    // mlx_lm prefills the draft first.
    prefill(draft_model, head, &mut draft_cache, capacity, options)?;
    prefill(model, head, &mut target_cache, capacity, options)?;
    let step = round(model, draft_model, options.sampler);
    Ok(SpeculativeGenerator {
        step: if options.compile {
            Step::Compiled(Box::new(compile_mut(step, None)))
        } else {
            Step::Eager(step)
        },
        state: SpecState {
            target: target_cache,
            draft: draft_cache,
            key: sampling_key(options)?,
        },
        num_draft_tokens,
        queue: Default::default(),
        next: (options.max_tokens > 0).then(|| vec![prompt[prompt.len() - 1]]),
        produced: 0,
        max_tokens: options.max_tokens,
        clock: TokenClock::new(started),
        stats: GenerationStats {
            prompt_tokens: prompt.len(),
            ..Default::default()
        },
        drafted: 0,
        rounds: 0,
        failed: false,
    })
}

/// Writes `head` into `cache` in chunks, as [`generate_step`](crate::generate_step) prefills,
/// then grows the buffers to `capacity`.
fn prefill<M: LanguageModel + ?Sized>(
    model: &M,
    head: &[u32],
    cache: &mut [LayerCache],
    capacity: i32,
    options: &GenerateOptions,
) -> Result<()> {
    set_prefix_attention(cache, !options.compile);
    for chunk in head.chunks(options.prefill_step_size) {
        let ids = Array::from_slice(chunk, &[1, chunk.len() as i32])?;
        model.forward(&ids, Some(&mut *cache))?;
        eval(&*cache)?;
    }
    reserve(cache, capacity)?;
    Ok(())
}

impl SpeculativeGenerator<'_> {
    /// How often a round was traced (compiled): at most `2 * num_draft_tokens` for a whole
    /// generation (the draft's first input of one token or two, times the tokens drafted,
    /// fewer in the last rounds), 0 for an eager one ([`GenerateOptions::compile`] off).
    pub fn traces(&self) -> u64 {
        match &self.step {
            Step::Compiled(step) => step.stats().traces,
            Step::Eager(_) => 0,
        }
    }

    /// The statistics so far; `accepted_draft_tokens` counts the draft tokens emitted.
    pub fn stats(&self) -> GenerationStats {
        let mut stats = self.stats;
        stats.peak_memory = memory::get_peak_memory().unwrap_or(0);
        stats
    }

    /// How many tokens the draft model proposed so far, over how many rounds.
    pub fn drafted(&self) -> (usize, usize) {
        (self.drafted, self.rounds)
    }

    /// The target's and the draft's caches, rewound to the tokens accepted.
    pub fn caches(&self) -> (&[LayerCache], &[LayerCache]) {
        (&self.state.target, &self.state.draft)
    }

    /// Runs one round and queues the tokens it emits.
    fn run_round(&mut self) -> Result<()> {
        let Some(draft_y) = self.next.take() else {
            return Ok(());
        };
        let num_draft = self.num_draft_tokens.min(self.max_tokens - self.produced);
        let input = RoundInput {
            draft_y: Array::from_slice(&draft_y, &[draft_y.len() as i32])?,
            num_draft,
        };
        let (tokens, logprobs, drafts, accepted) = match &self.step {
            Step::Compiled(step) => step.call(&mut self.state, &input)?,
            Step::Eager(step) => step(&mut self.state, &input)?,
        };
        eval((&tokens, &drafts, &accepted))?;
        let tokens: Vec<u32> = tokens.as_slice::<u32>()?.to_vec();
        let drafts: Vec<u32> = drafts.as_slice::<u32>()?.to_vec();
        let n = accepted.item::<i32>()? as usize;
        self.drafted += num_draft;
        self.rounds += 1;
        let room = self.max_tokens - self.produced;
        for (i, &token) in tokens.iter().enumerate().take((n + 1).min(room)) {
            self.queue
                .push_back((token, logprobs.index(i as i32)?, i < n));
        }
        let emitted = self.queue.len();
        if self.produced + emitted < self.max_tokens {
            let last = tokens[n];
            self.next = Some(if n == num_draft {
                vec![drafts[num_draft - 1], last]
            } else {
                vec![last]
            });
        }
        Ok(())
    }

    fn advance(&mut self) -> Result<Option<(u32, Array, bool)>> {
        if self.queue.is_empty() {
            self.run_round()?;
        }
        let Some((token, logprobs, from_draft)) = self.queue.pop_front() else {
            return Ok(None);
        };
        self.clock.count(&mut self.stats, &mut self.produced);
        self.stats.accepted_draft_tokens += from_draft as usize;
        Ok(Some((token, logprobs, from_draft)))
    }
}

impl Iterator for SpeculativeGenerator<'_> {
    /// A token, the log-probabilities it was drawn from (`[vocab]`), and whether the draft
    /// model proposed it.
    type Item = Result<(u32, Array, bool)>;

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

/// Streams text from a speculative generation (Python: `stream_generate(..., draft_model=)`),
/// ending as [`TextStream`](crate::TextStream) does: at a stop token, a stop string or
/// `max_tokens`. Each response says whether its token came from the draft model.
pub struct SpeculativeTextStream<'m, 't> {
    tokens: SpeculativeGenerator<'m>,
    end: TextEnd<'t>,
}

/// Starts a speculative text generation from prompt token ids (see
/// [`speculative_generate_step`]).
pub fn stream_generate_speculative<'m, 't, M, D>(
    model: &'m M,
    draft_model: &'m D,
    tokenizer: &'t Tokenizer,
    prompt: &[u32],
    num_draft_tokens: usize,
    options: &GenerateOptions,
) -> Result<SpeculativeTextStream<'m, 't>>
where
    M: LanguageModel + ?Sized,
    D: LanguageModel + ?Sized,
{
    Ok(SpeculativeTextStream {
        tokens: speculative_generate_step(model, draft_model, prompt, num_draft_tokens, options)?,
        end: TextEnd::new(tokenizer, options),
    })
}

impl<'m> SpeculativeTextStream<'m, '_> {
    /// The token generator underneath (trace count, acceptance, caches).
    pub fn tokens(&self) -> &SpeculativeGenerator<'m> {
        &self.tokens
    }
}

impl Iterator for SpeculativeTextStream<'_, '_> {
    type Item = Result<GenerationResponse>;

    fn next(&mut self) -> Option<Self::Item> {
        let tokens = &mut self.tokens;
        self.end.next(|end| {
            let Some((token, logprobs, from_draft)) = tokens.advance()? else {
                return Ok(None);
            };
            let last = tokens.produced == tokens.max_tokens;
            end.respond(token, logprobs, from_draft, (last, false), tokens.stats())
                .map(Some)
        })
    }
}
