//! Graph printing and the thread's compile cache.

use mlx_rs::compile::{clear_compile_cache, compile};
use mlx_rs::graph::{export_to_dot, print_graph, NodeNamer};
use mlx_rs::{ops, Array};

#[test]
fn dot_output_names_ops_and_given_arrays() {
    let x = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let y = ops::exp(&(&x * 2.0)).unwrap();
    let mut namer = NodeNamer::new();
    namer.set_name(&x, "input_x").unwrap();
    assert_eq!(namer.name(&x).unwrap(), "input_x");
    let dot = export_to_dot(std::slice::from_ref(&y), Some(&namer)).unwrap();
    assert!(dot.starts_with("digraph"), "{dot}");
    assert!(dot.contains("input_x"), "{dot}");
    assert!(dot.contains("Exp") && dot.contains("Multiply"), "{dot}");
    let text = print_graph(&[y], None).unwrap();
    assert!(text.contains("Exp"), "{text}");
    assert!(namer.set_name(&x, "bad\0name").is_err());
}

#[test]
fn clearing_the_thread_cache_forces_a_retrace() {
    let f = compile(|x: &[Array]| Ok(vec![&x[0] + 1.0]), false);
    let x = Array::from_slice(&[1.0f32], &[1]).unwrap();
    f.call(std::slice::from_ref(&x)).unwrap();
    f.call(std::slice::from_ref(&x)).unwrap();
    assert_eq!(f.traces(), 1);
    clear_compile_cache().unwrap();
    let out = f.call(std::slice::from_ref(&x)).unwrap();
    assert_eq!(f.traces(), 2);
    assert_eq!(out[0].item::<f32>().unwrap(), 2.0);
}
