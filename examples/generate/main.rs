//! Text generation from the command line (Python: `mlx_lm.generate`):
//!
//! ```text
//! cargo run --release --example generate -- --model DIR --prompt TEXT \
//!     [--max-tokens N] [--temp T] [--top-p P] [--min-p P] [--top-k K] [--seed S] \
//!     [--chat [--system-prompt TEXT] [--chat-template-config JSON]]
//! ```
//!
//! The text streams to stdout and the statistics (prompt and generation tokens per second,
//! peak memory) go to stderr. `--temp 0` (the default) is greedy and prints what
//! `mlx_lm.generate --temp 0` prints for the same model and prompt (`tests/lm_generate.rs`
//! checks it). Unlike mlx_lm, which applies the chat template unless told not to, the prompt
//! is used as it is unless `--chat` is given. The command is `mlx::lm::cli`, which a crate
//! with an architecture of its own calls from its binary after registering it.

fn main() {
    mlx::lm::cli::main();
}
