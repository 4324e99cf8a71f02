//! Adafactor, Muon and MultiOptimizer against Python MLX 0.32.2 (tests/data/optim_extra.json,
//! written by scripts/golden/optim_extra.py): the same parameters and gradients in, the same
//! updated parameters out after every step.

mod support;

use std::collections::BTreeMap;

use mlx::core::{Array, Result};
use mlx::optimizers::{self as optim, FilterFn, MultiOptimizer, Optimizer};
use serde_json::Value;
use support::golden::{array, assert_close_tol, load};

type Params = BTreeMap<String, Array>;

/// Built against the wheel's own libmlx (`MLX_DIR`, as CI's first step builds): then every
/// step is bit-identical to Python's.
const LINKED_TO_WHEEL: bool = option_env!("MLX_DIR").is_some();
const RTOL: f64 = 1e-6;
const ATOL: f64 = 1e-7;

/// Exact when linked to the wheel. With the source build, Adafactor (elementwise ops and
/// `mean`s, which round alike in both builds here) is exact too; Muon's matmuls may round their
/// last bit differently from the wheel's kernels, and the Newton-Schulz iteration (five cubic
/// steps, then normalized updates over four steps) carries that ulp to a few ulps of the
/// parameters.
fn tolerance(matmuls: bool) -> (f64, f64) {
    if LINKED_TO_WHEEL || !matmuls {
        (0.0, 0.0)
    } else {
        (RTOL, ATOL)
    }
}

fn records(v: &Value) -> Params {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, r)| (k.clone(), array(r)))
        .collect()
}

/// The script's gradient, `p * p - t`: exactly rounded ops, the same bits on every build.
fn grads_of(params: &Params, targets: &Params) -> Result<Params> {
    params
        .iter()
        .map(|(k, p)| Ok((k.clone(), &(p * p) - &targets[k])))
        .collect()
}

/// Runs the steps Python recorded for `name`, with `update` doing one optimizer step.
fn run(
    name: &str,
    matmuls: bool,
    mut update: impl FnMut(&mut Params, &Params) -> Result<()>,
) -> Result<()> {
    let data = load("optim_extra");
    let targets = records(&data["targets"]);
    let mut params = records(&data["init"]);
    let steps = data["steps"][name].as_array().unwrap();
    assert!(!steps.is_empty(), "{name}: no steps recorded");
    let (rtol, atol) = tolerance(matmuls);
    for (i, step) in steps.iter().enumerate() {
        let grads = grads_of(&params, &targets)?;
        update(&mut params, &grads)?;
        let want = step.as_object().unwrap();
        assert_eq!(params.len(), want.len(), "{name} step {i}: parameter count");
        for (k, a) in &params {
            assert_close_tol(a, &want[k], rtol, atol, &format!("{name} step {i} {k}"));
        }
    }
    Ok(())
}

fn run_optimizer<O: Optimizer>(name: &str, mut opt: O) -> Result<()> {
    let matmuls = name.starts_with("muon");
    run(name, matmuls, |p, g| opt.update(p, g))?;
    assert_eq!(
        opt.step().item::<u64>()?,
        load("optim_extra")["steps"][name].as_array().unwrap().len() as u64
    );
    Ok(())
}

fn run_multi(name: &str, mut opt: MultiOptimizer) -> Result<()> {
    run(name, true, |p, g| opt.update(p, g))
}

#[test]
fn adafactor_matches_python() -> Result<()> {
    run_optimizer("adafactor", optim::Adafactor::new())?;
    run_optimizer(
        "adafactor_lr",
        optim::Adafactor::new()
            .learning_rate(0.01)
            .relative_step(false)
            .scale_parameter(false)
            .beta_1(0.9)
            .weight_decay(0.1)
            .clip_threshold(0.5),
    )?;
    run_optimizer(
        "adafactor_warmup",
        optim::Adafactor::new()
            .warmup_init(true)
            .beta_1(0.8)
            .eps(1e-20, 1e-2)
            .decay_rate(-0.6),
    )?;
    run_optimizer(
        "adafactor_scaled_lr",
        optim::Adafactor::new()
            .learning_rate(0.03)
            .relative_step(false)
            .weight_decay(0.05),
    )?;
    run_optimizer(
        "adafactor_schedule",
        optim::Adafactor::new()
            .learning_rate(optim::cosine_decay(0.05, 4, 0.001)?)
            .relative_step(false),
    )
}

#[test]
fn adafactor_factors_matrices_only() -> Result<()> {
    let mut opt = optim::Adafactor::new().beta_1(0.9);
    let data = load("optim_extra");
    let mut params = records(&data["init"]);
    let grads = grads_of(&params, &records(&data["targets"]))?;
    opt.update(&mut params, &grads)?;
    let names = |k: &str| opt.state().params[k].keys().cloned().collect::<Vec<_>>();
    assert_eq!(names("bias"), ["exp_avg", "exp_avg_sq"]);
    assert_eq!(names("w"), ["exp_avg", "exp_avg_sq_col", "exp_avg_sq_row"]);
    let k = &opt.state().params["k"];
    assert_eq!(k["exp_avg_sq_row"].shape(), &[2, 3]);
    assert_eq!(k["exp_avg_sq_col"].shape(), &[2, 4]);
    Ok(())
}

#[test]
fn muon_matches_python() -> Result<()> {
    run_optimizer("muon", optim::Muon::new(0.02))?;
    run_optimizer(
        "muon_plain",
        optim::Muon::new(0.05)
            .momentum(0.9)
            .weight_decay(0.0)
            .nesterov(false)
            .ns_steps(3),
    )?;
    run_optimizer(
        "muon_schedule",
        optim::Muon::new(optim::linear_schedule(0.0, 0.1, 3)?).weight_decay(0.1),
    )
}

fn matrices() -> FilterFn {
    Box::new(|_, g| g.ndim() >= 2)
}

#[test]
fn multi_optimizer_matches_python() -> Result<()> {
    run_multi(
        "multi",
        MultiOptimizer::new(
            vec![
                optim::Muon::new(0.02).into(),
                optim::AdamW::new(0.01).into(),
            ],
            vec![matrices()],
        )?,
    )?;
    run_multi(
        "multi3",
        MultiOptimizer::new(
            vec![
                optim::SGD::new(0.1).momentum(0.9).into(),
                optim::Adafactor::new().into(),
                optim::Adam::new(0.01).into(),
            ],
            vec![
                Box::new(|path: &str, _: &Array| path.starts_with('t')),
                Box::new(|_: &str, g: &Array| g.ndim() == 3),
            ],
        )?,
    )?;
    run_multi(
        "multi_single",
        MultiOptimizer::new(vec![optim::Lion::new(0.01).into()], vec![])?,
    )
}

#[test]
fn multi_optimizer_splits_state_and_steps_every_optimizer() -> Result<()> {
    let data = load("optim_extra");
    let mut params = records(&data["init"]);
    let grads = grads_of(&params, &records(&data["targets"]))?;
    let mut opt = MultiOptimizer::new(
        vec![
            optim::Muon::new(0.02).into(),
            optim::SGD::new(0.1).into(),
            optim::AdamW::new(0.01).into(),
        ],
        vec![matrices(), Box::new(|path, _| path == "nothing")],
    )?;
    opt.update(&mut params, &grads)?;
    let states = opt.states();
    let keys = |i: usize| states[i].params.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(0), ["k", "tall", "w"]);
    assert!(keys(1).is_empty());
    assert_eq!(keys(2), ["bias"]);
    // As in Python, an optimizer with no parameters steps too.
    for s in &states {
        assert_eq!(s.step.item::<u64>()?, 1);
    }
    assert_eq!(opt.learning_rate()?.item::<f32>()?, 0.02);
    Ok(())
}

#[test]
fn bad_options_are_errors() -> Result<()> {
    let data = load("optim_extra");
    let params = records(&data["init"]);
    let grads = grads_of(&params, &records(&data["targets"]))?;
    let mut p = params.clone();
    let bad: Vec<(Result<()>, &str)> = vec![
        (
            // Python fails here too, at the first update (no `learning_rate` in the state).
            optim::Adafactor::new()
                .relative_step(false)
                .update(&mut p, &grads),
            "needs a learning_rate",
        ),
        (
            optim::Adafactor::new()
                .learning_rate(-0.1)
                .relative_step(false)
                .update(&mut p, &grads),
            "learning_rate should be >=0",
        ),
        (
            optim::Adafactor::new()
                .eps(-1e-30, 1e-3)
                .update(&mut p, &grads),
            "epsilons should be >=0",
        ),
        (
            optim::Adafactor::new()
                .eps(1e-30, f64::NAN)
                .update(&mut p, &grads),
            "epsilons should be >=0",
        ),
        (
            optim::Adafactor::new()
                .clip_threshold(0.0)
                .update(&mut p, &grads),
            "clip_threshold should be >0",
        ),
        (
            optim::Muon::new(-0.02).update(&mut p, &grads),
            "learning_rate should be >=0",
        ),
        (
            optim::Muon::new(0.02).momentum(1.5).update(&mut p, &grads),
            "momentum should be in [0, 1]",
        ),
        (
            MultiOptimizer::new(
                vec![
                    optim::Muon::new(0.02).into(),
                    optim::AdamW::new(0.01).into(),
                ],
                vec![],
            )
            .map(|_| ()),
            "Given 0 filters but 1 needed.",
        ),
        (
            MultiOptimizer::new(vec![], vec![]).map(|_| ()),
            "Given 0 filters but -1 needed.",
        ),
        (
            MultiOptimizer::new(
                vec![
                    optim::Muon::new(-1.0).into(),
                    optim::AdamW::new(0.01).into(),
                ],
                vec![matrices()],
            )?
            .update(&mut p, &grads),
            "learning_rate should be >=0",
        ),
    ];
    for (result, message) in bad {
        let e = result.unwrap_err();
        assert!(e.to_string().contains(message), "{e}");
    }
    // The parameters were not touched by any of the failed updates.
    for (k, a) in &params {
        assert_eq!(p[k].to_vec::<f32>()?, a.to_vec::<f32>()?, "{k}");
    }
    // Boundary values that are valid.
    optim::Adafactor::new()
        .eps(0.0, 0.0)
        .update(&mut params.clone(), &grads)?;
    optim::Muon::new(0.0)
        .momentum(0.0)
        .update(&mut params.clone(), &grads)?;
    Ok(())
}
