//! Running an export directory ([`ExportedModel`]): the `.mlxfn` graphs, the manifest and
//! the weights, without the architecture's Rust code.

use std::path::{Path, PathBuf};

use mlx_rs::export::{import_function, ImportedFunction};
use mlx_rs::{ops, Array};
use mlx_tree::tree_unflatten;

use super::manifest::{Manifest, WeightsMode};
use crate::cache::LayerCache;
use crate::error::{Error, Result};

/// Which exported function to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportedFunction {
    /// `prefill.mlxfn`: a chunk of one of the traced lengths.
    Prefill,
    /// `decode.mlxfn`: one token.
    Decode,
}

/// An export directory loaded for running (Python: `mx.import_function` of its files).
///
/// The MLX 0.32.2 limitation of [`mlx_rs::export`] applies: the results of its calls can only
/// be evaluated on the thread that first used MLX in the process.
pub struct ExportedModel {
    dir: PathBuf,
    manifest: Manifest,
    prefill: ImportedFunction,
    decode: ImportedFunction,
    weights: Vec<Array>,
}

impl std::fmt::Debug for ExportedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportedModel")
            .field("dir", &self.dir)
            .field("model_type", &self.manifest.model_type)
            .finish_non_exhaustive()
    }
}

impl ExportedModel {
    /// Loads `dir`: the manifest (checked), both graphs, and the weights (checked against the
    /// manifest's names, shapes and dtypes).
    pub fn load(dir: impl AsRef<Path>) -> Result<ExportedModel> {
        let dir = dir.as_ref().to_path_buf();
        let manifest = Manifest::read(&dir)?;
        let import = |file: &str| -> Result<ImportedFunction> {
            import_function(dir.join(file))
                .map_err(|e| Error::InvalidArgument(format!("{}: {e}", dir.join(file).display())))
        };
        let prefill = import(&manifest.prefill.file)?;
        let decode = import(&manifest.decode.file)?;
        let weights = match (&manifest.weights, &manifest.weights_file) {
            (WeightsMode::Inputs, Some(file)) => {
                let path = dir.join(file);
                let (mut arrays, _) = mlx_rs::io::load_safetensors(&path)?;
                let first = 1 + manifest.cache_leaves;
                let mut weights = Vec::with_capacity(manifest.weight_inputs().len());
                for (i, spec) in manifest.weight_inputs().iter().enumerate() {
                    let a = arrays.remove(&spec.name).ok_or_else(|| Error::Invalid {
                        path: path.clone(),
                        key: spec.name.clone(),
                        message: "the manifest's weight is missing".into(),
                    })?;
                    spec.check(&a, first + i)?;
                    weights.push(a);
                }
                weights
            }
            _ => Vec::new(),
        };
        Ok(ExportedModel {
            dir,
            manifest,
            prefill,
            decode,
            weights,
        })
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The cache arrays of an empty cache, in the functions' order.
    pub fn new_cache(&self) -> Result<Vec<Array>> {
        self.manifest
            .cache()
            .iter()
            .map(|spec| {
                let shape: Vec<i32> = spec.shape.iter().map(|&d| d as i32).collect();
                let fill = spec.fill.unwrap_or(0.0) as f32;
                Ok(ops::full(&shape, fill, spec.dtype()?)?)
            })
            .collect()
    }

    /// The cache arrays as the crate's cache tree (the manifest's `TreeDef`), e.g. to
    /// continue a generation with the model's own code.
    pub fn cache_tree(&self, cache: Vec<Array>) -> Result<Vec<LayerCache>> {
        Ok(tree_unflatten(&self.manifest.cache_tree, cache)?)
    }

    /// Calls `function` on `inputs` — `tokens`, the cache arrays, then the weights — after
    /// checking their count, shapes and dtypes against the manifest (an error naming the
    /// first input that does not fit); returns `logits` and the new cache arrays.
    pub fn call(&self, function: ExportedFunction, inputs: &[Array]) -> Result<Vec<Array>> {
        let specs = &self.manifest.inputs;
        if inputs.len() != specs.len() {
            return Err(Error::InvalidArgument(format!(
                "exported model: {} inputs given, the functions take {} (tokens, {} cache \
                 arrays, {} weights)",
                inputs.len(),
                specs.len(),
                self.manifest.cache_leaves,
                self.manifest.weight_inputs().len()
            )));
        }
        for (i, (a, spec)) in inputs.iter().zip(specs).enumerate() {
            spec.check(a, i)?;
        }
        let length = inputs[0].shape()[1] as usize;
        let (fun, spec) = match function {
            ExportedFunction::Prefill => (&self.prefill, &self.manifest.prefill),
            ExportedFunction::Decode => (&self.decode, &self.manifest.decode),
        };
        if !spec.lengths.contains(&length) {
            return Err(Error::InvalidArgument(format!(
                "exported model: {} was traced for {:?} tokens, not {length}",
                spec.file, spec.lengths
            )));
        }
        Ok(fun.call(inputs)?)
    }

    /// One step: `tokens` (a traced length: one, or a prefill length) after what `cache`
    /// holds; returns the last position's logits `[1, vocab]` and the new cache.
    pub fn step(&self, tokens: &[u32], cache: Vec<Array>) -> Result<(Array, Vec<Array>)> {
        let function = if tokens.len() == 1 {
            ExportedFunction::Decode
        } else {
            ExportedFunction::Prefill
        };
        let mut inputs = Vec::with_capacity(self.manifest.inputs.len());
        inputs.push(Array::from_slice(tokens, &[1, tokens.len() as i32])?);
        inputs.extend(cache);
        inputs.extend(self.weights.iter().cloned());
        let mut out = self.call(function, &inputs)?.into_iter();
        let logits = out
            .next()
            .ok_or_else(|| Error::InvalidArgument("exported model: no outputs".into()))?;
        Ok((logits, out.collect()))
    }

    /// The chunks a prompt of `n` tokens is fed in: the largest traced length that fits
    /// first, single tokens through the decode step last.
    pub fn chunks(&self, mut n: usize) -> Vec<usize> {
        let mut lengths = self.manifest.prefill.lengths.clone();
        lengths.sort_unstable_by(|a, b| b.cmp(a));
        let mut chunks = Vec::new();
        for l in lengths {
            while n >= l {
                chunks.push(l);
                n -= l;
            }
        }
        chunks.extend(std::iter::repeat(1).take(n));
        chunks
    }

    /// Greedy generation (Python: `generate_step` with the default sampler): all prompt
    /// tokens but the last in [`chunks`](Self::chunks), then one token at a time, the next
    /// token the argmax of the log-probabilities, as [`generate_step`](crate::generate_step)
    /// takes it. Stops after `max_tokens` or at a token of `stop_tokens` (not included).
    pub fn generate_greedy(
        &self,
        prompt: &[u32],
        max_tokens: usize,
        stop_tokens: &[u32],
    ) -> Result<Vec<u32>> {
        let vocab = self.manifest.vocab_size;
        crate::generate::check_prompt(prompt, vocab)?;
        // The last generated token is never fed back.
        let needed = prompt.len() + max_tokens.saturating_sub(1);
        if needed > self.manifest.max_positions {
            return Err(Error::InvalidArgument(format!(
                "a prompt of {} tokens and {max_tokens} new ones need {needed} positions; the \
                 model was exported for {}",
                prompt.len(),
                self.manifest.max_positions
            )));
        }
        let mut cache = self.new_cache()?;
        let (head, tail) = prompt.split_at(prompt.len() - 1);
        let mut at = 0;
        for n in self.chunks(head.len()) {
            cache = self.step(&head[at..at + n], cache)?.1;
            at += n;
            mlx_rs::eval(&cache)?;
        }
        let mut tokens = Vec::new();
        let mut next = tail[0];
        while tokens.len() < max_tokens {
            let (logits, new_cache) = self.step(&[next], cache)?;
            cache = new_cache;
            let logprobs = ops::subtract(&logits, &ops::logsumexp(&logits, None, true)?)?;
            next = ops::argmax(&logprobs, -1, false)?.item::<u32>()?;
            if stop_tokens.contains(&next) {
                break;
            }
            tokens.push(next);
        }
        Ok(tokens)
    }
}
