//! An OpenAI- and Anthropic-compatible server for a model directory (Python:
//! `mlx_lm.server`):
//!
//! ```text
//! cargo run --release --example server -- --model DIR [--host 127.0.0.1] [--port 8080]
//! ```
//!
//! `--help` lists the flags; docs/server.md describes the endpoints.

use clap::Parser;
use mlx_lm_server::ServerOptions;

#[tokio::main]
async fn main() {
    let options = ServerOptions::parse();
    if let Err(e) = mlx_lm_server::serve(options).await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
