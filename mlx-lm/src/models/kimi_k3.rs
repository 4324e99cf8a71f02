//! `kimi_k3` (Python: `mlx_lm.models.kimi_k3`): Kimi Linear's hybrid (Kimi Delta Attention in
//! most layers, multi-head latent attention without rope in the others, a grouped sigmoid
//! router over experts) with what K3 adds, each a shared block:
//!
//! - KDA ([`KimiDeltaAttention`]) with one fused `qkv_proj` and one short convolution over
//!   the three (its state one array: Python's `ArraysCache(size=2)`), the decay optionally
//!   bounded below (`gate_lower_bound`: [`DecayGate::LowerBound`]) and the output gate
//!   optionally full rank (`use_full_rank_gate`: `g_proj` for `g_a_proj` → `g_b_proj`);
//! - MLA with the low-rank query (`q_lora_rank`) and a sigmoid output gate
//!   (`mla_use_output_gate`, [`Mla::g_proj`]);
//! - SiTU for SiLU in every MLP, the experts' included ([`Situ`]);
//! - a latent MoE (`routed_expert_hidden_size`): the routed experts run on a down-projected
//!   latent, optionally RMS-normed, projected back up; the router's scores in float32;
//! - attention residuals (`attn_res_block_size`, [`ResidualBlocks`]): each sub-layer reads a
//!   learned softmax mix of the hidden states at the blocks' starts and the current block's
//!   sum, and so does the final norm.
//!
//! The config is a vision-language one (`text_config`, parameters under `language_model.`)
//! or, as mlx_lm reads it, the text model's keys at the top level.

use mlx_nn::Frozen;
use mlx_nn::{Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::attn_res::{effective_weight, ResidualBlocks, ResidualProjection};
use crate::blocks::decoder::TokenMixer;
use crate::blocks::kda::{
    flatten, sanitize_short_convs, KdaConfig, KdaInputs, KimiDeltaAttention, KimiMixer, Rank,
};
use crate::blocks::layer::{embedding_dtype, embedding_vocab_size};
use crate::blocks::mla::{mla_scale, split_kv_b_proj, Mla, MlaConfig};
use crate::blocks::situ::{Situ, SituMlp};
use crate::blocks::switch::SwitchGlu;
use crate::blocks::{
    forward_layers_with_carry, make_layer_caches, Layer, LayerContext, RotaryEmbedding, Rows,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::gated_delta::DecayGate;
use crate::kernels::KernelOptions;
use crate::models::kimi_linear::{
    kda_layers, kept_float32, kimi_expert_select, KimiExperts, KimiRouting, ScoreFunction,
};
use crate::models::qwen3_moe::router_at_8_bits;
use crate::models::sparse::stack_experts;
use crate::weights::Weights;

/// Python: kimi_k3's `TextArgs`, as the layers use it.
#[derive(Debug, Clone)]
pub struct KimiK3Args {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: i32,
    pub intermediate_size: i32,
    pub rms_norm_eps: f32,
    pub tie_word_embeddings: bool,
    pub attention: MlaConfig,
    pub mla_output_gate: bool,
    /// Python: `KimiK3DeltaAttention`: one `qkv_proj` through one `ShortConv1d`, the
    /// low-rank decay projection, the decay bounded below with `gate_lower_bound`, the output
    /// gate full rank with `use_full_rank_gate`.
    pub kda: KdaConfig,
    /// Per layer: KDA (`kda_layers`, 1-based), else MLA.
    pub linear: Vec<bool>,
    pub experts: KimiExperts,
    /// `routed_expert_hidden_size`: the experts' latent width.
    pub latent_size: Option<i32>,
    pub latent_norm: bool,
    pub situ: Situ,
    pub attn_res_block_size: Option<i32>,
}

impl KimiK3Args {
    /// Reads `text_config` (or, without one, the whole config, as mlx_lm's `from_dict`).
    pub fn from_config(config: &ModelConfig) -> crate::Result<KimiK3Args> {
        match config.section("text_config") {
            Some(text) => {
                // The checkpoint's other parts (the vision tower's config, its token ids)
                // name tensors this model drops (mlx_lm's sanitize drops them too).
                config.declare_neutral(&["vision_config", "media_placeholder_token_id"]);
                Self::from_text(&text)
            }
            None => Self::from_text(config),
        }
    }

    fn from_text(c: &ModelConfig) -> crate::Result<KimiK3Args> {
        c.require("hidden_act", r#""situ""#, |v| v == "situ")?;
        c.require("moe_router_activation_func", r#""sigmoid""#, |v| {
            v == "sigmoid"
        })?;
        // mlx_lm groups the experts whenever num_expert_group > 1, whatever this says.
        c.require_value("use_grouped_topk", true)?;
        if !c.bool_or("mla_use_nope", true)? {
            return Err(invalid(
                c.path(),
                &c.key("mla_use_nope"),
                "must be true: mlx_lm's kimi_k3 supports NoPE MLA only",
            ));
        }
        // The text model's own type name, the context length (no rope: it sizes nothing
        // here), the key/value head count (every MLA head reads the one latent).
        c.declare_neutral(&[
            "model_type",
            "max_position_embeddings",
            "num_key_value_heads",
            "auto_map",
        ]);
        let hidden = c.dim("hidden_size")?;
        let layers = c.dim("num_hidden_layers")?;
        let heads = c.dim("num_attention_heads")?;
        let qk_nope_head_dim = c.dim("qk_nope_head_dim")?;
        let qk_rope_head_dim = c.dim("qk_rope_head_dim")?;
        let v_head_dim = c.dim("v_head_dim")?;
        let q_lora_rank = match c.usize("q_lora_rank")? {
            None => None,
            Some(_) => Some(c.dim("q_lora_rank")?),
        };
        let attention = MlaConfig {
            hidden_size: hidden,
            num_heads: heads,
            q_lora_rank,
            kv_lora_rank: c.dim("kv_lora_rank")?,
            qk_nope_head_dim,
            qk_rope_head_dim,
            v_head_dim,
            attention_bias: false,
            // Never applied (NoPE): the layer is built with `nope` set.
            rope: RotaryEmbedding::plain(qk_rope_head_dim, true, 10000.0),
            scale: mla_scale(qk_nope_head_dim + qk_rope_head_dim, 0.0, 1.0),
        };

        let lc = c
            .section("linear_attn_config")
            .ok_or_else(|| invalid(c.path(), &c.key("linear_attn_config"), "missing"))?;
        let rms_norm_eps = c.float_or("rms_norm_eps", 1e-5)? as f32;
        let kda = KdaConfig {
            hidden_size: hidden,
            num_heads: lc.dim("num_heads")?,
            head_dim: lc.dim("head_dim")?,
            conv_kernel: lc.dim("short_conv_kernel_size")?,
            rms_norm_eps,
            inputs: KdaInputs::Fused,
            decay_proj: Rank::Low,
            output_gate: if lc.bool_or("use_full_rank_gate", false)? {
                Rank::Full
            } else {
                Rank::Low
            },
            // `gate_lower_bound`: a Python float.
            decay_gate: match lc.float("gate_lower_bound")? {
                Some(bound) => DecayGate::LowerBound(bound),
                None => DecayGate::Softplus,
            },
            a_log_expanded: false,
            float32_gates: false,
        };
        let linear = kda_layers(c, &lc, layers)?;
        let experts = KimiExperts::from_config(c, layers, 16, ScoreFunction::SigmoidFloat32)?;
        let latent_size = match c.usize("routed_expert_hidden_size")? {
            None => None,
            Some(_) => Some(c.dim("routed_expert_hidden_size")?),
        };
        let latent_norm = c.bool_or("latent_moe_use_norm", false)?;
        let attn_res_block_size = match c.usize("attn_res_block_size")? {
            None => None,
            Some(_) => Some(c.dim("attn_res_block_size")?),
        };
        Ok(KimiK3Args {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            num_hidden_layers: layers,
            intermediate_size: c.dim("intermediate_size")?,
            rms_norm_eps,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            attention,
            mla_output_gate: c.bool_or("mla_use_output_gate", false)?,
            kda,
            linear,
            experts,
            latent_size,
            latent_norm,
            situ: Situ {
                // Python: `activation_situ_beta or 1.0` (0 too means 1).
                beta: c
                    .float("activation_situ_beta")?
                    .filter(|b| *b != 0.0)
                    .unwrap_or(1.0),
                linear_beta: c.float("activation_situ_linear_beta")?,
            },
            attn_res_block_size,
        })
    }
}

/// Python: `KimiK3SparseMoE`: the router (float32 scores), the routed experts with SiTU, on a
/// latent when `routed_expert_hidden_size` is set (`routed_expert_down_proj`, the optional
/// `routed_expert_norm` of their weighted sum, `routed_expert_up_proj`), and the shared
/// experts on the full width.
#[derive(Debug, Clone, TreeNode)]
pub struct KimiK3SparseMoe {
    pub gate: MaybeQuantizedLinear,
    pub switch_mlp: SwitchGlu,
    pub e_score_correction_bias: Array,
    pub routed_expert_down_proj: Option<MaybeQuantizedLinear>,
    pub routed_expert_up_proj: Option<MaybeQuantizedLinear>,
    pub routed_expert_norm: Option<RMSNorm>,
    pub shared_experts: Option<SituMlp>,
    #[tree(static)]
    pub routing: KimiRouting,
    #[tree(static)]
    pub situ: Situ,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl Forward for KimiK3SparseMoe {
    fn forward(&self, x: &Array) -> Result<Array> {
        let gates = self.gate.forward(x)?;
        let (inds, weights) =
            kimi_expert_select(&gates, &self.e_score_correction_bias, &self.routing)?;
        let y = match &self.routed_expert_down_proj {
            Some(down) => down.forward(x)?,
            None => x.clone(),
        };
        let situ = self.situ;
        let y = self
            .switch_mlp
            .forward_with(&y, &inds, |up, gate| situ.apply(up, gate))?;
        let mut y = ops::multiply(&y, &ops::expand_dims(&weights, -1)?)?.sum(-2, false)?;
        if let Some(norm) = &self.routed_expert_norm {
            y = norm.forward(&y)?;
        }
        if let Some(up) = &self.routed_expert_up_proj {
            y = up.forward(&y)?;
        }
        match &self.shared_experts {
            Some(shared) => ops::add(&y, &shared.forward(x)?),
            None => Ok(y),
        }
    }
}

/// A layer's feed-forward block under `mlp`: the dense SiTU MLP or the experts.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, TreeNode)]
#[tree(transparent)]
pub enum KimiK3FeedForward {
    Dense(SituMlp),
    #[tree(other)]
    Sparse(KimiK3SparseMoe),
}

impl Forward for KimiK3FeedForward {
    fn forward(&self, x: &Array) -> Result<Array> {
        match self {
            KimiK3FeedForward::Dense(m) => m.forward(x),
            KimiK3FeedForward::Sparse(m) => m.forward(x),
        }
    }
}

/// Python: `KimiK3DecoderLayer`: pre-norm `self_attn` then `mlp`, summed plainly or, with
/// attention residuals, each reading the mix of the stored blocks and the block's sum.
#[derive(Debug, Clone, TreeNode)]
pub struct KimiK3DecoderLayer {
    pub self_attn: KimiMixer,
    pub mlp: KimiK3FeedForward,
    pub input_layernorm: RMSNorm,
    pub post_attention_layernorm: RMSNorm,
    pub self_attention_res_proj: Option<ResidualProjection>,
    pub self_attention_res_norm: Option<RMSNorm>,
    pub mlp_res_proj: Option<ResidualProjection>,
    pub mlp_res_norm: Option<RMSNorm>,
    /// Whether this layer starts a block of the attention residuals.
    #[tree(static)]
    pub is_block_start: bool,
    #[tree(static)]
    pub eps: f32,
}

impl KimiK3DecoderLayer {
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        i: usize,
        a: &KimiK3Args,
    ) -> crate::Result<KimiK3DecoderLayer> {
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let p = |name: &str| format!("{path}.{name}");
        let self_attn = if a.linear[i] {
            KimiMixer::Kda(KimiDeltaAttention::load(ck, &p("self_attn"), &a.kda)?)
        } else {
            let mut mla = Mla::load(ck, &p("self_attn"), &a.attention)?;
            mla.nope = true;
            if a.mla_output_gate {
                let width = a.attention.num_heads * a.attention.v_head_dim;
                mla.g_proj = Some(ck.linear(&p("self_attn.g_proj"), d, width, false)?);
            }
            KimiMixer::Mla(mla)
        };
        let x = &a.experts;
        let mlp = if x.sparse[i] {
            let e = x.num_experts;
            let expert_dim = a.latent_size.unwrap_or(d);
            let latent = |ck: &mut Checkpoint, name: &str, i: i32, o: i32| {
                a.latent_size
                    .map(|_| ck.linear(&p(name), i, o, false))
                    .transpose()
            };
            KimiK3FeedForward::Sparse(KimiK3SparseMoe {
                frozen: Frozen::default(),
                gate: ck.linear(&p("mlp.gate"), d, e, false)?,
                switch_mlp: SwitchGlu::load(
                    ck,
                    &p("mlp.switch_mlp"),
                    expert_dim,
                    x.expert_size,
                    e,
                    false,
                )?,
                e_score_correction_bias: ck.array(&p("mlp.e_score_correction_bias"), &[e])?,
                routed_expert_down_proj: latent(ck, "mlp.routed_expert_down_proj", d, expert_dim)?,
                routed_expert_up_proj: latent(ck, "mlp.routed_expert_up_proj", expert_dim, d)?,
                routed_expert_norm: match a.latent_size {
                    Some(l) if a.latent_norm => {
                        Some(ck.rms_norm(&p("mlp.routed_expert_norm"), l, eps)?)
                    }
                    _ => None,
                },
                shared_experts: x
                    .shared_expert_size
                    .map(|s| SituMlp::load(ck, &p("mlp.shared_experts"), d, s, a.situ))
                    .transpose()?,
                routing: x.routing,
                situ: a.situ,
            })
        } else {
            KimiK3FeedForward::Dense(SituMlp::load(
                ck,
                &p("mlp"),
                d,
                a.intermediate_size,
                a.situ,
            )?)
        };
        let res = a.attn_res_block_size.is_some();
        let proj = |ck: &mut Checkpoint, name: &str| {
            res.then(|| ResidualProjection::load(ck, &p(name), d))
                .transpose()
        };
        let self_attention_res_proj = proj(ck, "self_attention_res_proj")?;
        let mlp_res_proj = proj(ck, "mlp_res_proj")?;
        let norm = |ck: &mut Checkpoint, name: &str| {
            res.then(|| ck.rms_norm(&p(name), d, eps)).transpose()
        };
        let self_attention_res_norm = norm(ck, "self_attention_res_norm")?;
        let mlp_res_norm = norm(ck, "mlp_res_norm")?;
        Ok(KimiK3DecoderLayer {
            self_attn,
            mlp,
            input_layernorm: ck.rms_norm(&p("input_layernorm"), d, eps)?,
            post_attention_layernorm: ck.rms_norm(&p("post_attention_layernorm"), d, eps)?,
            self_attention_res_proj,
            self_attention_res_norm,
            mlp_res_proj,
            mlp_res_norm,
            is_block_start: a.attn_res_block_size.is_some_and(|s| i as i32 % s == 0),
            eps,
        })
    }

    fn attend(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let n = self.input_layernorm.forward(x)?;
        self.self_attn.forward(&n, ctx, cache)
    }
}

impl Layer for KimiK3DecoderLayer {
    type Carry = ResidualBlocks;

    fn forward(
        &self,
        x: &Array,
        blocks: &mut ResidualBlocks,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let (Some(ap), Some(an), Some(mp), Some(mn)) = (
            &self.self_attention_res_proj,
            &self.self_attention_res_norm,
            &self.mlp_res_proj,
            &self.mlp_res_norm,
        ) else {
            let h = ops::add(x, &self.attend(x, ctx, cache)?)?;
            let r = self
                .mlp
                .forward(&self.post_attention_layernorm.forward(&h)?)?;
            return ops::add(&h, &r);
        };
        let h = blocks.mix(x, &effective_weight(ap, an)?, self.eps)?;
        let carried = if self.is_block_start {
            blocks.append(x, self.eps)?;
            None
        } else {
            Some(x)
        };
        let y = self.attend(&h, ctx, cache)?;
        let partial = match carried {
            Some(x) => ops::add(x, &y)?,
            None => y,
        };
        let h = blocks.mix(&partial, &effective_weight(mp, mn)?, self.eps)?;
        let r = self
            .mlp
            .forward(&self.post_attention_layernorm.forward(&h)?)?;
        ops::add(&partial, &r)
    }

    /// A KDA layer's two arrays, an MLA layer's compressed key/value cache.
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        self.self_attn.make_cache(batch, capacity, dtype)
    }
}

/// Python: `KimiK3TextModel`: embedding, layers, the output's attention-residual mix (with
/// `attn_res_block_size`), final norm.
#[derive(Debug, Clone, TreeNode)]
pub struct KimiK3TextModel {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<KimiK3DecoderLayer>,
    pub norm: RMSNorm,
    pub output_attn_res_proj: Option<ResidualProjection>,
    pub output_attn_res_norm: Option<RMSNorm>,
    #[tree(static)]
    pub kernels: KernelOptions,
    #[tree(static)]
    pub eps: f32,
}

/// Python: kimi_k3's `LanguageModel`.
#[derive(Debug, Clone, TreeNode)]
pub struct KimiK3LanguageModel {
    pub model: KimiK3TextModel,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

/// Python: `mlx_lm.models.kimi_k3.Model`: the text model under `language_model`.
#[derive(Debug, Clone, TreeNode)]
pub struct KimiK3 {
    pub language_model: KimiK3LanguageModel,
}

/// Moves `from` to `to` when present.
fn rename(w: &mut Weights, from: &str, to: String) {
    let file = w.file_of(from).map(|f| f.to_path_buf()).unwrap_or_default();
    if let Some(v) = w.take(from) {
        w.insert(to, v, file);
    }
}

impl KimiK3 {
    /// Python: `Model.sanitize` then `LanguageModel.sanitize`, on the text model's names
    /// (`language_model.` taken off first and put back after, the vision tensors dropped):
    /// drops the multi-token-prediction tensors (`model.mtp`, `mtp`), layers past
    /// `num_hidden_layers` and a tied `lm_head`; renames the attention residuals'
    /// `{self_attention,mlp,output_attn}_res.{proj,norm}_weight`; a sparse layer's
    /// `block_sparse_moe` becomes `mlp` (each expert's `w1`/`w2`/`w3` stacked, or their
    /// compressed `weight_packed`/`weight_scale` viewed as uint32 and stacked; the correction
    /// bias from the gate or the block); KDA's `q_conv1d` (`[C, 1, K]`) become `q_conv.conv`
    /// (`[C, K, 1]`), `dt_bias` and `A_log` flattened (`A_log` cut to the heads), separate
    /// q/k/v projections and convolutions concatenated into `qkv_proj` / `qkv_conv`;
    /// `kv_b_proj` split into `embed_q` and `unembed_out`.
    pub fn sanitize(ck: &mut Checkpoint, a: &KimiK3Args) -> crate::Result<()> {
        let layers = a.num_hidden_layers;
        let w = ck.weights_mut();
        let keys: Vec<String> = w.keys().into_iter().map(str::to_string).collect();
        for key in keys {
            let vision = [
                "vision_tower",
                "vision_model",
                "multi_modal_projector",
                "mm_projector",
            ];
            let file = w.file_of(&key).map(|f| f.to_path_buf()).unwrap_or_default();
            let v = w.take(&key).expect("listed above");
            if vision.iter().any(|p| key.starts_with(p)) {
                continue;
            }
            let mut k = key
                .strip_prefix("language_model.")
                .unwrap_or(&key)
                .to_string();
            if k.starts_with("model.mtp") || k.starts_with("mtp") {
                continue;
            }
            if let Some((l, _)) = layer_of(&k) {
                if l >= layers as usize {
                    continue;
                }
            }
            if a.tie_word_embeddings && k == "lm_head.weight" {
                continue;
            }
            for src in ["self_attention_res", "mlp_res", "output_attn_res"] {
                for (pat, dst) in [
                    ("proj_weight", "proj.weight"),
                    ("norm_weight", "norm.weight"),
                ] {
                    let pat = format!("{src}.{pat}");
                    if let Some(head) = k.strip_suffix(&pat) {
                        k = format!("{head}{src}_{dst}");
                    }
                }
            }
            w.insert(k, v, file);
        }

        if a.experts.num_experts > 0 {
            stack_packed_experts(ck, a)?;
            stack_experts(
                ck,
                "model",
                layers,
                "block_sparse_moe",
                &[("w1", "gate_proj"), ("w2", "down_proj"), ("w3", "up_proj")],
                a.experts.num_experts,
            )?;
        }
        for l in 0..layers as usize {
            let lp = format!("model.layers.{l}");
            let w = ck.weights_mut();
            if a.experts.sparse[l] {
                let (src, dst) = (format!("{lp}.block_sparse_moe"), format!("{lp}.mlp"));
                for name in [
                    "shared_experts.gate_proj",
                    "shared_experts.up_proj",
                    "shared_experts.down_proj",
                    "routed_expert_down_proj",
                    "routed_expert_up_proj",
                    "routed_expert_norm",
                    "gate",
                    "switch_mlp.gate_proj",
                    "switch_mlp.up_proj",
                    "switch_mlp.down_proj",
                ] {
                    for suffix in ["weight", "scales", "biases"] {
                        rename(
                            w,
                            &format!("{src}.{name}.{suffix}"),
                            format!("{dst}.{name}.{suffix}"),
                        );
                    }
                }
                for bias in [
                    format!("{src}.gate.e_score_correction_bias"),
                    format!("{src}.e_score_correction_bias"),
                ] {
                    rename(w, &bias, format!("{dst}.e_score_correction_bias"));
                }
            }
            if a.linear[l] {
                sanitize_kda(w, &format!("{lp}.self_attn"), a)?;
            }
        }
        for l in 0..layers {
            split_kv_b_proj(ck, &format!("model.layers.{l}.self_attn"), &a.attention)?;
        }
        // Back under the wrapper's name.
        let w = ck.weights_mut();
        let keys: Vec<String> = w.keys().into_iter().map(str::to_string).collect();
        for key in keys {
            rename(w, &key, format!("language_model.{key}"));
        }
        Ok(())
    }

    /// Reads the config, sanitizes and casts the tensors (`A_log`, `dt_bias` and the
    /// correction biases stay float32, mlx_lm's cast_predicate), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<KimiK3> {
        let a = KimiK3Args::from_config(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, kept_float32)?;
        ck.set_quant_predicate(router_at_8_bits);
        let layers = (0..a.num_hidden_layers as usize)
            .map(|i| {
                KimiK3DecoderLayer::load(ck, &format!("language_model.model.layers.{i}"), i, &a)
            })
            .collect::<crate::Result<Vec<_>>>()?;
        let (d, vocab, eps) = (a.hidden_size, a.vocab_size, a.rms_norm_eps);
        let res = a.attn_res_block_size.is_some();
        let p = |name: &str| format!("language_model.model.{name}");
        Ok(KimiK3 {
            language_model: KimiK3LanguageModel {
                model: KimiK3TextModel {
                    embed_tokens: ck.embedding(&p("embed_tokens"), vocab, d)?,
                    layers,
                    norm: ck.rms_norm(&p("norm"), d, eps)?,
                    output_attn_res_proj: res
                        .then(|| ResidualProjection::load(ck, &p("output_attn_res_proj"), d))
                        .transpose()?,
                    output_attn_res_norm: res
                        .then(|| ck.rms_norm(&p("output_attn_res_norm"), d, eps))
                        .transpose()?,
                    kernels: options.kernels,
                    eps,
                },
                lm_head: (!a.tie_word_embeddings)
                    .then(|| ck.linear("language_model.lm_head", d, vocab, false))
                    .transpose()?,
            },
        })
    }
}

/// The KDA part of the sanitize for the layer's attention under `ap`.
fn sanitize_kda(w: &mut Weights, ap: &str, a: &KimiK3Args) -> crate::Result<()> {
    let mlx = |file: std::path::PathBuf| move |source| crate::Error::Mlx { path: file, source };
    sanitize_short_convs(w, ap)?;
    let key = format!("{ap}.A_log");
    flatten(w, &key)?;
    let file = w.file_of(&key).map(|f| f.to_path_buf()).unwrap_or_default();
    if let Some(v) = w.take(&key) {
        let v = if v.shape().first().is_some_and(|n| *n > a.kda.num_heads) {
            v.index(..a.kda.num_heads).map_err(mlx(file.clone()))?
        } else {
            v
        };
        w.insert(key, v, file);
    }
    let concat = |w: &mut Weights, parts: [String; 3], to: String| -> crate::Result<()> {
        if w.contains(&to) || !parts.iter().all(|p| w.contains(p)) {
            return Ok(());
        }
        let file = w
            .file_of(&parts[0])
            .map(|f| f.to_path_buf())
            .unwrap_or_default();
        let arrays: Vec<Array> = parts
            .iter()
            .map(|p| w.take(p).expect("checked above"))
            .collect();
        let joined = ops::concatenate(&arrays, 0).map_err(mlx(file.clone()))?;
        w.insert(to, joined, file);
        Ok(())
    };
    if !w.contains(&format!("{ap}.qkv_proj.weight")) {
        for suffix in ["weight", "scales", "biases"] {
            concat(
                w,
                ["q", "k", "v"].map(|p| format!("{ap}.{p}_proj.{suffix}")),
                format!("{ap}.qkv_proj.{suffix}"),
            )?;
        }
    }
    concat(
        w,
        ["q", "k", "v"].map(|p| format!("{ap}.{p}_conv.conv.weight")),
        format!("{ap}.qkv_conv.conv.weight"),
    )
}

/// Python's compressed experts: each expert's `weight_packed` viewed as uint32 and stacked
/// into `switch_mlp.<proj>.weight`, its `weight_scale` into `.scales` (no biases: the
/// config's quantization names the mode).
fn stack_packed_experts(ck: &mut Checkpoint, a: &KimiK3Args) -> crate::Result<()> {
    let w = ck.weights_mut();
    for l in 0..a.num_hidden_layers as usize {
        if !a.experts.sparse[l] {
            continue;
        }
        let src = format!("model.layers.{l}.block_sparse_moe");
        for (hf, mlx) in [("w1", "gate_proj"), ("w2", "down_proj"), ("w3", "up_proj")] {
            let key = |e: i32, leaf: &str| format!("{src}.experts.{e}.{hf}.{leaf}");
            if !w.contains(&key(0, "weight_packed")) {
                continue;
            }
            let file = w
                .file_of(&key(0, "weight_packed"))
                .map(|f| f.to_path_buf())
                .unwrap_or_default();
            let err = |source| crate::Error::Mlx {
                path: file.clone(),
                source,
            };
            for (leaf, to) in [("weight_packed", "weight"), ("weight_scale", "scales")] {
                let mut parts = Vec::with_capacity(a.experts.num_experts as usize);
                for e in 0..a.experts.num_experts {
                    parts.push(w.take(&key(e, leaf)).ok_or_else(|| {
                        invalid(
                            &file,
                            &key(e, leaf),
                            &format!("missing: the layer has {} experts", a.experts.num_experts),
                        )
                    })?);
                }
                let mut stacked = ops::stack(&parts, 0).map_err(err)?;
                if leaf == "weight_packed" {
                    stacked = ops::view(&stacked, Dtype::Uint32).map_err(err)?;
                }
                w.insert(
                    format!("model.layers.{l}.mlp.switch_mlp.{mlx}.{to}"),
                    stacked,
                    file.clone(),
                );
            }
        }
    }
    Ok(())
}

/// `model.layers.{l}.{rest}` as `(l, rest)`.
fn layer_of(key: &str) -> Option<(usize, &str)> {
    let rest = key.strip_prefix("model.layers.")?;
    let (n, rest) = rest.split_once('.')?;
    Some((n.parse().ok()?, rest))
}

impl KimiK3TextModel {
    fn logits(
        &self,
        inputs: &Array,
        cache: Option<&mut [LayerCache]>,
        lm_head: Option<&MaybeQuantizedLinear>,
    ) -> Result<Array> {
        let rows = Rows::of(inputs)?;
        let h = self.embed_tokens.forward(&rows.fold(inputs)?)?;
        let (h, blocks) = forward_layers_with_carry(&self.layers, h, rows, self.kernels, cache)?;
        let h = match (&self.output_attn_res_proj, &self.output_attn_res_norm) {
            (Some(p), Some(n)) => blocks.mix(&h, &effective_weight(p, n)?, self.eps)?,
            _ => h,
        };
        let h = self.norm.forward(&h)?;
        let logits = match lm_head {
            Some(head) => head.forward(&h)?,
            None => self.embed_tokens.as_linear(&h)?,
        };
        rows.unfold(&logits)
    }
}

impl crate::LanguageModel for KimiK3 {
    fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        let lm = &self.language_model;
        lm.model.logits(inputs, cache, lm.lm_head.as_ref())
    }

    fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        make_layer_caches(
            &self.language_model.model.layers,
            batch,
            capacity,
            self.dtype(),
        )
    }

    fn dtype(&self) -> Dtype {
        embedding_dtype(&self.language_model.model.embed_tokens, self)
    }

    fn vocab_size(&self) -> i32 {
        embedding_vocab_size(&self.language_model.model.embed_tokens)
    }

    fn model_type(&self) -> &str {
        "kimi_k3"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: serde_json::Value) -> crate::Result<ModelConfig> {
        let dir = std::env::temp_dir().join(format!(
            "mlx-lm-kimi-k3-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.json"), json.to_string()).unwrap();
        let c = crate::load_config(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        c
    }

    fn rand_suffix() -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        N.fetch_add(1, Ordering::Relaxed)
    }

    fn base() -> serde_json::Value {
        serde_json::json!({
            "model_type": "kimi_k3", "vocab_size": 16, "hidden_size": 8,
            "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 16,
            "kv_lora_rank": 8, "qk_nope_head_dim": 4, "qk_rope_head_dim": 4, "v_head_dim": 4,
            "linear_attn_config": {"num_heads": 1, "head_dim": 8, "short_conv_kernel_size": 3,
                                   "kda_layers": [1]}
        })
    }

    /// The golden configs (nested and flat) are read whole: no key left unaccounted for.
    #[test]
    fn golden_configs_leave_no_key_unread() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/lm-models");
        for name in ["kimi_k3", "kimi_k3-tied"] {
            let c = crate::load_config(root.join(name)).unwrap();
            KimiK3Args::from_config(&c).unwrap();
            assert!(c.unread_keys().is_empty(), "{name}: {:?}", c.unread_keys());
        }
    }

    /// Compressed experts (`weight_packed` int32, `weight_scale`) are stacked per projection,
    /// the packed words viewed as uint32 (Python: `mx.stack(...).view(mx.uint32)`); a missing
    /// expert is an error naming its tensor.
    #[test]
    fn packed_experts_stack_as_uint32_words() {
        let mut c = base();
        c["num_experts"] = serde_json::json!(2);
        c["num_experts_per_token"] = serde_json::json!(1);
        c["moe_intermediate_size"] = serde_json::json!(4);
        let a = KimiK3Args::from_config(&config(c).unwrap()).unwrap();
        let make = |skip: Option<&str>| {
            let mut w = Weights::default();
            for l in 0..2 {
                for e in 0..2 {
                    for hf in ["w1", "w2", "w3"] {
                        let p = format!("model.layers.{l}.block_sparse_moe.experts.{e}.{hf}");
                        let words = Array::from_slice(&[-1i32, e, 7, l], &[2, 2]).unwrap();
                        let scale = Array::from_slice(&[0.5f32 + e as f32; 2], &[2, 1]).unwrap();
                        if skip != Some(p.as_str()) {
                            w.insert(format!("{p}.weight_packed"), words, "m.safetensors");
                        }
                        w.insert(format!("{p}.weight_scale"), scale, "m.safetensors");
                    }
                }
            }
            Checkpoint::new(w, "/nonexistent", None, None)
        };
        let mut ck = make(None);
        stack_packed_experts(&mut ck, &a).unwrap();
        let w = ck.weights_mut();
        let packed = w
            .get("model.layers.1.mlp.switch_mlp.up_proj.weight")
            .unwrap();
        assert_eq!(packed.dtype(), Dtype::Uint32);
        assert_eq!(packed.shape(), &[2, 2, 2]);
        assert_eq!(
            packed.to_vec::<u32>().unwrap(),
            [u32::MAX, 0, 7, 1, u32::MAX, 1, 7, 1]
        );
        let scales = w
            .get("model.layers.0.mlp.switch_mlp.down_proj.scales")
            .unwrap();
        assert_eq!(scales.to_vec::<f32>().unwrap(), [0.5, 0.5, 1.5, 1.5]);
        assert!(!w.contains("model.layers.0.block_sparse_moe.experts.0.w1.weight_scale"));
        let missing = "model.layers.0.block_sparse_moe.experts.1.w2";
        let e = stack_packed_experts(&mut make(Some(missing)), &a)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("{missing}.weight_packed")), "{e}");
    }

    /// The flat and the nested layouts read the same; what mlx_lm refuses is an error naming
    /// the key.
    #[test]
    fn config_layouts_and_refusals() {
        let flat = KimiK3Args::from_config(&config(base()).unwrap()).unwrap();
        let nested = KimiK3Args::from_config(
            &config(serde_json::json!({"model_type": "kimi_k3", "text_config": base()})).unwrap(),
        )
        .unwrap();
        assert_eq!(flat.linear, nested.linear);
        assert_eq!(flat.linear, [true, false]);
        assert_eq!(
            flat.situ,
            Situ {
                beta: 1.0,
                linear_beta: None
            }
        );
        for (key, value) in [
            ("hidden_act", serde_json::json!("silu")),
            ("mla_use_nope", serde_json::json!(false)),
            ("moe_router_activation_func", serde_json::json!("softmax")),
            ("use_grouped_topk", serde_json::json!(false)),
        ] {
            let mut c = base();
            c[key] = value;
            let e = KimiK3Args::from_config(&config(c).unwrap())
                .unwrap_err()
                .to_string();
            assert!(e.contains(key), "{key}: {e}");
        }
        let mut c = base();
        c["linear_attn_config"]
            .as_object_mut()
            .unwrap()
            .remove("short_conv_kernel_size");
        let e = KimiK3Args::from_config(&config(c).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("short_conv_kernel_size"), "{e}");
    }
}
