//! Muon (Python: `optim.Muon`): momentum whose update, for matrices, is orthogonalized by a
//! Newton-Schulz iteration.
//!
//! Written in Python's operation order; the constants Python derives from its floats
//! (`momentum`, `1 - momentum`, `weight_decay`, the iteration's coefficients and the
//! `sqrt(rows / cols)` scale) are computed in f64 and rounded to f32 once, so steps are
//! bit-identical to Python's on the same libmlx.

use std::collections::BTreeMap;

use mlx_rs::{linalg, ops, Array, Error, Result};
use mlx_tree::TreeNode;

use crate::{
    lr_as, new_state, state_slot, zeros_state, LearningRate, Optimizer, OptimizerState, Schedule,
};

/// Muon, MomentUm Orthogonalized by Newton-Schulz (Python: `optim.Muon(learning_rate,
/// momentum=0.95, weight_decay=0.01, nesterov=True, ns_steps=5)`).
///
/// Parameters of two or more dimensions have their update orthogonalized (those of more than
/// two are flattened to `(shape[0], -1)` for it) and scaled by `sqrt(max(1, rows / cols))` of
/// their last two axes; vectors take the plain momentum step. As Python's documentation says,
/// embeddings, output layers and vectors are usually better left to another optimizer: see
/// [`MultiOptimizer`](crate::MultiOptimizer).
///
/// ```
/// use mlx_optimizers::{Muon, Optimizer};
/// use mlx_rs::ops;
/// use std::collections::BTreeMap;
///
/// let mut params = BTreeMap::from([("w".to_string(), ops::zeros(&[4, 4], None)?)]);
/// let grads = BTreeMap::from([("w".to_string(), ops::eye(4, Default::default())?)]);
/// let mut opt = Muon::new(0.1).weight_decay(0.0);
/// opt.update(&mut params, &grads)?;
/// // An orthogonalized update: the identity's direction, its singular values pushed toward 1
/// // (the iteration's fixed band), so each diagonal entry moved by about the learning rate.
/// let w = &params["w"];
/// assert!(w.min(None, false)?.item::<f32>()? < -0.05);
/// assert_eq!(w.max(None, false)?.item::<f32>()?, 0.0);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Clone, TreeNode)]
pub struct Muon {
    #[tree(static)]
    pub momentum: f64,
    #[tree(static)]
    pub weight_decay: f64,
    #[tree(static)]
    pub nesterov: bool,
    #[tree(static)]
    pub ns_steps: usize,
    /// A fixed learning rate as given, to check its sign without reading an array.
    #[tree(static)]
    fixed_learning_rate: Option<f32>,
    pub state: OptimizerState,
    #[tree(static)]
    schedule: Option<Schedule>,
}

/// Python's `(a, b, c) = (3.4445, -4.7750, 2.0315)`: Python floats, rounded once to f32 where
/// they meet an array.
const NEWTON_SCHULZ: (f64, f64, f64) = (3.4445, -4.7750, 2.0315);

impl Muon {
    /// Muon with Python's defaults; change them with the builder methods:
    /// `Muon::new(0.02).nesterov(false).ns_steps(3)`.
    pub fn new(learning_rate: impl Into<LearningRate>) -> Muon {
        let learning_rate = learning_rate.into();
        let fixed_learning_rate = match learning_rate {
            LearningRate::Fixed(v) => Some(v),
            LearningRate::Schedule(_) => None,
        };
        let (state, schedule) = new_state(&learning_rate);
        Muon {
            momentum: 0.95,
            weight_decay: 0.01,
            nesterov: true,
            ns_steps: 5,
            fixed_learning_rate,
            state,
            schedule,
        }
    }

    builder! {
        /// The momentum strength (Python: `momentum=0.95`).
        momentum: f64,
        /// The L2 penalty added to the gradient (Python: `weight_decay=0.01`).
        weight_decay: f64,
        /// Nesterov momentum (Python: `nesterov=True`).
        nesterov: bool,
        /// Newton-Schulz iterations of the orthogonalization (Python: `ns_steps=5`).
        ns_steps: usize,
    }

    /// Python checks nothing; a negative fixed learning rate or a momentum outside `[0, 1]`
    /// only make the steps diverge, so they are refused here at the first update.
    fn check(&self) -> Result<()> {
        if let Some(lr) = self.fixed_learning_rate.filter(|lr| *lr < 0.0) {
            return Err(Error::InvalidArgument(format!(
                "Muon learning_rate should be >=0, {lr} was provided instead"
            )));
        }
        if !(0.0..=1.0).contains(&self.momentum) {
            return Err(Error::InvalidArgument(format!(
                "Muon momentum should be in [0, 1], {} was provided instead",
                self.momentum
            )));
        }
        Ok(())
    }

    /// Python's `_zeropower_via_newtonschulz5` on a matrix.
    fn orthogonalize(&self, x: &Array) -> Result<Array> {
        let (a, b, c) = NEWTON_SCHULZ;
        let shape = x.shape();
        let transpose = shape.len() == 2 && shape[0] > shape[1];
        let mut x = if transpose { x.t()? } else { x.clone() };
        x = &x / &(linalg::norm(&x, None, None, true)? + 1e-7f32);
        for _ in 0..self.ns_steps {
            let xt = x.t()?;
            let gram = ops::matmul(&x, &xt)?;
            let poly = ops::addmm(&(&gram * b as f32), &gram, &gram, c as f32, 1.0)?;
            x = ops::addmm(&(&x * a as f32), &poly, &x, 1.0, 1.0)?;
        }
        if transpose {
            x = x.t()?;
        }
        Ok(x)
    }
}

impl Optimizer for Muon {
    state_access!();

    fn init_single(&self, parameter: &Array) -> Result<BTreeMap<String, Array>> {
        self.check()?;
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
        self.check()?;
        let mut gradient = gradient.clone();
        if self.weight_decay != 0.0 {
            gradient = &gradient + &(parameter * self.weight_decay as f32);
        }
        let (momentum, keep) = (self.momentum as f32, (1.0 - self.momentum) as f32);
        let v = state_slot(state, "v", "Muon")? * momentum + &gradient * keep;
        state.insert("v".into(), v.clone());
        let mut update = if self.nesterov {
            &gradient * keep + &v * momentum
        } else {
            v
        };
        let mut lr = lr_as(lr, &gradient)?;
        let shape = update.shape().to_vec();
        if let [first, .., rows, cols] | [first @ rows, cols] = shape[..] {
            update = if shape.len() > 2 {
                let flat = ops::reshape(&update, &[first, -1])?;
                ops::reshape(&self.orthogonalize(&flat)?, &shape)?
            } else {
                self.orthogonalize(&update)?
            };
            // Python: `max(1, rows / cols) ** 0.5`, in f64 (`powf`, as Python's `**`).
            let ratio = rows as f64 / cols as f64;
            let scale = if ratio > 1.0 { ratio.powf(0.5) } else { 1.0 };
            lr = &lr * scale as f32;
        }
        Ok(parameter - &(&lr * &update))
    }
}
