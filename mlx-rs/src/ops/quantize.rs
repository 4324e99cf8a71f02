//! Quantization: `quantize`, `dequantize`, `quantized_matmul`, `gather_qmm`, `qqmm`,
//! `gather_qqmm`, and the fp8 conversions.
//!
//! Each function takes its required arrays positionally and one options struct holding all
//! of its keyword arguments, named after it (`dequantize` takes [`DequantizeOptions`]), with
//! Python's defaults. The shared keywords `group_size`, `bits` and `mode` are fields of every
//! struct (not a nested struct), so each struct reads like its Python signature:
//!
//! ```
//! use mlx_rs::ops::{self, DequantizeOptions, QuantizeOptions, QuantizedMatmulOptions};
//! // wq, scales, biases = mx.quantize(w, group_size=32, bits=8)
//! let w = ops::ones(&[8, 64], None)?;
//! let (wq, scales, biases) = ops::quantize(&w, QuantizeOptions::default().group_size(32).bits(8))?;
//! let biases = biases.expect("affine quantization has biases");
//! // mx.dequantize(wq, scales, biases, group_size=32, bits=8)
//! let o = DequantizeOptions::default().biases(&biases).group_size(32).bits(8);
//! assert_eq!(ops::dequantize(&wq, &scales, o)?.shape(), &[8, 64]);
//! // mx.quantized_matmul(x, wq, scales, biases, group_size=32, bits=8)
//! let o = QuantizedMatmulOptions { biases: Some(&biases), group_size: Some(32), bits: Some(8), ..Default::default() };
//! assert_eq!(ops::quantized_matmul(&ops::ones(&[2, 64], None)?, &wq, &scales, o)?.shape(), &[2, 8]);
//! # Ok::<(), mlx_rs::Error>(())
//! ```

use mlx_sys as sys;

use crate::handles::{c_string, opt_array, opt_dtype, opt_int};
use crate::ops::bounds::batch_indices;
use crate::ops::qmm_sm90;
use crate::stream::vector_op;
use crate::{Array, Dtype, Error, Result};

/// The quantization formats of MLX (Python's `mode` strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantizationMode {
    /// `"affine"`: integer codes with a per-group scale and bias.
    Affine,
    /// `"mxfp4"`: OCP microscaling 4-bit floats.
    Mxfp4,
    /// `"mxfp8"`: OCP microscaling 8-bit floats.
    Mxfp8,
    /// `"nvfp4"`: NVIDIA 4-bit floats with fp8 group scales.
    Nvfp4,
}

impl QuantizationMode {
    /// The string Python and mlx-c use.
    pub fn as_str(self) -> &'static str {
        match self {
            QuantizationMode::Affine => "affine",
            QuantizationMode::Mxfp4 => "mxfp4",
            QuantizationMode::Mxfp8 => "mxfp8",
            QuantizationMode::Nvfp4 => "nvfp4",
        }
    }
}

/// The mlx-c form of `group_size`, `bits` and `mode`.
fn raw_quant(
    op: &str,
    group_size: Option<i32>,
    bits: Option<i32>,
    mode: QuantizationMode,
) -> Result<(
    sys::mlx_optional_int,
    sys::mlx_optional_int,
    std::ffi::CString,
)> {
    // MLX divides by both: 0 kills the process (SIGFPE) instead of raising.
    for (name, value) in [("group_size", group_size), ("bits", bits)] {
        if let Some(v) = value.filter(|&v| v < 1) {
            return Err(Error::invalid(format!(
                "[{op}] {name} must be positive, got {v}"
            )));
        }
    }
    let mode = c_string(mode.as_str(), op)?;
    Ok((opt_int(group_size), opt_int(bits), mode))
}

crate::options! {
    /// The keyword arguments of [`quantize`], with Python's defaults (`group_size=None`,
    /// `bits=None`, `mode="affine"`, `global_scale=None`).
    #[derive(Debug, Clone, Copy)]
    pub struct QuantizeOptions<'a> {
        /// Elements per group sharing one scale; `None`: the mode's default (64 for affine).
        group_size: opt i32 = None,
        /// Bits per element; `None`: the mode's default (4 for affine).
        bits: opt i32 = None,
        /// The quantization format.
        mode: plain QuantizationMode = QuantizationMode::Affine,
        /// A global scale of the fp formats (`nvfp4`).
        global_scale: array = None,
    }
}

crate::options! {
    /// The keyword arguments of [`dequantize`], with Python's defaults (`biases=None`,
    /// `group_size=None`, `bits=None`, `mode="affine"`, `global_scale=None`, `dtype=None`).
    #[derive(Debug, Clone, Copy)]
    pub struct DequantizeOptions<'a> {
        /// The biases [`quantize`] returned (required by the affine mode).
        biases: array = None,
        /// Elements per group sharing one scale; `None`: the mode's default.
        group_size: opt i32 = None,
        /// Bits per element; `None`: the mode's default.
        bits: opt i32 = None,
        /// The quantization format.
        mode: plain QuantizationMode = QuantizationMode::Affine,
        /// The global scale [`quantize`] was given, if any.
        global_scale: array = None,
        /// The dtype of the result; `None`: the dtype of `scales`.
        dtype: opt Dtype = None,
    }
}

crate::options! {
    /// The keyword arguments of [`quantized_matmul`], with Python's defaults (`biases=None`,
    /// `transpose=True`, `group_size=None`, `bits=None`, `mode="affine"`).
    #[derive(Debug, Clone, Copy)]
    pub struct QuantizedMatmulOptions<'a> {
        /// The biases [`quantize`] returned (required by the affine mode).
        biases: array = None,
        /// Whether to multiply by `w`'s transpose (`x @ w.T`).
        transpose: plain bool = true,
        /// Elements per group sharing one scale; `None`: the mode's default.
        group_size: opt i32 = None,
        /// Bits per element; `None`: the mode's default.
        bits: opt i32 = None,
        /// The quantization format.
        mode: plain QuantizationMode = QuantizationMode::Affine,
    }
}

crate::options! {
    /// The keyword arguments of [`gather_qmm`], with Python's defaults (`biases=None`,
    /// `lhs_indices=None`, `rhs_indices=None`, `transpose=True`, `group_size=None`,
    /// `bits=None`, `mode="affine"`, `sorted_indices=False`).
    #[derive(Debug, Clone, Copy)]
    pub struct GatherQmmOptions<'a> {
        /// The biases [`quantize`] returned (required by the affine mode).
        biases: array = None,
        /// The batch of `x` for each output batch; `None` takes every batch in order.
        lhs_indices: array = None,
        /// The batch of `w` for each output batch; `None` takes every batch in order.
        rhs_indices: array = None,
        /// Whether to multiply by `w`'s transpose.
        transpose: plain bool = true,
        /// Elements per group sharing one scale; `None`: the mode's default.
        group_size: opt i32 = None,
        /// Bits per element; `None`: the mode's default.
        bits: opt i32 = None,
        /// The quantization format.
        mode: plain QuantizationMode = QuantizationMode::Affine,
        /// Whether `rhs_indices` are sorted (a faster kernel).
        sorted_indices: plain bool = false,
    }
}

crate::options! {
    /// The keyword arguments of [`qqmm`], with Python's defaults (`scales=None`,
    /// `group_size=None`, `bits=None`, `mode="nvfp4"`, `global_scale_x=None`,
    /// `global_scale_w=None`).
    #[derive(Debug, Clone, Copy)]
    pub struct QqmmOptions<'a> {
        /// The scales of a pre-quantized `w`; `None` when `w` is not quantized yet.
        scales: array = None,
        /// Elements per group sharing one scale; `None`: the mode's default.
        group_size: opt i32 = None,
        /// Bits per element; `None`: the mode's default.
        bits: opt i32 = None,
        /// The quantization format.
        mode: plain QuantizationMode = QuantizationMode::Nvfp4,
        /// A global scale of `x`.
        global_scale_x: array = None,
        /// A global scale of `w`.
        global_scale_w: array = None,
    }
}

crate::options! {
    /// The keyword arguments of [`gather_qqmm`], with Python's defaults (`scales=None`,
    /// `lhs_indices=None`, `rhs_indices=None`, `group_size=None`, `bits=None`,
    /// `mode="nvfp4"`, `global_scale_x=None`, `global_scale_w=None`, `sorted_indices=False`).
    #[derive(Debug, Clone, Copy)]
    pub struct GatherQqmmOptions<'a> {
        /// The scales of a pre-quantized `w`; `None` when `w` is not quantized yet.
        scales: array = None,
        /// The batch of `x` for each output batch; `None` takes every batch in order.
        lhs_indices: array = None,
        /// The batch of `w` for each output batch; `None` takes every batch in order.
        rhs_indices: array = None,
        /// Elements per group sharing one scale; `None`: the mode's default.
        group_size: opt i32 = None,
        /// Bits per element; `None`: the mode's default.
        bits: opt i32 = None,
        /// The quantization format.
        mode: plain QuantizationMode = QuantizationMode::Nvfp4,
        /// A global scale of `x`.
        global_scale_x: array = None,
        /// A global scale of `w`.
        global_scale_w: array = None,
        /// Whether `rhs_indices` are sorted (a faster kernel).
        sorted_indices: plain bool = false,
    }
}

/// Quantizes the last axis of `w` in groups (Python: `mx.quantize(w, group_size=None,
/// bits=None, mode="affine", *, global_scale=None)`). Returns `(w_q, scales, biases)`;
/// `biases` is `None` for the floating-point modes, which have none.
pub fn quantize(w: &Array, options: QuantizeOptions<'_>) -> Result<(Array, Array, Option<Array>)> {
    let QuantizeOptions {
        group_size,
        bits,
        mode,
        global_scale,
    } = options;
    let (gs, bits, mode) = raw_quant("quantize", group_size, bits, mode)?;
    // SAFETY: valid handles (or null for an absent global scale); `mode` outlives the call.
    let mut out = vector_op(|res, s| unsafe {
        sys::mlx_quantize(
            res,
            w.as_raw(),
            gs,
            bits,
            mode.as_ptr(),
            opt_array(global_scale),
            s,
        )
    })?
    .into_iter();
    match (out.next(), out.next(), out.next()) {
        (Some(wq), Some(scales), biases) => Ok((wq, scales, biases)),
        _ => Err(Error::invalid(
            "[quantize] MLX returned fewer than two arrays",
        )),
    }
}

/// Inverse of [`quantize`] (Python: `mx.dequantize(w, scales, biases=None, group_size=None,
/// bits=None, mode="affine", global_scale=None, dtype=None)`).
pub fn dequantize(w: &Array, scales: &Array, options: DequantizeOptions<'_>) -> Result<Array> {
    let DequantizeOptions {
        biases,
        group_size,
        bits,
        mode,
        global_scale,
        dtype,
    } = options;
    let (gs, bits, mode) = raw_quant("dequantize", group_size, bits, mode)?;
    let dtype = opt_dtype(dtype);
    // SAFETY: valid or null handles; `mode` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_dequantize(
            res,
            w.as_raw(),
            scales.as_raw(),
            opt_array(biases),
            gs,
            bits,
            mode.as_ptr(),
            opt_array(global_scale),
            dtype,
            s,
        )
    })
}

/// `x @ dequantize(w).T` (or without the transpose) without materializing `w` (Python:
/// `mx.quantized_matmul(x, w, scales, biases=None, transpose=True, group_size=None,
/// bits=None, mode="affine")`).
pub fn quantized_matmul(
    x: &Array,
    w: &Array,
    scales: &Array,
    options: QuantizedMatmulOptions<'_>,
) -> Result<Array> {
    let QuantizedMatmulOptions {
        biases,
        transpose,
        group_size,
        bits,
        mode,
    } = options;
    // MLX's Hopper kernel gets one-group rows wrong; a zero group appended moves the product
    // to its other kernels (see qmm_sm90).
    let padded =
        qmm_sm90::pad_single_groups(x, w, scales, biases, transpose, group_size, bits, mode)?;
    let (x, w, scales, biases) = match &padded {
        Some([x, w, s, b]) => (x, w, s, Some(b)),
        None => (x, w, scales, biases),
    };
    let (gs, bits, mode) = raw_quant("quantized_matmul", group_size, bits, mode)?;
    // SAFETY: valid or null handles; `mode` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_quantized_matmul(
            res,
            x.as_raw(),
            w.as_raw(),
            scales.as_raw(),
            opt_array(biases),
            transpose,
            gs,
            bits,
            mode.as_ptr(),
            s,
        )
    })
}

/// Quantized matmul with batch gathering of `x` and `w` (Python: `mx.gather_qmm(x, w, scales,
/// biases=None, lhs_indices=None, rhs_indices=None, transpose=True, group_size=None,
/// bits=None, mode="affine", *, sorted_indices=False)`). An index past its operand's batch
/// clamps (negatives count from the end), as in [`take`](crate::ops::take).
pub fn gather_qmm(
    x: &Array,
    w: &Array,
    scales: &Array,
    options: GatherQmmOptions<'_>,
) -> Result<Array> {
    let GatherQmmOptions {
        biases,
        lhs_indices,
        rhs_indices,
        transpose,
        group_size,
        bits,
        mode,
        sorted_indices,
    } = options;
    let (gs, bits, mode) = raw_quant("gather_qmm", group_size, bits, mode)?;
    let lhs_indices = batch_indices(lhs_indices, x, "gather_qmm")?;
    let rhs_indices = batch_indices(rhs_indices, w, "gather_qmm")?;
    // SAFETY: valid or null handles; `mode` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_gather_qmm(
            res,
            x.as_raw(),
            w.as_raw(),
            scales.as_raw(),
            opt_array(biases),
            opt_array(lhs_indices.as_ref()),
            opt_array(rhs_indices.as_ref()),
            transpose,
            gs,
            bits,
            mode.as_ptr(),
            sorted_indices,
            s,
        )
    })
}

/// Matmul with both operands quantized (Python: `mx.qqmm(x, w, scales=None, group_size=None,
/// bits=None, mode="nvfp4", global_scale_x=None, global_scale_w=None)`). MLX implements it on
/// CUDA only; elsewhere it returns MLX's error.
pub fn qqmm(x: &Array, w: &Array, options: QqmmOptions<'_>) -> Result<Array> {
    let QqmmOptions {
        scales,
        group_size,
        bits,
        mode,
        global_scale_x,
        global_scale_w,
    } = options;
    let (gs, bits, mode) = raw_quant("qqmm", group_size, bits, mode)?;
    // SAFETY: valid or null handles; `mode` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_qqmm(
            res,
            x.as_raw(),
            w.as_raw(),
            opt_array(scales),
            gs,
            bits,
            mode.as_ptr(),
            opt_array(global_scale_x),
            opt_array(global_scale_w),
            s,
        )
    })
}

/// [`qqmm`] with batch gathering (Python: `mx.gather_qqmm(x, w, scales=None,
/// lhs_indices=None, rhs_indices=None, group_size=None, bits=None, mode="nvfp4",
/// global_scale_x=None, global_scale_w=None, *, sorted_indices=False)`).
pub fn gather_qqmm(x: &Array, w: &Array, options: GatherQqmmOptions<'_>) -> Result<Array> {
    let GatherQqmmOptions {
        scales,
        lhs_indices,
        rhs_indices,
        group_size,
        bits,
        mode,
        global_scale_x,
        global_scale_w,
        sorted_indices,
    } = options;
    let (gs, bits, mode) = raw_quant("gather_qqmm", group_size, bits, mode)?;
    // SAFETY: valid or null handles; `mode` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_gather_qqmm(
            res,
            x.as_raw(),
            w.as_raw(),
            opt_array(scales),
            opt_array(lhs_indices),
            opt_array(rhs_indices),
            gs,
            bits,
            mode.as_ptr(),
            opt_array(global_scale_x),
            opt_array(global_scale_w),
            sorted_indices,
            s,
        )
    })
}

/// Converts to 8-bit floats (e4m3) stored as `uint8` (Python: `mx.to_fp8(x)`).
pub fn to_fp8(x: &Array) -> Result<Array> {
    // SAFETY: valid handle.
    Array::try_from_stream_op(|res, s| unsafe { sys::mlx_to_fp8(res, x.as_raw(), s) })
}

/// Converts `uint8`-stored e4m3 floats to `dtype`, default bfloat16
/// (Python: `mx.from_fp8(x, dtype=mx.bfloat16)`).
pub fn from_fp8(x: &Array, dtype: impl Into<Option<Dtype>>) -> Result<Array> {
    let dtype = dtype.into().unwrap_or(Dtype::Bfloat16);
    // SAFETY: valid handle; plain values.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_from_fp8(res, x.as_raw(), dtype.to_raw(), s)
    })
}
