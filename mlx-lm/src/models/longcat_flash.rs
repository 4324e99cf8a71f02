//! `longcat_flash` (Python: `mlx_lm.models.longcat_flash`): Meituan's LongCat-Flash. Each of
//! its `num_layers` layers holds two attention sub-blocks, each DeepSeek-V3's multi-head
//! latent attention ([`Mla`], with LongCat's LoRA scales) followed by a dense SwiGLU MLP
//! (`mlps.i`), and one shortcut-connected mixture of experts (`mlp`, [`ZeroExpertMoe`]): it
//! reads the first sub-block's normed output and its result is added after the second. Its
//! router picks among the routed experts and as many zero-computation (identity) experts.
//! Parameters under `model.*` (`embed_tokens`, `layers.i.{self_attn.j, mlps.j,
//! input_layernorm.j, post_attention_layernorm.j, mlp}`, `norm`) and `lm_head`; each layer's
//! cache is a [`LayerCache::List`] of its two latent caches (Python: `CacheList(KVCache(),
//! KVCache())`).
//!
//! Where this port follows transformers' `LongcatFlash` (5.23) rather than mlx_lm 0.32.2:
//! - `q_a_layernorm` and `kv_a_layernorm` normalize at eps 1e-6 (transformers' and
//!   DeepSeek's; mlx_lm builds them as `nn.RMSNorm`, eps 1e-5);
//! - a config without mlx_lm's own keys (`attention_method`, `zero_expert_type`,
//!   `mla_scale_q_lora`, `mla_scale_kv_lora`, none of which transformers writes) takes
//!   transformers' fixed behaviour: MLA, identity zero experts, both LoRA scales; and absent
//!   keys take `LongcatFlashConfig`'s defaults (`rope_theta` 1e7 among them).
//!
//! Kept as mlx_lm computes it: the router in the model's dtype (transformers computes it in
//! float32, as it does for DeepSeek-V3, which this crate's deepseek_v3 also runs as mlx_lm
//! does), and `norm_topk_prob` and `router_bias`, which mlx_lm reads and transformers'
//! forward ignores (its classifier has the bias but its product leaves it out).

use mlx_nn::{Forward, MaybeQuantizedEmbedding, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::mla::{split_kv_b_proj, Mla, MlaConfig};
use crate::blocks::moe::{ZeroExpertConfig, ZeroExpertMoe};
use crate::blocks::rows::wrong_input;
use crate::blocks::{
    forward_layers, rope_theta, Layer, LayerContext, Mlp, RotaryEmbedding, Rows, TokenMixer,
};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::kernels::KernelOptions;
use crate::models::base::own_stack_language_model;
use crate::models::deepseek_v3::mla_config;
use crate::models::sparse::{stack_experts, SAME_NAMES};
use crate::quantization::QuantParams;

/// Python: longcat_flash's `ModelArgs`, as the layers use it.
#[derive(Debug, Clone)]
pub struct LongcatFlashArgs {
    pub vocab_size: i32,
    pub hidden_size: i32,
    /// Layers of two sub-blocks each (transformers' `num_hidden_layers` is twice this).
    pub num_layers: i32,
    pub rms_norm_eps: f32,
    /// The dense MLPs' width (`ffn_hidden_size`).
    pub ffn_hidden_size: i32,
    pub attention: MlaConfig,
    pub moe: ZeroExpertConfig,
}

impl LongcatFlashArgs {
    /// Reads the keys of mlx_lm's `ModelArgs` and transformers' `LongcatFlashConfig`.
    pub fn from_config(c: &ModelConfig) -> crate::Result<LongcatFlashArgs> {
        c.require_value("attention_method", "MLA")?;
        c.require_value("zero_expert_type", "identity")?;
        // transformers scales both always; mlx_lm fails without them (it reads attributes
        // it sets only when they are true).
        c.require_value("mla_scale_q_lora", true)?;
        c.require_value("mla_scale_kv_lora", true)?;
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        c.require_value("tie_word_embeddings", false)?;
        // Dropout is off at inference; initializer_range only draws weights a checkpoint
        // replaces; the router-logits output does not enter the forward; every head reads
        // the one latent (num_key_value_heads); the rope's table length is not used by
        // its default or yarn frequencies.
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "max_position_embeddings",
            "output_router_logits",
            "num_key_value_heads",
        ]);
        let hidden_size = c.dim("hidden_size")?;
        let num_layers = c.dim("num_layers")?;
        // transformers derives it (a property); a config that writes it must agree.
        c.require_value("num_hidden_layers", 2 * num_layers)?;
        let mut attention = mla_config(c, hidden_size)?;
        if attention.q_lora_rank.is_none() {
            return Err(invalid(
                c.path(),
                &c.key("q_lora_rank"),
                "LongCat-Flash's attention needs a low-rank query (mlx_lm and transformers \
                 scale it by hidden_size / q_lora_rank)",
            ));
        }
        // LongcatFlashConfig's default base (mla_config's is DeepSeek's 10000).
        attention.rope = RotaryEmbedding::from_config(
            c,
            attention.qk_rope_head_dim,
            rope_theta(c, Some(10_000_000.0))?,
            true,
        )?;
        let num_experts = c.dim("n_routed_experts")?;
        // Zero is a valid count here (no identity experts), where `dim` wants a size.
        let zero_experts = c.usize("zero_expert_num")?.unwrap_or(0);
        let zero_experts = i32::try_from(zero_experts)
            .map_err(|_| invalid(c.path(), &c.key("zero_expert_num"), "does not fit an i32"))?;
        let top_k = c.dim("moe_topk")?;
        if top_k > num_experts + zero_experts {
            return Err(invalid(
                c.path(),
                &c.key("moe_topk"),
                &format!(
                    "{top_k} experts per token, but only {num_experts} + {zero_experts} experts"
                ),
            ));
        }
        Ok(LongcatFlashArgs {
            vocab_size: c.dim("vocab_size")?,
            hidden_size,
            num_layers,
            rms_norm_eps: c.float_or("rms_norm_eps", 1e-5)? as f32,
            ffn_hidden_size: c.dim("ffn_hidden_size")?,
            attention,
            moe: ZeroExpertConfig {
                hidden_size,
                expert_size: c.dim("expert_ffn_hidden_size")?,
                num_experts,
                zero_experts,
                top_k,
                norm_topk_prob: c.bool_or("norm_topk_prob", false)?,
                router_bias: c.bool_or("router_bias", false)?,
                routed_scaling_factor: c.float_or("routed_scaling_factor", 6.0)? as f32,
            },
        })
    }

    /// Python: longcat_flash's `sanitize`: each layer's per-expert tensors stacked into
    /// `mlp.switch_mlp`, each attention sub-block's `kv_b_proj` split into `embed_q` /
    /// `unembed_out`, the multi-token prediction layers (`model.mtp.*`) and precomputed
    /// rotary frequencies dropped.
    pub fn sanitize(&self, ck: &mut Checkpoint) -> crate::Result<()> {
        ck.weights_mut()
            .retain(|k, _| !(k.starts_with("model.mtp") || k.contains("rotary_emb.inv_freq")));
        stack_experts(
            ck,
            "model",
            self.num_layers,
            "mlp",
            &SAME_NAMES,
            self.moe.num_experts,
        )?;
        for l in 0..self.num_layers {
            for i in 0..2 {
                split_kv_b_proj(
                    ck,
                    &format!("model.layers.{l}.self_attn.{i}"),
                    &self.attention,
                )?;
            }
        }
        Ok(())
    }

    /// The layers under `model.layers`.
    pub fn load_layers(&self, ck: &mut Checkpoint) -> crate::Result<Vec<LongcatFlashDecoderLayer>> {
        (0..self.num_layers)
            .map(|i| LongcatFlashDecoderLayer::load(ck, &format!("model.layers.{i}"), self))
            .collect()
    }
}

/// Python: longcat_flash's `quant_predicate`: the routers' classifiers at 8 bits in groups
/// of 64, whatever the rest is quantized to.
pub(crate) fn classifier_at_8_bits(path: &str) -> Option<QuantParams> {
    path.ends_with("classifier")
        .then_some(QuantParams::affine(64, 8))
}

/// Python: `LongcatFlashDecoderLayer`: two sub-blocks `h += self_attn[i](input_layernorm[i]
/// (h))`, `h += mlps[i](post_attention_layernorm[i](h))`; the experts (`mlp`) read the first
/// sub-block's `post_attention_layernorm[0]` output and their result joins after the second.
#[derive(Debug, Clone, TreeNode)]
pub struct LongcatFlashDecoderLayer {
    pub mlp: ZeroExpertMoe,
    pub self_attn: Vec<Mla>,
    pub mlps: Vec<Mlp>,
    pub input_layernorm: Vec<RMSNorm>,
    pub post_attention_layernorm: Vec<RMSNorm>,
}

impl LongcatFlashDecoderLayer {
    /// Takes a layer's tensors under `path`.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        a: &LongcatFlashArgs,
    ) -> crate::Result<LongcatFlashDecoderLayer> {
        let p = |name: &str, i: i32| format!("{path}.{name}.{i}");
        let (d, eps) = (a.hidden_size, a.rms_norm_eps);
        let mut layer = LongcatFlashDecoderLayer {
            mlp: ZeroExpertMoe::load(ck, &format!("{path}.mlp"), &a.moe)?,
            self_attn: Vec::with_capacity(2),
            mlps: Vec::with_capacity(2),
            input_layernorm: Vec::with_capacity(2),
            post_attention_layernorm: Vec::with_capacity(2),
        };
        for i in 0..2 {
            layer
                .self_attn
                .push(Mla::load_lora_scaled(ck, &p("self_attn", i), &a.attention)?);
            layer
                .mlps
                .push(Mlp::load(ck, &p("mlps", i), d, a.ffn_hidden_size, false)?);
            layer
                .input_layernorm
                .push(ck.rms_norm(&p("input_layernorm", i), d, eps)?);
            layer.post_attention_layernorm.push(ck.rms_norm(
                &p("post_attention_layernorm", i),
                d,
                eps,
            )?);
        }
        Ok(layer)
    }
}

impl LongcatFlashDecoderLayer {
    /// Python (the model's `shard`): both latent attentions by heads ([`Mla::shard`]), both
    /// dense MLPs by hidden features ([`Mlp::shard`]), the routed experts by theirs
    /// ([`ZeroExpertMoe::shard`]).
    pub(crate) fn shard(&mut self, group: &mlx_rs::distributed::Group) -> Result<()> {
        for attention in &mut self.self_attn {
            attention.shard(group)?;
        }
        for mlp in &mut self.mlps {
            mlp.shard(group)?;
        }
        self.mlp.shard(group)
    }
}

impl Layer for LongcatFlashDecoderLayer {
    type Carry = ();

    fn forward(
        &self,
        x: &Array,
        _carry: &mut (),
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let mut caches: [Option<&mut LayerCache>; 2] = match cache {
            None => [None, None],
            Some(LayerCache::List(caches)) if caches.len() == 2 => {
                let (first, second) = caches.split_at_mut(1);
                [Some(&mut first[0]), Some(&mut second[0])]
            }
            Some(other) => {
                return Err(wrong_input(&format!(
                    "a longcat_flash layer needs a CacheList of two KVCaches, got a {}",
                    other.class_name()
                )))
            }
        };
        let mut h = x.clone();
        let mut shortcut = None;
        for (i, cache) in caches.iter_mut().enumerate() {
            let normed = self.input_layernorm[i].forward(&h)?;
            let attention = self.self_attn[i].forward(&normed, ctx.rows, cache.as_deref_mut())?;
            h = ops::add(&h, &attention)?;
            let normed = self.post_attention_layernorm[i].forward(&h)?;
            if i == 0 {
                shortcut = Some(self.mlp.forward(&normed)?);
            }
            h = ops::add(&h, &self.mlps[i].forward(&normed)?)?;
        }
        match shortcut {
            Some(s) => ops::add(&h, &s),
            None => Ok(h),
        }
    }

    /// Python: `CacheList(KVCache(), KVCache())`: each sub-block's compressed cache.
    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        Ok(LayerCache::List(
            self.self_attn
                .iter()
                .map(|a| TokenMixer::make_cache(a, batch, capacity, dtype))
                .collect::<Result<_>>()?,
        ))
    }
}

/// Python: `LongcatFlashModel`.
#[derive(Debug, Clone, TreeNode)]
pub struct LongcatFlashModel {
    pub embed_tokens: MaybeQuantizedEmbedding,
    pub layers: Vec<LongcatFlashDecoderLayer>,
    pub norm: RMSNorm,
    /// The custom kernels this model may use.
    #[tree(static)]
    pub kernels: KernelOptions,
}

/// Python: `mlx_lm.models.longcat_flash.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct LongcatFlash {
    pub model: LongcatFlashModel,
    pub lm_head: MaybeQuantizedLinear,
}

impl LongcatFlash {
    /// Reads the config ([`LongcatFlashArgs::from_config`]).
    pub fn args(config: &ModelConfig) -> crate::Result<LongcatFlashArgs> {
        LongcatFlashArgs::from_config(config)
    }

    /// Reads the config, sanitizes and casts the tensors (the correction biases stay
    /// float32, mlx_lm's `cast_predicate`), builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<LongcatFlash> {
        let a = Self::args(config)?;
        a.sanitize(ck)?;
        ck.cast(options.dtype, |k| k.contains("e_score_correction_bias"))?;
        ck.set_quant_predicate(classifier_at_8_bits);
        let layers = a.load_layers(ck)?;
        Ok(LongcatFlash {
            model: LongcatFlashModel {
                embed_tokens: ck.embedding("model.embed_tokens", a.vocab_size, a.hidden_size)?,
                layers,
                norm: ck.rms_norm("model.norm", a.hidden_size, a.rms_norm_eps)?,
                kernels: options.kernels,
            },
            lm_head: ck.linear("lm_head", a.hidden_size, a.vocab_size, false)?,
        })
    }
}

own_stack_language_model!(
    LongcatFlash,
    "longcat_flash",
    layers: |m| &m.model.layers,
    embedding: |m| &m.model.embed_tokens,
    fn forward(&self, inputs, cache) {
        let m = &self.model;
        let rows = Rows::of(inputs)?;
        let h = m.embed_tokens.forward(&rows.fold(inputs)?)?;
        let h = forward_layers(&m.layers, h, rows, m.kernels, cache)?;
        rows.unfold(&self.lm_head.forward(&m.norm.forward(&h)?)?)
    },
    fn shard(&mut self, group) {
        shard_layers(&mut self.model.layers, group, "longcat_flash")
    }
);

/// Tensor parallelism over `group` for a stack of LongCat layers (longcat_flash and, with its
/// n-gram embeddings whole, longcat_flash_ngram): split copies, kept only if every layer
/// splits, so that on an error the model stays whole.
pub(crate) fn shard_layers(
    layers: &mut Vec<LongcatFlashDecoderLayer>,
    group: &mlx_rs::distributed::Group,
    model_type: &str,
) -> Result<()> {
    let mut split = layers.clone();
    let result = split.iter_mut().try_for_each(|l| l.shard(group));
    crate::distributed::split_stack("tensor", model_type, Some(result))?;
    *layers = split;
    Ok(())
}
