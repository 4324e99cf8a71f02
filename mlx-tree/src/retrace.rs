//! Retrace diagnostics: a compiled function that keeps tracing says why, once.
//!
//! The classic way to lose `compile` without noticing is a value that changes every call but
//! is part of the cache key: an integer offset kept as static data (a natural port of
//! mlx_lm's KV cache), a sequence dimension that grows. Each call is then a new signature, so
//! the Rust function runs (traces) every time and nothing is compiled. The compiled function
//! watches for that: after [`STREAK`] calls in a row that each traced a new signature, it
//! compares what changed from call to call, names the path, and reports once — through the
//! `log` facade (`warn`, target `mlx_tree::compile`) and in
//! [`CompileStats::retraces`](crate::CompileStats::retraces).

use std::fmt;

use crate::def::{describe, Kind, NodeKind, NodeRef, TreeDef};
use crate::Array;

/// Consecutive new-signature calls before a report.
pub(crate) const STREAK: usize = 8;

/// What kept changing between calls of a compiled function, reported once after
/// a streak of consecutive calls that each traced (8 calls; see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetraceReport {
    /// Consecutive calls that traced when the report was made (the first call of the
    /// function included).
    pub traces: u64,
    /// The path that changed most often in those calls (`state.layers.0.offset`; for
    /// `compile_mut`, `state.` and `input.` start the paths of the state and the argument).
    pub path: String,
    /// What changed there.
    pub cause: RetraceCause,
    /// In how many of those calls it changed from the call before (at most `traces - 1`).
    pub changes: u64,
    /// The first values seen at the path (static data, shapes, dtypes or structures, printed).
    pub values: Vec<String>,
    /// The whole report, as logged.
    pub message: String,
}

/// What changed at a [`RetraceReport`]'s path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetraceCause {
    /// Static data (part of the key: a constant for the trace).
    StaticData,
    /// A leaf's shape.
    Shape,
    /// A leaf's dtype.
    Dtype,
    /// The tree's structure: a container's length or keys, an `Option`, a variant.
    Structure,
}

impl fmt::Display for RetraceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The shape and dtype of one leaf, as the key saw it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct LeafSig {
    dtype: mlx_rs::Dtype,
    shape: Vec<i32>,
}

pub(crate) fn leaf_sigs(leaves: &[&Array]) -> Vec<LeafSig> {
    leaves
        .iter()
        .map(|a| LeafSig {
            dtype: a.dtype(),
            shape: a.shape().to_vec(),
        })
        .collect()
}

/// One call's difference from the call before.
struct Change {
    path: String,
    cause: RetraceCause,
    old: String,
    new: String,
}

/// The streak of consecutive new-signature calls of one compiled function.
#[derive(Default)]
pub(crate) struct Tracker {
    streak: u64,
    window: Vec<Change>,
    report: Option<RetraceReport>,
}

impl Tracker {
    /// A call hit the cache: the streak ends.
    pub(crate) fn hit(&mut self) {
        self.streak = 0;
        self.window.clear();
    }

    /// A call traced a new signature. `before` is the previous call's structure and leaves
    /// (`None` on the first call); `roots` names the two elements of a pair structure
    /// (`compile_mut`'s state and argument).
    pub(crate) fn traced(
        &mut self,
        before: Option<(&TreeDef, &[LeafSig])>,
        def: &TreeDef,
        leaves: &[&Array],
        roots: Option<[&str; 2]>,
    ) {
        self.streak += 1;
        let Some((old_def, old_leaves)) = before else {
            return;
        };
        if let Some(mut change) = difference(old_def, old_leaves, def, leaves) {
            change.path = name_roots(&change.path, roots);
            if self.window.len() == STREAK {
                self.window.remove(0);
            }
            self.window.push(change);
        }
        if self.report.is_none() && self.streak >= STREAK as u64 {
            if let Some(report) = self.make_report() {
                log::warn!(target: "mlx_tree::compile", "{}", report.message);
                self.report = Some(report);
            }
        }
    }

    pub(crate) fn report(&self) -> Option<RetraceReport> {
        self.report.clone()
    }

    fn make_report(&self) -> Option<RetraceReport> {
        // The path that changed most often (first seen wins a tie).
        let mut best: Option<(&Change, u64)> = None;
        for c in &self.window {
            let n = self
                .window
                .iter()
                .filter(|o| o.path == c.path && o.cause == c.cause)
                .count() as u64;
            if best.map_or(true, |(_, m)| n > m) {
                best = Some((c, n));
            }
        }
        let (first, changes) = best?;
        let mut values = vec![first.old.clone()];
        for c in self
            .window
            .iter()
            .filter(|c| c.path == first.path && c.cause == first.cause)
        {
            if values.len() >= 3 {
                break;
            }
            values.push(c.new.clone());
        }
        let calls = self.window.len() as u64;
        let how_often = if changes == calls {
            "changed every call".to_string()
        } else {
            format!("changed in {changes} of the last {calls} calls")
        };
        let (what, advice) = match first.cause {
            RetraceCause::StaticData => (
                "static data at",
                "make it an Array (a leaf), so that it is an input of the compiled graph",
            ),
            RetraceCause::Shape => (
                "the shape of",
                "keep shapes fixed (preallocate and write at an Array offset), or compile with \
                 shapeless = true if the function allows it",
            ),
            RetraceCause::Dtype => ("the dtype of", "keep the dtype fixed"),
            RetraceCause::Structure => (
                "the structure at",
                "keep containers the same length and keys, or move what varies into Arrays",
            ),
        };
        let message = format!(
            "compile: {} traces in {} calls; {what} {} {how_often} ({}, ...); {advice}",
            self.streak,
            self.streak,
            if first.path.is_empty() {
                "the input"
            } else {
                &first.path
            },
            values.join(", "),
        );
        Some(RetraceReport {
            traces: self.streak,
            path: first.path.clone(),
            cause: first.cause,
            changes,
            values,
            message,
        })
    }
}

/// `0.cache.offset` -> `state.cache.offset` for a pair structure.
fn name_roots(path: &str, roots: Option<[&str; 2]>) -> String {
    let Some(roots) = roots else {
        return path.to_string();
    };
    let (head, rest) = path.split_once('.').unwrap_or((path, ""));
    let root = match head {
        "0" => roots[0],
        "1" => roots[1],
        _ => return path.to_string(),
    };
    if rest.is_empty() {
        root.to_string()
    } else {
        format!("{root}.{rest}")
    }
}

/// The first difference between two calls' keys: the structures (static data included),
/// then the leaves' shapes and dtypes, in flatten order.
fn difference(
    old_def: &TreeDef,
    old_leaves: &[LeafSig],
    def: &TreeDef,
    leaves: &[&Array],
) -> Option<Change> {
    if !old_def.exact_eq(def) {
        return structure_difference(old_def, def);
    }
    let leaf_nodes = def
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == Kind::Leaf)
        .map(|(i, _)| i);
    for ((old, leaf), node) in old_leaves.iter().zip(leaves).zip(leaf_nodes) {
        let shape = leaf.shape();
        if old.shape != shape {
            return Some(Change {
                path: def.path_of(node),
                cause: RetraceCause::Shape,
                old: format!("{:?}", old.shape),
                new: format!("{shape:?}"),
            });
        }
        let dtype = leaf.dtype();
        if old.dtype != dtype {
            return Some(Change {
                path: def.path_of(node),
                cause: RetraceCause::Dtype,
                old: format!("{:?}", old.dtype),
                new: format!("{dtype:?}"),
            });
        }
    }
    None
}

/// Descends both structures to the deepest node where they part: static data that differs,
/// a container whose length differs (its common children equal), or a container whose child
/// differs in kind or key (then the container is reported: its keys or element kinds changed).
fn structure_difference(a: &TreeDef, b: &TreeDef) -> Option<Change> {
    let change = |i: usize, j: usize| Change {
        path: b.path_of(j),
        cause: RetraceCause::Structure,
        old: describe(NodeRef::at(a, i)),
        new: describe(NodeRef::at(b, j)),
    };
    if a.nodes.is_empty() || b.nodes.is_empty() {
        return None;
    }
    let (mut i, mut j) = (0, 0);
    if !same_kind_and_key(a, 0, b, 0) {
        return Some(change(0, 0));
    }
    loop {
        let (x, y) = (&a.nodes[i], &b.nodes[j]);
        if let (NodeKind::Static(old), NodeKind::Static(new)) =
            (NodeRef::at(a, i).kind(), NodeRef::at(b, j).kind())
        {
            return (old != new).then(|| Change {
                path: b.path_of(j),
                cause: RetraceCause::StaticData,
                old: format!("{old:?}"),
                new: format!("{new:?}"),
            });
        }
        let (mut ci, mut cj) = (i + 1, j + 1);
        let mut next = None;
        for _ in 0..x.arity.min(y.arity) {
            if !same_subtree(a, ci, b, cj) {
                next = Some((ci, cj));
                break;
            }
            ci += a.nodes[ci].size as usize;
            cj += b.nodes[cj].size as usize;
        }
        match next {
            Some((ci, cj)) if same_kind_and_key(a, ci, b, cj) => {
                (i, j) = (ci, cj);
            }
            Some(_) => return Some(change(i, j)),
            None if x.arity != y.arity => return Some(change(i, j)),
            None => return None,
        }
    }
}

fn same_subtree(a: &TreeDef, i: usize, b: &TreeDef, j: usize) -> bool {
    let size = a.nodes[i].size as usize;
    size == b.nodes[j].size as usize && (0..size).all(|k| same_node(a, i + k, b, j + k))
}

/// Same kind (type names compared, static values not) and same key.
fn same_kind_and_key(a: &TreeDef, i: usize, b: &TreeDef, j: usize) -> bool {
    let (x, y) = (NodeRef::at(a, i), NodeRef::at(b, j));
    let kind = match (x.kind(), y.kind()) {
        (NodeKind::Static(_), NodeKind::Static(_)) => true,
        (k, l) => k == l,
    };
    kind && x.key() == y.key()
}

/// Same kind, key, static value and number of children and nodes below.
fn same_node(a: &TreeDef, i: usize, b: &TreeDef, j: usize) -> bool {
    let (x, y) = (&a.nodes[i], &b.nodes[j]);
    x.size == y.size
        && x.arity == y.arity
        && NodeRef::at(a, i).kind() == NodeRef::at(b, j).kind()
        && a.key_of(x) == b.key_of(y)
}
