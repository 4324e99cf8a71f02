//! The sparse mixture-of-experts feed-forward block: a router picks each token's top-k
//! experts and their weights, the experts ([`SwitchGlu`]) run on the routed tokens only, and
//! their outputs are summed by weight; Qwen2-MoE adds a shared expert behind a sigmoid gate.
//! Each family's router is a small function here, op for op as its mlx_lm file writes it:
//! the order of the picked experts decides the order of the weighted sum, so with more than
//! two experts per token two ways of taking the same top k are not interchangeable bit for
//! bit.

use mlx_nn::Frozen;
use mlx_nn::{Forward, MaybeQuantizedLinear, ShardGroup};
use mlx_rs::distributed::Group;
use mlx_rs::ops::{self, Ellipsis};
use mlx_rs::{Array, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::blocks::decoder::ChannelMixer;
use crate::blocks::mlp::Mlp;
use crate::blocks::switch::SwitchGlu;
use crate::checkpoint::Checkpoint;

/// How a family's router turns the gate's logits `[..., E]` into `k` experts per token and
/// their weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, StaticData)]
pub enum Router {
    /// Qwen3-MoE: softmax over all experts, the top k by
    /// `argpartition(gates, kth=-k)[..., -k:]`, their probabilities, renormalized to sum to
    /// one with `norm_topk_prob`.
    SoftmaxTopK { norm_topk_prob: bool },
    /// Qwen2-MoE and OLMoE: softmax over all experts, the top k by
    /// `argpartition(-gates, kth=k-1)[..., :k]`, their probabilities (OLMoE: renormalized
    /// with `norm_topk_prob`).
    SoftmaxTopKNegated { norm_topk_prob: bool },
    /// Mixtral: the top k logits by `argpartition(-gates, kth=k-1)[..., :k]`, then a softmax
    /// over those k.
    TopKSoftmax,
    /// GPT-OSS: the top k logits by `argpartition(gates, kth=-k)[..., -k:]` (its `mlx_topk`),
    /// then a softmax over those k.
    TopKLastSoftmax,
}

/// The `k` largest along the last axis as mlx_lm's Qwen3-MoE takes them:
/// `argpartition(a, kth=-k)[..., -k:]`.
pub fn top_k_last(a: &Array, k: i32) -> Result<Array> {
    ops::argpartition(a, -k, -1)?.index((Ellipsis, -k..))
}

/// The `k` largest along the last axis as mlx_lm's Mixtral, Qwen2-MoE and OLMoE take them:
/// `argpartition(-a, kth=k-1)[..., :k]`.
pub fn top_k_first(a: &Array, k: i32) -> Result<Array> {
    ops::argpartition(&ops::negative(a)?, k - 1, -1)?.index((Ellipsis, ..k))
}

/// `scores / scores.sum(-1, keepdims=True)`.
fn renormalize(scores: &Array) -> Result<Array> {
    ops::divide(scores, &scores.sum(-1, true)?)
}

impl Router {
    /// The experts `[..., k]` and their weights `[..., k]` for the gate's logits `[..., E]`.
    pub fn route(self, logits: &Array, k: i32) -> Result<(Array, Array)> {
        let softmax_top_k = |pick: fn(&Array, i32) -> Result<Array>, norm: bool| {
            let gates = ops::softmax(logits, -1, true)?;
            let inds = ops::stop_gradient(&pick(&gates, k)?)?;
            let scores = ops::take_along_axis(&gates, &inds, -1)?;
            let scores = if norm { renormalize(&scores)? } else { scores };
            Ok((inds, scores))
        };
        let top_k_softmax = |pick: fn(&Array, i32) -> Result<Array>| {
            let inds = ops::stop_gradient(&pick(logits, k)?)?;
            let scores = ops::take_along_axis(logits, &inds, -1)?;
            Ok((inds, ops::softmax(&scores, -1, true)?))
        };
        match self {
            Router::SoftmaxTopK { norm_topk_prob } => softmax_top_k(top_k_last, norm_topk_prob),
            Router::SoftmaxTopKNegated { norm_topk_prob } => {
                softmax_top_k(top_k_first, norm_topk_prob)
            }
            Router::TopKSoftmax => top_k_softmax(top_k_first),
            Router::TopKLastSoftmax => top_k_softmax(top_k_last),
        }
    }
}

/// What a sparse block is: its experts and router.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoeConfig {
    pub hidden_size: i32,
    /// Each expert's hidden width (`moe_intermediate_size`; Mixtral's `intermediate_size`).
    pub expert_size: i32,
    pub num_experts: i32,
    pub top_k: i32,
    pub router: Router,
    /// Qwen2-MoE's shared expert: an MLP of this width every token goes through, scaled by
    /// `sigmoid(shared_expert_gate(x))`.
    pub shared_expert_size: Option<i32>,
    /// Biases on the experts' projections (OLMoE's `mlp_bias` as mlx_lm reads it).
    pub expert_bias: bool,
}

/// Python: `Qwen3MoeSparseMoeBlock` / `MixtralSparseMoeBlock` / `Qwen2MoeSparseMoeBlock` /
/// `OlmoeSparseMoeBlock`: `gate` (the router's logits), `switch_mlp` (the experts) and, with a
/// shared expert, `shared_expert` and `shared_expert_gate`.
#[derive(Debug, Clone, TreeNode)]
pub struct SparseMoe {
    pub gate: MaybeQuantizedLinear,
    pub switch_mlp: SwitchGlu,
    pub shared_expert: Option<Mlp>,
    pub shared_expert_gate: Option<MaybeQuantizedLinear>,
    #[tree(static)]
    pub top_k: i32,
    #[tree(static)]
    pub router: Router,
    /// The group the experts are split over ([`shard`](Self::shard)); `None`: whole.
    #[tree(static)]
    pub sharding_group: Option<ShardGroup>,
}

impl SparseMoe {
    /// Takes the block's tensors under `path` (`model.layers.0.mlp`).
    pub fn load(ck: &mut Checkpoint, path: &str, c: &MoeConfig) -> crate::Result<SparseMoe> {
        let (d, e) = (c.hidden_size, c.num_experts);
        let p = |name: &str| format!("{path}.{name}");
        let (shared_expert, shared_expert_gate) = match c.shared_expert_size {
            Some(size) => (
                Some(Mlp::load(ck, &p("shared_expert"), d, size, false)?),
                Some(ck.linear(&p("shared_expert_gate"), d, 1, false)?),
            ),
            None => (None, None),
        };
        Ok(SparseMoe {
            gate: ck.linear(&p("gate"), d, e, false)?,
            switch_mlp: SwitchGlu::load(ck, &p("switch_mlp"), d, c.expert_size, e, c.expert_bias)?,
            shared_expert,
            shared_expert_gate,
            top_k: c.top_k,
            router: c.router,
            sharding_group: None,
        })
    }

    /// Python (qwen3_moe's and mixtral's-style `shard`, deepseek_v3's for the shared
    /// experts): every expert, and the shared expert, keeps this process's slice of its
    /// hidden features in place ([`SwitchGlu::shard_inplace`], [`Mlp::shard_inplace`]); the
    /// router and the shared expert's gate stay whole, so every process picks the same
    /// experts, and the block sums its output over `group`. mlx_lm has no `shard` for
    /// Qwen2-MoE: its gated shared expert is split as deepseek_v3's shared experts are (the
    /// gate scales each process's share, a linear map, so the sum is the whole product).
    pub fn shard(&mut self, group: &Group) -> Result<()> {
        let (switch_mlp, shared_expert, sharding_group) =
            shard_experts(&self.switch_mlp, self.shared_expert.as_ref(), group)?;
        (self.switch_mlp, self.shared_expert) = (switch_mlp, shared_expert);
        self.sharding_group = Some(sharding_group);
        Ok(())
    }
}

/// A sparse block's experts split over `group` for tensor parallelism (Python: the MoE part
/// of a model's `shard`): each routed expert ([`SwitchGlu::shard_inplace`]) and the shared
/// experts ([`Mlp::shard_inplace`]) keep this process's slice of their hidden features, and
/// the block, holding the group returned, sums its output over it. Every expert stays on
/// every process (mlx_lm splits each expert, not the set of experts), so the router, kept
/// whole, needs no communication. The parts are returned new: on an error nothing changed.
pub fn shard_experts(
    switch_mlp: &SwitchGlu,
    shared: Option<&Mlp>,
    group: &Group,
) -> Result<(SwitchGlu, Option<Mlp>, ShardGroup)> {
    let mut switch_mlp = switch_mlp.clone();
    switch_mlp.shard_inplace(group)?;
    let shared = shared
        .map(|m| {
            let mut m = m.clone();
            m.shard_inplace(group).map(|()| m)
        })
        .transpose()?;
    Ok((switch_mlp, shared, ShardGroup::new(group.clone())))
}

/// Python: `x = sum_gradients(self.sharding_group)(x)` at a sharded block's start (the input's
/// gradient summed over the processes' shares); `x` itself otherwise.
pub(crate) fn sharded_input(group: Option<&ShardGroup>, x: &Array) -> Result<Array> {
    match group {
        Some(g) => g.sum_gradients()?.call(x),
        None => Ok(x.clone()),
    }
}

/// Python: `y = mx.distributed.all_sum(y, group=self.sharding_group)` at a sharded block's
/// end; `y` itself otherwise.
pub(crate) fn sharded_output(group: Option<&ShardGroup>, y: Array) -> Result<Array> {
    match group {
        Some(g) => g.all_sum(&y),
        None => Ok(y),
    }
}

impl Forward for SparseMoe {
    /// `sum_k score_k * expert_k(x)` (+ the gated shared expert), on rows `[N, hidden]`.
    fn forward(&self, x: &Array) -> Result<Array> {
        let group = self.sharding_group.as_ref();
        let x = &sharded_input(group, x)?;
        let (inds, scores) = self.router.route(&self.gate.forward(x)?, self.top_k)?;
        let y = self.switch_mlp.forward(x, &inds)?;
        let y = ops::multiply(&y, &ops::expand_dims(&scores, -1)?)?.sum(-2, false)?;
        let y = match (&self.shared_expert, &self.shared_expert_gate) {
            (Some(expert), Some(gate)) => {
                let shared = ops::multiply(&ops::sigmoid(&gate.forward(x)?)?, &expert.forward(x)?)?;
                ops::add(&y, &shared)?
            }
            _ => y,
        };
        sharded_output(group, y)
    }
}

/// A layer's feed-forward block where a model mixes dense and sparse layers (Qwen3-MoE's
/// `mlp_only_layers` and `decoder_sparse_step`, DeepSeek's `first_k_dense_replace`): under
/// the layer's `mlp` either way. `S` is the family's sparse block; the dense one is always
/// [`Mlp`], which is how a tree tells them apart.
// One per layer, built once at load: the variants' sizes cost nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, TreeNode)]
#[tree(transparent)]
pub enum FeedForward<S = SparseMoe> {
    Dense(Mlp),
    #[tree(other)]
    Sparse(S),
}

impl<S: Forward> Forward for FeedForward<S> {
    fn forward(&self, x: &Array) -> Result<Array> {
        match self {
            FeedForward::Dense(m) => m.forward(x),
            FeedForward::Sparse(m) => m.forward(x),
        }
    }
}

impl<S: ChannelMixer + Clone> ChannelMixer for FeedForward<S> {
    /// A dense layer as llama's MLP, a sparse one as its block shards (an `Err` for a block
    /// that cannot be split).
    fn shard(&mut self, group: &Group) -> Result<()> {
        match self {
            FeedForward::Dense(m) => m.shard(group),
            FeedForward::Sparse(m) => m.shard(group),
        }
    }
}

impl ChannelMixer for SparseMoe {
    fn shard(&mut self, group: &Group) -> Result<()> {
        SparseMoe::shard(self, group)
    }
}

/// Mixtral's sparse block, under the layer's `block_sparse_moe` (transparent in paths).
#[derive(Debug, Clone, TreeNode)]
#[tree(transparent)]
pub struct BlockSparseMoe(pub SparseMoe);

impl Forward for BlockSparseMoe {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.0.forward(x)
    }
}

impl ChannelMixer for BlockSparseMoe {
    const KEY: &'static str = "block_sparse_moe";

    fn shard(&mut self, group: &Group) -> Result<()> {
        self.0.shard(group)
    }
}

/// Python: longcat_flash's `LongcatFlashTopkRouter`: `classifier` (a linear layer, biased with
/// `router_bias`) over the routed and the zero-computation experts, a softmax over all of
/// them, the top k of the scores plus `e_score_correction_bias` by
/// `argpartition(corrected, kth=-k)[..., -k:]`, weighted by their uncorrected scores
/// (renormalized by `sum + 1e-20` with `norm_topk_prob`), times `routed_scaling_factor`, in
/// the input's dtype.
#[derive(Debug, Clone, TreeNode)]
pub struct CorrectedSoftmaxRouter {
    pub classifier: MaybeQuantizedLinear,
    pub e_score_correction_bias: Array,
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

impl CorrectedSoftmaxRouter {
    /// The experts `[..., k]` (`uint32`) and their weights `[..., k]` of rows `x`.
    pub fn route(&self, x: &Array) -> Result<(Array, Array)> {
        let dtype = x.dtype();
        let scores = ops::softmax(&self.classifier.forward(x)?, -1, None)?;
        let corrected = ops::add(&scores, &self.e_score_correction_bias)?;
        let inds = ops::stop_gradient(&top_k_last(&corrected, self.top_k)?)?;
        let mut weights = ops::take_along_axis(&scores, &inds, -1)?;
        if self.norm_topk_prob {
            let denominator = ops::add(&weights.sum(-1, true)?, 1e-20f32)?;
            weights = ops::divide(&weights, &denominator)?;
        }
        let weights = ops::multiply(&weights, self.routed_scaling_factor)?;
        Ok((inds, weights.astype(dtype)?))
    }
}

/// Python: longcat_flash's `LongcatFlashMoE`: `router` ([`CorrectedSoftmaxRouter`]) picks k of
/// `num_experts` routed experts (`switch_mlp`) and the zero-computation experts after them
/// (`zero_expert_type: "identity"`: an expert whose output is its input). The routed picks
/// run as one switch call (a zero expert's pick as expert 0, weighted 0), their weighted sum
/// plus the input times the zero experts' summed weights.
#[derive(Debug, Clone, TreeNode)]
pub struct ZeroExpertMoe {
    pub switch_mlp: SwitchGlu,
    pub router: CorrectedSoftmaxRouter,
    #[tree(static)]
    pub num_experts: i32,
    /// The group the routed experts are split over ([`shard`](Self::shard)); `None`: whole.
    #[tree(static)]
    pub sharding_group: Option<ShardGroup>,
}

/// What a [`ZeroExpertMoe`] is: its routed experts, zero experts and router.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZeroExpertConfig {
    pub hidden_size: i32,
    pub expert_size: i32,
    /// The routed experts (`n_routed_experts`).
    pub num_experts: i32,
    /// The identity experts after them (`zero_expert_num`).
    pub zero_experts: i32,
    pub top_k: i32,
    pub norm_topk_prob: bool,
    pub router_bias: bool,
    pub routed_scaling_factor: f32,
}

impl ZeroExpertMoe {
    /// Takes the block's tensors under `path` (`model.layers.0.mlp`).
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        c: &ZeroExpertConfig,
    ) -> crate::Result<ZeroExpertMoe> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, all) = (c.hidden_size, c.num_experts + c.zero_experts);
        Ok(ZeroExpertMoe {
            switch_mlp: SwitchGlu::load(
                ck,
                &p("switch_mlp"),
                d,
                c.expert_size,
                c.num_experts,
                false,
            )?,
            router: CorrectedSoftmaxRouter {
                frozen: Frozen::default(),
                classifier: ck.linear(&p("router.classifier"), d, all, c.router_bias)?,
                e_score_correction_bias: ck.array(&p("router.e_score_correction_bias"), &[all])?,
                top_k: c.top_k,
                norm_topk_prob: c.norm_topk_prob,
                routed_scaling_factor: c.routed_scaling_factor,
            },
            num_experts: c.num_experts,
            sharding_group: None,
        })
    }

    /// Python (longcat_flash's `shard`): each routed expert keeps this process's slice of its
    /// hidden features ([`shard_experts`]) and the routed experts' sum is summed over `group`;
    /// the router stays whole and the zero experts' share is added once, after that sum. On
    /// an error nothing changed.
    pub fn shard(&mut self, group: &Group) -> Result<()> {
        let (switch_mlp, _, sharding_group) = shard_experts(&self.switch_mlp, None, group)?;
        self.switch_mlp = switch_mlp;
        self.sharding_group = Some(sharding_group);
        Ok(())
    }
}

impl Forward for ZeroExpertMoe {
    /// `sum_k w_k * expert_k(x)` over the routed picks, plus `x * sum` of the zero experts'
    /// weights, on rows `[N, hidden]`.
    fn forward(&self, x: &Array) -> Result<Array> {
        let group = self.sharding_group.as_ref();
        let x = &sharded_input(group, x)?;
        let (inds, weights) = self.router.route(x)?;
        let zero = ops::greater_equal(&inds, self.num_experts)?;
        let inds = ops::where_(&zero, 0, &inds)?;
        let routed_weights = ops::where_(&zero, 0.0f32, &weights)?;
        let y = self.switch_mlp.forward(x, &inds)?;
        let y = ops::multiply(&y, &ops::expand_dims(&routed_weights, -1)?)?.sum(-2, false)?;
        // After the sum over the group: each process holds the whole identity share.
        let y = sharded_output(group, y)?;
        let identity = ops::where_(&zero, &weights, 0.0f32)?.sum(-1, true)?;
        ops::add(&y, &ops::multiply(x, &identity)?)
    }
}
