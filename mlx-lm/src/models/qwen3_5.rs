//! `qwen3_5` (Python: `mlx_lm.models.qwen3_5`, dense text model): gated-delta-net linear
//! attention layers with a full-attention layer every `full_attention_interval`.

use mlx_nn::MaybeQuantizedLinear;
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::blocks::{
    load_lm_head, Attention, AttentionConfig, DecoderModel, GatedDeltaNet, GatedDeltaNetConfig,
    GdnProjections, Hybrid, Mlp, RotaryEmbedding, StackConfig,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::model::LanguageModel;

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
}

/// A layer's token mixer: linear attention, or (by default every
/// `full_attention_interval`-th layer) full attention.
pub type Qwen3_5Mixer = Hybrid<GatedDeltaNet, Attention>;

/// Python: `TextModel`.
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen3_5Text {
    pub model: DecoderModel<Qwen3_5Mixer, Mlp>,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

/// Python: `mlx_lm.models.qwen3_5.Model` (the text model under `language_model`).
#[derive(Debug, Clone, TreeNode)]
pub struct Qwen3_5 {
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
        };
        if args.linear.linear_num_value_heads % args.linear.linear_num_key_heads != 0 {
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
        // mlx_lm's mixture-of-experts settings, unused without experts.
        c.declare_neutral(&[
            "num_experts_per_tok",
            "decoder_sparse_step",
            "shared_expert_intermediate_size",
            "moe_intermediate_size",
            "norm_topk_prob",
        ]);
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
        options: &LoadOptions,
    ) -> crate::Result<Qwen3_5> {
        let a = Self::args(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |k| k.ends_with("A_log"))?;
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
            |ck, path, _| Mlp::load(ck, path, a.stack.hidden_size, a.intermediate_size, false),
        )?;
        let lm_head = load_lm_head(ck, "language_model.lm_head", a.stack, a.tie_word_embeddings)?;
        Ok(Qwen3_5 {
            language_model: Qwen3_5Text { model, lm_head },
        })
    }
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
