//! Continuous batching (Python: `mlx_lm.generate.BatchGenerator`, as `mlx_lm.server` drives
//! it): requests join and leave a running batch at token granularity, and a compiled decode
//! step per batch size, each traced once for the life of the [`Engine`], serves every mix of
//! requests.
//!
//! The batch is a number of slots, each a row of one cache of fixed capacity. Every
//! key/value layer keeps one offset per row
//! ([`KvCache::set_row_offsets`](crate::cache::KvCache::set_row_offsets)): rotary
//! embeddings, the attention mask and the cache writes follow each row's own position, so a
//! request at position 3 and one at position 900 decode in the same call. A sliding-window
//! layer keeps a ring of its window per row
//! ([`RotatingKvCache::set_row_offsets`](crate::cache::RotatingKvCache::set_row_offsets):
//! each row's positions and offset, Python's `BatchRotatingKVCache`), written and masked as
//! the request's ring alone would be, so rows in different phases of their rings decode
//! together and the slot holds the window, not the capacity. mlx_lm's batch
//! instead shares one write position and left-pads the shorter sequences, filters rows out
//! as they finish and extends the batch as others arrive: every step is a new shape, and its
//! step is not compiled at all. Here the shapes come from a few: the batch holds a power of
//! two of rows (1, 2, 4, ... up to [`EngineOptions::max_batch`], which is the last size),
//! the fewest that hold the running requests, and each size has its own compiled step, traced
//! once. An idle row inside it decodes a dummy token whose results nobody reads (rows never
//! mix: every op of a decode step is per row). A request joins the lowest free row; the batch
//! grows by fresh rows when none is free, and shrinks once the running requests fit a size a
//! quarter of it or less, the requests of the rows it drops first moved into free rows below
//! (every leaf of the state moves with its row), so one request alone decodes one row, not
//! `max_batch`. The quarter keeps a batch whose requests come and go around a size from
//! copying its state back and forth.
//!
//! A new request is prefilled on its own, batch 1, in chunks of `prefill_step_size`, one
//! chunk per [`Engine::step`] while the running requests keep decoding, so a long prompt
//! delays each of their tokens by one chunk, not by the whole prompt. Up to
//! [`EngineOptions::prefill_batch`] waiting requests prefill in the same step, a chunk each
//! (mlx_lm's `prefill_batch_size`), so requests that arrive together join together. Its cache is then
//! written into the lowest free row, every leaf of it (keys, values, offset, a recurrent
//! layer's state), which is also what resets a reused row. Any cache of the model's layout can be
//! written into a slot that way ([`write_row`]), a prompt cache's snapshot included.
//!
//! With [`EngineOptions::prompt_cache_size`] set, caches are kept in an [`LruPromptCache`]
//! as mlx_lm's server keeps them: the prefill's at the end of each prompt (all but its last
//! token), and, when a request finishes, its row's (the prompt and the reply but its last
//! token, read out of the slot batch with [`read_row`]), so a conversation's next turn
//! prefills only its new messages. A later prompt that begins the same way starts its
//! prefill from the longest shared prefix (mlx_lm's `LRUPromptCache` policy), and
//! [`TokenEvent::cached_tokens`] says how many tokens that saved. [`Engine::insert_with_prefix`] starts a request from a cache the caller kept.
//! Either way only the prefill changes: the row is written into its slot as before, and
//! the decode steps are traced no more often.
//!
//! Sampling settings are per row arrays of the step (temperature, top-p, min-p, top-k, the
//! random key, a dense logit bias, the penalties), so requests with different settings
//! share the batch. The penalties keep their state in the step too: each row's window of
//! recent tokens (mlx_lm's repetition penalty) and its counts of generated tokens (OpenAI's
//! presence and frequency penalties); a row whose penalties are off keeps its logits bit for
//! bit (it multiplies by 1 and subtracts 0).
//!
//! A request may carry a grammar ([`RequestOptions::constraint`], structured output): before
//! each step its allowed tokens become the row's additive mask of the logits, a step input
//! of the same shape for every row (zeros for a row without one), so no step traces again.
//!
//! A batch whose rows are all greedy, without a logit bias, penalties or a grammar, decodes
//! with a lean step (the model, the log-softmax and the argmax, as `generate_step`'s greedy
//! step); any other row makes the step the full one above. Both compute the same tokens
//! and log-probabilities for a greedy row; each (batch size, view) has one of each,
//! traced the first time a step needs it ([`Engine::warm_up`] traces them ahead).
//!
//! While nothing waits or prefills and no row has a grammar, the step is pipelined as
//! `generate_step` is: the next decode step is queued, fed with this one's tokens on the
//! device, before this one's tokens are read back for the finish checks ([`Engine::step`]
//! says what that changes).

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use mlx_rs::ops::{self, CumsumOptions};
use mlx_rs::{random, Array, Dtype};
use mlx_tree::{
    async_eval, compile_mut, eval, tree_leaves, tree_map, tree_map_n, CompiledMut, TreeNode,
};

use crate::cache::{cache_slots, reserve, Cache, LayerCache};
use crate::cache_rows::{read_row, set_row_offsets, write_row};
use crate::error::{Error, Result};
use crate::generate::{check_prompt, FinishReason};
use crate::lru_prompt_cache::{CachedPrefix, LruPromptCache};
use crate::model::LanguageModel;
use crate::sample::{LogitsProcessors, SamplerOptions};
use crate::structured::Constraint;

/// The shape of an [`Engine`]. Serializable: a server split over processes sends it to the
/// other ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EngineOptions {
    /// Slots: the most requests decoded together (Python's `completion_batch_size`). The
    /// decode step runs over the fewest rows, a power of two or this, that hold the running
    /// requests.
    pub max_batch: usize,
    /// Positions each slot holds: a request's prompt and generated tokens together.
    pub capacity: usize,
    /// Prompt tokens prefilled per step and request (Python's `prefill_step_size`).
    pub prefill_step_size: usize,
    /// Waiting requests prefilled in the same step, a chunk each (Python's
    /// `prefill_batch_size`, `mlx_lm.server`'s `--prompt-concurrency`).
    pub prefill_batch: usize,
    /// The longest `repetition_context_size` a request may ask for: the recent tokens
    /// each slot keeps.
    pub max_repetition_context: usize,
    /// Prompt caches kept across requests ([`LruPromptCache`], Python's
    /// `--prompt-cache-size`); 0: none, every prompt is prefilled whole.
    pub prompt_cache_size: usize,
    /// The most bytes those caches may hold (Python's `--prompt-cache-bytes`).
    pub prompt_cache_bytes: usize,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            max_batch: 8,
            capacity: 4096,
            prefill_step_size: 2048,
            prefill_batch: 8,
            max_repetition_context: 64,
            prompt_cache_size: 0,
            prompt_cache_bytes: usize::MAX,
        }
    }
}

/// What one request asks for. Everything here may differ between the requests of a batch
/// but `sampler.min_tokens_to_keep`, which must be 1 (the default).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestOptions {
    /// The most tokens to generate; fewer when the slot's capacity ends first (then the
    /// finish reason is [`FinishReason::Length`] too).
    pub max_tokens: usize,
    pub sampler: SamplerOptions,
    /// The seed of this request's sampling key; `None`: from the clock.
    pub seed: Option<u64>,
    /// Added to the logits of these tokens.
    pub logit_bias: Vec<(u32, f64)>,
    /// Tokens that end the request; the stop token is reported, with
    /// [`FinishReason::Stop`].
    pub stop_tokens: Vec<u32>,
    /// mlx_lm's repetition penalty (`make_repetition_penalty`): the logits of the tokens
    /// among the last `repetition_context_size` (prompt and generated, the token just fed
    /// included) are divided by it, multiplied where negative. `None` or 0: off.
    pub repetition_penalty: Option<f64>,
    pub repetition_context_size: usize,
    /// OpenAI's presence penalty: subtracted once from the logit of every token generated
    /// so far (the prompt not counted, no window).
    pub presence_penalty: f64,
    /// OpenAI's frequency penalty: subtracted from a token's logit once per time it was
    /// generated so far.
    pub frequency_penalty: f64,
    /// A grammar the output must follow (structured output); the request starts from a
    /// clone of it, and ends with [`FinishReason::Stop`] once the grammar is complete.
    pub constraint: Option<Constraint>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions {
            max_tokens: 256,
            sampler: SamplerOptions::default(),
            seed: None,
            logit_bias: Vec::new(),
            stop_tokens: Vec::new(),
            repetition_penalty: None,
            repetition_context_size: 20,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            constraint: None,
        }
    }
}

/// A request's handle, unique for the life of its engine.
pub type RequestId = u64;

/// One generated token of one request.
#[derive(Debug, Clone)]
pub struct TokenEvent {
    pub id: RequestId,
    pub token: u32,
    /// The token's log-probability.
    pub logprob: f32,
    /// The log-probabilities it was sampled from (`[vocab]`, after the logit bias), for a
    /// server's `top_logprobs`.
    pub logprobs: Array,
    /// Set on the request's last token; its slot is free from the next step on.
    pub finish_reason: Option<FinishReason>,
    /// How many of the request's prompt tokens came from a cached prefix instead of being
    /// prefilled (OpenAI's `cached_tokens`).
    pub cached_tokens: usize,
}

/// Where the wall time of one [`Engine::step`] went: each part ends when its arrays are
/// evaluated, so a GPU's work is in it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepTimes {
    /// The prefill chunks the step ran, all together, if any.
    pub prefill: Option<Duration>,
    /// How many prefill chunks it ran (each of a different request).
    pub prefill_chunks: usize,
    /// The decode of the running requests, from building its inputs to reading its tokens
    /// back; `None` when no slot was running.
    pub decode: Option<Duration>,
    /// Whether a prefill finished and its request joined the batch in this step: its row is
    /// written into the slot batch lazily, so that decode also pays the copy.
    pub joined: bool,
    /// How many requests joined.
    pub joins: usize,
    /// The rows the decode ran over (0: none): the batch size of its compiled step.
    pub rows: usize,
    /// The positions of each slot its attention read (0: no decode).
    pub view: usize,
    /// Of the decode: building its inputs on the host (tokens, settings, grammar masks).
    pub decode_inputs: Option<Duration>,
    /// Of the decode: the compiled call (building the step's graph, a trace the first time).
    pub decode_call: Option<Duration>,
    /// Of the decode: waiting for its tokens (the evaluation, then the read-back).
    pub decode_wait: Option<Duration>,
    /// Whether the next decode step was queued before this one's tokens were read (see
    /// [`Engine::step`]).
    pub queued_ahead: bool,
}

/// The state the compiled step reads and writes.
#[derive(Debug, Clone, TreeNode)]
struct EngineState {
    cache: Vec<LayerCache>,
    /// Each row's sampling key (`uint32 [batch, 2]`).
    keys: Array,
    /// Each row's logit bias (`float32 [batch, vocab]`).
    bias: Array,
    /// Each row's recent tokens, oldest first (`int32 [batch, max_repetition_context]`).
    history: Array,
    /// How often each row generated each token (`float32 [batch, vocab]`).
    counts: Array,
}

/// Per row: the token to feed and the sampling settings.
#[derive(Debug, Clone, TreeNode)]
struct StepInputs {
    tokens: Array,
    /// `1 / temperature`, `1` for a greedy row (`[batch, 1]`).
    inv_temperature: Array,
    /// Whether the row samples (`bool [batch]`); else it takes the argmax.
    random: Array,
    /// `[batch, 1]`, off outside `(0, 1)`.
    top_p: Array,
    /// `log(min_p)`, `-inf` when off (`[batch, 1]`).
    log_min_p: Array,
    /// `int32 [batch, 1]`, `0`: off.
    top_k: Array,
    /// `[batch, 1]`, `1`: off.
    repetition_penalty: Array,
    /// How many of the newest history entries the repetition penalty sees (`int32 [batch, 1]`).
    repetition_window: Array,
    /// `[batch, 1]`, `0`: off.
    presence_penalty: Array,
    frequency_penalty: Array,
    /// Each row's grammar mask, added to the logits (`float32 [batch, vocab]`: `0` or
    /// `-inf`; all `0` for a row without a grammar).
    mask: Array,
}

#[derive(Debug, Clone, TreeNode)]
struct StepOutputs {
    tokens: Array,
    /// Each row's token's log-probability (`[batch]`).
    chosen: Array,
    logprobs: Array,
}

type EngineStepFn<'m> =
    Box<dyn Fn(&mut EngineState, &StepInputs) -> mlx_rs::Result<StepOutputs> + 'm>;

/// The decode step whose attention reads the first `view` positions of each slot (`None`:
/// all of them). The `lean` step serves a batch whose running rows are all greedy without a
/// logit bias, penalties or a grammar: the model, the log-softmax and the argmax, as
/// `generate_step`'s greedy step. The full step computes the same numbers for such a row
/// (it adds exact zeros, divides by 1, and takes the argmax beside the draws), but also the
/// bias, the penalties' scatters, two sorts and a cumulative sum over the vocabulary and a
/// draw per row, which nobody reads then; its state (keys, history, counts) is left as it
/// was, which only rows that read it need, and no such row runs in a lean step.
fn engine_step<'m, M: LanguageModel + ?Sized>(
    model: &'m M,
    view: Option<i32>,
    lean: bool,
) -> EngineStepFn<'m> {
    Box::new(move |s: &mut EngineState, x: &StepInputs| {
        let inputs = ops::expand_dims(&x.tokens, 1)?;
        s.cache.iter_mut().for_each(|c| c.set_view(view));
        let logits = model.forward(&inputs, Some(&mut s.cache));
        // The state leaves the step as it came: the view is this step's shape only.
        s.cache.iter_mut().for_each(|c| c.set_view(None));
        let logits = logits?;
        let logits = logits.index((.., -1, ..))?;
        if lean {
            let logprobs = ops::subtract(&logits, &ops::logsumexp(&logits, -1, true)?)?;
            let tokens = ops::argmax(&logprobs, -1, false)?;
            let chosen = ops::take_along_axis(&logprobs, &ops::expand_dims(&tokens, 1)?, -1)?;
            return Ok(StepOutputs {
                tokens,
                chosen: ops::reshape(&chosen, &[-1])?,
                logprobs,
            });
        }
        let logits = ops::add(&logits, &s.bias.astype(logits.dtype())?)?;
        let logits = apply_penalties(&logits, s, x)?;
        let logits = ops::add(&logits, &x.mask.astype(logits.dtype())?)?;
        let logprobs = ops::subtract(&logits, &ops::logsumexp(&logits, -1, true)?)?;
        let tokens = sample_rows(&logprobs, x, &mut s.keys)?;
        let (batch, vocab) = (logits.shape()[0], logits.shape()[1]);
        let rows = ops::multiply(&ops::arange(0, batch, 1, Dtype::Int32)?, vocab)?;
        let generated = ops::add(&rows, &tokens.astype(Dtype::Int32)?)?;
        let counts = ops::reshape(&s.counts, &[-1])?
            .at(&generated)
            .add(Array::from_scalar(1.0f32))?;
        s.counts = ops::reshape(&counts, &[batch, vocab])?;
        let chosen = ops::take_along_axis(&logprobs, &ops::expand_dims(&tokens, 1)?, -1)?;
        Ok(StepOutputs {
            tokens,
            chosen: ops::reshape(&chosen, &[-1])?,
            logprobs,
        })
    })
}

/// The penalties, in mlx_lm's order (`make_logits_processors`: the logit bias before this,
/// then repetition, presence, frequency). The token fed this step joins the row's history
/// first, as Python's processors see it among their `tokens`.
fn apply_penalties(logits: &Array, s: &mut EngineState, x: &StepInputs) -> mlx_rs::Result<Array> {
    let (batch, vocab) = (logits.shape()[0], logits.shape()[1]);
    let width = s.history.shape()[1];
    let fed = ops::expand_dims(&x.tokens.astype(Dtype::Int32)?, 1)?;
    s.history = ops::concatenate(&[s.history.index((.., 1..))?, fed], 1)?;
    let dtype = logits.dtype();

    // Which tokens are in each row's window: a scatter-add of ones over the window's
    // entries (repeats add up, so any count > 0 is a member).
    let position = ops::arange(0, width, 1, Dtype::Int32)?;
    let in_window = ops::greater_equal(
        &ops::expand_dims(&position, 0)?,
        &ops::subtract(Array::from_scalar(width), &x.repetition_window)?,
    )?;
    let rows = ops::expand_dims(
        &ops::multiply(&ops::arange(0, batch, 1, Dtype::Int32)?, vocab)?,
        1,
    )?;
    let flat = ops::reshape(&ops::add(&s.history, &rows)?, &[-1])?;
    let seen = ops::zeros(&[batch * vocab], Dtype::Float32)?
        .at(&flat)
        .add(&ops::reshape(&in_window.astype(Dtype::Float32)?, &[-1])?)?;
    let seen = ops::greater(&ops::reshape(&seen, &[batch, vocab])?, 0.0f32)?;
    let p = x.repetition_penalty.astype(dtype)?;
    let penalized = ops::where_(
        &ops::less(logits, 0.0f32)?,
        &ops::multiply(logits, &p)?,
        &ops::divide(logits, &p)?,
    )?;
    let logits = ops::where_(&seen, &penalized, logits)?;

    let generated = ops::greater(&s.counts, 0.0f32)?;
    let logits = ops::where_(
        &generated,
        &ops::subtract(&logits, &x.presence_penalty.astype(dtype)?)?,
        &logits,
    )?;
    ops::subtract(
        &logits,
        &ops::multiply(
            &s.counts.astype(dtype)?,
            &x.frequency_penalty.astype(dtype)?,
        )?,
    )
}

/// mlx_lm's `make_sampler` with per-row settings: top-p, then min-p, then top-k, then a
/// categorical draw at the row's temperature with the row's key (split each step as
/// `generate_step` splits its key). Greedy rows take the argmax. Top-k keeps ties of the
/// k-th value (mlx_lm's `argpartition` keeps exactly k).
fn sample_rows(logprobs: &Array, x: &StepInputs, keys: &mut Array) -> mlx_rs::Result<Array> {
    let greedy = ops::argmax(logprobs, -1, false)?;
    let vocab = logprobs.shape()[1];
    let batch = logprobs.shape()[0];
    let neg_inf = Array::from_scalar(f32::NEG_INFINITY).astype(logprobs.dtype())?;
    let mut v = logprobs.clone();

    let sorted = ops::sort(&v, -1)?;
    let probs = ops::exp(&sorted.astype(Dtype::Float32)?)?;
    let above = ops::cumsum(
        &probs,
        -1,
        CumsumOptions::default().reverse(true).inclusive(false),
    )?;
    let total = ops::add(&above.index((.., ..1))?, &probs.index((.., ..1))?)?;
    let dropped = ops::sum(
        &ops::greater_equal(&above, &ops::multiply(&total, &x.top_p)?)?,
        -1,
        true,
    )?;
    // A row with top-p off may count every token; its threshold is not used.
    let dropped = ops::minimum(&dropped, vocab - 1)?;
    let threshold = ops::take_along_axis(&sorted, &dropped, -1)?;
    let top_p_on = ops::logical_and(
        &ops::greater(&x.top_p, 0.0f32)?,
        &ops::less(&x.top_p, 1.0f32)?,
    )?;
    v = ops::where_(
        &ops::logical_and(&top_p_on, &ops::less(&v, &threshold)?)?,
        &neg_inf,
        &v,
    )?;

    let top = ops::max(&v, -1, true)?;
    let floor = ops::add(&top, &x.log_min_p.astype(v.dtype())?)?;
    v = ops::where_(&ops::less(&v, &floor)?, &neg_inf, &v)?;

    let descending = ops::sort(&ops::negative(&v)?, -1)?;
    let kth_index = ops::maximum(&ops::subtract(&x.top_k, 1)?, 0)?;
    let kth = ops::negative(&ops::take_along_axis(&descending, &kth_index, -1)?)?;
    let top_k_on = ops::greater(&x.top_k, 0)?;
    v = ops::where_(
        &ops::logical_and(&top_k_on, &ops::less(&v, &kth)?)?,
        &neg_inf,
        &v,
    )?;

    let scaled = ops::multiply(&v, &x.inv_temperature.astype(v.dtype())?)?;
    let mut next_keys = Vec::with_capacity(batch as usize);
    let mut drawn = Vec::with_capacity(batch as usize);
    for b in 0..batch {
        let (next, now) = random::split_pair(&keys.index(b)?)?;
        next_keys.push(next);
        drawn.push(random::categorical(&scaled.index(b..b + 1)?, -1, &now)?);
    }
    *keys = ops::stack(&next_keys, 0)?;
    let sampled = ops::concatenate(&drawn, 0)?;
    ops::where_(&x.random, &sampled, &greedy)
}

#[derive(Debug)]
struct Waiting {
    id: RequestId,
    prompt: Vec<u32>,
    options: RequestOptions,
    max_tokens: usize,
    /// A cache of the prompt's first tokens to start from (given to
    /// [`Engine::insert_with_prefix`]).
    prefix: Option<CachedPrefix>,
}

#[derive(Debug)]
struct Prefill {
    request: Waiting,
    cache: Cache,
    /// Prompt tokens prefilled so far.
    done: usize,
    /// Of those, the ones a cached prefix gave.
    cached: usize,
}

#[derive(Debug)]
struct Running {
    id: RequestId,
    /// The token the next step feeds.
    next: u32,
    produced: usize,
    max_tokens: usize,
    stop_tokens: HashSet<u32>,
    sampler: SamplerOptions,
    penalties: Penalties,
    constraint: Option<Constraint>,
    cached_tokens: usize,
    /// The tokens the row's cache holds: the prompt, then each token fed back.
    fed: Vec<u32>,
    /// Greedy, without a logit bias, penalties or a grammar: the lean step serves it.
    lean: bool,
}

/// A running request's penalty settings.
#[derive(Debug, Clone, Copy, Default)]
struct Penalties {
    repetition: Option<f64>,
    window: usize,
    presence: f64,
    frequency: f64,
}

/// A continuous-batching generator over a fixed set of slots (Python: `BatchGenerator`).
///
/// [`insert`](Self::insert) queues a request, [`step`](Self::step) advances the prefill of
/// the next waiting requests by one chunk each and decodes one token of every running request,
/// [`cancel`](Self::cancel) drops a request wherever it is. A finished or cancelled request
/// frees its slot for the next waiting one.
pub struct Engine<'m, M: LanguageModel + ?Sized> {
    model: &'m M,
    /// One per batch size, smallest first.
    steps: Vec<SizedStep<'m>>,
    /// The slot batch: as many rows as one of `steps`' sizes.
    state: EngineState,
    /// Always `max_batch` long; the rows past the state's are empty.
    slots: Vec<Option<Running>>,
    queue: VecDeque<Waiting>,
    /// The requests prefilling, oldest first; each holds a free slot.
    prefills: Vec<Prefill>,
    next_id: RequestId,
    options: EngineOptions,
    vocab: i32,
    history_width: i32,
    prompt_cache: LruPromptCache,
    prompt_cache_hits: u64,
    prompt_tokens_reused: u64,
    last_times: StepTimes,
    /// The decode step queued ahead of the one the last [`step`](Self::step) read.
    pending: Option<Queued>,
    /// Whether a finished row's cache can be read back after a step past its end was queued
    /// (keys and values only: the extra step wrote one position past the row's tokens, which
    /// its offset, set back, leaves out), or need not be (no prompt cache keeps it).
    rewindable: bool,
}

/// The decode steps compiled for one batch size, one per attention view.
struct SizedStep<'m> {
    rows: usize,
    views: Vec<ViewStep<'m>>,
    /// The mask of a step without grammars, built once.
    no_mask: Array,
}

type CompiledStep<'m> = CompiledMut<EngineState, StepInputs, StepOutputs, EngineStepFn<'m>>;

/// The decode steps of one batch size whose attention reads the first `view` positions of
/// each slot: the full one and the lean one (greedy rows only, see [`engine_step`]).
struct ViewStep<'m> {
    view: usize,
    step: CompiledStep<'m>,
    lean: CompiledStep<'m>,
}

impl<'m> ViewStep<'m> {
    fn kind(&self, lean: bool) -> &CompiledStep<'m> {
        if lean {
            &self.lean
        } else {
            &self.step
        }
    }

    /// Each kind's step with its trace count, those that were called.
    fn called(&self) -> impl Iterator<Item = u64> + '_ {
        [&self.lean, &self.step]
            .into_iter()
            .map(|s| s.stats())
            .filter(|stats| stats.calls > 0)
            .map(|stats| stats.traces)
    }
}

/// A decode step queued and not read yet.
struct Queued {
    out: StepOutputs,
    /// The request each of its rows decoded (`None`: an idle row).
    ids: Vec<Option<RequestId>>,
    view: usize,
}

/// The attention views of a slot of `capacity` positions: 256, 512, ... below it, then
/// all of it. A decode step reads the shortest that holds every running row's positions,
/// so a request near the start of a long slot attends over at most twice the positions it
/// has, not the whole slot (on this CPU, a one-row step over 512 positions spends about as
/// long in attention as in all the layers' matrix products).
fn attention_views(capacity: usize) -> Vec<usize> {
    let mut views: Vec<usize> = std::iter::successors(Some(256usize), |n| n.checked_mul(2))
        .take_while(|n| *n < capacity)
        .collect();
    views.push(capacity);
    views
}

/// The batch sizes of the decode step for `max_batch` slots: the powers of two below it, and
/// it.
fn batch_sizes(max_batch: usize) -> Vec<usize> {
    let mut sizes: Vec<usize> = std::iter::successors(Some(1usize), |n| n.checked_mul(2))
        .take_while(|n| *n < max_batch)
        .collect();
    sizes.push(max_batch);
    sizes
}

/// The state of `rows` empty rows: a cache of `capacity` positions per row, each row with
/// its own offset.
fn empty_rows<M: LanguageModel + ?Sized>(
    model: &M,
    rows: usize,
    capacity: usize,
    history_width: i32,
    vocab: i32,
) -> Result<EngineState> {
    let invalid = Error::InvalidArgument;
    let batch =
        i32::try_from(rows).map_err(|_| invalid(format!("{rows} slots do not fit a batch")))?;
    let capacity = i32::try_from(capacity)
        .map_err(|_| invalid(format!("{capacity} positions do not fit a cache")))?;
    let mut cache = model.make_cache(batch, capacity)?;
    set_row_offsets(&mut cache)?;
    Ok(EngineState {
        cache,
        keys: ops::broadcast_to(&random::key(0)?, &[batch, 2])?,
        bias: ops::zeros(&[batch, vocab], Dtype::Float32)?,
        history: ops::zeros(&[batch, history_width], Dtype::Int32)?,
        counts: ops::zeros(&[batch, vocab], Dtype::Float32)?,
    })
}

/// Whether every layer keeps keys and values only (in lists too): a row of such a cache
/// is its buffers up to its offset.
fn only_kv(cache: &Cache) -> bool {
    cache.iter().all(|layer| {
        let mut kv = true;
        layer.for_each(&mut |c| kv &= matches!(c, LayerCache::Kv(_)));
        kv
    })
}

/// Every leaf of the state has a row per slot on its first axis (what [`write_row`] writes
/// too); checked before the rows are cut or joined, so a layout that breaks it is an error,
/// not rows mixed up.
fn check_rows(state: &EngineState, rows: usize) -> Result<()> {
    for (i, leaf) in tree_leaves(state).into_iter().enumerate() {
        if leaf.shape().first().map(|n| *n as usize) != Some(rows) {
            return Err(Error::InvalidArgument(format!(
                "state leaf {i} of shape {:?} has no row per slot on its first axis ({rows} \
                 slots)",
                leaf.shape()
            )));
        }
    }
    Ok(())
}

impl<'m, M: LanguageModel + ?Sized> Engine<'m, M> {
    /// An engine of `options.max_batch` empty slots of `options.capacity` positions (a
    /// sliding-window layer's slot holds its window: each row keeps its own ring).
    pub fn new(model: &'m M, options: EngineOptions) -> Result<Self> {
        let invalid = Error::InvalidArgument;
        if options.max_batch == 0 {
            return Err(invalid("max_batch must be positive".into()));
        }
        if options.capacity == 0 {
            return Err(invalid("capacity must be positive".into()));
        }
        if options.prefill_step_size == 0 {
            return Err(invalid("prefill_step_size must be positive".into()));
        }
        if options.prefill_batch == 0 {
            return Err(invalid("prefill_batch must be positive".into()));
        }
        i32::try_from(options.max_batch)
            .map_err(|_| invalid(format!("{} slots do not fit a batch", options.max_batch)))?;
        let vocab = model.vocab_size();
        let history_width = i32::try_from(options.max_repetition_context.max(1)).map_err(|_| {
            invalid(format!(
                "max_repetition_context {} is too large",
                options.max_repetition_context
            ))
        })?;
        let sizes = batch_sizes(options.max_batch);
        let state = empty_rows(model, sizes[0], options.capacity, history_width, vocab)?;
        check_rows(&state, sizes[0])?;
        // Views only where there is a key/value cache to cut (a recurrent state or a
        // sliding window's ring is as long as it is).
        let views = if state.cache.iter().any(|c| c.first_kv().is_some()) {
            attention_views(options.capacity)
        } else {
            vec![options.capacity]
        };
        let rewindable = options.prompt_cache_size == 0 || only_kv(&state.cache);
        let steps = sizes
            .into_iter()
            .map(|rows| {
                Ok(SizedStep {
                    rows,
                    views: views
                        .iter()
                        .map(|&view| {
                            let cut = (view < options.capacity).then_some(view as i32);
                            ViewStep {
                                view,
                                step: compile_mut(engine_step(model, cut, false), None),
                                lean: compile_mut(engine_step(model, cut, true), None),
                            }
                        })
                        .collect(),
                    no_mask: ops::zeros(&[rows as i32, vocab], Dtype::Float32)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Engine {
            model,
            steps,
            state,
            slots: (0..options.max_batch).map(|_| None).collect(),
            queue: VecDeque::new(),
            prefills: Vec::new(),
            next_id: 0,
            options,
            vocab,
            history_width,
            prompt_cache: LruPromptCache::new(
                options.prompt_cache_size,
                options.prompt_cache_bytes,
            ),
            prompt_cache_hits: 0,
            prompt_tokens_reused: 0,
            last_times: StepTimes::default(),
            pending: None,
            rewindable,
        })
    }

    /// Queues a request; it starts when a slot is free. Bad input is an `Err` here, and
    /// nothing else changes: an empty prompt, a token outside the vocabulary, a prompt
    /// longer than a slot's capacity, sampler settings mlx_lm refuses, a logit bias for a
    /// token outside the vocabulary, `max_tokens` of 0, `min_tokens_to_keep` other than 1.
    pub fn insert(&mut self, prompt: &[u32], options: RequestOptions) -> Result<RequestId> {
        self.queue_request(prompt, options, None)
    }

    /// [`insert`](Self::insert), starting from `prefix`: the cache (batch 1, of the layout
    /// `model.make_cache` gives) of the prompt's first `prefix.tokens` tokens, which are
    /// then not prefilled again. At most all but the prompt's last token (the first decode
    /// step feeds that one). The engine's own [prompt cache](EngineOptions::prompt_cache_size)
    /// is not asked for this request.
    pub fn insert_with_prefix(
        &mut self,
        prompt: &[u32],
        options: RequestOptions,
        prefix: CachedPrefix,
    ) -> Result<RequestId> {
        let invalid = Error::InvalidArgument;
        if prefix.tokens >= prompt.len() {
            return Err(invalid(format!(
                "a cached prefix of {} tokens for a prompt of {}: it may cover all but the \
                 prompt's last token",
                prefix.tokens,
                prompt.len()
            )));
        }
        let fresh = self
            .model
            .make_cache(1, cache_slots(prefix.tokens.max(1))?)?;
        if fresh.len() != prefix.cache.len() {
            return Err(invalid(format!(
                "a cached prefix of {} layers for a model of {}",
                prefix.cache.len(),
                fresh.len()
            )));
        }
        for (i, (layer, fresh)) in prefix.cache.iter().zip(&fresh).enumerate() {
            layer.check_fits(fresh, i)?;
            if let Some(kv) = layer.first_kv() {
                if kv.capacity() as usize > self.options.capacity {
                    return Err(invalid(format!(
                        "layer {i} of the cached prefix holds {} positions, more than a \
                         slot's {}",
                        kv.capacity(),
                        self.options.capacity
                    )));
                }
            }
            if let Some(offset) = layer.offset() {
                let at = offset.item::<i32>()?;
                if offset.ndim() != 0 || at as usize != prefix.tokens {
                    return Err(invalid(format!(
                        "layer {i} of the cached prefix is at position {at}, not {}",
                        prefix.tokens
                    )));
                }
            }
        }
        self.queue_request(prompt, options, Some(prefix))
    }

    fn queue_request(
        &mut self,
        prompt: &[u32],
        options: RequestOptions,
        prefix: Option<CachedPrefix>,
    ) -> Result<RequestId> {
        let invalid = Error::InvalidArgument;
        check_prompt(prompt, self.vocab)?;
        if prompt.len() > self.options.capacity {
            return Err(invalid(format!(
                "the prompt has {} tokens but a slot holds {}",
                prompt.len(),
                self.options.capacity
            )));
        }
        options.sampler.validate(self.vocab)?;
        if options.sampler.min_tokens_to_keep != 1 {
            return Err(invalid(format!(
                "min_tokens_to_keep must be 1 in a continuous batch, got {}",
                options.sampler.min_tokens_to_keep
            )));
        }
        LogitsProcessors {
            logit_bias: options.logit_bias.clone(),
            ..LogitsProcessors::none()
        }
        .validate(self.vocab)?;
        if options.max_tokens == 0 {
            return Err(invalid("max_tokens must be positive".into()));
        }
        if let Some(p) = options.repetition_penalty {
            LogitsProcessors {
                repetition_penalty: Some(p),
                ..LogitsProcessors::none()
            }
            .validate(self.vocab)?;
            if !p.is_finite() {
                return Err(invalid(format!(
                    "repetition_penalty must be finite, got {p}"
                )));
            }
            if p != 0.0
                && (options.repetition_context_size == 0
                    || options.repetition_context_size > self.options.max_repetition_context)
            {
                return Err(invalid(format!(
                    "repetition_context_size must be in [1, {}], got {}",
                    self.options.max_repetition_context, options.repetition_context_size
                )));
            }
        }
        for (name, v) in [
            ("presence_penalty", options.presence_penalty),
            ("frequency_penalty", options.frequency_penalty),
        ] {
            if !v.is_finite() {
                return Err(invalid(format!("{name} must be finite, got {v}")));
            }
        }
        if let Some(c) = &options.constraint {
            if c.vocab_size() != self.vocab as usize {
                return Err(invalid(format!(
                    "the constraint masks {} logits but the model has {}",
                    c.vocab_size(),
                    self.vocab
                )));
            }
        }
        // The prompt's last token sits at position len - 1 and each generated token but the
        // last is fed back after it.
        let max_tokens = options
            .max_tokens
            .min(self.options.capacity + 1 - prompt.len());
        let id = self.next_id;
        self.next_id += 1;
        self.queue.push_back(Waiting {
            id,
            prompt: prompt.to_vec(),
            options,
            max_tokens,
            prefix,
        });
        Ok(id)
    }

    /// Drops a request, queued, prefilling or running; its slot is free for the next step.
    /// Whether the engine still had it (a finished request is gone already).
    pub fn cancel(&mut self, id: RequestId) -> bool {
        if let Some(i) = self.queue.iter().position(|w| w.id == id) {
            self.queue.remove(i);
            return true;
        }
        if let Some(i) = self.prefills.iter().position(|p| p.request.id == id) {
            self.prefills.remove(i);
            return true;
        }
        for slot in self.slots.iter_mut() {
            if slot.as_ref().is_some_and(|r| r.id == id) {
                *slot = None;
                if self.slots.iter().all(Option::is_none) {
                    // A step queued for the rows that ran is nobody's now.
                    self.pending = None;
                }
                return true;
            }
        }
        false
    }

    /// Whether the engine has the request, queued, prefilling or running.
    pub fn contains(&self, id: RequestId) -> bool {
        self.queue.iter().any(|w| w.id == id)
            || self.prefills.iter().any(|p| p.request.id == id)
            || self.slots.iter().flatten().any(|r| r.id == id)
    }

    /// Whether nothing is queued, prefilling or running.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.prefills.is_empty() && self.slots.iter().all(Option::is_none)
    }

    /// Requests decoding now.
    pub fn running(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// Requests waiting for a slot (those prefilling not counted).
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// How often the decode steps were traced, all batch sizes and views together: one per
    /// shape that decoded, for the life of the engine.
    pub fn traces(&self) -> u64 {
        self.steps
            .iter()
            .flat_map(|s| &s.views)
            .flat_map(|v| [v.step.stats().traces, v.lean.stats().traces])
            .sum()
    }

    /// Per shape of the decode step that was called (batch size and attention view, in
    /// that order): the size and how often its step was traced (1).
    pub fn decode_traces(&self) -> Vec<(usize, u64)> {
        self.decode_shapes()
            .into_iter()
            .map(|(rows, _, traces)| (rows, traces))
            .collect()
    }

    /// Per shape of the decode step that was called: the batch size, the attention view
    /// (positions of each slot read) and how often its step was traced (1). A shape whose
    /// lean step (greedy rows only) and full step both ran is listed twice, the lean one
    /// first.
    pub fn decode_shapes(&self) -> Vec<(usize, usize, u64)> {
        self.steps
            .iter()
            .flat_map(|s| {
                s.views
                    .iter()
                    .flat_map(move |v| v.called().map(move |traces| (s.rows, v.view, traces)))
            })
            .collect()
    }

    /// The attention views of the decode step: positions of each slot read, the shortest
    /// that holds every running request's.
    pub fn decode_views(&self) -> Vec<usize> {
        self.steps[0].views.iter().map(|v| v.view).collect()
    }

    /// The batch sizes the decode step may run at: powers of two, then `max_batch`.
    pub fn decode_sizes(&self) -> Vec<usize> {
        self.steps.iter().map(|s| s.rows).collect()
    }

    /// The rows the next decode step runs over (the slot batch's size now).
    pub fn decode_rows(&self) -> usize {
        self.rows()
    }

    fn rows(&self) -> usize {
        self.state.keys.shape()[0] as usize
    }

    /// Traces, compiles and runs both decode steps (lean and full) of every batch size and
    /// view once, on rows of their own, so no request waits for a trace (a server may call
    /// this before it listens). The engine's rows and requests are not touched. Without it,
    /// each shape is traced when a step first needs it.
    pub fn warm_up(&mut self) -> Result<()> {
        self.warm_up_shapes(usize::MAX, usize::MAX)
    }

    /// [`warm_up`](Self::warm_up) for the batch sizes up to `rows` and the views up to
    /// `view` positions only (at least the smallest of each); the others are traced when a
    /// step first needs them.
    pub fn warm_up_shapes(&mut self, rows: usize, view: usize) -> Result<()> {
        for (i, s) in self.steps.iter().enumerate() {
            if i > 0 && s.rows > rows {
                break;
            }
            for (j, v) in s.views.iter().enumerate() {
                if j > 0 && v.view > view {
                    break;
                }
                for step in [&v.lean, &v.step] {
                    if step.stats().calls > 0 {
                        continue;
                    }
                    let mut state = empty_rows(
                        self.model,
                        s.rows,
                        self.options.capacity,
                        self.history_width,
                        self.vocab,
                    )?;
                    let idle: Vec<Option<&Running>> = vec![None; s.rows];
                    let inputs = step_inputs(&idle, s.no_mask.clone())?;
                    eval(&step.call(&mut state, &inputs)?)?;
                }
            }
        }
        Ok(())
    }

    /// Requests that started from a cached prefix, and the prompt tokens those prefixes
    /// saved from prefill, over the engine's life.
    pub fn prompt_cache_stats(&self) -> (u64, u64) {
        (self.prompt_cache_hits, self.prompt_tokens_reused)
    }

    /// The prompt caches kept across requests.
    pub fn prompt_cache(&self) -> &LruPromptCache {
        &self.prompt_cache
    }

    /// Where the last [`step`](Self::step)'s time went (a server's latency metrics).
    pub fn last_step_times(&self) -> StepTimes {
        self.last_times
    }

    /// The slot batch's cache (one row per slot of the current batch size,
    /// [`decode_rows`](Self::decode_rows)), a decode step queued ahead included.
    pub fn cache(&self) -> &[LayerCache] {
        &self.state.cache
    }

    /// One step: a prefill chunk of each of the next waiting requests (up to
    /// `prefill_batch`, one per free slot), then one token of every running request (those
    /// whose prefill just ended included, but see below). Empty when idle.
    ///
    /// The step is pipelined as `generate_step` is: while nothing waits or prefills and no
    /// running request has a grammar, the next decode step is queued (`async_eval`), its
    /// tokens fed from this one's on the device, before this one's tokens are read back, so
    /// the host's work between two steps overlaps the next step's. A request that joins
    /// while such a step is queued (it was inserted after the step before) decodes its first
    /// token in the step after, the queued one being read first; a request that ends has
    /// had one step past its end queued, which writes one position past its tokens and is
    /// discarded (its row's cache is kept with its offset set back; for caches other than
    /// keys and values, which cannot be set back, nothing is queued past a step while a
    /// prompt cache keeps finished rows).
    ///
    /// An `Err` from a prefill drops that request (its id is in the message) and leaves the
    /// others as they were; an `Err` of the decode step itself means the engine's state is
    /// no longer usable.
    pub fn step(&mut self) -> Result<Vec<TokenEvent>> {
        self.last_times = StepTimes::default();
        self.advance_prefill()?;
        // A queued step whose rows all ended or were cancelled is nobody's.
        let pending = self.pending.take().filter(|q| {
            q.ids
                .iter()
                .flatten()
                .any(|id| self.slots.iter().flatten().any(|r| r.id == *id))
        });
        if self.slots.iter().all(Option::is_none) {
            // Cancellations may have emptied it.
            self.shrink();
            return Ok(Vec::new());
        }
        let started = Instant::now();
        let read = match pending {
            Some(q) => q,
            None => self.queue_decode(None)?,
        };
        if self.may_queue_after(&read) {
            self.pending = Some(self.queue_decode(Some(&read))?);
            self.last_times.queued_ahead = true;
        }
        let events = self.read_decode(read, started)?;
        if self.slots.iter().all(Option::is_none) {
            // A step queued past the last request's end: nobody reads it.
            self.pending = None;
        }
        self.shrink();
        Ok(events)
    }

    /// Whether the next decode step may be queued before `read`'s tokens are known: nothing
    /// waits or prefills (a join needs its row written first, and a request arriving before
    /// the next step joins it anyway), no running row has a grammar (its mask needs the
    /// token), a finished row's cache can be set back (or is not kept), every row of `read`
    /// still has a position to write, and some row will still run after `read`.
    fn may_queue_after(&self, read: &Queued) -> bool {
        if !self.queue.is_empty() || !self.prefills.is_empty() || !self.rewindable {
            return false;
        }
        let capacity = self.options.capacity;
        let mut continues = false;
        for r in self.slots.iter().flatten() {
            if r.constraint.is_some() {
                return false;
            }
            if read.ids.contains(&Some(r.id)) {
                if r.fed.len() + 1 >= capacity {
                    return false;
                }
                continues |= r.produced + 1 < r.max_tokens;
            } else {
                continues = true;
            }
        }
        continues
    }

    /// Queues a decode step over the batch's rows: each row's token from the host, or,
    /// for the rows of `after` (queued, not read yet), the token `after` computes for it.
    fn queue_decode(&mut self, after: Option<&Queued>) -> Result<Queued> {
        let started = Instant::now();
        let rows = self.rows();
        let sized = self
            .steps
            .iter()
            .position(|s| s.rows == rows)
            .ok_or_else(|| Error::InvalidArgument(format!("no decode step of {rows} rows")))?;
        // Where each row's token comes from: `after`'s row, or the host.
        let from: Vec<Option<usize>> = self.slots[..rows]
            .iter()
            .map(|slot| {
                let (after, r) = (after?, slot.as_ref()?);
                after.ids.iter().position(|id| *id == Some(r.id))
            })
            .collect();
        // The step writes each row's next token at its position `fed.len()`, one further
        // when a queued step writes before it: the shortest view that holds those of every
        // running row (an idle row's are nobody's).
        let needed = self.slots[..rows]
            .iter()
            .zip(&from)
            .filter_map(|(slot, f)| {
                slot.as_ref()
                    .map(|r| r.fed.len() + 1 + usize::from(f.is_some()))
            })
            .max()
            .unwrap_or(1);
        let views = &self.steps[sized].views;
        let view = views
            .iter()
            .position(|v| v.view >= needed)
            .unwrap_or(views.len() - 1);
        let lean = self.slots[..rows].iter().flatten().all(|r| r.lean);
        let mut inputs = self.inputs(sized)?;
        if let Some(after) = after {
            if from.iter().any(Option::is_some) {
                let identity = from.len() == after.ids.len()
                    && from.iter().enumerate().all(|(i, f)| *f == Some(i));
                inputs.tokens = if identity {
                    after.out.tokens.clone()
                } else {
                    let index: Vec<i32> = from.iter().map(|f| f.unwrap_or(0) as i32).collect();
                    let queued: Vec<bool> = from.iter().map(Option::is_some).collect();
                    let taken = ops::take(
                        &after.out.tokens,
                        &Array::from_slice(&index, &[rows as i32])?,
                        0,
                    )?;
                    ops::where_(
                        &Array::from_slice(&queued, &[rows as i32])?,
                        &taken,
                        &inputs.tokens,
                    )?
                };
            }
        }
        let built = Instant::now();
        let out = self.steps[sized].views[view]
            .kind(lean)
            .call(&mut self.state, &inputs)?;
        async_eval(&out)?;
        let called = Instant::now();
        let add = |total: Option<Duration>, d: Duration| Some(total.unwrap_or_default() + d);
        self.last_times.decode_inputs = add(self.last_times.decode_inputs, built - started);
        self.last_times.decode_call = add(self.last_times.decode_call, called - built);
        Ok(Queued {
            out,
            ids: self.slots[..rows]
                .iter()
                .map(|s| s.as_ref().map(|r| r.id))
                .collect(),
            view: self.steps[sized].views[view].view,
        })
    }

    /// Reads a queued decode step's tokens back: the events of its rows still running, the
    /// finished ones' rows kept in the prompt cache.
    fn read_decode(&mut self, read: Queued, started: Instant) -> Result<Vec<TokenEvent>> {
        let waited = Instant::now();
        let out = read.out;
        let tokens = out.tokens.to_vec::<u32>()?;
        let chosen = out.chosen.astype(Dtype::Float32)?.to_vec::<f32>()?;
        self.last_times.decode_wait = Some(waited.elapsed());
        self.last_times.decode = Some(started.elapsed());
        self.last_times.rows = read.ids.len();
        self.last_times.view = read.view;
        let mut events = Vec::new();
        let mut finished = Vec::new();
        for (j, id) in read.ids.iter().enumerate() {
            let Some(id) = id else { continue };
            // Its row now (the batch may have shrunk since), if it still runs.
            let Some(b) = self
                .slots
                .iter()
                .position(|s| s.as_ref().is_some_and(|r| r.id == *id))
            else {
                continue;
            };
            let slot = &mut self.slots[b];
            let Some(r) = slot.as_mut() else { continue };
            let token = tokens[j];
            r.produced += 1;
            let grammar_done = r.constraint.as_mut().is_some_and(|c| {
                // A token the mask allowed commits; a failure leaves the grammar stopped.
                c.commit(token).is_err() || c.is_finished()
            });
            let finish_reason = if r.stop_tokens.contains(&token) || grammar_done {
                Some(FinishReason::Stop)
            } else if r.produced >= r.max_tokens {
                Some(FinishReason::Length)
            } else {
                None
            };
            events.push(TokenEvent {
                id: r.id,
                token,
                logprob: chosen[j],
                logprobs: out.logprobs.index(j as i32)?,
                finish_reason,
                cached_tokens: r.cached_tokens,
            });
            r.fed.push(r.next);
            r.next = token;
            if finish_reason.is_some() {
                if let Some(r) = slot.take() {
                    finished.push((b, r.fed));
                }
            }
        }
        for (row, fed) in finished {
            self.keep_reply(row, &fed);
        }
        Ok(events)
    }

    /// The fewest rows of a decode step that hold `n` requests.
    fn size_for(&self, n: usize) -> usize {
        self.steps
            .iter()
            .map(|s| s.rows)
            .find(|rows| *rows >= n)
            .unwrap_or(self.options.max_batch)
    }

    /// Cuts the batch to the size its running requests need once that is a quarter of it
    /// or less (the smallest once none runs), their rows moved below the cut first. A
    /// failure keeps the batch as it was: the decode stays right, only larger than it needs.
    fn shrink(&mut self) {
        let rows = self.rows();
        let running = self.running();
        let target = self.size_for(running.max(1));
        if target == rows || (running > 0 && target * 4 > rows) {
            return;
        }
        // Row `i` of the cut batch is row `order[i]` of this one.
        let mut order: Vec<i32> = (0..target as i32).collect();
        let mut free = (0..target).filter(|i| self.slots[*i].is_none());
        let mut moves = Vec::new();
        for from in (target..rows).filter(|j| self.slots[*j].is_some()) {
            let Some(to) = free.next() else { return };
            order[to] = from as i32;
            moves.push((from, to));
        }
        let cut = (|| -> Result<EngineState> {
            check_rows(&self.state, rows)?;
            let order = Array::from_slice(&order, &[target as i32])?;
            Ok(tree_map(|leaf| ops::take(leaf, &order, 0), &self.state)?)
        })();
        if let Ok(state) = cut {
            self.state = state;
            for (from, to) in moves {
                self.slots.swap(from, to);
            }
        }
    }

    /// The state grown to `rows` rows, the new ones empty.
    fn grown(&self, rows: usize) -> Result<EngineState> {
        let have = self.rows();
        check_rows(&self.state, have)?;
        let extra = empty_rows(
            self.model,
            rows - have,
            self.options.capacity,
            self.history_width,
            self.vocab,
        )?;
        Ok(tree_map_n(
            |leaf, more| ops::concatenate(&[leaf.clone(), more[0].clone()], 0),
            &self.state,
            &[&extra],
        )?)
    }

    /// Keeps a finished request's row in the prompt cache, under the tokens it holds (mlx_lm
    /// inserts `all_tokens` when a request finishes). Nothing is kept when the row cannot be
    /// read: that costs a later prompt its reuse, never a wrong cache.
    fn keep_reply(&mut self, row: usize, fed: &[u32]) {
        if self.options.prompt_cache_size == 0 || fed.is_empty() {
            return;
        }
        let snapshot = (|| -> Result<Cache> {
            let positions = cache_slots(fed.len())?.min(self.options.capacity as i32);
            let mut single = self.model.make_cache(1, positions)?;
            read_row(&self.state.cache, row, &mut single)?;
            // A step queued past the reply's end moved the row's offset one further.
            let at = Array::from_scalar(fed.len() as i32);
            for layer in single.iter_mut() {
                layer.try_for_each_mut(&mut |c| {
                    if let LayerCache::Kv(kv) = c {
                        kv.offset = at.clone();
                    }
                    Ok::<(), Error>(())
                })?;
            }
            // Its own arrays: the batch's buffers are not held past this step.
            eval(&single)?;
            Ok(single)
        })();
        if let Ok(cache) = snapshot {
            self.prompt_cache.insert(fed, cache);
        }
    }

    /// The inputs of the decode step `sized` over the batch's rows.
    fn inputs(&mut self, sized: usize) -> Result<StepInputs> {
        let mask = self.masks(sized)?;
        let rows = self.steps[sized].rows;
        let slots: Vec<Option<&Running>> = self.slots[..rows].iter().map(Option::as_ref).collect();
        step_inputs(&slots, mask)
    }

    /// The step's grammar masks. A grammar whose mask fails (the engine's limits, an
    /// internal error) is stopped by the failure: its row may only end, with one of the
    /// grammar's end-of-sequence tokens, and finishes after this step.
    fn masks(&mut self, sized: usize) -> Result<Array> {
        let rows = self.steps[sized].rows;
        let slots = &mut self.slots[..rows];
        if slots.iter().flatten().all(|r| r.constraint.is_none()) {
            return Ok(self.steps[sized].no_mask.clone());
        }
        let vocab = self.vocab as usize;
        let mut mask = vec![0.0f32; rows * vocab];
        for (slot, row) in slots.iter_mut().zip(mask.chunks_mut(vocab)) {
            if let Some(c) = slot.as_mut().and_then(|r| r.constraint.as_mut()) {
                if c.write_mask(row).is_err() {
                    c.write_end_mask(row);
                }
            }
        }
        Ok(Array::from_slice(&mask, &[rows as i32, self.vocab])?)
    }

    /// Starts the prefill of waiting requests while a slot is free for each (at most
    /// `prefill_batch` prefilling), runs one chunk of each, and writes each whose whole
    /// prompt but its last token is in into the lowest free row (chosen then: rows move when
    /// the batch shrinks). Several arriving requests so join in the same step, as mlx_lm's
    /// `BatchGenerator` prefills up to `prefill_batch_size` prompts a step, instead of one a
    /// step, each join a decode step later than the one before. Each request's chunks start
    /// where `generate_step`'s would (multiples of `prefill_step_size`), so its prefill
    /// computes what a request alone computes.
    fn advance_prefill(&mut self) -> Result<()> {
        let free = self.slots.iter().filter(|s| s.is_none()).count();
        while self.prefills.len() < free.min(self.options.prefill_batch) {
            let Some(request) = self.queue.pop_front() else {
                break;
            };
            let prefill = self.start_prefill(request)?;
            self.prefills.push(prefill);
        }
        let model = self.model;
        let step_size = self.options.prefill_step_size;
        let mut spent = Duration::ZERO;
        let mut chunks = 0;
        let mut failed = None;
        for (i, p) in self.prefills.iter_mut().enumerate() {
            let head = p.request.prompt.len() - 1;
            if p.done >= head {
                continue;
            }
            let end = (p.done + step_size).min(head);
            let chunk = &p.request.prompt[p.done..end];
            let cache = &mut p.cache;
            let started = Instant::now();
            let result = (|| -> Result<()> {
                let ids = Array::from_slice(chunk, &[1, chunk.len() as i32])?;
                model.forward(&ids, Some(cache))?;
                eval(&*cache)?;
                Ok(())
            })();
            spent += started.elapsed();
            chunks += 1;
            if let Err(e) = result {
                failed = Some((i, e));
                break;
            }
            p.done = end;
        }
        if chunks > 0 {
            self.last_times.prefill = Some(spent);
            self.last_times.prefill_chunks = chunks;
        }
        if let Some((i, e)) = failed {
            let id = self.prefills.remove(i).request.id;
            return Err(failed_prefill(id, e));
        }
        while let Some(i) = self
            .prefills
            .iter()
            .position(|p| p.done + 1 >= p.request.prompt.len())
        {
            let p = self.prefills.remove(i);
            let id = p.request.id;
            self.install(p).map_err(|e| failed_prefill(id, e))?;
            self.last_times.joined = true;
            self.last_times.joins += 1;
        }
        Ok(())
    }

    /// A waiting request's prefill, from the longest cached prefix of its prompt if any.
    fn start_prefill(&mut self, mut request: Waiting) -> Result<Prefill> {
        // As `generate_step` prefills: a buffer of the prompt's size in steps of 256, grown
        // to the slot's capacity afterwards, so the prefill computes what `generate_step`'s
        // does.
        let positions = cache_slots(request.prompt.len())?.min(self.options.capacity as i32);
        let head = request.prompt.len() - 1;
        let prefix = match request.prefix.take() {
            Some(p) => Some(p),
            None => self
                .prompt_cache
                .fetch(&request.prompt, head)
                .map_err(|e| failed_prefill(request.id, e))?,
        };
        let started = match prefix {
            Some(CachedPrefix { mut cache, tokens }) => {
                self.prompt_cache_hits += 1;
                self.prompt_tokens_reused += tokens as u64;
                reserve(&mut cache, positions).map(|()| (cache, tokens))
            }
            None => self.model.make_cache(1, positions).map(|c| (c, 0)),
        };
        match started {
            Ok((cache, done)) => Ok(Prefill {
                request,
                cache,
                done,
                cached: done,
            }),
            Err(e) => Err(failed_prefill(request.id, e.into())),
        }
    }

    fn install(&mut self, p: Prefill) -> Result<()> {
        let Prefill {
            request,
            mut cache,
            cached,
            ..
        } = p;
        let slot = self
            .slots
            .iter()
            .position(Option::is_none)
            .ok_or_else(|| Error::InvalidArgument("no free slot".into()))?;
        // The prompt's cache, but for its last token, is the snapshot later prompts with
        // the same beginning start from: a clone shares the arrays, and the growth below
        // makes new ones.
        let head = &request.prompt[..request.prompt.len() - 1];
        self.prompt_cache.insert(head, cache.clone());
        reserve(&mut cache, self.options.capacity as i32)?;
        // Written into copies first, so a failure leaves the running rows untouched; a batch
        // without a free row grows to the next size.
        let mut state = if slot < self.rows() {
            self.state.clone()
        } else {
            self.grown(self.size_for(slot + 1))?
        };
        write_row(&mut state.cache, slot, &cache)?;
        let start = Array::from_slice(&[slot as i32], &[1])?;
        let seed = request.options.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        let key = ops::expand_dims(&random::key(seed)?, 0)?;
        state.keys = ops::slice_update(&state.keys, &key, &start, &[0])?;
        let mut bias = vec![0.0f32; self.vocab as usize];
        for (t, v) in &request.options.logit_bias {
            // Python: mx.array of Python floats, float32; a repeated token adds up.
            bias[*t as usize] += *v as f32;
        }
        let bias = Array::from_slice(&bias, &[1, self.vocab])?;
        state.bias = ops::slice_update(&state.bias, &bias, &start, &[0])?;
        state.counts = ops::slice_update(
            &state.counts,
            &ops::zeros(&[1, self.vocab], Dtype::Float32)?,
            &start,
            &[0],
        )?;
        // The prompt's tokens before the last (which the first decode step feeds), padded
        // in front with the first: a repeat of a token in the window changes nothing.
        let width = state.history.shape()[1] as usize;
        let head = &request.prompt[..request.prompt.len() - 1];
        let recent = &head[head.len().saturating_sub(width)..];
        let filled: Vec<u32> = std::iter::repeat(request.prompt[0])
            .take(width - recent.len())
            .chain(recent.iter().copied())
            .collect();
        let filled = Array::from_slice(&filled, &[1, width as i32])?.astype(Dtype::Int32)?;
        state.history = ops::slice_update(&state.history, &filled, &start, &[0])?;
        self.state = state;
        let prompt = &request.prompt;
        self.slots[slot] = Some(Running {
            id: request.id,
            next: prompt[prompt.len() - 1],
            produced: 0,
            max_tokens: request.max_tokens,
            stop_tokens: request.options.stop_tokens.iter().copied().collect(),
            sampler: request.options.sampler,
            penalties: Penalties {
                repetition: request.options.repetition_penalty,
                window: request.options.repetition_context_size,
                presence: request.options.presence_penalty,
                frequency: request.options.frequency_penalty,
            },
            lean: !request.options.sampler.is_random()
                && request.options.logit_bias.is_empty()
                && request
                    .options
                    .repetition_penalty
                    .filter(|p| *p != 0.0)
                    .is_none()
                && request.options.presence_penalty == 0.0
                && request.options.frequency_penalty == 0.0
                && request.options.constraint.is_none(),
            constraint: request.options.constraint,
            cached_tokens: cached,
            fed: request.prompt[..request.prompt.len() - 1].to_vec(),
        });
        Ok(())
    }
}

/// The decode step's inputs for these rows (`None`: an idle row, which decodes token 0
/// greedily; nobody reads it).
fn step_inputs(slots: &[Option<&Running>], mask: Array) -> Result<StepInputs> {
    let batch = slots.len() as i32;
    let mut tokens = Vec::with_capacity(slots.len());
    let mut inv_temperature = Vec::with_capacity(slots.len());
    let mut random = Vec::with_capacity(slots.len());
    let mut top_p = Vec::with_capacity(slots.len());
    let mut log_min_p = Vec::with_capacity(slots.len());
    let mut top_k = Vec::with_capacity(slots.len());
    let mut repetition_penalty = Vec::with_capacity(slots.len());
    let mut repetition_window = Vec::with_capacity(slots.len());
    let mut presence_penalty = Vec::with_capacity(slots.len());
    let mut frequency_penalty = Vec::with_capacity(slots.len());
    for slot in slots {
        let p = slot.as_ref().map(|r| r.penalties).unwrap_or_default();
        // Python: a penalty of 0 (or none) adds no processor.
        repetition_penalty.push(p.repetition.filter(|v| *v != 0.0).unwrap_or(1.0) as f32);
        repetition_window.push(p.window as i32);
        presence_penalty.push(p.presence as f32);
        frequency_penalty.push(p.frequency as f32);
        // An idle row decodes token 0 greedily; nobody reads it.
        let s = slot.as_ref().map(|r| r.sampler).unwrap_or_default();
        tokens.push(slot.as_ref().map_or(0, |r| r.next));
        random.push(s.is_random());
        // Python: logits * (1 / temp), the reciprocal a Python float rounded once.
        inv_temperature.push(if s.is_random() {
            (1.0 / s.temperature) as f32
        } else {
            1.0
        });
        top_p.push(s.top_p as f32);
        log_min_p.push(if s.min_p == 0.0 {
            f32::NEG_INFINITY
        } else {
            s.min_p.ln() as f32
        });
        top_k.push(s.top_k);
    }
    Ok(StepInputs {
        tokens: Array::from_slice(&tokens, &[batch])?,
        inv_temperature: Array::from_slice(&inv_temperature, &[batch, 1])?,
        random: Array::from_slice(&random, &[batch])?,
        top_p: Array::from_slice(&top_p, &[batch, 1])?,
        log_min_p: Array::from_slice(&log_min_p, &[batch, 1])?,
        top_k: Array::from_slice(&top_k, &[batch, 1])?,
        repetition_penalty: Array::from_slice(&repetition_penalty, &[batch, 1])?,
        repetition_window: Array::from_slice(&repetition_window, &[batch, 1])?,
        presence_penalty: Array::from_slice(&presence_penalty, &[batch, 1])?,
        frequency_penalty: Array::from_slice(&frequency_penalty, &[batch, 1])?,
        mask,
    })
}

fn failed_prefill(id: RequestId, e: Error) -> Error {
    Error::InvalidArgument(format!("request {id} dropped: its prefill failed: {e}"))
}
