//! `nemotron_h` (Python: `mlx_lm.models.nemotron_h`): NVIDIA's Nemotron-H, single-sublayer
//! blocks `h + mixer(norm(h))` whose mixer is, per the block pattern, a Mamba-2 SSD (`M`,
//! [`Mamba2Mixer`] with the gated norm per group), attention without positional embedding
//! (`*`), a ReLU² MLP (`-`), or a mixture of ReLU² experts (`E`, Nemotron-3 Nano:
//! [`NemotronHMoe`], DeepSeek-V3's grouped sigmoid router, a shared expert, optional latent
//! projections); parameters under `backbone.*` (`embeddings`, `layers.i.{norm, mixer}`,
//! `norm_f`) and `lm_head`.
//!
//! Only the `M` and `*` blocks have a cache entry (`ArraysCache(2)` / `KVCache`), as in mlx_lm,
//! whose cache list is then shorter than the layers ([`Layer::has_cache`]).
//!
//! Where mlx_lm 0.32.2 is wrong: its mixer does not pass a right-padded batch's `lengths` to
//! the SSD, so a padded sequence's prefill leaves the SSM state empty (its batch generation
//! departs from generating each prompt alone). This port passes them, as mamba2 does: a batch
//! generates what each prompt generates alone.

use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::conv::sanitize_conv_weights;
use crate::blocks::mlp::relu2;
use crate::blocks::rows::wrong_input;
use crate::blocks::ssd::{GatedNorm, Mamba2Config, Mamba2Mixer};
use crate::blocks::{Attention, AttentionConfig, Layer, LayerContext, TokenMixer};
use crate::blocks::{Backbone, Stack};
use crate::blocks::{GroupLimit, GroupRouting, GroupScoring, MoeGate, SwitchMlp};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::base::stack_language_model;
use crate::models::sparse::stack_experts;

/// A block's kind, as mlx_lm's `hybrid_override_pattern` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockType {
    /// `M`: the Mamba-2 mixer.
    Mamba,
    /// `*`: attention.
    Attention,
    /// `-`: the MLP.
    Mlp,
    /// `E`: the mixture of experts.
    Moe,
}

/// Python: nemotron_h's `ModelArgs`, as the blocks use it.
#[derive(Debug, Clone)]
pub struct NemotronHArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub layer_norm_epsilon: f32,
    pub intermediate_size: i32,
    pub mlp_bias: bool,
    pub tie_word_embeddings: bool,
    pub blocks: Vec<BlockType>,
    /// The `E` blocks' experts and router (read where there are `E` blocks).
    pub moe: Option<NemotronHMoeArgs>,
    pub attention: AttentionConfig,
    pub mixer: Mamba2Config,
}

impl NemotronHArgs {
    /// Reads the config against transformers' `NemotronHConfig` (its defaults where a key is
    /// absent) and mlx_lm's `ModelArgs`: the blocks from `hybrid_override_pattern` (a string
    /// or a list of characters), else `layers_block_type` / `layer_types` (transformers'
    /// names, mapped as mlx_lm maps them).
    pub fn from_config(c: &ModelConfig) -> crate::Result<NemotronHArgs> {
        let hidden = c.dim_or("hidden_size", Some(4096))?;
        let heads = c.dim_or("num_attention_heads", Some(32))?;
        let mamba_heads = c.dim_or("mamba_num_heads", Some(128))?;
        let n_groups = c.dim_or("n_groups", Some(8))?;
        let eps = c.float_or("layer_norm_epsilon", 1e-5)? as f32;
        if mamba_heads % n_groups != 0 {
            return Err(invalid(
                c.path(),
                &c.key("mamba_num_heads"),
                &format!("{mamba_heads} heads do not split into {n_groups} groups (n_groups)"),
            ));
        }
        c.require("mlp_hidden_act", r#""relu2""#, |v| v == "relu2")?;
        c.require("mamba_hidden_act", r#""silu""#, |v| {
            v == "silu" || v == "swish"
        })?;
        // transformers' NemotronH keeps the residual in the model's dtype by default; a
        // float32 residual is not what this port (or mlx_lm) computes.
        c.require_value("residual_in_fp32", false)?;
        c.require_value("mamba_ssm_cache_dtype", "float32")?;
        c.require_value("sliding_window", Value::Null)?;
        // Initialization, training and kernel choices: a checkpoint replaces the weights, and
        // dropout is off at inference; the SSD's chunk only regroups the same sums (mlx_lm
        // chunks by 256); the mixer's width is mamba_num_heads * mamba_head_dim (transformers
        // too), whatever `expand` says; max_position_embeddings sizes nothing without RoPE.
        c.declare_neutral(&[
            "initializer_range",
            "rescale_prenorm_residual",
            "time_step_min",
            "time_step_max",
            "time_step_floor",
            "use_mamba_kernels",
            "attention_dropout",
            "hidden_dropout",
            "chunk_size",
            "expand",
            "max_position_embeddings",
            "num_logits_to_keep",
            "use_bias",
            "num_hidden_layers",
        ]);
        // The multi-token-prediction layers: not part of the forward pass (sanitize drops
        // their `mtp.` tensors).
        c.declare_neutral(&["num_nextn_predict_layers", "mtp_layers_block_type"]);
        let blocks = block_types(c)?;
        // Training only: whether the forward returns the router's logits; how transformers
        // schedules the shared expert beside the routed ones (the same sum).
        c.declare_neutral(&["output_router_logits", "moe_shared_expert_overlap"]);
        let moe = if blocks.contains(&BlockType::Moe) {
            Some(NemotronHMoeArgs::from_config(c)?)
        } else {
            // The mixture-of-experts settings, unused without `E` blocks.
            c.declare_neutral(&[
                "n_routed_experts",
                "n_shared_experts",
                "moe_intermediate_size",
                "moe_shared_expert_intermediate_size",
                "moe_latent_size",
                "num_experts_per_tok",
                "routed_scaling_factor",
                "n_group",
                "topk_group",
                "norm_topk_prob",
            ]);
            None
        };
        let attention_bias = c.bool_or("attention_bias", false)?;
        let head_dim = match c.usize("head_dim")? {
            Some(_) => c.dim("head_dim")?,
            None => hidden / heads,
        };
        Ok(NemotronHArgs {
            vocab_size: c.dim_or("vocab_size", Some(131072))?,
            hidden_size: hidden,
            layer_norm_epsilon: eps,
            intermediate_size: c.dim_or("intermediate_size", Some(21504))?,
            mlp_bias: c.bool_or("mlp_bias", false)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            blocks,
            moe,
            attention: AttentionConfig {
                hidden_size: hidden,
                num_heads: heads,
                num_kv_heads: c.dim_or("num_key_value_heads", Some(8))?,
                head_dim,
                qkv_bias: attention_bias,
                o_bias: attention_bias,
                qk_norm: None,
                output_gate: false,
                rope: None,
                sliding_window: None,
            },
            mixer: Mamba2Config {
                hidden_size: hidden,
                num_heads: mamba_heads,
                head_dim: c.dim_or("mamba_head_dim", Some(64))?,
                n_groups,
                state_size: c.dim_or("ssm_state_size", Some(128))?,
                conv_kernel: c.dim_or("conv_kernel", Some(4))?,
                use_bias: c.bool_or("mamba_proj_bias", false)?,
                out_proj_bias: c.bool_or("mamba_proj_bias", false)?,
                use_conv_bias: c.bool_or("use_conv_bias", true)?,
                time_step_limit: super::mamba2::time_step_limit(c)?,
                norm_eps: eps,
                grouped_norm: true,
                gated_norm: GatedNorm::GateThenNorm,
                cast_d: true,
            },
        })
    }
}

/// The `E` blocks, as transformers' `NemotronHConfig` (its defaults where a key is absent)
/// and mlx_lm's `NemotronHMoE` read them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NemotronHMoeArgs {
    pub num_experts: i32,
    pub expert_size: i32,
    /// The shared expert's width; `None` where `n_shared_experts` is 0 or null (mlx_lm
    /// builds none for null; transformers always builds one: its default is 1).
    pub shared_expert_size: Option<i32>,
    /// Experts computing in this width, between `fc1_latent_proj` and `fc2_latent_proj`.
    pub latent_size: Option<i32>,
    pub routing: GroupRouting,
}

impl NemotronHMoeArgs {
    fn from_config(c: &ModelConfig) -> crate::Result<NemotronHMoeArgs> {
        let num_experts = c.dim_or("n_routed_experts", Some(8))?;
        let top_k = c.dim_or("num_experts_per_tok", Some(2))?;
        let n_group = c.dim_or("n_group", Some(1))?;
        let topk_group = c.dim_or("topk_group", Some(1))?;
        if top_k > num_experts {
            return Err(invalid(
                c.path(),
                &c.key("num_experts_per_tok"),
                &format!("{top_k} experts per token, but only {num_experts} experts"),
            ));
        }
        if num_experts % n_group != 0 || topk_group > n_group {
            return Err(invalid(
                c.path(),
                &c.key("n_group"),
                &format!("{num_experts} experts in {n_group} groups, {topk_group} of them kept"),
            ));
        }
        let shared = match c.get("n_shared_experts") {
            Some(Value::Null) => 0,
            _ => c.dim_or("n_shared_experts", Some(1))?,
        };
        let latent_size = match c.get("moe_latent_size") {
            None | Some(Value::Null) => None,
            Some(_) => Some(c.dim("moe_latent_size")?),
        };
        Ok(NemotronHMoeArgs {
            num_experts,
            expert_size: c.dim_or("moe_intermediate_size", Some(7688))?,
            shared_expert_size: (shared > 0)
                .then(|| c.dim_or("moe_shared_expert_intermediate_size", Some(7688)))
                .transpose()?,
            latent_size,
            routing: GroupRouting {
                top_k,
                n_group,
                topk_group,
                routed_scaling_factor: c.float_or("routed_scaling_factor", 1.0)? as f32,
                norm_topk_prob: c.bool_or("norm_topk_prob", true)?,
                group_limit: GroupLimit::SeveralGroups,
                denominator_eps: Some(1e-20),
                scoring: GroupScoring::Sigmoid,
            },
        })
    }
}

/// The block list: `hybrid_override_pattern` (characters `M * - E`), else `layers_block_type`
/// or `layer_types` (mlx_lm's `_block_type_to_char`, legacy spellings included).
fn block_types(c: &ModelConfig) -> crate::Result<Vec<BlockType>> {
    let error = |key: &str, message: String| invalid(c.path(), &c.key(key), &message);
    if let Some(pattern) = c.get("hybrid_override_pattern").filter(|v| !v.is_null()) {
        let chars: Vec<String> = match pattern {
            Value::String(s) => s.chars().map(String::from).collect(),
            Value::Array(v) => v
                .iter()
                .map(|x| x.as_str().map(String::from))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    error(
                        "hybrid_override_pattern",
                        format!("not a pattern: {pattern}"),
                    )
                })?,
            v => {
                return Err(error(
                    "hybrid_override_pattern",
                    format!("not a pattern: {v}"),
                ))
            }
        };
        // Read (and left alone by mlx_lm when the pattern is given).
        c.declare_neutral(&["layers_block_type", "layer_types"]);
        return chars
            .iter()
            .map(|ch| match ch.as_str() {
                "M" => Ok(BlockType::Mamba),
                "*" => Ok(BlockType::Attention),
                "-" => Ok(BlockType::Mlp),
                "E" => Ok(BlockType::Moe),
                other => Err(error(
                    "hybrid_override_pattern",
                    format!("unknown block {other:?} (expected M, *, - or E)"),
                )),
            })
            .collect();
    }
    let key = if c.get("layers_block_type").is_some_and(|v| !v.is_null()) {
        "layers_block_type"
    } else {
        "layer_types"
    };
    match c.get(key) {
        Some(Value::Array(types)) => types
            .iter()
            .map(|t| match t.as_str() {
                Some("linear_attention" | "mamba" | "conv") => Ok(BlockType::Mamba),
                Some("full_attention" | "attention") => Ok(BlockType::Attention),
                Some("mlp") => Ok(BlockType::Mlp),
                Some("moe") => Ok(BlockType::Moe),
                _ => Err(error(key, format!("unknown block type {t}"))),
            })
            .collect(),
        Some(v) if !v.is_null() => Err(error(key, format!("not a list: {v}"))),
        _ => Err(error(
            "layers_block_type",
            "missing, and so are hybrid_override_pattern and layer_types".into(),
        )),
    }
}

/// Python: `NemotronHMLP`: `down_proj(relu²(up_proj(x)))`.
#[derive(Debug, Clone, TreeNode)]
pub struct NemotronHMlp {
    pub up_proj: MaybeQuantizedLinear,
    pub down_proj: MaybeQuantizedLinear,
}

impl NemotronHMlp {
    /// Takes the MLP under `path`: `dim` in and out, `hidden` between.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        dim: i32,
        hidden: i32,
        bias: bool,
    ) -> crate::Result<NemotronHMlp> {
        Ok(NemotronHMlp {
            up_proj: ck.linear(&format!("{path}.up_proj"), dim, hidden, bias)?,
            down_proj: ck.linear(&format!("{path}.down_proj"), hidden, dim, bias)?,
        })
    }
}

impl Forward for NemotronHMlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.down_proj.forward(&relu2(&self.up_proj.forward(x)?)?)
    }
}

/// Python: `NemotronHMoE`: the grouped sigmoid router ([`MoeGate`], renormalizing by the sum
/// plus 1e-20), the ReLU² experts (`switch_mlp`, in the latent width between
/// `fc1_latent_proj` and `fc2_latent_proj` where there are those), their outputs summed by
/// weight in the experts' dtype, plus the shared expert on the block's input.
#[derive(Debug, Clone, TreeNode)]
pub struct NemotronHMoe {
    pub gate: MoeGate,
    pub switch_mlp: SwitchMlp,
    pub shared_experts: Option<NemotronHMlp>,
    pub fc1_latent_proj: Option<MaybeQuantizedLinear>,
    pub fc2_latent_proj: Option<MaybeQuantizedLinear>,
}

impl NemotronHMoe {
    /// Takes the block under `path` (`backbone.layers.1.mixer`).
    pub fn load(ck: &mut Checkpoint, path: &str, a: &NemotronHArgs) -> crate::Result<NemotronHMoe> {
        let m = a.moe.ok_or_else(|| {
            invalid(
                ck.dir(),
                "hybrid_override_pattern",
                "an E block without the experts' settings",
            )
        })?;
        let p = |name: &str| format!("{path}.{name}");
        let d = a.hidden_size;
        let expert_dim = m.latent_size.unwrap_or(d);
        let latent = |ck: &mut Checkpoint, name: &str, i: i32, o: i32| {
            m.latent_size
                .map(|_| ck.linear(&p(name), i, o, a.mlp_bias))
                .transpose()
        };
        Ok(NemotronHMoe {
            gate: MoeGate::load(ck, &p("gate"), m.num_experts, d, m.routing)?,
            switch_mlp: SwitchMlp::load(
                ck,
                &p("switch_mlp"),
                expert_dim,
                m.expert_size,
                m.num_experts,
                false,
            )?,
            shared_experts: m
                .shared_expert_size
                .map(|s| NemotronHMlp::load(ck, &p("shared_experts"), d, s, a.mlp_bias))
                .transpose()?,
            fc1_latent_proj: latent(ck, "fc1_latent_proj", d, expert_dim)?,
            fc2_latent_proj: latent(ck, "fc2_latent_proj", expert_dim, d)?,
        })
    }
}

impl Forward for NemotronHMoe {
    fn forward(&self, x: &Array) -> Result<Array> {
        let (inds, scores) = self.gate.route(x)?;
        let h = match &self.fc1_latent_proj {
            Some(proj) => proj.forward(x)?,
            None => x.clone(),
        };
        let y = self.switch_mlp.forward(&h, &inds)?;
        let y = ops::multiply(&y, &ops::expand_dims(&scores, -1)?)?
            .sum(-2, false)?
            .astype(y.dtype())?;
        let y = match &self.fc2_latent_proj {
            Some(proj) => proj.forward(&y)?,
            None => y,
        };
        match &self.shared_experts {
            Some(shared) => ops::add(&y, &shared.forward(x)?),
            None => Ok(y),
        }
    }
}

/// A block's `mixer`, whichever it is. Transparent in key paths (its parameters sit directly
/// under `mixer`, as in mlx_lm); a rebuild tells the kinds apart by the struct each holds.
#[derive(Debug, Clone, TreeNode)]
#[tree(transparent)]
pub enum NemotronHMixer {
    Mamba(Box<Mamba2Mixer>),
    Attention(Box<Attention>),
    Mlp(NemotronHMlp),
    Moe(Box<NemotronHMoe>),
}

/// Python: `NemotronHBlock`: `x + mixer(norm(x))`.
#[derive(Debug, Clone, TreeNode)]
pub struct NemotronHBlock {
    pub norm: RMSNorm,
    pub mixer: NemotronHMixer,
}

impl NemotronHBlock {
    /// Takes block `i`'s tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        block: BlockType,
        a: &NemotronHArgs,
    ) -> crate::Result<NemotronHBlock> {
        let mixer = format!("{path}.mixer");
        let (d, ff) = (a.hidden_size, a.intermediate_size);
        Ok(NemotronHBlock {
            norm: ck.rms_norm(&format!("{path}.norm"), d, a.layer_norm_epsilon)?,
            mixer: match block {
                BlockType::Mamba => {
                    NemotronHMixer::Mamba(Box::new(Mamba2Mixer::load(ck, &mixer, &a.mixer)?))
                }
                BlockType::Attention => {
                    NemotronHMixer::Attention(Box::new(Attention::load(ck, &mixer, &a.attention)?))
                }
                BlockType::Mlp => {
                    NemotronHMixer::Mlp(NemotronHMlp::load(ck, &mixer, d, ff, a.mlp_bias)?)
                }
                BlockType::Moe => NemotronHMixer::Moe(Box::new(NemotronHMoe::load(ck, &mixer, a)?)),
            },
        })
    }
}

impl Layer for NemotronHBlock {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let h = self.norm.forward(x)?;
        let h = match &self.mixer {
            NemotronHMixer::Mamba(m) => {
                m.forward(&h, ctx.rows, ctx.kernels.fused_ssm_update, cache)?
            }
            NemotronHMixer::Attention(a) => TokenMixer::forward(a.as_ref(), &h, ctx, cache)?,
            NemotronHMixer::Mlp(m) => m.forward(&h)?,
            NemotronHMixer::Moe(m) => m.forward(&h)?,
        };
        ops::add(x, &h)
    }

    /// The MLP and expert blocks have no state, and no entry in the cache (as in mlx_lm).
    fn has_cache(&self) -> bool {
        !matches!(self.mixer, NemotronHMixer::Mlp(_) | NemotronHMixer::Moe(_))
    }

    /// Python: `ArraysCache(size=2)` for a Mamba-2 block, `KVCache()` for attention.
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        match &self.mixer {
            NemotronHMixer::Mamba(m) => m.make_cache(batch, dtype),
            NemotronHMixer::Attention(a) => a.make_cache(batch, capacity, dtype),
            NemotronHMixer::Mlp(_) | NemotronHMixer::Moe(_) => Err(wrong_input(
                "an MLP or expert block of nemotron_h has no cache",
            )),
        }
    }
}

/// Python: `nemotron_h`'s `backbone` ([`Backbone`]).
pub type NemotronHBackbone = Backbone<NemotronHBlock>;

/// Python: `mlx_lm.models.nemotron_h.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct NemotronH {
    pub backbone: NemotronHBackbone,
    /// `None` when the config ties the head to the embeddings (transformers ties them then;
    /// mlx_lm always builds an `lm_head`, which such a checkpoint does not have).
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl NemotronH {
    /// Reads the config ([`NemotronHArgs::from_config`]).
    pub fn args(config: &ModelConfig) -> crate::Result<NemotronHArgs> {
        NemotronHArgs::from_config(config)
    }

    /// Python: `Model.sanitize`: the multi-token-prediction tensors (`mtp.*`) dropped;
    /// convolution weights `[C, 1, K]` become `[C, K, 1]`; each `E` block's experts
    /// `mixer.experts.{e}.{up_proj,down_proj}` stacked into `mixer.switch_mlp.{fc1,fc2}`
    /// (a quantized checkpoint's `scales` / `biases` too; mlx_lm stacks the weights only).
    pub fn sanitize(ck: &mut Checkpoint, a: &NemotronHArgs) -> crate::Result<()> {
        ck.weights_mut().retain(|k, _| !k.starts_with("mtp."));
        sanitize_conv_weights(ck, "conv1d.weight")?;
        match &a.moe {
            Some(m) => stack_experts(
                ck,
                "backbone",
                a.blocks.len() as i32,
                "mixer",
                &[("down_proj", "fc2"), ("up_proj", "fc1")],
                m.num_experts,
            ),
            None => Ok(()),
        }
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<NemotronH> {
        let a = NemotronHArgs::from_config(config)?;
        Self::sanitize(ck, &a)?;
        // Python's cast_predicate: A_log and the routers' correction biases stay float32.
        ck.cast(options.dtype, |k| {
            k.contains("A_log") || k.contains("e_score_correction_bias")
        })?;
        let mut layers = Vec::with_capacity(a.blocks.len());
        for (i, block) in a.blocks.iter().enumerate() {
            layers.push(NemotronHBlock::load(
                ck,
                &format!("backbone.layers.{i}"),
                *block,
                &a,
            )?);
        }
        Ok(NemotronH {
            backbone: Stack::load_around(
                ck,
                "backbone",
                (a.vocab_size, a.hidden_size),
                layers,
                |ck, path| ck.rms_norm(path, a.hidden_size, a.layer_norm_epsilon),
                options.kernels,
            )?,
            lm_head: (!a.tie_word_embeddings)
                .then(|| ck.linear("lm_head", a.hidden_size, a.vocab_size, false))
                .transpose()?,
        })
    }
}

stack_language_model!(NemotronH, backbone, "nemotron_h");
