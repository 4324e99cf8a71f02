//! The one bridge that hands Rust closures to mlx-c.
//!
//! Every transform (grad, vmap, compile, custom_vjp, export, ...) reaches user code through
//! the trampolines here. Three rules hold for all of them:
//!
//! - **Errors and panics come back as `Err`.** User code runs inside `catch_unwind`. mlx-c only
//!   sees a non-zero return code (and throws its own generic "returned a non-zero value"
//!   exception), so the original [`Error`] is parked in a thread-local slot — MLX calls the
//!   closure on the thread that called the transform — and [`check_transform`] hands it back
//!   to the caller in place of mlx-c's generic message.
//! - **The payload is freed exactly once**, by the destructor mlx-c calls when the last copy
//!   of the closure goes (mlx-c keeps it in a `shared_ptr`, so closures may outlive the handle
//!   that created them, e.g. inside a graph node of `custom_vjp`). Counters
//!   ([`closure_stats`]) make this observable.
//! - **Borrowed closures never outlive their borrow.** A closure that borrows (lifetime `'a`)
//!   is only handed to mlx-c calls that do not keep it (vjp, jvp, value_and_grad, vmap
//!   tracing, compile, export). Its handle checks on drop that mlx-c really released the
//!   payload; if MLX ever kept it, the process aborts rather than risk a dangling call.
//!   Closures MLX stores in graphs (checkpoint, custom_vjp/custom_function) must be
//!   `'static + Send + Sync`.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use mlx_sys as sys;

use crate::error::{init, take_last_error, Error, Result};
use crate::handles::{arrays_from_raw, VectorArray};
use crate::Array;

thread_local! {
    static CLOSURE_ERROR: RefCell<Option<Error>> = const { RefCell::new(None) };
}

static PAYLOADS_CREATED: AtomicUsize = AtomicUsize::new(0);
static PAYLOADS_FREED: AtomicUsize = AtomicUsize::new(0);

/// Process-wide counts of closure payloads handed to MLX and freed by it (a diagnostic for
/// leak tests: once every transform object and graph that used a closure is gone,
/// `created == freed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClosureStats {
    /// Payloads handed to mlx-c so far.
    pub created: usize,
    /// Payloads whose destructor mlx-c has run so far.
    pub freed: usize,
}

/// Current [`ClosureStats`].
pub fn closure_stats() -> ClosureStats {
    // Read `freed` first so a concurrent free can never make freed > created here.
    let freed = PAYLOADS_FREED.load(Ordering::SeqCst);
    let created = PAYLOADS_CREATED.load(Ordering::SeqCst);
    ClosureStats { created, freed }
}

fn park_error(e: Error) {
    // `try_with`: during thread teardown the slot may be gone; the call still fails.
    let _ = CLOSURE_ERROR.try_with(|slot| *slot.borrow_mut() = Some(e));
}

fn take_closure_error() -> Option<Error> {
    CLOSURE_ERROR
        .try_with(|slot| slot.borrow_mut().take())
        .ok()
        .flatten()
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

/// Runs user code for a trampoline: 0 on success; on `Err` or panic the error is parked for
/// [`check_transform`] and 1 tells mlx-c the call failed.
fn guarded(body: impl FnOnce() -> Result<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            park_error(e);
            1
        }
        Err(panic) => {
            park_error(Error::closure_panicked(&panic_message(&*panic)));
            1
        }
    }
}

/// Runs an mlx-c call that may invoke Rust closures. On failure, the error a closure
/// returned (or its panic) wins over mlx-c's generic "returned a non-zero value" message.
pub(crate) fn check_transform(call: impl FnOnce() -> i32) -> Result<()> {
    init();
    // A stale error from an earlier call whose failure MLX swallowed must not leak into this one.
    let _ = take_closure_error();
    let status = call();
    let parked = take_closure_error();
    if status == 0 {
        return Ok(());
    }
    let mlx_message = take_last_error();
    Err(parked.unwrap_or_else(|| {
        Error::Mlx(
            mlx_message
                .unwrap_or_else(|| format!("MLX call failed with status {status} and no message")),
        )
    }))
}

/// Writes `arrays` into a result vector handle mlx-c created for a trampoline.
fn write_arrays(res: *mut sys::mlx_vector_array, arrays: &[Array]) -> Result<()> {
    let raw: Vec<sys::mlx_array> = arrays.iter().map(|a| a.as_raw()).collect();
    // SAFETY: `res` points to a valid vector handle owned by mlx-c's closure wrapper; the
    // array handles are valid for the call and mlx-c copies them.
    crate::error::check(|| unsafe { sys::mlx_vector_array_set_data(res, raw.as_ptr(), raw.len()) })
}

/// # Safety
/// `ptr` must point to `n` ints that stay valid while the returned slice is used (mlx-c
/// passes such a buffer for the duration of a trampoline call).
unsafe fn ints<'p>(ptr: *const c_int, n: usize) -> &'p [i32] {
    if n == 0 || ptr.is_null() {
        return &[];
    }
    // SAFETY: guaranteed by the caller.
    unsafe { std::slice::from_raw_parts(ptr, n) }
}

/// What mlx-c holds as `void* payload`: the user's closure plus a liveness flag the owner
/// of a borrowed closure checks.
struct Payload<F> {
    f: F,
    alive: Arc<AtomicBool>,
}

fn new_payload<F>(f: F) -> (*mut c_void, Arc<AtomicBool>) {
    let alive = Arc::new(AtomicBool::new(true));
    let boxed = Box::new(Payload {
        f,
        alive: alive.clone(),
    });
    PAYLOADS_CREATED.fetch_add(1, Ordering::SeqCst);
    (Box::into_raw(boxed).cast(), alive)
}

impl<F> Drop for Payload<F> {
    fn drop(&mut self) {
        self.alive.store(false, Ordering::SeqCst);
        PAYLOADS_FREED.fetch_add(1, Ordering::SeqCst);
    }
}

extern "C" fn drop_payload<F>(payload: *mut c_void) {
    // SAFETY: mlx-c calls the destructor exactly once, with the pointer `new_payload::<F>`
    // made (it is the deleter of the shared_ptr that owns the payload).
    let boxed = unsafe { Box::from_raw(payload.cast::<Payload<F>>()) };
    // The user's captures may panic in Drop; unwinding into C++ would abort.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(boxed)));
}

/// # Safety (for all trampolines)
/// `payload` is the pointer `new_payload::<F>` produced and mlx-c keeps it alive for the
/// call; input handles are valid for the call; result pointers point to handles mlx-c made.
unsafe fn payload_ref<'p, F>(payload: *mut c_void) -> &'p F {
    // SAFETY: by the contract above, `payload` came from `Box::into_raw` of a `Payload<F>` in
    // `new_payload::<F>` (so it is non-null, aligned and initialized) and mlx-c frees it only
    // through `drop_payload`, after the last call; trampolines only take shared references, so
    // the `&F` aliases nothing mutable while the call lasts.
    unsafe { &(*payload.cast::<Payload<F>>()).f }
}

extern "C" fn closure_trampoline<F>(
    res: *mut sys::mlx_vector_array,
    input: sys::mlx_vector_array,
    payload: *mut c_void,
) -> c_int
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    guarded(|| {
        // SAFETY: see `payload_ref`.
        let f = unsafe { payload_ref::<F>(payload) };
        let inputs = arrays_from_raw(input)?;
        write_arrays(res, &f(&inputs)?)
    })
}

extern "C" fn custom_trampoline<F>(
    res: *mut sys::mlx_vector_array,
    primals: sys::mlx_vector_array,
    cotangents: sys::mlx_vector_array,
    outputs: sys::mlx_vector_array,
    payload: *mut c_void,
) -> c_int
where
    F: Fn(&[Array], &[Array], &[Array]) -> Result<Vec<Array>>,
{
    guarded(|| {
        // SAFETY: see `payload_ref`.
        let f = unsafe { payload_ref::<F>(payload) };
        let p = arrays_from_raw(primals)?;
        let c = arrays_from_raw(cotangents)?;
        let o = arrays_from_raw(outputs)?;
        write_arrays(res, &f(&p, &c, &o)?)
    })
}

extern "C" fn custom_jvp_trampoline<F>(
    res: *mut sys::mlx_vector_array,
    primals: sys::mlx_vector_array,
    tangents: sys::mlx_vector_array,
    argnums: *const c_int,
    argnums_num: usize,
    payload: *mut c_void,
) -> c_int
where
    F: Fn(&[Array], &[Array], &[i32]) -> Result<Vec<Array>>,
{
    guarded(|| {
        // SAFETY: see `payload_ref`.
        let f = unsafe { payload_ref::<F>(payload) };
        let p = arrays_from_raw(primals)?;
        let t = arrays_from_raw(tangents)?;
        // SAFETY: mlx-c's buffer lives for this call.
        let argnums = unsafe { ints(argnums, argnums_num) };
        write_arrays(res, &f(&p, &t, argnums)?)
    })
}

extern "C" fn custom_vmap_trampoline<F>(
    res: *mut sys::mlx_vector_array,
    res_axes: *mut sys::mlx_vector_int,
    inputs: sys::mlx_vector_array,
    axes: *const c_int,
    axes_num: usize,
    payload: *mut c_void,
) -> c_int
where
    F: Fn(&[Array], &[Option<i32>]) -> Result<(Vec<Array>, Vec<Option<i32>>)>,
{
    guarded(|| {
        // SAFETY: see `payload_ref`.
        let f = unsafe { payload_ref::<F>(payload) };
        let inputs = arrays_from_raw(inputs)?;
        // MLX marks an input that is not vectorized with axis -1 (Python shows None).
        // SAFETY: mlx-c's buffer lives for this call.
        let axes: Vec<Option<i32>> = unsafe { ints(axes, axes_num) }
            .iter()
            .map(|&a| (a >= 0).then_some(a))
            .collect();
        let (outputs, mut out_axes) = f(&inputs, &axes)?;
        if out_axes.len() != outputs.len() {
            return Err(Error::invalid(format!(
                "[custom_function] the vmap rule returned {} outputs but {} axes",
                outputs.len(),
                out_axes.len()
            )));
        }
        write_arrays(res, &outputs)?;
        let mut raw_axes: Vec<c_int> = out_axes.drain(..).map(|a| a.unwrap_or(-1)).collect();
        // SAFETY: `res_axes` points to a vector handle mlx-c made; it copies the ints.
        crate::error::check(|| unsafe {
            sys::mlx_vector_int_set_data(res_axes, raw_axes.as_mut_ptr(), raw_axes.len())
        })
    })
}

/// Defines an owned handle type for one mlx-c closure kind.
macro_rules! closure_handle {
    ($(#[$doc:meta])* $name:ident, $raw:ty, $free:ident) => {
        $(#[$doc])*
        pub(crate) struct $name<'a> {
            raw: $raw,
            // Set for borrowed closures: the payload must be gone once this handle is.
            guard: Option<Arc<AtomicBool>>,
            _borrow: PhantomData<&'a ()>,
        }

        impl<'a> $name<'a> {
            /// Takes ownership of a handle mlx-c filled (an empty `ctx` means it failed).
            // Not every closure kind is created from Rust or passed back to mlx-c.
            #[allow(dead_code)]
            fn adopt(raw: $raw, guard: Option<Arc<AtomicBool>>) -> Result<Self> {
                let handle = $name { raw, guard, _borrow: PhantomData };
                if handle.raw.ctx.is_null() {
                    return Err(Error::Mlx(take_last_error().unwrap_or_else(|| {
                        concat!("[", stringify!($name), "] mlx-c could not create the closure")
                            .to_string()
                    })));
                }
                Ok(handle)
            }

            #[allow(dead_code)]
            pub(crate) fn as_raw(&self) -> $raw {
                self.raw
            }
        }

        impl Drop for $name<'_> {
            fn drop(&mut self) {
                if !self.raw.ctx.is_null() {
                    // SAFETY: we own this handle and free it once.
                    unsafe { sys::$free(self.raw) };
                }
                if let Some(alive) = &self.guard {
                    if alive.load(Ordering::SeqCst) {
                        // A borrowed closure is still referenced by MLX after its owner went
                        // away: any later call would read freed borrows. Stop here.
                        eprintln!(concat!(
                            "mlx-rs: MLX kept a borrowed ", stringify!($name),
                            " alive past its scope; aborting to avoid a use-after-free"
                        ));
                        std::process::abort();
                    }
                }
            }
        }
    };
}

closure_handle!(
    /// An owned `mlx_closure` (`&[Array] -> Vec<Array>`).
    Closure,
    sys::mlx_closure,
    mlx_closure_free
);
closure_handle!(
    /// An owned `mlx_closure_value_and_grad` (what `mlx_value_and_grad` returns).
    ValueAndGradClosure,
    sys::mlx_closure_value_and_grad,
    mlx_closure_value_and_grad_free
);
closure_handle!(
    /// An owned `mlx_closure_custom` (a custom vjp rule).
    CustomClosure,
    sys::mlx_closure_custom,
    mlx_closure_custom_free
);
closure_handle!(
    /// An owned `mlx_closure_custom_jvp`.
    CustomJvpClosure,
    sys::mlx_closure_custom_jvp,
    mlx_closure_custom_jvp_free
);
closure_handle!(
    /// An owned `mlx_closure_custom_vmap`.
    CustomVmapClosure,
    sys::mlx_closure_custom_vmap,
    mlx_closure_custom_vmap_free
);

impl<'a> Closure<'a> {
    /// A closure borrowing from the caller. Only for mlx-c calls that do not keep it.
    pub(crate) fn borrowed<F>(f: F) -> Result<Closure<'a>>
    where
        F: Fn(&[Array]) -> Result<Vec<Array>> + 'a,
    {
        init();
        let (payload, alive) = new_payload(f);
        // SAFETY: the trampoline and destructor match the payload type; mlx-c owns the
        // payload from here on (it frees it through `drop_payload` even on failure).
        let raw = unsafe {
            sys::mlx_closure_new_func_payload(
                Some(closure_trampoline::<F>),
                payload,
                Some(drop_payload::<F>),
            )
        };
        Closure::adopt(raw, Some(alive))
    }

    /// Wraps the closure an mlx-c transform wrote into `*res` (it shares our payloads).
    pub(crate) fn from_op(op: impl FnOnce(*mut sys::mlx_closure) -> i32) -> Result<Closure<'a>> {
        let mut handle = Closure {
            // SAFETY: an empty handle for mlx-c to fill; freed by the returned value.
            raw: unsafe { sys::mlx_closure_new() },
            guard: None,
            _borrow: PhantomData,
        };
        check_transform(|| op(&mut handle.raw))?;
        Ok(handle)
    }

    /// Calls the closure.
    pub(crate) fn apply(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        self.apply_iter(inputs)
    }

    /// [`apply`](Self::apply) for borrowed arrays (e.g. leaves borrowed from a tree).
    pub(crate) fn apply_iter<'x>(
        &self,
        inputs: impl IntoIterator<Item = &'x Array>,
    ) -> Result<Vec<Array>> {
        let input = VectorArray::from_arrays(inputs);
        let mut out = VectorArray::new();
        // SAFETY: valid closure and vector handles; mlx-c writes the result into `out`.
        check_transform(|| unsafe { sys::mlx_closure_apply(&mut out.0, self.raw, input.0) })?;
        arrays_from_raw(out.0)
    }
}

impl Closure<'static> {
    /// A closure MLX may keep (in graph nodes) and call or free from any thread.
    pub(crate) fn owned<F>(f: F) -> Result<Closure<'static>>
    where
        F: Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
    {
        let mut c = Closure::borrowed(f)?;
        // 'static: nothing to guard; MLX may legitimately keep it.
        c.guard = None;
        Ok(c)
    }
}

impl<'a> ValueAndGradClosure<'a> {
    /// `mlx_value_and_grad(fun, argnums)`; the result shares `fun`'s payload.
    pub(crate) fn new(fun: &Closure<'a>, argnums: &[i32]) -> Result<ValueAndGradClosure<'a>> {
        let mut handle = ValueAndGradClosure {
            // SAFETY: an empty handle for mlx-c to fill; freed by the returned value.
            raw: unsafe { sys::mlx_closure_value_and_grad_new() },
            guard: None,
            _borrow: PhantomData,
        };
        // SAFETY: valid closure handle; `argnums` outlives the call.
        check_transform(|| unsafe {
            sys::mlx_value_and_grad(
                &mut handle.raw,
                fun.as_raw(),
                argnums.as_ptr(),
                argnums.len(),
            )
        })?;
        Ok(handle)
    }

    /// Returns (all outputs, gradients of the first output).
    pub(crate) fn apply(&self, inputs: &[Array]) -> Result<(Vec<Array>, Vec<Array>)> {
        let input = VectorArray::from_arrays(inputs);
        let mut values = VectorArray::new();
        let mut grads = VectorArray::new();
        // SAFETY: valid handles; mlx-c writes both result vectors.
        check_transform(|| unsafe {
            sys::mlx_closure_value_and_grad_apply(&mut values.0, &mut grads.0, self.raw, input.0)
        })?;
        Ok((arrays_from_raw(values.0)?, arrays_from_raw(grads.0)?))
    }
}

impl CustomClosure<'static> {
    /// A custom vjp rule `(primals, cotangents, outputs) -> input cotangents`.
    pub(crate) fn owned<F>(f: F) -> Result<Self>
    where
        F: Fn(&[Array], &[Array], &[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
    {
        init();
        let (payload, _) = new_payload(f);
        // SAFETY: trampoline and destructor match the payload type; mlx-c owns the payload.
        let raw = unsafe {
            sys::mlx_closure_custom_new_func_payload(
                Some(custom_trampoline::<F>),
                payload,
                Some(drop_payload::<F>),
            )
        };
        Self::adopt(raw, None)
    }
}

impl CustomJvpClosure<'static> {
    /// A custom jvp rule `(primals, tangents, argnums) -> output tangents`.
    pub(crate) fn owned<F>(f: F) -> Result<Self>
    where
        F: Fn(&[Array], &[Array], &[i32]) -> Result<Vec<Array>> + Send + Sync + 'static,
    {
        init();
        let (payload, _) = new_payload(f);
        // SAFETY: trampoline and destructor match the payload type; mlx-c owns the payload.
        let raw = unsafe {
            sys::mlx_closure_custom_jvp_new_func_payload(
                Some(custom_jvp_trampoline::<F>),
                payload,
                Some(drop_payload::<F>),
            )
        };
        Self::adopt(raw, None)
    }
}

impl CustomVmapClosure<'static> {
    /// A custom vmap rule `(inputs, in axes) -> (outputs, out axes)`.
    pub(crate) fn owned<F>(f: F) -> Result<Self>
    where
        F: Fn(&[Array], &[Option<i32>]) -> Result<(Vec<Array>, Vec<Option<i32>>)>
            + Send
            + Sync
            + 'static,
    {
        init();
        let (payload, _) = new_payload(f);
        // SAFETY: trampoline and destructor match the payload type; mlx-c owns the payload.
        let raw = unsafe {
            sys::mlx_closure_custom_vmap_new_func_payload(
                Some(custom_vmap_trampoline::<F>),
                payload,
                Some(drop_payload::<F>),
            )
        };
        Self::adopt(raw, None)
    }
}

/// Runs `f` with a fresh borrowed closure handle, for one-shot mlx-c calls.
pub(crate) fn with_closure<'a, F, R>(
    f: F,
    body: impl FnOnce(&Closure<'a>) -> Result<R>,
) -> Result<R>
where
    F: Fn(&[Array]) -> Result<Vec<Array>> + 'a,
{
    let closure = Closure::borrowed(f)?;
    body(&closure)
}

/// Reads a result vector an mlx-c call wrote, for callers outside this module.
pub(crate) fn fill_arrays(
    op: impl FnOnce(*mut sys::mlx_vector_array) -> i32,
) -> Result<Vec<Array>> {
    let mut out = VectorArray::new();
    check_transform(|| op(&mut out.0))?;
    arrays_from_raw(out.0)
}

/// Like [`fill_arrays`] for calls that write two vectors.
pub(crate) fn fill_array_pair(
    op: impl FnOnce(*mut sys::mlx_vector_array, *mut sys::mlx_vector_array) -> i32,
) -> Result<(Vec<Array>, Vec<Array>)> {
    let mut a = VectorArray::new();
    let mut b = VectorArray::new();
    check_transform(|| op(&mut a.0, &mut b.0))?;
    Ok((arrays_from_raw(a.0)?, arrays_from_raw(b.0)?))
}
