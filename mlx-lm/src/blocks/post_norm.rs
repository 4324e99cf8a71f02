//! The post-norm decoder layer of OLMo 2, OLMo 3 and EXAONE 4: no norm before a sublayer,
//! each sublayer's output normalized before its residual sum (Python: `h = x +
//! post_attention_layernorm(self_attn(x))`, `out = h + post_feedforward_layernorm(mlp(h))`).

use mlx_nn::{Forward, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::decoder::TokenMixer;
use crate::blocks::layer::{Layer, LayerContext};
use crate::blocks::mlp::Mlp;
use crate::cache::LayerCache;

/// Python: olmo2's, olmo3's and exaone4's `TransformerBlock` / `DecoderLayer`, over its
/// attention `A` and MLP `M`.
#[derive(Debug, Clone, TreeNode)]
#[tree(bound = "A: TokenMixer, M: Forward + TreeNode")]
pub struct PostNormLayer<A, M = Mlp> {
    pub self_attn: A,
    pub mlp: M,
    pub post_attention_layernorm: RMSNorm,
    pub post_feedforward_layernorm: RMSNorm,
}

impl<A: TokenMixer, M: Forward + TreeNode + 'static> Layer for PostNormLayer<A, M> {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let r = self.self_attn.forward(x, ctx, cache)?;
        let h = ops::add(x, &self.post_attention_layernorm.forward(&r)?)?;
        let r = self.mlp.forward(&h)?;
        ops::add(&h, &self.post_feedforward_layernorm.forward(&r)?)
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        self.self_attn.make_cache(batch, capacity, dtype)
    }

    fn window(&self) -> Option<i32> {
        self.self_attn.window()
    }
}
