//! Stack growth for the recursions that cannot be made iterative.
//!
//! Flatten, unflatten and the walks over user types recurse once per nesting level, through
//! code the derive generates or users write. Instead of a depth limit, each level checks the
//! remaining stack and, when it runs low, continues on a fresh heap-allocated segment
//! (`stacker`, as rustc does for deep expressions): any depth works, on any thread.

/// Below this much remaining stack, the next level runs on a new segment.
const RED_ZONE: usize = 128 * 1024;
/// The size of each new segment.
const SEGMENT: usize = 4 * 1024 * 1024;

/// Runs `f`, on a new stack segment if little stack is left.
#[inline]
pub(crate) fn grow<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}
