//! Fine-tuning from the command line (Python: `mlx_lm.lora`), with its flag names and its
//! YAML config:
//!
//! ```text
//! cargo run --release --example lora -- --model DIR --data DIR --train \
//!     [-c config.yaml] [--fine-tune-type lora|dora|full] [--optimizer adam|adamw|muon|sgd|adafactor] \
//!     [--num-layers N] [--batch-size B] [--iters N] [--learning-rate LR] [--mask-prompt] \
//!     [--grad-checkpoint] [--grad-accumulation-steps N] [--steps-per-report N] \
//!     [--steps-per-eval N] [--val-batches N] [--save-every N] [--adapter-path DIR] \
//!     [--resume-adapter-file F] [--max-seq-length N] [--clear-cache-threshold BYTES] \
//!     [--seed S] [--test [--test-batches N]]
//! ```
//!
//! Options merge as in mlx_lm: a flag wins over the config file (`-c`), which wins over
//! mlx_lm's defaults; every key of mlx_lm's `CONFIG_DEFAULTS` is read from the file
//! (`lora_parameters`, `optimizer_config`, `lr_schedule`, ...), and a key that is not one
//! is an error. `--train` trains with the compiled step and saves `adapters.safetensors`
//! and `adapter_config.json` (every option, as mlx_lm writes it) under `--adapter-path`,
//! which mlx_lm's `load_adapters` (and `generate --adapter-path`) read; `--test` reports
//! the test loss and perplexity. The progress lines are mlx_lm's (iteration, train loss,
//! tokens/s, trained tokens), followed by the learning rate, iterations/s and peak memory
//! its callbacks get. Validation draws its batch order from its own generator (mlx_lm
//! shares one with training), so with validation on, later epochs' order differs.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use mlx::lm::tuner::{
    evaluate, iterate_batches, linear_to_lora_layers, load_adapters, load_config_file,
    load_local_dataset, save_adapters, unfreeze_last_layers, DatasetOptions, Example, FineTuneType,
    LoraConfig, LoraParameters, RandomState, TrainStep,
};
use mlx::lm::{load, LoadOptions, Model};
use mlx::nn::Module;
use serde_json::{json, Map, Value};

/// mlx_lm.lora's flags; unset ones (None, or a flag not passed) fall back to the config file
/// and then to mlx_lm's defaults.
#[derive(Debug, Parser)]
#[command(name = "lora", about = "LoRA or QLoRA finetuning.")]
struct Args {
    /// The model directory.
    #[arg(long)]
    model: Option<String>,
    /// Do training.
    #[arg(long)]
    train: bool,
    /// The directory with train.jsonl, valid.jsonl, test.jsonl.
    #[arg(long)]
    data: Option<String>,
    #[arg(long, value_parser = ["lora", "dora", "full"])]
    fine_tune_type: Option<String>,
    #[arg(long, value_parser = ["adam", "adamw", "muon", "sgd", "adafactor"])]
    optimizer: Option<String>,
    /// Mask the prompt in the loss when training.
    #[arg(long)]
    mask_prompt: bool,
    /// The number of layers (from the last) to fine-tune; -1: all.
    #[arg(long, allow_negative_numbers = true)]
    num_layers: Option<i32>,
    #[arg(long)]
    batch_size: Option<usize>,
    #[arg(long)]
    iters: Option<usize>,
    /// Validation batches; -1: the whole validation set.
    #[arg(long, allow_negative_numbers = true)]
    val_batches: Option<i64>,
    #[arg(long)]
    learning_rate: Option<f64>,
    #[arg(long)]
    steps_per_report: Option<usize>,
    #[arg(long)]
    steps_per_eval: Option<usize>,
    /// Number of steps to accumulate before each optimizer update.
    #[arg(long)]
    grad_accumulation_steps: Option<usize>,
    #[arg(long)]
    resume_adapter_file: Option<PathBuf>,
    #[arg(long)]
    adapter_path: Option<PathBuf>,
    #[arg(long)]
    save_every: Option<usize>,
    /// Evaluate on the test set (after training).
    #[arg(long)]
    test: bool,
    /// Test batches; -1: the whole test set.
    #[arg(long, allow_negative_numbers = true)]
    test_batches: Option<i64>,
    #[arg(long)]
    max_seq_length: Option<usize>,
    /// A YAML configuration file with the training options.
    #[arg(short = 'c', long)]
    config: Option<PathBuf>,
    /// Use gradient checkpointing to reduce memory use.
    #[arg(long)]
    grad_checkpoint: bool,
    /// Clear the allocator cache between steps if it grows past this many bytes.
    #[arg(long)]
    clear_cache_threshold: Option<u64>,
    #[arg(long)]
    seed: Option<u64>,
}

type Error = Box<dyn std::error::Error>;

impl Args {
    /// The flags given, as mlx_lm's namespace has them (a flag not passed: absent).
    fn flags(&self) -> Result<Map<String, Value>, Error> {
        let on = |b: bool| b.then_some(true);
        let flags = json!({
            "model": self.model, "train": on(self.train), "data": self.data,
            "fine_tune_type": self.fine_tune_type, "optimizer": self.optimizer,
            "mask_prompt": on(self.mask_prompt), "num_layers": self.num_layers,
            "batch_size": self.batch_size, "iters": self.iters, "val_batches": self.val_batches,
            "learning_rate": self.learning_rate, "steps_per_report": self.steps_per_report,
            "steps_per_eval": self.steps_per_eval,
            "grad_accumulation_steps": self.grad_accumulation_steps,
            "resume_adapter_file": self.resume_adapter_file, "adapter_path": self.adapter_path,
            "save_every": self.save_every, "test": on(self.test),
            "test_batches": self.test_batches, "max_seq_length": self.max_seq_length,
            "config": self.config, "grad_checkpoint": on(self.grad_checkpoint),
            "clear_cache_threshold": self.clear_cache_threshold, "seed": self.seed,
        });
        match flags {
            Value::Object(map) => Ok(map),
            _ => Err("flags are not a table".into()),
        }
    }
}

fn batches_of(n: i64) -> Option<usize> {
    usize::try_from(n).ok()
}

/// Python's `f"{x:,.0f}"`: thousands separated by commas.
fn with_commas(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 && digits != "0" {
        out.insert(0, '-');
    }
    out
}

fn train(
    config: &LoraConfig,
    model: Model,
    train: &[Example],
    valid: &[Example],
    rng: RandomState,
) -> Result<(Model, RandomState), Error> {
    let optimizer = config.build_optimizer()?;
    let mut step = TrainStep::with_options(
        model,
        optimizer,
        config.grad_accumulation_steps,
        config.grad_checkpoint,
    )?;
    let mut batches = iterate_batches(train, config.batch_size, config.max_seq_length, true, rng)?;
    let adapter_file = config.adapter_path.join("adapters.safetensors");
    println!("  iter   train_loss     tok/s     tokens");
    // Python sums the losses as a float32 array.
    let (mut losses, mut n_tokens, mut steps) = (0.0f32, 0i64, 0usize);
    let (mut trained_tokens, mut train_time) = (0i64, 0.0f64);
    let mut prev_loss: Option<f64> = None;
    // Python's `zip(range(...), iterate_batches(...))`: the batch (an epoch's order drawn
    // first) before the validation, and validation draws from the same generator.
    for it in 1..=config.iters {
        let Some(batch) = batches.next() else { break };
        let mut tic = Instant::now();
        if !valid.is_empty() && (it == 1 || it % config.steps_per_eval == 0 || it == config.iters) {
            let val_loss = evaluate(
                &step.state.0,
                valid,
                config.batch_size,
                batches_of(config.val_batches),
                config.max_seq_length,
                batches.rng_mut(),
            )?;
            println!(
                "  {it:>4}    val {val_loss:>5.3}    {:.2}s",
                tic.elapsed().as_secs_f64()
            );
            tic = Instant::now();
        }
        let (loss, toks) = step.step(&batch)?;
        losses += loss;
        n_tokens += toks;
        steps += 1;
        let cache = mlx::core::memory::get_cache_memory()?;
        if cache > config.clear_cache_threshold as usize {
            mlx::core::memory::clear_cache()?;
        }
        train_time += tic.elapsed().as_secs_f64();
        if it % config.steps_per_report == 0 || it == config.iters {
            let train_loss = f64::from(losses) / steps as f64;
            let learning_rate = step.learning_rate()?;
            let it_sec = config.steps_per_report as f64 / train_time;
            let tokens_sec = n_tokens as f64 / train_time;
            trained_tokens += n_tokens;
            // In MB, not mlx_lm's GB: a small model's peak on a CPU is a few MB.
            let peak_mem = mlx::core::memory::get_peak_memory()? as f64 / 1e6;
            let arrow = match prev_loss {
                Some(p) if train_loss > p => "▲",
                _ => "▼",
            };
            prev_loss = Some(train_loss);
            println!(
                "  {it:>4}    {train_loss:>5.3} {arrow}    {:>5}    {:>5.1}k    \
                 lr {learning_rate:.3e}    {it_sec:.3} it/s    peak {peak_mem:.1} MB",
                with_commas(tokens_sec),
                trained_tokens as f64 / 1000.0
            );
            (losses, n_tokens, steps, train_time) = (0.0, 0, 0, 0.0);
        }
        if it % config.save_every == 0 {
            save_adapters(&step.state.0, &adapter_file)?;
            let name = format!("{it:07}_adapters.safetensors");
            save_adapters(&step.state.0, config.adapter_path.join(&name))?;
            println!("  save  {name}");
        }
    }
    let stats = step.stats();
    eprintln!(
        "train step: {} trace(s), {} calls",
        stats.traces, stats.calls
    );
    let model = step.state.0;
    save_adapters(&model, &adapter_file)?;
    println!("Saved final weights to {}", adapter_file.display());
    Ok((model, batches.into_rng()))
}

/// Python's `print_trainable_parameters` (packed quantized weights count as stored here;
/// mlx_lm counts their unpacked size).
fn print_trainable_parameters(model: &Model) -> Result<(), Error> {
    let size = |ps: Vec<(String, mlx::core::Array)>| -> f64 {
        ps.iter().map(|(_, a)| a.size() as f64).sum::<f64>() / 1e6
    };
    let total = size(model.named_parameters()?);
    let trainable = size(model.named_trainable_parameters()?);
    println!(
        "Trainable parameters: {:.3}% ({trainable:.3}M/{total:.3}M)",
        trainable * 100.0 / total
    );
    Ok(())
}

fn run(config: &LoraConfig) -> Result<(), Error> {
    // mlx_lm.lora's `np.random.seed(args.seed)`: one generator for the training order, the
    // validation batches and the test batches, in the order they are drawn.
    let mut rng = RandomState::new(config.seed as u32);
    println!("Loading pretrained model");
    let (mut model, tokenizer, _) = load(Path::new(&config.model), LoadOptions::default())?;
    println!("Loading datasets");
    let splits = load_local_dataset(&config.data, &DatasetOptions::from(config))?;
    let tokenize = |d: Option<mlx::lm::tuner::Dataset>| -> Result<Vec<_>, Error> {
        Ok(match d {
            Some(d) => d.tokenize(&tokenizer)?,
            None => Vec::new(),
        })
    };
    let test_set = if config.test {
        let test = tokenize(splits.test.clone())?;
        if test.is_empty() {
            return Err(
                "Test set not found or empty. Must provide test set for evaluation.".into(),
            );
        }
        test
    } else {
        Vec::new()
    };
    if config.train {
        let train_set = tokenize(splits.train.clone())?;
        let valid_set = tokenize(splits.valid.clone())?;
        if train_set.is_empty() {
            return Err(
                "Training set not found or empty. Must provide training set for fine-tuning."
                    .into(),
            );
        }
        if valid_set.is_empty() {
            println!(
                "Warning: Validation set not found or empty. Training will proceed without validation."
            );
        }
        println!("Training");
        // mlx_lm.lora: mx.random.seed, model.freeze(), then the adapters (or the layers).
        mlx::core::random::seed(config.seed)?;
        model.freeze(None)?;
        match config.fine_tune_type {
            FineTuneType::Full => unfreeze_last_layers(&mut model, config.num_layers)?,
            kind => {
                let params = LoraParameters::from(&config.lora_parameters);
                linear_to_lora_layers(
                    &mut model,
                    config.num_layers,
                    &params,
                    kind == FineTuneType::Dora,
                )?;
            }
        }
        if let Some(file) = &config.resume_adapter_file {
            println!("Loading fine-tuned weights from {}", file.display());
            let (weights, _) = mlx::core::io::load_safetensors(file)?;
            model.update_named_parameters(weights.into_iter().collect())?;
        }
        print_trainable_parameters(&model)?;
        std::fs::create_dir_all(&config.adapter_path)?;
        let mut saved = config.to_json()?;
        if config.fine_tune_type == FineTuneType::Full {
            // Python: `args.lora_parameters = None` before it saves the config.
            saved["lora_parameters"] = Value::Null;
        }
        std::fs::write(
            config.adapter_path.join("adapter_config.json"),
            serde_json::to_string_pretty(&saved)? + "\n",
        )?;
        (model, rng) = train(config, model, &train_set, &valid_set, rng)?;
    } else if config.test {
        // Testing the base model alone: an empty adapter path, as in mlx_lm.
        if !config.adapter_path.as_os_str().is_empty() {
            load_adapters(&mut model, &config.adapter_path)?;
        }
    } else {
        return Err("Must provide at least one of --train or --test".into());
    }
    if config.test {
        println!("Testing");
        let test_loss = evaluate(
            &model,
            &test_set,
            config.batch_size,
            batches_of(config.test_batches),
            config.max_seq_length,
            &mut rng,
        )?;
        let test_ppl = f64::from(test_loss).exp();
        println!("Test loss {test_loss:.3}, Test ppl {test_ppl:.3}.");
    }
    Ok(())
}

fn resolve(args: &Args) -> Result<LoraConfig, Error> {
    let file = match &args.config {
        Some(path) => {
            println!("Loading configuration file {}", path.display());
            Some((path.as_path(), load_config_file(path)?))
        }
        None => None,
    };
    Ok(LoraConfig::resolve(args.flags()?, file)?)
}

fn main() {
    let args = Args::parse();
    if let Err(e) = resolve(&args).and_then(|config| run(&config)) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
