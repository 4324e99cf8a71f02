//! Lazy reads that fail stay failed.
//!
//! A lazily loaded array is read from its file or reader when it is first evaluated. When
//! that read fails (the file was truncated or rewritten since the load, the reader returned
//! an error or too few bytes), MLX still marks the array, and everything computed from it in
//! that evaluation, as evaluated: a later evaluation returns whatever the buffers held, and
//! MLX 0.32 can lose the error of a failed file read altogether. So the binding keeps the
//! record itself:
//!
//! - A lazy load is *unread* while one of its arrays has not been read. While any load is
//!   unread, an eval first lists the unevaluated arrays of its graph; if a read of a load
//!   among them fails meanwhile, the eval is an `Err` and all of them are marked failed.
//! - Once an array is marked failed, every eval first walks the unevaluated part of its
//!   graph and is an `Err` naming the failed read if it reaches a failed array: the array
//!   itself, and anything computed from it, before or after the failure.
//!
//! Marked arrays that the failed eval never reached are detached from their graph, so the
//! record does not keep their load's reader (or file) open.
//!
//! Otherwise an eval pays three atomic loads. The walks cost one FFI call per unevaluated
//! array; loading a model, which evaluates the loaded weights together, leaves nothing
//! unread. Marked arrays stay alive in the record, so that MLX cannot give their identity to
//! a new array.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::thread::ThreadId;

use crate::evaluation::guard::{self, Guard, Mode};
use crate::graph::walk;
use crate::{Array, Error, Result};

/// Lazy loads with an array not read yet.
static UNREAD_LOADS: AtomicUsize = AtomicUsize::new(0);
/// Lazy reads that failed, ever (each failure's sequence number).
static FAILURES: AtomicU64 = AtomicU64::new(0);
/// Whether any array is marked failed.
static ANY_FAILED: AtomicBool = AtomicBool::new(false);
/// How many times arrays were marked failed.
static MARKINGS: AtomicU64 = AtomicU64::new(0);
/// Whether an async eval started while a load was unread is not resolved yet.
static ANY_IN_FLIGHT: AtomicBool = AtomicBool::new(false);

static RECORD: Mutex<Record> = Mutex::new(Record {
    failures: Vec::new(),
    failed: None,
    in_flight: Vec::new(),
});

struct Record {
    failures: Vec<ReadFailure>,
    /// Failed arrays by id, each kept alive, with the failure's message.
    failed: Option<HashMap<usize, (Array, Arc<str>)>>,
    in_flight: Vec<InFlight>,
}

struct ReadFailure {
    seq: u64,
    message: Arc<str>,
    /// The ids of the arrays the failed load made.
    load: HashSet<usize>,
}

/// An async eval started while a load was unread: its targets, and the unevaluated arrays
/// of its graph then.
struct InFlight {
    seq: u64,
    /// The thread that started it: only it may ask MLX whether the targets are done, since
    /// asking moves an evaluated array to "available", a write that races with that
    /// thread's own evaluations reading the array's event.
    thread: ThreadId,
    targets: Vec<Array>,
    pending: Vec<Array>,
}

fn record() -> MutexGuard<'static, Record> {
    // A panic while the record was held left it consistent (every update is one push or
    // insert), so a poisoned lock is still usable.
    RECORD.lock().unwrap_or_else(|e| e.into_inner())
}

/// One lazy load's reads: whether its arrays are all read, and which arrays it made.
pub(super) struct LoadWatch {
    label: String,
    state: Mutex<WatchState>,
}

#[derive(Default)]
struct WatchState {
    /// Set once the load returned its arrays; reads before that are MLX parsing the header.
    armed: bool,
    ids: Vec<usize>,
    unread: usize,
    /// Whether this load is counted in `UNREAD_LOADS`.
    counted: bool,
}

impl LoadWatch {
    pub(super) fn new(label: &str) -> Arc<LoadWatch> {
        // Before any load can be unread or fail: every eval from now on is guarded.
        static GUARD: Once = Once::new();
        GUARD.call_once(|| guard::register(&FailedReads));
        Arc::new(LoadWatch {
            label: label.to_string(),
            state: Mutex::new(WatchState::default()),
        })
    }

    fn state(&self) -> MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts watching the arrays the load made: each is read once, when evaluated.
    pub(super) fn arm<'a>(&self, arrays: impl IntoIterator<Item = &'a Array>) -> Result<()> {
        let ids = arrays
            .into_iter()
            .map(Array::id)
            .collect::<Result<Vec<_>>>()?;
        let mut st = self.state();
        st.armed = true;
        st.unread = ids.len();
        st.ids = ids;
        if st.unread > 0 && !st.counted {
            st.counted = true;
            UNREAD_LOADS.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Called by the reader after each positional read: `failure` says why it failed.
    pub(super) fn read_done(&self, failure: Option<String>) {
        let mut st = self.state();
        if !st.armed {
            return;
        }
        match failure {
            None => {
                st.unread = st.unread.saturating_sub(1);
                if st.unread == 0 && st.counted {
                    st.counted = false;
                    UNREAD_LOADS.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Some(why) => {
                let load = st.ids.iter().copied().collect();
                drop(st);
                let message: Arc<str> = format!("{}: {why}", self.label).into();
                let mut rec = record();
                let seq = FAILURES.load(Ordering::SeqCst) + 1;
                rec.failures.push(ReadFailure { seq, message, load });
                FAILURES.store(seq, Ordering::SeqCst);
            }
        }
    }
}

impl Drop for LoadWatch {
    fn drop(&mut self) {
        // The reader is gone: every array of the load was read or dropped.
        let st = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if st.counted {
            UNREAD_LOADS.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn failed_error(message: &str) -> Error {
    Error::io(
        "a lazy read failed, so the arrays it was to fill and everything computed from them \
         are unusable",
        std::io::Error::other(message.to_string()),
    )
}

/// The arrays of the targets' graphs that an eval would compute.
fn unevaluated(targets: &[&Array]) -> Result<Vec<Array>> {
    let mut out = Vec::new();
    walk(targets, |a, _| {
        if a.is_unscheduled()? {
            out.push(a.clone());
        }
        Ok(())
    })?;
    Ok(out)
}

/// `Err` if the targets are, or are computed from, an array marked failed.
fn refuse_failed(targets: &[&Array]) -> Result<()> {
    let failed: HashMap<usize, Arc<str>> = match &record().failed {
        Some(f) => f.iter().map(|(id, (_, m))| (*id, Arc::clone(m))).collect(),
        None => return Ok(()),
    };
    walk(targets, |_, id| match failed.get(&id) {
        Some(message) => Err(failed_error(message)),
        None => Ok(()),
    })
}

/// If a read failure after `seq` belongs to a load among `pending`, marks all of `pending`
/// failed and returns the failure's message. `own`: the arrays are this thread's, which may
/// change their graphs.
fn mark_if_touched(
    rec: &mut Record,
    seq: u64,
    pending: &[Array],
    own: bool,
) -> Result<Option<Arc<str>>> {
    let ids = pending.iter().map(Array::id).collect::<Result<Vec<_>>>()?;
    let hit = rec
        .failures
        .iter()
        .filter(|f| f.seq > seq)
        .find(|f| ids.iter().any(|id| f.load.contains(id)))
        .map(|f| Arc::clone(&f.message));
    if let Some(message) = &hit {
        let failed = rec.failed.get_or_insert_with(HashMap::new);
        for (a, id) in pending.iter().zip(ids) {
            // An array the failed eval never reached still holds its graph, up to the lazy
            // load and its reader: kept in the record as it is, it would keep the reader
            // (an open file, a socket) forever. Its identity is all the record needs.
            if own && a.is_unscheduled()? {
                a.detach_unscheduled()?;
            }
            failed.insert(id, (a.clone(), Arc::clone(message)));
        }
        ANY_FAILED.store(true, Ordering::SeqCst);
        MARKINGS.fetch_add(1, Ordering::SeqCst);
    }
    Ok(hit)
}

/// Settles the async evals started while loads were unread: those whose reads failed mark
/// their arrays failed; this thread's that finished, and every one once no load is unread
/// (no read is left that could fail), are dropped from the record.
fn resolve_in_flight() -> Result<()> {
    let mut rec = record();
    let entries = std::mem::take(&mut rec.in_flight);
    let me = std::thread::current().id();
    for entry in entries {
        // Finished first, failures second: a read completes before its eval signals, and
        // records its failure before its load stops counting as unread.
        let finished = UNREAD_LOADS.load(Ordering::SeqCst) == 0
            || (entry.thread == me && entry.targets.iter().all(Array::is_evaluated));
        if mark_if_touched(&mut rec, entry.seq, &entry.pending, entry.thread == me)?.is_none()
            && !finished
        {
            rec.in_flight.push(entry);
        }
    }
    ANY_IN_FLIGHT.store(!rec.in_flight.is_empty(), Ordering::SeqCst);
    Ok(())
}

fn check_before(targets: &[&Array]) -> Result<()> {
    if ANY_IN_FLIGHT.load(Ordering::SeqCst) {
        resolve_in_flight()?;
    }
    if ANY_FAILED.load(Ordering::SeqCst) {
        refuse_failed(targets)?;
    }
    Ok(())
}

/// The eval guard: refuses an eval of arrays that depend on a failed read, and fails one
/// during which a read fails (with everything it computed marked failed).
struct FailedReads;

impl Guard for FailedReads {
    fn before(&self, targets: &[&Array], _mode: Mode) -> Result<()> {
        check_before(targets)
    }

    fn around(
        &self,
        targets: &[&Array],
        mode: Mode,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        match mode {
            Mode::Wait => guard_eval(targets, run),
            Mode::Async => guard_async_eval(targets, run),
        }
    }
}

/// Runs the eval `run` of `targets`, which [`check_before`] let through, under the record:
/// an `Err` (with everything it computed marked failed) if a read fails during it.
fn guard_eval(targets: &[&Array], run: &mut dyn FnMut() -> Result<()>) -> Result<()> {
    let markings = MARKINGS.load(Ordering::SeqCst);
    let out = if UNREAD_LOADS.load(Ordering::SeqCst) == 0 {
        run()
    } else {
        let seq = FAILURES.load(Ordering::SeqCst);
        let pending = unevaluated(targets)?;
        let out = run();
        if FAILURES.load(Ordering::SeqCst) != seq {
            if let Some(message) = mark_if_touched(&mut record(), seq, &pending, true)? {
                return Err(failed_error(&message));
            }
        }
        out
    };
    // Arrays an earlier async eval scheduled are not `pending` here: that eval's record
    // covers them. Their read may have failed after `check_before` looked, while `run`
    // waited for it (1 run in 200 of `async_eval_failure_is_found_by_the_next_eval`); it
    // has ended now, so the record says: still in flight, or already settled by another
    // thread's eval, which marked them failed meanwhile (1 run in 25 of the same test
    // among the others).
    if ANY_IN_FLIGHT.load(Ordering::SeqCst) || MARKINGS.load(Ordering::SeqCst) != markings {
        check_before(targets)?;
    }
    out
}

/// [`guard_eval`] for an async eval: a read that fails after it returns is found by the
/// next eval.
fn guard_async_eval(targets: &[&Array], run: &mut dyn FnMut() -> Result<()>) -> Result<()> {
    if UNREAD_LOADS.load(Ordering::SeqCst) == 0 {
        return run();
    }
    let seq = FAILURES.load(Ordering::SeqCst);
    let pending = unevaluated(targets)?;
    if let Err(e) = run() {
        // On the thread MLX takes for its main one, scheduling the next array reports the
        // error of a read that already failed on the stream (1 run in 30 of
        // `async_eval_failure_is_found_by_the_next_eval`). The read recorded its failure
        // before throwing, so the record can say whether it was one of ours.
        let mut rec = record();
        if FAILURES.load(Ordering::SeqCst) != seq {
            if let Some(message) = mark_if_touched(&mut rec, seq, &pending, true)? {
                return Err(failed_error(&message));
            }
        }
        // Whatever MLX scheduled before the error still runs, and its reads can still fail.
        if pending
            .iter()
            .try_fold(false, |any, a| Ok::<_, Error>(any || !a.is_unscheduled()?))?
        {
            rec.in_flight.push(InFlight {
                seq,
                thread: std::thread::current().id(),
                targets: targets.iter().map(|&a| a.clone()).collect(),
                pending,
            });
            ANY_IN_FLIGHT.store(true, Ordering::SeqCst);
        }
        return Err(e);
    }
    let mut rec = record();
    rec.in_flight.push(InFlight {
        seq,
        thread: std::thread::current().id(),
        targets: targets.iter().map(|&a| a.clone()).collect(),
        pending,
    });
    ANY_IN_FLIGHT.store(true, Ordering::SeqCst);
    Ok(())
}
