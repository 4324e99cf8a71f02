//! `mlx-lm export`: a model's prefill and decode step as `.mlxfn` graphs with their cache
//! ([`crate::export::export_model`]), for programs without this crate: Python's
//! `mx.import_function` (`examples/exported_model.py`), C++ through MLX, or
//! [`ExportedModel`](crate::export::ExportedModel). mlx_lm has no such command.
//!
//! The model loads with every custom kernel off ([`KernelOptions::none`]), so the graphs hold
//! MLX's own operations only; the tokenizer files are copied beside them.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use super::Error;
use crate::export::{export_model, ExportOptions, WeightsMode};
use crate::{KernelOptions, LoadOptions};

/// The files of a model directory a tokenizer (Hugging Face's, or this crate's) reads.
const TOKENIZER_FILES: [&str; 7] = [
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.model",
    "chat_template.jinja",
];

/// Exports a model's prefill and decode step as MLX graphs (`.mlxfn`).
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The model directory (config.json, *.safetensors, tokenizer.json).
    #[arg(long, default_value = "mlx_model")]
    pub model: PathBuf,
    /// A directory of fine-tuned adapters (adapter_config.json, adapters.safetensors).
    #[arg(long)]
    pub adapter_path: Option<PathBuf>,
    /// The directory to write (created if needed).
    #[arg(long, short)]
    pub output: PathBuf,
    /// The positions the exported cache holds, prompt and generated tokens together.
    #[arg(long, default_value_t = 4096)]
    pub max_positions: usize,
    /// The prompt chunk lengths the prefill is traced for (comma-separated, each >= 2).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "2,4,8,16,32,64,128,256,512"
    )]
    pub prefill_lengths: Vec<usize>,
    /// Bake the weights into the graphs instead of passing them as inputs from
    /// weights.safetensors (self-contained files, each holding the weights).
    #[arg(long)]
    pub weights_as_constants: bool,
}

/// Runs the command: writes the export directory and prints what it holds.
pub fn run(
    args: &Args,
    _input: &mut dyn BufRead,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> Result<(), Error> {
    let options = LoadOptions {
        kernels: KernelOptions::none(),
        ..Default::default()
    };
    let (mut model, _tokenizer, config) = crate::load(&args.model, options)?;
    if let Some(adapters) = &args.adapter_path {
        crate::tuner::load_adapters(&mut model, adapters)?;
    }
    let options = ExportOptions {
        max_positions: args.max_positions,
        prefill_lengths: args.prefill_lengths.clone(),
        weights: if args.weights_as_constants {
            WeightsMode::Constants
        } else {
            WeightsMode::Inputs
        },
    };
    let manifest = export_model(&model, Some(&config), &args.output, &options)?;
    for file in TOKENIZER_FILES {
        let from = args.model.join(file);
        if from.is_file() {
            std::fs::copy(&from, args.output.join(file))
                .map_err(|e| format!("copying {}: {e}", from.display()))?;
        }
    }
    writeln!(
        out,
        "Exported {} ({} cache arrays, {} weight inputs, {} positions, prefill chunks {:?}) \
         to {}",
        manifest.model_type,
        manifest.cache_leaves,
        manifest.weight_inputs().len(),
        manifest.max_positions,
        manifest.prefill.lengths,
        args.output.display()
    )?;
    Ok(())
}
