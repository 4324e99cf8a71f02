//! LFM2's gated short convolution, the token mixer of its non-attention layers (Python:
//! `mlx_lm.models.lfm2.ShortConv`, the same in `lfm2_moe`): `B, C, x = split(in_proj(h), 3)`,
//! the causal depthwise convolution of `B * x` ([`causal_conv1d`], no activation), then
//! `out_proj(C * conv)`. Its state is the convolution's last `L_cache - 1` inputs, one slot
//! of an [`ArraysCache`] (Python: `ArraysCache(size=1)`).

use mlx_nn::{Conv1d, Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::conv::{causal_conv1d, conv_state, load_depthwise_conv1d, ConvActivation};
use crate::blocks::decoder::TokenMixer;
use crate::blocks::layer::LayerContext;
use crate::blocks::rows::{arrays_entry, Rows};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::Checkpoint;

/// The slot of the convolution's state in the layer's [`ArraysCache`] (Python: `cache[0]`):
/// `[batch, L_cache - 1, hidden]`.
const CONV: usize = 0;

/// Python: `ShortConv`.
#[derive(Debug, Clone, TreeNode)]
pub struct ShortConv {
    pub conv: Conv1d,
    pub in_proj: MaybeQuantizedLinear,
    pub out_proj: MaybeQuantizedLinear,
}

impl ShortConv {
    /// Takes the layer's tensors under `path`: a convolution of `l_cache` taps over `hidden`
    /// channels; `bias` for the convolution and both projections (Python: `conv_bias`).
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        hidden: i32,
        l_cache: i32,
        bias: bool,
    ) -> crate::Result<ShortConv> {
        let p = |name: &str| format!("{path}.{name}");
        Ok(ShortConv {
            conv: load_depthwise_conv1d(ck, &p("conv"), hidden, l_cache, bias)?,
            in_proj: ck.linear(&p("in_proj"), hidden, 3 * hidden, bias)?,
            out_proj: ck.linear(&p("out_proj"), hidden, hidden, bias)?,
        })
    }

    /// The layer over rows `x` `[B * L, hidden]`, continuing `cache`'s state.
    pub fn forward(&self, x: &Array, rows: Rows, cache: Option<&mut LayerCache>) -> Result<Array> {
        let mut cache = arrays_entry(cache, "a short-convolution layer")?;
        let parts = ops::split(&self.in_proj.forward(x)?, 3, -1)?;
        let (b, c, x) = (&parts[0], &parts[1], &parts[2]);
        let bx = rows.unfold(&ops::multiply(b, x)?)?;
        let mask = match &cache {
            Some(cache) => cache.make_mask(rows.len)?,
            None => None,
        };
        let conv_out = causal_conv1d(
            &self.conv,
            &bx,
            mask.as_ref(),
            cache.as_deref_mut(),
            CONV,
            ConvActivation::None,
        )?;
        if let Some(cache) = cache {
            cache.advance(rows.len)?;
        }
        let y = ops::multiply(c, &rows.fold(&conv_out)?)?;
        self.out_proj.forward(&y)
    }
}

impl TokenMixer for ShortConv {
    const KEY: &'static str = "conv";

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        ShortConv::forward(self, x, ctx.rows, cache)
    }

    /// The convolution's state (Python: `ArraysCache(size=1)`, allocated up front in the
    /// model's dtype).
    fn make_cache(&self, batch: i32, _capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Arrays(ArraysCache::new(vec![conv_state(
            &self.conv, batch, dtype,
        )?])))
    }
}
