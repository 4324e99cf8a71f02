//! Models split over the processes of a distributed group (Python: `mlx_lm.utils.sharded_load`
//! and the models' `shard` / `pipeline` methods): tensor parallelism, each process holding a
//! slice of every layer's heads and hidden features ([`LanguageModel::shard`]), and pipeline
//! parallelism, each process holding a run of layers ([`LanguageModel::pipeline`]). Every
//! process computes the same logits and so, sampling alike, generates the same tokens.

use std::path::Path;

use mlx_nn::Forward;
use mlx_rs::distributed::Group;
use mlx_tree::TreeNode;

use crate::blocks::{ChannelMixer, TokenMixer};
use crate::blocks::{DecoderModel, Layer, Stack, StackNames};
use crate::config::ModelConfig;
use crate::error::Result;
use crate::model::{LanguageModel, Model};
use crate::tokenizer::Tokenizer;
use crate::LoadOptions;

/// How a stack of layers splits over a group; the stacks that cannot say so with `None`.
pub trait ParallelStack {
    /// See [`DecoderModel::shard`].
    fn shard_stack(&mut self, group: &Group) -> Option<mlx_rs::Result<()>> {
        let _ = group;
        None
    }

    /// See [`DecoderModel::pipeline`].
    fn pipeline_stack(
        &mut self,
        group: &Group,
        split: Option<&[usize]>,
    ) -> Option<mlx_rs::Result<()>> {
        let _ = (group, split);
        None
    }
}

impl<M: TokenMixer + Clone, C: ChannelMixer + Clone> ParallelStack for DecoderModel<M, C> {
    fn shard_stack(&mut self, group: &Group) -> Option<mlx_rs::Result<()>> {
        Some(self.shard(group))
    }

    fn pipeline_stack(
        &mut self,
        group: &Group,
        split: Option<&[usize]>,
    ) -> Option<mlx_rs::Result<()>> {
        Some(self.pipeline(group, split))
    }
}

// By layers, any stack (mlx_lm's `PipelineMixin` where its models have one); by heads, none
// of the families on these stacks, as in mlx_lm.
impl<L: Layer, N: Forward + TreeNode, K: StackNames> ParallelStack for Stack<L, N, K> {
    fn pipeline_stack(
        &mut self,
        group: &Group,
        split: Option<&[usize]>,
    ) -> Option<mlx_rs::Result<()>> {
        Some(self.pipeline(group, split))
    }
}

/// The error of a model that cannot be split the way asked (`what`: "tensor" or "pipeline"),
/// or whose layers could not be.
pub(crate) fn unsupported(
    what: &str,
    model_type: &str,
    why: Option<mlx_rs::Error>,
) -> mlx_rs::Error {
    // With a reason, the architecture has a split but this model's layers do not allow it
    // (head counts, quantization groups).
    mlx_rs::Error::InvalidArgument(match why {
        Some(e) => format!("model_type {model_type} cannot be split for {what} parallelism: {e}"),
        None => format!("model_type {model_type} does not support {what} parallelism"),
    })
}

/// Splits `stack` over `group` for `what` parallelism, naming `model_type` in an error.
pub(crate) fn split_stack(
    what: &str,
    model_type: &str,
    split: Option<mlx_rs::Result<()>>,
) -> mlx_rs::Result<()> {
    match split {
        Some(Ok(())) => Ok(()),
        Some(Err(e)) => Err(unsupported(what, model_type, Some(e))),
        None => Err(unsupported(what, model_type, None)),
    }
}

/// Loads the model of `dir` and splits it over the groups given (Python:
/// `mlx_lm.utils.sharded_load(repo, pipeline_group, tensor_group)`): by layers over
/// `pipeline_group`, then each layer's heads and hidden features over `tensor_group`. With
/// neither, tensor parallelism over the global group (Python: the same default). The model is
/// split before it is read, as Python's is (`load_model(lazy=True)`): each process reads
/// every tensor it keeps a share of, but holds only its shares ([`eval_shares`]), so a model
/// larger than one process's memory loads over several.
pub fn sharded_load(
    dir: impl AsRef<Path>,
    options: LoadOptions,
    pipeline_group: Option<&Group>,
    tensor_group: Option<&Group>,
) -> Result<(Model, Tokenizer, ModelConfig)> {
    let dir = dir.as_ref();
    let (mut model, config) = crate::load::build_model(dir, options, true)?;
    let tokenizer = crate::load::load_tokenizer(dir, &config)?;
    let global;
    let tensor_group = match (pipeline_group, tensor_group) {
        (None, None) => {
            global = mlx_rs::distributed::init(false, None)?;
            Some(&global)
        }
        (_, t) => t,
    };
    if let Some(group) = pipeline_group {
        model.pipeline(group, None)?;
    }
    if let Some(group) = tensor_group {
        model.shard(group)?;
    }
    eval_shares(&model)?;
    Ok((model, tokenizer, config))
}

/// Evaluates a model split before it was evaluated (Python: `mx.eval(model.parameters())`
/// after `shard`), a few parameters at a time: each whole tensor read or drawn to slice a
/// share from lives only until its share is copied out, so a process holds its shares and at
/// most about `PART_BYTES` of whole tensors besides, not the whole model.
pub fn eval_shares(model: &Model) -> Result<()> {
    const PART_BYTES: usize = 1 << 30;
    let leaves = mlx_tree::tree_leaves(model);
    let mut part = Vec::new();
    let mut bytes = 0;
    for leaf in leaves {
        bytes += leaf.nbytes();
        part.push(leaf.clone());
        if bytes >= PART_BYTES {
            mlx_rs::eval(&part)?;
            part.clear();
            bytes = 0;
        }
    }
    mlx_rs::eval(&part)?;
    Ok(())
}
