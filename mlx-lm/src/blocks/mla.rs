//! Multi-head latent attention (MLA), DeepSeek-V2/V3's attention, op for op as mlx_lm's
//! `DeepseekV3Attention`: keys and values come from one low-rank latent per position
//! (`kv_a_proj_with_mqa` → `kv_a_layernorm`, `kv_lora_rank` wide) plus one rotary key part
//! shared by the heads (`k_pe`, `qk_rope_head_dim` wide), and the cache holds only those two:
//! a [`KvCache`] with keys = the latent `[B, 1, T, kv_lora_rank]` and values = `k_pe
//! [B, 1, T, qk_rope_head_dim]`.
//!
//! The per-head up-projections of the latent (Hugging Face's `kv_b_proj`, split by the
//! model's sanitize into `embed_q` and `unembed_out`, [`MultiLinear`]s) are applied where it
//! is cheaper: a prompt (`L > 1`) expands the latent into per-head keys and values; a decode
//! step (`L == 1`) absorbs `embed_q` into the query and attends over the latent itself, then
//! `unembed_out` maps the result to the heads' values. The rotary part enters as an additive
//! mask: `pe_scores = (q_pe * scale) @ k_pe^T`, with masked positions set to the dtype's
//! lowest finite value.

use mlx_nn::Frozen;
use mlx_nn::{
    shard_inplace, shard_linear, Forward, MaybeQuantized, MaybeQuantizedLinear, Quantizable,
    RMSNorm, ShardSpec, Sharding,
};
use mlx_rs::distributed::Group;
use mlx_rs::fast::{self, AttentionMask};
use mlx_rs::ops::{self, Ellipsis, QuantizationMode, QuantizeOptions, QuantizedMatmulOptions};
use mlx_rs::{Array, Dtype, Error, Result};
use mlx_tree::TreeNode;

use crate::blocks::decoder::TokenMixer;
use crate::blocks::layer::LayerContext;
use crate::blocks::mask::causal_mask;
use crate::blocks::rope::RotaryEmbedding;
use crate::blocks::rows::{heads, merge_heads, wrong_input, Rows};
use crate::cache::{KvCache, LayerCache};
use crate::checkpoint::Checkpoint;

/// Python: `mla.MultiLinear(input_dims, output_dims, num_heads)`: one linear map per head,
/// `weight [num_heads, output_dims, input_dims]`.
#[derive(Debug, Clone, TreeNode)]
pub struct MultiLinear {
    pub weight: Array,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

/// Python: `mla.QuantizedMultiLinear`; `biases` in the affine mode only.
#[derive(Debug, Clone, TreeNode)]
pub struct QuantizedMultiLinear {
    pub weight: Array,
    pub scales: Array,
    pub biases: Option<Array>,
    #[tree(static)]
    pub group_size: i32,
    #[tree(static)]
    pub bits: i32,
    #[tree(static)]
    pub mode: QuantizationMode,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl QuantizedMultiLinear {
    /// The set it starts with: all its parameters, as Python's `__init__` ends with
    /// `self.freeze()` (a quantized layer trains only through adapters).
    pub fn initially_frozen() -> Frozen {
        Frozen(["weight", "scales", "biases"].map(String::from).into())
    }
}

/// A [`MultiLinear`], float or quantized.
pub type MaybeQuantizedMultiLinear = MaybeQuantized<MultiLinear>;

impl Quantizable for MultiLinear {
    type Quantized = QuantizedMultiLinear;
    const QUANTIZED_NAME: &'static str = "QuantizedMultiLinear";
    // mlx_lm has no adapter for a MultiLinear (its `linear_to_lora_layers` skips them).
    type Adapted = mlx_nn::NoAdapter;
    const ADAPTED_NAME: &'static str = "NoAdapter";
    type Sharded = mlx_nn::NoAdapter;
    const SHARDED_NAMES: &'static [&'static str] = &[];

    /// Python: `MultiLinear.to_quantized(group_size, bits, mode)`: `mx.quantize` of the
    /// stacked weight, each head's rows grouped on their own.
    fn to_quantized(
        &self,
        group_size: i32,
        bits: i32,
        mode: QuantizationMode,
    ) -> Result<QuantizedMultiLinear> {
        let (weight, scales, biases) = quantize(&self.weight, group_size, bits, mode)?;
        Ok(QuantizedMultiLinear {
            frozen: QuantizedMultiLinear::initially_frozen(),
            weight,
            scales,
            biases,
            group_size,
            bits,
            mode,
        })
    }
}

/// `mx.quantize(w, group_size, bits, mode=mode)`.
pub(crate) fn quantize(
    w: &Array,
    group_size: i32,
    bits: i32,
    mode: QuantizationMode,
) -> Result<(Array, Array, Option<Array>)> {
    let options = QuantizeOptions::default()
        .group_size(group_size)
        .bits(bits)
        .mode(mode);
    ops::quantize(w, options)
}

/// Python: `MultiLinear.__call__(x, transpose)`: `x @ weight^T` per head (`transpose`), or
/// `x @ weight`.
pub trait MultiForward {
    fn forward_heads(&self, x: &Array, transpose: bool) -> Result<Array>;
}

impl MultiForward for MultiLinear {
    fn forward_heads(&self, x: &Array, transpose: bool) -> Result<Array> {
        if transpose {
            ops::matmul(x, &self.weight.swapaxes(-1, -2)?)
        } else {
            ops::matmul(x, &self.weight)
        }
    }
}

impl MultiForward for QuantizedMultiLinear {
    fn forward_heads(&self, x: &Array, transpose: bool) -> Result<Array> {
        let mut options = QuantizedMatmulOptions::default()
            .transpose(transpose)
            .group_size(self.group_size)
            .bits(self.bits)
            .mode(self.mode);
        if let Some(b) = &self.biases {
            options = options.biases(b);
        }
        ops::quantized_matmul(x, &self.weight, &self.scales, options)
    }
}

impl MultiForward for MaybeQuantizedMultiLinear {
    fn forward_heads(&self, x: &Array, transpose: bool) -> Result<Array> {
        match self {
            MaybeQuantized::Float(l) => l.forward_heads(x, transpose),
            MaybeQuantized::Quantized(l) => l.forward_heads(x, transpose),
            MaybeQuantized::Adapted(a) => match **a {},
            MaybeQuantized::Sharded(s) => match **s {},
        }
    }
}

/// What an [`Mla`] layer is, read from a config by each architecture.
#[derive(Debug, Clone, PartialEq)]
pub struct MlaConfig {
    pub hidden_size: i32,
    pub num_heads: i32,
    /// The rank of the query's low-rank path (`q_a_proj` → `q_a_layernorm` → `q_b_proj`);
    /// `None`: one `q_proj` (DeepSeek-V2-Lite).
    pub q_lora_rank: Option<i32>,
    pub kv_lora_rank: i32,
    pub qk_nope_head_dim: i32,
    pub qk_rope_head_dim: i32,
    pub v_head_dim: i32,
    /// Biases of `q_a_proj`, `kv_a_proj_with_mqa` and `o_proj` (`attention_bias`).
    pub attention_bias: bool,
    /// The rotary embedding of the `qk_rope_head_dim` features (traditional, yarn's mscale
    /// on its inputs where the config asks for it).
    pub rope: RotaryEmbedding,
    /// The attention scale: `q_head_dim**-0.5`, times yarn's `mscale_all_dim` factor squared.
    pub scale: f32,
}

/// Python: deepseek_v3's attention scale: `(qk_nope + qk_rope)**-0.5`, and with a
/// `rope_scaling` whose `mscale_all_dim` is set and `factor > 1`, times
/// `(0.1 * mscale_all_dim * ln(factor) + 1)**2` (in f64 as Python, rounded once).
pub fn mla_scale(q_head_dim: i32, mscale_all_dim: f64, factor: f64) -> f32 {
    let mut scale = (q_head_dim as f64).powf(-0.5);
    if mscale_all_dim != 0.0 && factor > 1.0 {
        let s = 0.1 * mscale_all_dim * factor.ln() + 1.0;
        scale = scale * s * s;
    }
    scale as f32
}

/// Python: `DeepseekV3Attention` (and deepseek_v2's, the same module).
#[derive(Debug, Clone, TreeNode)]
pub struct Mla {
    pub q_proj: Option<MaybeQuantizedLinear>,
    pub q_a_proj: Option<MaybeQuantizedLinear>,
    pub q_a_layernorm: Option<RMSNorm>,
    pub q_b_proj: Option<MaybeQuantizedLinear>,
    pub kv_a_proj_with_mqa: MaybeQuantizedLinear,
    pub kv_a_layernorm: RMSNorm,
    pub embed_q: MaybeQuantizedMultiLinear,
    pub unembed_out: MaybeQuantizedMultiLinear,
    /// The output projection: `o_proj` (DeepSeek, Kimi), or `dense` (the bailing families'
    /// `MultiLatentAttention`); the other is `None`.
    pub o_proj: Option<MaybeQuantizedLinear>,
    pub dense: Option<MaybeQuantizedLinear>,
    /// The output gate before the output projection: bailing_moe_v3's one gate per head
    /// (`[hidden] -> [heads]`, in float32, cast back; see `gate_per_head`) or kimi_k3's one per
    /// channel (`mla_use_output_gate`, `[hidden] -> [heads * v_head_dim]`): the output times
    /// `sigmoid(g_proj(x))`.
    pub g_proj: Option<MaybeQuantizedLinear>,
    pub rope: RotaryEmbedding,
    #[tree(static)]
    pub num_heads: i32,
    #[tree(static)]
    pub qk_nope_head_dim: i32,
    #[tree(static)]
    pub kv_lora_rank: i32,
    #[tree(static)]
    pub qk_rope_head_dim: i32,
    #[tree(static)]
    pub scale: f32,
    /// kimi_linear's MLA (`mla_use_nope`): the query's and key's rotary parts enter the
    /// scores unrotated (`rope` is then never applied).
    #[tree(static)]
    pub nope: bool,
    /// longcat_flash's LoRA scales (`mla_scale_q_lora`, `mla_scale_kv_lora`): the queries
    /// times the first, the normed latent times the second; `None` elsewhere.
    #[tree(static)]
    pub lora_scales: Option<(f32, f32)>,
    /// Whether `g_proj` gates whole heads (bailing_moe_v3) rather than channels (kimi_k3).
    #[tree(static)]
    pub gate_per_head: bool,
}

/// `mx.finfo(dtype).min`: the additive mask of a position the query must not see.
fn lowest(dtype: Dtype) -> Result<Array> {
    let v = match dtype {
        Dtype::Float16 => -65504.0f32,
        // -(2 - 2^-7) * 2^127: bfloat16's lowest, exactly a float32.
        Dtype::Bfloat16 => -3.389_531_4e38f32,
        _ => f32::MIN,
    };
    Array::from_scalar(v).astype(dtype)
}

/// An MLA layer's query projection: `q_proj`, or with `q_lora_rank` the low-rank `q_a_proj`
/// → `q_a_layernorm` → `q_b_proj`; the other parameters are `None`.
pub(crate) type QueryProjections = (
    Option<MaybeQuantizedLinear>,
    Option<MaybeQuantizedLinear>,
    Option<RMSNorm>,
    Option<MaybeQuantizedLinear>,
);

/// Takes the query projection of the layer under `path` (deepseek_v3's absorbed MLA and
/// deepseek_v2's expanded one read the same tensors).
pub(crate) fn load_query(
    ck: &mut Checkpoint,
    path: &str,
    c: &MlaConfig,
) -> crate::Result<QueryProjections> {
    let p = |name: &str| format!("{path}.{name}");
    let (d, h) = (c.hidden_size, c.num_heads);
    let q_head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim;
    Ok(match c.q_lora_rank {
        None => (
            Some(ck.linear(&p("q_proj"), d, h * q_head_dim, false)?),
            None,
            None,
            None,
        ),
        Some(r) => (
            None,
            Some(ck.linear(&p("q_a_proj"), d, r, c.attention_bias)?),
            // Python: eps 1e-6 whatever the config's rms_norm_eps.
            Some(ck.rms_norm(&p("q_a_layernorm"), r, 1e-6)?),
            Some(ck.linear(&p("q_b_proj"), r, h * q_head_dim, false)?),
        ),
    })
}

/// The queries of rows `x` through the projection [`load_query`] took.
pub(crate) fn project_query(
    x: &Array,
    q: (
        &Option<MaybeQuantizedLinear>,
        &Option<MaybeQuantizedLinear>,
        &Option<RMSNorm>,
        &Option<MaybeQuantizedLinear>,
    ),
) -> Result<Array> {
    match q {
        (Some(q_proj), ..) => q_proj.forward(x),
        (None, Some(a), Some(norm), Some(b)) => b.forward(&norm.forward(&a.forward(x)?)?),
        _ => Err(wrong_input("an MLA layer without its query projection")),
    }
}

impl Mla {
    /// Takes the layer's tensors under `path` (`model.layers.0.self_attn`), with `kv_b_proj`
    /// already split into `embed_q` / `unembed_out` ([`split_kv_b_proj`]).
    pub fn load(ck: &mut Checkpoint, path: &str, c: &MlaConfig) -> crate::Result<Mla> {
        let o_proj = ck.linear(
            &format!("{path}.o_proj"),
            c.num_heads * c.v_head_dim,
            c.hidden_size,
            c.attention_bias,
        )?;
        Self::load_with(ck, path, c, Some(o_proj))
    }

    /// The layer but its output projection (`o_proj`, given here, or `dense`, set after).
    fn load_with(
        ck: &mut Checkpoint,
        path: &str,
        c: &MlaConfig,
        o_proj: Option<MaybeQuantizedLinear>,
    ) -> crate::Result<Mla> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, h) = (c.hidden_size, c.num_heads);
        let (q_proj, q_a_proj, q_a_layernorm, q_b_proj) = load_query(ck, path, c)?;
        Ok(Mla {
            q_proj,
            q_a_proj,
            q_a_layernorm,
            q_b_proj,
            kv_a_proj_with_mqa: ck.linear(
                &p("kv_a_proj_with_mqa"),
                d,
                c.kv_lora_rank + c.qk_rope_head_dim,
                c.attention_bias,
            )?,
            kv_a_layernorm: ck.rms_norm(&p("kv_a_layernorm"), c.kv_lora_rank, 1e-6)?,
            embed_q: ck.multi_linear(&p("embed_q"), c.qk_nope_head_dim, c.kv_lora_rank, h)?,
            unembed_out: ck.multi_linear(&p("unembed_out"), c.kv_lora_rank, c.v_head_dim, h)?,
            o_proj,
            dense: None,
            g_proj: None,
            rope: c.rope.clone(),
            num_heads: h,
            qk_nope_head_dim: c.qk_nope_head_dim,
            kv_lora_rank: c.kv_lora_rank,
            qk_rope_head_dim: c.qk_rope_head_dim,
            scale: c.scale,
            nope: false,
            lora_scales: None,
            gate_per_head: false,
        })
    }

    /// Python: kimi_linear's `KimiMLAAttention`: [`load`](Self::load)'s layer without
    /// rotary embedding (`c.rope` unused), its `kv_a_layernorm` at `kv_norm_eps` (the
    /// config's `rms_norm_eps`, where DeepSeek's is 1e-6).
    pub fn load_nope(
        ck: &mut Checkpoint,
        path: &str,
        c: &MlaConfig,
        kv_norm_eps: f32,
    ) -> crate::Result<Mla> {
        let mut mla = Self::load(ck, path, c)?;
        mla.nope = true;
        mla.kv_a_layernorm.eps = kv_norm_eps;
        Ok(mla)
    }

    /// Python: bailing_hybrid's (and bailing_moe_v3's) `MultiLatentAttention`:
    /// [`load`](Self::load)'s layer with both RMSNorms (`q_a_layernorm`, `kv_a_layernorm`) at
    /// the config's `rms_norm_eps` and the output projection under `dense`
    /// (`c.attention_bias` its bias, as for `q_a_proj` and `kv_a_proj_with_mqa`).
    pub fn load_dense(
        ck: &mut Checkpoint,
        path: &str,
        c: &MlaConfig,
        norm_eps: f32,
    ) -> crate::Result<Mla> {
        let (d, h) = (c.hidden_size, c.num_heads);
        let dense = ck.linear(
            &format!("{path}.dense"),
            h * c.v_head_dim,
            d,
            c.attention_bias,
        )?;
        let mut mla = Self::load_with(ck, path, c, None)?;
        mla.dense = Some(dense);
        mla.kv_a_layernorm.eps = norm_eps;
        if let Some(n) = &mut mla.q_a_layernorm {
            n.eps = norm_eps;
        }
        Ok(mla)
    }

    /// Python: bailing_moe_v3's `BailingMLA` (transformers' `BailingHybridAttention`):
    /// [`load_dense`](Self::load_dense)'s layer with the head-wise sigmoid output gate
    /// `g_proj` (no bias).
    pub fn load_gated(
        ck: &mut Checkpoint,
        path: &str,
        c: &MlaConfig,
        norm_eps: f32,
    ) -> crate::Result<Mla> {
        let g_proj = ck.linear(&format!("{path}.g_proj"), c.hidden_size, c.num_heads, false)?;
        let mut mla = Self::load_dense(ck, path, c, norm_eps)?;
        mla.g_proj = Some(g_proj);
        mla.gate_per_head = true;
        Ok(mla)
    }

    /// Python: longcat_flash's `LongcatFlashMLA`: [`load`](Self::load)'s layer (both norms
    /// at 1e-6, as transformers' `LongcatFlashMLA` has them) with the queries scaled by
    /// `sqrt(hidden / q_lora_rank)` and the normed latent by `sqrt(hidden / kv_lora_rank)`
    /// (in f64 as Python, rounded once). Needs the low-rank query.
    pub fn load_lora_scaled(ck: &mut Checkpoint, path: &str, c: &MlaConfig) -> crate::Result<Mla> {
        let Some(q_rank) = c.q_lora_rank else {
            return Err(crate::Error::InvalidArgument(format!(
                "{path}: LongCat-Flash's MLA needs a q_lora_rank"
            )));
        };
        let mut mla = Self::load(ck, path, c)?;
        let d = c.hidden_size as f64;
        let q = (d / q_rank as f64).sqrt() as f32;
        let kv = (d / c.kv_lora_rank as f64).sqrt() as f32;
        mla.lora_scales = Some((q, kv));
        Ok(mla)
    }

    /// Python (deepseek_v3's `shard`, kimi_k3's for its MLA layers): the query's last
    /// projection (`q_proj`, or `q_b_proj` after the low-rank path) and the output gate keep
    /// this process's heads, the per-head up-projections of the latent (`embed_q`,
    /// `unembed_out`) this process's run of heads (`w[rank * h : (rank + 1) * h]`), and the
    /// output projection sums the heads' products over `group`. The latent and rotary key
    /// projections stay whole: every process computes the same cache. A head count the
    /// group size does not divide is an `Err` (Python divides regardless); on any error the
    /// layer is left as it was.
    pub fn shard(&mut self, group: &Group) -> Result<()> {
        let n = group.size();
        if self.num_heads % n != 0 {
            return Err(Error::InvalidArgument(format!(
                "[shard] {} latent attention heads do not split over {n} processes",
                self.num_heads
            )));
        }
        let mut m = self.clone();
        let (q, q_b) = shard_query((&self.q_proj, &self.q_b_proj), group)?;
        (m.q_proj, m.q_b_proj) = (q, q_b);
        let by_head = |_: &str, _: &Array| Some(ShardSpec::from(0));
        shard_inplace(&mut m.embed_q, &by_head, 1, group)?;
        shard_inplace(&mut m.unembed_out, &by_head, 1, group)?;
        m.g_proj = self
            .g_proj
            .as_ref()
            .map(|g| split_linear(g, Sharding::AllToSharded, group))
            .transpose()?;
        m.o_proj = self
            .o_proj
            .as_ref()
            .map(|o| split_linear(o, Sharding::ShardedToAll, group))
            .transpose()?;
        m.dense = self
            .dense
            .as_ref()
            .map(|o| split_linear(o, Sharding::ShardedToAll, group))
            .transpose()?;
        m.num_heads /= n;
        *self = m;
        Ok(())
    }

    fn rotate<'o>(&self, x: &Array, offset: impl Into<fast::RopeOffset<'o>>) -> Result<Array> {
        if self.nope {
            Ok(x.clone())
        } else {
            self.rope.forward(x, offset)
        }
    }

    /// Attention of rows `x` `[B * L, hidden]` (positions after what `cache` holds): rows out.
    pub fn forward(&self, x: &Array, rows: Rows, cache: Option<&mut LayerCache>) -> Result<Array> {
        let q = project_query(
            x,
            (
                &self.q_proj,
                &self.q_a_proj,
                &self.q_a_layernorm,
                &self.q_b_proj,
            ),
        )?;
        let mut q = heads(&q, rows, self.num_heads, None)?;
        if let Some((q_scale, _)) = self.lora_scales {
            q = ops::multiply(&q, q_scale)?;
        }
        let q = ops::split(&q, &[self.qk_nope_head_dim][..], -1)?;
        let (q_nope, q_pe) = (&q[0], &q[1]);
        let compressed = self.kv_a_proj_with_mqa.forward(x)?;
        let parts = ops::split(&compressed, &[self.kv_lora_rank][..], -1)?;
        let k_pe = heads(&parts[1], rows, 1, None)?;
        let mut kv_latent = self.kv_a_layernorm.forward(&parts[0])?;
        if let Some((_, kv_scale)) = self.lora_scales {
            kv_latent = ops::multiply(&kv_latent, kv_scale)?;
        }
        let kv_latent = heads(&kv_latent, rows, 1, None)?;

        let (q_pe, kv_latent, k_pe, mask) = match cache {
            None => {
                let mask = (rows.len > 1)
                    .then(|| causal_mask(rows.len, None))
                    .transpose()?;
                (
                    self.rotate(q_pe, 0)?,
                    kv_latent,
                    self.rotate(&k_pe, 0)?,
                    mask,
                )
            }
            Some(LayerCache::Kv(c)) => {
                let offset = c.rope_offset()?;
                let q_pe = self.rotate(q_pe, &offset)?;
                let k_pe = self.rotate(&k_pe, &offset)?;
                let (latent, pe, mask) = fetch(c, &kv_latent, &k_pe, rows.len)?;
                (q_pe, latent, pe, mask)
            }
            Some(other) => {
                return Err(wrong_input(&format!(
                    "an MLA layer got a {} (not a key/value cache)",
                    other.class_name()
                )))
            }
        };

        let pe_scores = ops::matmul(&ops::multiply(&q_pe, self.scale)?, &k_pe.swapaxes(-1, -2)?)?;
        let pe_scores = match &mask {
            Some(m) => ops::where_(m, &pe_scores, &lowest(pe_scores.dtype())?)?,
            None => pe_scores,
        };
        let mask = AttentionMask::Array(&pe_scores);
        let out = if rows.len == 1 {
            let q = self.embed_q.forward_heads(q_nope, true)?;
            let out = fast::scaled_dot_product_attention(
                &q, &kv_latent, &kv_latent, self.scale, mask, None,
            )?;
            self.unembed_out.forward_heads(&out, true)?
        } else {
            let k = self.embed_q.forward_heads(&kv_latent, false)?;
            let v = self.unembed_out.forward_heads(&kv_latent, true)?;
            fast::scaled_dot_product_attention(q_nope, &k, &v, self.scale, mask, None)?
        };
        let out = merge_heads(&out)?;
        let out = match &self.g_proj {
            Some(g) if self.gate_per_head => gate_heads(&out, &g.forward(x)?, self.num_heads)?,
            Some(g) => ops::multiply(&out, &ops::sigmoid(&g.forward(x)?)?)?,
            None => out,
        };
        match (&self.o_proj, &self.dense) {
            (Some(o), _) | (None, Some(o)) => o.forward(&out),
            (None, None) => Err(wrong_input("an MLA layer without its output projection")),
        }
    }
}

/// `shard_linear(l, sharding, group=group)`, as the layer's field holds it.
pub(crate) fn split_linear(
    l: &MaybeQuantizedLinear,
    sharding: Sharding,
    group: &Group,
) -> Result<MaybeQuantizedLinear> {
    Ok(MaybeQuantized::Sharded(Box::new(shard_linear(
        l, sharding, 1, group,
    )?)))
}

/// An MLA layer's query projection split by heads (Python: `q_proj`, or `q_b_proj` with the
/// low-rank path, "all-to-sharded"): the new `(q_proj, q_b_proj)`.
pub(crate) fn shard_query(
    q: (&Option<MaybeQuantizedLinear>, &Option<MaybeQuantizedLinear>),
    group: &Group,
) -> Result<(Option<MaybeQuantizedLinear>, Option<MaybeQuantizedLinear>)> {
    match q {
        (Some(q), _) => Ok((Some(split_linear(q, Sharding::AllToSharded, group)?), None)),
        (None, Some(b)) => Ok((None, Some(split_linear(b, Sharding::AllToSharded, group)?))),
        (None, None) => Err(wrong_input("an MLA layer without its query projection")),
    }
}

/// Python: `output * sigmoid(g_proj(x).astype(float32)).astype(output.dtype)[..., None]`:
/// rows `out` `[N, heads * v_head_dim]`, each head scaled by its gate of `gate` `[N, heads]`.
fn gate_heads(out: &Array, gate: &Array, heads: i32) -> Result<Array> {
    let n = out.shape()[0];
    let gate = ops::sigmoid(&gate.astype(Dtype::Float32)?)?.astype(out.dtype())?;
    let out = ops::multiply(
        &ops::reshape(out, &[n, heads, -1])?,
        &ops::expand_dims(&gate, -1)?,
    )?;
    ops::reshape(&out, &[n, -1])
}

/// Writes the new latents and rotary keys into the cache; returns what attention reads and
/// the boolean mask of it (`None`: every position). In
/// [prefix mode](crate::cache::KvCache::set_prefix_attention), the written prefix and
/// mlx_lm's mask (none for one new position, the causal array for several); otherwise the
/// whole buffers and the mask of the written positions.
fn fetch(
    c: &mut KvCache,
    latent: &Array,
    pe: &Array,
    length: i32,
) -> Result<(Array, Array, Option<Array>)> {
    if !c.prefix_attention() {
        let (latent, pe, mask) = c.update_and_fetch(latent, pe, None)?;
        return Ok((latent, pe, Some(mask)));
    }
    let end = c.offset.item::<i32>()? + length;
    let mask = if length > 1 || c.left_padding.is_some() {
        Some(c.mask(length, None)?.index((Ellipsis, ..end))?)
    } else {
        None
    };
    c.update(latent, pe)?;
    let latent = c.keys.index((.., .., ..end))?;
    let pe = c.values.index((.., .., ..end))?;
    Ok((latent, pe, mask))
}

impl TokenMixer for Mla {
    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        Mla::forward(self, x, ctx.rows, cache)
    }

    fn shard(&mut self, group: &Group) -> Result<()> {
        Mla::shard(self, group)
    }

    /// The compressed cache: keys the latent (`kv_lora_rank`), values the rotary key part
    /// (`qk_rope_head_dim`), one "head" (Python: a `KVCache` holding the same).
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Kv(KvCache::new(
            batch,
            1,
            capacity,
            (self.kv_lora_rank, self.qk_rope_head_dim),
            dtype,
        )?))
    }
}

/// Python: the `kv_b_proj` part of deepseek_v2/v3's `sanitize`: the up-projection of the
/// latent `kv_b_proj.weight [heads * (qk_nope + v_head), kv_lora_rank]` split per head into
/// `embed_q.weight [heads, kv_lora_rank, qk_nope]` (the key half, transposed) and
/// `unembed_out.weight [heads, v_head, kv_lora_rank]`. A quantized `kv_b_proj` is dequantized
/// (bits and group size read off the shapes, as mlx_lm infers them), split, and each half
/// quantized again with them. A checkpoint without `kv_b_proj` at `path` passes unchanged.
/// The sizes are the attention's `m`.
pub fn split_kv_b_proj(ck: &mut Checkpoint, path: &str, m: &MlaConfig) -> crate::Result<()> {
    let (num_heads, kv_lora_rank) = (m.num_heads, m.kv_lora_rank);
    let (qk_nope_head_dim, v_head_dim) = (m.qk_nope_head_dim, m.v_head_dim);
    let key = |name: &str| format!("{path}.{name}");
    let file = ck
        .weights_mut()
        .file_of(&key("kv_b_proj.weight"))
        .map(|p| p.to_path_buf())
        .unwrap_or_else(|| ck.dir().to_path_buf());
    let Some(weight) = ck.weights_mut().take(&key("kv_b_proj.weight")) else {
        return Ok(());
    };
    let mlx = |source| crate::Error::Mlx {
        path: file.clone(),
        source,
    };
    let scales = ck.weights_mut().take(&key("kv_b_proj.scales"));
    let biases = ck.weights_mut().take(&key("kv_b_proj.biases"));
    let quantized = match (scales, biases) {
        (Some(scales), Some(biases)) => {
            let packed = weight.shape().last().copied().unwrap_or(0);
            let groups = scales.shape().last().copied().unwrap_or(0);
            if kv_lora_rank <= 0 || groups <= 0 || kv_lora_rank % groups != 0 {
                return Err(crate::config::invalid(
                    &file,
                    &key("kv_b_proj.scales"),
                    &format!("{groups} groups do not fit kv_lora_rank {kv_lora_rank}"),
                ));
            }
            let bits = packed * 32 / kv_lora_rank;
            let group_size = kv_lora_rank / groups;
            let options = ops::DequantizeOptions::default()
                .biases(&biases)
                .bits(bits)
                .group_size(group_size);
            let w = ops::dequantize(&weight, &scales, options).map_err(mlx)?;
            Some((w, bits, group_size))
        }
        (None, None) => None,
        _ => {
            return Err(crate::config::invalid(
                &file,
                &key("kv_b_proj.scales"),
                "a quantized kv_b_proj needs both scales and biases",
            ))
        }
    };
    let (w, q) = match quantized {
        Some((w, bits, group_size)) => (w, Some((bits, group_size))),
        None => (weight, None),
    };
    let split = || -> Result<(Array, Array)> {
        let v = ops::reshape(&w, &[num_heads, qk_nope_head_dim + v_head_dim, -1])?;
        let wk = ops::contiguous(
            &v.index((.., ..qk_nope_head_dim, ..))?.swapaxes(-1, -2)?,
            false,
        )?;
        let wv = ops::contiguous(&v.index((.., qk_nope_head_dim.., ..))?, false)?;
        Ok((wk, wv))
    };
    let (wk, wv) = split().map_err(mlx)?;
    for (name, w) in [("embed_q", wk), ("unembed_out", wv)] {
        match q {
            Some((bits, group_size)) => {
                // mlx_lm's sanitize re-quantizes in the affine mode (it reads `biases`).
                let (w, s, b) =
                    quantize(&w, group_size, bits, QuantizationMode::Affine).map_err(mlx)?;
                ck.weights_mut()
                    .insert(key(&format!("{name}.weight")), w, file.clone());
                ck.weights_mut()
                    .insert(key(&format!("{name}.scales")), s, file.clone());
                if let Some(b) = b {
                    ck.weights_mut()
                        .insert(key(&format!("{name}.biases")), b, file.clone());
                }
            }
            None => ck
                .weights_mut()
                .insert(key(&format!("{name}.weight")), w, file.clone()),
        }
    }
    Ok(())
}
