//! Compiling a function that mutates a tree in place (a training step mutating the model and
//! the optimizer, a decode step mutating a KV cache).
//!
//! Python needs `mx.compile(step, inputs=state, outputs=state)` and silently freezes any state
//! not declared there. Here the state is a `&mut S` for any tree `S`: its leaves are inputs
//! of the compiled graph and outputs too, written back into `S` after each call.
//!
//! This is the small engine the `nn` examples and tests use; it is built only on
//! [`mlx_rs::compile::CompiledFn`] and the tree utilities (flatten, assign leaves).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use mlx_rs::compile::CompiledFn;
use mlx_rs::{Array, Error, Result};
use mlx_tree::{tree_assign_leaves, tree_flatten, tree_structure, TreeNode};

/// A compiled `f(&mut state, args) -> outputs` (see the module docs).
///
/// The trace is keyed by the state's structure (its `TreeDef`, static data included) and the
/// input shapes and dtypes: a structure change (a new static value, a longer `Vec`) retraces;
/// equal structure replays the trace without calling `f`.
///
/// ```
/// use mlx_nn::compile::compile_mut;
/// use mlx_rs::{ops, Array};
///
/// // state = (counter, running sum); args = [x]
/// let step = compile_mut(|s: &mut (Array, Array), args: &[Array]| {
///     s.0 = &s.0 + 1.0;
///     s.1 = &s.1 + &args[0];
///     Ok(vec![&s.1 * 2.0])
/// });
/// let mut state = (Array::from(0.0f32), Array::from(0.0f32));
/// for _ in 0..3 {
///     step.call(&mut state, &[Array::from(2.0f32)])?;
/// }
/// assert_eq!(state.1.item::<f32>()?, 6.0);
/// assert_eq!(step.traces(), 1);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub struct CompiledMut<S, F> {
    f: F,
    engine: CompiledFn,
    _state: std::marker::PhantomData<fn(&mut S)>,
}

/// Compiles `f` with `&mut` state (see [`CompiledMut`]).
pub fn compile_mut<S, F>(f: F) -> CompiledMut<S, F>
where
    S: TreeNode + Clone,
    F: Fn(&mut S, &[Array]) -> Result<Vec<Array>>,
{
    CompiledMut {
        f,
        engine: CompiledFn::new(false),
        _state: std::marker::PhantomData,
    }
}

impl<S, F> CompiledMut<S, F>
where
    S: TreeNode + Clone,
    F: Fn(&mut S, &[Array]) -> Result<Vec<Array>>,
{
    /// Runs the compiled step: `state`'s leaves are updated in place, `f`'s outputs returned.
    pub fn call(&self, state: &mut S, args: &[Array]) -> Result<Vec<Array>> {
        let (leaves, def) = tree_flatten(state)?;
        let n = leaves.len();
        let mut inputs: Vec<Array> = leaves.into_iter().cloned().collect();
        inputs.extend(args.iter().cloned());
        let mut hasher = DefaultHasher::new();
        def.hash(&mut hasher);
        let key = hasher.finish();
        let template = state.clone();
        let fun = |xs: &[Array]| -> Result<Vec<Array>> {
            let mut s = template.clone();
            tree_assign_leaves(&mut s, xs[..n].to_vec())?;
            let out = (self.f)(&mut s, &xs[n..])?;
            let after = tree_structure(&s)?;
            if after != def {
                return Err(Error::InvalidArgument(format!(
                    "the compiled function changed the structure of its state from {def} to \
                     {after}; initialize the state before compiling (e.g. optimizer.init)"
                )));
            }
            let (new_leaves, _) = tree_flatten(&s)?;
            let mut res: Vec<Array> = new_leaves.into_iter().cloned().collect();
            res.extend(out);
            Ok(res)
        };
        let mut outputs = self.engine.call_with(&inputs, &[key], &fun)?;
        let rest = outputs.split_off(n);
        tree_assign_leaves(state, outputs)?;
        Ok(rest)
    }

    /// How many times `f` was traced.
    pub fn traces(&self) -> u64 {
        self.engine.traces()
    }

    /// How many calls were made; `calls() - traces()` were cache hits.
    pub fn calls(&self) -> u64 {
        self.engine.calls()
    }
}
