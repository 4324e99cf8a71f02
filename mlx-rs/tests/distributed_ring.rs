//! Process groups on this machine over MLX's ring backend (loopback TCP), started with
//! `distributed::Launch`: every collective equals its single-process result for several
//! dtypes and shapes, with 2 and 4 processes; send/recv around the ring; gradients through
//! the collectives; a rank that dies makes the others fail within a bounded time; a Rust
//! rank and a Python MLX rank in one group. The ranks are this test binary, re-run with
//! `--ignored --exact child_*`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mlx_rs::compile::compile;
use mlx_rs::distributed::{self, Backend, Group, Launch, LaunchReport};
use mlx_rs::transforms::{grad, jvp};
use mlx_rs::{ops, with_device, Array, Device, Dtype, Result};

/// Runs the child test `name` as each of `ranks` processes.
fn launch(ranks: usize, name: &str) -> Launch {
    let exe = std::env::current_exe().unwrap();
    Launch::new(ranks, exe)
        .args([
            "--ignored",
            "--exact",
            name,
            "--nocapture",
            "--test-threads=1",
        ])
        .timeout(Duration::from_secs(120))
        // Collected in the report; echoed, it would bypass the test harness's capture.
        .echo(false)
}

fn assert_ran(report: &LaunchReport) {
    for r in &report.ranks {
        assert!(
            r.output.contains("1 passed"),
            "rank {} did not run its test:\n{}",
            r.rank,
            r.output
        );
    }
}

#[test]
fn collectives_equal_their_single_process_results_with_2_ranks() {
    assert_ran(&launch(2, "child_collectives").run().unwrap());
}

#[test]
fn collectives_equal_their_single_process_results_with_4_ranks() {
    assert_ran(&launch(4, "child_collectives").run().unwrap());
}

/// Rank `r`'s array: `i * (r + 1) + r` at flat index `i`, small integers that every dtype
/// below holds exactly, so sums in any order are exact.
fn rank_values(shape: &[i32], rank: i64) -> Vec<i64> {
    let n: i64 = shape.iter().map(|&d| i64::from(d)).product();
    (0..n).map(|i| i * (rank + 1) + rank).collect()
}

// Conversions on the CPU, where the ring's collectives run: a CUDA GPU has no float64.
fn as_array(v: &[i64], shape: &[i32], dtype: Dtype) -> Array {
    with_device(&Device::cpu(), || {
        Array::from_slice(v, shape)?.astype(dtype)
    })
    .unwrap()
    .unwrap()
}

fn as_i64(a: &Array) -> Vec<i64> {
    with_device(&Device::cpu(), || a.astype(Dtype::Int64)?.to_vec::<i64>())
        .unwrap()
        .unwrap()
}

#[test]
#[ignore = "a rank of collectives_equal_their_single_process_results_*"]
fn child_collectives() -> Result<()> {
    let group = distributed::init(true, Backend::Ring)?;
    let (rank, size) = (i64::from(group.rank()), i64::from(group.size()));
    assert!(size > 1, "started without a launcher");
    let g = Some(&group);
    let shapes: [&[i32]; 4] = [&[], &[7], &[3, 5], &[65_539]];
    let dtypes = [
        Dtype::Float32,
        Dtype::Float16,
        Dtype::Bfloat16,
        Dtype::Int32,
        Dtype::Int64,
        Dtype::Uint8,
        Dtype::Float64,
    ];
    for shape in shapes {
        for dtype in dtypes {
            // The large array crosses the ring's buffer size; only dtypes that hold its sums.
            if shape == [65_539] && !matches!(dtype, Dtype::Float32 | Dtype::Int32 | Dtype::Int64) {
                continue;
            }
            let what = format!("{dtype} {shape:?}");
            let mine = rank_values(shape, rank);
            let x = as_array(&mine, shape, dtype);
            let every: Vec<Vec<i64>> = (0..size).map(|r| rank_values(shape, r)).collect();
            let fold = |f: fn(i64, i64) -> i64| -> Vec<i64> {
                (0..mine.len())
                    .map(|i| every.iter().map(|v| v[i]).reduce(f).unwrap())
                    .collect()
            };
            let sum = distributed::all_sum(&x, g)?;
            assert_eq!(sum.dtype(), dtype, "{what}");
            assert_eq!(sum.shape(), shape, "{what}");
            assert_eq!(as_i64(&sum), fold(|a, b| a + b), "all_sum {what}");
            assert_eq!(
                as_i64(&distributed::all_max(&x, g)?),
                fold(i64::max),
                "all_max {what}"
            );
            assert_eq!(
                as_i64(&distributed::all_min(&x, g)?),
                fold(i64::min),
                "all_min {what}"
            );
            if !shape.is_empty() {
                let gathered = distributed::all_gather(&x, g)?;
                let mut want_shape = shape.to_vec();
                want_shape[0] *= size as i32;
                assert_eq!(gathered.shape(), want_shape, "all_gather {what}");
                assert_eq!(as_i64(&gathered), every.concat(), "all_gather {what}");
            }
        }
    }

    // Around the ring: each rank sends to the next and receives from the previous. MLX runs
    // a send and a recv on one stream in either order, and each blocks until its peer
    // acts, so even ranks send first and odd ranks receive first.
    let next = ((rank + 1) % size) as i32;
    let prev = ((rank + size - 1) % size) as i32;
    let x = as_array(&rank_values(&[4], rank), &[4], Dtype::Float32);
    let exchange = |got: Array| -> Result<Array> {
        let sent = distributed::send(&x, next, g)?;
        if rank % 2 == 0 {
            sent.eval()?;
            got.eval()?;
        } else {
            got.eval()?;
            sent.eval()?;
        }
        Ok(got)
    };
    let got = exchange(distributed::recv_like(&x, prev, g)?)?;
    assert_eq!(as_i64(&got), rank_values(&[4], i64::from(prev)));
    let got = exchange(distributed::recv(&[4], Dtype::Float32, prev, g)?)?;
    assert_eq!(as_i64(&got), rank_values(&[4], i64::from(prev)));
    // A peer that is not another rank is refused before MLX sees it.
    assert!(distributed::send(&x, rank as i32, g).is_err());
    assert!(distributed::recv_like(&x, size as i32, g).is_err());

    // Gradients: all_sum's vjp passes the cotangent through (each rank's loss sums over the
    // group), its jvp sums the tangents; all_gather's vjp keeps this rank's slice.
    let w = (rank + 1) as f32;
    let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
    let dx = grad(
        |a: &[Array]| {
            let y = distributed::all_sum(&ops::multiply(&a[0], w)?, Some(&group))?;
            Ok(vec![ops::sum(&y, None, false)?])
        },
        0,
    )(std::slice::from_ref(&x))?;
    assert_eq!(dx[0].to_vec::<f32>()?, [w; 3]);
    let tangent = Array::from_slice(&[rank as f32; 3], &[3])?;
    let (_, t) = jvp(
        |a: &[Array]| Ok(vec![distributed::all_sum(&a[0], Some(&group))?]),
        std::slice::from_ref(&x),
        &[tangent],
    )?;
    let total: f32 = (0..size).map(|r| r as f32).sum();
    assert_eq!(t[0].to_vec::<f32>()?, [total; 3]);
    let dg = grad(
        |a: &[Array]| {
            let all = distributed::all_gather(&a[0], Some(&group))?;
            let weights = ops::arange(0, 3 * size as i32, 1, Dtype::Float32)?;
            Ok(vec![ops::sum(
                &ops::multiply(&all, &weights)?,
                None,
                false,
            )?])
        },
        0,
    )(std::slice::from_ref(&x))?;
    let base = 3.0 * rank as f32;
    assert_eq!(dg[0].to_vec::<f32>()?, [base, base + 1.0, base + 2.0]);

    // A clone is the same communicator, and outlives the group it was cloned from.
    let kept = group.clone();
    drop(group);
    let sum = distributed::all_sum(&Array::from_slice(&[rank as f32], &[1])?, Some(&kept))?;
    assert_eq!(sum.to_vec::<f32>()?, [(0..size).sum::<i64>() as f32]);
    Ok(())
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

/// A Python interpreter that imports MLX 0.32.2: $MLX_PYTHON or the repository's .venv.
fn python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::env::var_os("MLX_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([root.join(".venv/bin/python")])
        .find(|p| {
            Command::new(p)
                .args([
                    "-c",
                    "import mlx.core as mx; assert mx.__version__ == '0.32.2'",
                ])
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

const PYTHON_RANK: &str = r#"
import mlx.core as mx
g = mx.distributed.init(strict=True, backend="ring")
x = mx.arange(6, dtype=mx.float32) * (g.rank() + 1) + g.rank()
s = mx.distributed.all_sum(x, group=g)
print("python rank", g.rank(), "of", g.size(), "sum", [int(v) for v in s.tolist()])
"#;

#[test]
fn a_rust_rank_and_a_python_rank_sum_together() {
    let Some(python) = python() else {
        println!(
            "SKIPPED: no Python with MLX 0.32.2 found (set MLX_PYTHON or run scripts/python-venv)"
        );
        return;
    };
    let mut py = Command::new(python);
    py.args(["-c", PYTHON_RANK]);
    let report = launch(2, "child_rust_rank")
        .rank_command(1, py)
        .run()
        .unwrap();
    let want: Vec<i64> = (0..6).map(|i| i + (2 * i + 1)).collect();
    let want = format!("sum {want:?}");
    assert!(
        report.ranks[0]
            .output
            .contains(&format!("rust rank 0 of 2 {want}")),
        "{}",
        report.ranks[0].output
    );
    assert!(
        report.ranks[1]
            .output
            .contains(&format!("python rank 1 of 2 {want}")),
        "{}",
        report.ranks[1].output
    );
}

#[test]
#[ignore = "the Rust rank of a_rust_rank_and_a_python_rank_sum_together"]
fn child_rust_rank() -> Result<()> {
    let g = distributed::init(true, Backend::Ring)?;
    let r = g.rank();
    let x = ops::add(
        &ops::multiply(&ops::arange(0, 6, 1, Dtype::Float32)?, (r + 1) as f32)?,
        r as f32,
    )?;
    let s = distributed::all_sum(&x, Some(&g))?;
    let v: Vec<i64> = as_i64(&s);
    println!("rust rank {r} of {} sum {v:?}", g.size());
    Ok(())
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
    // the environment each rank starts with.
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let report = launch(3, "child_prints_its_gpus")
        .backend(Backend::Nccl)
        .run()
        .unwrap();
    assert_ran(&report);
    for r in &report.ranks {
        let want = distributed::config::rank_gpu(r.rank, visible.clone());
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
}

#[test]
fn ranks_get_folders_of_their_own_that_outlast_the_launch() {
    let root = std::env::temp_dir().join("mlx-launch-ranks");
    let tmpdirs = |report: &distributed::LaunchReport| -> Vec<std::path::PathBuf> {
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
