//! A ring group that lost a peer stays lost.
//!
//! When a peer of MLX's ring backend goes away, each socket thread fails the transfers it
//! has queued ("[ring] connection to a peer was lost") and then exits. Transfers queued
//! after that are never served, so in MLX 0.32 (Python too) the next collective waits
//! forever. The binding records the first such error instead, and from then on:
//!
//! - making a collective ([`all_sum`](super::all_sum), [`send`](super::send), ...) is an
//!   `Err`;
//! - an eval whose graph still holds an unevaluated collective (made before the loss, or
//!   replayed by a compiled function) is an `Err` before MLX runs any of it.
//!
//! Work without collectives still runs, so a rank can save its state before it exits.
//! Until a loss is recorded an eval pays one atomic load; after it, a walk of the
//! unevaluated part of its graph.

use std::sync::{Once, OnceLock};

use crate::evaluation::guard::{self, Guard, Mode};
use crate::graph::walk;
use crate::{Array, Error, Result};

/// The message MLX's ring socket threads fail their transfers with.
const RING_LOST: &str = "[ring] connection to a peer was lost";

/// The first ring error that lost a peer, as the user saw it.
static LOST: OnceLock<String> = OnceLock::new();

/// Starts watching: every MLX error message for a lost peer, every eval for a collective
/// after one. Called by whatever can start a ring group or make a collective ([`init`],
/// [`check_new`]), so it runs before MLX can report a loss.
///
/// [`init`]: super::init
pub(crate) fn watch() {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        crate::error::observe(note_error);
        guard::register(&RefusePending);
    });
}

/// The eval guard: refuses an eval that would run a collective after a loss.
struct RefusePending;

impl Guard for RefusePending {
    fn before(&self, targets: &[&Array], _mode: Mode) -> Result<()> {
        refuse_pending(targets)
    }
}

/// Called with every MLX error message (the error handler): records a lost ring peer.
fn note_error(message: &str) {
    if message.contains(RING_LOST) {
        let _ = LOST.set(message.to_string());
    }
}

fn lost_error(what: &str) -> Error {
    Error::Mlx(format!(
        "{what}: the ring group lost a peer earlier ({}), and MLX's ring backend cannot run \
         another collective in this process",
        LOST.get().map_or(RING_LOST, String::as_str)
    ))
}

/// `Err` if a peer was lost: `op` would never complete.
pub(crate) fn check_new(op: &str) -> Result<()> {
    watch();
    match LOST.get() {
        Some(_) => Err(lost_error(&format!("[{op}] refused"))),
        None => Ok(()),
    }
}

/// Whether MLX's primitive `name` talks to other processes.
fn is_collective(name: &str) -> bool {
    name.ends_with("AllReduce")
        || name.ends_with("ReduceScatter")
        || matches!(name, "AllGather" | "Send" | "Recv")
}

/// `Err` if a peer was lost and evaluating `targets` would run a collective.
fn refuse_pending(targets: &[&Array]) -> Result<()> {
    if LOST.get().is_none() {
        return Ok(());
    }
    walk(targets, |a, _| {
        if a.is_unscheduled()? {
            let name = a.primitive_name()?;
            if is_collective(&name) {
                return Err(lost_error(&format!("eval refused: the graph holds {name}")));
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::is_collective;

    #[test]
    fn collectives_are_told_from_local_primitives() {
        for name in [
            "Sum AllReduce",
            "Max AllReduce",
            "Min AllReduce",
            "AllGather",
            "Send",
            "Recv",
            "Sum ReduceScatter",
        ] {
            assert!(is_collective(name), "{name}");
        }
        for name in ["Add", "Sum", "Reduce", "Gather", "Compiled", ""] {
            assert!(!is_collective(name), "{name}");
        }
    }
}
