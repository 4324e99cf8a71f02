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

/// A batch's tokens and `(offset, length)` pairs; the step's loss and token count.
type Pair = (Array, Array);
type StepFn<O> = fn(&mut (Model, O), &Pair) -> mlx_rs::Result<Pair>;

fn step<O: Optimizer + TreeNode>(
    state: &mut (Model, O),
    batch: &(Array, Array),
) -> mlx_rs::Result<(Array, Array)> {
    let (model, optimizer) = state;
    let loss = |m: &Model, b: &(Array, Array)| default_loss(m, &b.0, &b.1);
    let ((lvalue, toks), grads) = mlx_nn::value_and_grad(loss)(model, batch)?;
    optimizer.update(model, &grads)?;
    Ok((lvalue, toks))
}

/// mlx_lm's compiled training step (`trainer.train`'s `step`, one batch per update): the
/// loss's value and gradient with respect to the trainable parameters, then the optimizer's
/// update, traced once for the model, the optimizer and the batch shapes it sees (MLX
/// retraces for a new batch width, as Python's `mx.compile` does).
pub struct TrainStep<O: Optimizer + TreeNode> {
    compiled: CompiledMut<(Model, O), Pair, Pair, StepFn<O>>,
    /// The model and the optimizer, passed to the compiled step as its state.
    pub state: (Model, O),
}

impl<O: Optimizer + TreeNode> TrainStep<O> {
    /// A step over `model` (whose frozen parameters stay as they are) and `optimizer`, whose
    /// state is created here, before the first trace.
    pub fn new(model: Model, mut optimizer: O) -> Result<TrainStep<O>> {
        optimizer.init(&model).map_err(Error::Run)?;
        Ok(TrainStep {
            compiled: compile_mut(step::<O> as StepFn<O>, None),
            state: (model, optimizer),
        })
    }

    /// One update on `batch`; returns the batch's loss and its number of tokens, evaluated
    /// with the new state (Python: `mx.eval(state, losses, n_tokens)`).
    pub fn step(&mut self, batch: &Batch) -> Result<(f32, i64)> {
        let inputs = (batch.tokens_array()?, batch.lengths_array()?);
        let (loss, toks) = self
            .compiled
            .call(&mut self.state, &inputs)
            .map_err(Error::Run)?;
        mlx_tree::eval((&self.state, &loss, &toks)).map_err(Error::Run)?;
        let loss = loss.item::<f32>().map_err(Error::Run)?;
        let toks = toks.astype(Dtype::Int64).and_then(|t| t.item::<i64>());
        Ok((loss, toks.map_err(Error::Run)?))
    }

    /// How often the step was traced and called.
    pub fn stats(&self) -> CompileStats {
        self.compiled.stats()
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
/// compiled step, as Python's. Returns the loss and the generator, for the next iterator.
pub fn evaluate(
    model: &Model,
    examples: &[super::Example],
    batch_size: usize,
    num_batches: Option<usize>,
    max_seq_length: usize,
    rng: super::RandomState,
) -> Result<(f32, super::RandomState)> {
    let mut batches = super::iterate_batches(examples, batch_size, max_seq_length, false, rng)?;
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
    Ok((loss, batches.into_rng()))
}
