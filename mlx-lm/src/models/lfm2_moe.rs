//! `lfm2_moe` (Python: `mlx_lm.models.lfm2_moe`): Liquid AI's LFM2-MoE (LFM2-8B-A1B):
//! lfm2's layers (gated short convolutions and attention, [`Lfm2DecoderLayer`]) with a dense
//! SwiGLU feed-forward block (`gate_proj`/`up_proj`/`down_proj`) in the first
//! `num_dense_layers` layers and a sparse one ([`Lfm2MoeSparseMoeBlock`]: a sigmoid router
//! whose `expert_bias` picks the experts but does not weigh them) in the others.

use mlx_nn::Frozen;
use mlx_nn::{Forward, MaybeQuantizedLinear};
use mlx_rs::{ops, Array, Dtype, Result};
use mlx_tree::TreeNode;

use crate::blocks::moe::top_k_last;
use crate::blocks::{FeedForward, Mlp, RotaryEmbedding, SwitchGlu};
use crate::cache::LayerCache;
use crate::checkpoint::{Checkpoint, LoadOptions};
use crate::config::{invalid, ModelConfig};
use crate::model::LanguageModel;
use crate::models::lfm2::{
    full_attn_idxs, lfm2_rope_theta, Lfm2, Lfm2Args, Lfm2DecoderLayer, Lfm2Model,
};
use crate::models::sparse::{expert_counts, stack_experts, SAME_NAMES};
use crate::quantization::QuantParams;

/// Python: lfm2_moe's `ModelArgs`: lfm2's layers ([`Lfm2Args`], the dense blocks'
/// width in `ff_dim`) and the sparse blocks.
#[derive(Debug, Clone)]
pub struct Lfm2MoeArgs {
    pub base: Lfm2Args,
    /// Each expert's hidden width.
    pub moe_intermediate_size: i32,
    pub num_experts: i32,
    pub num_experts_per_tok: i32,
    pub norm_topk_prob: bool,
    /// Whether the sparse blocks hold an `expert_bias` that shifts the router's choice.
    pub use_expert_bias: bool,
    /// The first layers, whose feed-forward block is dense.
    pub num_dense_layers: i32,
    pub routed_scaling_factor: f32,
}

impl Lfm2MoeArgs {
    /// Reads the config (Python: `ModelArgs.from_dict` and its `__post_init__`) over every
    /// key of transformers 5.23's `Lfm2MoeConfig`. Where the two differ this follows
    /// transformers, as lfm2 does: `layer_types`, where given, places the attention layers
    /// (mlx_lm takes `full_attn_idxs` first), `head_dim`, where given, is the heads' width
    /// (mlx_lm: hidden size / heads), and a RoPE scaling in `rope_scaling` /
    /// `rope_parameters` applies. `use_expert_bias`, `norm_topk_prob` and
    /// `routed_scaling_factor` default as transformers' (true, true, 1); mlx_lm requires the
    /// first two. The output head is the embeddings: a config that unties it is an error.
    pub fn from_config(c: &ModelConfig) -> crate::Result<Lfm2MoeArgs> {
        let required_float = |key: &str| -> crate::Result<f64> {
            c.float(key)?
                .ok_or_else(|| invalid(c.path(), &c.key(key), "missing"))
        };
        let required_bool = |key: &str| -> crate::Result<bool> {
            c.bool(key)?
                .ok_or_else(|| invalid(c.path(), &c.key(key), "missing"))
        };
        // Initialisation and training settings: the weights' initial draw, the router's
        // auxiliary outputs; max_position_embeddings sizes transformers' rope cache (a
        // llama3 or yarn rope that needs it reads it itself).
        c.declare_neutral(&[
            "initializer_range",
            "output_router_logits",
            "max_position_embeddings",
        ]);
        // transformers' MLP and experts compute SiLU (Lfm2MoeConfig has no activation key);
        // another one describes a model neither computes.
        c.require("hidden_act", r#""silu""#, |v| v == "silu" || v == "swish")?;
        c.require_value("tie_embedding", true)?;
        c.require_value("tie_word_embeddings", true)?;
        let hidden = c.dim("hidden_size")?;
        let heads = c.dim("num_attention_heads")?;
        let layers = c.dim("num_hidden_layers")?;
        let head_dim = c.dim_or("head_dim", Some(hidden / heads))?;
        let (top_k, experts) = expert_counts(c, "num_experts")?;
        let num_dense_layers = c.dim("num_dense_layers")?;
        if num_dense_layers > layers {
            return Err(invalid(
                c.path(),
                &c.key("num_dense_layers"),
                &format!("{num_dense_layers} dense layers of {layers}"),
            ));
        }
        Ok(Lfm2MoeArgs {
            base: Lfm2Args {
                vocab_size: c.dim("vocab_size")?,
                hidden_size: hidden,
                num_hidden_layers: layers,
                num_attention_heads: heads,
                num_key_value_heads: c.dim("num_key_value_heads")?,
                head_dim,
                norm_eps: required_float("norm_eps")? as f32,
                conv_bias: required_bool("conv_bias")?,
                conv_l_cache: c.dim("conv_L_cache")?,
                ff_dim: c.dim("intermediate_size")?,
                full_attn_idxs: full_attn_idxs(c, layers)?,
                rope: RotaryEmbedding::from_config(c, head_dim, lfm2_rope_theta(c)?, false)?,
            },
            moe_intermediate_size: c.dim("moe_intermediate_size")?,
            num_experts: experts,
            num_experts_per_tok: top_k,
            norm_topk_prob: c.bool_or("norm_topk_prob", true)?,
            use_expert_bias: c.bool_or("use_expert_bias", true)?,
            num_dense_layers,
            // Python: a float the multiply rounds to the scores' dtype (float32 here).
            routed_scaling_factor: c.float_or("routed_scaling_factor", 1.0)? as f32,
        })
    }
}

/// Python: `Lfm2MoeSparseMoeBlock`: the router `gate` (a linear layer, `[num_experts,
/// hidden]`), the experts `switch_mlp`, and with `use_expert_bias` the `expert_bias`
/// (`[num_experts]`, float32 whatever the model's dtype: the model's `cast_predicate`).
#[derive(Debug, Clone, TreeNode)]
pub struct Lfm2MoeSparseMoeBlock {
    pub gate: MaybeQuantizedLinear,
    pub switch_mlp: SwitchGlu,
    pub expert_bias: Option<Array>,
    #[tree(static)]
    pub top_k: i32,
    #[tree(static)]
    pub norm_topk_prob: bool,
    #[tree(static)]
    pub routed_scaling_factor: f32,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl Lfm2MoeSparseMoeBlock {
    /// Takes the block's tensors under `path` (`model.layers.2.feed_forward`).
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        a: &Lfm2MoeArgs,
    ) -> crate::Result<Lfm2MoeSparseMoeBlock> {
        let (d, e) = (a.base.hidden_size, a.num_experts);
        let p = |name: &str| format!("{path}.{name}");
        Ok(Lfm2MoeSparseMoeBlock {
            frozen: Frozen::default(),
            gate: ck.linear(&p("gate"), d, e, false)?,
            switch_mlp: SwitchGlu::load(
                ck,
                &p("switch_mlp"),
                d,
                a.moe_intermediate_size,
                e,
                false,
            )?,
            expert_bias: a
                .use_expert_bias
                .then(|| ck.array(&p("expert_bias"), &[e]))
                .transpose()?,
            top_k: a.num_experts_per_tok,
            norm_topk_prob: a.norm_topk_prob,
            routed_scaling_factor: a.routed_scaling_factor,
        })
    }

    /// The experts `[..., k]` and their weights `[..., k]` (in `dtype`) of rows `x`, op for
    /// op as mlx_lm: sigmoid scores; the top k of the scores in float32 plus the bias
    /// (`argpartition(kth=-k)[..., -k:]`), or of the scores alone; their unbiased scores,
    /// with `norm_topk_prob` divided by their sum plus 1e-6, times `routed_scaling_factor`.
    pub fn route(&self, x: &Array) -> Result<(Array, Array)> {
        let routing_weights = ops::sigmoid(&self.gate.forward(x)?)?;
        let k = self.top_k;
        let inds = match &self.expert_bias {
            Some(bias) => top_k_last(
                &ops::add(&routing_weights.astype(Dtype::Float32)?, bias)?,
                k,
            )?,
            None => top_k_last(&routing_weights, k)?,
        };
        let inds = ops::stop_gradient(&inds)?;
        let mut scores = ops::take_along_axis(&routing_weights, &inds, -1)?;
        if self.norm_topk_prob {
            let total = ops::add(&scores.sum(-1, true)?, 1e-6f32)?;
            scores = ops::divide(&scores, &total)?;
        }
        let scores = ops::multiply(&scores, self.routed_scaling_factor)?.astype(x.dtype())?;
        Ok((inds, scores))
    }
}

impl Forward for Lfm2MoeSparseMoeBlock {
    /// `sum_k score_k * expert_k(x)` on rows `[N, hidden]`.
    fn forward(&self, x: &Array) -> Result<Array> {
        let (inds, scores) = self.route(x)?;
        let y = self.switch_mlp.forward(x, &inds)?;
        ops::multiply(&y, &ops::expand_dims(&scores, -1)?)?.sum(-2, false)
    }
}

/// Python: `mlx_lm.models.lfm2_moe.Model`.
#[derive(Debug, Clone, TreeNode)]
pub struct Lfm2Moe {
    pub model: Lfm2Model<FeedForward<Lfm2MoeSparseMoeBlock>>,
}

/// Liquid AI's names for the SwiGLU projections against mlx_lm's.
const RENAMES: [(&str, &str); 3] = [("w1", "gate_proj"), ("w2", "down_proj"), ("w3", "up_proj")];

impl Lfm2Moe {
    /// Python: `Model.sanitize`: lfm2's (convolution weights `[C, 1, K]` become `[C, K,
    /// 1]`), the projections `w1` / `w2` / `w3` renamed `gate_proj` / `down_proj` /
    /// `up_proj`, and each sparse layer's experts `feed_forward.experts.{e}.*` stacked into
    /// `feed_forward.switch_mlp.*`. mlx_lm renames and stacks the `weight` tensors only;
    /// here also a quantized checkpoint's `scales` / `biases` (which mlx_lm would leave
    /// unloadable).
    pub fn sanitize(ck: &mut Checkpoint, a: &Lfm2MoeArgs) -> crate::Result<()> {
        Lfm2::sanitize(ck)?;
        let keys: Vec<String> = ck
            .weights_mut()
            .keys()
            .into_iter()
            .map(str::to_string)
            .collect();
        for key in keys {
            let renamed = RENAMES.iter().fold(key.clone(), |k, (from, to)| {
                ["weight", "scales", "biases"].iter().fold(k, |k, t| {
                    k.replace(&format!("{from}.{t}"), &format!("{to}.{t}"))
                })
            });
            if renamed != key {
                ck.weights_mut().rename(&key, renamed);
            }
        }
        stack_experts(
            ck,
            "model",
            a.base.num_hidden_layers,
            "feed_forward",
            &SAME_NAMES,
            a.num_experts,
        )
    }

    /// Reads the config, sanitizes and casts the tensors (the expert biases stay float32),
    /// builds the model.
    pub fn from_checkpoint(
        ck: &mut Checkpoint,
        config: &ModelConfig,
        options: &LoadOptions,
    ) -> crate::Result<Lfm2Moe> {
        let a = Lfm2MoeArgs::from_config(config)?;
        Self::sanitize(ck, &a)?;
        ck.cast(options.dtype, |k| k.contains("expert_bias"))?;
        ck.set_quant_predicate(router_at_8_bits);
        let model = Lfm2Model::load(ck, &a.base, options.kernels, |ck, path, i| {
            Lfm2DecoderLayer::load_with(ck, path, i, &a.base, |ck, path| {
                Ok(if i < a.num_dense_layers {
                    FeedForward::Dense(Mlp::load(
                        ck,
                        path,
                        a.base.hidden_size,
                        a.base.ff_dim,
                        false,
                    )?)
                } else {
                    FeedForward::Sparse(Lfm2MoeSparseMoeBlock::load(ck, path, &a)?)
                })
            })
        })?;
        Ok(Lfm2Moe { model })
    }
}

/// Python: lfm2_moe's `quant_predicate`: the routers (`feed_forward.gate`) at 8 bits in
/// groups of 64, whatever the rest is quantized to.
fn router_at_8_bits(path: &str) -> Option<QuantParams> {
    path.ends_with("feed_forward.gate")
        .then_some(QuantParams::affine(64, 8))
}

impl LanguageModel for Lfm2Moe {
    fn forward(&self, inputs: &Array, cache: Option<&mut [LayerCache]>) -> Result<Array> {
        self.model.logits(inputs, cache)
    }

    fn make_cache(&self, batch: i32, capacity: i32) -> Result<Vec<LayerCache>> {
        self.model.make_cache(batch, capacity)
    }

    fn dtype(&self) -> Dtype {
        self.model.dtype()
    }

    fn vocab_size(&self) -> i32 {
        self.model.vocab_size()
    }

    fn model_type(&self) -> &str {
        "lfm2_moe"
    }
}
