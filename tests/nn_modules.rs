//! Module access against Python MLX 0.32.2 (tests/data/nn_modules.json, written by
//! scripts/golden/nn_modules.py): `children`, `named_modules`, `modules`, `leaf_modules`,
//! `map_parameters` (Python's `apply`) and `nn.quantize` on a model whose Python twin has the
//! same fields in the same order and whose weights come from Python; `apply_to_modules`,
//! `update_modules`, `state` and training hooks; `QQLinear` in both modes.

mod support;

use std::collections::BTreeMap;

use mlx::core::ops::QuantizationMode;
use mlx::core::{ops, Array, Dtype, Result};
use mlx::nn::{
    self, AnyModule, Embedding, Forward, Linear, LoadWeightsOptions, MaybeQuantizedEmbedding,
    MaybeQuantizedLinear, Module, PadRows, QQLinear, QQLinearOptions, QuantizeModelOptions,
    QuantizedEmbedding, QuantizedLinear, RMSNorm,
};
use mlx::utils::TreeNode;
use serde_json::Value;
use support::golden::{array, assert_close_tol, assert_exact, data_file, load};

/// Built against the wheel's own libmlx (`MLX_DIR`): every kernel is the one Python ran.
const LINKED_TO_WHEEL: bool = option_env!("MLX_DIR").is_some();

#[derive(Debug, Clone, TreeNode)]
struct Block {
    norm: RMSNorm,
    proj: Vec<MaybeQuantizedLinear>,
    extra: BTreeMap<String, MaybeQuantizedLinear>,
    w: Array,
    arrs: Vec<Array>,
}

#[derive(Debug, Clone, TreeNode)]
struct Model {
    embed: MaybeQuantizedEmbedding,
    blocks: Vec<Block>,
    head: MaybeQuantizedLinear,
}

fn linear(i: i32, o: i32, bias: bool) -> MaybeQuantizedLinear {
    nn::Linear::new(i, o, bias).unwrap().into()
}

fn block() -> Block {
    Block {
        norm: RMSNorm::new(32, None).unwrap(),
        proj: vec![linear(32, 32, true), linear(32, 32, false)],
        extra: BTreeMap::from([("a".to_string(), linear(32, 64, true))]),
        w: ops::ones(&[2], None).unwrap(),
        arrs: vec![ops::ones(&[1], None).unwrap()],
    }
}

/// The model with Python's weights.
fn model() -> Model {
    let mut m = Model {
        embed: Embedding::new(64, 32).unwrap().into(),
        blocks: vec![block(), block()],
        head: linear(32, 64, true),
    };
    m.load_weights(
        data_file("nn_modules.safetensors"),
        LoadWeightsOptions::default(),
    )
    .unwrap();
    m
}

fn pairs(json: &Value) -> Vec<(String, String)> {
    json.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_string(),
                p[1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn typed(modules: Vec<(String, AnyModule)>) -> Vec<(String, String)> {
    modules
        .into_iter()
        .map(|(p, m)| (p, m.type_name().to_string()))
        .collect()
}

#[test]
fn module_listings_match_python() -> Result<()> {
    let golden = load("nn_modules");
    let s = &golden["structure"];
    let m = model();
    assert_eq!(typed(m.named_modules()?), pairs(&s["named_modules"]));
    assert_eq!(typed(m.children()?), pairs(&s["children"]));
    assert_eq!(typed(m.leaf_modules()?), pairs(&s["leaf_modules"]));
    assert_eq!(typed(m.blocks[0].children()?), pairs(&s["block_children"]));
    let names: Vec<String> = m
        .modules()?
        .iter()
        .map(|m| m.type_name().to_string())
        .collect();
    let expected: Vec<String> = s["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, expected);
    Ok(())
}

#[test]
fn any_module_is_the_module_detached() -> Result<()> {
    let m = model();
    let (path, head) = m.named_modules()?.into_iter().nth(1).unwrap();
    assert_eq!(path, "head");
    assert!(head.is::<nn::Linear>());
    assert!(!head.is::<RMSNorm>());
    let linear: nn::Linear = head.downcast()?;
    let MaybeQuantizedLinear::Float(original) = &m.head else {
        panic!("a float head")
    };
    // The same arrays, not copies.
    assert_eq!(linear.weight.id()?, original.weight.id()?);
    let names: Vec<String> = head
        .named_parameters()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(names, ["weight", "bias"]);
    assert!(head.downcast::<RMSNorm>().is_err());
    // Not a struct: not a module.
    assert!(AnyModule::new(&vec![ops::ones(&[1], None)?]).is_err());
    // state: every array and every static field.
    let state = m.blocks[0].norm.module_state()?;
    let statics: Vec<String> = state.named_statics().into_iter().map(|(p, _)| p).collect();
    assert!(statics.contains(&"eps".to_string()), "{statics:?}");
    Ok(())
}

#[test]
fn map_parameters_equals_python_apply() -> Result<()> {
    let golden = load("nn_modules");
    let mut m = model();
    // Python: model.apply(astype(float16), filter: Linear layers' `weight`).
    m.map_parameters(
        |x| x.astype(Dtype::Float16),
        Some(&|p| p.module_type == Some("Linear") && p.key == "weight"),
    )?;
    let dtypes: Vec<(String, String)> = m
        .named_parameters()?
        .into_iter()
        .map(|(p, a)| (p, a.dtype().name().to_string()))
        .collect();
    let expected: Vec<(String, String)> = golden["applied_dtypes"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    assert_eq!(dtypes, expected);
    // filter_and_map returns the chosen parameters as a tree, the model unchanged.
    let m = model();
    let biases = m.filter_and_map(|p| p.key == "bias", |x| x.astype(Dtype::Bfloat16))?;
    let flat = mlx::utils::tree_flatten_with_path(&biases)?;
    assert_eq!(flat.len(), 5); // two a block (proj.1 has none) and the head's
    assert!(flat
        .iter()
        .all(|(p, a)| p.ends_with(".bias") && a.dtype() == Dtype::Bfloat16));
    Ok(())
}

fn check_quantized(m: &Model, golden: &Value) -> Result<()> {
    let params = golden["parameters"].as_object().unwrap();
    let names: Vec<String> = m.named_parameters()?.into_iter().map(|(p, _)| p).collect();
    let expected: Vec<String> = params.keys().cloned().collect();
    assert_eq!(names, expected);
    // quantize is elementwise: the same bits on either libmlx.
    for (path, a) in m.named_parameters()? {
        assert_exact(&a, &params[&path], &path);
    }
    assert_eq!(typed(m.named_modules()?), pairs(&golden["modules"]));
    let x = Array::from_slice(&[1i32, 5, 63, 0], &[1, 4])?;
    let y = m.head.forward(&m.embed.forward(&x)?)?;
    // A quantized matmul: the wheel's kernel bit for bit; the source build's may differ
    // in the last bit of a float32 sum of 32 products.
    let (rtol, atol) = if LINKED_TO_WHEEL {
        (0.0, 0.0)
    } else {
        (2e-6, 1e-6)
    };
    assert_close_tol(&y, &golden["head_of_embed"], rtol, atol, "head(embed(x))");
    Ok(())
}

#[test]
fn quantize_equals_python_nn_quantize() -> Result<()> {
    let golden = load("nn_modules");
    let mut m = model();
    let done = nn::quantize(
        &mut m,
        QuantizeModelOptions::default().group_size(32).bits(4),
    )?;
    assert_eq!(done.len(), 8);
    assert_eq!(done[0], "embed");
    check_quantized(&m, &golden["quantized"]["all"])?;

    let mut m = model();
    let blocks =
        |path: &str, m: &AnyModule| m.type_name() == "Linear" && path.starts_with("blocks.");
    let done = nn::quantize(
        &mut m,
        QuantizeModelOptions::default()
            .group_size(32)
            .bits(4)
            .class_predicate(&blocks),
    )?;
    assert_eq!(
        done,
        [
            "blocks.0.proj.0",
            "blocks.0.proj.1",
            "blocks.0.extra.a",
            "blocks.1.proj.0",
            "blocks.1.proj.1",
            "blocks.1.extra.a"
        ]
    );
    check_quantized(&m, &golden["quantized"]["blocks"])
}

#[derive(Debug, Clone, TreeNode)]
struct Fixed {
    quantizable: MaybeQuantizedLinear,
    fixed: nn::Linear,
}

#[test]
fn quantize_keeps_fixed_fields_and_names_them_when_chosen() -> Result<()> {
    let make = || Fixed {
        quantizable: linear(64, 8, false),
        fixed: nn::Linear::new(64, 8, false).unwrap(),
    };
    let mut m = make();
    // Without a predicate, a `Linear` field stays in floating point, as a Python module
    // without `to_quantized` does.
    assert_eq!(
        nn::quantize(&mut m, QuantizeModelOptions::default().group_size(32))?,
        ["quantizable"]
    );
    assert!(m.quantizable.is_quantized());
    // Chosen by a predicate, it is an error naming it; the model is unchanged.
    let mut m = make();
    let all = |_: &str, _: &AnyModule| true;
    let e = nn::quantize(
        &mut m,
        QuantizeModelOptions::default()
            .group_size(32)
            .class_predicate(&all),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`fixed`"), "{e}");
    assert!(!m.quantizable.is_quantized());
    // Another mode, with its defaults (nvfp4: 4 bits in groups of 16, no biases), as
    // Python's `nn.quantize(model, mode="nvfp4")`.
    assert_eq!(
        nn::quantize(
            &mut m,
            QuantizeModelOptions::default().mode(QuantizationMode::Nvfp4),
        )?,
        ["quantizable"]
    );
    let nn::MaybeQuantized::Quantized(q) = &m.quantizable else {
        panic!("not quantized");
    };
    assert_eq!(
        (q.mode, q.group_size, q.bits, q.biases.is_none()),
        (QuantizationMode::Nvfp4, 16, 4, true)
    );
    assert_eq!(q.scales.dtype(), Dtype::Uint8);
    assert_eq!(q.scales.shape(), &[8, 4]);
    Ok(())
}

#[test]
fn apply_to_modules_changes_each_module_of_a_type() -> Result<()> {
    let mut m = model();
    let mut seen = Vec::new();
    m.apply_to_modules(|path, norm: &mut RMSNorm| {
        seen.push(path.to_string());
        norm.weight = ops::zeros_like(&norm.weight, None)?;
        Ok(())
    })?;
    // named_modules order.
    assert_eq!(seen, ["blocks.1.norm", "blocks.0.norm"]);
    for b in &m.blocks {
        assert_eq!(b.norm.weight.abs()?.sum(None, false)?.item::<f32>()?, 0.0);
    }
    // A module may change shape: the model is rebuilt with it.
    m.apply_to_modules(|_, b: &mut Block| {
        b.arrs.push(ops::zeros(&[3], None)?);
        Ok(())
    })?;
    assert_eq!(m.blocks[1].arrs.len(), 2);
    // An error from the closure leaves the model as it was.
    let before = m.num_parameters()?;
    let e = m.apply_to_modules(|path, _: &mut Block| {
        if path == "blocks.0" {
            Err(mlx::core::Error::InvalidArgument("stop".into()))
        } else {
            Ok(())
        }
    });
    assert!(e.is_err());
    assert_eq!(m.num_parameters()?, before);
    Ok(())
}

#[test]
fn update_modules_replaces_by_path_where_the_type_allows() -> Result<()> {
    let mut m = model();
    // Same type.
    let new_norm = RMSNorm::new(32, 0.5).unwrap();
    m.update_modules(vec![("blocks.1.norm".into(), AnyModule::new(&new_norm)?)])?;
    assert_eq!(m.blocks[1].norm.eps, 0.5);
    // Another type where an enum field holds both forms.
    let q = nn::QuantizedLinear::from_linear(
        &nn::Linear::new(32, 64, true)?,
        Some(32),
        Some(4),
        QuantizationMode::Affine,
    )?;
    m.update_modules(vec![("head".into(), AnyModule::new(&q)?)])?;
    assert!(m.head.is_quantized());
    // A type the field cannot hold: an error naming the path; the model unchanged.
    let e = m
        .update_modules(vec![("blocks.0.norm".into(), AnyModule::new(&q)?)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("blocks.0.norm"), "{e}");
    assert_eq!(m.blocks[0].norm.weight.shape(), &[32]);
    // No module there.
    for path in ["blocks.2", "blocks.0.w", "nothing"] {
        let e = m.update_modules(vec![(path.into(), AnyModule::new(&new_norm)?)]);
        assert!(e.unwrap_err().to_string().contains(path));
    }
    Ok(())
}

#[derive(Debug, Clone, TreeNode)]
struct Counter {
    hits: Array,
    #[tree(static)]
    training: bool,
}

fn count(c: &mut Counter, mode: bool) -> Result<()> {
    c.hits = ops::add(
        &c.hits,
        Array::from_scalar(if mode { 1.0f32 } else { 10.0 }),
    )?;
    Ok(())
}

#[test]
fn training_hooks_run_on_train_and_eval() -> Result<()> {
    nn::register_training_hook::<Counter>(count);
    let mut m = vec![
        Counter {
            hits: Array::from_scalar(0.0f32),
            training: true,
        };
        2
    ];
    m.eval_mode()?;
    m.train(true)?;
    for c in &m {
        assert_eq!(c.hits.item::<f32>()?, 11.0);
        assert!(c.training);
    }
    Ok(())
}

#[test]
fn qq_linear_matches_python_in_both_modes() -> Result<()> {
    let golden = load("nn_modules");
    for (mode, case) in golden["qq_linear"].as_object().unwrap() {
        let mode = match mode.as_str() {
            "nvfp4" => QuantizationMode::Nvfp4,
            _ => QuantizationMode::Mxfp8,
        };
        let linear = nn::Linear::from_weights(array(&case["weight"]), None);
        let options = QQLinearOptions {
            mode,
            ..Default::default()
        };
        let mut layer = QQLinear::from_linear(&linear, options)?;
        let x = array(&case["x"]);
        for tag in ["train", "eval"] {
            layer.train(tag == "train")?;
            let params = case[format!("{tag}_parameters")].as_object().unwrap();
            let names: Vec<String> = layer
                .named_parameters()?
                .into_iter()
                .map(|(p, _)| p)
                .collect();
            assert_eq!(
                names,
                params.keys().cloned().collect::<Vec<_>>(),
                "{mode:?} {tag}"
            );
            for (path, a) in layer.named_parameters()? {
                assert_exact(&a, &params[&path], &format!("{mode:?} {tag} {path}"));
            }
            // MLX reports a missing kernel when the graph is evaluated.
            let y = layer.forward(&x).and_then(|y| y.eval().map(|()| y));
            match (&case.get(format!("{tag}_output")), y) {
                (Some(expected), Ok(y)) => {
                    assert_exact(&y, expected, &format!("{mode:?} {tag} output"));
                }
                (None, Err(e)) => {
                    // Where MLX has no qqmm kernel (the CPU), its error, as Python got.
                    let python = case[format!("{tag}_error")].as_str().unwrap();
                    assert!(e.to_string().contains(python), "{e} vs {python}");
                }
                (expected, got) => panic!("{mode:?} {tag}: Python {expected:?}, Rust {got:?}"),
            }
        }
    }
    // A bias is refused, as in Python.
    assert!(QQLinear::from_linear(&nn::Linear::new(4, 4, true)?, Default::default()).is_err());
    Ok(())
}

/// A quantized product of 2 to 7 rows padded with zero rows to 8 (`PadRows`, for MLX's CUDA
/// kernel of 8 rows) keeps each row's values and the input's shape: on the CPU bit for bit,
/// as MLX's CPU product computes each row alone. 1 and 8 or more rows are not padded. On a
/// CUDA GPU the padded rows take MLX's matrix kernel and the others its one-row kernel, which
/// sum in other orders: not compared there.
#[test]
fn padded_quantized_rows_keep_each_rows_values() -> Result<()> {
    use mlx::core::random;
    if mlx::core::cuda::is_current_device()? {
        eprintln!("on a CUDA GPU: MLX's two kernels sum in other orders, not compared");
        return Ok(());
    }
    let (k, n) = (128, 96);
    let weight = random::normal(&[n, k], Default::default(), &random::key(1)?)?;
    let bias = ops::arange(0.0f32, n as f32, None, None)?;
    let float = Linear::from_weights(weight.clone(), Some(bias));
    let affine = QuantizationMode::Affine;
    let mut layer = QuantizedLinear::from_linear(&float, Some(64), Some(4), affine)?;
    let table = Embedding::from_weights(weight);
    let mut tied = QuantizedEmbedding::from_embedding(&table, Some(64), Some(4), affine)?;
    let shapes = [
        vec![1, k],
        vec![3, k],
        vec![7, k],
        vec![8, k],
        vec![2, 3, k],
        vec![1, 5, k],
        vec![k],
    ];
    for shape in shapes {
        let x = random::normal(&shape, Default::default(), &random::key(2)?)?;
        let mut out = Vec::new();
        for pad in [PadRows::Never, PadRows::Always] {
            layer.pad_rows = pad;
            tied.pad_rows = pad;
            out.push((layer.forward(&x)?, tied.as_linear(&x)?));
        }
        let ((plain, plain_tied), (padded, padded_tied)) = (&out[0], &out[1]);
        assert_eq!(padded.shape(), plain.shape(), "{shape:?}");
        assert_eq!(padded_tied.shape(), plain_tied.shape(), "{shape:?}");
        assert!(
            ops::array_equal(padded, plain, false)?.item::<bool>()?,
            "{shape:?}"
        );
        assert!(
            ops::array_equal(padded_tied, plain_tied, false)?.item::<bool>()?,
            "{shape:?}"
        );
    }
    Ok(())
}
