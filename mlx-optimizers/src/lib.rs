//! Optimizers and learning-rate schedules for MLX in Rust (Python: `mlx.optimizers`).
//!
//! An optimizer is a tree too: its hyperparameters are static data and its [`OptimizerState`]
//! (`step`, `learning_rate`, and per-parameter arrays such as Adam's `m` and `v`, keyed by the
//! parameter's path) holds the leaves. So a whole training step — forward, `value_and_grad`,
//! `optimizer.update` — compiles with the model and the optimizer passed mutably.
//!
//! ```
//! use mlx_nn::{value_and_grad, Forward, Linear};
//! use mlx_optimizers::{Adam, Optimizer};
//! use mlx_rs::{ops, Array};
//!
//! let mut model = Linear::new(4, 1, true)?;
//! let mut opt = Adam::new(1e-2);
//! // A target far from any initial output: every step moves the output toward it, so the loss
//! // falls whatever the random initial weights are.
//! let (x, y) = (ops::ones(&[8, 4], None)?, ops::ones(&[8, 1], None)? * 10.0);
//! let loss_fn = |m: &Linear, (x, y): &(Array, Array)| {
//!     mlx_nn::losses::mse_loss(&m.forward(x)?, y, None)
//! };
//! let batch = (x, y);
//! let first = loss_fn(&model, &batch)?.item::<f32>()?;
//! let loss_and_grad = value_and_grad(loss_fn);
//! for _ in 0..20 {
//!     let (_, grads) = loss_and_grad(&model, &batch)?;
//!     opt.update(&mut model, &grads)?;
//! }
//! assert!(loss_fn(&model, &batch)?.item::<f32>()? < first);
//! # Ok::<(), mlx_rs::Error>(())
//! ```

// Pure safe Rust over mlx-rs, mlx-tree and mlx-nn: the unsafe code lives in mlx-sys and mlx-rs only.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use mlx_nn::Module;
use mlx_rs::{ops, Array, Error, Result};
use mlx_tree::{tree_assign_leaves, tree_flatten, tree_flatten_with_path, tree_leaves, TreeNode};

mod schedules;
pub use schedules::*;

/// A learning rate: fixed, or a [`Schedule`] evaluated at every update (Python: `float |
/// Callable`).
#[derive(Debug, Clone)]
pub enum LearningRate {
    /// A fixed rate.
    Fixed(f32),
    /// A schedule.
    Schedule(Schedule),
}

impl From<f32> for LearningRate {
    fn from(lr: f32) -> Self {
        LearningRate::Fixed(lr)
    }
}

impl From<Schedule> for LearningRate {
    fn from(s: Schedule) -> Self {
        LearningRate::Schedule(s)
    }
}

/// What [`Optimizer::set_learning_rate`] takes: an `f32` or an array. Not `f64`: Python's
/// float becomes a float32 array, and a float64 one would change the state's dtype (and so
/// trace a compiled step again); a float literal is an `f32` here.
pub trait LearningRateValue {
    /// The learning rate as the state keeps it.
    fn into_array(self) -> Array;
}

impl LearningRateValue for f32 {
    fn into_array(self) -> Array {
        Array::from(self)
    }
}

impl LearningRateValue for Array {
    fn into_array(self) -> Array {
        self
    }
}

/// The state every optimizer keeps (Python: `optimizer.state`): the step count, the current
/// learning rate, and each parameter's arrays under the parameter's path (`layers.0.weight`
/// → `{"m": .., "v": ..}`), so `tree_flatten_with_path` gives Python's state paths under
/// `params.`.
#[derive(Debug, Clone, TreeNode)]
pub struct OptimizerState {
    pub step: Array,
    pub learning_rate: Array,
    pub params: BTreeMap<String, BTreeMap<String, Array>>,
}

impl OptimizerState {
    fn new(lr: &LearningRate) -> Result<OptimizerState> {
        let step = Array::from(0u64);
        let learning_rate = match lr {
            LearningRate::Fixed(v) => Array::from(*v),
            LearningRate::Schedule(s) => s.call(&step)?,
        };
        Ok(OptimizerState {
            step,
            learning_rate,
            params: BTreeMap::new(),
        })
    }
}

/// What an optimizer does per parameter, plus the shared update loop (Python:
/// `mlx.optimizers.Optimizer`).
pub trait Optimizer: TreeNode {
    /// The state.
    fn state(&self) -> &OptimizerState;
    /// The state, mutably.
    fn state_mut(&mut self) -> &mut OptimizerState;
    /// The schedule, if the learning rate has one.
    fn schedule(&self) -> Option<&Schedule>;

    /// The initial per-parameter state (Python: `init_single`).
    fn init_single(&self, parameter: &Array) -> Result<BTreeMap<String, Array>>;

    /// The updated parameter, updating `state` in place (Python: `apply_single`). `lr` and
    /// `step` are the state's learning rate and (already incremented) step.
    fn apply_single(
        &self,
        gradient: &Array,
        parameter: &Array,
        state: &mut BTreeMap<String, Array>,
        lr: &Array,
        step: &Array,
    ) -> Result<Array>;

    /// The current learning rate (Python: `optimizer.learning_rate`).
    fn learning_rate(&self) -> &Array {
        &self.state().learning_rate
    }

    /// The number of updates made (Python: `optimizer.step`).
    fn step(&self) -> &Array {
        &self.state().step
    }

    /// Sets the learning rate (Python: `optimizer.learning_rate = lr`): an `f32` (float32, what
    /// `mx.array` makes of Python's float) or a floating-point scalar array. It is kept as an
    /// array in the state, so a compiled step that holds the optimizer as state reads the new
    /// value without tracing again (a new dtype would). With a schedule, the next update sets
    /// it from the schedule again, as in Python.
    ///
    /// ```
    /// use mlx_optimizers::{Optimizer, SGD};
    /// let mut opt = SGD::new(0.1);
    /// opt.set_learning_rate(0.01)?;
    /// assert_eq!(opt.learning_rate().item::<f32>()?, 0.01);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    fn set_learning_rate(&mut self, lr: impl LearningRateValue) -> Result<()> {
        let lr = lr.into_array();
        if lr.ndim() != 0 || !lr.dtype().is_floating() {
            return Err(Error::InvalidArgument(format!(
                "[learning_rate] a learning rate is a floating-point scalar, got shape {:?} {:?}",
                lr.shape(),
                lr.dtype()
            )));
        }
        self.state_mut().learning_rate = lr;
        Ok(())
    }

    /// The parameters after one update with `gradients`, `parameters` left as they were
    /// (Python: `optimizer.apply_gradients(gradients, parameters)`); the optimizer's state
    /// advances as in [`update`](Self::update).
    fn apply_gradients<M: Module + Clone>(&mut self, gradients: &M, parameters: &M) -> Result<M> {
        let mut updated = parameters.clone();
        self.update(&mut updated, gradients)?;
        Ok(updated)
    }

    /// Creates the state of every trainable parameter of `model` that has none yet (Python:
    /// `optimizer.init(model.trainable_parameters())`). Call it before compiling a training
    /// step, so the state's structure does not change inside the compiled function.
    fn init<M: Module>(&mut self, model: &M) -> Result<()> {
        let mask = model.trainable_mask()?;
        for ((path, p), t) in tree_flatten_with_path(model)?.into_iter().zip(mask) {
            if t && !self.state().params.contains_key(&path) {
                let s = self.init_single(p)?;
                self.state_mut().params.insert(path, s);
            }
        }
        Ok(())
    }

    /// Applies `gradients` (a tree of the model's type, e.g. from
    /// [`mlx_nn::value_and_grad`]) to the trainable parameters of `model` (Python:
    /// `optimizer.update(model, gradients)`). Frozen parameters are left unchanged.
    fn update<M: Module>(&mut self, model: &mut M, gradients: &M) -> Result<()> {
        self.init(model)?;
        let UpdateInputs {
            mask,
            grads,
            params,
            paths,
        } = update_inputs(model, gradients)?;
        let (lr, step) = advance_step(self)?;
        let mut new = Vec::with_capacity(params.len());
        let mut states = std::mem::take(&mut self.state_mut().params);
        for (i, p) in params.iter().enumerate() {
            if !mask[i] {
                new.push((*p).clone());
                continue;
            }
            let st = states
                .get_mut(&paths[i])
                .ok_or_else(|| Error::InvalidArgument(format!("no state for `{}`", paths[i])))?;
            new.push(self.apply_single(grads[i], p, st, &lr, &step)?);
        }
        self.state_mut().params = states;
        tree_assign_leaves(model, new)
    }
}

/// What an update reads, per parameter in flatten order: whether it is trainable, its
/// gradient, its value and its path.
pub(crate) struct UpdateInputs<'m> {
    pub(crate) mask: Vec<bool>,
    pub(crate) grads: Vec<&'m Array>,
    pub(crate) params: Vec<&'m Array>,
    pub(crate) paths: Vec<String>,
}

/// [`UpdateInputs`] of `model` and its `gradients`, which must have one gradient per parameter.
pub(crate) fn update_inputs<'m, M: Module>(
    model: &'m M,
    gradients: &'m M,
) -> Result<UpdateInputs<'m>> {
    let mask = model.trainable_mask()?;
    let grads = tree_leaves(gradients);
    let (params, _) = tree_flatten(model)?;
    if grads.len() != params.len() || mask.len() != params.len() {
        return Err(Error::InvalidArgument(format!(
            "[update] {} gradients for {} parameters",
            grads.len(),
            params.len()
        )));
    }
    let paths = model
        .named_parameters()?
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    Ok(UpdateInputs {
        mask,
        grads,
        params,
        paths,
    })
}

/// The start of one optimizer's update (Python: `apply_gradients`): the learning rate from
/// the schedule at the old step, then the step advanced. Returns both, for `apply_single`.
pub(crate) fn advance_step<O: Optimizer>(opt: &mut O) -> Result<(Array, Array)> {
    if let Some(s) = opt.schedule() {
        let lr = s.call(&opt.state().step)?;
        opt.state_mut().learning_rate = lr;
    }
    let step = &opt.state().step + 1i64;
    opt.state_mut().step = step.clone();
    Ok((opt.state().learning_rate.clone(), step))
}

fn lr_as(lr: &Array, like: &Array) -> Result<Array> {
    lr.astype(like.dtype())
}

/// Builder setters, one per Python keyword argument, named as in Python.
macro_rules! builder {
    ($($(#[$doc:meta])* $name:ident: $ty:ty,)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $name: $ty) -> Self {
            self.$name = $name;
            self
        }
    )*};
}

/// `.betas(b1, b2)` (Python: `betas=[b1, b2]`).
macro_rules! betas_setter {
    () => {
        /// The coefficients of the running averages (Python: `betas=[b1, b2]`).
        pub fn betas(mut self, b1: f64, b2: f64) -> Self {
            self.betas = (b1, b2);
            self
        }
    };
}

macro_rules! state_access {
    () => {
        fn state(&self) -> &OptimizerState {
            &self.state
        }
        fn state_mut(&mut self) -> &mut OptimizerState {
            &mut self.state
        }
        fn schedule(&self) -> Option<&Schedule> {
            self.schedule.as_ref()
        }
    };
}

// After the macros above, which it uses.
mod adaptive;
pub use adaptive::{AdaDelta, Adagrad, Adamax, RMSprop};
mod factored;
pub use factored::Adafactor;
mod muon;
pub use muon::Muon;
mod multi;
pub use multi::{AnyOptimizer, FilterFn, MultiOptimizer, Predicate};

fn new_state(lr: &LearningRate) -> (OptimizerState, Option<Schedule>) {
    let schedule = match lr {
        LearningRate::Schedule(s) => Some(s.clone()),
        LearningRate::Fixed(_) => None,
    };
    // A fixed rate or a schedule at step 0: both are plain scalar computations.
    let state = OptimizerState::new(lr).unwrap_or_else(|_| OptimizerState {
        step: Array::from(0u64),
        learning_rate: Array::from(0.0f32),
        params: BTreeMap::new(),
    });
    (state, schedule)
}

// ---------------------------------------------------------------------------------------------
// SGD

/// Stochastic gradient descent with optional momentum, dampening, Nesterov momentum and weight
/// decay (Python: `optim.SGD(learning_rate, momentum=0.0, weight_decay=0.0, dampening=0.0,
/// nesterov=False)`).
#[derive(Clone, TreeNode)]
pub struct SGD {
    #[tree(static)]
    pub momentum: f32,
    #[tree(static)]
    pub weight_decay: f32,
    #[tree(static)]
    pub dampening: f64,
    #[tree(static)]
    pub nesterov: bool,
    pub state: OptimizerState,
    /// The learning-rate schedule: static data, so it is part of the structure.
    #[tree(static)]
    schedule: Option<Schedule>,
}

impl SGD {
    /// SGD with Python's defaults (no momentum, weight decay or dampening); set the others
    /// with the builder methods: `SGD::new(0.1).momentum(0.9).nesterov(true)`.
    pub fn new(learning_rate: impl Into<LearningRate>) -> SGD {
        let (state, schedule) = new_state(&learning_rate.into());
        SGD {
            momentum: 0.0,
            weight_decay: 0.0,
            dampening: 0.0,
            nesterov: false,
            state,
            schedule,
        }
    }

    builder! {
        /// The momentum strength (Python: `momentum=0.0`).
        momentum: f32,
        /// The L2 penalty added to the gradient (Python: `weight_decay=0.0`).
        weight_decay: f32,
        /// Dampening of the momentum (Python: `dampening=0.0`; f64 as Python's float, since
        /// `1 - dampening` is computed before it meets an array).
        dampening: f64,
        /// Nesterov momentum (Python: `nesterov=False`); needs a momentum and no dampening,
        /// checked at the first update, as Python checks it at construction.
        nesterov: bool,
    }

    fn check(&self) -> Result<()> {
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(Error::InvalidArgument(
                "Nesterov momentum requires a momentum and zero dampening.".into(),
            ));
        }
        Ok(())
    }
}

impl Optimizer for SGD {
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
            gradient = &gradient + &(parameter * self.weight_decay);
        }
        let lr = lr_as(lr, &gradient)?;
        if self.momentum <= 0.0 {
            return Ok(parameter - &(&lr * &gradient));
        }
        let mut v = state_slot(state, "v", "SGD")? * self.momentum;
        if self.dampening > 0.0 {
            v = &v + &(&gradient * (1.0 - self.dampening) as f32);
        } else {
            v = &v + &gradient;
        }
        let update = if self.nesterov {
            &gradient + &(&v * self.momentum)
        } else {
            v.clone()
        };
        state.insert("v".into(), v);
        Ok(parameter - &(&lr * &update))
    }
}

// ---------------------------------------------------------------------------------------------
// Adam / AdamW

/// Adam (Python: `optim.Adam(learning_rate, betas=[0.9, 0.999], eps=1e-8,
/// bias_correction=False)`).
#[derive(Clone, TreeNode)]
pub struct Adam {
    #[tree(static)]
    pub betas: (f64, f64),
    #[tree(static)]
    pub eps: f32,
    #[tree(static)]
    pub bias_correction: bool,
    pub state: OptimizerState,
    /// The learning-rate schedule: static data, so it is part of the structure.
    #[tree(static)]
    schedule: Option<Schedule>,
}

impl Adam {
    /// Adam with Python's defaults; change them with the builder methods:
    /// `Adam::new(1e-3).betas(0.9, 0.95)`.
    pub fn new(learning_rate: impl Into<LearningRate>) -> Adam {
        let (state, schedule) = new_state(&learning_rate.into());
        Adam {
            betas: (0.9, 0.999),
            eps: 1e-8,
            bias_correction: false,
            state,
            schedule,
        }
    }

    betas_setter!();

    builder! {
        /// The term added to the denominator (Python: `eps=1e-8`).
        eps: f32,
        /// Bias correction of the moments (Python: `bias_correction=False`).
        bias_correction: bool,
    }
}

/// Per-parameter state: one zero array shaped like `parameter` for each name.
fn zeros_state(parameter: &Array, names: &[&str]) -> Result<BTreeMap<String, Array>> {
    names
        .iter()
        .map(|&n| Ok((n.to_string(), ops::zeros_like(parameter, None)?)))
        .collect()
}

/// One entry of a parameter's state; missing means the state was not made by `init_single`.
fn state_slot(state: &BTreeMap<String, Array>, name: &str, optimizer: &str) -> Result<Array> {
    state
        .get(name)
        .cloned()
        .ok_or_else(|| Error::InvalidArgument(format!("{optimizer} state lacks `{name}`")))
}

#[allow(clippy::too_many_arguments)]
fn adam_apply(
    betas: (f64, f64),
    eps: f32,
    bias_correction: bool,
    gradient: &Array,
    parameter: &Array,
    state: &mut BTreeMap<String, Array>,
    lr: &Array,
    step: &Array,
) -> Result<Array> {
    let lr = lr_as(lr, gradient)?;
    let (b1, b2) = betas;
    // Python: `b1 * m + (1 - b1) * gradient`, with `1 - b1` a Python float: f64, rounded once.
    let m = state_slot(state, "m", "Adam")? * b1 as f32 + gradient * (1.0 - b1) as f32;
    let v =
        state_slot(state, "v", "Adam")? * b2 as f32 + ops::square(gradient)? * (1.0 - b2) as f32;
    state.insert("m".into(), m.clone());
    state.insert("v".into(), v.clone());
    if bias_correction {
        let c1 = (&lr / &(1.0f32 - ops::power(b1 as f32, step)?)).astype(gradient.dtype())?;
        let c2 = ops::rsqrt(&(1.0f32 - ops::power(b2 as f32, step)?))?.astype(gradient.dtype())?;
        let numerator = &c1 * &m;
        let denominator = ops::sqrt(&v)? * &c2 + eps;
        Ok(parameter - &(numerator / denominator))
    } else {
        Ok(parameter - &(&lr * &m / (ops::sqrt(&v)? + eps)))
    }
}

impl Optimizer for Adam {
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
        step: &Array,
    ) -> Result<Array> {
        adam_apply(
            self.betas,
            self.eps,
            self.bias_correction,
            gradient,
            parameter,
            state,
            lr,
            step,
        )
    }
}

/// Adam with decoupled weight decay (Python: `optim.AdamW(learning_rate, betas=[0.9, 0.999],
/// eps=1e-8, weight_decay=0.01, bias_correction=False)`).
#[derive(Clone, TreeNode)]
pub struct AdamW {
    #[tree(static)]
    pub betas: (f64, f64),
    #[tree(static)]
    pub eps: f32,
    #[tree(static)]
    pub weight_decay: f32,
    #[tree(static)]
    pub bias_correction: bool,
    pub state: OptimizerState,
    /// The learning-rate schedule: static data, so it is part of the structure.
    #[tree(static)]
    schedule: Option<Schedule>,
}

impl AdamW {
    /// AdamW with Python's defaults; change them with the builder methods:
    /// `AdamW::new(lr).betas(0.9, 0.95).weight_decay(0.1)`.
    pub fn new(learning_rate: impl Into<LearningRate>) -> AdamW {
        let (state, schedule) = new_state(&learning_rate.into());
        AdamW {
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.01,
            bias_correction: false,
            state,
            schedule,
        }
    }

    betas_setter!();

    builder! {
        /// The term added to the denominator (Python: `eps=1e-8`).
        eps: f32,
        /// The decoupled weight decay (Python: `weight_decay=0.01`).
        weight_decay: f32,
        /// Bias correction of the moments (Python: `bias_correction=False`).
        bias_correction: bool,
    }
}

impl Optimizer for AdamW {
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
        step: &Array,
    ) -> Result<Array> {
        let lr_g = lr_as(lr, gradient)?;
        let decayed = parameter * &(1.0f32 - &(&lr_g * self.weight_decay));
        adam_apply(
            self.betas,
            self.eps,
            self.bias_correction,
            gradient,
            &decayed,
            state,
            lr,
            step,
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Lion

/// Lion (Python: `optim.Lion(learning_rate, betas=[0.9, 0.99], weight_decay=0.0)`).
#[derive(Clone, TreeNode)]
pub struct Lion {
    #[tree(static)]
    pub betas: (f64, f64),
    #[tree(static)]
    pub weight_decay: f32,
    pub state: OptimizerState,
    /// The learning-rate schedule: static data, so it is part of the structure.
    #[tree(static)]
    schedule: Option<Schedule>,
}

impl Lion {
    /// Lion with Python's defaults; change them with the builder methods:
    /// `Lion::new(1e-4).weight_decay(0.1)`.
    pub fn new(learning_rate: impl Into<LearningRate>) -> Lion {
        let (state, schedule) = new_state(&learning_rate.into());
        Lion {
            betas: (0.9, 0.99),
            weight_decay: 0.0,
            state,
            schedule,
        }
    }

    betas_setter!();

    builder! {
        /// The decoupled weight decay (Python: `weight_decay=0.0`).
        weight_decay: f32,
    }
}

impl Optimizer for Lion {
    state_access!();

    fn init_single(&self, parameter: &Array) -> Result<BTreeMap<String, Array>> {
        zeros_state(parameter, &["m"])
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
        let m = state_slot(state, "m", "Lion")?;
        // `1 - b1`, `1 - b2`: Python floats, f64 rounded once (as in Adam).
        let c = &m * b1 as f32 + gradient * (1.0 - b1) as f32;
        state.insert("m".into(), &m * b2 as f32 + gradient * (1.0 - b2) as f32);
        let mut parameter = parameter.clone();
        if self.weight_decay > 0.0 {
            parameter = &parameter * &(1.0f32 - &(&lr * self.weight_decay));
        }
        Ok(&parameter - &(&lr * &ops::sign(&c)?))
    }
}

// ---------------------------------------------------------------------------------------------
// Gradient clipping

/// Rescales `grads` so their global L2 norm is at most `max_norm`; returns the clipped tree
/// and the original norm (Python: `optim.clip_grad_norm(grads, max_norm)`).
pub fn clip_grad_norm<T: TreeNode>(grads: &T, max_norm: f32) -> Result<(T, Array)> {
    if max_norm < 0.0 {
        return Err(Error::InvalidArgument(format!(
            "max_norm should be >=0, {max_norm} was provided instead"
        )));
    }
    let mut norm_squared = Array::from(0.0f32);
    for g in tree_leaves(grads) {
        norm_squared = &norm_squared + &ops::square(g)?.sum(None, false)?;
    }
    let total_norm = ops::sqrt(&norm_squared)?;
    let normalizer = ops::minimum(&(max_norm / (&total_norm + 1e-6f32)), 1.0f32)?;
    let clipped = mlx_tree::tree_map(|g| Ok(g * &normalizer), grads)?;
    Ok((clipped, total_norm))
}
