//! All-reduce bandwidth of the process group a launcher started (nccl-tests' `all_reduce_perf`
//! numbers, for MLX's collectives):
//!
//! ```sh
//! cargo build --release --example launch --example all_sum_bench
//! target/release/examples/launch -n 2 -- target/release/examples/all_sum_bench
//! target/release/examples/launch -n 2 --backend mpi -- target/release/examples/all_sum_bench
//! target/release/examples/launch -n 2 --backend nccl -- target/release/examples/all_sum_bench
//! ```
//!
//! For each size from 4 KiB to `ALL_SUM_BENCH_MAX_MIB` (default 64) MiB of float32, rank 0
//! prints the median time of one `all_sum` (evaluated, so the transfer is complete) over
//! `ALL_SUM_BENCH_ITERS` (default 20) runs after 3 warm-ups, the algorithm bandwidth
//! (bytes / time) and the bus bandwidth (algorithm bandwidth × 2(n-1)/n: what each link
//! carries in a ring all-reduce, comparable across group sizes). Every result is checked:
//! rank r contributes r + 1, so each element must be n(n+1)/2.
//!
//! The collectives run where MLX runs the group's: on the CPU for the ring and MPI backends,
//! on the GPU for NCCL.

use std::time::Instant;

use mlx::core::distributed;
use mlx::core::{ops, Array, Error, Result};

fn env_usize(name: &str, default: usize) -> Result<usize> {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .map_err(|_| Error::InvalidArgument(format!("{name}={v:?} is not a whole number"))),
        Err(_) => Ok(default),
    }
}

fn main() -> Result<()> {
    let group = distributed::init(true, None)?;
    let (rank, n) = (group.rank(), group.size());
    let max_mib = env_usize("ALL_SUM_BENCH_MAX_MIB", 64)?;
    let iters = env_usize("ALL_SUM_BENCH_ITERS", 20)?.max(1);
    let want = (n * (n + 1) / 2) as f32;
    if rank == 0 {
        println!("all_sum over {n} processes, float32, median of {iters}");
        println!(
            "{:>10} {:>12} {:>14} {:>14}",
            "bytes", "time (us)", "algbw (GB/s)", "busbw (GB/s)"
        );
    }
    let mut bytes = 4096usize;
    while bytes <= max_mib << 20 {
        let len = i32::try_from(bytes / 4)
            .map_err(|_| Error::InvalidArgument(format!("{bytes} bytes is too many elements")))?;
        let x = ops::full(&[len], (rank + 1) as f32, None)?;
        x.eval()?;
        let mut times = Vec::with_capacity(iters);
        for i in 0..iters + 3 {
            let start = Instant::now();
            let y = distributed::all_sum(&x, Some(&group))?;
            y.eval()?;
            let secs = start.elapsed().as_secs_f64();
            if i >= 3 {
                times.push(secs);
            }
            if i == 0 {
                check(&y, want, bytes)?;
            }
        }
        times.sort_by(f64::total_cmp);
        let t = times[times.len() / 2];
        let algbw = bytes as f64 / t / 1e9;
        let busbw = algbw * 2.0 * f64::from(n - 1) / f64::from(n);
        if rank == 0 {
            println!("{bytes:>10} {:>12.1} {algbw:>14.3} {busbw:>14.3}", t * 1e6);
        }
        bytes *= 4;
    }
    Ok(())
}

/// `Err` unless every element of `y` is `want`.
fn check(y: &Array, want: f32, bytes: usize) -> Result<()> {
    let wrong = ops::not_equal(y, want)?.any(None, false)?.item::<bool>()?;
    if wrong {
        return Err(Error::InvalidArgument(format!(
            "all_sum of {bytes} bytes: an element is not {want}"
        )));
    }
    Ok(())
}
