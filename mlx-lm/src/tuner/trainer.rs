//! The training step (Python: `mlx_lm.tuner.trainer`): mlx_lm's loss and its compiled step
//! over the model (frozen base, trainable adapters) and the optimizer's state.

use std::collections::HashMap;
use std::path::Path;

use mlx_nn::losses::{cross_entropy, CrossEntropyOptions};
use mlx_nn::Module;
use mlx_optimizers::Optimizer;
use mlx_rs::{ops, Array, Dtype};
use mlx_tree::{compile_mut, CompileStats, CompiledMut, TreeNode};

use super::Batch;
use crate::blocks::with_layer_checkpoint;
use crate::{Error, Model, Result};

/// mlx_lm's `default_loss(model, batch, lengths)`: the mean cross entropy of each next token
/// over the positions `offset <= step <= length` of each row (the completion, with
/// `mask_prompt`), and the number of those tokens.
pub fn default_loss(
    model: &Model,
    batch: &Array,
    lengths: &Array,
) -> mlx_rs::Result<(Array, Array)> {
    let inputs = batch.index((.., ..-1))?;
    let targets = batch.index((.., 1..))?;
    let logits = model.forward(&inputs, None)?;
    let steps = ops::arange(1, targets.shape()[1] + 1, None, None)?;
    let mask = ops::logical_and(
        &ops::greater_equal(&steps, &lengths.index((.., 0..1))?)?,
        &ops::less_equal(&steps, &lengths.index((.., 1..))?)?,
    )?;
    let ce = ops::multiply(
        &cross_entropy(&logits, &targets, CrossEntropyOptions::default())?,
        &mask,
    )?;
    let ntoks = mask.sum(None, false)?;
    let ce = ops::divide(&ce.astype(Dtype::Float32)?.sum(None, false)?, &ntoks)?;
    Ok((ce, ntoks))
}

/// The step's inputs: a batch's tokens, its `(offset, length)` pairs, and the gradients
/// accumulated so far (of the trainable parameters, in flatten order; empty: none, Python's
/// `prev_grad=None`).
type StepIn = (Array, Array, Vec<Array>);
/// The step's outputs: the batch's loss, its number of tokens, and the accumulated gradients
/// (empty after an update).
type StepOut = (Array, Array, Vec<Array>);
type StepFn<O> = Box<dyn Fn(&mut (Model, O), &StepIn) -> mlx_rs::Result<StepOut>>;

/// mlx_lm's `step(batch, prev_grad, do_update)`: the loss's value and gradient, added to the
/// gradients so far; with `do_update`, their mean over the `accumulation_steps` batches goes
/// to the optimizer.
fn step_fn<O: Optimizer + TreeNode>(do_update: bool, accumulation_steps: usize) -> StepFn<O> {
    Box::new(move |state, (tokens, lengths, prev)| {
        let (model, optimizer) = state;
        let loss = |m: &Model, b: &(Array, Array)| default_loss(m, &b.0, &b.1);
        let ((lvalue, toks), grads) =
            mlx_nn::value_and_grad(loss)(model, &(tokens.clone(), lengths.clone()))?;
        let mask = model.trainable_mask()?;
        let (leaves, def) = mlx_tree::tree_flatten(&grads)?;
        let mut grad: Vec<Array> = leaves
            .iter()
            .zip(&mask)
            .filter(|(_, t)| **t)
            .map(|(g, _)| (*g).clone())
            .collect();
        if !prev.is_empty() {
            if prev.len() != grad.len() {
                return Err(mlx_rs::Error::InvalidArgument(format!(
                    "{} accumulated gradients for {} trainable parameters",
                    prev.len(),
                    grad.len()
                )));
            }
            grad = grad
                .iter()
                .zip(prev)
                .map(|(x, y)| ops::add(x, y))
                .collect::<mlx_rs::Result<_>>()?;
        }
        if !do_update {
            return Ok((lvalue, toks, grad));
        }
        if accumulation_steps > 1 {
            // Python divides by its int: a weak scalar, the gradients keep their dtype.
            let n = accumulation_steps as i32;
            grad = grad
                .iter()
                .map(|g| ops::divide(g, n))
                .collect::<mlx_rs::Result<_>>()?;
        }
        let mut grad = grad.into_iter();
        let full: Vec<Array> = leaves
            .into_iter()
            .zip(&mask)
            .map(|(g, t)| match t {
                true => grad.next().unwrap_or_else(|| g.clone()),
                false => g.clone(),
            })
            .collect();
        let grads: Model = mlx_tree::tree_unflatten(&def, full)?;
        optimizer.update(model, &grads)?;
        Ok((lvalue, toks, Vec::new()))
    })
}

/// mlx_lm's compiled training step (`trainer.train`'s `step`): the loss's value and gradient
/// with respect to the trainable parameters, accumulated over `grad_accumulation_steps`
/// batches, then averaged and given to the optimizer; traced once for the model, the
/// optimizer and each batch shape it sees (MLX retraces for a new batch width, and for the
/// first batch of an accumulation, without gradients so far, as Python's `mx.compile` does).
pub struct TrainStep<O: Optimizer + TreeNode> {
    update: CompiledMut<(Model, O), StepIn, StepOut, StepFn<O>>,
    accumulate: CompiledMut<(Model, O), StepIn, StepOut, StepFn<O>>,
    /// The model and the optimizer, passed to the compiled step as its state.
    pub state: (Model, O),
    grad_accum: Vec<Array>,
    accumulation_steps: usize,
    grad_checkpoint: bool,
    iteration: usize,
}

impl<O: Optimizer + TreeNode> TrainStep<O> {
    /// A step over `model` (whose frozen parameters stay as they are) and `optimizer`, whose
    /// state is created here, before the first trace; one update per batch.
    pub fn new(model: Model, optimizer: O) -> Result<TrainStep<O>> {
        TrainStep::with_options(model, optimizer, 1, false)
    }

    /// As [`new`](Self::new), updating every `grad_accumulation_steps` batches with the
    /// gradients averaged over them (Python: `grad_accumulation_steps`), and with every
    /// layer's call checkpointed when `grad_checkpoint` (Python: `--grad-checkpoint`).
    pub fn with_options(
        model: Model,
        mut optimizer: O,
        grad_accumulation_steps: usize,
        grad_checkpoint: bool,
    ) -> Result<TrainStep<O>> {
        if grad_accumulation_steps < 1 {
            return Err(Error::InvalidArgument(
                "grad_accumulation_steps must be at least 1".into(),
            ));
        }
        optimizer.init(&model).map_err(Error::Run)?;
        Ok(TrainStep {
            update: compile_mut(step_fn::<O>(true, grad_accumulation_steps), None),
            accumulate: compile_mut(step_fn::<O>(false, grad_accumulation_steps), None),
            state: (model, optimizer),
            grad_accum: Vec::new(),
            accumulation_steps: grad_accumulation_steps,
            grad_checkpoint,
            iteration: 0,
        })
    }

    /// One batch: its gradients join the accumulated ones, and every
    /// `grad_accumulation_steps`-th batch updates the model. Returns the batch's loss and its
    /// number of tokens, evaluated with the new state (Python: `mx.eval(state, losses,
    /// n_tokens, grad_accum)`).
    pub fn step(&mut self, batch: &Batch) -> Result<(f32, i64)> {
        self.iteration += 1;
        let do_update = self.iteration % self.accumulation_steps == 0;
        let inputs = (
            batch.tokens_array()?,
            batch.lengths_array()?,
            std::mem::take(&mut self.grad_accum),
        );
        let compiled = if do_update {
            &self.update
        } else {
            &self.accumulate
        };
        let state = &mut self.state;
        let (loss, toks, grads) =
            with_layer_checkpoint(self.grad_checkpoint, || compiled.call(state, &inputs))
                .map_err(Error::Run)?;
        // The order MLX walks the graph in decides how many activations are alive at once.
        // Measured on the CPU (bench/lora/phases.py and examples/lora_phases.rs, a qwen3 of 4
        // layers, LoRA on all, batch 4 x 128): with checkpointed layers, starting from the
        // model's new parameters (Python's `mx.eval(state, ...)` order) or from the loss
        // peaks at 17.1 MB against mlx_lm's 13.9; starting from the optimizer's new state,
        // then the gradients, at 13.9. Without checkpointing the order changes nothing.
        let (model, optimizer) = &self.state;
        mlx_tree::eval((optimizer, model, &grads, &loss, &toks)).map_err(Error::Run)?;
        self.grad_accum = grads;
        let loss = loss.item::<f32>().map_err(Error::Run)?;
        let toks = toks.astype(Dtype::Int64).and_then(|t| t.item::<i64>());
        Ok((loss, toks.map_err(Error::Run)?))
    }

    /// The optimizer's learning rate now (Python: `optimizer.learning_rate.item()`).
    pub fn learning_rate(&self) -> Result<f32> {
        self.state
            .1
            .state()
            .learning_rate
            .item::<f32>()
            .map_err(Error::Run)
    }

    /// How often the step was traced and called (the updating and the accumulating step
    /// together).
    pub fn stats(&self) -> CompileStats {
        let (u, a) = (self.update.stats(), self.accumulate.stats());
        CompileStats {
            calls: u.calls + a.calls,
            traces: u.traces + a.traces,
            cache_hits: u.cache_hits + a.cache_hits,
            signatures: u.signatures + a.signatures,
            retraces: u.retraces.or(a.retraces),
        }
    }
}

/// The trainable parameters by path (Python: `dict(tree_flatten(model.trainable_parameters()))`),
/// what mlx_lm saves as `adapters.safetensors`.
pub fn trainable_parameters(model: &Model) -> Result<HashMap<String, Array>> {
    Ok(model
        .named_trainable_parameters()
        .map_err(Error::Run)?
        .into_iter()
        .collect())
}

/// Saves the trainable parameters as mlx_lm does (`adapters.safetensors`).
pub fn save_adapters(model: &Model, file: impl AsRef<Path>) -> Result<()> {
    let file = file.as_ref();
    let params = trainable_parameters(model)?;
    mlx_rs::io::save_safetensors(file, params.iter(), None).map_err(|source| Error::Mlx {
        path: file.to_path_buf(),
        source,
    })
}

/// mlx_lm's `evaluate`: the mean loss per token over `num_batches` batches of `examples`
/// (all of them for `None`), one pass in the order `rng` draws (`loop=False`), without a
/// compiled step, as Python's. `rng` moves on by that draw: mlx_lm draws from NumPy's global
/// state, so a validation during training moves the state the next epoch's training order
/// comes from; pass the training batches' own ([`BatchIterator::rng_mut`](super::BatchIterator::rng_mut)).
pub fn evaluate(
    model: &Model,
    examples: &[super::Example],
    batch_size: usize,
    num_batches: Option<usize>,
    max_seq_length: usize,
    rng: &mut super::RandomState,
) -> Result<f32> {
    let mut batches =
        super::iterate_batches(examples, batch_size, max_seq_length, false, rng.clone())?;
    let mut all_losses = Array::from_scalar(0.0f32);
    let mut ntokens = Array::from_scalar(0i32);
    let mut seen = 0;
    while num_batches.map_or(true, |n| seen < n) {
        let Some(batch) = batches.next() else { break };
        seen += 1;
        let (losses, toks) = default_loss(model, &batch.tokens_array()?, &batch.lengths_array()?)
            .map_err(Error::Run)?;
        all_losses = ops::add(
            &all_losses,
            &ops::multiply(&losses, &toks).map_err(Error::Run)?,
        )
        .map_err(Error::Run)?;
        ntokens = ops::add(&ntokens, &toks).map_err(Error::Run)?;
        mlx_tree::eval((&all_losses, &ntokens)).map_err(Error::Run)?;
    }
    let loss = ops::divide(&all_losses, &ntokens)
        .and_then(|l| l.item::<f32>())
        .map_err(Error::Run)?;
    *rng = batches.into_rng();
    Ok(loss)
}
