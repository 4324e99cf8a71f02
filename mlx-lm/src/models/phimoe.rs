//! `phimoe` (Python: `mlx_lm.models.phimoe`): a pre-LayerNorm decoder (weight and bias) with
//! biased attention projections and head, every layer's MLP a sparse block under
//! `block_sparse_moe` routed by the inference path of Hugging Face's `sparsemixer`
//! ([`sparsemixer`]) (Phi-3.5-MoE, Phi-mini-MoE).

use mlx_nn::{Forward, LayerNorm, MaybeQuantizedLinear};
use mlx_rs::ops;
use mlx_rs::{Array, Result};
use mlx_tree::TreeNode;

use crate::blocks::{
    plain_rope, rope_theta, Attention, AttentionConfig, ChannelMixer, DecoderLayer, LayerStack,
    RotaryEmbedding, Stack, SwitchGlu,
};
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::models::sparse::{expert_counts, stack_experts};

/// Python: phimoe's `Attention.rope`: with a non-null `rope_scaling`, `SuScaledRoPE(head_dim,
/// base, max_position_embeddings, original_max_position_embeddings, short_factor,
/// long_factor, short_mscale, long_mscale)`, the positions limits from the config's top level
/// (mlx_lm's defaults 131072 and 4096) and all four scaling entries required (Python indexes
/// them), whatever the scaling's `type` says (mlx_lm does not read it); else the plain rope.
pub fn su_scaled_rope(c: &ModelConfig, head_dim: i32, base: f64) -> crate::Result<RotaryEmbedding> {
    let Some(s) = c.section("rope_scaling") else {
        return plain_rope(c, head_dim, base, false);
    };
    // mlx_lm builds SuScaledRoPE for any scaling: its type, and transformers' copy of the
    // position limit inside it, go unread.
    s.declare_neutral(&["type", "rope_type", "original_max_position_embeddings"]);
    let factors = |name: &str| -> crate::Result<Vec<f32>> {
        let v = s.get(name).cloned().unwrap_or(serde_json::Value::Null);
        v.as_array()
            .and_then(|l| l.iter().map(|x| x.as_f64().map(|x| x as f32)).collect())
            .filter(|l: &Vec<f32>| l.len() as i32 == head_dim / 2)
            .ok_or_else(|| {
                invalid(
                    c.path(),
                    &s.key(name),
                    &format!(
                        "expected {} numbers (head_dim / 2), found {v}",
                        head_dim / 2
                    ),
                )
            })
    };
    let number = |name: &str| -> crate::Result<f64> {
        s.float(name)?.ok_or_else(|| {
            invalid(
                c.path(),
                &s.key(name),
                "missing (phimoe's long rope reads it)",
            )
        })
    };
    let long = factors("long_factor")?;
    // Read and checked as Python reads them; SuScaledRoPE never uses them.
    factors("short_factor")?;
    number("short_mscale")?;
    let long_mscale = number("long_mscale")?;
    let max = c.float("max_position_embeddings")?.unwrap_or(131072.0);
    let original = c
        .float("original_max_position_embeddings")?
        .unwrap_or(4096.0);
    RotaryEmbedding::su_scaled(head_dim, base, long, max, original, Some(long_mscale)).map_err(
        |source| crate::Error::Mlx {
            path: c.path().to_path_buf(),
            source,
        },
    )
}

/// Python: phimoe's `sparsemixer` (the inference path of Hugging Face's): `top_k` rounds,
/// each taking the best remaining expert and, as its weight, its probability under a softmax
/// over the remaining experts whose logits lie within `2 * jitter_eps` (relative to
/// `max(|gates|, top)`) of its own; the expert then masked to `-inf` for the next round. The
/// experts `[..., top_k]` (`uint32`) and weights in the gates' dtype.
pub fn sparsemixer(gates: &Array, top_k: i32, jitter_eps: f64) -> Result<(Array, Array)> {
    let dtype = gates.dtype();
    // Python floats meet the arrays in the arrays' dtype.
    let threshold = Array::from_scalar((2.0 * jitter_eps) as f32).astype(dtype)?;
    let minus_inf = Array::from_scalar(f32::NEG_INFINITY).astype(dtype)?;
    let mut masked = gates.clone();
    let (mut inds, mut scores) = (Vec::new(), Vec::new());
    for _ in 0..top_k {
        let top = ops::max(&masked, -1, true)?;
        let ind = ops::stop_gradient(&ops::argmax(&masked, -1, true)?)?;
        let factor = ops::maximum(&ops::abs(gates)?, &top)?;
        let far = ops::greater(
            &ops::divide(&ops::subtract(&top, gates)?, &factor)?,
            &threshold,
        )?;
        let band = ops::where_(&far, &minus_inf, &masked)?;
        let band = ops::softmax(&band, -1, true)?;
        scores.push(ops::take_along_axis(&band, &ind, -1)?);
        masked = ops::put_along_axis(&masked, &ind, &minus_inf, -1)?;
        inds.push(ind);
    }
    Ok((ops::concatenate(&inds, -1)?, ops::concatenate(&scores, -1)?))
}

/// Python: `PhiMoESparseMoeBlock`: the router's logits (`gate`), [`sparsemixer`], the
/// experts (`switch_mlp`) summed by the weights.
#[derive(Debug, Clone, TreeNode)]
pub struct PhiMoeSparseMoeBlock {
    pub gate: MaybeQuantizedLinear,
    pub switch_mlp: SwitchGlu,
    #[tree(static)]
    pub top_k: i32,
    #[tree(static)]
    pub jitter_eps: f64,
}

impl ChannelMixer for PhiMoeSparseMoeBlock {
    const KEY: &'static str = "block_sparse_moe";
}

impl Forward for PhiMoeSparseMoeBlock {
    fn forward(&self, x: &Array) -> Result<Array> {
        let (inds, scores) = sparsemixer(&self.gate.forward(x)?, self.top_k, self.jitter_eps)?;
        let y = self.switch_mlp.forward(x, &inds)?;
        ops::multiply(&y, &ops::expand_dims(&scores, -1)?)?.sum(-2, false)
    }
}

/// Python: `PhiMoEDecoderLayer`: `h = x + attn(input_layernorm(x))`, then
/// `h + block_sparse_moe(post_attention_layernorm(h))`.
pub type PhiMoeLayer = DecoderLayer<Attention, PhiMoeSparseMoeBlock, LayerNorm>;

/// Python: `PhiMoEModel`.
pub type PhiMoeModel = LayerStack<PhiMoeLayer, LayerNorm>;

/// What a phimoe config describes.
#[derive(Debug, Clone)]
pub struct PhiMoeArgs {
    pub attention: AttentionConfig,
    pub vocab_size: i32,
    pub num_hidden_layers: i32,
    pub intermediate_size: i32,
    pub eps: f32,
    pub num_experts: i32,
    pub top_k: i32,
    pub jitter_eps: f64,
}

/// Python: `mlx_lm.models.phimoe.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct PhiMoe {
    pub model: PhiMoeModel,
    pub lm_head: Option<MaybeQuantizedLinear>,
}

impl PhiMoe {
    /// Python: phimoe's `ModelArgs`, over every key of transformers' `PhimoeConfig`. mlx_lm
    /// always biases the attention and the head and never slides: `attention_bias` /
    /// `lm_head_bias` false, or a `sliding_window` shorter than `max_position_embeddings`,
    /// is an error naming the key. A `rope_scaling` (Phi-3.5-MoE's `longrope`) is mlx_lm's
    /// `SuScaledRoPE` ([`su_scaled_rope`]); without one (Phi-mini-MoE) the rope is the plain
    /// one.
    pub fn args(c: &ModelConfig) -> crate::Result<PhiMoeArgs> {
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        c.require_value("attention_bias", true)?;
        c.require_value("lm_head_bias", true)?;
        c.require_value("tie_word_embeddings", false)?;
        // Training only: dropout, weight init, the router's auxiliary loss, its logits output
        // and the input jitter; the position limits size only the long rope (read there).
        c.declare_neutral(&[
            "attention_dropout",
            "initializer_range",
            "output_router_logits",
            "router_aux_loss_coef",
            "input_jitter_noise",
            "original_max_position_embeddings",
        ]);
        let max_positions = c.usize("max_position_embeddings")?.unwrap_or(131072);
        if let Some(window) = c.usize("sliding_window")? {
            if window < max_positions {
                return Err(invalid(
                    c.path(),
                    &c.key("sliding_window"),
                    &format!(
                        "{window} is not supported by phimoe (supported: null, or at least \
                         max_position_embeddings, {max_positions}: mlx_lm never slides)"
                    ),
                ));
            }
        }
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let head_dim = hidden / heads;
        let rope = su_scaled_rope(c, head_dim, rope_theta(c, Some(10000.0))?)?;
        let (top_k, num_experts) = expert_counts(c, "num_local_experts")?;
        Ok(PhiMoeArgs {
            attention: AttentionConfig {
                hidden_size: hidden,
                num_heads: heads,
                num_kv_heads: c.dim_or("num_key_value_heads", Some(heads))?,
                head_dim,
                qkv_bias: true,
                o_bias: true,
                qk_norm: None,
                output_gate: false,
                rope: Some(rope),
                sliding_window: None,
            },
            vocab_size: c.dim("vocab_size")?,
            num_hidden_layers: c.dim("num_hidden_layers")?,
            intermediate_size: c.dim("intermediate_size")?,
            eps: c.float_or("rms_norm_eps", 1e-5)? as f32,
            num_experts,
            top_k,
            jitter_eps: c.float_or("router_jitter_noise", 0.01)?,
        })
    }

    /// Python: phimoe's `sanitize`: each layer's `block_sparse_moe.experts.{e}.w1` / `w2` /
    /// `w3` stacked into `switch_mlp.gate_proj` / `down_proj` / `up_proj`; also precomputed
    /// rotary frequencies dropped.
    pub fn sanitize(ck: &mut Checkpoint, args: &PhiMoeArgs) -> crate::Result<()> {
        ck.weights_mut()
            .retain(|k, _| !k.contains("rotary_emb.inv_freq"));
        stack_experts(
            ck,
            "model",
            args.num_hidden_layers,
            "block_sparse_moe",
            &[("w1", "gate_proj"), ("w2", "down_proj"), ("w3", "up_proj")],
            args.num_experts,
        )
    }

    /// Reads the config, sanitizes and casts the tensors, builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<PhiMoe> {
        let a = Self::args(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |_| false)?;
        let h = a.attention.hidden_size;
        let mut layers = Vec::with_capacity(a.num_hidden_layers as usize);
        for i in 0..a.num_hidden_layers {
            let p = |name: &str| format!("model.layers.{i}.{name}");
            let moe = p("block_sparse_moe");
            layers.push(PhiMoeLayer {
                mixer: Attention::load(ck, &p("self_attn"), &a.attention)?,
                mlp: PhiMoeSparseMoeBlock {
                    gate: ck.linear(&format!("{moe}.gate"), h, a.num_experts, false)?,
                    switch_mlp: SwitchGlu::load(
                        ck,
                        &format!("{moe}.switch_mlp"),
                        h,
                        a.intermediate_size,
                        a.num_experts,
                        false,
                    )?,
                    top_k: a.top_k,
                    jitter_eps: a.jitter_eps,
                },
                input_layernorm: ck.layer_norm(&p("input_layernorm"), h, a.eps, true)?,
                post_attention_layernorm: ck.layer_norm(
                    &p("post_attention_layernorm"),
                    h,
                    a.eps,
                    true,
                )?,
            });
        }
        Ok(PhiMoe {
            model: Stack::load_around(
                ck,
                "model",
                (a.vocab_size, h),
                layers,
                |ck, path| ck.layer_norm(path, h, a.eps, true),
                options.kernels,
            )?,
            lm_head: Some(ck.linear("lm_head", h, a.vocab_size, true)?),
        })
    }
}

crate::models::base::stack_language_model!(PhiMoe, model, "phimoe");
