//! `jamba` (Python: `mlx_lm.models.jamba`): AI21's Jamba, Mamba-1 layers with an attention
//! layer every `attn_layer_period`-th (no positional embedding), and a mixture-of-experts
//! feed-forward block every `expert_layer_period`-th layer (a dense SwiGLU MLP in the others).
//!
//! Its Mamba mixer is Mamba-1's selective scan with RMSNorms (with weights) on Δ, B and C,
//! written in mlx_lm's vectorized order: the projections of every position at once, the
//! input terms `(Δ x) ⊗ B` and decays `exp(Δ ⊗ A)` of every position at once, then the
//! recurrence `h_t = h_{t-1} * dA_t + (Δ x)_t ⊗ B_t` position by position through mlx_lm's
//! compiled `fma`, and the readout of every position at once. This is another order of ops
//! than mamba's ([`blocks::selective_scan`](crate::blocks::selective_scan)), so it is its own
//! block here ([`JambaMambaMixer::scan`]); on a CUDA GPU its recurrence is one kernel
//! ([`kernels::selective_scan`](crate::kernels::selective_scan), the model's
//! [`KernelOptions::fused_selective_scan`]).

use mlx_nn::Frozen;
use std::sync::OnceLock;

use mlx_nn::{Conv1d, Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::compile::CompiledFn;
use mlx_rs::ops;
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::conv::{
    causal_conv1d, conv_state, load_depthwise_conv1d, sanitize_conv_weights, ConvActivation,
};
use crate::blocks::mlp::swiglu;
use crate::blocks::moe::FeedForward;
use crate::blocks::rows::{arrays_entry, wrong_input};
use crate::blocks::{
    forward_layers, Attention, AttentionConfig, Layer, LayerContext, Mlp, Router, Rows, SwitchGlu,
    TokenMixer,
};
use crate::cache::{ArraysCache, LayerCache};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::selective_scan::{self, ScanInputs};
use crate::kernels::{on_cuda, KernelOptions};
use crate::models::base::own_stack_language_model;
use crate::quantization::QuantParams;

/// The slots of a Mamba layer's [`ArraysCache`] (Python: `ArraysCache(size=2)`): the
/// convolution's last inputs `[batch, kernel - 1, d_inner]` and the SSM state `[batch,
/// d_inner, d_state]`, both in the model's dtype (as mlx_lm keeps them).
const CONV: usize = 0;
const SSM: usize = 1;

/// Python: jamba's `ModelArgs`, over transformers 5.23's `JambaConfig`.
#[derive(Debug, Clone)]
pub struct JambaArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub rms_norm_eps: f32,
    pub tie_word_embeddings: bool,
    pub attention: AttentionConfig,
    pub mamba_d_state: i32,
    pub mamba_d_conv: i32,
    pub mamba_expand: i32,
    pub mamba_dt_rank: i32,
    pub mamba_conv_bias: bool,
    pub mamba_proj_bias: bool,
    pub num_experts: i32,
    pub num_experts_per_tok: i32,
    /// Per layer: attention, else Mamba.
    pub attention_layers: Vec<bool>,
    /// Per layer: the mixture-of-experts block, else the dense MLP.
    pub expert_layers: Vec<bool>,
}

impl JambaArgs {
    /// Reads the config over every key of transformers 5.23's `JambaConfig`, with its
    /// defaults where a key is absent. Where mlx_lm departs from transformers, this follows
    /// transformers:
    /// - the expert layers are those with `i % expert_layer_period == expert_layer_offset`
    ///   (mlx_lm: `(i + offset) % period == 0`, the same layers only when `2 * offset` is a
    ///   multiple of the period, as in the released models);
    /// - the router takes the top k of the softmax over all experts, unnormalized (mlx_lm:
    ///   the softmax over the top k logits, which sums to one);
    /// - `tie_word_embeddings` defaults to false (mlx_lm: true).
    ///
    /// mlx_lm's own `layers_block_type`, where given, must be what the attention period and
    /// offset make (transformers derives it from them only).
    pub fn from_config(c: &ModelConfig) -> crate::Result<JambaArgs> {
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Initialization, dropout and the training loss's router terms draw or weigh nothing
        // at inference; the kernels / mambapy / associative-scan switches choose how
        // transformers runs the same scan; max_position_embeddings bounds nothing without
        // positional embeddings.
        c.declare_neutral(&[
            "initializer_range",
            "attention_dropout",
            "output_router_logits",
            "router_aux_loss_coef",
            "use_mamba_kernels",
            "use_mambapy",
            "use_associative_scan",
            "max_position_embeddings",
        ]);
        let hidden = c.dim_or("hidden_size", Some(4096))?;
        let heads = c.dim_or("num_attention_heads", Some(32))?;
        let layers = c.dim_or("num_hidden_layers", Some(32))?;
        let (attn_period, attn_offset) = (
            c.dim_or("attn_layer_period", Some(8))?,
            c.usize("attn_layer_offset")?.unwrap_or(4) as i32,
        );
        let (expert_period, expert_offset) = (
            c.dim_or("expert_layer_period", Some(2))?,
            c.usize("expert_layer_offset")?.unwrap_or(1) as i32,
        );
        let num_experts = c.dim_or("num_experts", Some(16))?;
        let num_experts_per_tok = c.dim_or("num_experts_per_tok", Some(2))?;
        if num_experts_per_tok > num_experts {
            return Err(invalid(
                c.path(),
                &c.key("num_experts_per_tok"),
                &format!("{num_experts_per_tok} experts per token, but only {num_experts}"),
            ));
        }
        let attention_layers: Vec<bool> = (0..layers)
            .map(|i| i % attn_period == attn_offset)
            .collect();
        match c.get("layers_block_type") {
            None | Some(Value::Null) => {}
            Some(given) => {
                let derived: Vec<Value> = attention_layers
                    .iter()
                    .map(|a| Value::from(if *a { "attention" } else { "mamba" }))
                    .collect();
                if *given != Value::Array(derived.clone()) {
                    return Err(invalid(
                        c.path(),
                        &c.key("layers_block_type"),
                        &format!(
                            "{given}, but attn_layer_period and attn_layer_offset (which \
                             transformers builds the layers from) make {}",
                            Value::Array(derived)
                        ),
                    ));
                }
            }
        }
        let dt_rank = match c.get("mamba_dt_rank") {
            None | Some(Value::Null) => (hidden + 15) / 16,
            Some(Value::String(s)) if s == "auto" => (hidden + 15) / 16,
            Some(_) => c.dim("mamba_dt_rank")?,
        };
        Ok(JambaArgs {
            vocab_size: c.dim_or("vocab_size", Some(65536))?,
            hidden_size: hidden,
            intermediate_size: c.dim_or("intermediate_size", Some(14336))?,
            num_hidden_layers: layers,
            rms_norm_eps: c.float_or("rms_norm_eps", 1e-6)? as f32,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            attention: AttentionConfig {
                hidden_size: hidden,
                num_heads: heads,
                num_kv_heads: c.dim_or("num_key_value_heads", Some(8))?,
                head_dim: hidden / heads,
                qkv_bias: false,
                o_bias: false,
                qk_norm: None,
                output_gate: false,
                rope: None,
                sliding_window: None,
            },
            mamba_d_state: c.dim_or("mamba_d_state", Some(16))?,
            mamba_d_conv: c.dim_or("mamba_d_conv", Some(4))?,
            mamba_expand: c.dim_or("mamba_expand", Some(2))?,
            mamba_dt_rank: dt_rank,
            mamba_conv_bias: c.bool_or("mamba_conv_bias", true)?,
            mamba_proj_bias: c.bool_or("mamba_proj_bias", false)?,
            num_experts,
            num_experts_per_tok,
            attention_layers,
            expert_layers: (0..layers)
                .map(|i| num_experts > 1 && i % expert_period == expert_offset)
                .collect(),
        })
    }
}

/// Python: `fma`, mlx_lm's `@mx.compile`d `a * b + c`: compiled as mlx_lm compiles it (shapes
/// part of the trace), since a fused kernel may round the multiply-add as one.
fn fma(a: &Array, b: &Array, c: &Array) -> Result<Array> {
    static SLOT: OnceLock<CompiledFn> = OnceLock::new();
    let out =
        SLOT.get_or_init(|| CompiledFn::new(false))
            .call_with_refs(&[a, b, c], &[], &|xs| {
                Ok(vec![ops::add(&ops::multiply(&xs[0], &xs[1])?, &xs[2])?])
            })?;
    Ok(out.into_iter().next().expect("one output"))
}

/// Python: `JambaMambaMixer`.
#[derive(Debug, Clone, TreeNode)]
pub struct JambaMambaMixer {
    pub in_proj: MaybeQuantizedLinear,
    pub conv1d: Conv1d,
    pub x_proj: MaybeQuantizedLinear,
    pub dt_proj: MaybeQuantizedLinear,
    #[tree(rename = "A_log")]
    pub a_log: Array,
    #[tree(rename = "D")]
    pub d: Array,
    pub out_proj: MaybeQuantizedLinear,
    pub dt_layernorm: RMSNorm,
    pub b_layernorm: RMSNorm,
    pub c_layernorm: RMSNorm,
    #[tree(static)]
    pub d_inner: i32,
    #[tree(static)]
    pub d_state: i32,
    #[tree(static)]
    pub dt_rank: i32,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl JambaMambaMixer {
    /// Takes the mixer's tensors under `path`.
    pub fn load(ck: &mut Checkpoint, path: &str, a: &JambaArgs) -> crate::Result<Self> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, n, r) = (a.hidden_size, a.mamba_d_state, a.mamba_dt_rank);
        let inner = a.mamba_expand * d;
        let eps = a.rms_norm_eps;
        Ok(JambaMambaMixer {
            frozen: Frozen::default(),
            in_proj: ck.linear(&p("in_proj"), d, 2 * inner, a.mamba_proj_bias)?,
            conv1d: load_depthwise_conv1d(
                ck,
                &p("conv1d"),
                inner,
                a.mamba_d_conv,
                a.mamba_conv_bias,
            )?,
            x_proj: ck.linear(&p("x_proj"), inner, r + 2 * n, false)?,
            dt_proj: ck.linear(&p("dt_proj"), r, inner, true)?,
            a_log: ck.array(&p("A_log"), &[inner, n])?,
            d: ck.array(&p("D"), &[inner])?,
            out_proj: ck.linear(&p("out_proj"), inner, d, a.mamba_proj_bias)?,
            dt_layernorm: ck.rms_norm(&p("dt_layernorm"), r, eps)?,
            b_layernorm: ck.rms_norm(&p("b_layernorm"), n, eps)?,
            c_layernorm: ck.rms_norm(&p("c_layernorm"), n, eps)?,
            d_inner: inner,
            d_state: n,
            dt_rank: r,
        })
    }

    /// The mixer over rows `h` `[B * L, hidden]`, continuing `cache`'s state.
    ///
    /// Unlike mlx_lm, a right-padded batch's padding never reaches the state: the
    /// convolution keeps each sequence's last real inputs and the scan holds a sequence's
    /// state over its padding (mlx_lm's jamba reads neither the mask nor the lengths).
    /// With `use_kernel`, the recurrence is one kernel where it applies ([`Self::scan`]).
    fn forward(
        &self,
        h: &Array,
        rows: Rows,
        use_kernel: bool,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let mut cache = arrays_entry(cache, "a jamba Mamba layer")?;
        let halves = ops::split(&self.in_proj.forward(h)?, 2, -1)?;
        let (x, z) = (&rows.unfold(&halves[0])?, &halves[1]);
        let mask = match &cache {
            Some(c) => c.make_mask(rows.len)?,
            None => None,
        };
        let x = causal_conv1d(
            &self.conv1d,
            x,
            mask.as_ref(),
            cache.as_deref_mut(),
            CONV,
            ConvActivation::Silu,
        )?;
        let a = ops::negative(&ops::exp(&self.a_log)?)?;
        let state = cache.as_ref().map(|c| c[SSM].clone());
        let (y, state) = self.scan(&x, &a, state, mask.as_ref(), use_kernel)?;
        if let Some(c) = cache {
            c[SSM] = state;
            c.advance(rows.len)?;
        }
        self.out_proj.forward(&swiglu(z, &rows.fold(&y)?)?)
    }

    /// Python: `ssm_step`: the scan of `x` `[B, T, d_inner]` (after the convolution) from
    /// `state` `[B, d_inner, d_state]` (`None`: a fresh sequence, no state term), with
    /// `A = -exp(A_log)`; the outputs `[B, T, d_inner]` and the state after the last
    /// position. With `mask` (`bool [B, T]`), a masked position leaves the state as it was.
    /// With `use_kernel`, the recurrence and the readout are one kernel where it applies
    /// ([`kernels::selective_scan`](crate::kernels::selective_scan)), else mlx_lm's ops.
    pub fn scan(
        &self,
        x: &Array,
        a: &Array,
        mut state: Option<Array>,
        mask: Option<&Array>,
        use_kernel: bool,
    ) -> Result<(Array, Array)> {
        let (r, n) = (self.dt_rank, self.d_state);
        let parts = ops::split(&self.x_proj.forward(x)?, &[r, r + n][..], -1)?;
        let delta = self.dt_layernorm.forward(&parts[0])?;
        let b = self.b_layernorm.forward(&parts[1])?;
        let c = self.c_layernorm.forward(&parts[2])?;
        let delta = mlx_nn::softplus(&self.dt_proj.forward(&delta)?)?;
        if use_kernel && on_cuda()? {
            let initial = match &state {
                Some(s) => s.clone(),
                None => ops::zeros(&[x.shape()[0], self.d_inner, n], x.dtype())?,
            };
            let inputs = ScanInputs {
                x,
                delta: &delta,
                a,
                b: &b,
                c: &c,
                d: &self.d,
            };
            if selective_scan::is_supported(&inputs, &initial, mask)? {
                return selective_scan::apply_unchecked(&inputs, &initial, mask);
            }
        }
        let inputs = ops::multiply(
            &ops::expand_dims(&ops::multiply(&delta, x)?, -1)?,
            &ops::expand_dims(&b, -2)?,
        )?;
        let decays = ops::exp(&ops::multiply(&ops::expand_dims(&delta, -1)?, a)?)?;
        let steps = x.shape()[1];
        let mut states = Vec::with_capacity(steps as usize);
        for t in 0..steps {
            let input = inputs.index((.., t))?;
            let next = match &state {
                None => input,
                Some(s) => {
                    let next = fma(s, &decays.index((.., t))?, &input)?;
                    match mask {
                        Some(m) => {
                            let keep = ops::expand_dims(&m.index((.., t))?, [1, 2])?;
                            ops::where_(&keep, &next, s)?
                        }
                        None => next,
                    }
                }
            };
            states.push(next.clone());
            state = Some(next);
        }
        let all = ops::stack(&states, 1)?;
        let y = ops::squeeze(&ops::matmul(&all, &ops::expand_dims(&c, -1)?)?, 3)?;
        let y = ops::add(&y, &ops::multiply(&self.d, x)?)?;
        let last = all.index((.., -1))?;
        Ok((y, last))
    }

    fn make_cache(&self, batch: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::Arrays(ArraysCache::new(vec![
            conv_state(&self.conv1d, batch, dtype)?,
            ops::zeros(&[batch, self.d_inner, self.d_state], dtype)?,
        ])))
    }
}

/// Python: `JambaSparseMoeBlock`: `router` (the gate's logits), `switch_mlp` (the experts);
/// the router as transformers' `JambaTopKRouter` computes it (see [`JambaArgs::from_config`]).
#[derive(Debug, Clone, TreeNode)]
pub struct JambaSparseMoe {
    pub router: MaybeQuantizedLinear,
    pub switch_mlp: SwitchGlu,
    #[tree(static)]
    pub top_k: i32,
}

impl Forward for JambaSparseMoe {
    fn forward(&self, x: &Array) -> Result<Array> {
        let route = Router::SoftmaxTopKNegated {
            norm_topk_prob: false,
        };
        let (inds, scores) = route.route(&self.router.forward(x)?, self.top_k)?;
        let y = self.switch_mlp.forward(x, &inds)?;
        ops::multiply(&y, &ops::expand_dims(&scores, -1)?)?.sum(-2, false)
    }
}

/// Python: `JambaDecoderLayer`: `r = x + mixer(input_layernorm(x))`, then `r +
/// feed_forward(pre_ff_layernorm(r))`; the mixer is `self_attn` or `mamba` (the other field
/// is `None`, so the parameter paths are mlx_lm's).
#[derive(Debug, Clone, TreeNode)]
pub struct JambaLayer {
    pub self_attn: Option<Attention>,
    pub mamba: Option<JambaMambaMixer>,
    pub feed_forward: FeedForward<JambaSparseMoe>,
    pub input_layernorm: RMSNorm,
    pub pre_ff_layernorm: RMSNorm,
}

impl JambaLayer {
    /// Takes layer `i`'s tensors under `path`.
    pub fn load(ck: &mut Checkpoint, path: &str, i: usize, a: &JambaArgs) -> crate::Result<Self> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let attention = a.attention_layers[i];
        let feed_forward = if a.expert_layers[i] {
            FeedForward::Sparse(JambaSparseMoe {
                router: ck.linear(&p("feed_forward.router"), d, a.num_experts, false)?,
                switch_mlp: SwitchGlu::load(
                    ck,
                    &p("feed_forward.switch_mlp"),
                    d,
                    a.intermediate_size,
                    a.num_experts,
                    false,
                )?,
                top_k: a.num_experts_per_tok,
            })
        } else {
            FeedForward::Dense(Mlp::load(
                ck,
                &p("feed_forward"),
                d,
                a.intermediate_size,
                false,
            )?)
        };
        Ok(JambaLayer {
            self_attn: attention
                .then(|| Attention::load(ck, &p("self_attn"), &a.attention))
                .transpose()?,
            mamba: (!attention)
                .then(|| JambaMambaMixer::load(ck, &p("mamba"), a))
                .transpose()?,
            feed_forward,
            input_layernorm: ck.rms_norm(&p("input_layernorm"), d, eps)?,
            pre_ff_layernorm: ck.rms_norm(&p("pre_ff_layernorm"), d, eps)?,
        })
    }
}

impl Layer for JambaLayer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let normed = self.input_layernorm.forward(x)?;
        let h = match (&self.self_attn, &self.mamba) {
            (Some(attention), None) => TokenMixer::forward(attention, &normed, ctx, cache)?,
            (None, Some(mamba)) => {
                mamba.forward(&normed, ctx.rows, ctx.kernels.fused_selective_scan, cache)?
            }
            _ => {
                return Err(wrong_input(
                    "a jamba layer has either self_attn or mamba, never both or neither",
                ))
            }
        };
        let r = ops::add(x, &h)?;
        let out = self
            .feed_forward
            .forward(&self.pre_ff_layernorm.forward(&r)?)?;
        ops::add(&r, &out)
    }

    /// Python: `KVCache()` for an attention layer, `ArraysCache(size=2)` for Mamba.
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match (&self.self_attn, &self.mamba) {
            (Some(attention), None) => TokenMixer::make_cache(attention, batch, capacity, dtype),
            (None, Some(mamba)) => mamba.make_cache(batch, dtype),
            _ => Err(wrong_input(
                "a jamba layer has either self_attn or mamba, never both or neither",
            )),
        }
    }
}

/// Python: `JambaModel`.
#[derive(Debug, Clone, TreeNode)]
pub struct JambaModel {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<JambaLayer>,
    pub final_layernorm: RMSNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

/// Python: `mlx_lm.models.jamba.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Jamba {
    pub model: JambaModel,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

/// Python: jamba's `quant_predicate`: the routers at 8 bits in groups of 64.
fn router_at_8_bits(path: &str) -> Option<QuantParams> {
    path.ends_with("router")
        .then_some(QuantParams::affine(64, 8))
}

impl Jamba {
    /// Python: `Model.sanitize`: a Hugging Face checkpoint's convolution weights `[C, 1, K]`
    /// become `[C, K, 1]`, a tied `lm_head` is dropped, and each sparse layer's per-expert
    /// tensors `feed_forward.experts.{e}.{proj}.{k}` are stacked into
    /// `feed_forward.switch_mlp.{proj}.{k}` (one missing is an error naming it).
    pub fn sanitize(ck: &mut Checkpoint, a: &JambaArgs) -> crate::Result<()> {
        sanitize_conv_weights(ck, "conv1d.weight")?;
        if a.tie_word_embeddings {
            ck.weights_mut().retain(|k, _| k != "lm_head.weight");
        }
        let experts = a.num_experts;
        for l in 0..a.num_hidden_layers {
            let prefix = format!("model.layers.{l}.feed_forward");
            for proj in ["gate_proj", "down_proj", "up_proj"] {
                for k in ["weight", "bias", "scales", "biases"] {
                    let key = |e: i32| format!("{prefix}.experts.{e}.{proj}.{k}");
                    let w = ck.weights_mut();
                    if !w.contains(&key(0)) {
                        continue;
                    }
                    let file = w
                        .file_of(&key(0))
                        .map(|p| p.to_path_buf())
                        .unwrap_or_default();
                    let mut parts = Vec::with_capacity(experts as usize);
                    for e in 0..experts {
                        let Some(t) = w.take(&key(e)) else {
                            return Err(invalid(
                                &file,
                                &key(e),
                                &format!("missing: the layer has {experts} experts"),
                            ));
                        };
                        parts.push(t);
                    }
                    let stacked = ops::stack(&parts, 0)?;
                    w.insert(format!("{prefix}.switch_mlp.{proj}.{k}"), stacked, file);
                }
            }
        }
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Jamba> {
        let a = JambaArgs::from_config(config)?;
        Self::sanitize(ck, &a)?;
        ck.set_quant_predicate(router_at_8_bits);
        ck.cast(options.dtype, |_| false)?;
        let layers = (0..a.num_hidden_layers as usize)
            .map(|i| JambaLayer::load(ck, &format!("model.layers.{i}"), i, &a))
            .collect::<crate::Result<Vec<_>>>()?;
        let (d, vocab) = (a.hidden_size, a.vocab_size);
        Ok(Jamba {
            model: JambaModel {
                embed_tokens: ck.embedding("model.embed_tokens", vocab, d)?,
                layers,
                final_layernorm: ck.rms_norm("model.final_layernorm", d, a.rms_norm_eps)?,
                kernels: options.kernels,
            },
            lm_head: (!a.tie_word_embeddings)
                .then(|| ck.linear("lm_head", d, vocab, false))
                .transpose()?,
        })
    }
}

own_stack_language_model!(
    Jamba,
    "jamba",
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
            None => m.embed_tokens.as_linear(&h)?,
        };
        rows.unfold(&logits)
    }
);
