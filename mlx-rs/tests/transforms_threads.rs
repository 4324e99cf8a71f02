//! The thread rules the transform docs state.

use std::sync::Arc;

use mlx_rs::compile::{Compiled, CompiledFn};
use mlx_rs::export::ImportedFunction;
use mlx_rs::transforms::{custom_vjp, grad, CustomFunction};
use mlx_rs::{ops, Array, Result};

fn assert_send<T: Send>() {}
fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn documented_auto_traits() {
    assert_send_sync::<CustomFunction>();
    assert_send_sync::<CompiledFn>();
    assert_send_sync::<Compiled<fn(&[Array]) -> Result<Vec<Array>>>>();
    assert_send::<ImportedFunction>();
}

#[test]
fn a_custom_function_is_shared_and_differentiated_on_other_threads() {
    let f = Arc::new(
        custom_vjp(
            |x: &[Array]| Ok(vec![ops::sin(&x[0])?]),
            |p: &[Array], c: &[Array], _o: &[Array]| Ok(vec![&c[0] * ops::cos(&p[0])? * 2.0]),
        )
        .unwrap(),
    );
    let here = {
        let f = f.clone();
        grad(
            move |x: &[Array]| Ok(vec![f.call(x)?[0].sum(None, false)?]),
            None,
        )(&[Array::from_slice(&[0.3f32, 1.2], &[2]).unwrap()])
        .unwrap()[0]
            .to_vec::<f32>()
            .unwrap()
    };
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let f = f.clone();
            std::thread::spawn(move || {
                let x = Array::from_slice(&[0.3f32, 1.2], &[2]).unwrap();
                let g = grad(
                    |x: &[Array]| Ok(vec![f.call(x)?[0].sum(None, false)?]),
                    None,
                );
                g(&[x]).unwrap()[0].to_vec::<f32>().unwrap()
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), here);
    }
}
