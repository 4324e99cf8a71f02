//! mlx::nn's spatial layers — Conv3d, ConvTranspose1d/2d/3d, MaxPool/AvgPool 1d/2d/3d,
//! Upsample and the upsample functions — against Python MLX 0.32.2
//! (tests/data/nn_spatial.json, written by scripts/golden/nn_spatial.py): the same layer built
//! from the same constructor arguments, the same weights loaded by Python's parameter names,
//! the same outputs out. Plus the bad arguments and inputs that must be `Err`s.

mod support;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use mlx::core::ops::{ConvOptions, ConvTransposeOptions, Spatial};
use mlx::core::{random, Array, Dtype, Result};
use mlx::nn::{
    self, Forward, LoadWeightsOptions, Module, PoolOptions, ScaleFactor, UpsampleOptions,
};
use serde_json::Value;
use support::golden::{array, assert_close_tol, load};

/// Built against the wheel's own libmlx (`MLX_DIR`, as CI's first step builds): then every
/// output here must be Python's bit for bit, since the Rust layers run Python's ops in
/// Python's order on the same library.
const LINKED_TO_WHEEL: bool = option_env!("MLX_DIR").is_some();

/// MLX's random state is global: the seeded test takes turns with every test that draws
/// (building a conv layer initializes its weights), so no draw lands between its seed and its
/// layers.
static RANDOM: Mutex<()> = Mutex::new(());

fn random_turn() -> MutexGuard<'static, ()> {
    // A failed test poisons the lock; the others still run.
    RANDOM.lock().unwrap_or_else(|e| e.into_inner())
}

/// Tolerances of a comparison with Python: none when linked to the wheel. Against the source
/// build, which is compiled with its own flags and BLAS, the conv layers' GEMM (and, possibly,
/// the vectorized sums of average pooling) accumulate in another order than the wheel's: a
/// few ulps of the output's largest values (Conv3d's 81-term sums differ by up to 2 float32
/// ulps of |y| ~ 2, 4.8e-7), which near-zero outputs only meet with an absolute floor.
/// float32: `rtol` 1e-6 (~8 ulps), `atol` 1e-6 (~4 ulps at |y| ~ 2); half formats: one ulp.
fn tolerance(expected: &Value) -> (f64, f64) {
    if LINKED_TO_WHEEL {
        return (0.0, 0.0);
    }
    match expected["dtype"].as_str() {
        Some("float32") => (1e-6, 1e-6),
        // float16 eps 2^-10, bfloat16 eps 2^-7.
        Some("float16") => (1e-3, 1e-3),
        Some("bfloat16") => (8e-3, 8e-3),
        _ => (0.0, 0.0),
    }
}

fn check(actual: &Array, expected: &Value, what: &str) {
    let (rtol, atol) = tolerance(expected);
    assert_close_tol(actual, expected, rtol, atol, what);
}

fn loaded<M: Module>(mut m: M, case: &Value) -> M {
    let weights: HashMap<String, Array> = case["params"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), array(v)))
        .collect();
    m.load_weights_from(weights, LoadWeightsOptions::default())
        .unwrap();
    m
}

/// A spatial argument as Python's script gave it: an int, or a list with one per axis.
fn spatial(v: &Value) -> Spatial {
    match v {
        Value::Array(values) => values
            .iter()
            .map(|x| x.as_i64().unwrap() as i32)
            .collect::<Vec<_>>()
            .into(),
        other => (other.as_i64().unwrap() as i32).into(),
    }
}

fn int(v: &Value) -> i32 {
    v.as_i64().unwrap() as i32
}

/// `bias=` of the case, `None` (Python's default, `True`) when not given.
fn bias(args: &Value) -> Option<bool> {
    args.get("bias").map(|b| b.as_bool().unwrap())
}

fn conv_options(args: &Value) -> ConvOptions {
    let mut opts = ConvOptions::default();
    if let Some(v) = args.get("stride") {
        opts = opts.stride(spatial(v));
    }
    if let Some(v) = args.get("padding") {
        opts = opts.padding(spatial(v));
    }
    if let Some(v) = args.get("dilation") {
        opts = opts.dilation(spatial(v));
    }
    opts
}

fn transpose_options(args: &Value) -> ConvTransposeOptions {
    let mut opts = ConvTransposeOptions::default();
    if let Some(v) = args.get("stride") {
        opts = opts.stride(spatial(v));
    }
    if let Some(v) = args.get("padding") {
        opts = opts.padding(spatial(v));
    }
    if let Some(v) = args.get("dilation") {
        opts = opts.dilation(spatial(v));
    }
    if let Some(v) = args.get("output_padding") {
        opts = opts.output_padding(spatial(v));
    }
    opts
}

/// The conv layer of a case, built as Python built it: `(named parameters, forward)`.
type Built = (Vec<(String, Array)>, Box<dyn Forward>);

fn build_conv(case: &Value, with_weights: bool) -> Result<Built> {
    fn finish<M: Module + Forward + 'static>(
        m: M,
        case: &Value,
        with_weights: bool,
    ) -> Result<Built> {
        let m = if with_weights { loaded(m, case) } else { m };
        Ok((m.named_parameters()?, Box::new(m)))
    }
    let args = &case["args"];
    let (cin, cout) = (int(&args["in_channels"]), int(&args["out_channels"]));
    let kernel = &args["kernel_size"];
    match case["layer"].as_str().unwrap() {
        "Conv3d" => finish(
            nn::Conv3d::new(cin, cout, spatial(kernel), conv_options(args), bias(args))?,
            case,
            with_weights,
        ),
        "ConvTranspose1d" => finish(
            nn::ConvTranspose1d::new(cin, cout, int(kernel), transpose_options(args), bias(args))?,
            case,
            with_weights,
        ),
        "ConvTranspose2d" => finish(
            nn::ConvTranspose2d::new(
                cin,
                cout,
                spatial(kernel),
                transpose_options(args),
                bias(args),
            )?,
            case,
            with_weights,
        ),
        "ConvTranspose3d" => finish(
            nn::ConvTranspose3d::new(
                cin,
                cout,
                spatial(kernel),
                transpose_options(args),
                bias(args),
            )?,
            case,
            with_weights,
        ),
        other => panic!("unknown conv layer {other}"),
    }
}

#[test]
fn convolutions_match_python() -> Result<()> {
    let _turn = random_turn();
    let data = load("nn_spatial");
    let cases = data["convs"].as_object().unwrap();
    assert!(cases.len() >= 10, "too few conv cases: {}", cases.len());
    for (name, case) in cases {
        let (params, layer) = build_conv(case, true)?;
        // Python's parameter names, and no others.
        let mut names: Vec<&str> = params.iter().map(|(p, _)| p.as_str()).collect();
        let mut want: Vec<&str> = case["params"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        want.sort_unstable();
        assert_eq!(names, want, "{name}: parameters");
        check(
            &layer.forward(&array(&case["input"]))?,
            &case["output"],
            name,
        );
    }
    Ok(())
}

/// Seeded construction equals Python's bit for bit on every build: the init scale is
/// Python's `math.sqrt(1 / fan_in)` in f64 rounded once (fan_in 784, where rounding in f32
/// differs), and the uniform draw is the same computation.
#[test]
fn seeded_initialization_matches_python_exactly() -> Result<()> {
    let _turn = random_turn();
    let data = load("nn_spatial");
    for (name, case) in data["seeded"].as_object().unwrap() {
        random::seed(7)?;
        let (params, _) = build_conv(case, false)?;
        let want = case["params"].as_object().unwrap();
        assert_eq!(params.len(), want.len(), "{name}");
        for (path, a) in params {
            assert_close_tol(&a, &want[&path], 0.0, 0.0, &format!("{name} {path}"));
        }
    }
    Ok(())
}

fn pool_options(args: &Value) -> PoolOptions {
    let mut opts = PoolOptions::default();
    if let Some(v) = args.get("stride") {
        opts = opts.stride(spatial(v));
    }
    if let Some(v) = args.get("padding") {
        opts = opts.padding(spatial(v));
    }
    opts
}

fn build_pool(case: &Value) -> Result<Box<dyn Forward>> {
    let args = &case["args"];
    let (k, opts) = (spatial(&args["kernel_size"]), pool_options(args));
    Ok(match case["layer"].as_str().unwrap() {
        "MaxPool1d" => Box::new(nn::MaxPool1d::new(k, opts)?),
        "MaxPool2d" => Box::new(nn::MaxPool2d::new(k, opts)?),
        "MaxPool3d" => Box::new(nn::MaxPool3d::new(k, opts)?),
        "AvgPool1d" => Box::new(nn::AvgPool1d::new(k, opts)?),
        "AvgPool2d" => Box::new(nn::AvgPool2d::new(k, opts)?),
        "AvgPool3d" => Box::new(nn::AvgPool3d::new(k, opts)?),
        other => panic!("unknown pooling layer {other}"),
    })
}

#[test]
fn pooling_matches_python() -> Result<()> {
    let data = load("nn_spatial");
    let cases = data["pools"].as_object().unwrap();
    assert!(cases.len() >= 12, "too few pooling cases: {}", cases.len());
    for (name, case) in cases {
        let y = build_pool(case)?.forward(&array(&case["input"]))?;
        // Max pooling selects an input element: exact on every build.
        if case["layer"].as_str().unwrap().starts_with("Max") {
            assert_close_tol(&y, &case["output"], 0.0, 0.0, name);
        } else {
            check(&y, &case["output"], name);
        }
    }
    Ok(())
}

fn scale_factor(v: &Value) -> ScaleFactor {
    match v {
        Value::Array(s) => s
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect::<Vec<_>>()
            .into(),
        other => other.as_f64().unwrap().into(),
    }
}

#[test]
fn upsample_matches_python() -> Result<()> {
    let data = load("nn_spatial");
    let cases = data["upsamples"].as_object().unwrap();
    assert!(cases.len() >= 40, "too few upsample cases: {}", cases.len());
    for (name, case) in cases {
        let opts = UpsampleOptions::default()
            .mode(case["mode"].as_str().unwrap().parse()?)
            .align_corners(case["align_corners"].as_bool().unwrap())
            .antialias(case["antialias"].as_bool().unwrap());
        let layer = nn::Upsample::new(scale_factor(&case["scale_factor"]), opts)?;
        let x = array(&case["input"]);
        let y = layer.forward(&x)?;
        // Nearest moves input elements: exact on every build.
        if layer.mode == nn::UpsampleMode::Nearest {
            assert_close_tol(&y, &case["output"], 0.0, 0.0, name);
        } else {
            check(&y, &case["output"], name);
        }

        // The module-level functions with one factor per axis give the same.
        let dims = x.ndim() - 2;
        let per_axis = match &layer.scale_factor {
            ScaleFactor::All(s) => vec![*s; dims],
            ScaleFactor::PerAxis(s) => s.clone(),
        };
        let direct = match layer.mode {
            nn::UpsampleMode::Nearest => nn::upsample_nearest(&x, &per_axis)?,
            nn::UpsampleMode::Linear => {
                nn::upsample_linear(&x, &per_axis, layer.align_corners, layer.antialias)?
            }
            nn::UpsampleMode::Cubic => {
                nn::upsample_cubic(&x, &per_axis, layer.align_corners, layer.antialias)?
            }
        };
        assert_eq!(direct.dtype(), y.dtype(), "{name}: function dtype");
        let (a, b) = (
            direct.astype(Dtype::Float32)?.to_vec::<f32>()?,
            y.astype(Dtype::Float32)?.to_vec::<f32>()?,
        );
        assert!(
            a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()),
            "{name}: function vs layer"
        );
    }
    Ok(())
}

/// The message of an expected error, which must name what it is about.
#[track_caller]
fn err<T: std::fmt::Debug>(r: Result<T>, mentions: &str) {
    match r {
        Ok(v) => panic!("expected an error mentioning {mentions:?}, got Ok({v:?})"),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains(mentions),
                "{msg:?} does not mention {mentions:?}"
            );
        }
    }
}

#[test]
fn bad_conv_arguments_and_inputs_are_errors() -> Result<()> {
    let _turn = random_turn();
    let d = ConvOptions::default;
    let t = ConvTransposeOptions::default;
    // Constructor arguments: caught before any array is made.
    err(nn::Conv3d::new(3, 4, 0, d(), None), "kernel_size");
    err(nn::Conv3d::new(3, 4, (3, -1, 3), d(), None), "kernel_size");
    err(nn::Conv3d::new(3, 4, (3, 3), d(), None), "kernel_size");
    err(nn::Conv3d::new(0, 4, 3, d(), None), "in_channels");
    err(nn::Conv3d::new(3, -4, 3, d(), None), "out_channels");
    err(nn::Conv3d::new(3, 4, 3, d().stride(0), None), "stride");
    err(
        nn::Conv3d::new(3, 4, 3, d().dilation((1, 0, 1)), None),
        "dilation",
    );
    err(nn::Conv3d::new(4, 4, 3, d().groups(2), None), "groups");
    err(nn::ConvTranspose1d::new(3, 4, 0, t(), None), "kernel_size");
    err(
        nn::ConvTranspose1d::new(3, 4, 3, t().stride(-2), None),
        "stride",
    );
    err(
        nn::ConvTranspose1d::new(3, 4, 3, t().stride((1, 2)), None),
        "stride",
    );
    err(
        nn::ConvTranspose2d::new(3, 4, (3, 3, 3), t(), None),
        "kernel_size",
    );
    err(
        nn::ConvTranspose2d::new(3, 4, 3, t().dilation(0), None),
        "dilation",
    );
    err(
        nn::ConvTranspose2d::new(3, 4, 3, t().output_padding((1, 1, 1)), None),
        "output_padding",
    );
    err(
        nn::ConvTranspose3d::new(3, 4, 3, t().groups(3), None),
        "groups",
    );
    err(nn::ConvTranspose3d::new(3, 0, 3, t(), None), "out_channels");

    // Inputs of the wrong rank or channel count: layer-named errors, not MLX aborts.
    let zeros = |shape: &[i32]| mlx::core::ops::zeros(shape, None);
    let c3 = nn::Conv3d::new(3, 4, 2, d(), None)?;
    err(c3.forward(&zeros(&[1, 4, 4, 3])?), "Conv3d");
    err(c3.forward(&zeros(&[1, 4, 4, 4, 2])?), "Conv3d");
    let ct1 = nn::ConvTranspose1d::new(3, 4, 2, t(), None)?;
    err(ct1.forward(&zeros(&[4, 3])?), "ConvTranspose1d");
    err(ct1.forward(&zeros(&[1, 4, 4])?), "ConvTranspose1d");
    let ct2 = nn::ConvTranspose2d::new(3, 4, 2, t(), None)?;
    err(ct2.forward(&zeros(&[1, 4, 4, 4, 3])?), "ConvTranspose2d");
    err(ct2.forward(&zeros(&[1, 4, 4, 1])?), "ConvTranspose2d");
    let ct3 = nn::ConvTranspose3d::new(3, 4, 2, t(), None)?;
    err(ct3.forward(&zeros(&[1, 4, 4, 3])?), "ConvTranspose3d");
    err(ct3.forward(&zeros(&[1, 2, 2, 2, 5])?), "ConvTranspose3d");
    // Input smaller than the kernel: MLX's own error, still an `Err`.
    assert!(c3.forward(&zeros(&[1, 1, 4, 4, 3])?).is_err());
    Ok(())
}

/// Conv1d and Conv2d are written by the same macro as Conv3d, so they check the same
/// arguments and inputs (with `groups`, which Python gives them): the input's channels are
/// the weight's times `groups`.
#[test]
fn conv1d_and_conv2d_check_as_conv3d_does() -> Result<()> {
    let _turn = random_turn();
    let d = ConvOptions::default;
    err(nn::Conv1d::new(4, 8, 0, d(), None), "kernel_size");
    err(nn::Conv1d::new(4, 8, 3, d().stride(0), None), "stride");
    err(nn::Conv1d::new(4, 8, 3, d().stride((1, 2)), None), "stride");
    err(nn::Conv1d::new(4, 8, 3, d().groups(3), None), "groups");
    err(nn::Conv2d::new(3, 4, (3, 3, 3), d(), None), "kernel_size");
    err(nn::Conv2d::new(0, 4, 3, d(), None), "in_channels");
    err(nn::Conv2d::new(4, 6, 3, d().groups(4), None), "groups");
    err(
        nn::Conv2d::new(4, 4, 3, d().dilation((1, 0)), None),
        "dilation",
    );

    // One kernel size for every axis, as Python's `int`.
    let c2 = nn::Conv2d::new(4, 6, 3, d().groups(2), None)?;
    assert_eq!(c2.weight.shape(), &[6, 3, 3, 2]);
    assert_eq!((c2.stride, c2.padding, c2.groups), ((1, 1), (0, 0), 2));

    let zeros = |shape: &[i32]| mlx::core::ops::zeros(shape, None);
    let c1 = nn::Conv1d::new(4, 8, 3, d().groups(2), None)?;
    assert_eq!(c1.weight.shape(), &[8, 3, 2]);
    assert_eq!(c1.forward(&zeros(&[1, 5, 4])?)?.shape(), &[1, 3, 8]);
    err(c1.forward(&zeros(&[1, 5, 2])?), "Conv1d");
    err(c1.forward(&zeros(&[5, 4])?), "Conv1d");
    assert_eq!(c2.forward(&zeros(&[2, 5, 5, 4])?)?.shape(), &[2, 3, 3, 6]);
    err(c2.forward(&zeros(&[2, 5, 5, 2])?), "Conv2d");
    err(c2.forward(&zeros(&[5, 5, 4])?), "Conv2d");
    Ok(())
}

#[test]
fn bad_pool_arguments_and_inputs_are_errors() -> Result<()> {
    let p = PoolOptions::default;
    err(nn::MaxPool1d::new(0, p()), "kernel_size");
    err(nn::MaxPool1d::new(2, p().stride(0)), "stride");
    err(nn::AvgPool1d::new(2, p().padding(-1)), "padding");
    err(nn::MaxPool2d::new((2, 2, 2), p()), "kernel_size");
    err(nn::MaxPool2d::new((2, -2), p()), "kernel_size");
    err(nn::AvgPool2d::new(2, p().stride((1, 1, 1))), "stride");
    err(nn::MaxPool3d::new(2, p().padding((1, -1, 0))), "padding");
    err(nn::AvgPool3d::new((2, 2), p()), "kernel_size");

    let zeros = |shape: &[i32]| mlx::core::ops::zeros(shape, None);
    err(
        nn::MaxPool1d::new(2, p())?.forward(&zeros(&[4, 3])?),
        "MaxPool1d",
    );
    err(
        nn::MaxPool2d::new(2, p())?.forward(&zeros(&[1, 4, 3])?),
        "MaxPool2d",
    );
    err(
        nn::AvgPool3d::new(2, p())?.forward(&zeros(&[1, 4, 4, 3])?),
        "AvgPool3d",
    );
    // A window longer than the (padded) axis by more than a stride: Python's as_strided
    // fails on the negative size; here the layer says so before MLX sees it.
    err(
        nn::MaxPool1d::new(5, p().stride(1))?.forward(&zeros(&[1, 2, 2])?),
        "MaxPool1d",
    );
    err(
        nn::AvgPool2d::new(4, p().stride(1))?.forward(&zeros(&[1, 2, 8, 2])?),
        "AvgPool2d",
    );
    // A padded size beyond what MLX's shapes hold.
    let huge = p().padding(i32::MAX / 2);
    err(
        nn::MaxPool1d::new(2, huge)?.forward(&zeros(&[1, 4, 1])?),
        "padding",
    );
    Ok(())
}

#[test]
fn bad_upsample_arguments_and_inputs_are_errors() -> Result<()> {
    use nn::UpsampleMode::{Cubic, Linear, Nearest};
    let o = UpsampleOptions::default;
    err("bilinear".parse::<nn::UpsampleMode>(), "bilinear");
    err(
        nn::Upsample::new(0.5, o().mode(Nearest).antialias(true)),
        "nearest",
    );
    err(
        nn::Upsample::new(0.5, o().mode(Linear).antialias(true).align_corners(true)),
        "align_corners",
    );
    for bad in [0.0, -2.0, f64::NAN, f64::INFINITY] {
        err(nn::Upsample::new(bad, o()), "scale");
        err(nn::Upsample::new(vec![2.0, bad], o().mode(Cubic)), "scale");
    }
    err(nn::Upsample::new(Vec::<f64>::new(), o()), "scale_factor");

    let zeros = |shape: &[i32]| mlx::core::ops::zeros(shape, None);
    let up = nn::Upsample::new(2, o())?;
    err(up.forward(&zeros(&[4, 3])?), "2D");
    let up = nn::Upsample::new((2.0, 2.0), o().mode(Linear))?;
    err(up.forward(&zeros(&[1, 4, 3])?), "scale_factor");
    err(up.forward(&zeros(&[1, 4, 4, 4, 3])?), "scale_factor");

    let x = zeros(&[1, 2, 3])?;
    err(
        nn::upsample_nearest(&x, &[2.0, 2.0]),
        "each spatial dimension",
    );
    err(
        nn::upsample_linear(&zeros(&[2, 3])?, &[], false, false),
        "each spatial dimension",
    );
    err(nn::upsample_cubic(&x, &[-1.0], false, false), "scale");
    err(nn::upsample_linear(&x, &[0.5], true, true), "align_corners");
    // Python divides by the output size here (ZeroDivisionError).
    err(nn::upsample_nearest(&x, &[0.4]), "no output");
    Ok(())
}
