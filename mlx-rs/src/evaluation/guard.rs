//! The checks an evaluation runs, and the list that subsystems add theirs to.
//!
//! A subsystem whose state can make an evaluation wrong (a lost ring peer, a failed lazy
//! read) registers one [`Guard`] the first time it creates such state, so the pipeline
//! never names the subsystems, and an evaluation in a process that uses neither pays one
//! atomic load per free slot it reads (the first, empty one ends the list).

use std::sync::OnceLock;

use crate::array::Array;
use crate::error::Result;

/// What an evaluation does with its targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `eval`: computes them and waits.
    Wait,
    /// `async_eval`: schedules them and returns; reading them later waits.
    Async,
}

/// A check around every evaluation (`eval`, `async_eval`, `Array::eval`).
pub(crate) trait Guard: Sync {
    /// Runs before anything of the evaluation, every guard's in registration order; an
    /// `Err` refuses the evaluation before MLX sees the targets.
    fn before(&self, _targets: &[&Array], _mode: Mode) -> Result<()> {
        Ok(())
    }

    /// Wraps the evaluation: `run` is the evaluation with the guards registered after this
    /// one around it. Called once; calls `run` at most once. A check after the wait belongs
    /// after `run` returns.
    fn around(
        &self,
        _targets: &[&Array],
        _mode: Mode,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        run()
    }
}

/// More than the crate's own subsystems need (two), so registering never fails.
const SLOTS: usize = 8;

static GUARDS: [OnceLock<&'static dyn Guard>; SLOTS] = [const { OnceLock::new() }; SLOTS];

/// Adds `guard` to every evaluation from now on, after those registered before it. Call it
/// once per guard (a `Once` in the subsystem), before the state it checks can exist.
pub(crate) fn register(guard: &'static dyn Guard) {
    // Slots fill in order: `set` on a slot that another thread is filling waits for it, so
    // no filled slot ever follows an empty one.
    let free = GUARDS.iter().any(|slot| slot.set(guard).is_ok());
    assert!(free, "more than {SLOTS} evaluation guards registered");
}

/// The guard registered `index`-th, if any.
#[inline]
pub(super) fn get(index: usize) -> Option<&'static dyn Guard> {
    GUARDS.get(index)?.get().copied()
}
