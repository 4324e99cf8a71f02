//! Reading golden records written by `scripts/golden/*.py` and comparing arrays with them.

use mlx::core::half::{bf16, f16};
use mlx::core::num_complex::Complex32;
use mlx::core::{cuda, Array, Device, DeviceType, Dtype};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The folder of golden data for the device the tests run on: `tests/data` when MLX's default
/// device is the CPU, `tests/data/cuda` when it is a CUDA GPU. GPU kernels round differently
/// from the CPU's (float32 matmul and reduction order, quantization, out-of-range float to
/// integer conversion), so each device is compared with Python MLX on that same device, with
/// the same tolerances; `scripts/golden/common.py` picks the folder the same way.
pub fn data_dir() -> PathBuf {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    if on_cuda() {
        base.join("cuda")
    } else {
        base
    }
}

/// Whether MLX's default device is a CUDA GPU (the tests compare with `tests/data/cuda`).
pub fn on_cuda() -> bool {
    let on_gpu = Device::default_device().is_ok_and(|d| d.device_type() == DeviceType::Gpu);
    on_gpu && cuda::is_available().unwrap_or(false)
}

/// The bound for two float32 computations of one model that multiply the same activations in
/// different numbers of rows: a prompt whole against in chunks of one or token by token through
/// a cache. On the CPU they agree to float32 rounding: `cpu`. On a CUDA GPU, MLX multiplies
/// float32 matrices of several rows with TF32 tensor cores (`MLX_ENABLE_TF32`, on by default:
/// inputs rounded to 10 bits of mantissa) and a single row with a full float32 kernel, so the
/// two paths differ by TF32's rounding: mlx_lm itself measured up to 3.9e-3 between them in the
/// last position's log-probabilities of eight golden models (H200, `bench/lm/tf32_study.py`;
/// 1.9e-6 and less with `MLX_ENABLE_TF32=0`).
pub fn row_split_tolerance(cpu: f32) -> f32 {
    cuda_bound(cpu, tf32_bound::ROW_SPLIT)
}

/// Whether MLX multiplies float32 matrices of several rows with TF32 tensor cores here: a CUDA
/// GPU with `MLX_ENABLE_TF32` unset or not 0 (MLX reads it as an integer, once).
pub fn tf32() -> bool {
    on_cuda() && std::env::var("MLX_ENABLE_TF32").map_or(true, |v| v.trim() != "0")
}

/// The bounds of comparisons between two float32 computations of one model that multiply the
/// same activations in different numbers of rows, where TF32 rounds one and not the other
/// (see [`row_split_tolerance`]): each the largest difference measured on an H200 with
/// `scripts/gpu-suite run` (2026-11-29, MLX 0.32.2, TF32 on), where the same tests measured 0
/// or float32 rounding on the CPU and every comparison with mlx_lm's CUDA records was exact.
/// Comparisons with mlx_lm's records need none of these: mlx_lm rounds the same rows the same.
pub mod tf32_bound {
    /// A prompt whole against in chunks of one or token by token, log-probabilities: mlx_lm
    /// itself measured up to 3.9e-3 (lfm2; [`row_split_tolerance`](super::row_split_tolerance)).
    pub const ROW_SPLIT: f32 = 5e-3;
    /// A continuous batch's rows (several rows a step: TF32) against each request decoded
    /// alone (one row: float32), relative log-probabilities (`tests/lm_engine.rs`): qwen3
    /// 7.14e-3, gemma3_text 7.16e-3, qwen3 with repetition penalties 6.45e-3.
    pub const ENGINE_ROWS: f32 = 7.2e-3;
    /// A padded batch of prompts through Mamba-2 layers against each prompt alone
    /// (`tests/lm_batch.rs`): nemotron_h 2.51e-2. Its SSM state carries the rounding of every
    /// prompt position into each later one.
    pub const SSM_BATCH: f32 = 2.6e-2;
    /// gemma2 past its sliding window, a prompt whole against through the cache
    /// (`tests/lm_models.rs`): 8.85e-3 at position 16. Its soft-capped logits (tanh of the
    /// scaled scores) pass TF32's rounding of the projections on at a slope near 1.
    pub const GEMMA2_WINDOW: f32 = 8.9e-3;
}

/// `cpu` where [`tf32`] is false, else the larger of `cpu` and `tf32` (one of [`tf32_bound`]).
pub fn cuda_bound(cpu: f32, tf32: f32) -> f32 {
    if self::tf32() {
        cpu.max(tf32)
    } else {
        cpu
    }
}

/// How many leading greedy tokens two runs of one model must share, from the log-probabilities
/// of one of them at each step: all of them where [`tf32`] is false; with TF32, up to the first
/// step whose two best log-probabilities are within twice `bound` of each other (`bound`
/// relative, `|a - b| / max(1, |b|)`, as the tests measure log-probabilities), a pick TF32's
/// rounding may flip (after it the two runs continue from different tokens). The step at the
/// returned index, when there is one, still had the same inputs in both runs: its
/// log-probabilities are comparable, its token is not.
pub fn tokens_to_compare<V: AsRef<[f32]>>(logprobs: &[V], bound: f32) -> usize {
    if !tf32() {
        return logprobs.len();
    }
    logprobs
        .iter()
        .position(|lp| {
            let (mut first, mut second) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
            for &x in lp.as_ref() {
                if x > first {
                    second = first;
                    first = x;
                } else if x > second {
                    second = x;
                }
            }
            first - second <= 2.0 * bound * first.abs().max(1.0)
        })
        .unwrap_or(logprobs.len())
}

/// Whether `message` is MLX 0.32.2's CUDA `quantized_matmul` refusing a shape it has no kernel
/// for (e.g. a quantized key/value cache's attention over 9 keys with head dim 64, 4 bits in
/// groups of 64: mlx_lm fails there the same way; `scripts/golden/lm_kv_quant.py`).
pub fn cuda_cannot(message: &str) -> bool {
    on_cuda() && message.contains("No implementation for problem shape")
}

/// MLX 0.32.2's CUDA teardown abort (see `scripts/gpu-suite`'s header): a child process that
/// a CUDA GPU's MLX killed with SIGABRT as it exited, its stderr ending in `Destroy(handle_)
/// failed: driver shutting down`, had done its work. Its stderr without those two lines;
/// `None` for every other exit.
pub fn cuda_teardown_abort(status: &std::process::ExitStatus, stderr: &str) -> Option<String> {
    const WHAT: &str = "terminate called after throwing an instance of 'std::runtime_error'\n  \
        what():  Destroy(handle_) failed: driver shutting down\n";
    #[cfg(unix)]
    let aborted = std::os::unix::process::ExitStatusExt::signal(status) == Some(6);
    #[cfg(not(unix))]
    let aborted = status.code().is_none();
    (on_cuda() && aborted && stderr.ends_with(WHAT))
        .then(|| stderr[..stderr.len() - WHAT.len()].to_string())
}

/// A file of the golden folder ([`data_dir`]): inputs a generator wrote beside its records.
pub fn data_file(name: &str) -> PathBuf {
    data_dir().join(name)
}

/// Loads `<data_dir>/<area>.json` and checks it was made by the MLX version we wrap.
pub fn load(area: &str) -> Value {
    let path = data_file(&format!("{area}.json")).display().to_string();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(
        value["mlx_version"], "0.32.2",
        "{path} was not generated by MLX 0.32.2"
    );
    value
}

pub fn dtype_named(name: &str) -> Dtype {
    Dtype::ALL
        .into_iter()
        .find(|d| d.name() == name)
        .unwrap_or_else(|| panic!("unknown dtype {name}"))
}

fn number(v: &Value) -> f64 {
    match v {
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) if s == "nan" => f64::NAN,
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        other => other
            .as_f64()
            .unwrap_or_else(|| panic!("not a number: {other}")),
    }
}

/// Builds an array from a golden record (inputs for a test).
pub fn array(record: &Value) -> Array {
    let shape: Vec<i32> = serde_json::from_value(record["shape"].clone()).unwrap();
    let dtype = dtype_named(record["dtype"].as_str().unwrap());
    let values = record["values"].as_array().unwrap();
    let nums = || values.iter().map(number);
    let a = match dtype {
        Dtype::Bool => Array::from_slice(&nums().map(|v| v != 0.0).collect::<Vec<_>>(), &shape),
        Dtype::Uint8 => Array::from_slice(&nums().map(|v| v as u8).collect::<Vec<_>>(), &shape),
        Dtype::Uint16 => Array::from_slice(&nums().map(|v| v as u16).collect::<Vec<_>>(), &shape),
        Dtype::Uint32 => Array::from_slice(&nums().map(|v| v as u32).collect::<Vec<_>>(), &shape),
        Dtype::Uint64 => Array::from_slice(
            &values
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect::<Vec<_>>(),
            &shape,
        ),
        Dtype::Int8 => Array::from_slice(&nums().map(|v| v as i8).collect::<Vec<_>>(), &shape),
        Dtype::Int16 => Array::from_slice(&nums().map(|v| v as i16).collect::<Vec<_>>(), &shape),
        Dtype::Int32 => Array::from_slice(&nums().map(|v| v as i32).collect::<Vec<_>>(), &shape),
        Dtype::Int64 => Array::from_slice(
            &values
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect::<Vec<_>>(),
            &shape,
        ),
        Dtype::Float16 => Array::from_slice(&nums().map(f16::from_f64).collect::<Vec<_>>(), &shape),
        Dtype::Float32 => Array::from_slice(&nums().map(|v| v as f32).collect::<Vec<_>>(), &shape),
        Dtype::Float64 => Array::from_slice(&nums().collect::<Vec<_>>(), &shape),
        Dtype::Bfloat16 => {
            Array::from_slice(&nums().map(bf16::from_f64).collect::<Vec<_>>(), &shape)
        }
        Dtype::Complex64 => Array::from_slice(
            &values
                .iter()
                .map(|p| Complex32::new(number(&p[0]) as f32, number(&p[1]) as f32))
                .collect::<Vec<_>>(),
            &shape,
        ),
    };
    a.unwrap()
}

/// Reads any array as (re, im) pairs of f64, whatever its dtype.
fn as_pairs(a: &Array) -> Vec<(f64, f64)> {
    fn real<T: Into<f64>>(v: Vec<T>) -> Vec<(f64, f64)> {
        v.into_iter().map(|x| (x.into(), 0.0)).collect()
    }
    match a.dtype() {
        Dtype::Bool => a
            .to_vec::<bool>()
            .unwrap()
            .into_iter()
            .map(|b| (f64::from(u8::from(b)), 0.0))
            .collect(),
        Dtype::Uint8 => real(a.to_vec::<u8>().unwrap()),
        Dtype::Uint16 => real(a.to_vec::<u16>().unwrap()),
        Dtype::Uint32 => real(a.to_vec::<u32>().unwrap()),
        Dtype::Uint64 => a
            .to_vec::<u64>()
            .unwrap()
            .into_iter()
            .map(|x| (x as f64, 0.0))
            .collect(),
        Dtype::Int8 => real(a.to_vec::<i8>().unwrap()),
        Dtype::Int16 => real(a.to_vec::<i16>().unwrap()),
        Dtype::Int32 => real(a.to_vec::<i32>().unwrap()),
        Dtype::Int64 => a
            .to_vec::<i64>()
            .unwrap()
            .into_iter()
            .map(|x| (x as f64, 0.0))
            .collect(),
        Dtype::Float16 => real(a.to_vec::<f16>().unwrap()),
        Dtype::Float32 => real(a.to_vec::<f32>().unwrap()),
        Dtype::Float64 => real(a.to_vec::<f64>().unwrap()),
        Dtype::Bfloat16 => real(a.to_vec::<bf16>().unwrap()),
        Dtype::Complex64 => a
            .to_vec::<Complex32>()
            .unwrap()
            .into_iter()
            .map(|c| (f64::from(c.re), f64::from(c.im)))
            .collect(),
    }
}

/// Relative and absolute tolerance appropriate to a dtype: exact for integers and bool, a few
/// ulps of the format for floats.
pub fn default_tolerance(dtype: Dtype) -> (f64, f64) {
    match dtype {
        Dtype::Float16 => (1e-3, 1e-3),
        Dtype::Bfloat16 => (1e-2, 1e-2),
        Dtype::Float32 | Dtype::Complex64 => (1e-5, 1e-6),
        Dtype::Float64 => (1e-12, 1e-12),
        _ => (0.0, 0.0),
    }
}

/// Checks shape, dtype and values against a golden record with the dtype's default tolerance.
#[track_caller]
pub fn assert_close(actual: &Array, expected: &Value, what: &str) {
    let dtype = dtype_named(expected["dtype"].as_str().unwrap());
    let (rtol, atol) = default_tolerance(dtype);
    assert_close_tol(actual, expected, rtol, atol, what);
}

/// Checks shape, dtype and every value exactly (bit-for-bit for floats, NaN equal to NaN).
#[track_caller]
pub fn assert_exact(actual: &Array, expected: &Value, what: &str) {
    assert_close_tol(actual, expected, 0.0, 0.0, what);
}

#[track_caller]
pub fn assert_close_tol(actual: &Array, expected: &Value, rtol: f64, atol: f64, what: &str) {
    let shape: Vec<i32> = serde_json::from_value(expected["shape"].clone()).unwrap();
    assert_eq!(actual.shape(), shape.as_slice(), "{what}: shape");
    let dtype = dtype_named(expected["dtype"].as_str().unwrap());
    assert_eq!(actual.dtype(), dtype, "{what}: dtype");
    let got = as_pairs(actual);
    let want: Vec<(f64, f64)> = expected["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match v {
            Value::Array(p) => (number(&p[0]), number(&p[1])),
            other => (number(other), 0.0),
        })
        .collect();
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        for (gv, wv) in [(g.0, w.0), (g.1, w.1)] {
            let ok = (gv.is_nan() && wv.is_nan())
                || gv == wv
                || (gv - wv).abs() <= atol + rtol * wv.abs();
            assert!(
                ok,
                "{what}[{i}]: rust {g:?} vs python {w:?} (rtol {rtol}, atol {atol})"
            );
        }
    }
}
