//! `falcon_h1` (Python: `mlx_lm.models.falcon_h1`): TII's Falcon-H1, decoder layers that run
//! a Mamba-2 SSD ([`Mamba2Mixer`], `mamba`) and attention (`self_attn`, RoPE) side by side on
//! the same normed input and add both to the residual, then a SwiGLU MLP (`feed_forward`);
//! parameters under `model.*` (`embed_tokens`, `layers.i.{input_layernorm, mamba, self_attn,
//! pre_ff_layernorm, feed_forward}`, `final_layernorm`) and `lm_head` when untied. Each
//! layer's cache is a [`LayerCache::List`] of the mixer's `ArraysCache` and the attention's
//! `KVCache` (Python: `CacheList(ArraysCache(size=2), KVCache())`).
//!
//! Falcon-H1's µP multipliers are folded into the weights when a Hugging Face checkpoint is
//! loaded (its convolution weights `[C, 1, K]` tell it from an MLX one, as in mlx_lm's
//! sanitize); an MLX checkpoint holds them folded already, and only a tied head scales its
//! logits by `lm_head_multiplier / embedding_multiplier` (the embedding holds the latter).
//!
//! Where this port follows transformers' `FalconH1` rather than mlx_lm 0.32.2:
//! - folding a Hugging Face checkpoint, the keys are also scaled by `key_multiplier` and the
//!   values by `attention_in_multiplier` (transformers scales the attention's input and its
//!   keys; mlx_lm's sanitize scales a `key_proj` that does not exist, and only q and k), and
//!   the projections' biases take their layer's multiplier as the weights do (mlx_lm scales
//!   weights only). An MLX checkpoint converted by mlx_lm lacks the first two (they are in no
//!   tensor) and runs as mlx_lm runs it;
//! - with `mamba_n_groups > 1` the gated norm normalizes each group on its own, the weight
//!   after the norm (transformers' `FalconH1RMSNormGated`; mlx_lm normalizes the whole width);
//! - absent keys take transformers' `FalconH1Config` defaults (mlx_lm's are Falcon-H1-0.5B's
//!   values: multipliers, `rope_theta` 1e11, `mamba_norm_before_gate` false, tied
//!   embeddings), and `time_step_limit` is read (mlx_lm fixes it at `(0, inf)`, transformers'
//!   default).

use mlx_nn::{Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::rows::wrong_input;
use crate::blocks::ssd::{GatedNorm, Mamba2Config, Mamba2Mixer};
use crate::blocks::{
    forward_layers, Attention, AttentionConfig, Layer, LayerContext, Mlp, RotaryEmbedding, Rows,
    TokenMixer,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;
use crate::models::base::own_stack_language_model;

/// Falcon-H1's µP multipliers (transformers' `FalconH1Config`), folded into a Hugging Face
/// checkpoint's weights at load.
#[derive(Debug, Clone, PartialEq)]
pub struct FalconH1Multipliers {
    pub embedding: f32,
    pub lm_head: f32,
    pub attention_in: f32,
    pub key: f32,
    pub attention_out: f32,
    pub ssm_in: f32,
    pub ssm_out: f32,
    /// `z, x, B, C, dt` of the mixer's input projection.
    pub ssm: [f32; 5],
    /// The MLP's gate and down projections.
    pub mlp: [f32; 2],
    /// `lm_head_multiplier / embedding_multiplier` in double precision, as Python divides
    /// its floats: the tied head's scale.
    pub tied_logits: f64,
}

/// Python: falcon_h1's `ModelArgs`, as the layers use it.
#[derive(Debug, Clone)]
pub struct FalconH1Args {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: i32,
    pub rms_norm_eps: f32,
    pub intermediate_size: i32,
    pub mlp_bias: bool,
    pub tie_word_embeddings: bool,
    pub attention: AttentionConfig,
    pub mixer: Mamba2Config,
    pub multipliers: FalconH1Multipliers,
}

impl FalconH1Args {
    /// Reads the config against transformers' `FalconH1Config` (its defaults where a key is
    /// absent) and mlx_lm's `ModelArgs`.
    pub fn from_config(c: &ModelConfig) -> crate::Result<FalconH1Args> {
        let hidden = c.dim_or("hidden_size", Some(4096))?;
        let heads = c.dim_or("num_attention_heads", Some(32))?;
        let eps = c.float_or("rms_norm_eps", 1e-5)? as f32;
        // transformers' ACT2FN: "swish" is SiLU too (the MLP's and the convolution's).
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Training and initialization settings; the SSD's chunk only regroups the same sums
        // (mlx_lm chunks by 256); mlx_lm's two MLP settings are read by nothing.
        c.declare_neutral(&[
            "initializer_range",
            "attention_dropout",
            "mamba_chunk_size",
            "max_position_embeddings",
            "num_logits_to_keep",
            "mamba_use_mlp",
            "mlp_expansion_factor",
        ]);
        let mamba_heads = c.dim_or("mamba_n_heads", Some(128))?;
        let d_ssm = match c.get("mamba_d_ssm") {
            None => 1024,
            Some(Value::Null) => c.dim_or("mamba_expand", Some(2))? * hidden,
            Some(_) => c.dim("mamba_d_ssm")?,
        };
        // transformers reads mamba_expand only without mamba_d_ssm.
        c.declare_neutral(&["mamba_expand"]);
        let mamba_head_dim = match c.get("mamba_d_head") {
            None | Some(Value::Null) => d_ssm / mamba_heads,
            Some(Value::String(s)) if s == "auto" => d_ssm / mamba_heads,
            Some(_) => c.dim("mamba_d_head")?,
        };
        if mamba_head_dim * mamba_heads != d_ssm {
            return Err(invalid(
                c.path(),
                &c.key("mamba_d_head"),
                &format!(
                    "mamba_n_heads * mamba_d_head = {} but mamba_d_ssm = {d_ssm}",
                    mamba_head_dim * mamba_heads
                ),
            ));
        }
        let n_groups = c.dim_or("mamba_n_groups", Some(1))?;
        if mamba_heads % n_groups != 0 {
            return Err(invalid(
                c.path(),
                &c.key("mamba_n_groups"),
                &format!("{mamba_heads} heads do not split into {n_groups} groups"),
            ));
        }
        let gated_norm = match (
            c.bool_or("mamba_rms_norm", false)?,
            c.bool_or("mamba_norm_before_gate", true)?,
        ) {
            (false, _) => GatedNorm::None,
            (true, true) => GatedNorm::NormThenGate,
            (true, false) => GatedNorm::GateThenNorm,
        };
        let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
        let theta = match c.section("rope_parameters") {
            Some(p) => p.float("rope_theta")?,
            None => None,
        };
        let theta = match theta {
            Some(t) => t,
            None => c.float_or("rope_theta", 10000.0)?,
        };
        let rope = RotaryEmbedding::from_config(
            c,
            head_dim,
            theta,
            c.bool_or("rope_traditional", false)?,
        )?;
        let attention_bias = c.bool_or("attention_bias", false)?;
        let multipliers = multipliers(c)?;
        Ok(FalconH1Args {
            vocab_size: c.dim_or("vocab_size", Some(128000))?,
            hidden_size: hidden,
            num_hidden_layers: c.dim_or("num_hidden_layers", Some(32))?,
            rms_norm_eps: eps,
            intermediate_size: c.dim_or("intermediate_size", Some(14336))?,
            mlp_bias: c.bool_or("mlp_bias", false)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            attention: AttentionConfig {
                hidden_size: hidden,
                num_heads: heads,
                num_kv_heads: c.dim_or("num_key_value_heads", Some(heads))?,
                head_dim,
                qkv_bias: attention_bias,
                o_bias: attention_bias,
                qk_norm: None,
                output_gate: false,
                rope: Some(rope),
                sliding_window: None,
            },
            mixer: Mamba2Config {
                hidden_size: hidden,
                num_heads: mamba_heads,
                head_dim: mamba_head_dim,
                n_groups,
                state_size: c.dim_or("mamba_d_state", Some(256))?,
                conv_kernel: c.dim_or("mamba_d_conv", Some(4))?,
                use_bias: c.bool_or("mamba_proj_bias", false)?,
                out_proj_bias: c.bool_or("projectors_bias", false)?,
                use_conv_bias: c.bool_or("mamba_conv_bias", true)?,
                time_step_limit: super::mamba2::time_step_limit(c)?,
                norm_eps: eps,
                grouped_norm: n_groups > 1,
                gated_norm,
                cast_d: false,
            },
            multipliers,
        })
    }
}

/// The multipliers, each defaulting to 1 as in transformers.
fn multipliers(c: &ModelConfig) -> crate::Result<FalconH1Multipliers> {
    let float = |key: &str| -> crate::Result<f64> { c.float_or(key, 1.0) };
    fn list<const N: usize>(c: &ModelConfig, key: &str) -> crate::Result<[f32; N]> {
        let error = |message: String| invalid(c.path(), &c.key(key), &message);
        match c.get(key) {
            None | Some(Value::Null) => Ok([1.0; N]),
            Some(Value::Array(v)) if v.len() == N => {
                let mut out = [1.0f32; N];
                for (o, x) in out.iter_mut().zip(v) {
                    *o = crate::config::as_float(x)
                        .ok_or_else(|| error(format!("{x} is not a number")))?
                        as f32;
                }
                Ok(out)
            }
            Some(v) => Err(error(format!("expected a list of {N} numbers, found {v}"))),
        }
    }
    let (embedding, lm_head) = (float("embedding_multiplier")?, float("lm_head_multiplier")?);
    Ok(FalconH1Multipliers {
        embedding: embedding as f32,
        lm_head: lm_head as f32,
        attention_in: float("attention_in_multiplier")? as f32,
        key: float("key_multiplier")? as f32,
        attention_out: float("attention_out_multiplier")? as f32,
        ssm_in: float("ssm_in_multiplier")? as f32,
        ssm_out: float("ssm_out_multiplier")? as f32,
        ssm: list(c, "ssm_multipliers")?,
        mlp: list(c, "mlp_multipliers")?,
        tied_logits: lm_head / embedding,
    })
}

/// Python: `FalconH1DecoderLayer`: `h = x + mamba(n) + self_attn(n)` with `n =
/// input_layernorm(x)`, then `h + feed_forward(pre_ff_layernorm(h))`.
#[derive(Debug, Clone, TreeNode)]
pub struct FalconH1DecoderLayer {
    pub feed_forward: Mlp,
    pub mamba: Mamba2Mixer,
    pub self_attn: Attention,
    pub input_layernorm: RMSNorm,
    pub pre_ff_layernorm: RMSNorm,
}

impl FalconH1DecoderLayer {
    /// Takes a layer's tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        a: &FalconH1Args,
    ) -> crate::Result<FalconH1DecoderLayer> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        Ok(FalconH1DecoderLayer {
            feed_forward: Mlp::load(ck, &p("feed_forward"), d, a.intermediate_size, a.mlp_bias)?,
            mamba: Mamba2Mixer::load(ck, &p("mamba"), &a.mixer)?,
            self_attn: Attention::load(ck, &p("self_attn"), &a.attention)?,
            input_layernorm: ck.rms_norm(&p("input_layernorm"), d, eps)?,
            pre_ff_layernorm: ck.rms_norm(&p("pre_ff_layernorm"), d, eps)?,
        })
    }
}

impl Layer for FalconH1DecoderLayer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let (mamba_cache, attention_cache) = match cache {
            None => (None, None),
            Some(LayerCache::List(caches)) if caches.len() == 2 => {
                let (first, second) = caches.split_at_mut(1);
                (Some(&mut first[0]), Some(&mut second[0]))
            }
            Some(other) => {
                return Err(wrong_input(&format!(
                    "a falcon_h1 layer needs a CacheList of an ArraysCache and a KVCache, got a {}",
                    other.class_name()
                )))
            }
        };
        let normed = self.input_layernorm.forward(x)?;
        let mamba =
            self.mamba
                .forward(&normed, ctx.rows, ctx.kernels.fused_ssm_update, mamba_cache)?;
        let attention = TokenMixer::forward(&self.self_attn, &normed, ctx, attention_cache)?;
        let h = ops::add(&ops::add(x, &mamba)?, &attention)?;
        let out = self
            .feed_forward
            .forward(&self.pre_ff_layernorm.forward(&h)?)?;
        ops::add(&h, &out)
    }

    /// Python: `CacheList(ArraysCache(size=2), KVCache())`.
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::List(vec![
            self.mamba.make_cache(batch, dtype)?,
            self.self_attn.make_cache(batch, capacity, dtype)?,
        ]))
    }
}

/// Python: `FalconH1Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct FalconH1Model {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<FalconH1DecoderLayer>,
    pub final_layernorm: RMSNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

/// Python: `mlx_lm.models.falcon_h1.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct FalconH1 {
    pub model: FalconH1Model,
    pub lm_head: Option<MaybeQuantizedLinear>,
    /// The tied head's scale, `lm_head_multiplier / embedding_multiplier`.
    #[tree(static)]
    pub tied_logits_scale: f32,
}

impl FalconH1 {
    /// Reads the config ([`FalconH1Args::from_config`]).
    pub fn args(config: &ModelConfig) -> crate::Result<FalconH1Args> {
        FalconH1Args::from_config(config)
    }

    /// Python: `Model.sanitize`: a Hugging Face checkpoint (convolution weights `[C, 1, K]`)
    /// gets the multipliers folded into its weights, in each tensor's dtype as mlx_lm
    /// multiplies them, and its convolution weights moved to `[C, K, 1]`; an MLX checkpoint
    /// is left as it is. Beyond mlx_lm (see the module doc): keys times `key_multiplier`
    /// after `attention_in_multiplier`, values times `attention_in_multiplier`, biases as
    /// their weights. A tied model's redundant `lm_head.weight` is dropped.
    pub fn sanitize(ck: &mut Checkpoint, a: &FalconH1Args) -> crate::Result<()> {
        let key = "model.layers.0.mamba.conv1d.weight";
        let w = ck.weights_mut();
        let Some(conv) = w.get(key) else {
            return Err(crate::Error::MissingWeight {
                dir: w
                    .file_of(key)
                    .map(std::path::Path::to_path_buf)
                    .unwrap_or_default(),
                key: key.into(),
            });
        };
        let s = conv.shape();
        let hugging_face = s.len() == 3 && s[2] > s[1];
        if hugging_face {
            let m = &a.multipliers;
            let mixer = &a.mixer;
            let (i, gn) = (
                mixer.num_heads * mixer.head_dim,
                mixer.n_groups * mixer.state_size,
            );
            // Python: compute_mup_vector, float32, then cast to the weight's dtype.
            let sizes = [i, i, gn, gn, mixer.num_heads];
            let mup = sizes
                .iter()
                .zip(m.ssm)
                .map(|(&n, x)| ops::full(&[n], x, Dtype::Float32))
                .collect::<Result<Vec<_>>>()
                .and_then(|parts| ops::concatenate(&parts, 0))
                .map_err(|source| crate::Error::Mlx {
                    path: Default::default(),
                    source,
                })?;
            w.map(|k, v| {
                let scale = |factor: f32| ops::multiply(v, factor).map(Some);
                let bias = k.ends_with(".bias");
                let weight = k.ends_with(".weight");
                if !(bias || weight) {
                    return Ok(None);
                }
                let stem = k.trim_end_matches(".bias").trim_end_matches(".weight");
                let layer = |name: &str| stem.ends_with(name);
                if weight && layer("embed_tokens") {
                    scale(m.embedding)
                } else if weight && layer("lm_head") {
                    scale(m.lm_head)
                } else if layer("q_proj") {
                    if weight {
                        scale(m.attention_in)
                    } else {
                        Ok(None)
                    }
                } else if layer("k_proj") {
                    if weight {
                        ops::multiply(&ops::multiply(v, m.attention_in)?, m.key).map(Some)
                    } else {
                        scale(m.key)
                    }
                } else if layer("v_proj") {
                    if weight {
                        scale(m.attention_in)
                    } else {
                        Ok(None)
                    }
                } else if layer("o_proj") {
                    scale(m.attention_out)
                } else if layer("out_proj") {
                    scale(m.ssm_out)
                } else if layer("gate_proj") {
                    scale(m.mlp[0])
                } else if layer("down_proj") {
                    scale(m.mlp[1])
                } else if layer("in_proj") {
                    let mup = mup.astype(v.dtype())?;
                    if weight {
                        let factor = ops::multiply(&ops::expand_dims(&mup, 1)?, m.ssm_in)?;
                        ops::multiply(v, &factor).map(Some)
                    } else {
                        ops::multiply(v, &mup).map(Some)
                    }
                } else if weight && layer("conv1d") {
                    ops::swapaxes(v, 1, 2).map(Some)
                } else {
                    Ok(None)
                }
            })?;
        }
        if a.tie_word_embeddings {
            w.retain(|k, _| k != "lm_head.weight");
        }
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<FalconH1> {
        let a = FalconH1Args::from_config(config)?;
        Self::sanitize(ck, &a)?;
        // mlx_lm's falcon_h1 has no cast predicate.
        ck.cast(options.dtype, |_| false)?;
        let layers = (0..a.num_hidden_layers)
            .map(|i| FalconH1DecoderLayer::load(ck, &format!("model.layers.{i}"), &a))
            .collect::<crate::Result<Vec<_>>>()?;
        Ok(FalconH1 {
            model: FalconH1Model {
                embed_tokens: ck.embedding("model.embed_tokens", a.vocab_size, a.hidden_size)?,
                layers,
                final_layernorm: ck.rms_norm(
                    "model.final_layernorm",
                    a.hidden_size,
                    a.rms_norm_eps,
                )?,
                kernels: options.kernels,
            },
            lm_head: (!a.tie_word_embeddings)
                .then(|| ck.linear("lm_head", a.hidden_size, a.vocab_size, false))
                .transpose()?,
            tied_logits_scale: a.multipliers.tied_logits as f32,
        })
    }
}

own_stack_language_model!(
    FalconH1,
    "falcon_h1",
    layers: |m| &m.model.layers,
    embedding: |m| &m.model.embed_tokens,
    fn forward(&self, inputs, cache) {
        let m = &self.model;
        let rows = Rows::of(inputs)?;
        let h = m.embed_tokens.forward(&rows.fold(inputs)?)?;
        let h = forward_layers(&m.layers, h, rows, m.kernels, cache)?;
        let h = m.final_layernorm.forward(&h)?;
        let logits = match &self.lm_head {
            Some(head) => head.forward(&h)?,
            None => ops::multiply(&m.embed_tokens.as_linear(&h)?, self.tied_logits_scale)?,
        };
        rows.unfold(&logits)
    }
);
