//! `mlx-lm perplexity` (Python: `mlx_lm.perplexity`): a model's perplexity on a dataset, with
//! its standard error.
//!
//! As mlx_lm: NumPy's global generator is seeded with `--seed` and draws a permutation of the
//! records ([`RandomState`], NumPy's bit for bit); records are tokenized in that order (as
//! mlx_lm's datasets' `process` does: text with a final end-of-sequence token, chat and
//! prompt/completion records through the chat template) until `--num-samples` sequences of
//! `--sequence-length` tokens are filled; the token stream is cut into those rows. Each batch's
//! next-token cross entropies (float32 logits) are kept, and the perplexity is `exp` of their
//! mean, its standard error `ppl * std(ddof=1) / sqrt(n)` (the delta method), with mlx_lm's
//! float32 reductions and f64 arithmetic after `.item()`. The printing is mlx_lm's.
//!
//! The dataset is a local directory as Hugging Face `datasets` reads one (mlx_lm hands the path
//! to `datasets.load_dataset(path, split="train")`): its JSON Lines files (`.jsonl`, `.json`),
//! of which the train split's are taken by `datasets`' naming rules ([`train_files`]). Nothing
//! is downloaded: a Hub name (mlx_lm's default, `allenai/tulu-3-sft-mixture`) is an error.
//! Where mlx_lm raises an `IndexError` (fewer records than `--num-samples` needs, and always
//! with `--num-samples -1`, which its help calls "all available"), this command stops with an
//! error for the first and takes every record for the second.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use mlx_nn::losses::{cross_entropy, CrossEntropyOptions};
use mlx_rs::{memory, ops, Array, Dtype};

use super::Error;
use crate::tuner::{Dataset, DatasetOptions, RandomState};
use crate::{LoadOptions, Model, Quantization, Tokenizer};

/// Evaluates the perplexity of a model on a dataset.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The model directory (config.json, *.safetensors, tokenizer.json); a local path, as
    /// nothing is downloaded.
    #[arg(long)]
    pub model: PathBuf,
    /// Accepted as mlx_lm's: no code from the model directory is ever run here.
    #[arg(long)]
    pub trust_remote_code: bool,
    /// Batch size for evaluation.
    #[arg(long, default_value_t = 8)]
    pub batch_size: usize,
    /// Sequence length for evaluation.
    #[arg(long, default_value_t = 512)]
    pub sequence_length: usize,
    /// Number of samples to use (-1 for all available).
    #[arg(long, default_value_t = 256, allow_negative_numbers = true)]
    pub num_samples: i64,
    /// A local dataset directory in an mlx_lm dataset format (JSON Lines: text, chat or
    /// prompt/completion records); the default is a Hugging Face Hub name, which is not
    /// downloaded here.
    #[arg(long, default_value = "allenai/tulu-3-sft-mixture")]
    pub data_path: String,
    /// Random seed for data sampling.
    #[arg(long, default_value_t = 123, allow_negative_numbers = true)]
    pub seed: i64,
}

/// Runs the evaluation, printing mlx_lm's lines to `out`; its progress, when the program's
/// stderr is a terminal, as an indicatif bar there, otherwise as mlx_lm's `\r` line on `out`.
pub fn run(
    args: &Args,
    _input: &mut dyn BufRead,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> Result<(), Error> {
    if args.batch_size == 0 {
        return Err("--batch-size must be positive".into());
    }
    if args.sequence_length < 2 {
        return Err(
            "--sequence-length must be at least 2 (each row predicts its next tokens)".into(),
        );
    }
    let num_samples = match args.num_samples {
        -1 => None,
        n if n > 0 => Some(n as usize),
        n => return Err(format!("--num-samples must be positive or -1 (all), got {n}").into()),
    };
    // NumPy's `np.random.seed` takes 0..2**32.
    let seed = u32::try_from(args.seed)
        .map_err(|_| format!("--seed must be between 0 and 2**32 - 1, got {}", args.seed))?;
    super::local_model(&args.model)?;
    let data_dir = local_dataset(&args.data_path)?;

    mlx_rs::random::seed(u64::from(seed))?;
    writeln!(out, "Loading model from {}...", args.model.display())?;
    let (model, tokenizer, config) = crate::load(&args.model, LoadOptions::default())?;
    let quantization = Quantization::from_config(&config)?.map(|q| q.defaults);
    let weights: Vec<(String, Array)> = mlx_tree::tree_flatten_with_path(&model)?
        .into_iter()
        .map(|(k, v)| (k, v.clone()))
        .collect();
    let total = super::convert::total_parameters(&weights, quantization)?;
    writeln!(out, "Model loaded: {:.1}M parameters", total as f64 / 1e6)?;

    writeln!(out, "\nLoading dataset...")?;
    writeln!(out, "  Sequence length: {}", args.sequence_length)?;
    writeln!(out, "Loading Hugging Face dataset {}.", args.data_path)?;
    let dataset = TrainSplit::load(&data_dir)?;
    let data = load_data(
        &tokenizer,
        &dataset,
        num_samples,
        args.sequence_length,
        seed,
    )?;
    writeln!(out, "  Loaded {} samples", data.rows)?;

    writeln!(
        out,
        "\nEvaluating perplexity with batch size {}...",
        args.batch_size
    )?;
    let start = Instant::now();
    // On a terminal, an indicatif bar on stderr; otherwise mlx_lm's `\r` line on stdout.
    let batches = data.rows.div_ceil(args.batch_size) as u64;
    let bar = super::progress_bar(
        batches,
        "  [{elapsed}] {bar:40} {pos}/{len} batches ({per_sec}, {eta} left)",
    )?;
    let bars = super::progress_bars();
    let (ppl, se) = eval_ppl(&model, &data, args.batch_size, &mut |i, n| {
        if bars {
            bar.set_position(i as u64);
            return Ok(());
        }
        write!(out, "  Processed {i}/{n} batches...\r")?;
        out.flush()
    })?;
    bar.finish_and_clear();
    writeln!(out)?;
    let eval_time = start.elapsed().as_secs_f64();
    let tokens_evaluated = data.rows * (data.columns - 1);
    let rule = "=".repeat(60);
    writeln!(out, "\n{rule}\nEVALUATION RESULTS\n{rule}")?;
    writeln!(out, "Model: {}", args.model.display())?;
    writeln!(out, "Perplexity: {ppl:.3} ± {se:.3}")?;
    writeln!(out, "Evaluation time: {eval_time:.2} seconds")?;
    let peak = memory::get_peak_memory().unwrap_or(0) as f64 / 1e9;
    writeln!(out, "Peak memory: {peak:.2} GB")?;
    writeln!(
        out,
        "Tokens per second: {:.0}",
        tokens_evaluated as f64 / eval_time
    )?;
    writeln!(out, "\nDataset statistics:")?;
    writeln!(out, "  Total samples: {}", data.rows)?;
    writeln!(out, "  Total tokens: {}", data.rows * data.columns)?;
    Ok(())
}

/// The `--data-path` as a local directory; a path that does not exist is taken for a Hub name,
/// as mlx_lm takes it.
fn local_dataset(path: &str) -> Result<PathBuf, Error> {
    let dir = Path::new(path);
    if dir.is_dir() {
        return Ok(dir.to_path_buf());
    }
    if dir.exists() {
        return Err(format!(
            "--data-path {path}: a dataset is a directory (with train.jsonl, say), not a file, \
             as for mlx_lm"
        )
        .into());
    }
    Err(format!(
        "--data-path {path}: no such directory; Hugging Face Hub datasets are not downloaded \
         here: give a local directory with the dataset's JSON Lines files (train.jsonl)"
    )
    .into())
}

/// The evaluation rows: `rows` sequences of `columns` tokens, row-major (Python: the int32
/// array `load_data` returns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    pub tokens: Vec<i32>,
    pub rows: usize,
    pub columns: usize,
}

/// A dataset directory's train split as `datasets` assembles it: its files' records, in the
/// files' order.
#[derive(Debug, Clone)]
pub struct TrainSplit {
    files: Vec<Dataset>,
}

impl TrainSplit {
    /// The train split of `dir` ([`train_files`]), each file parsed as an mlx_lm dataset.
    pub fn load(dir: &Path) -> Result<TrainSplit, Error> {
        let options = DatasetOptions::default();
        let mut files = Vec::new();
        for path in train_files(dir)? {
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            files.push(Dataset::parse(&path, &text, &options)?);
        }
        // mlx_lm picks the record format once, from the split's first record.
        if let Some(first) = files.first() {
            if let Some(other) = files.iter().find(|f| f.format != first.format) {
                return Err(format!(
                    "{}: {:?} records, where {} holds {:?} records (one format per dataset)",
                    other.path.display(),
                    other.format,
                    first.path.display(),
                    first.format
                )
                .into());
            }
        }
        Ok(TrainSplit { files })
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.files.iter().map(Dataset::len).sum()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Record `index` of the split, tokenized.
    fn tokens(&self, mut index: usize, tokenizer: &Tokenizer) -> Result<Vec<u32>, Error> {
        for file in &self.files {
            if index < file.len() {
                return Ok(file.example(index, tokenizer)?.tokens);
            }
            index -= file.len();
        }
        Err(format!("no record {index} in the dataset").into())
    }
}

/// The data files of `dir`'s train split, as `datasets` infers splits from names
/// (`data_files.py`: `SPLIT_KEYWORDS`, the directory-name patterns first, then the file-name
/// ones, then every file as the train split): a file is the train split's when a directory on
/// its path, else its name, holds `train` or `training` between separators (`-._ ` and digits,
/// or the name's start or end). Hidden files and folders are skipped; the files are sorted.
/// JSON Lines only (`.jsonl`, `.json`): another data format `datasets` reads (Parquet, CSV,
/// Arrow) is an error here.
pub fn train_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    let mut others = Vec::new();
    collect_files(dir, &mut files, &mut others)?;
    files.sort();
    if files.is_empty() {
        return Err(match others.first() {
            Some(other) => format!(
                "{}: only JSON Lines datasets (.jsonl, .json) are read here, found {}",
                dir.display(),
                other.display()
            ),
            None => format!("{}: no .jsonl or .json files", dir.display()),
        }
        .into());
    }
    const SPLITS: [&[&str]; 3] = [
        &["train", "training"],
        &["validation", "valid", "dev", "val"],
        &["test", "testing", "eval", "evaluation"],
    ];
    let relative = |f: &PathBuf| f.strip_prefix(dir).unwrap_or(f).to_path_buf();
    let in_dir = |f: &PathBuf, keywords: &[&str]| {
        let rel = relative(f);
        let parent = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        let found = parent.components().any(|c| {
            let name = c.as_os_str().to_string_lossy();
            keywords.iter().any(|k| names_split(&name, k))
        });
        found
    };
    let in_name = |f: &PathBuf, keywords: &[&str]| {
        let name = f.file_name().map(|n| n.to_string_lossy().to_string());
        let name = name.unwrap_or_default();
        keywords
            .iter()
            .any(|k| starts_with_keyword(&name, k) || inner_keyword(&name, k))
    };
    for rule in [&in_dir as &dyn Fn(&PathBuf, &[&str]) -> bool, &in_name] {
        if SPLITS.iter().any(|k| files.iter().any(|f| rule(f, k))) {
            let train: Vec<PathBuf> = files
                .iter()
                .filter(|f| rule(f, SPLITS[0]))
                .cloned()
                .collect();
            if train.is_empty() {
                return Err(format!(
                    "{}: the dataset has no train split (mlx_lm evaluates on `train`): no file \
                     named for it among {} files",
                    dir.display(),
                    files.len()
                )
                .into());
            }
            return Ok(train);
        }
    }
    Ok(files)
}

fn collect_files(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    others: &mut Vec<PathBuf>,
) -> Result<(), Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().to_string());
        if name.map_or(true, |n| n.starts_with('.')) {
            continue;
        }
        if path.is_dir() {
            collect_files(&path, files, others)?;
        } else if path
            .extension()
            .is_some_and(|e| e == "jsonl" || e == "json")
        {
            files.push(path);
        } else if path.extension().is_some_and(|e| {
            ["parquet", "csv", "arrow", "tsv", "txt"].contains(&&*e.to_string_lossy())
        }) {
            others.push(path);
        }
    }
    Ok(())
}

/// `datasets`' separators around a split keyword (`NON_WORDS_CHARS`).
fn is_separator(c: char) -> bool {
    matches!(c, '-' | '.' | '_' | ' ') || c.is_ascii_digit()
}

/// `{keyword}[sep]*`: the name starts with the keyword and a separator.
fn starts_with_keyword(name: &str, keyword: &str) -> bool {
    name.strip_prefix(keyword)
        .and_then(|rest| rest.chars().next())
        .is_some_and(is_separator)
}

/// `*[sep]{keyword}[sep]*`: a separator, the keyword and a separator inside the name.
fn inner_keyword(name: &str, keyword: &str) -> bool {
    name.match_indices(keyword).any(|(at, _)| {
        let before = name[..at].chars().next_back();
        let after = name[at + keyword.len()..].chars().next();
        before.is_some_and(is_separator) && after.is_some_and(is_separator)
    })
}

/// A directory named for a split: the keyword alone, or with separators around it (the
/// directory-name patterns `{keyword}/`, `{keyword}[sep]*/`, `*[sep]{keyword}/`,
/// `*[sep]{keyword}[sep]*/`).
fn names_split(name: &str, keyword: &str) -> bool {
    name == keyword
        || starts_with_keyword(name, keyword)
        || inner_keyword(name, keyword)
        || name
            .strip_suffix(keyword)
            .and_then(|rest| rest.chars().next_back())
            .is_some_and(is_separator)
}

/// mlx_lm.perplexity's `load_data`: the records in the order of NumPy's
/// `permutation(len(dataset))` under `seed`, tokenized until `num_samples` rows of
/// `sequence_length` tokens are filled (`None`: every record), cut into those rows (the
/// remainder dropped).
pub fn load_data(
    tokenizer: &Tokenizer,
    dataset: &TrainSplit,
    num_samples: Option<usize>,
    sequence_length: usize,
    seed: u32,
) -> Result<Rows, Error> {
    let perm = RandomState::new(seed).permutation(dataset.len());
    let wanted = num_samples.map(|n| n.saturating_mul(sequence_length));
    let mut data: Vec<u32> = Vec::new();
    let mut order = perm.iter();
    while wanted.map_or(true, |w| data.len() < w) {
        let Some(&index) = order.next() else {
            if wanted.is_none() {
                break;
            }
            return Err(format!(
                "the dataset's {} records hold {} tokens, fewer than --num-samples {} × \
                 --sequence-length {sequence_length}; lower them or use --num-samples -1",
                dataset.len(),
                data.len(),
                num_samples.unwrap_or(0)
            )
            .into());
        };
        data.extend(dataset.tokens(index, tokenizer)?);
    }
    let mut rows = data.len() / sequence_length;
    if let Some(n) = num_samples {
        rows = rows.min(n);
    }
    if rows == 0 {
        return Err(format!(
            "the dataset holds {} tokens, fewer than one sequence of {sequence_length}",
            data.len()
        )
        .into());
    }
    let tokens = data[..rows * sequence_length]
        .iter()
        .map(|&t| i32::try_from(t).map_err(|_| format!("token id {t} is out of range")))
        .collect::<Result<Vec<i32>, String>>()?;
    Ok(Rows {
        tokens,
        rows,
        columns: sequence_length,
    })
}

/// mlx_lm.perplexity's `eval_ppl`: each batch of `batch_size` rows through the model (all but
/// the last token of each row, no cache), its float32 logits' cross entropy against the next
/// tokens; the perplexity `exp(mean)` and its standard error by the delta method, `ppl *
/// std(ddof=1) / sqrt(n)`. `progress(i, n)` is called after batch `i` of `n`.
pub fn eval_ppl(
    model: &Model,
    data: &Rows,
    batch_size: usize,
    progress: &mut dyn FnMut(usize, usize) -> std::io::Result<()>,
) -> Result<(f64, f64), Error> {
    if batch_size == 0 || data.columns < 2 {
        return Err("a batch size of at least 1 and rows of at least 2 tokens are needed".into());
    }
    let (l, n) = (data.columns, data.rows.div_ceil(batch_size));
    let mut all_losses = Vec::with_capacity(n);
    for (i, start) in (0..data.rows).step_by(batch_size).enumerate() {
        let b = batch_size.min(data.rows - start);
        let rows = &data.tokens[start * l..(start + b) * l];
        let inputs: Vec<i32> = rows.chunks(l).flat_map(|r| &r[..l - 1]).copied().collect();
        let targets: Vec<i32> = rows.chunks(l).flat_map(|r| &r[1..]).copied().collect();
        let shape = [b as i32, (l - 1) as i32];
        let logits = model
            .forward(&Array::from_slice(&inputs, &shape)?, None)?
            .astype(Dtype::Float32)?;
        let targets = Array::from_slice(&targets, &shape)?;
        let losses = cross_entropy(&logits, &targets, CrossEntropyOptions::default())?;
        losses.eval()?;
        all_losses.push(losses.flatten(None, None)?);
        progress(i + 1, n)?;
    }
    let all_losses = ops::concatenate(&all_losses, 0)?;
    let mean_loss = f64::from(all_losses.mean(None, false)?.item::<f32>()?);
    let ppl = mean_loss.exp();
    let std_dev = f64::from(ops::sqrt(&all_losses.var(None, false, 1)?)?.item::<f32>()?);
    let standard_error = std_dev / (all_losses.size() as f64).sqrt();
    Ok((ppl, ppl * standard_error))
}
