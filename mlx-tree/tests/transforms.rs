//! Tree-aware transforms: compile (plain and with `&mut` state), value_and_grad, vmap, and
//! weights IO by path.

mod common;

use std::cell::Cell;
use std::collections::HashMap;

use common::{err, register_foreign};
use foreign_cache::{KvCache as ForeignKv, SsmState};
use mlx_rs::ops;
use mlx_tree::{
    assign_weights, compile, compile_mut, grad, load_weights, save_weights, tree_map,
    value_and_grad, vmap, Array, CompileStats, LoadWeightsOptions, Registered, Result, TreeAxes,
    TreeNode, Value,
};

fn arange(n: i32, scale: f32, shape: &[i32]) -> Array {
    (ops::arange_to(n as f32).unwrap() * scale)
        .reshape(shape)
        .unwrap()
}

fn vals(a: &Array) -> Vec<f32> {
    a.to_vec::<f32>().unwrap()
}

fn assert_close(a: &Array, b: &Array, what: &str) {
    assert_eq!(a.shape(), b.shape(), "{what}: shapes");
    for (i, (x, y)) in vals(a).iter().zip(vals(b)).enumerate() {
        assert!(
            (x - y).abs() <= 1e-5 + 1e-5 * y.abs(),
            "{what}[{i}]: {x} vs {y}"
        );
    }
}

fn stats(calls: u64, traces: u64, cache_hits: u64, signatures: usize) -> CompileStats {
    CompileStats {
        calls,
        traces,
        cache_hits,
        signatures,
        retraces: None,
    }
}

// ---- KV cache: a derived struct with an array-valued position through a decode step ----

const T: i32 = 8; // cache capacity
const D: i32 = 4;

#[derive(TreeNode, Clone)]
struct KvCache {
    keys: Array,   // [T, D]
    values: Array, // [T, D]
    pos: Array,    // int32 scalar: the next slot
}

/// One decode step: write k/v of `x` at `pos`, attend over the filled slots, advance `pos`.
fn decode_step(cache: &mut KvCache, x: &Array) -> Result<Array> {
    let slots = ops::arange_to(T)?;
    let here = ops::equal(&slots, &cache.pos)?.reshape(&[T, 1])?;
    let k = ops::tanh(x)?;
    let v = x * 2.0 - 1.0;
    cache.keys = ops::where_(&here, &k, &cache.keys)?;
    cache.values = ops::where_(&here, &v, &cache.values)?;
    cache.pos = &cache.pos + 1;
    let filled = ops::less(&slots, &cache.pos)?;
    let scores = ops::matmul(&cache.keys, x)?; // [T]
    let scores = ops::where_(&filled, &scores, f32::NEG_INFINITY)?;
    let attn = ops::softmax(&scores, -1, false)?;
    ops::matmul(&attn, &cache.values)
}

#[test]
fn kv_cache_decode_step_compiled_equals_eager_for_20_steps_without_retrace() {
    let empty = KvCache {
        keys: ops::zeros(&[T, D], None).unwrap(),
        values: ops::zeros(&[T, D], None).unwrap(),
        pos: Array::from_scalar(0i32),
    };
    // Wraps around the capacity: 20 steps on 8 slots keeps the shapes fixed.
    let step = compile_mut(
        |c: &mut KvCache, x: &Array| {
            let out = decode_step(c, x)?;
            c.pos = ops::remainder(&c.pos, T)?;
            Ok(out)
        },
        None,
    );
    let (mut compiled, mut eager) = (empty.clone(), empty);
    for i in 0..20 {
        let x = arange(D, 0.1, &[D]) * (i as f32 * 0.3 - 1.0);
        let out_c = step.call(&mut compiled, &x).unwrap();
        let out_e = decode_step(&mut eager, &x).unwrap();
        eager.pos = ops::remainder(&eager.pos, T).unwrap();
        assert_close(&out_c, &out_e, &format!("step {i} output"));
        assert_close(&compiled.keys, &eager.keys, &format!("step {i} keys"));
        assert_close(&compiled.values, &eager.values, &format!("step {i} values"));
        assert_eq!(compiled.pos.item::<i32>().unwrap(), (i + 1) % T);
    }
    assert_eq!(step.stats(), stats(20, 1, 19, 1));
}

// ---- the compiled path is really taken ----

#[test]
fn compiled_function_replays_its_trace_instead_of_running_rust() {
    let runs = Cell::new(0);
    // A Rust-side constant read at trace time: a replay must keep using the traced value,
    // which an uncompiled function would not.
    let scale = Cell::new(2.0f32);
    let f = compile(
        |(a, b): &(Array, Vec<Array>)| {
            runs.set(runs.get() + 1);
            Ok(a * scale.get() + &b[0])
        },
        None,
    );
    let input = (arange(3, 1.0, &[3]), vec![Array::from_scalar(1.0f32)]);
    assert_eq!(vals(&f.call(&input).unwrap()), vec![1.0, 3.0, 5.0]);
    scale.set(100.0);
    for _ in 0..4 {
        assert_eq!(vals(&f.call(&input).unwrap()), vec![1.0, 3.0, 5.0]);
    }
    assert_eq!(runs.get(), 1);
    assert_eq!(f.stats(), stats(5, 1, 4, 1));
    // Other values, same signature: still the replayed graph, computing on the new leaves.
    let other = (arange(3, -1.0, &[3]), vec![Array::from_scalar(0.5f32)]);
    assert_eq!(vals(&f.call(&other).unwrap()), vec![0.5, -1.5, -3.5]);
    assert_eq!(runs.get(), 1);
}

// ---- retrace on structure change ----

#[derive(TreeNode, Clone)]
struct Net {
    layers: Vec<Array>,
    bias: Option<Array>,
    #[tree(static)]
    scale: i32,
}

fn net_eager(n: &Net) -> Result<Array> {
    let mut acc = Array::from_scalar(0.0f32);
    for l in &n.layers {
        acc = acc + l;
    }
    acc = acc * n.scale as f32;
    Ok(match &n.bias {
        Some(b) => acc + b,
        None => acc,
    })
}

#[test]
fn structure_changes_retrace_and_give_correct_results() {
    let f = compile(net_eager, None);
    let base = Net {
        layers: vec![arange(2, 1.0, &[2]), arange(2, 2.0, &[2])],
        bias: Some(Array::from_slice(&[10.0f32, 20.0], &[2]).unwrap()),
        scale: 3,
    };
    let check = |n: &Net, expected: CompileStats, what: &str| {
        assert_close(&f.call(n).unwrap(), &net_eager(n).unwrap(), what);
        assert_eq!(f.stats(), expected, "{what}");
    };
    check(&base, stats(1, 1, 0, 1), "base");
    check(&base, stats(2, 1, 1, 1), "base again");
    let mut grown = base.clone();
    grown.layers.push(arange(2, 5.0, &[2]));
    check(&grown, stats(3, 2, 1, 2), "Vec grew");
    let mut no_bias = base.clone();
    no_bias.bias = None;
    check(&no_bias, stats(4, 3, 1, 3), "Some -> None");
    let mut rescaled = base.clone();
    rescaled.scale = 5;
    check(&rescaled, stats(5, 4, 1, 4), "static field changed");
    check(&base, stats(6, 4, 2, 4), "back to base: cached");
    // A shape change is a new signature too (not shapeless) ...
    let mut wide = base.clone();
    wide.layers = vec![arange(3, 1.0, &[3]), arange(3, 1.0, &[3])];
    wide.bias = Some(arange(3, 1.0, &[3]));
    check(&wide, stats(7, 5, 2, 5), "shape changed");
    // ... but not when shapeless.
    let g = compile(net_eager, true);
    assert_close(
        &g.call(&base).unwrap(),
        &net_eager(&base).unwrap(),
        "shapeless",
    );
    assert_close(
        &g.call(&wide).unwrap(),
        &net_eager(&wide).unwrap(),
        "shapeless wide",
    );
    assert_eq!(g.stats(), stats(2, 1, 1, 1));
}

/// A compiled call checks its arguments against the previous call's structure instead of
/// building a new one: every way two structures can differ with the same leaves in the same
/// order must still be a new signature (and the right result), and going back must hit.
#[test]
fn each_structure_difference_from_the_previous_call_is_a_new_signature() {
    let sum = |v: &Value| -> Result<Array> {
        let leaves = mlx_tree::tree_leaves(v);
        let mut acc = Array::from_scalar(0.0f32);
        for (i, l) in leaves.into_iter().enumerate() {
            acc = acc + l * (i + 1) as f32;
        }
        Ok(acc)
    };
    let f = compile(sum, None);
    let a = || Array::from_scalar(1.0f32);
    let b = || Array::from_scalar(10.0f32);
    let dict = |k1: &str, k2: &str| Value::dict([(k1, Value::Array(a())), (k2, Value::Array(b()))]);
    let variants = [
        ("dict", dict("x", "y")),
        ("same count, other key", dict("x", "z")),
        ("same keys, other order", dict("y", "x")),
        (
            "list",
            Value::List(vec![Value::Array(a()), Value::Array(b())]),
        ),
        (
            "tuple",
            Value::Tuple(vec![Value::Array(a()), Value::Array(b())]),
        ),
        (
            "longer: the previous one is a prefix",
            Value::Tuple(vec![Value::Array(a()), Value::Array(b()), Value::None]),
        ),
        (
            "shorter: a prefix of the previous one",
            Value::Tuple(vec![Value::Array(a())]),
        ),
        (
            "nested",
            Value::Tuple(vec![
                Value::Tuple(vec![Value::Array(a())]),
                Value::Array(b()),
            ]),
        ),
        (
            "flat again",
            Value::Tuple(vec![Value::Array(a()), Value::Array(b())]),
        ),
    ];
    let distinct = variants.len() - 1; // "flat again" repeats "tuple"
    for (i, (what, v)) in variants.iter().enumerate() {
        let got = f.call(v).unwrap().item::<f32>().unwrap();
        assert_eq!(got, sum(v).unwrap().item::<f32>().unwrap(), "{what}");
        let st = f.stats();
        assert_eq!(st.calls, i as u64 + 1, "{what}");
        assert_eq!(st.traces, (i.min(distinct - 1) + 1) as u64, "{what}");
    }
    // Each one again, in reverse order: all cached.
    for (what, v) in variants.iter().rev() {
        assert_eq!(
            f.call(v).unwrap().item::<f32>().unwrap(),
            sum(v).unwrap().item::<f32>().unwrap(),
            "{what} again"
        );
    }
    let st = f.stats();
    assert_eq!(
        (st.traces, st.signatures),
        (distinct as u64, distinct),
        "{st:?}"
    );
}

#[test]
fn output_structure_follows_the_input_structure() {
    // The output's structure depends on the input's (one output per layer): each signature
    // keeps its own output structure, also on cache hits.
    let f = compile(
        |n: &Net| Ok(n.layers.iter().map(|l| l * 2.0).collect::<Vec<_>>()),
        None,
    );
    let two = Net {
        layers: vec![arange(2, 1.0, &[2]); 2],
        bias: None,
        scale: 1,
    };
    let mut three = two.clone();
    three.layers.push(arange(2, 1.0, &[2]));
    for _ in 0..2 {
        assert_eq!(f.call(&two).unwrap().len(), 2);
        assert_eq!(f.call(&three).unwrap().len(), 3);
    }
    assert_eq!(f.stats(), stats(4, 2, 2, 2));
}

#[test]
fn errors_inside_the_traced_function_are_errors_and_the_next_call_works() {
    let f = compile(
        |x: &Vec<Array>| {
            if x.len() > 1 {
                return Err(mlx_tree::Error::InvalidArgument("too long".into()));
            }
            Ok(&x[0] + 1.0)
        },
        None,
    );
    let e = err(f.call(&vec![Array::from_scalar(1.0f32); 2]));
    assert!(e.contains("too long"), "{e}");
    let e = err(f.call(&vec![
        Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap(),
        Array::from_scalar(1.0f32),
    ]));
    assert!(e.contains("too long"), "{e}");
    assert_eq!(
        f.call(&vec![Array::from_scalar(1.0f32)])
            .unwrap()
            .item::<f32>()
            .unwrap(),
        2.0
    );
}

#[test]
fn a_panic_in_a_compiled_step_is_an_error_and_leaves_the_state_unchanged() {
    let step = compile_mut(
        |s: &mut Vec<Array>, x: &Array| {
            s[0] = &s[0] + x;
            if x.ndim() > 0 {
                panic!("boom in the step");
            }
            Ok(s[0].clone())
        },
        None,
    );
    let mut state = vec![Array::from_scalar(1.0f32)];
    let e = err(step.call(&mut state, &arange(2, 1.0, &[2])));
    assert!(e.contains("boom in the step"), "{e}");
    assert_eq!(state[0].item::<f32>().unwrap(), 1.0);
    let out = step.call(&mut state, &Array::from_scalar(2.0f32)).unwrap();
    assert_eq!(out.item::<f32>().unwrap(), 3.0);
    assert_eq!(state[0].item::<f32>().unwrap(), 3.0);
}

// ---- SSM state mutated in place ----

#[derive(TreeNode, Clone)]
struct SsmCache {
    layers: Vec<Array>, // per-layer recurrent state [D]
    conv: Vec<Registered<SsmState>>,
    #[tree(static)]
    decay: f32,
}

fn ssm_step(s: &mut SsmCache, x: &Array) -> Result<Array> {
    let mut h = x.clone();
    for (state, conv) in s.layers.iter_mut().zip(s.conv.iter_mut()) {
        conv.conv = &conv.conv * 0.5 + &h;
        conv.ssm = ops::tanh(&(&conv.ssm + &conv.conv))?;
        *state = &*state * s.decay + ops::tanh(&h)? + &conv.ssm;
        h = ops::sigmoid(&*state)? * &h;
    }
    Ok(h)
}

#[test]
fn ssm_state_mutated_in_place_by_a_compiled_step_equals_the_eager_loop() {
    register_foreign();
    let layer = |i: i32| SsmState {
        conv: arange(D, 0.01 * i as f32, &[D]),
        ssm: ops::zeros(&[D], None).unwrap(),
    };
    let start = SsmCache {
        layers: vec![ops::zeros(&[D], None).unwrap(); 3],
        conv: (0..3).map(|i| Registered::new(layer(i)).unwrap()).collect(),
        decay: 0.9,
    };
    let step = compile_mut(ssm_step, None);
    let (mut compiled, mut eager) = (start.clone(), start);
    let mut previous = vals(&compiled.layers[2]);
    for i in 0..10 {
        let x = arange(D, 0.2, &[D]) - i as f32 * 0.1;
        let out_c = step.call(&mut compiled, &x).unwrap();
        let out_e = ssm_step(&mut eager, &x).unwrap();
        assert_close(&out_c, &out_e, &format!("step {i} output"));
        for l in 0..3 {
            assert_close(
                &compiled.layers[l],
                &eager.layers[l],
                &format!("step {i} layer {l}"),
            );
            assert_close(&compiled.conv[l].conv, &eager.conv[l].conv, "conv");
            assert_close(&compiled.conv[l].ssm, &eager.conv[l].ssm, "ssm");
        }
        let now = vals(&compiled.layers[2]);
        assert_ne!(now, previous, "step {i}: the state did not change");
        previous = now;
    }
    assert_eq!(step.stats(), stats(10, 1, 9, 1));
}

#[test]
fn model_and_optimizer_state_both_mutable_in_one_compiled_training_step() {
    #[derive(TreeNode, Clone)]
    struct Model {
        w: Array,
    }
    #[derive(TreeNode, Clone)]
    struct Momentum {
        v: Array,
        #[tree(static)]
        lr: f32,
    }
    let loss = |m: &Model, (x, y): &(Array, Array)| {
        let d = ops::matmul(x, &m.w)? - y;
        (&d * &d).mean(None, false)
    };
    let train_step = |(m, opt): &mut (Model, Momentum), batch: &(Array, Array)| {
        let (l, g) = value_and_grad(loss)(m, batch)?;
        opt.v = &opt.v * 0.9 + &g.w;
        m.w = &m.w - &opt.v * opt.lr;
        Ok(l)
    };
    let batch = (arange(6, 0.1, &[3, 2]), arange(3, 1.0, &[3, 1]));
    let start = (
        Model {
            w: ops::zeros(&[2, 1], None).unwrap(),
        },
        Momentum {
            v: ops::zeros(&[2, 1], None).unwrap(),
            lr: 0.1,
        },
    );
    let step = compile_mut(train_step, None);
    let (mut compiled, mut eager) = (start.clone(), start);
    for i in 0..5 {
        let lc = step.call(&mut compiled, &batch).unwrap();
        let le = train_step(&mut eager, &batch).unwrap();
        assert_close(&lc, &le, &format!("loss {i}"));
        assert_close(&compiled.0.w, &eager.0.w, "w");
        assert_close(&compiled.1.v, &eager.1.v, "v");
    }
    assert_eq!(step.stats(), stats(5, 1, 4, 1));
}

// ---- a foreign type, registered at runtime, in compile / tree_map / value_and_grad ----

#[test]
fn registered_foreign_cache_in_compile_tree_map_and_value_and_grad() {
    register_foreign();
    let cache = Registered::new(ForeignKv::from_parts(
        vec![arange(4, 1.0, &[4]), arange(4, 0.5, &[4])],
        vec![arange(4, -1.0, &[4]), arange(4, 2.0, &[4])],
        7,
    ))
    .unwrap();
    let score = |c: &Registered<ForeignKv>| -> Result<Array> {
        let mut acc = Array::from_scalar(0.0f32);
        for (k, v) in c.keys().iter().zip(c.values()) {
            acc = acc + (k * v).sum(None, false)? * c.offset() as f32;
        }
        Ok(acc)
    };

    // compile
    let f = compile(score, None);
    for _ in 0..3 {
        assert_close(
            &f.call(&cache).unwrap(),
            &score(&cache).unwrap(),
            "compiled",
        );
    }
    assert_eq!(f.stats(), stats(3, 1, 2, 1));
    // The static offset is part of the key.
    let moved = Registered::new(ForeignKv::from_parts(
        cache.keys().to_vec(),
        cache.values().to_vec(),
        8,
    ))
    .unwrap();
    assert_close(
        &f.call(&moved).unwrap(),
        &score(&moved).unwrap(),
        "offset 8",
    );
    assert_eq!(f.stats().traces, 2);

    // tree_map
    let doubled = tree_map(|x| Ok(x * 2.0), &cache).unwrap();
    assert_eq!(doubled.offset(), 7);
    assert_eq!(
        vals(&doubled.values()[1]),
        vals(&(&cache.values()[1] * 2.0))
    );

    // value_and_grad: d/dk sum(k*v)*offset = v*offset, as the same registered type.
    let loss = |c: &Registered<ForeignKv>, _: &()| score(c);
    let (value, g) = value_and_grad(loss)(&cache, &()).unwrap();
    assert_close(&value, &score(&cache).unwrap(), "value");
    assert_eq!(g.offset(), 7);
    for l in 0..2 {
        assert_close(&g.keys()[l], &(&cache.values()[l] * 7.0), "dk");
        assert_close(&g.values()[l], &(&cache.keys()[l] * 7.0), "dv");
    }
}

#[test]
fn registered_cache_with_static_offset_as_compiled_state_is_rebuilt_when_it_changes() {
    register_foreign();
    // The step advances a static offset: the state's structure changes, so the state is
    // rebuilt from the new structure and every call is a new signature.
    let step = compile_mut(
        |c: &mut Registered<ForeignKv>, x: &Array| {
            let keys = c.keys().iter().map(|k| k + x).collect();
            let values = c.values().iter().map(|v| v * x).collect();
            c.update(keys, values);
            c.keys()[0].sum(None, false)
        },
        None,
    );
    let mut cache = Registered::new(ForeignKv::from_parts(
        vec![arange(2, 1.0, &[2])],
        vec![Array::from_slice(&[1.0f32, 1.0], &[2]).unwrap()],
        0,
    ))
    .unwrap();
    let x = Array::from_scalar(2.0f32);
    for i in 1..=3 {
        let s = step.call(&mut cache, &x).unwrap();
        assert_eq!(cache.offset(), i);
        assert_eq!(
            vals(&cache.keys()[0]),
            vec![2.0 * i as f32, 1.0 + 2.0 * i as f32]
        );
        assert_eq!(s.item::<f32>().unwrap(), 1.0 + 4.0 * i as f32);
    }
    assert_eq!(step.stats().traces, 3);
}

// ---- value_and_grad / grad details ----

#[test]
fn grad_returns_the_parameter_type_with_static_data_and_aux_outputs() {
    #[derive(TreeNode, Clone)]
    struct Lin {
        w: Array,
        b: Option<Array>,
        #[tree(static)]
        name: String,
    }
    let p = Lin {
        w: arange(4, 0.5, &[2, 2]),
        b: Some(Array::from_slice(&[1.0f32, -1.0], &[2]).unwrap()),
        name: "proj".into(),
    };
    let x = Array::from_slice(&[1.0f32, 2.0], &[1, 2]).unwrap();
    let f = |p: &Lin, x: &Array| {
        let y = ops::matmul(x, &p.w)? + p.b.as_ref().unwrap();
        Ok((y.sum(None, false)?, vec![y]))
    };
    let ((loss, aux), g) = value_and_grad(f)(&p, &x).unwrap();
    // y = x @ w + b; d sum(y)/dw[i][j] = x[i]; d/db = 1.
    assert_eq!(vals(&g.w), vec![1.0, 1.0, 2.0, 2.0]);
    assert_eq!(vals(g.b.as_ref().unwrap()), vec![1.0, 1.0]);
    assert_eq!(g.name, "proj");
    assert_eq!(aux.len(), 1);
    assert_eq!(
        loss.item::<f32>().unwrap(),
        vals(&aux[0]).iter().sum::<f32>()
    );
    let g2 = grad(f)(&p, &x).unwrap();
    assert_eq!(vals(&g2.w), vals(&g.w));

    let e = err(value_and_grad(|_: &(), x: &Array| x.sum(None, false))(
        &(),
        &x,
    ));
    assert!(e.contains("no array leaves"), "{e}");
    let e = err(value_and_grad(|p: &Lin, _: &()| Ok(p.w.clone()))(&p, &()));
    assert!(e.to_lowercase().contains("scalar"), "{e}");
}

// ---- vmap ----

#[derive(TreeNode)]
struct Batch {
    x: Array,
    w: Array,
    #[tree(static)]
    offset: f32,
}

#[test]
fn vmap_over_a_tree_with_per_leaf_axes() {
    let b = Batch {
        x: arange(6, 1.0, &[3, 2]),                           // mapped over axis 0
        w: Array::from_slice(&[1.0f32, 10.0], &[2]).unwrap(), // shared
        offset: 0.5,
    };
    let f = |b: &Batch| -> Result<(Array, Array)> {
        let dot = (&b.x * &b.w).sum(None, false)? + b.offset;
        Ok((dot, &b.x * 2.0))
    };
    let v = vmap(
        f,
        TreeAxes::map([("x", 0.into()), ("w", None.into())]),
        TreeAxes::seq([0.into(), 1.into()]),
    );
    let (dots, doubled) = v(&b).unwrap();
    assert_eq!(vals(&dots), vec![10.5, 32.5, 54.5]);
    // Second output: mapped axis moved to position 1.
    assert_eq!(doubled.shape(), &[2, 3]);
    assert_eq!(
        vals(&doubled),
        vals(&(ops::transpose(&b.x, None).unwrap() * 2.0))
    );

    // One axis for everything: both leaves mapped over axis 0.
    let pairs = (arange(6, 1.0, &[3, 2]), arange(6, 0.5, &[3, 2]));
    let dot = vmap(|(a, b): &(Array, Array)| (a * b).sum(None, false), 0, 0);
    let expected = (&pairs.0 * &pairs.1).sum(1, false).unwrap();
    assert_eq!(vals(&dot(&pairs).unwrap()), vals(&expected));

    // A prefix that does not fit the tree is a clear error.
    let bad = vmap(f, TreeAxes::map([("x", 0.into())]), 0);
    let e = err(bad(&b));
    assert!(e.contains("no axes given for key `w`"), "{e}");
    let bad = vmap(f, TreeAxes::seq([0.into(), 0.into()]), 0);
    let e = err(bad(&b));
    assert!(
        e.contains("positional axes given for struct `Batch`"),
        "{e}"
    );
}

// ---- weights IO by path ----

#[derive(TreeNode, Clone)]
struct LayerCache {
    keys: Array,
    values: Array,
}

/// List of per-layer structs: paths layers.0.keys, layers.0.values, ..., offset.
#[derive(TreeNode, Clone)]
struct ListLayout {
    layers: Vec<LayerCache>,
    offset: Array,
}

/// Struct of per-field lists: paths keys.0, keys.1, values.0, values.1, offset.
#[derive(TreeNode, Clone)]
struct FieldLayout {
    keys: Vec<Array>,
    values: Vec<Array>,
    offset: Array,
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-tree-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn weights_load_by_path_between_cache_layouts() {
    let list = ListLayout {
        layers: (0..2)
            .map(|i| LayerCache {
                keys: arange(4, 1.0 + i as f32, &[2, 2]),
                values: arange(4, -1.0 - i as f32, &[2, 2]),
            })
            .collect(),
        offset: Array::from_scalar(5i32),
    };
    assert_eq!(
        common::paths(&list),
        [
            "layers.0.keys",
            "layers.0.values",
            "layers.1.keys",
            "layers.1.values",
            "offset"
        ]
    );
    let zeros = || ops::zeros(&[2, 2], None).unwrap();
    let mut fields = FieldLayout {
        keys: vec![zeros(), zeros()],
        values: vec![zeros(), zeros()],
        offset: Array::from_scalar(0i32),
    };
    assert_eq!(
        common::paths(&fields),
        ["keys.0", "keys.1", "values.0", "values.1", "offset"]
    );
    let file = temp("list_layout.safetensors");
    let meta = HashMap::from([("layout".to_string(), "list".to_string())]);
    save_weights(&file, &list, Some(&meta)).unwrap();

    // Strict: one error naming every key that differs; nothing is changed.
    let e = err(load_weights(
        &mut fields,
        &file,
        LoadWeightsOptions::default(),
    ));
    for key in ["keys.0", "keys.1", "values.0", "values.1"] {
        assert!(e.contains(key), "{key} missing from: {e}");
    }
    for key in [
        "layers.0.keys",
        "layers.0.values",
        "layers.1.keys",
        "layers.1.values",
    ] {
        assert!(e.contains(key), "{key} missing from: {e}");
    }
    assert!(e.contains("missing") && e.contains("unexpected"), "{e}");
    assert!(
        !e.contains("offset"),
        "offset matches and is not a difference: {e}"
    );
    assert_eq!(fields.offset.item::<i32>().unwrap(), 0);

    // Lenient: only the matching path (offset) loads.
    let options = LoadWeightsOptions {
        allow_missing: true,
        allow_unexpected: true,
    };
    let loaded_meta = load_weights(&mut fields, &file, options).unwrap();
    assert_eq!(loaded_meta["layout"], "list");
    assert_eq!(fields.offset.item::<i32>().unwrap(), 5);
    assert_eq!(vals(&fields.keys[0]), vec![0.0; 4]);

    // The same layout round-trips.
    let mut copy = list.clone();
    tree_map_zero(&mut copy);
    load_weights(&mut copy, &file, LoadWeightsOptions::default()).unwrap();
    assert_eq!(all_values(&copy), all_values(&list));

    // Wrong shapes are always an error, with both shapes.
    let mut weights: HashMap<String, Array> = HashMap::new();
    weights.insert("keys.0".into(), ops::zeros(&[3], None).unwrap());
    let e = err(assign_weights(&mut fields, weights, options));
    assert!(e.contains("keys.0: file [3] vs tree [2, 2]"), "{e}");
}

fn all_values<T: TreeNode>(t: &T) -> Vec<f32> {
    mlx_tree::tree_leaves(t)
        .into_iter()
        .flat_map(|a| vals(&a.astype(mlx_rs::Dtype::Float32).unwrap()))
        .collect()
}

fn tree_map_zero<T: TreeNode>(t: &mut T) {
    mlx_tree::tree_map_in_place(|x| ops::zeros_like(x, None), t).unwrap();
}
