//! `gpt_neox` (Python: `mlx_lm.models.gpt_neox`): GPT-NeoX and Pythia. Each layer's attention
//! projects queries, keys and values with one biased `query_key_value` whose output is laid
//! out per head (`[heads, 3 * head_dim]`: each head's query, key and value side by side, not
//! the three projections one after the other), rotates the first `rotary_pct` of each head,
//! and projects back with `dense`. The MLP is `dense_4h_to_h(act(dense_h_to_4h(x)))`, 4 ×
//! hidden wide. Layers are parallel, `(attn(ln1(x)) + mlp(ln2(x))) + x` with two LayerNorms,
//! or sequential (`use_parallel_residual: false`). The stack names its parts `embed_in`, `h`,
//! `final_layer_norm`, and its untied output head `embed_out` sits inside it.
//!
//! Where mlx_lm 0.32.2 departs from transformers' `GPTNeoXModel` this follows transformers:
//! the MLP computes the GELU `hidden_act` names (the Pythia configs' and transformers'
//! default `gelu` is the exact one; mlx_lm always computes the tanh approximation), and a
//! config transformers 5 wrote (`rope_parameters` with `rope_theta` and
//! `partial_rotary_factor`, no `rotary_emb_base` / `rotary_pct`, which mlx_lm requires) is
//! read.

use mlx_nn::{Forward, LayerNorm, MaybeQuantizedEmbedding, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::attention::attend;
use crate::blocks::rows::{heads_first, merge_heads};
use crate::blocks::{
    partial_rotary_factor, plain_mlp, rope_theta, stack_logits, Activation, ChannelMixer,
    LayerContext, LnDecoderLayer, Residual, RotaryEmbedding, StackEnds, StackParts, TokenMixer,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;
use crate::models::base::own_stack_language_model;

/// Python: gpt_neox's `ModelArgs`, over every key of transformers' `GPTNeoXConfig`.
#[derive(Debug, Clone)]
pub struct GptNeoxArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub layer_norm_eps: f32,
    pub use_parallel_residual: bool,
    pub activation: Activation,
    pub rope: RotaryEmbedding,
}

impl GptNeoxArgs {
    /// Reads the config: `rotary_emb_base` and `rotary_pct` (mlx_lm's, the hub configs') or
    /// transformers 5's `rope_parameters`, which must agree where both are given.
    pub fn from_config(c: &ModelConfig) -> crate::Result<GptNeoxArgs> {
        // mlx_lm's projections always have biases, its head is never tied, and its MLP is
        // 4 × hidden wide.
        c.require_value("attention_bias", true)?;
        c.require_value("tie_word_embeddings", false)?;
        let hidden = c.dim("hidden_size")?;
        c.require_value("intermediate_size", 4 * hidden)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (a scaled rope
        // that needs it reads it in `RotaryEmbedding::from_config`).
        c.declare_neutral(&[
            "attention_dropout",
            "hidden_dropout",
            "classifier_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let activation = Activation::gelu_from_config(c, "gelu", "gpt_neox")?;
        let heads = c.dim("num_attention_heads")?;
        let head_dim = c.head_dim_of(hidden, heads)?;
        // mlx_lm reads the key and gives every head its own keys and values.
        c.require_value("num_key_value_heads", heads)?;
        // `rope_theta` / `partial_rotary_factor` (transformers 5) default to the old keys,
        // so a config that says both must say the same.
        let base = match c.float("rotary_emb_base")? {
            Some(b) => agree(c, "rotary_emb_base", b, rope_theta(c, Some(b))?)?,
            None => rope_theta(c, Some(10000.0))?,
        };
        let pct = match c.float("rotary_pct")? {
            Some(p) => agree(c, "rotary_pct", p, partial_rotary_factor(c, Some(p))?)?,
            None => partial_rotary_factor(c, Some(0.25))?,
        };
        // Python: int(head_dim * rotary_pct).
        let rope_dims = (f64::from(head_dim) * pct) as i32;
        Ok(GptNeoxArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            num_hidden_layers: c.dim("num_hidden_layers")?,
            num_attention_heads: heads,
            layer_norm_eps: c.float_or("layer_norm_eps", 1e-5)? as f32,
            use_parallel_residual: c.bool_or("use_parallel_residual", true)?,
            activation,
            rope: RotaryEmbedding::from_config(c, rope_dims, base, false)?,
        })
    }
}

/// `old`, the value of `key`, when `new` (the same setting under transformers 5's name) is
/// equal; an error naming both otherwise.
fn agree(c: &ModelConfig, key: &str, old: f64, new: f64) -> crate::Result<f64> {
    if old == new {
        Ok(old)
    } else {
        Err(invalid(
            c.path(),
            &c.key(key),
            &format!(
                "{old}, but rope_parameters says {new}: which one gpt_neox applies is ambiguous"
            ),
        ))
    }
}

/// Python: gpt_neox's `Attention`.
#[derive(Debug, Clone, TreeNode)]
pub struct GptNeoxAttention {
    pub query_key_value: MaybeQuantizedLinear,
    pub dense: MaybeQuantizedLinear,
    pub rope: RotaryEmbedding,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
}

impl GptNeoxAttention {
    pub fn load(ck: &mut Checkpoint, path: &str, a: &GptNeoxArgs) -> crate::Result<Self> {
        let d = a.hidden_size;
        let hd = d / a.num_attention_heads;
        Ok(GptNeoxAttention {
            query_key_value: ck.linear(&format!("{path}.query_key_value"), d, 3 * d, true)?,
            dense: ck.linear(&format!("{path}.dense"), d, d, true)?,
            rope: a.rope.clone(),
            n_heads: a.num_attention_heads,
            head_dim: hd,
            // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
            scale: f64::from(hd).powf(-0.5) as f32,
        })
    }
}

impl TokenMixer for GptNeoxAttention {
    const KEY: &'static str = "attention";

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let rows = ctx.rows;
        let qkv = ops::reshape(
            &self.query_key_value.forward(x)?,
            &[rows.batch, rows.len, self.n_heads, 3 * self.head_dim],
        )?;
        let parts = ops::split(&qkv, 3, -1)?;
        let [q, k, v] = [&parts[0], &parts[1], &parts[2]].map(heads_first);
        let out = attend(
            q?,
            k?,
            v?,
            Some(&self.rope),
            self.scale,
            ctx.masks.for_window(None),
            None,
            ctx.kernels.fused_decode_attention,
            cache,
        )?;
        self.dense.forward(&merge_heads(&out)?)
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        let (h, hd) = (self.n_heads, self.head_dim);
        LayerCache::attention(batch, h, hd, None, capacity, dtype)
    }
}

/// Python: gpt_neox's `MLP`.
#[derive(Debug, Clone, TreeNode)]
pub struct GptNeoxMlp {
    pub dense_h_to_4h: MaybeQuantizedLinear,
    pub dense_4h_to_h: MaybeQuantizedLinear,
    #[tree(static)]
    pub activation: Activation,
}

impl Forward for GptNeoxMlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        plain_mlp(&self.dense_h_to_4h, &self.dense_4h_to_h, self.activation, x)
    }
}

impl ChannelMixer for GptNeoxMlp {}

/// Python: gpt_neox's `TransformerBlock`: two LayerNorms, parallel
/// (`(attn(ln1(x)) + mlp(ln2(x))) + x`) or sequential.
pub type GptNeoxLayer = LnDecoderLayer<GptNeoxAttention, GptNeoxMlp>;

/// Python: `GPTNeoXModel`: `embed_in`, `h`, `final_layer_norm`, and the head `embed_out`.
#[derive(Debug, Clone, TreeNode)]
pub struct GptNeoxModel {
    pub embed_in: MaybeQuantizedEmbedding,
    pub embed_out: MaybeQuantizedLinear,
    pub h: Vec<GptNeoxLayer>,
    pub final_layer_norm: LayerNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

/// Python: `mlx_lm.models.gpt_neox.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct GptNeox {
    pub model: GptNeoxModel,
}

impl GptNeox {
    /// Python: `Model.sanitize`: drops transformers' buffers (`.attention.bias`,
    /// `.attention.masked_bias`, `.attention.rotary_emb.inv_freq`) and maps a Hugging Face
    /// checkpoint's names (`gpt_neox.layers.{i}.`, `gpt_neox.embed_in`, `embed_out`) onto
    /// mlx_lm's (`model.h.{i}.`, `model.embed_in`, `model.embed_out`).
    pub fn sanitize(ck: &mut Checkpoint) {
        let w = ck.weights_mut();
        w.retain(|k, _| {
            ![
                ".attention.bias",
                ".attention.masked_bias",
                ".attention.rotary_emb.inv_freq",
            ]
            .iter()
            .any(|s| k.ends_with(s))
        });
        let keys: Vec<String> = w.keys().into_iter().map(str::to_string).collect();
        for key in keys {
            let mut to = if key.starts_with("model.") {
                key.clone()
            } else {
                format!("model.{key}")
            };
            to = to.replace(".gpt_neox.layers.", ".h.");
            to = to.replace(".gpt_neox.", ".");
            if to != key {
                w.rename(&key, to);
            }
        }
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<GptNeox> {
        let a = GptNeoxArgs::from_config(config)?;
        Self::sanitize(ck);
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.hidden_size, a.layer_norm_eps);
        let mut h = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let p = |name: &str| format!("model.h.{i}.{name}");
            h.push(GptNeoxLayer {
                mixer: GptNeoxAttention::load(ck, &p("attention"), &a)?,
                mlp: GptNeoxMlp {
                    dense_h_to_4h: ck.linear(&p("mlp.dense_h_to_4h"), d, 4 * d, true)?,
                    dense_4h_to_h: ck.linear(&p("mlp.dense_4h_to_h"), 4 * d, d, true)?,
                    activation: a.activation,
                },
                input_layernorm: ck.layer_norm(&p("input_layernorm"), d, eps, true)?,
                post_attention_layernorm: Some(ck.layer_norm(
                    &p("post_attention_layernorm"),
                    d,
                    eps,
                    true,
                )?),
                residual: if a.use_parallel_residual {
                    Residual::Parallel
                } else {
                    Residual::Sequential
                },
            });
        }
        Ok(GptNeox {
            model: GptNeoxModel {
                embed_in: ck.embedding("model.embed_in", a.vocab_size, d)?,
                embed_out: ck.linear("model.embed_out", d, a.vocab_size, false)?,
                h,
                final_layer_norm: ck.layer_norm("model.final_layer_norm", d, eps, true)?,
                kernels: options.kernels,
            },
        })
    }
}

own_stack_language_model!(
    GptNeox,
    "gpt_neox",
    layers: |m| &m.model.h,
    embedding: |m| &m.model.embed_in,
    fn forward(&self, inputs, cache) {
        let m = &self.model;
        stack_logits(
            StackParts {
                embedding: &m.embed_in,
                layers: &m.h,
                norm: &m.final_layer_norm,
                kernels: m.kernels,
                ends: StackEnds::default(),
                positions: None,
                pipeline: None,
            },
            inputs,
            cache,
            Some(&m.embed_out),
        )
    }
);
