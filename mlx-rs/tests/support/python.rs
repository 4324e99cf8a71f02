//! Finding the Python MLX that tests run beside Rust ranks.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A Python interpreter that imports MLX 0.32.2: $MLX_PYTHON or the repository's .venv.
pub fn python() -> Option<PathBuf> {
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
