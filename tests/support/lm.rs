//! The language-model tests' fixtures: model directories and mlx_lm's golden records.

use std::path::PathBuf;

use serde_json::Value;

use super::golden::data_dir;

/// A model directory of `tests/data/lm-models`, its weights written from their recipe.
pub fn model_dir(name: &str) -> PathBuf {
    golden_models::model_dir(name)
}

/// `tests/data/[cuda/]lm/<file>`, written by mlx_lm 0.32.2.
pub fn golden(file: &str) -> Value {
    let path = data_dir().join("lm").join(file);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(json["mlx_lm_version"], "0.32.2");
    json
}

/// A JSON list of token ids.
pub fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap() as u32)
        .collect()
}

/// `name` loaded with `kernels`: its greedy generation from mlx_lm's golden prompt (`n`
/// tokens, the default compiled step): the tokens, each step's log-probabilities, the traces.
pub fn greedy_with(
    name: &str,
    kernels: mlx::lm::KernelOptions,
    n: usize,
) -> (Vec<u32>, Vec<Vec<f32>>, u64) {
    let options = mlx::lm::LoadOptions {
        kernels,
        ..Default::default()
    };
    let model = mlx::lm::load_model(model_dir(name), options).unwrap().0;
    let prompt = ids(&golden(&format!("{name}.json"))["prompt"]);
    let options = mlx::lm::GenerateOptions {
        max_tokens: n,
        ..Default::default()
    };
    let mut steps = mlx::lm::generate_step(&model, &prompt, &options).unwrap();
    let (mut tokens, mut logprobs) = (Vec::new(), Vec::new());
    for step in steps.by_ref() {
        let (token, lp) = step.unwrap();
        tokens.push(token);
        let lp = lp.astype(mlx::core::Dtype::Float32).unwrap();
        logprobs.push(lp.to_vec::<f32>().unwrap());
    }
    (tokens, logprobs, steps.traces())
}

/// `name` loaded with `kernels`: its logits `[1, L, vocab]` of mlx_lm's golden prompt, one
/// forward without a cache, in float32.
pub fn prompt_logits_with(name: &str, kernels: mlx::lm::KernelOptions) -> Vec<f32> {
    let options = mlx::lm::LoadOptions {
        kernels,
        ..Default::default()
    };
    let model = mlx::lm::load_model(model_dir(name), options).unwrap().0;
    let prompt = ids(&golden(&format!("{name}.json"))["prompt"]);
    let prompt: Vec<i32> = prompt.iter().map(|&t| t as i32).collect();
    let inputs = mlx::core::Array::from_slice(&prompt, &[1, prompt.len() as i32]).unwrap();
    let logits = model.forward(&inputs, None).unwrap();
    logits
        .astype(mlx::core::Dtype::Float32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap()
}

/// `name`'s greedy generation (64 tokens) with the kernels `on` and `off`: one trace with
/// `on`, each step's log-probabilities within `bound`, the same tokens but where `off`'s pick
/// was a tie within `bound` (the rest is not compared then).
pub fn greedy_generation_is_near(
    name: &str,
    on: mlx::lm::KernelOptions,
    off: mlx::lm::KernelOptions,
    bound: f32,
) {
    let (tokens, logprobs, traces) = greedy_with(name, on, 64);
    let (tokens_off, logprobs_off, _) = greedy_with(name, off, 64);
    assert_eq!(tokens.len(), 64, "{name}");
    assert_eq!(traces, 1, "{name}: one trace for 64 steps with the kernel");
    let mut worst = 0.0f32;
    for (step, (ours, theirs)) in logprobs.iter().zip(&logprobs_off).enumerate() {
        let diff = ours
            .iter()
            .zip(theirs)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        worst = worst.max(diff);
        if tokens[step] != tokens_off[step] {
            let mut sorted = theirs.clone();
            sorted.sort_by(|a, b| b.total_cmp(a));
            let margin = sorted[0] - sorted[1];
            assert!(
                margin <= bound,
                "{name}, step {step}: token {} where the ops' {} led by {margin}",
                tokens[step],
                tokens_off[step]
            );
            eprintln!("{name}: a tie to {bound} at step {step}, the rest not compared");
            break;
        }
    }
    eprintln!("{name}: log-probabilities with the kernel within {worst} of the ops'");
    assert!(worst <= bound, "{name}: log-probabilities off by {worst}");
}

/// How many of a golden greedy generation's tokens another computation of the same model must
/// reproduce when its log-probabilities may be `bound` from the record's: the steps before the
/// first whose best and second-best log-probabilities (`logprobs`, `[steps, vocab]`) are within
/// `bound`, where either token may win (all of them for a bound of 0).
pub fn greedy_steps_before_tie(logprobs: &mlx::core::Array, bound: f32) -> usize {
    let steps = logprobs.shape()[0] as usize;
    if bound == 0.0 {
        return steps;
    }
    let flat = logprobs
        .astype(mlx::core::Dtype::Float32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let vocab = flat.len() / steps;
    flat.chunks(vocab)
        .position(|row| {
            let mut sorted = row.to_vec();
            sorted.sort_by(|a, b| b.total_cmp(a));
            sorted[0] - sorted[1] <= bound
        })
        .unwrap_or(steps)
}

/// How far our log-probabilities may be from mlx_lm's with `compile: false`: linked to the
/// wheel's libmlx the same ops run on the same operands in the same order, bit for bit. Our
/// source build of MLX rounds some float32 kernels differently (~1.5e-6 on logits, see
/// tests/lm_models.rs); a bfloat16 value may then round to its neighbour, one bfloat16 step
/// at magnitudes 8 to 16. Not measured on the source build.
pub fn eager_tolerance(dtype: mlx::core::Dtype) -> f32 {
    match (mlx::core::sys::PREBUILT_MLX, dtype) {
        (true, _) => 0.0,
        (false, mlx::core::Dtype::Bfloat16) => 0.0625,
        (false, _) => 1e-5,
    }
}
