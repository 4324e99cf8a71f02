//! `granitemoehybrid` (Python: `mlx_lm.models.granitemoehybrid`): IBM's Granite 4.0-H, decoder
//! layers whose token mixer is a Mamba-2 SSD (`mamba`, [`Mamba2Mixer`]) or attention
//! (`self_attn`, no positional embedding in the released models, scale
//! `attention_multiplier`), each followed by a SwiGLU MLP; µP-style multipliers on the
//! embeddings, both residual branches and the logits. Parameters under `model.*`
//! (`embed_tokens`, `layers.i.{input_layernorm, mamba | self_attn, post_attention_layernorm,
//! mlp}`, `norm`) and `lm_head` when untied.
//!
//! Dense models (Granite-4.0-H-Micro) have one MLP per layer: a Hugging Face checkpoint's
//! `shared_mlp` (`input_linear` = gate and up stacked, `output_linear`), which sanitize splits
//! into `mlp.{gate,up,down}_proj` as mlx_lm's does. Mixture-of-experts models
//! (`num_local_experts > 0`: Granite-4.0-H-Tiny, -Small) keep the `shared_mlp` as it is and
//! add `block_sparse_moe` ([`GraniteMoeHybridMoe`]: a softmax over the top-k router logits,
//! SwiGLU experts of `intermediate_size`), whose output is added to the shared MLP's.
//!
//! Where this port follows transformers' `GraniteMoeHybrid` rather than mlx_lm 0.32.2 (the
//! released configs give every key involved, so both agree on them):
//! - the dense MLP's width is `shared_intermediate_size` (what the checkpoint's `shared_mlp`
//!   holds; mlx_lm sizes it by `intermediate_size` and cannot load one where they differ);
//! - an absent `position_embedding_type` means no rotary embedding (transformers applies
//!   RoPE only for `"rope"`; mlx_lm's default is `"rope"`);
//! - an absent `time_step_limit` is `(0, inf)` (mlx_lm: `(0.001, 100)`);
//! - with `mamba_n_groups > 1` the gated norm normalizes each group on its own (as mamba2).

use mlx_nn::{Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::conv::sanitize_conv_weights;
use crate::blocks::mlp::swiglu;
use crate::blocks::moe::top_k_last;
use crate::blocks::rows::wrong_input;
use crate::blocks::ssd::{GatedNorm, Mamba2Config, Mamba2Mixer};
use crate::blocks::{
    forward_layers, Attention, AttentionConfig, Layer, LayerContext, Mlp, RotaryEmbedding, Rows,
    SwitchGlu, TokenMixer,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;
use crate::models::base::own_stack_language_model;
use crate::models::sparse::expert_counts;
use crate::quantization::QuantParams;

/// Python: granitemoehybrid's `ModelArgs`, as the layers use it.
#[derive(Debug, Clone)]
pub struct GraniteMoeHybridArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub rms_norm_eps: f32,
    /// The dense (or, with experts, the shared) MLP's hidden width
    /// (`shared_intermediate_size`).
    pub mlp_width: i32,
    /// The mixture-of-experts blocks, with `num_local_experts > 0`.
    pub moe: Option<GraniteMoeArgs>,
    pub mlp_bias: bool,
    pub tie_word_embeddings: bool,
    pub embedding_multiplier: f32,
    pub residual_multiplier: f32,
    pub logits_scaling: f32,
    /// Per layer: attention (`true`) or the Mamba-2 mixer.
    pub attention_layers: Vec<bool>,
    pub attention: AttentionConfig,
    /// The attention's scale (`attention_multiplier`).
    pub attention_scale: f32,
    pub mixer: Mamba2Config,
}

impl GraniteMoeHybridArgs {
    /// Reads the config against transformers' `GraniteMoeHybridConfig` (its defaults where a
    /// key is absent) and mlx_lm's `ModelArgs`.
    pub fn from_config(c: &ModelConfig) -> crate::Result<GraniteMoeHybridArgs> {
        let hidden = c.dim_or("hidden_size", Some(4096))?;
        let heads = c.dim_or("num_attention_heads", Some(32))?;
        let layers = c.dim_or("num_hidden_layers", Some(32))?;
        let eps = c.float_or("rms_norm_eps", 1e-6)? as f32;
        // Training only: the router's auxiliary loss and whether the forward returns its
        // logits.
        c.declare_neutral(&["output_router_logits", "router_aux_loss_coef"]);
        let moe = match c.usize("num_local_experts")?.unwrap_or(0) {
            0 => {
                // The router's settings, unused without experts; intermediate_size sizes only
                // the experts in transformers (the dense MLP is the shared one).
                c.declare_neutral(&["num_experts_per_tok", "intermediate_size"]);
                None
            }
            _ => {
                let (top_k, experts) = expert_counts(c, "num_local_experts")?;
                // transformers' shared MLP has no biases whatever mlp_bias says, nor have
                // mlx_lm's shared MLP and experts.
                c.declare_neutral(&["mlp_bias"]);
                Some(GraniteMoeArgs {
                    num_experts: experts,
                    top_k,
                    expert_width: c.dim_or("intermediate_size", Some(1024))?,
                })
            }
        };
        // transformers' ACT2FN: "swish" is SiLU too (the MLP's and the convolution's).
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Initialization and training settings; the SSD's chunk only regroups the same sums
        // (mlx_lm chunks by 256).
        c.declare_neutral(&[
            "initializer_range",
            "attention_dropout",
            "mamba_chunk_size",
            "max_position_embeddings",
        ]);
        let attention_layers = layer_types(c, layers)?;
        let mamba_heads = c.dim_or("mamba_n_heads", Some(128))?;
        let expand = c.dim_or("mamba_expand", Some(2))?;
        let mamba_head_dim = match c.get("mamba_d_head") {
            None | Some(Value::Null) => (expand * hidden) / mamba_heads,
            Some(Value::String(s)) if s == "auto" => (expand * hidden) / mamba_heads,
            Some(_) => c.dim("mamba_d_head")?,
        };
        if mamba_head_dim * mamba_heads != expand * hidden {
            return Err(invalid(
                c.path(),
                &c.key("mamba_d_head"),
                &format!(
                    "mamba_n_heads * mamba_d_head = {} but mamba_expand * hidden_size = {}",
                    mamba_head_dim * mamba_heads,
                    expand * hidden
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
        let head_dim = hidden / heads;
        let rope = match c.string("position_embedding_type")? {
            Some("rope") => {
                let nested = match c.section("rope_parameters") {
                    Some(p) => p.float("rope_theta")?,
                    None => None,
                };
                let theta = match nested {
                    Some(t) => t,
                    None => c.float_or("rope_theta", 10000.0)?,
                };
                Some(RotaryEmbedding::from_config(c, head_dim, theta, false)?)
            }
            None | Some("nope") => {
                // No rotary embedding: its settings are unused.
                c.declare_neutral(&["rope_parameters", "rope_theta", "rope_scaling"]);
                None
            }
            Some(other) => {
                return Err(invalid(
                    c.path(),
                    &c.key("position_embedding_type"),
                    &format!("{other:?} (expected \"rope\" or \"nope\")"),
                ))
            }
        };
        let time_step_limit = super::mamba2::time_step_limit(c)?;
        let attention_bias = c.bool_or("attention_bias", false)?;
        let float = |key: &str| -> crate::Result<f32> { Ok(c.float_or(key, 1.0)? as f32) };
        Ok(GraniteMoeHybridArgs {
            vocab_size: c.dim_or("vocab_size", Some(32000))?,
            hidden_size: hidden,
            rms_norm_eps: eps,
            mlp_width: c.dim_or("shared_intermediate_size", Some(1024))?,
            mlp_bias: moe.is_none() && c.bool_or("mlp_bias", false)?,
            moe,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            embedding_multiplier: float("embedding_multiplier")?,
            residual_multiplier: float("residual_multiplier")?,
            logits_scaling: float("logits_scaling")?,
            attention_scale: float("attention_multiplier")?,
            attention_layers,
            attention: AttentionConfig {
                hidden_size: hidden,
                num_heads: heads,
                num_kv_heads: c.dim_or("num_key_value_heads", Some(heads))?,
                head_dim,
                qkv_bias: attention_bias,
                o_bias: attention_bias,
                qk_norm: None,
                output_gate: false,
                rope,
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
                out_proj_bias: c.bool_or("mamba_proj_bias", false)?,
                use_conv_bias: c.bool_or("mamba_conv_bias", true)?,
                time_step_limit,
                norm_eps: eps,
                grouped_norm: n_groups > 1,
                gated_norm: GatedNorm::GateThenNorm,
                cast_d: true,
            },
        })
    }
}

/// The mixture-of-experts blocks of a Granite-4.0-H-Tiny/-Small config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraniteMoeArgs {
    /// `num_local_experts`.
    pub num_experts: i32,
    /// `num_experts_per_tok`.
    pub top_k: i32,
    /// Each expert's hidden width (`intermediate_size`).
    pub expert_width: i32,
}

/// Python: `GraniteMoeHybridSharedMLP`: `output_linear(swiglu(gate, up))` with gate and up
/// the two halves of `input_linear(x)`.
#[derive(Debug, Clone, TreeNode)]
pub struct GraniteMoeHybridSharedMlp {
    pub input_linear: MaybeQuantizedLinear,
    pub output_linear: MaybeQuantizedLinear,
}

impl GraniteMoeHybridSharedMlp {
    /// Takes the MLP under `path` (`model.layers.0.shared_mlp`): `dim` in and out, `hidden`
    /// between.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        dim: i32,
        hidden: i32,
    ) -> crate::Result<GraniteMoeHybridSharedMlp> {
        Ok(GraniteMoeHybridSharedMlp {
            input_linear: ck.linear(&format!("{path}.input_linear"), dim, 2 * hidden, false)?,
            output_linear: ck.linear(&format!("{path}.output_linear"), hidden, dim, false)?,
        })
    }
}

impl Forward for GraniteMoeHybridSharedMlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        let halves = ops::split(&self.input_linear.forward(x)?, 2, -1)?;
        self.output_linear.forward(&swiglu(&halves[0], &halves[1])?)
    }
}

/// Python: `GraniteMoeHybridTopKGating`: the router's logits (`layer`), their top k
/// (`argpartition(kth=-k)[..., -k:]`) and a softmax over those k in float32 (`precise`).
#[derive(Debug, Clone, TreeNode)]
pub struct GraniteMoeHybridTopKGating {
    pub layer: MaybeQuantizedLinear,
    #[tree(static)]
    pub top_k: i32,
}

impl GraniteMoeHybridTopKGating {
    /// The experts `[..., k]` and their weights `[..., k]` of rows `x`.
    pub fn route(&self, x: &Array) -> Result<(Array, Array)> {
        let logits = self.layer.forward(x)?;
        let idx = ops::stop_gradient(&top_k_last(&logits, self.top_k)?)?;
        let top = ops::take_along_axis(&logits, &idx, -1)?;
        Ok((idx, ops::softmax(&top, -1, true)?))
    }
}

/// Python: `GraniteMoeHybridMoE`: the router and the experts (`switch_mlp`), the experts'
/// outputs summed by the router's weights.
#[derive(Debug, Clone, TreeNode)]
pub struct GraniteMoeHybridMoe {
    pub switch_mlp: SwitchGlu,
    pub router: GraniteMoeHybridTopKGating,
}

impl GraniteMoeHybridMoe {
    /// Takes the block under `path` (`model.layers.0.block_sparse_moe`).
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        dim: i32,
        m: &GraniteMoeArgs,
    ) -> crate::Result<GraniteMoeHybridMoe> {
        let p = |name: &str| format!("{path}.{name}");
        Ok(GraniteMoeHybridMoe {
            switch_mlp: SwitchGlu::load(
                ck,
                &p("switch_mlp"),
                dim,
                m.expert_width,
                m.num_experts,
                false,
            )?,
            router: GraniteMoeHybridTopKGating {
                layer: ck.linear(&p("router.layer"), dim, m.num_experts, false)?,
                top_k: m.top_k,
            },
        })
    }
}

impl Forward for GraniteMoeHybridMoe {
    fn forward(&self, x: &Array) -> Result<Array> {
        let (idx, gates) = self.router.route(x)?;
        let y = self.switch_mlp.forward(x, &idx)?;
        ops::multiply(&y, &ops::expand_dims(&gates, -1)?)?.sum(-2, false)
    }
}

/// Which layers are attention: `layer_types` (`"mamba"` / `"attention"`, or transformers'
/// `"linear_attention"` / `"full_attention"`); absent, every layer is a Mamba-2 layer (as
/// transformers defaults it).
fn layer_types(c: &ModelConfig, layers: i32) -> crate::Result<Vec<bool>> {
    let error = |message: String| invalid(c.path(), &c.key("layer_types"), &message);
    match c.get("layer_types") {
        None | Some(Value::Null) => Ok(vec![false; layers as usize]),
        Some(Value::Array(types)) => {
            if types.len() != layers as usize {
                return Err(error(format!(
                    "{} entries for {layers} layers",
                    types.len()
                )));
            }
            types
                .iter()
                .map(|t| match t.as_str() {
                    Some("mamba" | "linear_attention") => Ok(false),
                    Some("attention" | "full_attention") => Ok(true),
                    _ => Err(error(format!(
                        "unknown layer type {t} (expected mamba or attention)"
                    ))),
                })
                .collect()
        }
        Some(v) => Err(error(format!("not a list: {v}"))),
    }
}

/// Python: `GraniteMoeHybridLayer`: `h = x + mixer(input_layernorm(x)) * m`, then
/// `h + ffn(post_attention_layernorm(h)) * m` with `m` the residual multiplier, where `ffn` is
/// `mlp` in a dense model, `block_sparse_moe(x) + shared_mlp(x)` in a mixture-of-experts one.
/// As in mlx_lm's module, a layer has exactly one of `mamba` and `self_attn`, and either
/// `mlp` or both `shared_mlp` and `block_sparse_moe`.
#[derive(Debug, Clone, TreeNode)]
pub struct GraniteMoeHybridLayer {
    pub input_layernorm: RMSNorm,
    pub mamba: Option<Mamba2Mixer>,
    pub self_attn: Option<Attention>,
    pub mlp: Option<Mlp>,
    pub shared_mlp: Option<GraniteMoeHybridSharedMlp>,
    pub block_sparse_moe: Option<GraniteMoeHybridMoe>,
    pub post_attention_layernorm: RMSNorm,
    #[tree(static)]
    pub residual_multiplier: f32,
}

impl GraniteMoeHybridLayer {
    /// Takes layer `i`'s tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        attention: bool,
        a: &GraniteMoeHybridArgs,
    ) -> crate::Result<GraniteMoeHybridLayer> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        Ok(GraniteMoeHybridLayer {
            input_layernorm: ck.rms_norm(&p("input_layernorm"), d, eps)?,
            mamba: (!attention)
                .then(|| Mamba2Mixer::load(ck, &p("mamba"), &a.mixer))
                .transpose()?,
            self_attn: attention
                .then(|| -> crate::Result<Attention> {
                    let mut attention = Attention::load(ck, &p("self_attn"), &a.attention)?;
                    attention.scale = a.attention_scale;
                    Ok(attention)
                })
                .transpose()?,
            mlp: a
                .moe
                .is_none()
                .then(|| Mlp::load(ck, &p("mlp"), d, a.mlp_width, a.mlp_bias))
                .transpose()?,
            shared_mlp: a
                .moe
                .map(|_| GraniteMoeHybridSharedMlp::load(ck, &p("shared_mlp"), d, a.mlp_width))
                .transpose()?,
            block_sparse_moe: a
                .moe
                .map(|m| GraniteMoeHybridMoe::load(ck, &p("block_sparse_moe"), d, &m))
                .transpose()?,
            post_attention_layernorm: ck.rms_norm(&p("post_attention_layernorm"), d, eps)?,
            residual_multiplier: a.residual_multiplier,
        })
    }
}

impl Layer for GraniteMoeHybridLayer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let m = self.residual_multiplier;
        let normed = self.input_layernorm.forward(x)?;
        let h =
            match (&self.mamba, &self.self_attn) {
                (Some(mamba), None) => {
                    mamba.forward(&normed, ctx.rows, ctx.kernels.fused_ssm_update, cache)?
                }
                (None, Some(attention)) => TokenMixer::forward(attention, &normed, ctx, cache)?,
                _ => return Err(wrong_input(
                    "a granitemoehybrid layer has either mamba or self_attn, never both or neither",
                )),
            };
        let h = ops::add(x, &ops::multiply(&h, m)?)?;
        let normed = self.post_attention_layernorm.forward(&h)?;
        let out =
            match (&self.mlp, &self.block_sparse_moe, &self.shared_mlp) {
                (Some(mlp), None, None) => mlp.forward(&normed)?,
                (None, Some(moe), Some(shared)) => {
                    ops::add(&moe.forward(&normed)?, &shared.forward(&normed)?)?
                }
                _ => return Err(wrong_input(
                    "a granitemoehybrid layer has either mlp or shared_mlp and block_sparse_moe",
                )),
            };
        ops::add(&h, &ops::multiply(&out, m)?)
    }

    /// Python: `ArraysCache(size=2)` for a Mamba-2 layer, `KVCache()` for attention.
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match (&self.mamba, &self.self_attn) {
            (Some(mamba), None) => mamba.make_cache(batch, dtype),
            (None, Some(attention)) => attention.make_cache(batch, capacity, dtype),
            _ => Err(wrong_input(
                "a granitemoehybrid layer has either mamba or self_attn, never both or neither",
            )),
        }
    }
}

/// Python: `GraniteMoeHybridModel`.
#[derive(Debug, Clone, TreeNode)]
pub struct GraniteMoeHybridModel {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<GraniteMoeHybridLayer>,
    pub norm: RMSNorm,
    #[tree(static)]
    pub embedding_multiplier: f32,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

/// Python: `mlx_lm.models.granitemoehybrid.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct GraniteMoeHybrid {
    pub model: GraniteMoeHybridModel,
    pub lm_head: Option<MaybeQuantizedLinear>,
    #[tree(static)]
    pub logits_scaling: f32,
}

impl GraniteMoeHybrid {
    /// Reads the config ([`GraniteMoeHybridArgs::from_config`]).
    pub fn args(config: &ModelConfig) -> crate::Result<GraniteMoeHybridArgs> {
        GraniteMoeHybridArgs::from_config(config)
    }

    /// Python: `Model.sanitize`: convolution weights `[C, 1, K]` become `[C, K, 1]`; with
    /// experts, each `block_sparse_moe.input_linear` `[E, 2 I, D]` splits into
    /// `switch_mlp.gate_proj` and `switch_mlp.up_proj` and `block_sparse_moe.output_linear`
    /// becomes `switch_mlp.down_proj` (a quantized checkpoint's `scales` / `biases` too,
    /// split by the same rows; mlx_lm splits the weights only); without, each
    /// `shared_mlp.input_linear` `[2 I, D]` splits into `mlp.gate_proj` and `mlp.up_proj`,
    /// `shared_mlp.output_linear` becomes `mlp.down_proj`; a tied model's redundant
    /// `lm_head.weight` is dropped.
    pub fn sanitize(
        ck: &mut Checkpoint,
        layers: usize,
        tied: bool,
        moe: bool,
    ) -> crate::Result<()> {
        sanitize_conv_weights(ck, "conv1d.weight")?;
        let w = ck.weights_mut();
        if moe {
            for l in 0..layers {
                let prefix = format!("model.layers.{l}.block_sparse_moe");
                for k in ["weight", "scales", "biases"] {
                    let input = format!("{prefix}.input_linear.{k}");
                    let Some(weight) = w.get(&input).cloned() else {
                        continue;
                    };
                    let file = w
                        .file_of(&input)
                        .map(std::path::Path::to_path_buf)
                        .unwrap_or_default();
                    w.take(&input);
                    let halves = ops::split(&weight, 2, 1).map_err(|source| crate::Error::Mlx {
                        path: file.clone(),
                        source,
                    })?;
                    let switch = format!("{prefix}.switch_mlp");
                    w.insert(format!("{switch}.gate_proj.{k}"), halves[0].clone(), &file);
                    w.insert(format!("{switch}.up_proj.{k}"), halves[1].clone(), &file);
                    w.rename(
                        &format!("{prefix}.output_linear.{k}"),
                        format!("{switch}.down_proj.{k}"),
                    );
                }
            }
        } else if w.contains("model.layers.0.shared_mlp.input_linear.weight") {
            for l in 0..layers {
                let shared = format!("model.layers.{l}.shared_mlp");
                let mlp = format!("model.layers.{l}.mlp");
                let input = format!("{shared}.input_linear.weight");
                let file = w.file_of(&input).map(std::path::Path::to_path_buf);
                let Some(weight) = w.take(&input) else {
                    return Err(crate::Error::MissingWeight {
                        dir: file.unwrap_or_default(),
                        key: input,
                    });
                };
                let file = file.unwrap_or_default();
                let halves = ops::split(&weight, 2, 0).map_err(|source| crate::Error::Mlx {
                    path: file.clone(),
                    source,
                })?;
                w.insert(format!("{mlp}.gate_proj.weight"), halves[0].clone(), &file);
                w.insert(format!("{mlp}.up_proj.weight"), halves[1].clone(), &file);
                w.rename(
                    &format!("{shared}.output_linear.weight"),
                    format!("{mlp}.down_proj.weight"),
                );
            }
        }
        if tied {
            w.retain(|k, _| k != "lm_head.weight");
        }
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<GraniteMoeHybrid> {
        let a = GraniteMoeHybridArgs::from_config(config)?;
        Self::sanitize(
            ck,
            a.attention_layers.len(),
            a.tie_word_embeddings,
            a.moe.is_some(),
        )?;
        if a.moe.is_some() {
            ck.set_quant_predicate(router_at_8_bits);
        }
        // mlx_lm's granitemoehybrid has no cast predicate.
        ck.cast(options.dtype, |_| false)?;
        let mut layers = Vec::with_capacity(a.attention_layers.len());
        for (i, attention) in a.attention_layers.iter().enumerate() {
            layers.push(GraniteMoeHybridLayer::load(
                ck,
                &format!("model.layers.{i}"),
                *attention,
                &a,
            )?);
        }
        Ok(GraniteMoeHybrid {
            model: GraniteMoeHybridModel {
                embed_tokens: ck.embedding("model.embed_tokens", a.vocab_size, a.hidden_size)?,
                layers,
                norm: ck.rms_norm("model.norm", a.hidden_size, a.rms_norm_eps)?,
                embedding_multiplier: a.embedding_multiplier,
                kernels: options.kernels,
            },
            lm_head: (!a.tie_word_embeddings)
                .then(|| ck.linear("lm_head", a.hidden_size, a.vocab_size, false))
                .transpose()?,
            logits_scaling: a.logits_scaling,
        })
    }
}

/// Python: granitemoehybrid's `quant_predicate` with experts: the routers
/// (`block_sparse_moe.router.layer`) at 8 bits in groups of 64.
fn router_at_8_bits(path: &str) -> Option<QuantParams> {
    path.ends_with("router.layer")
        .then_some(QuantParams::affine(64, 8))
}

own_stack_language_model!(
    GraniteMoeHybrid,
    "granitemoehybrid",
    layers: |m| &m.model.layers,
    embedding: |m| &m.model.embed_tokens,
    fn forward(&self, inputs, cache) {
        let m = &self.model;
        let rows = Rows::of(inputs)?;
        let h = m.embed_tokens.forward(&rows.fold(inputs)?)?;
        let h = ops::multiply(&h, m.embedding_multiplier)?;
        let h = forward_layers(&m.layers, h, rows, m.kernels, cache)?;
        let h = m.norm.forward(&h)?;
        let logits = match &self.lm_head {
            Some(head) => head.forward(&h)?,
            None => m.embed_tokens.as_linear(&h)?,
        };
        rows.unfold(&ops::divide(&logits, self.logits_scaling)?)
    }
);
