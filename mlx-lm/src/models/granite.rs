//! `granite` (Python: `mlx_lm.models.granite`): llama with IBM Granite 3's µP-style scalars:
//! the embeddings times `embedding_multiplier`, each sublayer's output times
//! `residual_multiplier` before its residual sum, the attention scaled by
//! `attention_multiplier` (not `head_dim ** -0.5`), and the logits divided by
//! `logits_scaling` (a division, as mlx_lm and transformers compute it: a product with the
//! reciprocal rounds otherwise). Heads are `hidden_size / num_attention_heads` wide.
//!
//! mlx_lm's `quant_predicate` keeps `self_attn.o_proj`, `mlp.down_proj` and `lm_head` at 8
//! bits in groups of 64 when `mlx_lm.convert` quantizes a Granite model: such a checkpoint's
//! config.json has a `quantization` entry per layer, which the checkpoint reader honours.

use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::{Flattener, TreeNode, Unflattener};

use crate::blocks::decoder::ChannelMixer;
use crate::blocks::{
    rope_theta, Attention, AttentionConfig, Layer, LayerContext, LayerStack, LogitsMap, Mlp,
    RotaryEmbedding, Stack, StackEnds, TokenMixer,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::ModelConfig;
use crate::models::base::DecoderArgs;

/// Python: granite's `ModelArgs`: a dense decoder's and the four scalars.
#[derive(Debug, Clone)]
pub struct GraniteArgs {
    pub decoder: DecoderArgs,
    pub embedding_multiplier: f32,
    pub residual_multiplier: f32,
    pub attention_multiplier: f32,
    pub logits_scaling: f32,
}

impl GraniteArgs {
    /// Over every key of transformers' `GraniteConfig` (whose scalars default to 1.0; mlx_lm
    /// requires them).
    pub fn from_config(c: &ModelConfig) -> crate::Result<GraniteArgs> {
        let decoder = DecoderArgs::common(
            c,
            |hidden, heads| Ok(hidden / heads),
            |head_dim| {
                RotaryEmbedding::from_config(c, head_dim, rope_theta(c, Some(10000.0))?, false)
            },
            |heads| c.dim_or("num_key_value_heads", Some(heads)),
        )?;
        let attention_bias = c.bool_or("attention_bias", false)?;
        let decoder = DecoderArgs {
            qkv_bias: attention_bias,
            o_bias: attention_bias,
            mlp_bias: c.bool_or("mlp_bias", false)?,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", true)?,
            ..decoder
        };
        let float = |key: &str| -> crate::Result<f32> { Ok(c.float_or(key, 1.0)? as f32) };
        Ok(GraniteArgs {
            decoder,
            embedding_multiplier: float("embedding_multiplier")?,
            residual_multiplier: float("residual_multiplier")?,
            attention_multiplier: float("attention_multiplier")?,
            logits_scaling: float("logits_scaling")?,
        })
    }
}

/// Python: granite's `TransformerBlock` (and granitemoe's, whose channel mixer is the sparse
/// block under `block_sparse_moe`): `h = x + attn(input_layernorm(x)) * m`, then
/// `h + mlp(post_attention_layernorm(h)) * m`, `m` the residual multiplier.
#[derive(Debug, Clone)]
pub struct GraniteLayer<C = Mlp> {
    pub self_attn: Attention,
    /// Under the field the mixer names ([`ChannelMixer::KEY`]).
    pub mlp: C,
    pub input_layernorm: RMSNorm,
    pub post_attention_layernorm: RMSNorm,
    pub residual_multiplier: f32,
}

impl<C: ChannelMixer> TreeNode for GraniteLayer<C> {
    fn flatten<'a>(&'a self, f: &mut Flattener<'a>) {
        f.struct_node("GraniteLayer", |f| {
            f.field("self_attn", &self.self_attn);
            f.field(C::KEY, &self.mlp);
            f.field("input_layernorm", &self.input_layernorm);
            f.field("post_attention_layernorm", &self.post_attention_layernorm);
            f.static_field("residual_multiplier", &self.residual_multiplier);
        });
    }

    fn unflatten(u: &mut Unflattener<'_>) -> mlx_tree::Result<Self> {
        u.struct_node("GraniteLayer", |u| {
            Ok(GraniteLayer {
                self_attn: u.field("self_attn")?,
                mlp: u.field(C::KEY)?,
                input_layernorm: u.field("input_layernorm")?,
                post_attention_layernorm: u.field("post_attention_layernorm")?,
                residual_multiplier: u.static_field("residual_multiplier")?,
            })
        })
    }

    fn leaves_mut<F: FnMut(&mut Array)>(&mut self, f: &mut F) -> mlx_tree::Result<()> {
        self.self_attn.leaves_mut(f)?;
        self.mlp.leaves_mut(f)?;
        self.input_layernorm.leaves_mut(f)?;
        self.post_attention_layernorm.leaves_mut(f)
    }
}

impl<C: ChannelMixer> Layer for GraniteLayer<C> {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let m = self.residual_multiplier;
        let r = TokenMixer::forward(
            &self.self_attn,
            &self.input_layernorm.forward(x)?,
            ctx,
            cache,
        )?;
        let h = ops::add(x, &ops::multiply(&r, m)?)?;
        let r = self
            .mlp
            .forward(&self.post_attention_layernorm.forward(&h)?)?;
        ops::add(&h, &ops::multiply(&r, m)?)
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        self.self_attn.make_cache(batch, capacity, dtype)
    }
}

impl GraniteArgs {
    /// Granite's stack and head, each layer's channel mixer loaded by `mlp` from its path
    /// (`model.layers.{i}.` and [`ChannelMixer::KEY`]).
    pub(crate) fn load_stack<C: ChannelMixer>(
        &self,
        ck: &mut Checkpoint,
        options: &LoadOptions,
        mut mlp: impl FnMut(&mut Checkpoint, &str) -> crate::Result<C>,
    ) -> crate::Result<(LayerStack<GraniteLayer<C>>, Option<MaybeQuantizedLinear>)> {
        let d = &self.decoder;
        let (h, eps) = (d.hidden_size, d.rms_norm_eps);
        let mut layers = Vec::with_capacity(d.num_hidden_layers as usize);
        for i in 0..d.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            let attention: AttentionConfig = d.attention(i);
            let mut self_attn = Attention::load(ck, &p("self_attn"), &attention)?;
            self_attn.scale = self.attention_multiplier;
            layers.push(GraniteLayer {
                self_attn,
                mlp: mlp(ck, &p(C::KEY))?,
                input_layernorm: ck.rms_norm(&p("input_layernorm"), h, eps)?,
                post_attention_layernorm: ck.rms_norm(&p("post_attention_layernorm"), h, eps)?,
                residual_multiplier: self.residual_multiplier,
            });
        }
        let stack = Stack::load_around(
            ck,
            "model",
            (d.vocab_size, h),
            layers,
            |ck, path| ck.rms_norm(path, h, eps),
            options.kernels,
        )?
        .with_ends(StackEnds {
            embed_scale: Some(self.embedding_multiplier.into()),
            logits: Some(LogitsMap::Divide(self.logits_scaling.into())),
        });
        let lm_head = (!d.tie_word_embeddings)
            .then(|| ck.linear("lm_head", h, d.vocab_size, false))
            .transpose()?;
        Ok((stack, lm_head))
    }
}

/// Python: `GraniteModel`.
pub type GraniteModel = LayerStack<GraniteLayer>;

/// Python: `mlx_lm.models.granite.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Granite {
    pub model: GraniteModel,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Granite {
    pub fn args(c: &ModelConfig) -> crate::Result<GraniteArgs> {
        GraniteArgs::from_config(c)
    }

    /// Reads the config, sanitizes (Python: drops `lm_head.weight` when tied) and casts the
    /// tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Granite> {
        let a = Self::args(config)?;
        let d = &a.decoder;
        d.sanitize(ck);
        ck.cast(options.dtype, |_| false)?;
        let (model, lm_head) = a.load_stack(ck, options, |ck, path| {
            Mlp::load(ck, path, d.hidden_size, d.intermediate_size, d.mlp_bias)
        })?;
        Ok(Granite { model, lm_head })
    }
}

crate::models::base::stack_language_model!(Granite, model, "granite");
