//! The `mlx-lm` command-line tool (Python: the `mlx_lm` command): `mlx-lm generate`, `chat`,
//! `cache_prompt`. `cargo install --path .` in the repository installs it; the commands are
//! `mlx::lm::cli` (see there why the binary lives in this package).

fn main() {
    mlx::lm::cli::main();
}
