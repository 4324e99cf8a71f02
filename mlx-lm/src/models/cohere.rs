//! `cohere` (Python: `mlx_lm.models.cohere`): Command-R, parallel layers that feed one
//! LayerNorm's output (no bias unless `layer_norm_bias`) to both the attention and the SwiGLU
//! MLP (`(attn(h) + mlp(h)) + x`), traditional (interleaved) rope over the whole head, an
//! optional LayerNorm per query and key head (`use_qk_norm`: `q_norm.weight` `[heads,
//! head_dim]`), and a tied output head whose logits are multiplied by `logit_scale`.

use mlx_nn::{Forward, LayerNorm, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::{
    rope_theta, AttentionParts, Layer, LayerContext, LayerNorm2D, LayerStack, LogitsMap, Mlp,
    RotaryEmbedding, Stack, StackEnds, Upcast,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};

/// Python: cohere's `ModelArgs`, over every key of transformers' `CohereConfig`.
#[derive(Debug, Clone)]
pub struct CohereArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub layer_norm_eps: f32,
    pub logit_scale: f64,
    pub attention_bias: bool,
    pub layer_norm_bias: bool,
    pub use_qk_norm: bool,
    pub rope: RotaryEmbedding,
}

impl CohereArgs {
    /// Reads the config with mlx_lm's defaults (Command-R's sizes, `rope_theta` 8e6,
    /// `logit_scale` 0.0625).
    pub fn from_config(c: &ModelConfig) -> crate::Result<CohereArgs> {
        // mlx_lm's MLP is SwiGLU, and its head always the embedding.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        c.require_value("tie_word_embeddings", true)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (a scaled rope
        // that needs it reads it in `RotaryEmbedding::from_config`).
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let hidden = c.dim_or("hidden_size", Some(8192))?;
        let heads = c.dim_or("num_attention_heads", Some(64))?;
        if hidden % heads != 0 {
            return Err(invalid(
                c.path(),
                &c.key("num_attention_heads"),
                &format!("{heads} heads do not divide hidden_size {hidden}"),
            ));
        }
        let head_dim = hidden / heads;
        Ok(CohereArgs {
            vocab_size: c.dim_or("vocab_size", Some(256000))?,
            hidden_size: hidden,
            intermediate_size: c.dim_or("intermediate_size", Some(22528))?,
            num_hidden_layers: c.dim_or("num_hidden_layers", Some(40))?,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
            layer_norm_eps: c.float_or("layer_norm_eps", 1e-5)? as f32,
            logit_scale: c.float_or("logit_scale", 0.0625)?,
            attention_bias: c.bool_or("attention_bias", false)?,
            layer_norm_bias: c.bool_or("layer_norm_bias", false)?,
            use_qk_norm: c.bool_or("use_qk_norm", false)?,
            rope: RotaryEmbedding::from_config(c, head_dim, rope_theta(c, Some(8e6))?, true)?,
        })
    }
}

/// Python: cohere's `Attention`.
#[derive(Debug, Clone, TreeNode)]
pub struct CohereAttention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_norm: Option<LayerNorm2D>,
    pub k_norm: Option<LayerNorm2D>,
    /// `None`: a layer without positional embedding (Command R7B's global layers).
    pub rope: Option<RotaryEmbedding>,
    #[tree(static)]
    pub n_heads: i32,
    #[tree(static)]
    pub n_kv_heads: i32,
    #[tree(static)]
    pub head_dim: i32,
    #[tree(static)]
    pub scale: f32,
    /// Attend to only the last this many positions (Command R7B's sliding layers).
    #[tree(static)]
    pub window: Option<i32>,
    /// The operands attention computes in float32 (Command R7B: float16 queries).
    #[tree(static)]
    pub upcast: Upcast,
}

impl CohereAttention {
    pub fn load(ck: &mut Checkpoint, path: &str, a: &CohereArgs) -> crate::Result<Self> {
        let (d, h, kv) = (a.hidden_size, a.num_attention_heads, a.num_key_value_heads);
        let hd = d / h;
        let p = |name: &str| format!("{path}.{name}");
        let bias = a.attention_bias;
        let eps = a.layer_norm_eps;
        let (q_norm, k_norm) = if a.use_qk_norm {
            (
                Some(LayerNorm2D::load(ck, &p("q_norm"), h, hd, eps)?),
                Some(LayerNorm2D::load(ck, &p("k_norm"), kv, hd, eps)?),
            )
        } else {
            (None, None)
        };
        Ok(CohereAttention {
            q_proj: ck.linear(&p("q_proj"), d, h * hd, bias)?,
            k_proj: ck.linear(&p("k_proj"), d, kv * hd, bias)?,
            v_proj: ck.linear(&p("v_proj"), d, kv * hd, bias)?,
            o_proj: ck.linear(&p("o_proj"), h * hd, d, bias)?,
            q_norm,
            k_norm,
            rope: Some(a.rope.clone()),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
            scale: f64::from(hd).powf(-0.5) as f32,
            window: None,
            upcast: Upcast::None,
        })
    }

    /// Attention of the normed rows `x`, continuing `cache`.
    pub fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        AttentionParts {
            q_proj: &self.q_proj,
            k_proj: &self.k_proj,
            v_proj: &self.v_proj,
            o_proj: &self.o_proj,
            q_norm: self.q_norm.as_ref(),
            k_norm: self.k_norm.as_ref(),
            rope: self.rope.as_ref(),
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
            scale: self.scale,
            window: self.window,
            output_gate: false,
            sinks: None,
        }
        .forward_upcast(
            x,
            ctx.rows,
            ctx.masks.for_window(self.window),
            ctx.kernels.fused_decode_attention,
            cache,
            self.upcast,
        )
    }
}

/// Python: cohere's `TransformerBlock`.
#[derive(Debug, Clone, TreeNode)]
pub struct CohereLayer {
    pub self_attn: CohereAttention,
    pub mlp: Mlp,
    pub input_layernorm: LayerNorm,
}

impl Layer for CohereLayer {
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

    /// A rotating cache of the window for a sliding layer (Python: cohere2's `make_cache`),
    /// else a key/value cache.
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        let a = &self.self_attn;
        LayerCache::attention(batch, a.n_kv_heads, a.head_dim, a.window, capacity, dtype)
    }

    fn window(&self) -> Option<i32> {
        self.self_attn.window
    }
}

/// Python: `CohereModel`.
pub type CohereModel = LayerStack<CohereLayer, LayerNorm>;

/// Python: `mlx_lm.models.cohere.Model`: always tied, the logits scaled.
#[derive(Debug, Clone, TreeNode)]
pub struct Cohere {
    pub model: CohereModel,
}

impl Cohere {
    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Cohere> {
        let a = CohereArgs::from_config(config)?;
        ck.cast(options.dtype, |_| false)?;
        let model = a.load_stack(ck, options, |_, attention| Ok(attention))?;
        Ok(Cohere { model })
    }
}

impl CohereArgs {
    /// Cohere's stack (Command R's and R7B's), each layer's attention as loaded under
    /// `model.layers.{i}.self_attn` and then adapted by `attention` (R7B's windows, ropes
    /// and upcast per layer).
    pub(crate) fn load_stack(
        &self,
        ck: &mut Checkpoint,
        options: &LoadOptions,
        mut attention: impl FnMut(usize, CohereAttention) -> crate::Result<CohereAttention>,
    ) -> crate::Result<CohereModel> {
        let (d, eps, bias) = (self.hidden_size, self.layer_norm_eps, self.layer_norm_bias);
        let mut layers = Vec::with_capacity(self.num_hidden_layers as usize);
        for i in 0..self.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            let loaded = CohereAttention::load(ck, &p("self_attn"), self)?;
            layers.push(CohereLayer {
                self_attn: attention(i as usize, loaded)?,
                mlp: Mlp::load(ck, &p("mlp"), d, self.intermediate_size, false)?,
                input_layernorm: ck.layer_norm(&p("input_layernorm"), d, eps, bias)?,
            });
        }
        Ok(Stack::load_around(
            ck,
            "model",
            (self.vocab_size, d),
            layers,
            |ck, path| ck.layer_norm(path, d, eps, bias),
            options.kernels,
        )?
        .with_ends(StackEnds {
            embed_scale: None,
            logits: Some(LogitsMap::Multiply(self.logit_scale)),
        }))
    }
}

crate::models::base::stack_language_model!(Cohere, model, "cohere", |_m| None);
