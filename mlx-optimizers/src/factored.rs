//! Adafactor (Python: `optim.Adafactor`): adaptive steps from a factored second moment, so a
//! matrix keeps one running average per row and one per column instead of one per element.
//!
//! Written in Python's operation order; every constant Python derives from its floats (`eps`,
//! `clip_threshold`, `decay_rate`, `beta_1`, `1 - beta_1`, `-weight_decay`) is computed in f64
//! and rounded to f32 once, so steps are bit-identical to Python's on the same libmlx.

use std::collections::BTreeMap;

use mlx_rs::{ops, Array, Error, Result};
use mlx_tree::TreeNode;

use crate::{new_state, state_slot, LearningRate, Optimizer, OptimizerState, Schedule};

/// Adafactor (Python: `optim.Adafactor(learning_rate=None, eps=(1e-30, 1e-3),
/// clip_threshold=1.0, decay_rate=-0.8, beta_1=None, weight_decay=0.0, scale_parameter=True,
/// relative_step=True, warmup_init=False)`).
///
/// Parameters of two or more dimensions keep the row and column averages of the squared
/// gradient over their last two axes (`exp_avg_sq_row`, `exp_avg_sq_col`); vectors keep a full
/// `exp_avg_sq`; with `beta_1` set, every parameter also keeps `exp_avg`. By default the step
/// size is relative (`min(1e-2, 1/sqrt(step))`) and the learning rate is not used; give one
/// with [`learning_rate`](Adafactor::learning_rate) and `relative_step(false)`.
///
/// ```
/// use mlx_optimizers::{Adafactor, Optimizer};
/// use mlx_rs::{ops, Array};
/// use std::collections::BTreeMap;
///
/// let mut params = BTreeMap::from([("w".to_string(), ops::ones(&[3, 4], None)?)]);
/// let grads = BTreeMap::from([("w".to_string(), ops::ones(&[3, 4], None)?)]);
/// let mut opt = Adafactor::new().learning_rate(0.1).relative_step(false);
/// opt.update(&mut params, &grads)?;
/// let state = &opt.state().params["w"];
/// assert_eq!(state["exp_avg_sq_row"].shape(), &[3]);
/// assert_eq!(state["exp_avg_sq_col"].shape(), &[4]);
/// assert!(params["w"].max(None, false)?.item::<f32>()? < 1.0);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Clone, TreeNode)]
pub struct Adafactor {
    /// `(eps_1, eps_2)`: added to the squared gradient, and the floor of the parameter scale.
    #[tree(static)]
    pub eps: (f64, f64),
    #[tree(static)]
    pub clip_threshold: f64,
    #[tree(static)]
    pub decay_rate: f64,
    /// The first-moment coefficient; `None` keeps no first moment (Python: `beta_1=None`).
    #[tree(static)]
    pub beta_1: Option<f64>,
    #[tree(static)]
    pub weight_decay: f64,
    #[tree(static)]
    pub scale_parameter: bool,
    #[tree(static)]
    pub relative_step: bool,
    #[tree(static)]
    pub warmup_init: bool,
    /// Python keeps no `learning_rate` in the state when none is given; here the state always
    /// has one (0 then, never read), and this records whether it was given.
    #[tree(static)]
    has_learning_rate: bool,
    /// A fixed learning rate as given, to check its sign without reading an array.
    #[tree(static)]
    fixed_learning_rate: Option<f32>,
    pub state: OptimizerState,
    #[tree(static)]
    schedule: Option<Schedule>,
}

impl Default for Adafactor {
    fn default() -> Self {
        Adafactor::new()
    }
}

impl Adafactor {
    /// Adafactor with Python's defaults (relative step size, no learning rate); change them
    /// with the builder methods: `Adafactor::new().learning_rate(1e-2).relative_step(false)`.
    pub fn new() -> Adafactor {
        let (state, schedule) = new_state(&LearningRate::Fixed(0.0));
        Adafactor {
            eps: (1e-30, 1e-3),
            clip_threshold: 1.0,
            decay_rate: -0.8,
            beta_1: None,
            weight_decay: 0.0,
            scale_parameter: true,
            relative_step: true,
            warmup_init: false,
            has_learning_rate: false,
            fixed_learning_rate: None,
            state,
            schedule,
        }
    }

    /// The learning rate, fixed or a schedule (Python: `learning_rate=None`); used only with
    /// `relative_step(false)`. Resets the state, as a new Python optimizer would start.
    pub fn learning_rate(mut self, learning_rate: impl Into<LearningRate>) -> Self {
        let learning_rate = learning_rate.into();
        self.fixed_learning_rate = match learning_rate {
            LearningRate::Fixed(v) => Some(v),
            LearningRate::Schedule(_) => None,
        };
        let (state, schedule) = new_state(&learning_rate);
        self.state = state;
        self.schedule = schedule;
        self.has_learning_rate = true;
        self
    }

    /// The first-moment coefficient (Python: `beta_1=None`; setting it keeps `exp_avg`).
    pub fn beta_1(mut self, beta_1: f64) -> Self {
        self.beta_1 = Some(beta_1);
        self
    }

    /// `(eps_1, eps_2)` (Python: `eps=(1e-30, 1e-3)`).
    pub fn eps(mut self, eps_1: f64, eps_2: f64) -> Self {
        self.eps = (eps_1, eps_2);
        self
    }

    builder! {
        /// The RMS above which the unscaled update is clipped (Python: `clip_threshold=1.0`).
        clip_threshold: f64,
        /// The exponent of the second moment's decay, `beta_2 = 1 - step^decay_rate`
        /// (Python: `decay_rate=-0.8`).
        decay_rate: f64,
        /// The decoupled weight decay (Python: `weight_decay=0.0`).
        weight_decay: f64,
        /// Scale the step by the parameter's RMS (Python: `scale_parameter=True`).
        scale_parameter: bool,
        /// Use the relative step size instead of the learning rate (Python:
        /// `relative_step=True`).
        relative_step: bool,
        /// Grow the relative step size from `1e-6 * step` (Python: `warmup_init=False`).
        warmup_init: bool,
    }

    /// What Python rejects (a missing learning rate fails there at the first update too),
    /// plus values for which every update is NaN or makes no sense: a negative `eps` (the
    /// square root of a negative second moment), a clip threshold that is not positive, or a
    /// negative fixed learning rate.
    fn check(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::InvalidArgument(format!("Adafactor {msg}")));
        if !self.relative_step && !self.has_learning_rate {
            return bad("needs a learning_rate when relative_step is false".into());
        }
        if let Some(lr) = self.fixed_learning_rate.filter(|lr| *lr < 0.0) {
            return bad(format!(
                "learning_rate should be >=0, {lr} was provided instead"
            ));
        }
        if [self.eps.0, self.eps.1]
            .iter()
            .any(|e| e.is_nan() || *e < 0.0)
        {
            return bad(format!(
                "epsilons should be >=0, {:?} was provided instead",
                self.eps
            ));
        }
        if self.clip_threshold.is_nan() || self.clip_threshold <= 0.0 {
            return bad(format!(
                "clip_threshold should be >0, {} was provided instead",
                self.clip_threshold
            ));
        }
        Ok(())
    }

    fn rms(x: &Array) -> Result<Array> {
        ops::sqrt(&ops::square(x)?.mean(None, false)?)
    }

    /// Python's `_compute_learning_rate`.
    fn step_size(&self, step: &Array, lr: &Array, parameter_rms: &Array) -> Result<Array> {
        let relative = if self.relative_step {
            let rsqrt = ops::rsqrt(step)?;
            if self.warmup_init {
                ops::minimum(&(1e-6f32 * step), &rsqrt)?
            } else {
                ops::minimum(1e-2f32, &rsqrt)?
            }
        } else {
            lr.clone()
        };
        let relative = relative.astype(parameter_rms.dtype())?;
        if self.scale_parameter {
            Ok(ops::maximum(self.eps.1 as f32, parameter_rms)? * &relative)
        } else {
            Ok(1.0f32 * &relative)
        }
    }
}

impl Optimizer for Adafactor {
    state_access!();

    fn init_single(&self, parameter: &Array) -> Result<BTreeMap<String, Array>> {
        self.check()?;
        let mut state = BTreeMap::new();
        let shape = parameter.shape();
        if let [lead @ .., rows, cols] = shape {
            let row_shape = [lead, &[*rows]].concat();
            let col_shape = [lead, &[*cols]].concat();
            let dtype = Some(parameter.dtype());
            state.insert("exp_avg_sq_row".into(), ops::zeros(&row_shape, dtype)?);
            state.insert("exp_avg_sq_col".into(), ops::zeros(&col_shape, dtype)?);
        } else {
            state.insert("exp_avg_sq".into(), ops::zeros_like(parameter, None)?);
        }
        if self.beta_1.is_some() {
            state.insert("exp_avg".into(), ops::zeros_like(parameter, None)?);
        }
        Ok(state)
    }

    fn apply_single(
        &self,
        gradient: &Array,
        parameter: &Array,
        state: &mut BTreeMap<String, Array>,
        lr: &Array,
        step: &Array,
    ) -> Result<Array> {
        self.check()?;
        let factored = gradient.ndim() >= 2;
        let parameter_rms = Self::rms(parameter)?;
        let learning_rate = self.step_size(step, lr, &parameter_rms)?;
        let beta_2 =
            1.0f32 - &ops::power(step, self.decay_rate as f32)?.astype(parameter_rms.dtype())?;
        let keep = 1.0f32 - &beta_2;
        let update = ops::square(gradient)? + self.eps.0 as f32;

        let update = if factored {
            let row = &beta_2 * &state_slot(state, "exp_avg_sq_row", "Adafactor")?
                + &keep * &update.mean(-1, false)?;
            let col = &beta_2 * &state_slot(state, "exp_avg_sq_col", "Adafactor")?
                + &keep * &update.mean(-2, false)?;
            state.insert("exp_avg_sq_row".into(), row.clone());
            state.insert("exp_avg_sq_col".into(), col.clone());
            // Python's `_approximate_exp_moving_avg`.
            let r_factor = ops::rsqrt(&(&row / &row.mean(-1, true)?))?;
            let c_factor = ops::rsqrt(&col)?;
            let approx = ops::expand_dims(&r_factor, -1)? * ops::expand_dims(&c_factor, -2)?;
            approx * gradient
        } else {
            let v = &beta_2 * &state_slot(state, "exp_avg_sq", "Adafactor")? + &keep * &update;
            state.insert("exp_avg_sq".into(), v.clone());
            ops::rsqrt(&v)? * gradient
        };

        let clip = ops::maximum(1.0f32, &(Self::rms(&update)? / self.clip_threshold as f32))?;
        let mut update = &learning_rate * &(&update / &clip);

        if let Some(beta_1) = self.beta_1 {
            let exp_avg = state_slot(state, "exp_avg", "Adafactor")? * beta_1 as f32
                + &update * (1.0 - beta_1) as f32;
            state.insert("exp_avg".into(), exp_avg.clone());
            update = exp_avg;
        }

        let mut parameter = parameter.clone();
        if self.weight_decay != 0.0 {
            let decay = &parameter * &(&learning_rate * (-self.weight_decay) as f32);
            parameter = &parameter + &decay;
        }
        Ok(&parameter - &update)
    }
}
