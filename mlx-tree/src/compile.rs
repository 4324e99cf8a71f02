//! `compile` for functions from trees to trees, and for steps that mutate a state tree.
//!
//! Built on [`mlx_rs::compile::CompiledFn`]: each call flattens the arguments once (leaves
//! borrowed, no path strings), hashes the structure (static data included) together with the
//! leaves' shapes and dtypes (ranks and dtypes when shapeless) once, and passes the hash to
//! MLX as a cache-key constant. A new structure therefore gets its own trace instead of
//! reusing a stale one. A cache hit does not run the Rust function, so the output structure
//! recorded when a key was traced is kept here, per key.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hasher;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use mlx_rs::compile::CompiledFn;

use crate::def::TreeDef;
use crate::error::{self, Result};
use crate::pair::{flatten_pair_into, unflatten_pair, unflatten_rest};
use crate::retrace::{leaf_sigs, LeafSig, RetraceReport, Tracker};
use crate::{tree_flatten, tree_structure, tree_unflatten, Array, Flattener, TreeNode};

/// What a compiled tree function did so far (see [`Compiled::stats`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompileStats {
    /// Calls made.
    pub calls: u64,
    /// Times the Rust function ran (traced): once per new signature — structure, static data,
    /// shapes and dtypes — per thread, plus every call while compilation is off or under
    /// another transform (see [`mlx_rs::compile`]).
    pub traces: u64,
    /// Calls answered from the cache, without running the Rust function.
    pub cache_hits: u64,
    /// Distinct signatures (structure + static data + shapes/dtypes) seen.
    pub signatures: usize,
    /// Set once the function traced several calls in a row, each with a new signature: which
    /// path's static data, shape or structure kept changing (also logged once, as a warning
    /// with target `mlx_tree::compile`). A function in that state is not compiled in any
    /// useful sense: every call runs the Rust function again.
    pub retraces: Option<RetraceReport>,
}

/// Output structures recorded when a signature was traced.
struct OutDefs {
    /// The state's structure after the step when it differs from before (`None`: unchanged,
    /// so the new leaves are written into the caller's state in place).
    state: Option<TreeDef>,
    /// How many of the outputs are state leaves.
    num_state: usize,
    /// The structure of the function's result.
    out: TreeDef,
}

struct Entry {
    /// The input structure, compared on lookup so that a hash collision cannot reuse a trace
    /// of another structure.
    input: Arc<TreeDef>,
    /// The leaves' shapes and dtypes when traced (what a later retrace is compared with).
    leaves: Vec<LeafSig>,
    out: Option<Arc<OutDefs>>,
}

struct Cache {
    /// Signature hash -> entries (more than one only on a hash collision).
    entries: HashMap<u64, Vec<Entry>>,
    /// The latest call. The next call checks its arguments against this structure while
    /// collecting their leaves, instead of building, hashing and comparing a new one (the
    /// usual case: every step of a loop has the same structure); a retrace is compared with
    /// this call's entry.
    last: Option<Last>,
    retraces: Tracker,
}

struct Last {
    def: Arc<TreeDef>,
    /// `exact_hash` of `def`.
    hash: u64,
    /// Where the call's entry is: signature hash and slot.
    key: u64,
    slot: usize,
}

/// A call's flattened arguments.
struct Input<'x> {
    leaves: Vec<&'x Array>,
    def: Arc<TreeDef>,
    /// `exact_hash` of `def`.
    hash: u64,
}

/// The engine shared by [`Compiled`] and [`CompiledMut`].
struct Core {
    engine: CompiledFn,
    cache: Mutex<Cache>,
    hits: AtomicU64,
    /// Names for the two elements of a pair structure in retrace reports (`compile_mut`).
    roots: Option<[&'static str; 2]>,
}

/// FxHash (rustc's hasher): a few cycles per word, enough for a cache key whose collisions
/// are caught by comparing structures.
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        for &b in chunks.remainder() {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_u32(&mut self, word: u32) {
        self.write_u64(word as u64);
    }
    #[inline]
    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The cache key: the structure's hash combined with the leaves' shapes and dtypes.
fn signature(structure: u64, leaves: &[&Array], shapeless: bool) -> u64 {
    let mut h = FxHasher(structure);
    for leaf in leaves {
        h.write_u32(leaf.dtype() as u32);
        if shapeless {
            h.write_usize(leaf.ndim());
        } else {
            let shape = leaf.shape();
            h.write_usize(shape.len());
            for &d in shape {
                h.write_u32(d as u32);
            }
        }
    }
    h.finish()
}

type TraceFn<'t> = dyn Fn(&[Array]) -> Result<(Vec<Array>, OutDefs)> + 't;

impl Core {
    fn new(shapeless: bool, roots: Option<[&'static str; 2]>) -> Self {
        Core {
            engine: CompiledFn::new(shapeless),
            cache: Mutex::new(Cache {
                entries: HashMap::new(),
                last: None,
                retraces: Tracker::default(),
            }),
            hits: AtomicU64::new(0),
            roots,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Flattens a call's arguments with `flatten`: checked against the previous call's
    /// structure first, built (and hashed) only when it differs.
    fn flatten<'x>(&self, flatten: impl Fn(&mut Flattener<'x>)) -> Result<Input<'x>> {
        let last = self.lock().last.as_ref().map(|l| (l.def.clone(), l.hash));
        if let Some((def, hash)) = last {
            let mut f = Flattener::checking(def.clone());
            flatten(&mut f);
            if let Some(leaves) = f.finish_check() {
                return Ok(Input { leaves, def, hash });
            }
        }
        let mut f = Flattener::new(true);
        flatten(&mut f);
        let (leaves, def) = f.finish()?;
        let mut h = FxHasher::default();
        def.exact_hash(&mut h);
        Ok(Input {
            leaves,
            def: Arc::new(def),
            hash: h.finish(),
        })
    }

    /// One compiled call: the outputs and the structures describing them.
    fn call(&self, input: &Input<'_>, trace: &TraceFn<'_>) -> Result<(Vec<Array>, Arc<OutDefs>)> {
        let key = signature(input.hash, &input.leaves, self.engine.shapeless());
        let (slot, known) = {
            let mut guard = self.lock();
            let cache = &mut *guard;
            let entries = cache.entries.entry(key).or_default();
            let same =
                |e: &Entry| Arc::ptr_eq(&e.input, &input.def) || e.input.exact_eq(&input.def);
            let found = match entries.iter().position(same) {
                Some(i) => {
                    cache.retraces.hit();
                    (i, entries[i].out.clone())
                }
                None => {
                    entries.push(Entry {
                        input: input.def.clone(),
                        leaves: leaf_sigs(&input.leaves),
                        out: None,
                    });
                    let slot = entries.len() - 1;
                    let before = cache
                        .last
                        .as_ref()
                        .and_then(|l| cache.entries.get(&l.key)?.get(l.slot))
                        .map(|e| (&*e.input, &e.leaves[..]));
                    cache
                        .retraces
                        .traced(before, &input.def, &input.leaves, self.roots);
                    (slot, None)
                }
            };
            cache.last = Some(Last {
                def: input.def.clone(),
                hash: input.hash,
                key,
                slot: found.0,
            });
            found
        };
        let recorded = RefCell::new(None);
        let fun = |xs: &[Array]| -> Result<Vec<Array>> {
            let (outs, defs) = trace(xs)?;
            *recorded.borrow_mut() = Some(defs);
            Ok(outs)
        };
        let outs = self
            .engine
            .call_with_refs(&input.leaves, &[key, slot as u64], &fun)?;
        let defs = match recorded.into_inner() {
            Some(defs) => {
                let defs = Arc::new(defs);
                let mut cache = self.lock();
                if let Some(e) = cache.entries.get_mut(&key).and_then(|v| v.get_mut(slot)) {
                    e.out = Some(defs.clone());
                }
                defs
            }
            None => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                known.ok_or_else(|| {
                    error::invalid(
                        "compile: MLX replayed a trace whose output structure was not recorded",
                    )
                })?
            }
        };
        let expected = defs.num_state + defs.out.num_leaves();
        if outs.len() != expected {
            return Err(error::invalid(format!(
                "compile: the compiled graph returned {} arrays, the recorded structure has {expected}",
                outs.len()
            )));
        }
        Ok((outs, defs))
    }

    fn stats(&self) -> CompileStats {
        let cache = self.lock();
        CompileStats {
            calls: self.engine.calls(),
            traces: self.engine.traces(),
            cache_hits: self.hits.load(Ordering::Relaxed),
            signatures: cache.entries.values().map(Vec::len).sum(),
            retraces: cache.retraces.report(),
        }
    }

    fn clear_cache(&self) {
        self.engine.clear_cache();
    }
}

/// A compiled function from a tree `I` to a tree `O` (Python: `mx.compile(fun)` on a
/// function of pytrees). Made by [`compile`].
pub struct Compiled<I, O, F> {
    fun: F,
    core: Core,
    _types: PhantomData<fn(&I) -> O>,
}

/// Compiles `fun`, a function from a tree to a tree (Python: `mx.compile(fun, shapeless=False)`).
///
/// Arguments and results may be any [`TreeNode`]: derived structs, containers, registered
/// foreign types, [`Value`](crate::Value)s; several arguments go in a tuple. The cache is
/// keyed by the argument's structure — types, container lengths, keys and static data — plus
/// the leaves' shapes and dtypes (with `shapeless`, only their ranks and dtypes): calls with
/// an equal key replay the trace, and a changed key (a `Vec` that grew, an `Option` that
/// became `None`, a static field that changed) traces again. [`Compiled::stats`] shows which
/// happened.
///
/// Static data is seen by the function as a constant: it is part of the key, never traced.
///
/// ```
/// use mlx_tree::{compile, Array, TreeNode};
///
/// #[derive(TreeNode)]
/// struct Linear { weight: Array, bias: Array }
///
/// let f = compile(|(l, x): &(Linear, Array)| Ok(x.matmul(&l.weight)? + &l.bias), None);
/// let l = Linear { weight: mlx_rs::ops::ones(&[2, 2], None)?, bias: Array::from_scalar(1.0f32) };
/// let x = Array::from_slice(&[1.0f32, 2.0], &[1, 2])?;
/// let y = f.call(&(l, x))?;
/// assert_eq!(y.to_vec::<f32>()?, vec![4.0, 4.0]);
/// # Ok::<(), mlx_tree::Error>(())
/// ```
pub fn compile<I, O, F>(fun: F, shapeless: impl Into<Option<bool>>) -> Compiled<I, O, F>
where
    I: TreeNode,
    O: TreeNode,
    F: Fn(&I) -> Result<O>,
{
    Compiled {
        fun,
        core: Core::new(shapeless.into().unwrap_or(false), None),
        _types: PhantomData,
    }
}

impl<I, O, F> Compiled<I, O, F>
where
    I: TreeNode,
    O: TreeNode,
    F: Fn(&I) -> Result<O>,
{
    /// Calls the compiled function.
    pub fn call(&self, input: &I) -> Result<O> {
        let args = self.core.flatten(|f| input.flatten(f))?;
        let trace = |xs: &[Array]| -> Result<(Vec<Array>, OutDefs)> {
            let input: I = tree_unflatten(&args.def, xs.to_vec())?;
            let out = (self.fun)(&input)?;
            let (out_leaves, out_def) = tree_flatten(&out)?;
            Ok((
                out_leaves.into_iter().cloned().collect(),
                OutDefs {
                    state: None,
                    num_state: 0,
                    out: out_def,
                },
            ))
        };
        let (outs, defs) = self.core.call(&args, &trace)?;
        unflatten_rest(&defs.out, outs.into_iter())
    }
}

impl<I, O, F> Compiled<I, O, F> {
    /// Calls, traces, cache hits and signatures so far.
    pub fn stats(&self) -> CompileStats {
        self.core.stats()
    }

    /// Whether the function was compiled shapeless.
    pub fn shapeless(&self) -> bool {
        self.core.engine.shapeless()
    }

    /// Forgets the compiled graphs (on every thread); the next call of each signature traces
    /// again.
    pub fn clear_cache(&self) {
        self.core.clear_cache()
    }
}

/// A compiled step that mutates a state tree `S` in place: made by [`compile_mut`].
pub struct CompiledMut<S, I, O, F> {
    fun: F,
    core: Core,
    _types: PhantomData<fn(&mut S, &I) -> O>,
}

/// Compiles `fun(&mut state, &args) -> out`, a step that updates a state tree: an SSM or KV
/// cache, a model and its optimizer state.
///
/// The leaves of the state are inputs of the compiled graph *and* outputs: after each call
/// the state's new leaves are written back into the caller's `state` in place (through
/// [`TreeNode::leaves_mut`], no rebuild), so the caller sees exactly what an eager call of
/// `fun` would have left there. If the step changes the state's structure (a static offset
/// that advances, a `Vec` that grows), the state is rebuilt from its new structure instead,
/// and the next call is a new signature. This is what Python's `mx.compile` needs
/// `inputs=`/`outputs=` declarations for.
///
/// The cache is keyed as for [`compile`], over the state and the arguments together. Several
/// mutable trees go in one state: a tuple `(model, optimizer_state)` or a struct.
///
/// ```
/// use mlx_tree::{compile_mut, Array, TreeNode};
///
/// #[derive(TreeNode)]
/// struct SsmState { layers: Vec<Array> }
///
/// let step = compile_mut(
///     |s: &mut SsmState, x: &Array| {
///         for h in &mut s.layers {
///             *h = &*h * 0.5 + x;
///         }
///         Ok(s.layers.iter().try_fold(Array::from_scalar(0.0f32), |acc, h| Ok::<_, mlx_tree::Error>(acc + h))?)
///     },
///     None,
/// );
/// let mut state = SsmState { layers: vec![Array::from_scalar(0.0f32); 2] };
/// let x = Array::from_scalar(1.0f32);
/// for _ in 0..3 {
///     step.call(&mut state, &x)?;
/// }
/// assert_eq!(state.layers[1].item::<f32>()?, 1.75); // 0 -> 1 -> 1.5 -> 1.75
/// # if std::env::var_os("MLX_DISABLE_COMPILE").is_none() {
/// assert_eq!(step.stats().traces, 1);
/// # }
/// # Ok::<(), mlx_tree::Error>(())
/// ```
pub fn compile_mut<S, I, O, F>(
    fun: F,
    shapeless: impl Into<Option<bool>>,
) -> CompiledMut<S, I, O, F>
where
    S: TreeNode,
    I: TreeNode,
    O: TreeNode,
    F: Fn(&mut S, &I) -> Result<O>,
{
    CompiledMut {
        fun,
        core: Core::new(shapeless.into().unwrap_or(false), Some(["state", "input"])),
        _types: PhantomData,
    }
}

impl<S, I, O, F> CompiledMut<S, I, O, F>
where
    S: TreeNode,
    I: TreeNode,
    O: TreeNode,
    F: Fn(&mut S, &I) -> Result<O>,
{
    /// Runs the compiled step: updates `state` in place and returns the step's output. On
    /// `Err`, `state` is unchanged.
    pub fn call(&self, state: &mut S, input: &I) -> Result<O> {
        let (outs, defs) = {
            let state = &*state;
            let args = self.core.flatten(|f| flatten_pair_into(f, state, input))?;
            let trace = |xs: &[Array]| -> Result<(Vec<Array>, OutDefs)> {
                let (mut s, i): (S, I) = unflatten_pair(&args.def, xs.to_vec())?;
                let before = tree_structure(&s)?;
                let out = (self.fun)(&mut s, &i)?;
                let (state_leaves, after) = tree_flatten(&s)?;
                let (out_leaves, out_def) = tree_flatten(&out)?;
                let num_state = state_leaves.len();
                let outs = state_leaves
                    .into_iter()
                    .chain(out_leaves)
                    .cloned()
                    .collect();
                Ok((
                    outs,
                    OutDefs {
                        state: (after != before).then_some(after),
                        num_state,
                        out: out_def,
                    },
                ))
            };
            self.core.call(&args, &trace)?
        };
        let mut outs = outs.into_iter();
        // Build everything before touching `state`, so an error leaves it as it was.
        let new_state: Option<S> = match &defs.state {
            None => None,
            Some(def) => {
                let leaves: Vec<Array> = outs.by_ref().take(defs.num_state).collect();
                Some(tree_unflatten(def, leaves)?)
            }
        };
        match new_state {
            Some(s) => {
                let out = unflatten_rest(&defs.out, outs)?;
                *state = s;
                Ok(out)
            }
            None => {
                let state_leaves: Vec<Array> = outs.by_ref().take(defs.num_state).collect();
                let out = unflatten_rest(&defs.out, outs)?;
                let mut it = state_leaves.into_iter();
                state.leaves_mut(&mut |leaf: &mut Array| {
                    if let Some(new) = it.next() {
                        *leaf = new;
                    }
                })?;
                Ok(out)
            }
        }
    }
}

impl<S, I, O, F> CompiledMut<S, I, O, F> {
    /// Calls, traces, cache hits and signatures so far.
    pub fn stats(&self) -> CompileStats {
        self.core.stats()
    }

    /// Whether the step was compiled shapeless.
    pub fn shapeless(&self) -> bool {
        self.core.engine.shapeless()
    }

    /// Forgets the compiled graphs (on every thread); the next call of each signature traces
    /// again.
    pub fn clear_cache(&self) {
        self.core.clear_cache()
    }
}

impl<I, O, F> std::fmt::Debug for Compiled<I, O, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("stats", &self.stats())
            .finish()
    }
}

impl<S, I, O, F> std::fmt::Debug for CompiledMut<S, I, O, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledMut")
            .field("stats", &self.stats())
            .finish()
    }
}
