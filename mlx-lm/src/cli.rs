//! The `mlx-lm` command-line tool (Python: the `mlx_lm` command and its `mlx_lm.<command>`
//! entry points), as a library: [`main`] is the whole program, [`run`] dispatches to one
//! command, and each command is a module with its `Args` (clap) and a `run` over its
//! arguments and output streams, so that tests run the commands in-process as well as the
//! binary as a subprocess:
//!
//! | command | Python | what it does |
//! |---|---|---|
//! | [`generate`] | `mlx_lm.generate` | one prompt's completion, mlx_lm's flags and printing |
//! | [`chat`] | `mlx_lm.chat` | a REPL whose prompt cache is kept between turns |
//! | [`cache_prompt`] | `mlx_lm.cache_prompt` | a prompt's cache as an mlx_lm prompt-cache file |
//! | [`convert`] | `mlx_lm.convert` | a model directory cast, quantized or dequantized |
//! | [`benchmark`] | `mlx_lm.benchmark` | prompt and generation speed, peak memory |
//! | [`perplexity`] | `mlx_lm.perplexity` | perplexity on a local dataset, with its standard error |
//! | [`export`] | — | prefill and decode step as `.mlxfn` graphs with their cache |
//!
//! The binary is `mlx-lm` (`cargo install --path .` in a checkout of the repository, with
//! the build modes of `docs/getting-started.md`, e.g. `MLX_DIR` for a prebuilt MLX), one program with subcommands as Python's `mlx_lm` is, rather than one example per
//! command: one thing to install and one `--help` to read. It is a target of the facade
//! package `mlx` (`src/bin/mlx-lm.rs`, which calls [`main`]) so that the repository's
//! integration tests, which live in that package, can run it as a subprocess
//! (`CARGO_BIN_EXE_mlx-lm`); the code is here, in `mlx-lm`, where a crate with an
//! architecture of its own calls it from its binary after registering the architecture
//! ([`register_model`](crate::register_model)): the commands load its model directories like
//! any other.
//!
//! ```no_run
//! // In a binary's `main`, after `mlx_lm::register_model("my_arch", ...)`:
//! mlx_lm::cli::main();
//! ```
//!
//! Commands take mlx_lm's flags with mlx_lm's defaults and print what mlx_lm prints (to
//! stdout, as mlx_lm does). Where mlx_lm raises a traceback on bad input, the command prints
//! one line `error: ...` to stderr and exits with status 1.

pub mod benchmark;
pub mod cache_prompt;
pub mod chat;
pub mod convert;
pub mod export;
pub mod generate;
pub mod perplexity;

use std::io::{BufRead, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

/// The commands' error: any error, printed as one line.
pub type Error = Box<dyn std::error::Error>;

/// Language models on MLX: the commands of Python's `mlx_lm`.
#[derive(Debug, Parser)]
#[command(name = "mlx-lm", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// One of the tool's commands.
// Parsed once per run: the size of the largest variant (generate's flags) costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate text from a prompt (Python: mlx_lm.generate).
    Generate(generate::Args),
    /// Chat with a model in the terminal (Python: mlx_lm.chat).
    Chat(chat::Args),
    /// Cache a prompt's state for `generate --prompt-cache-file` (Python: mlx_lm.cache_prompt).
    #[command(name = "cache_prompt", alias = "cache-prompt")]
    CachePrompt(cache_prompt::Args),
    /// Convert a model directory to MLX's format, cast or (de)quantized (Python:
    /// mlx_lm.convert).
    Convert(convert::Args),
    /// Measure prompt and generation speed and peak memory (Python: mlx_lm.benchmark).
    Benchmark(benchmark::Args),
    /// Evaluate a model's perplexity on a local dataset (Python: mlx_lm.perplexity).
    Perplexity(perplexity::Args),
    /// Export a model's prefill and decode step as MLX graphs (.mlxfn) with its cache, for
    /// Python's mx.import_function or C++ (no mlx_lm counterpart).
    Export(export::Args),
}

/// Runs one command; `input` is what a command reads as its stdin (`--prompt -`, the chat's
/// lines).
pub fn run(
    cli: &Cli,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Error> {
    match &cli.command {
        Command::Generate(args) => generate::run(args, input, out, err),
        Command::Chat(args) => chat::run(args, input, out, err),
        Command::CachePrompt(args) => cache_prompt::run(args, input, out, err),
        Command::Convert(args) => convert::run(args, input, out, err),
        Command::Benchmark(args) => benchmark::run(args, input, out, err),
        Command::Perplexity(args) => perplexity::run(args, input, out, err),
        Command::Export(args) => export::run(args, input, out, err),
    }
}

/// The program: parses the process's arguments, runs the command over the process's stdin,
/// stdout and stderr, and on failure prints the error and exits with status 1.
pub fn main() {
    let cli = Cli::parse_from(args_os());
    PROGRESS_BARS.store(std::io::stderr().is_terminal(), Ordering::Relaxed);
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let mut input = std::io::stdin().lock();
    if let Err(e) = run(&cli, &mut input, &mut out, &mut err) {
        let _ = out.flush();
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// Whether long work draws progress bars: the program's stderr is a terminal ([`main`] sets
/// it). Commands run in-process ([`run`]) print what mlx_lm prints instead.
static PROGRESS_BARS: AtomicBool = AtomicBool::new(false);

/// Whether the commands draw progress bars (see [`progress_bar`]).
pub(crate) fn progress_bars() -> bool {
    PROGRESS_BARS.load(Ordering::Relaxed)
}

/// An indicatif bar of `len` steps on the terminal's stderr, drawn with `template`, when the
/// program's stderr is a terminal; a hidden one otherwise (a pipe, a file, a test).
pub(crate) fn progress_bar(len: u64, template: &str) -> Result<ProgressBar, Error> {
    if !progress_bars() {
        return Ok(ProgressBar::hidden());
    }
    let style = ProgressStyle::with_template(template).map_err(|e| e.to_string())?;
    Ok(ProgressBar::new(len).with_style(style))
}

/// mlx_lm's `str2bool` (`--verbose False`): anything but `false` / `f` (any case) is true.
pub(crate) fn str2bool(s: &str) -> Result<bool, String> {
    Ok(!matches!(s.to_lowercase().as_str(), "false" | "f"))
}

/// The error for one of mlx_lm's flags that this tool takes but cannot honour: it says so,
/// rather than running otherwise than asked.
pub(crate) fn unsupported(flag: &str, why: &str) -> String {
    format!("{flag} is not supported by this tool: {why}")
}

/// The process's arguments as clap reads them: mlx_lm's two-letter `-qa` is
/// `--quantize-activations` (a clap short flag is one letter).
pub fn args_os() -> Vec<std::ffi::OsString> {
    std::env::args_os()
        .map(|a| {
            if a == "-qa" {
                "--quantize-activations".into()
            } else {
                a
            }
        })
        .collect()
}

/// A `--model` that is not a local path: mlx_lm would take it for a Hugging Face Hub name and
/// download it; nothing is downloaded here.
pub(crate) fn local_model(path: &std::path::Path) -> Result<(), Error> {
    if path.exists() {
        return Ok(());
    }
    Err(format!(
        "{}: no such model directory; models are not downloaded from the Hugging Face Hub \
         here: download it first (e.g. `hf download NAME --local-dir DIR`) and give the directory",
        path.display()
    )
    .into())
}

/// The prompt a command was given: `-` reads `input` to its end.
pub(crate) fn read_prompt(prompt: &str, input: &mut dyn BufRead) -> Result<String, Error> {
    if prompt == "-" {
        let mut text = String::new();
        input.read_to_string(&mut text)?;
        Ok(text)
    } else {
        Ok(prompt.to_string())
    }
}

/// mlx_lm's `--max-tokens` as a count: `0` is mlx_lm's error; a negative number is mlx_lm's
/// "no limit" (its help says `-1`; its loop compares the count with the limit, which a
/// negative one never equals), generation until an end-of-sequence token
/// ([`UNLIMITED`](crate::UNLIMITED)).
pub(crate) fn max_tokens(n: i64) -> Result<usize, Error> {
    match n {
        0 => Err("Maximum number of tokens must be non-zero (use -1 for no limit)".into()),
        n if n < 0 => Ok(crate::UNLIMITED),
        n => match usize::try_from(n) {
            Ok(crate::UNLIMITED) | Err(_) => Err(format!("--max-tokens {n} is too large").into()),
            Ok(n) => Ok(n),
        },
    }
}

/// mlx_lm's `--max-kv-size` as a count (`GenerateOptions::max_kv_size`): each key/value
/// layer of a model mlx_lm bounds becomes a `RotatingKVCache(max_size, keep=4)`. A bound of
/// 0 or less is an error rather than a ring without slots.
pub(crate) fn max_kv_size(n: Option<i64>) -> Result<Option<usize>, Error> {
    match n {
        None => Ok(None),
        Some(n) if n <= 0 => Err(format!("--max-kv-size must be positive, got {n}").into()),
        Some(n) => usize::try_from(n)
            .map(Some)
            .map_err(|_| format!("--max-kv-size {n} is too large").into()),
    }
}

/// mlx_lm's XTC options as its commands pass them to `make_sampler`: the special tokens are
/// `tokenizer.encode("\n")` (special tokens added, as Python's default) and the end-of-sequence
/// ids.
pub(crate) fn xtc(
    probability: f64,
    threshold: f64,
    tokenizer: &crate::Tokenizer,
) -> Result<crate::Xtc, Error> {
    let mut special_tokens = tokenizer.encode("\n", true)?;
    special_tokens.extend(tokenizer.eos_token_ids());
    Ok(crate::Xtc {
        probability,
        threshold,
        special_tokens,
    })
}
