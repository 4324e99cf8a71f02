//! Building a model from a checkpoint's tensors. An architecture asks for each parameter by
//! its path and expected shape; the checkpoint hands it over, decides float or quantized as
//! `mlx_lm.utils.load_model` does, and checks at the end that nothing was left unread (Python:
//! `model.load_weights(weights, strict=True)`). Every error names the file and the tensor.

use std::path::{Path, PathBuf};

use mlx_nn::{
    Embedding, LayerNorm, LayerNormOptions, Linear, MaybeQuantized, MaybeQuantizedEmbedding,
    MaybeQuantizedLinear, PadRows, Quantizable, QuantizedEmbedding, QuantizedLinear, RMSNorm,
};
use mlx_rs::ops::QuantizationMode;
use mlx_rs::random::{self, UniformOptions};
use mlx_rs::{ops, Array, Dtype};

use crate::blocks::mla::{MultiLinear, QuantizedMultiLinear};
use crate::blocks::switch::{QuantizedSwitchLinear, SwitchLinear};
use crate::config::invalid;
use crate::error::{Error, Result};
use crate::kernels::{KernelOptions, PADDED_ROWS_MIN_BYTES};
use crate::quantization::{LayerQuantization, MixedQuantRecipe, QuantParams, Quantization};
use crate::weights::Weights;

/// How to load a model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadOptions {
    /// Cast floating-point parameters to this dtype (Python: `mlx_lm.convert --dtype`).
    /// Parameters an architecture keeps in float32 (qwen3_5's `A_log`) stay so.
    pub dtype: Option<Dtype>,
    /// Quantize a float checkpoint's linear and embedding layers as they load (Python:
    /// `mlx_lm.convert -q --q-group-size G --q-bits B --q-mode M`; `QuantParams::for_mode`
    /// gives a mode's defaults): every layer whose input size the group size divides.
    pub quantize: Option<QuantParams>,
    /// With `quantize`: each layer's parameters from one of mlx_lm's mixed-bits recipes
    /// (Python: `mlx_lm.convert -q --quant-predicate mixed_3_6`), in place of the
    /// architecture's own choices, as mlx_lm's recipe replaces the model's `quant_predicate`.
    pub quant_recipe: Option<MixedQuantRecipe>,
    /// The custom kernels the model may use (all by default): the model's own choice, kept
    /// for its whole life, whatever other models in the process chose.
    pub kernels: KernelOptions,
    /// What loading does when config.json has keys the architecture does not read
    /// ([`ModelConfig::unread_keys`](crate::ModelConfig::unread_keys)): by default a warning.
    pub unread_keys: UnreadKeys,
}

/// What [`load_model`](crate::load_model) does with config.json keys that the architecture
/// neither reads nor declares harmless: each may change the numerics (a scaling factor, an
/// activation, a window the model would then not apply), so none passes in silence unless
/// asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum UnreadKeys {
    /// One line on stderr naming the file, the architecture and every such key; the model
    /// loads.
    #[default]
    Warn,
    /// [`Error::UnreadConfigKeys`]: the model does not load.
    Error,
    /// Nothing; [`ModelConfig::unread_keys`](crate::ModelConfig::unread_keys) still lists
    /// them.
    Allow,
}

/// A checkpoint's tensors being handed to a model under construction.
#[derive(Debug)]
pub struct Checkpoint {
    weights: Weights,
    dir: PathBuf,
    quantization: Option<Quantization>,
    quantize: Option<QuantParams>,
    quant_recipe: Option<MixedQuantRecipe>,
    quant_predicate: Option<QuantPredicate>,
    float_predicate: Option<FloatPredicate>,
    /// Tensors drawn at random where the checkpoint has none ([`Checkpoint::random`]).
    random: Option<RandomWeights>,
    /// Whether float layers evaluate their transposed weight as they are built (see
    /// [`Checkpoint::lazy`]).
    keep_transposed: bool,
    /// Whether large quantized layers pad their products of few rows
    /// ([`KernelOptions::padded_quantized_rows`]).
    padded_rows: bool,
}

/// Where [`Checkpoint::random`] draws its tensors from.
#[derive(Debug, Clone, Copy)]
struct RandomWeights {
    seed: u64,
    dtype: Dtype,
}

impl RandomWeights {
    /// The tensor `key` of `shape`: a 1-D `*weight` (a norm's scale) ones, any other 1-D
    /// tensor (biases, state-space parameters) zeros, a matrix uniform in ±1/sqrt(its last
    /// axis) as `nn.Linear` initializes (the last axis is a layer's input). The key of the
    /// draw comes from the seed and the tensor's name alone, so every process draws the same
    /// tensor, whatever else it builds.
    fn draw(&self, key: &str, shape: &[i32]) -> mlx_rs::Result<Array> {
        match shape {
            [_] if key.ends_with("weight") => ops::ones(shape, self.dtype),
            [_] | [] => ops::zeros(shape, self.dtype),
            [.., last] => {
                let bound = 1.0 / f64::from((*last).max(1)).sqrt();
                let k = random::key(self.seed ^ fnv1a(key))?;
                random::uniform(
                    shape,
                    UniformOptions::default()
                        .low(-bound as f32)
                        .high(bound as f32)
                        .dtype(self.dtype),
                    &k,
                )
            }
        }
    }
}

/// 64-bit FNV-1a: a fixed hash of a tensor's name (std's hasher may change between releases).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// An architecture's own quantization choices for a layer by its path, where it differs
/// from the requested one (Python: the model's `quant_predicate`, which `mlx_lm.convert -q`
/// consults): `Some` parameters for that layer, `None` for the defaults.
pub type QuantPredicate = fn(&str) -> Option<QuantParams>;

/// The layers an architecture keeps in float when the others are quantized as they load
/// (Python: a `quant_predicate` returning `False` for the path).
pub type FloatPredicate = fn(&str) -> bool;

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

impl Checkpoint {
    /// Tensors from `dir`; `quantization` is the checkpoint's own (config `quantization`),
    /// `quantize` asks for float layers to be quantized as they load (Python: `mlx_lm.convert
    /// -q`, which quantizes every layer whose input size the group size divides).
    pub fn new(
        weights: Weights,
        dir: impl Into<PathBuf>,
        quantization: Option<Quantization>,
        quantize: Option<QuantParams>,
    ) -> Checkpoint {
        Checkpoint {
            weights,
            dir: dir.into(),
            quantization,
            quantize,
            quant_recipe: None,
            quant_predicate: None,
            float_predicate: None,
            random: None,
            keep_transposed: true,
            padded_rows: false,
        }
    }

    /// A checkpoint of random tensors in `dtype` for a model built from its config alone
    /// ([`random_model`](crate::random_model)): every tensor an architecture asks for is drawn
    /// (see `RandomWeights::draw`), lazily, and quantized as it loads when `quantize` says
    /// so. The checkpoint is [lazy](Checkpoint::lazy).
    pub fn random(
        dir: impl Into<PathBuf>,
        seed: u64,
        dtype: Dtype,
        quantize: Option<QuantParams>,
    ) -> Checkpoint {
        let mut ck = Checkpoint::new(Weights::default(), dir, None, quantize);
        ck.random = Some(RandomWeights { seed, dtype });
        ck.keep_transposed = false;
        ck
    }

    /// Builds nothing before the model is evaluated: float layers do not evaluate their
    /// transposed weight as they are built (a model that loads whole keeps it, to save a
    /// primitive per layer and step). For a model split over processes before it is
    /// evaluated, so that each process reads or draws its own share alone; a kept transpose
    /// would hold the whole weight after the split.
    pub fn lazy(mut self) -> Checkpoint {
        self.keep_transposed = false;
        self
    }

    /// Sets which custom kernels the model's layers use ([`LoadOptions::kernels`]); of them the
    /// checkpoint applies [`KernelOptions::padded_quantized_rows`], to the quantized linear and
    /// embedding layers it builds.
    pub fn set_kernels(&mut self, kernels: KernelOptions) {
        self.padded_rows = kernels.padded_quantized_rows;
    }

    /// The row padding of a quantized layer of `weight` ([`PADDED_ROWS_MIN_BYTES`]).
    fn pad_rows(&self, weight: &Array) -> PadRows {
        if self.padded_rows && weight.nbytes() >= PADDED_ROWS_MIN_BYTES {
            PadRows::OnCuda
        } else {
            PadRows::Never
        }
    }

    /// Sets a mixed-bits recipe for layers quantized as they load ([`LoadOptions::quant_recipe`]).
    pub fn set_quant_recipe(&mut self, recipe: Option<MixedQuantRecipe>) {
        self.quant_recipe = recipe;
    }

    /// Sets the architecture's [`QuantPredicate`] for layers quantized as they load.
    pub fn set_quant_predicate(&mut self, predicate: QuantPredicate) {
        self.quant_predicate = Some(predicate);
    }

    /// Sets the architecture's `FloatPredicate` for layers quantized as they load.
    pub fn set_float_predicate(&mut self, predicate: FloatPredicate) {
        self.float_predicate = Some(predicate);
    }

    /// The checkpoint's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The tensors not yet taken (for an architecture's sanitize step).
    pub fn weights_mut(&mut self) -> &mut Weights {
        &mut self.weights
    }

    /// Casts the floating-point tensors to `dtype` (Python: `mlx_lm.convert --dtype`), but
    /// those `keep` names (parameters an architecture holds in float32).
    pub fn cast(&mut self, dtype: Option<Dtype>, keep: impl Fn(&str) -> bool) -> Result<()> {
        let Some(dtype) = dtype else {
            return Ok(());
        };
        self.weights.map(|k, a| {
            if a.dtype().is_floating() && a.dtype() != dtype && !keep(k) {
                a.astype(dtype).map(Some)
            } else {
                Ok(None)
            }
        })
    }

    fn file(&self, key: &str) -> PathBuf {
        self.weights
            .file_of(key)
            .map_or_else(|| self.dir.clone(), Path::to_path_buf)
    }

    /// The tensor `key`, which must have `shape`.
    pub fn array(&mut self, key: &str, shape: &[i32]) -> Result<Array> {
        let file = self.file(key);
        let Some(array) = self.weights.take(key) else {
            if let Some(random) = self.random {
                return random
                    .draw(key, shape)
                    .map_err(|source| Error::Mlx { path: file, source });
            }
            return Err(Error::MissingWeight {
                dir: self.dir.clone(),
                key: key.to_string(),
            });
        };
        if array.shape() != shape {
            return Err(invalid(
                &file,
                key,
                &format!("expected shape {shape:?}, found {:?}", array.shape()),
            ));
        }
        Ok(array)
    }

    /// An `nn.RMSNorm(dims, eps)` at `path`.
    pub fn rms_norm(&mut self, path: &str, dims: i32, eps: f32) -> Result<RMSNorm> {
        let mut norm = RMSNorm::new(dims, eps)?;
        norm.weight = self.array(&join(path, "weight"), &[dims])?;
        Ok(norm)
    }

    /// An `nn.LayerNorm(dims, eps, bias=bias)` at `path` (its weight always; its bias when
    /// `bias`).
    pub fn layer_norm(&mut self, path: &str, dims: i32, eps: f32, bias: bool) -> Result<LayerNorm> {
        let weight = self.array(&join(path, "weight"), &[dims])?;
        let bias = if bias {
            Some(self.array(&join(path, "bias"), &[dims])?)
        } else {
            None
        };
        let mut norm = LayerNorm::new(dims, LayerNormOptions::default().eps(eps).bias(false))?;
        norm.weight = Some(weight);
        norm.bias = bias;
        Ok(norm)
    }

    /// An `nn.Linear(input_dims, output_dims, bias)` at `path`, or the `nn.QuantizedLinear`
    /// the checkpoint holds there.
    pub fn linear(
        &mut self,
        path: &str,
        input_dims: i32,
        output_dims: i32,
        bias: bool,
    ) -> Result<MaybeQuantizedLinear> {
        let bias = if bias {
            Some(self.array(&join(path, "bias"), &[output_dims])?)
        } else {
            None
        };
        match self.stored_quantization(path, input_dims)? {
            Some(p) => {
                let (weight, scales, biases) = self.quantized(path, input_dims, output_dims, p)?;
                let mut layer = QuantizedLinear::from_parts(
                    weight,
                    scales,
                    biases,
                    bias,
                    p.group_size,
                    p.bits,
                    p.mode,
                );
                layer.pad_rows = self.pad_rows(&layer.weight);
                Ok(MaybeQuantized::Quantized(layer))
            }
            None => {
                let weight = self.array(&join(path, "weight"), &[output_dims, input_dims])?;
                let mut layer =
                    self.maybe_quantize(path, Linear::from_weights(weight, bias), input_dims)?;
                // Inference applies it unchanged on every token: no transpose per call.
                if self.keep_transposed {
                    layer.keep_transposed_weight()?;
                }
                if let MaybeQuantized::Quantized(q) = &mut layer {
                    q.pad_rows = self.pad_rows(&q.weight);
                }
                Ok(layer)
            }
        }
    }

    /// A `SwitchLinear(input_dims, output_dims, num_experts, bias)` at `path` (the experts'
    /// weights stacked, `[num_experts, output_dims, input_dims]`), or the
    /// `QuantizedSwitchLinear` the checkpoint holds there. Quantized on load as mlx_lm's
    /// `nn.quantize` does it: the layer has `to_quantized`.
    pub fn switch_linear(
        &mut self,
        path: &str,
        input_dims: i32,
        output_dims: i32,
        num_experts: i32,
        bias: bool,
    ) -> Result<MaybeQuantized<SwitchLinear>> {
        let bias = if bias {
            Some(self.array(&join(path, "bias"), &[num_experts, output_dims])?)
        } else {
            None
        };
        match self.stored_quantization(path, input_dims)? {
            Some(p) => {
                let (weight, scales, biases) =
                    self.quantized_stack(path, &[num_experts], input_dims, output_dims, p)?;
                Ok(MaybeQuantized::Quantized(QuantizedSwitchLinear {
                    weight,
                    scales,
                    biases,
                    bias,
                    group_size: p.group_size,
                    bits: p.bits,
                    mode: p.mode,
                    frozen: QuantizedSwitchLinear::initially_frozen(),
                }))
            }
            None => {
                let shape = [num_experts, output_dims, input_dims];
                let weight = self.array(&join(path, "weight"), &shape)?;
                self.maybe_quantize(
                    path,
                    SwitchLinear {
                        weight,
                        bias,
                        frozen: Default::default(),
                    },
                    input_dims,
                )
            }
        }
    }

    /// An `mla.MultiLinear(input_dims, output_dims, num_heads)` at `path` (`weight
    /// [num_heads, output_dims, input_dims]`), or the `QuantizedMultiLinear` the checkpoint
    /// holds there. Quantized on load as mlx_lm's `nn.quantize` does it: the layer has
    /// `to_quantized`.
    pub fn multi_linear(
        &mut self,
        path: &str,
        input_dims: i32,
        output_dims: i32,
        num_heads: i32,
    ) -> Result<MaybeQuantized<MultiLinear>> {
        match self.stored_quantization(path, input_dims)? {
            Some(p) => {
                let (weight, scales, biases) =
                    self.quantized_stack(path, &[num_heads], input_dims, output_dims, p)?;
                Ok(MaybeQuantized::Quantized(QuantizedMultiLinear {
                    weight,
                    frozen: QuantizedMultiLinear::initially_frozen(),
                    scales,
                    biases,
                    group_size: p.group_size,
                    bits: p.bits,
                    mode: p.mode,
                }))
            }
            None => {
                let shape = [num_heads, output_dims, input_dims];
                let weight = self.array(&join(path, "weight"), &shape)?;
                self.maybe_quantize(
                    path,
                    MultiLinear {
                        weight,
                        frozen: Default::default(),
                    },
                    input_dims,
                )
            }
        }
    }

    /// An `nn.Embedding(num_embeddings, dims)` at `path`, or the `nn.QuantizedEmbedding` the
    /// checkpoint holds there.
    pub fn embedding(
        &mut self,
        path: &str,
        num_embeddings: i32,
        dims: i32,
    ) -> Result<MaybeQuantizedEmbedding> {
        match self.stored_quantization(path, dims)? {
            Some(p) => {
                let (weight, scales, biases) = self.quantized(path, dims, num_embeddings, p)?;
                let mut table = QuantizedEmbedding::from_parts(
                    weight,
                    scales,
                    biases,
                    p.group_size,
                    p.bits,
                    p.mode,
                );
                // For a tied output head (`as_linear`).
                table.pad_rows = self.pad_rows(&table.weight);
                Ok(MaybeQuantized::Quantized(table))
            }
            None => {
                let weight = self.array(&join(path, "weight"), &[num_embeddings, dims])?;
                let mut table = self.maybe_quantize(path, Embedding::from_weights(weight), dims)?;
                // For a tied output head (`as_linear`).
                if self.keep_transposed {
                    table.keep_transposed_weight()?;
                }
                if let MaybeQuantized::Quantized(q) = &mut table {
                    q.pad_rows = self.pad_rows(&q.weight);
                }
                Ok(table)
            }
        }
    }

    /// Quantizes a float layer as it loads when asked to and the group size divides its
    /// input size (mlx_lm's `quantize_model` predicate), unless the checkpoint's config keeps
    /// the layer in float.
    fn maybe_quantize<T: Quantizable>(
        &self,
        path: &str,
        layer: T,
        input_dims: i32,
    ) -> Result<MaybeQuantized<T>> {
        // A recipe replaces the architecture's choices, those to keep a layer in float too.
        let kept_float =
            self.quant_recipe.is_none() && self.float_predicate.is_some_and(|f| f(path));
        match self.quantize {
            Some(p) if input_dims % p.group_size == 0 && !kept_float => {
                // As mlx_lm's `quantize_model`: the divisibility check is the default group
                // size's, the parameters the recipe's or the architecture's where it names
                // the layer.
                let p = match self.quant_recipe {
                    Some(recipe) => recipe.params(path)?,
                    None => self.quant_predicate.and_then(|f| f(path)).unwrap_or(p),
                };
                let q = layer
                    .to_quantized(p.group_size, p.bits, p.mode)
                    .map_err(|source| Error::Mlx {
                        path: self.file(&join(path, "weight")),
                        source,
                    })?;
                Ok(MaybeQuantized::Quantized(q))
            }
            _ => Ok(MaybeQuantized::Float(layer)),
        }
    }

    /// The parameters of the quantized layer stored at `path`, or `None` for a float one
    /// (Python: `load_model`'s class predicate): a per-layer config entry wins; otherwise they
    /// are read off the shapes (`infer_quant_config`).
    fn stored_quantization(&self, path: &str, input_dims: i32) -> Result<Option<QuantParams>> {
        let scales_key = join(path, "scales");
        let Some(scales) = self.weights.get(&scales_key) else {
            return Ok(None);
        };
        let file = self.file(&scales_key);
        let Some(q) = &self.quantization else {
            return Err(invalid(
                &file,
                &scales_key,
                "a quantized layer, but config.json has no `quantization`",
            ));
        };
        match q.layers.get(path) {
            Some(LayerQuantization::Quantized(p)) => return Ok(Some(*p)),
            Some(LayerQuantization::Float) => {
                return Err(invalid(
                    &file,
                    &scales_key,
                    &format!(
                        "quantized, but {} keeps `{path}` in floating point",
                        q.config_path().display()
                    ),
                ))
            }
            None => {}
        }
        let weight_key = join(path, "weight");
        let (Some(&groups), Some(&packed)) = (
            scales.shape().last(),
            self.weights.get(&weight_key).and_then(|w| w.shape().last()),
        ) else {
            return Err(invalid(&file, &weight_key, "missing or scalar"));
        };
        if groups <= 0 || input_dims % groups != 0 || (packed * 32) % input_dims != 0 {
            return Err(invalid(
                &file,
                &scales_key,
                &format!(
                    "{groups} groups and {packed} packed words do not fit {input_dims} inputs"
                ),
            ));
        }
        let (group_size, bits) = (input_dims / groups, packed * 32 / input_dims);
        // Only affine keeps its scales in the weights' dtype; each floating-point mode has
        // uint8 scales and exactly one (bits, group size) pair.
        let mode = match (bits, group_size) {
            _ if scales.dtype() != Dtype::Uint8 => QuantizationMode::Affine,
            (4, 16) => QuantizationMode::Nvfp4,
            (4, 32) => QuantizationMode::Mxfp4,
            (8, 32) => QuantizationMode::Mxfp8,
            _ => {
                return Err(invalid(
                    &file,
                    &scales_key,
                    &format!(
                        "uint8 scales with {bits} bits in groups of {group_size}: no MLX \
                         quantization mode packs so"
                    ),
                ))
            }
        };
        let p = QuantParams {
            group_size,
            bits,
            mode,
        };
        match p.unsupported() {
            Some(why) => Err(invalid(&file, &scales_key, &why)),
            None => Ok(Some(p)),
        }
    }

    fn quantized(
        &mut self,
        path: &str,
        input_dims: i32,
        output_dims: i32,
        p: QuantParams,
    ) -> Result<(Array, Array, Option<Array>)> {
        self.quantized_stack(path, &[], input_dims, output_dims, p)
    }

    /// The packed weight, scales and biases (the affine mode's; the floating-point modes have
    /// none) at `path`, each with the leading axes `lead` (the experts of a switch layer)
    /// before its rows.
    fn quantized_stack(
        &mut self,
        path: &str,
        lead: &[i32],
        input_dims: i32,
        output_dims: i32,
        p: QuantParams,
    ) -> Result<(Array, Array, Option<Array>)> {
        let weight_key = join(path, "weight");
        if (input_dims * p.bits) % 32 != 0 || input_dims % p.group_size != 0 {
            return Err(invalid(
                &self.file(&weight_key),
                &weight_key,
                &format!(
                    "{} bits with group size {} do not fit {input_dims} inputs",
                    p.bits, p.group_size
                ),
            ));
        }
        let packed = input_dims * p.bits / 32;
        let groups = input_dims / p.group_size;
        let shape = |last: i32| [lead, &[output_dims, last]].concat();
        let weight = self.array(&weight_key, &shape(packed))?;
        let scales = self.array(&join(path, "scales"), &shape(groups))?;
        let biases = match p.mode {
            QuantizationMode::Affine => Some(self.array(&join(path, "biases"), &shape(groups))?),
            _ => None,
        };
        Ok((weight, scales, biases))
    }

    /// Checks that every tensor was used (Python: `load_weights(..., strict=True)`).
    pub fn finish(self) -> Result<()> {
        match self.weights.keys().first() {
            None => Ok(()),
            Some(key) => Err(invalid(
                &self.file(key),
                key,
                &format!(
                    "not a parameter of the model ({} unused tensor(s): {})",
                    self.weights.len(),
                    self.weights
                        .keys()
                        .into_iter()
                        .take(5)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pad_rows(layer: &MaybeQuantizedLinear) -> PadRows {
        match layer {
            MaybeQuantized::Quantized(q) => q.pad_rows,
            other => panic!("not quantized: {other:?}"),
        }
    }

    /// The padding goes to the quantized layers of at least `PADDED_ROWS_MIN_BYTES` of packed
    /// weights, where the kernel options allow it, and to no other.
    #[test]
    fn large_quantized_layers_pad_their_rows_where_the_kernels_allow() -> Result<()> {
        let four_bit = Some(QuantParams::affine(64, 4));
        for (kernels, padded) in [
            (KernelOptions::default(), PadRows::OnCuda),
            (KernelOptions::none(), PadRows::Never),
        ] {
            let mut ck = Checkpoint::random("/nonexistent", 0, Dtype::Float32, four_bit);
            ck.set_kernels(kernels);
            // 4096 x 2048 weights in 4 bits: 4 MiB packed; 4096 x 1024: 2 MiB.
            assert_eq!(pad_rows(&ck.linear("big", 4096, 2048, false)?), padded);
            assert_eq!(
                pad_rows(&ck.linear("small", 4096, 1024, false)?),
                PadRows::Never
            );
            match ck.embedding("table", 2048, 4096)? {
                MaybeQuantized::Quantized(t) => assert_eq!(t.pad_rows, padded),
                other => panic!("not quantized: {other:?}"),
            }
        }
        Ok(())
    }
}
