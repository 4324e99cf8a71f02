//! `cohere2` (Python: `mlx_lm.models.cohere2`): Command R7B / Command A, Command-R's parallel
//! layers ([`CohereLayer`]: one LayerNorm feeding attention and the SwiGLU MLP,
//! `(attn(h) + mlp(h)) + x`) whose attention slides over `sliding_window` positions with the
//! traditional rope in three of every `sliding_window_pattern` (4) layers and attends
//! everywhere without positional embedding (NoPE) in every fourth; float16 queries are cast
//! to float32 for the attention product (its output cast back). The head is the embedding,
//! its logits multiplied by `logit_scale`.
//!
//! transformers 5's `Cohere2Config` writes the layer kinds as `layer_types` (and no
//! pattern); mlx_lm reads `sliding_window_pattern` (default 4) only, so `layer_types` must
//! name the layers that pattern makes sliding. mlx_lm indexes the cache of layer
//! `pattern - 1` for its global mask and so fails on fewer layers than the pattern; any
//! number runs here. mlx_lm builds the plain rope: a rope scaling is an error.

use mlx_nn::LayerNorm;
use mlx_tree::TreeNode;

use crate::blocks::{plain_rope, rope_theta, LayerStack, Upcast};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::base::DecoderArgs;
use crate::models::cohere::{CohereArgs, CohereLayer};

/// cohere2's reading of a config: Command-R's [`CohereArgs`] (no q/k norms) and the
/// sliding layers.
#[derive(Debug, Clone)]
pub struct Cohere2Args {
    pub cohere: CohereArgs,
    /// Per layer: whether it slides (and rotates); the others are global, without rope.
    pub sliding: Vec<bool>,
    pub sliding_window: i32,
}

/// Python: `mlx_lm.models.cohere2.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Cohere2 {
    pub model: LayerStack<CohereLayer, LayerNorm>,
}

impl Cohere2 {
    /// Python: cohere2's `ModelArgs` with its defaults (Command R7B's sizes, `rope_theta`
    /// 50000, `logit_scale` 0.0625, window 4096, pattern 4), over every key of transformers'
    /// `Cohere2Config`.
    pub fn args(c: &ModelConfig) -> crate::Result<Cohere2Args> {
        // mlx_lm's MLP is SwiGLU, and its head always the embedding.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        c.require_value("tie_word_embeddings", true)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache.
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let hidden = c.dim_or("hidden_size", Some(4096))?;
        let heads = c.dim_or("num_attention_heads", Some(32))?;
        let head_dim = c.dim_or("head_dim", Some(128))?;
        if head_dim * heads != hidden {
            return Err(invalid(
                c.path(),
                &c.key("head_dim"),
                &format!("{heads} heads of {head_dim} are not hidden_size {hidden}"),
            ));
        }
        let layers = c.dim_or("num_hidden_layers", Some(32))?;
        let pattern = c.dim_or("sliding_window_pattern", Some(4))? as usize;
        let sliding: Vec<bool> = (0..layers as usize)
            .map(|i| (i + 1) % pattern != 0)
            .collect();
        if c.get("layer_types").is_some_and(|v| !v.is_null())
            && DecoderArgs::sliding_layers(c, layers, false)? != sliding
        {
            return Err(invalid(
                c.path(),
                &c.key("layer_types"),
                &format!(
                    "does not make every {pattern}th layer full_attention and the others \
                     sliding_attention (mlx_lm reads sliding_window_pattern, {pattern})"
                ),
            ));
        }
        let cohere = CohereArgs {
            vocab_size: c.dim_or("vocab_size", Some(256000))?,
            hidden_size: hidden,
            intermediate_size: c.dim_or("intermediate_size", Some(14336))?,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(8))?,
            layer_norm_eps: c.float_or("layer_norm_eps", 1e-5)? as f32,
            logit_scale: c.float_or("logit_scale", 0.0625)?,
            attention_bias: c.bool_or("attention_bias", false)?,
            layer_norm_bias: c.bool_or("layer_norm_bias", false)?,
            use_qk_norm: false,
            rope: plain_rope(c, head_dim, rope_theta(c, Some(50000.0))?, true)?,
        };
        Ok(Cohere2Args {
            cohere,
            sliding,
            sliding_window: c.dim_or("sliding_window", Some(4096))?,
        })
    }

    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Cohere2> {
        let a = Self::args(config)?;
        let c = &a.cohere;
        ck.cast(options.dtype, |_| false)?;
        let model = c.load_stack(ck, options, |i, mut attention| {
            let sliding = a.sliding[i];
            attention.rope = sliding.then(|| c.rope.clone());
            attention.window = sliding.then_some(a.sliding_window);
            attention.upcast = Upcast::QueriesIfFloat16;
            Ok(attention)
        })?;
        Ok(Cohere2 { model })
    }
}

crate::models::base::stack_language_model!(Cohere2, model, "cohere2", |_m| None);
