//! The stack of the models whose layers are their own (the [`Layer`] trait): embedding,
//! layers, final norm, generic over the layer, the final norm, and the names mlx_lm gives the
//! parts ([`StackNames`]: the parameter paths), with what a family does at the stack's two
//! ends ([`StackEnds`]). [`Backbone`] as the state-space models name it (Python: mamba's,
//! mamba2's and nemotron_h's `...Model`: `embeddings`, `layers`, `norm_f`), [`LayerStack`] as
//! the hybrids and the dense families that name it `model` (`embed_tokens`, `layers`, `norm`).
//! A family whose stack has other parts (GPT-2's `wte`/`wpe`/`h`/`ln_f`) keeps its own struct
//! and computes through [`stack_logits`].

use std::marker::PhantomData;

use mlx_nn::{Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::distributed::Group;
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::{Flattener, StaticData, TreeNode, Unflattener};

use crate::blocks::layer::{embedding_dtype, embedding_vocab_size};
use crate::blocks::pipeline::PipelineStage;
use crate::blocks::{forward_layers, make_layer_caches, Layer, Rows};
use crate::cache::LayerCache;
use crate::checkpoint::Checkpoint;
use crate::kernels::KernelOptions;

/// The names of a stack's parts as mlx_lm's attributes (so the parameter paths), and the
/// stack's name in its tree.
pub trait StackNames: 'static {
    /// The struct's name in the stack's tree.
    const NAME: &'static str;
    /// The token embedding's field.
    const EMBEDDING: &'static str;
    /// The final norm's field.
    const NORM: &'static str;
}

/// mamba's, mamba2's and nemotron_h's `backbone`: `embeddings`, `norm_f`.
#[derive(Debug, Clone, Copy)]
pub enum BackboneNames {}

impl StackNames for BackboneNames {
    const NAME: &'static str = "Backbone";
    const EMBEDDING: &'static str = "embeddings";
    const NORM: &'static str = "norm_f";
}

/// The decoders' `model`: `embed_tokens`, `norm`.
#[derive(Debug, Clone, Copy)]
pub enum DecoderNames {}

impl StackNames for DecoderNames {
    const NAME: &'static str = "LayerStack";
    const EMBEDDING: &'static str = "embed_tokens";
    const NORM: &'static str = "norm";
}

/// Embedding, layers, final norm (RMSNorm unless the family's is another) under the names `K`
/// gives them; the output head (tied to the embedding or not) is the model's, beside it, as
/// mlx_lm's `lm_head`.
#[derive(Debug, Clone)]
pub struct Stack<L, N, K> {
    pub embedding: MaybeQuantizedEmbedding,
    pub layers: Vec<L>,
    pub norm: N,
    /// The custom kernels this model may use.
    pub kernels: KernelOptions,
    /// The family's scale of the embeddings and map of the logits.
    pub ends: StackEnds,
    /// The layers this process runs of a model split over a pipeline
    /// ([`pipeline`](Self::pipeline)); `None`: all of them.
    pub pipeline: Option<PipelineStage>,
    names: PhantomData<K>,
}

/// Python: mamba's, mamba2's and nemotron_h's `backbone`.
pub type Backbone<L> = Stack<L, RMSNorm, BackboneNames>;

/// Python: the `model` of the hybrids and of the dense families whose layers are their own.
pub type LayerStack<L, N = RMSNorm> = Stack<L, N, DecoderNames>;

impl<L: TreeNode, N: TreeNode, K: StackNames> TreeNode for Stack<L, N, K> {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        f.struct_node(K::NAME, |f| {
            f.field(K::EMBEDDING, &self.embedding);
            f.field("layers", &self.layers);
            f.field(K::NORM, &self.norm);
            f.static_field("kernels", &self.kernels);
            f.static_field("ends", &self.ends);
            f.static_field("pipeline", &self.pipeline);
        });
    }

    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        u.struct_node(K::NAME, |u| {
            Ok(Stack {
                embedding: u.field(K::EMBEDDING)?,
                layers: u.field("layers")?,
                norm: u.field(K::NORM)?,
                kernels: u.static_field("kernels")?,
                ends: u.static_field("ends")?,
                pipeline: u.static_field("pipeline")?,
                names: PhantomData,
            })
        })
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        self.embedding.leaves_mut(f)?;
        self.layers.leaves_mut(f)?;
        self.norm.leaves_mut(f)
    }
}

impl<L: Layer, N: Forward + TreeNode, K: StackNames> Stack<L, N, K> {
    /// Takes the embedding (`vocab_size` by `hidden_size`) under `{prefix}.{K::EMBEDDING}` and
    /// the final norm that `norm` takes from `{prefix}.{K::NORM}`, around `layers`; the ends
    /// are plain ([`with_ends`](Self::with_ends) sets others).
    pub fn load_around(
        ck: &mut Checkpoint,
        prefix: &str,
        (vocab_size, hidden_size): (i32, i32),
        layers: Vec<L>,
        norm: impl FnOnce(&mut Checkpoint, &str) -> crate::Result<N>,
        kernels: KernelOptions,
    ) -> crate::Result<Self> {
        let embedding = ck.embedding(
            &format!("{prefix}.{}", K::EMBEDDING),
            vocab_size,
            hidden_size,
        )?;
        Ok(Stack {
            embedding,
            layers,
            norm: norm(ck, &format!("{prefix}.{}", K::NORM))?,
            kernels,
            ends: StackEnds::default(),
            pipeline: None,
            names: PhantomData,
        })
    }

    /// The stack with the family's `ends`.
    pub fn with_ends(self, ends: StackEnds) -> Self {
        Stack { ends, ..self }
    }

    /// Logits of `inputs` `[B, L]` through `lm_head`, or the embedding as a linear layer when
    /// the head is tied.
    pub fn logits(
        &self,
        inputs: &Array,
        cache: Option<&mut [LayerCache]>,
        lm_head: Option<&MaybeQuantizedLinear>,
    ) -> Result<Array> {
        stack_logits(
            StackParts {
                embedding: &self.embedding,
                layers: &self.layers,
                norm: &self.norm,
                kernels: self.kernels,
                ends: self.ends,
                positions: None,
                pipeline: self.pipeline.as_ref(),
            },
            inputs,
            cache,
            lm_head,
        )
    }

    /// One cache entry per layer that keeps one.
    pub fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        make_layer_caches(&self.layers, batch, capacity, self.dtype())
    }

    /// Keeps only this process's run of layers of a model split over `group` by layers
    /// (Python: `PipelineMixin.pipeline(group, split)`; see [`PipelineStage::new`]): any
    /// stack, whatever its layers hold, as each process runs whole layers. The embedding,
    /// final norm and output head stay on every process. Once only.
    pub fn pipeline(&mut self, group: &Group, split: Option<&[usize]>) -> Result<()> {
        // A carry that is not `()` (RWKV-7's first layer's values, which every later layer
        // reads) would have to travel between the stages too.
        if std::mem::size_of::<L::Carry>() != 0 {
            return Err(mlx_rs::Error::InvalidArgument(
                "[pipeline] its layers hand each other more than the hidden states (the \
                 first layer's values), which the stages do not pass on"
                    .into(),
            ));
        }
        PipelineStage::split_layers(&mut self.pipeline, &mut self.layers, group, split)
    }

    /// The dtype the model computes in: the embedding's (its scales' when quantized).
    pub fn dtype(&self) -> Dtype {
        embedding_dtype(&self.embedding, self)
    }

    pub fn vocab_size(&self) -> i32 {
        embedding_vocab_size(&self.embedding)
    }
}

/// What a family does at the stack's ends beyond embedding, layers, norm and head, in
/// Python floats (weakly typed: the products keep the activations' dtype, as in mlx_lm).
#[derive(Debug, Clone, Copy, Default, PartialEq, StaticData)]
pub struct StackEnds {
    /// `h = embed_tokens(x) * embed_scale`: Gemma's `hidden_size ** 0.5`, Granite's
    /// `embedding_multiplier`.
    pub embed_scale: Option<f64>,
    /// What the logits go through last.
    pub logits: Option<LogitsMap>,
}

/// The last map of the logits.
#[derive(Debug, Clone, Copy, PartialEq, StaticData)]
pub enum LogitsMap {
    /// `logits / d`: Granite's `logits_scaling` (a division in mlx_lm and transformers, whose
    /// last bits differ from a product with the reciprocal).
    Divide(f64),
    /// `logits * s`: Cohere's `logit_scale`.
    Multiply(f64),
    /// `tanh(logits / cap) * cap`: Gemma 2's `final_logit_softcapping`.
    SoftCap(f64),
}

impl LogitsMap {
    pub fn apply(self, logits: &Array) -> Result<Array> {
        match self {
            LogitsMap::Divide(d) => ops::divide(logits, d),
            LogitsMap::Multiply(s) => ops::multiply(logits, s),
            LogitsMap::SoftCap(cap) => ops::multiply(&ops::tanh(&ops::divide(logits, cap)?)?, cap),
        }
    }
}

/// A stack's parts, borrowed, for [`stack_logits`].
pub struct StackParts<'a, L, N> {
    pub embedding: &'a MaybeQuantizedEmbedding,
    pub layers: &'a [L],
    pub norm: &'a N,
    pub kernels: KernelOptions,
    pub ends: StackEnds,
    /// Learned absolute position embeddings added to the token embeddings (GPT-2's `wpe`).
    pub positions: Option<&'a MaybeQuantizedEmbedding>,
    /// This process's stage of a model split by layers.
    pub pipeline: Option<&'a PipelineStage>,
}

/// Embedding (scaled), layers, final norm, then the head (or the tied embedding) and the
/// logits' map, over rows: the forward of every stack whatever its parts are named.
pub fn stack_logits<L: Layer, N: Forward>(
    parts: StackParts<'_, L, N>,
    inputs: &Array,
    cache: Option<&mut [LayerCache]>,
    lm_head: Option<&MaybeQuantizedLinear>,
) -> Result<Array> {
    let rows = Rows::of(inputs)?;
    let mut h = parts.embedding.forward(&rows.fold(inputs)?)?;
    if let Some(scale) = parts.ends.embed_scale {
        h = ops::multiply(&h, scale)?;
    }
    if let Some(wpe) = parts.positions {
        h = ops::add(&h, &learned_positions(wpe, rows, cache.as_deref())?)?;
    }
    let h = match parts.pipeline {
        Some(stage) => stage.forward(h, cache, |h, cache| {
            forward_layers(parts.layers, h, rows, parts.kernels, cache)
        })?,
        None => forward_layers(parts.layers, h, rows, parts.kernels, cache)?,
    };
    let h = parts.norm.forward(&h)?;
    let mut logits = match lm_head {
        Some(head) => head.forward(&h)?,
        None => parts.embedding.as_linear(&h)?,
    };
    if let Some(map) = parts.ends.logits {
        logits = map.apply(&logits)?;
    }
    rows.unfold(&logits)
}

/// The position embeddings of the call's rows (Python: gpt2's `wpe(mx.arange(L) +
/// offset[..., None])`, `offset` the first cache's: one per sequence in a batch, negative
/// over left padding, which indexes from the table's end as in MLX).
fn learned_positions(
    wpe: &MaybeQuantizedEmbedding,
    rows: Rows,
    cache: Option<&[LayerCache]>,
) -> Result<Array> {
    let offset = match cache.and_then(|c| c.first()) {
        Some(LayerCache::Kv(c)) => c.rope_offset()?,
        Some(c) => c
            .offset()
            .cloned()
            .unwrap_or_else(|| Array::from_scalar(0i32)),
        None => Array::from_scalar(0i32),
    };
    let positions = ops::add(
        &ops::arange(0, rows.len, 1, Dtype::Int32)?,
        &ops::expand_dims(&offset, -1)?,
    )?;
    let positions = ops::broadcast_to(&positions, &[rows.batch, rows.len])?;
    wpe.forward(&rows.fold(&positions)?)
}
