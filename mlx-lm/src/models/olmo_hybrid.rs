//! `olmo_hybrid` (Python: `mlx_lm.models.olmo_hybrid`): OLMo Hybrid, gated-delta-net linear
//! attention layers (separate q/k/v projections, each with its own short convolution, a
//! dedicated output gate `g_proj`, optionally negative eigenvalues: `beta` in `[0, 2]`) with a
//! full-attention layer every fourth by default. The two kinds of layer differ in their
//! norms: the linear ones normalize before the mixer and the MLP (`input_layernorm`,
//! `post_attention_layernorm`), the attention ones after (`post_attention_layernorm`,
//! `post_feedforward_layernorm`, OLMo 2's order), and their attention normalizes queries and
//! keys over the whole projection, before the heads split.

use mlx_nn::Frozen;
use mlx_nn::{Conv1d, Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::conv::{
    causal_conv1d, conv_state, load_depthwise_conv1d, sanitize_conv_weights, ConvActivation,
};
use crate::blocks::gated_delta_net::normalize_qk;
use crate::blocks::rows::{arrays_entry, wrong_input};
use crate::blocks::{
    rope_theta, AttentionConfig, Layer, LayerContext, LayerStack, Mlp, RmsNormGated,
    RotaryEmbedding, Rows, Stack, TokenMixer, WholeQkNormAttention,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::gated_delta::gated_delta_update_with_beta;
use crate::models::base::stack_language_model;

/// The slots of a linear-attention layer's [`ArraysCache`](crate::cache::ArraysCache)
/// (Python: `ArraysCache(size=4)`): the three convolutions' last inputs, `[batch, kernel - 1,
/// width]`, then the recurrent state `[batch, value_heads, v_head_dim, k_head_dim]`, float32.
const Q_CONV: usize = 0;
const K_CONV: usize = 1;
const V_CONV: usize = 2;
const STATE: usize = 3;

/// Python: olmo_hybrid's `ModelArgs`, as the layers use it.
#[derive(Debug, Clone)]
pub struct OlmoHybridArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub rms_norm_eps: f32,
    /// The gated output norm's epsilon (mlx_lm's `layer_norm_epsilon`; transformers fixes
    /// it at 1e-5, mlx_lm's default).
    pub layer_norm_epsilon: f32,
    pub attention_bias: bool,
    pub tie_word_embeddings: bool,
    pub linear_num_key_heads: i32,
    pub linear_num_value_heads: i32,
    pub linear_key_head_dim: i32,
    pub linear_value_head_dim: i32,
    pub linear_conv_kernel_dim: i32,
    pub linear_allow_neg_eigval: bool,
    /// Per layer: full attention, else linear attention.
    pub full_attention: Vec<bool>,
    /// `None`: no positional embedding (a `rope_theta` of null, as the released checkpoints'
    /// configs say).
    pub rope: Option<RotaryEmbedding>,
}

impl OlmoHybridArgs {
    /// Reads the config over every key of transformers 5.23's `OlmoHybridConfig`, with its
    /// defaults where a key is absent (mlx_lm requires most of them).
    ///
    /// Where the two differ, this follows transformers: without `layer_types` and with fewer
    /// than four layers, the last layer is full attention (mlx_lm: none is); a RoPE scaling
    /// in `rope_parameters` applies (mlx_lm runs plain RoPE). Both run without positional
    /// embedding where `rope_theta` is null (top level or under `rope_parameters`).
    pub fn from_config(c: &ModelConfig) -> crate::Result<OlmoHybridArgs> {
        // transformers' ACT2FN: "swish" is SiLU too; both implementations compute SiLU (the
        // MLP and the convolutions) whatever the config says.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Initialization ranges only draw weights a checkpoint replaces; dropout is off at
        // inference; max_position_embeddings sizes transformers' rope cache (a scaled rope
        // that needs it reads it itself).
        c.declare_neutral(&[
            "initializer_range",
            "attention_dropout",
            "linear_a_log_min",
            "linear_a_log_max",
            "linear_dt_min",
            "linear_dt_max",
            "linear_dt_init_floor",
            "max_position_embeddings",
        ]);
        let hidden = c.dim_or("hidden_size", Some(3840))?;
        let heads = c.dim_or("num_attention_heads", Some(30))?;
        let layers = c.dim_or("num_hidden_layers", Some(32))?;
        let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
        let linear_num_key_heads = c.dim_or("linear_num_key_heads", Some(heads))?;
        let linear_key_head_dim = c.dim_or(
            "linear_key_head_dim",
            Some((0.75 * f64::from(hidden) / f64::from(linear_num_key_heads)) as i32),
        )?;
        let args = OlmoHybridArgs {
            vocab_size: c.dim_or("vocab_size", Some(100352))?,
            hidden_size: hidden,
            intermediate_size: c.dim_or("intermediate_size", Some(11008))?,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
            head_dim,
            rms_norm_eps: c.float_or("rms_norm_eps", 1e-6)? as f32,
            layer_norm_epsilon: c.float_or("layer_norm_epsilon", 1e-5)? as f32,
            attention_bias: c.bool_or("attention_bias", false)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            linear_num_key_heads,
            linear_num_value_heads: c.dim_or("linear_num_value_heads", Some(heads))?,
            linear_key_head_dim,
            linear_value_head_dim: c
                .dim_or("linear_value_head_dim", Some(2 * linear_key_head_dim))?,
            linear_conv_kernel_dim: c.dim_or("linear_conv_kernel_dim", Some(4))?,
            linear_allow_neg_eigval: c.bool_or("linear_allow_neg_eigval", true)?,
            full_attention: full_attention_layers(c, layers)?,
            rope: rope(c, head_dim)?,
        };
        if args.linear_num_value_heads % args.linear_num_key_heads != 0 {
            return Err(invalid(
                c.path(),
                &c.key("linear_num_value_heads"),
                "must be a multiple of linear_num_key_heads",
            ));
        }
        if args.num_attention_heads % args.num_key_value_heads != 0 {
            return Err(invalid(
                c.path(),
                &c.key("num_key_value_heads"),
                "must divide num_attention_heads",
            ));
        }
        Ok(args)
    }

    fn key_dim(&self) -> i32 {
        self.linear_num_key_heads * self.linear_key_head_dim
    }

    fn value_dim(&self) -> i32 {
        self.linear_num_value_heads * self.linear_value_head_dim
    }
}

/// The rotary embedding, or `None` where `rope_theta` is null at the top level or under
/// `rope_parameters` (transformers then builds no rotary embedding; mlx_lm's `rope_theta`
/// becomes `None` either way).
fn rope(c: &ModelConfig, head_dim: i32) -> crate::Result<Option<RotaryEmbedding>> {
    let params = c.section("rope_parameters");
    let null_theta = |values: &serde_json::Map<String, Value>| {
        matches!(values.get("rope_theta"), Some(Value::Null))
    };
    let nope = null_theta(c.values()) || params.as_ref().is_some_and(|p| null_theta(p.values()));
    if !nope {
        let theta = rope_theta(c, Some(10000.0))?;
        return Ok(Some(RotaryEmbedding::from_config(
            c, head_dim, theta, false,
        )?));
    }
    c.declare_neutral(&["rope_theta"]);
    if let Some(p) = params {
        // No rotary embedding: a scaling of it would be one nobody computes.
        p.declare_neutral(&["rope_theta"]);
        p.require_value("rope_type", "default")?;
    }
    Ok(None)
}

/// Per layer, full attention: `layer_types` where given, else every fourth layer (`i % 4 ==
/// 3`), and the last one where that makes none (transformers' `OlmoHybridConfig`).
fn full_attention_layers(c: &ModelConfig, layers: i32) -> crate::Result<Vec<bool>> {
    let error = |message: String| invalid(c.path(), &c.key("layer_types"), &message);
    match c.get("layer_types") {
        None | Some(Value::Null) => {
            let mut full: Vec<bool> = (0..layers).map(|i| i % 4 == 3).collect();
            if !full.contains(&true) {
                if let Some(last) = full.last_mut() {
                    *last = true;
                }
            }
            Ok(full)
        }
        Some(Value::Array(types)) => {
            let full = types
                .iter()
                .map(|t| match t.as_str() {
                    Some("full_attention") => Ok(true),
                    Some("linear_attention") => Ok(false),
                    _ => Err(error(format!(
                        "unknown layer type {t} (expected linear_attention or full_attention)"
                    ))),
                })
                .collect::<crate::Result<Vec<bool>>>()?;
            if full.len() != layers as usize {
                return Err(error(format!("{} entries for {layers} layers", full.len())));
            }
            Ok(full)
        }
        Some(v) => Err(error(format!("not a list: {v}"))),
    }
}

/// Python: olmo_hybrid's `GatedDeltaNet`.
#[derive(Debug, Clone, TreeNode)]
pub struct OlmoHybridGatedDeltaNet {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub a_proj: MaybeQuantizedLinear,
    pub b_proj: MaybeQuantizedLinear,
    pub g_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_conv1d: Conv1d,
    pub k_conv1d: Conv1d,
    pub v_conv1d: Conv1d,
    #[tree(rename = "A_log")]
    pub a_log: Array,
    pub dt_bias: Array,
    pub o_norm: RmsNormGated,
    #[tree(static)]
    pub num_k_heads: i32,
    #[tree(static)]
    pub num_v_heads: i32,
    #[tree(static)]
    pub head_k_dim: i32,
    #[tree(static)]
    pub head_v_dim: i32,
    /// `beta = 2 sigmoid(b)`, in `[0, 2]` (Python: `allow_neg_eigval`).
    #[tree(static)]
    pub allow_neg_eigval: bool,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl OlmoHybridGatedDeltaNet {
    /// Takes the layer's tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        a: &OlmoHybridArgs,
    ) -> crate::Result<OlmoHybridGatedDeltaNet> {
        let (d, hv, k) = (
            a.hidden_size,
            a.linear_num_value_heads,
            a.linear_conv_kernel_dim,
        );
        let (kd, vd) = (a.key_dim(), a.value_dim());
        let p = |name: &str| format!("{path}.{name}");
        Ok(OlmoHybridGatedDeltaNet {
            frozen: Frozen::default(),
            q_proj: ck.linear(&p("q_proj"), d, kd, false)?,
            k_proj: ck.linear(&p("k_proj"), d, kd, false)?,
            v_proj: ck.linear(&p("v_proj"), d, vd, false)?,
            a_proj: ck.linear(&p("a_proj"), d, hv, false)?,
            b_proj: ck.linear(&p("b_proj"), d, hv, false)?,
            g_proj: ck.linear(&p("g_proj"), d, vd, false)?,
            o_proj: ck.linear(&p("o_proj"), vd, d, false)?,
            q_conv1d: load_depthwise_conv1d(ck, &p("q_conv1d"), kd, k, false)?,
            k_conv1d: load_depthwise_conv1d(ck, &p("k_conv1d"), kd, k, false)?,
            v_conv1d: load_depthwise_conv1d(ck, &p("v_conv1d"), vd, k, false)?,
            a_log: ck.array(&p("A_log"), &[hv])?,
            dt_bias: ck.array(&p("dt_bias"), &[hv])?,
            o_norm: RmsNormGated {
                frozen: Default::default(),
                weight: ck.array(&p("o_norm.weight"), &[a.linear_value_head_dim])?,
                eps: a.layer_norm_epsilon,
            },
            num_k_heads: a.linear_num_key_heads,
            num_v_heads: hv,
            head_k_dim: a.linear_key_head_dim,
            head_v_dim: a.linear_value_head_dim,
            allow_neg_eigval: a.linear_allow_neg_eigval,
        })
    }

    /// The layer over rows `x` `[B * L, hidden]`, continuing `cache`'s state.
    ///
    /// One departure from mlx_lm, in a right-padded batch's prefill only: the convolutions
    /// keep each sequence's last real inputs (the cache's lengths), where mlx_lm's keep the
    /// padding's and so let it into every later step. mlx_lm's recurrence is masked, its
    /// convolutions not; here both are, so a sequence's tokens in a batch are those it gets
    /// alone.
    fn forward(
        &self,
        x: &Array,
        rows: Rows,
        use_kernel: bool,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let (b, s) = (rows.batch, rows.len);
        let mut cache = arrays_entry(cache, "an olmo_hybrid linear-attention layer")?;
        let mask = match &cache {
            Some(c) => c.make_mask(s)?,
            None => None,
        };
        let mut conv = |proj: &MaybeQuantizedLinear, conv: &Conv1d, slot: usize| {
            causal_conv1d(
                conv,
                &rows.unfold(&proj.forward(x)?)?,
                mask.as_ref(),
                cache.as_deref_mut(),
                slot,
                ConvActivation::Silu,
            )
        };
        let q = conv(&self.q_proj, &self.q_conv1d, Q_CONV)?;
        let k = conv(&self.k_proj, &self.k_conv1d, K_CONV)?;
        let v = conv(&self.v_proj, &self.v_conv1d, V_CONV)?;
        let q = ops::reshape(&q, &[b, s, self.num_k_heads, self.head_k_dim])?;
        let k = ops::reshape(&k, &[b, s, self.num_k_heads, self.head_k_dim])?;
        let v = ops::reshape(&v, &[b, s, self.num_v_heads, self.head_v_dim])?;
        let (q, k) = normalize_qk(&q, &k, (self.head_k_dim as f64).powf(-0.5), 1e-6)?;

        let state = match &cache {
            Some(c) => c[STATE].clone(),
            None => ops::zeros(
                &[b, self.num_v_heads, self.head_v_dim, self.head_k_dim],
                Dtype::Float32,
            )?,
        };
        let a = rows.unfold(&self.a_proj.forward(x)?)?;
        let beta = ops::sigmoid(&rows.unfold(&self.b_proj.forward(x)?)?)?;
        // Python: `beta * 2.0`, a Python float that takes beta's dtype.
        let beta = if self.allow_neg_eigval {
            ops::multiply(&beta, 2.0f32)?
        } else {
            beta
        };
        let (out, state) = gated_delta_update_with_beta(
            &q,
            &k,
            &v,
            &a,
            &beta,
            &self.a_log,
            &self.dt_bias,
            state,
            mask.as_ref(),
            use_kernel,
        )?;
        if let Some(c) = cache {
            c[STATE] = state;
            c.advance(s)?;
        }
        let gate = ops::reshape(&self.g_proj.forward(x)?, &[-1, self.head_v_dim])?;
        let out = self
            .o_norm
            .forward(&ops::reshape(&out, &[-1, self.head_v_dim])?, &gate)?;
        self.o_proj.forward(&ops::reshape(&out, &[b * s, -1])?)
    }

    /// The three convolutions' states and the float32 recurrent state (Python:
    /// `ArraysCache(size=4)`, filled on the first call).
    fn make_cache(&self, batch: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Arrays(crate::cache::ArraysCache::new(vec![
            conv_state(&self.q_conv1d, batch, dtype)?,
            conv_state(&self.k_conv1d, batch, dtype)?,
            conv_state(&self.v_conv1d, batch, dtype)?,
            ops::zeros(
                &[batch, self.num_v_heads, self.head_v_dim, self.head_k_dim],
                Dtype::Float32,
            )?,
        ])))
    }
}

/// Python: olmo_hybrid's `Attention`: queries and keys RMS-normalized over the whole
/// projection (`q_norm` over `heads * head_dim` features), RoPE or none: OLMo 2's.
pub type OlmoHybridAttention = WholeQkNormAttention;

impl OlmoHybridArgs {
    /// The full-attention layers' shape: `attention_bias` on all four projections.
    fn attention(&self) -> AttentionConfig {
        AttentionConfig {
            hidden_size: self.hidden_size,
            num_heads: self.num_attention_heads,
            num_kv_heads: self.num_key_value_heads,
            head_dim: self.head_dim,
            qkv_bias: self.attention_bias,
            o_bias: self.attention_bias,
            qk_norm: None,
            output_gate: false,
            rope: self.rope.clone(),
            sliding_window: None,
        }
    }
}

/// Python: `LinearAttentionDecoderLayer` (`linear_attn`, pre-norms `input_layernorm` and
/// `post_attention_layernorm`) or `FullAttentionDecoderLayer` (`self_attn`, post-norms
/// `post_attention_layernorm` and `post_feedforward_layernorm`). A layer has exactly the
/// fields of its kind (the others are `None`), so the parameter paths are mlx_lm's.
#[derive(Debug, Clone, TreeNode)]
pub struct OlmoHybridLayer {
    pub linear_attn: Option<OlmoHybridGatedDeltaNet>,
    pub self_attn: Option<OlmoHybridAttention>,
    pub mlp: Mlp,
    pub input_layernorm: Option<RMSNorm>,
    pub post_attention_layernorm: RMSNorm,
    pub post_feedforward_layernorm: Option<RMSNorm>,
}

impl OlmoHybridLayer {
    /// Takes layer `i`'s tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        i: usize,
        a: &OlmoHybridArgs,
    ) -> crate::Result<OlmoHybridLayer> {
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let p = |name: &str| format!("{path}.{name}");
        let full = a.full_attention[i];
        Ok(OlmoHybridLayer {
            linear_attn: (!full)
                .then(|| OlmoHybridGatedDeltaNet::load(ck, &p("linear_attn"), a))
                .transpose()?,
            self_attn: full
                .then(|| WholeQkNormAttention::load(ck, &p("self_attn"), &a.attention(), eps))
                .transpose()?,
            mlp: Mlp::load(ck, &p("mlp"), d, a.intermediate_size, false)?,
            input_layernorm: (!full)
                .then(|| ck.rms_norm(&p("input_layernorm"), d, eps))
                .transpose()?,
            post_attention_layernorm: ck.rms_norm(&p("post_attention_layernorm"), d, eps)?,
            post_feedforward_layernorm: full
                .then(|| ck.rms_norm(&p("post_feedforward_layernorm"), d, eps))
                .transpose()?,
        })
    }
}

impl Layer for OlmoHybridLayer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        match (
            &self.linear_attn,
            &self.self_attn,
            &self.input_layernorm,
            &self.post_feedforward_layernorm,
        ) {
            (Some(linear), None, Some(input_norm), None) => {
                let r = linear.forward(
                    &input_norm.forward(x)?,
                    ctx.rows,
                    ctx.kernels.fused_gated_delta,
                    cache,
                )?;
                let h = ops::add(x, &r)?;
                let r = self
                    .mlp
                    .forward(&self.post_attention_layernorm.forward(&h)?)?;
                ops::add(&h, &r)
            }
            (None, Some(attention), None, Some(ff_norm)) => {
                let r = attention.forward(x, ctx, cache)?;
                let h = ops::add(x, &self.post_attention_layernorm.forward(&r)?)?;
                let r = ff_norm.forward(&self.mlp.forward(&h)?)?;
                ops::add(&h, &r)
            }
            _ => Err(wrong_input(
                "an olmo_hybrid layer has linear_attn with input_layernorm, or self_attn with \
                 post_feedforward_layernorm",
            )),
        }
    }

    /// A key/value cache for an attention layer, the convolutions' and recurrence's state
    /// for the others (Python: `KVCache()` / `ArraysCache(size=4)`).
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match (&self.linear_attn, &self.self_attn) {
            (Some(linear), None) => linear.make_cache(batch, dtype),
            (None, Some(attention)) => attention.make_cache(batch, capacity, dtype),
            _ => Err(wrong_input(
                "an olmo_hybrid layer has either linear_attn or self_attn, never both or neither",
            )),
        }
    }
}

/// Python: `OlmoHybridModel`.
pub type OlmoHybridModel = LayerStack<OlmoHybridLayer>;

/// Python: `mlx_lm.models.olmo_hybrid.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct OlmoHybrid {
    pub model: OlmoHybridModel,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl OlmoHybrid {
    /// Python: `Model.sanitize`: drops a tied `lm_head`, and a Hugging Face checkpoint's
    /// convolution weights `[C, 1, K]` become `[C, K, 1]`. Beyond mlx_lm: a checkpoint as
    /// transformers 5.23 saves one holds the three convolutions as one, `linear_attn.conv1d`
    /// over the concatenated q, k and v features (its weight converter concatenates them
    /// along the channels); it is split back into mlx_lm's `q_conv1d`, `k_conv1d`,
    /// `v_conv1d` (a depthwise convolution's channels are independent, so the split one
    /// computes the same).
    pub fn sanitize(ck: &mut Checkpoint, a: &OlmoHybridArgs) -> crate::Result<()> {
        let tied = a.tie_word_embeddings;
        let w = ck.weights_mut();
        if tied {
            w.retain(|k, _| k != "lm_head.weight");
        }
        let fused: Vec<String> = w
            .keys()
            .into_iter()
            .filter(|k| k.ends_with(".linear_attn.conv1d.weight"))
            .map(str::to_string)
            .collect();
        let (kd, vd) = (a.key_dim(), a.value_dim());
        for key in fused {
            let file = w.file_of(&key).map(|f| f.to_path_buf()).unwrap_or_default();
            let weight = w.take(&key).expect("listed above");
            if weight.shape().first() != Some(&(2 * kd + vd)) {
                return Err(invalid(
                    &file,
                    &key,
                    &format!(
                        "shape {:?}: expected {} channels (q, k, v: {kd} + {kd} + {vd})",
                        weight.shape(),
                        2 * kd + vd
                    ),
                ));
            }
            let parts = ops::split(&weight, vec![kd, 2 * kd], 0)?;
            let prefix = key.trim_end_matches("conv1d.weight");
            for (name, part) in ["q", "k", "v"].into_iter().zip(parts) {
                w.insert(format!("{prefix}{name}_conv1d.weight"), part, file.clone());
            }
        }
        sanitize_conv_weights(ck, "conv1d.weight")
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<OlmoHybrid> {
        let a = OlmoHybridArgs::from_config(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |_| false)?;
        let layers = (0..a.num_hidden_layers as usize)
            .map(|i| OlmoHybridLayer::load(ck, &format!("model.layers.{i}"), i, &a))
            .collect::<crate::Result<Vec<_>>>()?;
        let (d, vocab) = (a.hidden_size, a.vocab_size);
        Ok(OlmoHybrid {
            model: Stack::load_around(
                ck,
                "model",
                (vocab, d),
                layers,
                |ck, path| ck.rms_norm(path, d, a.rms_norm_eps),
                options.kernels,
            )?,
            lm_head: (!a.tie_word_embeddings)
                .then(|| ck.linear("lm_head", d, vocab, false))
                .transpose()?,
        })
    }
}

stack_language_model!(OlmoHybrid, model, "olmo_hybrid");
