//! Gradients, vjp/jvp and vmap results compared with Python MLX 0.32.2
//! (`scripts/golden/transforms.py` wrote `tests/data/transforms.json`). Every function below
//! is the op-for-op twin of the Python function of the same name.

mod support;

use mlx::core::transforms::{self, checkpoint, custom_vjp, grad, jvp, value_and_grad, vjp, vmap};
use mlx::core::{ops, Array, Result};
use serde_json::Value;
use support::golden::{array, assert_close, load};

fn golden() -> Value {
    load("transforms")
}

fn input(g: &Value, name: &str) -> Array {
    array(&g["inputs"][name])
}

fn inputs(g: &Value, names: &[&str]) -> Vec<Array> {
    names.iter().map(|n| input(g, n)).collect()
}

fn assert_all(actual: &[Array], expected: &Value, what: &str) {
    let expected = expected.as_array().unwrap();
    assert_eq!(actual.len(), expected.len(), "{what}: count");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert_close(a, e, &format!("{what}[{i}]"));
    }
}

fn sum(a: &Array) -> Result<Array> {
    a.sum(None, false)
}

// ---- the functions (twins of scripts/golden/transforms.py) ----

fn elementwise(x: &Array, y: &Array) -> Result<Array> {
    sum(&(ops::sin(x)? * ops::exp(y)? + x * x / (1.0 + y * y)))
}

fn reductions(x: &Array) -> Result<Array> {
    let maxes = ops::slice_strided(&x.max(0, false)?, &[0], &[3], &[1][..])?;
    Ok(sum(&(x.mean(1, false)? * maxes))?
        + ops::prod(&ops::tanh(x)?, None, false)?
        + sum(&x.logsumexp(0, false)?)?)
}

fn matmul_chain(a: &Array, b: &Array, c: &Array) -> Result<Array> {
    sum(&ops::matmul(&ops::tanh(&ops::matmul(a, b)?)?, c)?)
}

fn softmax_lse(x: &Array, w: &Array) -> Result<Array> {
    Ok(sum(&(ops::softmax(x, -1, false)? * w))? + sum(&x.logsumexp(1, false)?)?)
}

fn indexing(x: &Array) -> Result<Array> {
    let idx = Array::from_slice(&[2i32, 0, 2, 1], &[4])?;
    let taken = ops::take(x, &idx, 0)?;
    let sl = ops::slice_strided(x, &[1, 0], &[3, 4], &[1, 2][..])?;
    Ok(sum(&(&taken * &taken))? + sum(&ops::exp(&sl)?)?)
}

fn mlp_loss(p: &[Array]) -> Result<Array> {
    let (w1, b1, w2, b2, x, y) = (&p[0], &p[1], &p[2], &p[3], &p[4], &p[5]);
    let h = ops::maximum(ops::matmul(x, w1)? + b1, 0.0)?;
    let logits = ops::matmul(&h, w2)? + b2;
    let n = y.dim(0)?;
    let picked = ops::take_along_axis(&logits, &y.reshape(&[n, 1])?, 1)?.reshape(&[n])?;
    (logits.logsumexp(1, false)? - picked).mean(None, false)
}

fn check_value_and_grad(
    g: &Value,
    name: &str,
    args: &[&str],
    argnums: &[i32],
    fun: impl Fn(&[Array]) -> Result<Array>,
) {
    let expected = &g["grads"][name];
    let f = |x: &[Array]| Ok(vec![fun(x)?]);
    let (values, grads) = value_and_grad(f, argnums)(&inputs(g, args)).unwrap();
    assert_close(&values[0], &expected["value"], &format!("{name} value"));
    assert_all(&grads, &expected["grads"], &format!("{name} grads"));
}

#[test]
fn gradients_match_python() {
    let g = golden();
    check_value_and_grad(&g, "elementwise", &["x34", "y34"], &[0, 1], |x| {
        elementwise(&x[0], &x[1])
    });
    check_value_and_grad(&g, "reductions", &["x34"], &[0], |x| reductions(&x[0]));
    check_value_and_grad(&g, "matmul_chain", &["a", "b", "c"], &[0, 1, 2], |x| {
        matmul_chain(&x[0], &x[1], &x[2])
    });
    check_value_and_grad(&g, "matmul_chain_arg1", &["a", "b", "c"], &[1], |x| {
        matmul_chain(&x[0], &x[1], &x[2])
    });
    check_value_and_grad(&g, "softmax_lse", &["x34", "w"], &[0, 1], |x| {
        softmax_lse(&x[0], &x[1])
    });
    check_value_and_grad(&g, "indexing", &["x34"], &[0], |x| indexing(&x[0]));
    check_value_and_grad(
        &g,
        "mlp_loss",
        &["w1", "b1", "w2", "b2", "xb", "yb"],
        &[0, 1, 2, 3],
        mlp_loss,
    );
}

#[test]
fn auxiliary_outputs_are_returned_but_not_differentiated() {
    let g = golden();
    let expected = &g["grads"]["with_aux"];
    let f = |x: &[Array]| Ok(vec![elementwise(&x[0], &x[1])?, &x[0] * &x[1]]);
    let (values, grads) = value_and_grad(f, [0, 1])(&inputs(&g, &["x34", "y34"])).unwrap();
    assert_eq!(values.len(), 2);
    assert_close(&values[0], &expected["value"], "with_aux loss");
    assert_close(&values[1], &expected["aux"], "with_aux aux");
    assert_all(&grads, &expected["grads"], "with_aux grads");
}

#[test]
fn grad_returns_the_gradients_in_argument_order() {
    let g = golden();
    let expected = &g["grads"]["matmul_chain"]["grads"];
    let f = |x: &[Array]| Ok(vec![matmul_chain(&x[0], &x[1], &x[2])?]);
    // As in Python, the order of argnums does not change the order of the gradients.
    let grads = grad(f, [2, 0, 1])(&inputs(&g, &["a", "b", "c"])).unwrap();
    assert_all(&grads, expected, "grad argnums [2, 0, 1]");
    let only_b = grad(f, -2)(&inputs(&g, &["a", "b", "c"])).unwrap();
    assert_close(&only_b[0], &expected[1], "grad argnums -2");
}

#[test]
fn checkpointed_function_gives_python_gradients() {
    let g = golden();
    let ck = checkpoint(|x: &[Array]| Ok(vec![matmul_chain(&x[0], &x[1], &x[2])?])).unwrap();
    let grads = grad(|x: &[Array]| ck.call(x), [0, 1, 2])(&inputs(&g, &["a", "b", "c"])).unwrap();
    assert_all(
        &grads,
        &g["grads"]["checkpoint_matmul_chain"]["grads"],
        "checkpoint grads",
    );
}

#[test]
fn custom_vjp_gives_python_gradients() {
    let g = golden();
    let f = custom_vjp(
        |x: &[Array]| Ok(vec![ops::sin(&x[0])? * &x[1]]),
        |primals: &[Array], cot: &[Array], _outputs: &[Array]| {
            Ok(vec![
                &cot[0] * 2.0 * &primals[0],
                &cot[0] * ops::cos(&primals[1])?,
            ])
        },
    )
    .unwrap();
    let loss = |x: &[Array]| {
        let y = &f.call(x)?[0];
        Ok(vec![sum(&(y * y))?])
    };
    let grads = grad(loss, [0, 1])(&inputs(&g, &["x34", "y34"])).unwrap();
    assert_all(
        &grads,
        &g["grads"]["custom_vjp"]["grads"],
        "custom_vjp grads",
    );
}

#[test]
fn custom_jvp_and_vmap_rules_match_python() {
    let g = golden();
    let h = transforms::custom_function(|x: &[Array]| Ok(vec![ops::exp(&x[0])? * 2.0]))
        .unwrap()
        .jvp(|primals: &[Array], tangents: &[Array], argnums: &[i32]| {
            assert_eq!(argnums, &[0]);
            Ok(vec![&tangents[0] * 3.0 * &primals[0]])
        })
        .unwrap()
        .vmap(|inputs: &[Array], axes: &[Option<i32>]| {
            Ok((vec![ops::exp(&inputs[0])? * 5.0], vec![axes[0]]))
        })
        .unwrap();
    let (_, t) = jvp(
        |x: &[Array]| h.call(x),
        &inputs(&g, &["x34"]),
        &inputs(&g, &["t34a"]),
    )
    .unwrap();
    assert_all(&t, &g["grads"]["custom_jvp"]["jvps"], "custom jvp");
    let v = vmap(|x: &[Array]| h.call(x), 1, 0)(&inputs(&g, &["x34"])).unwrap();
    assert_close(&v[0], &g["grads"]["custom_vmap"], "custom vmap");
}

#[test]
fn vjp_matches_python() {
    let g = golden();
    let e = &g["vjp_jvp"]["vjp_two_outputs"];
    let f = |x: &[Array]| {
        Ok(vec![
            ops::sin(&x[0])? * ops::exp(&x[1])?,
            ops::matmul(&x[0], &x[1].t()?)?,
        ])
    };
    let cot = [input(&g, "ct34"), ops::ones(&[3, 3], None).unwrap()];
    let (outs, vjps) = vjp(f, &inputs(&g, &["x34", "y34"]), &cot).unwrap();
    assert_all(&outs, &e["outputs"], "vjp outputs");
    assert_all(&vjps, &e["vjps"], "vjp cotangents");

    let e = &g["vjp_jvp"]["vjp_softmax"];
    let f = |x: &[Array]| Ok(vec![ops::softmax(&x[0], -1, false)?]);
    let (outs, vjps) = vjp(f, &inputs(&g, &["x34"]), &inputs(&g, &["ct34"])).unwrap();
    assert_all(&outs, &e["outputs"], "vjp softmax outputs");
    assert_all(&vjps, &e["vjps"], "vjp softmax cotangents");
}

#[test]
fn jvp_matches_python() {
    let g = golden();
    let e = &g["vjp_jvp"]["jvp_two_inputs"];
    let f = |x: &[Array]| {
        Ok(vec![
            ops::sin(&x[0])? * ops::exp(&x[1])?,
            (&x[0] * &x[1]).sum(0, false)?,
        ])
    };
    let (outs, jvps) = jvp(
        f,
        &inputs(&g, &["x34", "y34"]),
        &inputs(&g, &["t34a", "t34b"]),
    )
    .unwrap();
    assert_all(&outs, &e["outputs"], "jvp outputs");
    assert_all(&jvps, &e["jvps"], "jvp tangents");

    let e = &g["vjp_jvp"]["jvp_logsumexp"];
    let f = |x: &[Array]| Ok(vec![x[0].logsumexp(1, false)?]);
    let (outs, jvps) = jvp(f, &inputs(&g, &["x34"]), &inputs(&g, &["t34a"])).unwrap();
    assert_all(&outs, &e["outputs"], "jvp logsumexp outputs");
    assert_all(&jvps, &e["jvps"], "jvp logsumexp tangents");
}

#[test]
fn vmap_matches_python() {
    let g = golden();
    let e = &g["vmap"];
    let matvec = |x: &[Array]| Ok(vec![ops::matmul(&x[0], &x[1])?]);
    let r = vmap(matvec, [None, Some(0)], 0)(&inputs(&g, &["m", "batch"])).unwrap();
    assert_close(&r[0], &e["matvec_none_0"], "vmap in_axes (None, 0)");

    let sm = |x: &[Array]| Ok(vec![ops::softmax(&(&x[0] * 2.0), 0, false)?]);
    let r = vmap(sm, 1, 1)(&inputs(&g, &["batch_t"])).unwrap();
    assert_close(&r[0], &e["softmax_in1_out1"], "vmap in 1 out 1");

    let two = |x: &[Array]| Ok(vec![sum(&(&x[0] * &x[0]))?, &x[0] + 1.0]);
    let r = vmap(two, -1, [0, -1])(&inputs(&g, &["batch_t"])).unwrap();
    assert_all(&r, &e["two_outputs_negative_axes"], "vmap negative axes");
}

#[test]
fn vmap_and_grad_compose_as_in_python() {
    let g = golden();
    let e = &g["vmap"];
    let per_example = grad(
        |v: &[Array]| Ok(vec![sum(&(ops::sin(&v[0])? * &v[0]))?]),
        None,
    );
    let r = vmap(&per_example, 0, 0)(&inputs(&g, &["batch"])).unwrap();
    assert_close(&r[0], &e["per_example_grad"], "vmap(grad)");

    let batch = input(&g, "batch");
    let outer = |m: &[Array]| {
        let inner = |v: &[Array]| Ok(vec![ops::matmul(&m[0], &v[0])?]);
        let out = vmap(inner, 0, 0)(std::slice::from_ref(&batch))?;
        Ok(vec![sum(&out[0])?])
    };
    let r = grad(outer, None)(&inputs(&g, &["m"])).unwrap();
    assert_close(&r[0], &e["grad_of_vmap"], "grad(vmap)");
}

#[test]
fn stop_gradient_is_reexported_with_transforms() {
    let x = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let f = |v: &[Array]| Ok(vec![sum(&(&v[0] * transforms::stop_gradient(&v[0])?))?]);
    // d/dx (x * sg(x)) = sg(x) = x, not 2x.
    let gr = grad(f, None)(std::slice::from_ref(&x)).unwrap();
    assert_eq!(gr[0].to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
}
