//! The dense decoder stack most architectures are built from: embedding, layers of a token
//! mixer (attention, linear attention, ...) and a channel mixer (an MLP, ...) each behind a
//! pre-norm and a residual, a final norm, and the output head. An architecture chooses its
//! mixers by type ([`DecoderModel<M, C>`]); a hybrid model's mixer is a [`Hybrid`] of two.
//! Parameter paths are mlx_lm's (`embed_tokens`, `layers.0.self_attn...`, `norm`).
//! Architectures whose layers look otherwise implement [`Layer`] for a layer of their own
//! ([`layer`](crate::blocks::layer)).

use mlx_nn::{Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::distributed::Group;
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::{Flattener, TreeNode, Unflattener};

use crate::blocks::layer::{
    embedding_dtype, embedding_vocab_size, forward_layers, make_layer_caches, Layer, LayerContext,
};
use crate::blocks::pipeline::PipelineStage;
use crate::blocks::rows::Rows;
use crate::cache::LayerCache;
use crate::checkpoint::Checkpoint;
use crate::kernels::KernelOptions;

/// A layer's token mixer: what mixes information across positions (attention, linear
/// attention, a state-space scan), with the cache it carries between calls.
pub trait TokenMixer: TreeNode + 'static {
    /// The layer's field that holds a mixer of this type, as mlx_lm names the attribute
    /// (`self_attn`, `linear_attn`, the bailing families' and gpt_neox's `attention`): the
    /// path of its parameters. A type whose field depends on the value ([`Hybrid`]) says so
    /// in [`key`](Self::key) and [`accepts`](Self::accepts) instead.
    const KEY: &'static str = "self_attn";

    /// The layer's field that holds this mixer.
    fn key(&self) -> &'static str {
        Self::KEY
    }

    /// Whether a mixer of this type may sit under the layer's field `key`.
    fn accepts(key: &str) -> bool {
        key == Self::KEY
    }

    /// Reads the mixer under the layer's field `key` (one that [`accepts`](Self::accepts)).
    fn unflatten_field(key: &str, u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        u.field(key)
    }

    /// Rows `x` `[B * L, hidden]` (already normed) to rows, continuing `cache`.
    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array>;

    /// This layer's cache for `batch` sequences of up to `capacity` positions.
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache>;

    /// The sliding window of an attention layer that has one.
    fn window(&self) -> Option<i32> {
        None
    }

    /// Keeps this process's share of the mixer's heads, split over `group` for tensor
    /// parallelism (Python: the mixer's part of a model's `shard`); an `Err` naming the type
    /// for a mixer that cannot be split so.
    fn shard(&mut self, group: &Group) -> Result<()> {
        let _ = group;
        Err(not_shardable::<Self>())
    }
}

/// [`TokenMixer::make_cache`] and [`TokenMixer::window`] of an attention with fields
/// `n_kv_heads`, `head_dim` and `window` (Python: each such model's `make_cache`): a rotating
/// cache of the window for a sliding-window layer, else a key/value cache of `capacity`
/// ([`LayerCache::attention`]).
macro_rules! attention_cache {
    () => {
        fn make_cache(
            &self,
            batch: i32,
            capacity: i32,
            dtype: mlx_rs::Dtype,
        ) -> mlx_rs::Result<$crate::cache::LayerCache> {
            $crate::cache::LayerCache::attention(
                batch,
                self.n_kv_heads,
                self.head_dim,
                self.window,
                capacity,
                dtype,
            )
        }

        fn window(&self) -> Option<i32> {
            self.window
        }
    };
}
pub(crate) use attention_cache;

/// A layer's channel mixer (an MLP, a mixture of experts): what each position goes through
/// on its own after the token mixer.
pub trait ChannelMixer: Forward + TreeNode + 'static {
    /// The layer's field that holds it, as mlx_lm names the attribute: `mlp`, Mixtral's
    /// `block_sparse_moe`.
    const KEY: &'static str = "mlp";

    /// Keeps this process's share of the hidden features, split over `group` for tensor
    /// parallelism; an `Err` naming the type for a mixer that cannot be split so.
    fn shard(&mut self, group: &Group) -> Result<()> {
        let _ = group;
        Err(not_shardable::<Self>())
    }
}

/// The error of a layer type that has no tensor-parallel form.
pub(crate) fn not_shardable<T: ?Sized>() -> mlx_rs::Error {
    let name = std::any::type_name::<T>();
    let name = name.rsplit("::").next().unwrap_or(name);
    mlx_rs::Error::InvalidArgument(format!(
        "[shard] a {name} layer cannot be split for tensor parallelism"
    ))
}

impl ChannelMixer for crate::blocks::Mlp {
    fn shard(&mut self, group: &Group) -> Result<()> {
        crate::blocks::Mlp::shard(self, group)
    }
}

impl ChannelMixer for crate::blocks::PlainMlp {}

/// One of two token mixers, per layer: a hybrid model's layers (Qwen3.5: linear attention
/// with full attention every few layers). Transparent in paths: the layer's field is the
/// chosen mixer's [`key`](TokenMixer::key).
#[derive(Debug, Clone)]
pub enum Hybrid<A, B> {
    First(A),
    Second(B),
}

impl<A: TokenMixer, B: TokenMixer> TreeNode for Hybrid<A, B> {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        match self {
            Hybrid::First(a) => a.flatten(f),
            Hybrid::Second(b) => b.flatten(f),
        }
    }

    /// Alone (not under a layer's field) the variant is not known: only a layer reads one.
    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        Err(u.mismatch("a hybrid token mixer, which only a decoder layer's field can rebuild"))
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        match self {
            Hybrid::First(a) => a.leaves_mut(f),
            Hybrid::Second(b) => b.leaves_mut(f),
        }
    }
}

impl<A: TokenMixer, B: TokenMixer> TokenMixer for Hybrid<A, B> {
    fn key(&self) -> &'static str {
        match self {
            Hybrid::First(a) => a.key(),
            Hybrid::Second(b) => b.key(),
        }
    }

    fn accepts(key: &str) -> bool {
        A::accepts(key) || B::accepts(key)
    }

    fn unflatten_field(key: &str, u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        if A::accepts(key) {
            A::unflatten_field(key, u).map(Hybrid::First)
        } else {
            B::unflatten_field(key, u).map(Hybrid::Second)
        }
    }

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        match self {
            Hybrid::First(a) => a.forward(x, ctx, cache),
            Hybrid::Second(b) => b.forward(x, ctx, cache),
        }
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match self {
            Hybrid::First(a) => a.make_cache(batch, capacity, dtype),
            Hybrid::Second(b) => b.make_cache(batch, capacity, dtype),
        }
    }

    fn window(&self) -> Option<i32> {
        match self {
            Hybrid::First(a) => a.window(),
            Hybrid::Second(b) => b.window(),
        }
    }

    fn shard(&mut self, group: &Group) -> Result<()> {
        match self {
            Hybrid::First(a) => a.shard(group),
            Hybrid::Second(b) => b.shard(group),
        }
    }
}

/// Python: `TransformerBlock` / `DecoderLayer`: `h + mixer(norm(h))`, then
/// `h + mlp(norm(h))`; the norms RMSNorms unless the family's are others (Gemma's
/// [`GemmaRmsNorm`](crate::blocks::GemmaRmsNorm), starcoder2's and phimoe's LayerNorm).
#[derive(Debug, Clone)]
pub struct DecoderLayer<M, C, N = RMSNorm> {
    /// Under the field the mixer names ([`TokenMixer::key`]).
    pub mixer: M,
    pub mlp: C,
    pub input_layernorm: N,
    pub post_attention_layernorm: N,
}

impl<M: TokenMixer, C: ChannelMixer, N: TreeNode> TreeNode for DecoderLayer<M, C, N> {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        f.struct_node("DecoderLayer", |f| {
            f.field(self.mixer.key(), &self.mixer);
            f.field(C::KEY, &self.mlp);
            f.field("input_layernorm", &self.input_layernorm);
            f.field("post_attention_layernorm", &self.post_attention_layernorm);
        });
    }

    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        u.struct_node("DecoderLayer", |u| {
            let key = u.peek_node()?.key().unwrap_or_default();
            if !M::accepts(key) {
                return Err(u.mismatch("a token mixer's field (self_attn, linear_attn, ...)"));
            }
            Ok(DecoderLayer {
                mixer: M::unflatten_field(key, u)?,
                mlp: u.field(C::KEY)?,
                input_layernorm: u.field("input_layernorm")?,
                post_attention_layernorm: u.field("post_attention_layernorm")?,
            })
        })
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        self.mixer.leaves_mut(f)?;
        self.mlp.leaves_mut(f)?;
        self.input_layernorm.leaves_mut(f)?;
        self.post_attention_layernorm.leaves_mut(f)
    }
}

impl<M: TokenMixer, C: ChannelMixer, N: Forward + TreeNode + 'static> Layer
    for DecoderLayer<M, C, N>
{
    type Carry = ();

    fn forward(
        &self,
        h: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let r = self
            .mixer
            .forward(&self.input_layernorm.forward(h)?, ctx, cache)?;
        let h = ops::add(h, &r)?;
        let r = self
            .mlp
            .forward(&self.post_attention_layernorm.forward(&h)?)?;
        ops::add(&h, &r)
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        self.mixer.make_cache(batch, capacity, dtype)
    }

    fn window(&self) -> Option<i32> {
        self.mixer.window()
    }
}

/// Python: `LlamaModel` / `Qwen3Model` / `Qwen3_5TextModel`: embedding, layers, final norm.
#[derive(Debug, Clone, TreeNode)]
#[tree(bound = "M: TokenMixer, C: ChannelMixer")]
pub struct DecoderModel<M, C> {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<DecoderLayer<M, C>>,
    pub norm: RMSNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
    /// The layers this process runs of a model split over a pipeline
    /// ([`Decoder::pipeline`](Self::pipeline)); `None`: all of them.
    #[tree(static)]
    pub pipeline: Option<PipelineStage>,
}

impl<M: TokenMixer, C: ChannelMixer> DecoderModel<M, C> {
    /// The final hidden states as rows `[B * L, hidden]`.
    pub fn forward_rows(
        &self,
        inputs: &Array,
        rows: Rows,
        cache: Option<&mut [LayerCache]>,
    ) -> Result<Array> {
        let h = self.embed_tokens.forward(&rows.fold(inputs)?)?;
        let h = match &self.pipeline {
            Some(stage) => stage.forward(h, cache, |h, cache| {
                forward_layers(&self.layers, h, rows, self.kernels, cache)
            })?,
            None => forward_layers(&self.layers, h, rows, self.kernels, cache)?,
        };
        self.norm.forward(&h)
    }

    /// Splits every layer's heads and hidden features over `group` for tensor parallelism
    /// (Python: a model's `shard(group)`): each process keeps its slice, and each layer's
    /// output projections sum the slices' products over the group. An `Err` (the model left
    /// as it was) where a layer cannot be split so.
    pub fn shard(&mut self, group: &Group) -> Result<()>
    where
        M: Clone,
        C: Clone,
    {
        let mut layers = self.layers.clone();
        for layer in &mut layers {
            layer.mixer.shard(group)?;
            layer.mlp.shard(group)?;
        }
        self.layers = layers;
        Ok(())
    }

    /// Keeps only this process's run of layers of a model split over `group` by layers
    /// (Python: `PipelineMixin.pipeline(group, split)`; see [`PipelineStage::new`]). The
    /// embedding, final norm and output head stay on every process. Once only.
    pub fn pipeline(&mut self, group: &Group, split: Option<&[usize]>) -> Result<()> {
        PipelineStage::split_layers(&mut self.pipeline, &mut self.layers, group, split)
    }

    /// One cache per layer, in the model's dtype.
    pub fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        make_layer_caches(&self.layers, batch, capacity, self.dtype())
    }

    /// The dtype the model computes in: its embedding table's (the scales' when quantized).
    pub fn dtype(&self) -> Dtype {
        embedding_dtype(&self.embed_tokens, self)
    }

    /// The vocabulary size: the embedding table's rows.
    pub fn vocab_size(&self) -> i32 {
        embedding_vocab_size(&self.embed_tokens)
    }

    /// Logits `[B, L, vocab]` for token ids `[B, L]`, through `lm_head` or, tied, the
    /// embedding table.
    pub fn logits(
        &self,
        inputs: &Array,
        cache: Option<&mut [LayerCache]>,
        lm_head: Option<&MaybeQuantizedLinear>,
    ) -> Result<Array> {
        let rows = Rows::of(inputs)?;
        let h = self.forward_rows(inputs, rows, cache)?;
        let logits = match lm_head {
            Some(head) => head.forward(&h)?,
            None => self.embed_tokens.as_linear(&h)?,
        };
        rows.unfold(&logits)
    }
}

/// The sizes of a decoder stack.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StackConfig {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: i32,
    pub rms_norm_eps: f32,
}

impl<M: TokenMixer, C: ChannelMixer> DecoderModel<M, C> {
    /// Takes the stack's tensors under `prefix` (`model`, `language_model.model`): the
    /// embedding, the layers, whose token mixer and MLP `mixer` and `mlp` take from the
    /// layer's path and index, and the final norm.
    pub fn load(
        ck: &mut Checkpoint,
        prefix: &str,
        s: StackConfig,
        kernels: KernelOptions,
        mixer: impl FnMut(&mut Checkpoint, &str, i32) -> crate::Result<M>,
        mlp: impl FnMut(&mut Checkpoint, &str, i32) -> crate::Result<C>,
    ) -> crate::Result<DecoderModel<M, C>> {
        let (d, eps) = (s.hidden_size, s.rms_norm_eps);
        let layers = load_decoder_layers(ck, prefix, s, mixer, mlp)?;
        Ok(DecoderModel {
            embed_tokens: ck.embedding(&format!("{prefix}.embed_tokens"), s.vocab_size, d)?,
            layers,
            norm: ck.rms_norm(&format!("{prefix}.norm"), d, eps)?,
            kernels,
            pipeline: None,
        })
    }
}

/// Takes the layers under `{prefix}.layers.{i}`: the token mixer and the MLP as `mixer` and
/// `mlp` take them from the layer's path (the MLP's: `{path}.mlp`) and index, then the two
/// norms.
pub fn load_decoder_layers<M: TokenMixer, C: ChannelMixer>(
    ck: &mut Checkpoint,
    prefix: &str,
    s: StackConfig,
    mut mixer: impl FnMut(&mut Checkpoint, &str, i32) -> crate::Result<M>,
    mut mlp: impl FnMut(&mut Checkpoint, &str, i32) -> crate::Result<C>,
) -> crate::Result<Vec<DecoderLayer<M, C>>> {
    let (d, eps) = (s.hidden_size, s.rms_norm_eps);
    let mut layers = Vec::with_capacity(s.num_hidden_layers.max(0) as usize);
    for i in 0..s.num_hidden_layers {
        let path = format!("{prefix}.layers.{i}");
        layers.push(DecoderLayer {
            mixer: mixer(ck, &path, i)?,
            mlp: mlp(ck, &format!("{path}.{}", C::KEY), i)?,
            input_layernorm: ck.rms_norm(&format!("{path}.input_layernorm"), d, eps)?,
            post_attention_layernorm: ck.rms_norm(
                &format!("{path}.post_attention_layernorm"),
                d,
                eps,
            )?,
        });
    }
    Ok(layers)
}

/// The output projection at `path` (`lm_head`), or `None` when the embeddings are tied.
pub fn load_lm_head(
    ck: &mut Checkpoint,
    path: &str,
    s: StackConfig,
    tied: bool,
) -> crate::Result<Option<MaybeQuantizedLinear>> {
    (!tied)
        .then(|| ck.linear(path, s.hidden_size, s.vocab_size, false))
        .transpose()
}
