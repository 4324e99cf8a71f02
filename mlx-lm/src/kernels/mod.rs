//! Custom kernels of the language models, each beside the pure-ops path it replaces: the
//! kernel runs where it applies (a CUDA GPU, supported shapes) and the model's
//! [`KernelOptions`] allow it; everywhere else the ops run, as mlx_lm runs them.
//!
//! Whether a model uses a kernel is its own option, fixed when it loads
//! ([`LoadOptions::kernels`](crate::LoadOptions)), never a process-wide switch: two models in
//! one process may differ, and a compiled step traced for one model keeps what that model
//! chose.

pub mod decode_attention;
pub mod gated_delta;
pub mod selective_scan;
pub mod ssm;

use mlx_rs::{cuda, Result};
use mlx_tree::StaticData;

/// Which custom kernels a model uses where they apply (all on by default; each is measured
/// against the ops it replaces on a GPU: `tests/lm_decode_attention.rs`,
/// `tests/lm_gated_delta.rs`, `tests/lm_ssm.rs`, `tests/lm_selective_scan.rs`). Off, the model
/// computes with MLX's ops as mlx_lm does, to measure a kernel or to get mlx_lm's last bits on
/// a GPU. Kernels change a result's last bits only (they sum in another order), never what
/// it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, StaticData)]
pub struct KernelOptions {
    /// One-token decode attention over the written cache slots as one CUDA kernel
    /// ([`decode_attention`]); off: MLX's masked attention over the whole buffer.
    pub fused_decode_attention: bool,
    /// The gated delta rule of linear-attention layers (Qwen3.5) as one CUDA kernel
    /// ([`gated_delta`]); off: the recurrence as array ops, step by step.
    pub fused_gated_delta: bool,
    /// A decode step of Mamba-2's state-space model (mamba2, nemotron_h, falcon_h1,
    /// granitemoehybrid, plamo2) as one CUDA kernel ([`ssm`]); off: mlx_lm's chunked SSD ops
    /// with a chunk of one position.
    pub fused_ssm_update: bool,
    /// Mamba-1's selective scan (mamba, falcon_mamba, jamba) over a prompt or a decode step as
    /// one CUDA kernel ([`selective_scan`]), the projections over all positions at once; off:
    /// mlx_lm's loop of small ops, position by position.
    pub fused_selective_scan: bool,
    /// Quantized products of 2 to 7 rows (a small batch's decode step, a speculative
    /// verification) through MLX's 8-row kernel, the rows padded with zeros, for the layers
    /// whose packed weights take at least [`PADDED_ROWS_MIN_BYTES`]: MLX's CUDA kernel for
    /// fewer than 8 rows reads the weights once per row
    /// ([`PadRows`](mlx_nn::PadRows)); off: MLX's choice of kernel, as mlx_lm runs.
    pub padded_quantized_rows: bool,
}

/// The packed weight bytes from which a quantized layer pads its products of few rows (with
/// [`KernelOptions::padded_quantized_rows`]): an H200 measured MLX's 8-row product of a
/// 4096 -> 4096 4-bit layer (8 MiB) at 13 us against 22 us for 2 rows, and of a 4096 -> 1024
/// layer (2 MiB) at 8.5 us against 9.7 us, which the padding's two extra kernels outweigh
/// (bench/lm/RESULTS-qmv-kernel-gpu.md).
pub const PADDED_ROWS_MIN_BYTES: usize = 4 << 20;

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions {
            fused_decode_attention: true,
            fused_gated_delta: true,
            fused_ssm_update: true,
            fused_selective_scan: true,
            padded_quantized_rows: true,
        }
    }
}

impl KernelOptions {
    /// Every kernel off: the model computes with MLX's ops only, as mlx_lm does.
    pub fn none() -> KernelOptions {
        KernelOptions {
            fused_decode_attention: false,
            fused_gated_delta: false,
            fused_ssm_update: false,
            fused_selective_scan: false,
            padded_quantized_rows: false,
        }
    }
}

/// Whether MLX runs on a CUDA GPU here.
pub(crate) fn on_cuda() -> Result<bool> {
    cuda::is_current_device()
}
