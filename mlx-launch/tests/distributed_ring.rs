//! Process groups on this machine over MLX's ring backend (loopback TCP), started with
//! `mlx_launch::Launch`: every collective equals its single-process result for several
//! dtypes and shapes, with 2 and 4 processes; send/recv around the ring; gradients through
//! the collectives; a rank that dies makes the others fail within a bounded time; a Rust
//! rank and a Python MLX rank in one group. The ranks are this test binary, re-run with
//! `--ignored --exact child_*`.

use std::process::Command;
use std::time::{Duration, Instant};

use mlx_rs::compile::compile;
use mlx_rs::distributed::{self, Backend, Group};
use mlx_rs::{ops, Array, Result};

#[path = "support/collectives.rs"]
mod collectives;
#[path = "support/ranks.rs"]
mod ranks;
use ranks::{assert_ran, launch};

#[test]
fn collectives_equal_their_single_process_results_with_2_ranks() {
    assert_ran(&launch(2, "child_collectives").run().unwrap());
}

#[test]
fn collectives_equal_their_single_process_results_with_4_ranks() {
    assert_ran(&launch(4, "child_collectives").run().unwrap());
}

#[test]
#[ignore = "a rank of collectives_equal_their_single_process_results_*"]
fn child_collectives() -> Result<()> {
    collectives::check(distributed::init(true, Backend::Ring)?)
}

#[test]
fn a_group_clone_is_the_same_handle() -> Result<()> {
    let group = distributed::init(false, None)?;
    let clone = group.clone();
    assert!(Group::ptr_eq(&group, &clone));
    // Another init reaches the same processes through a handle of its own.
    assert!(!Group::ptr_eq(&group, &distributed::init(false, None)?));
    drop(group);
    let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
    assert_eq!(
        distributed::all_sum(&x, Some(&clone))?.to_vec::<f32>()?,
        [1.0, 2.0]
    );
    assert_eq!((clone.rank(), clone.size()), (0, 1));
    Ok(())
}

#[test]
fn a_dead_rank_makes_the_others_fail_in_bounded_time() {
    for ranks in [2, 4] {
        let report = launch(ranks, "child_dies")
            .stop_others_on_failure(false)
            .timeout(Duration::from_secs(90))
            .run_report()
            .unwrap();
        assert!(
            !report.timed_out,
            "{ranks} ranks: the survivors waited forever"
        );
        let dead = ranks - 1;
        for r in &report.ranks {
            if r.rank == dead {
                assert!(
                    !r.succeeded(),
                    "the dying rank exited cleanly:\n{}",
                    r.output
                );
                continue;
            }
            // Each survivor's test passes only if its collective failed, not hung.
            assert!(
                r.succeeded() && r.output.contains("the next collective failed after"),
                "{ranks} ranks, rank {}:\n{}",
                r.rank,
                r.output
            );
        }
    }
}

#[test]
#[ignore = "a rank of a_dead_rank_makes_the_others_fail_in_bounded_time"]
fn child_dies() -> Result<()> {
    let group = distributed::init(true, Backend::Ring)?;
    let x = Array::from_slice(&[1.0f32; 1024], &[1024])?;
    let g = group.clone();
    let step = compile(
        move |a: &[Array]| Ok(vec![distributed::all_sum(&a[0], Some(&g))?]),
        None,
    );
    step.call(std::slice::from_ref(&x))?[0].eval()?;
    if group.rank() == group.size() - 1 {
        // A crash, not an orderly exit: no destructor runs, the sockets just close.
        std::process::abort();
    }
    // Made before the loss, evaluated after it.
    let made_before = distributed::all_sum(&x, Some(&group))?;
    let start = Instant::now();
    loop {
        match distributed::all_sum(&x, Some(&group)).and_then(|s| s.eval()) {
            Ok(()) if start.elapsed() < Duration::from_secs(60) => continue,
            Ok(()) => panic!("collectives still succeed a minute after a rank died"),
            Err(e) => {
                println!("failed after {:.2} s: {e}", start.elapsed().as_secs_f64());
                break;
            }
        }
    }
    // MLX's socket threads are gone now: a later collective must fail too, not wait on them.
    let again = Instant::now();
    let second = distributed::all_sum(&x, Some(&group)).and_then(|s| s.eval());
    assert!(second.is_err(), "a collective after the loss succeeded");
    println!(
        "the next collective failed after {:.2} s: {}",
        again.elapsed().as_secs_f64(),
        second.unwrap_err()
    );
    let err = made_before.eval().unwrap_err().to_string();
    assert!(err.contains("lost a peer"), "{err}");
    // A compiled function replays its collective without the Rust closure: refused at eval.
    let err = step
        .call(std::slice::from_ref(&x))
        .and_then(|out| out[0].eval())
        .unwrap_err()
        .to_string();
    assert!(err.contains("lost a peer"), "{err}");
    assert_eq!(step.traces(), 1);
    // Work that needs no peer still runs (a rank can save its state).
    assert_eq!(ops::sum(&x, None, false)?.item::<f32>()?, 1024.0);
    Ok(())
}

#[test]
fn a_rust_rank_and_a_python_rank_sum_together() {
    let Some(py) = ranks::python_rank(Backend::Ring) else {
        return;
    };
    let report = launch(2, "child_rust_rank")
        .rank_command(1, py)
        .run()
        .unwrap();
    ranks::assert_rust_and_python_summed(&report);
}

#[test]
#[ignore = "the Rust rank of a_rust_rank_and_a_python_rank_sum_together"]
fn child_rust_rank() -> Result<()> {
    ranks::rust_rank(&distributed::init(true, Backend::Ring)?)
}

#[test]
fn malformed_launch_environments_are_errors_before_mlx() {
    // In a child process: the variables are process-wide, and a mistake here must not leave
    // them set for other tests.
    let dir = std::env::temp_dir().join(format!("mlx-rs-ring-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let two = dir.join("two.json");
    std::fs::write(&two, r#"[["127.0.0.1:1"], ["127.0.0.1:2"]]"#).unwrap();
    let one = dir.join("one.json");
    std::fs::write(&one, r#"[["127.0.0.1:1"]]"#).unwrap();
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{").unwrap();
    let exe = std::env::current_exe().unwrap();
    for (hostfile, rank, want) in [
        (&two, "2", "not a rank of a group of 2"),
        (&two, "-1", "not a rank of a group of 2"),
        (&two, "one", "not a rank of a group of 2"),
        (&one, "0", "at least 2 ranks"),
        (&garbage, "0", "not a JSON list"),
        (&dir.join("missing.json"), "0", "reading the hostfile"),
    ] {
        let out = Command::new(&exe)
            .args(["--ignored", "--exact", "child_init_fails", "--nocapture"])
            .env("MLX_HOSTFILE", hostfile)
            .env("MLX_RANK", rank)
            .env("EXPECTED_ERROR", want)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "{hostfile:?} {rank}:\n{text}"
        );
    }
}

#[test]
#[ignore = "run by malformed_launch_environments_are_errors_before_mlx"]
fn child_init_fails() {
    let want = std::env::var("EXPECTED_ERROR").unwrap();
    let err = distributed::init(true, Backend::Ring)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&want), "{err}");
}

#[test]
fn nccl_ranks_each_see_one_gpu() {
    // No collective runs, so this holds on a machine without GPUs too: what is checked is
    // the environment each rank starts with. Where MLX has CUDA, the launcher refuses more
    // ranks than GPUs (NCCL cannot share one), so one rank there.
    let cuda = mlx_rs::cuda::is_available().unwrap();
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let report = launch(if cuda { 1 } else { 3 }, "child_prints_its_gpus")
        .backend(Backend::Nccl)
        .run()
        .unwrap();
    assert_ran(&report);
    for r in &report.ranks {
        let want = mlx_launch::rank_gpu(r.rank, visible.clone());
        assert!(
            r.output.contains(&format!("visible=[{want}]")),
            "rank {}:\n{}",
            r.rank,
            r.output
        );
    }
    // A caller's choice wins.
    let report = launch(2, "child_prints_its_gpus")
        .backend(Backend::Nccl)
        .env("CUDA_VISIBLE_DEVICES", "7")
        .run()
        .unwrap();
    assert_ran(&report);
    assert!(report
        .ranks
        .iter()
        .all(|r| r.output.contains("visible=[7]")));
    if cuda {
        let err = launch(1000, "child_prints_its_gpus")
            .backend(Backend::Nccl)
            .run()
            .unwrap_err()
            .to_string();
        assert!(err.contains("1000 NCCL ranks need a GPU each"), "{err}");
    }
}

#[test]
fn ranks_get_folders_of_their_own_that_outlast_the_launch() {
    let root = std::env::temp_dir().join("mlx-launch-ranks");
    let tmpdirs = |report: &mlx_launch::LaunchReport| -> Vec<std::path::PathBuf> {
        report
            .ranks
            .iter()
            .map(|r| {
                let line = r.output.lines().find(|l| l.starts_with("tmpdir=")).unwrap();
                std::path::PathBuf::from(&line["tmpdir=".len()..])
            })
            .collect()
    };
    // Two groups at once (other tests of this binary may run groups meanwhile too).
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| launch(3, "child_prints_its_gpus").run().unwrap());
        let b = s.spawn(|| launch(2, "child_prints_its_gpus").run().unwrap());
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_ran(&a);
    assert_ran(&b);
    let mut all: Vec<_> = tmpdirs(&a).into_iter().chain(tmpdirs(&b)).collect();
    for dir in &all {
        assert!(dir.starts_with(&root), "{}", dir.display());
        // Kept for the next launch, with what MLX cached there.
        assert!(dir.is_dir(), "{} is gone", dir.display());
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 5, "two ranks shared a folder: {all:?}");
    // A caller's choice wins.
    let mine = std::env::temp_dir().join(format!("mlx-own-tmp-{}", std::process::id()));
    let report = launch(2, "child_prints_its_gpus")
        .env("TMPDIR", &mine)
        .run()
        .unwrap();
    assert_ran(&report);
    assert!(tmpdirs(&report).iter().all(|d| *d == mine));
}

#[test]
#[ignore = "run by nccl_ranks_each_see_one_gpu and ranks_get_folders_of_their_own_that_outlast_the_launch"]
fn child_prints_its_gpus() {
    let v = std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_default();
    println!("visible=[{v}]");
    let t = std::env::var("TMPDIR").unwrap_or_default();
    println!("tmpdir={t}");
}
