//! MultiOptimizer (Python: `optim.MultiOptimizer`): different optimizers for different
//! parameters, chosen by predicates over each parameter's path.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use mlx_nn::Module;
use mlx_rs::{Array, Error, Result};
use mlx_tree::serde_json::Value as Json;
use mlx_tree::{tree_assign_leaves, StaticData, TreeNode};

use crate::{
    advance_step, update_inputs, AdaDelta, Adafactor, Adagrad, Adam, AdamW, Adamax, Lion, Muon,
    Optimizer, OptimizerState, RMSprop, Schedule, UpdateInputs, SGD,
};

/// A boxed predicate over `(path, array)`, as [`MultiOptimizer::new`] takes them (Python: a
/// `Callable[[str, array], bool]`).
pub type FilterFn = Box<Predicate>;

/// The predicate behind a [`FilterFn`].
pub type Predicate = dyn Fn(&str, &Array) -> bool + Send + Sync;

/// One predicate of a [`MultiOptimizer`], held as static tree data: two filters are the same
/// structure exactly when they are the same closure (a compiled step retraces for another).
#[derive(Clone)]
struct Filter(Arc<Predicate>);

impl Filter {
    /// The closure's address: a closure has no other identity to compare.
    fn address(&self) -> usize {
        Arc::as_ptr(&self.0) as *const () as usize
    }
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Filter({:#x})", self.address())
    }
}

impl StaticData for Filter {
    fn static_eq(&self, other: &Self) -> bool {
        self.address() == other.address()
    }

    fn static_hash<H: Hasher>(&self, state: &mut H) {
        self.address().hash(state);
    }

    fn to_json(&self) -> Result<Json> {
        Err(Error::InvalidArgument(
            "a MultiOptimizer filter is a closure and cannot be written".into(),
        ))
    }

    fn from_json(json: &Json) -> Result<Self> {
        Err(Error::InvalidArgument(format!(
            "static data {json} cannot be read back as a MultiOptimizer filter (a closure)"
        )))
    }
}

/// Delegates to each of `optimizers` the parameters its filter accepts (Python:
/// `optim.MultiOptimizer(optimizers, filters=[])`).
///
/// Python's filters are callables `fn(path, array) -> bool`; here they are boxed closures
/// `Fn(&str, &Array) -> bool` ([`FilterFn`]), given the same arguments: the parameter's
/// dotted path (`layers.0.weight`, as `tree_flatten` names it) and, as in Python, its gradient
/// when updating (its value in [`init`](MultiOptimizer::init)). A parameter goes to the first
/// optimizer whose filter accepts it; the last optimizer has no filter and takes the rest.
///
/// Each optimizer keeps its own state, step and learning rate, and every update steps all of
/// them, whether or not they got parameters, as Python does. Python's
/// `multi.state["states"]` is [`states`](MultiOptimizer::states) here, and
/// `multi.learning_rate` is [`learning_rate`](MultiOptimizer::learning_rate) (the first
/// optimizer's).
///
/// `optimizers` holds [`AnyOptimizer`] by default, which every optimizer of this crate
/// converts into; `MultiOptimizer<O>` takes any other [`Optimizer`] type `O`, such as an enum
/// of your own. A `MultiOptimizer` is a tree (the optimizers' states are its leaves, the
/// filters static data), so a training step compiles with it as with any optimizer.
///
/// ```
/// use mlx_nn::{value_and_grad, Forward, Linear};
/// use mlx_optimizers::{AdamW, FilterFn, MultiOptimizer, Muon};
/// use mlx_rs::{ops, Array};
///
/// let mut model = Linear::new(4, 2, true)?;
/// // Muon for matrices, AdamW for the rest (the bias).
/// let matrices: FilterFn = Box::new(|_path, g| g.ndim() >= 2);
/// let mut opt = MultiOptimizer::new(
///     vec![Muon::new(0.02).into(), AdamW::new(1e-2).into()],
///     vec![matrices],
/// )?;
/// let batch = (ops::ones(&[8, 4], None)?, ops::ones(&[8, 2], None)?);
/// let loss = |m: &Linear, (x, y): &(Array, Array)| mlx_nn::losses::mse_loss(&m.forward(x)?, y, None);
/// let (_, grads) = value_and_grad(loss)(&model, &batch)?;
/// opt.update(&mut model, &grads)?;
/// let [muon, adamw] = &opt.states()[..] else { unreachable!() };
/// assert!(muon.params.contains_key("weight") && adamw.params.contains_key("bias"));
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Clone, TreeNode)]
pub struct MultiOptimizer<O = AnyOptimizer> {
    /// The optimizers, in order; the last is the fallback.
    pub optimizers: Vec<O>,
    #[tree(static)]
    filters: Vec<Filter>,
}

impl MultiOptimizer {
    /// Optimizers of any kinds of this crate (each converts with `.into()`), and one filter
    /// for each but the last (Python raises `ValueError` otherwise).
    pub fn new(optimizers: Vec<AnyOptimizer>, filters: Vec<FilterFn>) -> Result<Self> {
        Self::with_optimizers(optimizers, filters)
    }
}

impl<O: Optimizer> MultiOptimizer<O> {
    /// [`new`](MultiOptimizer::new) for optimizers of another type `O` (all of one type, such
    /// as an enum of your own).
    pub fn with_optimizers(optimizers: Vec<O>, filters: Vec<FilterFn>) -> Result<Self> {
        let needed = optimizers.len() as i64 - 1;
        if filters.len() as i64 != needed {
            return Err(Error::InvalidArgument(format!(
                "Given {} filters but {needed} needed.",
                filters.len()
            )));
        }
        Ok(MultiOptimizer {
            optimizers,
            filters: filters.into_iter().map(|f| Filter(Arc::from(f))).collect(),
        })
    }

    /// The index of the optimizer `(path, array)` goes to.
    fn choose(&self, path: &str, array: &Array) -> usize {
        self.filters
            .iter()
            .position(|f| (f.0)(path, array))
            .unwrap_or(self.filters.len())
    }

    /// Each optimizer's state (Python: `multi.state["states"]`).
    pub fn states(&self) -> Vec<&OptimizerState> {
        self.optimizers.iter().map(|o| o.state()).collect()
    }

    /// The first optimizer's learning rate (Python: `multi.learning_rate`).
    pub fn learning_rate(&self) -> Result<&Array> {
        self.optimizers
            .first()
            .map(|o| o.learning_rate())
            .ok_or_else(|| Error::InvalidArgument("a MultiOptimizer without optimizers".into()))
    }

    /// Creates, in the optimizer each parameter goes to, the state of every trainable
    /// parameter of `model` that has none yet (Python: `multi.init(parameters)`, filters
    /// called with the parameters).
    pub fn init<M: Module>(&mut self, model: &M) -> Result<()> {
        let trainable = model.named_trainable_parameters()?;
        for (path, p) in trainable {
            let i = self.choose(&path, &p);
            self.init_one(i, path, &p)?;
        }
        Ok(())
    }

    fn init_one(&mut self, i: usize, path: String, parameter: &Array) -> Result<()> {
        let o = self.optimizer_mut(i)?;
        if !o.state().params.contains_key(&path) {
            let s = o.init_single(parameter)?;
            o.state_mut().params.insert(path, s);
        }
        Ok(())
    }

    fn optimizer_mut(&mut self, i: usize) -> Result<&mut O> {
        let n = self.optimizers.len();
        self.optimizers.get_mut(i).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a MultiOptimizer with {n} optimizers and {} filters",
                self.filters.len()
            ))
        })
    }

    /// Applies `gradients` (a tree of the model's type) to the trainable parameters of
    /// `model`, each through the optimizer its filter picks (Python: `multi.update(model,
    /// gradients)`, filters called with the gradients). Frozen parameters are left unchanged.
    pub fn update<M: Module>(&mut self, model: &mut M, gradients: &M) -> Result<()> {
        let UpdateInputs {
            mask,
            grads,
            params,
            paths,
        } = update_inputs(model, gradients)?;
        let owner = (0..params.len())
            .map(|i| mask[i].then(|| self.choose(&paths[i], grads[i])))
            .collect::<Vec<_>>();
        for (i, o) in owner.iter().enumerate() {
            if let Some(o) = *o {
                self.init_one(o, paths[i].clone(), params[i])?;
            }
        }
        let mut new = params.iter().map(|p| (*p).clone()).collect::<Vec<_>>();
        for (k, opt) in self.optimizers.iter_mut().enumerate() {
            // Every optimizer advances, even one that got no parameters, as in Python.
            let (lr, step) = advance_step(opt)?;
            let mut states = std::mem::take(&mut opt.state_mut().params);
            let result = (|| {
                for (i, _) in owner.iter().enumerate().filter(|(_, o)| **o == Some(k)) {
                    let st = states.get_mut(&paths[i]).ok_or_else(|| {
                        Error::InvalidArgument(format!("no state for `{}`", paths[i]))
                    })?;
                    new[i] = opt.apply_single(grads[i], params[i], st, &lr, &step)?;
                }
                Ok::<(), Error>(())
            })();
            opt.state_mut().params = states;
            result?;
        }
        tree_assign_leaves(model, new)
    }
}

/// Any optimizer of this crate, for a [`MultiOptimizer`] of different kinds (Python's list
/// of optimizers); each converts into it with `.into()`.
#[derive(Clone, TreeNode)]
#[allow(clippy::large_enum_variant)]
pub enum AnyOptimizer {
    /// [`SGD`].
    SGD(SGD),
    /// [`Adam`].
    Adam(Adam),
    /// [`AdamW`].
    AdamW(AdamW),
    /// [`Lion`].
    Lion(Lion),
    /// [`RMSprop`].
    RMSprop(RMSprop),
    /// [`Adagrad`].
    Adagrad(Adagrad),
    /// [`AdaDelta`].
    AdaDelta(AdaDelta),
    /// [`Adamax`].
    Adamax(Adamax),
    /// [`Adafactor`].
    Adafactor(Adafactor),
    /// [`Muon`].
    Muon(Muon),
}

macro_rules! any_optimizer {
    ($($name:ident),*) => {
        $(impl From<$name> for AnyOptimizer {
            fn from(o: $name) -> Self {
                AnyOptimizer::$name(o)
            }
        })*

        impl Optimizer for AnyOptimizer {
            fn state(&self) -> &OptimizerState {
                match self { $(AnyOptimizer::$name(o) => o.state(),)* }
            }
            fn state_mut(&mut self) -> &mut OptimizerState {
                match self { $(AnyOptimizer::$name(o) => o.state_mut(),)* }
            }
            fn schedule(&self) -> Option<&Schedule> {
                match self { $(AnyOptimizer::$name(o) => o.schedule(),)* }
            }
            fn init_single(&self, parameter: &Array) -> Result<BTreeMap<String, Array>> {
                match self { $(AnyOptimizer::$name(o) => o.init_single(parameter),)* }
            }
            fn apply_single(
                &self,
                gradient: &Array,
                parameter: &Array,
                state: &mut BTreeMap<String, Array>,
                lr: &Array,
                step: &Array,
            ) -> Result<Array> {
                match self {
                    $(AnyOptimizer::$name(o) => o.apply_single(gradient, parameter, state, lr, step),)*
                }
            }
        }
    };
}

any_optimizer!(SGD, Adam, AdamW, Lion, RMSprop, Adagrad, AdaDelta, Adamax, Adafactor, Muon);
