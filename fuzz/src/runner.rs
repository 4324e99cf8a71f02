//! The parent side: a campaign feeds a target's inputs (the seed corpus, then mutants) to a
//! child process, one at a time, with a time limit per input, and the campaign goes on in a
//! new child after each crash or hang. The input a child died on is saved under
//! `crashes/<target>/` with the exit status and the end of the child's stderr, and run
//! again alone in a fresh child. If it does not crash alone, an earlier input damaged the
//! process (heap corruption shows up at a later allocation): the inputs the child ran
//! before it are bisected down to the first one needed, which is saved as the finding, with
//! what has to follow it as a `.sequence` file that `replay` runs. A hang is saved the same
//! way, the child killed. Inputs that end in an error kind not seen before join the corpus
//! (a cheap stand-in for coverage feedback that leads mutation into deeper checks), as do
//! accepted mutants, from which half of the mutants start.

use std::collections::{HashSet, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::child::{read_frame, write_frame, PREFIX, READY};
use crate::mutate::mutate;
use crate::rng::Rng;
use crate::targets::{Seeds, Target};

/// The corpus stops growing here.
const MAX_CORPUS: usize = 4096;
/// Accepted mutants kept at most: inputs that pass every check are the best bases for
/// mutants that reach past them.
const MAX_ACCEPTED: usize = 1024;
/// How much of a dead child's stderr a report keeps.
const STDERR_TAIL: usize = 4096;
/// Inputs a child remembers for finding the culprit of a crash that needs its predecessors.
const HISTORY: usize = 512;
/// A child has this long to start (load MLX, build a model) before the campaign gives up.
const STARTUP_LIMIT: Duration = Duration::from_secs(120);

/// How a campaign runs.
#[derive(Clone)]
pub struct Config {
    /// The `mlx-fuzz` executable, started as `<exe> child --target <name>`.
    pub exe: PathBuf,
    pub target: &'static Target,
    /// Seed inputs by name; see [`read_corpus`].
    pub seeds: Seeds,
    /// Stop after this many inputs (seeds included)...
    pub iterations: Option<u64>,
    /// ... or after this long, whichever comes first.
    pub duration: Option<Duration>,
    /// The mutation seed: the same seed and corpus give the same inputs.
    pub seed: u64,
    /// An input running longer than this is a hang.
    pub time_limit: Duration,
    /// Findings go to `<crash_dir>/<target>/`.
    pub crash_dir: PathBuf,
    /// A fresh child after this many inputs, so that state piling up in one process (MLX's
    /// caches, leaks) cannot slow a long run down.
    pub restart_every: u64,
    /// Address-space limit of the child in MiB (`ulimit -v`), so a runaway allocation fails
    /// in the child instead of pressing the machine; `None` for none. See
    /// [`default_memory_limit_mb`] for why a CUDA build of MLX runs without one.
    pub memory_limit_mb: Option<u64>,
    /// Where inputs that reached a new error kind are written, if anywhere.
    pub save_interesting: Option<PathBuf>,
    /// Print progress to stderr every this often.
    pub progress: Option<Duration>,
    /// The child computes on the CPU even where MLX's default device is a GPU ([`CPU_ONLY`]).
    pub cpu_only: bool,
}

/// Set in the environment of a child that must compute on the CPU ([`Config::cpu_only`]).
pub const CPU_ONLY: &str = "MLX_FUZZ_CPU_ONLY";

/// 8 GiB, or no limit where MLX was built with CUDA and finds a GPU: MLX then allocates every
/// array, CPU arrays too, with `cudaMallocManaged`, and the CUDA driver reserves far more
/// address space than any limit worth setting. Under one, the driver finds no GPU
/// (`vector::_M_range_check` from MLX's default stream at the first evaluation) and every
/// allocation fails ("cudaMallocManaged(&data, size) failed: out of memory").
pub fn default_memory_limit_mb() -> Option<u64> {
    let cuda = mlx_rs::cuda::is_available().unwrap_or(false);
    (!cuda).then_some(8192)
}

impl Config {
    /// Defaults for `target`: 10 s per input, a new child every 5000 inputs, 8 GiB of
    /// address space (none on a CUDA build: [`default_memory_limit_mb`]).
    pub fn new(exe: impl Into<PathBuf>, target: &'static Target, seeds: Seeds) -> Config {
        Config {
            exe: exe.into(),
            target,
            seeds,
            iterations: None,
            duration: None,
            seed: 0,
            time_limit: Duration::from_secs(10),
            crash_dir: PathBuf::from("crashes"),
            restart_every: 5000,
            memory_limit_mb: default_memory_limit_mb(),
            save_interesting: None,
            progress: None,
            cpu_only: false,
        }
    }
}

/// The seed corpus of a target: every file in `dir`, sorted by name, so runs are repeatable.
pub fn read_corpus(dir: &Path) -> Result<Seeds, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_file() {
            let data =
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((name, data));
        }
    }
    out.sort();
    Ok(out)
}

/// What one input did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    /// Refused, with the error's kind (numbers and file names taken out).
    Err(String),
    /// The child died: how.
    Crash(String),
    Hang,
}

/// A crashing or hanging input, saved.
#[derive(Debug, Clone)]
pub struct Finding {
    pub hang: bool,
    pub path: PathBuf,
    pub reason: String,
    /// Whether the saved file (with the inputs saved after it, for a crash that needs
    /// them) does it again in a fresh child.
    pub reproduced: bool,
}

/// What a campaign did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub target: String,
    pub inputs: u64,
    pub ok: u64,
    pub err: u64,
    pub crashes: u64,
    pub hangs: u64,
    /// Distinct crashing or hanging inputs.
    pub findings: Vec<Finding>,
    pub elapsed: Duration,
    /// Distinct error kinds seen.
    pub error_kinds: usize,
    pub corpus: usize,
    pub seeds: usize,
}

impl Report {
    /// One line: inputs, Ok, Err, crashes, hangs, and how fast.
    pub fn summary(&self) -> String {
        let secs = self.elapsed.as_secs_f64();
        format!(
            "fuzz {:<11} {:>7} inputs {:>7} Ok {:>7} Err {:>3} crashes {:>3} hangs  ({:.1} s, {:.0}/s, {} error kinds, corpus {} from {} seeds)",
            self.target,
            self.inputs,
            self.ok,
            self.err,
            self.crashes,
            self.hangs,
            secs,
            self.inputs as f64 / secs.max(1e-9),
            self.error_kinds,
            self.corpus,
            self.seeds,
        )
    }

    /// The findings, one per line.
    pub fn details(&self) -> String {
        self.findings
            .iter()
            .map(|f| {
                format!(
                    "  {} {} ({}; {})",
                    if f.hang { "hang " } else { "crash" },
                    f.path.display(),
                    f.reason,
                    if f.reproduced {
                        "reproduced"
                    } else {
                        "not reproduced"
                    }
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A running child process of the target.
struct Worker {
    proc: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    ran: u64,
    /// The last inputs this child ran, the current one last: when a crash does not
    /// reproduce alone, an earlier input broke the process (heap corruption shows up at a
    /// later allocation), and these are where to look for it.
    history: VecDeque<Vec<u8>>,
}

fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                4 => " (SIGILL)",
                6 => " (SIGABRT)",
                7 => " (SIGBUS)",
                8 => " (SIGFPE)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}");
        }
    }
    match status.code() {
        Some(101) => "exited with status 101 (a Rust panic)".into(),
        Some(c) => format!("exited with status {c}"),
        None => "ended without a status".into(),
    }
}

impl Worker {
    fn spawn(cfg: &Config) -> Result<Worker, String> {
        let mut cmd = match cfg.memory_limit_mb {
            // `exec` keeps the child's pid, so killing it kills the target process itself.
            Some(mb) if cfg!(unix) => {
                let mut c = Command::new("/bin/sh");
                c.arg("-c")
                    .arg(format!(
                        "ulimit -v {} 2>/dev/null; exec \"$0\" \"$@\"",
                        mb * 1024
                    ))
                    .arg(&cfg.exe);
                c
            }
            _ => Command::new(&cfg.exe),
        };
        if cfg.cpu_only {
            cmd.env(CPU_ONLY, "1");
        }
        cmd.args(["child", "--target", cfg.target.name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut proc = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", cfg.exe.display()))?;
        let stdout = proc.stdout.take().expect("piped");
        let stderr = proc.stderr.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(msg) = line.strip_prefix(PREFIX) {
                    if tx.send(msg.to_string()).is_err() {
                        break;
                    }
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let sink = Arc::clone(&tail);
        std::thread::spawn(move || {
            let mut stderr = stderr;
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let Ok(mut t) = sink.lock() else { break };
                t.extend(&buf[..n]);
                let excess = t.len().saturating_sub(STDERR_TAIL);
                t.drain(..excess);
            }
        });
        let mut w = Worker {
            stdin: proc.stdin.take(),
            proc,
            lines,
            stderr: tail,
            ran: 0,
            history: VecDeque::new(),
        };
        match w.lines.recv_timeout(STARTUP_LIMIT) {
            Ok(line) if line == READY => Ok(w),
            other => {
                let how = match other {
                    Ok(line) => format!("said {line:?}"),
                    Err(_) => w.finish(),
                };
                Err(format!(
                    "the {} child did not start: {how}\n{}",
                    cfg.target.name,
                    w.stderr_tail()
                ))
            }
        }
    }

    fn stderr_tail(&self) -> String {
        let t = self
            .stderr
            .lock()
            .map(|t| t.iter().copied().collect::<Vec<u8>>());
        String::from_utf8_lossy(&t.unwrap_or_default()).into_owned()
    }

    /// Kills the child if it still runs and says how it ended.
    fn finish(&mut self) -> String {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.proc.try_wait() {
                Ok(Some(status)) => return describe(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                _ => {
                    let _ = self.proc.kill();
                    return self
                        .proc
                        .wait()
                        .map(describe)
                        .unwrap_or_else(|e| e.to_string());
                }
            }
        }
    }

    fn run(&mut self, data: &[u8], limit: Duration) -> Verdict {
        self.ran += 1;
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(data.to_vec());
        let sent = match self.stdin.as_mut() {
            Some(stdin) => write_frame(stdin, data).is_ok(),
            None => false,
        };
        if !sent {
            // The child is gone; wait for its status below.
            return Verdict::Crash(self.finish());
        }
        match self.lines.recv_timeout(limit) {
            Ok(line) if line == "ok" => Verdict::Ok,
            Ok(line) => Verdict::Err(line.strip_prefix("err ").unwrap_or(&line).to_string()),
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.proc.kill();
                let _ = self.proc.wait();
                Verdict::Hang
            }
            Err(RecvTimeoutError::Disconnected) => Verdict::Crash(self.finish()),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.finish();
        // A child that crashed or was killed left its files behind.
        let _ = std::fs::remove_dir_all(crate::targets::ctx_dir(self.proc.id()));
    }
}

/// Inputs as one file of frames (a `u32` little-endian length, the bytes), which `replay`
/// runs in order in one child.
pub fn frames(inputs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for data in inputs {
        write_frame(&mut out, data).expect("writing to a Vec cannot fail");
    }
    out
}

/// The inputs of a file made by [`frames`].
pub fn read_frames(mut data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    while let Some(frame) = read_frame(&mut data).map_err(|e| format!("bad sequence file: {e}"))? {
        out.push(frame);
    }
    Ok(out)
}

/// FNV-1a, for naming saved inputs by content.
fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A campaign in progress.
struct Campaign<'c> {
    cfg: &'c Config,
    worker: Option<Worker>,
    report: Report,
    saved: HashSet<u64>,
}

impl Campaign<'_> {
    fn worker(&mut self) -> Result<&mut Worker, String> {
        if self
            .worker
            .as_ref()
            .is_some_and(|w| w.ran >= self.cfg.restart_every)
        {
            self.worker = None;
        }
        if self.worker.is_none() {
            self.worker = Some(Worker::spawn(self.cfg)?);
        }
        Ok(self.worker.as_mut().expect("set just above"))
    }

    /// Whether running `inputs` in order in a fresh child crashes or hangs at some point.
    fn sequence_fails(&self, inputs: &[Vec<u8>]) -> Result<bool, String> {
        let mut fresh = Worker::spawn(self.cfg)?;
        Ok(inputs.iter().any(|data| {
            matches!(
                fresh.run(data, self.cfg.time_limit),
                Verdict::Crash(_) | Verdict::Hang
            )
        }))
    }

    /// For a crash that needs earlier inputs: the shortest suffix of `history` (which ends
    /// with the crashing input) that still crashes in a fresh child, found by bisection on
    /// its start. `None` if even the whole history does not crash again.
    fn culprit(&self, history: &[Vec<u8>]) -> Result<Option<usize>, String> {
        if !self.sequence_fails(history)? {
            return Ok(None);
        }
        // Invariant: history[lo..] fails, history[hi..] does not (hi = the last input alone).
        let (mut lo, mut hi) = (0, history.len() - 1);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.sequence_fails(&history[mid..])? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(Some(lo))
    }

    fn save(&self, dir: &Path, stem: &str, ext: &str, data: &[u8]) -> Result<PathBuf, String> {
        let path = dir.join(format!("{stem}.{ext}"));
        std::fs::write(&path, data).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(path)
    }

    /// Saves a crashing or hanging input (once per content), checks it alone, and for a
    /// crash that does not reproduce alone, finds and saves the earlier input that caused it.
    fn record(
        &mut self,
        data: &[u8],
        verdict: &Verdict,
        worker: Option<Worker>,
        context: &str,
    ) -> Result<(), String> {
        let hang = *verdict == Verdict::Hang;
        if hang {
            self.report.hangs += 1;
        } else {
            self.report.crashes += 1;
        }
        let (stderr, history) = worker
            .map(|mut w| {
                let history = std::mem::take(&mut w.history);
                (w.stderr_tail(), Vec::from(history))
            })
            .unwrap_or_default();
        if !self.saved.insert(fnv(data)) {
            return Ok(());
        }
        let reason = match verdict {
            Verdict::Crash(how) => how.clone(),
            _ => format!("no answer within {:?}", self.cfg.time_limit),
        };
        let alone = self.sequence_fails(&[data.to_vec()])?;
        let culprit = if alone || hang || history.len() < 2 {
            None
        } else {
            self.culprit(&history)?
        };
        // What to save: the input alone, or the input that broke the process followed by
        // what made the damage show (just the crashing input when that is enough).
        let (sequence, how) = match culprit {
            None if alone || hang || history.len() < 2 => (
                vec![data.to_vec()],
                format!("reproduces alone in a fresh child: {alone}"),
            ),
            None => (
                vec![data.to_vec()],
                format!(
                    "does not reproduce alone, nor after the {} inputs before it in the same child",
                    history.len() - 1
                ),
            ),
            Some(start) => {
                let pair = vec![history[start].clone(), data.to_vec()];
                let sequence = if self.sequence_fails(&pair)? {
                    pair
                } else {
                    history[start..].to_vec()
                };
                let how = format!(
                    "the crashing input ({context}) does not crash alone: input {} of the {} \
                     before it in the same child did the damage, and crashes a fresh child \
                     when followed by the {} input(s) after it in the .sequence file",
                    start + 1,
                    history.len() - 1,
                    sequence.len() - 1,
                );
                (sequence, how)
            }
        };
        let reproduced = alone || sequence.len() > 1;
        let hash = fnv(&sequence[0]);
        self.saved.insert(hash);
        let dir = self.cfg.crash_dir.join(self.cfg.target.name);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let stem = format!("{}-{hash:016x}", if hang { "hang" } else { "crash" });
        let path = self.save(&dir, &stem, "bin", &sequence[0])?;
        let replayed = if sequence.len() > 1 {
            self.save(&dir, &stem, "sequence", &frames(&sequence))?
        } else {
            path.clone()
        };
        let name = self.cfg.target.name;
        let note = format!(
            "target: {name}\n{context}\nreason: {reason}\n{how}\nreplay: mlx-fuzz replay --target {name} {}\n--- stderr (end) ---\n{stderr}\n",
            replayed.display()
        );
        self.save(&dir, &stem, "txt", note.as_bytes())?;
        self.report.findings.push(Finding {
            hang,
            path,
            reason: format!("{reason}; {how}"),
            reproduced,
        });
        Ok(())
    }

    /// Runs one input; crash and hang handling included.
    fn run_one(&mut self, data: &[u8], context: &str) -> Result<Verdict, String> {
        let limit = self.cfg.time_limit;
        let worker = self.worker()?;
        let verdict = worker.run(data, limit);
        self.report.inputs += 1;
        match &verdict {
            Verdict::Ok => self.report.ok += 1,
            Verdict::Err(_) => self.report.err += 1,
            Verdict::Crash(_) | Verdict::Hang => {
                let worker = self.worker.take();
                self.record(data, &verdict, worker, context)?;
            }
        }
        Ok(verdict)
    }
}

/// Runs a campaign: the seeds first, then mutants, until the iteration count or the time
/// is reached.
pub fn run(cfg: &Config) -> Result<Report, String> {
    if cfg.seeds.is_empty() {
        return Err(format!("no seed inputs for target {}", cfg.target.name));
    }
    let start = Instant::now();
    let mut campaign = Campaign {
        cfg,
        worker: None,
        report: Report {
            target: cfg.target.name.to_string(),
            seeds: cfg.seeds.len(),
            ..Report::default()
        },
        saved: HashSet::new(),
    };
    let mut corpus: Vec<Vec<u8>> = cfg.seeds.iter().map(|(_, d)| d.clone()).collect();
    // Corpus entries that were accepted (`Ok`); half the mutants start from one of them.
    let mut accepted: Vec<usize> = Vec::new();
    let mut kinds: HashSet<String> = HashSet::new();
    let mut last_progress = Instant::now();
    for i in 0u64.. {
        if cfg.iterations.is_some_and(|n| i >= n)
            || cfg.duration.is_some_and(|d| start.elapsed() >= d)
        {
            break;
        }
        let (input, context) = match cfg.seeds.get(i as usize) {
            Some((name, data)) => (data.clone(), format!("seed {name}")),
            None => {
                let mut rng = Rng::derive(cfg.seed, i);
                let base = if !accepted.is_empty() && rng.one_in(2) {
                    *rng.pick(&accepted)
                } else {
                    rng.below(corpus.len())
                };
                let m = mutate(&mut rng, &corpus[base], &corpus, &cfg.target.spec);
                (
                    m,
                    format!(
                        "input {i} of seed {} (a mutant of corpus entry {base})",
                        cfg.seed
                    ),
                )
            }
        };
        let verdict = campaign.run_one(&input, &context)?;
        let seed = (i as usize) < cfg.seeds.len();
        let (kind, keep) = match verdict {
            Verdict::Ok => {
                let fresh = seed || (accepted.len() < MAX_ACCEPTED && !corpus.contains(&input));
                if fresh && seed {
                    accepted.push(i as usize);
                }
                ("ok".to_string(), fresh && !seed)
            }
            Verdict::Err(k) => (k, false),
            _ => continue,
        };
        if (kinds.insert(kind) || keep) && !seed && corpus.len() < MAX_CORPUS {
            if keep {
                accepted.push(corpus.len());
            }
            if let Some(dir) = &cfg.save_interesting {
                std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
                let path = dir.join(format!("found-{:016x}.bin", fnv(&input)));
                std::fs::write(&path, &input)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            }
            corpus.push(input);
        }
        if cfg.progress.is_some_and(|p| last_progress.elapsed() >= p) {
            last_progress = Instant::now();
            campaign.report.elapsed = start.elapsed();
            campaign.report.error_kinds = kinds.len();
            campaign.report.corpus = corpus.len();
            let _ = writeln!(std::io::stderr(), "{}", campaign.report.summary());
        }
    }
    campaign.worker = None;
    let mut report = campaign.report;
    report.elapsed = start.elapsed();
    report.error_kinds = kinds
        .len()
        .saturating_sub(usize::from(kinds.contains("ok")));
    report.corpus = corpus.len();
    Ok(report)
}

/// Runs each file once (a fresh child after any crash or hang) and returns what each did.
/// A `.sequence` file (see [`frames`]) runs its inputs in order in one child; its verdict is
/// the first crash or hang, else that of its last input.
pub fn replay(cfg: &Config, files: &[PathBuf]) -> Result<Vec<(PathBuf, Verdict)>, String> {
    let mut worker: Option<Worker> = None;
    let mut out = Vec::new();
    for path in files {
        let data =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let inputs = if path.extension().is_some_and(|e| e == "sequence") {
            read_frames(&data)?
        } else {
            vec![data]
        };
        let mut verdict = Verdict::Ok;
        for input in &inputs {
            if worker.is_none() {
                worker = Some(Worker::spawn(cfg)?);
            }
            let w = worker.as_mut().expect("set just above");
            verdict = w.run(input, cfg.time_limit);
            if matches!(verdict, Verdict::Crash(_) | Verdict::Hang) {
                worker = None;
                break;
            }
        }
        out.push((path.clone(), verdict));
    }
    Ok(out)
}
