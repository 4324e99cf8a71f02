//! `eval` and `async_eval` over trees (Python: `mx.eval(*trees)`, `mx.async_eval(*trees)`).

use crate::{tree_leaves, Array, Result, TreeNode};

/// What [`eval`] and [`async_eval`] take: one borrowed tree (`&model`, `&y`, `&(y, cache)`),
/// or several at once as a tuple, array or `Vec` of them (`(&y, &cache)`), as Python's
/// `mx.eval(y, cache)` takes several trees.
pub trait EvalArgs {
    /// Appends every array leaf, in flatten order.
    fn collect_leaves<'a>(&'a self, out: &mut Vec<&'a Array>);
}

impl<T: TreeNode> EvalArgs for &T {
    fn collect_leaves<'a>(&'a self, out: &mut Vec<&'a Array>) {
        out.extend(tree_leaves(*self));
    }
}

/// A slice of trees (`&arrays[..]`, `caches.as_slice()`), as `mlx_rs::eval` takes a slice of
/// arrays.
impl<T: TreeNode> EvalArgs for &[T] {
    fn collect_leaves<'a>(&'a self, out: &mut Vec<&'a Array>) {
        for t in self.iter() {
            out.extend(tree_leaves(t));
        }
    }
}

impl<A: EvalArgs> EvalArgs for Vec<A> {
    fn collect_leaves<'a>(&'a self, out: &mut Vec<&'a Array>) {
        for a in self {
            a.collect_leaves(out);
        }
    }
}

impl<A: EvalArgs, const N: usize> EvalArgs for [A; N] {
    fn collect_leaves<'a>(&'a self, out: &mut Vec<&'a Array>) {
        for a in self {
            a.collect_leaves(out);
        }
    }
}

macro_rules! eval_tuples {
    ($( ($($name:ident $idx:tt),+) )+) => {$(
        impl<$($name: EvalArgs),+> EvalArgs for ($($name,)+) {
            fn collect_leaves<'a>(&'a self, out: &mut Vec<&'a Array>) {
                $( self.$idx.collect_leaves(out); )+
            }
        }
    )+};
}

eval_tuples! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
}

fn leaves_of(trees: &impl EvalArgs) -> Vec<&Array> {
    let mut out = Vec::new();
    trees.collect_leaves(&mut out);
    out
}

/// Computes every array leaf of the trees in one graph dispatch (Python: `mx.eval(*trees)`).
///
/// ```
/// use mlx_tree::{eval, Array, TreeNode};
///
/// #[derive(TreeNode)]
/// struct Cache { keys: Vec<Array>, offset: Array }
///
/// let cache = Cache { keys: vec![Array::from(1.0f32) * 2.0], offset: Array::from(0i32) + 1 };
/// let y = Array::from(3.0f32).square()?;
/// eval((&y, &cache))?; // Python: mx.eval(y, cache)
/// assert!(y.is_evaluated() && cache.keys[0].is_evaluated());
/// eval(&cache)?;
/// # Ok::<(), mlx_tree::Error>(())
/// ```
pub fn eval(trees: impl EvalArgs) -> Result<()> {
    mlx_rs::eval(leaves_of(&trees))
}

/// Starts computing every array leaf of the trees and returns at once (Python:
/// `mx.async_eval(*trees)`); reading a leaf (or [`eval`]) waits for it.
pub fn async_eval(trees: impl EvalArgs) -> Result<()> {
    mlx_rs::async_eval(leaves_of(&trees))
}
