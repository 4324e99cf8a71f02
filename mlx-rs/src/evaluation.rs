//! The evaluation pipeline: [`eval`], [`async_eval`] and [`Array::eval`] all come here.
//!
//! One evaluation runs, in order: every registered guard's `before` check, then the guards'
//! `around` wrappers nested in registration order, and inside them MLX's evaluation under
//! the encoding rule of [`encode`] (one thread at a time on a CUDA build). The subsystems
//! whose state can make an evaluation wrong add their guard themselves ([`guard`]): the
//! distributed module (a ring group that lost a peer) and the io module (a lazy read that
//! failed). The messages MLX reports reach their observers through the error handler
//! (`crate::error::observe`), which sits below everything, this pipeline included.

mod encode;
pub(crate) mod guard;

use mlx_sys as sys;

use crate::array::Array;
use crate::error::{check, Result};
use crate::handles::VectorArray;
use guard::Mode;

/// Runs `run`, the evaluation of `targets`, inside every registered guard.
fn guarded(targets: &[&Array], mode: Mode, run: &mut dyn FnMut() -> Result<()>) -> Result<()> {
    let mut i = 0;
    while let Some(g) = guard::get(i) {
        g.before(targets, mode)?;
        i += 1;
    }
    around(0, targets, mode, run)
}

/// The guards from the `index`-th on, nested around `run`.
fn around(
    index: usize,
    targets: &[&Array],
    mode: Mode,
    run: &mut dyn FnMut() -> Result<()>,
) -> Result<()> {
    match guard::get(index) {
        None => run(),
        Some(g) => g.around(targets, mode, &mut || around(index + 1, targets, mode, run)),
    }
}

impl Array {
    /// Computes the array (Python: `mx.eval(a)`); see also [`crate::eval`] for several at once.
    ///
    /// On return the array is *settled*: computed, waited for and detached from its graph, so
    /// later reads of it from any thread only read MLX's shared state (see the type docs).
    pub fn eval(&self) -> Result<()> {
        guarded(&[self], Mode::Wait, &mut || {
            encode::evaluate(
                || {
                    let vec = VectorArray::from_arrays([self]);
                    // SAFETY: valid vector handle.
                    check(|| unsafe { sys::mlx_async_eval(vec.0) })
                },
                // SAFETY: valid handle.
                || check(|| unsafe { sys::mlx_array_eval(self.as_raw()) }),
            )?;
            self.settle()
        })
    }

    /// Moves an evaluated array from MLX's "evaluated" to its "available" state. MLX does that
    /// lazily, writing the array's status and event on the first query; doing it here, on the
    /// thread that owns the graph, keeps those writes off every other thread.
    fn settle(&self) -> Result<()> {
        // SAFETY: valid handle of an evaluated array; waiting returns at once when it is ready.
        check(|| unsafe { sys::_mlx_array_wait(self.as_raw()) })
    }
}

/// Computes several arrays in one graph dispatch (Python: `mx.eval(a, b, ...)`).
pub fn eval<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Result<()> {
    let arrays: Vec<&Array> = arrays.into_iter().collect();
    guarded(&arrays, Mode::Wait, &mut || {
        let vec = VectorArray::from_arrays(arrays.iter().copied());
        encode::evaluate(
            // SAFETY: valid vector handle.
            || check(|| unsafe { sys::mlx_async_eval(vec.0) }),
            // SAFETY: valid vector handle; of arrays already scheduled, `mlx_eval` only waits.
            || check(|| unsafe { sys::mlx_eval(vec.0) }),
        )?;
        // Settled like `Array::eval`, so the results can be sent to other threads.
        arrays.iter().try_for_each(|a| a.settle())
    })
}

/// Starts computing arrays and returns at once (Python: `mx.async_eval`). Reading them later
/// (or [`eval`]) waits for the result.
pub fn async_eval<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Result<()> {
    let arrays: Vec<&Array> = arrays.into_iter().collect();
    guarded(&arrays, Mode::Async, &mut || {
        let vec = VectorArray::from_arrays(arrays.iter().copied());
        // SAFETY: valid vector handle.
        encode::encoding(|| check(|| unsafe { sys::mlx_async_eval(vec.0) }))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use super::guard::{Guard, Mode};
    use super::*;

    /// Records the order its hooks run in, for the evaluations of one marked array only, so
    /// that other tests' evaluations (the list is process-wide) leave no trace.
    struct Probe {
        name: &'static str,
        log: &'static Mutex<Vec<String>>,
        marked: &'static AtomicUsize,
    }

    impl Probe {
        fn mine(&self, targets: &[&Array]) -> bool {
            let id = self.marked.load(Ordering::SeqCst);
            id != 0 && targets.iter().any(|a| a.id().ok() == Some(id))
        }
    }

    impl Guard for Probe {
        fn before(&self, targets: &[&Array], mode: Mode) -> Result<()> {
            if self.mine(targets) {
                self.log
                    .lock()
                    .unwrap()
                    .push(format!("{} before {mode:?}", self.name));
            }
            Ok(())
        }

        fn around(
            &self,
            targets: &[&Array],
            _mode: Mode,
            run: &mut dyn FnMut() -> Result<()>,
        ) -> Result<()> {
            if !self.mine(targets) {
                return run();
            }
            self.log
                .lock()
                .unwrap()
                .push(format!("{} enter", self.name));
            let out = run();
            self.log
                .lock()
                .unwrap()
                .push(format!("{} leave", self.name));
            out
        }
    }

    #[test]
    fn guards_run_once_per_evaluation_in_registration_order() {
        static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
        static MARKED: AtomicUsize = AtomicUsize::new(0);
        static FIRST: Probe = Probe {
            name: "first",
            log: &LOG,
            marked: &MARKED,
        };
        static SECOND: Probe = Probe {
            name: "second",
            log: &LOG,
            marked: &MARKED,
        };
        guard::register(&FIRST);
        guard::register(&SECOND);
        let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let b = crate::ops::add(&a, &a).unwrap();
        MARKED.store(b.id().unwrap(), Ordering::SeqCst);
        let expect = |mode: &str| {
            [
                format!("first before {mode}"),
                format!("second before {mode}"),
                "first enter".into(),
                "second enter".into(),
                "second leave".into(),
                "first leave".into(),
            ]
        };
        async_eval([&b]).unwrap();
        assert_eq!(std::mem::take(&mut *LOG.lock().unwrap()), expect("Async"));
        b.eval().unwrap();
        assert_eq!(std::mem::take(&mut *LOG.lock().unwrap()), expect("Wait"));
        eval([&a, &b]).unwrap();
        assert_eq!(std::mem::take(&mut *LOG.lock().unwrap()), expect("Wait"));
        MARKED.store(0, Ordering::SeqCst);
    }
}
