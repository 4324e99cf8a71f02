//! The bounded fuzz run of CI (`scripts/test` runs it with the rest of the suite): a fixed
//! number of inputs per target, the same inputs every run (fixed seed), each in a child
//! process. Each target prints one line (inputs, Ok, Err, crashes, hangs) and fails on any
//! crash or hang, naming the saved input (`fuzz/crashes/<target>/`). Also here: the seed
//! corpus is accepted as valid input, and the harness itself catches crashes, panics, hangs
//! and the input behind a delayed crash. Longer runs: `scripts/fuzz`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use mlx_fuzz::runner::{self, Config, Report, Verdict};
use mlx_fuzz::targets;

const EXE: &str = env!("CARGO_BIN_EXE_mlx-fuzz");
/// The campaign seed of CI; a long run picks others.
const CI_SEED: u64 = 15;
/// The campaigns check validation, which runs on the host, so they compute on the CPU. On
/// an H100 the same campaigns on the GPU (a kernel build or launch and a sync per input, a
/// CUDA start per child) had not finished after 3 minutes, where the CPU takes 40 s; a
/// longer run on the GPU is `scripts/fuzz` without `--cpu`.
const CPU_ONLY: bool = true;

/// Prints past the test harness's output capture, so the numbers show in CI logs.
fn show(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn campaign(name: &str, iterations: u64) -> Report {
    let target = targets::target(name).expect("a known target");
    let seeds = runner::read_corpus(&mlx_fuzz::corpus_dir().join(name)).expect("the seed corpus");
    let mut cfg = Config::new(EXE, target, seeds);
    cfg.iterations = Some(iterations);
    cfg.cpu_only = CPU_ONLY;
    cfg.seed = CI_SEED;
    cfg.crash_dir = mlx_fuzz::crash_dir();
    let report = runner::run(&cfg).expect("the campaign runs");
    show(&report.summary());
    report
}

fn bounded(name: &str, iterations: u64) {
    let report = campaign(name, iterations);
    assert_eq!(report.inputs, iterations);
    assert_eq!(
        report.ok + report.err + report.crashes + report.hangs,
        iterations
    );
    assert!(
        report.crashes == 0 && report.hangs == 0,
        "{}\n{}\nreplay with: cargo run --profile ci -p mlx-fuzz -- replay --target {name} <file>",
        report.summary(),
        report.details()
    );
    // A campaign whose mutants all fail the first check explores nothing.
    assert!(
        report.ok > 0 && report.err > 0 && report.error_kinds >= 5,
        "{}",
        report.summary()
    );
}

#[test]
fn fuzz_safetensors() {
    bounded("safetensors", 50_000);
}

#[test]
fn fuzz_npy() {
    bounded("npy", 50_000);
}

#[test]
fn fuzz_gguf() {
    bounded("gguf", 50_000);
}

#[test]
fn fuzz_treedef() {
    bounded("treedef", 50_000);
}

#[test]
fn fuzz_weights() {
    bounded("weights", 10_000);
}

#[test]
fn fuzz_shapes() {
    bounded("shapes", 50_000);
}

#[test]
fn fuzz_mlxfn() {
    bounded("mlxfn", 10_000);
}

/// The inputs that crashed MLX's own `.mlxfn` reader (`fuzz/known-crashes/mlxfn/`) are
/// refused: `import_function` validates files before MLX parses them.
#[test]
fn known_mlxfn_crashes_are_refused() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("known-crashes/mlxfn");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the known crashes")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin" || e == "sequence"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let cfg = Config::new(
        EXE,
        targets::target("mlxfn").expect("a known target"),
        Vec::new(),
    );
    let crashed: Vec<_> = runner::replay(&cfg, &files)
        .expect("the replay runs")
        .into_iter()
        .filter(|(_, v)| matches!(v, Verdict::Crash(_) | Verdict::Hang))
        .collect();
    assert!(
        crashed.is_empty(),
        "{} of {} still crash: {crashed:?}",
        crashed.len(),
        files.len()
    );
}

/// Runs every seed file of `name` and returns the ones not accepted.
fn rejected_seeds(name: &str) -> Vec<(PathBuf, Verdict)> {
    let dir = mlx_fuzz::corpus_dir().join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the seed corpus")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{}: too few seeds", dir.display());
    let mut cfg = Config::new(
        EXE,
        targets::target(name).expect("a known target"),
        Vec::new(),
    );
    cfg.cpu_only = CPU_ONLY;
    runner::replay(&cfg, &files)
        .expect("the replay runs")
        .into_iter()
        .filter(|(_, v)| *v != Verdict::Ok)
        .collect()
}

/// Seeds are valid inputs: mutants of them get past the first checks. The mlxfn seeds are
/// here too, so the mlxfn target's code runs in CI although its campaign does not.
#[test]
fn loader_seeds_are_accepted() {
    for name in ["safetensors", "npy", "gguf", "mlxfn", "treedef", "weights"] {
        let rejected = rejected_seeds(name);
        assert!(
            rejected.is_empty(),
            "{name}: seeds not accepted: {rejected:?}"
        );
    }
}

/// A campaign of the self-test target over exactly `seeds`; its findings go to a scratch
/// folder, returned for removal.
fn selftest(seeds: &[&str], time_limit: Duration) -> (Report, PathBuf) {
    selftest_with(seeds, time_limit, false)
}

fn selftest_with(seeds: &[&str], time_limit: Duration, cpu_only: bool) -> (Report, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "mlx-fuzz-selftest-{}-{}",
        std::process::id(),
        seeds.len()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let seeds: Vec<(String, Vec<u8>)> = seeds
        .iter()
        .map(|s| (s.to_string(), s.as_bytes().to_vec()))
        .collect();
    let mut cfg = Config::new(EXE, &targets::SELFTEST, seeds.clone());
    cfg.iterations = Some(seeds.len() as u64);
    cfg.time_limit = time_limit;
    cfg.crash_dir = dir.clone();
    cfg.cpu_only = cpu_only;
    (runner::run(&cfg).expect("the campaign runs"), dir)
}

#[test]
fn the_harness_catches_crashes_panics_and_hangs() {
    let (report, dir) = selftest(
        &["ok", "abort", "err", "panic", "hang", "ok"],
        Duration::from_secs(2),
    );
    assert_eq!(
        (
            report.inputs,
            report.ok,
            report.err,
            report.crashes,
            report.hangs
        ),
        (6, 2, 1, 2, 1),
        "{}",
        report.summary()
    );
    let mut saved: Vec<Vec<u8>> = report
        .findings
        .iter()
        .map(|f| {
            assert!(f.reproduced, "{f:?}");
            std::fs::read(&f.path).expect("the finding is saved")
        })
        .collect();
    saved.sort();
    assert_eq!(
        saved,
        [b"abort".to_vec(), b"hang".to_vec(), b"panic".to_vec()]
    );
    let note =
        std::fs::read_to_string(report.findings[1].path.with_extension("txt")).expect("a note");
    assert!(
        note.contains("selftest panic"),
        "the note keeps the child's stderr: {note}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn children_can_compute() {
    // On a CUDA build under `ulimit -v` every allocation failed, so every input was an Err
    // and the campaigns explored nothing (`runner::default_memory_limit_mb`). Checked on
    // MLX's default device, and on the CPU as the campaigns run.
    let (report, dir) = selftest(&["eval"], Duration::from_secs(10));
    assert_eq!(report.ok, 1, "{}\n{}", report.summary(), report.details());
    let _ = std::fs::remove_dir_all(dir);
    let (report, dir) = selftest_with(&["eval"], Duration::from_secs(10), true);
    assert_eq!(report.ok, 1, "{}\n{}", report.summary(), report.details());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_delayed_crash_is_traced_to_the_input_that_caused_it() {
    let (report, dir) = selftest(
        &["a", "poison", "b", "c", "trigger"],
        Duration::from_secs(5),
    );
    assert_eq!(report.crashes, 1, "{}", report.summary());
    let finding = &report.findings[0];
    assert!(finding.reproduced, "{finding:?}");
    assert_eq!(std::fs::read(&finding.path).expect("saved"), b"poison");
    let sequence = std::fs::read(finding.path.with_extension("sequence")).expect("the sequence");
    assert_eq!(
        runner::read_frames(&sequence).expect("frames"),
        [b"poison".to_vec(), b"trigger".to_vec()]
    );
    let cfg = Config::new(EXE, &targets::SELFTEST, Vec::new());
    let replayed =
        runner::replay(&cfg, &[finding.path.with_extension("sequence")]).expect("replay");
    assert!(matches!(replayed[0].1, Verdict::Crash(_)), "{replayed:?}");
    let _ = std::fs::remove_dir_all(dir);
}
