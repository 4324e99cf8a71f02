//! `olmoe` (Python: `mlx_lm.models.olmoe`): attention whose queries and keys are
//! RMS-normalized over their whole projection (not per head) before the heads split, and a
//! sparse block in every layer (OLMoE-1B-7B): softmax router, top-k, optionally renormalized.

use mlx_nn::{Forward, MaybeQuantizedLinear, RMSNorm};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::attention::attend;
use crate::blocks::rows::{heads, merge_heads};
use crate::blocks::{
    rope_theta, DecoderModel, LayerContext, MoeConfig, RotaryEmbedding, Router, SparseMoe,
    TokenMixer,
};
use crate::cache::{KvCache, LayerCache};
use crate::checkpoint::Checkpoint;
use crate::config::{invalid, ModelConfig};
use crate::models::base::DecoderArgs;
use crate::models::sparse::{expert_counts, MoeArgs, SAME_NAMES};

/// Python: olmoe's `Attention`: `q_norm` / `k_norm` over `heads * head_dim` features.
#[derive(Debug, Clone, TreeNode)]
pub struct OlmoeAttention {
    pub q_proj: MaybeQuantizedLinear,
    pub k_proj: MaybeQuantizedLinear,
    pub v_proj: MaybeQuantizedLinear,
    pub o_proj: MaybeQuantizedLinear,
    pub q_norm: RMSNorm,
    pub k_norm: RMSNorm,
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

impl OlmoeAttention {
    fn load(ck: &mut Checkpoint, path: &str, d: &DecoderArgs) -> crate::Result<OlmoeAttention> {
        let (dim, h, kv, hd) = (
            d.hidden_size,
            d.num_attention_heads,
            d.num_key_value_heads,
            d.head_dim,
        );
        let p = |name: &str| format!("{path}.{name}");
        Ok(OlmoeAttention {
            q_proj: ck.linear(&p("q_proj"), dim, h * hd, d.qkv_bias)?,
            k_proj: ck.linear(&p("k_proj"), dim, kv * hd, d.qkv_bias)?,
            v_proj: ck.linear(&p("v_proj"), dim, kv * hd, d.qkv_bias)?,
            o_proj: ck.linear(&p("o_proj"), h * hd, dim, d.o_bias)?,
            q_norm: ck.rms_norm(&p("q_norm"), h * hd, d.rms_norm_eps)?,
            k_norm: ck.rms_norm(&p("k_norm"), kv * hd, d.rms_norm_eps)?,
            rope: d.rope.clone(),
            n_heads: h,
            n_kv_heads: kv,
            head_dim: hd,
            // Python: head_dim**-0.5, a Python float, rounded once to float32 by the call.
            scale: (hd as f64).powf(-0.5) as f32,
        })
    }
}

impl TokenMixer for OlmoeAttention {
    fn key(&self) -> &'static str {
        "self_attn"
    }

    fn accepts(key: &str) -> bool {
        key == "self_attn"
    }

    fn forward(
        &self,
        x: &Array,
        ctx: &LayerContext<'_>,
        cache: Option<&mut LayerCache>,
    ) -> Result<Array> {
        let rows = ctx.rows;
        let q = self.q_norm.forward(&self.q_proj.forward(x)?)?;
        let k = self.k_norm.forward(&self.k_proj.forward(x)?)?;
        let out = attend(
            heads(&q, rows, self.n_heads, None)?,
            heads(&k, rows, self.n_kv_heads, None)?,
            heads(&self.v_proj.forward(x)?, rows, self.n_kv_heads, None)?,
            Some(&self.rope),
            self.scale,
            ctx.masks.for_window(None),
            None,
            ctx.kernels.fused_decode_attention,
            cache,
        )?;
        self.o_proj.forward(&merge_heads(&out)?)
    }

    fn make_cache(&self, batch: i32, capacity: i32, dtype: Dtype) -> Result<LayerCache> {
        let (kv, hd) = (self.n_kv_heads, self.head_dim);
        Ok(LayerCache::Kv(KvCache::new(
            batch,
            kv,
            capacity,
            (hd, hd),
            dtype,
        )?))
    }
}

/// Python: `mlx_lm.models.olmoe.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Olmoe {
    pub model: DecoderModel<OlmoeAttention, SparseMoe>,
    /// The output projection; `None` with tied embeddings.
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl Olmoe {
    /// Python: olmoe's `ModelArgs`, over every key of transformers' `OlmoeConfig`. After
    /// transformers: `tie_word_embeddings` defaults to false (mlx_lm: true) and `head_dim`
    /// is hidden/heads unless given (mlx_lm reads one); `clip_qkv` (transformers clamps the
    /// projections; mlx_lm ignores it) must be off. mlx_lm's own `mlp_bias` (biases on the
    /// experts) and `attention_bias` (on all four projections) are read.
    pub fn args(c: &ModelConfig) -> crate::Result<MoeArgs> {
        c.require_value("clip_qkv", serde_json::Value::Null)?;
        c.declare_neutral(&["router_aux_loss_coef", "output_router_logits"]);
        let decoder = DecoderArgs::common(
            c,
            |hidden, heads| c.dim_or("head_dim", Some(hidden / heads)),
            |head_dim| {
                RotaryEmbedding::from_config(
                    c,
                    head_dim,
                    rope_theta(c, Some(10000.0))?,
                    c.bool_or("rope_traditional", false)?,
                )
            },
            |heads| c.dim_or("num_key_value_heads", Some(heads)),
        )?;
        let attention_bias = c.bool_or("attention_bias", false)?;
        let decoder = DecoderArgs {
            qkv_bias: attention_bias,
            o_bias: attention_bias,
            tie_word_embeddings: c.bool_or("tie_word_embeddings", false)?,
            ..decoder
        };
        let (top_k, experts) = expert_counts(c, "num_experts")?;
        Ok(MoeArgs {
            moe: MoeConfig {
                hidden_size: decoder.hidden_size,
                expert_size: decoder.intermediate_size,
                num_experts: experts,
                top_k,
                router: Router::SoftmaxTopKNegated {
                    norm_topk_prob: c.bool_or("norm_topk_prob", false)?,
                },
                expert_bias: c.bool_or("mlp_bias", false)?,
                shared_expert_size: None,
            },
            sparse: vec![true; decoder.num_hidden_layers as usize],
            decoder,
            experts_at: "mlp",
            expert_names: SAME_NAMES,
            quant_predicate: None,
        })
    }

    /// Reads the config, sanitizes (stacking per-expert tensors) and casts the tensors,
    /// builds the model.
    pub fn from_checkpoint(
        ck: &mut crate::Checkpoint,
        config: &ModelConfig,
        options: &crate::LoadOptions,
    ) -> crate::Result<Olmoe> {
        let args = Self::args(config)?;
        if args.decoder.num_attention_heads % args.decoder.num_key_value_heads != 0 {
            return Err(invalid(
                config.path(),
                &config.key("num_key_value_heads"),
                "must divide num_attention_heads",
            ));
        }
        args.sanitize(ck)?;
        ck.cast(options.dtype, |_| false)?;
        let (model, lm_head) = args.load_with(
            ck,
            options.kernels,
            |ck, path, _| OlmoeAttention::load(ck, &format!("{path}.self_attn"), &args.decoder),
            |ck, path, _| SparseMoe::load(ck, path, &args.moe),
        )?;
        Ok(Olmoe { model, lm_head })
    }
}

crate::models::base::stack_language_model!(Olmoe, model, "olmoe");
