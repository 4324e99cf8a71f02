//! `phi` (Python: `mlx_lm.models.phi`): Phi-1, Phi-1.5 and Phi-2, parallel layers that feed
//! one LayerNorm's output to both the attention and the MLP (`(attn(h) + mlp(h)) + x`),
//! biases everywhere (`q_proj`, `k_proj`, `v_proj`, `dense`, `fc1`, `fc2` and the output
//! head, never tied), rope over the first `partial_rotary_factor` of each head, and the
//! attention product with float32 queries. The stack names its final norm
//! `final_layernorm`.
//!
//! mlx_lm computes the MLP's tanh GELU whatever the config says; this port reads
//! `hidden_act` (transformers' default and the Phi configs' value, `gelu_new`, is that
//! GELU; `gelu` is the exact one, as transformers computes it).

use mlx_nn::{Forward, LayerNorm, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::layer::{embedding_dtype, embedding_vocab_size};
use crate::blocks::{
    make_layer_caches, partial_rotary_factor, plain_mlp, rope_theta, stack_logits, Activation,
    AttentionParts, Layer, LayerContext, RotaryEmbedding, StackEnds, StackParts, Upcast,
};
use crate::cache::{KvCache, LayerCache};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;
use crate::model::LanguageModel;

/// Python: phi's `ModelArgs`, over every key of transformers' `PhiConfig`.
#[derive(Debug, Clone)]
pub struct PhiArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub layer_norm_eps: f32,
    pub activation: Activation,
    pub rope: RotaryEmbedding,
}

impl PhiArgs {
    /// Reads the config with mlx_lm's defaults (Phi-2's sizes, `partial_rotary_factor` 0.4).
    pub fn from_config(c: &ModelConfig) -> crate::Result<PhiArgs> {
        // mlx_lm has neither q/k LayerNorms nor a tied head.
        c.require_value("qk_layernorm", false)?;
        c.require_value("tie_word_embeddings", false)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (a scaled rope
        // that needs it reads it in `RotaryEmbedding::from_config`).
        c.declare_neutral(&[
            "attention_dropout",
            "resid_pdrop",
            "embd_pdrop",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let act = c.string("hidden_act")?.unwrap_or("gelu_new");
        let activation = match Activation::from_hidden_act(act) {
            Some(a @ (Activation::Gelu | Activation::GeluApprox)) => a,
            _ => {
                return Err(invalid(
                    c.path(),
                    &c.key("hidden_act"),
                    &format!(
                        "{act:?} is not supported by phi (supported: \"gelu_new\", \
                         \"gelu_pytorch_tanh\", \"gelu\")"
                    ),
                ))
            }
        };
        let hidden = c.dim_or("hidden_size", Some(2560))?;
        let heads = c.dim_or("num_attention_heads", Some(32))?;
        if hidden % heads != 0 {
            return Err(invalid(
                c.path(),
                &c.key("num_attention_heads"),
                &format!("{heads} heads do not divide hidden_size {hidden}"),
            ));
        }
        let head_dim = hidden / heads;
        let partial = partial_rotary_factor(c, Some(0.4))?;
        // Python: int(partial_rotary_factor * head_dim).
        let rope_dims = (partial * f64::from(head_dim)) as i32;
        Ok(PhiArgs {
            vocab_size: c.dim_or("vocab_size", Some(51200))?,
            hidden_size: hidden,
            intermediate_size: c.dim_or("intermediate_size", Some(10240))?,
            num_hidden_layers: c.dim_or("num_hidden_layers", Some(32))?,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
            layer_norm_eps: c.float_or("layer_norm_eps", 1e-5)? as f32,
            activation,
            rope: RotaryEmbedding::from_config(c, rope_dims, rope_theta(c, Some(10000.0))?, false)?,
        })
    }
}

/// Python: `PhiAttention`.
#[derive(Debug, Clone, TreeNode)]
pub struct PhiAttention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub dense: MaybeQuantizedLinear,
    pub rope: RotaryEmbedding,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
}

impl PhiAttention {
    pub fn load(ck: &mut Checkpoint, path: &str, a: &PhiArgs) -> crate::Result<Self> {
        let (d, h, kv) = (a.hidden_size, a.num_attention_heads, a.num_key_value_heads);
        let hd = d / h;
        let p = |name: &str| format!("{path}.{name}");
        Ok(PhiAttention {
            q_proj: ck.linear(&p("q_proj"), d, h * hd, true)?,
            k_proj: ck.linear(&p("k_proj"), d, kv * hd, true)?,
            v_proj: ck.linear(&p("v_proj"), d, kv * hd, true)?,
            dense: ck.linear(&p("dense"), h * hd, d, true)?,
            rope: a.rope.clone(),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            // Python: math.sqrt(1 / head_dim), a Python float, rounded once to float32.
            scale: (1.0 / f64::from(hd)).sqrt() as f32,
        })
    }

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        AttentionParts::<RMSNorm> {
            q_proj: &self.q_proj,
            k_proj: &self.k_proj,
            v_proj: &self.v_proj,
            o_proj: &self.dense,
            q_norm: None,
            k_norm: None,
            rope: Some(&self.rope),
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
            scale: self.scale,
            window: None,
            output_gate: false,
            sinks: None,
        }
        .forward_upcast(
            x,
            ctx.rows,
            ctx.masks.for_window(None),
            ctx.kernels.fused_decode_attention,
            cache,
            Upcast::Queries,
        )
    }
}

/// Python: `PhiMLP`: `fc2(act(fc1(x)))`.
#[derive(Debug, Clone, TreeNode)]
pub struct PhiMlp {
    pub fc1: MaybeQuantizedLinear,
    pub fc2: MaybeQuantizedLinear,
    #[tree(static)]
    pub activation: Activation,
}

impl Forward for PhiMlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        plain_mlp(&self.fc1, &self.fc2, self.activation, x)
    }
}

/// Python: `PhiDecoderLayer`.
#[derive(Debug, Clone, TreeNode)]
pub struct PhiLayer {
    pub self_attn: PhiAttention,
    pub input_layernorm: LayerNorm,
    pub mlp: PhiMlp,
}

impl Layer for PhiLayer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let h = self.input_layernorm.forward(x)?;
        let attn_h = self.self_attn.forward(&h, ctx, cache)?;
        let ff_h = self.mlp.forward(&h)?;
        // Python: attn_h + ff_h + x, summed left to right.
        ops::add(&ops::add(&attn_h, &ff_h)?, x)
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        let (kv, hd) = (self.self_attn.n_kv_heads, self.self_attn.head_dim);
        Ok(LayerCache::Kv(KvCache::new(
            batch,
            kv,
            capacity,
            (hd, hd),
            dtype,
        )?))
    }
}

/// Python: `PhiModel`: `embed_tokens`, `layers`, `final_layernorm`.
#[derive(Debug, Clone, TreeNode)]
pub struct PhiModel {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<PhiLayer>,
    pub final_layernorm: LayerNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

/// Python: `mlx_lm.models.phi.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Phi {
    pub model: PhiModel,
    /// The output head, with a bias.
    pub lm_head: MaybeQuantizedLinear,
}

impl Phi {
    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Phi> {
        let a = PhiArgs::from_config(config)?;
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.hidden_size, a.layer_norm_eps);
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            layers.push(PhiLayer {
                self_attn: PhiAttention::load(ck, &p("self_attn"), &a)?,
                input_layernorm: ck.layer_norm(&p("input_layernorm"), d, eps, true)?,
                mlp: PhiMlp {
                    fc1: ck.linear(&p("mlp.fc1"), d, a.intermediate_size, true)?,
                    fc2: ck.linear(&p("mlp.fc2"), a.intermediate_size, d, true)?,
                    activation: a.activation,
                },
            });
        }
        Ok(Phi {
            model: PhiModel {
                embed_tokens: ck.embedding("model.embed_tokens", a.vocab_size, d)?,
                layers,
                final_layernorm: ck.layer_norm("model.final_layernorm", d, eps, true)?,
                kernels: options.kernels,
            },
            lm_head: ck.linear("lm_head", d, a.vocab_size, true)?,
        })
    }
}

impl LanguageModel for Phi {
    fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        let m = &self.model;
        stack_logits(
            StackParts {
                embedding: &m.embed_tokens,
                layers: &m.layers,
                norm: &m.final_layernorm,
                kernels: m.kernels,
                ends: StackEnds::default(),
                positions: None,
            },
            inputs,
            cache,
            Some(&self.lm_head),
        )
    }

    fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        make_layer_caches(&self.model.layers, batch, capacity, self.dtype())
    }

    fn dtype(&self) -> Dtype {
        embedding_dtype(&self.model.embed_tokens, self)
    }

    fn vocab_size(&self) -> i32 {
        embedding_vocab_size(&self.model.embed_tokens)
    }

    fn model_type(&self) -> &str {
        "phi"
    }
}
