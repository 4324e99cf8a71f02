//! [`Flattener`] and [`Unflattener`]: the two halves every [`TreeNode`] impl is written
//! against — built-in impls, `#[derive(TreeNode)]` output and registered foreign types alike.
//!
//! A flatten emits exactly one node for the value (a leaf, or a container whose body emits its
//! children); the matching unflatten consumes exactly that node. Keys are attached by the
//! parent (`field`) before the child emits its node, so a child never needs to know its name.

use std::cell::Cell;
use std::sync::Arc;

use crate::def::{
    append, describe, key_list, store_kind, Kind, Node, NodeKind, NodeRef, Str, TreeDef,
};
use crate::error::{self, Error, Result};
use crate::statics::{StaticData, StaticValue};
use crate::{Array, TreeNode};

#[derive(Clone, Copy, Default)]
struct SizeHint {
    leaves: usize,
    nodes: usize,
    text: usize,
    statics: usize,
}

thread_local! {
    static SIZE_HINT: Cell<SizeHint> = const {
        Cell::new(SizeHint { leaves: 0, nodes: 0, text: 0, statics: 0 })
    };
}

/// Collects the leaves (borrowed, in order) and the structure of a tree.
///
/// Used in [`TreeNode::flatten`]. A flatten must emit exactly one node: call one of
/// [`leaf`](Self::leaf), [`none`](Self::none), [`some`](Self::some), [`list`](Self::list),
/// [`tuple`](Self::tuple), [`dict`](Self::dict), [`struct_node`](Self::struct_node),
/// [`variant_node`](Self::variant_node), or delegate to one child's `flatten` (as `Box` does).
pub struct Flattener<'a> {
    pub(crate) leaves: Vec<&'a Array>,
    pub(crate) nodes: Vec<Node>,
    text: String,
    pub(crate) statics: Vec<StaticValue>,
    /// The key for the next node, set by the parent (borrowed: copied into `text` on push).
    key: Option<&'a str>,
    /// The innermost open node (usize::MAX: none).
    open: usize,
    /// How many nodes are open (for the stack checks).
    depth: u32,
    /// False: only leaves are collected (tree_leaves, tree_reduce).
    structure: bool,
    /// Checking: the structure is compared with an existing one node by node instead of
    /// being built (see [`Flattener::checking`]).
    check: Option<Check>,
}

/// A flatten compared against `def`: `next` nodes seen so far, `same` while all matched.
struct Check {
    def: Arc<TreeDef>,
    next: usize,
    same: bool,
}

impl Check {
    // Inlined into `Flattener::push`, which is inlined into each call site, so the `kind`
    // match folds to the one arm a site uses. The comparison reads the stored node directly
    // (`NodeRef::kind` would slice and build a `NodeKind` per node: 15k more instructions per
    // compiled call of the W3 benchmark).
    #[inline(always)]
    fn push(&mut self, key: Option<&str>, kind: NodeKind<'_>) -> usize {
        let index = self.next;
        self.next += 1;
        if self.same {
            let def = &*self.def;
            self.same = match def.nodes.get(index) {
                Some(node) => {
                    key_is(def, node.key, key)
                        && match (node.kind, kind) {
                            (Kind::Leaf, NodeKind::Leaf)
                            | (Kind::None, NodeKind::None)
                            | (Kind::Some, NodeKind::Some)
                            | (Kind::Tuple, NodeKind::Tuple)
                            | (Kind::List, NodeKind::List)
                            | (Kind::Dict, NodeKind::Dict) => true,
                            (Kind::Struct(s), NodeKind::Struct(n))
                            | (Kind::Variant(s), NodeKind::Variant(n))
                            | (Kind::Registered(s), NodeKind::Registered(n)) => def.str_is(s, n),
                            // Static data is checked by `static_node`, with its typed value.
                            _ => false,
                        }
                }
                None => false,
            };
        }
        index
    }

    #[inline]
    fn static_node<S: StaticData>(&mut self, key: &str, value: &S) {
        let index = self.next;
        self.next += 1;
        if self.same {
            let def = &*self.def;
            self.same = match def.nodes.get(index) {
                Some(Node {
                    kind: Kind::Static(i),
                    key: k,
                    ..
                }) => {
                    key_is(def, *k, Some(key))
                        && def.statics.get(*i as usize).is_some_and(|v| v.holds(value))
                }
                _ => false,
            };
        }
    }

    /// Closes node `index`: its subtree must have as many nodes as the expected one (with
    /// kinds and keys equal in preorder, the sizes fix the shape of the tree).
    #[inline]
    fn close(&mut self, index: usize) {
        if self.same {
            self.same = self
                .def
                .nodes
                .get(index)
                .is_some_and(|n| n.size as usize == self.next - index);
        }
    }
}

#[inline]
fn key_is(def: &TreeDef, stored: Option<Str>, key: Option<&str>) -> bool {
    match (stored, key) {
        (None, None) => true,
        (Some(s), Some(k)) => def.str_is(s, k),
        _ => false,
    }
}

impl<'a> Flattener<'a> {
    pub(crate) fn new(structure: bool) -> Self {
        // Trees are usually flattened again and again with the same shape (every call of a
        // compiled step): start from the last sizes seen on this thread, so the vectors do not
        // regrow each time.
        let hint = SIZE_HINT.with(Cell::get);
        let cap = |n: usize| if structure { n } else { 0 };
        Flattener {
            leaves: Vec::with_capacity(hint.leaves),
            nodes: Vec::with_capacity(cap(hint.nodes)),
            text: String::with_capacity(cap(hint.text)),
            statics: Vec::with_capacity(cap(hint.statics)),
            key: None,
            open: usize::MAX,
            depth: 0,
            structure,
            check: None,
        }
    }

    /// A flatten that compares the tree with `def` instead of building a structure: what a
    /// compiled call does with the structure of its previous call (no allocation but the
    /// leaves, no second pass to compare). [`finish_check`](Self::finish_check) says whether
    /// the tree has exactly that structure (static data compared exactly).
    pub(crate) fn checking(def: Arc<TreeDef>) -> Self {
        Flattener {
            leaves: Vec::with_capacity(def.num_leaves),
            nodes: Vec::new(),
            text: String::new(),
            statics: Vec::new(),
            key: None,
            open: usize::MAX,
            depth: 0,
            structure: true,
            check: Some(Check {
                def,
                next: 0,
                same: true,
            }),
        }
    }

    /// The leaves, if the tree had exactly the structure given to
    /// [`checking`](Self::checking).
    pub(crate) fn finish_check(self) -> Option<Vec<&'a Array>> {
        let check = self.check.as_ref()?;
        (check.same && check.next == check.def.nodes.len()).then_some(self.leaves)
    }

    fn remember_sizes(&self) {
        // Capped so that one huge tree does not make every later flatten allocate for it, and
        // low: a hinted buffer stays under glibc's mmap threshold (128 KiB), so it comes from
        // the heap, not from fresh zero pages each time (one 100,000-leaf flatten used to
        // double the time of every later 1,000-leaf round trip on the thread). Larger trees
        // grow their buffers as usual.
        const CAP: usize = 4096;
        SIZE_HINT.with(|h| {
            let old = h.get();
            h.set(SizeHint {
                leaves: self.leaves.len().min(CAP),
                nodes: if self.structure {
                    self.nodes.len().min(CAP)
                } else {
                    old.nodes
                },
                text: if self.structure {
                    self.text.len().min(CAP)
                } else {
                    old.text
                },
                statics: if self.structure {
                    self.statics.len().min(CAP)
                } else {
                    old.statics
                },
            })
        });
    }

    pub(crate) fn finish(self) -> Result<(Vec<&'a Array>, TreeDef)> {
        self.remember_sizes();
        let num_leaves = self.leaves.len();
        Ok((
            self.leaves,
            TreeDef {
                nodes: self.nodes,
                text: self.text,
                statics: self.statics,
                num_leaves,
            },
        ))
    }

    /// How many leaves were emitted so far.
    pub(crate) fn num_leaves(&self) -> usize {
        self.leaves.len()
    }

    pub(crate) fn into_leaves(self) -> Vec<&'a Array> {
        self.remember_sizes();
        self.leaves
    }

    /// Appends a node: its key first, then (through `kind`) its type name, the canonical
    /// order of `text`.
    ///
    /// Inlined into every call site, so the `kind` match folds to the one arm each site uses.
    #[inline(always)]
    fn push(&mut self, kind: NodeKind<'_>) -> usize {
        if let Some(check) = &mut self.check {
            return check.push(self.key.take(), kind);
        }
        let index = self.nodes.len();
        if let Some(parent) = self.nodes.get_mut(self.open) {
            parent.arity += 1;
        }
        let key = self.key.take().map(|k| append(&mut self.text, k));
        let kind = store_kind(&mut self.text, &mut self.statics, kind);
        self.nodes.push(Node {
            kind,
            key,
            arity: 0,
            size: 1,
        });
        index
    }

    #[inline]
    fn open(&mut self, kind: NodeKind<'_>, body: impl FnOnce(&mut Self)) {
        // Flatten recurses through user types' code (derived or registered), which cannot be
        // made iterative; every level passes through here, so growing the stack here makes
        // any depth safe.
        self.depth += 1;
        let depth = self.depth;
        if !self.structure {
            crate::stack::grow_at(depth, || body(self));
            self.depth -= 1;
            return;
        }
        let index = self.push(kind);
        let saved = std::mem::replace(&mut self.open, index);
        crate::stack::grow_at(depth, || body(self));
        self.open = saved;
        self.depth -= 1;
        match &mut self.check {
            Some(check) => check.close(index),
            None => self.nodes[index].size = (self.nodes.len() - index) as u32,
        }
    }

    /// Emits a registered type's node named `name` whose `body` emits its parts.
    #[inline]
    pub(crate) fn registered_node(&mut self, name: &str, body: impl FnOnce(&mut Self)) {
        self.open(NodeKind::Registered(name), body);
    }

    /// Emits an array leaf.
    #[inline]
    pub fn leaf(&mut self, array: &'a Array) {
        self.leaves.push(array);
        if self.structure {
            self.push(NodeKind::Leaf);
        }
    }

    /// Emits `None` (no leaves).
    #[inline]
    pub fn none(&mut self) {
        if self.structure {
            self.push(NodeKind::None);
        }
    }

    /// Emits `Some(value)`: a node with one child, transparent in key paths.
    #[inline]
    pub fn some<T: TreeNode>(&mut self, value: &'a T) {
        self.open(NodeKind::Some, |f| value.flatten(f));
    }

    /// Emits a list of children (`Vec`, slices, `[T; N]`); paths use the positions.
    #[inline]
    pub fn list<T: TreeNode>(&mut self, items: &'a [T]) {
        self.open(NodeKind::List, |f| {
            for item in items {
                item.flatten(f);
            }
        });
    }

    /// Emits a tuple whose `body` emits the elements with [`child`](Self::child).
    #[inline]
    pub fn tuple(&mut self, body: impl FnOnce(&mut Self)) {
        self.open(NodeKind::Tuple, body);
    }

    /// Emits a string-keyed map whose `body` emits entries with [`entry`](Self::entry).
    #[inline]
    pub fn dict(&mut self, body: impl FnOnce(&mut Self)) {
        self.open(NodeKind::Dict, body);
    }

    /// Emits a struct named `name` whose `body` emits its fields with [`field`](Self::field)
    /// and [`static_field`](Self::static_field).
    #[inline]
    pub fn struct_node(&mut self, name: &'static str, body: impl FnOnce(&mut Self)) {
        self.open(NodeKind::Struct(name), body);
    }

    /// Emits an enum variant named `Enum::Variant` whose `body` emits its fields.
    #[inline]
    pub fn variant_node(&mut self, name: &'static str, body: impl FnOnce(&mut Self)) {
        self.open(NodeKind::Variant(name), body);
    }

    /// Emits a child under `key` (a struct field, a registered type's part). The key is its
    /// path segment.
    #[inline]
    pub fn field<T: TreeNode>(&mut self, key: &'a str, value: &'a T) {
        if self.structure {
            self.key = Some(key);
        }
        value.flatten(self);
    }

    /// Like [`field`](Self::field) for a slice of trees: flattens like a `Vec<T>` under `key`.
    #[inline]
    pub fn field_list<T: TreeNode>(&mut self, key: &'a str, items: &'a [T]) {
        if self.structure {
            self.key = Some(key);
        }
        self.list(items);
    }

    /// Emits a map entry: a child under a key of the data (no allocation: the structure
    /// copies keys into one buffer).
    #[inline]
    pub fn entry<T: TreeNode>(&mut self, key: &'a str, value: &'a T) {
        if self.structure {
            self.key = Some(key);
        }
        value.flatten(self);
    }

    /// Emits a positional child (tuple element).
    #[inline]
    pub fn child<T: TreeNode>(&mut self, value: &'a T) {
        value.flatten(self);
    }

    /// Records non-array data under `key`: part of the structure (compared and hashed
    /// exactly, see [`StaticData`]), never a leaf. See the crate docs, "Static data".
    #[inline]
    pub fn static_field<S: StaticData>(&mut self, key: &'a str, value: &S) {
        if !self.structure {
            return;
        }
        if let Some(check) = &mut self.check {
            check.static_node(key, value);
            return;
        }
        let index = self.nodes.len();
        if let Some(parent) = self.nodes.get_mut(self.open) {
            parent.arity += 1;
        }
        let key = append(&mut self.text, key);
        self.statics.push(StaticValue::new(value));
        self.nodes.push(Node {
            kind: Kind::Static((self.statics.len() - 1) as u32),
            key: Some(key),
            arity: 0,
            size: 1,
        });
        debug_assert_eq!(index + 1, self.nodes.len());
    }
}

/// Rebuilds a tree from a [`TreeDef`] and owned leaves; the mirror of [`Flattener`].
///
/// Used in [`TreeNode::unflatten`]. Each call checks that the next node is what the type
/// expects and reports a mismatch with the node's key path.
pub struct Unflattener<'d> {
    def: &'d TreeDef,
    pos: usize,
    /// One past the last node of the innermost open node's subtree.
    end: usize,
    /// How many nodes are open (for the stack checks).
    depth: u32,
    leaves: std::vec::IntoIter<Array>,
}

impl<'d> Unflattener<'d> {
    pub(crate) fn new(def: &'d TreeDef, leaves: Vec<Array>) -> Result<Self> {
        if leaves.len() != def.num_leaves {
            return Err(error::leaf_count(def.num_leaves, leaves.len()));
        }
        Ok(Unflattener {
            def,
            pos: 0,
            end: def.nodes.len(),
            depth: 0,
            leaves: leaves.into_iter(),
        })
    }

    /// An unflattener over the subtree rooted at node `index` of `def` (e.g. one element of a
    /// tuple the transforms flattened their arguments into), taking `count` leaves from
    /// `leaves`.
    pub(crate) fn subtree(
        def: &'d TreeDef,
        index: usize,
        leaves: std::vec::IntoIter<Array>,
    ) -> Result<Self> {
        let node = def
            .nodes
            .get(index)
            .ok_or_else(|| error::invalid("tree definition has no node here"))?;
        let end = index + node.size as usize;
        let expected = def.nodes[index..end]
            .iter()
            .filter(|n| n.kind == Kind::Leaf)
            .count();
        if leaves.len() != expected {
            return Err(error::leaf_count(expected, leaves.len()));
        }
        Ok(Unflattener {
            def,
            pos: index,
            end,
            depth: 0,
            leaves,
        })
    }

    /// Checks that the subtree of [`subtree`](Self::subtree) was consumed.
    pub(crate) fn finish_subtree(self) -> Result<()> {
        if self.pos != self.end {
            return Err(self
                .def
                .error_at(self.pos, "the structure has more nodes than the type reads"));
        }
        Ok(())
    }

    /// Checks that everything was consumed (the root node and all leaves).
    pub(crate) fn finish(self) -> Result<()> {
        if self.pos != self.def.nodes.len() {
            return Err(self
                .def
                .error_at(self.pos, "the structure has more nodes than the type reads"));
        }
        Ok(())
    }

    /// The next node, bounded by the open parent.
    #[inline]
    pub(crate) fn peek(&self) -> Result<&'d Node> {
        if self.pos < self.end {
            Ok(&self.def.nodes[self.pos])
        } else {
            Err(self.missing_child())
        }
    }

    #[cold]
    #[inline(never)]
    fn missing_child(&self) -> Error {
        let parent = self.open_parent();
        match parent {
            Some(p) => self.def.error_at(
                p,
                format!(
                    "the type reads more children than {} has",
                    describe(self.node_ref(p))
                ),
            ),
            None => error::invalid("tree mismatch: the structure is empty"),
        }
    }

    /// The index of the innermost open node (the parent of `pos`), if any.
    fn open_parent(&self) -> Option<usize> {
        // The open node is the last node before `pos` whose subtree ends at `end`.
        (0..self.pos)
            .rev()
            .find(|&i| i + self.def.nodes[i].size as usize == self.end)
    }

    fn node_ref(&self, index: usize) -> NodeRef<'d> {
        NodeRef::at(self.def, index)
    }

    /// An error at the next node: "expected X, found Y".
    #[cold]
    pub fn mismatch(&self, expected: impl std::fmt::Display) -> Error {
        if self.pos >= self.def.nodes.len() {
            return self.missing_child();
        }
        self.def.error_at(
            self.pos,
            format!(
                "expected {expected}, found {}",
                describe(self.node_ref(self.pos))
            ),
        )
    }

    /// Opens the next node if `accept` takes its kind, runs `body` over its children and
    /// checks that `body` consumed all of them.
    #[inline]
    pub(crate) fn enter<R>(
        &mut self,
        expected: impl FnOnce() -> String,
        accept: impl FnOnce(&'d Kind) -> bool,
        body: impl FnOnce(&mut Self, &'d Node) -> Result<R>,
    ) -> Result<R> {
        let node = self.peek()?;
        if !accept(&node.kind) {
            return Err(self.mismatch(expected()));
        }
        let index = self.pos;
        let saved = std::mem::replace(&mut self.end, index + node.size as usize);
        self.pos += 1;
        // Every level of a (derived, registered or dynamic) unflatten passes through here.
        self.depth += 1;
        let out = crate::stack::grow_at(self.depth, || body(self, node));
        self.depth -= 1;
        let out = out?;
        if self.pos != self.end {
            return Err(self.unread_children(index));
        }
        self.end = saved;
        Ok(out)
    }

    #[cold]
    #[inline(never)]
    fn unread_children(&self, index: usize) -> Error {
        let extra = self
            .def
            .key_of(&self.def.nodes[self.pos])
            .unwrap_or("<positional>");
        self.def.error_at(
            index,
            format!(
                "{} has children the type does not read (first: `{extra}`)",
                describe(self.node_ref(index))
            ),
        )
    }

    /// Reads an array leaf.
    #[inline]
    pub fn leaf(&mut self) -> Result<Array> {
        let node = self.peek()?;
        if node.kind != Kind::Leaf {
            return Err(self.mismatch("an array leaf"));
        }
        self.pos += 1;
        // The count was checked against the structure up front.
        self.leaves
            .next()
            .ok_or_else(|| error::invalid("tree mismatch: ran out of leaves"))
    }

    /// Reads `None`.
    #[inline]
    pub fn none(&mut self) -> Result<()> {
        if self.peek()?.kind != Kind::None {
            return Err(self.mismatch("None"));
        }
        self.pos += 1;
        Ok(())
    }

    /// Reads `None` or `Some(T)`.
    #[inline]
    pub fn option<T: TreeNode>(&mut self) -> Result<Option<T>> {
        match self.peek()?.kind {
            Kind::None => {
                self.pos += 1;
                Ok(None)
            }
            _ => self
                .enter(
                    || "None or Some".into(),
                    |k| *k == Kind::Some,
                    |u, _| T::unflatten(u),
                )
                .map(Some),
        }
    }

    /// Reads a list of any length.
    #[inline]
    pub fn list<T: TreeNode>(&mut self) -> Result<Vec<T>> {
        self.enter(
            || "a list".into(),
            |k| *k == Kind::List,
            |u, node| {
                let mut out = Vec::with_capacity(node.arity as usize);
                for _ in 0..node.arity {
                    out.push(T::unflatten(u)?);
                }
                Ok(out)
            },
        )
    }

    /// Reads a list of exactly `len` elements.
    pub fn list_exact<T: TreeNode>(&mut self, len: usize) -> Result<Vec<T>> {
        let node = self.peek()?;
        if node.kind == Kind::List && node.arity as usize != len {
            return Err(self.mismatch(format_args!("a list of {len}")));
        }
        self.list()
    }

    /// Reads a tuple of exactly `len` elements; `body` reads them with [`child`](Self::child).
    #[inline]
    pub fn tuple<R>(&mut self, len: usize, body: impl FnOnce(&mut Self) -> Result<R>) -> Result<R> {
        let node = self.peek()?;
        if node.kind == Kind::Tuple && node.arity as usize != len {
            return Err(self.mismatch(format_args!("a tuple of {len}")));
        }
        self.enter(
            || format!("a tuple of {len}"),
            |k| *k == Kind::Tuple,
            |u, _| body(u),
        )
    }

    /// Reads a string-keyed map; `body` gets the entry count and reads entries with
    /// [`entry`](Self::entry).
    #[inline]
    pub fn dict<R>(&mut self, body: impl FnOnce(&mut Self, usize) -> Result<R>) -> Result<R> {
        self.enter(
            || "a dict".into(),
            |k| *k == Kind::Dict,
            |u, node| body(u, node.arity as usize),
        )
    }

    /// Reads a struct named `name`; `body` reads its fields in flatten order.
    #[inline]
    pub fn struct_node<R>(
        &mut self,
        name: &str,
        body: impl FnOnce(&mut Self) -> Result<R>,
    ) -> Result<R> {
        self.enter(
            || format!("struct `{name}`"),
            |k| matches!(k, Kind::Struct(n) if self.def.str_is(*n, name)),
            |u, _| body(u),
        )
    }

    /// Reads a variant of enum `enum_name`; `body` gets the variant's name (without the
    /// `Enum::` prefix) and reads its fields.
    #[inline]
    pub fn variant_node<R>(
        &mut self,
        enum_name: &str,
        body: impl FnOnce(&mut Self, &'d str) -> Result<R>,
    ) -> Result<R> {
        let def = self.def;
        let variant_of = |kind: &Kind| -> Option<&'d str> {
            match kind {
                Kind::Variant(n) => def
                    .str(*n)
                    .strip_prefix(enum_name)
                    .and_then(|rest| rest.strip_prefix("::")),
                _ => None,
            }
        };
        self.enter(
            || format!("a variant of enum `{enum_name}`"),
            |k| variant_of(k).is_some(),
            |u, node| body(u, variant_of(&node.kind).unwrap_or_default()),
        )
    }

    /// The error for a variant name the enum does not have.
    pub fn unknown_variant(&self, enum_name: &str, variants: &[&str]) -> Error {
        let open = self.open_parent().unwrap_or(0);
        self.def.error_at(
            open,
            format!(
                "enum `{enum_name}` has no variant like {} (variants: {})",
                describe(self.node_ref(open)),
                variants.join(", ")
            ),
        )
    }

    pub(crate) fn registered_node<R>(
        &mut self,
        name: &str,
        body: impl FnOnce(&mut Self) -> Result<R>,
    ) -> Result<R> {
        self.enter(
            || format!("registered type `{name}`"),
            |k| matches!(k, Kind::Registered(n) if self.def.str_is(*n, name)),
            |u, _| body(u),
        )
    }

    #[inline]
    fn expect_key(&self, key: &str, what: &str) -> Result<()> {
        match self.def.nodes.get(self.pos) {
            Some(Node { key: Some(k), .. }) if self.pos < self.end && self.def.str_is(*k, key) => {
                Ok(())
            }
            _ => Err(self.key_error(key, what)),
        }
    }

    #[cold]
    #[inline(never)]
    fn key_error(&self, key: &str, what: &str) -> Error {
        let parent = self.open_parent().unwrap_or(0);
        let found = match self.peek() {
            Ok(node) => self.def.key_of(node).unwrap_or("<positional>"),
            Err(_) => {
                return self.def.error_at(
                    parent,
                    format!(
                        "missing {what} `{key}` ({} has keys {})",
                        describe(self.node_ref(parent)),
                        key_list(self.node_ref(parent))
                    ),
                )
            }
        };
        self.def.error_at(
            parent,
            format!(
                "expected {what} `{key}`, found `{found}` ({} has keys {})",
                describe(self.node_ref(parent)),
                key_list(self.node_ref(parent))
            ),
        )
    }

    /// Reads the child under `key` (a struct field, a registered type's part).
    #[inline]
    pub fn field<T: TreeNode>(&mut self, key: &str) -> Result<T> {
        self.expect_key(key, "field")?;
        T::unflatten(self)
    }

    /// Reads the next positional child (tuple element).
    #[inline]
    pub fn child<T: TreeNode>(&mut self) -> Result<T> {
        T::unflatten(self)
    }

    /// Reads the next map entry: its key and value.
    #[inline]
    pub fn entry<T: TreeNode>(&mut self) -> Result<(String, T)> {
        let key = match self.def.key_of(self.peek()?) {
            Some(k) => k.to_string(),
            None => return Err(self.mismatch("a keyed entry")),
        };
        Ok((key, T::unflatten(self)?))
    }

    /// Reads the static data under `key`.
    pub fn static_field<S: StaticData>(&mut self, key: &str) -> Result<S> {
        self.expect_key(key, "static field")?;
        let index = match self.peek()?.kind {
            Kind::Static(i) => i as usize,
            _ => return Err(self.mismatch(format_args!("static field `{key}`"))),
        };
        let stored = &self.def.statics[index];
        let value = match stored.get::<S>() {
            Ok(Some(v)) => v,
            Ok(None) => {
                return Err(self.def.error_at(
                    self.pos,
                    format!(
                        "static data of type `{}` does not fit the field's type `{}`",
                        stored.type_name().unwrap_or("?"),
                        std::any::type_name::<S>()
                    ),
                ))
            }
            Err(e) => {
                return Err(self
                    .def
                    .error_at(self.pos, format!("static data does not fit the field: {e}")))
            }
        };
        self.pos += 1;
        Ok(value)
    }

    /// What the next node is, without reading it: for a type that decides how to read itself
    /// from the structure, such as an enum that is transparent in key paths and tells its
    /// variants apart by the struct each one holds.
    pub fn peek_kind(&self) -> Result<NodeKind<'d>> {
        self.peek()?;
        Ok(self.node_ref(self.pos).kind())
    }

    /// The next node, without reading it, with its key, children and static data: for a type
    /// whose variants flatten to nodes of the same kind and differ only below it (a wrapper
    /// that tells the variants apart by a static field of the node).
    pub fn peek_node(&self) -> Result<NodeRef<'d>> {
        self.peek()?;
        Ok(self.node_ref(self.pos))
    }

    // ---- crate-internal access for `Value` and the registry ----

    pub(crate) fn enter_any<R>(
        &mut self,
        body: impl FnOnce(&mut Self, &'d Node) -> Result<R>,
    ) -> Result<R> {
        self.enter(String::new, |_| true, body)
    }

    pub(crate) fn skip(&mut self) -> Result<()> {
        let node = self.peek()?;
        let leaves = self.def.nodes[self.pos..self.pos + node.size as usize]
            .iter()
            .filter(|n| n.kind == Kind::Leaf)
            .count();
        for _ in 0..leaves {
            self.leaves.next();
        }
        self.pos += node.size as usize;
        Ok(())
    }

    pub(crate) fn next_key(&self) -> Result<Option<&'d str>> {
        Ok(self.def.key_of(self.peek()?))
    }
}

/// Builds a structure with owned leaves node by node (tree_merge's output).
#[derive(Default)]
pub(crate) struct Builder {
    nodes: Vec<Node>,
    text: String,
    statics: Vec<StaticValue>,
    pub(crate) leaves: Vec<Array>,
    open: Vec<usize>,
}

impl Builder {
    /// Appends a node (a copy of `kind` from another structure) under `key`; counts it as a
    /// child of the open node only if `child_of_open` (a copied subtree's inner nodes keep
    /// their own arity and size).
    pub(crate) fn push(
        &mut self,
        kind: NodeKind<'_>,
        key: Option<&str>,
        arity: u32,
        size: u32,
        child_of_open: bool,
    ) -> usize {
        if child_of_open {
            if let Some(&p) = self.open.last() {
                self.nodes[p].arity += 1;
            }
        }
        let key: Option<Str> = key.map(|k| append(&mut self.text, k));
        let kind = store_kind(&mut self.text, &mut self.statics, kind);
        self.nodes.push(Node {
            kind,
            key,
            arity,
            size,
        });
        self.nodes.len() - 1
    }

    pub(crate) fn leaf(&mut self, key: Option<&str>, array: Array) {
        self.push(NodeKind::Leaf, key, 0, 1, true);
        self.leaves.push(array);
    }

    pub(crate) fn open(&mut self, kind: NodeKind<'_>, key: Option<&str>) -> usize {
        let index = self.push(kind, key, 0, 1, true);
        self.open.push(index);
        index
    }

    pub(crate) fn close(&mut self, index: usize) {
        self.open.pop();
        self.nodes[index].size = (self.nodes.len() - index) as u32;
    }

    pub(crate) fn finish(self) -> (Vec<Array>, TreeDef) {
        let num_leaves = self.leaves.len();
        (
            self.leaves,
            TreeDef {
                nodes: self.nodes,
                text: self.text,
                statics: self.statics,
                num_leaves,
            },
        )
    }
}
