//! The server over a group of processes (`launch -n N -- server ...`, Python: `mlx_lm.server`
//! under `mlx.launch`): the model split over the ranks, every rank running the same engine
//! steps.
//!
//! Rank 0 serves HTTP and decides: which requests join (their prompt, settings and sampling
//! seed), which are cancelled, when a step runs, when the engine starts again after a failed
//! step, when to stop. The decisions taken since the last step are shared with the other ranks
//! right before the step that needs them, so every rank calls the same compiled steps with the
//! same inputs in the same order, and the collectives inside the split model pair up. The
//! other ranks have no listener: they load and split the model alike and follow ([`follow`]).
//!
//! A message is a header of four `int32` (a tag, its kind, the payload's bytes, the digest of
//! the sender's previous step) and, when it has one, a JSON payload packed into `int32` words,
//! each shared with `all_sum`: rank 0 contributes the words, the others zeros, so every rank
//! receives rank 0's words exactly, on any backend. A decode step without joins or
//! cancellations costs one `all_sum` of four words.
//!
//! Every rank samples the same tokens: the logits are equal (the split layers' `all_sum`
//! gives every rank the same sum, and what follows is computed alike), and rank 0 fixes each
//! request's seed (from the clock when the request has none) before sharing it. Each rank
//! hashes the tokens of its last step, and a rank whose tokens differ from rank 0's ends with
//! an error instead of computing on with other tokens.
//!
//! While idle, rank 0 sends a heartbeat every [`HEARTBEAT`], so a rank that died is noticed
//! then and not at the next request: its collectives fail (the ring backend reports the lost
//! peer; under MPI, `mpirun` ends the group), and rank 0's server fails its requests and
//! exits with an error.

use std::time::Duration;

use crate::options::TraceAtStart;
use mlx_lm::{Engine, EngineOptions, Model, RequestId, RequestOptions, SamplerOptions, TokenEvent};
use mlx_rs::distributed::{self, Group};
use mlx_rs::Array;
use serde::{Deserialize, Serialize};

/// How often an idle rank 0 checks that the group is still there.
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// The first word of every header: a follower that reads anything else is out of step.
const TAG: i32 = 0x4d4c_5853;
const HEADER: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
enum Kind {
    /// The engine's options: every rank builds its engine from rank 0's.
    Hello = 1,
    /// The decisions since the last step, then one step.
    Step = 2,
    /// Nothing to do; the group is still there.
    Heartbeat = 3,
    /// A new engine after a failed decode step.
    Reset = 4,
    /// The server is done.
    Stop = 5,
}

impl Kind {
    fn from_word(w: i32) -> Option<Kind> {
        [
            Kind::Hello,
            Kind::Step,
            Kind::Heartbeat,
            Kind::Reset,
            Kind::Stop,
        ]
        .into_iter()
        .find(|k| *k as i32 == w)
    }
}

/// A decision of rank 0, replayed by the others.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Op {
    Insert {
        id: RequestId,
        prompt: Vec<u32>,
        options: WireOptions,
    },
    Cancel {
        id: RequestId,
    },
}

/// [`RequestOptions`] as sent: floats as their bits, so they arrive unchanged (and a
/// non-finite value needs no JSON of its own). A grammar cannot be sent: rank 0 refuses
/// requests with one (see [`Lockstep::insert`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct WireOptions {
    max_tokens: usize,
    temperature: u64,
    top_p: u64,
    min_p: u64,
    min_tokens_to_keep: i32,
    top_k: i32,
    seed: Option<u64>,
    logit_bias: Vec<(u32, u64)>,
    stop_tokens: Vec<u32>,
    repetition_penalty: Option<u64>,
    repetition_context_size: usize,
    presence_penalty: u64,
    frequency_penalty: u64,
}

impl WireOptions {
    /// Every field named, so a new option is a compile error here rather than one rank's
    /// setting silently missing on the others.
    fn new(options: &RequestOptions) -> WireOptions {
        let RequestOptions {
            max_tokens,
            sampler,
            seed,
            logit_bias,
            stop_tokens,
            repetition_penalty,
            repetition_context_size,
            presence_penalty,
            frequency_penalty,
            constraint: _,
        } = options;
        let SamplerOptions {
            temperature,
            top_p,
            min_p,
            min_tokens_to_keep,
            top_k,
        } = *sampler;
        WireOptions {
            max_tokens: *max_tokens,
            temperature: temperature.to_bits(),
            top_p: top_p.to_bits(),
            min_p: min_p.to_bits(),
            min_tokens_to_keep,
            top_k,
            seed: *seed,
            logit_bias: logit_bias.iter().map(|(t, v)| (*t, v.to_bits())).collect(),
            stop_tokens: stop_tokens.clone(),
            repetition_penalty: repetition_penalty.map(f64::to_bits),
            repetition_context_size: *repetition_context_size,
            presence_penalty: presence_penalty.to_bits(),
            frequency_penalty: frequency_penalty.to_bits(),
        }
    }

    fn options(&self) -> RequestOptions {
        RequestOptions {
            max_tokens: self.max_tokens,
            sampler: SamplerOptions {
                temperature: f64::from_bits(self.temperature),
                top_p: f64::from_bits(self.top_p),
                min_p: f64::from_bits(self.min_p),
                min_tokens_to_keep: self.min_tokens_to_keep,
                top_k: self.top_k,
            },
            seed: self.seed,
            logit_bias: self
                .logit_bias
                .iter()
                .map(|(t, v)| (*t, f64::from_bits(*v)))
                .collect(),
            stop_tokens: self.stop_tokens.clone(),
            repetition_penalty: self.repetition_penalty.map(f64::from_bits),
            repetition_context_size: self.repetition_context_size,
            presence_penalty: f64::from_bits(self.presence_penalty),
            frequency_penalty: f64::from_bits(self.frequency_penalty),
            constraint: None,
        }
    }
}

/// The first message: the engine every rank builds, and what it traces at start.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Hello {
    engine: EngineOptions,
    trace: TraceAtStart,
}

/// The digest of a step's outcome: FNV-1a over each token event's request, token, finish and
/// cached prefix, or a mark of its failure. Equal on every rank while they agree.
fn digest(step: &mlx_lm::Result<Vec<TokenEvent>>) -> i32 {
    let mut h: u32 = 0x811c_9dc5;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h = (h ^ u32::from(*b)).wrapping_mul(0x0100_0193);
        }
    };
    match step {
        Ok(events) => {
            for e in events {
                eat(&e.id.to_le_bytes());
                eat(&e.token.to_le_bytes());
                let finish: u8 = match e.finish_reason {
                    None => 0,
                    Some(mlx_lm::FinishReason::Stop) => 1,
                    Some(mlx_lm::FinishReason::Length) => 2,
                };
                eat(&[finish]);
                eat(&(e.cached_tokens as u64).to_le_bytes());
            }
        }
        Err(_) => eat(b"failed"),
    }
    h as i32
}

/// The engine's start: the decode step's shapes `trace` names traced and compiled, and one
/// request of one token through the prefill and the join, before the first client waits for
/// them (a reused slot is written whole, so nothing of it remains); with
/// [`TraceAtStart::None`], nothing. Every rank runs it alike (the warm-up request's seed is
/// never read: it is greedy), and every rank traces the other shapes at the same step.
pub(crate) fn fresh_engine(
    model: &Model,
    options: EngineOptions,
    trace: TraceAtStart,
) -> mlx_lm::Result<Engine<'_, Model>> {
    let mut engine = Engine::new(model, options)?;
    match trace {
        TraceAtStart::All => engine.warm_up()?,
        TraceAtStart::First => engine.warm_up_shapes(1, 0)?,
        TraceAtStart::None => return Ok(engine),
    }
    let warm = RequestOptions {
        max_tokens: 1,
        ..Default::default()
    };
    engine.insert(&[0], warm)?;
    while !engine.is_idle() {
        engine.step()?;
    }
    Ok(engine)
}

/// `words` summed over the group: rank 0's words on every rank when the others give zeros.
fn share(group: &Group, words: &[i32]) -> mlx_rs::Result<Vec<i32>> {
    let x = Array::from_slice(words, &[words.len() as i32])?;
    distributed::all_sum(&x, Some(group))?.to_vec::<i32>()
}

fn pack(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            i32::from_le_bytes(w)
        })
        .collect()
}

fn unpack(words: &[i32], len: usize) -> Vec<u8> {
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    bytes.truncate(len);
    bytes
}

fn group_error(what: &str, e: impl std::fmt::Display) -> mlx_lm::Error {
    mlx_lm::Error::InvalidArgument(format!("{what}: {e}"))
}

/// Rank 0's link to the others.
struct Link {
    group: Group,
    /// Decisions not yet shared.
    pending: Vec<Op>,
    /// The digest of this rank's last step.
    digest: i32,
}

impl Link {
    fn send(&mut self, kind: Kind, payload: &[u8]) -> mlx_lm::Result<()> {
        let header = [TAG, kind as i32, payload.len() as i32, self.digest];
        share(&self.group, &header).map_err(|e| group_error("sending to the other ranks", e))?;
        if !payload.is_empty() {
            share(&self.group, &pack(payload))
                .map_err(|e| group_error("sending to the other ranks", e))?;
        }
        Ok(())
    }
}

/// The engine of rank 0 (or of a server alone): what the worker drives. Alone, it is the
/// engine; in a group, every decision is also queued for the other ranks and shared before
/// the next step.
pub(crate) struct Lockstep<'m> {
    model: &'m Model,
    options: EngineOptions,
    trace: TraceAtStart,
    engine: Engine<'m, Model>,
    link: Option<Link>,
    /// Why the ranks can no longer step together (a collective failed): the server must
    /// end.
    broken: Option<String>,
}

impl<'m> Lockstep<'m> {
    /// The engine of `model`; with `group` (of more than one rank), rank 0's, the others
    /// running [`follow`].
    pub fn start(
        model: &'m Model,
        options: EngineOptions,
        trace: TraceAtStart,
        group: Option<Group>,
    ) -> mlx_lm::Result<Lockstep<'m>> {
        let mut link = group.map(|group| Link {
            group,
            pending: Vec::new(),
            digest: 0,
        });
        if let Some(link) = &mut link {
            let hello = serde_json::to_vec(&Hello {
                engine: options,
                trace,
            })
            .map_err(|e| group_error("the engine's options", e))?;
            link.send(Kind::Hello, &hello)?;
        }
        let engine = fresh_engine(model, options, trace)?;
        Ok(Lockstep {
            model,
            options,
            trace,
            engine,
            link,
            broken: None,
        })
    }

    /// Why the group can no longer run steps, if it cannot.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// How often to call [`heartbeat`](Self::heartbeat) while idle (`None`: alone, never).
    pub fn heartbeat_every(&self) -> Option<Duration> {
        self.link.as_ref().map(|_| HEARTBEAT)
    }

    /// Checks the group is still there; an `Err` marks it [broken](Self::broken).
    pub fn heartbeat(&mut self) -> mlx_lm::Result<()> {
        self.send(Kind::Heartbeat, &[])
    }

    fn send(&mut self, kind: Kind, payload: &[u8]) -> mlx_lm::Result<()> {
        let Some(link) = &mut self.link else {
            return Ok(());
        };
        if let Some(why) = &self.broken {
            return Err(mlx_lm::Error::InvalidArgument(why.clone()));
        }
        link.send(kind, payload).inspect_err(|e| {
            self.broken = Some(e.to_string());
        })
    }

    /// [`Engine::insert`]; in a group, with the seed fixed here so every rank draws alike.
    /// A grammar ([`RequestOptions::constraint`]) is an `Err` in a group: the other ranks
    /// would need it, and a compiled grammar cannot be sent.
    pub fn insert(
        &mut self,
        prompt: &[u32],
        mut options: RequestOptions,
    ) -> mlx_lm::Result<RequestId> {
        let Some(link) = &mut self.link else {
            return self.engine.insert(prompt, options);
        };
        if options.constraint.is_some() {
            return Err(mlx_lm::Error::InvalidArgument(
                "structured output (response_format, a forced tool call) is not supported by a \
                 server split over several processes"
                    .into(),
            ));
        }
        options.seed.get_or_insert_with(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        let wire = WireOptions::new(&options);
        let id = self.engine.insert(prompt, options)?;
        link.pending.push(Op::Insert {
            id,
            prompt: prompt.to_vec(),
            options: wire,
        });
        Ok(id)
    }

    /// [`Engine::cancel`].
    pub fn cancel(&mut self, id: RequestId) -> bool {
        if let Some(link) = &mut self.link {
            link.pending.push(Op::Cancel { id });
        }
        self.engine.cancel(id)
    }

    /// [`Engine::step`], the decisions since the last one shared first. A failure to share
    /// them marks the group [broken](Self::broken).
    pub fn step(&mut self) -> mlx_lm::Result<Vec<TokenEvent>> {
        if let Some(link) = &mut self.link {
            let ops = std::mem::take(&mut link.pending);
            let payload = if ops.is_empty() {
                Vec::new()
            } else {
                serde_json::to_vec(&ops).map_err(|e| group_error("a step's decisions", e))?
            };
            self.send(Kind::Step, &payload)?;
        }
        let out = self.engine.step();
        if let Some(link) = &mut self.link {
            link.digest = digest(&out);
        }
        out
    }

    /// A new engine in place of one whose decode step failed (its state is lost), on every
    /// rank. In a group, a failure marks it [broken](Self::broken): the ranks could no longer
    /// be sure to hold the same engine.
    pub fn reset(&mut self) -> mlx_lm::Result<()> {
        self.send(Kind::Reset, &[])?;
        match fresh_engine(self.model, self.options, self.trace) {
            Ok(engine) => {
                self.engine = engine;
                if let Some(link) = &mut self.link {
                    link.digest = 0;
                }
                Ok(())
            }
            Err(e) => {
                if self.link.is_some() {
                    self.broken = Some(format!("a new engine failed to start: {e}"));
                }
                Err(e)
            }
        }
    }

    /// Tells the other ranks to stop (nothing alone, or once the group is broken).
    pub fn stop(&mut self) {
        if self.broken.is_none() {
            let _ = self.send(Kind::Stop, &[]);
        }
    }
}

/// The read-only side of the engine (its counters, queue and caches).
impl<'m> std::ops::Deref for Lockstep<'m> {
    type Target = Engine<'m, Model>;
    fn deref(&self) -> &Engine<'m, Model> {
        &self.engine
    }
}

fn out_of_step(what: String) -> mlx_lm::Error {
    mlx_lm::Error::InvalidArgument(format!("this rank is out of step with rank 0: {what}"))
}

/// A message from rank 0: its kind, payload and the digest of rank 0's last step.
fn receive(group: &Group) -> mlx_lm::Result<(Kind, Vec<u8>, i32)> {
    let header = share(group, &[0; HEADER]).map_err(|e| group_error("waiting for rank 0", e))?;
    let kind = Kind::from_word(header[1]).filter(|_| header[0] == TAG);
    let (Some(kind), Ok(len)) = (kind, usize::try_from(header[2])) else {
        return Err(out_of_step(format!("a message header {header:?}")));
    };
    let payload = if len == 0 {
        Vec::new()
    } else {
        let words = share(group, &vec![0; len.div_ceil(4)])
            .map_err(|e| group_error("waiting for rank 0", e))?;
        unpack(&words, len)
    };
    Ok((kind, payload, header[3]))
}

/// A rank other than 0 of a split server: builds the engine rank 0 describes and runs the
/// steps rank 0 runs, with the same requests, until rank 0 stops (`Ok`) or the group fails
/// or the ranks disagree (`Err`).
pub fn follow(model: &Model, group: &Group) -> mlx_lm::Result<()> {
    let (kind, payload, _) = receive(group)?;
    if kind != Kind::Hello {
        return Err(out_of_step(format!("the first message is {kind:?}")));
    }
    let hello: Hello = serde_json::from_slice(&payload)
        .map_err(|e| out_of_step(format!("the engine's options: {e}")))?;
    let (options, trace) = (hello.engine, hello.trace);
    let mut engine = fresh_engine(model, options, trace)?;
    let mut last = 0i32;
    loop {
        let (kind, payload, theirs) = receive(group)?;
        if theirs != last {
            return Err(out_of_step(
                "the last step's tokens differ from rank 0's".into(),
            ));
        }
        match kind {
            Kind::Step => {
                let ops: Vec<Op> = if payload.is_empty() {
                    Vec::new()
                } else {
                    serde_json::from_slice(&payload)
                        .map_err(|e| out_of_step(format!("a step's decisions: {e}")))?
                };
                for op in ops {
                    match op {
                        Op::Insert {
                            id,
                            prompt,
                            options,
                        } => {
                            let ours = engine.insert(&prompt, options.options());
                            if ours.as_ref().ok() != Some(&id) {
                                return Err(out_of_step(format!(
                                    "request {id} was inserted as {ours:?}"
                                )));
                            }
                        }
                        Op::Cancel { id } => {
                            engine.cancel(id);
                        }
                    }
                }
                last = digest(&engine.step());
            }
            Kind::Heartbeat => {}
            Kind::Reset => {
                engine = fresh_engine(model, options, trace)?;
                last = 0;
            }
            Kind::Stop => return Ok(()),
            Kind::Hello => return Err(out_of_step("a second hello".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_survive_packing() {
        for len in 0..9 {
            let bytes: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(77)).collect();
            assert_eq!(unpack(&pack(&bytes), len), bytes);
        }
    }

    #[test]
    fn options_survive_the_wire() {
        let options = RequestOptions {
            max_tokens: 7,
            sampler: SamplerOptions {
                temperature: 0.1 + 0.2,
                top_p: 0.9,
                min_p: 1e-300,
                min_tokens_to_keep: 1,
                top_k: 5,
            },
            seed: Some(u64::MAX),
            logit_bias: vec![(3, -f64::INFINITY), (4, 0.5)],
            stop_tokens: vec![1, 2],
            repetition_penalty: Some(1.1),
            repetition_context_size: 9,
            presence_penalty: -0.0,
            frequency_penalty: f64::MIN_POSITIVE,
            constraint: None,
        };
        let json = serde_json::to_vec(&WireOptions::new(&options)).unwrap();
        let back: WireOptions = serde_json::from_slice(&json).unwrap();
        let back = back.options();
        assert_eq!(back, options);
        // Bit for bit, the sign of a zero included.
        assert!(back.presence_penalty.is_sign_negative());
    }

    #[test]
    fn a_digest_tells_tokens_apart() {
        let event = |token| TokenEvent {
            id: 1,
            token,
            logprob: 0.0,
            logprobs: Array::from_slice(&[0.0f32], &[1]).unwrap(),
            finish_reason: None,
            cached_tokens: 0,
        };
        let a = digest(&Ok(vec![event(5)]));
        assert_eq!(a, digest(&Ok(vec![event(5)])));
        assert_ne!(a, digest(&Ok(vec![event(6)])));
        assert_ne!(a, digest(&Err(mlx_lm::Error::InvalidArgument("x".into()))));
    }
}
