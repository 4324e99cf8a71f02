//! `plamo2` (Python: `mlx_lm.models.plamo2`): PLaMo 2, Mamba-2 (SSD) layers with an attention
//! layer every `mamba_step`-th, each layer wrapped in four RMSNorms (before and after the mixer,
//! before and after the MLP) whose weights are stored as offsets from fixed constants.
//!
//! Its Mamba mixer is the SSD of [`blocks::ssd`](crate::blocks::ssd) with PLaMo's own front:
//! `in_proj` yields `z` and `x` interleaved per head, only `x` is convolved, and `B`, `C`,
//! `dt` come from a projection of the convolved `x`, each RMS-normalized with its own weight,
//! `dt` then projected to the heads. Its attention normalizes queries and keys per head
//! without a weight and multiplies them by a per-head weight after.

use mlx_nn::Frozen;
use mlx_nn::{Conv1d, Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear};
use mlx_rs::{fast, ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::attention::attend;
use crate::blocks::conv::{
    causal_conv1d, conv_state, load_depthwise_conv1d, sanitize_conv_weights, ConvActivation,
};
use crate::blocks::mlp::swiglu;
use crate::blocks::rows::{arrays_entry, heads, merge_heads};
use crate::blocks::ssd::{ssm_update, SsmInputs};
use crate::blocks::{forward_layers, Layer, LayerContext, RotaryEmbedding, Rows};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;
use crate::models::base::own_stack_language_model;

/// The slots of a Mamba layer's [`ArraysCache`] (Python: `ArraysCache(size=2)`): the
/// convolution's last inputs `[batch, kernel - 1, heads * head_dim]`, the SSM state
/// `[batch, heads, head_dim, state]` in float32.
const CONV: usize = 0;
const SSM: usize = 1;

/// Python: `ssm_update`'s default `time_step_limit`, which plamo2 does not override.
const TIME_STEP_LIMIT: (f32, f32) = (0.001, 100.0);

/// Python: plamo2's `ModelArgs`.
#[derive(Debug, Clone)]
pub struct Plamo2Args {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: i32,
    pub rms_norm_eps: f32,
    pub tie_word_embeddings: bool,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    /// The width of an attention head and of a Mamba head.
    pub hidden_size_per_head: i32,
    pub mamba_d_state: i32,
    pub mamba_d_conv: i32,
    pub mamba_num_heads: i32,
    pub intermediate_size: i32,
    /// Per layer: a Mamba layer, else attention.
    pub mamba: Vec<bool>,
}

impl Plamo2Args {
    /// Reads the config with mlx_lm's defaults (PLaMo 2 has no transformers config class; its
    /// keys are those of mlx_lm's `ModelArgs`, which follows the published checkpoints').
    ///
    /// As mlx_lm, every attention layer attends to the whole cache: `attention_window_size`
    /// and `full_attention_idx` are read by neither (mlx_lm's `make_cache` leaves a sliding
    /// window as a TODO), so a sequence longer than the window is computed as mlx_lm
    /// computes it.
    pub fn from_config(c: &ModelConfig) -> crate::Result<Plamo2Args> {
        // mlx_lm computes SiLU (the MLP's SwiGLU, the convolution) whatever a config says;
        // the published configs name no activation.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // The SSD's chunk length only groups its sums (mlx_lm's `ssm_attn` uses 256 whatever
        // the config says); max_position_embeddings bounds nothing in plain RoPE.
        // attention_window_size / full_attention_idx: see above.
        c.declare_neutral(&[
            "mamba_chunk_size",
            "max_position_embeddings",
            "attention_window_size",
            "full_attention_idx",
        ]);
        let layers = c.dim_or("num_hidden_layers", Some(32))?;
        let step = c.dim_or("mamba_step", Some(2))?;
        if step < 2 {
            return Err(invalid(
                c.path(),
                &c.key("mamba_step"),
                &format!("{step}: must be at least 2 (mlx_lm asserts it)"),
            ));
        }
        let enabled = c.bool_or("mamba_enabled", true)?;
        let args = Plamo2Args {
            vocab_size: c.dim_or("vocab_size", Some(32000))?,
            hidden_size: c.dim_or("hidden_size", Some(4096))?,
            num_hidden_layers: layers,
            rms_norm_eps: c.float_or("rms_norm_eps", 1e-6)? as f32,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
            num_attention_heads: c.dim_or("num_attention_heads", Some(32))?,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(4))?,
            hidden_size_per_head: c.dim_or("hidden_size_per_head", Some(128))?,
            mamba_d_state: c.dim_or("mamba_d_state", Some(64))?,
            mamba_d_conv: c.dim_or("mamba_d_conv", Some(4))?,
            mamba_num_heads: c.dim_or("mamba_num_heads", Some(64))?,
            intermediate_size: c.dim_or("intermediate_size", Some(13312))?,
            mamba: (0..layers)
                .map(|i| is_mamba(enabled, step, layers, i))
                .collect(),
        };
        if args.num_attention_heads % args.num_key_value_heads != 0 {
            return Err(invalid(
                c.path(),
                &c.key("num_key_value_heads"),
                "must divide num_attention_heads",
            ));
        }
        Ok(args)
    }
}

/// Python: `is_mamba`: with Mamba enabled, every layer but each `step`-th (from `step / 2`)
/// is a Mamba layer; a model of at most `step / 2` layers has attention in its last only.
fn is_mamba(enabled: bool, step: i32, layers: i32, i: i32) -> bool {
    if !enabled {
        return false;
    }
    if layers <= step / 2 {
        return i != layers - 1;
    }
    i % step != step / 2
}

/// Python: plamo2's `RMSNorm`: `rms_norm(x, weight + offset)`, the weight stored as an
/// offset from a constant (1 for the pre-norms and the final norm, 1/5 after the mixer,
/// 5^-1.5 after the MLP).
#[derive(Debug, Clone, TreeNode)]
pub struct OffsetRmsNorm {
    pub weight: Array,
    #[tree(static)]
    pub eps: f32,
    #[tree(static)]
    pub offset: f32,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl OffsetRmsNorm {
    fn load(
        ck: &mut Checkpoint,
        path: &str,
        dims: i32,
        eps: f32,
        offset: f64,
    ) -> crate::Result<Self> {
        Ok(OffsetRmsNorm {
            frozen: Frozen::default(),
            weight: ck.array(&format!("{path}.weight"), &[dims])?,
            eps,
            // Python: a float the addition rounds to the weight's float32.
            offset: offset as f32,
        })
    }
}

impl Forward for OffsetRmsNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        fast::rms_norm(x, Some(&ops::add(&self.weight, self.offset)?), self.eps)
    }
}

/// Python: plamo2's `Mamba`.
#[derive(Debug, Clone, TreeNode)]
pub struct Plamo2Mamba {
    pub in_proj: MaybeQuantizedLinear,
    pub conv1d: Conv1d,
    pub bcdt_proj: MaybeQuantizedLinear,
    pub dt_proj: MaybeQuantizedLinear,
    pub dt_bias: Array,
    #[tree(rename = "A_log")]
    pub a_log: Array,
    #[tree(rename = "D")]
    pub d: Array,
    pub dt_norm_weight: Array,
    #[tree(rename = "B_norm_weight")]
    pub b_norm_weight: Array,
    #[tree(rename = "C_norm_weight")]
    pub c_norm_weight: Array,
    pub out_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub num_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub d_state: i32,
    #[tree(static)]
    pub eps: f32,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl Plamo2Mamba {
    /// Takes the mixer's tensors under `path`.
    pub fn load(ck: &mut Checkpoint, path: &str, a: &Plamo2Args) -> crate::Result<Plamo2Mamba> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, h, n) = (a.hidden_size, a.mamba_num_heads, a.mamba_d_state);
        let inner = h * a.hidden_size_per_head;
        // Python: max(64, hidden_size // 16).
        let dt_dim = (d / 16).max(64);
        Ok(Plamo2Mamba {
            frozen: Frozen::default(),
            in_proj: ck.linear(&p("in_proj"), d, 2 * inner, false)?,
            conv1d: load_depthwise_conv1d(ck, &p("conv1d"), inner, a.mamba_d_conv, false)?,
            bcdt_proj: ck.linear(&p("bcdt_proj"), inner, dt_dim + 2 * n, false)?,
            dt_proj: ck.linear(&p("dt_proj"), dt_dim, h, false)?,
            dt_bias: ck.array(&p("dt_bias"), &[h])?,
            a_log: ck.array(&p("A_log"), &[h])?,
            d: ck.array(&p("D"), &[h])?,
            dt_norm_weight: ck.array(&p("dt_norm_weight"), &[dt_dim])?,
            b_norm_weight: ck.array(&p("B_norm_weight"), &[n])?,
            c_norm_weight: ck.array(&p("C_norm_weight"), &[n])?,
            out_proj: ck.linear(&p("out_proj"), inner, d, false)?,
            num_heads: h,
            head_dim: a.hidden_size_per_head,
            d_state: n,
            eps: a.rms_norm_eps,
        })
    }

    /// The mixer over rows `x` `[B * L, hidden]`, continuing `cache`'s state (a decode step
    /// through the one-kernel SSM update where it applies and `use_kernel` allows it).
    fn forward(
        &self,
        x: &Array,
        rows: Rows,
        use_kernel: bool,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let mut cache = arrays_entry(cache, "a plamo2 Mamba layer")?;
        let (b, l, h, p) = (rows.batch, rows.len, self.num_heads, self.head_dim);
        // z and x alternate per head: [z_0, x_0, z_1, x_1, ...].
        let zx = ops::reshape(&self.in_proj.forward(x)?, &[b, l, h, 2 * p])?;
        let parts = ops::split(&zx, &[p][..], -1)?;
        let (z, x) = (&parts[0], &parts[1]);
        let mask = match &cache {
            Some(c) => c.make_mask(l)?,
            None => None,
        };
        let x = causal_conv1d(
            &self.conv1d,
            &ops::reshape(x, &[b, l, h * p])?,
            mask.as_ref(),
            cache.as_deref_mut(),
            CONV,
            ConvActivation::Silu,
        )?;
        let bcdt = self.bcdt_proj.forward(&x)?;
        let n = self.d_state;
        let parts = ops::split(&bcdt, &[n, 2 * n][..], -1)?;
        let b_in = fast::rms_norm(&parts[0], Some(&self.b_norm_weight), self.eps)?;
        let c_in = fast::rms_norm(&parts[1], Some(&self.c_norm_weight), self.eps)?;
        let dt = fast::rms_norm(&parts[2], Some(&self.dt_norm_weight), self.eps)?;
        let dt = self.dt_proj.forward(&dt)?;
        let hidden = ops::reshape(&x, &[b, l, h, p])?;
        let b_in = ops::reshape(&b_in, &[b, l, 1, n])?;
        let c_in = ops::reshape(&c_in, &[b, l, 1, n])?;
        let inputs = SsmInputs {
            x: &hidden,
            a_log: &self.a_log,
            b: &b_in,
            c: &c_in,
            d: &self.d,
            dt: &dt,
            dt_bias: &self.dt_bias,
            time_step_limit: TIME_STEP_LIMIT,
        };
        let y = match cache {
            Some(cache) => {
                let (y, state) = ssm_update(
                    &inputs,
                    Some(cache[SSM].clone()),
                    mask.as_ref(),
                    cache.lengths.clone().as_ref(),
                    use_kernel,
                )?;
                cache[SSM] = state;
                cache.advance(l)?;
                y
            }
            None => ssm_update(&inputs, None, mask.as_ref(), None, use_kernel)?.0,
        };
        let y = ops::reshape(&y, &[b * l, h * p])?;
        let z = ops::reshape(z, &[b * l, h * p])?;
        self.out_proj.forward(&swiglu(&z, &y)?)
    }

    fn make_cache(&self, batch: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Arrays(ArraysCache::new(vec![
            conv_state(&self.conv1d, batch, dtype)?,
            ops::zeros(
                &[batch, self.num_heads, self.head_dim, self.d_state],
                Dtype::Float32,
            )?,
        ])))
    }
}

/// Python: plamo2's `Attention`: a fused `qkv_proj`; queries and keys RMS-normalized per head
/// without a weight (eps 1e-6), then times a per-head weight (`q_weight`, `k_weight` `[heads,
/// head_dim]`); RoPE over the whole head, base 10000.
#[derive(Debug, Clone, TreeNode)]
pub struct Plamo2Attention {
    pub qkv_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_weight: Array,
    pub k_weight: Array,
    pub rope: RotaryEmbedding,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl Plamo2Attention {
    /// Takes the mixer's tensors under `path`.
    pub fn load(ck: &mut Checkpoint, path: &str, a: &Plamo2Args) -> crate::Result<Self> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, h, kv, hd) = (
            a.hidden_size,
            a.num_attention_heads,
            a.num_key_value_heads,
            a.hidden_size_per_head,
        );
        Ok(Plamo2Attention {
            frozen: Frozen::default(),
            qkv_proj: ck.linear(&p("qkv_proj"), d, (h + 2 * kv) * hd, false)?,
            o_proj: ck.linear(&p("o_proj"), h * hd, d, false)?,
            q_weight: ck.array(&p("q_weight"), &[h, hd])?,
            k_weight: ck.array(&p("k_weight"), &[kv, hd])?,
            // Python: `nn.RoPE(head_dim)`, whatever the config says.
            rope: RotaryEmbedding::plain(hd, false, 10000.0),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
            scale: (hd as f64).powf(-0.5) as f32,
        })
    }

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let rows = ctx.rows;
        let hd = self.head_dim;
        let (q_dim, kv_dim) = (self.n_heads * hd, self.n_kv_heads * hd);
        let qkv = self.qkv_proj.forward(x)?;
        let parts = ops::split(&qkv, &[q_dim, q_dim + kv_dim][..], -1)?;
        // Per head: rms_norm without a weight, then the head's weight ([heads, 1, head_dim]
        // against [batch, heads, length, head_dim]).
        let normed = |x: &Array, n: i32, weight: &Array| -> Result<Array> {
            let x = fast::rms_norm(&heads(x, rows, n, None)?, None, 1e-6)?;
            ops::multiply(&x, &ops::expand_dims(weight, 1)?)
        };
        let q = normed(&parts[0], self.n_heads, &self.q_weight)?;
        let k = normed(&parts[1], self.n_kv_heads, &self.k_weight)?;
        let v = heads(&parts[2], rows, self.n_kv_heads, None)?;
        let out = attend(
            q,
            k,
            v,
            Some(&self.rope),
            self.scale,
            ctx.masks.for_window(None),
            None,
            ctx.kernels.fused_decode_attention,
            cache,
        )?;
        self.o_proj.forward(&merge_heads(&out)?)
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        let (kv, hd) = (self.n_kv_heads, self.head_dim);
        LayerCache::attention(batch, kv, hd, None, capacity, dtype)
    }
}

/// A layer's `mixer`, whichever it is. Transparent in key paths (its parameters sit directly
/// under `mixer`, as in mlx_lm); a rebuild tells the kinds apart by the struct each holds.
#[derive(Debug, Clone, TreeNode)]
#[tree(transparent)]
pub enum Plamo2Mixer {
    Mamba(Box<Plamo2Mamba>),
    Attention(Box<Plamo2Attention>),
}

/// Python: plamo2's `MLP`: `down_proj(swiglu(*split(gate_up_proj(x), 2)))`.
#[derive(Debug, Clone, TreeNode)]
pub struct Plamo2Mlp {
    pub gate_up_proj: MaybeQuantizedLinear,
    pub down_proj: MaybeQuantizedLinear,
}

impl Forward for Plamo2Mlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        let h = ops::split(&self.gate_up_proj.forward(x)?, 2, -1)?;
        self.down_proj.forward(&swiglu(&h[0], &h[1])?)
    }
}

/// Python: `PlamoDecoderLayer`: `h = x + post_mixer_norm(mixer(pre_mixer_norm(x)))`, then `h
/// + post_mlp_norm(mlp(pre_mlp_norm(h)))`.
#[derive(Debug, Clone, TreeNode)]
pub struct Plamo2Layer {
    pub mixer: Plamo2Mixer,
    pub mlp: Plamo2Mlp,
    pub pre_mixer_norm: OffsetRmsNorm,
    pub post_mixer_norm: OffsetRmsNorm,
    pub pre_mlp_norm: OffsetRmsNorm,
    pub post_mlp_norm: OffsetRmsNorm,
}

impl Plamo2Layer {
    /// Takes layer `i`'s tensors under `path`.
    pub fn load(ck: &mut Checkpoint, path: &str, i: usize, a: &Plamo2Args) -> crate::Result<Self> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let mixer = if a.mamba[i] {
            Plamo2Mixer::Mamba(Box::new(Plamo2Mamba::load(ck, &p("mixer"), a)?))
        } else {
            Plamo2Mixer::Attention(Box::new(Plamo2Attention::load(ck, &p("mixer"), a)?))
        };
        Ok(Plamo2Layer {
            mixer,
            mlp: Plamo2Mlp {
                gate_up_proj: ck.linear(
                    &p("mlp.gate_up_proj"),
                    d,
                    2 * a.intermediate_size,
                    false,
                )?,
                down_proj: ck.linear(&p("mlp.down_proj"), a.intermediate_size, d, false)?,
            },
            pre_mixer_norm: OffsetRmsNorm::load(ck, &p("pre_mixer_norm"), d, eps, 1.0)?,
            post_mixer_norm: OffsetRmsNorm::load(ck, &p("post_mixer_norm"), d, eps, 1.0 / 5.0)?,
            pre_mlp_norm: OffsetRmsNorm::load(ck, &p("pre_mlp_norm"), d, eps, 1.0)?,
            post_mlp_norm: OffsetRmsNorm::load(
                ck,
                &p("post_mlp_norm"),
                d,
                eps,
                1.0 / 5f64.powf(1.5),
            )?,
        })
    }
}

impl Layer for Plamo2Layer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let normed = self.pre_mixer_norm.forward(x)?;
        let r = match &self.mixer {
            Plamo2Mixer::Mamba(m) => {
                m.forward(&normed, ctx.rows, ctx.kernels.fused_ssm_update, cache)?
            }
            Plamo2Mixer::Attention(a) => a.forward(&normed, ctx, cache)?,
        };
        let h = ops::add(x, &self.post_mixer_norm.forward(&r)?)?;
        let r = self.mlp.forward(&self.pre_mlp_norm.forward(&h)?)?;
        ops::add(&h, &self.post_mlp_norm.forward(&r)?)
    }

    /// Python: `ArraysCache(size=2)` for a Mamba layer, `KVCache()` for attention.
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match &self.mixer {
            Plamo2Mixer::Mamba(m) => m.make_cache(batch, dtype),
            Plamo2Mixer::Attention(a) => a.make_cache(batch, capacity, dtype),
        }
    }
}

/// Python: `PlamoDecoder` (the `layers` of `model`, holding its own `layers`).
#[derive(Debug, Clone, TreeNode)]
pub struct Plamo2Decoder {
    pub layers: Vec<Plamo2Layer>,
}

/// Python: `PlamoModel`.
#[derive(Debug, Clone, TreeNode)]
pub struct Plamo2Model {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Plamo2Decoder,
    pub norm: OffsetRmsNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

/// Python: `mlx_lm.models.plamo2.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Plamo2 {
    pub model: Plamo2Model,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Plamo2 {
    /// Python: `Model.sanitize`: a Hugging Face checkpoint's convolution weights `[C, 1, K]`
    /// become `[C, K, 1]`.
    pub fn sanitize(ck: &mut Checkpoint) -> crate::Result<()> {
        sanitize_conv_weights(ck, "conv1d.weight")
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Plamo2> {
        let a = Plamo2Args::from_config(config)?;
        Self::sanitize(ck)?;
        ck.cast(options.dtype, |_| false)?;
        let layers = (0..a.num_hidden_layers as usize)
            .map(|i| Plamo2Layer::load(ck, &format!("model.layers.layers.{i}"), i, &a))
            .collect::<crate::Result<Vec<_>>>()?;
        let (d, vocab) = (a.hidden_size, a.vocab_size);
        Ok(Plamo2 {
            model: Plamo2Model {
                embed_tokens: ck.embedding("model.embed_tokens", vocab, d)?,
                layers: Plamo2Decoder { layers },
                norm: OffsetRmsNorm::load(ck, "model.norm", d, a.rms_norm_eps, 1.0)?,
                kernels: options.kernels,
            },
            lm_head: (!a.tie_word_embeddings)
                .then(|| ck.linear("lm_head", d, vocab, false))
                .transpose()?,
        })
    }
}

own_stack_language_model!(
    Plamo2,
    "plamo2",
    layers: |m| &m.model.layers.layers,
    embedding: |m| &m.model.embed_tokens,
    fn forward(&self, inputs, cache) {
        let m = &self.model;
        let rows = Rows::of(inputs)?;
        let h = m.embed_tokens.forward(&rows.fold(inputs)?)?;
        let h = forward_layers(&m.layers.layers, h, rows, m.kernels, cache)?;
        let h = m.norm.forward(&h)?;
        let logits = match &self.lm_head {
            Some(head) => head.forward(&h)?,
            None => m.embed_tokens.as_linear(&h)?,
        };
        rows.unfold(&logits)
    }
);
