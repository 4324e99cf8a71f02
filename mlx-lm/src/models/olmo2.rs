//! `olmo2` (Python: `mlx_lm.models.olmo2`): OLMo 2, a decoder of post-norm layers
//! ([`PostNormLayer`]: each sublayer's output normalized before its residual sum, no norm
//! before a sublayer) whose attention normalizes queries and keys over their whole
//! projection ([`WholeQkNormAttention`]), with a SwiGLU MLP.
//!
//! Where mlx_lm 0.32.2 and transformers 5.23 differ this follows mlx_lm: without a
//! `tie_word_embeddings` key the head is tied (mlx_lm's default; transformers' is untied, and
//! transformers writes the key into every config it saves).

use mlx_nn::MaybeQuantizedLinear;
use mlx_tree::TreeNode;

use crate::blocks::{
    rope_theta, AttentionConfig, LayerStack, Mlp, PostNormLayer, RotaryEmbedding, Stack,
    WholeQkNormAttention,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};

/// What OLMo 2's and OLMo 3's configs share (Python: the fields of olmo2's and olmo3's
/// `ModelArgs` that mean the same in each).
#[derive(Debug, Clone)]
pub struct OlmoArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub rms_norm_eps: f32,
    /// The biases of all four attention projections.
    pub attention_bias: bool,
    pub tie_word_embeddings: bool,
}

impl OlmoArgs {
    /// The keys both read, with `tie_default` mlx_lm's default of `tie_word_embeddings`.
    pub fn common(c: &ModelConfig, tie_default: bool) -> crate::Result<OlmoArgs> {
        c.require("hidden_act", r#""silu" (or "swish")"#, |v| {
            v == "silu" || v == "swish"
        })?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces.
        c.declare_neutral(&["attention_dropout", "initializer_range"]);
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let head_dim = match c.usize("head_dim")? {
            Some(_) => c.dim("head_dim")?,
            None => c.head_dim_of(hidden, heads)?,
        };
        Ok(OlmoArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            intermediate_size: c.dim("intermediate_size")?,
            num_hidden_layers: c.dim("num_hidden_layers")?,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
            head_dim,
            rms_norm_eps: c
                .float("rms_norm_eps")?
                .ok_or_else(|| invalid(c.path(), &c.key("rms_norm_eps"), "missing"))?
                as f32,
            attention_bias: c.bool_or("attention_bias", false)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", tie_default)?,
        })
    }

    /// A layer's attention with `rope` and `window`.
    pub fn attention(&self, rope: RotaryEmbedding, window: Option<i32>) -> AttentionConfig {
        AttentionConfig {
            hidden_size: self.hidden_size,
            num_heads: self.num_attention_heads,
            num_kv_heads: self.num_key_value_heads,
            head_dim: self.head_dim,
            qkv_bias: self.attention_bias,
            o_bias: self.attention_bias,
            qk_norm: None,
            output_gate: false,
            rope: Some(rope),
            sliding_window: window,
        }
    }

    /// The stack over `layers`, the head unless tied.
    pub fn stack<A: crate::blocks::TokenMixer>(
        &self,
        ck: &mut Checkpoint,
        options: &LoadOptions,
        layers: Vec<PostNormLayer<A>>,
    ) -> crate::Result<(OlmoStack<A>, Option<MaybeQuantizedLinear>)> {
        let d = self.hidden_size;
        let lm_head = if self.tie_word_embeddings {
            None
        } else {
            Some(ck.linear("lm_head", d, self.vocab_size, false)?)
        };
        Ok((
            Stack::load_around(
                ck,
                "model",
                (self.vocab_size, d),
                layers,
                |ck, path| ck.rms_norm(path, d, self.rms_norm_eps),
                options.kernels,
            )?,
            lm_head,
        ))
    }

    /// Layer `i`'s tensors: the attention `a`, the SwiGLU MLP (biased with `mlp_bias`), the
    /// two post-norms.
    pub fn layer(
        &self,
        ck: &mut Checkpoint,
        i: i32,
        a: &AttentionConfig,
        mlp_bias: bool,
    ) -> crate::Result<PostNormLayer<WholeQkNormAttention>> {
        let (d, eps) = (self.hidden_size, self.rms_norm_eps);
        let p = |name: &str| format!("model.layers.{i}.{name}");
        Ok(PostNormLayer {
            self_attn: WholeQkNormAttention::load(ck, &p("self_attn"), a, eps)?,
            mlp: Mlp::load(ck, &p("mlp"), d, self.intermediate_size, mlp_bias)?,
            post_attention_layernorm: ck.rms_norm(&p("post_attention_layernorm"), d, eps)?,
            post_feedforward_layernorm: ck.rms_norm(&p("post_feedforward_layernorm"), d, eps)?,
        })
    }
}

/// Python: olmo2's `LlamaModel`, olmo3's `Olmo3Model`.
pub type OlmoStack<A> = LayerStack<PostNormLayer<A>>;

/// Python: `mlx_lm.models.olmo2.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Olmo2 {
    pub model: OlmoStack<WholeQkNormAttention>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

/// olmo2's reading of a config: [`OlmoArgs`], `mlp_bias` (mlx_lm's key) and the rope.
#[derive(Debug, Clone)]
pub struct Olmo2Args {
    pub olmo: OlmoArgs,
    pub mlp_bias: bool,
    pub rope: RotaryEmbedding,
}

impl Olmo2 {
    /// Python: olmo2's `ModelArgs`, over every key of transformers' `Olmo2Config`: tied
    /// unless the config says otherwise, `rope_theta` 10000, any rope scaling
    /// `initialize_rope` builds.
    pub fn args(c: &ModelConfig) -> crate::Result<Olmo2Args> {
        let olmo = OlmoArgs::common(c, true)?;
        let rope = RotaryEmbedding::from_config(
            c,
            olmo.head_dim,
            rope_theta(c, Some(10000.0))?,
            c.bool_or("rope_traditional", false)?,
        )?;
        // Only a scaled rope needs it (read there).
        c.declare_neutral(&["max_position_embeddings"]);
        Ok(Olmo2Args {
            olmo,
            mlp_bias: c.bool_or("mlp_bias", false)?,
            rope,
        })
    }

    /// Python: `Model.sanitize`: drops transformers' `self_attn.rotary_emb.inv_freq`.
    pub fn sanitize(ck: &mut Checkpoint) {
        ck.weights_mut()
            .retain(|k, _| !k.contains("self_attn.rotary_emb.inv_freq"));
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Olmo2> {
        let a = Self::args(config)?;
        Self::sanitize(ck);
        ck.cast(options.dtype, |_| false)?;
        let attention = a.olmo.attention(a.rope.clone(), None);
        let layers = (0..a.olmo.num_hidden_layers)
            .map(|i| a.olmo.layer(ck, i, &attention, a.mlp_bias))
            .collect::<crate::Result<Vec<_>>>()?;
        let (model, lm_head) = a.olmo.stack(ck, options, layers)?;
        Ok(Olmo2 { model, lm_head })
    }
}

crate::models::base::stack_language_model!(Olmo2, model, "olmo2");
