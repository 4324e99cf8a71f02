//! Every function the vendored mlx-c headers declare is wrapped by mlx-rs or listed in
//! `api-exclusions.txt` with a reason. The check itself lives in `scripts/api-coverage`
//! (one parser, one place); this test runs it so `cargo test` fails on a gap.

use std::path::Path;
use std::process::Command;

#[test]
fn every_header_function_is_wrapped_or_excluded() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("python3")
        .arg(root.join("scripts/api-coverage"))
        .arg("--quiet")
        .output()
        .expect("python3 runs scripts/api-coverage (install python3)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stdout.lines().last().unwrap_or_default();
    println!("{summary}");
    assert!(
        out.status.success(),
        "api coverage has gaps:\n{stdout}\n{stderr}"
    );
    // The summary must account for every declaration (a parser that finds nothing passes
    // vacuously otherwise): mlx-c 0.7.0 declares 674 functions, 265 of them in ops.h, and our
    // patches add `_mlx_array_id`, `_mlx_array_status`, `_mlx_array_inputs`,
    // `_mlx_array_siblings`, `_mlx_array_primitive_name`, `_mlx_array_detach`,
    // `_mlx_distributed_group_communication_stream` and `_mlx_error_message`
    // (mlx-sys/vendor/README.md).
    assert!(summary.ends_with("/ total 682"), "{summary}");
    let ops = Command::new("python3")
        .arg(root.join("scripts/api-coverage"))
        .args(["--headers", "ops.h", "--quiet"])
        .output()
        .unwrap();
    let ops_summary = String::from_utf8_lossy(&ops.stdout);
    assert!(
        ops_summary
            .trim_end()
            .ends_with("wrapped 265 / excluded 0 / total 265"),
        "{ops_summary}"
    );
}
