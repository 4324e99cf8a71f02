//! [`Value`]: the dynamic tree, for untyped nested data.

use indexmap::IndexMap;

use crate::def::NodeKind;
use crate::error::{self, Result};
use crate::registry::RegisteredValue;
use crate::{Array, Flattener, TreeNode, Unflattener};

/// A dynamically typed tree, like Python's nested `dict`/`list`/`tuple` of arrays: loaded
/// weights, a structure ported from Python, anything whose shape is known only at runtime.
///
/// `Dict` keeps insertion order, as a Python `dict` does, so a `Value` built in the same order
/// as a Python tree flattens to the same paths in the same order as Python MLX's
/// `tree_flatten`. Registered foreign types are nodes too ([`Value::Registered`]).
///
/// A `Value` can be unflattened from any [`TreeDef`](crate::TreeDef): derived structs become
/// dicts keyed by field (their static data is dropped), `Some(x)` becomes `x`, `[T; N]`
/// becomes a list and registered nodes are rebuilt by their registered name.
#[derive(Debug)]
pub enum Value {
    /// A leaf.
    Array(Array),
    /// Positional children (Python `list`).
    List(Vec<Value>),
    /// Positional children (Python `tuple`).
    Tuple(Vec<Value>),
    /// Keyed children in insertion order (Python `dict`).
    Dict(IndexMap<String, Value>),
    /// No leaves (Python `None`).
    None,
    /// A value of a registered foreign type.
    Registered(RegisteredValue),
}

impl Value {
    /// A dict from `(key, value)` pairs, in the given order.
    pub fn dict<K: Into<String>>(entries: impl IntoIterator<Item = (K, Value)>) -> Value {
        Value::Dict(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// A list of values.
    pub fn list(items: impl IntoIterator<Item = Value>) -> Value {
        Value::List(items.into_iter().collect())
    }

    /// A registered foreign value; errors if `T` is not registered.
    pub fn registered<T: Send + 'static>(value: T) -> Result<Value> {
        RegisteredValue::new(value).map(Value::Registered)
    }

    /// The array, if this is a leaf.
    pub fn as_array(&self) -> Option<&Array> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// A child by dict key or list/tuple index (`"layers"`, `"0"`).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(m) => m.get(key),
            Value::List(v) | Value::Tuple(v) => key.parse::<usize>().ok().and_then(|i| v.get(i)),
            _ => None,
        }
    }

    /// The node at a dotted path (`"layers.0.attn"`); the empty path is `self`.
    pub fn get_path(&self, path: &str) -> Option<&Value> {
        if path.is_empty() {
            return Some(self);
        }
        path.split('.').try_fold(self, |v, k| v.get(k))
    }

    /// A child by key or index, mutably.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        match self {
            Value::Dict(m) => m.get_mut(key),
            Value::List(v) | Value::Tuple(v) => {
                key.parse::<usize>().ok().and_then(move |i| v.get_mut(i))
            }
            _ => None,
        }
    }

    /// Rebuilds a tree from `(path, array)` pairs, as Python MLX's
    /// `tree_unflatten(list_of_pairs)` does: a level whose keys are all integers (and no two
    /// alike as integers, so `01` and `1` make a dict) becomes a list in integer order, gaps
    /// filled with empty dicts; any other level a dict in first-seen order; a single pair with
    /// the empty path is that leaf itself. Integers are read as Python's `int()` reads them
    /// (surrounding whitespace, a sign, `_` between digits), ASCII digits only.
    ///
    /// ```
    /// use mlx_tree::{Array, Value};
    /// let a = Array::from_scalar(1.0f32);
    /// let v = Value::from_flat(vec![("layers.0.w".to_string(), a.clone()), ("layers.1.w".to_string(), a)])?;
    /// assert!(matches!(v.get_path("layers"), Some(Value::List(l)) if l.len() == 2));
    /// # Ok::<(), mlx_tree::Error>(())
    /// ```
    ///
    /// Errors, naming the path, where Python would fail or exhaust memory: the same path
    /// twice (Python recurses until `RecursionError`), and a list index that would need more
    /// than 65,536 empty gap entries (`layers.4000000000.w`). Any depth of path works.
    pub fn from_flat(pairs: impl IntoIterator<Item = (String, Array)>) -> Result<Value> {
        let pairs: Vec<(String, Array)> = pairs.into_iter().collect();
        // Each path is split once; a level then looks at one segment (linear in the total
        // path length, however deep).
        let split: Vec<(Vec<&str>, &Array)> = pairs
            .iter()
            .map(|(k, a)| (k.split('.').collect(), a))
            .collect();
        let items = split.iter().map(|(s, a)| (s.as_slice(), *a)).collect();
        from_flat_level(items, 0)
    }

    /// A deep copy of the structure sharing the same arrays (array clones are reference-count
    /// bumps). Registered nodes are copied through their registered functions, hence `Result`.
    pub fn try_clone(&self) -> Result<Value> {
        crate::stack::grow(|| self.try_clone_level())
    }

    fn try_clone_level(&self) -> Result<Value> {
        Ok(match self {
            Value::Array(a) => Value::Array(a.clone()),
            Value::List(v) => Value::List(v.iter().map(Value::try_clone).collect::<Result<_>>()?),
            Value::Tuple(v) => Value::Tuple(v.iter().map(Value::try_clone).collect::<Result<_>>()?),
            Value::Dict(m) => Value::Dict(
                m.iter()
                    .map(|(k, v)| Ok((k.clone(), v.try_clone()?)))
                    .collect::<Result<_>>()?,
            ),
            Value::None => Value::None,
            Value::Registered(_) => {
                let (leaves, def) = crate::tree_flatten(self)?;
                crate::tree_unflatten(&def, leaves.into_iter().cloned().collect())?
            }
        })
    }
}

/// Most empty dicts one list level may be padded with (Python pads without a bound).
const MAX_LIST_GAP: i128 = 1 << 16;

/// Python's `int(s)` for ASCII input: `None` where Python raises `ValueError`. Values beyond
/// `i128` saturate (they are far past any list a path may make anyway).
fn python_int(s: &str) -> Option<i128> {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\u{0b}' || c == '\u{0c}');
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let bytes = digits.as_bytes();
    if bytes.is_empty() || bytes[0] == b'_' || bytes[bytes.len() - 1] == b'_' {
        return None;
    }
    let mut value: i128 = 0;
    let mut prev_underscore = false;
    for &b in bytes {
        match b {
            b'_' if !prev_underscore => prev_underscore = true,
            b'0'..=b'9' => {
                prev_underscore = false;
                let d = i128::from(b - b'0');
                value = value.saturating_mul(10).saturating_add(d);
            }
            _ => return None,
        }
    }
    Some(if negative { -value } else { value })
}

/// A path's rest from segment `depth` on, as Python's `key.split(".", 1)` leaves it, is
/// empty: no segments left, or only one empty one (`"a."` ends like `"a"`).
fn rest_is_empty(segments: &[&str], depth: usize) -> bool {
    depth >= segments.len() || (depth + 1 == segments.len() && segments[depth].is_empty())
}

/// The path of the level at `depth`, for messages.
fn level_path(segments: &[&str], depth: usize) -> String {
    crate::def::describe_path(&segments[..depth.min(segments.len())].join("."))
}

type Item<'p> = (&'p [&'p str], &'p Array);

fn from_flat_level(items: Vec<Item<'_>>, depth: usize) -> Result<Value> {
    if items.len() == 1 && rest_is_empty(items[0].0, depth) {
        return Ok(Value::Array(items[0].1.clone()));
    }
    // Every remaining path ends here: two or more leaves for one path (Python recurses on
    // the same list forever).
    if items.len() > 1 && items.iter().all(|(s, _)| rest_is_empty(s, depth)) {
        return Err(error::invalid(format!(
            "tree_unflatten: the path {} is given {} times",
            level_path(items[0].0, depth),
            items.len()
        )));
    }
    let mut children: IndexMap<&str, Vec<Item<'_>>> = IndexMap::new();
    for item in items {
        let head = item.0.get(depth).copied().unwrap_or("");
        children.entry(head).or_default().push(item);
    }
    let descend = |sub| crate::stack::grow(|| from_flat_level(sub, depth + 1));
    // Python: a list when every key is an integer and no two keys are the same integer.
    let indices: Option<Vec<i128>> = children.keys().map(|k| python_int(k)).collect();
    if let Some(indices) = indices {
        let mut distinct = indices.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() == indices.len() {
            let max = distinct.last().copied().unwrap_or(0);
            // Python pads up to the largest index; padding beyond the given entries is gap.
            if max - (indices.len() as i128) >= MAX_LIST_GAP {
                let culprit = children
                    .values()
                    .zip(&indices)
                    .find(|(_, i)| **i == max)
                    .map(|(sub, _)| level_path(sub[0].0, depth + 1))
                    .unwrap_or_default();
                return Err(error::invalid(format!(
                    "tree_unflatten: the list index at {culprit} would pad the list with more \
                     than {MAX_LIST_GAP} empty entries"
                )));
            }
            let mut order: Vec<(i128, Vec<Item<'_>>)> =
                indices.into_iter().zip(children.into_values()).collect();
            order.sort_by_key(|(i, _)| *i);
            let mut list = Vec::with_capacity(order.len());
            for (i, sub) in order {
                while (list.len() as i128) < i {
                    list.push(Value::Dict(IndexMap::new()));
                }
                list.push(descend(sub)?);
            }
            return Ok(Value::List(list));
        }
    }
    let mut out = IndexMap::with_capacity(children.len());
    for (k, sub) in children {
        out.insert(k.to_string(), descend(sub)?);
    }
    Ok(Value::Dict(out))
}

/// Dropping a `Value` frees its nesting level by level from a list of its own, not by a
/// recursion per level (the derived drop), so a tree of any depth drops without overflowing
/// the stack. A type with `Drop` cannot be destructured by move (`let Value::List(items) =
/// v`): match a reference, or take the contents with [`Value::into_list`] and its siblings.
impl Drop for Value {
    fn drop(&mut self) {
        let mut pending = Vec::new();
        take_children(self, &mut pending);
        while let Some(mut v) = pending.pop() {
            take_children(&mut v, &mut pending);
            // `v` has no children left: its own drop is shallow.
        }
    }
}

impl Value {
    /// The array of a leaf, moved out.
    pub fn into_array(mut self) -> Option<Array> {
        match &mut self {
            Value::Array(a) => Some(a.clone()),
            _ => None,
        }
    }

    /// The items of a `List`, moved out.
    pub fn into_list(mut self) -> Option<Vec<Value>> {
        match &mut self {
            Value::List(items) => Some(std::mem::take(items)),
            _ => None,
        }
    }

    /// The items of a `Tuple`, moved out.
    pub fn into_tuple(mut self) -> Option<Vec<Value>> {
        match &mut self {
            Value::Tuple(items) => Some(std::mem::take(items)),
            _ => None,
        }
    }

    /// The entries of a `Dict`, moved out.
    pub fn into_dict(mut self) -> Option<IndexMap<String, Value>> {
        match &mut self {
            Value::Dict(map) => Some(std::mem::take(map)),
            _ => None,
        }
    }

    /// The value of a `Registered`, moved out.
    pub fn into_registered(mut self) -> Option<RegisteredValue> {
        match &mut self {
            Value::Registered(r) => Some(r.take()),
            _ => None,
        }
    }
}

/// Moves `v`'s children out into `out`, leaving `v` childless.
fn take_children(v: &mut Value, out: &mut Vec<Value>) {
    match v {
        Value::List(items) | Value::Tuple(items) => out.append(items),
        Value::Dict(map) => out.extend(std::mem::take(map).into_values()),
        Value::Array(_) | Value::None | Value::Registered(_) => {}
    }
}

impl From<Array> for Value {
    fn from(a: Array) -> Self {
        Value::Array(a)
    }
}

impl<T: Send + 'static> From<crate::Registered<T>> for Value {
    fn from(r: crate::Registered<T>) -> Self {
        Value::Registered(r.into())
    }
}

impl TreeNode for Value {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        match self {
            Value::Array(a) => f.leaf(a),
            Value::List(v) => f.list(v),
            Value::Tuple(v) => f.tuple(|f| v.iter().for_each(|x| f.child(x))),
            Value::Dict(m) => f.dict(|f| m.iter().for_each(|(k, x)| f.entry(k, x))),
            Value::None => f.none(),
            Value::Registered(r) => r.flatten(f),
        }
    }

    fn unflatten(u: &mut Unflattener<'_>) -> Result<Self> {
        match u.peek_kind()? {
            NodeKind::Leaf => u.leaf().map(Value::Array),
            NodeKind::None => u.none().map(|_| Value::None),
            NodeKind::Some => u.enter_any(|u, _| Value::unflatten(u)),
            NodeKind::List => u.enter_any(|u, n| positional(u, n.arity)).map(Value::List),
            NodeKind::Tuple => u.enter_any(|u, n| positional(u, n.arity)).map(Value::Tuple),
            NodeKind::Dict | NodeKind::Struct(_) | NodeKind::Variant(_) => u.enter_any(|u, n| {
                let mut out = IndexMap::with_capacity(n.arity as usize);
                let mut position = 0usize;
                for _ in 0..n.arity {
                    if matches!(u.peek_kind()?, NodeKind::Static(_)) {
                        u.skip()?;
                        continue;
                    }
                    let key = match u.next_key()? {
                        Some(k) => k.to_string(),
                        None => position.to_string(),
                    };
                    position += 1;
                    let v = Value::unflatten(u)?;
                    if out.insert(key.clone(), v).is_some() {
                        return Err(error::invalid(format!(
                            "tree mismatch: duplicate key `{key}`"
                        )));
                    }
                }
                Ok(Value::Dict(out))
            }),
            NodeKind::Registered(name) => {
                RegisteredValue::unflatten_named(name, u).map(Value::Registered)
            }
            NodeKind::Static(_) => Err(u.mismatch("a tree node")),
        }
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
        crate::stack::grow(|| self.leaves_mut_level(f))
    }
}

impl Value {
    fn leaves_mut_level<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
        match self {
            Value::Array(a) => {
                f(a);
                Ok(())
            }
            Value::List(v) | Value::Tuple(v) => v.iter_mut().try_for_each(|x| x.leaves_mut(f)),
            Value::Dict(m) => m.values_mut().try_for_each(|x| x.leaves_mut(f)),
            Value::None => Ok(()),
            Value::Registered(r) => r.leaves_mut(f),
        }
    }
}

fn positional(u: &mut Unflattener<'_>, arity: u32) -> Result<Vec<Value>> {
    let mut out = Vec::with_capacity(arity as usize);
    for _ in 0..arity {
        out.push(Value::unflatten(u)?);
    }
    Ok(out)
}
