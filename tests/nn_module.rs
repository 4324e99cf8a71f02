//! The `Module` trait and training machinery: weights loading errors, freeze/unfreeze,
//! train/eval, and a compiled training step (model and optimizer passed mutably).

mod support;

use std::collections::HashMap;

use mlx::core::ops::{self, AllcloseOptions};
use mlx::core::{random, Array, Result};
use mlx::nn::{self, losses, Dropout, Forward, LoadWeightsOptions, Module};
use mlx::optimizers::{self as optim, Optimizer};
use mlx::utils::{compile_mut, TreeNode};

#[derive(Clone, TreeNode)]
struct Mlp {
    layers: Vec<nn::Linear>,
}

impl Mlp {
    fn new() -> Result<Mlp> {
        Ok(Mlp {
            layers: vec![nn::Linear::new(4, 8, true)?, nn::Linear::new(8, 3, true)?],
        })
    }
    fn forward(&self, x: &Array) -> Result<Array> {
        self.layers[1].forward(&nn::relu(&self.layers[0].forward(x)?)?)
    }
}

fn loss_fn(m: &Mlp, (x, y): &(Array, Array)) -> Result<Array> {
    let mean = losses::CrossEntropyOptions::default().reduction(losses::Reduction::Mean);
    losses::cross_entropy(&m.forward(x)?, y, mean)
}

fn batch() -> Result<(Array, Array)> {
    let k = random::key(3)?;
    let x = random::normal(&[16, 4], Default::default(), &k)?;
    let y = Array::from_slice(&[0i32, 1, 2, 1].repeat(4), &[16])?;
    Ok((x, y))
}

fn data(name: &str) -> std::path::PathBuf {
    support::golden::data_file(name)
}

#[test]
fn python_written_weights_load_by_name() -> Result<()> {
    let mut m = Mlp::new()?;
    m.load_weights(data("nn_mlp.safetensors"), LoadWeightsOptions::default())?;
    let (weights, _) = mlx::core::io::load_safetensors(data("nn_mlp.safetensors"))?;
    for (path, a) in m.named_parameters()? {
        let w = &weights[&path];
        assert!(ops::array_equal(&a, w, false)?.item::<bool>()?, "{path}");
    }
    Ok(())
}

fn load_err(weights: HashMap<String, Array>) -> String {
    Mlp::new()
        .unwrap()
        .load_weights_from(weights, LoadWeightsOptions::default())
        .unwrap_err()
        .to_string()
}

#[test]
fn weight_mismatches_name_the_keys() -> Result<()> {
    let good: HashMap<String, Array> = Mlp::new()?.named_parameters()?.into_iter().collect();

    let mut missing = good.clone();
    missing.remove("layers.1.bias");
    let e = load_err(missing);
    assert!(
        e.contains("missing (in the tree, not in the file): layers.1.bias"),
        "{e}"
    );

    let mut extra = good.clone();
    extra.insert("layers.2.weight".into(), ops::zeros(&[3, 3], None)?);
    let e = load_err(extra);
    assert!(
        e.contains("unexpected (in the file, not in the tree): layers.2.weight"),
        "{e}"
    );

    let mut shape = good.clone();
    shape.insert("layers.0.weight".into(), ops::zeros(&[8, 5], None)?);
    let e = load_err(shape);
    assert!(
        e.contains("wrong shape: layers.0.weight: file [8, 5] vs tree [8, 4]"),
        "{e}"
    );

    // The same through a file, whose path is in the message; nothing was changed.
    let dir = std::env::temp_dir().join(format!("mlx-nn-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.safetensors");
    let mut bad = good.clone();
    bad.remove("layers.0.bias");
    mlx::core::io::save_safetensors(&file, bad.iter(), None)?;
    let mut m = Mlp::new()?;
    let before = m.layers[0].weight.clone();
    let e = m
        .load_weights(&file, LoadWeightsOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad.safetensors") && e.contains("layers.0.bias"),
        "{e}"
    );
    assert!(ops::array_equal(&before, &m.layers[0].weight, false)?.item::<bool>()?);
    // allow_missing loads the rest.
    let opts = LoadWeightsOptions {
        allow_missing: true,
        ..Default::default()
    };
    m.load_weights(&file, opts)?;
    assert!(ops::array_equal(&bad["layers.0.weight"], &m.layers[0].weight, false)?.item::<bool>()?);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

#[test]
fn save_and_load_round_trip() -> Result<()> {
    let m = Mlp::new()?;
    let file = std::env::temp_dir().join(format!("mlx-nn-rt-{}.safetensors", std::process::id()));
    m.save_weights(&file)?;
    let mut n = Mlp::new()?;
    n.load_weights(&file, LoadWeightsOptions::default())?;
    for ((p, a), (_, b)) in m.named_parameters()?.into_iter().zip(n.named_parameters()?) {
        assert!(ops::array_equal(&a, &b, false)?.item::<bool>()?, "{p}");
    }
    std::fs::remove_file(&file).ok();
    Ok(())
}

#[test]
fn freeze_and_unfreeze_by_path() -> Result<()> {
    let mut m = Mlp::new()?;
    m.freeze(Some(&["layers.0"]))?;
    let names = |m: &Mlp| -> Vec<String> {
        m.named_trainable_parameters()
            .unwrap()
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    };
    assert_eq!(names(&m), ["layers.1.weight", "layers.1.bias"]);
    // Frozen parameters get no gradient and the optimizer leaves them alone.
    let (x, y) = batch()?;
    let (_, grads) = nn::value_and_grad(loss_fn)(&m, &(x.clone(), y.clone()))?;
    assert_eq!(
        grads.layers[0]
            .weight
            .abs()?
            .sum(None, false)?
            .item::<f32>()?,
        0.0
    );
    assert!(
        grads.layers[1]
            .weight
            .abs()?
            .sum(None, false)?
            .item::<f32>()?
            > 0.0
    );
    let before = m.layers[0].weight.clone();
    let before1 = m.layers[1].weight.clone();
    let mut opt = optim::AdamW::new(0.1);
    opt.update(&mut m, &grads)?;
    assert!(ops::array_equal(&before, &m.layers[0].weight, false)?.item::<bool>()?);
    assert!(!ops::array_equal(&before1, &m.layers[1].weight, false)?.item::<bool>()?);

    m.unfreeze(Some(&["layers.0.bias"]))?;
    assert_eq!(
        names(&m),
        ["layers.0.bias", "layers.1.weight", "layers.1.bias"]
    );
    m.unfreeze(None)?;
    assert_eq!(names(&m).len(), 4);
    m.freeze(None)?;
    assert!(names(&m).is_empty());
    let e = m.freeze(Some(&["layers.7"])).unwrap_err().to_string();
    assert!(e.contains("no parameter at or below `layers.7`"), "{e}");
    Ok(())
}

#[derive(Clone, TreeNode)]
struct WithRaw {
    scale: Array,
    inner: nn::Linear,
}

#[test]
fn freezing_needs_a_frozen_field() -> Result<()> {
    let mut w = WithRaw {
        scale: Array::from(1.0f32),
        inner: nn::Linear::new(2, 2, false)?,
    };
    let e = w.freeze(Some(&["scale"])).unwrap_err().to_string();
    assert!(e.contains("cannot freeze `scale`"), "{e}");
    w.freeze(Some(&["inner"]))?;
    assert_eq!(w.named_trainable_parameters()?.len(), 1);
    Ok(())
}

#[derive(Clone, TreeNode)]
struct Net {
    proj: nn::Linear,
    drop: Dropout,
}

#[test]
fn train_and_eval_modes() -> Result<()> {
    let mut net = Net {
        proj: nn::Linear::new(4, 4, false)?,
        drop: Dropout::new(0.5)?,
    };
    assert!(net.training()?);
    let x = ops::ones(&[64, 4], None)?;
    let y = net.drop.forward(&x)?;
    // In training mode dropout zeroes some entries and doubles the rest.
    let zeros = ops::equal(&y, 0.0)?.sum(None, false)?.item::<i32>()?;
    assert!(zeros > 0 && zeros < 256, "{zeros}");
    net.eval_mode()?;
    assert!(!net.training()? && !net.drop.training);
    let y = net.drop.forward(&x)?;
    assert!(ops::array_equal(&y, &x, false)?.item::<bool>()?);
    net.train(true)?;
    assert!(net.drop.training);
    assert!(Dropout::new(1.0).is_err());
    Ok(())
}

#[test]
fn compiled_training_step_equals_eager_with_one_trace() -> Result<()> {
    let (x, y) = batch()?;
    let model = Mlp::new()?;
    let schedule = optim::join_schedules(
        vec![
            optim::linear_schedule(0.0, 0.05, 2)?,
            optim::cosine_decay(0.05, 10, None)?,
        ],
        vec![2],
    )?;

    // Eager.
    let mut eager = (model.clone(), optim::Adam::new(schedule.clone()));
    let mut eager_losses = Vec::new();
    for _ in 0..5 {
        let (loss, grads) = nn::value_and_grad(loss_fn)(&eager.0, &(x.clone(), y.clone()))?;
        eager.1.update(&mut eager.0, &grads)?;
        eager_losses.push(loss.item::<f32>()?);
    }

    // Compiled: model and optimizer state are `&mut` state of one compiled step.
    let mut state = (model, optim::Adam::new(schedule));
    state.1.init(&state.0)?;
    let step = compile_mut(
        |s: &mut (Mlp, optim::Adam), (x, y): &(Array, Array)| {
            let (loss, grads) = nn::value_and_grad(loss_fn)(&s.0, &(x.clone(), y.clone()))?;
            let (grads, _) = optim::clip_grad_norm(&grads, 100.0)?;
            s.1.update(&mut s.0, &grads)?;
            Ok(loss)
        },
        None,
    );
    let batch = (x.clone(), y.clone());
    let mut compiled_losses = Vec::new();
    for _ in 0..5 {
        compiled_losses.push(step.call(&mut state, &batch)?.item::<f32>()?);
    }
    let stats = step.stats();
    assert_eq!(stats.traces, 1, "one trace for five calls: {stats:?}");
    assert_eq!((stats.calls, stats.cache_hits), (5, 4));
    assert_eq!(state.1.step().item::<u64>()?, 5);
    for (a, b) in eager_losses.iter().zip(&compiled_losses) {
        assert!(
            (a - b).abs() < 1e-5,
            "losses {eager_losses:?} vs {compiled_losses:?}"
        );
    }
    assert!(compiled_losses[4] < compiled_losses[0]);
    for ((p, a), (_, b)) in eager
        .0
        .named_parameters()?
        .into_iter()
        .zip(state.0.named_parameters()?)
    {
        assert!(
            ops::allclose(&a, &b, AllcloseOptions::default().atol(1e-6))?.item::<bool>()?,
            "{p} differs after 5 steps"
        );
    }
    Ok(())
}

#[test]
fn compiled_step_initializes_optimizer_state_once() -> Result<()> {
    // Without `init`, the first step creates the optimizer state (a structure change): the
    // state is rebuilt from the new structure and the second call traces once more; after
    // that every call is a cache hit, and the result equals the eager loop.
    let (x, y) = batch()?;
    let model = Mlp::new()?;
    let mut eager = (model.clone(), optim::SGD::new(0.1).momentum(0.9));
    for _ in 0..4 {
        let (_, grads) = nn::value_and_grad(loss_fn)(&eager.0, &(x.clone(), y.clone()))?;
        eager.1.update(&mut eager.0, &grads)?;
    }
    let mut state = (model, optim::SGD::new(0.1).momentum(0.9));
    let step = compile_mut(
        |s: &mut (Mlp, optim::SGD), (x, y): &(Array, Array)| {
            let (loss, grads) = nn::value_and_grad(loss_fn)(&s.0, &(x.clone(), y.clone()))?;
            s.1.update(&mut s.0, &grads)?;
            Ok(loss)
        },
        None,
    );
    let batch = (x, y);
    for _ in 0..4 {
        step.call(&mut state, &batch)?;
    }
    assert_eq!(step.stats().traces, 2, "{:?}", step.stats());
    for ((p, a), (_, b)) in eager
        .0
        .named_parameters()?
        .into_iter()
        .zip(state.0.named_parameters()?)
    {
        assert!(
            ops::allclose(&a, &b, AllcloseOptions::default().atol(1e-6))?.item::<bool>()?,
            "{p}"
        );
    }
    Ok(())
}

#[test]
fn initializers_follow_python_formulas() -> Result<()> {
    let a = ops::zeros(&[64, 32, 3], None)?;
    // Python's _calculate_fan_in_fan_out: receptive field = 32 (the middle axes),
    // fan_in = 3 * 32, fan_out = 64 * 32.
    let limit = (6.0f32 / (96.0 + 2048.0)).sqrt();
    let w = nn::init::glorot_uniform(&a, None, None)?;
    assert_eq!(w.shape(), a.shape());
    let max = w.abs()?.max(None, false)?.item::<f32>()?;
    assert!(max <= limit && max > 0.8 * limit, "{max} vs {limit}");
    let h = nn::init::he_normal(&a, Default::default())?;
    let std = h.std(None, false, None)?.item::<f32>()?;
    let want = 1.0 / 96f32.sqrt();
    assert!((std - want).abs() < 0.1 * want, "{std} vs {want}");
    let c = nn::init::constant(&a, 0.5, mlx::core::Dtype::Float16)?;
    assert_eq!(c.dtype(), mlx::core::Dtype::Float16);
    let e = nn::init::glorot_normal(&ops::zeros(&[3], None)?, 1.0, None).unwrap_err();
    assert!(e.to_string().contains("at least 2 dimensional"), "{e}");
    Ok(())
}

#[test]
fn sequential_of_a_vec_and_parameters_tree() -> Result<()> {
    let seq = nn::Sequential::new(vec![
        nn::Linear::new(3, 3, true)?,
        nn::Linear::new(3, 2, false)?,
    ]);
    let y = seq.forward(&ops::ones(&[5, 3], None)?)?;
    assert_eq!(y.shape(), &[5, 2]);
    let params = seq.parameters()?;
    assert!(params.get_path("layers.1.weight").is_some());
    assert!(params.get_path("layers.1.bias").is_none());
    assert_eq!(seq.num_parameters()?, 9 + 3 + 6);
    Ok(())
}

#[test]
fn forward_is_one_trait_for_layers_and_models_and_object_safe() -> Result<()> {
    use nn::Apply;
    // A user model implements `Forward` and is called like any layer.
    #[derive(TreeNode)]
    struct Tiny {
        proj: nn::Linear,
        act: nn::ReLU,
    }
    impl Forward for Tiny {
        fn forward(&self, x: &Array) -> Result<Array> {
            x.apply(&self.proj)?.apply(&self.act)
        }
    }
    let w = Array::from_slice(&[1.0f32, -1.0, 2.0, 0.5], &[2, 2])?;
    let tiny = Tiny {
        proj: nn::Linear::from_weights(w, None),
        act: nn::ReLU,
    };
    let x = Array::from_slice(&[1.0f32, 2.0], &[1, 2])?;
    // [1*1 + 2*-1, 1*2 + 2*0.5] = [-1, 3] -> relu -> [0, 3]
    assert_eq!(tiny.forward(&x)?.to_vec::<f32>()?, [0.0, 3.0]);
    let layers: Vec<Box<dyn Forward>> = vec![Box::new(tiny), Box::new(nn::Tanh)];
    let mut h = x.clone();
    for l in &layers {
        h = l.forward(&h)?;
    }
    assert_eq!(h.to_vec::<f32>()?, [0.0, 3.0f32.tanh()]);
    Ok(())
}

#[test]
fn sgd_builder_checks_nesterov_at_the_first_update() -> Result<()> {
    let mut m = nn::Linear::new(2, 1, true)?;
    let grads = mlx::utils::tree_map(|a| ops::ones_like(a, None), &m)?;
    let e = optim::SGD::new(0.1)
        .nesterov(true)
        .update(&mut m, &grads)
        .unwrap_err();
    assert!(e.to_string().contains("Nesterov"), "{e}");
    let mut ok = optim::SGD::new(0.1).nesterov(true).momentum(0.9);
    ok.update(&mut m, &grads)?;
    Ok(())
}

#[test]
fn adaptive_optimizers_check_their_coefficients_at_the_first_update() -> Result<()> {
    let mut m = nn::Linear::new(2, 1, true)?;
    let grads = mlx::utils::tree_map(|a| ops::ones_like(a, None), &m)?;
    // Python's messages, raised at construction there.
    let bad = [
        (
            optim::RMSprop::new(0.1).alpha(-0.5).update(&mut m, &grads),
            "alpha should be >=0",
        ),
        (
            optim::RMSprop::new(0.1).eps(0.0).update(&mut m, &grads),
            "epsilon should be >0",
        ),
        (
            optim::Adagrad::new(0.1).eps(-1.0).update(&mut m, &grads),
            "epsilon should be >0",
        ),
        (
            optim::AdaDelta::new(0.1).rho(-0.1).update(&mut m, &grads),
            "rho should be >=0",
        ),
    ];
    for (result, message) in bad {
        let e = result.unwrap_err();
        assert!(e.to_string().contains(message), "{e}");
    }
    optim::AdaDelta::new(0.1).rho(0.0).update(&mut m, &grads)?;
    Ok(())
}

#[test]
fn update_parameters_is_python_model_update_and_does_not_clash_with_the_optimizer() -> Result<()> {
    let mut m = nn::Linear::new(2, 1, true)?;
    m.update_named_parameters(vec![("bias".into(), Array::from_slice(&[5.0f32], &[1])?)])?;
    assert_eq!(m.bias.as_ref().unwrap().to_vec::<f32>()?, [5.0]);
    let e = m
        .update_named_parameters(vec![("nope".into(), Array::from(1.0f32))])
        .unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
    // With both traits in scope, `opt.update` is the optimizer step (no UFCS needed).
    let mut opt = optim::SGD::new(1.0);
    let grads = mlx::utils::tree_map(|a| ops::ones_like(a, None), &m)?;
    opt.update(&mut m, &grads)?;
    assert_eq!(m.bias.as_ref().unwrap().to_vec::<f32>()?, [4.0]);
    Ok(())
}

/// How many `Transpose` primitives the graph of `out` holds.
fn transposes(out: &Array) -> Result<usize> {
    let dot = mlx::core::graph::export_to_dot(std::slice::from_ref(out), None)?;
    Ok(dot
        .lines()
        .filter(|l| l.contains("shape=rectangle") && l.contains("label =\"Transpose\""))
        .count())
}

#[test]
fn a_kept_transposed_weight_leaves_no_transpose_and_follows_the_weight() -> Result<()> {
    let mut layer = nn::Linear::new(4, 3, true)?;
    let x = random::normal(&[2, 4], Default::default(), &random::key(7)?)?;
    let plain = layer.forward(&x)?;
    assert_eq!(transposes(&plain)?, 1);
    layer.keep_transposed_weight()?;
    let kept = layer.forward(&x)?;
    assert_eq!(transposes(&kept)?, 0);
    assert!(ops::array_equal(&kept, &plain, false)?.item::<bool>()?);

    // A clone keeps it too; a new weight is used as it is, not the kept view.
    assert_eq!(transposes(&layer.clone().forward(&x)?)?, 0);
    layer.weight = ops::multiply(&layer.weight, 2.0f32)?;
    let doubled = layer.forward(&x)?;
    assert_eq!(transposes(&doubled)?, 1);
    let expected = ops::addmm(
        layer.bias.as_ref().unwrap(),
        &x,
        &layer.weight.t()?,
        None,
        None,
    )?;
    assert!(ops::array_equal(&doubled, &expected, false)?.item::<bool>()?);

    // An optimizer step writes new weights into the layer: the next call uses them.
    layer.keep_transposed_weight()?;
    let mut opt = optim::SGD::new(0.5);
    let grads = mlx::utils::tree_map(|a| ops::ones_like(a, None), &layer)?;
    opt.update(&mut layer, &grads)?;
    let stepped = layer.forward(&x)?;
    let expected = ops::addmm(
        layer.bias.as_ref().unwrap(),
        &x,
        &layer.weight.t()?,
        None,
        None,
    )?;
    assert!(ops::array_equal(&stepped, &expected, false)?.item::<bool>()?);

    // A tied output head.
    let mut table = nn::Embedding::new(5, 4)?;
    let logits = table.as_linear(&x)?;
    table.keep_transposed_weight()?;
    let kept = table.as_linear(&x)?;
    assert_eq!((transposes(&logits)?, transposes(&kept)?), (1, 0));
    assert!(ops::array_equal(&kept, &logits, false)?.item::<bool>()?);
    Ok(())
}

#[test]
fn set_dtype_casts_floating_parameters_or_what_the_predicate_picks() -> Result<()> {
    #[derive(Clone, TreeNode)]
    struct WithIndex {
        layer: nn::Linear,
        index: Array,
    }
    let mut m = WithIndex {
        layer: nn::Linear::new(3, 2, true)?,
        index: Array::from_slice(&[1i32, 2], &[2])?,
    };
    let before = m.layer.weight.clone();
    m.set_dtype(mlx::core::Dtype::Float16, None)?;
    assert_eq!(m.layer.weight.dtype(), mlx::core::Dtype::Float16);
    assert_eq!(
        m.layer.bias.as_ref().unwrap().dtype(),
        mlx::core::Dtype::Float16
    );
    // Not floating: left alone, as Python's default predicate does.
    assert_eq!(m.index.dtype(), mlx::core::Dtype::Int32);
    let expected = before.astype(mlx::core::Dtype::Float16)?;
    assert!(ops::array_equal(&m.layer.weight, &expected, false)?.item::<bool>()?);
    // A predicate picks by dtype.
    m.set_dtype(
        mlx::core::Dtype::Float32,
        Some(&|d| d == mlx::core::Dtype::Int32),
    )?;
    assert_eq!(m.index.dtype(), mlx::core::Dtype::Float32);
    assert_eq!(m.layer.weight.dtype(), mlx::core::Dtype::Float16);
    Ok(())
}

#[test]
fn a_set_learning_rate_reaches_a_compiled_step_without_a_retrace() -> Result<()> {
    let model = nn::Linear::new(3, 2, true)?;
    let grads = mlx::utils::tree_map(|a| ops::ones_like(a, None), &model)?;
    let mut state = (model.clone(), optim::SGD::new(0.5));
    state.1.init(&state.0)?;
    let step = compile_mut(
        |(m, opt): &mut (nn::Linear, optim::SGD), g: &nn::Linear| -> Result<Array> {
            opt.update(m, g)?;
            Ok(m.weight.clone())
        },
        None,
    );
    let first = step.call(&mut state, &grads)?;
    state.1.set_learning_rate(0.25)?;
    let second = step.call(&mut state, &grads)?;
    assert_eq!(step.stats().traces, 1);
    // w - 0.5 * 1, then - 0.25 * 1.
    let start = model.weight.clone();
    assert!(ops::array_equal(&first, &(&start - 0.5f32), false)?.item::<bool>()?);
    assert!(ops::array_equal(&second, &(&start - 0.75f32), false)?.item::<bool>()?);
    assert!(state
        .1
        .set_learning_rate(Array::from_slice(&[0.1f32, 0.2], &[2])?)
        .is_err());
    assert!(state.1.set_learning_rate(Array::from(1i32)).is_err());

    // apply_gradients: the same step, on a copy.
    let mut opt = optim::SGD::new(0.5);
    let updated = opt.apply_gradients(&grads, &model)?;
    assert!(ops::array_equal(&updated.weight, &first, false)?.item::<bool>()?);
    assert!(ops::array_equal(&model.weight, &start, false)?.item::<bool>()?);
    assert_eq!(opt.step().item::<u64>()?, 1);
    Ok(())
}
