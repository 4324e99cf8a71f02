//! Layers (Python: `mlx.nn.layers`). Every layer is a plain struct deriving [`TreeNode`]: its
//! array fields are its parameters, named as in Python (`weight`, `bias`, `scales`, ...), so a
//! model built from them has Python's parameter paths.

use mlx_rs::fast::{self, AttentionMask, RopeOffset};
use mlx_rs::ops::{
    self, ConvOptions, DequantizeOptions, QuantizationMode, QuantizeOptions, QuantizedMatmulOptions,
};
use mlx_rs::random::{self, NormalOptions, UniformOptions};
use mlx_rs::{Array, Dtype, Error, Result};
use mlx_tree::TreeNode;

use crate::kept_transpose::KeptTranspose;
use crate::module::Frozen;
use crate::Forward;

/// `y + bias` when the layer has a bias; a shape error is an `Err`, not a panic.
pub(crate) fn with_bias(y: Array, bias: Option<&Array>) -> Result<Array> {
    match bias {
        Some(b) => ops::add(&y, b),
        None => Ok(y),
    }
}

/// Python's `math.sqrt(1 / n)` for an integer `n`: in f64, rounded to f32 once where it meets
/// an array. Computed in f32 it differs in the last bit for many `n` (784 among them), and so
/// do seeded initializations and attention scales.
pub(crate) fn inv_sqrt(n: f64) -> f32 {
    (1.0 / n).sqrt() as f32
}

pub(crate) fn uniform_init(scale: f32, shape: &[i32]) -> Result<Array> {
    random::uniform(
        shape,
        UniformOptions::default().low(-scale).high(scale),
        None,
    )
}

// ---------------------------------------------------------------------------------------------
// Linear

/// `y = x W^T + b` (Python: `nn.Linear(input_dims, output_dims, bias=True)`). Weights are
/// `(output_dims, input_dims)`, initialized uniformly in `±sqrt(1 / input_dims)`.
///
/// ```
/// use mlx_nn::Linear;
/// let with_bias = Linear::new(4, 2, None)?; // nn.Linear(4, 2)
/// let without = Linear::new(4, 2, false)?; // nn.Linear(4, 2, bias=False)
/// assert!(with_bias.bias.is_some() && without.bias.is_none());
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct Linear {
    pub weight: Array,
    pub bias: Option<Array>,
    #[tree(static)]
    pub frozen: Frozen,
    #[tree(skip)]
    kept: KeptTranspose,
}

/// Returns its input (Python: `nn.Identity()`), a placeholder where a layer is optional.
#[derive(Debug, Clone, Copy, Default, TreeNode)]
pub struct Identity;

impl Forward for Identity {
    fn forward(&self, x: &Array) -> Result<Array> {
        Ok(x.clone())
    }
}

impl Linear {
    /// A new layer with random weights (Python's initialization); `bias` `None` is `true`.
    pub fn new(input_dims: i32, output_dims: i32, bias: impl Into<Option<bool>>) -> Result<Linear> {
        let scale = inv_sqrt(f64::from(input_dims));
        Ok(Linear {
            weight: uniform_init(scale, &[output_dims, input_dims])?,
            bias: if bias.into().unwrap_or(true) {
                Some(uniform_init(scale, &[output_dims])?)
            } else {
                None
            },
            frozen: Frozen::default(),
            kept: KeptTranspose::default(),
        })
    }

    /// A layer from given arrays.
    pub fn from_weights(weight: Array, bias: Option<Array>) -> Linear {
        Linear {
            weight,
            bias,
            frozen: Frozen::default(),
            kept: KeptTranspose::default(),
        }
    }

    /// Evaluates `weight.T` once and keeps it, for a layer that will be applied many times
    /// with this weight (inference): its graphs then have no transpose primitive, which MLX
    /// would otherwise dispatch on every call. The kept view is used only while `weight` is
    /// the array it was made from; a new weight, or a layer rebuilt from a tree (`tree_map`,
    /// transforms, `update_parameters`), transposes as usual. Evaluates the weight; not for
    /// use inside a transform.
    ///
    /// ```
    /// use mlx_nn::{Forward, Linear};
    /// use mlx_rs::ops;
    /// let mut layer = Linear::new(4, 2, None)?;
    /// let x = ops::ones(&[3, 4], None)?;
    /// let before = layer.forward(&x)?;
    /// layer.keep_transposed_weight()?;
    /// assert!(ops::array_equal(&layer.forward(&x)?, &before, false)?.item::<bool>()?);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn keep_transposed_weight(&mut self) -> Result<()> {
        self.kept = KeptTranspose::of(&self.weight)?;
        Ok(())
    }

    /// The 4-bit (or `bits`) quantized equivalent (Python: `linear.to_quantized(group_size,
    /// bits, mode)`).
    pub fn to_quantized(
        &self,
        group_size: Option<i32>,
        bits: Option<i32>,
    ) -> Result<QuantizedLinear> {
        QuantizedLinear::from_linear(self, group_size, bits)
    }
}

impl Forward for Linear {
    /// Applies the layer (Python: `linear(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        match &self.bias {
            Some(b) => ops::addmm(b, x, &self.kept.of_weight(&self.weight)?, None, None),
            None => ops::matmul(x, &self.kept.of_weight(&self.weight)?),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Embedding

/// A lookup table of `dims`-vectors (Python: `nn.Embedding(num_embeddings, dims)`),
/// initialized from a normal with scale `sqrt(1 / dims)`.
#[derive(Debug, Clone, TreeNode)]
pub struct Embedding {
    pub weight: Array,
    #[tree(static)]
    pub frozen: Frozen,
    #[tree(skip)]
    kept: KeptTranspose,
}

impl Embedding {
    /// A new table with random entries.
    pub fn new(num_embeddings: i32, dims: i32) -> Result<Embedding> {
        let scale = inv_sqrt(f64::from(dims));
        Ok(Embedding {
            weight: random::normal(
                &[num_embeddings, dims],
                NormalOptions::default().scale(scale),
                None,
            )?,
            frozen: Frozen::default(),
            kept: KeptTranspose::default(),
        })
    }

    /// A table from a given array.
    pub fn from_weights(weight: Array) -> Embedding {
        Embedding {
            weight,
            frozen: Frozen::default(),
            kept: KeptTranspose::default(),
        }
    }

    /// Keeps the table's transpose for [`as_linear`](Self::as_linear), as
    /// [`Linear::keep_transposed_weight`] does.
    pub fn keep_transposed_weight(&mut self) -> Result<()> {
        self.kept = KeptTranspose::of(&self.weight)?;
        Ok(())
    }

    /// Uses the table as a linear layer (tied output projection) (Python:
    /// `embedding.as_linear(x)`).
    pub fn as_linear(&self, x: &Array) -> Result<Array> {
        ops::matmul(x, &self.kept.of_weight(&self.weight)?)
    }

    /// The quantized equivalent (Python: `embedding.to_quantized(group_size, bits)`).
    pub fn to_quantized(
        &self,
        group_size: Option<i32>,
        bits: Option<i32>,
    ) -> Result<QuantizedEmbedding> {
        QuantizedEmbedding::from_embedding(self, group_size, bits)
    }
}

impl Forward for Embedding {
    /// The rows for integer indices `x` (Python: `embedding(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        ops::take(&self.weight, x, 0)
    }
}

// ---------------------------------------------------------------------------------------------
// Normalization

/// Root-mean-square normalization over the last axis (Python: `nn.RMSNorm(dims, eps=1e-5)`).
#[derive(Debug, Clone, TreeNode)]
pub struct RMSNorm {
    pub weight: Array,
    #[tree(static)]
    pub eps: f32,
    #[tree(static)]
    pub frozen: Frozen,
}

impl RMSNorm {
    /// `eps` defaults to `1e-5`.
    pub fn new(dims: i32, eps: impl Into<Option<f32>>) -> Result<RMSNorm> {
        Ok(RMSNorm {
            weight: ops::ones(&[dims], None)?,
            eps: eps.into().unwrap_or(1e-5),
            frozen: Frozen::default(),
        })
    }
}

impl Forward for RMSNorm {
    /// Applies the layer (Python: `norm(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        fast::rms_norm(x, Some(&self.weight), self.eps)
    }
}

/// Layer normalization over the last axis (Python: `nn.LayerNorm(dims, eps=1e-5, affine=True,
/// bias=True)`).
#[derive(Debug, Clone, TreeNode)]
pub struct LayerNorm {
    pub weight: Option<Array>,
    pub bias: Option<Array>,
    #[tree(static)]
    pub eps: f32,
    #[tree(static)]
    pub frozen: Frozen,
}

mlx_rs::options! {
    /// The keyword arguments of [`LayerNorm::new`], with Python's defaults (`eps=1e-5`,
    /// `affine=True`, `bias=True`). `affine` and `bias` decide which parameters exist, so they are
    /// given before the layer is built.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct LayerNormOptions {
        eps: plain f32 = 1e-5,
        affine: plain bool = true,
        bias: plain bool = true,
    }
}

impl LayerNorm {
    /// A new layer (weight ones, bias zeros, as Python).
    ///
    /// ```
    /// use mlx_nn::{LayerNorm, LayerNormOptions, Module};
    /// let ln = LayerNorm::new(8, LayerNormOptions::default().bias(false))?;
    /// assert_eq!(ln.num_parameters()?, 8);
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn new(dims: i32, options: LayerNormOptions) -> Result<LayerNorm> {
        let LayerNormOptions { eps, affine, bias } = options;
        Ok(LayerNorm {
            weight: if affine {
                Some(ops::ones(&[dims], None)?)
            } else {
                None
            },
            bias: zero_bias(affine && bias, dims)?,
            eps,
            frozen: Frozen::default(),
        })
    }
}

impl Forward for LayerNorm {
    /// Applies the layer (Python: `norm(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        fast::layer_norm(x, self.weight.as_ref(), self.bias.as_ref(), self.eps)
    }
}

// ---------------------------------------------------------------------------------------------
// Dropout

/// Zeroes entries with probability `p` and scales the rest by `1 / (1 - p)` in training mode;
/// the identity in evaluation mode (Python: `nn.Dropout(p=0.5)`).
///
/// The mask is drawn from MLX's global random state, as in Python; [`Dropout::forward_with_key`]
/// takes an explicit key (use that inside compiled functions, passing the key as state).
#[derive(Debug, Clone, TreeNode)]
pub struct Dropout {
    /// The probability of zeroing an element (f64 as Python's float: the keep probability
    /// `1 - p` and the scale `1 / (1 - p)` are computed before they meet an array).
    #[tree(static)]
    pub p: f64,
    #[tree(static)]
    pub training: bool,
}

/// Python's check of a dropout probability.
fn check_dropout(p: f64) -> Result<()> {
    if !(0.0..1.0).contains(&p) {
        return Err(Error::InvalidArgument(format!(
            "The dropout probability {p} is not in [0, 1)"
        )));
    }
    Ok(())
}

/// `(mask * x) * (1 / keep)` with a Bernoulli(`keep`) mask of `mask_shape`, `keep = 1 - p`
/// (f64, rounded once where it meets an array, as Python's `self._p_1`).
fn drop_out(x: &Array, p: f64, mask_shape: &[i32], key: Option<&Array>) -> Result<Array> {
    let keep = 1.0 - p;
    let mask = random::bernoulli(keep as f32, Some(mask_shape), key)?;
    Ok((&mask * x) * (1.0 / keep) as f32)
}

impl Dropout {
    /// `p` defaults to `0.5`; errors unless `0 <= p < 1`. A new layer is in training mode.
    pub fn new(p: impl Into<Option<f64>>) -> Result<Dropout> {
        let p = p.into().unwrap_or(0.5);
        check_dropout(p)?;
        Ok(Dropout { p, training: true })
    }

    /// Applies the layer with a mask drawn from `key`.
    pub fn forward_with_key(&self, x: &Array, key: Option<&Array>) -> Result<Array> {
        if self.p == 0.0 || !self.training {
            return Ok(x.clone());
        }
        drop_out(x, self.p, x.shape(), key)
    }
}

impl Forward for Dropout {
    /// Applies the layer with a mask from the global random state.
    fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_with_key(x, None)
    }
}

macro_rules! channel_dropout {
    ($( $(#[$doc:meta])* $name:ident: $spatial:literal; )+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, TreeNode)]
        pub struct $name {
            /// The probability of zeroing a channel (f64, as [`Dropout::p`]).
            #[tree(static)]
            pub p: f64,
            #[tree(static)]
            pub training: bool,
        }

        impl $name {
            /// `p` defaults to `0.5`; errors unless `0 <= p < 1`. A new layer is in training
            /// mode.
            pub fn new(p: impl Into<Option<f64>>) -> Result<$name> {
                let p = p.into().unwrap_or(0.5);
                check_dropout(p)?;
                Ok($name { p, training: true })
            }

            /// Applies the layer with a mask drawn from `key`.
            pub fn forward_with_key(&self, x: &Array, key: Option<&Array>) -> Result<Array> {
                let ndim = x.ndim();
                if ndim != $spatial + 1 && ndim != $spatial + 2 {
                    return Err(Error::InvalidArgument(format!(
                        "Received input with {ndim} dimensions. Expected {} or {} dimensions.",
                        $spatial + 1,
                        $spatial + 2
                    )));
                }
                if self.p == 0.0 || !self.training {
                    return Ok(x.clone());
                }
                // One draw per channel (and batch entry): the spatial axes are 1.
                let mut mask_shape = x.shape().to_vec();
                for d in &mut mask_shape[ndim - 1 - $spatial..ndim - 1] {
                    *d = 1;
                }
                drop_out(x, self.p, &mask_shape, key)
            }
        }

        impl Forward for $name {
            /// Applies the layer with a mask from the global random state.
            fn forward(&self, x: &Array) -> Result<Array> {
                self.forward_with_key(x, None)
            }
        }
    )+};
}

channel_dropout! {
    /// Zeroes whole channels of `[B, H, W, C]` (or `[H, W, C]`) inputs (Python:
    /// `nn.Dropout2d(p=0.5)`), scaling the rest by `1 / (1 - p)`.
    Dropout2d: 2;
    /// Zeroes whole channels of `[B, D, H, W, C]` (or `[D, H, W, C]`) inputs (Python:
    /// `nn.Dropout3d(p=0.5)`), scaling the rest by `1 / (1 - p)`.
    Dropout3d: 3;
}

// ---------------------------------------------------------------------------------------------
// RoPE

/// Rotary positional encoding (Python: `nn.RoPE(dims, traditional=False, base=10000,
/// scale=1.0)`); no parameters.
#[derive(Debug, Clone, TreeNode)]
pub struct RoPE {
    #[tree(static)]
    pub dims: i32,
    #[tree(static)]
    pub traditional: bool,
    #[tree(static)]
    pub base: f32,
    #[tree(static)]
    pub scale: f32,
}

impl RoPE {
    /// Python's defaults (`traditional=False`, `base=10000`, `scale=1.0`); change them with
    /// the builder methods: `RoPE::new(64).traditional(true).base(500_000.0)`.
    pub fn new(dims: i32) -> RoPE {
        RoPE {
            dims,
            traditional: false,
            base: 10000.0,
            scale: 1.0,
        }
    }

    /// Rotates consecutive pairs instead of the two halves (Python: `traditional=False`).
    pub fn traditional(mut self, traditional: bool) -> Self {
        self.traditional = traditional;
        self
    }

    /// The base of the frequencies (Python: `base=10000`).
    pub fn base(mut self, base: f32) -> Self {
        self.base = base;
        self
    }

    /// The scale of the positions (Python: `scale=1.0`).
    pub fn scale(mut self, scale: f32) -> Self {
        self.scale = scale;
        self
    }

    /// Rotates `x` (`[..., length, dims]`) for positions starting at `offset` (an integer, or
    /// an array so a compiled decode step does not retrace as the position moves).
    pub fn forward<'o>(&self, x: &Array, offset: impl Into<RopeOffset<'o>>) -> Result<Array> {
        fast::rope(
            x,
            self.dims,
            self.traditional,
            Some(self.base),
            self.scale,
            offset,
            None,
        )
    }
}

// ---------------------------------------------------------------------------------------------
// MultiHeadAttention

/// Multi-head attention with input and output projections (Python: `nn.MultiHeadAttention(dims,
/// num_heads, query_input_dims=None, key_input_dims=None, value_input_dims=None,
/// value_dims=None, value_output_dims=None, bias=False)`), through
/// [`fast::scaled_dot_product_attention`].
///
/// Beyond Python: [`MultiHeadAttention::with_kv_heads`] makes grouped-query attention (fewer
/// key/value heads than query heads), which the fused kernel broadcasts.
#[derive(Debug, Clone, TreeNode)]
pub struct MultiHeadAttention {
    pub query_proj: Linear,
    pub key_proj: Linear,
    pub value_proj: Linear,
    pub out_proj: Linear,
    #[tree(static)]
    pub num_heads: i32,
    #[tree(static)]
    pub num_kv_heads: i32,
}

mlx_rs::options! {
    /// Options of [`MultiHeadAttention::new`], with Python's defaults (`None` for the dims:
    /// `dims`; `bias=False`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct MultiHeadAttentionOptions {
        /// The feature size of the queries' input.
        query_input_dims: opt i32 = None,
        /// The feature size of the keys' input.
        key_input_dims: opt i32 = None,
        /// The feature size of the values' input.
        value_input_dims: opt i32 = None,
        /// The size of the value projection.
        value_dims: opt i32 = None,
        /// The size of the output projection's output.
        value_output_dims: opt i32 = None,
        /// Whether the projections have biases.
        bias: plain bool = false,
    }
}

impl MultiHeadAttention {
    /// A new layer; errors if `dims` is not divisible by `num_heads`.
    pub fn new(
        dims: i32,
        num_heads: i32,
        options: MultiHeadAttentionOptions,
    ) -> Result<MultiHeadAttention> {
        Self::with_kv_heads(dims, num_heads, num_heads, options)
    }

    /// Grouped-query attention: `num_kv_heads` key/value heads shared by `num_heads` query
    /// heads (`num_heads` must be a multiple of it).
    pub fn with_kv_heads(
        dims: i32,
        num_heads: i32,
        num_kv_heads: i32,
        options: MultiHeadAttentionOptions,
    ) -> Result<MultiHeadAttention> {
        if num_heads <= 0 || dims % num_heads != 0 {
            return Err(Error::InvalidArgument(format!(
                "The input feature dimensions should be divisible by the number of heads ({dims} % {num_heads}) != 0"
            )));
        }
        if num_kv_heads <= 0 || num_heads % num_kv_heads != 0 {
            return Err(Error::InvalidArgument(format!(
                "num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})"
            )));
        }
        let o = options;
        let q_in = o.query_input_dims.unwrap_or(dims);
        let k_in = o.key_input_dims.unwrap_or(dims);
        let v_in = o.value_input_dims.unwrap_or(k_in);
        let v_dims = o.value_dims.unwrap_or(dims);
        let v_out = o.value_output_dims.unwrap_or(dims);
        let kv = |d: i32| d / num_heads * num_kv_heads;
        Ok(MultiHeadAttention {
            query_proj: Linear::new(q_in, dims, o.bias)?,
            key_proj: Linear::new(k_in, kv(dims), o.bias)?,
            value_proj: Linear::new(v_in, kv(v_dims), o.bias)?,
            out_proj: Linear::new(v_dims, v_out, o.bias)?,
            num_heads,
            num_kv_heads,
        })
    }

    fn heads(x: &Array, n: i32) -> Result<Array> {
        ops::unflatten(x, -1, &[n, -1])?.transpose([0, 2, 1, 3])
    }

    /// Attends `queries` (`[B, L, dims]`) to `keys`/`values` (Python: `mha(queries, keys,
    /// values, mask=None)`).
    pub fn forward<'m>(
        &self,
        queries: &Array,
        keys: &Array,
        values: &Array,
        mask: impl Into<AttentionMask<'m>>,
    ) -> Result<Array> {
        let q = Self::heads(&self.query_proj.forward(queries)?, self.num_heads)?;
        let k = Self::heads(&self.key_proj.forward(keys)?, self.num_kv_heads)?;
        let v = Self::heads(&self.value_proj.forward(values)?, self.num_kv_heads)?;
        let scale = inv_sqrt(f64::from(q.shape()[3]));
        let out = fast::scaled_dot_product_attention(&q, &k, &v, scale, mask, None)?;
        let out = out.transpose([0, 2, 1, 3])?.flatten(-2, -1)?;
        self.out_proj.forward(&out)
    }

    /// An additive causal mask of `n x n` (Python:
    /// `nn.MultiHeadAttention.create_additive_causal_mask(N, dtype=float32)`).
    pub fn create_additive_causal_mask(n: i32, dtype: impl Into<Option<Dtype>>) -> Result<Array> {
        let dtype = dtype.into().unwrap_or(Dtype::Float32);
        let idx = ops::arange_to(n)?;
        let mask = ops::less(&idx.reshape(&[-1, 1])?, &idx.reshape(&[1, -1])?)?;
        // Python: `mx.finfo(dtype).min`, the most negative finite value of the dtype.
        let min = match dtype {
            Dtype::Float16 => -65504.0,
            Dtype::Bfloat16 => -3.389_531_4e38,
            Dtype::Float64 => f64::MIN,
            _ => f64::from(f32::MIN),
        };
        Ok(mask.astype(dtype)? * &ops::full(&[], min, dtype)?)
    }
}

// ---------------------------------------------------------------------------------------------
// Convolutions

/// 1-D convolution over `(N, L, C_in)` (Python: `nn.Conv1d(in_channels, out_channels,
/// kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True)`). Weights are
/// `(C_out, K, C_in / groups)`.
#[derive(Debug, Clone, TreeNode)]
pub struct Conv1d {
    pub weight: Array,
    pub bias: Option<Array>,
    #[tree(static)]
    pub stride: i32,
    #[tree(static)]
    pub padding: i32,
    #[tree(static)]
    pub dilation: i32,
    #[tree(static)]
    pub groups: i32,
    #[tree(static)]
    pub frozen: Frozen,
}

/// A zero bias of `len` when the layer has one (Python initializes biases to zero).
fn zero_bias(present: bool, len: i32) -> Result<Option<Array>> {
    present.then(|| ops::zeros(&[len], None)).transpose()
}

/// The op options a conv layer stores as static fields.
fn conv_options<S: Into<ops::Spatial>>(
    stride: S,
    padding: S,
    dilation: S,
    groups: i32,
) -> ConvOptions {
    ConvOptions::default()
        .stride(stride)
        .padding(padding)
        .dilation(dilation)
        .groups(groups)
}

/// `stride`, `padding` and `dilation` of `options` with one value per spatial axis of a layer
/// with `N` of them (a single value repeats, as in Python).
fn spatial_args<const N: usize>(options: &ConvOptions, layer: &str) -> Result<[[i32; N]; 3]> {
    let per_axis = |v: &ops::Spatial, what: &str| {
        v.per_axis(N)
            .and_then(|v| <[i32; N]>::try_from(v).ok())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "[{layer}] {what} takes one value or {N} (one per spatial axis), got {v:?}"
                ))
            })
    };
    Ok([
        per_axis(&options.stride, "stride")?,
        per_axis(&options.padding, "padding")?,
        per_axis(&options.dilation, "dilation")?,
    ])
}

fn check_groups(in_channels: i32, out_channels: i32, groups: i32) -> Result<()> {
    if groups <= 0 || in_channels % groups != 0 || out_channels % groups != 0 {
        return Err(Error::InvalidArgument(format!(
            "The number of input channels ({in_channels}) and output channels ({out_channels}) must be divisible by the number of groups ({groups})"
        )));
    }
    Ok(())
}

impl Conv1d {
    /// A new layer with Python's initialization (uniform in `±sqrt(1 / (C_in * K))`);
    /// `options` holds `stride`, `padding`, `dilation` and `groups` (one value each), `bias`
    /// `None` is `true`.
    ///
    /// ```
    /// use mlx_nn::{Conv1d, ConvOptions};
    /// // nn.Conv1d(4, 8, 3, stride=2, bias=False)
    /// let conv = Conv1d::new(4, 8, 3, ConvOptions::default().stride(2), false)?;
    /// assert_eq!((conv.weight.shape(), conv.stride, conv.bias.is_none()), (&[8, 3, 4][..], 2, true));
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn new(
        in_channels: i32,
        out_channels: i32,
        kernel_size: i32,
        options: ConvOptions,
        bias: impl Into<Option<bool>>,
    ) -> Result<Conv1d> {
        let groups = options.groups;
        check_groups(in_channels, out_channels, groups)?;
        let [[stride], [padding], [dilation]] = spatial_args::<1>(&options, "Conv1d")?;
        let scale = inv_sqrt(f64::from(in_channels) * f64::from(kernel_size));
        Ok(Conv1d {
            weight: uniform_init(scale, &[out_channels, kernel_size, in_channels / groups])?,
            bias: zero_bias(bias.into().unwrap_or(true), out_channels)?,
            stride,
            padding,
            dilation,
            groups,
            frozen: Frozen::default(),
        })
    }
}

impl Forward for Conv1d {
    /// Applies the layer (Python: `conv(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        let opts = conv_options(self.stride, self.padding, self.dilation, self.groups);
        let y = ops::conv1d(x, &self.weight, opts)?;
        with_bias(y, self.bias.as_ref())
    }
}

/// 2-D convolution over `(N, H, W, C_in)` (Python: `nn.Conv2d(in_channels, out_channels,
/// kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True)`). Weights are
/// `(C_out, KH, KW, C_in / groups)`.
#[derive(Debug, Clone, TreeNode)]
pub struct Conv2d {
    pub weight: Array,
    pub bias: Option<Array>,
    #[tree(static)]
    pub stride: (i32, i32),
    #[tree(static)]
    pub padding: (i32, i32),
    #[tree(static)]
    pub dilation: (i32, i32),
    #[tree(static)]
    pub groups: i32,
    #[tree(static)]
    pub frozen: Frozen,
}

impl Conv2d {
    /// A new layer with Python's initialization; `options` holds `stride`, `padding`,
    /// `dilation` (one value, or one per spatial axis) and `groups`, `bias` `None` is `true`.
    ///
    /// ```
    /// use mlx_nn::{Conv2d, ConvOptions};
    /// // nn.Conv2d(3, 8, (3, 3), stride=(2, 1), padding=1)
    /// let conv = Conv2d::new(3, 8, (3, 3), ConvOptions::default().stride((2, 1)).padding(1), None)?;
    /// assert_eq!((conv.stride, conv.padding), ((2, 1), (1, 1)));
    /// # Ok::<(), mlx_rs::Error>(())
    /// ```
    pub fn new(
        in_channels: i32,
        out_channels: i32,
        kernel_size: (i32, i32),
        options: ConvOptions,
        bias: impl Into<Option<bool>>,
    ) -> Result<Conv2d> {
        let groups = options.groups;
        check_groups(in_channels, out_channels, groups)?;
        let [stride, padding, dilation] = spatial_args::<2>(&options, "Conv2d")?;
        let (kh, kw) = kernel_size;
        let scale = inv_sqrt(f64::from(in_channels) * f64::from(kh) * f64::from(kw));
        Ok(Conv2d {
            weight: uniform_init(scale, &[out_channels, kh, kw, in_channels / groups])?,
            bias: zero_bias(bias.into().unwrap_or(true), out_channels)?,
            stride: stride.into(),
            padding: padding.into(),
            dilation: dilation.into(),
            groups,
            frozen: Frozen::default(),
        })
    }
}

impl Forward for Conv2d {
    /// Applies the layer (Python: `conv(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        let opts = conv_options(self.stride, self.padding, self.dilation, self.groups);
        let y = ops::conv2d(x, &self.weight, opts)?;
        with_bias(y, self.bias.as_ref())
    }
}

// ---------------------------------------------------------------------------------------------
// Sequential

/// Layers applied in order (Python: `nn.Sequential(*modules)`); its parameters are under
/// `layers.0`, `layers.1`, ... as in Python. `L` is a tuple of layers (different types) or a
/// `Vec` of one layer type.
///
/// ```
/// use mlx_nn::{Forward, Linear, Module, ReLU, Sequential};
/// use mlx_rs::ops;
/// let mlp = Sequential::new((Linear::new(4, 8, true)?, ReLU, Linear::new(8, 2, true)?));
/// let y = mlp.forward(&ops::ones(&[3, 4], None)?)?;
/// assert_eq!(y.shape(), &[3, 2]);
/// let names: Vec<String> = mlp.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names, ["layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct Sequential<L: TreeNode> {
    pub layers: L,
}

impl<L: TreeNode> Sequential<L> {
    /// Chains `layers`.
    pub fn new(layers: L) -> Self {
        Sequential { layers }
    }
}

impl<T: TreeNode + Forward> Forward for Sequential<Vec<T>> {
    fn forward(&self, x: &Array) -> Result<Array> {
        let mut x = x.clone();
        for l in &self.layers {
            x = l.forward(&x)?;
        }
        Ok(x)
    }
}

macro_rules! sequential_tuples {
    ($( ($($name:ident $idx:tt),+) )+) => {$(
        impl<$($name: TreeNode + Forward),+> Forward for Sequential<($($name,)+)> {
            fn forward(&self, x: &Array) -> Result<Array> {
                let x = x.clone();
                $( let x = self.layers.$idx.forward(&x)?; )+
                Ok(x)
            }
        }
    )+};
}

sequential_tuples! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, G 5)
    (A 0, B 1, C 2, D 3, E 4, G 5, H 6)
    (A 0, B 1, C 2, D 3, E 4, G 5, H 6, I 7)
}

// ---------------------------------------------------------------------------------------------
// Quantized layers

/// The affine quantization the quantized layers use, as [`ops::quantize`] options.
fn quant_options(group_size: i32, bits: i32) -> QuantizeOptions<'static> {
    QuantizeOptions::default()
        .group_size(group_size)
        .bits(bits)
        .mode(QuantizationMode::Affine)
}

/// [`ops::quantized_matmul`] of `x` by an affine-quantized weight (transposed, as the layers
/// store it).
fn quantized_linear(
    x: &Array,
    weight: &Array,
    scales: &Array,
    biases: Option<&Array>,
    group_size: i32,
    bits: i32,
) -> Result<Array> {
    let options = QuantizedMatmulOptions {
        biases,
        transpose: true,
        group_size: Some(group_size),
        bits: Some(bits),
        mode: QuantizationMode::Affine,
    };
    ops::quantized_matmul(x, weight, scales, options)
}

fn all_frozen(names: &[&str]) -> Frozen {
    Frozen(names.iter().map(|s| s.to_string()).collect())
}

/// A linear layer with affine-quantized weights (Python: `nn.QuantizedLinear(input_dims,
/// output_dims, bias=True, group_size=64, bits=4)`): parameters `weight` (packed `uint32`),
/// `scales`, `biases`, and `bias`. Frozen, as in Python.
#[derive(Debug, Clone, TreeNode)]
pub struct QuantizedLinear {
    pub weight: Array,
    pub scales: Array,
    pub biases: Option<Array>,
    pub bias: Option<Array>,
    #[tree(static)]
    pub group_size: i32,
    #[tree(static)]
    pub bits: i32,
    #[tree(static)]
    pub frozen: Frozen,
}

impl QuantizedLinear {
    /// Quantizes a [`Linear`] (Python: `nn.QuantizedLinear.from_linear(linear, group_size=64,
    /// bits=4)`).
    pub fn from_linear(
        linear: &Linear,
        group_size: Option<i32>,
        bits: Option<i32>,
    ) -> Result<QuantizedLinear> {
        let (gs, bits) = (group_size.unwrap_or(64), bits.unwrap_or(4));
        let (weight, scales, biases) = ops::quantize(&linear.weight, quant_options(gs, bits))?;
        Ok(QuantizedLinear {
            weight,
            scales,
            biases,
            bias: linear.bias.clone(),
            group_size: gs,
            bits,
            // As in Python: the bias, set after the layer froze itself, stays trainable.
            frozen: all_frozen(&["weight", "scales", "biases"]),
        })
    }
}

impl QuantizedLinear {
    /// A layer from already quantized arrays, as a checkpoint stores them (Python: an
    /// `nn.QuantizedLinear` whose parameters `load_weights` replaced). Frozen, as in Python.
    pub fn from_parts(
        weight: Array,
        scales: Array,
        biases: Option<Array>,
        bias: Option<Array>,
        group_size: i32,
        bits: i32,
    ) -> QuantizedLinear {
        QuantizedLinear {
            weight,
            scales,
            biases,
            bias,
            group_size,
            bits,
            frozen: all_frozen(&["weight", "scales", "biases"]),
        }
    }
}

impl Forward for QuantizedLinear {
    /// Applies the layer (Python: `qlinear(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        let y = quantized_linear(
            x,
            &self.weight,
            &self.scales,
            self.biases.as_ref(),
            self.group_size,
            self.bits,
        )?;
        with_bias(y, self.bias.as_ref())
    }
}

/// An embedding table with affine-quantized rows (Python: `nn.QuantizedEmbedding`). Frozen.
#[derive(Debug, Clone, TreeNode)]
pub struct QuantizedEmbedding {
    pub weight: Array,
    pub scales: Array,
    pub biases: Option<Array>,
    #[tree(static)]
    pub group_size: i32,
    #[tree(static)]
    pub bits: i32,
    #[tree(static)]
    pub frozen: Frozen,
}

impl QuantizedEmbedding {
    /// Quantizes an [`Embedding`] (Python: `nn.QuantizedEmbedding.from_embedding(emb,
    /// group_size=64, bits=4)`).
    pub fn from_embedding(
        embedding: &Embedding,
        group_size: Option<i32>,
        bits: Option<i32>,
    ) -> Result<QuantizedEmbedding> {
        let (gs, bits) = (group_size.unwrap_or(64), bits.unwrap_or(4));
        let (weight, scales, biases) = ops::quantize(&embedding.weight, quant_options(gs, bits))?;
        Ok(QuantizedEmbedding {
            weight,
            scales,
            biases,
            group_size: gs,
            bits,
            frozen: all_frozen(&["weight", "scales", "biases"]),
        })
    }

    /// A table from already quantized arrays, as a checkpoint stores them. Frozen.
    pub fn from_parts(
        weight: Array,
        scales: Array,
        biases: Option<Array>,
        group_size: i32,
        bits: i32,
    ) -> QuantizedEmbedding {
        QuantizedEmbedding {
            weight,
            scales,
            biases,
            group_size,
            bits,
            frozen: all_frozen(&["weight", "scales", "biases"]),
        }
    }

    /// Uses the table as a linear layer (Python: `qembedding.as_linear(x)`).
    pub fn as_linear(&self, x: &Array) -> Result<Array> {
        quantized_linear(
            x,
            &self.weight,
            &self.scales,
            self.biases.as_ref(),
            self.group_size,
            self.bits,
        )
    }
}

impl Forward for QuantizedEmbedding {
    /// The dequantized rows for indices `x` (Python: `qembedding(x)`).
    fn forward(&self, x: &Array) -> Result<Array> {
        let biases = match &self.biases {
            Some(b) => Some(ops::take(b, x, 0)?),
            None => None,
        };
        let options = DequantizeOptions {
            biases: biases.as_ref(),
            group_size: Some(self.group_size),
            bits: Some(self.bits),
            mode: QuantizationMode::Affine,
            ..Default::default()
        };
        ops::dequantize(
            &ops::take(&self.weight, x, 0)?,
            &ops::take(&self.scales, x, 0)?,
            options,
        )
    }
}
