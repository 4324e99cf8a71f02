//! Attention and the transformer encoder and decoder stacks (Python:
//! `mlx.nn.layers.transformer`): [`MultiHeadAttention`], [`TransformerEncoderLayer`], [`TransformerEncoder`], [`TransformerDecoderLayer`],
//! [`TransformerDecoder`] and [`Transformer`].
//!
//! The structs hold the same submodules under the same names as Python's, so
//! `tree_flatten(model.parameters())` in Python and [`Module::named_parameters`] here list the
//! same paths (`layers.0.attention.query_proj.weight`, `layers.0.ln1.bias`, `ln.weight`, ...)
//! and weights saved by Python load by name. The forward passes apply the same ops in the same
//! order, so with the same weights the outputs are the same bits.
//!
//! [`Module::named_parameters`]: crate::Module::named_parameters

use mlx_rs::fast::{self, AttentionMask};
use mlx_rs::{ops, Array, Dtype, Error, Result};
use mlx_tree::TreeNode;

use super::inv_sqrt;
use crate::{Activation, Dropout, Forward, LayerNorm, LayerNormOptions, Linear};

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
// Options

mlx_rs::options! {
    /// The keyword arguments of [`TransformerEncoderLayer::new`] and
    /// [`TransformerDecoderLayer::new`], with Python's defaults (`mlp_dims=None`: `4 * dims`;
    /// `dropout=0.0`; `activation=relu`; `norm_first=True`).
    #[derive(Debug, Clone, Copy)]
    pub struct TransformerLayerOptions {
        /// The hidden size of the MLP block.
        mlp_dims: opt i32 = None,
        /// The dropout probability after each attention block and the activation (f64 as
        /// Python's float).
        dropout: plain f64 = 0.0,
        /// The MLP's activation.
        activation: plain Activation = Activation::RELU,
        /// Layer normalization before each block (`true`) or after its residual sum.
        norm_first: plain bool = true,
    }
}

mlx_rs::options! {
    /// The keyword arguments of [`TransformerEncoder::new`], [`TransformerDecoder::new`] and
    /// [`Transformer::new`], with Python's defaults: those of [`TransformerLayerOptions`] and
    /// `checkpoint=False`.
    #[derive(Debug, Clone, Copy)]
    pub struct TransformerOptions {
        /// The hidden size of the MLP block.
        mlp_dims: opt i32 = None,
        /// The dropout probability after each attention block and the activation.
        dropout: plain f64 = 0.0,
        /// The MLP's activation.
        activation: plain Activation = Activation::RELU,
        /// Layer normalization before each block (`true`) or after its residual sum.
        norm_first: plain bool = true,
        /// Gradient checkpointing: each layer's intermediate values are recomputed in the
        /// backward pass instead of kept (less memory, more compute, the same values).
        checkpoint: plain bool = false,
    }
}

impl TransformerOptions {
    /// The options each layer of a stack is built with.
    pub fn layer(&self) -> TransformerLayerOptions {
        TransformerLayerOptions {
            mlp_dims: self.mlp_dims,
            dropout: self.dropout,
            activation: self.activation,
            norm_first: self.norm_first,
        }
    }
}

/// The checks Python's constructors make (through `MultiHeadAttention` and `Dropout`), made
/// before any array is created, plus positive sizes, which Python leaves to MLX.
fn check_sizes(dims: i32, num_heads: i32, mlp_dims: i32) -> Result<()> {
    if dims <= 0 || mlp_dims <= 0 {
        return Err(Error::InvalidArgument(format!(
            "transformer dims ({dims}) and mlp_dims ({mlp_dims}) must be positive"
        )));
    }
    if num_heads <= 0 || dims % num_heads != 0 {
        return Err(Error::InvalidArgument(format!(
            "The input feature dimensions should be divisible by the number of heads ({dims} % {num_heads}) != 0"
        )));
    }
    Ok(())
}

/// Python's `mlp_dims or dims * 4`, after checking the sizes a layer is built with.
fn mlp_dims(dims: i32, num_heads: i32, options: &TransformerLayerOptions) -> Result<i32> {
    // 0 is falsy in Python, so it also means the default.
    let mlp = match options.mlp_dims {
        Some(m) if m != 0 => m,
        _ => dims.checked_mul(4).ok_or_else(|| {
            Error::InvalidArgument(format!("transformer dims {dims} * 4 overflows"))
        })?,
    };
    check_sizes(dims, num_heads, mlp)?;
    Ok(mlp)
}

fn layer_norm(dims: i32) -> Result<LayerNorm> {
    LayerNorm::new(dims, LayerNormOptions::default())
}

fn attention(dims: i32, num_heads: i32) -> Result<MultiHeadAttention> {
    MultiHeadAttention::new(dims, num_heads, MultiHeadAttentionOptions::default())
}

fn check_layers(num_layers: i32) -> Result<usize> {
    usize::try_from(num_layers).map_err(|_| {
        Error::InvalidArgument(format!(
            "the number of transformer layers ({num_layers}) must not be negative"
        ))
    })
}

// ---------------------------------------------------------------------------------------------
// Checkpointing

/// A mask as an input of a checkpointed function: an array mask travels as one of the
/// function's inputs (by its index there), the others are plain data the closure keeps.
#[derive(Clone, Copy)]
enum MaskSlot {
    None,
    Causal,
    Input(usize),
}

impl MaskSlot {
    /// Where `mask` goes, pushing an array mask onto `inputs`.
    fn of(mask: AttentionMask<'_>, inputs: &mut Vec<Array>) -> MaskSlot {
        match mask {
            AttentionMask::None => MaskSlot::None,
            AttentionMask::Causal => MaskSlot::Causal,
            AttentionMask::Array(a) => {
                inputs.push(a.clone());
                MaskSlot::Input(inputs.len() - 1)
            }
        }
    }

    /// The mask again, from the checkpointed function's inputs.
    fn get(self, inputs: &[Array]) -> Result<AttentionMask<'_>> {
        Ok(match self {
            MaskSlot::None => AttentionMask::None,
            MaskSlot::Causal => AttentionMask::Causal,
            MaskSlot::Input(i) => AttentionMask::Array(input(inputs, i)?),
        })
    }
}

fn input(inputs: &[Array], i: usize) -> Result<&Array> {
    inputs.get(i).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "checkpointed transformer layer: input {i} of {} missing",
            inputs.len()
        ))
    })
}

/// `call(layer, inputs)` through [`utils::checkpoint`](crate::utils::checkpoint), as Python's
/// `nn.utils.checkpoint(layer)(*inputs)` (the layer is rebuilt inside from its parameters: it
/// holds per-thread caches, so the closure cannot keep the layer itself).
fn checkpointed<L, F>(layer: &L, inputs: Vec<Array>, call: F) -> Result<Array>
where
    L: TreeNode,
    F: Fn(&L, &[Array]) -> Result<Array> + Send + Sync + 'static,
{
    crate::utils::checkpoint(layer, &inputs, move |layer: &L, args: &[Array]| {
        Ok(vec![call(layer, args)?])
    })?
    .into_iter()
    .next()
    .ok_or_else(|| Error::InvalidArgument("checkpointed layer returned nothing".into()))
}

// ---------------------------------------------------------------------------------------------
// Encoder

/// One encoder block: self-attention and an MLP, each with a residual connection and layer
/// normalization (Python: `nn.TransformerEncoderLayer(dims, num_heads, mlp_dims=None,
/// dropout=0.0, activation=relu, norm_first=True)`).
///
/// ```
/// use mlx_nn::{Module, MultiHeadAttention, TransformerEncoderLayer, TransformerLayerOptions};
/// use mlx_rs::ops;
/// let layer = TransformerEncoderLayer::new(16, 4, TransformerLayerOptions::default())?;
/// let names: Vec<String> = layer.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names[0], "attention.query_proj.weight");
/// assert!(names.contains(&"linear1.bias".to_string()));
/// let x = ops::ones(&[2, 5, 16], None)?;
/// let mask = MultiHeadAttention::create_additive_causal_mask(5, None)?;
/// assert_eq!(layer.forward(&x, &mask)?.shape(), &[2, 5, 16]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct TransformerEncoderLayer {
    pub attention: MultiHeadAttention,
    pub ln1: LayerNorm,
    pub ln2: LayerNorm,
    pub linear1: Linear,
    pub linear2: Linear,
    pub dropout1: Dropout,
    pub dropout2: Dropout,
    #[tree(static)]
    pub activation: Activation,
    #[tree(static)]
    pub norm_first: bool,
}

impl TransformerEncoderLayer {
    /// A new layer, its parameters drawn in Python's order; errors if `dims` is not divisible
    /// by `num_heads` or `dropout` is not in `[0, 1)`.
    pub fn new(
        dims: i32,
        num_heads: i32,
        options: TransformerLayerOptions,
    ) -> Result<TransformerEncoderLayer> {
        let mlp = mlp_dims(dims, num_heads, &options)?;
        Ok(TransformerEncoderLayer {
            attention: attention(dims, num_heads)?,
            ln1: layer_norm(dims)?,
            ln2: layer_norm(dims)?,
            linear1: Linear::new(dims, mlp, true)?,
            linear2: Linear::new(mlp, dims, true)?,
            dropout1: Dropout::new(options.dropout)?,
            dropout2: Dropout::new(options.dropout)?,
            activation: options.activation,
            norm_first: options.norm_first,
        })
    }

    /// Applies the layer to `x` (`[B, L, dims]`) with an attention mask (Python:
    /// `layer(x, mask)`; `None` for no mask).
    pub fn forward<'m>(&self, x: &Array, mask: impl Into<AttentionMask<'m>>) -> Result<Array> {
        let mask = mask.into();
        if self.norm_first {
            let y = self.ln1.forward(x)?;
            let y = self.attention.forward(&y, &y, &y, mask)?;
            let y = self.dropout1.forward(&y)?;
            let x = ops::add(x, &y)?;

            let y = self.ln2.forward(&x)?;
            let y = self.mlp(&y)?;
            ops::add(&x, &y)
        } else {
            let y = self.attention.forward(x, x, x, mask)?;
            let y = self.dropout1.forward(&y)?;
            let x = self.ln1.forward(&ops::add(x, &y)?)?;

            let y = self.mlp(&x)?;
            self.ln2.forward(&ops::add(&x, &y)?)
        }
    }

    /// `linear2(dropout2(activation(linear1(y))))`.
    fn mlp(&self, y: &Array) -> Result<Array> {
        let y = self.linear1.forward(y)?;
        let y = self.activation.apply(&y)?;
        let y = self.dropout2.forward(&y)?;
        self.linear2.forward(&y)
    }

    /// [`forward`](Self::forward) under MLX's `checkpoint` transform (Python:
    /// `nn.utils.checkpoint(layer)(x, mask)`).
    fn forward_checkpointed(&self, x: &Array, mask: AttentionMask<'_>) -> Result<Array> {
        let mut inputs = vec![x.clone()];
        let slot = MaskSlot::of(mask, &mut inputs);
        checkpointed(self, inputs, move |layer: &Self, args: &[Array]| {
            layer.forward(input(args, 0)?, slot.get(args)?)
        })
    }
}

/// A stack of [`TransformerEncoderLayer`]s and a final layer normalization (Python:
/// `nn.TransformerEncoder(num_layers, dims, num_heads, mlp_dims=None, dropout=0.0,
/// activation=relu, norm_first=True, checkpoint=False)`).
///
/// ```
/// use mlx_nn::{Module, MultiHeadAttention, TransformerEncoder, TransformerOptions};
/// use mlx_rs::ops;
/// let enc = TransformerEncoder::new(2, 16, 4, TransformerOptions::default())?;
/// let names: Vec<String> = enc.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert_eq!(names[0], "layers.0.attention.query_proj.weight");
/// assert_eq!(names.last().unwrap(), "ln.bias");
/// let x = ops::ones(&[2, 5, 16], None)?;
/// let mask = MultiHeadAttention::create_additive_causal_mask(5, None)?;
/// assert_eq!(enc.forward(&x, &mask)?.shape(), &[2, 5, 16]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct TransformerEncoder {
    pub layers: Vec<TransformerEncoderLayer>,
    pub ln: LayerNorm,
    /// Whether each layer runs under MLX's `checkpoint` transform (Python: `checkpoint`).
    #[tree(static)]
    pub checkpoint: bool,
}

impl TransformerEncoder {
    /// A new stack of `num_layers` layers, built in order as Python builds them.
    pub fn new(
        num_layers: i32,
        dims: i32,
        num_heads: i32,
        options: TransformerOptions,
    ) -> Result<TransformerEncoder> {
        let n = check_layers(num_layers)?;
        let layer = options.layer();
        // Checked once up front, so that no array is drawn for a stack that cannot be built.
        mlp_dims(dims, num_heads, &layer)?;
        let layers = (0..n)
            .map(|_| TransformerEncoderLayer::new(dims, num_heads, layer))
            .collect::<Result<Vec<_>>>()?;
        Ok(TransformerEncoder {
            layers,
            ln: layer_norm(dims)?,
            checkpoint: options.checkpoint,
        })
    }

    /// Applies every layer, then the final normalization (Python: `encoder(x, mask)`).
    pub fn forward<'m>(&self, x: &Array, mask: impl Into<AttentionMask<'m>>) -> Result<Array> {
        let mask = mask.into();
        let mut x = x.clone();
        for layer in &self.layers {
            x = if self.checkpoint {
                layer.forward_checkpointed(&x, mask)?
            } else {
                layer.forward(&x, mask)?
            };
        }
        self.ln.forward(&x)
    }
}

// ---------------------------------------------------------------------------------------------
// Decoder

/// One decoder block: self-attention, cross-attention to the encoder's output (`memory`) and
/// an MLP, each with a residual connection and layer normalization (Python:
/// `nn.TransformerDecoderLayer(dims, num_heads, mlp_dims=None, dropout=0.0, activation=relu,
/// norm_first=True)`).
///
/// ```
/// use mlx_nn::{TransformerDecoderLayer, TransformerLayerOptions};
/// use mlx_rs::ops;
/// let layer = TransformerDecoderLayer::new(16, 4, TransformerLayerOptions::default())?;
/// let (x, memory) = (ops::ones(&[2, 5, 16], None)?, ops::ones(&[2, 7, 16], None)?);
/// assert_eq!(layer.forward(&x, &memory, None, None)?.shape(), &[2, 5, 16]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct TransformerDecoderLayer {
    pub self_attention: MultiHeadAttention,
    pub cross_attention: MultiHeadAttention,
    pub ln1: LayerNorm,
    pub ln2: LayerNorm,
    pub ln3: LayerNorm,
    pub linear1: Linear,
    pub linear2: Linear,
    pub dropout1: Dropout,
    pub dropout2: Dropout,
    pub dropout3: Dropout,
    #[tree(static)]
    pub activation: Activation,
    #[tree(static)]
    pub norm_first: bool,
}

impl TransformerDecoderLayer {
    /// A new layer, its parameters drawn in Python's order; errors if `dims` is not divisible
    /// by `num_heads` or `dropout` is not in `[0, 1)`.
    pub fn new(
        dims: i32,
        num_heads: i32,
        options: TransformerLayerOptions,
    ) -> Result<TransformerDecoderLayer> {
        let mlp = mlp_dims(dims, num_heads, &options)?;
        Ok(TransformerDecoderLayer {
            self_attention: attention(dims, num_heads)?,
            cross_attention: attention(dims, num_heads)?,
            ln1: layer_norm(dims)?,
            ln2: layer_norm(dims)?,
            ln3: layer_norm(dims)?,
            linear1: Linear::new(dims, mlp, true)?,
            linear2: Linear::new(mlp, dims, true)?,
            dropout1: Dropout::new(options.dropout)?,
            dropout2: Dropout::new(options.dropout)?,
            dropout3: Dropout::new(options.dropout)?,
            activation: options.activation,
            norm_first: options.norm_first,
        })
    }

    /// Applies the layer to `x` (`[B, L, dims]`) attending to `memory` (`[B, S, dims]`)
    /// (Python: `layer(x, memory, x_mask, memory_mask)`; `None` for no mask).
    pub fn forward<'a, 'b>(
        &self,
        x: &Array,
        memory: &Array,
        x_mask: impl Into<AttentionMask<'a>>,
        memory_mask: impl Into<AttentionMask<'b>>,
    ) -> Result<Array> {
        let (x_mask, memory_mask) = (x_mask.into(), memory_mask.into());
        if self.norm_first {
            let y = self.ln1.forward(x)?;
            let y = self.self_attention.forward(&y, &y, &y, x_mask)?;
            let y = self.dropout1.forward(&y)?;
            let x = ops::add(x, &y)?;

            let y = self.ln2.forward(&x)?;
            let y = self
                .cross_attention
                .forward(&y, memory, memory, memory_mask)?;
            let y = self.dropout2.forward(&y)?;
            let x = ops::add(&x, &y)?;

            let y = self.ln3.forward(&x)?;
            let y = self.mlp(&y)?;
            ops::add(&x, &y)
        } else {
            let y = self.self_attention.forward(x, x, x, x_mask)?;
            let y = self.dropout1.forward(&y)?;
            let x = self.ln1.forward(&ops::add(x, &y)?)?;

            let y = self
                .cross_attention
                .forward(&x, memory, memory, memory_mask)?;
            let y = self.dropout2.forward(&y)?;
            let x = self.ln2.forward(&ops::add(&x, &y)?)?;

            let y = self.mlp(&x)?;
            self.ln3.forward(&ops::add(&x, &y)?)
        }
    }

    /// `linear2(dropout3(activation(linear1(y))))`.
    fn mlp(&self, y: &Array) -> Result<Array> {
        let y = self.linear1.forward(y)?;
        let y = self.activation.apply(&y)?;
        let y = self.dropout3.forward(&y)?;
        self.linear2.forward(&y)
    }

    /// [`forward`](Self::forward) under MLX's `checkpoint` transform (Python:
    /// `nn.utils.checkpoint(layer)(x, memory, x_mask, memory_mask)`).
    fn forward_checkpointed(
        &self,
        x: &Array,
        memory: &Array,
        x_mask: AttentionMask<'_>,
        memory_mask: AttentionMask<'_>,
    ) -> Result<Array> {
        let mut inputs = vec![x.clone(), memory.clone()];
        let x_slot = MaskSlot::of(x_mask, &mut inputs);
        let memory_slot = MaskSlot::of(memory_mask, &mut inputs);
        checkpointed(self, inputs, move |layer: &Self, args: &[Array]| {
            layer.forward(
                input(args, 0)?,
                input(args, 1)?,
                x_slot.get(args)?,
                memory_slot.get(args)?,
            )
        })
    }
}

/// A stack of [`TransformerDecoderLayer`]s and a final layer normalization (Python:
/// `nn.TransformerDecoder(num_layers, dims, num_heads, mlp_dims=None, dropout=0.0,
/// activation=relu, norm_first=True, checkpoint=False)`).
///
/// ```
/// use mlx_nn::{MultiHeadAttention, TransformerDecoder, TransformerOptions};
/// use mlx_rs::ops;
/// let dec = TransformerDecoder::new(2, 16, 4, TransformerOptions::default())?;
/// let (x, memory) = (ops::ones(&[2, 5, 16], None)?, ops::ones(&[2, 7, 16], None)?);
/// let mask = MultiHeadAttention::create_additive_causal_mask(5, None)?;
/// assert_eq!(dec.forward(&x, &memory, &mask, None)?.shape(), &[2, 5, 16]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct TransformerDecoder {
    pub layers: Vec<TransformerDecoderLayer>,
    pub ln: LayerNorm,
    /// Whether each layer runs under MLX's `checkpoint` transform (Python: `checkpoint`).
    #[tree(static)]
    pub checkpoint: bool,
}

impl TransformerDecoder {
    /// A new stack of `num_layers` layers, built in order as Python builds them.
    pub fn new(
        num_layers: i32,
        dims: i32,
        num_heads: i32,
        options: TransformerOptions,
    ) -> Result<TransformerDecoder> {
        let n = check_layers(num_layers)?;
        let layer = options.layer();
        mlp_dims(dims, num_heads, &layer)?;
        let layers = (0..n)
            .map(|_| TransformerDecoderLayer::new(dims, num_heads, layer))
            .collect::<Result<Vec<_>>>()?;
        Ok(TransformerDecoder {
            layers,
            ln: layer_norm(dims)?,
            checkpoint: options.checkpoint,
        })
    }

    /// Applies every layer, then the final normalization (Python: `decoder(x, memory, x_mask,
    /// memory_mask)`).
    pub fn forward<'a, 'b>(
        &self,
        x: &Array,
        memory: &Array,
        x_mask: impl Into<AttentionMask<'a>>,
        memory_mask: impl Into<AttentionMask<'b>>,
    ) -> Result<Array> {
        let (x_mask, memory_mask) = (x_mask.into(), memory_mask.into());
        let mut x = x.clone();
        for layer in &self.layers {
            x = if self.checkpoint {
                layer.forward_checkpointed(&x, memory, x_mask, memory_mask)?
            } else {
                layer.forward(&x, memory, x_mask, memory_mask)?
            };
        }
        self.ln.forward(&x)
    }
}

// ---------------------------------------------------------------------------------------------
// Transformer

/// An encoder–decoder transformer, "Attention Is All You Need" (Python: `nn.Transformer(
/// dims=512, num_heads=8, num_encoder_layers=6, num_decoder_layers=6, mlp_dims=None,
/// dropout=0.0, activation=relu, custom_encoder=None, custom_decoder=None, norm_first=True,
/// checkpoint=False)`).
///
/// Python's `custom_encoder`/`custom_decoder` replace a stack by any module; here
/// [`Transformer::from_parts`] takes stacks built separately (with other layer counts or
/// options), and a model with a different kind of encoder is a struct of its own.
///
/// ```
/// use mlx_nn::{Module, MultiHeadAttention, Transformer, TransformerOptions};
/// use mlx_rs::ops;
/// // nn.Transformer(dims=16, num_heads=4, num_encoder_layers=2, num_decoder_layers=1)
/// let model = Transformer::new(16, 4, 2, 1, TransformerOptions::default())?;
/// let names: Vec<String> = model.named_parameters()?.into_iter().map(|(p, _)| p).collect();
/// assert!(names.contains(&"decoder.layers.0.cross_attention.key_proj.weight".to_string()));
/// let (src, tgt) = (ops::ones(&[2, 7, 16], None)?, ops::ones(&[2, 5, 16], None)?);
/// let tgt_mask = MultiHeadAttention::create_additive_causal_mask(5, None)?;
/// assert_eq!(model.forward(&src, &tgt, None, &tgt_mask, None)?.shape(), &[2, 5, 16]);
/// # Ok::<(), mlx_rs::Error>(())
/// ```
#[derive(Debug, Clone, TreeNode)]
pub struct Transformer {
    pub encoder: TransformerEncoder,
    pub decoder: TransformerDecoder,
}

impl Transformer {
    /// A new model: the encoder stack, then the decoder stack, as Python builds them. Python's
    /// defaults for the sizes are `dims=512, num_heads=8, num_encoder_layers=6,
    /// num_decoder_layers=6` ([`Transformer::default_sizes`]).
    pub fn new(
        dims: i32,
        num_heads: i32,
        num_encoder_layers: i32,
        num_decoder_layers: i32,
        options: TransformerOptions,
    ) -> Result<Transformer> {
        // Both stacks are checked before the encoder draws its weights.
        check_layers(num_decoder_layers)?;
        Ok(Transformer {
            encoder: TransformerEncoder::new(num_encoder_layers, dims, num_heads, options)?,
            decoder: TransformerDecoder::new(num_decoder_layers, dims, num_heads, options)?,
        })
    }

    /// Python's default model, `nn.Transformer()` with the given keyword options: 512 dims, 8
    /// heads, 6 encoder and 6 decoder layers.
    pub fn default_sizes(options: TransformerOptions) -> Result<Transformer> {
        Transformer::new(512, 8, 6, 6, options)
    }

    /// A model from stacks built separately (Python: `custom_encoder=`, `custom_decoder=`).
    pub fn from_parts(encoder: TransformerEncoder, decoder: TransformerDecoder) -> Transformer {
        Transformer { encoder, decoder }
    }

    /// Encodes `src` and decodes `tgt` attending to it (Python: `model(src, tgt, src_mask,
    /// tgt_mask, memory_mask)`; `None` for no mask).
    pub fn forward<'a, 'b, 'c>(
        &self,
        src: &Array,
        tgt: &Array,
        src_mask: impl Into<AttentionMask<'a>>,
        tgt_mask: impl Into<AttentionMask<'b>>,
        memory_mask: impl Into<AttentionMask<'c>>,
    ) -> Result<Array> {
        let memory = self.encoder.forward(src, src_mask)?;
        self.decoder.forward(tgt, &memory, tgt_mask, memory_mask)
    }
}
