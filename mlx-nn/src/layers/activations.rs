//! Activation functions and their module forms (Python: `mlx.nn.layers.activations`). Each
//! function computes exactly Python's formula, compiled where Python compiles it, so results
//! match `mlx.nn` bit for bit on the same MLX.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

use mlx_rs::compile::CompiledFn;
use mlx_rs::ops;
use mlx_rs::{Array, Error, Result};
use mlx_tree::serde_json::Value as Json;
use mlx_tree::{StaticData, TreeNode};

use crate::Forward;

/// Runs `f` on `inputs` as Python runs its activations: compiled, shapeless
/// (`@partial(mx.compile, shapeless=True)`). A compiled chain of element-wise ops is one fused
/// kernel, whose rounding can differ from the same ops run one by one (a fused kernel may
/// contract a multiply and an add), so only the same compiled graph gives Python's bits on the
/// same MLX. Non-array arguments (an axis, a slope) are constants of the graph, keyed by
/// `constants`, as Python's are: one trace per value.
fn as_python(
    slot: &'static OnceLock<CompiledFn>,
    inputs: &[&Array],
    constants: &[u64],
    f: impl Fn(&Array, &[Array]) -> Result<Array>,
) -> Result<Array> {
    let compiled = slot.get_or_init(|| CompiledFn::new(true));
    let run = |xs: &[Array]| -> Result<Vec<Array>> {
        let (x, rest) = xs
            .split_first()
            .ok_or_else(|| Error::InvalidArgument("an activation of no input".into()))?;
        Ok(vec![f(x, rest)?])
    };
    compiled
        .call_with_refs(inputs, constants, &run)?
        .pop()
        .ok_or_else(|| Error::Mlx("a compiled activation returned nothing".into()))
}

/// Declares the compiled-function slot of one activation and runs it there.
macro_rules! compiled {
    ([$($input:expr),+], [$($constant:expr),*], $f:expr) => {{
        static SLOT: OnceLock<CompiledFn> = OnceLock::new();
        as_python(&SLOT, &[$($input),+], &[$($constant),*], $f)
    }};
}

/// The bits of an `f32` argument, as a graph constant.
fn bits(v: f32) -> u64 {
    u64::from(v.to_bits())
}

/// An axis argument as a graph constant.
fn axis_key(axis: i32) -> u64 {
    u64::from(axis as u32)
}

/// `1 / (1 + exp(-x))` (Python: `nn.sigmoid`).
pub fn sigmoid(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| ops::sigmoid(x))
}

/// `max(x, 0)` (Python: `nn.relu`).
pub fn relu(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| ops::maximum(x, 0.0))
}

/// `min(max(x, 0), 6)` (Python: `nn.relu6`).
pub fn relu6(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| ops::minimum(&ops::maximum(x, 0.0)?, 6.0))
}

/// `max(negative_slope * x, x)`; `negative_slope` defaults to 0.01 (Python: `nn.leaky_relu`).
pub fn leaky_relu(x: &Array, negative_slope: impl Into<Option<f32>>) -> Result<Array> {
    let slope = negative_slope.into().unwrap_or(0.01);
    compiled!([x], [bits(slope)], |x, _| ops::maximum(&(x * slope), x))
}

/// `x - logsumexp(x, axis)`, after shifting `x` by its maximum (without a gradient), as
/// Python does: subtracting the logsumexp of a large `x` directly rounds the normalizer away;
/// `axis` defaults to -1 (Python: `nn.log_softmax`).
pub fn log_softmax(x: &Array, axis: impl Into<Option<i32>>) -> Result<Array> {
    let axis = axis.into().unwrap_or(-1);
    compiled!([x], [axis_key(axis)], |x, _| {
        let x = x - &ops::stop_gradient(&ops::max(x, axis, true)?)?;
        Ok(&x - &ops::logsumexp(&x, axis, true)?)
    })
}

/// `softmax(x, axis)`; `axis` defaults to -1 (Python: `nn.softmax`).
pub fn softmax(x: &Array, axis: impl Into<Option<i32>>) -> Result<Array> {
    let axis = axis.into().unwrap_or(-1);
    compiled!([x], [axis_key(axis)], |x, _| ops::softmax(x, axis, None))
}

/// `x if x > 0 else alpha * (exp(x) - 1)`; `alpha` defaults to 1 (Python: `nn.elu`).
pub fn elu(x: &Array, alpha: impl Into<Option<f32>>) -> Result<Array> {
    let alpha = alpha.into().unwrap_or(1.0);
    compiled!([x], [bits(alpha)], |x, _| ops::where_(
        &ops::greater(x, 0.0)?,
        x,
        &((ops::exp(x)? - 1.0) * alpha)
    ))
}

/// `log(1 + exp(x))` (Python: `nn.softplus`).
pub fn softplus(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| ops::logaddexp(x, 0.0))
}

/// `x / (1 + |x|)` (Python: `nn.softsign`).
pub fn softsign(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| ops::divide(x, &(ops::abs(x)? + 1.0)))
}

/// `x * sigmoid(x)` (Python: `nn.silu`).
pub fn silu(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| Ok(x * ops::sigmoid(x)?))
}

/// `-softplus(-x)` (Python: `nn.log_sigmoid`).
pub fn log_sigmoid(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| Ok(-softplus(&(-x))?))
}

/// The exact GELU, `x * (1 + erf(x / sqrt(2))) / 2` (Python: `nn.gelu`).
pub fn gelu(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| Ok(x
        * (ops::erf(&(x / std::f32::consts::SQRT_2))? + 1.0)
        / 2.0))
}

/// The tanh approximation of GELU (Python: `nn.gelu_approx`).
pub fn gelu_approx(x: &Array) -> Result<Array> {
    // Python's math.sqrt(2 / math.pi): f64, rounded once.
    let c = (2.0 / std::f64::consts::PI).sqrt() as f32;
    compiled!([x], [], |x, _| {
        let inner = (x + &(ops::power(x, 3.0)? * 0.044715)) * c;
        Ok((x * 0.5) * (ops::tanh(&inner)? + 1.0))
    })
}

/// The sigmoid approximation of GELU, `x * sigmoid(1.702 x)` (Python: `nn.gelu_fast_approx`).
pub fn gelu_fast_approx(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| Ok(x * ops::sigmoid(&(x * 1.702))?))
}

/// `x * tanh(softplus(x))` (Python: `nn.mish`).
pub fn mish(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| Ok(x * ops::tanh(&softplus(x)?)?))
}

/// `tanh(x)` (Python: `nn.tanh`, not compiled there).
pub fn tanh(x: &Array) -> Result<Array> {
    ops::tanh(x)
}

/// `elu(x, 1.67326) * 1.0507` (Python: `nn.selu`).
pub fn selu(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| Ok(elu(x, 1.67326)? * 1.0507))
}

/// `a * sigmoid(b)` for the two halves of `x` along `axis` (default -1) (Python: `nn.glu`,
/// not compiled there).
pub fn glu(x: &Array, axis: impl Into<Option<i32>>) -> Result<Array> {
    let parts = x.split(2, axis.into().unwrap_or(-1))?;
    Ok(&parts[0] * ops::sigmoid(&parts[1])?)
}

/// `min(max(x, min_val), max_val)`, defaults -1 and 1 (Python: `nn.hard_tanh`).
pub fn hard_tanh(
    x: &Array,
    min_val: impl Into<Option<f32>>,
    max_val: impl Into<Option<f32>>,
) -> Result<Array> {
    let lo = min_val.into().unwrap_or(-1.0);
    let hi = max_val.into().unwrap_or(1.0);
    compiled!([x], [bits(lo), bits(hi)], |x, _| ops::minimum(
        &ops::maximum(x, lo)?,
        hi
    ))
}

/// `max(x, 0)²` (Python: `nn.relu2`).
pub fn relu2(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| ops::square(&ops::maximum(x, 0.0)?))
}

/// `softmax(-x, axis)`; `axis` defaults to -1 (Python: `nn.softmin`).
pub fn softmin(x: &Array, axis: impl Into<Option<i32>>) -> Result<Array> {
    let axis = axis.into().unwrap_or(-1);
    compiled!([x], [axis_key(axis)], |x, _| ops::softmax(
        &(-x),
        axis,
        None
    ))
}

/// `x - sign(x) * lambd` where `|x| > lambd`, else 0; `lambd` defaults to 0.5 (Python:
/// `nn.softshrink`).
pub fn softshrink(x: &Array, lambd: impl Into<Option<f32>>) -> Result<Array> {
    let lambd = lambd.into().unwrap_or(0.5);
    compiled!([x], [bits(lambd)], |x, _| {
        let shrunk = x - &(ops::sign(x)? * lambd);
        ops::where_(&ops::greater(&ops::abs(x)?, lambd)?, &shrunk, 0.0)
    })
}

/// `x` where `|x| > lambd`, else 0; `lambd` defaults to 0.5 (Python: `nn.hard_shrink`).
pub fn hard_shrink(x: &Array, lambd: impl Into<Option<f32>>) -> Result<Array> {
    let lambd = lambd.into().unwrap_or(0.5);
    compiled!([x], [bits(lambd)], |x, _| ops::where_(
        &ops::greater(&ops::abs(x)?, lambd)?,
        x,
        0.0
    ))
}

/// `x * min(max(x + 3, 0), 6) / 6` (Python: `nn.hardswish`).
pub fn hardswish(x: &Array) -> Result<Array> {
    compiled!([x], [], |x, _| {
        let max_x_3 = ops::maximum(&(x + 3.0), 0.0)?;
        Ok(x * ops::minimum(&max_x_3, 6.0)? / 6.0)
    })
}

/// `max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1)`; `alpha` defaults to 1 (Python:
/// `nn.celu`).
pub fn celu(x: &Array, alpha: impl Into<Option<f32>>) -> Result<Array> {
    let alpha = alpha.into().unwrap_or(1.0);
    compiled!([x], [bits(alpha)], |x, _| {
        let negative = (ops::exp(&(ops::minimum(x, 0.0)? / alpha))? - 1.0) * alpha;
        Ok(ops::maximum(x, 0.0)? + negative)
    })
}

/// `max(0, x) + alpha * min(0, x)` with a learned `alpha` (Python: `nn.prelu`).
pub fn prelu(x: &Array, alpha: &Array) -> Result<Array> {
    compiled!([x, alpha], [], |x, rest| {
        let alpha = rest
            .first()
            .ok_or_else(|| Error::InvalidArgument("prelu needs alpha".into()))?;
        Ok(ops::maximum(0.0, x)? + alpha * &ops::minimum(0.0, x)?)
    })
}

/// 1 where `x >= threshold`, else 0, as `int32` (Python: `nn.step`, whose `mx.where(.., 1, 0)`
/// makes integers); `threshold` defaults to 0.
pub fn step(x: &Array, threshold: impl Into<Option<f32>>) -> Result<Array> {
    let threshold = threshold.into().unwrap_or(0.0);
    compiled!([x], [bits(threshold)], |x, _| ops::where_(
        &ops::greater_equal(x, threshold)?,
        1i32,
        0i32
    ))
}

macro_rules! activation_modules {
    ($( $(#[$doc:meta])* $name:ident => $f:expr; )+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, TreeNode)]
        pub struct $name;

        impl Forward for $name {
            fn forward(&self, x: &Array) -> Result<Array> {
                ($f)(x)
            }
        }
    )+};
}

activation_modules! {
    /// [`relu`] as a layer (Python: `nn.ReLU()`).
    ReLU => relu;
    /// [`relu6`] as a layer (Python: `nn.ReLU6()`).
    ReLU6 => relu6;
    /// [`silu`] as a layer (Python: `nn.SiLU()`).
    SiLU => silu;
    /// [`sigmoid`] as a layer (Python: `nn.Sigmoid()`).
    Sigmoid => sigmoid;
    /// [`tanh`] as a layer (Python: `nn.Tanh()`).
    Tanh => tanh;
    /// [`softplus`] as a layer (Python: `nn.Softplus()`).
    Softplus => softplus;
    /// [`mish`] as a layer (Python: `nn.Mish()`).
    Mish => mish;
    /// [`log_sigmoid`] as a layer (Python: `nn.LogSigmoid()`).
    LogSigmoid => log_sigmoid;
    /// [`selu`] as a layer (Python: `nn.SELU()`).
    SELU => selu;
    /// [`relu2`] as a layer (Python: `nn.ReLU2()`).
    ReLU2 => relu2;
    /// [`hardswish`] as a layer (Python: `nn.Hardswish()`).
    Hardswish => hardswish;
    /// [`softsign`] as a layer (Python: `nn.Softsign()`).
    Softsign => softsign;
    /// [`hard_tanh`] with its defaults as a layer (Python: `nn.HardTanh()`).
    HardTanh => |x| hard_tanh(x, None, None);
    /// [`softmax`] over the last axis as a layer (Python: `nn.Softmax()`).
    Softmax => |x| softmax(x, None);
    /// [`softmin`] over the last axis as a layer (Python: `nn.Softmin()`).
    Softmin => |x| softmin(x, None);
    /// [`log_softmax`] over the last axis as a layer (Python: `nn.LogSoftmax()`).
    LogSoftmax => |x| log_softmax(x, None);
}

/// Activation layers with one setting, kept as static data as Python keeps it in a private
/// attribute (not a parameter): `new` takes it (`None`: Python's default), `Default` is the
/// default.
macro_rules! configured_activations {
    ($( $(#[$doc:meta])* $name:ident($field:ident: $ty:ty = $default:expr) => $f:expr; )+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, TreeNode)]
        pub struct $name {
            #[tree(static)]
            pub $field: $ty,
        }

        impl $name {
            #[doc = concat!("A `", stringify!($name), "` with this `", stringify!($field), "`.")]
            pub fn new($field: impl Into<Option<$ty>>) -> $name {
                $name { $field: $field.into().unwrap_or($default) }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $field: $default }
            }
        }

        impl Forward for $name {
            fn forward(&self, x: &Array) -> Result<Array> {
                ($f)(x, self.$field)
            }
        }
    )+};
}

configured_activations! {
    /// [`elu`] as a layer (Python: `nn.ELU(alpha=1.0)`).
    ELU(alpha: f32 = 1.0) => elu;
    /// [`celu`] as a layer (Python: `nn.CELU(alpha=1.0)`).
    CELU(alpha: f32 = 1.0) => celu;
    /// [`leaky_relu`] as a layer (Python: `nn.LeakyReLU(negative_slope=1e-2)`).
    LeakyReLU(negative_slope: f32 = 0.01) => leaky_relu;
    /// [`glu`] as a layer (Python: `nn.GLU(axis=-1)`).
    GLU(axis: i32 = -1) => glu;
    /// [`hard_shrink`] as a layer (Python: `nn.HardShrink(lambd=0.5)`).
    HardShrink(lambd: f32 = 0.5) => hard_shrink;
    /// [`softshrink`] as a layer (Python: `nn.Softshrink(lambd=0.5)`).
    Softshrink(lambd: f32 = 0.5) => softshrink;
    /// [`step`] as a layer (Python: `nn.Step(threshold=0.0)`).
    Step(threshold: f32 = 0.0) => step;
}

/// [`prelu`] as a layer with `num_parameters` learned slopes, each starting at `init` (Python:
/// `nn.PReLU(num_parameters=1, init=0.25)`); the slopes are the parameter `weight`.
#[derive(Debug, Clone, TreeNode)]
pub struct PReLU {
    pub weight: Array,
}

impl PReLU {
    /// `num_parameters` (default 1) slopes of `init` (default 0.25).
    pub fn new(
        num_parameters: impl Into<Option<i32>>,
        init: impl Into<Option<f32>>,
    ) -> Result<PReLU> {
        let n = num_parameters.into().unwrap_or(1);
        Ok(PReLU {
            weight: ops::full(&[n], init.into().unwrap_or(0.25), None)?,
        })
    }
}

impl Forward for PReLU {
    fn forward(&self, x: &Array) -> Result<Array> {
        prelu(x, &self.weight)
    }
}

/// Which GELU formula [`GELU`] uses (Python: `nn.GELU(approx="none" | "precise" | "tanh" |
/// "fast")`; `"precise"` and `"tanh"` are the same formula).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, mlx_tree::StaticData)]
pub enum GeluApprox {
    /// [`gelu`].
    #[default]
    None,
    /// [`gelu_approx`].
    Tanh,
    /// [`gelu_fast_approx`].
    Fast,
}

/// GELU as a layer (Python: `nn.GELU(approx="none")`).
#[derive(Debug, Clone, Copy, Default, TreeNode)]
pub struct GELU {
    #[tree(static)]
    pub approx: GeluApprox,
}

impl Forward for GELU {
    fn forward(&self, x: &Array) -> Result<Array> {
        match self.approx {
            GeluApprox::None => gelu(x),
            GeluApprox::Tanh => gelu_approx(x),
            GeluApprox::Fast => gelu_fast_approx(x),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Activation

/// An activation function as a layer's argument: what a transformer layer applies between its
/// two MLP projections (Python: `activation=`, default `nn.relu`) and an [`RNN`](crate::RNN)
/// at each step (Python: `nonlinearity=`, default `mx.tanh`); Python takes any callable.
///
/// A named function pointer, kept as static data of the layer: a compiled function retraces
/// when it changes, and two values are the same when their names and functions are. The
/// one-argument activations of this crate ([`Activation::named`]) can be written into an
/// exported function's structure and read back by name; a function made with
/// [`Activation::new`] cannot (there is no way to read a function back), which is an `Err`
/// there.
///
/// ```
/// use mlx_nn::{Activation, TransformerEncoderLayer, TransformerLayerOptions};
/// let gelu = Activation::named("gelu")?;
/// let layer = TransformerEncoderLayer::new(16, 4, TransformerLayerOptions::default().activation(gelu))?;
/// assert_eq!(layer.activation.name(), "gelu");
/// // Any function of one array, under a name of your choosing.
/// let square = Activation::new("square", |x| x.square());
/// assert_eq!(square.apply(&mlx_rs::Array::from(3.0f32))?.item::<f32>()?, 9.0);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct Activation {
    name: &'static str,
    function: ActivationFn,
}

/// A function of one array, as an [`Activation`] holds it.
type ActivationFn = fn(&Array) -> Result<Array>;

/// The activations that [`Activation::named`] knows, under their Python names.
const NAMED: &[(&str, ActivationFn)] = &[
    ("relu", relu),
    ("relu6", relu6),
    ("relu2", relu2),
    ("gelu", gelu),
    ("gelu_approx", gelu_approx),
    ("gelu_fast_approx", gelu_fast_approx),
    ("silu", silu),
    ("sigmoid", sigmoid),
    ("tanh", tanh),
    ("mish", mish),
    ("selu", selu),
    ("softplus", softplus),
    ("softsign", softsign),
    ("log_sigmoid", log_sigmoid),
    ("hardswish", hardswish),
];

impl Activation {
    /// `nn.relu`, the transformer layers' default.
    pub const RELU: Activation = Activation {
        name: "relu",
        function: relu,
    };

    /// `tanh`, the RNN's default.
    pub const TANH: Activation = Activation {
        name: "tanh",
        function: tanh,
    };

    /// A function with the name it is shown (and compared) under.
    pub fn new(name: &'static str, function: ActivationFn) -> Activation {
        Activation { name, function }
    }

    /// One of this crate's one-argument activations by its Python name (`"relu"`, `"gelu"`,
    /// `"gelu_approx"`, `"gelu_fast_approx"`, `"silu"`, `"sigmoid"`, `"tanh"`, `"mish"`,
    /// `"selu"`, `"relu6"`, `"relu2"`, `"softplus"`, `"softsign"`, `"log_sigmoid"`,
    /// `"hardswish"`); an `Err` for another name.
    pub fn named(name: &str) -> Result<Activation> {
        NAMED
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(name, function)| Activation { name, function })
            .ok_or_else(|| {
                Error::InvalidArgument(format!("`{name}` is not a known activation function"))
            })
    }

    /// The name it was given.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Applies the function.
    pub fn apply(&self, x: &Array) -> Result<Array> {
        (self.function)(x)
    }

    /// The function's address: how two values with the same name are told apart.
    fn address(&self) -> usize {
        self.function as usize
    }
}

impl Default for Activation {
    fn default() -> Self {
        Activation::RELU
    }
}

impl fmt::Debug for Activation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Activation").field(&self.name).finish()
    }
}

impl StaticData for Activation {
    fn static_eq(&self, other: &Self) -> bool {
        self.name == other.name && self.address() == other.address()
    }

    fn static_hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.address().hash(state);
    }

    fn to_json(&self) -> Result<Json> {
        match Activation::named(self.name) {
            Ok(known) if known.static_eq(self) => Ok(Json::String(self.name.to_string())),
            _ => Err(Error::InvalidArgument(format!(
                "the activation `{}` is a function and cannot be written; only the activations \
                 of `Activation::named` can",
                self.name
            ))),
        }
    }

    fn from_json(json: &Json) -> Result<Self> {
        match json.as_str() {
            Some(name) => Activation::named(name),
            None => Err(Error::InvalidArgument(format!(
                "static data {json} is not an activation name"
            ))),
        }
    }
}
