//! Attention whose queries and keys are RMS-normalized over their whole projection
//! (`heads * head_dim` features, one weight each) before the heads split: OLMo 2's, OLMo 3's
//! (and OLMoE's) `q_norm` / `k_norm`, where qwen3's [`Attention`](crate::blocks::Attention)
//! normalizes each head.

use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{Array, Result};
use mlx_tree::TreeNode;

use crate::blocks::attention::{attend, AttentionConfig};
use crate::blocks::decoder::TokenMixer;
use crate::blocks::layer::LayerContext;
use crate::blocks::rope::RotaryEmbedding;
use crate::blocks::rows::{heads, merge_heads};
use crate::cache::LayerCache;
use crate::checkpoint::Checkpoint;

/// Python: olmo2's `Attention`, olmo3's `Olmo3Attention`.
#[derive(Debug, Clone, TreeNode)]
pub struct WholeQkNormAttention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_norm: RMSNorm,
    pub k_norm: RMSNorm,
    pub rope: Option<RotaryEmbedding>,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
    #[tree(static)]
    pub window: Option<i32>,
}

impl WholeQkNormAttention {
    /// Takes the layer's tensors under `path`, the norms with `eps` (`a.qk_norm`, per head,
    /// is not this layer's and must be `None`).
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        a: &AttentionConfig,
        eps: f32,
    ) -> crate::Result<WholeQkNormAttention> {
        let (d, h, kv, hd) = (a.hidden_size, a.num_heads, a.num_kv_heads, a.head_dim);
        let p = |name: &str| format!("{path}.{name}");
        Ok(WholeQkNormAttention {
            q_proj: ck.linear(&p("q_proj"), d, h * hd, a.qkv_bias)?,
            k_proj: ck.linear(&p("k_proj"), d, kv * hd, a.qkv_bias)?,
            v_proj: ck.linear(&p("v_proj"), d, kv * hd, a.qkv_bias)?,
            o_proj: ck.linear(&p("o_proj"), h * hd, d, a.o_bias)?,
            q_norm: ck.rms_norm(&p("q_norm"), h * hd, eps)?,
            k_norm: ck.rms_norm(&p("k_norm"), kv * hd, eps)?,
            rope: a.rope.clone(),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
            scale: f64::from(hd).powf(-0.5) as f32,
            window: a.sliding_window,
        })
    }
}

impl TokenMixer for WholeQkNormAttention {
    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let rows = ctx.rows;
        let q = self.q_norm.forward(&self.q_proj.forward(x)?)?;
        let k = self.k_norm.forward(&self.k_proj.forward(x)?)?;
        let out = attend(
            heads(&q, rows, self.n_heads, None)?,
            heads(&k, rows, self.n_kv_heads, None)?,
            heads(&self.v_proj.forward(x)?, rows, self.n_kv_heads, None)?,
            self.rope.as_ref(),
            self.scale,
            ctx.masks.for_window(self.window),
            self.window,
            ctx.kernels.fused_decode_attention,
            cache,
        )?;
        self.o_proj.forward(&merge_heads(&out)?)
    }

    // make_cache and window (Python: olmo3's `RotatingKVCache(max_size=sliding_window)`).
    crate::blocks::decoder::attention_cache!();
}
