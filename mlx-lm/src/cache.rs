//! Caches as trees (Python: `mlx_lm.models.cache`).
//!
//! Python's caches keep their write position as a Python int and grow their buffers as tokens
//! arrive, so every decode step is a new graph shape: `mx.compile` would retrace each token
//! (and rejects the cache objects anyway). Here a cache is a tree of arrays whose write
//! position is itself an array: its buffers are allocated once, at the size a generation
//! needs, and a compiled decode step traced once serves every token, with the cache as
//! `&mut` state of [`compile_mut`](mlx_tree::compile_mut).
//!
//! Attention then runs over the whole buffer with a mask of the positions written so far;
//! the masked-out entries add exact zeros, so the result equals attention over the written
//! prefix up to the order of float additions. On a CUDA GPU a decode step instead attends
//! over exactly the written slots in one kernel that reads the offset on the device
//! ([`decode_attention`](crate::kernels::decode_attention)), and a generation's caches write
//! each step's slots into their buffers in place ([`KvCache::set_writes_in_place`]).
//!
//! A recurrent layer (a convolution's last inputs, an SSM or delta-rule state) keeps its
//! state in an [`ArraysCache`], whose arrays are allocated up front too, and a layer that
//! runs several mixers keeps a [`LayerCache::List`] of their caches: leaves of the same tree,
//! through the same compiled step.

use mlx_rs::ops;
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::mask::{causal_mask_at, PlainMask};

mod bounded;
mod quantized;

pub use bounded::{bound_kv_cache, max_kv_size_applies, MAX_KV_SIZE_KEEP, OWN_CACHE_MODEL_TYPES};
pub use quantized::{
    check_kv_quantization, check_quantizable, quantize_kv_cache, QuantizedArray, QuantizedKvCache,
    KV_BITS, KV_GROUP_SIZES,
};

/// `offset + arange(length)`: the positions of `length` new tokens.
fn new_positions(offset: &Array, length: i32) -> Result<Array> {
    ops::add(&ops::arange(0, length, 1, Dtype::Int32)?, offset)
}

/// A key/value cache of fixed capacity (Python: `KVCache`, with the buffer allocated up front
/// and the offset an array).
///
/// Like every array, its buffers are values: an update makes new ones, and a clone of the
/// cache is a snapshot. A cache that [writes in place](Self::set_writes_in_place) instead
/// writes a decode step's keys and values into its buffers (on a CUDA GPU), which generation
/// does on the buffers it owns.
#[derive(Debug, TreeNode)]
pub struct KvCache {
    /// `[batch, kv_heads, capacity, k_head_dim]`.
    pub keys: Array,
    /// `[batch, kv_heads, capacity, v_head_dim]`.
    pub values: Array,
    /// The number of positions written (an `int32` scalar).
    pub offset: Array,
    /// Per sequence of a batch (`int32 [batch]`), how many slots at the start of the buffer
    /// are padding, masked out and not counted as positions (Python: `BatchKVCache`'s
    /// `left_padding`); `None`: no padding.
    pub left_padding: Option<Array>,
    /// Whether one-token steps on a CUDA GPU write into the buffers in place.
    #[tree(static)]
    pub(crate) writes_in_place: bool,
    /// Whether attention reads only the written prefix of the buffers, as mlx_lm's
    /// `KVCache` returns it (see [`set_prefix_attention`](Self::set_prefix_attention)).
    #[tree(static)]
    pub(crate) prefix_attention: bool,
    /// How many of the buffers' first positions attention reads, when fewer than all (see
    /// [`set_view`](Self::set_view)).
    #[tree(static)]
    pub(crate) view: Option<i32>,
}

/// A clone shares the buffers, so it never writes into them in place: it is the snapshot an
/// array is.
impl Clone for KvCache {
    fn clone(&self) -> KvCache {
        KvCache {
            keys: self.keys.clone(),
            values: self.values.clone(),
            offset: self.offset.clone(),
            left_padding: self.left_padding.clone(),
            writes_in_place: false,
            prefix_attention: self.prefix_attention,
            view: self.view,
        }
    }
}

impl KvCache {
    /// An empty cache for `capacity` positions.
    pub fn new(
        batch: i32,
        kv_heads: i32,
        capacity: i32,
        head_dims: (i32, i32),
        dtype: Dtype,
    ) -> Result<KvCache> {
        Ok(KvCache {
            keys: ops::zeros(&[batch, kv_heads, capacity, head_dims.0], dtype)?,
            values: ops::zeros(&[batch, kv_heads, capacity, head_dims.1], dtype)?,
            offset: Array::from_scalar(0i32),
            left_padding: None,
            writes_in_place: false,
            prefix_attention: false,
            view: None,
        })
    }

    /// Whether a one-token decode step on a CUDA GPU writes its keys and values into this
    /// cache's buffers in place (see [`set_writes_in_place`](Self::set_writes_in_place)).
    pub fn writes_in_place(&self) -> bool {
        self.writes_in_place
    }

    /// Makes one-token decode steps on a CUDA GPU write into the buffers in place, after
    /// giving the cache buffers of its own (moved, not copied, when nothing else holds
    /// them), or makes them update functionally again.
    ///
    /// An update of an array makes a new buffer; MLX moves the old one into it when nothing
    /// else holds it, but in a pipelined decode loop the previous step's attention still
    /// holds it, and each step copied each layer's whole buffers. In place, a step writes
    /// only its slots. What it costs: arrays that share the buffers see the writes, which is
    /// why the cache takes buffers of its own first and a clone does not write in place. The
    /// flag is static tree data, so a cache rebuilt from this one's leaves (`tree_map`,
    /// `tree_unflatten`) has it too: map the buffers to new arrays, or turn it off, before
    /// decoding with both. Generation sets it on the caches it decodes with.
    pub fn set_writes_in_place(&mut self, on: bool) -> Result<()> {
        if on && !self.writes_in_place {
            self.keys = ops::copy(&self.keys)?;
            self.values = ops::copy(&self.values)?;
        }
        self.writes_in_place = on;
        Ok(())
    }

    /// Whether attention reads only the written prefix of the buffers (see
    /// [`set_prefix_attention`](Self::set_prefix_attention)).
    pub fn prefix_attention(&self) -> bool {
        self.prefix_attention
    }

    /// Makes attention read only the positions written so far, with mlx_lm's masks (none
    /// for one new position, `"causal"` for several), as mlx_lm's `KVCache.update_and_fetch`
    /// returns `keys[..., :offset, :]`; off (the default), it reads the whole buffer with a
    /// mask of the written positions.
    ///
    /// The sums then run over exactly mlx_lm's operands in mlx_lm's order, so a model
    /// computes mlx_lm's numbers bit for bit when linked to the same libmlx, also in
    /// bfloat16, where the whole-buffer form may round the last bit of a sum otherwise. What
    /// it costs: the slice needs the offset on the host, read back at every call, so a cache
    /// in this mode cannot serve a compiled function (the trace fails with an error saying
    /// so); the generation that wants mlx_lm's exact numbers runs eagerly anyway
    /// ([`GenerateOptions::compile`](crate::GenerateOptions::compile)).
    pub fn set_prefix_attention(&mut self, on: bool) {
        self.prefix_attention = on;
    }

    /// The position of the next token, where rotary embeddings start: the offset, less each
    /// sequence's padding (`[batch]`) when the batch is padded.
    pub fn rope_offset(&self) -> Result<Array> {
        match &self.left_padding {
            None => Ok(self.offset.clone()),
            Some(padding) => ops::subtract(&self.offset, padding),
        }
    }

    /// Turns right padding into left padding after a batch's prefill (Python:
    /// `BatchKVCache.finalize`): each sequence's buffer rolls right by its `padding`
    /// (`int32 [batch]`), so every sequence's last token sits at `offset - 1`, and the
    /// rolled-in slots are masked from then on.
    pub fn roll_padding(&mut self, padding: &Array) -> Result<()> {
        let n = self.capacity();
        let shifts = ops::reshape(padding, &[-1, 1, 1, 1])?;
        let slots = ops::reshape(&ops::arange(0, n, 1, Dtype::Int32)?, &[n, 1])?;
        let index = ops::remainder(&ops::subtract(&slots, &shifts)?, n)?;
        self.keys = ops::take_along_axis(&self.keys, &index, 2)?;
        self.values = ops::take_along_axis(&self.values, &index, 2)?;
        self.left_padding = Some(match &self.left_padding {
            None => padding.clone(),
            Some(p) => ops::add(p, padding)?,
        });
        Ok(())
    }

    /// Gives every row of the batch its own offset (`int32 [batch]`, all zero): the layout
    /// of a continuous-batching slot batch ([`Engine`](crate::Engine)), where each row holds
    /// another request at another position. Rotary embeddings, the mask and the writes then
    /// follow each row's offset; the one-kernel decode attention, which reads one scalar
    /// offset, is not used for such a cache.
    pub fn set_row_offsets(&mut self) -> Result<()> {
        let batch = self.keys.shape().first().copied().unwrap_or(0);
        self.offset = ops::zeros(&[batch], Dtype::Int32)?;
        Ok(())
    }

    /// How many positions the buffers hold.
    pub fn capacity(&self) -> i32 {
        self.keys.shape().get(2).copied().unwrap_or(0)
    }

    /// Makes attention read only the buffers' first `view` positions (the mask and the
    /// fetched keys and values are that long; writes still go anywhere in the buffers), or
    /// all of them again (`None`). A continuous batch's decode step sets it to a length that
    /// holds every running row's positions, so a slot of a long context costs the attention
    /// of the positions it uses, not of its capacity: a trace per view length, as the view
    /// is a shape. Positions past the view are the ones no running row has written, which
    /// the whole-buffer mask hides anyway, so the attention is the same.
    pub fn set_view(&mut self, view: Option<i32>) {
        self.view = view.filter(|v| *v < self.capacity());
    }

    /// The positions attention reads: the [view](Self::set_view), else the capacity.
    pub fn attended(&self) -> i32 {
        self.view.unwrap_or_else(|| self.capacity())
    }

    /// The buffers as attention reads them (cut to the view).
    fn fetched(&self) -> Result<(Array, Array)> {
        match self.view {
            None => Ok((self.keys.clone(), self.values.clone())),
            Some(v) => Ok((
                self.keys.index((.., .., ..v))?,
                self.values.index((.., .., ..v))?,
            )),
        }
    }

    /// Grows the buffers to hold at least `capacity` positions (zeros past the old end).
    pub fn reserve(&mut self, capacity: i32) -> Result<()> {
        let extra = capacity - self.capacity();
        if extra <= 0 {
            return Ok(());
        }
        let grow = |buffer: &Array| -> Result<Array> {
            let mut shape = buffer.shape().to_vec();
            shape[2] = extra;
            ops::concatenate(&[buffer.clone(), ops::zeros(&shape, buffer.dtype())?], 2)
        };
        self.keys = grow(&self.keys)?;
        self.values = grow(&self.values)?;
        Ok(())
    }

    /// The boolean mask `[length, capacity]` of what each of `length` new positions, written
    /// at the offset, may attend to: the written positions up to itself; with `window`, only
    /// the last `window` of them; with left padding, `[batch, 1, length, capacity]` and none
    /// of the padding. Every key/value layer of a model's cache is at the same position, so
    /// the model makes this once per call for all of them (as mlx_lm's
    /// `create_attention_mask` does from the first layer's cache).
    ///
    /// With [per-row offsets](Self::set_row_offsets), each row's queries sit at its own
    /// offset: `[batch, 1, length, capacity]`.
    pub fn mask(&self, length: i32, window: Option<i32>) -> Result<Array> {
        let queries = if self.offset.ndim() == 1 {
            ops::add(
                &ops::reshape(&self.offset, &[-1, 1, 1, 1])?,
                &ops::reshape(&ops::arange(0, length, 1, Dtype::Int32)?, &[length, 1])?,
            )?
        } else {
            ops::expand_dims(&new_positions(&self.offset, length)?, 1)?
        };
        let slots = ops::arange(0, self.attended(), 1, Dtype::Int32)?;
        let mut mask = ops::less_equal(&slots, &queries)?;
        if let Some(w) = window {
            mask = ops::logical_and(&mask, &ops::less(&queries, &ops::add(&slots, w)?)?)?;
        }
        if let Some(padding) = &self.left_padding {
            let padding = ops::reshape(padding, &[-1, 1, 1, 1])?;
            mask = ops::logical_and(&mask, &ops::greater_equal(&slots, &padding)?)?;
        }
        Ok(mask)
    }

    /// Writes `keys`/`values` (`[batch, kv_heads, length, dim]`) at the offset and advances
    /// it. Returns the whole buffers.
    ///
    /// With [per-row offsets](Self::set_row_offsets), each row writes at its own offset; a
    /// row whose offset has run past the buffer (an idle row of a slot batch, whose values
    /// nobody reads) keeps writing its last slot instead of indexing out of bounds.
    pub fn update(&mut self, keys: &Array, values: &Array) -> Result<(Array, Array)> {
        let length = keys.shape().get(2).copied().unwrap_or(0);
        if self.offset.ndim() == 1 {
            let index = ops::add(
                &ops::reshape(&self.offset, &[-1, 1, 1, 1])?,
                &ops::reshape(
                    &ops::arange(0, length, 1, Dtype::Int32)?,
                    &[1, 1, length, 1],
                )?,
            )?;
            let index = ops::minimum(&index, self.capacity() - 1)?;
            let write = |buffer: &Array, new: &Array| -> Result<Array> {
                let index = ops::broadcast_to(&index, new.shape())?;
                ops::put_along_axis(buffer, &index, new, 2)
            };
            self.keys = write(&self.keys, keys)?;
            self.values = write(&self.values, values)?;
            self.offset = ops::add(&self.offset, length)?;
            return self.fetched();
        }
        let start = ops::reshape(&self.offset, &[1])?;
        self.keys = ops::slice_update(&self.keys, keys, &start, &[2])?;
        self.values = ops::slice_update(&self.values, values, &start, &[2])?;
        self.offset = ops::add(&self.offset, length)?;
        self.fetched()
    }

    /// [`mask`](Self::mask) for the new positions, then [`update`](Self::update): the whole
    /// buffers and the mask.
    pub fn update_and_fetch(
        &mut self,
        keys: &Array,
        values: &Array,
        window: Option<i32>,
    ) -> Result<(Array, Array, Array)> {
        let mask = self.mask(keys.shape().get(2).copied().unwrap_or(0), window)?;
        let (keys, values) = self.update(keys, values)?;
        Ok((keys, values, mask))
    }
}

/// A rotating key/value cache (Python: `RotatingKVCache(max_size, keep)`): a ring buffer of
/// `max_size` slots, each remembering which position it holds, laid out as mlx_lm's. A
/// sliding-window layer's keeps nothing (`keep = 0`, `max_size` its window); generation's
/// [`max_kv_size`](crate::GenerateOptions::max_kv_size) makes ones that keep the first 4
/// positions for good (mlx_lm's `make_prompt_cache(model, max_kv_size)`), the other slots
/// rotating.
///
/// mlx_lm's layout, which this one keeps: a call of several tokens attends over the first
/// `keep` positions and the last `min(offset, max_size - 1) - keep` in temporal order,
/// followed by the new ones; then the ring holds the first `keep` positions and the last
/// `max_size - keep` in temporal order from slot 0 (all of them, while they fit); a
/// one-token step writes the slot of the oldest rotating position (the first empty one while
/// the ring fills) and attends over the ring as it lies. So with `keep = 0`, slot `i` holds
/// position `p` with `p = i + E (mod max_size)`, `E` the offset after the last call of
/// several tokens when that reached the window, else 0; with `keep`, the same holds of the
/// slots past `keep`, modulo `max_size - keep`. The slots' order is the order of the
/// attention's sums: with mlx_lm's order and, in [prefix mode](Self::set_prefix_attention),
/// mlx_lm's operands, a model computes mlx_lm's numbers bit for bit.
#[derive(Debug, Clone, TreeNode)]
pub struct RotatingKvCache {
    /// `[batch, kv_heads, window, k_head_dim]`.
    pub keys: Array,
    /// `[batch, kv_heads, window, v_head_dim]`.
    pub values: Array,
    /// The position each slot holds (`int32 [window]`; `-1`: empty). With
    /// [per-row offsets](Self::set_row_offsets), each row's (`[batch, window]`).
    pub positions: Array,
    /// The number of positions written (an `int32` scalar; per row, `[batch]`).
    pub offset: Array,
    /// How many first positions are never evicted (Python: `keep`).
    #[tree(static)]
    pub(crate) keep: i32,
    /// Whether attention reads exactly mlx_lm's operands (see
    /// [`set_prefix_attention`](Self::set_prefix_attention)).
    #[tree(static)]
    pub(crate) prefix_attention: bool,
}

impl RotatingKvCache {
    /// An empty cache for a window of `window` positions (`keep = 0`).
    pub fn new(
        batch: i32,
        kv_heads: i32,
        window: i32,
        head_dims: (i32, i32),
        dtype: Dtype,
    ) -> Result<RotatingKvCache> {
        RotatingKvCache::with_keep(batch, kv_heads, window, 0, head_dims, dtype)
    }

    /// An empty cache of `max_size` slots whose first `keep` positions stay (Python:
    /// `RotatingKVCache(max_size, keep)`); `keep` must be below `max_size`, so that some
    /// slots rotate.
    pub fn with_keep(
        batch: i32,
        kv_heads: i32,
        max_size: i32,
        keep: i32,
        head_dims: (i32, i32),
        dtype: Dtype,
    ) -> Result<RotatingKvCache> {
        if keep < 0 || keep >= max_size {
            return Err(mlx_rs::Error::InvalidArgument(format!(
                "a rotating cache of {max_size} positions cannot keep {keep}: keep must be in \
                 [0, {max_size})"
            )));
        }
        Ok(RotatingKvCache {
            keys: ops::zeros(&[batch, kv_heads, max_size, head_dims.0], dtype)?,
            values: ops::zeros(&[batch, kv_heads, max_size, head_dims.1], dtype)?,
            positions: ops::full(&[max_size], -1i32, None)?,
            offset: Array::from_scalar(0i32),
            keep,
            prefix_attention: false,
        })
    }

    /// The window size (Python: `max_size`).
    pub fn window(&self) -> i32 {
        self.keys.shape().get(2).copied().unwrap_or(0)
    }

    /// How many first positions are never evicted (Python: `keep`).
    pub fn keep(&self) -> i32 {
        self.keep
    }

    /// Whether attention reads exactly mlx_lm's operands (see
    /// [`set_prefix_attention`](Self::set_prefix_attention)).
    pub fn prefix_attention(&self) -> bool {
        self.prefix_attention
    }

    /// Makes attention read exactly the keys and values mlx_lm's `RotatingKVCache` returns,
    /// with mlx_lm's masks: for several new positions the kept ones and the last
    /// `min(offset, window - 1) - keep` held ones in temporal order, then the new ones
    /// (`"causal"`, or an explicit mask where the window cuts in); for one, the written slots
    /// of the ring and no mask. Off (the default), attention reads the whole ring (and the
    /// new positions) with a mask of what each position may see, array positions throughout,
    /// so a compiled step serves every token. As [`KvCache::set_prefix_attention`], the mode
    /// reads the offset on the host and cannot be traced.
    pub fn set_prefix_attention(&mut self, on: bool) {
        self.prefix_attention = on;
    }

    /// Gives every row of the batch its own ring (all empty): positions `[batch, window]`
    /// and offset `[batch]`, the layout of a continuous-batching slot batch
    /// ([`Engine`](crate::Engine)), where each row holds another request at another
    /// position and another phase of its ring. Such a cache takes one position per call:
    /// each row writes the oldest (or first empty) slot of its own ring and masks with its own
    /// positions, what a one-sequence cache does in its one-token steps, so a row's ring is
    /// laid out, and summed over, as the request's alone. Its memory stays the window's.
    /// A cache that keeps its first positions (`max_kv_size`) has no such layout: an error.
    pub fn set_row_offsets(&mut self) -> Result<()> {
        if self.keep > 0 {
            return Err(mlx_rs::Error::InvalidArgument(format!(
                "a rotating cache that keeps its first {} positions (max_kv_size) cannot serve \
                 a batch of requests",
                self.keep
            )));
        }
        let batch = self.keys.shape().first().copied().unwrap_or(0);
        self.positions = ops::full(&[batch, self.window()], -1i32, None)?;
        self.offset = ops::zeros(&[batch], Dtype::Int32)?;
        Ok(())
    }

    /// Whether each row keeps its own ring ([`set_row_offsets`](Self::set_row_offsets)).
    pub fn has_row_offsets(&self) -> bool {
        self.offset.ndim() == 1
    }

    /// One new position per row (`[batch, kv_heads, 1, dim]`), each written over its row's
    /// oldest (or first empty) slot: [`write_step`](Self::write_step) row by row.
    fn write_rows(&mut self, keys: &Array, values: &Array) -> Result<()> {
        let slot = ops::argmin(&self.positions, 1, true)?.astype(Dtype::Int32)?;
        let index = ops::reshape(&slot, &[-1, 1, 1, 1])?;
        let write = |buffer: &Array, new: &Array| -> Result<Array> {
            let index = ops::broadcast_to(&index, new.shape())?;
            ops::put_along_axis(buffer, &index, new, 2)
        };
        self.keys = write(&self.keys, keys)?;
        self.values = write(&self.values, values)?;
        let position = ops::reshape(&self.offset, &[-1, 1])?;
        self.positions = ops::put_along_axis(&self.positions, &slot, &position, 1)?;
        self.offset = ops::add(&self.offset, 1)?;
        Ok(())
    }

    /// The slot of each held position `p` (`int32`, any shape): a kept position's own slot;
    /// the rotating slots are consecutive modulo `window - keep`, the newest position
    /// (`offset - 1`) in the slot of the largest held position.
    fn slots_for(&self, p: &Array) -> Result<Array> {
        let (window, keep) = (self.window(), self.keep);
        let newest = ops::argmax(&self.positions, None, false)?.astype(Dtype::Int32)?;
        let back = ops::subtract(&ops::subtract(&self.offset, 1)?, &newest)?;
        if keep == 0 {
            // + window: p - back may be below zero, and the remainder of a negative is its
            // sign's.
            return ops::remainder(&ops::add(&ops::subtract(p, &back)?, window)?, window);
        }
        let ring = window - keep;
        let r = ops::remainder(&ops::subtract(&ops::subtract(p, &back)?, keep)?, ring)?;
        let r = ops::where_(&ops::less(&r, 0)?, &ops::add(&r, ring)?, &r)?;
        ops::where_(&ops::less(p, keep)?, p, &ops::add(&r, keep)?)
    }

    /// The slot the next one-token step writes: the oldest (or the first empty) slot, past
    /// the kept ones once they are written, where mlx_lm's `_idx` is.
    fn next_slot(&self) -> Result<Array> {
        if self.keep == 0 {
            return ops::argmin(&self.positions, None, false)?.astype(Dtype::Int32);
        }
        let slots = ops::arange(0, self.window(), 1, Dtype::Int32)?;
        let rotating = ops::logical_or(
            &ops::greater_equal(&slots, self.keep)?,
            &ops::less(&self.positions, 0)?,
        )?;
        let candidates = ops::where_(&rotating, &self.positions, Array::from_scalar(i32::MAX))?;
        ops::argmin(&candidates, None, false)?.astype(Dtype::Int32)
    }

    /// One new position (`[batch, kv_heads, 1, dim]`), written over the oldest (or the first
    /// empty) slot, as mlx_lm's `_update_in_place` does.
    fn write_step(&mut self, keys: &Array, values: &Array) -> Result<()> {
        let slot = self.next_slot()?;
        let start = ops::reshape(&slot, &[1])?;
        self.keys = ops::slice_update(&self.keys, keys, &start, &[2])?;
        self.values = ops::slice_update(&self.values, values, &start, &[2])?;
        let position = ops::reshape(&self.offset, &[1])?;
        self.positions = ops::slice_update(&self.positions, &position, &start, &[0])?;
        self.offset = ops::add(&self.offset, 1)?;
        Ok(())
    }

    /// Several new positions (`[batch, kv_heads, length, dim]`): the ring then holds the
    /// kept positions and the last `window - keep` in temporal order from slot 0 (all of
    /// them while they fit), as mlx_lm's buffer does after `_update_concat` (and its next
    /// `_update_in_place` trims it to).
    fn write_chunk(&mut self, keys: &Array, values: &Array, length: i32) -> Result<()> {
        let (window, keep) = (self.window(), self.keep);
        let end = ops::add(&self.offset, length)?;
        let targets = if keep == 0 {
            let first = ops::maximum(&ops::subtract(&end, window)?, 0)?;
            new_positions(&first, window)?
        } else {
            // Slot s < keep holds s; slot s >= keep holds max(end - (window - keep), keep)
            // + s - keep.
            let slots = ops::arange(0, window, 1, Dtype::Int32)?;
            let first = ops::maximum(&ops::subtract(&end, window - keep)?, keep)?;
            let rotating = ops::add(&ops::subtract(&first, keep)?, &slots)?;
            ops::where_(&ops::less(&slots, keep)?, &slots, &rotating)?
        };
        let written = ops::less(&targets, &end)?;
        let is_new = ops::greater_equal(&targets, &self.offset)?;
        let old = self.slots_for(&targets)?;
        let new = ops::add(&ops::subtract(&targets, &self.offset)?, window)?;
        let index = ops::clip(&ops::where_(&is_new, &new, &old)?, 0, window + length - 1)?;
        let slot_mask = ops::reshape(&written, &[1, 1, window, 1])?;
        let relaid = |ring: &Array, new: &Array| -> Result<Array> {
            let all = ops::concatenate(&[ring.clone(), new.clone()], 2)?;
            ops::where_(&slot_mask, &ops::take(&all, &index, 2)?, ring)
        };
        self.keys = relaid(&self.keys, keys)?;
        self.values = relaid(&self.values, values)?;
        self.positions = ops::where_(&written, &targets, Array::from_scalar(-1i32))?;
        self.offset = end;
        Ok(())
    }

    /// What each of `length` new positions may see of the ring before the write followed
    /// by the new positions (`[length, window + length]`).
    ///
    /// Without kept positions, exactly the `window` positions up to it. With them, mlx_lm's
    /// mask over its operands (`create_causal_mask(N, m, window_size=max_size)`, `m =
    /// min(offset, max_size - 1)`), which sees the kept positions by their index in the
    /// operands, not by distance: operand index `b` of a held position `p` is `p` if kept,
    /// else `p - offset + m`; new position `i` sits at `m + i` and sees `b` in
    /// `(m + i - max_size, m + i]`; the rotating position one before mlx_lm's operands
    /// (`b < keep`), which mlx_lm trimmed away, is never seen.
    fn chunk_mask(&self, length: i32) -> Result<Array> {
        let window = self.window();
        let new = new_positions(&self.offset, length)?;
        let held = ops::concatenate(&[self.positions.clone(), new.clone()], 0)?;
        let q = ops::expand_dims(&new, 1)?;
        let written = ops::greater_equal(&held, 0)?;
        if self.keep == 0 {
            return ops::logical_and(
                &ops::logical_and(&written, &ops::less_equal(&held, &q)?)?,
                &ops::less(&ops::subtract(&q, &held)?, window)?,
            );
        }
        let m = ops::minimum(&self.offset, window - 1)?;
        let shift = ops::subtract(&m, &self.offset)?;
        let kept = ops::less(&held, self.keep)?;
        let b = ops::where_(&kept, &held, &ops::add(&held, &shift)?)?;
        let at = ops::add(&q, &shift)?;
        let seen = ops::logical_and(
            &ops::less_equal(&b, &at)?,
            &ops::less(&at, &ops::add(&b, window)?)?,
        )?;
        let in_operands = ops::logical_or(&kept, &ops::greater_equal(&b, self.keep)?)?;
        ops::logical_and(&ops::logical_and(&written, &seen)?, &in_operands)
    }

    /// Writes the new positions and returns what attention reads: keys, values and their
    /// mask. In [prefix mode](Self::set_prefix_attention), mlx_lm's operands and masks.
    /// Otherwise, for one position, the ring after the write with a mask of its written
    /// slots (`[1, window]`); for several, the ring before the write followed by the new
    /// positions, with the mask of mlx_lm's chunk mask (kept positions counted by their index).
    pub fn update_and_fetch(
        &mut self,
        keys: &Array,
        values: &Array,
    ) -> Result<(Array, Array, PlainMask)> {
        let window = self.window();
        let length = keys.shape().get(2).copied().unwrap_or(0);
        if self.has_row_offsets() {
            if length != 1 || self.prefix_attention {
                return Err(mlx_rs::Error::InvalidArgument(
                    "a sliding-window cache with per-row offsets takes one position per call, \
                     and attends over the whole ring"
                        .into(),
                ));
            }
            self.write_rows(keys, values)?;
            let batch = self.positions.shape()[0];
            let mask = ops::reshape(
                &ops::greater_equal(&self.positions, 0)?,
                &[batch, 1, 1, window],
            )?;
            return Ok((
                self.keys.clone(),
                self.values.clone(),
                PlainMask::Array(mask),
            ));
        }
        if self.prefix_attention {
            return self.update_and_fetch_prefix(keys, values, length);
        }
        if length == 1 {
            self.write_step(keys, values)?;
            let mask = ops::reshape(&ops::greater_equal(&self.positions, 0)?, &[1, window])?;
            return Ok((
                self.keys.clone(),
                self.values.clone(),
                PlainMask::Array(mask),
            ));
        }
        let mask = self.chunk_mask(length)?;
        let all_keys = ops::concatenate(&[self.keys.clone(), keys.clone()], 2)?;
        let all_values = ops::concatenate(&[self.values.clone(), values.clone()], 2)?;
        self.write_chunk(keys, values, length)?;
        Ok((all_keys, all_values, PlainMask::Array(mask)))
    }

    /// Python: `RotatingKVCache.update_and_fetch` and `make_mask(N, window_size=max_size)`.
    fn update_and_fetch_prefix(
        &mut self,
        keys: &Array,
        values: &Array,
        length: i32,
    ) -> Result<(Array, Array, PlainMask)> {
        let window = self.window();
        let offset = self.offset.item::<i32>()?;
        if length == 1 {
            self.write_step(keys, values)?;
            let n = (offset + 1).min(window);
            return Ok((
                self.keys.index((.., .., ..n))?,
                self.values.index((.., .., ..n))?,
                PlainMask::None,
            ));
        }
        // mlx_lm's `_temporal_order` and `_trim`: the kept positions, then the newest of the
        // rest, `min(offset, window - 1)` in all.
        let kept = offset.min(window - 1);
        let first = self.keep.min(offset);
        let tail = kept - first;
        let mut slots: Vec<Array> = Vec::new();
        if first > 0 {
            slots.push(ops::arange(0, first, 1, Dtype::Int32)?);
        }
        if tail > 0 {
            slots.push(self.slots_for(&new_positions(&Array::from_scalar(offset - tail), tail)?)?);
        }
        let (all_keys, all_values) = if slots.is_empty() {
            (keys.clone(), values.clone())
        } else {
            let slots = ops::concatenate(&slots, 0)?;
            let with = |ring: &Array, new: &Array| -> Result<Array> {
                ops::concatenate(&[ops::take(ring, &slots, 2)?, new.clone()], 2)
            };
            (with(&self.keys, keys)?, with(&self.values, values)?)
        };
        let mask = if kept + length > window {
            PlainMask::Array(causal_mask_at(length, kept, Some(window))?)
        } else {
            PlainMask::Causal
        };
        self.write_chunk(keys, values, length)?;
        Ok((all_keys, all_values, mask))
    }
}

/// The state of a recurrent layer (Python: `ArraysCache(size)`): a fixed list of arrays whose
/// meaning the layer gives (a convolution's last inputs, an SSM or delta-rule state, ...),
/// plus the `lengths` of a right-padded batch's prefill.
///
/// mlx_lm starts every slot as `None` and lets the layer create it on its first call; here
/// the layer's `make_cache` allocates each slot up front, as zeros of mlx_lm's shape and
/// dtype (what the layer would have created), so a compiled step sees the same shapes from
/// its first call on. Indexing (`cache[j]`) is Python's `cache[j]`.
#[derive(Debug, Clone, TreeNode)]
pub struct ArraysCache {
    /// The slots: `cache[j]` is Python's `cache[j]`.
    pub cache: Vec<Array>,
    /// While a right-padded batch is prefilled, each sequence's tokens still to come
    /// (`int32 [batch]`): later inputs are padding, which must not reach the state (Python:
    /// `ArraysCache.lengths`); `None` otherwise.
    pub lengths: Option<Array>,
}

impl ArraysCache {
    /// A cache of these slots, no padding.
    pub fn new(slots: Vec<Array>) -> ArraysCache {
        ArraysCache {
            cache: slots,
            lengths: None,
        }
    }

    /// Python: `make_mask(N)`: which of `n` new positions of each sequence are real tokens
    /// (`bool [batch, n]`), while a right-padded batch is prefilled; `None` otherwise.
    pub fn make_mask(&self, n: i32) -> Result<Option<Array>> {
        match &self.lengths {
            Some(lengths) => Ok(Some(ops::less(
                &ops::arange(0, n, 1, Dtype::Int32)?,
                &ops::expand_dims(lengths, 1)?,
            )?)),
            None => Ok(None),
        }
    }

    /// Python: `advance(N)`: `n` positions were consumed (the lengths count down).
    pub fn advance(&mut self, n: i32) -> Result<()> {
        if let Some(lengths) = &self.lengths {
            self.lengths = Some(ops::subtract(lengths, n)?);
        }
        Ok(())
    }
}

impl std::ops::Index<usize> for ArraysCache {
    type Output = Array;

    fn index(&self, slot: usize) -> &Array {
        &self.cache[slot]
    }
}

impl std::ops::IndexMut<usize> for ArraysCache {
    fn index_mut(&mut self, slot: usize) -> &mut Array {
        &mut self.cache[slot]
    }
}

/// One layer's cache.
#[derive(Debug, Clone, TreeNode)]
pub enum LayerCache {
    Kv(KvCache),
    Rotating(RotatingKvCache),
    /// A key/value cache quantized by generation's `kv_bits` (Python: `QuantizedKVCache`).
    Quantized(QuantizedKvCache),
    Arrays(ArraysCache),
    /// Several caches for one layer (Python: `CacheList`), for layers that run several
    /// mixers side by side (falcon_h1's SSM and attention).
    List(Vec<LayerCache>),
}

impl LayerCache {
    /// An attention layer's cache of `kv_heads` heads of `head_dim` features: a rotating
    /// cache of the `window` for a sliding-window layer (mlx_lm's
    /// `RotatingKVCache(max_size=sliding_window)`), else a key/value cache of `capacity`.
    pub fn attention(
        batch: i32,
        kv_heads: i32,
        head_dim: i32,
        window: Option<i32>,
        capacity: i32,
        dtype: Dtype,
    ) -> Result<LayerCache> {
        let dims = (head_dim, head_dim);
        Ok(match window {
            Some(w) => LayerCache::Rotating(RotatingKvCache::new(batch, kv_heads, w, dims, dtype)?),
            None => LayerCache::Kv(KvCache::new(batch, kv_heads, capacity, dims, dtype)?),
        })
    }

    /// The name of the kind, as mlx_lm's class names it.
    pub fn class_name(&self) -> &'static str {
        match self {
            LayerCache::Kv(_) => "KVCache",
            LayerCache::Rotating(_) => "RotatingKVCache",
            LayerCache::Quantized(_) => "QuantizedKVCache",
            LayerCache::Arrays(_) => "ArraysCache",
            LayerCache::List(_) => "CacheList",
        }
    }

    /// Calls `f` on every cache this one is made of: itself, or each of a list's (in order,
    /// depth first).
    pub fn for_each(&self, f: &mut impl FnMut(&LayerCache)) {
        match self {
            LayerCache::List(caches) => caches.iter().for_each(|c| c.for_each(f)),
            c => f(c),
        }
    }

    /// [`for_each`](Self::for_each), mutably; stops at the first error.
    pub fn try_for_each_mut<E>(
        &mut self,
        f: &mut impl FnMut(&mut LayerCache) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        match self {
            LayerCache::List(caches) => caches.iter_mut().try_for_each(|c| c.try_for_each_mut(f)),
            c => f(c),
        }
    }

    /// Whether this cache is, or holds, a sliding-window cache.
    pub fn has_rotating(&self) -> bool {
        let mut found = false;
        self.for_each(&mut |c| found |= matches!(c, LayerCache::Rotating(_)));
        found
    }

    /// Whether this cache is, or holds, state other than keys and values (a recurrent
    /// layer's).
    pub fn has_arrays(&self) -> bool {
        let mut found = false;
        self.for_each(&mut |c| found |= matches!(c, LayerCache::Arrays(_)));
        found
    }

    /// Checks that this cache (loaded from a file, say) fits the layer `fresh` was made for:
    /// the same kind, and arrays of the same dtypes and shapes but for a key/value buffer's
    /// length. The error says which layer and array differ.
    pub fn check_fits(&self, fresh: &LayerCache, layer: usize) -> crate::Result<()> {
        self.check_fits_at(fresh, &format!("cache layer {layer}"))
    }

    fn check_fits_at(&self, fresh: &LayerCache, at: &str) -> crate::Result<()> {
        let invalid = |message: String| crate::Error::InvalidArgument(format!("{at}: {message}"));
        let same = |name: &str, a: &Array, b: &Array, any_length: bool| -> crate::Result<()> {
            let (sa, sb) = (a.shape(), b.shape());
            let fits = sa.len() == sb.len()
                && sa
                    .iter()
                    .zip(sb)
                    .enumerate()
                    .all(|(i, (x, y))| x == y || (any_length && i == 2))
                && a.dtype() == b.dtype();
            if fits {
                Ok(())
            } else {
                Err(invalid(format!(
                    "{name} is {:?} {sa:?} but the model's layer needs {:?} {sb:?}",
                    a.dtype(),
                    b.dtype()
                )))
            }
        };
        match (self, fresh) {
            (LayerCache::Kv(a), LayerCache::Kv(b)) => {
                same("keys", &a.keys, &b.keys, true)?;
                same("values", &a.values, &b.values, true)
            }
            // A quantized cache (from a file) for a layer that starts as a float one: the same
            // batch, heads and features, its scales in the model's dtype.
            (LayerCache::Quantized(a), LayerCache::Kv(b)) => {
                for (name, q, f) in [("keys", &a.keys, &b.keys), ("values", &a.values, &b.values)] {
                    let (sq, sf) = (q.weights.shape(), f.shape());
                    let fits = sq.len() == 4
                        && sq[..2] == sf[..2]
                        && q.dim(a.bits) == sf[3]
                        && sf[3] % a.group_size == 0
                        && q.scales.dtype() == f.dtype();
                    if !fits {
                        return Err(invalid(format!(
                            "quantized {name} are {sq:?} ({} bits, scales {:?}) but the model's \
                             layer needs {:?} {sf:?}",
                            a.bits,
                            q.scales.dtype(),
                            f.dtype()
                        )));
                    }
                }
                Ok(())
            }
            // A bounded cache (from a file, or an earlier turn made with max_kv_size) for a
            // layer that starts as a key/value one: the same batch, heads and features.
            (LayerCache::Rotating(a), LayerCache::Kv(b)) if a.keep > 0 => {
                same("keys", &a.keys, &b.keys, true)?;
                same("values", &a.values, &b.values, true)
            }
            (LayerCache::Rotating(a), LayerCache::Rotating(b)) => {
                same("keys", &a.keys, &b.keys, false)?;
                same("values", &a.values, &b.values, false)?;
                same("positions", &a.positions, &b.positions, false)
            }
            (LayerCache::Arrays(a), LayerCache::Arrays(b)) => {
                if a.cache.len() != b.cache.len() {
                    return Err(invalid(format!(
                        "an ArraysCache of {} arrays but the model's layer needs {}",
                        a.cache.len(),
                        b.cache.len()
                    )));
                }
                for (j, (x, y)) in a.cache.iter().zip(&b.cache).enumerate() {
                    same(&format!("array {j}"), x, y, false)?;
                }
                Ok(())
            }
            (LayerCache::List(a), LayerCache::List(b)) => {
                if a.len() != b.len() {
                    return Err(invalid(format!(
                        "a CacheList of {} caches but the model's layer needs {}",
                        a.len(),
                        b.len()
                    )));
                }
                for (j, (x, y)) in a.iter().zip(b).enumerate() {
                    x.check_fits_at(y, &format!("{at}, cache {j}"))?;
                }
                Ok(())
            }
            _ => Err(invalid(format!(
                "a {} but the model's layer needs a {}",
                self.class_name(),
                fresh.class_name()
            ))),
        }
    }

    /// The number of positions written, for the caches that count them (a list: its first
    /// cache that does).
    pub fn offset(&self) -> Option<&Array> {
        match self {
            LayerCache::Kv(c) => Some(&c.offset),
            LayerCache::Rotating(c) => Some(&c.offset),
            LayerCache::Quantized(c) => Some(&c.offset),
            LayerCache::Arrays(_) => None,
            LayerCache::List(caches) => caches.iter().find_map(LayerCache::offset),
        }
    }

    /// Sets the [view](KvCache::set_view) of every key/value cache this one is or holds.
    pub fn set_view(&mut self, view: Option<i32>) {
        match self {
            LayerCache::Kv(c) => c.set_view(view),
            LayerCache::List(caches) => caches.iter_mut().for_each(|c| c.set_view(view)),
            _ => {}
        }
    }

    /// The first key/value cache this one is or holds.
    pub fn first_kv(&self) -> Option<&KvCache> {
        match self {
            LayerCache::Kv(c) => Some(c),
            LayerCache::List(caches) => caches.iter().find_map(LayerCache::first_kv),
            _ => None,
        }
    }

    /// Starts a right-padded batch's prefill (Python: `prepare(lengths=...)`): each
    /// recurrent cache learns how many of the coming positions of each sequence
    /// (`int32 [batch]`) are real tokens, so the padding after them never reaches its state.
    pub fn prepare(&mut self, lengths: &Array) {
        match self {
            LayerCache::Arrays(a) => a.lengths = Some(lengths.clone()),
            LayerCache::List(caches) => caches.iter_mut().for_each(|c| c.prepare(lengths)),
            _ => {}
        }
    }

    /// Ends a right-padded batch's prefill (Python: `finalize()`): key/value caches roll
    /// each sequence's `right_padding` (`int32 [batch]`) into left padding
    /// ([`KvCache::roll_padding`]), recurrent caches forget the lengths.
    pub fn finalize(&mut self, right_padding: &Array) -> Result<()> {
        self.try_for_each_mut(&mut |c| match c {
            LayerCache::Kv(kv) => kv.roll_padding(right_padding),
            LayerCache::Arrays(a) => {
                a.lengths = None;
                Ok(())
            }
            _ => Ok(()),
        })
    }
}

/// A model's cache: one entry per layer (Python: the list `make_prompt_cache` returns).
pub type Cache = Vec<LayerCache>;

/// Buffer slots for `positions` positions, in mlx_lm's steps of 256.
pub fn cache_slots(positions: usize) -> crate::Result<i32> {
    let slots = positions.div_ceil(256).saturating_mul(256);
    i32::try_from(slots).map_err(|_| {
        crate::Error::InvalidArgument(format!("{positions} positions do not fit a cache"))
    })
}

/// Makes every key/value layer write decode steps into its buffers in place (see
/// [`KvCache::set_writes_in_place`]): what generation does with the cache it owns.
pub fn write_in_place(cache: &mut [LayerCache]) -> Result<()> {
    for_each_kv(cache, |kv| kv.set_writes_in_place(true))
}

/// Sets [`KvCache::set_prefix_attention`] on every key/value layer and
/// [`RotatingKvCache::set_prefix_attention`] on every sliding-window one.
pub fn set_prefix_attention(cache: &mut [LayerCache], on: bool) {
    for layer in cache {
        // Setting a flag cannot fail.
        let _ = layer.try_for_each_mut(&mut |c| -> Result<()> {
            match c {
                LayerCache::Kv(kv) => kv.set_prefix_attention(on),
                LayerCache::Rotating(ring) => ring.set_prefix_attention(on),
                LayerCache::Quantized(q) => q.set_prefix_attention(on),
                _ => {}
            }
            Ok(())
        });
    }
}

/// Grows every key/value buffer (quantized too) to `capacity` positions.
pub fn reserve(cache: &mut [LayerCache], capacity: i32) -> Result<()> {
    for layer in cache {
        layer.try_for_each_mut(&mut |c| match c {
            LayerCache::Kv(kv) => kv.reserve(capacity),
            LayerCache::Quantized(q) => q.reserve(capacity),
            _ => Ok(()),
        })?;
    }
    Ok(())
}

/// Calls `f` on every key/value cache of `cache`, inside lists too.
fn for_each_kv(
    cache: &mut [LayerCache],
    mut f: impl FnMut(&mut KvCache) -> Result<()>,
) -> Result<()> {
    for layer in cache {
        layer.try_for_each_mut(&mut |c| match c {
            LayerCache::Kv(kv) => f(kv),
            _ => Ok(()),
        })?;
    }
    Ok(())
}
