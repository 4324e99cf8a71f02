//! Errors. Every fallible function in this crate returns [`mlx_rs::Result`], so tree code and
//! array code compose with one `?`; tree problems are [`Error::InvalidArgument`] with a
//! message that names the path where the trees differ and how. All such messages are built
//! here and in `TreeDef::error_at`, so their wording stays uniform.

pub use mlx_rs::{Error, Result};

pub(crate) fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

/// The leaf-count check shared by every unflatten.
pub(crate) fn leaf_count(expected: usize, given: usize) -> Error {
    invalid(format!(
        "wrong number of leaves: the structure has {expected} leaves, {given} were given"
    ))
}
