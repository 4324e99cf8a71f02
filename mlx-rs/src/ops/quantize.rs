//! Quantization: `quantize`, `dequantize`, `quantized_matmul`, `gather_qmm`, `qqmm`,
//! `gather_qqmm`, and the fp8 conversions.
//!
//! The shared keyword arguments `group_size=None, bits=None, mode=...` live in
//! [`QuantizeOptions`]; `None` fields take Python's default for the function (mode `"affine"`
//! for most, `"nvfp4"` for `qqmm`/`gather_qqmm`).

use mlx_sys as sys;

use crate::handles::{c_string, opt_array, opt_dtype, opt_int};
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

/// `group_size`, `bits` and `mode` (each `None` = Python's default for the function).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QuantizeOptions {
    pub group_size: Option<i32>,
    pub bits: Option<i32>,
    pub mode: Option<QuantizationMode>,
}

impl QuantizeOptions {
    pub fn group_size(mut self, group_size: i32) -> Self {
        self.group_size = Some(group_size);
        self
    }
    pub fn bits(mut self, bits: i32) -> Self {
        self.bits = Some(bits);
        self
    }
    pub fn mode(mut self, mode: QuantizationMode) -> Self {
        self.mode = Some(mode);
        self
    }

    fn raw(
        &self,
        op: &str,
        default_mode: QuantizationMode,
    ) -> Result<(
        sys::mlx_optional_int,
        sys::mlx_optional_int,
        std::ffi::CString,
    )> {
        let mode = c_string(self.mode.unwrap_or(default_mode).as_str(), op)?;
        Ok((opt_int(self.group_size), opt_int(self.bits), mode))
    }
}

/// Quantizes the last axis of `w` in groups (Python: `mx.quantize(w, group_size=None,
/// bits=None, mode="affine", *, global_scale=None)`). Returns `(w_q, scales, biases)`;
/// `biases` is `None` for the floating-point modes, which have none.
pub fn quantize(
    w: &Array,
    options: QuantizeOptions,
    global_scale: Option<&Array>,
) -> Result<(Array, Array, Option<Array>)> {
    let (gs, bits, mode) = options.raw("quantize", QuantizationMode::Affine)?;
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
pub fn dequantize(
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    options: QuantizeOptions,
    global_scale: Option<&Array>,
    dtype: impl Into<Option<Dtype>>,
) -> Result<Array> {
    let (gs, bits, mode) = options.raw("dequantize", QuantizationMode::Affine)?;
    let dtype = opt_dtype(dtype.into());
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
    biases: Option<&Array>,
    transpose: bool,
    options: QuantizeOptions,
) -> Result<Array> {
    let (gs, bits, mode) = options.raw("quantized_matmul", QuantizationMode::Affine)?;
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
/// bits=None, mode="affine", *, sorted_indices=False)`).
#[allow(clippy::too_many_arguments)]
pub fn gather_qmm(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    lhs_indices: Option<&Array>,
    rhs_indices: Option<&Array>,
    transpose: bool,
    options: QuantizeOptions,
    sorted_indices: bool,
) -> Result<Array> {
    let (gs, bits, mode) = options.raw("gather_qmm", QuantizationMode::Affine)?;
    // SAFETY: valid or null handles; `mode` outlives the call.
    Array::try_from_stream_op(|res, s| unsafe {
        sys::mlx_gather_qmm(
            res,
            x.as_raw(),
            w.as_raw(),
            scales.as_raw(),
            opt_array(biases),
            opt_array(lhs_indices),
            opt_array(rhs_indices),
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
pub fn qqmm(
    x: &Array,
    w: &Array,
    scales: Option<&Array>,
    options: QuantizeOptions,
    global_scale_x: Option<&Array>,
    global_scale_w: Option<&Array>,
) -> Result<Array> {
    let (gs, bits, mode) = options.raw("qqmm", QuantizationMode::Nvfp4)?;
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
#[allow(clippy::too_many_arguments)]
pub fn gather_qqmm(
    x: &Array,
    w: &Array,
    scales: Option<&Array>,
    lhs_indices: Option<&Array>,
    rhs_indices: Option<&Array>,
    options: QuantizeOptions,
    global_scale_x: Option<&Array>,
    global_scale_w: Option<&Array>,
    sorted_indices: bool,
) -> Result<Array> {
    let (gs, bits, mode) = options.raw("gather_qqmm", QuantizationMode::Nvfp4)?;
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
