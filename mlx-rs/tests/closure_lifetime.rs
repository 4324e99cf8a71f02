//! Every closure payload handed to MLX is freed exactly once, when MLX lets go of it — which
//! can be after the Rust handle that made it is gone. The payload counters are process-wide,
//! so the tests in this binary take turns.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mlx_rs::compile::compile;
use mlx_rs::transforms::{
    checkpoint, closure_stats, custom_function, grad, jvp, value_and_grad, vjp, vmap,
};
use mlx_rs::{ops, Array};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Counts how often the value it is captured in gets dropped.
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counter() -> (DropCounter, Arc<AtomicUsize>) {
    let n = Arc::new(AtomicUsize::new(0));
    (DropCounter(n.clone()), n)
}

fn x() -> Array {
    Array::from_slice(&[0.5f32, 1.5, -2.0], &[3]).unwrap()
}

/// Asserts that all payloads made since `before` are freed, none twice.
fn assert_balanced(before: mlx_rs::transforms::ClosureStats, what: &str) {
    let now = closure_stats();
    let created = now.created - before.created;
    let freed = now.freed - before.freed;
    assert!(created > 0, "{what}: no closure was created");
    assert_eq!(freed, created, "{what}: created {created}, freed {freed}");
}

#[test]
fn one_shot_transforms_free_their_payloads() {
    let _g = serial();
    let before = closure_stats();
    for _ in 0..20 {
        let f = |v: &[Array]| Ok(vec![ops::sin(&v[0])?.sum(None, false)?]);
        grad(f, None)(&[x()]).unwrap();
        value_and_grad(f, None)(&[x()]).unwrap();
        vjp(f, &[x()], &[Array::from(1.0f32)]).unwrap();
        jvp(f, &[x()], &[x()]).unwrap();
        vmap(f, 0, 0)(&[ops::ones(&[2, 3], None).unwrap()]).unwrap();
    }
    assert_balanced(before, "grad/vjp/jvp/vmap");
}

#[test]
fn compiled_function_dropped_after_many_calls() {
    let _g = serial();
    let before = closure_stats();
    let (guard, drops) = counter();
    let f = compile(
        move |v: &[Array]| {
            let _keep = &guard;
            Ok(vec![&v[0] * 2.0])
        },
        None,
    );
    for i in 0..200 {
        let n = 1 + i % 3; // three signatures
        f.call(&[ops::ones(&[n], None).unwrap()]).unwrap()[0]
            .eval()
            .unwrap();
    }
    assert_eq!(f.traces(), 3);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(f);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the function is dropped exactly once"
    );
    assert_balanced(before, "compile");
}

#[test]
fn custom_function_payloads_outlive_the_handle_inside_the_graph() {
    let _g = serial();
    let before = closure_stats();
    let (fwd_guard, fwd_drops) = counter();
    let (vjp_guard, vjp_drops) = counter();
    let f = custom_function(move |v: &[Array]| {
        let _keep = &fwd_guard;
        Ok(vec![ops::sin(&v[0])?])
    })
    .unwrap()
    .vjp(move |_p: &[Array], c: &[Array], _o: &[Array]| {
        let _keep = &vjp_guard;
        Ok(vec![&c[0] * 3.0])
    })
    .unwrap();

    // The output's graph node holds the custom transforms; dropping the Rust handle must not
    // free them while that node lives.
    let y = f.call(&[x()]).unwrap();
    drop(f);
    assert_eq!(fwd_drops.load(Ordering::SeqCst), 0);
    assert_eq!(vjp_drops.load(Ordering::SeqCst), 0);
    y[0].eval().unwrap();
    drop(y);
    assert_eq!(fwd_drops.load(Ordering::SeqCst), 1);
    assert_eq!(vjp_drops.load(Ordering::SeqCst), 1);
    assert_balanced(before, "custom_function");
}

#[test]
fn checkpoint_under_grad_frees_everything() {
    let _g = serial();
    let before = closure_stats();
    let (guard, drops) = counter();
    {
        let ck = checkpoint(move |v: &[Array]| {
            let _keep = &guard;
            Ok(vec![ops::exp(&v[0])?.sum(None, false)?])
        })
        .unwrap();
        for _ in 0..10 {
            grad(|v: &[Array]| ck.call(v), None)(&[x()]).unwrap()[0]
                .eval()
                .unwrap();
        }
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_balanced(before, "checkpoint under grad");
}
