//! The runtime registry: tree support for types whose crate does not implement [`TreeNode`].
//!
//! Rust's orphan rule forbids `impl TreeNode for other_crate::Cache` outside both crates, so a
//! foreign type is described at runtime instead: [`register::<T>`](register) stores its
//! flatten/unflatten functions under `TypeId::of::<T>()` and a name. From then on the type is
//! an interior node exactly like a derived struct, through two doors:
//!
//! - [`Registered<T>`]: a typed wrapper (`Deref<Target = T>`) that implements [`TreeNode`], so
//!   it works everywhere a tree does: as a field of a derived struct, inside `Vec`/`Option`/
//!   maps, as the argument of every `tree_*` function and transform.
//! - [`Value::Registered`](crate::Value::Registered): the dynamic tree's node for registered
//!   types, rebuilt by name when a `Value` is unflattened from a [`TreeDef`](crate::TreeDef).
//!
//! The registered functions use the same [`Flattener`]/[`Unflattener`] calls as derived code
//! (`field`, `static_field`, ...), so a registration reads like a hand-written derive. Entries
//! live for the whole process (registration is a one-time setup step; registering a type or a
//! name twice is an error), which lets a `Registered<T>` hold its entry by `&'static` reference
//! and flatten without touching the registry lock.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{OnceLock, PoisonError, RwLock};

use crate::error::{self, Result};
use crate::{tree_unflatten, Array, Flattener, TreeNode, Unflattener};

type FlattenFn<T> = dyn for<'a> Fn(&'a T, &mut Flattener<'a>) + Send + Sync;
type UnflattenFn<T> = dyn Fn(&mut Unflattener<'_>) -> Result<T> + Send + Sync;

/// The user's functions, typed.
struct Typed<T: 'static> {
    flatten: Box<FlattenFn<T>>,
    unflatten: Box<UnflattenFn<T>>,
}

/// One registered type. Leaked on registration: entries live for the process.
pub(crate) struct Entry {
    pub(crate) name: &'static str,
    type_name: &'static str,
    /// A `Typed<T>` for the registered `T`.
    typed: Box<dyn Any + Send + Sync>,
    /// Type-erased entry points for `Value`, monomorphized per `T` at registration.
    flatten_any: for<'a> fn(&'static Entry, &'a (dyn Any + Send), &mut Flattener<'a>),
    unflatten_any: fn(&'static Entry, &mut Unflattener<'_>) -> Result<Box<dyn Any + Send>>,
}

impl Entry {
    fn typed<T: 'static>(&self) -> &Typed<T> {
        self.typed
            .downcast_ref::<Typed<T>>()
            .expect("a registry entry is only reached through its own type")
    }
}

#[derive(Default)]
struct Registry {
    by_type: HashMap<TypeId, &'static Entry>,
    by_name: HashMap<&'static str, &'static Entry>,
}

fn registry() -> &'static RwLock<Registry> {
    static REGISTRY: OnceLock<RwLock<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Registers `T` as an interior tree node under `name`.
///
/// `flatten` emits `T`'s parts with [`Flattener::field`] / [`Flattener::field_list`] (array
/// children, by key) and [`Flattener::static_field`] (non-array data); `unflatten` reads them
/// back in the same order with [`Unflattener::field`] / [`Unflattener::static_field`]. This is
/// exactly what `#[derive(TreeNode)]` generates for a struct, written by hand for a type you do
/// not own. Use the type through [`Registered<T>`] (typed) or
/// [`Value::Registered`](crate::Value::Registered) (dynamic).
///
/// Errors if `T` is already registered, or `name` is empty or taken by another type.
///
/// ```
/// use mlx_tree::{register, tree_flatten_with_path, Array, Registered};
///
/// // Pretend this comes from another crate.
/// pub struct Cache { pub keys: Vec<Array>, pub offset: usize }
///
/// register::<Cache>(
///     "doc.Cache",
///     |c, f| {
///         f.field("keys", &c.keys);
///         f.static_field("offset", &c.offset);
///     },
///     |u| Ok(Cache { keys: u.field("keys")?, offset: u.static_field("offset")? }),
/// )?;
///
/// let cache = Registered::new(Cache { keys: vec![Array::from_scalar(1.0f32)], offset: 3 })?;
/// let paths: Vec<String> = tree_flatten_with_path(&cache)?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(paths, ["keys.0"]);
/// # Ok::<(), mlx_tree::Error>(())
/// ```
pub fn register<T: Send + 'static>(
    name: impl Into<Cow<'static, str>>,
    flatten: impl for<'a> Fn(&'a T, &mut Flattener<'a>) + Send + Sync + 'static,
    unflatten: impl Fn(&mut Unflattener<'_>) -> Result<T> + Send + Sync + 'static,
) -> Result<()> {
    let name = name.into();
    if name.is_empty() {
        return Err(error::invalid("a registered type needs a non-empty name"));
    }
    let mut reg = registry().write().unwrap_or_else(PoisonError::into_inner);
    if let Some(existing) = reg.by_type.get(&TypeId::of::<T>()) {
        return Err(error::invalid(format!(
            "`{}` is already registered as a tree node (under the name `{}`)",
            std::any::type_name::<T>(),
            existing.name
        )));
    }
    if let Some(existing) = reg.by_name.get(name.as_ref()) {
        return Err(error::invalid(format!(
            "the tree node name `{name}` is already registered for `{}`",
            existing.type_name
        )));
    }
    let name: &'static str = match name {
        Cow::Borrowed(s) => s,
        // Entries live for the process, and each name is stored once.
        Cow::Owned(s) => Box::leak(s.into_boxed_str()),
    };
    let entry: &'static Entry = Box::leak(Box::new(Entry {
        name,
        type_name: std::any::type_name::<T>(),
        typed: Box::new(Typed::<T> {
            flatten: Box::new(flatten),
            unflatten: Box::new(unflatten),
        }),
        flatten_any: flatten_any::<T>,
        unflatten_any: unflatten_any::<T>,
    }));
    reg.by_type.insert(TypeId::of::<T>(), entry);
    reg.by_name.insert(name, entry);
    Ok(())
}

/// Whether `T` has been registered.
pub fn is_registered<T: 'static>() -> bool {
    lookup_type::<T>().is_ok()
}

/// The name `T` was registered under.
pub fn registered_name<T: 'static>() -> Option<&'static str> {
    lookup_type::<T>().ok().map(|e| e.name)
}

fn lookup_type<T: 'static>() -> Result<&'static Entry> {
    let reg = registry().read().unwrap_or_else(PoisonError::into_inner);
    reg.by_type.get(&TypeId::of::<T>()).copied().ok_or_else(|| {
        error::invalid(format!(
            "`{}` is not registered as a tree node: call mlx_tree::register::<{0}>(..) first",
            std::any::type_name::<T>()
        ))
    })
}

pub(crate) fn lookup_name(name: &str) -> Result<&'static Entry> {
    let reg = registry().read().unwrap_or_else(PoisonError::into_inner);
    reg.by_name.get(name).copied().ok_or_else(|| {
        error::invalid(format!(
            "no type is registered as a tree node under the name `{name}`"
        ))
    })
}

fn flatten_typed<'a, T: 'static>(entry: &'static Entry, value: &'a T, f: &mut Flattener<'a>) {
    let typed = entry.typed::<T>();
    f.registered_node(entry.name, |f| (typed.flatten)(value, f));
}

fn unflatten_typed<T: 'static>(entry: &'static Entry, u: &mut Unflattener<'_>) -> Result<T> {
    let typed = entry.typed::<T>();
    u.registered_node(entry.name, |u| (typed.unflatten)(u))
}

fn flatten_any<'a, T: 'static>(
    entry: &'static Entry,
    value: &'a (dyn Any + Send),
    f: &mut Flattener<'a>,
) {
    let value = value
        .downcast_ref::<T>()
        .expect("a registered value holds its entry's type");
    flatten_typed(entry, value, f);
}

fn unflatten_any<T: Send + 'static>(
    entry: &'static Entry,
    u: &mut Unflattener<'_>,
) -> Result<Box<dyn Any + Send>> {
    Ok(Box::new(unflatten_typed::<T>(entry, u)?))
}

/// Rebuilds a registered value after `f` changed its leaves: the registered functions are the
/// only way into a foreign type, so mutable leaf access goes flatten -> edit -> unflatten.
fn rebuild<T: TreeNode>(value: &T, f: &mut impl FnMut(&mut Array)) -> Result<T> {
    let mut fl = Flattener::new(true);
    value.flatten(&mut fl);
    let (leaves, def) = fl.finish()?;
    let mut leaves: Vec<Array> = leaves.into_iter().cloned().collect();
    leaves.iter_mut().for_each(f);
    tree_unflatten(&def, leaves)
}

/// A value of a registered foreign type, usable as a tree.
///
/// Construct it with [`Registered::new`] (which checks that `T` was registered); read and
/// mutate the value through `Deref`/`DerefMut`; get it back with
/// [`into_inner`](Self::into_inner). In a tree it is an interior node named by its
/// registration, with the children its registered `flatten` emits.
pub struct Registered<T: 'static> {
    value: T,
    entry: &'static Entry,
}

impl<T: Send + 'static> Registered<T> {
    /// Wraps `value`; errors if `T` has not been registered with [`register`].
    pub fn new(value: T) -> Result<Self> {
        Ok(Registered {
            value,
            entry: lookup_type::<T>()?,
        })
    }

    /// The wrapped value.
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The name `T` was registered under.
    pub fn name(&self) -> &'static str {
        self.entry.name
    }
}

impl<T> Deref for Registered<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for Registered<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: Clone> Clone for Registered<T> {
    fn clone(&self) -> Self {
        Registered {
            value: self.value.clone(),
            entry: self.entry,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Registered<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Registered").field(&self.value).finish()
    }
}

impl<T: Send + 'static> TreeNode for Registered<T> {
    #[inline]
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        flatten_typed(self.entry, &self.value, f);
    }

    fn unflatten(u: &mut Unflattener<'_>) -> Result<Self> {
        let entry = lookup_type::<T>()?;
        Ok(Registered {
            value: unflatten_typed(entry, u)?,
            entry,
        })
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
        *self = rebuild(self, f)?;
        Ok(())
    }
}

/// A registered value inside a dynamic [`Value`](crate::Value) tree: the type is known only
/// through its registry entry.
pub struct RegisteredValue {
    entry: &'static Entry,
    value: Box<dyn Any + Send>,
}

impl RegisteredValue {
    /// Moves the value out, leaving a placeholder (`()`, no allocation) behind: how
    /// [`Value::into_registered`](crate::Value::into_registered) takes it out of a `Value`,
    /// which cannot be destructured by move.
    pub(crate) fn take(&mut self) -> RegisteredValue {
        RegisteredValue {
            entry: self.entry,
            value: std::mem::replace(&mut self.value, Box::new(())),
        }
    }

    /// Wraps `value`; errors if `T` has not been registered.
    pub fn new<T: Send + 'static>(value: T) -> Result<Self> {
        Ok(RegisteredValue {
            entry: lookup_type::<T>()?,
            value: Box::new(value),
        })
    }

    /// The name the type was registered under.
    pub fn name(&self) -> &'static str {
        self.entry.name
    }

    /// The Rust type name of the value.
    pub fn type_name(&self) -> &'static str {
        self.entry.type_name
    }

    /// Whether the value is a `T`.
    pub fn is<T: 'static>(&self) -> bool {
        self.value.is::<T>()
    }

    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        self.value.downcast_ref()
    }

    pub fn downcast_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.value.downcast_mut()
    }

    /// The value as a `T`, or `self` back if it is another type.
    pub fn downcast<T: 'static>(self) -> std::result::Result<T, Self> {
        if self.value.is::<T>() {
            Ok(*self
                .value
                .downcast::<T>()
                .expect("checked by `is` just above"))
        } else {
            Err(self)
        }
    }

    pub(crate) fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        (self.entry.flatten_any)(self.entry, &*self.value, f);
    }

    pub(crate) fn unflatten_named(name: &str, u: &mut Unflattener<'_>) -> Result<Self> {
        let entry = lookup_name(name)?;
        Ok(RegisteredValue {
            entry,
            value: (entry.unflatten_any)(entry, u)?,
        })
    }

    pub(crate) fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
        let mut fl = Flattener::new(true);
        self.flatten(&mut fl);
        let (leaves, def) = fl.finish()?;
        let mut leaves: Vec<Array> = leaves.into_iter().cloned().collect();
        leaves.iter_mut().for_each(f);
        let mut u = Unflattener::new(&def, leaves)?;
        let value = (self.entry.unflatten_any)(self.entry, &mut u)?;
        u.finish()?;
        self.value = value;
        Ok(())
    }
}

impl<T: Send + 'static> From<Registered<T>> for RegisteredValue {
    fn from(r: Registered<T>) -> Self {
        RegisteredValue {
            entry: r.entry,
            value: Box::new(r.value),
        }
    }
}

impl fmt::Debug for RegisteredValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RegisteredValue({})", self.entry.name)
    }
}
