//! What a model's stack of layers is made of, whatever its layers look like: the [`Layer`]
//! trait and the loop over layers that every architecture runs ([`forward_layers`],
//! [`make_layer_caches`]).
//!
//! mlx_lm's architectures differ in their layers far more than in their stacks: a dense
//! decoder's layer is `input_layernorm → mixer → post_attention_layernorm → mlp`
//! ([`DecoderLayer`](crate::blocks::DecoderLayer)), lfm2's is `operator_norm → conv or
//! self_attn → ffn_norm → feed_forward`, mamba's a single `norm → mixer`, falcon_h1's runs
//! two mixers side by side, rwkv7's hands a value on to the next layer. So each architecture
//! declares its own layer struct with mlx_lm's field names (its parameter paths) and
//! implements [`Layer`] for it; the stack around the layers (embedding, masks, the cache
//! entry of each layer, the final norm) is the same loop for all of them.

use std::cell::Cell;
use std::sync::Mutex;

use mlx_nn::{MaybeQuantizedEmbedding, Module};
use mlx_rs::{transforms, Array, Dtype, Error, Result};
use mlx_tree::{tree_flatten, tree_unflatten, TreeNode};

use crate::blocks::mask::Masks;
use crate::blocks::rows::{wrong_input, Rows};
use crate::cache::LayerCache;
use crate::kernels::KernelOptions;

/// What a layer gets besides its input: the call's rows and masks, and the model's kernel
/// choices.
#[derive(Debug, Clone, Copy)]
pub struct LayerContext<'a> {
    pub rows: Rows,
    pub masks: &'a Masks,
    pub kernels: KernelOptions,
    /// The positions the model's cache held before this call (the first key/value or
    /// rotating cache's offset, an `int32` scalar): where a layer without such a cache of
    /// its own needs the position (recurrent_gemma's RG-LRU resets at position 0). `None`
    /// without a cache, or with one of recurrent state only.
    pub offset: Option<&'a Array>,
    /// Where rotary embeddings start for the call's first position: the first key/value
    /// cache's `rope_offset` (per sequence in a padded batch; the offset of a rotating
    /// cache). What a layer that rotates without a key/value cache of its own needs
    /// (bailing_moe_linear's linear attention, Python: `cache[attn_idx].offset`). `None`
    /// as for `offset`.
    pub rope_offset: Option<&'a Array>,
}

/// One layer of a model's stack (Python: the module each entry of `model.layers` is).
pub trait Layer: TreeNode + 'static {
    /// What a layer hands the next besides the hidden states (rwkv7's `v_first`, made by
    /// the first layer and read by the others); `()` for layers that hand on nothing. The
    /// stack starts it at its default.
    type Carry: Default;

    /// Rows `h` `[B * L, hidden]` to rows, continuing this layer's entry of the cache.
    fn forward(
        &self,
        h: &Array,
        carry: &mut Self::Carry,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array>;

    /// Whether the layer has an entry in the model's cache (default: yes). A layer without
    /// state (nemotron_h's MLP blocks) has none, as in mlx_lm's cache list, which is then
    /// shorter than the layers.
    fn has_cache(&self) -> bool {
        true
    }

    /// This layer's cache for `batch` sequences of up to `capacity` positions (asked only of
    /// a layer that [`has_cache`](Self::has_cache)).
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache>;

    /// The sliding window of the layer's attention, if it has one.
    fn window(&self) -> Option<i32> {
        None
    }
}

/// Runs `layers` over the embedded rows `h`, each layer with its entry of `cache` (Python:
/// the loop of every `Model.__call__`, with the masks `create_attention_mask` makes once per
/// call); the final norm is the caller's.
pub fn forward_layers<L: Layer>(
    layers: &[L],
    h: Array,
    rows: Rows,
    kernels: KernelOptions,
    cache: Option<&mut [LayerCache]>,
) -> Result<Array> {
    Ok(forward_layers_with_carry(layers, h, rows, kernels, cache)?.0)
}

/// [`forward_layers`], also returning what the last layer handed on (kimi_k3's attention
/// residuals, which the stack mixes once more after its last layer).
pub fn forward_layers_with_carry<L: Layer>(
    layers: &[L],
    mut h: Array,
    rows: Rows,
    kernels: KernelOptions,
    mut cache: Option<&mut [LayerCache]>,
) -> Result<(Array, L::Carry)> {
    // One window per cache entry, so the masks pair them with the entries.
    let windows: Vec<Option<i32>> = layers
        .iter()
        .filter(|l| l.has_cache())
        .map(|l| l.window())
        .collect();
    if let Some(c) = cache.as_deref() {
        if c.len() != windows.len() {
            return Err(wrong_input(&format!(
                "a cache of {} layers for a model of {}",
                c.len(),
                windows.len()
            )));
        }
    }
    let masks = Masks::new(&windows, cache.as_deref(), rows.len)?;
    let offset = cache
        .as_deref()
        .and_then(|c| c.iter().find_map(LayerCache::offset).cloned());
    let rope_offset = match cache.as_deref() {
        Some(c) => match c.iter().find_map(|e| e.first_kv()) {
            Some(kv) => Some(kv.rope_offset()?),
            None => offset.clone(),
        },
        None => None,
    };
    let ctx = LayerContext {
        rows,
        masks: &masks,
        kernels,
        offset: offset.as_ref(),
        rope_offset: rope_offset.as_ref(),
    };
    let mut carry = L::Carry::default();
    let mut entry = 0;
    for layer in layers {
        let c = if layer.has_cache() {
            entry += 1;
            cache.as_deref_mut().and_then(|c| c.get_mut(entry - 1))
        } else {
            None
        };
        // A carry of no size hands nothing on, so each checkpointed call can start its own.
        h = if c.is_none() && std::mem::size_of::<L::Carry>() == 0 && checkpointing() {
            checkpointed(layer, &h, &windows, rows, kernels)?
        } else {
            layer.forward(&h, &mut carry, &ctx, c)?
        };
    }
    Ok((h, carry))
}

thread_local! {
    static CHECKPOINT_LAYERS: Cell<bool> = const { Cell::new(false) };
}

fn checkpointing() -> bool {
    CHECKPOINT_LAYERS.with(Cell::get)
}

/// Runs `f` with every layer of an uncached [`forward_layers`] call under MLX's `checkpoint`
/// (on) or not (off), on this thread (Python: mlx_lm's trainer `grad_checkpoint(model.layers[0])`,
/// which patches the layer class's `__call__` for good). A gradient through the model then
/// keeps only each layer's input and recomputes its inside in the backward pass: the same
/// values, less memory. Layers that hand a carry to the next (rwkv7's) run as they are.
pub fn with_layer_checkpoint<T>(on: bool, f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            CHECKPOINT_LAYERS.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CHECKPOINT_LAYERS.with(|c| c.replace(on)));
    f()
}

/// One uncached layer call under `checkpoint`, with the layer's trainable parameters and the
/// hidden states as the checkpointed function's inputs and its frozen parameters held inside,
/// as Python's `mx.checkpoint(inner_fn)(model.trainable_parameters(), *args)`: a frozen
/// quantized weight must not be an input, as MLX has no gradient for it.
fn checkpointed<L: Layer>(
    layer: &L,
    h: &Array,
    windows: &[Option<i32>],
    rows: Rows,
    kernels: KernelOptions,
) -> Result<Array> {
    let mask = layer.trainable_mask()?;
    let (leaves, def) = tree_flatten(layer)?;
    let (mut trainable, mut frozen) = (Vec::new(), Vec::new());
    for (leaf, t) in leaves.into_iter().zip(&mask) {
        match t {
            true => trainable.push(leaf.clone()),
            false => frozen.push(leaf.clone()),
        }
    }
    let num_trainable = trainable.len();
    // A Mutex makes the frozen arrays (Send, not Sync) shareable with MLX's closure.
    let frozen = Mutex::new(frozen);
    let windows = windows.to_vec();
    let fun = transforms::checkpoint(move |args: &[Array]| {
        if args.len() != num_trainable + 1 {
            return Err(Error::InvalidArgument(format!(
                "[checkpoint] {} inputs for a layer of {num_trainable} trainable parameters",
                args.len()
            )));
        }
        let frozen = frozen
            .lock()
            .map_err(|_| Error::InvalidArgument("[checkpoint] poisoned".into()))?
            .clone();
        let (mut t, mut f) = (args[..num_trainable].iter().cloned(), frozen.into_iter());
        let leaves: Vec<Array> = mask
            .iter()
            .map(|&is_trainable| if is_trainable { t.next() } else { f.next() })
            .collect::<Option<_>>()
            .ok_or_else(|| Error::InvalidArgument("[checkpoint] missing parameter".into()))?;
        let layer: L = tree_unflatten(&def, leaves)?;
        let masks = Masks::new(&windows, None, rows.len)?;
        let ctx = LayerContext {
            rows,
            masks: &masks,
            kernels,
            offset: None,
            rope_offset: None,
        };
        let mut carry = L::Carry::default();
        Ok(vec![layer.forward(
            &args[num_trainable],
            &mut carry,
            &ctx,
            None,
        )?])
    })?;
    trainable.push(h.clone());
    fun.call(&trainable)?
        .into_iter()
        .next()
        .ok_or_else(|| Error::InvalidArgument("[checkpoint] no output".into()))
}

/// The cache of a stack: one entry per layer that has one, in the model's dtype.
pub fn make_layer_caches<L: Layer>(
    layers: &[L],
    batch: i32,
    capacity: i32,
    dtype: Dtype,
) -> Result<Vec<LayerCache>> {
    layers
        .iter()
        .filter(|l| l.has_cache())
        .map(|l| l.make_cache(batch, capacity, dtype))
        .collect()
}

/// The dtype a model computes in: its embedding table's (the scales' when affine-quantized).
/// A table in one of MLX's floating-point modes (uint8 scales) looks its rows up in
/// bfloat16, MLX's `dequantize` default there, which the first norm's weight then promotes
/// (bfloat16 with float32 or float16 is float32): the model's float parameters decide, read
/// off the last floating-point leaf of `model` (the final norm's or the head's; the float32
/// parameters some architectures keep in a bfloat16 model, `A_log` and the like, sit in the
/// layers before).
pub fn embedding_dtype(embedding: &MaybeQuantizedEmbedding, model: &impl TreeNode) -> Dtype {
    match embedding {
        mlx_nn::MaybeQuantized::Float(e) => e.weight.dtype(),
        mlx_nn::MaybeQuantized::Quantized(q) if q.scales.dtype().is_floating() => q.scales.dtype(),
        mlx_nn::MaybeQuantized::Quantized(_) => {
            let float = mlx_tree::tree_leaves(model)
                .into_iter()
                .map(Array::dtype)
                .filter(|d| d.is_floating())
                .last();
            match float {
                None | Some(Dtype::Bfloat16) => Dtype::Bfloat16,
                Some(Dtype::Float64) => Dtype::Float64,
                Some(_) => Dtype::Float32,
            }
        }
        mlx_nn::MaybeQuantized::Adapted(a) => embedding_dtype(&a.embedding, model),
        mlx_nn::MaybeQuantized::Sharded(s) => match **s {},
    }
}

/// The vocabulary size: the embedding table's rows.
pub fn embedding_vocab_size(embedding: &MaybeQuantizedEmbedding) -> i32 {
    match embedding {
        mlx_nn::MaybeQuantized::Float(e) => e.weight.shape()[0],
        mlx_nn::MaybeQuantized::Quantized(q) => q.weight.shape()[0],
        mlx_nn::MaybeQuantized::Adapted(a) => embedding_vocab_size(&a.embedding),
        mlx_nn::MaybeQuantized::Sharded(s) => match **s {},
    }
}
