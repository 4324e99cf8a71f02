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

    /// Rebuilds a tree from `(path, array)` pairs, as Python MLX's
    /// `tree_unflatten(list_of_pairs)` does: a level whose keys are all integers becomes a
    /// list (gaps filled with empty dicts), any other level a dict in first-seen order, and a
    /// single pair with the empty path is that leaf itself.
    ///
    /// ```
    /// use mlx_tree::{Array, Value};
    /// let a = Array::from_scalar(1.0f32);
    /// let v = Value::from_flat(vec![("layers.0.w".to_string(), a.clone()), ("layers.1.w".to_string(), a)]);
    /// assert!(matches!(v.get_path("layers"), Some(Value::List(l)) if l.len() == 2));
    /// ```
    pub fn from_flat(pairs: impl IntoIterator<Item = (String, Array)>) -> Value {
        let pairs: Vec<(String, Array)> = pairs.into_iter().collect();
        let borrowed: Vec<(&str, Array)> =
            pairs.iter().map(|(k, a)| (k.as_str(), a.clone())).collect();
        from_flat_level(borrowed)
    }

    /// A deep copy of the structure sharing the same arrays (array clones are reference-count
    /// bumps). Registered nodes are copied through their registered functions, hence `Result`.
    pub fn try_clone(&self) -> Result<Value> {
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

fn from_flat_level(items: Vec<(&str, Array)>) -> Value {
    if items.len() == 1 && items[0].0.is_empty() {
        let (_, a) = items.into_iter().next().expect("one item");
        return Value::Array(a);
    }
    let mut children: IndexMap<&str, Vec<(&str, Array)>> = IndexMap::new();
    for (key, value) in items {
        let (head, rest) = key.split_once('.').unwrap_or((key, ""));
        children.entry(head).or_default().push((rest, value));
    }
    // Python: a list when every key parses as an integer and no two keys parse alike.
    let indices: Option<Vec<i64>> = children.keys().map(|k| k.parse::<i64>().ok()).collect();
    if let Some(indices) = indices {
        let mut distinct = indices.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() == indices.len() {
            let mut order: Vec<(i64, Vec<(&str, Array)>)> =
                indices.into_iter().zip(children.into_values()).collect();
            order.sort_by_key(|(i, _)| *i);
            let mut list = Vec::new();
            for (i, sub) in order {
                while (list.len() as i64) < i {
                    list.push(Value::Dict(IndexMap::new()));
                }
                list.push(from_flat_level(sub));
            }
            return Value::List(list);
        }
    }
    Value::Dict(
        children
            .into_iter()
            .map(|(k, sub)| (k.to_string(), from_flat_level(sub)))
            .collect(),
    )
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
