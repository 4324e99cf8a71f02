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

use mlx_nn::Forward;
use mlx_rs::ops::{self, Ellipsis};
use mlx_rs::{Array, Dtype, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::blocks::mlp::Mlp;
use crate::blocks::switch::SwitchGlu;
use crate::checkpoint::Checkpoint;

/// When the router drops groups: the one place where mlx_lm's copies differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, StaticData)]
pub enum GroupLimit {
    /// deepseek_v3.py and glm4_moe.py: `if n_group > 1`.
    SeveralGroups,
    /// dots1.py: `if n_group - topk_group != 0` (with one group of which none is kept, it
    /// drops that group: every expert scores zero).
    SomeGroupsDropped,
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
}

/// Python: `group_expert_select(gates, e_score_correction_bias, top_k, n_group, topk_group,
/// routed_scaling_factor, norm_topk_prob)`: the experts `[..., top_k]` (`uint32`) and their
/// float32 weights `[..., top_k]` for the gate's logits `gates [..., E]`.
pub fn group_expert_select(
    gates: &Array,
    e_score_correction_bias: &Array,
    r: &GroupRouting,
) -> Result<(Array, Array)> {
    let scores = ops::sigmoid(&gates.astype(Dtype::Float32)?)?;
    let orig_scores = scores.clone();
    let mut scores = ops::add(&scores, e_score_correction_bias)?;
    let drop = r.n_group - r.topk_group;
    let grouped = match r.group_limit {
        GroupLimit::SeveralGroups => r.n_group > 1,
        GroupLimit::SomeGroupsDropped => drop != 0,
    };
    if grouped {
        scores = ops::unflatten(&scores, -1, &[r.n_group, -1])?;
        let group_scores = ops::topk(&scores, 2, -1)?.sum(-1, true)?;
        let group_idx =
            ops::argpartition(&group_scores, drop - 1, -2)?.index((Ellipsis, ..drop, ..))?;
        let group_idx = ops::stop_gradient(&group_idx)?;
        scores = ops::put_along_axis(&scores, &group_idx, Array::from_scalar(0.0f32), -2)?;
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
            weight: ck.array(&format!("{path}.weight"), &[num_experts, hidden_size])?,
            e_score_correction_bias: ck
                .array(&format!("{path}.e_score_correction_bias"), &[num_experts])?,
            routing,
        })
    }

    /// The experts and weights of rows `x [..., hidden]`: `x @ weight.T` routed.
    pub fn route(&self, x: &Array) -> Result<(Array, Array)> {
        let gates = ops::matmul(x, &self.weight.swapaxes(-1, -2)?)?;
        group_expert_select(&gates, &self.e_score_correction_bias, &self.routing)
    }
}

/// Python: `DeepseekV3MoE` (glm4_moe's `MoE`, dots1's `Dots1MoE`): the grouped router
/// ([`MoeGate`]), the routed experts (`switch_mlp`) and, with `n_shared_experts`, a dense MLP
/// every token goes through (`shared_experts`, ungated).
#[derive(Debug, Clone, TreeNode)]
pub struct GroupedMoe {
    pub gate: MoeGate,
    pub switch_mlp: SwitchGlu,
    pub shared_experts: Option<Mlp>,
}

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
        let p = |name: &str| format!("{path}.{name}");
        let d = hidden_size;
        Ok(GroupedMoe {
            gate: MoeGate::load(ck, &p("gate"), num_experts, d, routing)?,
            switch_mlp: SwitchGlu::load(ck, &p("switch_mlp"), d, expert_size, num_experts, false)?,
            shared_experts: shared_size
                .map(|s| Mlp::load(ck, &p("shared_experts"), d, s, false))
                .transpose()?,
        })
    }
}

impl Forward for GroupedMoe {
    /// `sum_k score_k * expert_k(x)` in the experts' dtype (the weights are float32), plus
    /// the shared experts.
    fn forward(&self, x: &Array) -> Result<Array> {
        let (inds, scores) = self.gate.route(x)?;
        let y = self.switch_mlp.forward(x, &inds)?;
        let y = ops::multiply(&y, &ops::expand_dims(&scores, -1)?)?
            .sum(-2, false)?
            .astype(y.dtype())?;
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
        let (inds, w) =
            group_expert_select(&gates, &bias, &routing(2, 1, GroupLimit::SeveralGroups)).unwrap();
        let mut inds = inds.to_vec::<u32>().unwrap();
        inds.sort();
        assert_eq!(inds, [0, 1]);
        let total: f32 = w.to_vec::<f32>().unwrap().iter().sum();
        assert!((total - 2.5).abs() < 1e-6, "{total}");
        // Ungrouped, the best two overall.
        let (inds, _) =
            group_expert_select(&gates, &bias, &routing(1, 1, GroupLimit::SeveralGroups)).unwrap();
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
        let (inds, w) = group_expert_select(&gates, &bias, &r).unwrap();
        let inds = inds.to_vec::<u32>().unwrap();
        let w = w.to_vec::<f32>().unwrap();
        let sigmoid = |x: f32| 1.0 / (1.0 + (-x).exp());
        for (i, w) in inds.iter().zip(&w) {
            assert!([0, 2].contains(i), "{inds:?}");
            let expected = sigmoid([2.0f32, 1.0, 0.0, -1.0][*i as usize]);
            assert!((w - expected).abs() < 1e-6, "{w} vs {expected}");
        }
    }

    /// dots1's condition: one group, none kept, drops it (all scores zero, the picks
    /// arbitrary but the weights then the uncorrected scores); deepseek_v3's keeps it.
    #[test]
    fn the_group_conditions_differ_only_where_mlx_lm_s_copies_do() {
        let gates = Array::from_slice(&[2.0f32, 1.0, 0.0, -1.0], &[1, 4]).unwrap();
        let bias = ops::zeros(&[4], Dtype::Float32).unwrap();
        let (a, _) =
            group_expert_select(&gates, &bias, &routing(2, 2, GroupLimit::SeveralGroups)).unwrap();
        let (b, _) =
            group_expert_select(&gates, &bias, &routing(2, 2, GroupLimit::SomeGroupsDropped))
                .unwrap();
        let (mut a, mut b) = (a.to_vec::<u32>().unwrap(), b.to_vec::<u32>().unwrap());
        a.sort();
        b.sort();
        assert_eq!(a, [0, 1]);
        assert_eq!(a, b, "keeping every group drops none either way");
    }
}
