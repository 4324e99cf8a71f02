//! `qwen3_5` and `qwen3_5_moe` (Python: `mlx_lm.models.qwen3_5`, `mlx_lm.models.qwen3_5_moe`):
//! gated-delta-net linear attention layers with a full-attention layer every
//! `full_attention_interval`; with experts (`num_experts > 0`, Qwen3.5-MoE) every layer's
//! feed-forward block is Qwen3-Next's sparse block with its shared expert.

use mlx_nn::MaybeQuantizedLinear;
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::{
    load_lm_head, Attention, AttentionConfig, DecoderModel, FeedForward, GatedDeltaNet,
    GatedDeltaNetConfig, GdnProjections, Hybrid, Mlp, MoeConfig, RotaryEmbedding, Router,
    SparseMoe, StackConfig,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::distributed::split_stack;
use crate::model::LanguageModel;
use crate::models::qwen3_next::{gates_at_8_bits, hf_convs_and_norms};
use crate::models::sparse::expert_counts;

/// Python: `TextModelArgs`.
#[derive(Debug, Clone)]
pub struct Qwen3_5Args {
    pub stack: StackConfig,
    pub intermediate_size: i32,
    pub attention: AttentionConfig,
    pub linear: GatedDeltaNetConfig,
    pub tie_word_embeddings: bool,
    /// Per layer: full attention, else linear attention (`layer_types`, or every
    /// `full_attention_interval`-th layer).
    pub full_attention: Vec<bool>,
    /// Qwen3.5-MoE's sparse block, in every layer; `None` for the dense model.
    pub moe: Option<MoeConfig>,
}

/// A layer's token mixer: linear attention, or (by default every
/// `full_attention_interval`-th layer) full attention.
pub type Qwen3_5Mixer = Hybrid<GatedDeltaNet, Attention>;

/// Python: `TextModel`. Its feed-forward blocks are the dense MLP, or with experts the sparse
/// block.
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen3_5Text {
    pub model: DecoderModel<Qwen3_5Mixer, FeedForward>,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

/// Python: `mlx_lm.models.qwen3_5.Model` (the text model under `language_model`).
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen3_5 {
    pub language_model: Qwen3_5Text,
}

/// Python: `mlx_lm.models.qwen3_5_moe.Model`: Qwen3.5's model with experts, read from a
/// checkpoint whose experts may be fused as transformers stores them.
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen3_5Moe {
    pub language_model: Qwen3_5Text,
}

impl Qwen3_5 {
    /// Reads the config: `text_config` when there is one, else the top level (Python:
    /// `ModelArgs.from_dict` + `TextModelArgs.from_dict`), over every key of transformers'
    /// `Qwen3_5Config` and `Qwen3_5TextConfig`. The RoPE settings are read under
    /// `rope_parameters` as mlx_lm reads them, else at the top level, else Python's defaults.
    ///
    /// Two differences from mlx_lm, after transformers: `layer_types`, where given, says
    /// which layers are full attention (mlx_lm: `full_attention_interval` only); and a
    /// `tie_word_embeddings` given only at the top level counts (mlx_lm reads
    /// `text_config`'s); where both levels give it and disagree, it is an error.
    pub fn args(config: &ModelConfig) -> crate::Result<Qwen3_5Args> {
        let text = config.section("text_config");
        let c = text.as_ref().unwrap_or(config);
        // The vision tower and its tokens' ids: a text prompt does not reach them, and
        // sanitize drops the tower's tensors.
        config.declare_neutral(&[
            "vision_config",
            "image_token_id",
            "video_token_id",
            "vision_start_token_id",
            "vision_end_token_id",
        ]);
        // transformers' ACT2FN: "swish" is SiLU too (the MLP's and the linear attention's
        // convolution's activation).
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (a yarn or llama3
        // rope reads it itself).
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        // The multi-token-prediction head: not part of the forward pass (sanitize drops its
        // `mtp.` tensors).
        c.declare_neutral(&["mtp_num_hidden_layers", "mtp_use_dedicated_embeddings"]);
        // The dtype of the recurrent state (vLLM's key): this model keeps it in float32.
        c.require_value("mamba_ssm_dtype", "float32")?;
        let hidden = c.dim_or("hidden_size", Some(4096))?;
        let heads = c.dim_or("num_attention_heads", Some(32))?;
        let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
        let params = c.section("rope_parameters");
        let rope_setting = |key: &str, default: f64| -> crate::Result<f64> {
            let top = c.float(key)?;
            let nested = match &params {
                Some(p) => p.float(key)?,
                None => None,
            };
            Ok(nested.or(top).unwrap_or(default))
        };
        let theta = rope_setting("rope_theta", 100_000.0)?;
        let partial = rope_setting("partial_rotary_factor", 0.25)?;
        let rope_dims = (head_dim as f64 * partial) as i32;
        let rms_norm_eps = c.float_or("rms_norm_eps", 1e-6)? as f32;
        let attention_bias = c.bool_or("attention_bias", false)?;
        let layers = c.dim_or("num_hidden_layers", Some(32))?;
        let args = Qwen3_5Args {
            stack: StackConfig {
                vocab_size: c.dim_or("vocab_size", Some(151936))?,
                hidden_size: hidden,
                num_hidden_layers: layers,
                rms_norm_eps,
            },
            intermediate_size: c.dim_or("intermediate_size", Some(14336))?,
            attention: AttentionConfig {
                hidden_size: hidden,
                num_heads: heads,
                num_kv_heads: c.dim_or("num_key_value_heads", Some(8))?,
                head_dim,
                qkv_bias: attention_bias,
                o_bias: attention_bias,
                qk_norm: Some(rms_norm_eps),
                output_gate: true,
                rope: Some(RotaryEmbedding::from_config(c, rope_dims, theta, false)?),
                sliding_window: None,
            },
            linear: GatedDeltaNetConfig {
                hidden_size: hidden,
                linear_num_value_heads: c.dim_or("linear_num_value_heads", Some(64))?,
                linear_num_key_heads: c.dim_or("linear_num_key_heads", Some(16))?,
                linear_key_head_dim: c.dim_or("linear_key_head_dim", Some(192))?,
                linear_value_head_dim: c.dim_or("linear_value_head_dim", Some(128))?,
                linear_conv_kernel_dim: c.dim_or("linear_conv_kernel_dim", Some(4))?,
                rms_norm_eps,
                projections: GdnProjections::Separate,
            },
            tie_word_embeddings: tie_word_embeddings(config, text.as_ref())?,
            full_attention: full_attention_layers(c, layers)?,
            moe: None,
        };
        if args.linear.linear_num_value_heads % args.linear.linear_num_key_heads != 0 {
            return Err(invalid(
                c.path(),
                &c.key("linear_num_value_heads"),
                "must be a multiple of linear_num_key_heads",
            ));
        }
        Ok(Qwen3_5Args {
            moe: moe_config(c, hidden)?,
            ..args
        })
    }

    /// Python: `Model.sanitize` + `TextModel.sanitize`: drops vision and `mtp.` tensors, moves
    /// the Hugging Face prefix `model.language_model.` to `language_model.model.`, splits
    /// fused experts (`qwen3_5_moe`'s sanitize), and for a Hugging Face checkpoint (conv1d
    /// weights `[C, 1, K]`) reorders them to `[C, K, 1]` and adds one to the norm weights
    /// (stored there as offsets from one).
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
        split_fused_experts(ck, args.stack.num_hidden_layers)?;
        let w = ck.weights_mut();
        if args.tie_word_embeddings {
            w.retain(|k, _| k != "language_model.lm_head.weight");
        }
        hf_convs_and_norms(w)
    }

    /// Reads the config, sanitizes and casts the tensors (`A_log` stays float32, Python's
    /// `cast_predicate`), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Qwen3_5> {
        Ok(Qwen3_5 {
            language_model: Self::load_text(ck, config, options)?,
        })
    }

    /// The text model, with or without experts.
    fn load_text(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Qwen3_5Text> {
        let a = Self::args(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |k| k.ends_with("A_log"))?;
        if a.moe.is_some() {
            // Python: `TextModel.quant_predicate`, with experts only.
            ck.set_quant_predicate(gates_at_8_bits);
        }
        let model = DecoderModel::load(
            ck,
            "language_model.model",
            a.stack,
            options.kernels,
            |ck, path, i| {
                Ok(if !a.full_attention[i as usize] {
                    Hybrid::First(GatedDeltaNet::load(
                        ck,
                        &format!("{path}.linear_attn"),
                        &a.linear,
                    )?)
                } else {
                    Hybrid::Second(Attention::load(
                        ck,
                        &format!("{path}.self_attn"),
                        &a.attention,
                    )?)
                })
            },
            |ck, path, _| {
                Ok(match &a.moe {
                    Some(moe) => FeedForward::Sparse(SparseMoe::load(ck, path, moe)?),
                    None => FeedForward::Dense(Mlp::load(
                        ck,
                        path,
                        a.stack.hidden_size,
                        a.intermediate_size,
                        false,
                    )?),
                })
            },
        )?;
        let lm_head = load_lm_head(ck, "language_model.lm_head", a.stack, a.tie_word_embeddings)?;
        Ok(Qwen3_5Text { model, lm_head })
    }
}

impl Qwen3_5Moe {
    /// Reads the config ([`Qwen3_5::args`]), sanitizes, casts, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Qwen3_5Moe> {
        Ok(Qwen3_5Moe {
            language_model: Qwen3_5::load_text(ck, config, options)?,
        })
    }
}

impl LanguageModel for Qwen3_5Moe {
    fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        let lm = &self.language_model;
        lm.model.logits(inputs, cache, lm.lm_head.as_ref())
    }

    fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        self.language_model.model.make_cache(batch, capacity)
    }

    fn dtype(&self) -> Dtype {
        self.language_model.model.dtype()
    }

    fn vocab_size(&self) -> i32 {
        self.language_model.model.vocab_size()
    }

    fn model_type(&self) -> &str {
        "qwen3_5_moe"
    }

    fn shard(&mut self, group: &mlx_rs::distributed::Group) -> Result<()> {
        let split = self.language_model.model.shard(group);
        split_stack("tensor", "qwen3_5_moe", Some(split))
    }

    fn pipeline(
        &mut self,
        group: &mlx_rs::distributed::Group,
        split: Option<&[usize]>,
    ) -> Result<()> {
        let stage = self.language_model.model.pipeline(group, split);
        split_stack("pipeline", "qwen3_5_moe", Some(stage))
    }
}

/// The sparse block where the config has experts (`num_experts > 0`): Qwen3-Next's, in every
/// layer. transformers' `Qwen3_5MoeTextConfig` has no `decoder_sparse_step`, `mlp_only_layers`
/// or `norm_topk_prob` and always renormalizes the top-k weights; mlx_lm ignores the first
/// two and reads the third (default true): a config that says otherwise is an error.
fn moe_config(c: &ModelConfig, hidden: i32) -> crate::Result<Option<MoeConfig>> {
    if c.usize("num_experts")?.unwrap_or(0) == 0 {
        // mlx_lm's mixture-of-experts settings, unused without experts.
        c.declare_neutral(&[
            "num_experts",
            "num_experts_per_tok",
            "decoder_sparse_step",
            "shared_expert_intermediate_size",
            "moe_intermediate_size",
            "norm_topk_prob",
            "mlp_only_layers",
        ]);
        return Ok(None);
    }
    c.require_value("decoder_sparse_step", 1)?;
    c.require("mlp_only_layers", "[] (every layer sparse)", |v| {
        v.as_array().is_some_and(Vec::is_empty)
    })?;
    c.require_value("norm_topk_prob", true)?;
    // Training-only: the router's auxiliary loss and whether the forward returns its logits.
    c.declare_neutral(&["router_aux_loss_coef", "output_router_logits"]);
    let (top_k, num_experts) = expert_counts(c, "num_experts")?;
    Ok(Some(MoeConfig {
        hidden_size: hidden,
        expert_size: c.dim("moe_intermediate_size")?,
        num_experts,
        top_k,
        router: Router::SoftmaxTopK {
            norm_topk_prob: true,
        },
        expert_bias: false,
        shared_expert_size: Some(c.dim("shared_expert_intermediate_size")?),
    }))
}

/// Python: `qwen3_5_moe.Model.sanitize`'s expert split: transformers stores each layer's
/// experts fused, `mlp.experts.gate_up_proj` `[E, 2I, D]` (the gate's rows first) and
/// `mlp.experts.down_proj` `[E, D, I]`; mlx_lm's switch layers hold them apart.
fn split_fused_experts(ck: &mut Checkpoint, layers: i32) -> crate::Result<()> {
    let dir = ck.dir().to_path_buf();
    for l in 0..layers {
        let prefix = format!("language_model.model.layers.{l}.mlp");
        let gate_up_key = format!("{prefix}.experts.gate_up_proj");
        let w = ck.weights_mut();
        let file = w.file_of(&gate_up_key).map(|p| p.to_path_buf());
        let Some(gate_up) = w.take(&gate_up_key) else {
            continue;
        };
        let file = file.unwrap_or_else(|| dir.clone());
        let mlx = |source| crate::Error::Mlx {
            path: file.clone(),
            source,
        };
        let rows = gate_up.shape().get(1).copied().unwrap_or(0);
        if gate_up.ndim() != 3 || rows % 2 != 0 {
            return Err(invalid(
                &file,
                &gate_up_key,
                &format!(
                    "shape {:?}, expected [experts, 2 * moe_intermediate_size, hidden]",
                    gate_up.shape()
                ),
            ));
        }
        let parts = ops::split(&gate_up, vec![rows / 2], 1).map_err(mlx)?;
        let Some(down) = w.take(&format!("{prefix}.experts.down_proj")) else {
            return Err(invalid(
                &file,
                &format!("{prefix}.experts.down_proj"),
                "missing beside experts.gate_up_proj",
            ));
        };
        let p = |name: &str| format!("{prefix}.switch_mlp.{name}.weight");
        w.insert(p("gate_proj"), parts[0].clone(), file.clone());
        w.insert(p("up_proj"), parts[1].clone(), file.clone());
        w.insert(p("down_proj"), down, file.clone());
    }
    Ok(())
}

impl LanguageModel for Qwen3_5 {
    fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        let lm = &self.language_model;
        lm.model.logits(inputs, cache, lm.lm_head.as_ref())
    }

    fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        self.language_model.model.make_cache(batch, capacity)
    }

    fn dtype(&self) -> Dtype {
        self.language_model.model.dtype()
    }

    fn vocab_size(&self) -> i32 {
        self.language_model.model.vocab_size()
    }

    fn model_type(&self) -> &str {
        "qwen3_5"
    }

    fn shard(&mut self, group: &mlx_rs::distributed::Group) -> Result<()> {
        let split = self.language_model.model.shard(group);
        split_stack("tensor", "qwen3_5", Some(split))
    }

    fn pipeline(
        &mut self,
        group: &mlx_rs::distributed::Group,
        split: Option<&[usize]>,
    ) -> Result<()> {
        let stage = self.language_model.model.pipeline(group, split);
        split_stack("pipeline", "qwen3_5", Some(stage))
    }
}

/// Whether the output head is the embedding table: `text_config`'s `tie_word_embeddings`
/// (mlx_lm) or the top level's (transformers ties by `Qwen3_5Config`'s); they must agree where
/// both are given.
fn tie_word_embeddings(config: &ModelConfig, text: Option<&ModelConfig>) -> crate::Result<bool> {
    let outer = config.bool("tie_word_embeddings")?;
    let Some(text) = text else {
        return Ok(outer.unwrap_or(false));
    };
    match (text.bool("tie_word_embeddings")?, outer) {
        (Some(inner), Some(outer)) if inner != outer => Err(invalid(
            config.path(),
            &text.key("tie_word_embeddings"),
            &format!(
                "{inner}, but tie_word_embeddings is {outer} (transformers ties by the top \
                 level's, mlx_lm by text_config's)"
            ),
        )),
        (Some(tied), _) | (None, Some(tied)) => Ok(tied),
        (None, None) => Ok(false),
    }
}

/// Per layer, full attention: `layer_types` where given (transformers), else every
/// `full_attention_interval`-th layer (mlx_lm, and transformers without `layer_types`).
pub(crate) fn full_attention_layers(c: &ModelConfig, layers: i32) -> crate::Result<Vec<bool>> {
    let interval = c.dim_or("full_attention_interval", Some(4))?;
    let error = |message: String| invalid(c.path(), &c.key("layer_types"), &message);
    match c.get("layer_types") {
        None | Some(Value::Null) => Ok((0..layers).map(|i| (i + 1) % interval == 0).collect()),
        Some(Value::Array(types)) => {
            let full = types
                .iter()
                .map(|t| match t.as_str() {
                    Some("full_attention") => Ok(true),
                    Some("linear_attention") => Ok(false),
                    _ => Err(error(format!("unknown layer type {t}"))),
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
