//! Starts a process group on this machine, like Python's `mlx.launch` with local hosts.
//!
//! ```sh
//! cargo run --release --example launch -- -n 4 -- target/release/examples/llama_train --data-parallel
//! cargo run --release --example launch -- -n 2 --backend nccl --timeout 600 -- ./my_program arg
//! cargo run --release --example launch -- -n 4 --backend mpi -- ./my_program
//! ```
//!
//! Each rank gets the environment `mlx_rs::distributed::init` (and Python's
//! `mx.distributed.init`) reads: a generated loopback hostfile for the ring backend, rank 0's
//! address for NCCL; for MPI, Open MPI's `mpirun` starts the ranks. Output is forwarded line
//! by line as `[rank N] ...`. The launcher exits with 1 as soon as a rank fails (stopping the
//! others), or when the time limit passes.

use std::time::Duration;

use mlx::core::distributed::Backend;
use mlx::launch::Launch;

fn usage() -> ! {
    eprintln!(
        "usage: launch -n RANKS [--backend ring|nccl|mpi] [--connections N] [--timeout SECONDS] \
         [--keep-going] -- PROGRAM [ARGS...]"
    );
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut ranks, mut backend, mut connections, mut timeout, mut keep_going) =
        (None, Backend::Ring, 1, None, false);
    let mut command = Vec::new();
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "-n" | "--ranks" => ranks = value().parse::<usize>().ok(),
            "--backend" => {
                backend = value().parse().unwrap_or_else(|e| {
                    eprintln!("{e}");
                    usage()
                })
            }
            "--connections" => connections = value().parse().unwrap_or_else(|_| usage()),
            "--timeout" => timeout = Some(value().parse::<f64>().unwrap_or_else(|_| usage())),
            "--keep-going" => keep_going = true,
            "--" => {
                command.extend(args.by_ref());
                break;
            }
            _ => usage(),
        }
    }
    let (Some(ranks), Some((program, rest))) = (ranks, command.split_first()) else {
        usage()
    };
    let mut launch = Launch::new(ranks, program)
        .args(rest)
        .backend(backend)
        .connections(connections)
        .stop_others_on_failure(!keep_going);
    if let Some(t) = timeout {
        launch = launch.timeout(Duration::from_secs_f64(t));
    }
    match launch.run() {
        Ok(report) => {
            let slowest = report
                .ranks
                .iter()
                .map(|r| r.elapsed)
                .max()
                .unwrap_or_default();
            eprintln!(
                "[launch] {ranks} ranks finished in {:.1} s",
                slowest.as_secs_f64()
            );
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
