//! `stablelm` (Python: `mlx_lm.models.stablelm`): StableLM (3B-4E1T, StableLM 2, Zephyr), a
//! decoder with LayerNorms (weight and bias), rope over the first `partial_rotary_factor` of
//! each head, optional q/k biases, an optional LayerNorm per head of the queries and keys
//! (`qk_layernorm`: `q_layernorm.norms.{i}.weight`), a SwiGLU MLP, and the attention product
//! with queries and keys in float32. A layer is sequential (two norms) or, with
//! `use_parallel_residual`, parallel: `(x + attn(ln(x))) + mlp(ln(x))`, one norm.

use mlx_nn::{Forward, LayerNorm, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::{
    partial_rotary_factor, rope_theta, AttentionParts, Layer, LayerContext, LayerStack, Mlp,
    PerHeadLayerNorm, RotaryEmbedding, Stack, Upcast,
};
use crate::cache::{KvCache, LayerCache};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};

/// Python: stablelm's `ModelArgs`, over every key of transformers' `StableLmConfig`.
#[derive(Debug, Clone)]
pub struct StableLmArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub layer_norm_eps: f32,
    pub use_qkv_bias: bool,
    pub qk_layernorm: bool,
    pub use_parallel_residual: bool,
    pub rope: RotaryEmbedding,
}

impl StableLmArgs {
    /// Reads the config; what mlx_lm requires and transformers defaults
    /// (`partial_rotary_factor` 0.25, `rope_theta` 10000, `layer_norm_eps` 1e-5,
    /// `use_qkv_bias` false) takes transformers' default.
    pub fn from_config(c: &ModelConfig) -> crate::Result<StableLmArgs> {
        // mlx_lm's MLP is SwiGLU, whatever a config says.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        // mlx_lm always has an output head of its own.
        c.require_value("tie_word_embeddings", false)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; max_position_embeddings sizes transformers' rope cache (a scaled rope
        // that needs it reads it in `RotaryEmbedding::from_config`).
        c.declare_neutral(&[
            "attention_dropout",
            "hidden_dropout",
            "initializer_range",
            "max_position_embeddings",
        ]);
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        if hidden % heads != 0 {
            return Err(invalid(
                c.path(),
                &c.key("num_attention_heads"),
                &format!("{heads} heads do not divide hidden_size {hidden}"),
            ));
        }
        let head_dim = hidden / heads;
        let partial = partial_rotary_factor(c, Some(0.25))?;
        // Python: int(partial_rotary_factor * head_dim).
        let rope_dims = (partial * f64::from(head_dim)) as i32;
        Ok(StableLmArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size: hidden,
            intermediate_size: c.dim("intermediate_size")?,
            num_hidden_layers: c.dim("num_hidden_layers")?,
            num_attention_heads: heads,
            num_key_value_heads: c.dim_or("num_key_value_heads", Some(heads))?,
            layer_norm_eps: c.float_or("layer_norm_eps", 1e-5)? as f32,
            use_qkv_bias: c.bool_or("use_qkv_bias", false)?,
            qk_layernorm: c.bool_or("qk_layernorm", false)?,
            use_parallel_residual: c.bool_or("use_parallel_residual", false)?,
            rope: RotaryEmbedding::from_config(c, rope_dims, rope_theta(c, Some(10000.0))?, false)?,
        })
    }
}

/// Python: stablelm's `Attention`.
#[derive(Debug, Clone, TreeNode)]
pub struct StableLmAttention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_layernorm: Option<PerHeadLayerNorm>,
    pub k_layernorm: Option<PerHeadLayerNorm>,
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

impl StableLmAttention {
    pub fn load(ck: &mut Checkpoint, path: &str, a: &StableLmArgs) -> crate::Result<Self> {
        let (d, h, kv) = (a.hidden_size, a.num_attention_heads, a.num_key_value_heads);
        let hd = d / h;
        let p = |name: &str| format!("{path}.{name}");
        let bias = a.use_qkv_bias;
        let (q_layernorm, k_layernorm) = if a.qk_layernorm {
            (
                Some(PerHeadLayerNorm::load(
                    ck,
                    &p("q_layernorm"),
                    h,
                    hd,
                    a.layer_norm_eps,
                )?),
                Some(PerHeadLayerNorm::load(
                    ck,
                    &p("k_layernorm"),
                    kv,
                    hd,
                    a.layer_norm_eps,
                )?),
            )
        } else {
            (None, None)
        };
        Ok(StableLmAttention {
            q_proj: ck.linear(&p("q_proj"), d, h * hd, bias)?,
            k_proj: ck.linear(&p("k_proj"), d, kv * hd, bias)?,
            v_proj: ck.linear(&p("v_proj"), d, kv * hd, bias)?,
            o_proj: ck.linear(&p("o_proj"), h * hd, d, false)?,
            q_layernorm,
            k_layernorm,
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
        AttentionParts {
            q_proj: &self.q_proj,
            k_proj: &self.k_proj,
            v_proj: &self.v_proj,
            o_proj: &self.o_proj,
            q_norm: self.q_layernorm.as_ref(),
            k_norm: self.k_layernorm.as_ref(),
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
            Upcast::QueriesKeys,
        )
    }
}

/// Python: stablelm's `DecoderLayer`.
#[derive(Debug, Clone, TreeNode)]
pub struct StableLmLayer {
    pub self_attn: StableLmAttention,
    pub mlp: Mlp,
    pub input_layernorm: LayerNorm,
    /// `None` in a parallel layer.
    pub post_attention_layernorm: Option<LayerNorm>,
}

impl Layer for StableLmLayer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let h = self.input_layernorm.forward(x)?;
        let r = self.self_attn.forward(&h, ctx, cache)?;
        match &self.post_attention_layernorm {
            // Python: x + r + mlp(h), summed left to right.
            None => ops::add(&ops::add(x, &r)?, &self.mlp.forward(&h)?),
            Some(norm) => {
                let h = ops::add(x, &r)?;
                let r = self.mlp.forward(&norm.forward(&h)?)?;
                ops::add(&h, &r)
            }
        }
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

/// Python: `StableLM` (the stack).
pub type StableLmModel = LayerStack<StableLmLayer, LayerNorm>;

/// Python: `mlx_lm.models.stablelm.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct StableLm {
    pub model: StableLmModel,
    pub lm_head: MaybeQuantizedLinear,
}

impl StableLm {
    /// Reads the config, casts the tensors, builds the model (mlx_lm has no sanitize).
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<StableLm> {
        let a = StableLmArgs::from_config(config)?;
        ck.cast(options.dtype, |_| false)?;
        let (d, eps) = (a.hidden_size, a.layer_norm_eps);
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            let post_attention_layernorm = if a.use_parallel_residual {
                None
            } else {
                Some(ck.layer_norm(&p("post_attention_layernorm"), d, eps, true)?)
            };
            layers.push(StableLmLayer {
                self_attn: StableLmAttention::load(ck, &p("self_attn"), &a)?,
                mlp: Mlp::load(ck, &p("mlp"), d, a.intermediate_size, false)?,
                input_layernorm: ck.layer_norm(&p("input_layernorm"), d, eps, true)?,
                post_attention_layernorm,
            });
        }
        Ok(StableLm {
            model: Stack::load_around(
                ck,
                "model",
                (a.vocab_size, d),
                layers,
                |ck, path| ck.layer_norm(path, d, eps, true),
                options.kernels,
            )?,
            lm_head: ck.linear("lm_head", d, a.vocab_size, false)?,
        })
    }
}

crate::models::base::stack_language_model!(StableLm, model, "stablelm", |m| Some(&m.lm_head));
