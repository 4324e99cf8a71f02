//! The Rust worker of `scripts/bench-compare`: runs the workloads of
//! `benches/common/workloads.rs` and reports per-iteration times.
//!
//! - `bench_workloads [NAME...]`: each workload (all when none is named) is set up, warmed up,
//!   and timed over 15 samples (`BENCH_SAMPLES=N` for another count, e.g. under callgrind);
//!   prints one line per workload with the median.
//! - `bench_workloads --serve`: reads `run NAME SAMPLES` lines on stdin and answers each with
//!   one JSON line `{"name": NAME, "times": {"rust": [seconds per iteration, ...]}}`, so the
//!   driver can alternate this process with the Python worker (`scripts/bench/workloads.py`)
//!   without paying process start-up between samples. A workload is set up and warmed up the
//!   first time it is asked for.
//! - `bench_workloads --list`: `NAME INNER` per workload (INNER = iterations per sample), which
//!   the driver checks against the Python worker's list.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::Instant;

#[path = "../benches/common/workloads.rs"]
mod workloads;

use workloads::{BoxResult, Spec, Workload, WORKLOADS};

/// Untimed iterations before the first sample: compile traces, allocator and cache warm-up.
const WARMUP_SAMPLES: usize = 2;

fn sample(w: &mut dyn Workload, spec: &Spec) -> BoxResult<f64> {
    let start = Instant::now();
    for _ in 0..spec.inner {
        w.run()?;
    }
    Ok(start.elapsed().as_secs_f64() / spec.inner as f64)
}

fn setup(spec: &Spec) -> BoxResult<Box<dyn Workload>> {
    let mut w = (spec.make)()?;
    for _ in 0..WARMUP_SAMPLES {
        sample(w.as_mut(), spec)?;
    }
    w.check()?;
    Ok(w)
}

fn find(name: &str) -> BoxResult<&'static Spec> {
    workloads::spec(name).ok_or_else(|| format!("unknown workload {name:?}").into())
}

fn serve() -> BoxResult<()> {
    let mut ready: HashMap<&'static str, Box<dyn Workload>> = HashMap::new();
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let parts: Vec<&str> = line.split_whitespace().collect();
        match parts.as_slice() {
            ["run", name, samples] => {
                let spec = find(name)?;
                let samples: usize = samples.parse()?;
                if !ready.contains_key(spec.name) {
                    ready.insert(spec.name, setup(spec)?);
                }
                let w = ready.get_mut(spec.name).expect("inserted above");
                let times = (0..samples)
                    .map(|_| sample(w.as_mut(), spec))
                    .collect::<BoxResult<Vec<f64>>>()?;
                let list: Vec<String> = times.iter().map(|t| format!("{t:e}")).collect();
                let mut out = stdout.lock();
                writeln!(
                    out,
                    "{{\"name\": \"{}\", \"times\": {{\"rust\": [{}]}}}}",
                    spec.name,
                    list.join(", ")
                )?;
                out.flush()?;
            }
            ["drop", name] => {
                ready.remove(*name);
            }
            ["quit"] | [] => break,
            _ => return Err(format!("bad command {line:?}").into()),
        }
    }
    Ok(())
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn main() -> BoxResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--serve") => return serve(),
        Some("--list") => {
            for s in WORKLOADS {
                println!("{} {}", s.name, s.inner);
            }
            return Ok(());
        }
        _ => {}
    }
    let specs: Vec<&Spec> = if args.is_empty() {
        WORKLOADS.iter().collect()
    } else {
        args.iter().map(|a| find(a)).collect::<BoxResult<_>>()?
    };
    let samples: usize = match std::env::var("BENCH_SAMPLES") {
        Ok(n) => n.parse()?,
        Err(_) => 15,
    };
    println!("MLX {}", mlx_rs::version()?);
    for spec in specs {
        let mut w = setup(spec)?;
        let times = (0..samples)
            .map(|_| sample(w.as_mut(), spec))
            .collect::<BoxResult<Vec<f64>>>()?;
        println!(
            "{:<24} {:>12.1} us   {}",
            spec.name,
            median(times) * 1e6,
            spec.what
        );
    }
    Ok(())
}
