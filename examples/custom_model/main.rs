//! An architecture of one's own in the model zoo:
//!
//! ```text
//! cargo run --release --example custom_model [-- --prompt TEXT] [--max-tokens N]
//! ```
//!
//! defines `tiny_lm` on mlx-lm's shared blocks (`arch.rs`: a config reader, a model struct, a
//! `LanguageModel` impl, one `register_model` line), writes a random-weight `tiny_lm` model
//! directory, loads it with `mlx::lm::load` and generates from it. With `--cli COMMAND ARGS...`
//! it runs a command of the `mlx-lm` tool (`mlx::lm::cli`, e.g. `--cli generate --model DIR`)
//! instead, which then loads `tiny_lm` directories like any other.

mod arch;

use std::path::PathBuf;

use mlx::lm::{generate, GenerateOptions, LoadOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    arch::register();
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--cli") {
        // The `mlx-lm` tool's commands, with tiny_lm registered: `--cli generate ...`.
        let args = std::iter::once("mlx-lm".to_string()).chain(argv[2..].iter().cloned());
        let cli = <mlx::lm::cli::Cli as clap::Parser>::parse_from(args);
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        return mlx::lm::cli::run(&cli, &mut std::io::stdin().lock(), &mut out, &mut err);
    }
    let flag = |name: &str| {
        argv.iter()
            .position(|a| a == name)
            .and_then(|i| argv.get(i + 1).cloned())
    };
    let prompt = flag("--prompt").unwrap_or_else(|| "hello world".into());
    let max_tokens = flag("--max-tokens").map_or(Ok(16), |n| n.parse())?;

    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("tiny-lm-{}", std::process::id()));
    arch::write_random_model(&dir, &root.join("tests/data/lm-models/qwen3"), 0)?;
    let (model, tokenizer, _) = mlx::lm::load(&dir, LoadOptions::default())?;
    println!("loaded {} from {}", model.model_type(), dir.display());
    let ids = tokenizer.encode(&prompt, true)?;
    let options = GenerateOptions {
        max_tokens,
        ..Default::default()
    };
    println!("{prompt}{}", generate(&model, &tokenizer, &ids, &options)?);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
