//! Checkpoints that mlx_lm 0.32.2 misreads, against transformers itself: Llama models saved by
//! transformers 5.17 (`scripts/golden/torch/lm_transformers.py`), which keeps `rope_theta`
//! (and any scaling) only under `rope_parameters`, as a real SmolLM2-135M-Instruct saved by
//! transformers 5 does. mlx_lm's llama reads the top level only and silently runs them with
//! base 10000; we read both places, so our prompt logits must be transformers' (float32, on
//! the CPU), and mlx_lm's recorded ones must not be.

mod support;

use std::path::PathBuf;

use mlx::core::{io, with_device, Array, Device, Dtype};
use mlx::lm::{load, LoadOptions, UnreadKeys};
use serde_json::Value;

/// A default rope with base 100000, and a llama3-scaled one with base 500000.
const MODELS: &[&str] = &["llama-rope-parameters", "llama3-rope-parameters"];

fn data(name: &str) -> PathBuf {
    // The references are device-independent: transformers ran on the CPU, and mlx_lm's
    // record only has to show how far base 10000 is from them.
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/lm")
        .join(name)
}

fn logits(file: &str) -> Vec<f32> {
    let (arrays, _) = io::load_safetensors(data(file)).unwrap();
    floats(&arrays["logits"])
}

fn floats(a: &Array) -> Vec<f32> {
    a.astype(Dtype::Float32).unwrap().to_vec::<f32>().unwrap()
}

/// The largest of `|ours - theirs| / (1 + |theirs|)`: relative for large logits, absolute
/// for small ones.
fn worst(ours: &[f32], theirs: &[f32]) -> f32 {
    assert_eq!(ours.len(), theirs.len());
    ours.iter()
        .zip(theirs)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0, f32::max)
}

/// How far our logits may be from transformers'. mlx_lm's llama with the base and scaling
/// moved to where it reads them gives transformers' logits within 1.1e-5 (1.9e-5 absolute on
/// logits up to 51: float32 matmuls and reductions summed in another order); 1e-4 bounds that
/// with room. Base 10000 moves them by 1.0 and more (recorded by mlx_lm), far beyond it.
///
/// The forward runs on MLX's CPU device on every build: what is checked is how the config
/// is read, which no device changes, and a CUDA GPU's float32 matmuls differ from the CPU's
/// by up to 8e-2 relative where results cancel (1.6e-2 here, measured on an H200), too close
/// to the 1.0 that separates a wrong base.
const TOLERANCE: f32 = 1e-4;

#[test]
fn rope_parameters_checkpoints_give_transformers_logits() {
    let tol = TOLERANCE;
    for name in MODELS {
        let dir = golden_models::model_dir(name);
        // transformers' `save_pretrained` config: every key accounted for.
        let options = LoadOptions {
            unread_keys: UnreadKeys::Error,
            ..Default::default()
        };
        let (model, _, config) = load(&dir, options).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            config.float("rope_theta").unwrap().is_none(),
            "{name}: the checkpoint must keep rope_theta under rope_parameters only"
        );
        let reference: Value = serde_json::from_str(
            &std::fs::read_to_string(data(&format!("{name}.transformers.json"))).unwrap(),
        )
        .unwrap();
        let prompt: Vec<i32> = reference["prompt"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_i64().unwrap() as i32)
            .collect();
        let input = Array::from_slice(&prompt, &[1, prompt.len() as i32]).unwrap();
        let ours = with_device(&Device::cpu(), || {
            floats(&model.forward(&input, None).unwrap())
        })
        .unwrap();
        let transformers = logits(&format!("{name}.transformers.safetensors"));
        let ours_off = worst(&ours, &transformers);
        assert!(
            ours_off <= tol,
            "{name}: our logits are {ours_off} (relative) from transformers', more than {tol}"
        );
        // The test can fail: base 10000, as mlx_lm reads it, is far outside the tolerance.
        let mlx_lm_off = worst(&logits(&format!("{name}.safetensors")), &transformers);
        assert!(
            mlx_lm_off > 1e3 * tol,
            "{name}: mlx_lm's logits (base 10000) are only {mlx_lm_off} from transformers'"
        );
        eprintln!(
            "{name}: ours within {ours_off} of transformers' (relative); mlx_lm's off by {mlx_lm_off}"
        );
    }
}
