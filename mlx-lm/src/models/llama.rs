//! `llama` (Python: `mlx_lm.models.llama`), which also serves `mistral`-style configs; and
//! `qwen2` / `qwen3`, the same decoder with q/k/v biases or q/k norms.

use mlx_nn::{MaybeQuantizedLinear, Module};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;
use serde_json::Value;

use crate::cache::LayerCache;
use crate::checkpoint::Checkpoint;
use crate::config::{invalid, ModelConfig};
use crate::models::decoder::{compute_dtype, logits, DecoderArgs, DecoderModel};
use crate::rope::{scaling_config, Rope};

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
                let h = self.model.forward(inputs, cache)?;
                logits(&h, &self.model.embed_tokens, self.lm_head.as_ref())
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

/// The fields every decoder config has.
fn common(c: &ModelConfig) -> crate::Result<(i32, i32, i32, i32, i32)> {
    Ok((
        c.dim("hidden_size")?,
        c.dim("intermediate_size")?,
        c.dim("num_attention_heads")?,
        c.dim("num_hidden_layers")?,
        c.dim("vocab_size")?,
    ))
}

fn rope(c: &ModelConfig, head_dim: i32, base: f64, traditional: bool) -> crate::Result<Rope> {
    let key = if c.get("rope_scaling").is_some_and(Value::is_object) {
        "rope_scaling"
    } else {
        "rope_parameters"
    };
    Rope::from_config(
        c,
        &c.key(key),
        head_dim,
        base,
        traditional,
        scaling_config(c),
    )
}

/// Python: llama's `ModelArgs` (`head_dim` defaults to hidden/heads, `num_key_value_heads` to
/// the head count, `layer_types` to all full attention).
fn llama_args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
    let (hidden, inter, heads, layers, vocab) = common(c)?;
    let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
    let attention_bias = c.bool_or("attention_bias", false)?;
    let traditional = c.bool_or("rope_traditional", false)?;
    let sliding = match c.get("layer_types") {
        None | Some(Value::Null) => vec![false; layers as usize],
        Some(Value::Array(types)) => {
            let mut out = Vec::with_capacity(types.len());
            for t in types {
                match t.as_str() {
                    Some("full_attention") => out.push(false),
                    Some("sliding_attention") => out.push(true),
                    _ => {
                        return Err(invalid(
                            c.path(),
                            &c.key("layer_types"),
                            &format!("unknown layer type {t}"),
                        ))
                    }
                }
            }
            if out.len() != layers as usize {
                return Err(invalid(
                    c.path(),
                    &c.key("layer_types"),
                    &format!("{} entries for {layers} layers", out.len()),
                ));
            }
            out
        }
        Some(v) => {
            return Err(invalid(
                c.path(),
                &c.key("layer_types"),
                &format!("not a list: {v}"),
            ))
        }
    };
    let sliding_window = match c.usize("sliding_window")? {
        Some(w) => Some(c.dim("sliding_window").map(|_| w as i32)?),
        None => None,
    };
    if sliding.iter().any(|s| *s) && sliding_window.is_none() {
        return Err(invalid(
            c.path(),
            &c.key("sliding_window"),
            "missing, but layer_types has sliding_attention layers",
        ));
    }
    Ok(DecoderArgs {
        hidden_size: hidden,
        intermediate_size: inter,
        num_attention_heads: heads,
        num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
        head_dim,
        num_hidden_layers: layers,
        vocab_size: vocab,
        rms_norm_eps: c
            .float("rms_norm_eps")?
            .map(|e| e as f32)
            .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?,
        qkv_bias: attention_bias,
        o_bias: attention_bias,
        mlp_bias: c.bool_or("mlp_bias", false)?,
        qk_norm: false,
        tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
        rope: rope(c, head_dim, c.float_or("rope_theta", 10000.0)?, traditional)?,
        sliding,
        sliding_window,
    })
}

/// Python: qwen2's `ModelArgs` (q/k/v biases, `head_dim` = hidden/heads).
fn qwen2_args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
    let (hidden, inter, heads, layers, vocab) = common(c)?;
    let head_dim = hidden / heads;
    Ok(DecoderArgs {
        hidden_size: hidden,
        intermediate_size: inter,
        num_attention_heads: heads,
        num_key_value_heads: c.dim("num_key_value_heads")?,
        head_dim,
        num_hidden_layers: layers,
        vocab_size: vocab,
        rms_norm_eps: c
            .float("rms_norm_eps")?
            .map(|e| e as f32)
            .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?,
        qkv_bias: true,
        o_bias: false,
        mlp_bias: false,
        qk_norm: false,
        tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
        rope: rope(
            c,
            head_dim,
            c.float_or("rope_theta", 1_000_000.0)?,
            c.bool_or("rope_traditional", false)?,
        )?,
        sliding: vec![false; layers as usize],
        sliding_window: None,
    })
}

/// Python: qwen3's `ModelArgs` (q/k norms, explicit `head_dim`, `rope_theta` required, also
/// under transformers 5's `rope_parameters`).
fn qwen3_args(c: &ModelConfig) -> crate::Result<DecoderArgs> {
    let (hidden, inter, heads, layers, vocab) = common(c)?;
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
        hidden_size: hidden,
        intermediate_size: inter,
        num_attention_heads: heads,
        num_key_value_heads: c.dim("num_key_value_heads")?,
        head_dim,
        num_hidden_layers: layers,
        vocab_size: vocab,
        rms_norm_eps: c
            .float("rms_norm_eps")?
            .map(|e| e as f32)
            .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?,
        qkv_bias: false,
        o_bias: false,
        mlp_bias: false,
        qk_norm: true,
        tie_word_embeddings: c
            .bool("tie_word_embeddings")?
            .ok_or_else(|| invalid(c.path(), &c.key("tie_word_embeddings"), "missing"))?,
        rope: rope(c, head_dim, theta, false)?,
        sliding: vec![false; layers as usize],
        sliding_window: None,
    })
}
