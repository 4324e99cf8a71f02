//! Kimi delta attention (KDA; Python: kimi_linear's `KimiDeltaAttention`, kimi_k3's
//! `KimiK3DeltaAttention`, bailing_moe_v3's `BailingKDA`): q, k and v through SiLU short
//! convolutions, L2-normed, then the gated delta rule with a decay gate per key channel, its
//! output RMS-normed per head and gated by a sigmoid.
//!
//! The three models differ in how the parts are stored and in a few casts, each a
//! [`KdaConfig`] field; the parameter paths are each model's (mlx_lm's), the absent parts no
//! part of the tree:
//!
//! | | kimi_linear | kimi_k3 | bailing_moe_v3 |
//! |---|---|---|---|
//! | q, k, v ([`KdaInputs`]) | `q_proj`, `q_conv.conv`.. | `qkv_proj`, `qkv_conv.conv` | `q_proj`, `q_conv1d`.. |
//! | decay projection ([`Rank`]) | `f_a_proj` → `f_b_proj` | low | `f_proj` |
//! | output gate ([`Rank`]) | `g_a_proj` → `g_b_proj` | either | `g_proj` |
//! | decay gate ([`DecayGate`]) | softplus | either | lower bound |
//! | `A_log` | `[1, 1, heads, 1]` | `[heads]` | `[heads]` |
//! | gates in float32 | no | no | yes |
//!
//! Its state (Python: `ArraysCache(size=4)`, or `size=2` with the fused convolution) is the
//! convolutions' last inputs `[batch, kernel - 1, channels]` in the model's dtype, then the
//! recurrent state `[batch, heads, head_dim, head_dim]` in float32: leaves of the model's
//! cache tree, which goes through `compile_mut` like any other state.

use mlx_nn::Frozen;
use mlx_nn::{Conv1d, Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::conv::{causal_conv1d, conv_state, load_depthwise_conv1d, ConvActivation};
use crate::blocks::decoder::TokenMixer;
use crate::blocks::gated_delta_net::normalize_qk;
use crate::blocks::layer::LayerContext;
use crate::blocks::mla::Mla;
use crate::blocks::rows::{arrays_entry, wrong_input, Rows};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::Checkpoint;
use crate::kernels::gated_delta::{gated_delta_update_gated, DecayGate};
use crate::weights::Weights;

/// How a [`KimiDeltaAttention`] stores its q, k and v projections and convolutions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KdaInputs {
    /// kimi_linear: `q_proj`, `k_proj`, `v_proj`, each through its own [`ShortConv1d`]
    /// (`q_conv.conv`, ...); the state's slots 0-2 are the convolutions', 3 the recurrence's.
    ShortConvs,
    /// bailing_moe_v3: the same with bare convolutions (`q_conv1d`, ...).
    Conv1ds,
    /// kimi_k3: one `qkv_proj` (`[q | k | v]`) through one `qkv_conv.conv`; the state's slot
    /// 0 is the convolution's, 1 the recurrence's.
    Fused,
}

/// A projection from the hidden size to `heads * head_dim`: one matrix (`{name}_proj`) or two
/// through `head_dim` (`{name}_a_proj` → `{name}_b_proj`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rank {
    Full,
    Low,
}

/// The sizes and the form of a [`KimiDeltaAttention`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KdaConfig {
    pub hidden_size: i32,
    pub num_heads: i32,
    pub head_dim: i32,
    pub conv_kernel: i32,
    pub rms_norm_eps: f32,
    pub inputs: KdaInputs,
    /// The decay gate's input projection: `f_proj` or `f_a_proj` → `f_b_proj`.
    pub decay_proj: Rank,
    /// The output gate: `g_proj` or `g_a_proj` → `g_b_proj`.
    pub output_gate: Rank,
    pub decay_gate: DecayGate,
    /// `A_log` stored as Python's kimi_linear makes it, `[1, 1, heads, 1]` (else `[heads]`).
    pub a_log_expanded: bool,
    /// bailing_moe_v3: the write strength's logits cast to float32 before the sigmoid, and
    /// the output gate's sigmoid taken in float32 and cast back.
    pub float32_gates: bool,
}

impl KdaConfig {
    fn projection_dim(&self) -> i32 {
        self.num_heads * self.head_dim
    }
}

/// Python: `ShortConv1d`: a depthwise convolution without bias, then SiLU, under `conv`.
#[derive(Debug, Clone, TreeNode)]
pub struct ShortConv1d {
    pub conv: Conv1d,
}

/// Python: `KimiDeltaAttention` and its kimi_k3 and bailing_moe_v3 forms: of the optional
/// parts, those [`KdaConfig`] names are present.
#[derive(Debug, Clone, TreeNode)]
pub struct KimiDeltaAttention {
    pub q_proj: Option<MaybeQuantizedLinear>,
    pub k_proj: Option<MaybeQuantizedLinear>,
    pub v_proj: Option<MaybeQuantizedLinear>,
    pub qkv_proj: Option<MaybeQuantizedLinear>,
    pub q_conv: Option<ShortConv1d>,
    pub k_conv: Option<ShortConv1d>,
    pub v_conv: Option<ShortConv1d>,
    pub q_conv1d: Option<Conv1d>,
    pub k_conv1d: Option<Conv1d>,
    pub v_conv1d: Option<Conv1d>,
    pub qkv_conv: Option<ShortConv1d>,
    pub f_proj: Option<MaybeQuantizedLinear>,
    pub f_a_proj: Option<MaybeQuantizedLinear>,
    pub f_b_proj: Option<MaybeQuantizedLinear>,
    pub b_proj: MaybeQuantizedLinear,
    pub g_proj: Option<MaybeQuantizedLinear>,
    pub g_a_proj: Option<MaybeQuantizedLinear>,
    pub g_b_proj: Option<MaybeQuantizedLinear>,
    /// `[heads]` or `[1, 1, heads, 1]` (read as `[heads, 1]`), float32.
    #[tree(rename = "A_log")]
    pub a_log: Array,
    /// `[heads * head_dim]` (read as `[heads, head_dim]`), float32.
    pub dt_bias: Array,
    pub o_norm: RMSNorm,
    pub o_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub num_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub decay_gate: DecayGate,
    #[tree(static)]
    pub float32_gates: bool,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

/// A projection of `rank` named `name` (`{name}_proj`, or `{name}_a_proj` → `{name}_b_proj`
/// through `mid`): the one, or the pair.
type Projection = (
    Option<MaybeQuantizedLinear>,
    Option<MaybeQuantizedLinear>,
    Option<MaybeQuantizedLinear>,
);

fn load_projection(
    ck: &mut Checkpoint,
    path: &str,
    name: &str,
    rank: Rank,
    (d, mid, out): (i32, i32, i32),
) -> crate::Result<Projection> {
    Ok(match rank {
        Rank::Full => (
            Some(ck.linear(&format!("{path}.{name}_proj"), d, out, false)?),
            None,
            None,
        ),
        Rank::Low => (
            None,
            Some(ck.linear(&format!("{path}.{name}_a_proj"), d, mid, false)?),
            Some(ck.linear(&format!("{path}.{name}_b_proj"), mid, out, false)?),
        ),
    })
}

/// `x` through the projection `(full, a, b)`.
fn project(
    x: &Array,
    full: &Option<MaybeQuantizedLinear>,
    a: &Option<MaybeQuantizedLinear>,
    b: &Option<MaybeQuantizedLinear>,
) -> Result<Array> {
    match (full, a, b) {
        (Some(p), ..) => p.forward(x),
        (None, Some(a), Some(b)) => b.forward(&a.forward(x)?),
        _ => Err(wrong_input("a KDA layer without one of its projections")),
    }
}

impl KimiDeltaAttention {
    /// Takes the layer's tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        c: &KdaConfig,
    ) -> crate::Result<KimiDeltaAttention> {
        let (d, h, dk, pd) = (c.hidden_size, c.num_heads, c.head_dim, c.projection_dim());
        let p = |name: &str| format!("{path}.{name}");
        let mut kda = KimiDeltaAttention {
            frozen: Frozen::default(),
            q_proj: None,
            k_proj: None,
            v_proj: None,
            qkv_proj: None,
            q_conv: None,
            k_conv: None,
            v_conv: None,
            q_conv1d: None,
            k_conv1d: None,
            v_conv1d: None,
            qkv_conv: None,
            f_proj: None,
            f_a_proj: None,
            f_b_proj: None,
            b_proj: ck.linear(&p("b_proj"), d, h, false)?,
            g_proj: None,
            g_a_proj: None,
            g_b_proj: None,
            a_log: if c.a_log_expanded {
                ck.array(&p("A_log"), &[1, 1, h, 1])?
            } else {
                ck.array(&p("A_log"), &[h])?
            },
            dt_bias: ck.array(&p("dt_bias"), &[pd])?,
            o_norm: ck.rms_norm(&p("o_norm"), dk, c.rms_norm_eps)?,
            o_proj: ck.linear(&p("o_proj"), pd, d, false)?,
            num_heads: h,
            head_dim: dk,
            decay_gate: c.decay_gate,
            float32_gates: c.float32_gates,
        };
        let mut conv = |name: &str, channels: i32| {
            load_depthwise_conv1d(ck, &p(name), channels, c.conv_kernel, false)
        };
        let short = |conv: Conv1d| Some(ShortConv1d { conv });
        match c.inputs {
            KdaInputs::Fused => kda.qkv_conv = short(conv("qkv_conv.conv", 3 * pd)?),
            KdaInputs::ShortConvs => {
                kda.q_conv = short(conv("q_conv.conv", pd)?);
                kda.k_conv = short(conv("k_conv.conv", pd)?);
                kda.v_conv = short(conv("v_conv.conv", pd)?);
            }
            KdaInputs::Conv1ds => {
                kda.q_conv1d = Some(conv("q_conv1d", pd)?);
                kda.k_conv1d = Some(conv("k_conv1d", pd)?);
                kda.v_conv1d = Some(conv("v_conv1d", pd)?);
            }
        }
        if c.inputs == KdaInputs::Fused {
            kda.qkv_proj = Some(ck.linear(&p("qkv_proj"), d, 3 * pd, false)?);
        } else {
            kda.q_proj = Some(ck.linear(&p("q_proj"), d, pd, false)?);
            kda.k_proj = Some(ck.linear(&p("k_proj"), d, pd, false)?);
            kda.v_proj = Some(ck.linear(&p("v_proj"), d, pd, false)?);
        }
        (kda.f_proj, kda.f_a_proj, kda.f_b_proj) =
            load_projection(ck, path, "f", c.decay_proj, (d, dk, pd))?;
        (kda.g_proj, kda.g_a_proj, kda.g_b_proj) =
            load_projection(ck, path, "g", c.output_gate, (d, dk, pd))?;
        Ok(kda)
    }

    /// The separate convolutions, each with its projection, in state slot order.
    fn separate(&self) -> Option<[(&MaybeQuantizedLinear, &Conv1d); 3]> {
        let convs = match (&self.q_conv, &self.k_conv, &self.v_conv) {
            (Some(q), Some(k), Some(v)) => [&q.conv, &k.conv, &v.conv],
            _ => [
                self.q_conv1d.as_ref()?,
                self.k_conv1d.as_ref()?,
                self.v_conv1d.as_ref()?,
            ],
        };
        let projs = [
            self.q_proj.as_ref()?,
            self.k_proj.as_ref()?,
            self.v_proj.as_ref()?,
        ];
        Some([0, 1, 2].map(|i| (projs[i], convs[i])))
    }

    /// The state's slot of the recurrence (after the convolutions').
    fn state_slot(&self) -> usize {
        if self.qkv_conv.is_some() {
            1
        } else {
            3
        }
    }

    /// q, k and v `[B * L, heads * head_dim]` through their convolutions, which read and
    /// write `cache`'s first slots.
    fn convolved(
        &self,
        x: &Array,
        rows: Rows,
        mask: Option<&Array>,
        mut cache: Option<&mut ArraysCache>,
    ) -> Result<[Array; 3]> {
        let mut conv = |proj: &MaybeQuantizedLinear, conv: &Conv1d, slot: usize| {
            causal_conv1d(
                conv,
                &rows.unfold(&proj.forward(x)?)?,
                mask,
                cache.as_deref_mut(),
                slot,
                ConvActivation::Silu,
            )
        };
        if let (Some(proj), Some(c)) = (&self.qkv_proj, &self.qkv_conv) {
            let qkv = conv(proj, &c.conv, 0)?;
            let pd = self.num_heads * self.head_dim;
            let mut parts = ops::split(&qkv, &[pd, 2 * pd][..], -1)?.into_iter();
            let mut next = || parts.next().ok_or_else(|| wrong_input("a split of three"));
            return Ok([next()?, next()?, next()?]);
        }
        let [q, k, v] = self
            .separate()
            .ok_or_else(|| wrong_input("a KDA layer without its q, k, v convolutions"))?;
        Ok([conv(q.0, q.1, 0)?, conv(k.0, k.1, 1)?, conv(v.0, v.1, 2)?])
    }

    /// The layer over rows `x` `[B * L, hidden]`, continuing `cache`'s state; `use_kernel`
    /// allows the one-kernel recurrence where it applies. A right-padded batch's padding
    /// (the cache's mask) enters neither the convolution states nor the recurrent one.
    pub fn forward(
        &self,
        x: &Array,
        rows: Rows,
        use_kernel: bool,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let (b, t, h, dk) = (rows.batch, rows.len, self.num_heads, self.head_dim);
        let mut cache = arrays_entry(cache, "a KDA layer")?;
        let mask = match &cache {
            Some(c) => c.make_mask(t)?,
            None => None,
        };
        let [q, k, v] = self.convolved(x, rows, mask.as_ref(), cache.as_deref_mut())?;
        let shape = [b, t, h, dk];
        let q = ops::reshape(&q, &shape)?;
        let k = ops::reshape(&k, &shape)?;
        let v = ops::reshape(&v, &shape)?;
        let (q, k) = normalize_qk(&q, &k, (dk as f64).powf(-0.5), 1e-6)?;

        let a = ops::reshape(
            &project(x, &self.f_proj, &self.f_a_proj, &self.f_b_proj)?,
            &shape,
        )?;
        let mut beta_in = ops::reshape(&self.b_proj.forward(x)?, &[b, t, h])?;
        if self.float32_gates {
            beta_in = beta_in.astype(Dtype::Float32)?;
        }
        let slot = self.state_slot();
        let state = match &cache {
            Some(c) => c[slot].clone(),
            None => ops::zeros(&[b, h, dk, dk], Dtype::Float32)?,
        };
        let (out, state) = gated_delta_update_gated(
            &q,
            &k,
            &v,
            &a,
            &beta_in,
            &ops::reshape(&self.a_log, &[h, 1])?,
            &ops::reshape(&self.dt_bias, &[h, dk])?,
            state,
            mask.as_ref(),
            use_kernel,
            self.decay_gate,
        )?;
        if let Some(c) = cache {
            c[slot] = state;
            c.advance(t)?;
        }
        let gate = project(x, &self.g_proj, &self.g_a_proj, &self.g_b_proj)?;
        let gate = ops::reshape(&gate, &shape)?;
        let out = self.o_norm.forward(&ops::reshape(&out, &shape)?)?;
        let gate = if self.float32_gates {
            ops::sigmoid(&gate.astype(Dtype::Float32)?)?.astype(out.dtype())?
        } else {
            ops::sigmoid(&gate)?
        };
        let out = ops::multiply(&out, &gate)?;
        self.o_proj.forward(&ops::reshape(&out, &[b * t, -1])?)
    }

    /// The convolutions' states and the float32 recurrent state (Python: `ArraysCache`,
    /// filled on the first call).
    pub fn make_cache(&self, batch: i32, dtype: Dtype) -> Result<LayerCache> {
        let dk = self.head_dim;
        let mut slots = match (&self.qkv_conv, self.separate()) {
            (Some(c), _) => vec![conv_state(&c.conv, batch, dtype)?],
            (None, Some(parts)) => parts
                .iter()
                .map(|(_, c)| conv_state(c, batch, dtype))
                .collect::<Result<_>>()?,
            (None, None) => {
                return Err(wrong_input("a KDA layer without its q, k, v convolutions"))
            }
        };
        slots.push(ops::zeros(
            &[batch, self.num_heads, dk, dk],
            Dtype::Float32,
        )?);
        Ok(LayerCache::Arrays(ArraysCache::new(slots)))
    }
}

/// A Kimi layer's `self_attn` (kimi_linear, kimi_k3; Python: one attribute, either class):
/// KDA or multi-head latent attention.
// One per layer, built once at load.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, TreeNode)]
#[tree(transparent)]
pub enum KimiMixer {
    Kda(KimiDeltaAttention),
    #[tree(other)]
    Mla(Mla),
}

impl TokenMixer for KimiMixer {
    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        match self {
            KimiMixer::Kda(kda) => kda.forward(x, ctx.rows, ctx.kernels.fused_gated_delta, cache),
            KimiMixer::Mla(mla) => mla.forward(x, ctx.rows, cache),
        }
    }

    /// A KDA layer's arrays, an MLA layer's compressed key/value cache (Python:
    /// `ArraysCache` / `KVCache()`).
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match self {
            KimiMixer::Kda(kda) => kda.make_cache(batch, dtype),
            KimiMixer::Mla(mla) => TokenMixer::make_cache(mla, batch, capacity, dtype),
        }
    }
}

/// Python's sanitize (kimi_linear, kimi_k3) of the KDA layer's tensors under `path`: each
/// `{q,k,v}_conv1d.weight` (a checkpoint's `[C, 1, K]`) becomes `{q,k,v}_conv.conv.weight`
/// (MLX's `[C, K, 1]`; one already so stays), and `dt_bias` is flattened.
pub fn sanitize_short_convs(w: &mut Weights, path: &str) -> crate::Result<()> {
    for name in ["q", "k", "v"] {
        let key = format!("{path}.{name}_conv1d.weight");
        let file = w.file_of(&key).map(|f| f.to_path_buf()).unwrap_or_default();
        if let Some(v) = w.take(&key) {
            let v = match v.ndim() {
                3 => ops::moveaxis(&v, 2, 1).map_err(|source| crate::Error::Mlx {
                    path: file.clone(),
                    source,
                })?,
                _ => v,
            };
            w.insert(format!("{path}.{name}_conv.conv.weight"), v, file);
        }
    }
    flatten(w, &format!("{path}.dt_bias"))
}

/// Flattens the tensor `key` when present (Python: `v.reshape(-1)`).
pub fn flatten(w: &mut Weights, key: &str) -> crate::Result<()> {
    let file = w.file_of(key).map(|f| f.to_path_buf()).unwrap_or_default();
    if let Some(v) = w.take(key) {
        let v = match v.ndim() {
            0 | 1 => v,
            _ => ops::reshape(&v, &[-1]).map_err(|source| crate::Error::Mlx {
                path: file.clone(),
                source,
            })?,
        };
        w.insert(key.to_string(), v, file);
    }
    Ok(())
}
