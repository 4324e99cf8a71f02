//! An architecture of one's own in the model zoo:
//!
//! ```text
//! cargo run --release --example custom_model [-- --prompt TEXT] [--max-tokens N]
//! ```
//!
//! defines `tiny_lm` on mlx-lm's shared blocks (`arch.rs`: a config reader, a model struct, a
//! `LanguageModel` impl, one `register_model` line), writes a random-weight `tiny_lm` model
//! directory, loads it with `mlx::lm::load` and generates from it. With `--cli ARGS...` it runs
//! the `generate` command (`mlx::lm::cli`) instead, which then loads `tiny_lm` directories
//! like any other.

mod arch;

use std::path::PathBuf;

use mlx::lm::{generate, GenerateOptions, LoadOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    arch::register();
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--cli") {
        // The `generate` command, with tiny_lm registered.
        let args = std::iter::once("generate".to_string()).chain(argv[2..].iter().cloned());
        let args = <mlx::lm::cli::Args as clap::Parser>::parse_from(args);
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        return mlx::lm::cli::run(&args, &mut out, &mut err);
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
