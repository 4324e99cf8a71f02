//! `mlx-fuzz`: runs fuzz campaigns (`run`), replays saved inputs (`replay`), writes the
//! Rust-made seed corpus (`seed`), and serves as the child process that runs inputs
//! (`child`, started by the other commands).

// Safe Rust only: the harness drives the bindings the way a user does.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use mlx_fuzz::runner::{self, Config, Verdict};
use mlx_fuzz::targets::{self, Ctx, Target, TARGETS};

const USAGE: &str = "\
usage:
  mlx-fuzz run [--target NAME|all] [--iterations N] [--minutes M] [--seed S]
               [--time-limit-ms MS] [--corpus DIR] [--crashes DIR] [--restart-every N]
               [--memory-limit-mb MB|0] [--save-interesting DIR] [--quiet] [--cpu]
      a campaign per target: the seed corpus (DIR/<target>/), then mutants; stops at N
      inputs or M minutes (default 10000 inputs); exits 1 on any crash or hang; --cpu:
      the children compute on the CPU where MLX's default device is a GPU
  mlx-fuzz replay --target NAME [--time-limit-ms MS] [--cpu] FILE...
      runs each file once and prints what it did; exits 1 on any crash or hang
  mlx-fuzz seed [--target NAME|all] [--corpus DIR]
      writes the seeds made through the Rust API to DIR/<target>/rust-*
  mlx-fuzz list
      the targets
  mlx-fuzz child --target NAME
      (internal) runs inputs read from stdin
";

struct Args {
    command: String,
    target: String,
    iterations: Option<u64>,
    minutes: Option<f64>,
    seed: u64,
    time_limit_ms: u64,
    corpus: PathBuf,
    crashes: PathBuf,
    restart_every: u64,
    memory_limit_mb: u64,
    save_interesting: Option<PathBuf>,
    quiet: bool,
    cpu: bool,
    files: Vec<PathBuf>,
}

fn parse() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let command = it.next().ok_or("no command")?;
    let mut a = Args {
        command,
        target: "all".into(),
        iterations: None,
        minutes: None,
        seed: 0,
        time_limit_ms: 10_000,
        corpus: mlx_fuzz::corpus_dir(),
        crashes: mlx_fuzz::crash_dir(),
        restart_every: 5000,
        memory_limit_mb: runner::default_memory_limit_mb().unwrap_or(0),
        save_interesting: None,
        quiet: false,
        cpu: false,
        files: Vec::new(),
    };
    fn value<T: std::str::FromStr>(
        it: &mut impl Iterator<Item = String>,
        flag: &str,
    ) -> Result<T, String> {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        v.parse().map_err(|_| format!("{flag}: cannot read {v:?}"))
    }
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--target" => a.target = value(&mut it, &arg)?,
            "--iterations" => a.iterations = Some(value(&mut it, &arg)?),
            "--minutes" => a.minutes = Some(value(&mut it, &arg)?),
            "--seed" => a.seed = value(&mut it, &arg)?,
            "--time-limit-ms" => a.time_limit_ms = value(&mut it, &arg)?,
            "--corpus" => a.corpus = value(&mut it, &arg)?,
            "--crashes" => a.crashes = value(&mut it, &arg)?,
            "--restart-every" => a.restart_every = value(&mut it, &arg)?,
            "--memory-limit-mb" => a.memory_limit_mb = value(&mut it, &arg)?,
            "--save-interesting" => a.save_interesting = Some(value(&mut it, &arg)?),
            "--quiet" => a.quiet = true,
            "--cpu" => a.cpu = true,
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            _ => a.files.push(PathBuf::from(arg)),
        }
    }
    Ok(a)
}

fn selected(name: &str) -> Result<Vec<&'static Target>, String> {
    if name == "all" {
        return Ok(TARGETS.iter().collect());
    }
    name.split(',')
        .map(|n| targets::target(n).ok_or(format!("no target {n:?} (see `mlx-fuzz list`)")))
        .collect()
}

fn config(
    a: &Args,
    target: &'static Target,
    seeds: Vec<(String, Vec<u8>)>,
) -> Result<Config, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut cfg = Config::new(exe, target, seeds);
    cfg.seed = a.seed;
    cfg.time_limit = Duration::from_millis(a.time_limit_ms);
    cfg.crash_dir = a.crashes.clone();
    cfg.restart_every = a.restart_every.max(1);
    cfg.memory_limit_mb = (a.memory_limit_mb > 0).then_some(a.memory_limit_mb);
    cfg.save_interesting = a.save_interesting.as_ref().map(|d| d.join(target.name));
    cfg.progress = (!a.quiet).then_some(Duration::from_secs(30));
    cfg.cpu_only = a.cpu;
    cfg.iterations = a.iterations;
    cfg.duration = a.minutes.map(|m| Duration::from_secs_f64(m * 60.0));
    if cfg.iterations.is_none() && cfg.duration.is_none() {
        cfg.iterations = Some(10_000);
    }
    Ok(cfg)
}

fn run(a: &Args) -> Result<bool, String> {
    let mut clean = true;
    let mut reports = Vec::new();
    for target in selected(&a.target)? {
        let seeds = runner::read_corpus(&a.corpus.join(target.name))?;
        let cfg = config(a, target, seeds)?;
        let report = runner::run(&cfg)?;
        println!("{}", report.summary());
        if !report.findings.is_empty() {
            println!("{}", report.details());
        }
        clean &= report.crashes == 0 && report.hangs == 0;
        reports.push(report);
    }
    if reports.len() > 1 {
        let total: u64 = reports.iter().map(|r| r.inputs).sum();
        let bad: u64 = reports.iter().map(|r| r.crashes + r.hangs).sum();
        println!("fuzz total: {total} inputs, {bad} crashes and hangs");
    }
    Ok(clean)
}

fn replay(a: &Args) -> Result<bool, String> {
    let [target] = selected(&a.target)?[..] else {
        return Err("replay needs one --target".into());
    };
    let mut cfg = config(a, target, Vec::new())?;
    cfg.memory_limit_mb = (a.memory_limit_mb > 0).then_some(a.memory_limit_mb);
    let mut clean = true;
    for (path, verdict) in runner::replay(&cfg, &a.files)? {
        clean &= matches!(verdict, Verdict::Ok | Verdict::Err(_));
        println!("{}: {verdict:?}", path.display());
    }
    Ok(clean)
}

fn seed(a: &Args) -> Result<bool, String> {
    let mut ctx = Ctx::new()?;
    for target in selected(&a.target)? {
        let dir = a.corpus.join(target.name);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let seeds = (target.seeds)(&mut ctx)?;
        for (name, data) in &seeds {
            let path = dir.join(name);
            std::fs::write(&path, data)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        println!(
            "{}: {} seeds in {}",
            target.name,
            seeds.len(),
            dir.display()
        );
    }
    Ok(true)
}

fn main() -> ExitCode {
    let result = parse().and_then(|a| match a.command.as_str() {
        "run" => run(&a),
        "replay" => replay(&a),
        "seed" => seed(&a),
        "list" => {
            for t in TARGETS {
                println!("{:<12} {}", t.name, t.about);
            }
            Ok(true)
        }
        "child" => {
            let target = targets::target(&a.target).ok_or(format!("no target {:?}", a.target))?;
            mlx_fuzz::child::serve(target).map(|()| true)
        }
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            Ok(true)
        }
        other => Err(format!("unknown command {other:?}\n{USAGE}")),
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("mlx-fuzz: {e}");
            ExitCode::from(2)
        }
    }
}
