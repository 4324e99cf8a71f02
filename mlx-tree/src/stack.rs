//! Stack growth for the recursions that cannot be made iterative.
//!
//! Flatten, unflatten and the walks over user types recurse once per nesting level, through
//! code the derive generates or users write. Instead of a depth limit, each level checks the
//! remaining stack and, when it runs low, continues on a fresh heap-allocated segment
//! (`stacker`, as rustc does for deep expressions): any depth works, on any thread.

/// Below this much remaining stack, the next level runs on a new segment. Covers
/// `CHECK_EVERY` levels between checks with room to spare (a level of a derived flatten uses
/// well under 4 KiB, debug builds included).
const RED_ZONE: usize = 256 * 1024;
/// The hot walks (flatten, unflatten: every compiled call) check the stack only every this
/// many levels: a check costs a few nanoseconds, more than a shallow level itself.
const CHECK_EVERY: u32 = 16;
/// The size of each new segment.
const SEGMENT: usize = 4 * 1024 * 1024;

/// Runs `f`, on a new stack segment if little stack is left.
#[inline]
pub(crate) fn grow<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

/// [`grow`] for a walk that counts its depth: checks only every `CHECK_EVERY` levels.
#[inline]
pub(crate) fn grow_at<R>(depth: u32, f: impl FnOnce() -> R) -> R {
    if depth % CHECK_EVERY == 0 {
        grow(f)
    } else {
        f()
    }
}
