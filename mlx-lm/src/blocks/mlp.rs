//! The feed-forward (channel-mixing) layers.

use mlx_nn::{
    shard_inplace, shard_linear, Forward, MaybeQuantized, MaybeQuantizedLinear, Sharding,
};
use mlx_rs::distributed::Group;
use mlx_rs::{ops, Array, Result};
use mlx_tree::{StaticData, TreeNode};

use crate::checkpoint::Checkpoint;
use crate::config::{invalid, ModelConfig};

/// Python: `x * sigmoid(x)` (`nn.silu`).
pub fn silu(x: &Array) -> Result<Array> {
    ops::multiply(x, &ops::sigmoid(x)?)
}

/// Python: `swiglu(gate, x)`: `silu(gate) * x` (mlx_lm compiles it; on the same libmlx the
/// separate ops give the same values).
pub fn swiglu(gate: &Array, x: &Array) -> Result<Array> {
    ops::multiply(&silu(gate)?, x)
}

/// Python: `swiglu_oai(gate, x, alpha=1.702, limit=7.0)`, GPT-OSS's gated activation: the
/// gate clipped from above only, the linear part clipped both ways and shifted by one,
/// `(clip(x, -limit, limit) + 1) * (g * sigmoid(alpha * g))` with `g = minimum(gate, limit)`.
/// mlx_lm compiles it (shapeless); on the CPU the compiled and the separate ops give the same
/// bits (measured: float32, bfloat16 and float16, every element equal).
pub fn swiglu_oai(gate: &Array, x: &Array, alpha: f32, limit: f32) -> Result<Array> {
    let gate = ops::minimum(gate, limit)?;
    let x = ops::clip(x, -limit, limit)?;
    let glu = ops::multiply(&gate, &ops::sigmoid(&ops::multiply(alpha, &gate)?)?)?;
    ops::multiply(&ops::add(&x, 1.0f32)?, &glu)
}

/// Python: `nn.relu2`, `square(maximum(x, 0))` (the 0 takes x's dtype).
pub fn relu2(x: &Array) -> Result<Array> {
    ops::square(&ops::maximum(x, &ops::zeros(&[], x.dtype())?)?)
}

/// The activation of an MLP's gate (or of its one hidden layer), as mlx_lm's files call it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, StaticData)]
pub enum Activation {
    /// `nn.silu` (in a gated MLP: `swiglu`).
    #[default]
    Silu,
    /// `nn.gelu`: the exact, erf-based GELU.
    Gelu,
    /// `nn.gelu_approx`: the tanh approximation (transformers' `gelu_pytorch_tanh`,
    /// `gelu_new`).
    GeluApprox,
}

impl Activation {
    /// The activation a transformers config's `hidden_act` (or `activation_function`) names:
    /// transformers' `ACT2FN` keys that are one of these (`gelu` is the exact GELU;
    /// `gelu_pytorch_tanh`, `gelu_new` and `gelu_fast` the tanh approximation, the last
    /// with its constants written out; `swish` is SiLU).
    pub fn from_hidden_act(name: &str) -> Option<Activation> {
        match name {
            "silu" | "swish" => Some(Activation::Silu),
            "gelu" => Some(Activation::Gelu),
            "gelu_pytorch_tanh" | "gelu_new" | "gelu_fast" => Some(Activation::GeluApprox),
            _ => None,
        }
    }

    /// The GELU a config's `hidden_act` names (`default` when absent), for the families
    /// whose one-hidden-layer MLP computes one (phi, gpt_neox, starcoder2); another
    /// activation is an error naming `family`.
    pub fn gelu_from_config(
        c: &ModelConfig,
        default: &str,
        family: &str,
    ) -> crate::Result<Activation> {
        let act = c.string("hidden_act")?.unwrap_or(default);
        match Activation::from_hidden_act(act) {
            Some(a @ (Activation::Gelu | Activation::GeluApprox)) => Ok(a),
            _ => Err(invalid(
                c.path(),
                &c.key("hidden_act"),
                &format!(
                    "{act:?} is not supported by {family} (supported: \"gelu\", \"gelu_new\", \
                     \"gelu_pytorch_tanh\", \"gelu_fast\")"
                ),
            )),
        }
    }

    pub fn apply(self, x: &Array) -> Result<Array> {
        match self {
            Activation::Silu => silu(x),
            Activation::Gelu => mlx_nn::gelu(x),
            Activation::GeluApprox => mlx_nn::gelu_approx(x),
        }
    }

    /// `act(gate) * x`, as mlx_lm writes each family's gated MLP (`swiglu` for silu).
    pub fn gated(self, gate: &Array, x: &Array) -> Result<Array> {
        match self {
            Activation::Silu => swiglu(gate, x),
            act => ops::multiply(&act.apply(gate)?, x),
        }
    }
}

/// Python: `MLP` of llama / qwen2 / qwen3 / Qwen3.5 (SwiGLU,
/// `down_proj(silu(gate_proj(x)) * up_proj(x))`) and of the Gemmas (GeGLU: another
/// [`Activation`]).
#[derive(Debug, Clone, TreeNode)]
pub struct Mlp {
    pub gate_proj: MaybeQuantizedLinear,
    pub down_proj: MaybeQuantizedLinear,
    pub up_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub activation: Activation,
}

impl Mlp {
    /// Takes the layer's tensors under `path`: `dim` features in and out, `hidden` between;
    /// SwiGLU.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        dim: i32,
        hidden: i32,
        bias: bool,
    ) -> crate::Result<Mlp> {
        Ok(Mlp {
            gate_proj: ck.linear(&format!("{path}.gate_proj"), dim, hidden, bias)?,
            down_proj: ck.linear(&format!("{path}.down_proj"), hidden, dim, bias)?,
            up_proj: ck.linear(&format!("{path}.up_proj"), dim, hidden, bias)?,
            activation: Activation::Silu,
        })
    }

    /// The same MLP with another gate activation.
    pub fn with_activation(self, activation: Activation) -> Mlp {
        Mlp { activation, ..self }
    }
}

impl Mlp {
    /// Python (llama's `shard`): the gate and up projections keep this process's slice of
    /// the hidden features, the down projection sums the slices' products over `group`.
    pub fn shard(&mut self, group: &Group) -> Result<()> {
        let gate_proj = shard_linear(&self.gate_proj, Sharding::AllToSharded, 1, group)?;
        let up_proj = shard_linear(&self.up_proj, Sharding::AllToSharded, 1, group)?;
        let down_proj = shard_linear(&self.down_proj, Sharding::ShardedToAll, 1, group)?;
        self.gate_proj = MaybeQuantized::Sharded(Box::new(gate_proj));
        self.up_proj = MaybeQuantized::Sharded(Box::new(up_proj));
        self.down_proj = MaybeQuantized::Sharded(Box::new(down_proj));
        Ok(())
    }

    /// Python (deepseek_v3's `shard` of the shared experts): the same slices as
    /// [`shard`](Self::shard), in place, the layers' types unchanged: the down projection
    /// gives this process's share of the output, which the block that holds the MLP sums
    /// over the group. A bias of the down projection is divided by the group size (as
    /// mlx_lm's gpt_oss divides its experts' `down_proj.bias`), so the sum adds it once.
    pub fn shard_inplace(&mut self, group: &Group) -> Result<()> {
        let mut split = self.clone();
        shard_inplace(&mut split.gate_proj, Sharding::AllToSharded, 1, group)?;
        shard_inplace(&mut split.up_proj, Sharding::AllToSharded, 1, group)?;
        shard_inplace(&mut split.down_proj, Sharding::ShardedToAll, 1, group)?;
        let bias = match &mut split.down_proj {
            MaybeQuantized::Float(l) => l.bias.as_mut(),
            MaybeQuantized::Quantized(l) => l.bias.as_mut(),
            _ => {
                return Err(mlx_rs::Error::InvalidArgument(
                    "[shard] an adapted or sharded MLP cannot be split again".into(),
                ))
            }
        };
        if let Some(b) = bias {
            *b = divide_by_group(b, group)?;
        }
        *self = split;
        Ok(())
    }
}

/// `b / group.size()` in `b`'s dtype (Python: `bias /= N`, a weak scalar).
pub(crate) fn divide_by_group(b: &Array, group: &Group) -> Result<Array> {
    let n = Array::from_scalar(group.size() as f32).astype(b.dtype())?;
    ops::divide(b, &n)
}

impl Forward for Mlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        let gate = self.gate_proj.forward(x)?;
        let hidden = self.activation.gated(&gate, &self.up_proj.forward(x)?)?;
        self.down_proj.forward(&hidden)
    }
}

/// Python: the one-hidden-layer MLP of starcoder2 and gpt2 (`MLP`),
/// `c_proj(act(c_fc(x)))`.
#[derive(Debug, Clone, TreeNode)]
pub struct PlainMlp {
    pub c_fc: MaybeQuantizedLinear,
    pub c_proj: MaybeQuantizedLinear,
    #[tree(static)]
    pub activation: Activation,
}

impl PlainMlp {
    /// Takes the layer's tensors under `path`: `dim` features in and out, `hidden` between,
    /// both with biases.
    pub fn load(
        ck: &mut Checkpoint,
        path: &str,
        dim: i32,
        hidden: i32,
        activation: Activation,
    ) -> crate::Result<PlainMlp> {
        Ok(PlainMlp {
            c_fc: ck.linear(&format!("{path}.c_fc"), dim, hidden, true)?,
            c_proj: ck.linear(&format!("{path}.c_proj"), hidden, dim, true)?,
            activation,
        })
    }
}

impl Forward for PlainMlp {
    fn forward(&self, x: &Array) -> Result<Array> {
        plain_mlp(&self.c_fc, &self.c_proj, self.activation, x)
    }
}

/// `fc_out(act(fc_in(x)))`: the one-hidden-layer MLP whatever a family names its two
/// projections (phi's `fc1` / `fc2`, gpt_neox's `dense_h_to_4h` / `dense_4h_to_h`).
pub fn plain_mlp(
    fc_in: &MaybeQuantizedLinear,
    fc_out: &MaybeQuantizedLinear,
    activation: Activation,
    x: &Array,
) -> Result<Array> {
    fc_out.forward(&activation.apply(&fc_in.forward(x)?)?)
}
