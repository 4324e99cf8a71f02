//! Expert (switch) layers of mixture-of-experts models, op for op as mlx_lm's
//! `models/switch_layers.py`: each expert's weights stacked on a leading axis
//! (`switch_mlp.gate_proj.weight [E, out, in]`), every token multiplied by its routed experts
//! only (`gather_mm` / `gather_qmm`), with the tokens sorted by expert first when there are
//! many (mlx_lm's rule: 64 routed (token, expert) pairs or more), so each expert's weights are
//! read once for its run of tokens.

use mlx_nn::{shard_inplace, Frozen, MaybeQuantized, Quantizable, Sharding};
use mlx_rs::distributed::Group;
use mlx_rs::ops::{self, GatherMmOptions, GatherQmmOptions, QuantizationMode, QuantizeOptions};
use mlx_rs::{Array, Result};
use mlx_tree::TreeNode;

use crate::blocks::mlp::{divide_by_group, relu2, swiglu};
pub use crate::blocks::switch_lora::LoRASwitchLinear;
use crate::checkpoint::Checkpoint;

/// mlx_lm's `do_sort = indices.size >= 64`: from this many routed (token, expert) pairs on,
/// the pairs are sorted by expert (a prompt's prefill sorts; a decode step of a few sequences
/// does not).
pub const SORT_THRESHOLD: usize = 64;

/// Python: `SwitchLinear(input_dims, output_dims, num_experts, bias)`: one linear layer per
/// expert, `weight [E, output_dims, input_dims]`, `bias [E, output_dims]`.
#[derive(Debug, Clone, TreeNode)]
pub struct SwitchLinear {
    pub weight: Array,
    pub bias: Option<Array>,
    /// Its own parameters' frozen set (Python: the module's `_no_grad`).
    #[tree(static)]
    pub frozen: Frozen,
}

/// Python: `QuantizedSwitchLinear`: the experts' weights packed as `mx.quantize` packs them,
/// `scales [E, output_dims, groups]`, and `biases` of that shape in the affine mode (`None`
/// in the floating-point modes). Without Python's nvfp4 `global_scale`, which MLX 0.32.2's
/// `gather_qmm` does not take.
#[derive(Debug, Clone, TreeNode)]
pub struct QuantizedSwitchLinear {
    pub weight: Array,
    pub scales: Array,
    pub biases: Option<Array>,
    pub bias: Option<Array>,
    #[tree(static)]
    pub group_size: i32,
    #[tree(static)]
    pub bits: i32,
    #[tree(static)]
    pub mode: QuantizationMode,
    /// Its own parameters' frozen set; all of them at first, as Python's `__init__` ends with
    /// `self.freeze()` (the experts train only through adapters).
    #[tree(static)]
    pub frozen: Frozen,
}

impl QuantizedSwitchLinear {
    /// The set it starts with: every parameter, the bias included.
    pub fn initially_frozen() -> Frozen {
        Frozen(
            ["weight", "scales", "biases", "bias"]
                .map(String::from)
                .into(),
        )
    }
}

/// An expert layer, float or quantized.
pub type MaybeQuantizedSwitchLinear = MaybeQuantized<SwitchLinear>;

impl Quantizable for SwitchLinear {
    type Quantized = QuantizedSwitchLinear;
    const QUANTIZED_NAME: &'static str = "QuantizedSwitchLinear";
    type Adapted = LoRASwitchLinear;
    const ADAPTED_NAME: &'static str = "LoRASwitchLinear";
    type Sharded = mlx_nn::NoAdapter;
    const SHARDED_NAMES: &'static [&'static str] = &[];

    /// Python: `SwitchLinear.to_quantized(group_size, bits, mode)`: `mx.quantize` of the
    /// stacked weight (each expert's rows grouped on their own), the bias kept.
    fn to_quantized(
        &self,
        group_size: i32,
        bits: i32,
        mode: QuantizationMode,
    ) -> Result<QuantizedSwitchLinear> {
        let options = QuantizeOptions::default()
            .group_size(group_size)
            .bits(bits)
            .mode(mode);
        let (weight, scales, biases) = ops::quantize(&self.weight, options)?;
        Ok(QuantizedSwitchLinear {
            weight,
            scales,
            biases,
            bias: self.bias.clone(),
            group_size,
            bits,
            mode,
            frozen: QuantizedSwitchLinear::initially_frozen(),
        })
    }
}

/// `x + expand_dims(bias[indices], -2)`: each routed expert's bias.
fn add_expert_bias(x: Array, bias: Option<&Array>, indices: &Array) -> Result<Array> {
    match bias {
        Some(b) => ops::add(&x, &ops::expand_dims(&ops::take(b, indices, 0)?, -2)?),
        None => Ok(x),
    }
}

/// What an expert layer does with its inputs: `x [..., 1, in]` through the experts
/// `indices [...]` to `[..., 1, out]` (Python: `SwitchLinear.__call__(x, indices,
/// sorted_indices)`).
pub trait SwitchForward {
    fn forward_experts(&self, x: &Array, indices: &Array, sorted: bool) -> Result<Array>;
}

impl SwitchForward for SwitchLinear {
    fn forward_experts(&self, x: &Array, indices: &Array, sorted: bool) -> Result<Array> {
        let options = GatherMmOptions::default()
            .rhs_indices(indices)
            .sorted_indices(sorted);
        let y = ops::gather_mm(x, &self.weight.swapaxes(-1, -2)?, options)?;
        add_expert_bias(y, self.bias.as_ref(), indices)
    }
}

impl SwitchForward for QuantizedSwitchLinear {
    fn forward_experts(&self, x: &Array, indices: &Array, sorted: bool) -> Result<Array> {
        let mut options = GatherQmmOptions::default()
            .rhs_indices(indices)
            .transpose(true)
            .group_size(self.group_size)
            .bits(self.bits)
            .mode(self.mode)
            .sorted_indices(sorted);
        if let Some(b) = &self.biases {
            options = options.biases(b);
        }
        let y = ops::gather_qmm(x, &self.weight, &self.scales, options)?;
        add_expert_bias(y, self.bias.as_ref(), indices)
    }
}

impl SwitchForward for MaybeQuantizedSwitchLinear {
    fn forward_experts(&self, x: &Array, indices: &Array, sorted: bool) -> Result<Array> {
        match self {
            MaybeQuantized::Float(l) => l.forward_experts(x, indices, sorted),
            MaybeQuantized::Quantized(l) => l.forward_experts(x, indices, sorted),
            MaybeQuantized::Adapted(a) => a.forward_experts(x, indices, sorted),
            MaybeQuantized::Sharded(s) => match **s {},
        }
    }
}

/// Python: `_gather_sort(x, indices)`: the (token, expert) pairs in expert order. Returns the
/// sorted inputs `[pairs, 1, in]`, their experts and the order that undoes the sort.
pub fn gather_sort(x: &Array, indices: &Array) -> Result<(Array, Array, Array)> {
    let m = *indices.shape().last().unwrap_or(&1);
    let indices = indices.flatten(None, None)?;
    let order = ops::argsort(&indices, -1)?;
    let inv_order = ops::argsort(&order, -1)?;
    let rows = ops::floor_divide(&order, m)?;
    let x = ops::take(&x.flatten(0, -3)?, &rows, 0)?;
    Ok((x, ops::take(&indices, &order, 0)?, inv_order))
}

/// Python: `_scatter_unsort(x, inv_order, shape)`: the pairs back in token order, the leading
/// axis unflattened to `shape` (the routing indices' shape).
pub fn scatter_unsort(x: &Array, inv_order: &Array, shape: &[i32]) -> Result<Array> {
    ops::unflatten(&ops::take(x, inv_order, 0)?, 0, shape)
}

/// Python: `SwitchGLU(input_dims, hidden_dims, num_experts, activation=SwiGLU(), bias)`:
/// each token through its routed experts' SwiGLU MLPs,
/// `down_proj(silu(gate_proj(x)) * up_proj(x))`, one output per (token, expert).
#[derive(Debug, Clone, TreeNode)]
pub struct SwitchGlu {
    pub gate_proj: MaybeQuantizedSwitchLinear,
    pub up_proj: MaybeQuantizedSwitchLinear,
    pub down_proj: MaybeQuantizedSwitchLinear,
}

impl SwitchGlu {
    /// Takes the stacked experts under `path` (`...mlp.switch_mlp`): `num_experts` experts
    /// of `dim` features in and out, `hidden` between.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        dim: i32,
        hidden: i32,
        num_experts: i32,
        bias: bool,
    ) -> crate::Result<SwitchGlu> {
        let p = |name: &str| format!("{path}.{name}");
        Ok(SwitchGlu {
            gate_proj: ck.switch_linear(&p("gate_proj"), dim, hidden, num_experts, bias)?,
            up_proj: ck.switch_linear(&p("up_proj"), dim, hidden, num_experts, bias)?,
            down_proj: ck.switch_linear(&p("down_proj"), hidden, dim, num_experts, bias)?,
        })
    }

    /// Python (the MoE part of qwen3_moe's, deepseek_v3's, ... `shard`): every expert keeps
    /// this process's slice of its hidden features, in place (`shard_inplace` of `gate_proj`
    /// and `up_proj` "all-to-sharded", of `down_proj` "sharded-to-all"): each process routes
    /// every token to the same experts and computes its share of their outputs, which the
    /// block sums over the group. A bias of `down_proj` is divided by the group size, as
    /// mlx_lm's gpt_oss divides it, so the sum adds it once. On an error the experts are
    /// left as they were.
    pub fn shard_inplace(&mut self, group: &Group) -> Result<()> {
        let projections = [&self.gate_proj, &self.up_proj, &self.down_proj];
        if projections
            .iter()
            .any(|p| matches!(p, MaybeQuantized::Adapted(_)))
        {
            return Err(mlx_rs::Error::InvalidArgument(
                "the experts have adapters: fuse them before sharding the model".into(),
            ));
        }
        if let MaybeQuantized::Quantized(down) = &self.down_proj {
            // Its hidden features are its inputs, quantized in groups: each process must keep
            // whole groups (mlx_lm's `mx.split` of the scales fails otherwise).
            let groups = *down.scales.shape().last().unwrap_or(&0);
            let n = group.size();
            if groups % n != 0 {
                return Err(mlx_rs::Error::InvalidArgument(format!(
                    "the experts' down_proj is quantized in groups of {} over its {} hidden \
                     features: {n} processes cannot each keep whole groups",
                    down.group_size,
                    groups * down.group_size
                )));
            }
        }
        let mut split = self.clone();
        shard_inplace(&mut split.gate_proj, Sharding::AllToSharded, 1, group)?;
        shard_inplace(&mut split.up_proj, Sharding::AllToSharded, 1, group)?;
        shard_inplace(&mut split.down_proj, Sharding::ShardedToAll, 1, group)?;
        let bias = match &mut split.down_proj {
            MaybeQuantized::Float(l) => l.bias.as_mut(),
            MaybeQuantized::Quantized(l) => l.bias.as_mut(),
            // Refused above.
            MaybeQuantized::Adapted(_) => None,
            MaybeQuantized::Sharded(s) => match **s {},
        };
        if let Some(b) = bias {
            *b = divide_by_group(b, group)?;
        }
        *self = split;
        Ok(())
    }

    /// `x [..., dim]` through the experts `indices [..., k]`: `[..., k, dim]`, one row per
    /// routed expert (Python: `SwitchGLU.__call__`).
    pub fn forward(&self, x: &Array, indices: &Array) -> Result<Array> {
        self.forward_with(x, indices, |up, gate| swiglu(gate, up))
    }

    /// [`forward`](Self::forward) with another gated activation, called as mlx_lm's
    /// `SwitchGLU` calls its `activation(x_up, x_gate)` (GPT-OSS's `SwigluOAI`).
    pub fn forward_with(
        &self,
        x: &Array,
        indices: &Array,
        activation: impl Fn(&Array, &Array) -> Result<Array>,
    ) -> Result<Array> {
        let x = ops::expand_dims(x, &[-2, -3][..])?;
        let indices = ops::stop_gradient(indices)?;
        let sort = indices.size() >= SORT_THRESHOLD;
        let (x, idx, inv_order) = if sort {
            let (x, idx, inv) = gather_sort(&x, &indices)?;
            (x, idx, Some(inv))
        } else {
            (x, indices.clone(), None)
        };
        let x_up = self.up_proj.forward_experts(&x, &idx, sort)?;
        let x_gate = self.gate_proj.forward_experts(&x, &idx, sort)?;
        let x = self
            .down_proj
            .forward_experts(&activation(&x_up, &x_gate)?, &idx, sort)?;
        let x = match inv_order {
            Some(inv) => scatter_unsort(&x, &inv, indices.shape())?,
            None => x,
        };
        x.squeeze(-2)
    }
}

/// Python: `SwitchMLP(input_dims, hidden_dims, num_experts, activation=nn.ReLU2())`, as
/// nemotron_h builds it: each token through its routed experts' two-layer MLPs,
/// `fc2(relu²(fc1(x)))`, one output per (token, expert).
#[derive(Debug, Clone, TreeNode)]
pub struct SwitchMlp {
    pub fc1: MaybeQuantizedSwitchLinear,
    pub fc2: MaybeQuantizedSwitchLinear,
}

impl SwitchMlp {
    /// Takes the stacked experts under `path` (`...mixer.switch_mlp`): `num_experts` experts
    /// of `dim` features in and out, `hidden` between.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        dim: i32,
        hidden: i32,
        num_experts: i32,
        bias: bool,
    ) -> crate::Result<SwitchMlp> {
        let p = |name: &str| format!("{path}.{name}");
        Ok(SwitchMlp {
            fc1: ck.switch_linear(&p("fc1"), dim, hidden, num_experts, bias)?,
            fc2: ck.switch_linear(&p("fc2"), hidden, dim, num_experts, bias)?,
        })
    }

    /// `x [..., dim]` through the experts `indices [..., k]`: `[..., k, dim]` (Python:
    /// `SwitchMLP.__call__`, with mlx_lm's sort rule).
    pub fn forward(&self, x: &Array, indices: &Array) -> Result<Array> {
        let x = ops::expand_dims(x, &[-2, -3][..])?;
        let indices = ops::stop_gradient(indices)?;
        let sort = indices.size() >= SORT_THRESHOLD;
        let (x, idx, inv_order) = if sort {
            let (x, idx, inv) = gather_sort(&x, &indices)?;
            (x, idx, Some(inv))
        } else {
            (x, indices.clone(), None)
        };
        let x = relu2(&self.fc1.forward_experts(&x, &idx, sort)?)?;
        let x = self.fc2.forward_experts(&x, &idx, sort)?;
        let x = match inv_order {
            Some(inv) => scatter_unsort(&x, &inv, indices.shape())?,
            None => x,
        };
        x.squeeze(-2)
    }
}
