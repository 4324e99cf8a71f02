//! `compile`: trace counts, retracing rules, cache keys, threads, and composition with
//! other transforms. Process-wide switches (disable_compile, MLX_DISABLE_COMPILE) are tested
//! in `compile_mode.rs`, memory release in `compile_memory.rs`, so they cannot disturb these.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mlx_rs::compile::{compile, Compiled, CompiledFn};
use mlx_rs::transforms::{grad, vmap};
use mlx_rs::{ops, Array, Result};

fn vec_f32(values: &[f32]) -> Array {
    Array::from_slice(values, &[values.len() as i32]).unwrap()
}

/// The uncompiled reference: a few element-wise ops MLX fuses into one kernel.
fn gelu_ish(x: &[Array]) -> Result<Vec<Array>> {
    let x = &x[0];
    Ok(vec![x * ops::sigmoid(&(x * 1.702))? + ops::tanh(x)? * 0.5])
}

fn close(a: &Array, b: &Array) {
    let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() <= 1e-6 + 1e-5 * y.abs(), "{a:?} vs {b:?}");
    }
}

#[test]
fn same_shapes_trace_once_and_replay() {
    let runs = AtomicUsize::new(0);
    let f = compile(
        |x: &[Array]| {
            runs.fetch_add(1, Ordering::SeqCst);
            gelu_ish(x)
        },
        None,
    );
    for i in 0..5 {
        let x = vec_f32(&[i as f32, -1.0, 2.5]);
        let out = f.call(std::slice::from_ref(&x)).unwrap();
        close(&out[0], &gelu_ish(&[x]).unwrap()[0]);
    }
    assert_eq!(f.calls(), 5);
    assert_eq!(f.traces(), 1, "same signature must trace once");
    // Independent of our counter: the Rust function itself ran once. A "compiled" function
    // that silently ran uncompiled would have run it 5 times.
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_new_shape_or_dtype_retraces_and_old_entries_stay() {
    let f = compile(gelu_ish, None);
    f.call(&[vec_f32(&[1.0, 2.0])]).unwrap();
    assert_eq!(f.traces(), 1);
    f.call(&[vec_f32(&[1.0, 2.0, 3.0])]).unwrap();
    assert_eq!(f.traces(), 2, "new shape retraces");
    f.call(&[vec_f32(&[5.0, 6.0])]).unwrap();
    f.call(&[vec_f32(&[5.0, 6.0, 7.0])]).unwrap();
    assert_eq!(f.traces(), 2, "both signatures stay cached");
    let x16 = vec_f32(&[1.0, 2.0]).astype(mlx_rs::Dtype::Float16).unwrap();
    f.call(&[x16]).unwrap();
    assert_eq!(f.traces(), 3, "new dtype retraces");
    assert_eq!(f.calls(), 5);
}

#[test]
fn shapeless_traces_once_across_shapes() {
    let f = compile(gelu_ish, true);
    assert!(f.shapeless());
    for n in [2, 3, 7, 1] {
        let x = ops::arange_to(n as f32).unwrap();
        let out = f.call(std::slice::from_ref(&x)).unwrap();
        close(&out[0], &gelu_ish(&[x]).unwrap()[0]);
    }
    assert_eq!((f.traces(), f.calls()), (1, 4));
    // A new rank is a new signature even when shapeless.
    f.call(&[ops::ones(&[2, 2], None).unwrap()]).unwrap();
    assert_eq!(f.traces(), 2);
}

#[test]
fn constants_are_part_of_the_cache_key() {
    let f = compile(gelu_ish, None);
    let x = vec_f32(&[1.0, 2.0]);
    f.call_with_constants(std::slice::from_ref(&x), &[1, 2])
        .unwrap();
    f.call_with_constants(std::slice::from_ref(&x), &[1, 2])
        .unwrap();
    assert_eq!(f.traces(), 1);
    f.call_with_constants(std::slice::from_ref(&x), &[1, 3])
        .unwrap();
    assert_eq!(f.traces(), 2);
    f.call(std::slice::from_ref(&x)).unwrap();
    assert_eq!(f.traces(), 3, "no constants is its own key");
}

#[test]
fn clear_cache_erases_the_entries() {
    let f = compile(gelu_ish, None);
    let x = vec_f32(&[1.0, 2.0]);
    f.call(std::slice::from_ref(&x)).unwrap();
    f.call(std::slice::from_ref(&x)).unwrap();
    assert_eq!(f.traces(), 1);
    f.clear_cache();
    f.call(std::slice::from_ref(&x)).unwrap();
    assert_eq!(f.traces(), 2, "erased entries force a retrace");
}

#[test]
fn engine_with_per_call_functions_keys_by_constants() {
    // What tree-aware compile does: the function passed per call closes over per-call
    // structure; the constants say which structure it is.
    let engine = CompiledFn::new(false);
    let x = vec_f32(&[1.0, 2.0]);
    for scale in [2.0f32, 2.0, 3.0, 3.0, 2.0] {
        let key = [scale.to_bits() as u64];
        let f = move |a: &[Array]| Ok(vec![&a[0] * scale]);
        let out = engine
            .call_with(std::slice::from_ref(&x), &key, &f)
            .unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![scale, 2.0 * scale]);
    }
    assert_eq!((engine.traces(), engine.calls()), (2, 5));
}

#[test]
fn outputs_match_the_uncompiled_function_for_several_outputs() {
    let f = |x: &[Array]| {
        let s = (&x[0] * &x[1]).sum(None, false)?;
        Ok(vec![&x[0] + &x[1], s, ops::exp(&x[0])?])
    };
    let cf = compile(f, None);
    let a = vec_f32(&[0.5, 1.5, -2.0]);
    let b = vec_f32(&[3.0, -1.0, 0.25]);
    let got = cf.call(&[a.clone(), b.clone()]).unwrap();
    let want = f(&[a, b]).unwrap();
    assert_eq!(got.len(), 3);
    for (g, w) in got.iter().zip(&want) {
        close(g, w);
    }
}

#[test]
fn grad_and_vmap_trace_through_a_compiled_function() {
    let cf = compile(gelu_ish, None);
    let x = vec_f32(&[0.5, -1.0, 2.0]);
    let loss = |x: &[Array]| Ok(vec![cf.call(x)?[0].sum(None, false)?]);
    let reference = |x: &[Array]| Ok(vec![gelu_ish(x)?[0].sum(None, false)?]);
    let g = grad(loss, None)(std::slice::from_ref(&x)).unwrap();
    let want = grad(reference, None)(std::slice::from_ref(&x)).unwrap();
    close(&g[0], &want[0]);
    // Under grad the inputs are tracers: MLX runs the function (documented).
    assert_eq!(cf.traces(), 1);
    let batch = ops::ones(&[4, 3], None).unwrap();
    let v = vmap(|x: &[Array]| cf.call(x), 0, 0)(std::slice::from_ref(&batch)).unwrap();
    close(&v[0], &gelu_ish(&[batch]).unwrap()[0]);
    assert_eq!(cf.traces(), 2);
}

#[test]
fn a_compiled_function_can_be_compiled_again() {
    let inner = compile(gelu_ish, None);
    let outer = compile(|x: &[Array]| inner.call(&[&x[0] * 2.0]), None);
    let x = vec_f32(&[1.0, 2.0]);
    for _ in 0..3 {
        let out = outer.call(std::slice::from_ref(&x)).unwrap();
        close(&out[0], &gelu_ish(&[&x * 2.0]).unwrap()[0]);
    }
    assert_eq!(outer.traces(), 1);
    assert_eq!(
        inner.traces(),
        1,
        "the inner function runs only inside the outer trace"
    );
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn compiled_is_send_and_sync_when_the_function_is() {
    assert_send_sync::<Compiled<fn(&[Array]) -> Result<Vec<Array>>>>();
    assert_send_sync::<CompiledFn>();
}

#[test]
fn each_thread_traces_once_into_its_own_cache() {
    let f = Arc::new(compile(gelu_ish, None));
    let x = [1.0f32, 2.0, 3.0];
    f.call(&[vec_f32(&x)]).unwrap();
    f.call(&[vec_f32(&x)]).unwrap();
    assert_eq!(f.traces(), 1);
    let g = f.clone();
    std::thread::spawn(move || {
        // MLX 0.32 caches per thread: the first call here traces again, later ones replay.
        for _ in 0..3 {
            g.call(&[vec_f32(&x)]).unwrap()[0].eval().unwrap();
        }
        assert_eq!(g.traces(), 2);
    })
    .join()
    .unwrap();
    f.call(&[vec_f32(&x)]).unwrap();
    assert_eq!(
        (f.traces(), f.calls()),
        (2, 6),
        "this thread's entry is still there"
    );
}

#[test]
fn concurrent_calls_from_several_threads_agree() {
    let f = Arc::new(compile(gelu_ish, None));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let f = f.clone();
            std::thread::spawn(move || {
                for i in 0..10 {
                    let x = vec_f32(&[t as f32, i as f32, -1.0]);
                    let got = f.call(std::slice::from_ref(&x)).unwrap();
                    close(&got[0], &gelu_ish(&[x]).unwrap()[0]);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(f.calls(), 40);
    assert_eq!(f.traces(), 4, "one trace per thread");
}

#[test]
fn dropping_on_another_thread_than_the_caller_is_fine() {
    let f = compile(gelu_ish, None);
    f.call(&[vec_f32(&[1.0])]).unwrap();
    std::thread::spawn(move || drop(f)).join().unwrap();
}
