//! mlx::nn's normalization, recurrent, bilinear and positional-encoding layers against Python
//! MLX 0.32.2 (tests/data/nn_stateful.json, written by scripts/golden/nn_stateful.py): same
//! weights in (loaded by Python's parameter names), same outputs out; BatchNorm's running
//! statistics after training calls, eager and compiled; the keys `save_weights` writes; seeded
//! initialization.
//!
//! MLX's random state is global to the process and some tests here draw from it (constructing
//! a layer draws its initial weights), so every test takes its turn (`turn()`): another test
//! drawing between `random::seed` and the draws the seeded test checks would change them.

mod support;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use mlx::core::{random, Array, Dtype, Result};
use mlx::nn::{self, Forward, LoadWeightsOptions, Module};
use mlx::optimizers::{Optimizer, SGD};
use mlx::utils::compile_mut;
use serde_json::Value;
use support::golden::{array, assert_close_tol, load};

static GLOBAL_RNG: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    // A failed test poisons the lock; the others still run.
    GLOBAL_RNG.lock().unwrap_or_else(|e| e.into_inner())
}

/// Built against the wheel's own libmlx (`MLX_DIR`, as CI's first step builds): then every
/// kernel is the one Python ran and every result is bit for bit.
const LINKED_TO_WHEEL: bool = option_env!("MLX_DIR").is_some();

/// Compares with Python's result: exactly when linked to the wheel. With the source-built
/// libmlx, the matmuls (the recurrent layers' projections, Bilinear, Linear) round differently
/// from the wheel's in the last bit, and the recurrences carry that bit through their steps:
/// up to 5e-7 absolute was seen on float32 outputs of order 1, where small outputs make the
/// relative error large, hence the absolute term. (The normalization and positional layers
/// came out bit for bit on the source build too.) float16 and bfloat16: one ulp.
#[track_caller]
fn check(actual: &Array, expected: &Value, what: &str) {
    let (rtol, atol) = if LINKED_TO_WHEEL {
        (0.0, 0.0)
    } else {
        match expected["dtype"].as_str() {
            Some("float16") => (1e-3, 1e-3),
            Some("bfloat16") => (8e-3, 8e-3),
            _ => (1e-6, 1e-6),
        }
    };
    assert_close_tol(actual, expected, rtol, atol, what);
}

/// A compiled step against the eager one (or Python's eager step): `compile` runs the step's
/// element-wise ops as one generated kernel, whose arithmetic (scalar code built by the C++
/// compiler, not MLX's vectorized kernels) rounds differently in the last bits, linked to the
/// wheel or not. Up to 1.2e-7 absolute was seen after three SGD steps (values of order 1).
const COMPILED_TOL: (f64, f64) = (1e-6, 5e-7);

/// Bit for bit whatever libmlx: results that only copy, convert or multiply by constants.
#[track_caller]
fn exact(actual: &Array, expected: &Value, what: &str) {
    assert_close_tol(actual, expected, 0.0, 0.0, what);
}

fn weights(record: &Value) -> HashMap<String, Array> {
    record
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), array(v)))
        .collect()
}

fn loaded<M: Module>(mut m: M, params: &Value) -> M {
    m.load_weights_from(weights(params), LoadWeightsOptions::default())
        .unwrap();
    m
}

fn opt_array(record: &Value) -> Option<Array> {
    (!record.is_null()).then(|| array(record))
}

fn option_f64(options: &Value, key: &str, default: f64) -> f64 {
    options[key].as_f64().unwrap_or(default)
}

fn option_bool(options: &Value, key: &str, default: bool) -> bool {
    options[key].as_bool().unwrap_or(default)
}

fn names(pairs: Vec<(String, Array)>) -> Vec<String> {
    pairs.into_iter().map(|(p, _)| p).collect()
}

fn strings(v: &Value) -> Vec<String> {
    serde_json::from_value(v.clone()).unwrap()
}

fn features(record: &Value) -> i32 {
    let shape: Vec<i32> = serde_json::from_value(record["shape"].clone()).unwrap();
    *shape.last().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Normalization

fn batch_norm_for(options: &Value, num_features: i32) -> Result<nn::BatchNorm> {
    let d = nn::BatchNormOptions::default();
    nn::BatchNorm::new(
        num_features,
        nn::BatchNormOptions {
            eps: option_f64(options, "eps", d.eps),
            momentum: option_f64(options, "momentum", d.momentum),
            affine: option_bool(options, "affine", d.affine),
            track_running_stats: option_bool(options, "track_running_stats", d.track_running_stats),
        },
    )
}

/// Python's training calls (output and running statistics after each), then evaluation mode.
#[test]
fn batch_norm_matches_python() -> Result<()> {
    let _turn = turn();
    let data = load("nn_stateful");
    for (name, case) in data["batch_norm"].as_object().unwrap() {
        let train = case["train"].as_array().unwrap();
        let num_features = features(&train[0]["input"]);
        let mut bn = loaded(
            batch_norm_for(&case["options"], num_features)?,
            &case["params"],
        );
        assert!(bn.training);
        for (i, step) in train.iter().enumerate() {
            let what = format!("{name} train {i}");
            let x = array(&step["input"]);
            if bn.track_running_stats() {
                // The update needs `&mut`: the shared call refuses rather than skip it.
                let e = bn.forward(&x).unwrap_err().to_string();
                assert!(e.contains("forward_mut"), "{what}: {e}");
            } else {
                check(&bn.forward(&x)?, &step["output"], &what);
            }
            check(&bn.forward_mut(&x)?, &step["output"], &what);
            match (&bn.running_mean, &bn.running_var) {
                (Some(mean), Some(var)) => {
                    check(mean, &step["running_mean"], &format!("{what} running_mean"));
                    check(var, &step["running_var"], &format!("{what} running_var"));
                }
                (None, None) => assert!(step.get("running_mean").is_none(), "{what}"),
                _ => panic!("{what}: one running statistic without the other"),
            }
        }
        bn.eval_mode()?;
        let x = array(&case["eval"]["input"]);
        let what = format!("{name} eval");
        check(&bn.forward(&x)?, &case["eval"]["output"], &what);
        let before = bn.running_mean.clone();
        // Outside training mode `forward_mut` updates nothing.
        check(&bn.forward_mut(&x)?, &case["eval"]["output"], &what);
        if let (Some(a), Some(b)) = (&before, &bn.running_mean) {
            assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?, "{what}");
        }
    }
    Ok(())
}

#[test]
fn group_and_instance_norm_match_python() -> Result<()> {
    let _turn = turn();
    let data = load("nn_stateful");
    for (name, case) in data["group_norm"].as_object().unwrap() {
        let o = &case["options"];
        let d = nn::GroupNormOptions::default();
        let options = nn::GroupNormOptions {
            eps: option_f64(o, "eps", d.eps),
            affine: option_bool(o, "affine", d.affine),
            pytorch_compatible: option_bool(o, "pytorch_compatible", d.pytorch_compatible),
        };
        let num_groups = case["num_groups"].as_i64().unwrap() as i32;
        let gn = nn::GroupNorm::new(num_groups, features(&case["input"]), options)?;
        let gn = loaded(gn, &case["params"]);
        let y = gn.forward(&array(&case["input"]))?;
        check(&y, &case["output"], &format!("group_norm {name}"));
    }
    for (name, case) in data["instance_norm"].as_object().unwrap() {
        let o = &case["options"];
        let d = nn::InstanceNormOptions::default();
        let options = nn::InstanceNormOptions {
            eps: option_f64(o, "eps", d.eps),
            affine: option_bool(o, "affine", d.affine),
        };
        let norm = nn::InstanceNorm::new(features(&case["input"]), options)?;
        let norm = loaded(norm, &case["params"]);
        let y = norm.forward(&array(&case["input"]))?;
        check(&y, &case["output"], &format!("instance_norm {name}"));
    }
    Ok(())
}

/// Parameter names, trainable names and the keys `save_weights` writes, against Python's;
/// BatchNorm's running statistics stay frozen through its own `unfreeze`, not through a
/// model's, as in Python.
#[test]
fn parameter_names_and_saved_keys_match_python() -> Result<()> {
    let _turn = turn();
    let data = load("nn_stateful");
    let modules = &data["modules"];
    let no_affine = nn::BatchNormOptions::default().affine(false);
    let check_module = |name: &str, m: &dyn Fn() -> Result<(Vec<String>, Vec<String>)>| {
        let case = &modules[name];
        let (params, trainable) = m().unwrap();
        assert_eq!(params, strings(&case["parameters"]), "{name} parameters");
        assert_eq!(trainable, strings(&case["trainable"]), "{name} trainable");
    };
    fn listed<M: Module>(m: &M) -> Result<(Vec<String>, Vec<String>)> {
        Ok((
            names(m.named_parameters()?),
            names(m.named_trainable_parameters()?),
        ))
    }
    fn saved<M: Module>(m: &M, name: &str) -> Result<Vec<String>> {
        let path = std::env::temp_dir().join(format!(
            "nn_stateful_{}_{name}.safetensors",
            std::process::id()
        ));
        m.save_weights(&path)?;
        let (arrays, _) = mlx::core::io::load_safetensors(&path)?;
        std::fs::remove_file(&path)
            .map_err(|e| mlx::core::Error::io("removing the weights file", e))?;
        let mut keys: Vec<String> = arrays.into_keys().collect();
        keys.sort();
        Ok(keys)
    }
    macro_rules! case {
        ($name:literal, $make:expr) => {{
            check_module($name, &|| listed(&$make));
            assert_eq!(
                saved(&$make, $name)?,
                strings(&modules[$name]["saved"]),
                "{} saved",
                $name
            );
        }};
    }
    case!("batch_norm", nn::BatchNorm::new(4, Default::default())?);
    case!("batch_norm_no_affine", nn::BatchNorm::new(4, no_affine)?);
    case!(
        "batch_norm_plain",
        nn::BatchNorm::new(4, no_affine.track_running_stats(false))?
    );
    case!("group_norm", nn::GroupNorm::new(2, 4, Default::default())?);
    case!(
        "instance_norm_affine",
        nn::InstanceNorm::new(4, nn::InstanceNormOptions::default().affine(true))?
    );
    case!("rnn", nn::RNN::new(3, 4, None, None)?);
    case!("rnn_no_bias", nn::RNN::new(3, 4, false, None)?);
    case!("gru", nn::GRU::new(3, 4, None)?);
    case!("gru_no_bias", nn::GRU::new(3, 4, false)?);
    case!("lstm", nn::LSTM::new(3, 4, None)?);
    case!("bilinear", nn::Bilinear::new(2, 3, 4, None)?);
    case!("sinusoidal", nn::SinusoidalPositionalEncoding::new(8)?);
    case!("alibi", nn::ALiBi);
    case!(
        "sequential_batch_norm",
        nn::Sequential::new((
            nn::Linear::new(3, 4, None)?,
            nn::BatchNorm::new(4, Default::default())?
        ))
    );

    let mut bn = nn::BatchNorm::new(4, Default::default())?;
    bn.unfreeze(None)?;
    assert_eq!(
        names(bn.named_trainable_parameters()?),
        strings(&modules["batch_norm"]["trainable_after_unfreeze"])
    );
    let mut seq = nn::Sequential::new((
        nn::Linear::new(3, 4, None)?,
        nn::BatchNorm::new(4, Default::default())?,
    ));
    seq.unfreeze(None)?;
    assert_eq!(
        names(seq.named_trainable_parameters()?),
        strings(&modules["sequential_batch_norm"]["trainable_after_unfreeze"])
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// BatchNorm in a training loop: eager and compiled, against Python's nn.value_and_grad + SGD.

type Net = nn::Sequential<(nn::Linear, nn::BatchNorm)>;

/// The mean square error of `model(x)` against `y`, with the model's new running statistics
/// beside it: the loss borrows the model, so the update runs on a clone and comes back as
/// auxiliary output.
fn net_loss(model: &Net, xy: &(Array, Array)) -> Result<(Array, (Array, Array))> {
    let mut m = model.clone();
    let h = m.layers.0.forward(&xy.0)?;
    let out = m.layers.1.forward_mut(&h)?;
    let loss = mlx::core::ops::subtract(&out, &xy.1)?
        .square()?
        .mean(None, false)?;
    match (m.layers.1.running_mean, m.layers.1.running_var) {
        (Some(mean), Some(var)) => Ok((loss, (mean, var))),
        _ => Err(mlx::core::Error::InvalidArgument(
            "no running statistics".into(),
        )),
    }
}

fn train_step(state: &mut (Net, SGD), xy: &(Array, Array)) -> Result<Array> {
    let (model, opt) = state;
    let ((loss, (mean, var)), grads) = nn::value_and_grad(net_loss)(model, xy)?;
    model.layers.1.running_mean = Some(mean);
    model.layers.1.running_var = Some(var);
    opt.update(model, &grads)?;
    Ok(loss)
}

#[test]
fn batch_norm_training_matches_python_eager_and_compiled() -> Result<()> {
    let _turn = turn();
    let data = load("nn_stateful");
    let t = &data["training"];
    let fresh = || -> Result<(Net, SGD)> {
        let net = nn::Sequential::new((
            nn::Linear::new(3, 4, None)?,
            nn::BatchNorm::new(4, Default::default())?,
        ));
        Ok((loaded(net, &t["start"]), SGD::new(0.1)))
    };
    let mut eager = fresh()?;
    let mut compiled = fresh()?;
    // The optimizer state exists before the first call, so the step traces once.
    compiled.1.init(&compiled.0)?;
    let step = compile_mut(train_step, None);
    for (i, s) in t["steps"].as_array().unwrap().iter().enumerate() {
        let xy = (array(&s["x"]), array(&s["y"]));
        let loss = train_step(&mut eager, &xy)?;
        let compiled_loss = step.call(&mut compiled, &xy)?;
        check(&loss, &s["loss"], &format!("step {i} loss"));
        let (rtol, atol) = COMPILED_TOL;
        let compiled_what = format!("step {i} compiled loss");
        assert_close_tol(&compiled_loss, &s["loss"], rtol, atol, &compiled_what);
        for ((path, a), (_, c)) in eager
            .0
            .named_parameters()?
            .into_iter()
            .zip(compiled.0.named_parameters()?)
        {
            let what = format!("step {i} {path}");
            check(&a, &s["params"][&path], &what);
            let compiled_what = format!("{what} (compiled)");
            assert_close_tol(&c, &s["params"][&path], rtol, atol, &compiled_what);
            // Compiled against eager directly, running statistics included.
            let (a, c) = (a.to_vec::<f32>()?, c.to_vec::<f32>()?);
            for (x, y) in a.iter().zip(&c) {
                let ok = (x - y).abs() as f64 <= atol + rtol * y.abs() as f64;
                assert!(ok, "{compiled_what}: {a:?} eager vs {c:?} compiled");
            }
        }
    }
    if std::env::var_os("MLX_DISABLE_COMPILE").is_none() {
        assert_eq!(step.stats().traces, 1);
    }
    let (mut model, _) = eager;
    model.eval_mode()?;
    let x = array(&t["eval"]["input"]);
    let y = model.layers.1.forward(&model.layers.0.forward(&x)?)?;
    check(&y, &t["eval"]["output"], "eval");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Recurrent layers, Bilinear

#[test]
fn recurrent_layers_match_python() -> Result<()> {
    let _turn = turn();
    let data = load("nn_stateful");
    for (name, case) in data["recurrent"].as_object().unwrap() {
        let x = array(&case["input"]);
        let (hidden, cell) = (opt_array(&case["hidden"]), opt_array(&case["cell"]));
        let bias = option_bool(&case["options"], "bias", true);
        let d = features(&case["input"]);
        let outputs = case["outputs"].as_array().unwrap();
        let h = features(&outputs[0]);
        match case["kind"].as_str().unwrap() {
            "rnn" => {
                let nonlinearity = match case["options"]["nonlinearity"].as_str() {
                    Some("relu") => Some(nn::Activation::new("relu", nn::relu)),
                    Some(other) => panic!("{name}: nonlinearity {other}"),
                    None => None,
                };
                let rnn = loaded(nn::RNN::new(d, h, bias, nonlinearity)?, &case["params"]);
                check(&rnn.forward(&x, hidden.as_ref())?, &outputs[0], name);
            }
            "gru" => {
                let gru = loaded(nn::GRU::new(d, h, bias)?, &case["params"]);
                check(&gru.forward(&x, hidden.as_ref())?, &outputs[0], name);
            }
            "lstm" => {
                let lstm = loaded(nn::LSTM::new(d, h, bias)?, &case["params"]);
                let (hs, cs) = lstm.forward(&x, hidden.as_ref(), cell.as_ref())?;
                check(&hs, &outputs[0], &format!("{name} hidden"));
                check(&cs, &outputs[1], &format!("{name} cell"));
            }
            other => panic!("{name}: kind {other}"),
        }
    }
    Ok(())
}

#[test]
fn bilinear_matches_python() -> Result<()> {
    let _turn = turn();
    let data = load("nn_stateful");
    for (name, case) in data["bilinear"].as_object().unwrap() {
        let dims: Vec<i32> = serde_json::from_value(case["dims"].clone()).unwrap();
        let bias = option_bool(&case["options"], "bias", true);
        let layer = nn::Bilinear::new(dims[0], dims[1], dims[2], bias)?;
        let layer = loaded(layer, &case["params"]);
        let inputs: Vec<Array> = case["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(array)
            .collect();
        check(
            &layer.forward(&inputs[0], &inputs[1])?,
            &case["output"],
            name,
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Positional encodings

#[test]
fn positional_encodings_match_python() -> Result<()> {
    let _turn = turn();
    let data = load("nn_stateful");
    for (name, case) in data["sinusoidal"].as_object().unwrap() {
        let o = &case["options"];
        let mut pe = nn::SinusoidalPositionalEncoding::new(case["dims"].as_i64().unwrap() as i32)?
            .cos_first(option_bool(o, "cos_first", false))
            .full_turns(option_bool(o, "full_turns", false));
        if let Some(v) = o["min_freq"].as_f64() {
            pe = pe.min_freq(v);
        }
        if let Some(v) = o["max_freq"].as_f64() {
            pe = pe.max_freq(v);
        }
        if let Some(v) = o["scale"].as_f64() {
            pe = pe.scale(v);
        }
        // Python's `self.scale`, a float64, exactly.
        assert_eq!(pe.scale, case["scale"].as_f64().unwrap(), "{name} scale");
        check(&pe.sigmas()?, &case["sigmas"], &format!("{name} sigmas"));
        check(
            &pe.forward(&array(&case["input"]))?,
            &case["output"],
            &format!("sinusoidal {name}"),
        );
    }

    for (name, case) in data["alibi"].as_object().unwrap() {
        let scores = array(&case["scores"]);
        let offset = case["offset"].as_i64().unwrap() as i32;
        let mask = opt_array(&case["mask"]);
        let out = nn::ALiBi.forward(&scores, offset, mask.as_ref())?;
        // Integer distances times slopes computed as Python computes them, then one add: the
        // same rounding on every build.
        exact(&out, &case["output"], &format!("alibi {name}"));
    }
    for (key, expected) in data["alibi_slopes"].as_object().unwrap() {
        let (n, dtype) = key.split_once('_').unwrap();
        let dtype = support::golden::dtype_named(dtype);
        let slopes = nn::ALiBi::create_alibi_slope(n.parse().unwrap(), dtype)?;
        exact(&slopes, expected, &format!("slopes {key}"));
    }
    let m = &data["alibi_matrices"];
    exact(
        &nn::ALiBi::create_alibi_matrix(5, 7, 4, 0, None)?,
        &m["q5_k7_h4"],
        "alibi matrix",
    );
    exact(
        &nn::ALiBi::create_alibi_matrix(6, 6, 3, 2, Dtype::Float16)?,
        &m["q6_k6_h3_offset2_float16"],
        "alibi matrix float16",
    );
    Ok(())
}

/// The frequencies are computed from static configuration, so a layer rebuilt from its tree
/// (as every transform does) encodes exactly as before.
#[test]
fn sinusoidal_encoding_survives_tree_rebuilds() -> Result<()> {
    let _turn = turn();
    let pe = nn::SinusoidalPositionalEncoding::new(12)?
        .full_turns(true)
        .min_freq(0.01);
    let (leaves, def) = mlx::utils::tree_flatten(&pe)?;
    assert!(leaves.is_empty());
    let rebuilt: nn::SinusoidalPositionalEncoding =
        mlx::utils::tree_unflatten(&def, Vec::<Array>::new())?;
    let x = mlx::core::ops::arange(0.0f32, 6.0, None, None)?;
    assert_eq!(
        rebuilt.forward(&x)?.to_vec::<f32>()?,
        pe.forward(&x)?.to_vec::<f32>()?
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Seeded initialization

/// Seeded construction equals Python's bit for bit: the same draws in the same order, with the
/// scales Python computes from its floats (`1.0 / math.sqrt(7)`, `math.sqrt(1.0 / 784)`) in
/// f64, rounded once; in f32 both differ in the last bit.
#[test]
fn seeded_initialization_matches_python_exactly() -> Result<()> {
    let _turn = turn();
    let data = load("nn_stateful");
    let seeded = &data["seeded"];
    type Make<'a> = &'a dyn Fn() -> Result<Vec<(String, Array)>>;
    let cases: [(&str, Make); 5] = [
        ("rnn", &|| {
            nn::RNN::new(5, 7, None, None)?.named_parameters()
        }),
        ("rnn_no_bias", &|| {
            nn::RNN::new(5, 7, false, None)?.named_parameters()
        }),
        ("gru", &|| nn::GRU::new(5, 7, None)?.named_parameters()),
        ("lstm", &|| nn::LSTM::new(5, 7, None)?.named_parameters()),
        ("bilinear", &|| {
            nn::Bilinear::new(784, 3, 2, None)?.named_parameters()
        }),
    ];
    for (name, make) in cases {
        random::seed(7)?;
        let params = make()?;
        assert_eq!(
            params.len(),
            seeded[name].as_object().unwrap().len(),
            "{name}"
        );
        for (path, a) in params {
            exact(&a, &seeded[name][&path], &format!("{name} {path}"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Errors

#[track_caller]
fn err_containing<T: std::fmt::Debug>(r: Result<T>, needle: &str) {
    let e = r.expect_err("expected an error").to_string();
    assert!(e.contains(needle), "`{e}` does not contain `{needle}`");
}

/// Wrong ranks, feature counts and arguments are `Err`s with the layer's own message, found
/// before MLX sees the input.
#[test]
fn bad_inputs_are_errors() -> Result<()> {
    let _turn = turn();
    use mlx::core::ops::ones;
    let x = |shape: &[i32]| ones(shape, None).unwrap();

    let mut bn = nn::BatchNorm::new(4, Default::default())?;
    err_containing(bn.forward_mut(&x(&[4])), "2, 3 or 4 dimensions");
    err_containing(bn.forward_mut(&x(&[1, 2, 2, 2, 4])), "2, 3 or 4 dimensions");
    err_containing(bn.forward_mut(&x(&[3, 5])), "5 features");
    err_containing(
        bn.forward_mut(&x(&[1, 4])),
        "more than one value per channel",
    );
    assert_eq!(bn.running_mean.as_ref().unwrap().to_vec::<f32>()?, [0.0; 4]);
    err_containing(
        nn::BatchNorm::new(4, nn::BatchNormOptions::default().eps(0.0)),
        "'eps' must be positive",
    );
    bn.eval_mode()?;
    assert_eq!(bn.forward(&x(&[1, 4]))?.shape(), &[1, 4]); // one value is fine in eval mode

    let gn = nn::GroupNorm::new(2, 4, Default::default())?;
    err_containing(gn.forward(&x(&[4])), "at least 2 dimensions");
    err_containing(gn.forward(&x(&[2, 3, 6])), "6 features");
    err_containing(nn::GroupNorm::new(3, 4, Default::default()), "divisible");
    err_containing(nn::GroupNorm::new(0, 4, Default::default()), "positive");
    err_containing(nn::GroupNorm::new(2, 0, Default::default()), "positive");
    let inorm = nn::InstanceNorm::new(4, Default::default())?;
    err_containing(inorm.forward(&x(&[2, 4])), "at least 3 dimensions");
    err_containing(inorm.forward(&x(&[2, 3, 5])), "5 features");

    let rnn = nn::RNN::new(3, 4, None, None)?;
    err_containing(rnn.forward(&x(&[3]), None), "[N, L, D] or [L, D]");
    err_containing(rnn.forward(&x(&[2, 5, 2]), None), "2 features");
    err_containing(rnn.forward(&x(&[2, 0, 3]), None), "empty");
    err_containing(rnn.forward(&x(&[2, 5, 3]), &x(&[2, 5])), "hidden state");
    err_containing(rnn.forward(&x(&[5, 3]), &x(&[2, 4])), "hidden state");
    let gru = nn::GRU::new(3, 4, None)?;
    err_containing(gru.forward(&x(&[2, 5, 4]), None), "4 features");
    err_containing(gru.forward(&x(&[2, 5, 3]), &x(&[2, 3])), "hidden state");
    let lstm = nn::LSTM::new(3, 4, None)?;
    err_containing(lstm.forward(&x(&[5, 2]), None, None), "2 features");
    err_containing(
        lstm.forward(&x(&[2, 5, 3]), None, &x(&[2, 5])),
        "cell state",
    );

    let bilinear = nn::Bilinear::new(3, 5, 2, None)?;
    err_containing(bilinear.forward(&x(&[4, 5]), &x(&[4, 5])), "x1 must have 3");
    err_containing(bilinear.forward(&x(&[4, 3]), &x(&[4, 3])), "x2 must have 5");
    err_containing(bilinear.forward(&x(&[]), &x(&[5])), "x1 must have 3");

    err_containing(
        nn::SinusoidalPositionalEncoding::new(7),
        "positive and even",
    );
    err_containing(
        nn::SinusoidalPositionalEncoding::new(0),
        "positive and even",
    );
    let pe = nn::SinusoidalPositionalEncoding::new(8)?.min_freq(0.0);
    err_containing(pe.forward(&x(&[3])), "min_freq must be positive");
    err_containing(
        nn::ALiBi.forward(&x(&[4, 5, 5]), None, None),
        "[B, num_heads, L, S]",
    );
    err_containing(nn::ALiBi::create_alibi_slope(0, Dtype::Float32), "positive");
    Ok(())
}

/// The nonlinearity is static data: a different function is a different structure (a compiled
/// function retraces), the same one the same; only the named activations can be written out.
#[test]
fn rnn_nonlinearity_is_static_data() -> Result<()> {
    let _turn = turn();
    use mlx::utils::tree_structure;
    fn cube(x: &mlx::core::Array) -> Result<mlx::core::Array> {
        mlx::core::ops::power(x, 3.0f32)
    }
    let custom = nn::Activation::new("cube", cube);
    let a = nn::RNN::new(3, 4, None, None)?;
    let b = nn::RNN::new(3, 4, None, custom)?;
    let c = nn::RNN::new(3, 4, None, custom)?;
    let relu = nn::RNN::new(3, 4, None, nn::Activation::named("relu")?)?;
    assert_ne!(tree_structure(&a)?, tree_structure(&b)?);
    assert_eq!(tree_structure(&b)?, tree_structure(&c)?);
    assert!(serde_json::to_string(&tree_structure(&a)?).is_ok());
    assert!(serde_json::to_string(&tree_structure(&relu)?).is_ok());
    assert!(serde_json::to_string(&tree_structure(&b)?).is_err());
    // The rebuilt layer keeps its function.
    let x = mlx::core::ops::arange(-3.0f32, 3.0, None, None)?.reshape(&[2, 3])?;
    let rebuilt: nn::RNN = mlx::utils::tree_map(|w| Ok(w.clone()), &b)?;
    assert_eq!(
        rebuilt.forward(&x, None)?.to_vec::<f32>()?,
        b.forward(&x, None)?.to_vec::<f32>()?
    );
    Ok(())
}
