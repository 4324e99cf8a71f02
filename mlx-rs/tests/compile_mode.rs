//! Process-wide compile switches. They change global state, so they live in their own test
//! binary; the environment-variable case runs in a child process, because MLX reads
//! `MLX_DISABLE_COMPILE` once per process.

use mlx_rs::compile::{compile, disable_compile, enable_compile, set_compile_mode, CompileMode};
use mlx_rs::{ops, Array, Result};

fn f(x: &[Array]) -> Result<Vec<Array>> {
    Ok(vec![ops::exp(&(&x[0] * 2.0))? + 1.0])
}

fn x() -> Array {
    Array::from_slice(&[0.5f32, -1.0], &[2]).unwrap()
}

fn run_three_calls() -> (u64, u64, Vec<f32>) {
    let cf = compile(f, None);
    let mut last = Vec::new();
    for _ in 0..3 {
        last = cf.call(&[x()]).unwrap()[0].to_vec::<f32>().unwrap();
    }
    (cf.traces(), cf.calls(), last)
}

#[test]
fn switches_turn_compilation_off_and_on() {
    let want = f(&[x()]).unwrap()[0].to_vec::<f32>().unwrap();

    let (traces, calls, out) = run_three_calls();
    assert_eq!((traces, calls), (1, 3), "compiled by default");
    assert_eq!(out, want);

    disable_compile().unwrap();
    let (traces, calls, out) = run_three_calls();
    assert_eq!(
        (traces, calls),
        (3, 3),
        "disabled: the plain function runs every call"
    );
    assert_eq!(out, want);

    // The switch is read per call, so it also affects an existing object (as in Python).
    enable_compile().unwrap();
    let cf = compile(f, None);
    cf.call(&[x()]).unwrap();
    cf.call(&[x()]).unwrap();
    assert_eq!(cf.traces(), 1);
    disable_compile().unwrap();
    cf.call(&[x()]).unwrap();
    assert_eq!(cf.traces(), 2);
    enable_compile().unwrap();
    cf.call(&[x()]).unwrap();
    assert_eq!(cf.traces(), 2, "back on: the cached trace is still there");

    for mode in [CompileMode::NoFuse, CompileMode::NoSimplify] {
        set_compile_mode(mode).unwrap();
        let (traces, calls, out) = run_three_calls();
        assert_eq!((traces, calls), (1, 3), "{mode:?} still compiles");
        assert_eq!(out, want);
    }
    set_compile_mode(CompileMode::Disabled).unwrap();
    assert_eq!(run_three_calls().0, 3);
    set_compile_mode(CompileMode::Enabled).unwrap();
    assert_eq!(run_three_calls().0, 1);
}

#[test]
fn env_var_disables_compilation() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "child_with_env_var_set",
            "--nocapture",
        ])
        .env("MLX_DISABLE_COMPILE", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("1 passed"), "child test did not run:\n{text}");
}

#[test]
#[ignore = "runs in a child process started by env_var_disables_compilation"]
fn child_with_env_var_set() {
    assert!(std::env::var_os("MLX_DISABLE_COMPILE").is_some());
    let (traces, calls, _) = run_three_calls();
    assert_eq!(
        (traces, calls),
        (3, 3),
        "MLX_DISABLE_COMPILE must disable compilation"
    );
    // enable_compile overrides the variable.
    enable_compile().unwrap();
    assert_eq!(run_three_calls().0, 1);
}
