//! Per-coordinate adaptive optimizers without momentum bias correction: RMSprop, Adagrad,
//! AdaDelta and Adamax (Python: `optim.RMSprop`, `optim.Adagrad`, `optim.AdaDelta`,
//! `optim.Adamax`). Each update is written in Python's operation order, and the constants
//! Python derives from its floats (`1 - alpha`, `1 - rho`, `1 - b1`) are computed in f64 and
//! rounded once, so steps are bit-identical to Python's on the same libmlx.

use std::collections::BTreeMap;

use mlx_rs::{ops, Array, Error, Result};
use mlx_tree::TreeNode;

use crate::{
    lr_as, new_state, state_slot, zeros_state, LearningRate, Optimizer, OptimizerState, Schedule,
};

/// `eps > 0` and, where there is one, a decay coefficient `>= 0`, as Python checks them at
/// construction (here at the first `init`/`update`: the builders set them later).
fn check(optimizer: &str, coefficient: Option<(&str, f64)>, eps: f32) -> Result<()> {
    if let Some((name, value)) = coefficient {
        if value < 0.0 {
            return Err(Error::InvalidArgument(format!(
                "{optimizer} {name} should be >=0, {value} was provided instead"
            )));
        }
    }
    if eps <= 0.0 {
        return Err(Error::InvalidArgument(format!(
            "{optimizer} epsilon should be >0, {eps} was provided instead"
        )));
    }
    Ok(())
}

/// RMSprop (Python: `optim.RMSprop(learning_rate, alpha=0.99, eps=1e-8)`).
#[derive(Clone, TreeNode)]
pub struct RMSprop {
    /// The smoothing constant (f64 as Python's float: `1 - alpha` is computed before it meets
    /// an array).
    #[tree(static)]
    pub alpha: f64,
    #[tree(static)]
    pub eps: f32,
    pub state: OptimizerState,
    #[tree(static)]
    schedule: Option<Schedule>,
}

impl RMSprop {
    /// RMSprop with Python's defaults: `RMSprop::new(1e-2).alpha(0.9)`.
    pub fn new(learning_rate: impl Into<LearningRate>) -> RMSprop {
        let (state, schedule) = new_state(&learning_rate.into());
        RMSprop {
            alpha: 0.99,
            eps: 1e-8,
            state,
            schedule,
        }
    }

    builder! {
        /// The smoothing constant (Python: `alpha=0.99`).
        alpha: f64,
        /// The term added to the denominator (Python: `eps=1e-8`).
        eps: f32,
    }
}

impl Optimizer for RMSprop {
    state_access!();

    fn init_single(&self, parameter: &Array) -> Result<BTreeMap<String, Array>> {
        check("RMSprop", Some(("alpha", self.alpha)), self.eps)?;
        zeros_state(parameter, &["v"])
    }

    fn apply_single(
        &self,
        gradient: &Array,
        parameter: &Array,
        state: &mut BTreeMap<String, Array>,
        lr: &Array,
        _step: &Array,
    ) -> Result<Array> {
        check("RMSprop", Some(("alpha", self.alpha)), self.eps)?;
        let lr = lr_as(lr, gradient)?;
        let v = state_slot(state, "v", "RMSprop")? * self.alpha as f32
            + ops::square(gradient)? * (1.0 - self.alpha) as f32;
        state.insert("v".into(), v.clone());
        Ok(parameter - &(&(&lr * gradient) / &(ops::sqrt(&v)? + self.eps)))
    }
}

/// Adagrad (Python: `optim.Adagrad(learning_rate, eps=1e-8)`).
#[derive(Clone, TreeNode)]
pub struct Adagrad {
    #[tree(static)]
    pub eps: f32,
    pub state: OptimizerState,
    #[tree(static)]
    schedule: Option<Schedule>,
}

impl Adagrad {
    /// Adagrad with Python's defaults: `Adagrad::new(1e-2).eps(1e-6)`.
    pub fn new(learning_rate: impl Into<LearningRate>) -> Adagrad {
        let (state, schedule) = new_state(&learning_rate.into());
        Adagrad {
            eps: 1e-8,
            state,
            schedule,
        }
    }

    builder! {
        /// The term added to the denominator (Python: `eps=1e-8`).
        eps: f32,
    }
}

impl Optimizer for Adagrad {
    state_access!();

    fn init_single(&self, parameter: &Array) -> Result<BTreeMap<String, Array>> {
        check("Adagrad", None, self.eps)?;
        zeros_state(parameter, &["v"])
    }

    fn apply_single(
        &self,
        gradient: &Array,
        parameter: &Array,
        state: &mut BTreeMap<String, Array>,
        lr: &Array,
        _step: &Array,
    ) -> Result<Array> {
        check("Adagrad", None, self.eps)?;
        let lr = lr_as(lr, gradient)?;
        let v = state_slot(state, "v", "Adagrad")? + ops::square(gradient)?;
        state.insert("v".into(), v.clone());
        Ok(parameter - &(&(&lr * gradient) / &(ops::sqrt(&v)? + self.eps)))
    }
}

/// AdaDelta (Python: `optim.AdaDelta(learning_rate, rho=0.9, eps=1e-6)`).
#[derive(Clone, TreeNode)]
pub struct AdaDelta {
    /// The decay of the running averages (f64 as Python's float: `1 - rho`).
    #[tree(static)]
    pub rho: f64,
    #[tree(static)]
    pub eps: f32,
    pub state: OptimizerState,
    #[tree(static)]
    schedule: Option<Schedule>,
}

impl AdaDelta {
    /// AdaDelta with Python's defaults: `AdaDelta::new(1.0).rho(0.95)`.
    pub fn new(learning_rate: impl Into<LearningRate>) -> AdaDelta {
        let (state, schedule) = new_state(&learning_rate.into());
        AdaDelta {
            rho: 0.9,
            eps: 1e-6,
            state,
            schedule,
        }
    }

    builder! {
        /// The decay of the running averages (Python: `rho=0.9`).
        rho: f64,
        /// The term added inside the square roots (Python: `eps=1e-6`).
        eps: f32,
    }
}

impl Optimizer for AdaDelta {
    state_access!();

    fn init_single(&self, parameter: &Array) -> Result<BTreeMap<String, Array>> {
        check("AdaDelta", Some(("rho", self.rho)), self.eps)?;
        zeros_state(parameter, &["v", "u"])
    }

    fn apply_single(
        &self,
        gradient: &Array,
        parameter: &Array,
        state: &mut BTreeMap<String, Array>,
        lr: &Array,
        _step: &Array,
    ) -> Result<Array> {
        check("AdaDelta", Some(("rho", self.rho)), self.eps)?;
        let lr = lr_as(lr, gradient)?;
        let (rho, keep) = (self.rho as f32, (1.0 - self.rho) as f32);
        let v = state_slot(state, "v", "AdaDelta")? * rho + ops::square(gradient)? * keep;
        let u = state_slot(state, "u", "AdaDelta")?;
        let d = &(&ops::sqrt(&(&u + self.eps))? / &ops::sqrt(&(&v + self.eps))?) * gradient;
        let u = &u * rho + ops::square(&d)? * keep;
        state.insert("v".into(), v);
        state.insert("u".into(), u);
        Ok(parameter - &(&lr * &d))
    }
}

/// Adamax (Python: `optim.Adamax(learning_rate, betas=[0.9, 0.999], eps=1e-8)`).
#[derive(Clone, TreeNode)]
pub struct Adamax {
    #[tree(static)]
    pub betas: (f64, f64),
    #[tree(static)]
    pub eps: f32,
    pub state: OptimizerState,
    #[tree(static)]
    schedule: Option<Schedule>,
}

impl Adamax {
    /// Adamax with Python's defaults: `Adamax::new(2e-3).betas(0.9, 0.99)`.
    pub fn new(learning_rate: impl Into<LearningRate>) -> Adamax {
        let (state, schedule) = new_state(&learning_rate.into());
        Adamax {
            betas: (0.9, 0.999),
            eps: 1e-8,
            state,
            schedule,
        }
    }

    betas_setter!();

    builder! {
        /// The term added to the denominator (Python: `eps=1e-8`).
        eps: f32,
    }
}

impl Optimizer for Adamax {
    state_access!();

    fn init_single(&self, parameter: &Array) -> Result<BTreeMap<String, Array>> {
        zeros_state(parameter, &["m", "v"])
    }

    fn apply_single(
        &self,
        gradient: &Array,
        parameter: &Array,
        state: &mut BTreeMap<String, Array>,
        lr: &Array,
        _step: &Array,
    ) -> Result<Array> {
        let lr = lr_as(lr, gradient)?;
        let (b1, b2) = self.betas;
        let m = state_slot(state, "m", "Adamax")? * b1 as f32 + gradient * (1.0 - b1) as f32;
        let v = ops::maximum(
            &(state_slot(state, "v", "Adamax")? * b2 as f32),
            &ops::abs(gradient)?,
        )?;
        state.insert("m".into(), m.clone());
        state.insert("v".into(), v.clone());
        Ok(parameter - &(&(&lr * &m) / &(&v + self.eps)))
    }
}
