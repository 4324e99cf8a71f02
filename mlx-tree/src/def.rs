//! [`TreeDef`]: the structure of a tree without its leaves.
//!
//! Stored as one flat pre-order list of small `Copy` nodes (no per-node boxing, no per-key
//! allocation): each node records its kind, the key it sits under in its parent, how many
//! direct children it has and how many nodes its subtree spans, so a subtree can be skipped in
//! O(1). Keys and type names are slices of one string buffer (`text`), appended in pre-order
//! (a node's key, then its type name); static data lives in a side list indexed in pre-order.
//! Equal structures therefore have equal vectors, and `Eq`/`Hash` are the derived ones.

use std::fmt::{self, Write as _};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{self, Error, Result};

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
/// lengths and keys, and equal static data; `TreeDef` is `Eq + Hash`, so it can key a cache
/// (the compile cache does). `Display` prints it readably, like JAX's `PyTreeDef`:
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
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TreeDef {
    pub(crate) nodes: Vec<Node>,
    pub(crate) text: String,
    pub(crate) statics: Vec<serde_json::Value>,
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
                        self.walk_paths(child, path, f);
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
                return self.locate(child, target, path);
            }
            if !matches!(c.kind, Kind::Static(_)) {
                position += 1;
            }
            child += c.size as usize;
        }
        false
    }

    /// Where two structures first differ and how, or `None` when they are equal.
    pub(crate) fn difference(&self, other: &TreeDef) -> Option<String> {
        if self == other {
            return None;
        }
        if self.nodes.is_empty() || other.nodes.is_empty() {
            return Some("one of the trees is empty".into());
        }
        Some(
            diff_nodes(self.root(), other.root())
                .unwrap_or_else(|| "the structures differ".to_string()),
        )
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
    /// Static (non-array) data, as its canonical JSON value.
    Static(&'d serde_json::Value),
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

/// Lockstep comparison of two subtrees; the message names the path where they differ.
fn diff_nodes(a: NodeRef<'_>, b: NodeRef<'_>) -> Option<String> {
    let at = || describe_path(&a.path());
    match (a.kind(), b.kind()) {
        (NodeKind::Static(va), NodeKind::Static(vb)) if va != vb => {
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
        .find_map(|(x, y)| diff_nodes(x, y))
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

// ---- serde: a nested, self-describing form, validated on the way in ----

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum SerKind {
    Leaf,
    None,
    Some,
    Tuple,
    List,
    Dict,
    Struct(String),
    Variant(String),
    Registered(String),
    Static(serde_json::Value),
}

#[derive(Serialize, Deserialize)]
struct SerNode {
    kind: SerKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    children: Vec<SerNode>,
}

fn to_ser(node: NodeRef<'_>) -> SerNode {
    let kind = match node.kind() {
        NodeKind::Leaf => SerKind::Leaf,
        NodeKind::None => SerKind::None,
        NodeKind::Some => SerKind::Some,
        NodeKind::Tuple => SerKind::Tuple,
        NodeKind::List => SerKind::List,
        NodeKind::Dict => SerKind::Dict,
        NodeKind::Struct(n) => SerKind::Struct(n.into()),
        NodeKind::Variant(n) => SerKind::Variant(n.into()),
        NodeKind::Registered(n) => SerKind::Registered(n.into()),
        NodeKind::Static(v) => SerKind::Static(v.clone()),
    };
    SerNode {
        kind,
        key: node.key().map(str::to_string),
        children: node.children().map(to_ser).collect(),
    }
}

fn from_ser(ser: SerNode, is_root: bool, out: &mut TreeDef) -> std::result::Result<(), String> {
    let index = out.nodes.len();
    let n = ser.children.len();
    // Same append order as a flatten: the key, then the type name.
    let key = ser.key.as_deref().map(|k| append(&mut out.text, k));
    let kind = match ser.kind {
        SerKind::Leaf | SerKind::None | SerKind::Static(_) if n > 0 => {
            return Err("a leaf, None or static node has children".into())
        }
        SerKind::Some if n != 1 => return Err("a Some node needs exactly one child".into()),
        SerKind::Static(_) if is_root => return Err("the root cannot be static data".into()),
        SerKind::Leaf => {
            out.num_leaves += 1;
            Kind::Leaf
        }
        SerKind::None => Kind::None,
        SerKind::Some => Kind::Some,
        SerKind::Tuple => Kind::Tuple,
        SerKind::List => Kind::List,
        SerKind::Dict => Kind::Dict,
        SerKind::Struct(s) => Kind::Struct(append(&mut out.text, &s)),
        SerKind::Variant(s) => Kind::Variant(append(&mut out.text, &s)),
        SerKind::Registered(s) => Kind::Registered(append(&mut out.text, &s)),
        SerKind::Static(v) => {
            out.statics.push(v);
            Kind::Static((out.statics.len() - 1) as u32)
        }
    };
    out.nodes.push(Node {
        kind,
        key,
        arity: n as u32,
        size: 1,
    });
    for child in ser.children {
        from_ser(child, false, out)?;
    }
    out.nodes[index].size = (out.nodes.len() - index) as u32;
    Ok(())
}

impl Serialize for TreeDef {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let root = (!self.nodes.is_empty()).then(|| to_ser(self.root()));
        root.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for TreeDef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let root = Option::<SerNode>::deserialize(deserializer)?;
        let mut def = TreeDef::empty();
        if let Some(root) = root {
            from_ser(root, true, &mut def).map_err(serde::de::Error::custom)?;
        }
        Ok(def)
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
