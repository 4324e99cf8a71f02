//! `llama` (Python: `mlx_lm.models.llama`), which also serves `mistral`-style configs; and
//! `qwen2` / `qwen3`, the same decoder with q/k/v biases or q/k norms.

use mlx_nn::{MaybeQuantizedLinear, Module};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::cache::LayerCache;
use crate::checkpoint::Checkpoint;
use crate::config::{invalid, ModelConfig};
use crate::models::decoder::{compute_dtype, logits, DecoderArgs, DecoderModel, Rows};
use crate::rope::Rope;

macro_rules! decoder_model {
    ($(#[$doc:meta])* $name:ident, $args:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, TreeNode)]
        pub struct $name {
            pub model: DecoderModel,
            /// The output projection; `None` with tied embeddings.
            pub lm_head: Option<MaybeQuantizedLinear>,
        }

        impl $name {
            /// Reads the config (Python: `ModelArgs.from_dict`).
            pub fn args(config: &ModelConfig) -> crate::Result<DecoderArgs> {
                $args(config)
            }

            /// Reads the config, sanitizes and casts the tensors, builds the model.
            pub fn from_checkpoint(
                ck: &mut Checkpoint,
                config: &ModelConfig,
                dtype: Option<Dtype>,
            ) -> crate::Result<$name> {
                let args = Self::args(config)?;
                Self::sanitize(ck, &args);
                ck.cast(dtype, |_| false)?;
                Self::load(ck, &args)
            }

            /// Builds the model from a checkpoint's tensors (after [`Self::sanitize`]).
            pub fn load(ck: &mut Checkpoint, args: &DecoderArgs) -> crate::Result<$name> {
                let model = DecoderModel::load(ck, args)?;
                let lm_head = if args.tie_word_embeddings {
                    None
                } else {
                    Some(ck.linear("lm_head", args.hidden_size, args.vocab_size, false)?)
                };
                Ok($name { model, lm_head })
            }

            /// Python: `Model.sanitize`: drops precomputed rotary frequencies and, with tied
            /// embeddings, `lm_head.weight`.
            pub fn sanitize(ck: &mut Checkpoint, args: &DecoderArgs) {
                let tied = args.tie_word_embeddings;
                ck.weights_mut().retain(|k, _| {
                    !k.contains("self_attn.rotary_emb.inv_freq") && !(tied && k == "lm_head.weight")
                });
            }

            /// Logits `[B, L, vocab]` for token ids `[B, L]`.
            pub fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
                let rows = Rows::of(inputs)?;
                let h = self.model.forward_rows(inputs, rows, cache)?;
                rows.unfold(&logits(&h, &self.model.embed_tokens, self.lm_head.as_ref())?)
            }

            /// The cache for `batch` sequences of up to `capacity` positions (Python:
            /// `make_cache`).
            pub fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
                self.model.make_cache(batch, capacity, self.dtype())
            }

            /// The dtype the model computes in.
            pub fn dtype(&self) -> Dtype {
                compute_dtype(&self.model.embed_tokens)
            }

            /// The number of parameters (quantized weights count their packed words).
            pub fn num_parameters(&self) -> Result<usize> {
                Module::num_parameters(self)
            }
        }
    };
}

decoder_model!(
    /// Python: `mlx_lm.models.llama.Model`.
    Llama,
    llama_args
);
decoder_model!(
    /// Python: `mlx_lm.models.qwen2.Model`.
    Qwen2,
    qwen2_args
);
decoder_model!(
    /// Python: `mlx_lm.models.qwen3.Model`.
    Qwen3,
    qwen3_args
);

/// What every decoder config has: read once, then each architecture's reader fills in what
/// differs (Python: the `ModelArgs` fields the three dataclasses share).
struct Common {
    hidden: i32,
    intermediate: i32,
    heads: i32,
    layers: i32,
    vocab: i32,
    rms_norm_eps: f32,
}

impl Common {
    fn read(c: &ModelConfig) -> crate::Result<Common> {
        Ok(Common {
            hidden: c.dim("hidden_size")?,
            intermediate: c.dim("intermediate_size")?,
            heads: c.dim("num_attention_heads")?,
            layers: c.dim("num_hidden_layers")?,
            vocab: c.dim("vocab_size")?,
            rms_norm_eps: c
                .float("rms_norm_eps")?
                .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?
                as f32,
        })
    }

    /// The arguments with no biases, no q/k norms, tied embeddings and full attention in
    /// every layer; a reader overrides what its architecture changes.
    fn args(&self, head_dim: i32, num_key_value_heads: i32, rope: Rope) -> DecoderArgs {
        DecoderArgs {
            hidden_size: self.hidden,
            intermediate_size: self.intermediate,
            num_attention_heads: self.heads,
            num_key_value_heads,
            head_dim,
            num_hidden_layers: self.layers,
            vocab_size: self.vocab,
            rms_norm_eps: self.rms_norm_eps,
            qkv_bias: false,
            o_bias: false,
            mlp_bias: false,
            qk_norm: false,
            tie_word_embeddings: true,
            rope,
            sliding: vec![false; self.layers as usize],
            sliding_window: None,
        }
    }
}

/// Python: llama's `ModelArgs` (`head_dim` defaults to hidden/heads, `num_key_value_heads` to
/// the head count, `layer_types` to all full attention).
fn llama_args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
    let common = Common::read(c)?;
    let head_dim = c.dim_or("head_dim", Some(common.hidden / common.heads))?;
    let attention_bias = c.bool_or("attention_bias", false)?;
    let layer_types_error = |message: String| invalid(c.path(), &c.key("layer_types"), &message);
    let sliding = match c.get("layer_types") {
        None | Some(Value::Null) => vec![false; common.layers as usize],
        Some(Value::Array(types)) => {
            let sliding = types
                .iter()
                .map(|t| match t.as_str() {
                    Some("full_attention") => Ok(false),
                    Some("sliding_attention") => Ok(true),
                    _ => Err(layer_types_error(format!("unknown layer type {t}"))),
                })
                .collect::<crate::Result<Vec<bool>>>()?;
            if sliding.len() != common.layers as usize {
                return Err(layer_types_error(format!(
                    "{} entries for {} layers",
                    sliding.len(),
                    common.layers
                )));
            }
            sliding
        }
        Some(v) => return Err(layer_types_error(format!("not a list: {v}"))),
    };
    let sliding_window = c
        .usize("sliding_window")?
        .map(|_| c.dim("sliding_window"))
        .transpose()?;
    if sliding.iter().any(|s| *s) && sliding_window.is_none() {
        return Err(invalid(
            c.path(),
            &c.key("sliding_window"),
            "missing, but layer_types has sliding_attention layers",
        ));
    }
    let rope = Rope::from_config(
        c,
        head_dim,
        c.float_or("rope_theta", 10000.0)?,
        c.bool_or("rope_traditional", false)?,
    )?;
    Ok(DecoderArgs {
        qkv_bias: attention_bias,
        o_bias: attention_bias,
        mlp_bias: c.bool_or("mlp_bias", false)?,
        tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
        sliding,
        sliding_window,
        ..common.args(
            head_dim,
            c.dim_or("num_key_value_heads", Some(common.heads))?,
            rope,
        )
    })
}

/// Python: qwen2's `ModelArgs` (q/k/v biases, `head_dim` = hidden/heads).
fn qwen2_args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
    let common = Common::read(c)?;
    let head_dim = common.hidden / common.heads;
    let rope = Rope::from_config(
        c,
        head_dim,
        c.float_or("rope_theta", 1_000_000.0)?,
        c.bool_or("rope_traditional", false)?,
    )?;
    Ok(DecoderArgs {
        qkv_bias: true,
        tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
        ..common.args(head_dim, c.dim("num_key_value_heads")?, rope)
    })
}

/// Python: qwen3's `ModelArgs` (q/k norms, explicit `head_dim`, `rope_theta` required, also
/// under transformers 5's `rope_parameters`).
fn qwen3_args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
    let common = Common::read(c)?;
    let head_dim = c.dim("head_dim")?;
    let theta = match c.float("rope_theta")? {
        Some(t) => t,
        None => c
            .section("rope_parameters")
            .map(|p| p.float("rope_theta"))
            .transpose()?
            .flatten()
            .ok_or_else(|| invalid(c.path(), &c.key("rope_theta"), "missing"))?,
    };
    Ok(DecoderArgs {
        qk_norm: true,
        tie_word_embeddings: c
            .bool("tie_word_embeddings")?
            .ok_or_else(|| invalid(c.path(), &c.key("tie_word_embeddings"), "missing"))?,
        ..common.args(
            head_dim,
            c.dim("num_key_value_heads")?,
            Rope::from_config(c, head_dim, theta, false)?,
        )
    })
}
