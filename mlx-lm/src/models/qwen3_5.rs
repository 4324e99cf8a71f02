//! `qwen3_5` (Python: `mlx_lm.models.qwen3_5`, dense text model): gated-delta-net linear
//! attention layers with a full-attention layer every `full_attention_interval`.
//!
//! The linear-attention layers carry a convolution state and a recurrent state between calls,
//! both leaves of the model's cache tree; Python's `mx.compile` rejects that cache
//! (`ArraysCache`), here it goes through `compile_mut` like any other state.

use std::sync::OnceLock;

use mlx_nn::{Conv1d, Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, Module, RMSNorm};
use mlx_rs::compile::CompiledFn;
use mlx_rs::{fast, ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::cache::{ArraysCache, KvCache, LayerCache};
use crate::checkpoint::Checkpoint;
use crate::config::{invalid, ModelConfig};
use crate::models::decoder::{
    attend, compute_dtype, heads, heads_first, logits, merge_heads, shared_cache_mask, silu,
    wrong_input, Mlp, PlainMask, Rows,
};
use crate::models::gated_delta;
use crate::rope::Rope;

/// Python: `TextModelArgs`.
#[derive(Debug, Clone)]
pub struct Qwen3_5Args {
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub rms_norm_eps: f32,
    pub vocab_size: i32,
    pub linear_num_value_heads: i32,
    pub linear_num_key_heads: i32,
    pub linear_key_head_dim: i32,
    pub linear_value_head_dim: i32,
    pub linear_conv_kernel_dim: i32,
    pub tie_word_embeddings: bool,
    pub attention_bias: bool,
    pub full_attention_interval: i32,
    pub rope: Rope,
}

/// Python: `Qwen3NextRMSNormGated`.
#[derive(Debug, Clone, TreeNode)]
pub struct RmsNormGated {
    pub weight: Array,
    #[tree(static)]
    pub eps: f32,
}

impl RmsNormGated {
    /// `silu(gate) * rms_norm(x)` in float32, cast back to `x`'s dtype (Python:
    /// `precise_swiglu`).
    fn forward(&self, x: &Array, gate: &Array) -> Result<Array> {
        let normed = fast::rms_norm(x, Some(&self.weight), self.eps)?;
        let gate = silu(&gate.astype(Dtype::Float32)?)?;
        ops::multiply(&gate, &normed.astype(Dtype::Float32)?)?.astype(x.dtype())
    }
}

/// Python: `GatedDeltaNet`.
#[derive(Debug, Clone, TreeNode)]
pub struct GatedDeltaNet {
    pub conv1d: Conv1d,
    pub in_proj_qkv: MaybeQuantizedLinear,
    pub in_proj_z: MaybeQuantizedLinear,
    pub in_proj_b: MaybeQuantizedLinear,
    pub in_proj_a: MaybeQuantizedLinear,
    pub dt_bias: Array,
    #[tree(rename = "A_log")]
    pub a_log: Array,
    pub norm: RmsNormGated,
    pub out_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub num_k_heads: i32,
    #[tree(static)]
    pub num_v_heads: i32,
    #[tree(static)]
    pub head_k_dim: i32,
    #[tree(static)]
    pub head_v_dim: i32,
    #[tree(static)]
    pub conv_kernel_size: i32,
}

impl GatedDeltaNet {
    fn key_dim(&self) -> i32 {
        self.num_k_heads * self.head_k_dim
    }

    fn conv_dim(&self) -> i32 {
        2 * self.key_dim() + self.num_v_heads * self.head_v_dim
    }

    fn load(ck: &mut Checkpoint, path: &str, a: &Qwen3_5Args) -> crate::Result<GatedDeltaNet> {
        let key_dim = a.linear_key_head_dim * a.linear_num_key_heads;
        let value_dim = a.linear_value_head_dim * a.linear_num_value_heads;
        let conv_dim = 2 * key_dim + value_dim;
        let (d, hv, k) = (
            a.hidden_size,
            a.linear_num_value_heads,
            a.linear_conv_kernel_dim,
        );
        let p = |name: &str| format!("{path}.{name}");
        Ok(GatedDeltaNet {
            conv1d: Conv1d {
                weight: ck.array(&p("conv1d.weight"), &[conv_dim, k, 1])?,
                bias: None,
                stride: 1,
                padding: 0,
                dilation: 1,
                groups: conv_dim,
                frozen: Default::default(),
            },
            in_proj_qkv: ck.linear(&p("in_proj_qkv"), d, conv_dim, false)?,
            in_proj_z: ck.linear(&p("in_proj_z"), d, value_dim, false)?,
            in_proj_b: ck.linear(&p("in_proj_b"), d, hv, false)?,
            in_proj_a: ck.linear(&p("in_proj_a"), d, hv, false)?,
            dt_bias: ck.array(&p("dt_bias"), &[hv])?,
            a_log: ck.array(&p("A_log"), &[hv])?,
            norm: RmsNormGated {
                weight: ck.array(&p("norm.weight"), &[a.linear_value_head_dim])?,
                eps: a.rms_norm_eps,
            },
            out_proj: ck.linear(&p("out_proj"), value_dim, d, false)?,
            num_k_heads: a.linear_num_key_heads,
            num_v_heads: hv,
            head_k_dim: a.linear_key_head_dim,
            head_v_dim: a.linear_value_head_dim,
            conv_kernel_size: k,
        })
    }

    fn forward(&self, inputs: &Array, rows: Rows, cache: Option<&mut LayerCache>) -> Result<Array> {
        let (b, s) = (rows.batch, rows.len);
        let cache = match cache {
            None => None,
            Some(LayerCache::Arrays(c)) => Some(c),
            Some(_) => {
                return Err(wrong_input(
                    "a linear-attention layer got a key/value cache",
                ))
            }
        };
        let qkv = rows.unfold(&self.in_proj_qkv.forward(inputs)?)?;
        let z = ops::reshape(
            &self.in_proj_z.forward(inputs)?,
            &[b, s, self.num_v_heads, self.head_v_dim],
        )?;
        let beta_in = rows.unfold(&self.in_proj_b.forward(inputs)?)?;
        let a = rows.unfold(&self.in_proj_a.forward(inputs)?)?;

        // A right-padded batch's prefill: the padding after each sequence's tokens must not
        // reach the convolution's or the recurrence's state (Python: `ArraysCache.make_mask`).
        let mask = match cache.as_ref().and_then(|c| c.lengths.as_ref()) {
            Some(lengths) => Some(ops::less(
                &ops::arange(0, s, 1, Dtype::Int32)?,
                &ops::expand_dims(lengths, 1)?,
            )?),
            None => None,
        };
        let qkv = match &mask {
            Some(m) => ops::where_(
                &ops::expand_dims(m, -1)?,
                &qkv,
                &ops::zeros(&[], qkv.dtype())?,
            )?,
            None => qkv,
        };
        let n_keep = self.conv_kernel_size - 1;
        let conv_state = match &cache {
            Some(c) => c.conv.clone(),
            None => ops::zeros(&[b, n_keep, self.conv_dim()], inputs.dtype())?,
        };
        let conv_input = ops::concatenate(&[conv_state, qkv], 1)?;
        let conv_out = silu(&self.conv1d.forward(&conv_input)?)?;
        let kd = self.key_dim();
        let parts = ops::split(&conv_out, vec![kd, 2 * kd], -1)?;
        let q = ops::reshape(&parts[0], &[b, s, self.num_k_heads, self.head_k_dim])?;
        let k = ops::reshape(&parts[1], &[b, s, self.num_k_heads, self.head_k_dim])?;
        let v = ops::reshape(&parts[2], &[b, s, self.num_v_heads, self.head_v_dim])?;

        let (q, k) = normalize_qk(&q, &k, (self.head_k_dim as f64).powf(-0.5), 1e-6)?;
        let state = match &cache {
            Some(c) => c.recurrent.clone(),
            None => ops::zeros(
                &[b, self.num_v_heads, self.head_v_dim, self.head_k_dim],
                Dtype::Float32,
            )?,
        };
        let beta = ops::sigmoid(&beta_in)?;
        let g = compute_g(&self.a_log, &a, &self.dt_bias)?;
        let (out, state) = gated_delta(&q, &k, &v, &g, &beta, state, mask.as_ref())?;
        if let Some(c) = cache {
            match c.lengths.take() {
                // Each sequence's last `n_keep` real inputs.
                Some(lengths) => {
                    let ends = ops::clip(&lengths, 0, s)?;
                    let positions = ops::add(
                        &ops::expand_dims(&ends, 1)?,
                        &ops::arange(0, n_keep, 1, Dtype::Int32)?,
                    )?;
                    let positions = ops::expand_dims(&positions, -1)?;
                    c.conv = ops::take_along_axis(&conv_input, &positions, 1)?;
                    c.lengths = Some(ops::subtract(&lengths, s)?);
                }
                None => {
                    let len = conv_input.shape()[1];
                    c.conv = ops::contiguous(&conv_input.index((.., len - n_keep..))?, None)?;
                }
            }
            c.recurrent = state;
        }
        let out = self.norm.forward(&out, &z)?;
        self.out_proj.forward(&ops::reshape(&out, &[b * s, -1])?)
    }
}

/// Python: `normalize_qk`: L2-normalizes q and k through `rms_norm` (whose eps is added to the
/// mean square, hence the scaled eps) and folds the readout scale into q.
fn normalize_qk(q: &Array, k: &Array, inv_scale: f64, eps: f64) -> Result<(Array, Array)> {
    let rms_eps = (eps * inv_scale * inv_scale) as f32;
    let q = ops::multiply(
        &fast::rms_norm(q, None, rms_eps)?,
        (inv_scale * inv_scale) as f32,
    )?;
    let k = ops::multiply(&fast::rms_norm(k, None, rms_eps)?, inv_scale as f32)?;
    Ok((q, k))
}

/// Calls `f` compiled in `slot`, as mlx_lm calls its `@mx.compile`d helpers. On a GPU a compiled
/// chain of element-wise ops is one fused kernel, which may contract a multiply and an add
/// into one rounding; only the same compiled graph gives mlx_lm's bits there.
fn compiled(
    slot: &'static OnceLock<CompiledFn>,
    shapeless: bool,
    inputs: &[&Array],
    f: &dyn Fn(&[Array]) -> Result<Vec<Array>>,
) -> Result<Vec<Array>> {
    slot.get_or_init(|| CompiledFn::new(shapeless))
        .call_with_refs(inputs, &[], f)
}

/// Python: `compute_g`: `exp(-exp(A_log) * softplus(a + dt_bias))`, in float32, compiled
/// shapeless as mlx_lm compiles it.
fn compute_g(a_log: &Array, a: &Array, dt_bias: &Array) -> Result<Array> {
    static SLOT: OnceLock<CompiledFn> = OnceLock::new();
    let g = compiled(&SLOT, true, &[a_log, a, dt_bias], &|xs| {
        let softplus = ops::logaddexp(&ops::add(&xs[1], &xs[2])?, 0.0f32)?;
        let decay = ops::multiply(
            &ops::negative(&ops::exp(&xs[0].astype(Dtype::Float32)?)?)?,
            &softplus,
        )?;
        Ok(vec![ops::exp(&decay)?])
    })?;
    Ok(g.into_iter().next().expect("one output"))
}

/// Python: `_gated_delta_step_ops`, one step of the recurrence (`q`, `k` `[B, H, Dk]`, `v`
/// `[B, H, Dv]`, `g`, `beta` `[B, H]`, `state` `[B, H, Dv, Dk]`, `mask` `[B]`): the step's
/// output in `q`'s dtype and the new state, compiled as mlx_lm compiles it (shapes part of
/// the trace: one trace per prompt shape, then cache hits for every step).
fn gated_delta_step(
    q: &Array,
    k: &Array,
    v: &Array,
    g: &Array,
    beta: &Array,
    state: &Array,
    mask: Option<&Array>,
) -> Result<(Array, Array)> {
    static SLOT: OnceLock<CompiledFn> = OnceLock::new();
    let mut inputs = vec![q, k, v, g, beta, state];
    inputs.extend(mask);
    let out = compiled(&SLOT, false, &inputs, &|xs| {
        let (q, k, v, g, beta, old_state) = (&xs[0], &xs[1], &xs[2], &xs[3], &xs[4], &xs[5]);
        let state = ops::multiply(old_state, &ops::expand_dims(g, [-1, -2])?)?;
        let k_row = ops::expand_dims(k, -2)?;
        let kv_mem = ops::sum(&ops::multiply(&state, &k_row)?, -1, false)?;
        let delta = ops::multiply(&ops::subtract(v, &kv_mem)?, &ops::expand_dims(beta, -1)?)?;
        let state = ops::add(
            &state,
            &ops::multiply(&k_row, &ops::expand_dims(&delta, -1)?)?,
        )?;
        let y = ops::sum(
            &ops::multiply(&state, &ops::expand_dims(q, -2)?)?,
            -1,
            false,
        )?;
        let state = match xs.get(6) {
            Some(mask) => ops::where_(&ops::expand_dims(mask, [1, 2, 3])?, &state, old_state)?,
            None => state,
        };
        Ok(vec![y.astype(q.dtype())?, state])
    })?;
    let [y, state]: [Array; 2] = out.try_into().map_err(|_| {
        mlx_rs::Error::Mlx("the gated delta step returned other than 2 arrays".into())
    })?;
    Ok((y, state))
}

/// Python: `gated_delta_ops`, the recurrence step by step (what mlx_lm runs on every device
/// but Metal).
fn gated_delta(
    q: &Array,
    k: &Array,
    v: &Array,
    g: &Array,
    beta: &Array,
    mut state: Array,
    mask: Option<&Array>,
) -> Result<(Array, Array)> {
    if gated_delta::is_supported(q, k, v, g, beta, &state, mask)? {
        return gated_delta::apply_unchecked(q, k, v, g, beta, &state, mask);
    }
    let (hk, hv) = (q.shape()[2], v.shape()[2]);
    let (q, k) = if hv / hk > 1 {
        (ops::repeat(q, hv / hk, -2)?, ops::repeat(k, hv / hk, -2)?)
    } else {
        (q.clone(), k.clone())
    };
    let steps = q.shape()[1];
    let mut ys = Vec::with_capacity(steps as usize);
    for t in 0..steps {
        let at = |x: &Array| x.index((.., t));
        let mask_t = mask.map(at).transpose()?;
        let (y, next) = gated_delta_step(
            &at(&q)?,
            &at(&k)?,
            &at(v)?,
            &at(g)?,
            &at(beta)?,
            &state,
            mask_t.as_ref(),
        )?;
        state = next;
        ys.push(y);
    }
    Ok((ops::stack(&ys, 1)?, state))
}

/// Python: `Qwen3NextAttention`: gated output, q/k norms, partial rotary.
#[derive(Debug, Clone, TreeNode)]
pub struct GatedAttention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_norm: RMSNorm,
    pub k_norm: RMSNorm,
    pub rope: Rope,
    #[tree(static)]
    pub num_attention_heads: i32,
    #[tree(static)]
    pub num_key_value_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
}

impl GatedAttention {
    fn load(ck: &mut Checkpoint, path: &str, a: &Qwen3_5Args) -> crate::Result<GatedAttention> {
        let (d, h, kv, hd, bias) = (
            a.hidden_size,
            a.num_attention_heads,
            a.num_key_value_heads,
            a.head_dim,
            a.attention_bias,
        );
        let p = |name: &str| format!("{path}.{name}");
        Ok(GatedAttention {
            q_proj: ck.linear(&p("q_proj"), d, h * hd * 2, bias)?,
            k_proj: ck.linear(&p("k_proj"), d, kv * hd, bias)?,
            v_proj: ck.linear(&p("v_proj"), d, kv * hd, bias)?,
            o_proj: ck.linear(&p("o_proj"), h * hd, d, bias)?,
            q_norm: ck.rms_norm(&p("q_norm"), hd, a.rms_norm_eps)?,
            k_norm: ck.rms_norm(&p("k_norm"), hd, a.rms_norm_eps)?,
            rope: a.rope.clone(),
            num_attention_heads: h,
            num_key_value_heads: kv,
            head_dim: hd,
            scale: (hd as f64).powf(-0.5) as f32,
        })
    }

    fn forward(
        &self,
        x: &Array,
        rows: Rows,
        mask: &PlainMask,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let q = ops::reshape(
            &self.q_proj.forward(x)?,
            &[rows.batch, rows.len, self.num_attention_heads, -1],
        )?;
        let halves = ops::split(&q, 2, -1)?;
        let gate = ops::reshape(&halves[1], &[rows.batch * rows.len, -1])?;
        let queries = heads_first(&self.q_norm.forward(&halves[0])?)?;
        let keys = heads(
            &self.k_proj.forward(x)?,
            rows,
            self.num_key_value_heads,
            Some(&self.k_norm),
        )?;
        let values = heads(
            &self.v_proj.forward(x)?,
            rows,
            self.num_key_value_heads,
            None,
        )?;
        let out = attend(
            queries, keys, values, &self.rope, self.scale, mask, None, cache,
        )?;
        let out = merge_heads(&out)?;
        self.o_proj
            .forward(&ops::multiply(&out, &ops::sigmoid(&gate)?)?)
    }
}

/// Python: `DecoderLayer`: `linear_attn` or `self_attn`, then the MLP.
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen3_5Layer {
    pub linear_attn: Option<GatedDeltaNet>,
    pub self_attn: Option<GatedAttention>,
    pub input_layernorm: RMSNorm,
    pub post_attention_layernorm: RMSNorm,
    pub mlp: Mlp,
}

/// Python: `Qwen3_5TextModel`.
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen3_5TextModel {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<Qwen3_5Layer>,
    pub norm: RMSNorm,
}

/// Python: `TextModel`.
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen3_5Text {
    pub model: Qwen3_5TextModel,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

/// Python: `mlx_lm.models.qwen3_5.Model` (the text model under `language_model`).
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen3_5 {
    pub language_model: Qwen3_5Text,
}

impl Qwen3_5 {
    /// Reads the config: `text_config` when there is one, else the top level (Python:
    /// `ModelArgs.from_dict` + `TextModelArgs.from_dict`).
    pub fn args(config: &ModelConfig) -> crate::Result<Qwen3_5Args> {
        let c = config
            .section("text_config")
            .unwrap_or_else(|| config.clone());
        let hidden = c.dim_or("hidden_size", Some(4096))?;
        let heads = c.dim_or("num_attention_heads", Some(32))?;
        let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
        // Python's defaults when `rope_parameters` is absent.
        let params = c.section("rope_parameters");
        let (theta, partial) = match &params {
            Some(p) => (
                p.float_or("rope_theta", 100_000.0)?,
                p.float_or("partial_rotary_factor", 0.25)?,
            ),
            None => (100_000.0, 0.25),
        };
        let rope_dims = (head_dim as f64 * partial) as i32;
        let rope = Rope::from_config(&c, rope_dims, theta, false)?;
        let args = Qwen3_5Args {
            hidden_size: hidden,
            intermediate_size: c.dim_or("intermediate_size", Some(14336))?,
            num_hidden_layers: c.dim_or("num_hidden_layers", Some(32))?,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(8))?,
            head_dim,
            rms_norm_eps: c.float_or("rms_norm_eps", 1e-6)? as f32,
            vocab_size: c.dim_or("vocab_size", Some(151936))?,
            linear_num_value_heads: c.dim_or("linear_num_value_heads", Some(64))?,
            linear_num_key_heads: c.dim_or("linear_num_key_heads", Some(16))?,
            linear_key_head_dim: c.dim_or("linear_key_head_dim", Some(192))?,
            linear_value_head_dim: c.dim_or("linear_value_head_dim", Some(128))?,
            linear_conv_kernel_dim: c.dim_or("linear_conv_kernel_dim", Some(4))?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            attention_bias: c.bool_or("attention_bias", false)?,
            full_attention_interval: c.dim_or("full_attention_interval", Some(4))?,
            rope,
        };
        if args.linear_num_value_heads % args.linear_num_key_heads != 0 {
            return Err(invalid(
                c.path(),
                &c.key("linear_num_value_heads"),
                "must be a multiple of linear_num_key_heads",
            ));
        }
        if c.usize("num_experts")?.unwrap_or(0) > 0 {
            return Err(invalid(
                c.path(),
                &c.key("num_experts"),
                "mixture-of-experts Qwen3.5 is not supported (dense text model only)",
            ));
        }
        Ok(args)
    }

    /// Python: `Model.sanitize` + `TextModel.sanitize`: drops vision and `mtp.` tensors, moves
    /// the Hugging Face prefix `model.language_model.` to `language_model.model.`, and for a
    /// Hugging Face checkpoint (conv1d weights `[C, 1, K]`) reorders them to `[C, K, 1]` and
    /// adds one to the norm weights (stored there as offsets from one).
    pub fn sanitize(ck: &mut Checkpoint, args: &Qwen3_5Args) -> crate::Result<()> {
        let w = ck.weights_mut();
        w.retain(|k, _| {
            !k.starts_with("vision_tower") && !k.starts_with("model.visual") && !k.contains("mtp.")
        });
        for key in w.keys().into_iter().map(str::to_string).collect::<Vec<_>>() {
            let to = if let Some(rest) = key.strip_prefix("model.language_model") {
                format!("language_model.model{rest}")
            } else if key.starts_with("language_model.") {
                continue;
            } else {
                format!("language_model.{key}")
            };
            w.rename(&key, to);
        }
        if args.tie_word_embeddings {
            w.retain(|k, _| k != "language_model.lm_head.weight");
        }
        let unsanitized = w.keys().iter().any(|k| {
            k.contains("conv1d.weight") && w.get(k).and_then(|a| a.shape().last()) != Some(&1)
        });
        const NORMS: [&str; 5] = [
            ".input_layernorm.weight",
            ".post_attention_layernorm.weight",
            "model.norm.weight",
            ".q_norm.weight",
            ".k_norm.weight",
        ];
        w.map(|k, v| {
            if k.contains("conv1d.weight") && v.shape().last() != Some(&1) {
                return ops::moveaxis(v, 2, 1).map(Some);
            }
            if unsanitized && v.ndim() == 1 && NORMS.iter().any(|s| k.ends_with(s)) {
                return ops::add(v, 1.0f32).map(Some);
            }
            Ok(None)
        })
    }

    /// Reads the config, sanitizes and casts the tensors (`A_log` stays float32, Python's
    /// `cast_predicate`), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        dtype: Option<Dtype>,
    ) -> crate::Result<Qwen3_5> {
        let args = Self::args(config)?;
        Self::sanitize(ck, &args)?;
        ck.cast(dtype, |k| k.ends_with("A_log"))?;
        Self::load(ck, &args)
    }

    /// Builds the model from a checkpoint's tensors (after [`Self::sanitize`]).
    pub fn load(ck: &mut Checkpoint, a: &Qwen3_5Args) -> crate::Result<Qwen3_5> {
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let path = format!("language_model.model.layers.{i}");
            let linear = (i + 1) % a.full_attention_interval != 0;
            layers.push(Qwen3_5Layer {
                linear_attn: linear
                    .then(|| GatedDeltaNet::load(ck, &format!("{path}.linear_attn"), a))
                    .transpose()?,
                self_attn: (!linear)
                    .then(|| GatedAttention::load(ck, &format!("{path}.self_attn"), a))
                    .transpose()?,
                input_layernorm: ck.rms_norm(
                    &format!("{path}.input_layernorm"),
                    a.hidden_size,
                    a.rms_norm_eps,
                )?,
                post_attention_layernorm: ck.rms_norm(
                    &format!("{path}.post_attention_layernorm"),
                    a.hidden_size,
                    a.rms_norm_eps,
                )?,
                mlp: Mlp::load(
                    ck,
                    &format!("{path}.mlp"),
                    a.hidden_size,
                    a.intermediate_size,
                    false,
                )?,
            });
        }
        let model = Qwen3_5TextModel {
            embed_tokens: ck.embedding(
                "language_model.model.embed_tokens",
                a.vocab_size,
                a.hidden_size,
            )?,
            layers,
            norm: ck.rms_norm("language_model.model.norm", a.hidden_size, a.rms_norm_eps)?,
        };
        let lm_head = if a.tie_word_embeddings {
            None
        } else {
            Some(ck.linear("language_model.lm_head", a.hidden_size, a.vocab_size, false)?)
        };
        Ok(Qwen3_5 {
            language_model: Qwen3_5Text { model, lm_head },
        })
    }

    /// Logits `[B, L, vocab]` for token ids `[B, L]`.
    pub fn forward(&self, inputs: &Array, mut cache: Option<&mut [LayerCache]>) -> Result<Array> {
        let lm = &self.language_model;
        let rows = Rows::of(inputs)?;
        let mut h = lm.model.embed_tokens.forward(&rows.fold(inputs)?)?;
        let mask = match cache.as_deref() {
            Some(c) => shared_cache_mask(c, rows.len)?,
            None => PlainMask::new(rows.len, None)?,
        };
        for (i, layer) in lm.model.layers.iter().enumerate() {
            let c = cache.as_deref_mut().and_then(|c| c.get_mut(i));
            let x = layer.input_layernorm.forward(&h)?;
            let r = match (&layer.linear_attn, &layer.self_attn) {
                (Some(l), _) => l.forward(&x, rows, c)?,
                (None, Some(a)) => a.forward(&x, rows, &mask, c)?,
                (None, None) => return Err(wrong_input("a layer without attention")),
            };
            h = ops::add(&h, &r)?;
            let r = layer
                .mlp
                .forward(&layer.post_attention_layernorm.forward(&h)?)?;
            h = ops::add(&h, &r)?;
        }
        let h = lm.model.norm.forward(&h)?;
        rows.unfold(&logits(&h, &lm.model.embed_tokens, lm.lm_head.as_ref())?)
    }

    /// The cache: conv + recurrent state for linear-attention layers, a key/value cache of
    /// `capacity` for the others (Python: `make_cache`).
    pub fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        let dtype = self.dtype();
        self.language_model
            .model
            .layers
            .iter()
            .map(|l| match (&l.linear_attn, &l.self_attn) {
                (Some(g), _) => Ok(LayerCache::Arrays(ArraysCache {
                    conv: ops::zeros(&[batch, g.conv_kernel_size - 1, g.conv_dim()], dtype)?,
                    recurrent: ops::zeros(
                        &[batch, g.num_v_heads, g.head_v_dim, g.head_k_dim],
                        Dtype::Float32,
                    )?,
                    lengths: None,
                })),
                (None, Some(a)) => Ok(LayerCache::Kv(KvCache::new(
                    batch,
                    a.num_key_value_heads,
                    capacity,
                    (a.head_dim, a.head_dim),
                    dtype,
                )?)),
                (None, None) => Err(wrong_input("a layer without attention")),
            })
            .collect()
    }

    /// The dtype the model computes in.
    pub fn dtype(&self) -> Dtype {
        compute_dtype(&self.language_model.model.embed_tokens)
    }

    /// The number of parameters.
    pub fn num_parameters(&self) -> Result<usize> {
        Module::num_parameters(self)
    }
}
