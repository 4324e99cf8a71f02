//! Function transforms over arrays (Python: `mx.grad`, `mx.value_and_grad`, `mx.vjp`,
//! `mx.jvp`, `mx.vmap`, `mx.checkpoint`, `mx.custom_function`), plus [`stop_gradient`],
//! [`eval`] and [`async_eval`] so everything a training loop needs is in one place.
//!
//! Every transform takes a function over a flat list of arrays,
//! `Fn(&[Array]) -> Result<Vec<Array>>`; trees of arrays (structs, maps, ...) are flattened to
//! that form by the `mlx-tree` crate. Argument numbers, in and out axes all index this flat
//! list.
//!
//! ```
//! use mlx_rs::{transforms, Array};
//! // d/dx sum(x^2) = 2x
//! let df = transforms::grad(|x: &[Array]| Ok(vec![(&x[0] * &x[0]).sum(None, false)?]), None);
//! let g = df(&[Array::from_slice(&[1.0f32, -2.0], &[2])?])?;
//! assert_eq!(g[0].to_vec::<f32>()?, vec![2.0, -4.0]);
//! # Ok::<(), mlx_rs::Error>(())
//! ```
//!
//! # Errors inside transforms
//! A function that returns `Err`, or panics, while MLX runs it makes the transform return
//! that `Err` (a panic becomes [`Error::Closure`] carrying the panic message). Nothing is left
//! half-done: the next call works normally.
//!
//! # Borrowing and threads
//! [`grad`], [`value_and_grad`], [`vjp`], [`jvp`] and [`vmap`] run the function only while
//! they are being called, so the function may borrow local data and need not be `Send`.
//! [`checkpoint`] and [`custom_function`] put the function into the graph (MLX calls it again
//! during the backward pass, possibly after the caller returned, on whichever thread
//! differentiates the graph), so those take `Send + Sync + 'static` functions, and the
//! [`CustomFunction`] they return is `Send + Sync`. MLX traces on the calling thread; arrays
//! follow the rules in [`Array`]'s docs.

use mlx_sys as sys;

use crate::closure::{
    fill_array_pair, fill_arrays, with_closure, Closure, CustomClosure, CustomJvpClosure,
    CustomVmapClosure, ValueAndGradClosure,
};
use crate::handles::VectorArray;

use crate::{Array, Error, Result};
use std::sync::Arc;

pub use crate::closure::{closure_stats, ClosureStats};
pub use crate::ops::stop_gradient;
pub use crate::{async_eval, eval};

/// Which flat arguments to differentiate (Python: `argnums`, default `0`).
///
/// Converts from `None` (Python's default, argument 0), an `i32`, or a list (`&[0, 2]`,
/// `[0, 2]`, `vec![0, 2]`). Negative numbers count from the end. As in Python the gradients
/// come back in increasing argument order, whatever order is given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Argnums(Option<Vec<i32>>);

impl Argnums {
    /// The argument numbers, with Python's default applied.
    pub fn resolve(&self) -> Vec<i32> {
        self.0.clone().unwrap_or_else(|| vec![0])
    }
}

impl From<i32> for Argnums {
    fn from(n: i32) -> Self {
        Argnums(Some(vec![n]))
    }
}

impl From<Option<i32>> for Argnums {
    fn from(n: Option<i32>) -> Self {
        Argnums(n.map(|n| vec![n]))
    }
}

impl From<&[i32]> for Argnums {
    fn from(ns: &[i32]) -> Self {
        Argnums(Some(ns.to_vec()))
    }
}

impl<const N: usize> From<[i32; N]> for Argnums {
    fn from(ns: [i32; N]) -> Self {
        Argnums(Some(ns.to_vec()))
    }
}

impl<const N: usize> From<&[i32; N]> for Argnums {
    fn from(ns: &[i32; N]) -> Self {
        Argnums(Some(ns.to_vec()))
    }
}

impl From<Vec<i32>> for Argnums {
    fn from(ns: Vec<i32>) -> Self {
        Argnums(Some(ns))
    }
}

/// The function and its vector-Jacobian product (Python: `mx.vjp(fun, primals, cotangents)`).
///
/// Returns `(outputs, vjps)`: `fun(primals)` and one cotangent per primal.
pub fn vjp<F>(fun: F, primals: &[Array], cotangents: &[Array]) -> Result<(Vec<Array>, Vec<Array>)>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let given = cotangents;
    let primals = VectorArray::from_arrays(primals);
    let cotangents = VectorArray::from_arrays(cotangents);
    let (outputs, vjps) = with_closure(fun, |f| {
        // SAFETY: valid closure and vector handles for the call; mlx-c writes both results.
        fill_array_pair(|out, vjps| unsafe {
            sys::mlx_vjp(out, vjps, f.as_raw(), primals.0, cotangents.0)
        })
    })?;
    // MLX pairs cotangents with outputs as far as both go and ignores the rest.
    if given.len() != outputs.len() {
        return Err(Error::invalid(format!(
            "[vjp] {} cotangents were given for {} outputs",
            given.len(),
            outputs.len()
        )));
    }
    Ok((outputs, vjps))
}

/// The function and its Jacobian-vector product (Python: `mx.jvp(fun, primals, tangents)`).
///
/// Returns `(outputs, jvps)`: `fun(primals)` and one tangent per output.
pub fn jvp<F>(fun: F, primals: &[Array], tangents: &[Array]) -> Result<(Vec<Array>, Vec<Array>)>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let primals = VectorArray::from_arrays(primals);
    let tangents = VectorArray::from_arrays(tangents);
    with_closure(fun, |f| {
        // SAFETY: valid closure and vector handles for the call; mlx-c writes both results.
        fill_array_pair(|out, jvps| unsafe {
            sys::mlx_jvp(out, jvps, f.as_raw(), primals.0, tangents.0)
        })
    })
}

/// A function returning `(outputs, gradients)` (Python: `mx.value_and_grad(fun, argnums)`).
///
/// The first output of `fun` must be a scalar: it is what gets differentiated. Further
/// outputs are auxiliary values, returned as they are and not differentiated (Python's
/// `return loss, aux` pattern). The gradients are one per argument in `argnums`, in
/// increasing argument order.
///
/// ```
/// use mlx_rs::{transforms::value_and_grad, Array};
/// let f = |x: &[Array]| {
///     let loss = (&x[0] * &x[1]).sum(None, false)?;
///     Ok(vec![loss, &x[0] * 10.0]) // aux output, not differentiated
/// };
/// let (values, grads) = value_and_grad(f, [0, 1])(&[Array::from(3.0f32), Array::from(4.0f32)])?;
/// assert_eq!(values[0].item::<f32>()?, 12.0);
/// assert_eq!(values[1].item::<f32>()?, 30.0);
/// assert_eq!(grads[0].item::<f32>()?, 4.0);
/// assert_eq!(grads[1].item::<f32>()?, 3.0);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn value_and_grad<'a, F>(
    fun: F,
    argnums: impl Into<Argnums>,
) -> impl Fn(&[Array]) -> Result<(Vec<Array>, Vec<Array>)> + 'a
where
    F: Fn(&[Array]) -> Result<Vec<Array>> + 'a,
{
    let argnums = argnums.into().resolve();
    // MLX differentiates the first output without checking there is one: a function that
    // returns nothing got zero gradients. Python raises; so do we.
    let fun = move |inputs: &[Array]| {
        let outputs = fun(inputs)?;
        if outputs.is_empty() {
            return Err(Error::invalid(
                "[value_and_grad] the function returned no outputs; its first output is the \
                 scalar to differentiate",
            ));
        }
        Ok(outputs)
    };
    move |inputs: &[Array]| {
        let f = Closure::borrowed(&fun)?;
        let vg = ValueAndGradClosure::new(&f, &argnums)?;
        vg.apply(inputs)
    }
}

/// A function returning the gradients of `fun`'s first output (Python: `mx.grad`); see
/// [`value_and_grad`] for `argnums` and auxiliary outputs.
pub fn grad<'a, F>(
    fun: F,
    argnums: impl Into<Argnums>,
) -> impl Fn(&[Array]) -> Result<Vec<Array>> + 'a
where
    F: Fn(&[Array]) -> Result<Vec<Array>> + 'a,
{
    let vg = value_and_grad(fun, argnums);
    move |inputs: &[Array]| Ok(vg(inputs)?.1)
}

/// Input axes for [`vmap`] (Python: `in_axes`): one for every input, or one per input;
/// `None` means "not vectorized, passed whole to every call".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InAxes {
    /// The same axis for every input.
    All(Option<i32>),
    /// One axis per input.
    Each(Vec<Option<i32>>),
}

impl InAxes {
    /// One entry per input.
    pub fn expand(&self, num_inputs: usize) -> Result<Vec<Option<i32>>> {
        match self {
            InAxes::All(a) => Ok(vec![*a; num_inputs]),
            InAxes::Each(axes) if axes.len() == num_inputs => Ok(axes.clone()),
            InAxes::Each(axes) => Err(Error::invalid(format!(
                "[vmap] {} in_axes were given for {num_inputs} inputs",
                axes.len()
            ))),
        }
    }
}

impl From<i32> for InAxes {
    fn from(a: i32) -> Self {
        InAxes::All(Some(a))
    }
}

impl From<Option<i32>> for InAxes {
    fn from(a: Option<i32>) -> Self {
        InAxes::All(a)
    }
}

impl From<Vec<Option<i32>>> for InAxes {
    fn from(a: Vec<Option<i32>>) -> Self {
        InAxes::Each(a)
    }
}

impl From<&[Option<i32>]> for InAxes {
    fn from(a: &[Option<i32>]) -> Self {
        InAxes::Each(a.to_vec())
    }
}

impl<const N: usize> From<[Option<i32>; N]> for InAxes {
    fn from(a: [Option<i32>; N]) -> Self {
        InAxes::Each(a.to_vec())
    }
}

impl<const N: usize> From<[i32; N]> for InAxes {
    fn from(a: [i32; N]) -> Self {
        InAxes::Each(a.iter().map(|&x| Some(x)).collect())
    }
}

impl From<Vec<i32>> for InAxes {
    fn from(a: Vec<i32>) -> Self {
        InAxes::Each(a.into_iter().map(Some).collect())
    }
}

/// Output axes for [`vmap`] (Python: `out_axes`): where the vectorized axis goes in each
/// output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutAxes {
    /// The same axis for every output.
    All(i32),
    /// One axis per output.
    Each(Vec<i32>),
}

impl OutAxes {
    /// One entry per output.
    pub fn expand(&self, num_outputs: usize) -> Result<Vec<i32>> {
        match self {
            OutAxes::All(a) => Ok(vec![*a; num_outputs]),
            OutAxes::Each(axes) if axes.len() == num_outputs => Ok(axes.clone()),
            OutAxes::Each(axes) => Err(Error::invalid(format!(
                "[vmap] {} out_axes were given for {num_outputs} outputs",
                axes.len()
            ))),
        }
    }
}

impl From<i32> for OutAxes {
    fn from(a: i32) -> Self {
        OutAxes::All(a)
    }
}

impl From<Vec<i32>> for OutAxes {
    fn from(a: Vec<i32>) -> Self {
        OutAxes::Each(a)
    }
}

impl From<&[i32]> for OutAxes {
    fn from(a: &[i32]) -> Self {
        OutAxes::Each(a.to_vec())
    }
}

impl<const N: usize> From<[i32; N]> for OutAxes {
    fn from(a: [i32; N]) -> Self {
        OutAxes::Each(a.to_vec())
    }
}

/// A vectorized version of `fun` (Python: `mx.vmap(fun, in_axes=0, out_axes=0)`).
///
/// ```
/// use mlx_rs::{ops, transforms::vmap, Array};
/// // Row-wise dot product with a shared vector (in_axes (0, None)).
/// let dot = |x: &[Array]| Ok(vec![(&x[0] * &x[1]).sum(None, false)?]);
/// let rows = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let v = Array::from_slice(&[1.0f32, 10.0], &[2])?;
/// let out = vmap(dot, [Some(0), None], 0)(&[rows, v])?;
/// assert_eq!(out[0].to_vec::<f32>()?, vec![21.0, 43.0]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn vmap<'a, F>(
    fun: F,
    in_axes: impl Into<InAxes>,
    out_axes: impl Into<OutAxes>,
) -> impl Fn(&[Array]) -> Result<Vec<Array>> + 'a
where
    F: Fn(&[Array]) -> Result<Vec<Array>> + 'a,
{
    let in_axes = in_axes.into();
    let out_axes = out_axes.into();
    move |inputs: &[Array]| {
        let axes = in_axes.expand(inputs.len())?;
        vmap_with(&fun, inputs, &axes, |outs| out_axes.expand(outs.len()))
    }
}

/// One vectorized call, the building block of [`vmap`] (and of tree-aware vmap): traces `fun`
/// once on per-example placeholders, then asks `out_axes` — given the traced outputs, so the
/// caller can decide after seeing them (e.g. their tree structure) — where each output's
/// vectorized axis goes. Negative axes count from the end, as in Python.
pub fn vmap_with<F>(
    fun: F,
    inputs: &[Array],
    in_axes: &[Option<i32>],
    out_axes: impl FnOnce(&[Array]) -> Result<Vec<i32>>,
) -> Result<Vec<Array>>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    if in_axes.len() != inputs.len() {
        return Err(Error::invalid(format!(
            "[vmap] {} in_axes were given for {} inputs",
            in_axes.len(),
            inputs.len()
        )));
    }
    let raw_in: Vec<i32> = inputs
        .iter()
        .zip(in_axes)
        .map(|(x, axis)| match axis {
            None => Ok(-1),
            Some(axis) => normalize_axis(*axis, x.ndim(), "", x.shape()),
        })
        .collect::<Result<_>>()?;
    let input_vec = VectorArray::from_arrays(inputs);
    with_closure(fun, |f| {
        // SAFETY: valid closure and vector handles; `raw_in` outlives the call.
        let (trace_in, trace_out) = fill_array_pair(|ti, to| unsafe {
            sys::mlx_detail_vmap_trace(
                ti,
                to,
                f.as_raw(),
                input_vec.0,
                raw_in.as_ptr(),
                raw_in.len(),
            )
        })?;
        let wanted = out_axes(&trace_out)?;
        if wanted.len() != trace_out.len() {
            return Err(Error::invalid(format!(
                "[vmap] {} out_axes were given for {} outputs",
                wanted.len(),
                trace_out.len()
            )));
        }
        let raw_out: Vec<i32> = trace_out
            .iter()
            .zip(&wanted)
            .map(|(o, &axis)| normalize_axis(axis, o.ndim() + 1, " output", o.shape()))
            .collect::<Result<_>>()?;
        let trace_in = VectorArray::from_arrays(&trace_in);
        let trace_out = VectorArray::from_arrays(&trace_out);
        // SAFETY: valid vector handles; the axis buffers outlive the call.
        fill_arrays(|res| unsafe {
            sys::mlx_detail_vmap_replace(
                res,
                input_vec.0,
                trace_in.0,
                trace_out.0,
                raw_in.as_ptr(),
                raw_in.len(),
                raw_out.as_ptr(),
                raw_out.len(),
            )
        })
    })
}

/// Python's check: `axis` in `[-ndim, ndim)`, negatives counted from the end.
fn normalize_axis(axis: i32, ndim: usize, which: &str, shape: &[i32]) -> Result<i32> {
    let ndim = ndim as i32;
    let a = if axis < 0 { axis + ndim } else { axis };
    if a < 0 || a >= ndim {
        return Err(Error::invalid(format!(
            "[vmap] Invalid{which} vectorization axis {axis} for array with shape {shape:?}"
        )));
    }
    Ok(a)
}

/// A custom function's forward computation, shared with the checks of its rules.
type Forward = Arc<dyn Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync>;

/// A function with custom transforms, or a checkpointed function, as built by
/// [`custom_function`], [`custom_vjp`] and [`checkpoint`]. Call it with [`CustomFunction::call`]
/// (inside or outside other transforms); add rules with the builder methods.
///
/// `Send + Sync`: every function it holds is `Send + Sync + 'static`.
pub struct CustomFunction {
    built: Closure<'static>,
    fun: Closure<'static>,
    /// The function itself, to learn the outputs a jvp rule's tangents must match.
    forward: Forward,
    vjp: Option<CustomClosure<'static>>,
    jvp: Option<CustomJvpClosure<'static>>,
    vmap: Option<CustomVmapClosure<'static>>,
}

// SAFETY: every closure in a CustomFunction was made by `Closure::owned` /
// `Custom*Closure::owned` from `Send + Sync + 'static` functions (or by mlx-c from those), and
// mlx-c's std::function wrappers around them hold no thread-bound state.
unsafe impl Send for CustomFunction {}
// SAFETY: as above; calling only reads the shared payloads, which are `Sync`.
unsafe impl Sync for CustomFunction {}

/// A function whose transforms can be overridden (Python: `mx.custom_function`); add rules
/// with [`CustomFunction::vjp`], [`CustomFunction::jvp`] and [`CustomFunction::vmap`].
pub fn custom_function<F>(fun: F) -> Result<CustomFunction>
where
    F: Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
{
    let forward: Forward = Arc::new(fun);
    let shared = forward.clone();
    let fun = Closure::owned(move |x: &[Array]| shared(x))?;
    CustomFunction::build(fun, forward, None, None, None)
}

/// A function with a custom vector-Jacobian product (Python: `mx.custom_function` with
/// `@f.vjp`); `vjp(primals, cotangents, outputs)` returns one cotangent per primal.
///
/// ```
/// use mlx_rs::{transforms::{custom_vjp, grad}, Array};
/// // Identity forward, gradient scaled by 3 on the way back.
/// let f = custom_vjp(
///     |x: &[Array]| Ok(vec![x[0].clone()]),
///     |_primals: &[Array], cot: &[Array], _out: &[Array]| Ok(vec![&cot[0] * 3.0]),
/// )?;
/// let g = grad(|x: &[Array]| Ok(vec![f.call(x)?[0].sum(None, false)?]), None);
/// assert_eq!(g(&[Array::from(2.0f32)])?[0].item::<f32>()?, 3.0);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
pub fn custom_vjp<F, V>(fun: F, vjp: V) -> Result<CustomFunction>
where
    F: Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
    V: Fn(&[Array], &[Array], &[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
{
    custom_function(fun)?.vjp(vjp)
}

/// A function whose intermediate values are recomputed in the backward pass instead of kept
/// (Python: `mx.checkpoint`); it trades compute for memory and gives the same gradients.
pub fn checkpoint<F>(fun: F) -> Result<CustomFunction>
where
    F: Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
{
    let forward: Forward = Arc::new(fun);
    let shared = forward.clone();
    let base = Closure::owned(move |x: &[Array]| shared(x))?;
    // SAFETY: valid closure handle; mlx-c writes the checkpointed closure into `res`.
    let fun = Closure::from_op(|res| unsafe { sys::mlx_checkpoint(res, base.as_raw()) })?;
    CustomFunction::build(fun, forward, None, None, None)
}

impl CustomFunction {
    fn build(
        fun: Closure<'static>,
        forward: Forward,
        vjp: Option<CustomClosure<'static>>,
        jvp: Option<CustomJvpClosure<'static>>,
        vmap: Option<CustomVmapClosure<'static>>,
    ) -> Result<CustomFunction> {
        // mlx-c reads an empty handle (null ctx) as "no rule".
        let no_vjp = sys::mlx_closure_custom {
            ctx: std::ptr::null_mut(),
        };
        let no_jvp = sys::mlx_closure_custom_jvp {
            ctx: std::ptr::null_mut(),
        };
        let no_vmap = sys::mlx_closure_custom_vmap {
            ctx: std::ptr::null_mut(),
        };
        // SAFETY: valid (or deliberately empty) closure handles; mlx-c writes into `res`.
        let built = Closure::from_op(|res| unsafe {
            sys::mlx_custom_function(
                res,
                fun.as_raw(),
                vjp.as_ref().map_or(no_vjp, |c| c.as_raw()),
                jvp.as_ref().map_or(no_jvp, |c| c.as_raw()),
                vmap.as_ref().map_or(no_vmap, |c| c.as_raw()),
            )
        })?;
        Ok(CustomFunction {
            built,
            fun,
            forward,
            vjp,
            jvp,
            vmap,
        })
    }

    /// Sets the vector-Jacobian product rule (Python: `@f.vjp`):
    /// `(primals, cotangents, outputs) -> one cotangent per primal`.
    pub fn vjp<V>(self, vjp: V) -> Result<CustomFunction>
    where
        V: Fn(&[Array], &[Array], &[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
    {
        // MLX takes what the rule returns as the primals' cotangents without looking: a wrong
        // count, shape or dtype became the gradient.
        let checked = move |primals: &[Array], cotangents: &[Array], outputs: &[Array]| {
            let vjps = vjp(primals, cotangents, outputs)?;
            check_rule_outputs("vjp", "cotangent", "primal", &vjps, primals)?;
            Ok(vjps)
        };
        let vjp = CustomClosure::owned(checked)?;
        CustomFunction::build(self.fun, self.forward, Some(vjp), self.jvp, self.vmap)
    }

    /// Sets the Jacobian-vector product rule (Python: `@f.jvp`):
    /// `(primals, tangents, argnums) -> one tangent per output`; `tangents[i]` belongs to
    /// primal `argnums[i]`.
    pub fn jvp<J>(self, jvp: J) -> Result<CustomFunction>
    where
        J: Fn(&[Array], &[Array], &[i32]) -> Result<Vec<Array>> + Send + Sync + 'static,
    {
        // As for vjp rules: MLX takes the tangents as they come. They must match the
        // function's outputs, which a second (lazy) forward call gives.
        let forward = self.forward.clone();
        let checked = move |primals: &[Array], tangents: &[Array], argnums: &[i32]| {
            let out = jvp(primals, tangents, argnums)?;
            check_rule_outputs("jvp", "tangent", "output", &out, &forward(primals)?)?;
            Ok(out)
        };
        let jvp = CustomJvpClosure::owned(checked)?;
        CustomFunction::build(self.fun, self.forward, self.vjp, Some(jvp), self.vmap)
    }

    /// Sets the vectorization rule (Python: `@f.vmap`):
    /// `(inputs, in_axes) -> (outputs, out_axes)`, `None` meaning "not vectorized".
    pub fn vmap<M>(self, vmap: M) -> Result<CustomFunction>
    where
        M: Fn(&[Array], &[Option<i32>]) -> Result<(Vec<Array>, Vec<Option<i32>>)>
            + Send
            + Sync
            + 'static,
    {
        let checked = move |inputs: &[Array], axes: &[Option<i32>]| {
            let (outputs, out_axes) = vmap(inputs, axes)?;
            if outputs.len() != out_axes.len() {
                return Err(Error::invalid(format!(
                    "[custom_function] the vmap rule returned {} outputs and {} output axes",
                    outputs.len(),
                    out_axes.len()
                )));
            }
            Ok((outputs, out_axes))
        };
        let vmap = CustomVmapClosure::owned(checked)?;
        CustomFunction::build(self.fun, self.forward, self.vjp, self.jvp, Some(vmap))
    }

    /// Calls the function.
    pub fn call(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        self.built.apply(inputs)
    }
}

/// Checks what a custom rule returned against what it stands for: one array per `expected`
/// entry, each of its shape and dtype.
fn check_rule_outputs(
    rule: &str,
    what: &str,
    of: &str,
    got: &[Array],
    expected: &[Array],
) -> Result<()> {
    if got.len() != expected.len() {
        return Err(Error::invalid(format!(
            "[custom_function] the {rule} rule returned {} {what}s for {} {of}s",
            got.len(),
            expected.len()
        )));
    }
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        if g.shape() != e.shape() || g.dtype() != e.dtype() {
            return Err(Error::invalid(format!(
                "[custom_function] the {rule} rule's {what} {i} is {:?} {}, but {of} {i} is {:?} {}",
                g.shape(),
                g.dtype(),
                e.shape(),
                e.dtype()
            )));
        }
    }
    Ok(())
}

impl std::fmt::Debug for CustomFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomFunction")
            .field("vjp", &self.vjp.is_some())
            .field("jvp", &self.jvp.is_some())
            .field("vmap", &self.vmap.is_some())
            .finish()
    }
}
