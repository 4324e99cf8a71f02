//! Groups whose ranks are this test binary's own child tests (re-run with `--ignored --exact
//! child_*`), and the pieces of a group that mixes a Rust rank with a Python MLX rank; shared
//! by the backends' test files (`distributed_ring.rs`, `distributed_mpi.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mlx_launch::{Launch, LaunchReport};
use mlx_rs::distributed::{self, Backend, Group};
use mlx_rs::{ops, Dtype, Result};

use super::collectives::as_i64;

/// Runs the child test `name` as each of `ranks` processes.
pub fn launch(ranks: usize, name: &str) -> Launch {
    let exe = std::env::current_exe().unwrap();
    Launch::new(ranks, exe)
        .args([
            "--ignored",
            "--exact",
            name,
            "--nocapture",
            "--test-threads=1",
        ])
        .timeout(Duration::from_secs(120))
        // Collected in the report; echoed, it would bypass the test harness's capture.
        .echo(false)
}

/// Every rank ran its child test (and it passed).
pub fn assert_ran(report: &LaunchReport) {
    for r in &report.ranks {
        assert!(
            r.output.contains("1 passed"),
            "rank {} did not run its test:\n{}",
            r.rank,
            r.output
        );
    }
}

/// A Python interpreter that imports MLX 0.32.2: $MLX_PYTHON or the repository's .venv.
fn python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::env::var_os("MLX_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([root.join(".venv/bin/python")])
        .find(|p| {
            Command::new(p)
                .args([
                    "-c",
                    "import mlx.core as mx; assert mx.__version__ == '0.32.2'",
                ])
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// A Python MLX rank of a `backend` group that sums what [`rust_rank`] sums; `None` (after
/// saying SKIPPED) where no Python MLX is found.
pub fn python_rank(backend: Backend) -> Option<Command> {
    let Some(python) = python() else {
        println!(
            "SKIPPED: no Python with MLX 0.32.2 found (set MLX_PYTHON or run scripts/python-venv)"
        );
        return None;
    };
    let script = format!(
        r#"
import mlx.core as mx
g = mx.distributed.init(strict=True, backend="{}")
x = mx.arange(6, dtype=mx.float32) * (g.rank() + 1) + g.rank()
s = mx.distributed.all_sum(x, group=g)
print("python rank", g.rank(), "of", g.size(), "sum", [int(v) for v in s.tolist()])
"#,
        backend.name()
    );
    let mut py = Command::new(python);
    py.args(["-c", &script]);
    Some(py)
}

/// The Rust rank's half: rank `r` contributes `i * (r + 1) + r` and prints the sum.
pub fn rust_rank(g: &Group) -> Result<()> {
    let r = g.rank();
    let x = ops::add(
        &ops::multiply(&ops::arange(0, 6, 1, Dtype::Float32)?, (r + 1) as f32)?,
        r as f32,
    )?;
    let s = distributed::all_sum(&x, Some(g))?;
    println!("rust rank {r} of {} sum {:?}", g.size(), as_i64(&s));
    Ok(())
}

/// Rank 0 (Rust) and rank 1 (Python) printed the same, right sum.
pub fn assert_rust_and_python_summed(report: &LaunchReport) {
    let want: Vec<i64> = (0..6).map(|i| i + (2 * i + 1)).collect();
    let want = format!("sum {want:?}");
    for (rank, who) in [(0, "rust"), (1, "python")] {
        let output = &report.ranks[rank].output;
        assert!(
            output.contains(&format!("{who} rank {rank} of 2 {want}")),
            "{output}"
        );
    }
}
