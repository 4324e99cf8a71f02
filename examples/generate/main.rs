//! Text generation from the command line (Python: `mlx_lm.generate`): the `generate` command
//! of the `mlx-lm` tool (`src/bin/mlx-lm.rs`) on its own, for `cargo run --example`:
//!
//! ```text
//! cargo run --release --example generate -- --model DIR --prompt TEXT [--max-tokens N] ...
//! ```
//!
//! It takes mlx_lm.generate's flags and prints what it prints (`mlx-lm generate --help`).

fn main() {
    mlx::lm::cli::generate::main();
}
