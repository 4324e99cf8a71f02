//! A layer's weight kept transposed beside it, for a layer applied many times unchanged.
//!
//! `nn.Linear` computes `x @ W.T`. In MLX the transpose is a view, free on the device, but
//! it is a primitive in every graph that uses the layer, and MLX dispatches each primitive
//! on every evaluation, compiled or not: a Qwen3-0.6B decode step has 197 of them, one per
//! projection. An inference model can evaluate `W.T` once and start its graphs from that
//! view instead.
//!
//! The kept view is tied to the array it was made from, by identity ([`Array::id`]):
//! assigning a new weight to the field, or rebuilding the layer from a tree (as `tree_map`,
//! `update_parameters` and every transform do), makes the layer transpose afresh, so a kept
//! view is never applied with a weight it was not made from. The view shares the weight's
//! memory; keeping it costs no memory while the weight is the same, and the first call that
//! finds a new weight drops it (and with it the old weight).

use std::cell::RefCell;
use std::fmt;

use mlx_rs::{Array, Result};

/// `weight.T`, evaluated, with the weight it was made from; empty by default.
#[derive(Clone, Default)]
pub(crate) struct KeptTranspose(RefCell<Option<(Array, Array)>>);

impl KeptTranspose {
    /// Evaluates `weight.T` (and so `weight`) and keeps it.
    pub(crate) fn of(weight: &Array) -> Result<KeptTranspose> {
        let t = weight.t()?;
        t.eval()?;
        Ok(KeptTranspose(RefCell::new(Some((weight.clone(), t)))))
    }

    /// `weight.T`: the kept view while `weight` is the array it was made from, else a new one.
    pub(crate) fn of_weight(&self, weight: &Array) -> Result<Array> {
        let mut kept = self.0.borrow_mut();
        if let Some((w, t)) = kept.as_ref() {
            if w.id()? == weight.id()? {
                return Ok(t.clone());
            }
            *kept = None;
        }
        weight.t()
    }
}

impl fmt::Debug for KeptTranspose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.borrow().is_some() {
            "Kept"
        } else {
            "None"
        })
    }
}
