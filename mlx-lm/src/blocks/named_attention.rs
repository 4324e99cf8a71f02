//! The attention of the families that name its parameters their own way and normalize each
//! query and key head with a LayerNorm: phi (`dense` for the output projection, no norms),
//! stablelm (`q_layernorm` / `k_layernorm`, one LayerNorm per head:
//! [`PerHeadLayerNorm`](crate::blocks::PerHeadLayerNorm)) and cohere / cohere2 (`q_norm` /
//! `k_norm`, one `[heads, head_dim]` weight: [`LayerNorm2D`](crate::blocks::LayerNorm2D)).
//! What differs is a type parameter (the norm `N`, the names `K`) or a setting (biases, the
//! rope over all or the first features of each head, a window, the operands computed in
//! float32); the computation is [`AttentionParts`]'.

use std::marker::PhantomData;

use mlx_nn::MaybeQuantizedLinear;
use mlx_rs::{Array, Result};
use mlx_tree::{Flattener, TreeNode, Unflattener};

use crate::blocks::attention::{AttentionConfig, AttentionParts, HeadNorm, Upcast};
use crate::blocks::decoder::TokenMixer;
use crate::blocks::layer::LayerContext;
use crate::blocks::norm::LoadHeadNorm;
use crate::blocks::rope::RotaryEmbedding;
use crate::cache::LayerCache;
use crate::checkpoint::Checkpoint;

/// The names mlx_lm gives an attention's parts (so the parameter paths) and the struct's
/// name in its tree.
pub trait AttentionNames: 'static {
    const NAME: &'static str;
    /// The output projection's field.
    const O_PROJ: &'static str;
    /// The query and key norms' fields.
    const Q_NORM: &'static str;
    const K_NORM: &'static str;
}

/// `q_proj`, `k_proj`, `v_proj`, `o_proj` (or `K`'s name for it), the optional per-head norms
/// `N` of queries and keys under `K`'s names, and the rope.
#[derive(Debug, Clone)]
pub struct NamedAttention<N, K> {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_norm: Option<N>,
    pub k_norm: Option<N>,
    /// `None`: a layer without positional embedding (Command R7B's global layers).
    pub rope: Option<RotaryEmbedding>,
    pub n_heads: i32,
    pub n_kv_heads: i32,
    pub head_dim: i32,
    pub scale: f32,
    /// Attend to only the last this many positions (Command R7B's sliding layers).
    pub window: Option<i32>,
    /// The operands the attention product computes in float32 (phi: the queries; stablelm:
    /// queries and keys; Command R7B: float16 queries).
    pub upcast: Upcast,
    names: PhantomData<K>,
}

impl<N: LoadHeadNorm, K: AttentionNames> NamedAttention<N, K> {
    /// Takes the layer's tensors under `path`: the projections with `a`'s biases, the
    /// per-head norms when `a.qk_norm` gives their eps; `scale` as the family computes it
    /// (it rounds a Python float its own way). `a.output_gate` is no family's here and must
    /// be off.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        a: &AttentionConfig,
        scale: f32,
        upcast: Upcast,
    ) -> crate::Result<Self> {
        debug_assert!(!a.output_gate);
        let (d, h, kv, hd) = (a.hidden_size, a.num_heads, a.num_kv_heads, a.head_dim);
        let p = |name: &str| format!("{path}.{name}");
        let (q_norm, k_norm) = match a.qk_norm {
            Some(eps) => (
                Some(N::load(ck, &p(K::Q_NORM), h, hd, eps)?),
                Some(N::load(ck, &p(K::K_NORM), kv, hd, eps)?),
            ),
            None => (None, None),
        };
        Ok(NamedAttention {
            q_proj: ck.linear(&p("q_proj"), d, h * hd, a.qkv_bias)?,
            k_proj: ck.linear(&p("k_proj"), d, kv * hd, a.qkv_bias)?,
            v_proj: ck.linear(&p("v_proj"), d, kv * hd, a.qkv_bias)?,
            o_proj: ck.linear(&p(K::O_PROJ), h * hd, d, a.o_bias)?,
            q_norm,
            k_norm,
            rope: a.rope.clone(),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            scale,
            window: a.sliding_window,
            upcast,
            names: PhantomData,
        })
    }
}

impl<N: TreeNode, K: AttentionNames> TreeNode for NamedAttention<N, K> {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        f.struct_node(K::NAME, |f| {
            f.field("q_proj", &self.q_proj);
            f.field("k_proj", &self.k_proj);
            f.field("v_proj", &self.v_proj);
            f.field(K::O_PROJ, &self.o_proj);
            f.field(K::Q_NORM, &self.q_norm);
            f.field(K::K_NORM, &self.k_norm);
            f.field("rope", &self.rope);
            f.static_field("n_heads", &self.n_heads);
            f.static_field("n_kv_heads", &self.n_kv_heads);
            f.static_field("head_dim", &self.head_dim);
            f.static_field("scale", &self.scale);
            f.static_field("window", &self.window);
            f.static_field("upcast", &self.upcast);
        });
    }

    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        u.struct_node(K::NAME, |u| {
            Ok(NamedAttention {
                q_proj: u.field("q_proj")?,
                k_proj: u.field("k_proj")?,
                v_proj: u.field("v_proj")?,
                o_proj: u.field(K::O_PROJ)?,
                q_norm: u.field(K::Q_NORM)?,
                k_norm: u.field(K::K_NORM)?,
                rope: u.field("rope")?,
                n_heads: u.static_field("n_heads")?,
                n_kv_heads: u.static_field("n_kv_heads")?,
                head_dim: u.static_field("head_dim")?,
                scale: u.static_field("scale")?,
                window: u.static_field("window")?,
                upcast: u.static_field("upcast")?,
                names: PhantomData,
            })
        })
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        self.q_proj.leaves_mut(f)?;
        self.k_proj.leaves_mut(f)?;
        self.v_proj.leaves_mut(f)?;
        self.o_proj.leaves_mut(f)?;
        self.q_norm.leaves_mut(f)?;
        self.k_norm.leaves_mut(f)?;
        self.rope.leaves_mut(f)
    }
}

impl<N: HeadNorm + TreeNode + 'static, K: AttentionNames> TokenMixer for NamedAttention<N, K> {
    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        AttentionParts {
            q_proj: &self.q_proj,
            k_proj: &self.k_proj,
            v_proj: &self.v_proj,
            o_proj: &self.o_proj,
            q_norm: self.q_norm.as_ref(),
            k_norm: self.k_norm.as_ref(),
            rope: self.rope.as_ref(),
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
            scale: self.scale,
            window: self.window,
            output_gate: false,
            sinks: None,
        }
        .forward_upcast(
            x,
            ctx.rows,
            ctx.masks.for_window(self.window),
            ctx.kernels.fused_decode_attention,
            cache,
            self.upcast,
        )
    }

    // make_cache and window (Python: cohere2's `make_cache`).
    crate::blocks::decoder::attention_cache!();
}
