//! The engine thread: the one thread that owns the model, its arrays and the
//! [`Engine`](mlx_lm::Engine).
//! Handlers submit requests over a channel and read their tokens from a channel of their
//! own; a request whose reader is gone (the client closed its stream, or a stop string
//! ended it) is cancelled at the next step, which frees its slot.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use mlx_lm::{
    load_model, EngineOptions, FinishReason, LanguageModel, LoadOptions, Model, RequestId,
    RequestOptions,
};
use mlx_rs::distributed::Group;
use tokio::sync::{mpsc as tmpsc, oneshot, watch};

use crate::lockstep::Lockstep;
use crate::metrics::Metrics;
use crate::options::TraceAtStart;

/// One generated token, as a handler gets it.
#[derive(Debug, Clone)]
pub struct TokenOut {
    pub token: u32,
    pub logprob: f32,
    /// The most likely tokens and their log-probabilities, most likely first (as many as
    /// the request asked for).
    pub top: Vec<(u32, f32)>,
    /// Set on the request's last token; `Stop` when the token is a stop token.
    pub finish: Option<FinishReason>,
    /// Prompt tokens a cached prefix gave (not prefilled).
    pub cached_tokens: usize,
}

/// What the engine thread sends a request's reader.
#[derive(Debug, Clone)]
pub enum Event {
    Token(TokenOut),
    /// The request was dropped by an engine failure.
    Failed(String),
}

/// A request for the engine thread.
#[derive(Debug)]
pub struct Submission {
    pub prompt: Vec<u32>,
    pub options: RequestOptions,
    pub top_logprobs: usize,
    pub events: tmpsc::UnboundedSender<Event>,
    /// Whether the engine took it (else why not: the engine's own check of the request).
    pub accepted: oneshot::Sender<Result<(), String>>,
}

enum Command {
    /// Boxed: a submission carries the request and its options (a grammar among them), far
    /// larger than `Stop`.
    Submit(Box<Submission>),
    /// Cancels everything and ends the thread.
    Stop,
}

/// The engine thread has ended (the server is shutting down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineGone;

/// The handlers' side of the engine thread.
#[derive(Debug, Clone)]
pub struct EngineHandle {
    commands: mpsc::Sender<Command>,
    /// Why the engine thread ended on its own (its process group failed), once it did.
    failed: watch::Receiver<Option<String>>,
}

impl EngineHandle {
    /// Queues a request; `Err` when the engine thread is gone.
    pub fn submit(&self, s: Submission) -> Result<(), EngineGone> {
        self.commands
            .send(Command::Submit(Box::new(s)))
            .map_err(|_| EngineGone)
    }

    /// Cancels whatever is in flight and ends the engine thread.
    pub fn stop(&self) {
        let _ = self.commands.send(Command::Stop);
    }

    /// Resolves with the reason once the engine thread has ended on its own: the process
    /// group of a split model failed (a rank died), and no step can run any more.
    pub async fn failed(&self) -> String {
        let mut failed = self.failed.clone();
        let reason = match failed.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone(),
            // The thread ended without failing.
            Err(_) => None,
        };
        match reason {
            Some(reason) => reason,
            None => std::future::pending().await,
        }
    }

    /// Why the engine thread ended on its own, if it did.
    pub fn failure(&self) -> Option<String> {
        self.failed.borrow().clone()
    }
}

/// How the model is split over a process group (`launch -n N -- server ...`): this process
/// is rank 0 of `group`, the other ranks run [`follow`](crate::follow).
#[derive(Debug, Clone)]
pub struct Split {
    pub group: Group,
    /// By layers (pipeline parallelism) instead of by heads (tensor parallelism).
    pub pipeline: bool,
}

/// Loads the model of `dir` and splits it as `split` says.
pub(crate) fn load_split(dir: &std::path::Path, split: Option<&Split>) -> mlx_lm::Result<Model> {
    let (mut model, _) = load_model(dir, LoadOptions::default())?;
    if let Some(s) = split {
        if s.pipeline {
            model.pipeline(&s.group, None)?;
        } else {
            model.shard(&s.group)?;
        }
        // The slices computed once, here, not from the whole weights at every step.
        mlx_tree::eval(&model)?;
    }
    Ok(model)
}

/// What the engine thread found when it loaded the model.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub vocab_size: i32,
}

/// Loads the model on a new thread and starts its engine there; returns once it is loaded
/// (or failed to load) with the handle and the thread.
/// With `split`, the model is split over its group and every step shared with the other
/// ranks ([`lockstep`](crate::lockstep)).
pub fn spawn(
    model_dir: std::path::PathBuf,
    options: EngineOptions,
    trace: TraceAtStart,
    metrics: Arc<Metrics>,
    split: Option<Split>,
) -> mlx_lm::Result<(EngineHandle, ModelInfo, std::thread::JoinHandle<()>)> {
    let (commands, rx) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (failed_tx, failed) = watch::channel(None);
    let thread = std::thread::Builder::new()
        .name("mlx-engine".into())
        .spawn(move || {
            let model: Model = match load_split(&model_dir, split.as_ref()) {
                Ok(m) => m,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let group = split.map(|s| s.group);
            let engine = match Lockstep::start(&model, options, trace, group) {
                Ok(e) => e,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(ModelInfo {
                vocab_size: model.vocab_size(),
            }));
            Worker {
                engine,
                live: HashMap::new(),
                metrics,
                recent: VecDeque::new(),
                past_cache_stats: (0, 0),
                failed: failed_tx,
            }
            .run(rx);
        })
        .map_err(|e| {
            mlx_lm::Error::InvalidArgument(format!("cannot start the engine thread: {e}"))
        })?;
    match ready_rx.recv() {
        Ok(Ok(info)) => Ok((EngineHandle { commands, failed }, info, thread)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(mlx_lm::Error::InvalidArgument(
            "the engine thread ended while loading the model".into(),
        )),
    }
}

struct Live {
    events: tmpsc::UnboundedSender<Event>,
    top_logprobs: usize,
    arrived: Instant,
    first_token: bool,
}

struct Worker<'m> {
    engine: Lockstep<'m>,
    live: HashMap<RequestId, Live>,
    metrics: Arc<Metrics>,
    /// (when, tokens) of the recent steps, for the tokens-per-second gauge.
    recent: VecDeque<(Instant, usize)>,
    /// The prompt-cache counters of engines replaced after a failure, so the metrics
    /// keep counting up.
    past_cache_stats: (u64, u64),
    /// Set when the thread ends on its own (see [`EngineHandle::failed`]).
    failed: watch::Sender<Option<String>>,
}

impl Worker<'_> {
    fn run(mut self, rx: mpsc::Receiver<Command>) {
        loop {
            if self.engine.is_idle() {
                self.publish();
                match self.wait(&rx) {
                    Some(Command::Submit(s)) => self.submit(*s),
                    Some(Command::Stop) | None => return self.end(),
                }
            }
            loop {
                match rx.try_recv() {
                    Ok(Command::Submit(s)) => self.submit(*s),
                    Ok(Command::Stop) | Err(mpsc::TryRecvError::Disconnected) => return self.end(),
                    Err(mpsc::TryRecvError::Empty) => break,
                }
            }
            self.drop_abandoned();
            self.step();
            self.publish();
            if let Some(why) = self.engine.broken().map(str::to_string) {
                return self.fail(why);
            }
        }
    }

    /// The thread's end: the other ranks are told to stop, or, when they can no longer be
    /// reached, the server is told it failed.
    fn end(mut self) {
        match self.engine.broken().map(str::to_string) {
            Some(why) => self.fail(why),
            None => self.engine.stop(),
        }
    }

    /// The next command while idle (`None`: the server is gone). In a process group, the
    /// other ranks are checked every heartbeat meanwhile.
    fn wait(&mut self, rx: &mpsc::Receiver<Command>) -> Option<Command> {
        let Some(every) = self.engine.heartbeat_every() else {
            return rx.recv().ok();
        };
        loop {
            match rx.recv_timeout(every) {
                Ok(c) => return Some(c),
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if self.engine.heartbeat().is_err() {
                        // `run` ends the thread: the group is broken.
                        return None;
                    }
                }
            }
        }
    }

    /// The process group failed: every request fails with the reason, the server is told,
    /// and the thread ends.
    fn fail(mut self, why: String) {
        let message = format!("the process group failed: {why}");
        eprintln!("engine: {message}");
        for (_, r) in self.live.drain() {
            let _ = r.events.send(Event::Failed(message.clone()));
        }
        self.publish();
        let _ = self.failed.send(Some(message));
    }

    fn submit(&mut self, s: Submission) {
        match self.engine.insert(&s.prompt, s.options) {
            Ok(id) => {
                if s.accepted.send(Ok(())).is_err() {
                    self.engine.cancel(id);
                    return;
                }
                self.live.insert(
                    id,
                    Live {
                        events: s.events,
                        top_logprobs: s.top_logprobs,
                        arrived: Instant::now(),
                        first_token: true,
                    },
                );
            }
            Err(e) => {
                let _ = s.accepted.send(Err(e.to_string()));
            }
        }
    }

    /// Cancels the requests nobody reads any more, so a closed stream frees its slot (or
    /// its place in the queue) before another token is spent on it.
    fn drop_abandoned(&mut self) {
        let engine = &mut self.engine;
        self.live.retain(|id, r| {
            if r.events.is_closed() {
                engine.cancel(*id);
                false
            } else {
                true
            }
        });
    }

    fn step(&mut self) {
        let started = Instant::now();
        let events = match self.engine.step() {
            Ok(events) => events,
            Err(e) => return self.recover(e),
        };
        self.metrics.observe_step(&self.engine.last_step_times());
        let mut tokens = 0usize;
        for e in events {
            tokens += 1;
            let Some(r) = self.live.get_mut(&e.id) else {
                self.engine.cancel(e.id);
                continue;
            };
            if r.first_token {
                r.first_token = false;
                self.metrics.observe_ttft(r.arrived.elapsed().as_secs_f64());
            }
            let top = if r.top_logprobs > 0 {
                top_k(&e.logprobs, r.top_logprobs).unwrap_or_default()
            } else {
                Vec::new()
            };
            let out = TokenOut {
                token: e.token,
                logprob: e.logprob,
                top,
                finish: e.finish_reason,
                cached_tokens: e.cached_tokens,
            };
            let sent = r.events.send(Event::Token(out)).is_ok();
            if e.finish_reason.is_some() {
                self.live.remove(&e.id);
            } else if !sent {
                self.live.remove(&e.id);
                self.engine.cancel(e.id);
            }
        }
        self.metrics
            .generated_tokens
            .fetch_add(tokens as u64, Ordering::Relaxed);
        let now = Instant::now();
        self.recent.push_back((started, tokens));
        while self
            .recent
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > Duration::from_secs(5))
        {
            self.recent.pop_front();
        }
        if let Some((first, _)) = self.recent.front() {
            let total: usize = self.recent.iter().map(|(_, n)| n).sum();
            let secs = now.duration_since(*first).as_secs_f64();
            if secs > 0.0 {
                self.metrics.set_tokens_per_second(total as f64 / secs);
            }
        }
    }

    /// A failed step: a failed prefill drops its own request (the engine keeps the
    /// others); a failed decode step leaves the engine unusable, so every request fails
    /// and a new engine takes over.
    fn recover(&mut self, error: mlx_lm::Error) {
        let message = error.to_string();
        eprintln!("engine: {message}");
        let engine = &self.engine;
        let mut dropped: Vec<RequestId> = self
            .live
            .keys()
            .copied()
            .filter(|id| !engine.contains(*id))
            .collect();
        if dropped.is_empty() {
            dropped = self.live.keys().copied().collect();
            let (hits, tokens) = self.engine.prompt_cache_stats();
            match self.engine.reset() {
                Ok(()) => {
                    self.past_cache_stats.0 += hits;
                    self.past_cache_stats.1 += tokens;
                }
                Err(e) => eprintln!("engine: cannot start a new engine: {e}"),
            }
        }
        for id in dropped {
            if let Some(r) = self.live.remove(&id) {
                let _ = r.events.send(Event::Failed(message.clone()));
            }
        }
    }

    fn publish(&self) {
        let m = &self.metrics;
        m.queue_depth
            .store(self.engine.queued() as u64, Ordering::Relaxed);
        m.active_slots
            .store(self.engine.running() as u64, Ordering::Relaxed);
        m.step_traces.store(self.engine.traces(), Ordering::Relaxed);
        m.step_shapes
            .store(self.engine.decode_traces().len() as u64, Ordering::Relaxed);
        m.decode_rows
            .store(self.engine.decode_rows() as u64, Ordering::Relaxed);
        let (hits, reused) = self.engine.prompt_cache_stats();
        let (past_hits, past_reused) = self.past_cache_stats;
        m.prompt_cache_hits
            .store(past_hits + hits, Ordering::Relaxed);
        m.prompt_cache_tokens
            .store(past_reused + reused, Ordering::Relaxed);
        let cache = self.engine.prompt_cache();
        m.prompt_cache_entries
            .store(cache.len() as u64, Ordering::Relaxed);
        m.prompt_cache_bytes
            .store(cache.nbytes() as u64, Ordering::Relaxed);
        if self.engine.is_idle() {
            m.set_tokens_per_second(0.0);
        }
    }
}

/// The `k` most likely tokens of log-probabilities `[vocab]`, most likely first (ties: the
/// lower id first).
fn top_k(logprobs: &mlx_rs::Array, k: usize) -> mlx_lm::Result<Vec<(u32, f32)>> {
    let values = logprobs.astype(mlx_rs::Dtype::Float32)?.to_vec::<f32>()?;
    let mut ids: Vec<u32> = (0..values.len() as u32).collect();
    let k = k.min(ids.len());
    let order = |a: &u32, b: &u32| {
        values[*b as usize]
            .total_cmp(&values[*a as usize])
            .then(a.cmp(b))
    };
    if k < ids.len() {
        ids.select_nth_unstable_by(k, order);
        ids.truncate(k);
    }
    ids.sort_by(order);
    Ok(ids.into_iter().map(|i| (i, values[i as usize])).collect())
}
