//! Fine-tuning from the command line (Python: `mlx_lm.lora`), with its flag names:
//!
//! ```text
//! cargo run --release --example lora -- --model DIR --data DIR --train \
//!     [--fine-tune-type lora|dora|full] [--num-layers N] [--batch-size B] [--iters N] \
//!     [--learning-rate LR] [--optimizer adam|adamw|sgd] [--mask-prompt] [--steps-per-report N]
//!     [--steps-per-eval N] [--val-batches N] [--save-every N] [--adapter-path DIR] \
//!     [--resume-adapter-file F] [--max-seq-length N] [--seed S] [--test [--test-batches N]]
//! ```
//!
//! `--train` trains adapters (the base frozen) with the compiled step and saves
//! `adapters.safetensors` and `adapter_config.json` under `--adapter-path`, which mlx_lm's
//! `load_adapters` (and `generate --adapter-path`) read; `--test` reports the test loss and
//! perplexity. The adapters take mlx_lm's default `lora_parameters` (rank 8, scale 20,
//! dropout 0). Not here yet: mlx_lm's YAML config (`-c`), learning-rate schedules, gradient
//! accumulation and checkpointing. Validation draws its batch order from its own generator
//! (mlx_lm shares one with training), so with validation on, later epochs' order differs.

use std::path::PathBuf;

use clap::Parser;
use mlx::lm::tuner::{
    evaluate, iterate_batches, linear_to_lora_layers, load_adapters, load_local_dataset,
    save_adapters, unfreeze_last_layers, DatasetOptions, FineTuneType, LoraParameters, RandomState,
    TrainStep,
};
use mlx::lm::{load, LoadOptions, Model};
use mlx::nn::Module;
use mlx::optimizers::{Adam, AdamW, Optimizer, SGD};
use mlx::utils::TreeNode;

#[derive(Debug, Parser)]
#[command(name = "lora")]
struct Args {
    /// The model directory.
    #[arg(long)]
    model: PathBuf,
    /// The directory with train.jsonl, valid.jsonl, test.jsonl.
    #[arg(long, default_value = "data/")]
    data: PathBuf,
    #[arg(long)]
    train: bool,
    #[arg(long)]
    test: bool,
    #[arg(long, default_value = "lora", value_parser = ["lora", "dora", "full"])]
    fine_tune_type: String,
    #[arg(long, default_value = "adam", value_parser = ["adam", "adamw", "sgd"])]
    optimizer: String,
    #[arg(long)]
    mask_prompt: bool,
    /// The number of layers (from the last) to fine-tune; -1: all.
    #[arg(long, default_value_t = 16, allow_negative_numbers = true)]
    num_layers: i32,
    #[arg(long, default_value_t = 4)]
    batch_size: usize,
    #[arg(long, default_value_t = 1000)]
    iters: usize,
    /// Validation batches; -1: the whole validation set.
    #[arg(long, default_value_t = 25, allow_negative_numbers = true)]
    val_batches: i64,
    #[arg(long, default_value_t = 1e-5)]
    learning_rate: f32,
    #[arg(long, default_value_t = 10)]
    steps_per_report: usize,
    #[arg(long, default_value_t = 200)]
    steps_per_eval: usize,
    #[arg(long)]
    resume_adapter_file: Option<PathBuf>,
    #[arg(long, default_value = "adapters")]
    adapter_path: PathBuf,
    #[arg(long, default_value_t = 100)]
    save_every: usize,
    #[arg(long, default_value_t = 500, allow_negative_numbers = true)]
    test_batches: i64,
    #[arg(long, default_value_t = 2048)]
    max_seq_length: usize,
    #[arg(long, default_value_t = 0)]
    seed: u32,
}

type Error = Box<dyn std::error::Error>;

fn batches_of(n: i64) -> Option<usize> {
    usize::try_from(n).ok()
}

fn fine_tune_type(name: &str) -> FineTuneType {
    match name {
        "dora" => FineTuneType::Dora,
        "full" => FineTuneType::Full,
        _ => FineTuneType::Lora,
    }
}

fn train<O: Optimizer + TreeNode>(
    args: &Args,
    model: Model,
    optimizer: O,
    train: &[mlx::lm::tuner::Example],
    valid: &[mlx::lm::tuner::Example],
) -> Result<Model, Error> {
    let params = LoraParameters::default();
    let mut rng_valid = RandomState::new(args.seed);
    let mut step = TrainStep::new(model, optimizer)?;
    let batches = iterate_batches(
        train,
        args.batch_size,
        args.max_seq_length,
        true,
        RandomState::new(args.seed),
    )?;
    let (mut losses, mut tokens, mut steps) = (0.0f64, 0i64, 0usize);
    for (it, batch) in (1..=args.iters).zip(batches) {
        if !valid.is_empty() && (it == 1 || it % args.steps_per_eval == 0 || it == args.iters) {
            let (val_loss, rng) = evaluate(
                &step.state.0,
                valid,
                args.batch_size,
                batches_of(args.val_batches),
                args.max_seq_length,
                rng_valid,
            )?;
            rng_valid = rng;
            println!("Iter {it}: Val loss {val_loss:.3}");
        }
        let (loss, toks) = step.step(&batch)?;
        losses += f64::from(loss);
        tokens += toks;
        steps += 1;
        if it % args.steps_per_report == 0 || it == args.iters {
            println!(
                "Iter {it}: Train loss {:.3}, Trained tokens {tokens}",
                losses / steps as f64
            );
            (losses, steps) = (0.0, 0);
        }
        if it % args.save_every == 0 {
            save(args, &step.state.0, &params)?;
            println!(
                "Iter {it}: Saved adapter weights to {}",
                args.adapter_path.display()
            );
        }
    }
    let stats = step.stats();
    eprintln!(
        "train step: {} trace(s), {} calls",
        stats.traces, stats.calls
    );
    let model = step.state.0;
    save(args, &model, &params)?;
    println!(
        "Saved final weights to {}",
        args.adapter_path.join("adapters.safetensors").display()
    );
    Ok(model)
}

/// adapters.safetensors and the adapter_config.json mlx_lm's `load_adapters` reads.
fn save(args: &Args, model: &Model, params: &LoraParameters) -> Result<(), Error> {
    std::fs::create_dir_all(&args.adapter_path)?;
    save_adapters(model, args.adapter_path.join("adapters.safetensors"))?;
    let config = serde_json::json!({
        "model": args.model,
        "data": args.data,
        "fine_tune_type": args.fine_tune_type,
        "num_layers": args.num_layers,
        "batch_size": args.batch_size,
        "iters": args.iters,
        "learning_rate": args.learning_rate,
        "mask_prompt": args.mask_prompt,
        "max_seq_length": args.max_seq_length,
        "seed": args.seed,
        "optimizer": args.optimizer,
        "lora_parameters": {
            "rank": params.rank, "scale": params.scale, "dropout": params.dropout,
        },
    });
    std::fs::write(
        args.adapter_path.join("adapter_config.json"),
        serde_json::to_string_pretty(&config)? + "\n",
    )?;
    Ok(())
}

fn run(args: &Args) -> Result<(), Error> {
    let (mut model, tokenizer, _) = load(&args.model, LoadOptions::default())?;
    let options = DatasetOptions {
        mask_prompt: args.mask_prompt,
        ..Default::default()
    };
    let splits = load_local_dataset(&args.data, &options)?;
    let tokenize = |d: Option<mlx::lm::tuner::Dataset>| -> Result<Vec<_>, Error> {
        Ok(match d {
            Some(d) => d.tokenize(&tokenizer)?,
            None => Vec::new(),
        })
    };
    if args.train {
        let train_set = tokenize(splits.train.clone())?;
        let valid_set = tokenize(splits.valid.clone())?;
        if train_set.is_empty() {
            return Err("training set not found or empty".into());
        }
        // mlx_lm.lora: mx.random.seed, model.freeze(), then the adapters (or the layers).
        mlx::core::random::seed(u64::from(args.seed))?;
        model.freeze(None)?;
        let kind = fine_tune_type(&args.fine_tune_type);
        if kind == FineTuneType::Full {
            unfreeze_last_layers(&mut model, args.num_layers)?;
        } else {
            let params = LoraParameters::default();
            linear_to_lora_layers(
                &mut model,
                args.num_layers,
                &params,
                kind == FineTuneType::Dora,
            )?;
        }
        if let Some(file) = &args.resume_adapter_file {
            let (weights, _) = mlx::core::io::load_safetensors(file)?;
            model.update_named_parameters(weights.into_iter().collect())?;
        }
        let trainable: usize = model
            .named_trainable_parameters()?
            .iter()
            .map(|(_, a)| a.size())
            .sum();
        println!("Trainable parameters: {trainable}");
        let lr = args.learning_rate;
        model = match args.optimizer.as_str() {
            "adamw" => train(args, model, AdamW::new(lr), &train_set, &valid_set)?,
            "sgd" => train(args, model, SGD::new(lr), &train_set, &valid_set)?,
            _ => train(args, model, Adam::new(lr), &train_set, &valid_set)?,
        };
    } else if args.test {
        load_adapters(&mut model, &args.adapter_path)?;
    }
    if args.test {
        let test_set = tokenize(splits.test.clone())?;
        let (loss, _) = evaluate(
            &model,
            &test_set,
            args.batch_size,
            batches_of(args.test_batches),
            args.max_seq_length,
            RandomState::new(args.seed),
        )?;
        println!(
            "Test loss {loss:.3}, Test ppl {:.3}.",
            f64::from(loss).exp()
        );
    }
    Ok(())
}

fn main() {
    let args = Args::parse();
    if !args.train && !args.test {
        eprintln!("nothing to do: pass --train and/or --test");
        std::process::exit(2);
    }
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
