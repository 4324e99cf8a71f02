//! A function that returns `Err` or panics inside a transform: the caller gets `Err` with
//! the original message, the process survives, and the next call works.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use mlx_rs::compile::compile;
use mlx_rs::transforms::{checkpoint, custom_vjp, grad, jvp, value_and_grad, vjp, vmap};
use mlx_rs::{ops, Array, Error, Result};

const OK: u8 = 0;
const ERR: u8 = 1;
const PANIC: u8 = 2;
const FOREIGN: u8 = 3;

/// `sum(x^2)`, or an `Err` / a panic, depending on `mode`.
fn flaky(mode: &AtomicU8, x: &[Array]) -> Result<Vec<Array>> {
    match mode.load(Ordering::SeqCst) {
        ERR => Err(Error::InvalidArgument("user error: bad batch 7".into())),
        PANIC => panic!("user panic: tensor on fire"),
        FOREIGN => Err(Error::closure(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "batch file 7 is gone",
        ))),
        _ => Ok(vec![(&x[0] * &x[0]).sum(None, false)?]),
    }
}

fn x() -> Vec<Array> {
    vec![Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap()]
}

/// Runs `call` in each mode: Err comes back unchanged, a panic comes back as
/// `Error::Closure` with its message, a foreign error as `Error::Closure` whose source is that
/// error, and afterwards a normal call succeeds.
fn check_modes(what: &str, mode: &AtomicU8, call: impl Fn() -> Result<Vec<Array>>) {
    mode.store(OK, Ordering::SeqCst);
    let good: Vec<Vec<f32>> = call()
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .iter()
        .map(|a| a.to_vec::<f32>().unwrap())
        .collect();

    mode.store(ERR, Ordering::SeqCst);
    let e = call().expect_err(what);
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m == "user error: bad batch 7"),
        "{what}: the closure's own error comes back: {e:?}"
    );

    mode.store(PANIC, Ordering::SeqCst);
    let e = call().expect_err(what);
    assert!(matches!(e, Error::Closure { .. }), "{what}: {e:?}");
    assert!(
        e.to_string().contains("user panic: tensor on fire"),
        "{what}: {e}"
    );
    assert!(
        std::error::Error::source(&e).is_none(),
        "{what}: a panic has no source"
    );

    mode.store(FOREIGN, Ordering::SeqCst);
    let e = call().expect_err(what);
    assert!(matches!(e, Error::Closure { .. }), "{what}: {e:?}");
    assert!(
        e.to_string().contains("batch file 7 is gone"),
        "{what}: {e}"
    );
    let source = std::error::Error::source(&e)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .unwrap_or_else(|| panic!("{what}: the io::Error is the source: {e:?}"));
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound, "{what}");

    mode.store(OK, Ordering::SeqCst);
    let again: Vec<Vec<f32>> = call()
        .unwrap_or_else(|e| panic!("{what} after failures: {e}"))
        .iter()
        .map(|a| a.to_vec::<f32>().unwrap())
        .collect();
    assert_eq!(again, good, "{what}: works again after failing");
}

#[test]
fn inside_grad_and_value_and_grad() {
    let mode = AtomicU8::new(OK);
    let g = grad(|x: &[Array]| flaky(&mode, x), None);
    check_modes("grad", &mode, || g(&x()));
    let vg = value_and_grad(|x: &[Array]| flaky(&mode, x), None);
    check_modes("value_and_grad", &mode, || vg(&x()).map(|(v, _)| v));
}

#[test]
fn inside_vjp_and_jvp() {
    let mode = AtomicU8::new(OK);
    let one = [Array::from(1.0f32)];
    check_modes("vjp", &mode, || {
        vjp(|x: &[Array]| flaky(&mode, x), &x(), &one).map(|(_, v)| v)
    });
    check_modes("jvp", &mode, || {
        jvp(|x: &[Array]| flaky(&mode, x), &x(), &x()).map(|(_, t)| t)
    });
}

#[test]
fn inside_vmap() {
    let mode = AtomicU8::new(OK);
    let v = vmap(|x: &[Array]| flaky(&mode, x), 0, 0);
    let batch = ops::ones(&[4, 3], None).unwrap();
    check_modes("vmap", &mode, || v(std::slice::from_ref(&batch)));
}

#[test]
fn inside_compile() {
    let mode = AtomicU8::new(OK);
    let cf = compile(|x: &[Array]| flaky(&mode, x), None);
    // Clearing the cache makes every call trace, so every call runs the closure.
    check_modes("compile", &mode, || {
        cf.clear_cache();
        cf.call(&x())
    });
    // A failed first trace leaves no half-filled entry: the same shape traces cleanly later.
    let cf = compile(|x: &[Array]| flaky(&mode, x), None);
    mode.store(ERR, Ordering::SeqCst);
    assert!(cf.call(&x()).is_err());
    mode.store(PANIC, Ordering::SeqCst);
    assert!(cf.call(&x()).is_err());
    mode.store(OK, Ordering::SeqCst);
    assert!(cf.call(&x()).is_ok());
    assert!(cf.call(&x()).is_ok());
    assert_eq!((cf.traces(), cf.calls()), (3, 4));
}

#[test]
fn inside_custom_vjp_forward_and_rule() {
    let mode = Arc::new(AtomicU8::new(OK));
    let (m1, m2) = (mode.clone(), mode.clone());
    let f = custom_vjp(
        move |x: &[Array]| {
            // Fail only in the forward pass under test, never in the rule.
            if m1.load(Ordering::SeqCst) >= 10 {
                return Ok(vec![ops::sin(&x[0])?]);
            }
            flaky(&m1, x)
        },
        move |_p: &[Array], c: &[Array], _o: &[Array]| {
            let rule_mode = AtomicU8::new(m2.load(Ordering::SeqCst).saturating_sub(10));
            Ok(vec![flaky(&rule_mode, &[c[0].clone()])?[0].clone()])
        },
    )
    .unwrap();
    let scalar = [Array::from(2.0f32)];
    check_modes("custom_vjp forward", &mode, || f.call(&scalar));

    // Modes 10/11/12: forward fine, the vjp rule is OK / Err / panics.
    let shift = AtomicU8::new(OK);
    let g = grad(
        |x: &[Array]| Ok(vec![f.call(x)?[0].sum(None, false)?]),
        None,
    );
    check_modes("custom_vjp rule", &shift, || {
        mode.store(10 + shift.load(Ordering::SeqCst), Ordering::SeqCst);
        g(&scalar)
    });
}

#[test]
fn inside_checkpoint() {
    let mode = Arc::new(AtomicU8::new(OK));
    let m = mode.clone();
    let ck = checkpoint(move |x: &[Array]| flaky(&m, x)).unwrap();
    let g = grad(|x: &[Array]| ck.call(x), None);
    check_modes("checkpoint", &mode, || g(&x()));
}

#[test]
fn inside_export() {
    let dir = std::env::temp_dir().join(format!("mlx-rs-closure-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("f.mlxfn");
    let mode = AtomicU8::new(OK);
    // (Importing is tested in export.rs: MLX 0.32 runs imported graphs on one thread only.)
    check_modes("export_function", &mode, || {
        mlx_rs::export::export_function(&file, |x: &[Array]| flaky(&mode, x), &x(), None)?;
        Ok(vec![Array::from(
            std::fs::metadata(&file).unwrap().len() as f32
        )])
    });
    // The multi-trace exporter: the error comes back; MLX 0.32.2 cannot continue an exporter
    // after a failed trace, so later calls are refused (instead of crashing in MLX).
    for (i, failure) in [ERR, PANIC].into_iter().enumerate() {
        let ex = mlx_rs::export::exporter(
            dir.join(format!("g{i}.mlxfn")),
            |x: &[Array]| flaky(&mode, x),
            None,
        )
        .unwrap();
        mode.store(OK, Ordering::SeqCst);
        ex.call(&x()).unwrap();
        mode.store(failure, Ordering::SeqCst);
        let e = ex.call(&[ops::ones(&[2], None).unwrap()]).unwrap_err();
        assert!(e.to_string().contains("user"), "{e}");
        mode.store(OK, Ordering::SeqCst);
        let e = ex.call(&[ops::ones(&[5], None).unwrap()]).unwrap_err();
        assert!(e.to_string().contains("after a failed trace"), "{e}");
    }
    let ex =
        mlx_rs::export::exporter(dir.join("h.mlxfn"), |x: &[Array]| flaky(&mode, x), None).unwrap();
    ex.call(&x()).unwrap();
    ex.call(&[ops::ones(&[2], None).unwrap()]).unwrap();
    drop(ex);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_from_mlx_inside_a_closure_keep_mlx_message() {
    let g = grad(
        |x: &[Array]| {
            let bad = x[0].reshape(&[7, 7])?; // 3 elements cannot become 7x7
            Ok(vec![bad.sum(None, false)?])
        },
        None,
    );
    let e = g(&x()).unwrap_err();
    assert!(matches!(e, Error::Mlx(_)), "{e:?}");
    assert!(e.to_string().contains("[reshape]"), "{e}");
}

#[test]
fn a_non_scalar_loss_is_an_error_not_an_abort() {
    let g = grad(|x: &[Array]| Ok(vec![&x[0] * 2.0]), None);
    assert!(g(&x()).is_err());
    let g = grad(|x: &[Array]| Ok(vec![x[0].sum(None, false)?]), 5);
    let e = g(&x()).unwrap_err();
    assert!(e.to_string().contains("[grad]"), "{e}");
}

/// MLX differentiates a function's first output without checking it has one.
#[test]
fn grad_of_a_function_without_outputs_is_an_error() {
    let nothing = |_: &[Array]| Ok(Vec::new());
    let x = [Array::from(1.0f32)];
    for r in [
        mlx_rs::transforms::grad(nothing, 0)(&x).map(|_| ()),
        mlx_rs::transforms::value_and_grad(nothing, 0)(&x).map(|_| ()),
    ] {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("returned no outputs"), "{e}");
    }
}

/// What a custom vjp rule returns is checked against the primals: count, shape, dtype.
#[test]
fn custom_vjp_results_are_checked() -> Result<()> {
    let x = [ops::ones(&[2], None)?];
    // What each rule returns (arrays are made inside the rule: they are not `Sync`).
    fn returned(case: usize) -> Result<Vec<Array>> {
        Ok(match case {
            0 => vec![],
            1 => vec![ops::ones(&[2], None)?, ops::ones(&[2], None)?],
            2 => vec![ops::ones(&[7], None)?],
            _ => vec![ops::ones(&[2], mlx_rs::Dtype::Float16)?],
        })
    }
    let wants = [
        "returned 0 cotangents for 1 primals",
        "returned 2 cotangents for 1 primals",
        "cotangent 0 is [7] float32, but primal 0 is [2] float32",
        "cotangent 0 is [2] float16",
    ];
    for (case, want) in wants.into_iter().enumerate() {
        let f = custom_vjp(
            |x: &[Array]| Ok(vec![x[0].clone()]),
            move |_: &[Array], _: &[Array], _: &[Array]| returned(case),
        )?;
        let g = grad(
            move |x: &[Array]| Ok(vec![f.call(x)?[0].sum(None, false)?]),
            None,
        );
        let e = g(&x).unwrap_err().to_string();
        assert!(e.contains(want), "{e} (expected: {want})");
    }
    // A correct rule still works.
    let f = custom_vjp(
        |x: &[Array]| Ok(vec![x[0].clone()]),
        |_: &[Array], c: &[Array], _: &[Array]| Ok(vec![&c[0] * 3.0]),
    )?;
    let g = grad(
        move |x: &[Array]| Ok(vec![f.call(x)?[0].sum(None, false)?]),
        None,
    );
    assert_eq!(g(&x)?[0].to_vec::<f32>()?, [3.0, 3.0]);
    Ok(())
}

/// Cotangents are paired with outputs one to one.
#[test]
fn vjp_cotangents_must_match_the_outputs() -> Result<()> {
    let f = |x: &[Array]| Ok(vec![&x[0] * 2.0]);
    let x = [Array::from(1.0f32)];
    let two = [Array::from(1.0f32), Array::from(1.0f32)];
    let e = vjp(f, &x, &two).unwrap_err().to_string();
    assert!(e.contains("2 cotangents were given for 1 outputs"), "{e}");
    assert_eq!(vjp(f, &x, &two[..1])?.1[0].item::<f32>()?, 2.0);
    Ok(())
}

/// A custom jvp rule's tangents are checked against the function's outputs.
#[test]
fn custom_jvp_results_are_checked() -> Result<()> {
    fn returned(case: usize) -> Result<Vec<Array>> {
        Ok(match case {
            0 => vec![ops::ones(&[2], None)?, ops::ones(&[2], None)?],
            _ => vec![ops::ones(&[5], None)?],
        })
    }
    let wants = [
        "returned 2 tangents for 1 outputs",
        "tangent 0 is [5] float32, but output 0 is [2] float32",
    ];
    let x = [ops::ones(&[2], None)?];
    for (case, want) in wants.into_iter().enumerate() {
        let f = mlx_rs::transforms::custom_function(|x: &[Array]| Ok(vec![&x[0] * 2.0]))?
            .jvp(move |_: &[Array], _: &[Array], _: &[i32]| returned(case))?;
        let e = jvp(move |x: &[Array]| f.call(x), &x, &x)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{e} (expected: {want})");
    }
    // A correct rule still works.
    let f = mlx_rs::transforms::custom_function(|x: &[Array]| Ok(vec![&x[0] * 2.0]))?
        .jvp(|_: &[Array], t: &[Array], _: &[i32]| Ok(vec![&t[0] * 5.0]))?;
    let (_, tangents) = jvp(move |x: &[Array]| f.call(x), &x, &x)?;
    assert_eq!(tangents[0].to_vec::<f32>()?, [5.0, 5.0]);
    Ok(())
}

/// A custom vmap rule returns one output axis per output.
#[test]
fn custom_vmap_results_are_checked() -> Result<()> {
    let f = mlx_rs::transforms::custom_function(|x: &[Array]| Ok(vec![&x[0] * 2.0]))?
        .vmap(|x: &[Array], _: &[Option<i32>]| Ok((vec![&x[0] * 2.0], vec![Some(0), Some(0)])))?;
    let x = [ops::ones(&[3, 2], None)?];
    let e = vmap(move |x: &[Array]| f.call(x), 0, 0)(&x)
        .unwrap_err()
        .to_string();
    assert!(e.contains("returned 1 outputs and 2 output axes"), "{e}");
    Ok(())
}
