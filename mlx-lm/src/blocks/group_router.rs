//! The grouped sigmoid router of DeepSeek-V3 and its kin (`topk_method: "noaux_tc"`), op for
//! op as mlx_lm's `group_expert_select` (deepseek_v3.py, with near-copies in glm4_moe.py and
//! dots1.py): sigmoid scores in float32, plus the `e_score_correction_bias` for choosing
//! (not for weighting); the experts split into `n_group` groups, each group scored by the sum
//! of its two best, all but the best `topk_group` groups dropped; the top k of what is left,
//! weighted by their uncorrected scores, normalized to sum to one, times
//! `routed_scaling_factor`.
//!
//! mlx_lm runs it under `@mx.compile`. Measured on the CPU (mlx 0.32.2), the compiled function
//! gives the eager ops' bits exactly (indices and weights, float32 / bfloat16 / float16 gate
//! logits, 450 random cases over grouped and ungrouped settings), so it runs eagerly here and
//! a model's compiled decode step compiles it with the rest.

use mlx_nn::Frozen;
use mlx_nn::{Forward, ShardGroup};
use mlx_rs::distributed::Group;
use mlx_rs::ops::{self, Ellipsis};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::blocks::decoder::ChannelMixer;
use crate::blocks::mlp::Mlp;
use crate::blocks::moe::{shard_experts, sharded_input, sharded_output};
use crate::blocks::switch::SwitchGlu;
use crate::checkpoint::Checkpoint;
use crate::config::{invalid, ModelConfig};

/// When the router drops groups: the one place where mlx_lm's copies differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, StaticData)]
pub enum GroupLimit {
    /// deepseek_v3.py and glm4_moe.py: `if n_group > 1`.
    SeveralGroups,
    /// dots1.py: `if n_group - topk_group != 0` (with one group of which none is kept, it
    /// drops that group: every expert scores zero).
    SomeGroupsDropped,
    /// bailing_hybrid.py: `if n_group - topk_group > 0`, the dropped groups' scores set to
    /// `-inf`, not 0 (the expert bias can make a kept score negative).
    SomeGroupsMasked,
}

/// How the router turns the gate's logits into scores (float32 either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, StaticData)]
pub enum GroupScoring {
    /// DeepSeek-V3 and its kin: `sigmoid(gates)`.
    Sigmoid,
    /// bailing_moe_linear / bailing_hybrid with `score_function: "softmax"`:
    /// `softmax(gates, axis=-1)` (their copy takes either).
    Softmax,
}

/// What [`group_expert_select`] is given besides the logits (Python: its arguments).
#[derive(Debug, Clone, Copy, PartialEq, StaticData)]
pub struct GroupRouting {
    pub top_k: i32,
    pub n_group: i32,
    pub topk_group: i32,
    pub routed_scaling_factor: f32,
    pub norm_topk_prob: bool,
    pub group_limit: GroupLimit,
    /// nemotron_h.py's copy renormalizes by `sum + 1e-20`, the others by the sum alone.
    pub denominator_eps: Option<f32>,
    /// Sigmoid everywhere but in the bailing families, which may score by softmax.
    pub scoring: GroupScoring,
}

impl GroupRouting {
    /// The router of `num_experts` experts as a config describes it: `num_experts_per_tok`,
    /// `n_group`, `topk_group` (both 1 when absent), `routed_scaling_factor` (1 when absent)
    /// and `norm_topk_prob` (`norm_default` when absent: transformers' default differs by
    /// family). A split the router cannot take (groups that do not divide the experts, fewer
    /// than two experts per group where groups are ranked, more experts per token than the
    /// kept groups hold) is an error naming the key.
    pub fn from_config(
        c: &ModelConfig,
        num_experts: i32,
        group_limit: GroupLimit,
        norm_default: bool,
    ) -> crate::Result<GroupRouting> {
        let e = num_experts;
        let n_group = c.dim_or("n_group", Some(1))?;
        let topk_group = c.dim_or("topk_group", Some(1))?;
        let top_k = c.dim_or("num_experts_per_tok", Some(1))?;
        if e % n_group != 0 {
            return Err(invalid(
                c.path(),
                &c.key("n_group"),
                &format!("{n_group} groups do not divide {e} experts"),
            ));
        }
        if !(1..=n_group).contains(&topk_group) || (n_group > 1 && e / n_group < 2) {
            return Err(invalid(
                c.path(),
                &c.key("topk_group"),
                &format!(
                    "{topk_group} of {n_group} groups of {} experts",
                    e / n_group
                ),
            ));
        }
        if top_k > topk_group * (e / n_group) {
            return Err(invalid(
                c.path(),
                &c.key("num_experts_per_tok"),
                &format!(
                    "{top_k} experts from {topk_group} groups of {}",
                    e / n_group
                ),
            ));
        }
        Ok(GroupRouting {
            top_k,
            n_group,
            topk_group,
            routed_scaling_factor: c.float_or("routed_scaling_factor", 1.0)? as f32,
            norm_topk_prob: c.bool_or("norm_topk_prob", norm_default)?,
            group_limit,
            denominator_eps: None,
            scoring: GroupScoring::Sigmoid,
        })
    }
}

/// Python: `group_expert_select(gates, e_score_correction_bias, top_k, n_group, topk_group,
/// routed_scaling_factor, norm_topk_prob)`: the experts `[..., top_k]` (`uint32`) and their
/// float32 weights `[..., top_k]` for the gate's logits `gates [..., E]`. The correction
/// bias is optional only in the bailing families (`moe_router_enable_expert_bias`).
pub fn group_expert_select(
    gates: &Array,
    e_score_correction_bias: Option<&Array>,
    r: &GroupRouting,
) -> Result<(Array, Array)> {
    let gates = gates.astype(Dtype::Float32)?;
    let scores = match r.scoring {
        GroupScoring::Sigmoid => ops::sigmoid(&gates)?,
        GroupScoring::Softmax => ops::softmax(&gates, -1, None)?,
    };
    let orig_scores = scores.clone();
    let mut scores = match e_score_correction_bias {
        Some(bias) => ops::add(&scores, bias)?,
        None => scores,
    };
    let drop = r.n_group - r.topk_group;
    let grouped = match r.group_limit {
        GroupLimit::SeveralGroups => r.n_group > 1,
        GroupLimit::SomeGroupsDropped => drop != 0,
        GroupLimit::SomeGroupsMasked => drop > 0,
    };
    let fill = match r.group_limit {
        GroupLimit::SomeGroupsMasked => f32::NEG_INFINITY,
        _ => 0.0,
    };
    if grouped {
        scores = ops::unflatten(&scores, -1, &[r.n_group, -1])?;
        let group_scores = ops::topk(&scores, 2, -1)?.sum(-1, true)?;
        let group_idx =
            ops::argpartition(&group_scores, drop - 1, -2)?.index((Ellipsis, ..drop, ..))?;
        let group_idx = ops::stop_gradient(&group_idx)?;
        scores = ops::put_along_axis(&scores, &group_idx, Array::from_scalar(fill), -2)?;
        scores = ops::flatten(&scores, -2, -1)?;
    }
    let k = r.top_k;
    let inds = ops::argpartition(&ops::negative(&scores)?, k - 1, -1)?.index((Ellipsis, ..k))?;
    let inds = ops::stop_gradient(&inds)?;
    let mut scores = ops::take_along_axis(&orig_scores, &inds, -1)?;
    if k > 1 && r.norm_topk_prob {
        let mut denominator = scores.sum(-1, true)?;
        if let Some(eps) = r.denominator_eps {
            denominator = ops::add(&denominator, eps)?;
        }
        scores = ops::divide(&scores, &denominator)?;
    }
    Ok((inds, ops::multiply(&scores, r.routed_scaling_factor)?))
}

/// Python: `MoEGate` of deepseek_v3 / glm4_moe (dots1's `Dots1TopkRouter`): the gate's
/// weight `[E, hidden]` (a plain array, never quantized: mlx_lm's class has no
/// `to_quantized`) and the correction bias `[E]`, which stays float32 whatever the model's
/// dtype (the model's `cast_predicate`).
#[derive(Debug, Clone, TreeNode)]
pub struct MoeGate {
    pub weight: Array,
    pub e_score_correction_bias: Array,
    #[tree(static)]
    pub routing: GroupRouting,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl MoeGate {
    /// Takes the gate under `path` (`model.layers.3.mlp.gate`).
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        num_experts: i32,
        hidden_size: i32,
        routing: GroupRouting,
    ) -> crate::Result<MoeGate> {
        Ok(MoeGate {
            frozen: Frozen::default(),
            weight: ck.array(&format!("{path}.weight"), &[num_experts, hidden_size])?,
            e_score_correction_bias: ck
                .array(&format!("{path}.e_score_correction_bias"), &[num_experts])?,
            routing,
        })
    }

    /// The experts and weights of rows `x [..., hidden]`: `x @ weight.T` routed.
    pub fn route(&self, x: &Array) -> Result<(Array, Array)> {
        let gates = ops::matmul(x, &self.weight.swapaxes(-1, -2)?)?;
        group_expert_select(&gates, Some(&self.e_score_correction_bias), &self.routing)
    }
}

/// The routed experts (`switch_mlp`) behind a router `G` (`gate`) and, with
/// `n_shared_experts`, a dense MLP every token goes through (`shared_experts`, ungated): the
/// blocks of [`GroupedMoe`] and [`GreedyMoe`], which differ in the router and the forward.
#[derive(Debug, Clone, TreeNode)]
pub struct RoutedMoe<G> {
    pub gate: G,
    pub switch_mlp: SwitchGlu,
    pub shared_experts: Option<Mlp>,
    /// The group the experts are split over ([`shard`](Self::shard)); `None`: whole.
    #[tree(static)]
    pub sharding_group: Option<ShardGroup>,
}

impl<G> RoutedMoe<G> {
    /// Takes the experts under `path` (`model.layers.3.mlp`) behind `gate`: `num_experts`
    /// of `expert_size`, and a shared MLP of `shared_size` when given.
    pub fn load_with(
        ck: &mut Checkpoint,
        path: &str,
        gate: G,
        (hidden_size, expert_size, num_experts): (i32, i32, i32),
        shared_size: Option<i32>,
    ) -> crate::Result<RoutedMoe<G>> {
        let p = |name: &str| format!("{path}.{name}");
        let d = hidden_size;
        Ok(RoutedMoe {
            gate,
            switch_mlp: SwitchGlu::load(ck, &p("switch_mlp"), d, expert_size, num_experts, false)?,
            shared_experts: shared_size
                .map(|s| Mlp::load(ck, &p("shared_experts"), d, s, false))
                .transpose()?,
            sharding_group: None,
        })
    }

    /// Python (deepseek_v2's, deepseek_v3's and glm4_moe's `shard` of their MoE layers): see
    /// [`shard_experts`]; the router stays whole.
    pub fn shard(&mut self, group: &Group) -> Result<()> {
        let (switch_mlp, shared_experts, sharding_group) =
            shard_experts(&self.switch_mlp, self.shared_experts.as_ref(), group)?;
        (self.switch_mlp, self.shared_experts) = (switch_mlp, shared_experts);
        self.sharding_group = Some(sharding_group);
        Ok(())
    }
}

impl<G: TreeNode + Clone + 'static> ChannelMixer for RoutedMoe<G>
where
    RoutedMoe<G>: Forward,
{
    fn shard(&mut self, group: &Group) -> Result<()> {
        RoutedMoe::shard(self, group)
    }
}

/// Python: `DeepseekV3MoE` (glm4_moe's `MoE`, dots1's `Dots1MoE`): the grouped router
/// ([`MoeGate`]) before the experts.
pub type GroupedMoe = RoutedMoe<MoeGate>;

impl GroupedMoe {
    /// Takes the block under `path` (`model.layers.3.mlp`): `num_experts` experts of
    /// `expert_size`, and a shared MLP of `shared_size` when given.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        hidden_size: i32,
        expert_size: i32,
        num_experts: i32,
        shared_size: Option<i32>,
        routing: GroupRouting,
    ) -> crate::Result<GroupedMoe> {
        let gate = MoeGate::load(
            ck,
            &format!("{path}.gate"),
            num_experts,
            hidden_size,
            routing,
        )?;
        let sizes = (hidden_size, expert_size, num_experts);
        RoutedMoe::load_with(ck, path, gate, sizes, shared_size)
    }
}

impl Forward for GroupedMoe {
    /// `sum_k score_k * expert_k(x)` in the experts' dtype (the weights are float32), plus
    /// the shared experts; summed over the group when sharded.
    fn forward(&self, x: &Array) -> Result<Array> {
        let group = self.sharding_group.as_ref();
        let x = sharded_input(group, x)?;
        let y = grouped_moe_forward(
            &self.gate,
            &self.switch_mlp,
            self.shared_experts.as_ref(),
            &x,
        )?;
        sharded_output(group, y)
    }
}

/// The forward of the grouped-router blocks (`DeepseekV3MoE`, glm4_moe's `MoE`, dots1's
/// `Dots1MoE`, whose experts sit under another name): `sum_k score_k * expert_k(x)` in the
/// experts' dtype (the scores are float32), plus the shared experts.
pub fn grouped_moe_forward(
    gate: &MoeGate,
    experts: &SwitchGlu,
    shared_experts: Option<&Mlp>,
    x: &Array,
) -> Result<Array> {
    let (inds, scores) = gate.route(x)?;
    let y = experts.forward(x, &inds)?;
    let y = ops::multiply(&y, &ops::expand_dims(&scores, -1)?)?
        .sum(-2, false)?
        .astype(y.dtype())?;
    match shared_experts {
        Some(shared) => ops::add(&y, &shared.forward(x)?),
        None => Ok(y),
    }
}

/// Python: deepseek_v2's `MoEGate` arguments: softmax scores, `topk_method`
/// `"group_limited_greedy"` (DeepSeek-V2: the experts in `n_group` groups, each scored by its
/// best expert, all but the best `topk_group` groups dropped) or anything else (`"greedy"`,
/// mlx_lm's default `"gready"`: the plain top k); the top k's scores times
/// `routed_scaling_factor`, never renormalized.
#[derive(Debug, Clone, Copy, PartialEq, StaticData)]
pub struct GreedyRouting {
    pub top_k: i32,
    pub n_group: i32,
    pub topk_group: i32,
    pub routed_scaling_factor: f32,
    pub group_limited: bool,
}

/// deepseek_v2's `MoEGate.__call__` after the gate's product: the experts `[..., top_k]`
/// (`uint32`) and their weights in the logits' dtype.
pub fn greedy_expert_select(gates: &Array, r: &GreedyRouting) -> Result<(Array, Array)> {
    let mut scores = ops::softmax(gates, -1, true)?;
    let drop = r.n_group - r.topk_group;
    // With no group to drop, Python's slice `[..., :0, :]` writes nothing.
    if r.group_limited && drop > 0 {
        scores = ops::unflatten(&scores, -1, &[r.n_group, -1])?;
        let group_scores = ops::max(&scores, -1, true)?;
        let group_idx =
            ops::argpartition(&group_scores, drop - 1, -2)?.index((Ellipsis, ..drop, ..))?;
        let group_idx = ops::stop_gradient(&group_idx)?;
        let zero = Array::from_scalar(0.0f32).astype(scores.dtype())?;
        scores = ops::put_along_axis(&scores, &group_idx, zero, -2)?;
        scores = ops::flatten(&scores, -2, -1)?;
    }
    let k = r.top_k;
    let inds = ops::argpartition(&ops::negative(&scores)?, k - 1, -1)?.index((Ellipsis, ..k))?;
    let inds = ops::stop_gradient(&inds)?;
    let scores = ops::take_along_axis(&scores, &inds, -1)?;
    // A Python float scales the array in its own dtype.
    let factor = Array::from_scalar(r.routed_scaling_factor).astype(scores.dtype())?;
    Ok((inds, ops::multiply(&scores, &factor)?))
}

impl GreedyRouting {
    /// The router of `num_experts` experts as a deepseek_v2 config describes it
    /// (`topk_method`, `num_experts_per_tok`, `n_group`, `topk_group`,
    /// `routed_scaling_factor`); a group split the router cannot take is an error naming the
    /// key.
    pub fn from_config(c: &ModelConfig, num_experts: i32) -> crate::Result<GreedyRouting> {
        let group_limited = c.string("topk_method")? == Some("group_limited_greedy");
        let top_k = c.dim("num_experts_per_tok")?;
        let (n_group, topk_group) = if group_limited {
            let routing =
                GroupRouting::from_config(c, num_experts, GroupLimit::SeveralGroups, false)?;
            (routing.n_group, routing.topk_group)
        } else {
            // Greedy routing reads no groups.
            c.declare_neutral(&["n_group", "topk_group"]);
            (1, 1)
        };
        Ok(GreedyRouting {
            top_k,
            n_group,
            topk_group,
            routed_scaling_factor: c.float_or("routed_scaling_factor", 1.0)? as f32,
            group_limited,
        })
    }
}

/// Python: deepseek_v2's `MoEGate`: the gate's weight `[E, hidden]`, a plain array (never
/// quantized).
#[derive(Debug, Clone, TreeNode)]
pub struct GreedyGate {
    pub weight: Array,
    #[tree(static)]
    pub routing: GreedyRouting,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

/// Python: `DeepseekV2MoE`: the softmax router ([`GreedyGate`]) before the experts.
pub type GreedyMoe = RoutedMoe<GreedyGate>;

impl GreedyMoe {
    /// Takes the block under `path` (`model.layers.1.mlp`).
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        hidden_size: i32,
        expert_size: i32,
        num_experts: i32,
        shared_size: Option<i32>,
        routing: GreedyRouting,
    ) -> crate::Result<GreedyMoe> {
        let gate = GreedyGate {
            frozen: Frozen::default(),
            weight: ck.array(&format!("{path}.gate.weight"), &[num_experts, hidden_size])?,
            routing,
        };
        let sizes = (hidden_size, expert_size, num_experts);
        RoutedMoe::load_with(ck, path, gate, sizes, shared_size)
    }
}

impl Forward for GreedyMoe {
    /// `sum_k score_k * expert_k(x)` (in the scores' and experts' common dtype, no cast back
    /// as deepseek_v2 writes it), plus the shared experts; summed over the group when
    /// sharded.
    fn forward(&self, x: &Array) -> Result<Array> {
        let group = self.sharding_group.as_ref();
        let x = &sharded_input(group, x)?;
        let gates = ops::matmul(x, &self.gate.weight.swapaxes(-1, -2)?)?;
        let (inds, scores) = greedy_expert_select(&gates, &self.gate.routing)?;
        let y = self.switch_mlp.forward(x, &inds)?;
        let y = ops::multiply(&y, &ops::expand_dims(&scores, -1)?)?.sum(-2, false)?;
        let y = match &self.shared_experts {
            Some(shared) => ops::add(&y, &shared.forward(x)?)?,
            None => y,
        };
        sharded_output(group, y)
    }
}

/// Python: the bailing families' `Gate` (bailing_moe_linear, bailing_hybrid): a linear
/// `gate_proj` (quantizable: their `quant_predicate` takes it at 8 bits) and, with
/// `moe_router_enable_expert_bias`, the correction bias `expert_bias` `[E]` (kept float32,
/// their `cast_predicate`). Their `group_expert_select` is DeepSeek-V3's with softmax scores
/// as an option, the bias optional, and the weights cast back to the logits' dtype.
#[derive(Debug, Clone, TreeNode)]
pub struct BailingGate {
    pub gate_proj: mlx_nn::MaybeQuantizedLinear,
    pub expert_bias: Option<Array>,
    #[tree(static)]
    pub routing: GroupRouting,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

impl BailingGate {
    /// The experts (`uint32`) and their weights, in `x`'s dtype, for rows `x [..., hidden]`.
    pub fn route(&self, x: &Array) -> Result<(Array, Array)> {
        let gates = self.gate_proj.forward(x)?;
        let (inds, scores) = group_expert_select(&gates, self.expert_bias.as_ref(), &self.routing)?;
        Ok((inds, scores.astype(gates.dtype())?))
    }
}

/// Python: the bailing families' `SparseMoeBlock`: [`BailingGate`], the routed experts
/// (`switch_mlp`, with the config's `use_bias`) and the shared experts' MLP (`shared_experts`,
/// ungated). Unlike [`grouped_moe_forward`] the weights are in the activations' dtype
/// before they weigh the experts' outputs.
#[derive(Debug, Clone, TreeNode)]
pub struct BailingMoe {
    pub gate: BailingGate,
    pub switch_mlp: SwitchGlu,
    pub shared_experts: Option<Mlp>,
}

/// What a [`BailingMoe`] is, read from the config by each bailing model.
#[derive(Debug, Clone, PartialEq)]
pub struct BailingMoeConfig {
    pub hidden_size: i32,
    pub expert_size: i32,
    pub num_experts: i32,
    pub bias: bool,
    pub expert_bias: bool,
    /// The shared experts' MLP width (`moe_shared_expert_intermediate_size` or
    /// `moe_intermediate_size`, times `num_shared_experts`), when there are any.
    pub shared_size: Option<i32>,
    pub routing: GroupRouting,
}

impl BailingMoe {
    /// Takes the block under `path` (`model.layers.1.mlp`).
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        c: &BailingMoeConfig,
    ) -> crate::Result<BailingMoe> {
        let p = |name: &str| format!("{path}.{name}");
        let (d, e) = (c.hidden_size, c.num_experts);
        Ok(BailingMoe {
            gate: BailingGate {
                frozen: Frozen::default(),
                gate_proj: ck.linear(&p("gate.gate_proj"), d, e, false)?,
                expert_bias: c
                    .expert_bias
                    .then(|| ck.array(&p("gate.expert_bias"), &[e]))
                    .transpose()?,
                routing: c.routing,
            },
            switch_mlp: SwitchGlu::load(ck, &p("switch_mlp"), d, c.expert_size, e, c.bias)?,
            shared_experts: c
                .shared_size
                .map(|s| Mlp::load(ck, &p("shared_experts"), d, s, c.bias))
                .transpose()?,
        })
    }
}

/// mlx_lm's bailing_moe_linear and bailing_hybrid have no `shard`: these experts cannot be split (an `Err`).
impl crate::blocks::ChannelMixer for BailingMoe {}

impl Forward for BailingMoe {
    fn forward(&self, x: &Array) -> Result<Array> {
        let (inds, scores) = self.gate.route(x)?;
        let y = self.switch_mlp.forward(x, &inds)?;
        let y = ops::multiply(&y, &ops::expand_dims(&scores, -1)?)?.sum(-2, false)?;
        match &self.shared_experts {
            Some(shared) => ops::add(&y, &shared.forward(x)?),
            None => Ok(y),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routing(n_group: i32, topk_group: i32, group_limit: GroupLimit) -> GroupRouting {
        GroupRouting {
            top_k: 2,
            n_group,
            topk_group,
            routed_scaling_factor: 2.5,
            norm_topk_prob: true,
            group_limit,
            denominator_eps: None,
            scoring: GroupScoring::Sigmoid,
        }
    }

    /// Two groups of four; the second holds the best single expert (index 4) but the first
    /// the best pair: with one group kept, the top two come from the first group.
    #[test]
    fn groups_are_ranked_by_their_two_best() {
        let logit = |p: f32| (p / (1.0 - p)).ln();
        let probs = [0.8f32, 0.79, 0.1, 0.1, 0.9, 0.1, 0.1, 0.1];
        let gates: Vec<f32> = probs.iter().map(|p| logit(*p)).collect();
        let gates = Array::from_slice(&gates, &[1, 8]).unwrap();
        let bias = ops::zeros(&[8], Dtype::Float32).unwrap();
        let (inds, w) = group_expert_select(
            &gates,
            Some(&bias),
            &routing(2, 1, GroupLimit::SeveralGroups),
        )
        .unwrap();
        let mut inds = inds.to_vec::<u32>().unwrap();
        inds.sort();
        assert_eq!(inds, [0, 1]);
        let total: f32 = w.to_vec::<f32>().unwrap().iter().sum();
        assert!((total - 2.5).abs() < 1e-6, "{total}");
        // Ungrouped, the best two overall.
        let (inds, _) = group_expert_select(
            &gates,
            Some(&bias),
            &routing(1, 1, GroupLimit::SeveralGroups),
        )
        .unwrap();
        let mut inds = inds.to_vec::<u32>().unwrap();
        inds.sort();
        assert_eq!(inds, [0, 4]);
    }

    /// The correction bias decides which experts are chosen, never their weights.
    #[test]
    fn the_correction_bias_chooses_but_does_not_weigh() {
        let gates = Array::from_slice(&[2.0f32, 1.0, 0.0, -1.0], &[1, 4]).unwrap();
        let bias = Array::from_slice(&[0.0f32, 0.0, 5.0, 0.0], &[4]).unwrap();
        let r = GroupRouting {
            norm_topk_prob: false,
            routed_scaling_factor: 1.0,
            ..routing(1, 1, GroupLimit::SeveralGroups)
        };
        let (inds, w) = group_expert_select(&gates, Some(&bias), &r).unwrap();
        let inds = inds.to_vec::<u32>().unwrap();
        let w = w.to_vec::<f32>().unwrap();
        let sigmoid = |x: f32| 1.0 / (1.0 + (-x).exp());
        for (i, w) in inds.iter().zip(&w) {
            assert!([0, 2].contains(i), "{inds:?}");
            let expected = sigmoid([2.0f32, 1.0, 0.0, -1.0][*i as usize]);
            assert!((w - expected).abs() < 1e-6, "{w} vs {expected}");
        }
    }

    /// bailing_hybrid's masking: with an expert bias that makes every kept score negative, a
    /// dropped group filled with 0 (deepseek_v3's) would outrank the kept ones; filled with
    /// `-inf` it never does.
    #[test]
    fn masked_groups_stay_dropped_under_a_negative_bias() {
        let gates = Array::from_slice(&[3.0f32, 2.0, -3.0, -2.0], &[1, 4]).unwrap();
        let bias = Array::from_slice(&[-2.0f32; 4], &[4]).unwrap();
        let picks = |limit| {
            let (inds, _) =
                group_expert_select(&gates, Some(&bias), &routing(2, 1, limit)).unwrap();
            let mut inds = inds.to_vec::<u32>().unwrap();
            inds.sort();
            inds
        };
        assert_eq!(picks(GroupLimit::SomeGroupsMasked), [0, 1]);
        assert_eq!(picks(GroupLimit::SeveralGroups), [2, 3]);
    }

    /// dots1's condition: one group, none kept, drops it (all scores zero, the picks
    /// arbitrary but the weights then the uncorrected scores); deepseek_v3's keeps it.
    #[test]
    fn the_group_conditions_differ_only_where_mlx_lm_s_copies_do() {
        let gates = Array::from_slice(&[2.0f32, 1.0, 0.0, -1.0], &[1, 4]).unwrap();
        let bias = ops::zeros(&[4], Dtype::Float32).unwrap();
        let (a, _) = group_expert_select(
            &gates,
            Some(&bias),
            &routing(2, 2, GroupLimit::SeveralGroups),
        )
        .unwrap();
        let (b, _) = group_expert_select(
            &gates,
            Some(&bias),
            &routing(2, 2, GroupLimit::SomeGroupsDropped),
        )
        .unwrap();
        let (mut a, mut b) = (a.to_vec::<u32>().unwrap(), b.to_vec::<u32>().unwrap());
        a.sort();
        b.sort();
        assert_eq!(a, [0, 1]);
        assert_eq!(a, b, "keeping every group drops none either way");
    }
}
