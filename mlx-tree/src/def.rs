//! [`TreeDef`]: the structure of a tree without its leaves.
//!
//! Stored as one flat pre-order list of small `Copy` nodes (no per-node boxing, no per-key
//! allocation): each node records its kind, the key it sits under in its parent, how many
//! direct children it has and how many nodes its subtree spans, so a subtree can be skipped in
//! O(1). Keys and type names are slices of one string buffer (`text`), appended in pre-order
//! (a node's key, then its type name); static data lives in a side list indexed in pre-order.
//!
//! Two notions of equality live here. The public `Eq`/`Hash` are JAX's: dicts pair their
//! children by key, so `{a, b}` equals `{b, a}`. The compile cache needs more — the same
//! leaf order, since a trace binds leaves by position — and uses [`TreeDef::exact_eq`] /
//! [`TreeDef::exact_hash`], which compare the flat vectors as they are.

use std::collections::HashSet;
use std::fmt::{self, Write as _};
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value as Json;

use crate::error::{self, Error, Result};
use crate::stack::grow;
use crate::statics::StaticValue;

/// A string stored in [`TreeDef::text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Str {
    start: u32,
    len: u32,
}

/// Appends `s` to a structure's string buffer.
#[inline]
pub(crate) fn append(text: &mut String, s: &str) -> Str {
    let start = text.len() as u32;
    text.push_str(s);
    Str {
        start,
        len: s.len() as u32,
    }
}

/// Stores a node's kind in a structure's buffers (its name in `text`, its static value in
/// `statics`): what a flatten and [`Builder`](crate::flatten::Builder) append.
#[inline(always)]
pub(crate) fn store_kind(
    text: &mut String,
    statics: &mut Vec<StaticValue>,
    kind: NodeKind<'_>,
) -> Kind {
    match kind {
        NodeKind::Leaf => Kind::Leaf,
        NodeKind::None => Kind::None,
        NodeKind::Some => Kind::Some,
        NodeKind::Tuple => Kind::Tuple,
        NodeKind::List => Kind::List,
        NodeKind::Dict => Kind::Dict,
        NodeKind::Struct(n) => Kind::Struct(append(text, n)),
        NodeKind::Variant(n) => Kind::Variant(append(text, n)),
        NodeKind::Registered(n) => Kind::Registered(append(text, n)),
        NodeKind::Static(v) => {
            statics.push(v.clone());
            Kind::Static((statics.len() - 1) as u32)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Leaf,
    None,
    Some,
    Tuple,
    List,
    Dict,
    Struct(Str),
    /// An enum variant, named `Enum::Variant`.
    Variant(Str),
    Registered(Str),
    /// Static data: index into `TreeDef::statics`.
    Static(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    /// The key this node sits under in its parent (`None`: positional or root).
    pub(crate) key: Option<Str>,
    /// Direct children, static nodes included.
    pub(crate) arity: u32,
    /// Nodes in this subtree, itself included.
    pub(crate) size: u32,
}

/// The structure of a tree: every interior node with its kind, type name, keys and static
/// data, and where the leaves go — everything except the leaves themselves.
///
/// Two trees have equal `TreeDef`s exactly when they have the same types, the same container
/// lengths and keys, and equal static data (exactly: see [`StaticData`](crate::StaticData)).
/// Dict entries pair by key, as in JAX: `{"a": *, "b": *}` equals `{"b": *, "a": *}`
/// although the two flatten their leaves in different orders. A `TreeDef` read back from its
/// serialized form equals the one that was written (its static data, now JSON, is compared
/// through the typed value's JSON). `TreeDef` is `Eq + Hash`, so it can key a cache. `Display` prints it readably, like JAX's `PyTreeDef`:
///
/// ```
/// use mlx_tree::{tree_structure, Array};
/// use std::collections::BTreeMap;
/// let a = Array::from_scalar(1.0f32);
/// let tree = (vec![a.clone(), a.clone()], BTreeMap::from([("w".to_string(), a)]), None::<Array>);
/// let def = tree_structure(&tree)?;
/// assert_eq!(def.to_string(), r#"TreeDef(([*, *], {"w": *}, None))"#);
/// assert_eq!(def.num_leaves(), 3);
/// # Ok::<(), mlx_tree::Error>(())
/// ```
///
/// It serializes with serde (a nested, self-describing form), so an exported function can keep
/// its signature next to the graph.
#[derive(Clone)]
pub struct TreeDef {
    pub(crate) nodes: Vec<Node>,
    pub(crate) text: String,
    pub(crate) statics: Vec<StaticValue>,
    pub(crate) num_leaves: usize,
}

impl TreeDef {
    pub(crate) fn empty() -> Self {
        TreeDef {
            nodes: Vec::new(),
            text: String::new(),
            statics: Vec::new(),
            num_leaves: 0,
        }
    }

    #[inline]
    pub(crate) fn str(&self, s: Str) -> &str {
        &self.text[s.start as usize..(s.start + s.len) as usize]
    }

    /// Whether `s` holds exactly `other` (lengths first: most mismatches stop there).
    #[inline]
    pub(crate) fn str_is(&self, s: Str, other: &str) -> bool {
        let start = s.start as usize;
        s.len as usize == other.len()
            && self.text.as_bytes().get(start..start + other.len()) == Some(other.as_bytes())
    }

    #[inline]
    pub(crate) fn key_of(&self, node: &Node) -> Option<&str> {
        node.key.map(|k| self.str(k))
    }

    /// How many array leaves a tree of this structure holds.
    pub fn num_leaves(&self) -> usize {
        self.num_leaves
    }

    /// How many nodes (leaves, containers and static fields) the structure has.
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The root node, for walking the structure.
    pub fn root(&self) -> NodeRef<'_> {
        NodeRef {
            def: self,
            index: 0,
        }
    }

    /// A copy of this structure with some static data replaced: `f` sees each static node
    /// in pre-order and returns its new value, or `None` to keep the old one. With the
    /// same leaves, [`tree_unflatten`](crate::tree_unflatten) then rebuilds the tree with the
    /// new static data (this is how `mlx_nn`'s `train` and `freeze` set their flags).
    pub fn map_statics(
        &self,
        mut f: impl FnMut(NodeRef<'_>, &StaticValue) -> Option<StaticValue>,
    ) -> TreeDef {
        let mut out = self.clone();
        for (index, node) in self.nodes.iter().enumerate() {
            if let Kind::Static(k) = node.kind {
                let k = k as usize;
                if let Some(new) = f(NodeRef::at(self, index), &self.statics[k]) {
                    out.statics[k] = new;
                }
            }
        }
        out
    }

    /// The node at a dotted key path, as [`leaf_paths`](Self::leaf_paths) and
    /// [`NodeRef::path`] name them (`""` is the root). `Some` is transparent in paths, so a
    /// path that ends at an `Option` gives the value inside it; `None` if nothing is there.
    ///
    /// ```
    /// use mlx_tree::{tree_structure, Array, NodeKind};
    /// let a = Array::from_scalar(1.0f32);
    /// let def = tree_structure(&(vec![a.clone(), a.clone()], Some(a)))?;
    /// assert_eq!(def.node_at("0.1").unwrap().kind(), NodeKind::Leaf);
    /// assert_eq!(def.node_at("1").unwrap().kind(), NodeKind::Leaf); // through the `Some`
    /// assert!(def.node_at("0.2").is_none());
    /// # Ok::<(), mlx_tree::Error>(())
    /// ```
    pub fn node_at(&self, path: &str) -> Option<NodeRef<'_>> {
        if self.nodes.is_empty() {
            return None;
        }
        let through_some = |mut index: usize| {
            while self.nodes[index].kind == Kind::Some {
                index += 1;
            }
            index
        };
        let mut index = through_some(0);
        let mut rest = path;
        // Without recursion: one step down per path segment.
        while !rest.is_empty() {
            let node = &self.nodes[index];
            let mut child = index + 1;
            let mut position = 0usize;
            let mut found = None;
            for _ in 0..node.arity {
                let c = &self.nodes[child];
                if !matches!(c.kind, Kind::Static(_)) {
                    // The segment, then the end or a dot and more.
                    let matches = |seg: &str| match rest.strip_prefix(seg)? {
                        "" => Some(""),
                        r => r.strip_prefix('.').filter(|r| !r.is_empty()),
                    };
                    let next = match self.key_of(c) {
                        Some(k) => matches(k),
                        None => matches(&position.to_string()),
                    };
                    if let Some(r) = next {
                        found = Some((child, r));
                        break;
                    }
                    position += 1;
                }
                child += c.size as usize;
            }
            let (child, r) = found?;
            index = through_some(child);
            rest = r;
        }
        Some(NodeRef::at(self, index))
    }

    /// A copy of this structure with the subtree at node `index` replaced by `subtree`, which
    /// takes over the replaced node's key. With the leaves spliced the same way (the
    /// replaced node's [`NodeRef::leaf_range`] exchanged for `subtree`'s leaves),
    /// [`tree_unflatten`](crate::tree_unflatten) rebuilds the tree with the new part: how
    /// `mlx_nn` swaps one module of a model for another.
    ///
    /// ```
    /// use mlx_tree::{tree_structure, Array};
    /// let a = Array::from_scalar(1.0f32);
    /// let def = tree_structure(&(a.clone(), vec![a.clone()]))?;
    /// let part = tree_structure(&(a.clone(), a.clone()))?;
    /// let index = def.node_at("1").unwrap().index();
    /// let new = def.replace_subtree(index, &part)?;
    /// assert_eq!(new.to_string(), "TreeDef((*, (*, *)))");
    /// assert_eq!(new.num_leaves(), 3);
    /// # Ok::<(), mlx_tree::Error>(())
    /// ```
    pub fn replace_subtree(&self, index: usize, subtree: &TreeDef) -> Result<TreeDef> {
        self.check_index(index)?;
        if subtree.nodes.is_empty() {
            return Err(error::invalid("replace_subtree: the new subtree is empty"));
        }
        let old = &self.nodes[index];
        let (old_size, new_size) = (old.size as usize, subtree.nodes.len());
        let grown = |size: u32| -> Result<u32> {
            (size as usize - old_size)
                .checked_add(new_size)
                .and_then(|s| u32::try_from(s).ok())
                .ok_or_else(|| error::invalid("replace_subtree: the structure is too large"))
        };
        let old_leaves = NodeRef::at(self, index).num_leaves();
        let mut out = TreeDef::empty();
        out.nodes.reserve(self.nodes.len() - old_size + new_size);
        for (i, node) in self.nodes[..index].iter().enumerate() {
            let mut copy = out.copy_node(self, node, self.key_of(node));
            // The replaced node's ancestors span it.
            if i + node.size as usize > index {
                copy.size = grown(node.size)?;
            }
            out.nodes.push(copy);
        }
        let key = self.key_of(old);
        for (i, node) in subtree.nodes.iter().enumerate() {
            let key = if i == 0 { key } else { subtree.key_of(node) };
            let copy = out.copy_node(subtree, node, key);
            out.nodes.push(copy);
        }
        for node in &self.nodes[index + old_size..] {
            let copy = out.copy_node(self, node, self.key_of(node));
            out.nodes.push(copy);
        }
        out.num_leaves = self.num_leaves - old_leaves + subtree.num_leaves;
        Ok(out)
    }

    /// A copy of `node` (of `from`) with its strings and static value moved into this
    /// structure's buffers, under `key`.
    fn copy_node(&mut self, from: &TreeDef, node: &Node, key: Option<&str>) -> Node {
        let key = key.map(|k| append(&mut self.text, k));
        let kind = match node.kind {
            Kind::Struct(s) => Kind::Struct(append(&mut self.text, from.str(s))),
            Kind::Variant(s) => Kind::Variant(append(&mut self.text, from.str(s))),
            Kind::Registered(s) => Kind::Registered(append(&mut self.text, from.str(s))),
            Kind::Static(i) => {
                self.statics.push(from.statics[i as usize].clone());
                Kind::Static((self.statics.len() - 1) as u32)
            }
            kind => kind,
        };
        Node { kind, key, ..*node }
    }

    /// The node at position `index` of the pre-order list ([`NodeRef::index`]).
    pub fn node(&self, index: usize) -> Option<NodeRef<'_>> {
        (index < self.nodes.len()).then(|| NodeRef::at(self, index))
    }

    /// Every node in pre-order (flatten order), static nodes included.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = NodeRef<'_>> + '_ {
        (0..self.nodes.len()).map(move |index| NodeRef::at(self, index))
    }

    /// The key path of every leaf, in flatten order (`layers.0.attn.wq.weight`), as Python
    /// MLX's `tree_flatten` would name them.
    pub fn leaf_paths(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.num_leaves);
        self.for_each_leaf_path(|p| out.push(p.to_string()));
        out
    }

    /// Calls `f` with the path of each leaf in flatten order, reusing one buffer.
    pub(crate) fn for_each_leaf_path(&self, mut f: impl FnMut(&str)) {
        if self.nodes.is_empty() {
            return;
        }
        let mut path = String::new();
        self.walk_paths(0, &mut path, &mut f);
    }

    fn walk_paths(&self, index: usize, path: &mut String, f: &mut impl FnMut(&str)) {
        let node = &self.nodes[index];
        match node.kind {
            Kind::Leaf => f(path),
            Kind::Static(_) => {}
            _ => {
                let transparent = node.kind == Kind::Some;
                let mut child = index + 1;
                let mut position = 0usize;
                for _ in 0..node.arity {
                    let c = &self.nodes[child];
                    if !matches!(c.kind, Kind::Static(_)) {
                        let len = path.len();
                        if !transparent {
                            push_segment(path, self.key_of(c), position);
                        }
                        grow(|| self.walk_paths(child, path, f));
                        path.truncate(len);
                        position += 1;
                    }
                    child += c.size as usize;
                }
            }
        }
    }

    /// The dotted path of node `target`; the root is the empty path.
    pub(crate) fn path_of(&self, target: usize) -> String {
        let mut path = String::new();
        if target < self.nodes.len() {
            self.locate(0, target, &mut path);
        }
        path
    }

    fn locate(&self, index: usize, target: usize, path: &mut String) -> bool {
        if index == target {
            return true;
        }
        let node = &self.nodes[index];
        let transparent = node.kind == Kind::Some;
        let mut child = index + 1;
        let mut position = 0usize;
        for _ in 0..node.arity {
            let c = &self.nodes[child];
            if target >= child && target < child + c.size as usize {
                let is_static = matches!(c.kind, Kind::Static(_));
                if !transparent {
                    match (self.key_of(c), is_static) {
                        (Some(k), _) => push_segment(path, Some(k), 0),
                        (None, false) => push_segment(path, None, position),
                        (None, true) => {}
                    }
                }
                return grow(|| self.locate(child, target, path));
            }
            if !matches!(c.kind, Kind::Static(_)) {
                position += 1;
            }
            child += c.size as usize;
        }
        false
    }

    /// Where two structures first differ and how, or `None` when they are equal (dicts
    /// paired by key).
    pub(crate) fn difference(&self, other: &TreeDef) -> Option<String> {
        if self.exact_eq(other) {
            return None;
        }
        if self.nodes.is_empty() || other.nodes.is_empty() {
            return Some("one of the trees is empty".into());
        }
        diff_nodes(self.root(), other.root())
    }

    /// Equality of the flat form: the same structure *and* the same leaf order (dict entries
    /// in the same order). What a compiled trace needs, since it binds leaves by position.
    #[inline]
    pub(crate) fn exact_eq(&self, other: &TreeDef) -> bool {
        self.num_leaves == other.num_leaves
            && self.nodes == other.nodes
            && self.text == other.text
            && self.statics == other.statics
    }

    /// The hash that goes with [`exact_eq`](Self::exact_eq): one pass over the flat vectors.
    #[inline]
    pub(crate) fn exact_hash<H: Hasher>(&self, state: &mut H) {
        self.nodes.hash(state);
        self.text.hash(state);
        self.statics.hash(state);
    }

    fn check_index(&self, index: usize) -> Result<()> {
        if index < self.nodes.len() {
            Ok(())
        } else {
            Err(error::invalid("tree definition has no node here"))
        }
    }
}

/// Appends one path segment: the key, or the position among the parent's tree children.
fn push_segment(path: &mut String, key: Option<&str>, position: usize) {
    if !path.is_empty() {
        path.push('.');
    }
    match key {
        Some(k) => path.push_str(k),
        None => {
            let _ = write!(path, "{position}");
        }
    }
}

/// Human-readable description of a path for error messages.
pub(crate) fn describe_path(path: &str) -> String {
    if path.is_empty() {
        "the root".to_string()
    } else {
        format!("`{path}`")
    }
}

/// A node of a [`TreeDef`], for walking a structure (e.g. to match a tree prefix).
#[derive(Clone, Copy)]
pub struct NodeRef<'d> {
    def: &'d TreeDef,
    index: usize,
}

/// What a node of a [`TreeDef`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeKind<'d> {
    /// An array leaf.
    Leaf,
    /// `Option::None` or [`Value::None`](crate::Value::None).
    None,
    /// `Option::Some`: one child, transparent in key paths.
    Some,
    /// A tuple (or `()`): positional children.
    Tuple,
    /// A `Vec`, `[T; N]` or [`Value::List`](crate::Value::List): positional children.
    List,
    /// A string-keyed map or [`Value::Dict`](crate::Value::Dict): keyed children.
    Dict,
    /// A derived struct: keyed children, static fields among them.
    Struct(&'d str),
    /// A derived enum's variant, named `Enum::Variant`.
    Variant(&'d str),
    /// A type registered with [`register`](crate::register), by its registered name.
    Registered(&'d str),
    /// Static (non-array) data, kept typed ([`StaticValue::get`] reads it).
    Static(&'d StaticValue),
}

impl<'d> NodeRef<'d> {
    pub(crate) fn at(def: &'d TreeDef, index: usize) -> Self {
        NodeRef { def, index }
    }

    fn node(&self) -> &'d Node {
        &self.def.nodes[self.index]
    }

    /// The node's kind.
    pub fn kind(&self) -> NodeKind<'d> {
        let def = self.def;
        match self.node().kind {
            Kind::Leaf => NodeKind::Leaf,
            Kind::None => NodeKind::None,
            Kind::Some => NodeKind::Some,
            Kind::Tuple => NodeKind::Tuple,
            Kind::List => NodeKind::List,
            Kind::Dict => NodeKind::Dict,
            Kind::Struct(n) => NodeKind::Struct(def.str(n)),
            Kind::Variant(n) => NodeKind::Variant(def.str(n)),
            Kind::Registered(n) => NodeKind::Registered(def.str(n)),
            Kind::Static(i) => NodeKind::Static(&def.statics[i as usize]),
        }
    }

    /// The key this node sits under in its parent (`None` for positional children and the root).
    pub fn key(&self) -> Option<&'d str> {
        self.def.key_of(self.node())
    }

    /// The direct children, static fields included, in flatten order.
    pub fn children(&self) -> impl Iterator<Item = NodeRef<'d>> + 'd {
        let def = self.def;
        let mut next = self.index + 1;
        (0..self.node().arity).map(move |_| {
            let child = NodeRef { def, index: next };
            next += def.nodes[next].size as usize;
            child
        })
    }

    /// Number of array leaves under this node.
    pub fn num_leaves(&self) -> usize {
        let end = self.index + self.node().size as usize;
        self.def.nodes[self.index..end]
            .iter()
            .filter(|n| n.kind == Kind::Leaf)
            .count()
    }

    /// This node's subtree as a structure of its own (without the key it has in its
    /// parent): the structure of that part of the tree, for
    /// [`tree_unflatten`](crate::tree_unflatten) with the leaves of [`leaf_range`](Self::leaf_range).
    ///
    /// ```
    /// use mlx_tree::{tree_flatten, tree_unflatten, Array};
    /// let a = Array::from_scalar(1.0f32);
    /// let tree = (a.clone(), vec![a.clone(), a]);
    /// let (leaves, def) = tree_flatten(&tree)?;
    /// let node = def.node_at("1").unwrap();
    /// let part: Vec<Array> = leaves[node.leaf_range()].iter().map(|a| (*a).clone()).collect();
    /// let list: Vec<Array> = tree_unflatten(&node.subtree(), part)?;
    /// assert_eq!(list.len(), 2);
    /// # Ok::<(), mlx_tree::Error>(())
    /// ```
    pub fn subtree(&self) -> TreeDef {
        let def = self.def;
        let end = self.index + self.node().size as usize;
        let mut out = TreeDef::empty();
        out.nodes.reserve(end - self.index);
        for (i, node) in def.nodes[self.index..end].iter().enumerate() {
            let key = if i == 0 { None } else { def.key_of(node) };
            let copy = out.copy_node(def, node, key);
            out.nodes.push(copy);
        }
        out.num_leaves = out.nodes.iter().filter(|n| n.kind == Kind::Leaf).count();
        out
    }

    /// Nodes in this node's subtree, itself included: the subtree is the nodes
    /// `index()..index() + num_nodes()` of the pre-order list.
    pub fn num_nodes(&self) -> usize {
        self.node().size as usize
    }

    /// Where this node's leaves are among the whole tree's leaves, in flatten order.
    pub fn leaf_range(&self) -> std::ops::Range<usize> {
        let before = self.def.nodes[..self.index]
            .iter()
            .filter(|n| n.kind == Kind::Leaf)
            .count();
        before..before + self.num_leaves()
    }

    /// This node's position in the pre-order node list.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The dotted key path of this node (empty for the root).
    pub fn path(&self) -> String {
        self.def.path_of(self.index)
    }

    pub(crate) fn raw(&self) -> &'d Node {
        self.node()
    }

    pub(crate) fn is_static(&self) -> bool {
        matches!(self.node().kind, Kind::Static(_))
    }
}

/// A short description of a node for error messages ("a list of 3", "struct `Attention`").
pub(crate) fn describe(node: NodeRef<'_>) -> String {
    let arity = node.children().filter(|c| !c.is_static()).count();
    match node.kind() {
        NodeKind::Leaf => "an array leaf".into(),
        NodeKind::None => "None".into(),
        NodeKind::Some => "Some".into(),
        NodeKind::Tuple => format!("a tuple of {arity}"),
        NodeKind::List => format!("a list of {arity}"),
        NodeKind::Dict => format!("a dict with keys {}", key_list(node)),
        NodeKind::Struct(n) => format!("struct `{n}`"),
        NodeKind::Variant(n) => format!("enum variant `{n}`"),
        NodeKind::Registered(n) => format!("registered type `{n}`"),
        NodeKind::Static(v) => format!("static data {v}"),
    }
}

/// `[a, b, c]` for the keys of a node's tree children.
pub(crate) fn key_list(node: NodeRef<'_>) -> String {
    let keys: Vec<String> = node
        .children()
        .filter(|c| !c.is_static())
        .enumerate()
        .map(|(i, c)| c.key().map_or_else(|| i.to_string(), str::to_string))
        .collect();
    format!("[{}]", keys.join(", "))
}

/// Lockstep comparison of two subtrees, dict entries paired by key; the message names the
/// path (in `a`) where they differ.
fn diff_nodes(a: NodeRef<'_>, b: NodeRef<'_>) -> Option<String> {
    let at = || describe_path(&a.path());
    match (a.kind(), b.kind()) {
        (NodeKind::Static(va), NodeKind::Static(vb)) => {
            if va.same_as(vb) {
                return None;
            }
            return Some(format!("static data differs at {}: {va} vs {vb}", at()));
        }
        (ka, kb) if ka != kb => {
            return Some(format!(
                "tree structures differ at {}: {} vs {}",
                at(),
                describe(a),
                describe(b)
            ));
        }
        _ => {}
    }
    if a.kind() == NodeKind::Dict {
        let mut keys_a: Vec<Option<&str>> = a.children().map(|c| c.key()).collect();
        let mut keys_b: Vec<Option<&str>> = b.children().map(|c| c.key()).collect();
        keys_a.sort_unstable();
        keys_b.sort_unstable();
        if keys_a != keys_b {
            return Some(format!(
                "tree structures differ at {}: keys {} vs {}",
                at(),
                key_list(a),
                key_list(b)
            ));
        }
        return a.children().find_map(|x| {
            let y = b.children().find(|y| y.key() == x.key())?;
            grow(|| diff_nodes(x, y))
        });
    }
    let keys_a: Vec<Option<&str>> = a.children().map(|c| c.key()).collect();
    let keys_b: Vec<Option<&str>> = b.children().map(|c| c.key()).collect();
    if keys_a != keys_b {
        let keyed = keys_a.iter().chain(&keys_b).any(Option::is_some);
        return Some(if keyed {
            format!(
                "tree structures differ at {}: keys {} vs {}",
                at(),
                key_list(a),
                key_list(b)
            )
        } else {
            format!(
                "tree structures differ at {}: length {} vs {}",
                at(),
                keys_a.len(),
                keys_b.len()
            )
        });
    }
    a.children()
        .zip(b.children())
        .find_map(|(x, y)| grow(|| diff_nodes(x, y)))
}

impl PartialEq for TreeDef {
    fn eq(&self, other: &Self) -> bool {
        // The flat forms agree in the common case; only reordered dicts need the walk.
        self.num_leaves == other.num_leaves
            && self.nodes.len() == other.nodes.len()
            && (self.exact_eq(other) || self.difference(other).is_none())
    }
}

impl Eq for TreeDef {}

/// Consistent with `Eq`: a dict's children are combined in an order-independent way (a
/// wrapping sum of their hashes, each of which includes the child's key), everything else in
/// order; static data counts by position only, since a `TreeDef` read back from its
/// serialized form (static data as JSON) equals the live one it was written from. Computed
/// bottom-up over the flat node list, so no recursion.
impl Hash for TreeDef {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.num_leaves);
        state.write_u64(self.structure_hash());
    }
}

impl TreeDef {
    fn structure_hash(&self) -> u64 {
        use std::collections::hash_map::DefaultHasher;
        let n = self.nodes.len();
        if n == 0 {
            return 0;
        }
        let mut hashes = vec![0u64; n];
        for i in (0..n).rev() {
            let node = &self.nodes[i];
            let mut h = DefaultHasher::new();
            self.key_of(node).hash(&mut h);
            match node.kind {
                Kind::Struct(s) | Kind::Variant(s) | Kind::Registered(s) => {
                    std::mem::discriminant(&node.kind).hash(&mut h);
                    self.str(s).hash(&mut h);
                }
                // Not the value: a static read back from a file (JSON) equals the typed value
                // it was written from, and the two have no common hash.
                Kind::Static(_) => std::mem::discriminant(&node.kind).hash(&mut h),
                kind => kind.hash(&mut h),
            }
            node.arity.hash(&mut h);
            let mut child = i + 1;
            let mut sum = 0u64;
            for _ in 0..node.arity {
                if node.kind == Kind::Dict {
                    sum = sum.wrapping_add(hashes[child]);
                } else {
                    hashes[child].hash(&mut h);
                }
                child += self.nodes[child].size as usize;
            }
            sum.hash(&mut h);
            hashes[i] = h.finish();
        }
        hashes[0]
    }
}

impl fmt::Display for TreeDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TreeDef(")?;
        if !self.nodes.is_empty() {
            fmt_node(self.root(), f)?;
        }
        f.write_str(")")
    }
}

impl fmt::Debug for TreeDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn fmt_children(
    node: NodeRef<'_>,
    f: &mut fmt::Formatter<'_>,
    keyed: bool,
    open: &str,
    close: &str,
) -> fmt::Result {
    f.write_str(open)?;
    for (i, c) in node.children().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        match (c.kind(), keyed) {
            (NodeKind::Static(v), _) => write!(f, "{}={v}", c.key().unwrap_or("_"))?,
            (_, true) => {
                write!(f, "{}: ", c.key().unwrap_or("_"))?;
                fmt_node(c, f)?;
            }
            (_, false) => fmt_node(c, f)?,
        }
    }
    f.write_str(close)
}

fn fmt_node(node: NodeRef<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    grow(|| fmt_node_body(node, f))
}

fn fmt_node_body(node: NodeRef<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let n = node.raw().arity;
    match node.kind() {
        NodeKind::Leaf => f.write_str("*"),
        NodeKind::None => f.write_str("None"),
        NodeKind::Some => fmt_children(node, f, false, "Some(", ")"),
        NodeKind::Tuple if n == 1 => fmt_children(node, f, false, "(", ",)"),
        NodeKind::Tuple => fmt_children(node, f, false, "(", ")"),
        NodeKind::List => fmt_children(node, f, false, "[", "]"),
        NodeKind::Dict => {
            f.write_str("{")?;
            for (i, c) in node.children().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{:?}: ", c.key().unwrap_or(""))?;
                fmt_node(c, f)?;
            }
            f.write_str("}")
        }
        NodeKind::Struct(name) | NodeKind::Variant(name) | NodeKind::Registered(name) => {
            if matches!(node.kind(), NodeKind::Registered(_)) {
                f.write_str("@")?;
            }
            f.write_str(name)?;
            if n == 0 {
                return Ok(());
            }
            // Tuple structs carry their field positions as keys; print them positionally.
            let positional = node
                .children()
                .enumerate()
                .all(|(i, c)| !c.is_static() && c.key() == Some(i.to_string().as_str()));
            if positional {
                fmt_children(node, f, false, "(", ")")
            } else {
                fmt_children(node, f, true, " { ", " }")
            }
        }
        NodeKind::Static(v) => write!(f, "{v}"),
    }
}

// ---- serde: a flat pre-order list of nodes, validated on the way in ----
//
// Flat rather than nested so that no serde format's recursion limit (serde_json stops at
// 128 levels) bounds the depth of a tree that can be read back, and so that reading is a
// loop, not a recursion.

#[derive(Serialize, Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
enum SerKind {
    Leaf,
    None,
    Some,
    Tuple,
    List,
    Dict,
    Struct,
    Variant,
    Registered,
    Static,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Json>, D::Error> {
    Json::deserialize(d).map(Some)
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SerNode {
    kind: SerKind,
    /// The type name of a struct, variant or registered node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// The key the node sits under in its parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    /// How many direct children follow (in pre-order).
    #[serde(default, skip_serializing_if = "is_zero")]
    children: u32,
    /// The value of a static node (`null` is a value: it is kept apart from "absent").
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    value: Option<Json>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Serialize for TreeDef {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeSeq};
        let mut seq = serializer.serialize_seq(Some(self.nodes.len()))?;
        for (i, node) in self.nodes.iter().enumerate() {
            let (kind, name, value) = match node.kind {
                Kind::Leaf => (SerKind::Leaf, None, None),
                Kind::None => (SerKind::None, None, None),
                Kind::Some => (SerKind::Some, None, None),
                Kind::Tuple => (SerKind::Tuple, None, None),
                Kind::List => (SerKind::List, None, None),
                Kind::Dict => (SerKind::Dict, None, None),
                Kind::Struct(n) => (SerKind::Struct, Some(self.str(n)), None),
                Kind::Variant(n) => (SerKind::Variant, Some(self.str(n)), None),
                Kind::Registered(n) => (SerKind::Registered, Some(self.str(n)), None),
                Kind::Static(k) => {
                    let json = self.statics[k as usize].to_json().map_err(|e| {
                        S::Error::custom(format!(
                            "static data at {} cannot be serialized: {e}",
                            describe_path(&self.path_of(i))
                        ))
                    })?;
                    (SerKind::Static, None, Some(json))
                }
            };
            seq.serialize_element(&SerNode {
                kind,
                name: name.map(str::to_string),
                key: self.key_of(node).map(str::to_string),
                children: node.arity,
                value,
            })?;
        }
        seq.end()
    }
}

/// An open node while reading: its index, kind and the children still to come.
struct Open {
    index: usize,
    kind: SerKind,
    remaining: u32,
    keys: HashSet<String>,
}

fn from_ser(nodes: Vec<SerNode>) -> std::result::Result<TreeDef, String> {
    let mut def = TreeDef::empty();
    if nodes.len() >= u32::MAX as usize {
        return Err("too many nodes".into());
    }
    def.nodes.reserve(nodes.len());
    let mut open: Vec<Open> = Vec::new();
    for (index, ser) in nodes.into_iter().enumerate() {
        let at = || format!("node {index}");
        // The parent: the innermost open node that still expects children.
        let parent = match open.last_mut() {
            Some(p) => Some(p),
            None if index == 0 => None,
            None => return Err(format!("{}: nodes after the end of the tree", at())),
        };
        match (&parent, ser.kind) {
            (None, SerKind::Static) => return Err("the root cannot be static data".into()),
            (None, _) if ser.key.is_some() => return Err("the root has no key".into()),
            (Some(p), SerKind::Static)
                if !matches!(
                    p.kind,
                    SerKind::Struct | SerKind::Variant | SerKind::Registered
                ) =>
            {
                return Err(format!(
                    "{}: static data can only be a field of a struct, variant or registered type",
                    at()
                ))
            }
            _ => {}
        }
        if let Some(p) = parent {
            match (p.kind, &ser.key) {
                (SerKind::Dict, None) => return Err(format!("{}: a dict entry has no key", at())),
                (SerKind::List | SerKind::Tuple | SerKind::Some, Some(k)) => {
                    return Err(format!("{}: a positional child has a key `{k}`", at()))
                }
                _ => {}
            }
            if let Some(k) = &ser.key {
                if !p.keys.insert(k.clone()) {
                    return Err(format!("{}: duplicate key `{k}`", at()));
                }
            }
            p.remaining -= 1;
        }
        if ser.kind == SerKind::Static && ser.key.is_none() {
            return Err(format!("{}: static data has no key", at()));
        }
        let needs_name = matches!(
            ser.kind,
            SerKind::Struct | SerKind::Variant | SerKind::Registered
        );
        if needs_name != ser.name.is_some() {
            return Err(format!(
                "{}: {}",
                at(),
                if needs_name {
                    "a struct, variant or registered node needs a name"
                } else {
                    "only struct, variant and registered nodes have a name"
                }
            ));
        }
        if (ser.kind == SerKind::Static) != ser.value.is_some() {
            return Err(format!(
                "{}: only (and every) static node has a value",
                at()
            ));
        }
        match ser.kind {
            SerKind::Leaf | SerKind::None | SerKind::Static if ser.children > 0 => {
                return Err(format!(
                    "{}: a leaf, None or static node has children",
                    at()
                ))
            }
            SerKind::Some if ser.children != 1 => {
                return Err(format!("{}: a Some node needs exactly one child", at()))
            }
            _ => {}
        }
        let key = ser.key.as_deref().map(|k| append(&mut def.text, k));
        let name = ser.name.as_deref().map(|n| append(&mut def.text, n));
        let kind = match (ser.kind, name) {
            (SerKind::Leaf, _) => {
                def.num_leaves += 1;
                Kind::Leaf
            }
            (SerKind::None, _) => Kind::None,
            (SerKind::Some, _) => Kind::Some,
            (SerKind::Tuple, _) => Kind::Tuple,
            (SerKind::List, _) => Kind::List,
            (SerKind::Dict, _) => Kind::Dict,
            (SerKind::Struct, Some(n)) => Kind::Struct(n),
            (SerKind::Variant, Some(n)) => Kind::Variant(n),
            (SerKind::Registered, Some(n)) => Kind::Registered(n),
            (SerKind::Static, _) => {
                def.statics
                    .push(StaticValue::from_json(ser.value.unwrap_or(Json::Null)));
                Kind::Static((def.statics.len() - 1) as u32)
            }
            (_, None) => return Err(format!("{}: missing name", at())),
        };
        def.nodes.push(Node {
            kind,
            key,
            arity: ser.children,
            size: 1,
        });
        if ser.children > 0 {
            open.push(Open {
                index,
                kind: ser.kind,
                remaining: ser.children,
                keys: HashSet::new(),
            });
        }
        // Close every node whose children are now complete.
        while let Some(top) = open.last() {
            if top.remaining > 0 {
                break;
            }
            let top = open.pop().expect("checked just above");
            def.nodes[top.index].size = (def.nodes.len() - top.index) as u32;
        }
    }
    if !open.is_empty() {
        return Err("the node list ends before the tree does (children missing)".into());
    }
    if def.text.len() > u32::MAX as usize {
        return Err("keys and names too long".into());
    }
    Ok(def)
}

impl<'de> Deserialize<'de> for TreeDef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let nodes = Vec::<SerNode>::deserialize(deserializer)?;
        from_ser(nodes).map_err(|e| serde::de::Error::custom(format!("invalid TreeDef: {e}")))
    }
}

impl TreeDef {
    /// An error for node `index` of this structure: "at `path`: msg".
    pub(crate) fn error_at(&self, index: usize, msg: impl fmt::Display) -> Error {
        if self.check_index(index).is_err() {
            return error::invalid(format!("tree mismatch: {msg}"));
        }
        error::invalid(format!(
            "tree mismatch at {}: {msg}",
            describe_path(&self.path_of(index))
        ))
    }
}
