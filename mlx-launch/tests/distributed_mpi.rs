//! Process groups on this machine over MLX's MPI backend, started by `mlx_launch::Launch`
//! through Open MPI's `mpirun`: every collective equals its single-process result with 2
//! and 4 processes (the checks the ring backend passes, `support/collectives.rs`); each
//! rank's output and exit status reach the report; a failing or dying rank ends the group
//! within its time limit, leaving no process behind; a Rust rank and a Python MLX rank in
//! one group; a rank whose MLX cannot load `libmpi` is an `Err`, not a group of one. The
//! ranks are this test binary, re-run with `--ignored --exact child_*`.
//!
//! Without `mpirun` on `PATH` each test prints SKIPPED (`scripts/setup-debian` installs
//! Debian's `openmpi-bin`, which has no `libmpi.so`: these tests also cover the launcher
//! finding `libmpi.so.40` for MLX).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use mlx_launch::Launch;
use mlx_rs::distributed::{self, Backend};
use mlx_rs::{ops, Array, Dtype, Result};

#[path = "support/collectives.rs"]
mod collectives;
#[path = "support/ranks.rs"]
mod ranks;
use ranks::assert_ran;

/// Runs the child test `name` as each of `ranks` processes under mpirun; `None` (after
/// saying so) where there is no mpirun.
fn launch(ranks: usize, name: &str) -> Option<Launch> {
    if !mlx_launch::has_mpirun() {
        println!("SKIPPED: no mpirun on PATH (Debian: apt install openmpi-bin)");
        return None;
    }
    Some(ranks::launch(ranks, name).backend(Backend::Mpi))
}

#[test]
fn collectives_equal_their_single_process_results_with_2_ranks() {
    if let Some(l) = launch(2, "child_collectives") {
        assert_ran(&l.run().unwrap());
    }
}

#[test]
fn collectives_equal_their_single_process_results_with_4_ranks() {
    if let Some(l) = launch(4, "child_collectives") {
        assert_ran(&l.run().unwrap());
    }
}

#[test]
#[ignore = "a rank of collectives_equal_their_single_process_results_*"]
fn child_collectives() -> Result<()> {
    let group = distributed::init(true, Backend::Mpi)?;
    // MLX's MPI backend has no sum_scatter: an Err at eval, as Python raises, not an abort.
    // The message is MLX's: "[mpi] sum_scatter ...".
    let err = distributed::sum_scatter(&ops::ones(&[4], Dtype::Float32)?, Some(&group))
        .and_then(|s| s.eval())
        .unwrap_err()
        .to_string();
    assert!(err.contains("[mpi] sum_scatter"), "{err}");
    collectives::check(group)
}

#[test]
fn each_rank_reports_its_own_output_status_and_folder() {
    let Some(l) = launch(3, "child_reports") else {
        return;
    };
    let report = l.run().unwrap();
    assert_ran(&report);
    let launcher = report.launcher.as_ref().expect("mpirun's report");
    assert_eq!(launcher.name, "mpirun");
    assert!(launcher.status.is_some_and(|s| s.success()));
    let mut tmpdirs = Vec::new();
    for r in &report.ranks {
        assert!(r.succeeded(), "rank {}:\n{}", r.rank, r.output);
        // Its own lines, from both streams, and no other rank's.
        for stream in ["stdout", "stderr"] {
            assert!(
                r.output
                    .contains(&format!("{stream} of rank {} of 3", r.rank)),
                "rank {}:\n{}",
                r.rank,
                r.output
            );
        }
        assert_eq!(r.output.matches(" of rank ").count(), 2, "{}", r.output);
        let line = r.output.lines().find(|l| l.starts_with("tmpdir=")).unwrap();
        tmpdirs.push(PathBuf::from(&line["tmpdir=".len()..]));
    }
    tmpdirs.sort();
    tmpdirs.dedup();
    assert_eq!(tmpdirs.len(), 3, "two ranks shared a folder: {tmpdirs:?}");
}

#[test]
#[ignore = "a rank of each_rank_reports_its_own_output_status_and_folder"]
fn child_reports() -> Result<()> {
    let group = distributed::init(true, Backend::Mpi)?;
    let (r, n) = (group.rank(), group.size());
    println!("stdout of rank {r} of {n}");
    eprintln!("stderr of rank {r} of {n}");
    println!("tmpdir={}", std::env::var("TMPDIR").unwrap_or_default());
    Ok(())
}

#[test]
fn a_failing_rank_stops_the_group_and_leaves_no_process_behind() {
    let Some(l) = launch(2, "child_fails_or_waits") else {
        return;
    };
    let report = l.run_report().unwrap();
    assert!(!report.timed_out, "the group ran into its time limit");
    let failed = &report.ranks[1];
    assert_eq!(
        failed.status.and_then(|s| s.code()),
        Some(3),
        "{}",
        failed.output
    );
    let waiting = &report.ranks[0];
    assert!(!waiting.succeeded(), "{}", waiting.output);
    let pid: u32 = waiting
        .output
        .lines()
        .find_map(|l| l.split("pid=").nth(1))
        .unwrap_or_else(|| panic!("no pid from rank 0:\n{}", waiting.output))
        .parse()
        .unwrap();
    let err = report.check().unwrap_err().to_string();
    assert!(
        err.contains("rank 1 exited with exit status: 3") && err.contains("failing on purpose"),
        "{err}"
    );
    assert!(!alive(pid), "rank 0 (pid {pid}) outlived its group");
}

/// Whether process `pid` still runs: it exists and is not a zombie (an ended process whose
/// parent, the init of a container say, has not collected it yet).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // `pid (name) state ...`; the name may hold spaces and parentheses.
            let (_, rest) = stat.rsplit_once(')')?;
            rest.split_whitespace().next().map(|state| state != "Z")
        })
        .unwrap_or(false)
}

#[test]
#[ignore = "a rank of a_failing_rank_stops_the_group_and_leaves_no_process_behind"]
fn child_fails_or_waits() -> Result<()> {
    let group = distributed::init(true, Backend::Mpi)?;
    println!("pid={}", std::process::id());
    // Both ranks are up (and have said who they are) before either acts.
    distributed::all_sum(&Array::from_slice(&[1.0f32], &[1])?, Some(&group))?.eval()?;
    if group.rank() == 1 {
        eprintln!("failing on purpose");
        std::process::exit(3);
    }
    std::thread::sleep(Duration::from_secs(100));
    Ok(())
}

#[test]
fn a_group_past_its_time_limit_is_stopped_whole() {
    let Some(l) = launch(2, "child_waits") else {
        return;
    };
    let report = l.timeout(Duration::from_secs(5)).run_report().unwrap();
    assert!(report.timed_out);
    let err = report.check().unwrap_err().to_string();
    assert!(err.contains("was stopped at the time limit"), "{err}");
}

#[test]
#[ignore = "a rank of a_group_past_its_time_limit_is_stopped_whole"]
fn child_waits() -> Result<()> {
    distributed::init(true, Backend::Mpi)?;
    std::thread::sleep(Duration::from_secs(100));
    Ok(())
}

#[test]
fn a_dead_rank_ends_the_group_in_bounded_time() {
    for ranks in [2, 4] {
        let Some(l) = launch(ranks, "child_dies") else {
            return;
        };
        // mpirun itself ends the group: the launcher waits for it.
        let report = l
            .stop_others_on_failure(false)
            .timeout(Duration::from_secs(90))
            .run_report()
            .unwrap();
        assert!(
            !report.timed_out,
            "{ranks} ranks: the survivors waited forever"
        );
        let mpirun = report.launcher.as_ref().unwrap();
        assert!(
            mpirun.status.is_some_and(|s| !s.success()),
            "{ranks} ranks: mpirun {:?}:\n{}",
            mpirun.status,
            mpirun.output
        );
        let dead = &report.ranks[ranks - 1];
        // A shell reports a process that SIGABRT killed as exit code 128 + 6.
        assert_eq!(
            dead.status.and_then(|s| s.code()),
            Some(134),
            "{}",
            dead.output
        );
        for r in &report.ranks[..ranks - 1] {
            assert!(
                !r.succeeded() && r.output.contains("collectives running"),
                "{ranks} ranks, rank {}:\n{}",
                r.rank,
                r.output
            );
        }
    }
}

#[test]
#[ignore = "a rank of a_dead_rank_ends_the_group_in_bounded_time"]
fn child_dies() -> Result<()> {
    let group = distributed::init(true, Backend::Mpi)?;
    let x = Array::from_slice(&[1.0f32; 1024], &[1024])?;
    distributed::all_sum(&x, Some(&group))?.eval()?;
    if group.rank() == group.size() - 1 {
        // A crash, not an orderly exit: no destructor runs, MPI is never finalized.
        std::process::abort();
    }
    println!("collectives running");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if distributed::all_sum(&x, Some(&group))
            .and_then(|s| s.eval())
            .is_err()
        {
            break;
        }
    }
    // Reached only if the group were not ended: fail so the test sees it.
    panic!(
        "still running {:.0} s after a rank died",
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn a_rust_rank_and_a_python_rank_sum_together() {
    let Some(py) = ranks::python_rank(Backend::Mpi) else {
        return;
    };
    let Some(l) = launch(2, "child_rust_rank") else {
        return;
    };
    ranks::assert_rust_and_python_summed(&l.rank_command(1, py).run().unwrap());
}

#[test]
#[ignore = "the Rust rank of a_rust_rank_and_a_python_rank_sum_together"]
fn child_rust_rank() -> Result<()> {
    ranks::rust_rank(&distributed::init(true, Backend::Mpi)?)
}

#[test]
fn an_mpirun_rank_without_libmpi_is_an_error_not_a_group_of_one() {
    // What a rank started by mpirun sees, with a libmpi that MLX cannot load: MLX alone
    // would give it a group of one, and it would train by itself.
    let exe = std::env::current_exe().unwrap();
    for backend in ["mpi", "any"] {
        let out = Command::new(&exe)
            .args([
                "--ignored",
                "--exact",
                "child_without_libmpi",
                "--nocapture",
            ])
            .env("OMPI_COMM_WORLD_SIZE", "2")
            .env("MLX_MPI_LIBNAME", "/nonexistent/libmpi.so.40")
            .env("CHILD_BACKEND", backend)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "{backend}:\n{text}"
        );
    }
}

#[test]
#[ignore = "run by an_mpirun_rank_without_libmpi_is_an_error_not_a_group_of_one"]
fn child_without_libmpi() {
    let backend: Backend = std::env::var("CHILD_BACKEND").unwrap().parse().unwrap();
    for strict in [false, true] {
        let err = distributed::init(strict, backend).unwrap_err().to_string();
        assert!(
            err.contains("one of 2 ranks") && err.contains("MLX_MPI_LIBNAME"),
            "{err}"
        );
    }
}
