//! The binary of a crate that depends on `mlx` starts without `LD_LIBRARY_PATH` where it was
//! built. cargo puts mlx-sys's link folders on the library path of what it runs (this test
//! included), so the binary is started with that variable removed: with a prebuilt MLX
//! (`MLX_DIR`) it must find mlx-c and libmlx through the paths recorded at link time alone.

use std::process::Command;

#[test]
fn binary_starts_without_library_path() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_downstream"));
    // A relocatable build records no path to libmlx by design: finding it is the
    // deployment's job, here cargo's library path.
    if !matches!(option_env!("MLX_SYS_RELOCATABLE"), Some(v) if v != "0") {
        command
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("DYLD_LIBRARY_PATH")
            .env_remove("DYLD_FALLBACK_LIBRARY_PATH");
    }
    let output = command.output().expect("spawning the downstream binary");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the downstream binary failed without LD_LIBRARY_PATH ({}):\n{stderr}",
        output.status
    );
    // The product worked out here, independently of MLX.
    let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [5.0f32, 6.0, 7.0, 8.0]);
    let expected: Vec<f32> = (0..4)
        .map(|k| {
            let (i, j) = (k / 2, k % 2);
            a[2 * i] * b[j] + a[2 * i + 1] * b[2 + j]
        })
        .collect();
    let line = format!("product {expected:?}");
    assert!(
        stdout.lines().any(|l| l == line),
        "expected a line `{line}`, the binary printed:\n{stdout}"
    );
}

/// A CUDA build of MLX on a machine whose GPU is hidden (`CUDA_VISIBLE_DEVICES=""`, as
/// with no GPU or a driver that sees none): the program may fail, but with an error it
/// can print, never a signal. Elsewhere the variable changes nothing and it must succeed.
#[test]
fn without_a_visible_gpu_the_binary_fails_cleanly() {
    let output = Command::new(env!("CARGO_BIN_EXE_downstream"))
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("spawning the downstream binary");
    let stderr = String::from_utf8_lossy(&output.stderr);
    match output.status.code() {
        Some(0) => {}
        Some(_) => assert!(
            stderr.contains("Error"),
            "a failure must say why ({}): {stderr}",
            output.status
        ),
        None => panic!("killed by a signal ({}): {stderr}", output.status),
    }
    println!("{}: {}", output.status, stderr.trim());
}
