//! The [`TreeNode`] trait and its built-in impls.

use std::collections::{btree_map, hash_map, BTreeMap, HashMap};
use std::hash::BuildHasher;

use crate::error::{self, Result};
use crate::{Array, Flattener, Unflattener};

/// A tree of [`Array`] leaves: anything that can be flattened to its leaves plus a
/// [`TreeDef`](crate::TreeDef), and rebuilt from them.
///
/// Get it three ways (see the crate docs): built-in impls (`Array`, `Vec`, `[T; N]`, tuples,
/// `Option`, `Box`, string-keyed maps, `()`), `#[derive(TreeNode)]` on your own structs and
/// enums, or — for a type from a crate you do not own — [`register`](crate::register) plus
/// [`Registered<T>`](crate::Registered). A hand-written impl uses the same
/// [`Flattener`]/[`Unflattener`] calls the derive generates.
///
/// The three methods must agree on one order: the flatten order documented in the crate docs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tree of arrays (it does not implement `TreeNode`)",
    label = "not a tree node",
    note = "tree fields must be `Array`s, containers of trees, or types that `#[derive(TreeNode)]`",
    note = "mark non-array data `#[tree(static)]` (part of the structure) or `#[tree(skip)]` (rebuilt with `Default`)",
    note = "a type from another crate can be registered with `register::<T>(..)` and used as `Registered<T>`"
)]
pub trait TreeNode: Sized {
    /// Emits exactly one node for `self` (with its subtree) and borrows its leaves, in flatten
    /// order. Allocates no strings for paths.
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>);

    /// Rebuilds a value from the next node of `u`, taking its leaves in flatten order.
    fn unflatten(u: &mut Unflattener<'_>) -> Result<Self>;

    /// Calls `f` on every leaf, mutably, in flatten order (writing compiled state back in
    /// place). Fails only for registered types, which are rebuilt through their registered
    /// functions.
    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()>;
}

impl TreeNode for Array {
    #[inline]
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        f.leaf(self);
    }
    #[inline]
    fn unflatten(u: &mut Unflattener<'_>) -> Result<Self> {
        u.leaf()
    }
    #[inline]
    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
        f(self);
        Ok(())
    }
}

impl<T: TreeNode> TreeNode for Vec<T> {
    #[inline]
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        f.list(self);
    }
    #[inline]
    fn unflatten(u: &mut Unflattener<'_>) -> Result<Self> {
        u.list()
    }
    #[inline]
    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
        self.iter_mut().try_for_each(|x| x.leaves_mut(f))
    }
}

impl<T: TreeNode, const N: usize> TreeNode for [T; N] {
    #[inline]
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        f.list(self);
    }
    fn unflatten(u: &mut Unflattener<'_>) -> Result<Self> {
        let items = u.list_exact::<T>(N)?;
        // list_exact checked the length.
        items
            .try_into()
            .map_err(|_| error::invalid(format!("expected a list of {N}")))
    }
    #[inline]
    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
        self.iter_mut().try_for_each(|x| x.leaves_mut(f))
    }
}

impl<T: TreeNode> TreeNode for Option<T> {
    #[inline]
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        match self {
            Some(v) => f.some(v),
            None => f.none(),
        }
    }
    #[inline]
    fn unflatten(u: &mut Unflattener<'_>) -> Result<Self> {
        u.option()
    }
    #[inline]
    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
        match self {
            Some(v) => v.leaves_mut(f),
            None => Ok(()),
        }
    }
}

/// Transparent: a `Box<T>` has exactly `T`'s structure and paths.
impl<T: TreeNode> TreeNode for Box<T> {
    #[inline]
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        (**self).flatten(f);
    }
    #[inline]
    fn unflatten(u: &mut Unflattener<'_>) -> Result<Self> {
        T::unflatten(u).map(Box::new)
    }
    #[inline]
    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
        (**self).leaves_mut(f)
    }
}

impl<T: TreeNode> TreeNode for BTreeMap<String, T> {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        f.dict(|f| {
            for (k, v) in self {
                f.entry(k, v);
            }
        });
    }
    fn unflatten(u: &mut Unflattener<'_>) -> Result<Self> {
        u.dict(|u, n| {
            let mut out = BTreeMap::new();
            for _ in 0..n {
                let (k, v) = u.entry::<T>()?;
                match out.entry(k) {
                    btree_map::Entry::Vacant(e) => {
                        e.insert(v);
                    }
                    btree_map::Entry::Occupied(e) => return Err(duplicate(e.key())),
                }
            }
            Ok(out)
        })
    }
    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
        self.values_mut().try_for_each(|x| x.leaves_mut(f))
    }
}

/// Keys in sorted order, like `BTreeMap`: the flatten order never depends on the hasher.
impl<T: TreeNode, S: BuildHasher + Default> TreeNode for HashMap<String, T, S> {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        let mut entries: Vec<(&'a String, &'a T)> = self.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        f.dict(|f| {
            for (k, v) in entries {
                f.entry(k, v);
            }
        });
    }
    fn unflatten(u: &mut Unflattener<'_>) -> Result<Self> {
        u.dict(|u, n| {
            let mut out = HashMap::with_capacity_and_hasher(n, S::default());
            for _ in 0..n {
                let (k, v) = u.entry::<T>()?;
                match out.entry(k) {
                    hash_map::Entry::Vacant(e) => {
                        e.insert(v);
                    }
                    hash_map::Entry::Occupied(e) => return Err(duplicate(e.key())),
                }
            }
            Ok(out)
        })
    }
    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
        let mut entries: Vec<(&String, &mut T)> = self.iter_mut().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        entries.into_iter().try_for_each(|(_, x)| x.leaves_mut(f))
    }
}

fn duplicate(key: &str) -> crate::Error {
    error::invalid(format!("tree mismatch: duplicate map key `{key}`"))
}

/// The empty tuple: a tree with no leaves.
impl TreeNode for () {
    #[inline]
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        f.tuple(|_| {});
    }
    #[inline]
    fn unflatten(u: &mut Unflattener<'_>) -> Result<Self> {
        u.tuple(0, |_| Ok(()))
    }
    #[inline]
    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, _: &mut F) -> Result<()> {
        Ok(())
    }
}

macro_rules! tuple_impls {
    ($( ($len:expr; $($name:ident $idx:tt),+) )+) => {$(
        impl<$($name: TreeNode),+> TreeNode for ($($name,)+) {
            #[inline]
            fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
                f.tuple(|f| {
                    $( f.child(&self.$idx); )+
                });
            }
            #[inline]
            fn unflatten(u: &mut Unflattener<'_>) -> Result<Self> {
                u.tuple($len, |u| Ok(($( u.child::<$name>()?, )+)))
            }
            #[inline]
            fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> Result<()> {
                $( self.$idx.leaves_mut(f)?; )+
                Ok(())
            }
        }
    )+};
}

tuple_impls! {
    (1; A 0)
    (2; A 0, B 1)
    (3; A 0, B 1, C 2)
    (4; A 0, B 1, C 2, D 3)
    (5; A 0, B 1, C 2, D 3, E 4)
    (6; A 0, B 1, C 2, D 3, E 4, G 5)
    (7; A 0, B 1, C 2, D 3, E 4, G 5, H 6)
    (8; A 0, B 1, C 2, D 3, E 4, G 5, H 6, I 7)
    (9; A 0, B 1, C 2, D 3, E 4, G 5, H 6, I 7, J 8)
    (10; A 0, B 1, C 2, D 3, E 4, G 5, H 6, I 7, J 8, K 9)
    (11; A 0, B 1, C 2, D 3, E 4, G 5, H 6, I 7, J 8, K 9, L 10)
    (12; A 0, B 1, C 2, D 3, E 4, G 5, H 6, I 7, J 8, K 9, L 10, M 11)
}
